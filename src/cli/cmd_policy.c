/* airlock policy check [--for ticket|run|render] [--repo OWNER/REPO] [--json] FILE|-
 * airlock policy default
 * airlock policy init [--forge gitlab] OWNER/REPO
 * Validate a policy (for a purpose), print the embedded default, or print
 * a starter policy for one repository (examples/airlock.yaml). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "common/term.h"
#include "common/util.h"
#include "forge/names.h"
#include "policy/policy.h"
#include "policy/starter.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock policy check [--for ticket|run|render] [--repo OWNER/REPO] [--json]\n"
          "                            FILE|-\n"
          "       airlock policy default\n"
          "       airlock policy init [--forge github|gitlab] OWNER/REPO\n"
          "\n"
          "check: validate FILE (`-`: standard input) against the schema (docs/policy.md);\n"
          "print its canonical form (compact JSON) and `sha256: HEX`, the hash every run\n"
          "record carries. Warnings (surprising but valid choices: `tls: false` on 443, a\n"
          "public IP literal) go to stderr. Every error names FILE:LINE.\n"
          "  --for P       also check what command P needs (what `airlock P` would refuse):\n"
          "                ticket: network allowing the forge's API and git hosts with TLS,\n"
          "                credentials, a readable forge.ca_file; run: relay.key_file, not\n"
          "                `key: broker`; render: a network section\n"
          "  --repo R      with --for ticket: the ticket's OWNER/REPO, which the credentials\n"
          "                must name\n"
          "  --json        one JSON document on stdout instead: {file, ok, error, purpose,\n"
          "                needs, sha256, policy, warnings}\n"
          "default: print the embedded default policy (no network at all) in canonical form.\n"
          "init: print a starter policy for the GitHub repository OWNER/REPO, with comments\n"
          "(examples/airlock.yaml); it passes `check --for ticket`. --forge gitlab: for the\n"
          "GitLab project GROUP/PROJECT (examples/airlock-gitlab.yaml; airlock ticket does\n"
          "not run GitLab tickets yet, docs/gitlab.md).\n"
          "\n"
          "Exit status: 0 valid (for the purpose); 1 invalid; 2 usage, or FILE cannot be\n"
          "read (missing, a directory, no permission).\n");
}

/* OWNER/REPO by the one rule (forge/names.h). */
static bool repo_ok(const char *s)
{
  const char *why;
  return al_repo_name_check(s, &why) == 0;
}

static int load(const char *path, al_policy **p, al_error *err)
{
  if (strcmp(path, "-") != 0)
    return al_policy_load_file(path, p, err);
  /* standard input, capped as a file is (1 MiB) */
  size_t cap = (1u << 20) + 1, n = 0;
  al_autofree char *buf = al_xmalloc(cap);
  for (;;) {
    ssize_t r = read(STDIN_FILENO, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return al_make_error(err, errno, "<stdin>");
    if (r == 0)
      break;
    n += (size_t)r;
    if (n == cap)
      return al_error_set(err, EFBIG, "<stdin>: larger than 1 MiB");
  }
  return al_policy_load_buffer("<stdin>", buf, n, p, err);
}

static int check(int argc, char **argv)
{
  static const struct option opts[] = {{"for", required_argument, NULL, 'f'},
                                       {"repo", required_argument, NULL, 'r'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *repo = NULL;
  bool json = false, have_purpose = false;
  al_policy_purpose purpose = AL_POLICY_FOR_RUN;
  int c;
  optind = 1;
  while ((c = al_cli_getopt(argc, argv, "h", opts)) != -1) {
    switch (c) {
    case 'f':
      if (al_policy_purpose_parse(optarg, &purpose) < 0)
        return al_cli_usage_error("--for `%s`: ticket, run or render", optarg);
      have_purpose = true;
      break;
    case 'r':
      if (!repo_ok(optarg))
        return al_cli_usage_error("--repo `%s`: expected OWNER/REPO", optarg);
      repo = optarg;
      break;
    case 'j':
      json = true;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (optind >= argc)
    return al_cli_usage_error("which policy file? (FILE, or - for standard input)");
  if (al_cli_max_operands(argc, argv, optind, 1) != 0)
    return AL_EXIT_USAGE;
  if (repo && (!have_purpose || purpose != AL_POLICY_FOR_TICKET))
    return al_cli_usage_error("--repo goes with --for ticket");
  const char *path = argv[optind];

  al_error err = {0};
  al_policy *p = NULL;
  int r = load(path, &p, &err);
  /* FILE could not be read at all (missing, a directory, no permission):
   * nothing was checked, so a usage error (2) as for every command's
   * -p POLICY; a file that reads but breaks a rule is "invalid" (1) */
  int fail_rc = r < 0 && err.code != EINVAL && err.code != EFBIG ? AL_EXIT_USAGE : AL_EXIT_FAILED;
  if (r == 0 && have_purpose)
    r = al_policy_check_for(p, purpose, repo, &err);
  if (json) {
    json_t *doc = json_object();
    json_object_set_new(doc, "file", json_string(strcmp(path, "-") == 0 ? "<stdin>" : path));
    json_object_set_new(doc, "ok", json_boolean(r == 0));
    json_object_set_new(doc, "error", r < 0 ? json_string(err.msg) : json_null());
    json_object_set_new(doc, "purpose",
                        have_purpose ? json_string(al_policy_purpose_name(purpose)) : json_null());
    json_object_set_new(doc, "needs",
                        have_purpose ? json_string(al_policy_purpose_needs(purpose)) : json_null());
    json_t *warnings = json_array();
    json_t *canon = NULL;
    if (p) {
      for (size_t i = 0; i < p->n_warnings; i++)
        json_array_append_new(warnings, json_string(p->warnings[i]));
      al_autofree char *text = al_policy_canonical(p);
      canon = json_loads(text, 0, NULL);
    }
    json_object_set_new(doc, "sha256", p ? json_string(al_policy_sha256(p)) : json_null());
    json_object_set_new(doc, "policy", canon ? canon : json_null());
    json_object_set_new(doc, "warnings", warnings);
    al_autofree char *text = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(doc);
    printf("%s\n", text ? text : "{}");
    al_policy_free(p);
    return r < 0 ? fail_rc : AL_EXIT_OK;
  }
  for (size_t i = 0; p && i < p->n_warnings; i++)
    al_cli_error("warning: %s", p->warnings[i]);
  if (r < 0) {
    al_cli_error("%s", err.msg);
    if (have_purpose && p) /* the file read; the purpose's check failed */
      al_cli_error("%s needs %s", al_policy_purpose_name(purpose),
                   al_policy_purpose_needs(purpose));
    al_policy_free(p);
    return fail_rc;
  }
  char *canon = al_policy_canonical(p);
  printf("%s\nsha256: %s\n", canon, al_policy_sha256(p));
  free(canon);
  if (have_purpose)
    al_cli_error("ok for %s (%s)", al_policy_purpose_name(purpose),
                 al_policy_purpose_needs(purpose));
  al_policy_free(p);
  return AL_EXIT_OK;
}

static int init(int argc, char **argv)
{
  if (argc == 2 && al_cli_is_help(argv[1])) {
    usage(stdout);
    return 0;
  }
  al_forge_kind kind = AL_FORGE_GITHUB;
  if (argc >= 2 && strcmp(argv[1], "--forge") == 0) {
    size_t k = 0;
    while (argc >= 3 && al_forge_kind_names[k] && strcmp(argv[2], al_forge_kind_names[k]) != 0)
      k++;
    if (argc < 3 || !al_forge_kind_names[k])
      return al_cli_usage_error("--forge: github or gitlab");
    kind = (al_forge_kind)k;
    argc -= 2;
    argv += 2;
  }
  if (argc < 2)
    return al_cli_usage_error("init needs the repository: airlock policy init [--forge gitlab] "
                              "OWNER/REPO");
  if (al_cli_max_operands(argc, argv, 1, 1) != 0)
    return AL_EXIT_USAGE;
  if (argv[1][0] == '-')
    return al_cli_usage_error("unknown option `%s`", argv[1]);
  al_error err = {0};
  al_autofree char *out = NULL;
  if (al_policy_starter(kind, argv[1], &out, &err) < 0) {
    if (err.code == EINVAL)
      return al_cli_usage_error("%s", err.msg);
    al_cli_error("%s", err.msg);
    return AL_EXIT_FAILED;
  }
  fputs(out, stdout);
  return fflush(stdout) == 0 ? AL_EXIT_OK : AL_EXIT_FAILED;
}

int cmd_policy(int argc, char **argv)
{
  al_cli_init("policy", usage);
  if (argc < 2)
    return al_cli_usage_error("which subcommand? (check, default, init)");
  if (al_cli_is_help(argv[1])) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "check") == 0)
    return check(argc - 1, argv + 1);
  if (strcmp(argv[1], "init") == 0)
    return init(argc - 1, argv + 1);
  if (strcmp(argv[1], "default") == 0) {
    if (argc == 3 && al_cli_is_help(argv[2])) {
      usage(stdout);
      return 0;
    }
    if (al_cli_max_operands(argc, argv, 2, 0) != 0)
      return AL_EXIT_USAGE;
    al_error err = {0};
    al_policy *p = NULL;
    if (al_policy_default(&p, &err) < 0) {
      al_cli_error("%s", err.msg);
      return AL_EXIT_FAILED;
    }
    char *canon = al_policy_canonical(p);
    printf("%s\nsha256: %s\n", canon, al_policy_sha256(p));
    free(canon);
    al_policy_free(p);
    return 0;
  }
  return al_cli_usage_error("unknown %s `%s` (check, default, init)",
                            argv[1][0] == '-' ? "option" : "subcommand", argv[1]);
}
