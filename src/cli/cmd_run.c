/* airlock run [-p POLICY] [--env NAME[=VALUE]]... [--timeout DUR] [--] CMD [ARG...]
 *
 * Runs one command in the sandbox. Exit status: the command's; 124 on
 * timeout; 125 when airlock could not start it; 126/127 not executable /
 * not found; 128+N when killed by signal N. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "paths.h"
#include "common/util.h"
#include "policy/policy.h"
#include "policy/sensitive.h"
#include "run/run.h"
#ifdef AIRLOCK_NET_BINARY
#include "run/docker.h"
#endif

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock run [-p POLICY] [--env NAME[=VALUE]]... [--timeout DUR] [--log FILE]\n"
          "                   [--quiet] [--] CMD [ARG...]\n"
          "\n"
          "Run CMD inside the sandbox. Without -p the embedded default policy applies:\n"
          "no network at all, /workspace and /tmp writable, everything else read-only.\n"
          "\n"
          "  -p, --policy FILE   policy file (airlock.yaml)\n"
          "  -e, --env NAME=VAL  set a variable in the sandbox; --env NAME passes the\n"
          "                      invoker's value (keeps secrets off the command line);\n"
          "                      a NAME that process.env_pass would refuse as secret-like\n"
          "                      (docs/policy.md) is passed, with a warning on every run\n"
          "  -t, --timeout DUR   wall-clock limit (e.g. 30s, 10m); default: the policy's\n"
          "      --log FILE      write the egress proxy's decisions (JSON lines) to FILE;\n"
          "                      without it they are counted, in one line at the end,\n"
          "                      never mixed into the command's output (a policy\n"
          "                      without a network section has none: airlock says so)\n"
          "      --log-max SIZE  cap on what one run writes to --log FILE (default 64MiB):\n"
          "                      past half of it denials are aggregated, near it lines\n"
          "                      are dropped; the last line counts everything exactly\n"
          "      --relay-log FILE  the model relay's calls (JSON lines), when the policy\n"
          "                      has a relay section; without it, counted as the decisions\n"
          "  -q, --quiet         no notices from airlock (limits it could not enforce, the\n"
          "                      decision count); the command's own output is untouched\n"
          "      --backend B     native (default) or docker: the sandbox built from Docker\n"
          "                      containers (docs/docker.md; /var/run/docker.sock; images:\n"
          "                      scripts/docker-images.sh)\n"
          "      --agent-image I the docker backend's agent image\n"
          "      --proxy-image I, --docker-network NET, --docker-egress-internal\n"
          "                      accepted, no effect: the egress proxy runs on the host\n"
          "      --run-id ID     the run's id (16 lowercase hex; default random): it names\n"
          "                      the run's cgroup or container\n"
          "\n"
          "Exit status: the command's own; and\n"
          "  2    usage error (nothing was started)\n"
          "  124  timeout: the wall-clock limit was reached and the sandbox was killed\n"
          "  125  airlock could not start the command\n"
          "  126  the command is not executable; 127 not found\n"
          "  128+N  the command was killed by signal N\n");
}

/* The closing count of the decisions and the relay's calls (not with --quiet). */
static void report_counts(const al_run_result *res, bool quiet)
{
  const al_run_decision_counts *c = &res->decisions;
  if (quiet)
    return;
  if (c->lines && c->failed)
    al_cli_error("%zu egress decision(s), %zu denied, %zu failed (DNS, connect; the log "
                 "writes a failure as decision deny with its reason, such as dns-failed) "
                 "(--log FILE keeps them)",
                 c->lines, c->denied, c->failed);
  else if (c->lines)
    al_cli_error("%zu egress decision(s), %zu denied (--log FILE keeps them)", c->lines, c->denied);
  if (res->relay.lines)
    al_cli_error("%zu model relay call(s) (--relay-log FILE keeps them)", res->relay.lines);
}

static void wipe_owned(char **owned, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    explicit_bzero(owned[i], strlen(owned[i]));
    free(owned[i]);
  }
}

int cmd_run(int argc, char **argv)
{
  static const struct option opts[] = {{"policy", required_argument, NULL, 'p'},
                                       {"env", required_argument, NULL, 'e'},
                                       {"timeout", required_argument, NULL, 't'},
                                       {"log", required_argument, NULL, 'l'},
                                       {"log-max", required_argument, NULL, 'M'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"relay-log", required_argument, NULL, 'R'},
                                       {"backend", required_argument, NULL, 'B'},
                                       {"proxy-image", required_argument, NULL, 'P'},
                                       {"agent-image", required_argument, NULL, 'A'},
                                       {"docker-egress-internal", no_argument, NULL, 'I'},
                                       {"docker-network", required_argument, NULL, 'N'},
                                       {"run-id", required_argument, NULL, 'r'},
                                       {NULL, 0, NULL, 0}};
  const char *backend = "native";
  al_run_request rq = {0};
  size_t nenv = 0;
  al_autofree char **env = al_xcalloc((size_t)argc + 1, sizeof(char *));
  al_autofree char **owned = al_xcalloc((size_t)argc + 1, sizeof(char *));
  size_t nowned = 0;
  /* the --env values whose names look like secrets: warned once the run
   * is this process's (after a re-exec for docker, by airlock-net) */
  al_autofree const char **secretish = al_xcalloc((size_t)argc + 1, sizeof(char *));
  size_t nsecretish = 0;
  int c;
  optind = 1;
  al_cli_init("run", usage);
  while ((c = al_cli_getopt(argc, argv, "+p:e:t:qh", opts)) != -1) {
    switch (c) {
    case 'p':
      rq.policy_path = optarg;
      break;
    case 'e': {
      const char *eq = strchr(optarg, '=');
      size_t nl = eq ? (size_t)(eq - optarg) : strlen(optarg);
      bool ok = nl > 0 && nl < 256;
      for (size_t i = 0; ok && i < nl; i++)
        ok = (optarg[i] == '_' || (optarg[i] >= 'A' && optarg[i] <= 'Z') ||
              (optarg[i] >= 'a' && optarg[i] <= 'z') ||
              (i > 0 && optarg[i] >= '0' && optarg[i] <= '9'));
      if (!ok) {
        return al_cli_usage_error("--env: `%.*s` is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
                                  (int)(nl > 64 ? 64 : nl), optarg);
      }
      {
        char name[256];
        memcpy(name, optarg, nl);
        name[nl] = '\0';
        /* AIRLOCK_* are set only by `airlock ticket`; here they are the
         * caller's to give (e.g. to try an agent by hand) */
        if (al_policy_env_reserved(name) && strncmp(name, "AIRLOCK_", 8) != 0) {
          return al_cli_usage_error("--env %s: set by airlock itself and cannot be overridden",
                                    name);
        }
        if (al_policy_env_secret_like(name))
          secretish[nsecretish++] = optarg;
      }
      if (eq) {
        env[nenv++] = optarg;
      } else {
        const char *v = getenv(optarg);
        if (!v) {
          return al_cli_usage_error("--env %s: not set in the invoking environment", optarg);
        }
        owned[nowned] = al_strdup_printf("%s=%s", optarg, v);
        env[nenv++] = owned[nowned++];
      }
      break;
    }
    case 't': {
      const char *why = NULL;
      if (al_parse_duration_ms(optarg, &rq.timeout_ms, &why) < 0 || rq.timeout_ms == 0 ||
          rq.timeout_ms > 7 * 86400000ull) {
        return al_cli_usage_error(
            "--timeout `%s`: %s", optarg,
            why ? why : "must be more than 0 and at most 7d (as the policy's wall limit)");
      }
      break;
    }
    case 'l':
      rq.log_path = optarg;
      break;
    case 'M': {
      const char *why = NULL;
      if (al_parse_size(optarg, &rq.log_max, &why) < 0 || rq.log_max < 4096)
        return al_cli_usage_error("--log-max `%s`: %s", optarg, why ? why : "at least 4KiB");
      break;
    }
    case 'q':
      rq.quiet = true;
      break;
    case 'R':
      rq.relay_log_path = optarg;
      break;
    case 'B':
      if (strcmp(optarg, "native") != 0 && strcmp(optarg, "docker") != 0) {
        return al_cli_usage_error("--backend `%s`: native or docker", optarg);
      }
      backend = optarg;
      break;
    case 'P':
      rq.proxy_image = optarg;
      break;
    case 'A':
      rq.agent_image = optarg;
      break;
    case 'I':
      rq.egress_internal = true;
      break;
    case 'N':
      rq.network = optarg;
      break;
    case 'r': {
      size_t n = strspn(optarg, "0123456789abcdef");
      if (n != 16 || optarg[n])
        return al_cli_usage_error("--run-id `%.40s`: 16 lowercase hex digits", optarg);
      rq.run_id = optarg;
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (optind >= argc)
    return al_cli_usage_error("no command given");

  rq.argv = argv + optind;
  rq.env = env;
  bool docker = strcmp(backend, "docker") == 0;
#ifndef AIRLOCK_NET_BINARY
  if (docker) {
    /* The Engine API client links libcurl, which the core binary does not
     * (see main.c): re-exec as airlock-net with the same arguments (values
     * given as --env NAME are read again from our environment, so no token
     * lands on a command line). */
    wipe_owned(owned, nowned);
    int r = al_cli_exec_net(argc, argv, "run --backend docker");
    return r == 127 ? 125 : r;
  }
#endif
  /* the rule process.env_pass refuses by (policy/sensitive.h); here the
   * caller chose the variable, so it is said, not refused, -q or not, as
   * a policy's process.secret_env is */
  for (size_t i = 0; i < nsecretish; i++) {
    const char *eq = strchr(secretish[i], '=');
    int nl = eq ? (int)(eq - secretish[i]) : (int)strlen(secretish[i]);
    al_cli_error("warning: --env %.*s %s; a ticket's forge tokens come from the broker, never "
                 "from the environment%s",
                 nl, secretish[i], al_policy_env_secret_rule(),
                 eq ? "; --env NAME without `=VALUE` keeps the value off the command line" : "");
  }
  al_error err = {0};
  al_run_result res;
#ifdef AIRLOCK_NET_BINARY
  int r = docker ? al_docker_run_request(&rq, &res, &err) : al_run_request_native(&rq, &res, &err);
#else
  int r = al_run_request_native(&rq, &res, &err);
#endif
  if (r == 0 && res.timed_out && !rq.quiet)
    al_cli_error("the wall-clock limit was reached; the sandbox was killed");
  if (r < 0)
    al_cli_error("%s", err.msg);
  report_counts(&res, rq.quiet);
  wipe_owned(owned, nowned);
  return res.status;
}
