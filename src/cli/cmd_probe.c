/* airlock probe [-p POLICY] [--json] [--only GROUP] [--preflight]
 *
 * Attack a sandbox made from the policy from inside with the probe
 * catalogue (docs/probes.md). Exit status: 0 when every probe is blocked;
 * 1 when any escaped or is inconclusive; 2 on a usage error; 125 when the
 * probe run could not be set up. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "common/util.h"
#include "policy/policy.h"
#include "probe/probe.h"

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock probe [-p POLICY] [--json] [--only GROUP] [--preflight]\n"
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
               "\n"
               "Exit status: 0 all blocked; 1 something escaped or is inconclusive;\n"
               "2 usage; 125 the probe run could not be set up.\n");
}

int cmd_probe(int argc, char **argv)
{
  enum { OPT_INSIDE = 256, OPT_UNCONFINED, OPT_LIST, OPT_DECOY, OPT_ONLY, OPT_PREFLIGHT };
  static const struct option opts[] = {
      {"policy", required_argument, NULL, 'p'},
      {"json", no_argument, NULL, 'j'},
      {"only", required_argument, NULL, OPT_ONLY},
      {"preflight", no_argument, NULL, OPT_PREFLIGHT},
      {"list", no_argument, NULL, OPT_LIST},
      /* hidden: the inner mode, and the positive control (tests only) */
      {"inside", no_argument, NULL, OPT_INSIDE},
      {"unconfined", no_argument, NULL, OPT_UNCONFINED},
      {"decoy", required_argument, NULL, OPT_DECOY},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *policy_path = NULL, *only = NULL;
  bool json = false, preflight = false, inside = false, unconfined = false;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "p:jh", opts, NULL)) != -1) {
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
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (inside)
    return al_probe_inner_main();
  if (optind < argc) {
    fprintf(stderr, "airlock probe: unexpected argument `%s`\n", argv[optind]);
    return 2;
  }
  static const char *const groups[] = {"network",   "filesystem",  "privileges",
                                       "resources", "persistence", "credentials"};
  if (only) {
    bool ok = false;
    for (size_t i = 0; i < AL_ARRAY_SIZE(groups); i++)
      ok |= strcmp(only, groups[i]) == 0;
    if (!ok) {
      fprintf(stderr, "airlock probe: --only `%s`: not a group\n", only);
      return 2;
    }
  }
  al_error err = {0};
  al_policy *policy = NULL;
  int r = al_policy_load_or_default(policy_path, &policy, &err);
  if (r < 0) {
    fprintf(stderr, "airlock probe: %s\n", err.msg);
    return 2;
  }
  al_probe_opts o = {
      .policy = policy, .only_group = only, .preflight = preflight, .unconfined = unconfined};
  al_probe_report rep;
  if (al_probe_run(&o, &rep, &err) < 0) {
    fprintf(stderr, "airlock probe: %s\n", err.msg);
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
