/* `airlock audit`: prove the escape budget from the forge's own API.
 *
 * airlock's worst case is "a hostile pull request that a human must
 * review". That holds only when the target branch really requires that
 * review and the bot (the GitHub App) cannot get around it. al_audit_run()
 * reads the repository's settings through the GitHub REST API and judges
 * each criterion below as PASS, WARN (holds, with a caution), FAIL, or
 * UNKNOWN (the API did not let the token see it: never a pass). See
 * docs/audit.md for what each one means and how to fix it.
 *
 * What it reads (GitHub REST API 2022-11-28; pages on docs.github.com/rest):
 *   GET /app                                   Apps › "Get the authenticated app" (JWT)
 *   GET /repos/{o}/{r}/installation            Apps › "Get a repository installation
 *                                              for the authenticated app" (JWT): the
 *                                              installation's id and permissions
 *   GET /repos/{o}/{r}                         Repos › "Get a repository" (default branch)
 *   GET /repos/{o}/{r}/branches/{b}/protection Branches › Branch protection › "Get branch
 *                                              protection" (administration: read; 404
 *                                              "Branch not protected" when only rulesets
 *                                              protect it)
 *   GET /repos/{o}/{r}/rules/branches/{b}      Repos › Rules › "Get rules for a branch"
 *   GET /repos/{o}/{r}/rulesets, /{id}         Repos › Rules › "Get all repository
 *                                              rulesets", "Get a repository ruleset"
 *                                              (bypass_actors only for callers with
 *                                              write access to the ruleset;
 *                                              current_user_can_bypass for the caller)
 *   the same /rulesets/{id} as the run's App   a token minted from the run's App with
 *                                              only metadata: read (then revoked):
 *                                              current_user_can_bypass (always,
 *                                              pull_requests_only, exempt, never) is
 *                                              the bot's own answer, whatever the
 *                                              audit credential may see
 *   GET /repos/{o}/{r}/contents/{path}?ref=b   Repos › Contents › "Get repository
 *                                              content" (CODEOWNERS in .github/, root,
 *                                              docs/: GitHub Docs "About code owners";
 *                                              .github/workflows and each .yml or .yaml
 *                                              file in it: the ci.* criteria, forge/workflow.h)
 *   GET /repos/{o}/{r}/actions/permissions     Actions › Permissions › "Get GitHub Actions
 *                                              permissions for a repository" (enabled)
 *   GET /repos/{o}/{r}/actions/permissions/workflow  "Get default workflow permissions
 *                                              for a repository" (the GITHUB_TOKEN's
 *                                              default, can_approve_pull_request_reviews)
 *   GET /repos/{o}/{r}/environments            Deployments › Environments › "List
 *                                              environments" (required reviewers)
 * Classic protection and rulesets are both read and, criterion by
 * criterion, the stricter wins (GitHub enforces every layer at once).
 *
 * Credentials (least privilege; never from a command line):
 *   - opts.token: a token for the repository reads, e.g. a fine-grained
 *     token of a repository admin with Administration: read, Contents: read,
 *     Metadata: read on this one repository (the CLI takes it from
 *     AIRLOCK_AUDIT_TOKEN or GITHUB_TOKEN). Preferred: the App then needs no
 *     administration permission at all.
 *   - opts.broker_config: the broker's config (the App id and key). The app
 *     JWT reads the App and its installation on the repository (needed for
 *     the app.* criteria and the bot's identity). When opts.token is NULL
 *     and no audit credential (below) is configured, an installation token
 *     is minted from the run's App for the one repository with only
 *     `administration: read` (if the installation holds administration),
 *     `contents: read` (if it holds contents) and the implied
 *     `metadata: read`, used for the reads, then revoked
 *     (DELETE /installation/token) before al_audit_run returns. The key is
 *     loaded, the App read and the tokens minted in a short-lived child
 *     (audit_key.c) that hands them over a pipe and exits, as the broker
 *     hands a grant (opts.grant): the reads and checks never run in a
 *     process that holds a key.
 *   - the audit credential: the broker config's
 *     optional `audit:` section (see forge/appconfig.h), used when opts.token
 *     is NULL: `token_file` (a read-only admin token
 *     kept by the broker's user, read for each audit) or `app` (a second,
 *     read-only "audit App": a token with only administration: read and
 *     contents: read is minted from it, used, and revoked). The run's App
 *     then needs no administration permission at all.
 *   Without the broker config the bot is named by opts.app_slug/app_id and
 *   the app.* criteria are UNKNOWN.
 *
 * For `airlock ticket` the audit runs in the supervisor, a process without
 * the key: the broker's `audit` request (broker/proto.h, al_audit_lease_open
 * in broker/client.h) hands it opts.grant: what the App's JWT shows of the
 * App and its installation (forge/app.h al_gh_app_facts), the broker's
 * roles and API, and the read tokens the broker minted for it (the audit
 * credential's, and the run's App's metadata: read one), leased like a
 * ticket's tokens: revoked by the broker when the supervisor releases them
 * or its connection ends. The broker parses none of the repository's
 * settings.
 *
 * The supervisor audits before leasing; it refuses to run when the report does not hold, unless
 * the user passed --accept-unprotected (then it records it in the run record
 * and prints it on every summary line); an audit that cannot run is "cannot
 * tell" (refused likewise). */
#ifndef AL_FORGE_AUDIT_H
#define AL_FORGE_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "forge/appconfig.h"
#include "forge/names.h"
#include "common/error.h"

typedef enum al_audit_status {
  AL_AUDIT_PASS = 0,
  AL_AUDIT_WARN = 1,    /* holds, but something should change */
  AL_AUDIT_FAIL = 2,    /* does not hold */
  AL_AUDIT_UNKNOWN = 3, /* the API did not show it to this token: never a pass */
} al_audit_status;

/* The criteria, in report order. */
typedef enum al_audit_id {
  AL_AC_PROTECTED = 0, /* branch.protected: classic protection or an active ruleset */
  AL_AC_APPROVALS,     /* reviews.approvals: a pull request with >= 1 approving review */
  AL_AC_CODE_OWNERS,   /* reviews.code_owners: code-owner review required */
  AL_AC_STALE,         /* reviews.dismiss_stale: new pushes dismiss approvals */
  AL_AC_LAST_PUSH,     /* reviews.last_push: last push approved by someone else */
  AL_AC_FORCE_PUSH,    /* push.no_force_push */
  AL_AC_DELETION,      /* push.no_deletion */
  AL_AC_ADMINS,        /* admins.enforced: the rules bind administrators */
  AL_AC_BYPASS,        /* bot.no_bypass: the App is on no bypass list */
  AL_AC_CODEOWNER,     /* bot.not_code_owner */
  AL_AC_PUSH_ALLOW,    /* bot.not_push_allowed: not listed in push restrictions */
  AL_AC_APP_PERMS,     /* app.no_dangerous_permissions */
  AL_AC_APP_SCOPE,     /* app.token_permissions: the two roles' and no more */
  /* CI (forge/workflow.h): what the base branch's workflows give the run's
   * code, for a push to a run branch or a pull request from it, before a
   * human approves; in al_wf_crit's order */
  AL_AC_CI_SECRETS, /* ci.no_secrets */
  AL_AC_CI_OIDC,    /* ci.no_oidc */
  AL_AC_CI_TOKEN,   /* ci.read_only_token */
  AL_AC_CI_RUNNER,  /* ci.hosted_runners */
  AL_AC_CI_PRIVATE, /* ci.private_quiet */
  AL_AC_CI_BASE,    /* ci.base_context */
  AL_AC_TAGS,       /* tags.protected (advisory: WARN when not) */
  AL_AUDIT_N
} al_audit_id;

/* The GitLab audit's criteria (opts.forge_kind AL_FORGE_GITLAB), in report
 * order, in the same al_audit_report.c[] (see forge/audit_gitlab.h and
 * docs/audit.md "GitLab"). Ids shared with GitHub where the meaning is the
 * same, `gitlab.` where the setting is GitLab's own. */
typedef enum al_audit_gl_id {
  AL_GL_PROTECTED = 0, /* branch.protected: the target branch is a protected branch */
  AL_GL_PUSH,          /* gitlab.push_access: push No one, or Maintainers without the bot */
  AL_GL_MERGE,         /* gitlab.merge_access: merge by Maintainers, not the bot */
  AL_GL_FORCE_PUSH,    /* push.no_force_push: allow_force_push false */
  AL_GL_CODE_OWNERS,   /* reviews.code_owners: code_owner_approval_required with CODEOWNERS */
  AL_GL_APPROVALS,     /* reviews.approvals: >= 1 approval from someone but the bot */
  AL_GL_AUTHOR,        /* gitlab.no_author_approval: merge_requests_author_approval off */
  AL_GL_RESET,         /* reviews.dismiss_stale: reset_approvals_on_push on */
  AL_GL_OVERRIDE,      /* gitlab.no_mr_override: MR approval rules not editable per MR */
  AL_GL_PUSH_RULE,     /* gitlab.push_rule (advisory): branch_name_regex ^PREFIX */
  AL_GL_BOT,           /* bot.not_maintainer: the bot is not a Maintainer or Owner */
  AL_GL_CI_SECRETS,    /* ci.no_secrets: no CI/CD variable reaches the run's pipelines */
  AL_GL_CI_OIDC,       /* ci.no_oidc: no id_tokens in the run's pipelines */
  AL_GL_CI_DEPLOY,     /* gitlab.ci_deploy_token: no gitlab-deploy-token in them */
  AL_AUDIT_GL_N
} al_audit_gl_id;

/* The most criteria a report holds (either forge's). */
#define AL_AUDIT_MAX 21

/* Where a criterion's evidence comes from (al_audit_criterion.from, bits);
 * al_audit_from_name() names each (the endpoint and the credential). */
enum {
  AL_AUDIT_FROM_APP = 1u << 0,        /* GET /app, /repos/{o}/{r}/installation (App JWT) */
  AL_AUDIT_FROM_CLASSIC = 1u << 1,    /* GET /repos/{o}/{r}/branches/{b}/protection */
  AL_AUDIT_FROM_RULES = 1u << 2,      /* GET /repos/{o}/{r}/rules/branches/{b} (effective rules,
                                         organisation rulesets included) */
  AL_AUDIT_FROM_RULESETS = 1u << 3,   /* GET /repos/{o}/{r}/rulesets[/{id}] (audit credential) */
  AL_AUDIT_FROM_AS_APP = 1u << 4,     /* GET /repos/{o}/{r}/rulesets/{id} with a token of the run's
                                         App: current_user_can_bypass speaks for the bot */
  AL_AUDIT_FROM_CODEOWNERS = 1u << 5, /* GET /repos/{o}/{r}/contents/{CODEOWNERS}?ref={b} */
  AL_AUDIT_FROM_BROKER = 1u << 6,     /* the broker's configured roles */
  AL_AUDIT_FROM_REPO = 1u << 7,       /* GET /repos/{o}/{r} (visibility) */
  AL_AUDIT_FROM_WORKFLOWS = 1u << 8,  /* GET /repos/{o}/{r}/contents/.github/workflows?ref={b} */
  AL_AUDIT_FROM_ACTIONS = 1u << 9,    /* GET /repos/{o}/{r}/actions/permissions[/workflow] */
  AL_AUDIT_FROM_ENVIRONMENTS = 1u << 10, /* GET /repos/{o}/{r}/environments */
  /* GitLab (REST v4, /projects/:id/...) */
  AL_AUDIT_FROM_GL_PROJECT = 1u << 11,   /* GET /projects/:id */
  AL_AUDIT_FROM_GL_PROTECTED = 1u << 12, /* GET /projects/:id/protected_branches */
  AL_AUDIT_FROM_GL_APPROVALS = 1u << 13, /* GET /projects/:id/approvals */
  AL_AUDIT_FROM_GL_RULES = 1u << 14,     /* GET /projects/:id/approval_rules */
  AL_AUDIT_FROM_GL_PUSH_RULE = 1u << 15, /* GET /projects/:id/push_rule */
  AL_AUDIT_FROM_GL_MEMBERS = 1u << 16,   /* GET /projects/:id/members/all/:user_id */
  AL_AUDIT_FROM_GL_FILES = 1u << 17,     /* GET /projects/:id/repository/files/:path?ref= */
  AL_AUDIT_FROM_GL_VARIABLES = 1u << 18, /* GET /projects/:id/variables */
  AL_AUDIT_FROM_GL_DEPLOY = 1u << 19,    /* GET /projects/:id/deploy_tokens */
  AL_AUDIT_FROM_N = 20
};

/* "rules for the branch (GET /repos/{o}/{r}/rules/branches/{b})" etc. for
 * one bit; NULL for an unknown bit. */
const char *al_audit_from_name(unsigned bit);

typedef struct al_audit_criterion {
  const char *id;    /* static, e.g. "reviews.approvals" */
  const char *title; /* static, one line */
  bool required;     /* false: advisory (WARN/UNKNOWN never fail the audit) */
  al_audit_status status;
  char *evidence; /* malloc'd: what the API said, naming the source */
  char *fix;      /* malloc'd when status != PASS, else NULL */
  unsigned from;  /* AL_AUDIT_FROM_* bits: the reads the verdict rests on */
} al_audit_criterion;

/* What the broker hands an audit it does not run itself (opts.grant):
 * all borrowed, none logged. */
typedef struct al_audit_grant {
  const char *api_url;       /* the broker's API base */
  const char *ca_file;       /* its CA file, or NULL: the system store */
  uint64_t max_rate_wait_ms; /* its api.max_rate_limit_wait */
  const char *app_slug;      /* GET /app with the App's JWT */
  long long app_id;
  long long installation_id;        /* GET /repos/{o}/{r}/installation with the App's JWT */
  json_t *inst_permissions;         /* that installation's permissions object */
  al_perm_set roles[AL_ROLE_COUNT]; /* the broker's roles (app.token_permissions) */
  const char *token;                /* the read token (required) */
  const char *credentials;          /* how it was made, for the report (no secret) */
  bool token_is_bot;                /* minted from the run's App: it also speaks for the bot */
  const char *bot_token; /* unless token_is_bot: a metadata: read token of the run's App */
  const char *bot_fp;    /* its fingerprint */
} al_audit_grant;

typedef struct al_audit_opts {
  /* Which forge: AL_FORGE_GITHUB (0, the default) or AL_FORGE_GITLAB
   * (forge/audit_gitlab.h: repo is the project's full path, api_url its
   * REST v4 base, token the read token; app_slug/app_id name the bot
   * user, when there is a standing one; broker_config and grant refused). */
  al_forge_kind forge_kind;
  const char *repo;          /* "owner/repo" (required) */
  const char *branch;        /* NULL: the repository's default branch */
  const char *api_url;       /* NULL: the broker config's, else https://api.github.com */
  const char *ca_file;       /* NULL: the broker config's, else the system store */
  const char *broker_config; /* path of the broker's YAML config, or NULL */
  const char *token;         /* read token (caller keeps ownership; never logged), or NULL */
  const char *token_source;  /* where it came from, for the report ("AIRLOCK_AUDIT_TOKEN") */
  const char *app_slug;      /* the bot without a broker config (else NULL) */
  long long app_id;          /* ditto, 0 = unknown */
  uint64_t timeout_ms;       /* per request; 0 = 30 s */
  /* The run branches' prefix (the policy's review.branch_prefix), for the
   * ci.* criteria; NULL: "airlock/". */
  const char *run_prefix;
  /* Host pins for the API reads, "HOST:PORT:ADDRESS" (curl's CURLOPT_RESOLVE
   * form), NULL-terminated, or NULL. Not applied to the App's token mint and
   * revocation (the broker's client): with a pinned test forge, give a token
   * or an API URL that needs no pin (e.g. https://127.0.0.1:PORT). */
  const char *const *resolve;
  /* The broker's grant (above): used instead of every credential option
   * (broker_config, token, api_url and ca_file must then be NULL); nothing is minted or revoked
   * here: the caller revokes the grant's tokens (through the broker) and may append the outcome to
   * out->credentials and out->as_app. */
  const al_audit_grant *grant;
  /* ETags of the last audit of this repository (forge/etags.h, borrowed),
   * or NULL: every read is then conditional on them, a 304 reuses the
   * kept answer, and each 200 is kept for the next audit. */
  struct al_etags *etags;
} al_audit_opts;

typedef struct al_audit_report {
  char forge[8];  /* "github" or "gitlab" */
  char repo[201]; /* OWNER/REPO, or GitLab's full project path */
  char branch[256];
  char api_url[256];
  char app_slug[128]; /* "" when unknown */
  long long app_id;   /* 0 when unknown */
  long long installation_id;
  char credentials[256]; /* how the reads were authenticated (no secret) */
  char as_app[160];      /* how the bot's own view was read ("" when it was not) */
  char redirected[320];  /* a redirect the API answered with (a renamed repository), or "" */
  char run_prefix[72];   /* the run branches the ci.* criteria judged ("airlock/") */
  /* the criteria: al_audit_id's for GitHub, al_audit_gl_id's for GitLab */
  al_audit_criterion c[AL_AUDIT_MAX];
  int n_crit; /* AL_AUDIT_N or AL_AUDIT_GL_N */
  bool holds; /* every required criterion is PASS or WARN */
  int n_fail, n_unknown, n_warn;
} al_audit_report;

/* Run the audit. On success (0) *out is filled (free it with
 * al_audit_report_free) whatever the verdict: read out->holds. Returns -1
 * with err when the audit could not run at all: bad options (EINVAL), the
 * broker config or key unreadable, the API unreachable (ECONNREFUSED,
 * ETIMEDOUT), bad credentials (EACCES, HTTP 401), the repository or branch
 * not found or not visible (ENOENT), the App not installed on it (ENOENT).
 * A minted token is revoked on every path; a failed revocation is logged
 * and recorded in out->credentials. */
int al_audit_run(const al_audit_opts *opts, al_audit_report *out, al_error *err);

void al_audit_report_free(al_audit_report *r);

/* "PASS", "WARN", "FAIL", "UNKNOWN". */
const char *al_audit_status_name(al_audit_status s);

/* Human-readable report: one line per criterion, then its evidence and fix;
 * a last line with the verdict. */
void al_audit_format_text(const al_audit_report *r, FILE *f);

/* The report as one JSON object (malloc'd string, caller frees):
 * {"repo","forge","branch","api","app":{"slug","id","installation_id"},"credentials",
 *  "as_app","redirected","run_prefix","holds","counts":{"fail","unknown","warn"},
 *  "criteria":[{"id","title","required","status","evidence","fix",
 *               "evidence_from":[names of the reads, al_audit_from_name]}]} */
char *al_audit_format_json(const al_audit_report *r);

#endif
