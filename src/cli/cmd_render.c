/* airlock render compose|kubernetes [-p POLICY] [-o FILE] [--seccomp-out FILE]
 *                [--seccomp-profile REL|runtime-default] [--proxy-image I]
 *                [--agent-image I] [--namespace NS]
 * The policy as deployment manifests (src/lib/render/render.h), plus the
 * sandbox's seccomp profile as Docker/OCI JSON. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "common/util.h"
#include "policy/policy.h"
#include "render/render.h"
#include "sandbox/syscalls.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock render compose    [-p POLICY] [-o FILE] [--seccomp-out FILE]\n"
          "                                 [--proxy-image I] [--agent-image I]\n"
          "                                 [--egress-internal]\n"
          "       airlock render kubernetes [-p POLICY] [-o FILE] [--seccomp-out FILE]\n"
          "                                 [--seccomp-profile REL|runtime-default]\n"
          "                                 [--namespace NS] [--proxy-image I] [--agent-image I]\n"
          "       airlock render seccomp    [-o FILE]\n"
          "\n"
          "Print the policy as a Docker Compose file or as Kubernetes manifests (to\n"
          "stdout, or FILE). The sandbox's seccomp profile (JSON) is written to\n"
          "--seccomp-out; for compose it defaults to airlock-seccomp.json beside -o\n"
          "(or in the current directory), and the Compose file refers to it by\n"
          "absolute path. For kubernetes the pod uses the Localhost profile REL\n"
          "(default airlock/seccomp.json, relative to the kubelet's seccomp root;\n"
          "install the --seccomp-out file there on every node) or RuntimeDefault.\n"
          "--egress-internal (compose, for tests) makes the egress network internal\n"
          "too, so nothing the design starts can leave the machine.\n");
}

/* An absolute version of a path whose directory exists. */
static char *absolute(const char *path)
{
  if (path[0] == '/')
    return al_xstrdup(path);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return NULL;
  return al_strdup_printf("%s/%s", cwd, path);
}

static int write_out(const char *path, const char *text)
{
  al_error err = {0};
  if (!path || strcmp(path, "-") == 0) {
    fputs(text, stdout);
    return fflush(stdout) == 0 ? 0 : -1;
  }
  if (al_write_file(path, text, strlen(text), 0644, &err) < 0) {
    fprintf(stderr, "airlock render: %s\n", err.msg);
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
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *what = argv[1];
  bool compose = strcmp(what, "compose") == 0;
  bool k8s = strcmp(what, "kubernetes") == 0 || strcmp(what, "k8s") == 0;
  bool seccomp_only = strcmp(what, "seccomp") == 0;
  if (!compose && !k8s && !seccomp_only) {
    fprintf(stderr, "airlock render: unknown target `%s` (compose, kubernetes, seccomp)\n", what);
    return 2;
  }
  const char *policy_path = NULL, *out_path = NULL, *seccomp_out = NULL;
  const char *seccomp_profile = "airlock/seccomp.json";
  al_render_opts ro = {0};
  int c;
  optind = 2;
  while ((c = getopt_long(argc, argv, "p:o:h", opts, NULL)) != -1) {
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
      ro.k8s_namespace = optarg;
      break;
    case 'I':
      ro.egress_internal = true;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "airlock render: unexpected argument `%s`\n", argv[optind]);
    return 2;
  }

  al_error err = {0};
  al_autofree char *profile = NULL;
  if (al_seccomp_profile_json(&profile, &err) < 0) {
    fprintf(stderr, "airlock render: %s\n", err.msg);
    return 1;
  }
  if (seccomp_only)
    return write_out(out_path, profile) < 0 ? 1 : 0;

  al_policy *policy = NULL;
  int r = al_policy_load_or_default(policy_path, &policy, &err);
  if (r < 0) {
    fprintf(stderr, "airlock render: %s\n", err.msg);
    return 2;
  }
  al_autofree char *policy_abs = policy_path ? absolute(policy_path) : NULL;
  al_autofree char *policy_text = NULL;
  if (policy_path && al_read_file(policy_path, 1 << 20, &policy_text, NULL, &err) < 0) {
    fprintf(stderr, "airlock render: %s\n", err.msg);
    al_policy_free(policy);
    return 2;
  }
  ro.policy_path = policy_abs;
  ro.policy_text = policy_text;

  al_autofree char *seccomp_abs = NULL;
  if (compose && !seccomp_out) {
    const char *slash = out_path ? strrchr(out_path, '/') : NULL;
    seccomp_abs =
        slash ? al_strdup_printf("%.*s/airlock-seccomp.json", (int)(slash - out_path), out_path)
              : al_xstrdup("airlock-seccomp.json");
    char *a = absolute(seccomp_abs);
    free(seccomp_abs);
    seccomp_abs = a;
  } else if (seccomp_out) {
    seccomp_abs = absolute(seccomp_out);
  }
  if ((compose || seccomp_out) && !seccomp_abs) {
    fprintf(stderr, "airlock render: getcwd: %s\n", strerror(errno));
    al_policy_free(policy);
    return 1;
  }
  if (seccomp_abs) {
    if (al_write_file(seccomp_abs, profile, strlen(profile), 0644, &err) < 0) {
      fprintf(stderr, "airlock render: seccomp profile: %s\n", err.msg);
      al_policy_free(policy);
      return 1;
    }
    fprintf(stderr, "airlock render: wrote the seccomp profile to %s\n", seccomp_abs);
  }
  ro.seccomp_path = compose ? seccomp_abs : seccomp_profile;

  if (policy->relay.present && !compose)
    fprintf(stderr, "airlock render: the policy's `relay` section is not rendered (it needs an "
                    "egress listener of its own; see the note in the output)\n");
  al_autofree char *text = NULL;
  r = compose ? al_render_compose(policy, &ro, &text, &err)
              : al_render_kubernetes(policy, &ro, &text, &err);
  al_policy_free(policy);
  if (r < 0) {
    fprintf(stderr, "airlock render: %s\n", err.msg);
    return 2;
  }
  return write_out(out_path, text) < 0 ? 1 : 0;
}
