/* `airlock audit`: see audit.h. Reads first (gather_*), then judges each
 * criterion from what was read (judge_*), so every verdict names the
 * response it rests on. */
#include "forge/audit.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "forge/appconfig.h"
#include "forge/app.h"
#include "common/log.h"
#include "common/util.h"
#include "forge/audit_gitlab.h"
#include "forge/audit_internal.h"
#include "forge/codeowners.h"
#include "forge/ghapi.h"
#include "forge/workflow.h"

/* ---- criteria table --------------------------------------------------- */

static const struct {
  const char *id;
  const char *title;
  bool required;
} crit_meta[AL_AUDIT_N] = {
    [AL_AC_PROTECTED] = {"branch.protected", "the branch is protected (classic or ruleset)", true},
    [AL_AC_APPROVALS] = {"reviews.approvals",
                         "a pull request with at least one approving review is required", true},
    [AL_AC_CODE_OWNERS] = {"reviews.code_owners", "code-owner review is required", true},
    [AL_AC_STALE] = {"reviews.dismiss_stale", "new pushes dismiss stale approvals", true},
    [AL_AC_LAST_PUSH] = {"reviews.last_push",
                         "the last push must be approved by someone other than its author", true},
    [AL_AC_FORCE_PUSH] = {"push.no_force_push", "force pushes are blocked", true},
    [AL_AC_DELETION] = {"push.no_deletion", "deleting the branch is blocked", true},
    [AL_AC_ADMINS] = {"admins.enforced", "the rules bind administrators too", true},
    [AL_AC_BYPASS] = {"bot.no_bypass", "the App is on no bypass list", true},
    [AL_AC_CODEOWNER] = {"bot.not_code_owner", "the App is not a code owner", true},
    [AL_AC_PUSH_ALLOW] = {"bot.not_push_allowed", "push restrictions do not list the App", true},
    [AL_AC_APP_PERMS] = {"app.no_dangerous_permissions",
                         "the installation holds no administration/workflows/actions/secrets",
                         true},
    [AL_AC_APP_SCOPE] = {"app.token_permissions",
                         "run tokens get the two roles' permissions and no more", true},
    /* id and title from forge/workflow.h (al_wf_crit_id/title): filled at start */
    [AL_AC_CI_SECRETS] = {NULL, NULL, true},
    [AL_AC_CI_OIDC] = {NULL, NULL, true},
    [AL_AC_CI_TOKEN] = {NULL, NULL, true},
    [AL_AC_CI_RUNNER] = {NULL, NULL, true},
    [AL_AC_CI_PRIVATE] = {NULL, NULL, true},
    [AL_AC_CI_BASE] = {NULL, NULL, true},
    [AL_AC_TAGS] = {"tags.protected", "release tags are protected by a tag ruleset", false},
};

/* ---- a growing string ------------------------------------------------- */

__attribute__((format(printf, 2, 3))) void au_sb_add(struct sb *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (b->len + (size_t)n + 1 > b->cap) {
    b->cap = (b->len + (size_t)n + 1) * 2;
    b->s = al_xrealloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* "; " between parts. */
__attribute__((format(printf, 2, 3))) void au_sb_part(struct sb *b, const char *fmt, ...)
{
  if (b->len)
    au_sb_add(b, "; ");
  va_list ap;
  va_start(ap, fmt);
  char tmp[1024];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  au_sb_add(b, "%s", tmp);
}

char *au_sb_take(struct sb *b)
{
  char *s = b->s ? b->s : al_xstrdup("");
  memset(b, 0, sizeof *b);
  return s;
}
const char *au_str_or(const char *a, const char *b)
{
  return a ? a : b;
}

/* "HTTP 403: Resource not accessible by integration" */
void au_why_status(char *out, size_t n, const al_ghapi_resp *r)
{
  snprintf(out, n, "HTTP %ld%s%s", r->status, r->message[0] ? ": " : "", r->message);
}

/* Is this 401 (bad credentials)? Then the whole audit cannot run. */
int au_check_401(const al_ghapi_resp *r, const char *what, al_error *err)
{
  if (r->status == 401)
    return al_error_set(err, EACCES, "%s: HTTP 401 (%s): the token is not valid", what,
                        r->message[0] ? r->message : "Bad credentials");
  return 0;
}

void au_set(struct ctx *c, al_audit_id id, al_audit_status st, struct sb *ev, const char *fix)
{
  al_audit_criterion *k = &c->rep->c[id];
  k->status = st;
  free(k->evidence);
  k->evidence = au_sb_take(ev);
  free(k->fix);
  k->fix = st == AL_AUDIT_PASS || !fix ? NULL : al_xstrdup(fix);
  k->from = c->from;
  c->from = 0;
}

const char *al_audit_from_name(unsigned bit)
{
  switch (bit) {
  case AL_AUDIT_FROM_APP:
    return "the App and its installation (GET /app, GET /repos/{o}/{r}/installation, App JWT)";
  case AL_AUDIT_FROM_CLASSIC:
    return "classic protection (GET /repos/{o}/{r}/branches/{b}/protection)";
  case AL_AUDIT_FROM_RULES:
    return "rules for the branch (GET /repos/{o}/{r}/rules/branches/{b}, organisation rulesets "
           "included)";
  case AL_AUDIT_FROM_RULESETS:
    return "rulesets (GET /repos/{o}/{r}/rulesets[/{id}], the audit's credential)";
  case AL_AUDIT_FROM_AS_APP:
    return "current_user_can_bypass asked as the run's App (GET /repos/{o}/{r}/rulesets/{id}, "
           "a metadata: read token of the App)";
  case AL_AUDIT_FROM_CODEOWNERS:
    return "CODEOWNERS (GET /repos/{o}/{r}/contents/{path}?ref={b})";
  case AL_AUDIT_FROM_BROKER:
    return "the broker's roles (its config)";
  case AL_AUDIT_FROM_REPO:
    return "the repository (GET /repos/{o}/{r}: visibility)";
  case AL_AUDIT_FROM_WORKFLOWS:
    return "the workflows (GET /repos/{o}/{r}/contents/.github/workflows?ref={b}, and each file)";
  case AL_AUDIT_FROM_ACTIONS:
    return "Actions settings (GET /repos/{o}/{r}/actions/permissions, "
           ".../actions/permissions/workflow)";
  case AL_AUDIT_FROM_ENVIRONMENTS:
    return "environments (GET /repos/{o}/{r}/environments)";
  case AL_AUDIT_FROM_GL_PROJECT:
    return "the project (GET /projects/:id: builds_access_level, ci_config_path, "
           "auto_devops_enabled)";
  case AL_AUDIT_FROM_GL_PROTECTED:
    return "protected branches (GET /projects/:id/protected_branches)";
  case AL_AUDIT_FROM_GL_APPROVALS:
    return "merge request approval settings (GET /projects/:id/approvals)";
  case AL_AUDIT_FROM_GL_RULES:
    return "approval rules (GET /projects/:id/approval_rules)";
  case AL_AUDIT_FROM_GL_PUSH_RULE:
    return "push rules (GET /projects/:id/push_rule)";
  case AL_AUDIT_FROM_GL_MEMBERS:
    return "the bot's membership (GET /projects/:id/members/all/:user_id)";
  case AL_AUDIT_FROM_GL_FILES:
    return "repository files (GET /projects/:id/repository/files/:path?ref=: CODEOWNERS, the "
           "CI file)";
  case AL_AUDIT_FROM_GL_VARIABLES:
    return "CI/CD variables (GET /projects/:id/variables: protected, masked; never the values)";
  case AL_AUDIT_FROM_GL_DEPLOY:
    return "deploy tokens (GET /projects/:id/deploy_tokens)";
  default:
    return NULL;
  }
}

/* ---- the run ---------------------------------------------------------- */

static void ctx_free(struct ctx *c)
{
  json_decref(c->inst_perms);
  json_decref(c->classic_json);
  json_decref(c->rules);
  json_decref(c->rs_list);
  json_decref(c->rs_detail);
  json_decref(c->bot_view);
  free(c->co_text);
  au_ci_free(c);
  free(c->repo_path);
  free(c->branch_esc);
  al_broker_config_free(c->owned_cfg);
  al_ghapi_free(c->api);
}

_Static_assert(AL_AUDIT_N <= AL_AUDIT_MAX && AL_AUDIT_GL_N <= AL_AUDIT_MAX,
               "al_audit_report.c holds every criterion");

void au_tally(al_audit_report *r)
{
  r->holds = true;
  r->n_fail = r->n_unknown = r->n_warn = 0;
  for (int i = 0; i < r->n_crit; i++) {
    al_audit_criterion *k = &r->c[i];
    if (k->status == AL_AUDIT_WARN)
      r->n_warn++;
    if (!k->required)
      continue;
    if (k->status == AL_AUDIT_FAIL)
      r->n_fail++;
    if (k->status == AL_AUDIT_UNKNOWN)
      r->n_unknown++;
    if (k->status == AL_AUDIT_FAIL || k->status == AL_AUDIT_UNKNOWN)
      r->holds = false;
  }
}

/* The broker's grant as the run's state: its API and roles as a config
 * (owned by c), the App as its JWT showed it. */
static void grant_view(const al_audit_grant *g, struct ctx *c)
{
  al_broker_config *v = al_xcalloc(1, sizeof *v);
  v->api_url = al_xstrdup(g->api_url);
  v->ca_file = g->ca_file ? al_xstrdup(g->ca_file) : NULL;
  v->max_rate_wait_ms = g->max_rate_wait_ms;
  memcpy(v->roles, g->roles, sizeof v->roles);
  c->owned_cfg = v;
  c->cfg = v;
  snprintf(c->rep->app_slug, sizeof c->rep->app_slug, "%s", g->app_slug ? g->app_slug : "");
  c->rep->app_id = g->app_id;
  c->rep->installation_id = g->installation_id;
  if (json_is_object(g->inst_permissions)) {
    c->inst_perms = json_incref(g->inst_permissions);
    c->inst_known = true;
  }
}

int al_audit_run(const al_audit_opts *o, al_audit_report *out, al_error *err)
{
  if (o->forge_kind == AL_FORGE_GITLAB)
    return al_audit_gitlab_run(o, out, err);
  if (o->forge_kind != AL_FORGE_GITHUB) {
    memset(out, 0, sizeof *out);
    return al_error_set(err, EINVAL, "audit: unknown forge kind %d", (int)o->forge_kind);
  }
  memset(out, 0, sizeof *out);
  snprintf(out->forge, sizeof out->forge, "github");
  out->n_crit = AL_AUDIT_N;
  for (int i = 0; i < AL_AUDIT_N; i++) {
    out->c[i].id = crit_meta[i].id;
    out->c[i].title = crit_meta[i].title;
    if (i >= AL_AC_CI_SECRETS && i <= AL_AC_CI_BASE) {
      out->c[i].id = al_wf_crit_id((al_wf_crit)(i - AL_AC_CI_SECRETS));
      out->c[i].title = al_wf_crit_title((al_wf_crit)(i - AL_AC_CI_SECRETS));
    }
    out->c[i].required = crit_meta[i].required;
    out->c[i].status = AL_AUDIT_UNKNOWN;
  }

  const char *why = NULL;
  if (!o->repo || al_repo_name_check(o->repo, &why) < 0)
    return al_error_set(err, EINVAL, "repository `%s`: %s", o->repo ? o->repo : "",
                        why ? why : "missing");
  if (o->branch && (!*o->branch || strlen(o->branch) >= sizeof out->branch))
    return al_error_set(err, EINVAL, "bad branch name");
  snprintf(out->repo, sizeof out->repo, "%s", o->repo);
  const char *pfx = o->run_prefix ? o->run_prefix : "airlock/";
  if (al_wf_run_prefix_check(pfx, &why) < 0)
    return al_error_set(err, EINVAL, "run branch prefix `%.80s`: %s", pfx, why);
  snprintf(out->run_prefix, sizeof out->run_prefix, "%s", pfx);
  if (o->branch)
    snprintf(out->branch, sizeof out->branch, "%s", o->branch);

  if (o->grant && (!o->grant->token || !o->grant->api_url || o->broker_config || o->token ||
                   o->api_url || o->ca_file))
    return al_error_set(err, EINVAL,
                        "grant needs a token and an API URL, and no other credential, "
                        "api_url or ca_file");

  /* With the broker's config the App's key lives in a child of its own
   * (audit_key.c), which hands this process a grant: the checks below
   * never run beside the key. */
  if (o->broker_config)
    return au_run_keyed(o, out, err);

  struct ctx c = {.o = o, .rep = out};
  int ret = -1;

  if (o->grant) {
    grant_view(o->grant, &c);
  } else {
    if (o->app_slug)
      snprintf(out->app_slug, sizeof out->app_slug, "%s", o->app_slug);
    out->app_id = o->app_id;
  }
  const char *api = o->api_url ? o->api_url : c.cfg ? c.cfg->api_url : DEFAULT_API;
  const char *ca = o->ca_file ? o->ca_file : c.cfg ? c.cfg->ca_file : NULL;
  snprintf(out->api_url, sizeof out->api_url, "%s", api);
  /* The broker's api.max_rate_limit_wait bounds the rate-limit waits of
   * each read (a secondary limit asks for at least a minute). */
  al_ghapi_opts go = {.ca_file = ca,
                      .timeout_ms = o->timeout_ms,
                      .max_wait_ms = c.cfg ? c.cfg->max_rate_wait_ms : 0,
                      .user_agent = "airlock-audit/0.1"};
  if (al_ghapi_open(api, &go, &c.api, err) < 0)
    goto out;
  if (o->resolve)
    al_ghapi_set_resolve(c.api, o->resolve);
  if (o->etags)
    al_ghapi_set_etags(c.api, o->etags);
  c.repo_path = al_strdup_printf("/repos/%s", o->repo);

  if (o->grant) {
    c.tok = o->grant->token;
    c.tok_is_bot = o->grant->token_is_bot;
    snprintf(out->credentials, sizeof out->credentials, "%s",
             o->grant->credentials ? o->grant->credentials : "a token from the broker");
  } else if (o->token) {
    c.tok = o->token;
    snprintf(out->credentials, sizeof out->credentials, "token from %s",
             o->token_source ? o->token_source : "the caller");
  } else {
    al_error_set(err, EINVAL,
                 "no credentials: set AIRLOCK_AUDIT_TOKEN (or GITHUB_TOKEN), or give the "
                 "broker config (--config) so the App can mint a read-only token");
    goto out;
  }

  if (au_gather_all(&c, err) < 0)
    goto out;
  /* The bot's own view of the rulesets, asked as the run's App. */
  if (o->grant && !c.tok_is_bot && o->grant->bot_token) {
    c.bot_tok = o->grant->bot_token;
    snprintf(c.bot_fp, sizeof c.bot_fp, "%s", o->grant->bot_fp ? o->grant->bot_fp : "");
  }
  if (au_gather_bot_view(&c, err) < 0)
    goto out;
  au_judge_all(&c);
  au_tally(out);
  ret = 0;
out:
  ctx_free(&c);
  if (ret < 0)
    al_audit_report_free(out);
  return ret;
}

void al_audit_report_free(al_audit_report *r)
{
  if (!r)
    return;
  for (int i = 0; i < AL_AUDIT_MAX; i++) {
    free(r->c[i].evidence);
    free(r->c[i].fix);
    r->c[i].evidence = r->c[i].fix = NULL;
  }
}

const char *al_audit_status_name(al_audit_status s)
{
  switch (s) {
  case AL_AUDIT_PASS:
    return "PASS";
  case AL_AUDIT_WARN:
    return "WARN";
  case AL_AUDIT_FAIL:
    return "FAIL";
  case AL_AUDIT_UNKNOWN:
    return "UNKNOWN";
  default:
    return "?";
  }
}

void al_audit_format_text(const al_audit_report *r, FILE *f)
{
  fprintf(f, "airlock audit %s, branch %s (%s)\n", r->repo, r->branch, r->api_url);
  if (!strcmp(r->forge, "gitlab") && (r->app_slug[0] || r->app_id))
    fprintf(f, "  the bot: %s (user id %lld, project %lld)\n", r->app_slug[0] ? r->app_slug : "?",
            r->app_id, r->installation_id);
  else if (r->app_slug[0] || r->app_id)
    fprintf(f, "  the App: %s[bot] (app id %lld, installation %lld)\n",
            r->app_slug[0] ? r->app_slug : "?", r->app_id, r->installation_id);
  fprintf(f, "  read with: %s\n", r->credentials);
  if (r->as_app[0])
    fprintf(f, "  asked as the App: %s\n", r->as_app);
  if (r->redirected[0])
    fprintf(f, "  redirected: %s\n", r->redirected);
  fprintf(f, "  run branches: %s<ticket>-<run>\n", r->run_prefix);
  fprintf(f, "\n");
  for (int i = 0; i < r->n_crit; i++) {
    const al_audit_criterion *k = &r->c[i];
    fprintf(f, "%-7s %-28s %s%s\n", al_audit_status_name(k->status), k->id, k->title,
            k->required ? "" : " (advisory)");
    if (k->evidence)
      fprintf(f, "        evidence: %s\n", k->evidence);
    if (k->fix)
      fprintf(f, "        fix: %s\n", k->fix);
    for (unsigned b = 0; b < AL_AUDIT_FROM_N; b++)
      if (k->from & (1u << b))
        fprintf(f, "        from: %s\n", al_audit_from_name(1u << b));
  }
  if (r->holds)
    fprintf(f, "\nthe escape budget holds%s\n", r->n_warn ? " (see the WARN lines)" : "");
  else
    fprintf(f, "\nthe escape budget DOES NOT hold: %d FAIL, %d UNKNOWN\n", r->n_fail, r->n_unknown);
}

char *al_audit_format_json(const al_audit_report *r)
{
  json_t *crit = json_array();
  for (int i = 0; i < r->n_crit; i++) {
    const al_audit_criterion *k = &r->c[i];
    json_t *from = json_array();
    for (unsigned b = 0; b < AL_AUDIT_FROM_N; b++)
      if (k->from & (1u << b))
        json_array_append_new(from, json_string(al_audit_from_name(1u << b)));
    json_array_append_new(crit, json_pack("{s:s, s:s, s:b, s:s, s:s, s:s?, s:o}", "id", k->id,
                                          "title", k->title, "required", k->required, "status",
                                          al_audit_status_name(k->status), "evidence",
                                          k->evidence ? k->evidence : "", "fix", k->fix,
                                          "evidence_from", from));
  }
  json_t *app = json_pack("{s:s?, s:I, s:I}", "slug", r->app_slug[0] ? r->app_slug : NULL, "id",
                          (json_int_t)r->app_id, "installation_id", (json_int_t)r->installation_id);
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:s?, s:s?, s:s, s:b, s:{s:i, s:i, s:i}, "
                        "s:o}",
                        "repo", r->repo, "forge", r->forge[0] ? r->forge : "github", "branch",
                        r->branch, "api", r->api_url, "app", app, "credentials", r->credentials,
                        "as_app", r->as_app[0] ? r->as_app : NULL, "redirected",
                        r->redirected[0] ? r->redirected : NULL, "run_prefix", r->run_prefix,
                        "holds", r->holds, "counts", "fail", r->n_fail, "unknown", r->n_unknown,
                        "warn", r->n_warn, "criteria", crit);
  char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(o);
  return s;
}
