/* airlock ticket OWNER/REPO#N -p POLICY [--agent CMD [-- ARGS...]] [--record FILE]
 *                [--timeout DUR] [--quiet] [--json] [--accept-unprotected] */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "paths.h"
#include "commands.h"
#include "common/term.h"
#include "common/util.h"
#include "ticket/presets.h"
#include "ticket/ticket.h"

/* The bundled agent inside airlock-agent:local (scripts/docker-images.sh). */
#define DOCKER_AGENT "/usr/share/airlock/agents/patch-agent"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock ticket OWNER/REPO#N -p POLICY [--agent CMD [-- ARGS...]]\n"
          "                      [--record FILE] [--timeout DUR] [--quiet] [--json]\n"
          "                      [--accept-unprotected]\n"
          "       airlock ticket OWNER/REPO#KEY ...  (a Jira or Linear ticket, PROJ-7:\n"
          "                      the policy's `ticket:` block; docs/tickets.md)\n"
          "\n"
          "Run one agent on one ticket inside the sandbox; the only thing that can get out\n"
          "is a pull request on an airlock/ branch. The agent's contract: docs/agents.md.\n"
          "\n"
          "  -p, --policy FILE        the policy (network, credentials and forge sections)\n"
          "  -a, --agent CMD          the agent (default: the bundled patch-agent); `claude`\n"
          "                           and `codex` are presets: Claude Code or Codex CLI from\n"
          "                           the host's npm install, wired to the model relay\n"
          "                           (docs/agents.md); a program of that name: ./claude\n"
          "      --agent-prefix DIR   where a preset's npm package is installed\n"
          "                           (`npm install --prefix DIR ...`; default: PATH)\n"
          "  -r, --record FILE        where to write the run record (JSON, mode 0600)\n"
          "      --fence FILE         the fence file of an `airlock serve` attempt: no\n"
          "                           output once its token is stale (docs/serve.md)\n"
          "  -t, --timeout DUR        wall-clock limit for the agent (default: the policy's)\n"
          "  -q, --quiet              no progress lines (the agent's output and the\n"
          "                           final summary are still shown)\n"
          "      --json               print the run record on stdout\n"
          "      --accept-unprotected run even when the audit (run by the broker before the\n"
          "                           lease) does not prove the escape budget; recorded,\n"
          "                           and every progress line says [UNPROTECTED: accepted]\n"
          "      --backend B          native (default) or docker: the agent runs in a\n"
          "                           container on a Docker engine (docs/docker.md);\n"
          "                           --agent then names a program in the agent image\n"
          "                           (default " DOCKER_AGENT ")\n"
          "      --agent-image I      the docker backend's agent image\n"
          "      --proxy-image I, --docker-network NET, --docker-egress-internal\n"
          "                           accepted, no effect: the egress proxy runs on the host\n"
          "\n"
          "Output: airlock's lines start with `airlock ticket:`; every line the agent\n"
          "printed (stdout after the run, stderr as it comes) starts with `" AL_TERM_AGENT_GUTTER
          "`,\n"
          "with control, format and bidi characters escaped (docs/cli.md).\n"
          "\n"
          "Exit status:\n" AL_EXIT_TABLE);
}

int cmd_ticket(int argc, char **argv)
{
  static const struct option opts[] = {{"policy", required_argument, NULL, 'p'},
                                       {"agent", required_argument, NULL, 'a'},
                                       {"agent-prefix", required_argument, NULL, 'X'},
                                       {"record", required_argument, NULL, 'r'},
                                       {"fence", required_argument, NULL, 'F'},
                                       {"timeout", required_argument, NULL, 't'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"accept-unprotected", no_argument, NULL, 'U'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"backend", required_argument, NULL, 'B'},
                                       {"proxy-image", required_argument, NULL, 'P'},
                                       {"agent-image", required_argument, NULL, 'A'},
                                       {"docker-network", required_argument, NULL, 'N'},
                                       {"docker-egress-internal", no_argument, NULL, 'I'},
                                       {NULL, 0, NULL, 0}};
  al_ticket_opts o = {.show_agent_stdout = true};
  al_docker_opts dk = {0};
  bool docker = false;
  const char *agent = NULL;
  /* Everything after `--` belongs to the agent; options and the ticket come
   * before it, in any order. */
  int dd = argc;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) {
      dd = i;
      break;
    }
  int c;
  optind = 1;
  al_cli_init("ticket", usage);
  while ((c = al_cli_getopt(dd, argv, "p:a:r:t:qh", opts)) != -1) {
    switch (c) {
    case 'p':
      o.policy_path = optarg;
      break;
    case 'a':
      agent = optarg;
      break;
    case 'X':
      o.agent_prefix = optarg;
      break;
    case 'r':
      o.record_path = optarg;
      break;
    case 'F':
      o.fence_path = optarg;
      break;
    case 't': {
      const char *why = NULL;
      if (al_parse_duration_ms(optarg, &o.timeout_ms, &why) < 0 || o.timeout_ms == 0 ||
          o.timeout_ms > 7 * 86400000ull) {
        return al_cli_usage_error(
            "--timeout `%s`: %s", optarg,
            why ? why : "must be more than 0 and at most 7d (as the policy's wall limit)");
      }
      break;
    }
    case 'q':
      o.quiet = true;
      break;
    case 'j':
      o.json = true;
      o.show_agent_stdout = false;
      break;
    case 'U':
      o.accept_unprotected = true;
      break;
    case 'B':
      if (strcmp(optarg, "native") != 0 && strcmp(optarg, "docker") != 0) {
        return al_cli_usage_error("--backend `%s`: native or docker", optarg);
      }
      docker = strcmp(optarg, "docker") == 0;
      break;
    case 'P':
      dk.proxy_image = optarg;
      break;
    case 'A':
      dk.agent_image = optarg;
      break;
    case 'N':
      dk.egress_network = optarg;
      break;
    case 'I':
      dk.egress_internal = true;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (optind >= dd)
    return al_cli_usage_error("which ticket? (OWNER/REPO#N)");
  o.target = argv[optind++];
  {
    /* a usage error, before any record or lease */
    char repo[AL_TICKET_REPO_MAX], key[64];
    unsigned long num;
    al_error te = {0};
    if (al_ticket_parse_target_key(o.target, repo, sizeof repo, &num, key, sizeof key, &te) < 0)
      return al_cli_usage_error("%s", te.msg);
  }
  if (optind < dd)
    return al_cli_usage_error("unexpected argument `%s` (agent arguments go after --)",
                              argv[optind]);
  if (!o.policy_path)
    return al_cli_usage_error("a ticket run needs a policy: -p FILE with network, credentials "
                              "and forge sections (`airlock policy init OWNER/REPO` prints one; "
                              "docs/policy.md)");
  optind = dd < argc ? dd + 1 : argc;

  al_ticket_agent_cmd cmd;
  char *agent_path = cmd.path;
  if (!docker && agent && al_agent_preset_find(agent)) {
    /* a preset: the library finds its program once the policy is read */
    o.agent_preset = agent;
    o.agent_argv = argv + optind; /* the user's extra arguments (NULL-terminated) */
  } else if (o.agent_prefix) {
    return al_cli_usage_error("--agent-prefix goes with a preset (--agent claude|codex)");
  }
  if (o.agent_preset) {
    agent_path[0] = '\0';
  } else if (docker) {
    /* a program inside the agent image: no host path is resolved or bound */
    snprintf(agent_path, sizeof cmd.path, "%s", agent ? agent : DOCKER_AGENT);
    o.docker = &dk;
  } else if ((dk.proxy_image || dk.agent_image || dk.egress_network || dk.egress_internal)) {
    return al_cli_usage_error("--proxy-image, --agent-image and --docker-* need --backend docker");
  } else if (!agent) {
    if (al_cli_find_data("agents/patch-agent", agent_path, sizeof cmd.path) < 0) {
      al_cli_error("the bundled patch-agent is not in %s/agents/ (set AIRLOCK_DATA_DIR to "
                   "the directory holding agents/, or pass --agent PROGRAM)",
                   AIRLOCK_DATADIR);
      return AL_EXIT_USAGE;
    }
  } else if (strchr(agent, '/')) {
    if (!realpath(agent, agent_path)) {
      return al_cli_usage_error("--agent `%s`: %s", agent, strerror(errno));
    }
  } else {
    snprintf(agent_path, sizeof cmd.path, "%s", agent); /* looked up in the sandbox's PATH */
  }
  al_ticket_agent_command(&o, &cmd, argv + optind, (size_t)(argc - optind), docker);
  al_autofree char **av = cmd.argv; /* freed on every return */
  (void)av;                         /* clang: held only for its cleanup */

  al_ticket_outcome res;
  al_error err = {0};
  int r = al_ticket_run(&o, &res, &err);
  free(res.agent_stdout);
  /* The summary: after the agent's output has ended (it went through the
   * gutter during the run), shown with -q too; every line an unprotected
   * run prints says so. */
  fflush(stdout);
  const char *mark = res.unprotected ? " " AL_TICKET_UNPROTECTED_MARK : "";
  /* said only of an agent that ran (agent_status -1: it never started) */
  bool ran = res.agent_status >= 0;
  if (ran && res.credentials_mode && strcmp(res.credentials_mode, "sealed") == 0)
    al_cli_error("credentials sealed: the agent held a placeholder; the forge gateway decided "
                 "%zu request(s), refused %zu%s%s%s%s",
                 res.gateway_requests, res.gateway_refused, res.gateway_refused_by[0] ? " (" : "",
                 res.gateway_refused_by, res.gateway_refused_by[0] ? ")" : "", mark);
  else if (ran && res.credentials_mode)
    al_cli_error("credentials env: the agent held both tokens; the forge's own protection was "
                 "the only limit on what it did with them%s",
                 mark);
  if (res.pr_verified)
    al_cli_error("pull request %s: %s, verified on the forge, from this run's branch (a human "
                 "must review it)%s",
                 res.pr_url,
                 res.pr_by_supervisor ? "opened by the supervisor" : "opened by the agent", mark);
  else if (r == 0)
    al_cli_error("no pull request from this run's branch on the forge: the agent made no "
                 "changes%s%s%s",
                 res.pr_reported[0] ? "; it reported " : "", res.pr_reported,
                 res.pr_reported[0] ? ", which is NOT this run's" : "");
  if (res.record_path[0])
    al_cli_error("run record %s%s", res.record_path, mark);
  if (r < 0)
    al_cli_error("%s%s", err.msg, mark);
  if (res.unprotected)
    al_cli_error("the escape budget was NOT proven for this run (see the record's `audit`)%s",
                 mark);
  return res.exit_code;
}
