/* airlock audit OWNER/REPO [--branch B] [--json]: prove the escape budget
 * from the forge's own API (src/lib/forge/audit.h); with --forge gitlab,
 * a GitLab project GROUP/.../PROJECT (src/lib/forge/audit_gitlab.h). Exit 0 when every
 * required criterion passes, 1 when one fails or is unknown, 2 on errors.
 * Tokens come only from the environment, never from the command line. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "cli.h"
#include "commands.h"
#include "common/log.h"
#include "common/term.h"
#include "common/util.h"
#include "forge/appconfig.h"
#include "forge/audit.h"
#include "forge/gitlab.h"
#include "policy/policy.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock audit OWNER/REPO [--branch B] [--json] [--config BROKER.yaml]\n"
          "                     [--api URL] [--cacert FILE] [--app SLUG [--app-id N]]\n"
          "       airlock audit --forge gitlab GROUP/PROJECT --api URL/api/v4 [--branch B]\n"
          "                     [--json] [--cacert FILE] [--bot USER --bot-id N]\n"
          "       airlock audit --policy airlock.yaml GROUP/PROJECT   (its forge.kind gitlab)\n"
          "  -b, --branch B       the branch to audit (default: the repository's default)\n"
          "  -j, --json           the report as JSON on stdout\n"
          "  -c, --config FILE    the broker's config: the App's id and key; reads the App's\n"
          "                       installation and, without a token below, reads with the\n"
          "                       config's audit: credential (audit App or token file) or\n"
          "                       mints a read-only installation token (revoked at the end)\n"
          "      --api URL        REST API base (default: the config's, else\n"
          "                       https://api.github.com)\n"
          "      --cacert FILE    trust anchors for the API (PEM)\n"
          "      --app SLUG       the App without --config (its bypass/code-owner checks)\n"
          "      --app-id N       the App's numeric id without --config (ruleset bypass)\n"
          "      --timeout D      per request (default 30s)\n"
          "      --run-prefix P   the run branches' prefix for the ci.* criteria (the\n"
          "                       policy's review.branch_prefix; default airlock/)\n"
          "      --forge KIND     github (default) or gitlab (the policy's forge.kind;\n"
          "                       gitlab needs --api, the policy's forge.api_url)\n"
          "      --policy FILE    take forge.kind, forge.api_url, forge.ca_file,\n"
          "                       review.base_branch and review.branch_prefix from the\n"
          "                       run's policy (options given here win)\n"
          "      --bot USER, --bot-id N  GitLab: a standing bot user to check (its role,\n"
          "                       approval rules); the run's own bots are minted per run\n"
          "environment: AIRLOCK_AUDIT_TOKEN, else GITHUB_TOKEN: a token for the reads\n"
          "  (least privilege: Administration: read, Contents: read, Metadata: read on the\n"
          "  one repository). GitLab: AIRLOCK_AUDIT_TOKEN, a Maintainer's read_api token.\n"
          "  Tokens are never accepted on the command line.\n"
          "Exit status: 0 the escape budget holds; 1 it does not (FAIL or UNKNOWN); 2 usage,\n"
          "or the audit could not run (no credentials, the forge unreachable or\n"
          "answering an error): nothing was judged.\n");
}

/* --policy's, kept until the end (its strings are the options'). */
static al_policy *audit_policy;

int cmd_audit(int argc, char **argv)
{
  enum {
    O_API = 256,
    O_CACERT,
    O_APP,
    O_APP_ID,
    O_TIMEOUT,
    O_TOKEN,
    O_PREFIX,
    O_FORGE,
    O_BOT,
    O_BOT_ID,
    O_POLICY
  };
  static const struct option opts[] = {{"branch", required_argument, NULL, 'b'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"config", required_argument, NULL, 'c'},
                                       {"api", required_argument, NULL, O_API},
                                       {"cacert", required_argument, NULL, O_CACERT},
                                       {"app", required_argument, NULL, O_APP},
                                       {"app-id", required_argument, NULL, O_APP_ID},
                                       {"timeout", required_argument, NULL, O_TIMEOUT},
                                       {"run-prefix", required_argument, NULL, O_PREFIX},
                                       {"forge", required_argument, NULL, O_FORGE},
                                       {"policy", required_argument, NULL, O_POLICY},
                                       {"bot", required_argument, NULL, O_BOT},
                                       {"bot-id", required_argument, NULL, O_BOT_ID},
                                       {"token", required_argument, NULL, O_TOKEN},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  al_audit_opts o = {0};
  bool json = false, app_given = false, bot_given = false, forge_given = false;
  const char *policy_path = NULL;
  enum al_log_level level = AL_LOG_WARN;
  int ch;
  al_cli_init("audit", usage);
  while ((ch = al_cli_getopt(argc, argv, "b:jc:vh", opts)) != -1) {
    switch (ch) {
    case 'b':
      o.branch = optarg;
      break;
    case 'j':
      json = true;
      break;
    case 'c':
      o.broker_config = optarg;
      break;
    case O_API:
      o.api_url = optarg;
      break;
    case O_CACERT:
      o.ca_file = optarg;
      break;
    case O_APP:
    case O_BOT:
      o.app_slug = optarg;
      *(ch == O_APP ? &app_given : &bot_given) = true;
      break;
    case O_APP_ID:
    case O_BOT_ID: {
      uint64_t v;
      if (al_cli_uint(ch == O_APP_ID ? "--app-id" : "--bot-id", optarg, 1, INT64_MAX, &v) != 0)
        return AL_EXIT_USAGE;
      o.app_id = (long long)v;
      *(ch == O_APP_ID ? &app_given : &bot_given) = true;
      break;
    }
    case O_POLICY:
      policy_path = optarg;
      break;
    case O_FORGE:
      forge_given = true;
      if (!strcmp(optarg, "github"))
        o.forge_kind = AL_FORGE_GITHUB;
      else if (!strcmp(optarg, "gitlab"))
        o.forge_kind = AL_FORGE_GITLAB;
      else
        return al_cli_usage_error("--forge `%s`: github or gitlab", optarg);
      break;
    case O_TIMEOUT: {
      const char *why = NULL;
      if (al_parse_duration_ms(optarg, &o.timeout_ms, &why) < 0) {
        return al_cli_usage_error("--timeout: %s", why);
      }
      break;
    }
    case O_PREFIX:
      o.run_prefix = optarg;
      break;
    case O_TOKEN:
      /* Never echo the value back: it may be a live token. */
      return al_cli_usage_error("tokens are not accepted on the command line (they would "
                                "show in ps and shell history); set AIRLOCK_AUDIT_TOKEN instead");
    case 'v':
      level = AL_LOG_DEBUG;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (policy_path) {
    /* the run's policy: its forge (kind, API, CA) and its review branches
     * (base, prefix), each unless given on the command line */
    al_error pe = {0};
    if (al_policy_load_file(policy_path, &audit_policy, &pe) < 0)
      return al_cli_usage_error("--policy %s: %s", policy_path, pe.msg);
    const al_policy_forge *f = &audit_policy->forge;
    if (forge_given && o.forge_kind != f->kind)
      return al_cli_usage_error("--forge %s, but the policy's forge.kind is %s",
                                al_forge_kind_names[o.forge_kind], al_forge_kind_names[f->kind]);
    o.forge_kind = f->kind;
    if (!o.api_url)
      o.api_url = f->api_url;
    if (!o.ca_file)
      o.ca_file = f->ca_file;
    if (!o.run_prefix)
      o.run_prefix = audit_policy->branch_prefix;
    if (!o.branch)
      o.branch = audit_policy->base_branch;
  }
  bool gl = o.forge_kind == AL_FORGE_GITLAB;
  if (optind >= argc)
    return al_cli_usage_error(gl ? "which project? (GROUP/PROJECT)"
                                 : "which repository? (OWNER/REPO)");
  if (al_cli_max_operands(argc, argv, optind, 1) != 0)
    return AL_EXIT_USAGE;
  o.repo = argv[optind];
  if (gl) {
    char pe[600];
    al_error pe_err = {0};
    if (al_gl_project_escape(o.repo, pe, sizeof pe, &pe_err) < 0)
      return al_cli_usage_error("%s", pe_err.msg);
    if (!o.api_url)
      return al_cli_usage_error("--forge gitlab needs --api (the policy's forge.api_url, "
                                "e.g. https://gitlab.example.com/api/v4)");
    if (o.broker_config || app_given)
      return al_cli_usage_error("--forge gitlab takes --bot/--bot-id, not --config, --app or "
                                "--app-id");
  } else {
    const char *why;
    if (al_repo_name_check(o.repo, &why) < 0)
      return al_cli_usage_error("repository `%s`: %s", o.repo, why);
    if (bot_given)
      return al_cli_usage_error("--bot and --bot-id are for --forge gitlab (GitHub: --app)");
  }
  al_log_init("airlock audit", level);
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

  const char *tok = getenv("AIRLOCK_AUDIT_TOKEN");
  o.token_source = "AIRLOCK_AUDIT_TOKEN";
  if ((!tok || !*tok) && !gl) {
    tok = getenv("GITHUB_TOKEN");
    o.token_source = "GITHUB_TOKEN";
  }
  o.token = tok && *tok ? tok : NULL;

  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    return al_cli_usage_error("curl_global_init failed");
  }
  al_error err = {0};
  al_audit_report rep;
  int r = al_audit_run(&o, &rep, &err);
  curl_global_cleanup();
  if (r < 0) {
    al_cli_error("%s", err.msg);
    return 2;
  }
  if (json) {
    char *s = al_audit_format_json(&rep);
    if (s)
      printf("%s\n", s);
    free(s);
  } else {
    {
      /* the report quotes the forge's answers (branch, rule and user names):
       * shown escaped (common/term.h) */
      char *buf = NULL;
      size_t len = 0;
      FILE *m = open_memstream(&buf, &len);
      if (m) {
        al_audit_format_text(&rep, m);
        fclose(m);
        al_autofree char *clean = al_term_sanitize(buf ? buf : "", len);
        fputs(clean, stdout);
      }
      free(buf);
    }
  }
  int rc = rep.holds ? 0 : 1;
  al_audit_report_free(&rep);
  al_policy_free(audit_policy);
  audit_policy = NULL;
  return rc;
}
