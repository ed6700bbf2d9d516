/* airlock probe [-p POLICY] [--json] [--only GROUP] [--preflight] [--backend native|docker]
 *
 * Attack a sandbox made from the policy from inside with the probe
 * catalogue (docs/probes.md). Exit status: 0 when every probe is blocked;
 * 1 when any escaped or is inconclusive; 2 on a usage error; 125 when the
 * probe run could not be set up. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "paths.h"
#include "common/util.h"
#include "policy/policy.h"
#include "probe/probe.h"
#ifdef AIRLOCK_NET_BINARY
#include "probe/docker.h"
#endif

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock probe [-p POLICY] [--json] [--only GROUP] [--preflight]\n"
          "                     [--backend native|docker] [--proxy-image I] [--agent-image I]\n"
          "\n"
          "Run the escape catalogue inside a sandbox made from POLICY (default: the\n"
          "embedded policy) and report each probe as blocked, escaped or inconclusive.\n"
          "\n"
          "  -p, --policy FILE   policy file (airlock.yaml)\n"
          "      --json          JSON instead of a table\n"
          "      --only GROUP    network, filesystem, privileges, resources, persistence,\n"
          "                      credentials\n"
          "      --preflight     the fast subset airlock ticket runs first\n"
          "      --list          the catalogue as Markdown (docs/probes.md)\n"
          "      --backend B     native (default) or docker: attack the agent container of\n"
          "                      `airlock run --backend docker` (/var/run/docker.sock;\n"
          "                      images: scripts/docker-images.sh; docs/probes.md)\n"
          "      --proxy-image I, --agent-image I   docker backend images\n"
          "      --docker-egress-internal   accepted, no effect (the proxy runs on the host)\n"
          "      --run-id ID     docker backend: the container's airlock.run label (16 lowercase\n"
          "                      hex; default: the probe's nonce)\n"
          "\n"
          "Exit status: 0 all blocked; 1 something escaped or is inconclusive;\n"
          "2 usage; 125 the probe run could not be set up.\n");
}

#ifndef AIRLOCK_NET_BINARY
/* --backend docker: the Engine API client links libcurl, which this binary
 * does not (see main.c); re-exec as airlock-net with the same arguments. */
static int exec_net_binary(int argc, char **argv)
{
  int r = al_cli_exec_net(argc, argv, "probe --backend docker");
  return r == 127 ? 125 : r;
}
#endif

int cmd_probe(int argc, char **argv)
{
  enum {
    OPT_INSIDE = 256,
    OPT_UNCONFINED,
    OPT_LIST,
    OPT_DECOY,
    OPT_ONLY,
    OPT_PREFLIGHT,
    OPT_BACKEND,
    OPT_PROXY_IMAGE,
    OPT_AGENT_IMAGE,
    OPT_EGRESS_INTERNAL,
    OPT_UNHARDENED,
    OPT_RUN_ID,
  };
  static const struct option opts[] = {
      {"policy", required_argument, NULL, 'p'},
      {"json", no_argument, NULL, 'j'},
      {"only", required_argument, NULL, OPT_ONLY},
      {"preflight", no_argument, NULL, OPT_PREFLIGHT},
      {"list", no_argument, NULL, OPT_LIST},
      {"backend", required_argument, NULL, OPT_BACKEND},
      {"proxy-image", required_argument, NULL, OPT_PROXY_IMAGE},
      {"agent-image", required_argument, NULL, OPT_AGENT_IMAGE},
      {"docker-egress-internal", no_argument, NULL, OPT_EGRESS_INTERNAL},
      {"run-id", required_argument, NULL, OPT_RUN_ID},
      /* hidden: the inner mode, and the positive controls (tests only):
       * the probes as a plain host process, and (docker) the agent
       * container without airlock's hardening */
      {"inside", no_argument, NULL, OPT_INSIDE},
      {"unconfined", no_argument, NULL, OPT_UNCONFINED},
      {"docker-unhardened", no_argument, NULL, OPT_UNHARDENED},
      {"decoy", required_argument, NULL, OPT_DECOY},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *policy_path = NULL, *only = NULL;
  const char *backend = "native", *proxy_image = NULL, *agent_image = NULL, *run_id = NULL;
  bool json = false, preflight = false, inside = false, unconfined = false;
  bool egress_internal = false, unhardened = false;
  int c;
  optind = 1;
  al_cli_init("probe", usage);
  while ((c = al_cli_getopt(argc, argv, "p:jh", opts)) != -1) {
    switch (c) {
    case 'p':
      policy_path = optarg;
      break;
    case 'j':
      json = true;
      break;
    case OPT_ONLY:
      only = optarg;
      break;
    case OPT_PREFLIGHT:
      preflight = true;
      break;
    case OPT_LIST:
      al_probe_catalogue_markdown(stdout);
      return 0;
    case OPT_INSIDE:
      inside = true;
      break;
    case OPT_UNCONFINED:
      unconfined = true;
      break;
    case OPT_DECOY:
      break;
    case OPT_BACKEND:
      if (strcmp(optarg, "native") != 0 && strcmp(optarg, "docker") != 0) {
        return al_cli_usage_error("--backend `%s`: native or docker", optarg);
      }
      backend = optarg;
      break;
    case OPT_PROXY_IMAGE:
      proxy_image = optarg;
      break;
    case OPT_AGENT_IMAGE:
      agent_image = optarg;
      break;
    case OPT_EGRESS_INTERNAL:
      egress_internal = true;
      break;
    case OPT_UNHARDENED:
      unhardened = true;
      break;
    case OPT_RUN_ID: {
      size_t n = strspn(optarg, "0123456789abcdef");
      if (n != 16 || optarg[n])
        return al_cli_usage_error("--run-id `%.40s`: 16 lowercase hex digits", optarg);
      run_id = optarg;
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (inside)
    return al_probe_inner_main();
  if (optind < argc) {
    return al_cli_usage_error("unexpected argument `%s`", argv[optind]);
  }
  static const char *const groups[] = {"network",   "filesystem",  "privileges",
                                       "resources", "persistence", "credentials"};
  if (only) {
    bool ok = false;
    for (size_t i = 0; i < AL_ARRAY_SIZE(groups); i++)
      ok |= strcmp(only, groups[i]) == 0;
    if (!ok) {
      return al_cli_usage_error("--only `%s`: not a group", only);
    }
  }
  bool docker = strcmp(backend, "docker") == 0;
  if (docker && unconfined) {
    return al_cli_usage_error("--unconfined is the native backend's control; the docker "
                              "backend's is --docker-unhardened");
  }
  if (!docker && (proxy_image || agent_image || egress_internal || unhardened || run_id)) {
    return al_cli_usage_error("--proxy-image, --agent-image, --docker-egress-internal, --run-id "
                              "and --docker-unhardened need --backend docker");
  }
#ifndef AIRLOCK_NET_BINARY
  if (docker)
    return exec_net_binary(argc, argv);
#endif
  al_error err = {0};
  al_policy *policy = NULL;
  int r = al_policy_load_or_default(policy_path, &policy, &err);
  if (r < 0) {
    return al_cli_usage_error("%s", err.msg);
  }
  al_probe_opts o = {
      .policy = policy, .only_group = only, .preflight = preflight, .unconfined = unconfined};
  al_probe_report rep;
#ifdef AIRLOCK_NET_BINARY
  if (docker) {
    al_probe_docker_opts d = {.probe = o,
                              .proxy_image = proxy_image,
                              .agent_image = agent_image,
                              .egress_internal = egress_internal,
                              .run_id = run_id,
                              .control_unhardened = unhardened};
    r = al_probe_run_docker(&d, &rep, &err);
  } else {
    r = al_probe_run(&o, &rep, &err);
  }
#else
  r = al_probe_run(&o, &rep, &err);
#endif
  if (r < 0) {
    al_cli_error("%s", err.msg);
    al_policy_free(policy);
    return 125;
  }
  if (json)
    al_probe_report_print_json(&rep, stdout);
  else
    al_probe_report_print(&rep, stdout);
  int status = rep.n_escaped || rep.n_inconclusive || rep.n == 0 ? 1 : 0;
  al_probe_report_free(&rep);
  al_policy_free(policy);
  return status;
}
