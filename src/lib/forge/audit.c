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

#include "broker/config.h"
#include "broker/github.h"
#include "broker/jwt.h"
#include "broker/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
#include "forge/codeowners.h"
#include "forge/ghapi.h"

#define DEFAULT_API "https://api.github.com"

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
    [AL_AC_TAGS] = {"tags.protected", "release tags are protected by a tag ruleset", false},
};

static const char *str_or(const char *a, const char *b)
{
  return a ? a : b;
}

/* ---- a growing string ------------------------------------------------- */

struct sb {
  char *s;
  size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void sb_add(struct sb *b, const char *fmt, ...)
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
__attribute__((format(printf, 2, 3))) static void sb_part(struct sb *b, const char *fmt, ...)
{
  if (b->len)
    sb_add(b, "; ");
  va_list ap;
  va_start(ap, fmt);
  char tmp[1024];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  sb_add(b, "%s", tmp);
}

static char *sb_take(struct sb *b)
{
  char *s = b->s ? b->s : al_xstrdup("");
  memset(b, 0, sizeof *b);
  return s;
}

/* ---- state of one run ------------------------------------------------- */

enum layer_state { L_ABSENT = 0, L_PRESENT = 1, L_UNKNOWN = 2 };

struct ctx {
  const al_audit_opts *o;
  al_audit_report *rep;
  al_ghapi *api;
  const char *tok; /* the read token */
  bool tok_is_bot; /* minted for the App: current_user_can_bypass speaks for the bot */
  char *repo_path; /* "/repos/owner/repo" */
  char *branch_esc;

  /* the App */
  const al_broker_config *cfg; /* the broker's config (owned_cfg or the caller's) */
  al_broker_config *owned_cfg;
  bool inst_known;
  json_t *inst_perms; /* the installation's permissions object */

  /* classic protection */
  enum layer_state classic;
  char classic_why[320];
  json_t *classic_json;

  /* rules for the branch */
  bool rules_known;
  char rules_why[320];
  json_t *rules; /* array */

  /* rulesets */
  bool rs_list_known;
  char rs_list_why[320];
  json_t *rs_list;   /* summaries */
  json_t *rs_detail; /* "id" -> detail object, or a string: why it is not visible */

  /* the bot's own view: "id" -> current_user_can_bypass, asked with a
   * token of the run's App (tok_is_bot: the read token itself) */
  json_t *bot_view;
  bool bot_known;
  char bot_why[320];

  unsigned from; /* AL_AUDIT_FROM_* of the criterion being judged (set() takes it) */

  /* CODEOWNERS */
  enum layer_state co; /* absent: no file; present: co_text; unknown: co_why */
  char co_path[32];
  char co_why[320];
  char *co_text;
  size_t co_len;
};

/* "HTTP 403: Resource not accessible by integration" */
static void why_status(char *out, size_t n, const al_ghapi_resp *r)
{
  snprintf(out, n, "HTTP %ld%s%s", r->status, r->message[0] ? ": " : "", r->message);
}

/* Is this 401 (bad credentials)? Then the whole audit cannot run. */
static int check_401(const al_ghapi_resp *r, const char *what, al_error *err)
{
  if (r->status == 401)
    return al_error_set(err, EACCES, "%s: HTTP 401 (%s): the token is not valid", what,
                        r->message[0] ? r->message : "Bad credentials");
  return 0;
}

static void set(struct ctx *c, al_audit_id id, al_audit_status st, struct sb *ev, const char *fix)
{
  al_audit_criterion *k = &c->rep->c[id];
  k->status = st;
  free(k->evidence);
  k->evidence = sb_take(ev);
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
  default:
    return NULL;
  }
}

/* ---- the App ---------------------------------------------------------- */

/* GET /app (Apps › "Get the authenticated app") and GET
 * /repos/{o}/{r}/installation (Apps › "Get a repository installation for
 * the authenticated app"), both with the app JWT ("Generating a JSON Web
 * Token (JWT) for a GitHub App"). */
static int gather_app(struct ctx *c, EVP_PKEY *key, al_error *err)
{
  const al_broker_config *cfg = c->cfg;
  char *jwt = NULL;
  if (al_app_jwt(key, cfg->app_id ? cfg->app_id : cfg->client_id, cfg->app_id != NULL, time(NULL),
                 &jwt, err) < 0)
    return -1;
  int ret = -1;
  al_ghapi_resp r = {0};
  al_autofree char *p = NULL; /* before the first goto: freed at `out` */
  if (al_ghapi_get(c->api, "/app", jwt, &r, err) < 0)
    goto out;
  if (r.status != 200) {
    char w[300];
    why_status(w, sizeof w, &r);
    al_error_set(err, r.status == 401 ? EACCES : EPROTO, "GET /app with the app JWT: %s", w);
    goto out;
  }
  const char *slug = json_string_value(json_object_get(r.json, "slug"));
  json_t *id = json_object_get(r.json, "id");
  if (!slug || !json_is_integer(id)) {
    al_make_error(err, EPROTO, "GET /app: no `slug` or `id` in the answer");
    goto out;
  }
  snprintf(c->rep->app_slug, sizeof c->rep->app_slug, "%s", slug);
  c->rep->app_id = json_integer_value(id);
  al_ghapi_resp_free(&r);

  p = al_strdup_printf("%s/installation", c->repo_path);
  if (al_ghapi_get(c->api, p, jwt, &r, err) < 0)
    goto out;
  if (r.status == 404) {
    al_error_set(err, ENOENT, "the App `%s` is not installed on %s (GET %s: 404)", slug, c->o->repo,
                 p);
    goto out;
  }
  if (r.status != 200) {
    char w[300];
    why_status(w, sizeof w, &r);
    al_error_set(err, EPROTO, "GET %s with the app JWT: %s", p, w);
    goto out;
  }
  json_t *iid = json_object_get(r.json, "id");
  json_t *perms = json_object_get(r.json, "permissions");
  if (!json_is_integer(iid) || !json_is_object(perms)) {
    al_make_error(err, EPROTO, "GET %s: no installation `id` or `permissions`", p);
    goto out;
  }
  c->rep->installation_id = json_integer_value(iid);
  c->inst_perms = json_incref(perms);
  c->inst_known = true;
  ret = 0;
out:
  al_ghapi_resp_free(&r);
  al_wipe_str(jwt);
  free(jwt);
  return ret;
}

static const char *perm_level(json_t *perms, const char *name)
{
  const char *v = json_string_value(json_object_get(perms, name));
  return v ? v : NULL;
}

/* ---- repository reads ------------------------------------------------- */

/* Repos › "Get a repository": the default branch when none was given. */
static int gather_repo(struct ctx *c, al_error *err)
{
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, c->repo_path, c->tok, &r, err) < 0)
    return -1;
  if (check_401(&r, c->repo_path, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status != 200) {
    char w[600];
    al_ghapi_describe(&r, w, sizeof w);
    al_ghapi_class cls = r.cls;
    al_ghapi_resp_free(&r);
    if (cls == AL_GHAPI_NOT_FOUND)
      return al_error_set(err, ENOENT,
                          "GET %s: %s: the repository does not exist or the token cannot see it",
                          c->repo_path, w);
    /* Rate limited, forbidden, redirected elsewhere, a server error: say
     * which, never "does not exist". */
    return al_error_set(err, cls == AL_GHAPI_RATE_LIMITED ? EAGAIN : EPROTO, "GET %s: %s",
                        c->repo_path, w);
  }
  if (r.moved_status)
    snprintf(c->rep->redirected, sizeof c->rep->redirected,
             "GET %s answered %ld (a renamed or transferred repository); the audit read %s",
             c->repo_path, r.moved_status, r.moved_to);
  if (!c->o->branch) {
    const char *db = json_string_value(json_object_get(r.json, "default_branch"));
    if (!db || !*db || strlen(db) >= sizeof c->rep->branch) {
      al_ghapi_resp_free(&r);
      return al_make_error(err, EPROTO, "GET %s: no `default_branch`", c->repo_path);
    }
    snprintf(c->rep->branch, sizeof c->rep->branch, "%s", db);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Branches › Branch protection › "Get branch protection". 404 "Branch not
 * protected" is GitHub's answer for a branch without classic protection
 * (also when only rulesets protect it); 404 "Branch not found" means no
 * such branch; any other 403/404 means the token may not see it. */
static int gather_classic(struct ctx *c, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s/branches/%s/protection", c->repo_path, c->branch_esc);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
    return -1;
  if (check_401(&r, p, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status == 200 && json_is_object(r.json)) {
    c->classic = L_PRESENT;
    c->classic_json = json_incref(r.json);
  } else if (r.status == 404 && strcasecmp(r.message, "Branch not protected") == 0) {
    c->classic = L_ABSENT;
  } else if (r.status == 404 && strcasecmp(r.message, "Branch not found") == 0) {
    al_ghapi_resp_free(&r);
    return al_error_set(err, ENOENT, "branch `%s` not found in %s (GET %s: 404 Branch not found)",
                        c->rep->branch, c->o->repo, p);
  } else {
    c->classic = L_UNKNOWN;
    why_status(c->classic_why, sizeof c->classic_why, &r);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Repos › Rules › "Get rules for a branch": every active rule from every
 * ruleset (repository or organisation) that applies to the branch; rules
 * in "evaluate" or "disabled" rulesets are not returned. */
static int gather_rules(struct ctx *c, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s/rules/branches/%s", c->repo_path, c->branch_esc);
  json_t *items = NULL;
  al_ghapi_list_info st;
  al_error e = {0};
  if (al_ghapi_list(c->api, p, c->tok, 0, &items, &st, &e) == 0) {
    c->rules_known = true;
    c->rules = items;
    return 0;
  }
  json_decref(items);
  if (st.status == AL_GHAPI_LIST_HTTP && st.cls == AL_GHAPI_UNAUTHORIZED)
    return al_error_set(err, EACCES, "%s: the token is not valid", st.why);
  if (st.status == AL_GHAPI_LIST_TRANSPORT)
    return al_error_set(err, e.code, "%s", st.why);
  /* Anything less than the whole list is not known (fail closed). */
  snprintf(c->rules_why, sizeof c->rules_why, "%s", st.why);
  return 0;
}

static void rs_key(char *k, size_t n, json_t *id)
{
  snprintf(k, n, "%lld", (long long)json_integer_value(id));
}

/* Repos › Rules › "Get all repository rulesets" (includes_parents: the
 * organisation's too) and "Get a repository ruleset" for each one that is
 * listed or that a rule of the branch came from. bypass_actors is returned
 * only to callers with write access to the ruleset. */
static int gather_rulesets(struct ctx *c, al_error *err)
{
  al_autofree char *p =
      al_strdup_printf("%s/rulesets?includes_parents=true&per_page=100", c->repo_path);
  al_ghapi_resp r = {0};
  if (al_ghapi_get_list(c->api, p, c->tok, &r, err) < 0)
    return -1;
  c->rs_detail = json_object();
  if (r.status == 200) {
    c->rs_list_known = true;
    c->rs_list = json_incref(r.json);
  } else {
    why_status(c->rs_list_why, sizeof c->rs_list_why, &r);
  }
  al_ghapi_resp_free(&r);

  json_t *ids = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(c->rs_list, i, v) json_array_append(ids, json_object_get(v, "id"));
  json_array_foreach(c->rules, i, v) json_array_append(ids, json_object_get(v, "ruleset_id"));
  json_array_foreach(ids, i, v)
  {
    if (!json_is_integer(v))
      continue;
    char k[32];
    rs_key(k, sizeof k, v);
    if (json_object_get(c->rs_detail, k))
      continue;
    al_autofree char *dp =
        al_strdup_printf("%s/rulesets/%s?includes_parents=true", c->repo_path, k);
    if (al_ghapi_get(c->api, dp, c->tok, &r, err) < 0) {
      json_decref(ids);
      return -1;
    }
    if (r.status == 200 && json_is_object(r.json)) {
      json_object_set(c->rs_detail, k, r.json);
    } else {
      char w[300];
      why_status(w, sizeof w, &r);
      json_object_set_new(c->rs_detail, k, json_string(w));
    }
    al_ghapi_resp_free(&r);
  }
  json_decref(ids);
  return 0;
}

/* The ids of the rulesets that matter: those with rules on the branch
 * (from the effective rules) and the active tag rulesets. */
static json_t *rulesets_that_matter(struct ctx *c)
{
  json_t *ids = json_object();
  size_t i;
  json_t *v;
  json_array_foreach(c->rules, i, v)
  {
    char k[32];
    rs_key(k, sizeof k, json_object_get(v, "ruleset_id"));
    json_object_set_new(ids, k, json_true());
  }
  json_array_foreach(c->rs_list, i, v)
  {
    const char *t = json_string_value(json_object_get(v, "target"));
    const char *enf = json_string_value(json_object_get(v, "enforcement"));
    if (t && !strcmp(t, "tag") && (!enf || !strcmp(enf, "active"))) {
      char k[32];
      rs_key(k, sizeof k, json_object_get(v, "id"));
      json_object_set_new(ids, k, json_true());
    }
  }
  return ids;
}

/* The bot's own answer for every ruleset that matters: GET
 * /repos/{o}/{r}/rulesets/{id} with a token of the run's App, field
 * current_user_can_bypass ("Get a repository ruleset": always,
 * pull_requests_only, exempt or never, for the authenticated caller). GitHub
 * shows bypass_actors only to a caller that can edit the ruleset, but every
 * caller learns whether *it* may bypass: asked as the App, that is exactly
 * the criterion. The token has only metadata: read and is revoked before
 * the audit returns (the caller revokes *bot). app_gh NULL: the App is not
 * known to the audit, and the view stays unknown with the reason. */
static int gather_bot_view(struct ctx *c, al_gh *app_gh, al_token *bot, al_error *err)
{
  c->bot_view = json_object();
  const char *tok = NULL;
  if (c->tok_is_bot) {
    tok = c->tok;
    snprintf(c->rep->as_app, sizeof c->rep->as_app, "the read token (minted from the run's App)");
  } else if (app_gh) {
    al_perm_set ps = {.n = 1};
    snprintf(ps.items[0].name, AL_PERM_NAME_MAX, "metadata");
    if (al_gh_mint(app_gh, AL_ROLE_GIT, c->o->repo, &ps, bot, err) < 0)
      return al_error_wrap(err, "minting a metadata: read token of the run's App (to ask "
                                "current_user_can_bypass as the App)");
    tok = bot->value;
    snprintf(c->rep->as_app, sizeof c->rep->as_app,
             "installation token %s of the run's App (metadata: read)", bot->fp);
  } else {
    snprintf(c->bot_why, sizeof c->bot_why,
             "the run's App is not known to the audit (no broker config): its own "
             "current_user_can_bypass cannot be asked");
    return 0;
  }
  json_t *ids = rulesets_that_matter(c);
  const char *k;
  json_t *v;
  json_object_foreach(ids, k, v)
  {
    al_autofree char *p = al_strdup_printf("%s/rulesets/%s?includes_parents=true", c->repo_path, k);
    al_ghapi_resp r = {0};
    if (al_ghapi_get(c->api, p, tok, &r, err) < 0) {
      json_decref(ids);
      return -1;
    }
    const char *cu = json_string_value(json_object_get(r.json, "current_user_can_bypass"));
    if (r.status == 200 && cu) {
      json_object_set_new(c->bot_view, k, json_string(cu));
    } else {
      char w[400];
      al_ghapi_describe(&r, w, sizeof w);
      json_object_set_new(
          c->bot_view, k,
          json_pack("{s:s}", "why", r.status == 200 ? "no current_user_can_bypass" : w));
    }
    al_ghapi_resp_free(&r);
  }
  json_decref(ids);
  c->bot_known = true;
  return 0;
}

/* base64 with line breaks (the contents API wraps at 60 characters). */
static char *b64_decode(const char *in, size_t *outlen)
{
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = strlen(in);
  char *out = al_xmalloc(n / 4 * 3 + 4);
  size_t k = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = in[i];
    if (ch == '=')
      break;
    const char *pos = ch ? strchr(tbl, ch) : NULL;
    if (!pos)
      continue; /* whitespace and line breaks */
    acc = (acc << 6) | (unsigned)(pos - tbl);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[k++] = (char)((acc >> bits) & 0xff);
    }
  }
  out[k] = '\0';
  *outlen = k;
  return out;
}

/* Repos › Contents › "Get repository content" for the CODEOWNERS
 * locations, on the target branch, in GitHub's order ("About code
 * owners": the first one found is used). */
static int gather_codeowners(struct ctx *c, al_error *err)
{
  al_autofree char *ref = al_ghapi_escape(c->rep->branch);
  for (size_t i = 0; i < AL_ARRAY_SIZE(AL_CODEOWNERS_PATHS); i++) {
    al_autofree char *p =
        al_strdup_printf("%s/contents/%s?ref=%s", c->repo_path, AL_CODEOWNERS_PATHS[i], ref);
    al_ghapi_resp r = {0};
    if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
      return -1;
    if (r.status == 404) {
      al_ghapi_resp_free(&r);
      continue;
    }
    const char *content = json_string_value(json_object_get(r.json, "content"));
    const char *enc = json_string_value(json_object_get(r.json, "encoding"));
    if (r.status == 200 && content && enc && strcmp(enc, "base64") == 0) {
      c->co = L_PRESENT;
      snprintf(c->co_path, sizeof c->co_path, "%s", AL_CODEOWNERS_PATHS[i]);
      c->co_text = b64_decode(content, &c->co_len);
    } else {
      c->co = L_UNKNOWN;
      snprintf(c->co_path, sizeof c->co_path, "%s", AL_CODEOWNERS_PATHS[i]);
      if (r.status == 200)
        snprintf(c->co_why, sizeof c->co_why, "GET %s: not a base64 file", AL_CODEOWNERS_PATHS[i]);
      else
        why_status(c->co_why, sizeof c->co_why, &r);
    }
    al_ghapi_resp_free(&r);
    return 0;
  }
  c->co = L_ABSENT;
  return 0;
}

/* ---- judging: protection ---------------------------------------------- */

static bool enabled(json_t *o, const char *k)
{
  return json_is_true(json_object_get(json_object_get(o, k), "enabled"));
}

static json_t *classic_rpr(struct ctx *c)
{
  json_t *v = json_object_get(c->classic_json, "required_pull_request_reviews");
  return json_is_object(v) ? v : NULL;
}

static void classic_note(struct ctx *c, struct sb *ev)
{
  if (c->classic == L_ABSENT)
    sb_part(ev, "classic protection: none (404 Branch not protected)");
  else if (c->classic == L_UNKNOWN)
    sb_part(ev, "classic protection: not visible to the token (%s)", c->classic_why);
}

static const char *fix_unknown_classic =
    "give the audit a token that can read branch protection (Administration: read): "
    "AIRLOCK_AUDIT_TOKEN with a fine-grained token of a repository admin, or grant the App "
    "`administration: read`";

static al_audit_status verdict(bool pass, bool unknown)
{
  return pass ? AL_AUDIT_PASS : unknown ? AL_AUDIT_UNKNOWN : AL_AUDIT_FAIL;
}

static void judge_protected(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  bool pass = c->classic == L_PRESENT;
  if (pass)
    sb_part(&ev, "classic protection: present");
  classic_note(c, &ev);
  size_t nr = json_array_size(c->rules);
  if (c->rules_known)
    sb_part(&ev, "rulesets: %zu active rule(s) for the branch", nr);
  else
    sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  pass = pass || nr > 0;
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  set(c, AL_AC_PROTECTED, verdict(pass, unknown), &ev,
      unknown ? fix_unknown_classic
              : "protect the branch: Settings › Rules › Rulesets (or Branches › Branch "
                "protection rules), requiring a pull request with approvals");
}

/* A boolean review setting, classic key `ckey`, ruleset pull_request
 * parameter `rkey`. */
static void judge_review_flag(struct ctx *c, al_audit_id id, const char *ckey, const char *rkey,
                              const char *fix)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  bool pass = false;
  if (c->classic == L_PRESENT) {
    json_t *rpr = classic_rpr(c);
    if (!rpr) {
      sb_part(&ev, "classic protection: pull request reviews not required");
    } else {
      bool v = json_is_true(json_object_get(rpr, ckey));
      sb_part(&ev, "classic protection: %s = %s", ckey, v ? "true" : "false");
      pass = pass || v;
    }
  }
  classic_note(c, &ev);
  if (c->rules_known) {
    size_t i, n = 0;
    json_t *rule;
    json_array_foreach(c->rules, i, rule)
    {
      if (!json_is_string(json_object_get(rule, "type")) ||
          strcmp(json_string_value(json_object_get(rule, "type")), "pull_request") != 0)
        continue;
      bool v = json_is_true(json_object_get(json_object_get(rule, "parameters"), rkey));
      sb_part(&ev, "ruleset %lld: %s = %s",
              (long long)json_integer_value(json_object_get(rule, "ruleset_id")), rkey,
              v ? "true" : "false");
      pass = pass || v;
      n++;
    }
    if (n == 0)
      sb_part(&ev, "rulesets: no pull_request rule");
  } else {
    sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  }
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  set(c, id, verdict(pass, unknown), &ev, unknown && !pass ? fix_unknown_classic : fix);
}

static void judge_approvals(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  long long best = -1;
  if (c->classic == L_PRESENT) {
    json_t *rpr = classic_rpr(c);
    if (!rpr) {
      sb_part(&ev, "classic protection: pull request reviews not required");
    } else {
      long long n = json_integer_value(json_object_get(rpr, "required_approving_review_count"));
      sb_part(&ev, "classic protection: required_approving_review_count = %lld", n);
      if (n > best)
        best = n;
    }
  }
  classic_note(c, &ev);
  if (c->rules_known) {
    size_t i, k = 0;
    json_t *rule;
    json_array_foreach(c->rules, i, rule)
    {
      if (!json_is_string(json_object_get(rule, "type")) ||
          strcmp(json_string_value(json_object_get(rule, "type")), "pull_request") != 0)
        continue;
      long long n = json_integer_value(
          json_object_get(json_object_get(rule, "parameters"), "required_approving_review_count"));
      sb_part(&ev, "ruleset %lld: pull_request, required_approving_review_count = %lld",
              (long long)json_integer_value(json_object_get(rule, "ruleset_id")), n);
      if (n > best)
        best = n;
      k++;
    }
    if (k == 0)
      sb_part(&ev, "rulesets: no pull_request rule");
  } else {
    sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  }
  bool pass = best >= 1;
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  set(c, AL_AC_APPROVALS, verdict(pass, unknown), &ev,
      unknown && !pass ? fix_unknown_classic
                       : "require a pull request before merging with at least 1 required "
                         "approval (classic: required_approving_review_count >= 1; ruleset: a "
                         "pull_request rule with required_approving_review_count >= 1)");
}

/* Force push / deletion: classic allow_* false, or a ruleset rule of
 * `rtype` (non_fast_forward / deletion). */
static void judge_push_rule(struct ctx *c, al_audit_id id, const char *ckey, const char *rtype,
                            const char *fix)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  bool pass = false;
  if (c->classic == L_PRESENT) {
    bool allowed = enabled(c->classic_json, ckey);
    sb_part(&ev, "classic protection: %s = %s", ckey, allowed ? "true" : "false");
    pass = !allowed;
  }
  classic_note(c, &ev);
  if (c->rules_known) {
    size_t i;
    json_t *rule;
    bool found = false;
    json_array_foreach(c->rules, i, rule)
    {
      const char *t = json_string_value(json_object_get(rule, "type"));
      if (t && strcmp(t, rtype) == 0) {
        sb_part(&ev, "ruleset %lld: %s rule",
                (long long)json_integer_value(json_object_get(rule, "ruleset_id")), rtype);
        found = true;
      }
    }
    if (!found)
      sb_part(&ev, "rulesets: no %s rule", rtype);
    pass = pass || found;
  } else {
    sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  }
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  set(c, id, verdict(pass, unknown), &ev, unknown && !pass ? fix_unknown_classic : fix);
}

/* The detail of a ruleset, or NULL with *why. */
static json_t *rs_get(struct ctx *c, json_t *id, const char **why)
{
  char k[32];
  rs_key(k, sizeof k, id);
  json_t *d = json_object_get(c->rs_detail, k);
  if (json_is_object(d))
    return d;
  *why = json_is_string(d) ? json_string_value(d) : "not fetched";
  return NULL;
}

static bool is_admin_actor(const char *type)
{
  return type && (strcmp(type, "OrganizationAdmin") == 0 || strcmp(type, "RepositoryRole") == 0 ||
                  strcmp(type, "EnterpriseOwner") == 0);
}

/* What the bot's own current_user_can_bypass says for ruleset k, or NULL
 * with *why. */
static const char *bot_says(struct ctx *c, const char *k, const char **why)
{
  json_t *v = json_object_get(c->bot_view, k);
  if (json_is_string(v))
    return json_string_value(v);
  *why = !c->bot_known ? c->bot_why
         : v           ? str_or(json_string_value(json_object_get(v, "why")), "?")
                       : "not asked";
  return NULL;
}

/* The permission that would reveal a ruleset's bypass_actors. */
static const char *actors_permission(json_t *d)
{
  const char *st = json_string_value(json_object_get(d, "source_type"));
  return st && !strcmp(st, "Organization")
             ? "the organisation's Administration: write (organisation rulesets)"
             : "Administration: write on the repository";
}

/* Classic enforce_admins; or a ruleset with a pull_request rule whose
 * bypass list has no administrator role ("About rulesets": rulesets bind
 * everyone not on their bypass list). GitHub shows a ruleset's bypass list
 * only to a caller who can edit it; when it is hidden from every credential
 * the audit has, whether human administrators may bypass cannot be read:
 * that is a WARN naming the permission that would show it: it is about
 * humans (an administrator merging is still a human decision), and the
 * bot's own bypass is judged by bot.no_bypass from its own
 * current_user_can_bypass, which GitHub does not hide. */
static void judge_admins(struct ctx *c)
{
  struct sb ev = {0};
  bool pass = false, warn = false, unknown = c->classic == L_UNKNOWN || !c->rules_known;
  const char *hidden_perm = NULL;
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES | AL_AUDIT_FROM_RULESETS;
  if (c->classic == L_PRESENT) {
    bool v = enabled(c->classic_json, "enforce_admins");
    sb_part(&ev, "classic protection: enforce_admins = %s", v ? "true" : "false");
    pass = v;
  }
  classic_note(c, &ev);
  if (!c->rules_known)
    sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  size_t i, j;
  json_t *rule, *a;
  json_t *seen = json_object();
  json_array_foreach(c->rules, i, rule)
  {
    const char *t = json_string_value(json_object_get(rule, "type"));
    json_t *rid = json_object_get(rule, "ruleset_id");
    char k[32];
    rs_key(k, sizeof k, rid);
    if (!t || strcmp(t, "pull_request") != 0 || json_object_get(seen, k))
      continue;
    json_object_set_new(seen, k, json_true());
    const char *why = NULL;
    json_t *d = rs_get(c, rid, &why);
    json_t *ba = json_object_get(d, "bypass_actors");
    if (d && !json_is_array(ba)) {
      const char *bw = NULL;
      const char *bot = bot_says(c, k, &bw);
      if (bot)
        c->from |= AL_AUDIT_FROM_AS_APP;
      sb_part(&ev,
              "ruleset %s: pull_request rule; its bypass list is hidden from the audit's "
              "credential (shown only with %s), so whether administrators may bypass it cannot "
              "be read (the App's own answer, for bot.no_bypass: %s)",
              k, actors_permission(d), bot ? bot : bw);
      hidden_perm = actors_permission(d);
      warn = true;
      pass = true;
      continue;
    }
    if (!d) {
      sb_part(&ev, "ruleset %s: not visible (%s)", k, why);
      unknown = true;
      continue;
    }
    const char *admin = NULL;
    json_array_foreach(ba, j, a)
    {
      const char *at = json_string_value(json_object_get(a, "actor_type"));
      if (is_admin_actor(at))
        admin = at;
    }
    if (admin) {
      sb_part(&ev, "ruleset %s: administrators may bypass (%s)", k, admin);
    } else {
      sb_part(&ev, "ruleset %s: pull_request rule, no administrator on its bypass list", k);
      pass = true;
      warn = false;
    }
  }
  json_decref(seen);
  al_autofree char *fix_hidden =
      hidden_perm
          ? al_strdup_printf("to check the administrators too, audit with a credential "
                             "holding %s (AIRLOCK_AUDIT_TOKEN or the broker's audit.token_file)",
                             hidden_perm)
          : NULL;
  set(c, AL_AC_ADMINS, pass && warn && !unknown ? AL_AUDIT_WARN : verdict(pass, unknown), &ev,
      unknown && !pass     ? fix_unknown_classic
      : fix_hidden && warn ? fix_hidden
                           : "classic: turn on \"Do not allow bypassing the above settings\" "
                             "(enforce_admins); ruleset: remove administrator roles from the "
                             "bypass list");
}

/* Is this {slug,id} / user object the bot? */
static bool is_bot_obj(struct ctx *c, json_t *o)
{
  const char *slug = json_string_value(json_object_get(o, "slug"));
  const char *login = json_string_value(json_object_get(o, "login"));
  json_t *id = json_object_get(o, "id");
  if (c->rep->app_slug[0]) {
    if (slug && strcasecmp(slug, c->rep->app_slug) == 0)
      return true;
    char bl[160];
    snprintf(bl, sizeof bl, "%s[bot]", c->rep->app_slug);
    if (login && strcasecmp(login, bl) == 0)
      return true;
  }
  return slug && c->rep->app_id > 0 && json_integer_value(id) == c->rep->app_id;
}

static bool list_has_bot(struct ctx *c, json_t *arr)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (is_bot_obj(c, v))
      return true;
  }
  return false;
}

/* bot.no_bypass: the App is on no bypass list that matters — classic
 * bypass_pull_request_allowances of the branch, and every ruleset with
 * rules on the branch (the effective rules, organisation rulesets
 * included). A visible bypass list is read for an Integration entry with
 * the App's id; the bot's own current_user_can_bypass (asked as the App)
 * is read for every ruleset, and anything but "never" (always,
 * pull_requests_only: it may merge its own pull request past the rules,
 * exempt: the rules do not apply to it) is a FAIL. UNKNOWN only when the
 * bypass list is hidden and the App's own answer could not be asked.
 * Rulesets that do not touch the branch (other branches', tag rulesets:
 * see tags.protected) are not this criterion. */
static void judge_bypass(struct ctx *c)
{
  struct sb ev = {0};
  bool fail = false, unknown = false;
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES | AL_AUDIT_FROM_RULESETS;
  if (!c->rep->app_slug[0] && c->rep->app_id <= 0) {
    sb_part(&ev, "the App is not known (no broker config, no --app)");
    unknown = true;
  }
  if (c->classic == L_PRESENT) {
    json_t *bpa = json_object_get(classic_rpr(c), "bypass_pull_request_allowances");
    if (list_has_bot(c, json_object_get(bpa, "apps")) ||
        list_has_bot(c, json_object_get(bpa, "users"))) {
      sb_part(&ev, "classic protection: bypass_pull_request_allowances lists the App");
      fail = true;
    } else {
      sb_part(&ev, "classic protection: the App is not in bypass_pull_request_allowances");
    }
  } else {
    classic_note(c, &ev);
    unknown = unknown || c->classic == L_UNKNOWN;
  }
  if (!c->rules_known) {
    sb_part(&ev, "rules for the branch: not visible (%s)", c->rules_why);
    unknown = true;
  }
  json_t *ids = json_object();
  size_t i;
  json_t *v;
  json_array_foreach(c->rules, i, v)
  {
    char k[32];
    rs_key(k, sizeof k, json_object_get(v, "ruleset_id"));
    json_object_set_new(ids, k, json_true());
  }
  const char *k;
  size_t n_checked = 0;
  json_object_foreach(ids, k, v)
  {
    json_t *d = json_object_get(c->rs_detail, k);
    const char *name = json_is_object(d) ? json_string_value(json_object_get(d, "name")) : NULL;
    const char *src =
        json_is_object(d) ? json_string_value(json_object_get(d, "source_type")) : NULL;
    n_checked++;
    bool listed = false;
    json_t *ba = json_object_get(d, "bypass_actors");
    if (json_is_array(ba)) {
      size_t j;
      json_t *a;
      json_array_foreach(ba, j, a)
      {
        const char *at = json_string_value(json_object_get(a, "actor_type"));
        if (!at || strcmp(at, "Integration") != 0)
          continue;
        long long aid = json_integer_value(json_object_get(a, "actor_id"));
        if (c->rep->app_id <= 0) {
          sb_part(&ev, "ruleset %s: an App (id %lld) may bypass; the audited App's id is unknown",
                  k, aid);
          unknown = true;
        } else if (aid == c->rep->app_id) {
          const char *mode = json_string_value(json_object_get(a, "bypass_mode"));
          sb_part(&ev, "ruleset %s (%s): bypass_actors lists the App (Integration %lld, %s)", k,
                  str_or(name, "?"), aid, mode ? mode : "?");
          listed = fail = true;
        }
      }
    }
    const char *bw = NULL;
    const char *bot = bot_says(c, k, &bw);
    if (bot) {
      c->from |= AL_AUDIT_FROM_AS_APP;
      if (strcmp(bot, "never") != 0) {
        if (!listed)
          sb_part(&ev, "ruleset %s (%s%s%s): current_user_can_bypass = %s, asked as the App", k,
                  str_or(name, "?"), src ? ", " : "", src ? src : "", bot);
        fail = true;
      } else if (!listed) {
        sb_part(&ev, "ruleset %s (%s%s%s): current_user_can_bypass = never, asked as the App%s", k,
                str_or(name, "?"), src ? ", " : "", src ? src : "",
                json_is_array(ba) ? ""
                                  : " (its bypass list is hidden from the audit's credential)");
      }
    } else if (!json_is_array(ba) && !listed) {
      sb_part(&ev,
              "ruleset %s: the bypass list is hidden (shown only with %s) and the App's own "
              "answer is unknown (%s)",
              k, json_is_object(d) ? actors_permission(d) : "write access to the ruleset",
              bw ? bw : "?");
      unknown = true;
    }
  }
  json_decref(ids);
  if (!fail && !unknown)
    sb_part(&ev, "%zu ruleset(s) with rules on the branch: the App can bypass none", n_checked);
  set(c, AL_AC_BYPASS,
      fail      ? AL_AUDIT_FAIL
      : unknown ? AL_AUDIT_UNKNOWN
                : AL_AUDIT_PASS,
      &ev,
      fail ? "remove the App from bypass_pull_request_allowances (classic: \"Allow specified "
             "actors to bypass required pull requests\") and from every ruleset's bypass list "
             "(organisation rulesets included)"
           : "give the audit the broker config (--config) so it can ask current_user_can_bypass "
             "as the App, or a credential that sees the bypass lists (Administration: write)");
}

static void judge_codeowner(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CODEOWNERS;
  struct sb ev = {0};
  if (!c->rep->app_slug[0]) {
    sb_part(&ev, "the App's slug is not known (no broker config, no --app)");
    set(c, AL_AC_CODEOWNER, AL_AUDIT_UNKNOWN, &ev, "run the audit with --config or --app SLUG");
    return;
  }
  if (c->co == L_UNKNOWN) {
    sb_part(&ev, "%s on %s: not visible (%s)", c->co_path, c->rep->branch, c->co_why);
    set(c, AL_AC_CODEOWNER, AL_AUDIT_UNKNOWN, &ev,
        "give the audit a token with Contents: read on the repository");
    return;
  }
  if (c->co == L_ABSENT) {
    sb_part(&ev, "no CODEOWNERS file in .github/, the root or docs/ of %s", c->rep->branch);
    set(c, AL_AC_CODEOWNER, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  char n1[160], n2[160];
  snprintf(n1, sizeof n1, "@%s[bot]", c->rep->app_slug);
  snprintf(n2, sizeof n2, "@%s", c->rep->app_slug);
  const char *names[] = {n1, n2};
  unsigned lines[8];
  size_t n = al_codeowners_lines_owned_by(c->co_text, c->co_len, names, 2, lines, 8);
  if (n == 0) {
    sb_part(&ev, "%s on %s (the file GitHub uses) does not name %s", c->co_path, c->rep->branch,
            n1);
    set(c, AL_AC_CODEOWNER, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  sb_add(&ev, "%s on %s names %s as an owner on line", c->co_path, c->rep->branch, n1);
  for (size_t i = 0; i < n && i < 8; i++)
    sb_add(&ev, "%s %u", i ? "," : "", lines[i]);
  set(c, AL_AC_CODEOWNER, AL_AUDIT_FAIL, &ev,
      "remove the App from CODEOWNERS: a code owner's approval satisfies code-owner review");
}

static void judge_push_allow(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CLASSIC;
  struct sb ev = {0};
  if (c->classic == L_UNKNOWN) {
    classic_note(c, &ev);
    set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_UNKNOWN, &ev, fix_unknown_classic);
    return;
  }
  json_t *restr = json_object_get(c->classic_json, "restrictions");
  if (c->classic == L_ABSENT || !json_is_object(restr)) {
    sb_part(&ev, "classic protection: no push restrictions (restrictions = null)");
    if (c->classic == L_ABSENT)
      classic_note(c, &ev);
    set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  if (list_has_bot(c, json_object_get(restr, "apps")) ||
      list_has_bot(c, json_object_get(restr, "users"))) {
    sb_part(&ev, "classic protection: restrictions lets the App push to %s", c->rep->branch);
    set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_FAIL, &ev,
        "remove the App from \"Restrict who can push to matching branches\" (restrictions.apps)");
    return;
  }
  sb_part(&ev, "classic protection: restrictions do not list the App");
  set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_PASS, &ev, NULL);
}

/* ---- judging: the App ------------------------------------------------- */

static const char *const dangerous[] = {"administration", "workflows", "actions", "secrets"};

static bool is_dangerous(const char *name)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(dangerous); i++)
    if (strcmp(name, dangerous[i]) == 0)
      return true;
  return false;
}

/* The installation's permissions (Apps › "Get a repository installation for
 * the authenticated app", field `permissions`). administration: read is a
 * WARN: it cannot change protection or merge, and it is what the App needs
 * to audit itself; write is a FAIL, as is any level of workflows, actions
 * or secrets. */
static void judge_app_perms(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_APP;
  struct sb ev = {0};
  if (!c->inst_known) {
    sb_part(&ev, "the installation's permissions need the App's JWT (no broker config given)");
    set(c, AL_AC_APP_PERMS, AL_AUDIT_UNKNOWN, &ev,
        "run the audit with --config BROKER.yaml so it can read the installation");
    return;
  }
  bool fail = false, warn = false;
  for (size_t i = 0; i < AL_ARRAY_SIZE(dangerous); i++) {
    const char *lvl = perm_level(c->inst_perms, dangerous[i]);
    if (!lvl)
      continue;
    if (strcmp(dangerous[i], "administration") == 0 && strcmp(lvl, "read") == 0) {
      sb_part(&ev,
              "installation %lld holds administration: read (can read, not change, "
              "protection)",
              c->rep->installation_id);
      warn = true;
    } else {
      sb_part(&ev, "installation %lld holds %s: %s", c->rep->installation_id, dangerous[i], lvl);
      fail = true;
    }
  }
  if (!fail && !warn)
    sb_part(&ev, "installation %lld holds none of administration, workflows, actions, secrets",
            c->rep->installation_id);
  set(c, AL_AC_APP_PERMS,
      fail   ? AL_AUDIT_FAIL
      : warn ? AL_AUDIT_WARN
             : AL_AUDIT_PASS,
      &ev,
      fail ? "remove these permissions from the App (Settings › Developer settings › GitHub "
             "Apps › Permissions) and accept the change on the installation"
           : "audit with a separate read-only credential (AIRLOCK_AUDIT_TOKEN, or the "
             "broker's audit: {token_file | app}) and drop administration: read from the App");
}

/* The two roles' maximum: what DESIGN.md §2 gives a run. */
static bool role_perm_allowed(al_role role, const al_perm *p)
{
  if (strcmp(p->name, "metadata") == 0 && !p->write)
    return true;
  if (role == AL_ROLE_GIT)
    return strcmp(p->name, "contents") == 0 || strcmp(p->name, "pull_requests") == 0;
  return strcmp(p->name, "issues") == 0;
}

static void judge_app_scope(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_BROKER | AL_AUDIT_FROM_APP;
  struct sb ev = {0};
  if (!c->cfg) {
    sb_part(&ev, "the broker's roles are unknown (no broker config given)");
    set(c, AL_AC_APP_SCOPE, AL_AUDIT_UNKNOWN, &ev,
        "run the audit with --config BROKER.yaml (the broker that serves the runs)");
    return;
  }
  bool fail = false, warn = false;
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    char buf[512];
    al_perm_set_format(&c->cfg->roles[r], buf, sizeof buf);
    sb_part(&ev, "role %s: %s", al_role_name((al_role)r), buf[0] ? buf : "(none)");
    for (size_t i = 0; i < c->cfg->roles[r].n; i++)
      if (!role_perm_allowed((al_role)r, &c->cfg->roles[r].items[i])) {
        sb_add(&ev, " (`%s` is more than the role needs)", c->cfg->roles[r].items[i].name);
        fail = true;
      }
  }
  if (c->inst_known) {
    const char *k;
    json_t *v;
    json_object_foreach(c->inst_perms, k, v)
    {
      if (is_dangerous(k) || strcmp(k, "metadata") == 0)
        continue; /* judged by app.no_dangerous_permissions / always granted */
      bool used = false;
      for (int r = 0; r < AL_ROLE_COUNT; r++)
        used = used || al_perm_find(&c->cfg->roles[r], k) != NULL;
      if (!used) {
        sb_part(&ev, "installation holds %s: %s, which no role uses", k,
                str_or(json_string_value(v), "?"));
        warn = true;
      }
    }
  }
  set(c, AL_AC_APP_SCOPE,
      fail   ? AL_AUDIT_FAIL
      : warn ? AL_AUDIT_WARN
             : AL_AUDIT_PASS,
      &ev,
      fail ? "limit the broker's roles to git: {contents: write, pull_requests: write} and "
             "ticket: {issues: write}"
           : "remove the unused permissions from the App");
}

/* tags.protected (advisory): an active tag ruleset that restricts
 * creation, update AND deletion of tags, and that the App cannot bypass
 * (current_user_can_bypass asked as the App, or its visible bypass list).
 * Anything less is a WARN that says exactly which rules were found. */
static void judge_tags(struct ctx *c)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_RULESETS;
  if (!c->rs_list_known) {
    sb_part(&ev, "rulesets list: not visible (%s)", c->rs_list_why);
    set(c, AL_AC_TAGS, AL_AUDIT_UNKNOWN, &ev, "give the audit a token with Metadata: read");
    return;
  }
  bool pass = false;
  size_t i;
  json_t *s;
  json_array_foreach(c->rs_list, i, s)
  {
    const char *t = json_string_value(json_object_get(s, "target"));
    const char *enf = json_string_value(json_object_get(s, "enforcement"));
    if (!t || strcmp(t, "tag") != 0 || !enf || strcmp(enf, "active") != 0)
      continue;
    const char *why = NULL;
    json_t *id = json_object_get(s, "id");
    json_t *d = rs_get(c, id, &why);
    bool cr = false, up = false, del = false;
    size_t j;
    json_t *rule;
    json_array_foreach(json_object_get(d, "rules"), j, rule)
    {
      const char *rt = json_string_value(json_object_get(rule, "type"));
      cr = cr || (rt && !strcmp(rt, "creation"));
      up = up || (rt && !strcmp(rt, "update"));
      del = del || (rt && !strcmp(rt, "deletion"));
    }
    char k[32];
    rs_key(k, sizeof k, id);
    const char *bw = NULL;
    const char *bot = bot_says(c, k, &bw);
    if (bot)
      c->from |= AL_AUDIT_FROM_AS_APP;
    bool bot_ok = bot ? !strcmp(bot, "never") : false;
    char rules[128];
    snprintf(rules, sizeof rules, "creation %s, update %s, deletion %s",
             cr ? "restricted" : "NOT restricted", up ? "restricted" : "NOT restricted",
             del ? "restricted" : "NOT restricted");
    json_t *inc =
        json_object_get(json_object_get(json_object_get(d, "conditions"), "ref_name"), "include");
    al_autofree char *pats = inc ? json_dumps(inc, JSON_COMPACT) : al_xstrdup("?");
    if (!d)
      sb_part(&ev, "tag ruleset %s (%s): %s", k,
              str_or(json_string_value(json_object_get(s, "name")), "?"), why);
    else
      sb_part(&ev, "tag ruleset %s (%s) on %s: %s; the App %s", k,
              str_or(json_string_value(json_object_get(s, "name")), "?"), pats, rules,
              bot_ok ? "cannot bypass it (current_user_can_bypass = never, asked as the App)"
              : bot  ? "CAN bypass it (current_user_can_bypass, asked as the App)"
                     : "may or may not bypass it (its own answer is unknown)");
    pass = pass || (d && cr && up && del && bot_ok);
  }
  if (!ev.len)
    sb_part(&ev, "no active tag ruleset");
  set(c, AL_AC_TAGS, pass ? AL_AUDIT_PASS : AL_AUDIT_WARN, &ev,
      "add a tag ruleset for release tags (e.g. refs/tags/v*) with creation, update and "
      "deletion rules, and keep the App off its bypass list");
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
  free(c->repo_path);
  free(c->branch_esc);
  al_broker_config_free(c->owned_cfg);
  al_ghapi_free(c->api);
}

static int gather_all(struct ctx *c, al_error *err)
{
  if (gather_repo(c, err) < 0)
    return -1;
  c->branch_esc = al_ghapi_escape(c->rep->branch);
  if (gather_classic(c, err) < 0 || gather_rules(c, err) < 0 || gather_rulesets(c, err) < 0 ||
      gather_codeowners(c, err) < 0)
    return -1;
  return 0;
}

static void judge_all(struct ctx *c)
{
  judge_protected(c);
  judge_approvals(c);
  judge_review_flag(c, AL_AC_CODE_OWNERS, "require_code_owner_reviews", "require_code_owner_review",
                    "turn on \"Require review from Code Owners\" (classic "
                    "require_code_owner_reviews; ruleset require_code_owner_review)");
  if (c->rep->c[AL_AC_CODE_OWNERS].status == AL_AUDIT_PASS && c->co == L_ABSENT) {
    al_audit_criterion *k = &c->rep->c[AL_AC_CODE_OWNERS];
    char *e = al_strdup_printf("%s; but no CODEOWNERS file exists, so no owner is requested",
                               k->evidence);
    free(k->evidence);
    k->evidence = e;
    k->status = AL_AUDIT_WARN;
    k->fix = al_xstrdup("add a CODEOWNERS file (.github/CODEOWNERS) naming human reviewers");
  }
  judge_review_flag(c, AL_AC_STALE, "dismiss_stale_reviews", "dismiss_stale_reviews_on_push",
                    "turn on \"Dismiss stale pull request approvals when new commits are "
                    "pushed\" (classic dismiss_stale_reviews; ruleset "
                    "dismiss_stale_reviews_on_push)");
  judge_review_flag(c, AL_AC_LAST_PUSH, "require_last_push_approval", "require_last_push_approval",
                    "turn on \"Require approval of the most recent reviewable push\" "
                    "(require_last_push_approval)");
  judge_push_rule(c, AL_AC_FORCE_PUSH, "allow_force_pushes", "non_fast_forward",
                  "block force pushes (classic: allow_force_pushes off; ruleset: \"Block force "
                  "pushes\", non_fast_forward)");
  judge_push_rule(c, AL_AC_DELETION, "allow_deletions", "deletion",
                  "block deletion (classic: allow_deletions off; ruleset: \"Restrict "
                  "deletions\")");
  judge_admins(c);
  judge_bypass(c);
  judge_codeowner(c);
  judge_push_allow(c);
  judge_app_perms(c);
  judge_app_scope(c);
  judge_tags(c);
}

static void tally(al_audit_report *r)
{
  r->holds = true;
  r->n_fail = r->n_unknown = r->n_warn = 0;
  for (int i = 0; i < AL_AUDIT_N; i++) {
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

/* Mint the read token: administration/contents read where the installation
 * holds them, metadata read implied (Apps › "Create an installation access
 * token for an app": `permissions` narrows the token). */
static int mint_reader(struct ctx *c, al_gh *gh, al_token *t, al_error *err)
{
  al_perm_set ps = {0};
  static const char *const want[] = {"administration", "contents"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(want); i++) {
    if (!perm_level(c->inst_perms, want[i]))
      continue;
    snprintf(ps.items[ps.n].name, AL_PERM_NAME_MAX, "%s", want[i]);
    ps.items[ps.n].write = false;
    ps.n++;
  }
  if (al_gh_mint(gh, AL_ROLE_GIT, c->o->repo, &ps, t, err) < 0)
    return al_error_wrap(err, "minting a read-only installation token for the audit");
  char pf[256];
  al_perm_set_format(&t->perms, pf, sizeof pf);
  snprintf(c->rep->credentials, sizeof c->rep->credentials,
           "installation token %s (%s) minted by the App for the audit", t->fp, pf);
  return 0;
}

/* Mint the read token from the audit App: only administration: read and
 * contents: read (metadata: read implied). al_gh_mint checks that no more
 * was granted. */
static int mint_audit_app(struct ctx *c, al_gh *gh, const al_broker_config *rc, al_token *t,
                          al_error *err)
{
  al_perm_set ps = {.n = 2};
  snprintf(ps.items[0].name, AL_PERM_NAME_MAX, "administration");
  snprintf(ps.items[1].name, AL_PERM_NAME_MAX, "contents");
  if (al_gh_mint(gh, AL_ROLE_GIT, c->o->repo, &ps, t, err) < 0)
    return al_error_wrap(err, "minting a read-only token from the audit App %s",
                         rc->app_id ? rc->app_id : rc->client_id);
  char pf[256];
  al_perm_set_format(&t->perms, pf, sizeof pf);
  snprintf(c->rep->credentials, sizeof c->rep->credentials,
           "installation token %s (%s) minted by the audit App %s%s", t->fp, pf,
           rc->app_id ? rc->app_id : rc->client_id,
           c->cfg ? "; the App's JWT for the installation" : "");
  return 0;
}

/* The audit App as a config al_gh can use: the broker's API settings with
 * the audit App's identity. Pointers are borrowed from cfg. */
static void audit_app_view(const al_broker_config *cfg, al_broker_config *view)
{
  *view = *cfg;
  view->app_id = cfg->audit_app_id;
  view->client_id = cfg->audit_client_id;
  view->private_key_path = cfg->audit_key_path;
}

int al_audit_run(const al_audit_opts *o, al_audit_report *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  for (int i = 0; i < AL_AUDIT_N; i++) {
    out->c[i].id = crit_meta[i].id;
    out->c[i].title = crit_meta[i].title;
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
  if (o->branch)
    snprintf(out->branch, sizeof out->branch, "%s", o->branch);

  if (o->app_config && (!o->app_key || o->broker_config || o->api_url || o->ca_file))
    return al_error_set(err, EINVAL,
                        "app_config needs app_key, and no broker_config, "
                        "api_url or ca_file");
  if (o->reader_config && !o->reader_key)
    return al_error_set(err, EINVAL, "reader_config needs reader_key");

  struct ctx c = {.o = o, .rep = out};
  EVP_PKEY *key = NULL, *owned_key = NULL, *reader_key = NULL;
  al_gh *gh = NULL, *app_gh = NULL;
  al_token minted = {0}, bot_tok = {0};
  char *file_tok = NULL;
  al_broker_config reader_view;
  int ret = -1;

  if (o->app_config) {
    c.cfg = o->app_config;
    key = o->app_key;
  } else if (o->broker_config) {
    if (al_broker_config_load_file(o->broker_config, &c.owned_cfg, err) < 0)
      goto out;
    if (o->api_url) {
      free(c.owned_cfg->api_url);
      c.owned_cfg->api_url = al_xstrdup(o->api_url);
    }
    if (o->ca_file) {
      free(c.owned_cfg->ca_file);
      c.owned_cfg->ca_file = al_xstrdup(o->ca_file);
    }
    c.cfg = c.owned_cfg;
    if (al_app_key_load(c.cfg->private_key_path, &owned_key, err) < 0)
      goto out;
    key = owned_key;
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
  c.repo_path = al_strdup_printf("/repos/%s", o->repo);

  if (c.cfg && gather_app(&c, key, err) < 0)
    goto out;

  if (o->token) {
    c.tok = o->token;
    snprintf(out->credentials, sizeof out->credentials, "token from %s%s",
             o->token_source ? o->token_source : "the caller",
             c.cfg ? "; the App's JWT for the installation" : "");
  } else if (o->reader_config || (c.cfg && c.cfg->audit_key_path)) {
    /* The audit App: a second App that can only read. */
    const al_broker_config *rc = o->reader_config;
    EVP_PKEY *rk = o->reader_key;
    if (!rc) {
      audit_app_view(c.cfg, &reader_view);
      rc = &reader_view;
      if (al_app_key_load(rc->private_key_path, &reader_key, err) < 0) {
        al_error_wrap(err, "the audit App's key (audit.app.private_key)");
        goto out;
      }
      rk = reader_key;
    }
    if (al_gh_new(rc, rk, &gh, err) < 0 || mint_audit_app(&c, gh, rc, &minted, err) < 0)
      goto out;
    c.tok = minted.value;
  } else if (c.cfg && c.cfg->audit_token_file) {
    /* The operator's read-only admin token, kept by the broker's user. */
    if (al_broker_audit_token_load(c.cfg->audit_token_file, &file_tok, err) < 0)
      goto out;
    al_redact_register(file_tok);
    c.tok = file_tok;
    char fp[20];
    al_secret_fingerprint(file_tok, fp);
    snprintf(out->credentials, sizeof out->credentials,
             "the broker's audit token %s (audit.token_file); the App's JWT for the "
             "installation",
             fp);
  } else if (c.cfg) {
    if (al_gh_new(c.cfg, key, &gh, err) < 0 || mint_reader(&c, gh, &minted, err) < 0)
      goto out;
    c.tok = minted.value;
    c.tok_is_bot = true;
  } else {
    al_error_set(err, EINVAL,
                 "no credentials: set AIRLOCK_AUDIT_TOKEN (or GITHUB_TOKEN), or give the "
                 "broker config (--config) so the App can mint a read-only token");
    goto out;
  }

  if (gather_all(&c, err) < 0)
    goto out;
  /* The bot's own view of the rulesets, asked as the run's App. */
  if (!c.tok_is_bot && c.cfg && key && al_gh_new(c.cfg, key, &app_gh, err) < 0)
    goto out;
  if (gather_bot_view(&c, c.tok_is_bot ? NULL : app_gh, &bot_tok, err) < 0)
    goto out;
  judge_all(&c);
  tally(out);
  ret = 0;
out:
  if (minted.value) {
    bool confirmed = false;
    al_error rerr = {0};
    if (al_gh_revoke(gh, &minted, &confirmed, &rerr) < 0 || !confirmed) {
      al_warn("revoking the audit's token %s: %s", minted.fp, rerr.msg);
      size_t l = strlen(out->credentials);
      snprintf(out->credentials + l, sizeof out->credentials - l, "; REVOCATION FAILED");
    } else {
      size_t l = strlen(out->credentials);
      snprintf(out->credentials + l, sizeof out->credentials - l, ", revoked");
    }
    al_token_clear(&minted);
  }
  if (bot_tok.value) {
    bool confirmed = false;
    al_error rerr = {0};
    if (al_gh_revoke(app_gh, &bot_tok, &confirmed, &rerr) < 0 || !confirmed) {
      al_warn("revoking the audit's App token %s: %s", bot_tok.fp, rerr.msg);
      size_t l = strlen(out->as_app);
      snprintf(out->as_app + l, sizeof out->as_app - l, "; REVOCATION FAILED");
    } else {
      size_t l = strlen(out->as_app);
      snprintf(out->as_app + l, sizeof out->as_app - l, ", revoked");
    }
    al_token_clear(&bot_tok);
  }
  al_gh_free(app_gh);
  if (file_tok) {
    al_redact_unregister(file_tok);
    al_secret_free(file_tok);
  }
  al_gh_free(gh);
  EVP_PKEY_free(owned_key);
  EVP_PKEY_free(reader_key);
  ctx_free(&c);
  if (ret < 0)
    al_audit_report_free(out);
  return ret;
}

void al_audit_report_free(al_audit_report *r)
{
  if (!r)
    return;
  for (int i = 0; i < AL_AUDIT_N; i++) {
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
  if (r->app_slug[0] || r->app_id)
    fprintf(f, "  the App: %s[bot] (app id %lld, installation %lld)\n",
            r->app_slug[0] ? r->app_slug : "?", r->app_id, r->installation_id);
  fprintf(f, "  read with: %s\n", r->credentials);
  if (r->as_app[0])
    fprintf(f, "  asked as the App: %s\n", r->as_app);
  if (r->redirected[0])
    fprintf(f, "  redirected: %s\n", r->redirected);
  fprintf(f, "\n");
  for (int i = 0; i < AL_AUDIT_N; i++) {
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
  for (int i = 0; i < AL_AUDIT_N; i++) {
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
  json_t *o =
      json_pack("{s:s, s:s, s:s, s:o, s:s, s:s?, s:s?, s:b, s:{s:i, s:i, s:i}, s:o}", "repo",
                r->repo, "branch", r->branch, "api", r->api_url, "app", app, "credentials",
                r->credentials, "as_app", r->as_app[0] ? r->as_app : NULL, "redirected",
                r->redirected[0] ? r->redirected : NULL, "holds", r->holds, "counts", "fail",
                r->n_fail, "unknown", r->n_unknown, "warn", r->n_warn, "criteria", crit);
  char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(o);
  return s;
}
