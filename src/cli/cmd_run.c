/* airlock run [-p POLICY] [--env NAME[=VALUE]]... [--timeout DUR] [--] CMD [ARG...]
 *
 * Runs one command in the sandbox. Exit status: the command's; 124 on
 * timeout; 125 when airlock could not start it; 126/127 not executable /
 * not found; 128+N when killed by signal N. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "paths.h"
#include "common/log.h"
#include "common/util.h"
#include "policy/policy.h"
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
          "                      invoker's value (keeps secrets off the command line)\n"
          "  -t, --timeout DUR   wall-clock limit (e.g. 30s, 10m); default: the policy's\n"
          "      --log FILE      write the egress proxy's decisions (JSON lines) to FILE;\n"
          "                      without it they are counted, in one line at the end,\n"
          "                      never mixed into the command's output\n"
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

/* Without --log, the proxy's decisions (and the relay's calls) go to a
 * capped memfd, not to our stderr where they would interleave with the
 * command's output; at the end one line counts them. -1 on failure (then
 * they are dropped: the count says so). */
#define DECISIONS_CAP (8u << 20)

static int decisions_memfd(const char *name)
{
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return -1;
  if (ftruncate(fd, DECISIONS_CAP) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void report_counts(int dfd, int rfd, bool quiet)
{
  if (quiet)
    return;
  al_run_decision_counts c;
  if (dfd >= 0 && al_run_count_decisions(dfd, &c) == 0 && c.lines) {
    if (c.failed)
      al_cli_error("%zu egress decision(s), %zu denied, %zu failed (DNS, connect) (--log FILE "
                   "keeps them)",
                   c.lines, c.denied, c.failed);
    else
      al_cli_error("%zu egress decision(s), %zu denied (--log FILE keeps them)", c.lines, c.denied);
  }
  if (rfd >= 0 && al_run_count_decisions(rfd, &c) == 0 && c.lines)
    al_cli_error("%zu model relay call(s) (--relay-log FILE keeps them)", c.lines);
}

static void wipe_owned(char **owned, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    explicit_bzero(owned[i], strlen(owned[i]));
    free(owned[i]);
  }
}

/* --backend docker. The Engine API client links libcurl, which the core
 * binary does not (see main.c): there, re-exec as airlock-net with the same
 * arguments (values given as --env NAME are read again from our
 * environment, so no token lands on a command line). */
struct docker_flags {
  const char *proxy_image, *agent_image, *network, *log_path, *run_id;
  bool egress_internal, quiet;
};

static int run_docker(int argc, char **argv, const char *policy_path, char **env,
                      uint64_t timeout_ms, const struct docker_flags *df, char **owned,
                      size_t nowned)
{
#ifndef AIRLOCK_NET_BINARY
  wipe_owned(owned, nowned);
  (void)policy_path;
  (void)env;
  (void)timeout_ms;
  (void)df;
  int r = al_cli_exec_net(argc, argv, "run --backend docker");
  return r == 127 ? 125 : r;
#else
  al_error err = {0};
  al_policy *policy = NULL;
  int r = al_policy_load_or_default(policy_path, &policy, &err);
  if (r < 0) {
    al_cli_error("%s", err.msg);
    wipe_owned(owned, nowned);
    return 2;
  }
  int audit_fd = -1;
  if (df->log_path) {
    audit_fd = open(df->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (audit_fd < 0) {
      al_cli_error("--log %s: %s", df->log_path, strerror(errno));
      wipe_owned(owned, nowned);
      al_policy_free(policy);
      return 2;
    }
  }
  al_docker_opts o = {.policy = policy,
                      .argv = argv + optind,
                      .env = env,
                      .timeout_ms = timeout_ms,
                      .proxy_image = df->proxy_image,
                      .agent_image = df->agent_image,
                      .egress_internal = df->egress_internal,
                      .egress_network = df->network,
                      .run_id = df->run_id,
                      .audit_fd = audit_fd >= 0 ? audit_fd : 2};
  int dfd = -1;
  if (audit_fd < 0 && policy->network.present && (dfd = decisions_memfd("airlock-decisions")) >= 0)
    o.audit_fd = dfd;
  int status = 125;
  if (al_docker_run(&o, &status, &err) < 0)
    al_cli_error("%s", err.msg);
  report_counts(dfd, -1, df->quiet);
  if (dfd >= 0)
    close(dfd);
  if (audit_fd >= 0)
    close(audit_fd);
  wipe_owned(owned, nowned);
  al_policy_free(policy);
  return status;
#endif
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
  struct docker_flags df = {0};
  const char *policy_path = NULL;
  const char *log_path = NULL;
  uint64_t log_max = 0;
  const char *relay_log_path = NULL;
  uint64_t timeout_ms = 0;
  bool quiet = false;
  size_t nenv = 0;
  al_autofree char **env = al_xcalloc((size_t)argc + 1, sizeof(char *));
  al_autofree char **owned = al_xcalloc((size_t)argc + 1, sizeof(char *));
  size_t nowned = 0;
  int c;
  optind = 1;
  al_cli_init("run", usage);
  while ((c = al_cli_getopt(argc, argv, "+p:e:t:qh", opts)) != -1) {
    switch (c) {
    case 'p':
      policy_path = optarg;
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
      if (al_parse_duration_ms(optarg, &timeout_ms, &why) < 0 || timeout_ms == 0 ||
          timeout_ms > 7 * 86400000ull) {
        return al_cli_usage_error(
            "--timeout `%s`: %s", optarg,
            why ? why : "must be more than 0 and at most 7d (as the policy's wall limit)");
      }
      break;
    }
    case 'l':
      log_path = optarg;
      break;
    case 'M': {
      const char *why = NULL;
      if (al_parse_size(optarg, &log_max, &why) < 0 || log_max < 4096)
        return al_cli_usage_error("--log-max `%s`: %s", optarg, why ? why : "at least 4KiB");
      break;
    }
    case 'q':
      quiet = true;
      break;
    case 'R':
      relay_log_path = optarg;
      break;
    case 'B':
      if (strcmp(optarg, "native") != 0 && strcmp(optarg, "docker") != 0) {
        return al_cli_usage_error("--backend `%s`: native or docker", optarg);
      }
      backend = optarg;
      break;
    case 'P':
      df.proxy_image = optarg;
      break;
    case 'A':
      df.agent_image = optarg;
      break;
    case 'I':
      df.egress_internal = true;
      break;
    case 'N':
      df.network = optarg;
      break;
    case 'r': {
      size_t n = strspn(optarg, "0123456789abcdef");
      if (n != 16 || optarg[n])
        return al_cli_usage_error("--run-id `%.40s`: 16 lowercase hex digits", optarg);
      df.run_id = optarg;
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

  if (strcmp(backend, "docker") == 0) {
    df.log_path = log_path;
    df.quiet = quiet;
    return run_docker(argc, argv, policy_path, env, timeout_ms, &df, owned, nowned);
  }

  al_error err = {0};
  al_policy *policy = NULL;
  int r = al_policy_load_or_default(policy_path, &policy, &err);
  if (r < 0) {
    al_cli_error("%s", err.msg);
    return 2;
  }

  int dfd = !log_path && policy->network.present ? decisions_memfd("airlock-decisions") : -1;
  int rfd = !relay_log_path && policy->relay.present ? decisions_memfd("airlock-relay-log") : -1;
  al_run_opts ro = {
      .policy = policy,
      .argv = argv + optind,
      .env = env,
      .timeout_ms = timeout_ms,
      .log_path = log_path,
      .audit_fd = dfd,
      .audit_cap = log_path ? log_max : DECISIONS_CAP,
      .relay_log_path = relay_log_path,
      .relay_log_fd = rfd,
      .quiet = quiet,
      .run_id = df.run_id,
  };
  int status = 0;
  bool timed_out = false;
  ro.timed_out = &timed_out;
  r = al_run_command(&ro, &status, &err);
  if (r == 0 && timed_out && !quiet)
    al_cli_error("the wall-clock limit was reached; the sandbox was killed");
  if (r < 0)
    al_cli_error("%s", err.msg);
  report_counts(dfd, rfd, quiet);
  if (dfd >= 0)
    close(dfd);
  if (rfd >= 0)
    close(rfd);
  for (size_t i = 0; i < nowned; i++) {
    explicit_bzero(owned[i], strlen(owned[i]));
    free(owned[i]);
  }
  al_policy_free(policy);
  return status;
}
