/* airlock render compose|kubernetes [-p POLICY] [-o FILE] [--seccomp-out FILE]
 *                [--seccomp-profile REL|runtime-default] [--proxy-image I]
 *                [--agent-image I] [--namespace NS]
 * The policy as deployment manifests (src/lib/render/render.h), plus the
 * sandbox's seccomp profile as Docker/OCI JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "common/util.h"
#include "render/render.h"
#include "sandbox/syscalls.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock render compose    [-p POLICY] [-o FILE] [--seccomp-out FILE]\n"
          "                                 [--proxy-image I] [--agent-image I]\n"
          "                                 [--egress-internal] [--env-credentials]\n"
          "       airlock render kubernetes [-p POLICY] [-o FILE] [--seccomp-out FILE]\n"
          "                                 [--seccomp-profile REL|runtime-default]\n"
          "                                 [--namespace NS] [--proxy-image I] [--agent-image I]\n"
          "                                 [--run-id ID] [--runtime-class NAME] [--host-users]\n"
          "                                 [--no-probe] [--agent-sandbox] [--env-credentials]\n"
          "       airlock render cluster    [-o FILE] [--namespace NS] [--image I]\n"
          "                                 [--replicas N] [--jobs]\n"
          "       airlock render seccomp    [-o FILE]\n"
          "\n"
          "Print the policy as a Docker Compose file or as Kubernetes manifests (to\n"
          "stdout, or FILE). The sandbox's seccomp profile (JSON) is written to\n"
          "--seccomp-out; for compose with -o it defaults to airlock-seccomp.json beside\n"
          "-o. Without -o nothing is written: the Compose file refers to\n"
          "airlock-seccomp.json in the current directory, and stderr says how to write it\n"
          "(airlock render seccomp -o FILE). For kubernetes the pod uses the Localhost\n"
          "profile REL\n"
          "(default airlock/seccomp.json, relative to the kubelet's seccomp root;\n"
          "install the --seccomp-out file there on every node) or RuntimeDefault.\n"
          "--egress-internal (compose, for tests) makes the egress network internal\n"
          "too, so nothing the design starts can leave the machine.\n"
          "A policy with credentials.mode: sealed (the default) is refused: the forge\n"
          "gateway that keeps the tokens outside the agent runs only under `airlock\n"
          "ticket`, so these files would put the real tokens in the agent's container.\n"
          "--env-credentials accepts that (env mode, with a NOT RENDERED note in the\n"
          "header); or set credentials.mode: env (docs/kubernetes.md, \"Sealed\n"
          "credentials\").\n"
          "kubernetes, per run (docs/scale.md): --run-id ends every object's name and\n"
          "label (default manual); --runtime-class sets runtimeClassName (gVisor, Kata);\n"
          "pods get hostUsers: false unless --host-users; an init container probes the\n"
          "pod's network and fails the Job when NetworkPolicy is not enforced, unless\n"
          "--no-probe. --agent-sandbox renders the agent's pod as a\n"
          "kubernetes-sigs/agent-sandbox SandboxTemplate + SandboxClaim instead of a Job.\n"
          "cluster: the service side (docs/scale.md): the airlock serve Deployment with\n"
          "the broker as a second container holding the App key, its ServiceAccount and\n"
          "Role (the election Lease; with --jobs what launching runs as Jobs needs),\n"
          "state volume, Services, NetworkPolicy. --replicas N (1-5, default 1): more\n"
          "than one needs election.lease in serve.yaml.\n"
          "\n"
          "Exit status: 0 rendered; 1 an output file could not be written; 2 usage (also\n"
          "a POLICY that cannot be read, or that this rendering cannot keep).\n");
}

static int write_out(const char *path, const char *text)
{
  al_error err = {0};
  if (!path || strcmp(path, "-") == 0) {
    fputs(text, stdout);
    return fflush(stdout) == 0 ? 0 : -1;
  }
  if (al_write_file(path, text, strlen(text), 0644, &err) < 0) {
    al_cli_error("%s", err.msg);
    return -1;
  }
  return 0;
}

int cmd_render(int argc, char **argv)
{
  static const struct option opts[] = {{"policy", required_argument, NULL, 'p'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"seccomp-out", required_argument, NULL, 's'},
                                       {"seccomp-profile", required_argument, NULL, 'S'},
                                       {"proxy-image", required_argument, NULL, 'P'},
                                       {"agent-image", required_argument, NULL, 'A'},
                                       {"namespace", required_argument, NULL, 'n'},
                                       {"egress-internal", no_argument, NULL, 'I'},
                                       {"run-id", required_argument, NULL, 'R'},
                                       {"runtime-class", required_argument, NULL, 'C'},
                                       {"host-users", no_argument, NULL, 'U'},
                                       {"no-probe", no_argument, NULL, 'N'},
                                       {"agent-sandbox", no_argument, NULL, 'X'},
                                       {"image", required_argument, NULL, 'i'},
                                       {"replicas", required_argument, NULL, 'r'},
                                       {"jobs", no_argument, NULL, 'J'},
                                       {"env-credentials", no_argument, NULL, 'E'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  al_cli_init("render", usage);
  if (argc < 2)
    return al_cli_usage_error("what to render? (compose, kubernetes, cluster, seccomp)");
  if (al_cli_is_help(argv[1])) {
    usage(stdout);
    return 0;
  }
  const char *what = argv[1];
  bool compose = strcmp(what, "compose") == 0;
  bool k8s = strcmp(what, "kubernetes") == 0 || strcmp(what, "k8s") == 0;
  bool seccomp_only = strcmp(what, "seccomp") == 0;
  bool cluster = strcmp(what, "cluster") == 0;
  if (!compose && !k8s && !seccomp_only && !cluster) {
    return al_cli_usage_error("unknown %s `%s` (compose, kubernetes, cluster, seccomp)",
                              what[0] == '-' ? "option" : "target", what);
  }
  const char *policy_path = NULL, *out_path = NULL, *seccomp_out = NULL;
  const char *seccomp_profile = "airlock/seccomp.json";
  al_render_opts ro = {0};
  al_render_cluster_opts co = {.replicas = 1};
  int c;
  optind = 2;
  while ((c = al_cli_getopt(argc, argv, "p:o:h", opts)) != -1) {
    switch (c) {
    case 'p':
      policy_path = optarg;
      break;
    case 'o':
      out_path = optarg;
      break;
    case 's':
      seccomp_out = optarg;
      break;
    case 'S':
      seccomp_profile = strcmp(optarg, "runtime-default") == 0 ? NULL : optarg;
      break;
    case 'P':
      ro.proxy_image = optarg;
      break;
    case 'A':
      ro.agent_image = optarg;
      break;
    case 'n':
      if (al_cli_dns1123_label("--namespace", optarg) != 0)
        return AL_EXIT_USAGE;
      ro.k8s_namespace = optarg;
      break;
    case 'I':
      ro.egress_internal = true;
      break;
    case 'R':
      if (al_cli_dns1123_label("--run-id", optarg) != 0)
        return AL_EXIT_USAGE;
      ro.run_id = optarg;
      break;
    case 'C':
      if (al_cli_dns1123_label("--runtime-class", optarg) != 0)
        return AL_EXIT_USAGE;
      ro.runtime_class = optarg;
      break;
    case 'U':
      ro.host_users = true;
      break;
    case 'N':
      ro.no_probe = true;
      break;
    case 'X':
      ro.agent_sandbox = true;
      break;
    case 'i':
      co.image = optarg;
      break;
    case 'r': {
      uint64_t n;
      if (al_cli_uint("--replicas", optarg, 1, 5, &n) != 0)
        return AL_EXIT_USAGE;
      co.replicas = (unsigned)n;
      break;
    }
    case 'J':
      co.jobs = true;
      break;
    case 'E':
      ro.env_credentials = true;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (optind != argc) {
    return al_cli_usage_error("unexpected argument `%s`", argv[optind]);
  }

  al_error err = {0};
  if (cluster) {
    co.k8s_namespace = ro.k8s_namespace;
    al_autofree char *text = NULL;
    if (al_render_cluster(&co, &text, &err) < 0)
      return al_cli_usage_error("%s", err.msg);
    return write_out(out_path, text) < 0 ? 1 : 0;
  }
  if (seccomp_only) {
    al_autofree char *profile = NULL;
    if (al_seccomp_profile_json(&profile, &err) < 0) {
      al_cli_error("%s", err.msg);
      return 1;
    }
    return write_out(out_path, profile) < 0 ? 1 : 0;
  }

  al_render_files_opts f = {.compose = compose,
                            .policy_path = policy_path,
                            .out_path = out_path,
                            .seccomp_out = seccomp_out,
                            .seccomp_profile = seccomp_profile};
  al_render_notes notes;
  al_autofree char *text = NULL;
  int r = al_render_files(&f, &ro, &text, &notes, &err);
  if (notes.seccomp_not_written[0])
    al_cli_error("the Compose file refers to %s, which was not written (no -o or "
                 "--seccomp-out): write it with `airlock render seccomp -o %s`",
                 notes.seccomp_not_written, notes.seccomp_not_written);
  if (notes.seccomp_written[0])
    al_cli_error("wrote the seccomp profile to %s", notes.seccomp_written);
  if (notes.sealed_as_env)
    al_cli_error("warning: credentials.mode: sealed is not rendered (the forge gateway runs "
                 "only under `airlock ticket`): --env-credentials: the output carries env mode, "
                 "the tokens in the agent's container; see the note in its header");
  if (notes.relay_not_rendered)
    al_cli_error("the policy's `relay` section is not rendered (it needs an "
                 "egress listener of its own; see the note in the output)");
  if (r < 0 && notes.usage)
    return al_cli_usage_error("%s", err.msg);
  if (r < 0) {
    al_cli_error("%s", err.msg);
    return notes.status;
  }
  return write_out(out_path, text) < 0 ? 1 : 0;
}
