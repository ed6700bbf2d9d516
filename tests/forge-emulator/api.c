/* The REST API routes. Each handler names the docs.github.com page it
 * follows; status codes and messages are GitHub's (see README.md). */
#include "forge.h"
#include "api_internal.h"

#include <fnmatch.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "behave.h"
#include "pullfiles.h"
#include "rulesets.h"
#include "shapes.h"
#include "common/util.h"

#define DOC_APPS "https://docs.github.com/rest/apps/apps"
#define DOC_MINT DOC_APPS "#create-an-installation-access-token-for-an-app"
#define DOC_INST DOC_APPS "#get-an-installation-for-the-authenticated-app"
#define DOC_REPO_INST DOC_APPS "#get-a-repository-installation-for-the-authenticated-app"
#define DOC_REVOKE                                                                                 \
  "https://docs.github.com/rest/apps/installations#revoke-an-installation-access-token"
#define DOC_INST_REPOS                                                                             \
  "https://docs.github.com/rest/apps/"                                                             \
  "installations#list-repositories-accessible-to-the-app-installation"
#define DOC_REPOS "https://docs.github.com/rest/repos/repos#get-a-repository"
#define DOC_CONTENTS "https://docs.github.com/rest/repos/contents#get-repository-content"
#define DOC_ISSUE "https://docs.github.com/rest/issues/issues#get-an-issue"
#define DOC_COMMENTS "https://docs.github.com/rest/issues/comments"
#define DOC_PULLS "https://docs.github.com/rest/pulls/pulls"
#define DOC_REVIEWS "https://docs.github.com/rest/pulls/reviews"
#define DOC_MERGE "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"
#define DOC_PROT "https://docs.github.com/rest/branches/branch-protection"
#define DOC_BRANCH "https://docs.github.com/rest/branches/branches#get-a-branch"
#define DOC_RULES "https://docs.github.com/rest/repos/rules"

static const char not_accessible[] = "Resource not accessible by integration";
static const char jwt_bad[] = "A JSON web token could not be decoded";

/* ---- object renderers ---- */

static long long bot_user_id(struct forge_app *app)
{
  return 40000000 + app->id;
}

static json_t *user_obj(const char *login)
{
  size_t l = strlen(login);
  if (l > 5 && !strcmp(login + l - 5, "[bot]")) {
    for (size_t i = 0; i < g_forge.n_apps; i++) {
      if (strlen(g_forge.apps[i].slug) == l - 5 && !strncmp(g_forge.apps[i].slug, login, l - 5))
        return forge_shape_user(json_pack("{s:s, s:I, s:s, s:s, s:b}", "login", login, "id",
                                          (json_int_t)bot_user_id(&g_forge.apps[i]), "type", "Bot",
                                          "node_id", "BOT_forge", "site_admin", 0));
    }
  }
  json_t *u = forge_user(login);
  long long id = u ? json_integer_value(json_object_get(u, "id")) : 1;
  const char *type = u && json_string_value(json_object_get(u, "type"))
                         ? json_string_value(json_object_get(u, "type"))
                         : "User";
  return forge_shape_user(json_pack("{s:s, s:I, s:s, s:s, s:s, s:b}", "login", login, "id",
                                    (json_int_t)id, "node_id", "U_forge", "type", type, "html_url",
                                    "https://forge.test/", "site_admin", 0));
}

static json_t *repo_obj(json_t *r)
{
  const char *full = json_string_value(json_object_get(r, "full_name"));
  bool priv = json_is_true(json_object_get(r, "private"));
  return forge_shape_repo(json_pack(
      "{s:O, s:s, s:O, s:s, s:b, s:o, s:s++, s:s++, s:s+++, s:O, s:s, s:b, s:b, s:b}", "id",
      json_object_get(r, "id"), "node_id", "R_forge", "name", json_object_get(r, "name"),
      "full_name", full, "private", priv, "owner",
      user_obj(json_string_value(json_object_get(r, "owner"))), "html_url", g_forge.git_base_url,
      "/", full, "url", g_forge.base_url, "/repos/", full, "clone_url", g_forge.git_base_url, "/",
      full, ".git", "default_branch", json_object_get(r, "default_branch"), "visibility",
      priv ? "private" : "public", "fork", 0, "archived", 0, "disabled", 0));
}

static json_t *app_obj(struct forge_app *app)
{
  return forge_shape_app(json_pack(
      "{s:I, s:s, s:s, s:s, s:s, s:o, s:O, s:[s,s]}", "id", (json_int_t)app->id, "slug", app->slug,
      "client_id", app->client_id, "node_id", "A_forge", "name", app->name, "owner",
      user_obj(app->owner), "permissions", app->permissions, "events", "issues", "pull_request"));
}

static json_t *installation_obj(json_t *inst)
{
  struct forge_app *app = forge_app_by_id(json_integer_value(json_object_get(inst, "app_id")));
  char url[256];
  snprintf(url, sizeof url, "%s/app/installations/%lld/access_tokens", g_forge.base_url,
           (long long)json_integer_value(json_object_get(inst, "id")));
  return forge_shape_installation(json_pack(
      "{s:O, s:o, s:O, s:s, s:s+, s:O, s:s, s:s, s:O, s:[], s:s, s:n}", "id",
      json_object_get(inst, "id"), "account",
      user_obj(json_string_value(json_object_get(inst, "account"))), "repository_selection",
      json_object_get(inst, "repository_selection"), "access_tokens_url", url, "repositories_url",
      g_forge.base_url, "/installation/repositories", "app_id", json_object_get(inst, "app_id"),
      "app_slug", app ? app->slug : "", "target_type", "Organization", "permissions",
      json_object_get(inst, "permissions"), "events", "created_at", "2024-01-01T00:00:00Z",
      "suspended_at"));
}

/* installation_obj with the stored suspension (admin /installations/{id}/suspend). */
static json_t *installation_view(json_t *inst)
{
  json_t *o = installation_obj(inst);
  json_t *s = json_object_get(inst, "suspended_at");
  if (json_is_string(s))
    json_object_set(o, "suspended_at", s);
  return o;
}

static json_t *iso(long long t)
{
  char b[32];
  forge_iso8601(t, b);
  return json_string(b);
}

/* ---- request helpers ---- */

static bool method(struct ctx *c, const char *m)
{
  return !strcmp(c->rq->method, m);
}

/* Parse the JSON body; on failure answer 400 "Problems parsing JSON". An
 * empty body gives an empty object when allow_empty. */
static bool parse_body(struct ctx *c, bool allow_empty, const char *doc)
{
  if (c->rq->body_len == 0 && allow_empty) {
    c->body = json_object();
    return true;
  }
  json_error_t e;
  c->body = json_loadb(c->rq->body, c->rq->body_len, JSON_REJECT_DUPLICATES, &e);
  if (!json_is_object(c->body)) {
    json_decref(c->body);
    c->body = NULL;
    forge_resp_error(c->resp, 400, "Problems parsing JSON", doc);
    return false;
  }
  return true;
}

static void validation_failed(struct ctx *c, json_t *errors, const char *doc)
{
  forge_resp_json(c->resp, 422,
                  json_pack("{s:s, s:o, s:s, s:s}", "message", "Validation Failed", "errors",
                            errors, "documentation_url", doc, "status", "422"));
}

static void invalid_request(struct ctx *c, const char *detail, const char *doc)
{
  al_autofree char *m = al_strdup_printf("Invalid request.\n\n%s", detail);
  forge_resp_error(c->resp, 422, m, doc);
}

/* Require an app JWT. */
static bool need_jwt(struct ctx *c, const char *doc)
{
  if (c->au.kind == AUTH_JWT)
    return true;
  if (c->au.kind == AUTH_BAD)
    forge_resp_error(c->resp, 401, c->au.message, doc);
  else
    forge_resp_error(c->resp, 401, jwt_bad, doc);
  return false;
}

/* Authorize access to repo with permission perm at level (1 read, 2 write).
 * GitHub answers 404 for a repository the token cannot see, and 403
 * "Resource not accessible by integration" when it can see it but lacks the
 * permission. */
static bool authorize(struct ctx *c, json_t *repo, const char *perm, int level, const char *doc)
{
  if (c->au.kind == AUTH_BAD) {
    forge_resp_error(c->resp, 401, c->au.message, doc);
    return false;
  }
  if (!repo) {
    forge_resp_error(c->resp, 404, "Not Found", doc);
    return false;
  }
  if (c->au.kind == AUTH_NONE) {
    if (json_is_true(json_object_get(repo, "private"))) {
      forge_resp_error(c->resp, 404, "Not Found", doc);
      return false;
    }
    if (level > 1 || !strcmp(perm, "administration")) {
      forge_resp_error(c->resp, 401, "Requires authentication", doc);
      return false;
    }
    return true;
  }
  if (c->au.kind == AUTH_JWT) {
    forge_resp_error(c->resp, 403, not_accessible, doc);
    return false;
  }
  if (!forge_token_has_repo(c->au.token, json_string_value(json_object_get(repo, "full_name")))) {
    forge_resp_error(c->resp, 404, "Not Found", doc);
    return false;
  }
  json_t *perms = json_object_get(c->au.token, "permissions");
  int have = forge_perm_level(json_string_value(json_object_get(perms, perm)));
  if (!strcmp(perm, "metadata") && have < 1)
    have = 1;
  if (have < level) {
    forge_resp_error(c->resp, 403, not_accessible, doc);
    return false;
  }
  return true;
}

static bool has_perm(struct ctx *c, const char *perm, int level)
{
  if (c->au.kind != AUTH_TOKEN)
    return false;
  return forge_perm_level(json_string_value(
             json_object_get(json_object_get(c->au.token, "permissions"), perm))) >= level;
}

static const char *actor_login(struct ctx *c, char *buf, size_t n)
{
  snprintf(buf, n, "%s[bot]", c->au.app ? c->au.app->slug : "ghost");
  return buf;
}

static bool valid_ref_name(const char *s)
{
  if (!*s || strlen(s) > 255 || s[0] == '-' || strstr(s, "..") || strstr(s, "@{") || s[0] == '/')
    return false;
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x21 || strchr("~^:?*[\\\x7f", *p))
      return false;
  return true;
}

/* Tip sha of a branch, malloc'd, or NULL. */
static char *branch_sha(json_t *repo, const char *branch)
{
  if (!valid_ref_name(branch))
    return NULL;
  al_autofree char *ref = al_strdup_printf("refs/heads/%s^{commit}", branch);
  const char *argv[] = {"git", "rev-parse", "--verify", "-q", ref, NULL};
  char *out = NULL;
  if (forge_git_run(json_string_value(json_object_get(repo, "full_name")), argv, &out, NULL) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

static json_t *find_in(json_t *arr, const char *repo_full, const char *numkey, long long num)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (!strcasecmp(json_string_value(json_object_get(v, "repo")), repo_full) &&
        json_integer_value(json_object_get(v, numkey)) == num)
      return v;
  }
  return NULL;
}

static long long parse_num(const char *s)
{
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*end || v <= 0 || v > 1000000000)
    return -1;
  return v;
}

/* ---- apps ---- */

static void h_app(struct ctx *c)
{
  if (need_jwt(c, DOC_APPS "#get-the-authenticated-app"))
    forge_resp_json(c->resp, 200, app_obj(c->au.app));
}

static void h_app_installations(struct ctx *c)
{
  if (!need_jwt(c, DOC_APPS "#list-installations-for-the-authenticated-app"))
    return;
  json_t *a = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(g_forge.installations, i, v)
  {
    if (json_integer_value(json_object_get(v, "app_id")) == c->au.app->id)
      json_array_append_new(a, installation_obj(v));
  }
  forge_resp_json(c->resp, 200, a);
}

static json_t *own_installation(struct ctx *c, const char *idstr, const char *doc)
{
  long long id = parse_num(idstr);
  json_t *inst = id > 0 ? forge_installation(id) : NULL;
  if (!inst || json_integer_value(json_object_get(inst, "app_id")) != c->au.app->id) {
    forge_resp_error(c->resp, 404, "Not Found", doc);
    return NULL;
  }
  return inst;
}

static void h_installation(struct ctx *c, const char *id)
{
  if (!need_jwt(c, DOC_INST))
    return;
  json_t *inst = own_installation(c, id, DOC_INST);
  if (inst)
    forge_resp_json(c->resp, 200, installation_view(inst));
}

static void h_repo_installation(struct ctx *c, json_t *repo)
{
  if (!need_jwt(c, DOC_REPO_INST))
    return;
  json_t *inst = repo ? forge_installation_for_repo(
                            c->au.app, json_string_value(json_object_get(repo, "full_name")))
                      : NULL;
  if (!inst)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_REPO_INST);
  forge_resp_json(c->resp, 200, installation_view(inst));
}

static const char *const token_perm_names[] = {
    "actions",
    "administration",
    "checks",
    "contents",
    "deployments",
    "environments",
    "issues",
    "metadata",
    "packages",
    "pages",
    "pull_requests",
    "repository_hooks",
    "repository_projects",
    "secret_scanning_alerts",
    "secrets",
    "security_events",
    "statuses",
    "vulnerability_alerts",
    "workflows",
    "members",
    "organization_administration",
};

static bool json_list_contains_str(json_t *arr, const char *s)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (json_is_string(v) && !strcasecmp(json_string_value(v), s))
      return true;
  }
  return false;
}

/* POST /app/installations/{id}/access_tokens */
static void h_mint(struct ctx *c, const char *id)
{
  if (!need_jwt(c, DOC_MINT))
    return;
  json_t *inst = own_installation(c, id, DOC_MINT);
  if (!inst || !parse_body(c, true, DOC_MINT))
    return;
  if (json_is_string(json_object_get(inst, "suspended_at")))
    return forge_resp_error(c->resp, 403, "This installation has been suspended", DOC_MINT);
  json_t *want_names = json_object_get(c->body, "repositories");
  json_t *want_ids = json_object_get(c->body, "repository_ids");
  json_t *want_perms = json_object_get(c->body, "permissions");
  if (want_names && !json_is_array(want_names))
    return invalid_request(c, "For 'properties/repositories', it is not an array.", DOC_MINT);
  if (want_ids && !json_is_array(want_ids))
    return invalid_request(c, "For 'properties/repository_ids', it is not an array.", DOC_MINT);
  if (want_perms && !json_is_object(want_perms))
    return invalid_request(c, "For 'properties/permissions', it is not an object.", DOC_MINT);
  if (json_array_size(want_names) + json_array_size(want_ids) > 500)
    return forge_resp_error(c->resp, 422, "Too many repositories; the maximum is 500.", DOC_MINT);

  json_t *inst_repos = json_object_get(inst, "repositories");
  const char *account = json_string_value(json_object_get(inst, "account"));
  json_t *repos = json_array();
  bool scoped = json_array_size(want_names) + json_array_size(want_ids) > 0;
  size_t i, j;
  json_t *v, *ir;
  const char *repo_err = "There is at least one repository that does not exist or is not "
                         "accessible to the parent installation.";
  json_array_foreach(want_names, i, v)
  {
    if (!json_is_string(v)) {
      json_decref(repos);
      return invalid_request(c, "For 'items', it is not a string.", DOC_MINT);
    }
    const char *nm = json_string_value(v);
    al_autofree char *full =
        strchr(nm, '/') ? al_xstrdup(nm) : al_strdup_printf("%s/%s", account, nm);
    bool found = false;
    json_array_foreach(inst_repos, j, ir)
    {
      if (!strcasecmp(json_string_value(ir), full)) {
        found = true;
        if (!json_list_contains_str(repos, json_string_value(ir)))
          json_array_append(repos, ir);
      }
    }
    if (!found) {
      json_decref(repos);
      return forge_resp_error(c->resp, 422, repo_err, DOC_MINT);
    }
  }
  json_array_foreach(want_ids, i, v)
  {
    if (!json_is_integer(v)) {
      json_decref(repos);
      return invalid_request(c, "For 'items', it is not an integer.", DOC_MINT);
    }
    bool found = false;
    json_array_foreach(inst_repos, j, ir)
    {
      const char *fn = json_string_value(ir);
      const char *sl = strchr(fn, '/');
      al_autofree char *own = al_strdup_printf("%.*s", (int)(sl - fn), fn);
      json_t *r = forge_repo(own, sl + 1);
      if (r && json_integer_value(json_object_get(r, "id")) == json_integer_value(v)) {
        found = true;
        if (!json_list_contains_str(repos, fn))
          json_array_append(repos, ir);
      }
    }
    if (!found) {
      json_decref(repos);
      return forge_resp_error(c->resp, 422, repo_err, DOC_MINT);
    }
  }
  if (!scoped)
    json_array_extend(repos, inst_repos);

  json_t *inst_perms = json_object_get(inst, "permissions");
  json_t *perms;
  if (want_perms) {
    perms = json_object();
    const char *k;
    json_object_foreach(want_perms, k, v)
    {
      bool known = false;
      for (size_t p = 0; p < AL_ARRAY_SIZE(token_perm_names); p++)
        known |= !strcmp(token_perm_names[p], k);
      int lvl = json_is_string(v) ? forge_perm_level(json_string_value(v)) : 0;
      int granted = forge_perm_level(json_string_value(json_object_get(inst_perms, k)));
      if (!strcmp(k, "metadata") && granted < 1)
        granted = 1;
      if (!known || lvl == 0 || lvl > granted) {
        json_decref(perms);
        json_decref(repos);
        return forge_resp_error(c->resp, 422,
                                "The permissions requested are not granted to this installation.",
                                DOC_MINT);
      }
      json_object_set(perms, k, v);
    }
  } else {
    perms = json_deep_copy(inst_perms);
  }
  if (!json_object_get(perms, "metadata"))
    json_object_set_new(perms, "metadata", json_string("read"));

  char value[1024];
  if (forge_behave_token_value(value, sizeof value) < 0) {
    json_decref(perms);
    json_decref(repos);
    return forge_resp_error(c->resp, 500, "Server Error", DOC_MINT);
  }
  char hex[65];
  al_sha256_hex(value, strlen(value), hex);
  long long now = forge_now();
  json_t *tok = json_pack("{s:I, s:s, s:I, s:O, s:O, s:O, s:s, s:I, s:I, s:I}", "id",
                          (json_int_t)g_forge.next_id++, "sha256", hex, "app_id",
                          (json_int_t)c->au.app->id, "installation_id", json_object_get(inst, "id"),
                          "permissions", perms, "repositories", repos, "repository_selection",
                          scoped ? "selected"
                                 : json_string_value(json_object_get(inst, "repository_selection")),
                          "created_at", (json_int_t)now, "expires_at",
                          (json_int_t)(now + FORGE_TOKEN_TTL_S), "revoked_at", (json_int_t)0);
  json_array_append_new(g_forge.tokens, tok);

  json_t *out = json_pack("{s:s, s:o, s:O, s:O}", "token", value, "expires_at",
                          iso(now + FORGE_TOKEN_TTL_S), "permissions", perms,
                          "repository_selection", json_object_get(tok, "repository_selection"));
  if (scoped) {
    json_t *ra = json_array();
    json_array_foreach(repos, i, v)
    {
      const char *fn = json_string_value(v);
      const char *sl = strchr(fn, '/');
      al_autofree char *own = al_strdup_printf("%.*s", (int)(sl - fn), fn);
      json_array_append_new(ra, repo_obj(forge_repo(own, sl + 1)));
    }
    json_object_set_new(out, "repositories", ra);
  }
  forge_resp_json(c->resp, 201, out);
  OPENSSL_cleanse(value, sizeof value);
  json_decref(perms);
  json_decref(repos);
}

static void h_revoke(struct ctx *c)
{
  if (c->au.kind != AUTH_TOKEN)
    return forge_resp_error(c->resp, 401,
                            c->au.kind == AUTH_BAD ? c->au.message : "Bad credentials", DOC_REVOKE);
  if (!json_object_get(c->au.token, "revoke_effective_ms"))
    json_object_set_new(c->au.token, "revoke_effective_ms",
                        json_integer(forge_mono_ms() + forge_behave_revoke_delay_ms()));
  json_object_set_new(c->au.token, "revoked_at", json_integer(forge_now()));
  c->resp->status = 204;
  c->resp->content_type = NULL;
}

static void h_installation_repos(struct ctx *c)
{
  if (c->au.kind != AUTH_TOKEN)
    return forge_resp_error(c->resp, c->au.kind == AUTH_JWT ? 403 : 401,
                            c->au.kind == AUTH_BAD ? c->au.message : "Bad credentials",
                            DOC_INST_REPOS);
  json_t *ra = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(c->au.token, "repositories"), i, v)
  {
    const char *fn = json_string_value(v);
    const char *sl = strchr(fn, '/');
    al_autofree char *own = al_strdup_printf("%.*s", (int)(sl - fn), fn);
    json_t *r = forge_repo(own, sl + 1);
    if (r)
      json_array_append_new(ra, repo_obj(r));
  }
  forge_resp_json(c->resp, 200,
                  json_pack("{s:I, s:O, s:o}", "total_count", (json_int_t)json_array_size(ra),
                            "repository_selection",
                            json_object_get(c->au.token, "repository_selection"), "repositories",
                            ra));
}

/* ---- repository, branches, contents ---- */

static const char *repo_full(json_t *repo)
{
  return json_string_value(json_object_get(repo, "full_name"));
}

static void h_repo(struct ctx *c, json_t *repo)
{
  if (!authorize(c, repo, "metadata", 1, DOC_REPOS))
    return;
  json_t *o = repo_obj(repo);
  json_object_set_new(o, "permissions",
                      json_pack("{s:b, s:b, s:b, s:b, s:b}", "admin",
                                has_perm(c, "administration", 2), "maintain", 0, "push",
                                has_perm(c, "contents", 2), "triage", 0, "pull", 1));
  forge_resp_json(c->resp, 200, o);
}

/* The repository as the push hook sees it: classic protection and every
 * ruleset in force (organisation rulesets included, rulesets.h). */
static json_t *rules_view(json_t *repo)
{
  return json_pack("{s:O, s:o, s:O}", "protection", json_object_get(repo, "protection"), "rulesets",
                   forge_rulesets_of(repo), "default_branch",
                   json_object_get(repo, "default_branch"));
}

static bool branch_protected_any(json_t *repo, const char *branch)
{
  json_t *view = rules_view(repo);
  json_t *r = forge_branch_rules(view, branch, NULL);
  json_decref(view);
  bool p =
      json_is_true(json_object_get(r, "classic")) || json_is_true(json_object_get(r, "ruleset"));
  json_decref(r);
  return p;
}

/* A deletion through the REST API, in the push log as the hook writes one
 * (new = 40 zeros, "via": "rest"). */
static void forge_log_ref_delete(const char *repo, const char *ref, const char *old, json_t *tok)
{
  if (!g_forge.push_log)
    return;
  char ts[32], fp[32] = "";
  forge_iso8601((long long)time(NULL), ts);
  if (tok)
    snprintf(fp, sizeof fp, "sha256:%.12s", json_string_value(json_object_get(tok, "sha256")));
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:n, s:s, s:s}", "repo", repo, "token", fp,
                        "ref", ref, "old", old, "new", "0000000000000000000000000000000000000000",
                        "accepted", 1, "reason", "via", "rest", "time", ts);
  char *line = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  FILE *f = line ? fopen(g_forge.push_log, "ae") : NULL;
  if (f) {
    fprintf(f, "%s\n", line);
    fclose(f);
  }
  free(line);
}

#define DOC_DELREF "https://docs.github.com/rest/git/refs#delete-a-reference"
/* DELETE /repos/{o}/{r}/git/refs/heads/{branch}: "Delete a reference"
 * (contents: write; 204; 422 "Reference does not exist"); a protected
 * branch is refused 422 as GitHub does. Logged in /pushes as a deletion
 * (new = 40 zeros) through the REST API. */
static void h_delete_branch_ref(struct ctx *c, json_t *repo, const char *branch)
{
  if (!authorize(c, repo, "contents", 2, DOC_DELREF))
    return;
  al_autofree char *sha = branch_sha(repo, branch);
  if (!sha)
    return forge_resp_error(c->resp, 422, "Reference does not exist", DOC_DELREF);
  if (branch_protected_any(repo, branch))
    return forge_resp_error(c->resp, 422, "Cannot delete this protected branch", DOC_DELREF);
  al_autofree char *ref = al_strdup_printf("refs/heads/%s", branch);
  const char *argv[] = {"git", "update-ref", "-d", ref, sha, NULL};
  char *out = NULL;
  int rc = forge_git_run(repo_full(repo), argv, &out, NULL);
  free(out);
  if (rc != 0)
    return forge_resp_error(c->resp, 500, "git update-ref -d failed", DOC_DELREF);
  forge_log_ref_delete(repo_full(repo), ref, sha, c->au.token);
  c->resp->status = 204;
  c->resp->content_type = NULL;
}

static void h_branch(struct ctx *c, json_t *repo, const char *branch)
{
  if (!authorize(c, repo, "metadata", 1, DOC_BRANCH))
    return;
  al_autofree char *sha = branch_sha(repo, branch);
  if (!sha)
    return forge_resp_error(c->resp, 404, "Branch not found", DOC_BRANCH);
  al_autofree char *purl = al_strdup_printf("%s/repos/%s/branches/%s/protection", g_forge.base_url,
                                            repo_full(repo), branch);
  al_autofree char *self =
      al_strdup_printf("%s/repos/%s/branches/%s", g_forge.base_url, repo_full(repo), branch);
  al_autofree char *html =
      al_strdup_printf("%s/%s/tree/%s", g_forge.git_base_url, repo_full(repo), branch);
  al_autofree char *curl =
      al_strdup_printf("%s/repos/%s/commits/%s", g_forge.base_url, repo_full(repo), sha);
  bool prot = branch_protected_any(repo, branch);
  /* branch-with-protection: commit is a full commit object on GitHub; the
   * forge gives its sha and url (see README "Not emulated"). */
  forge_resp_json(c->resp, 200,
                  json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s+, s:{s:s, s:n, s:n, s:s, s:I, "
                            "s:{s:s, s:s}}, s:n, s:n, s:[]}, s:b, s:s, s:{s:s, s:s}, s:{s:b, "
                            "s:{s:s, s:[], s:[]}}}",
                            "name", branch, "commit", "sha", sha, "url", curl, "node_id", "C_forge",
                            "html_url", html, "comments_url", curl, "/comments", "commit", "url",
                            curl, "author", "committer", "message", "", "comment_count",
                            (json_int_t)0, "tree", "sha", sha, "url", curl, "author", "committer",
                            "parents", "protected", prot, "protection_url", purl, "_links", "self",
                            self, "html", html, "protection", "enabled", prot,
                            "required_status_checks", "enforcement_level",
                            prot ? "non_admins" : "off", "contexts", "checks"));
}

static char *b64_lines(const unsigned char *data, size_t len)
{
  size_t enc_len = 4 * ((len + 2) / 3);
  char *enc = al_xmalloc(enc_len + 1);
  EVP_EncodeBlock((unsigned char *)enc, data, (int)len);
  char *out = al_xmalloc(enc_len + enc_len / 60 + 2);
  size_t o = 0;
  for (size_t i = 0; i < enc_len; i++) {
    out[o++] = enc[i];
    if ((i + 1) % 60 == 0)
      out[o++] = '\n';
  }
  if (o == 0 || out[o - 1] != '\n')
    out[o++] = '\n';
  out[o] = '\0';
  free(enc);
  return out;
}

static bool valid_content_path(const char *p)
{
  if (strlen(p) > 4096 || strstr(p, "..") || strchr(p, ':') || p[0] == '-')
    return false;
  for (const char *q = p; *q; q++)
    if ((unsigned char)*q < 0x20)
      return false;
  return true;
}

/* Read blob ref:path; returns malloc'd data or NULL. */
static char *read_blob(json_t *repo, const char *ref, const char *path, size_t *len)
{
  al_autofree char *spec = al_strdup_printf("%s:%s", ref, path);
  const char *argv[] = {"git", "cat-file", "blob", spec, NULL};
  char *out = NULL;
  /* forge_git_run strips trailing newlines; use the raw length via a second
   * call through cat-file -s so the bytes are exact. */
  const char *sz[] = {"git", "cat-file", "-s", spec, NULL};
  char *size_s = NULL;
  if (forge_git_run(repo_full(repo), sz, &size_s, NULL) != 0) {
    free(size_s);
    return NULL;
  }
  size_t want = (size_t)strtoull(size_s, NULL, 10);
  free(size_s);
  if (want > (1u << 20))
    return NULL;
  size_t got = 0;
  if (forge_git_run(repo_full(repo), argv, &out, &got) != 0 || got != want) {
    free(out);
    return NULL;
  }
  *len = got;
  return out;
}

static void h_contents(struct ctx *c, json_t *repo, const char *path)
{
  if (!authorize(c, repo, "contents", 1, DOC_CONTENTS))
    return;
  al_autofree char *ref = forge_query_param(c->rq->query, "ref");
  const char *r = ref ? ref : json_string_value(json_object_get(repo, "default_branch"));
  if (!valid_content_path(path) || !valid_ref_name(r))
    return forge_resp_error(c->resp, 404, "Not Found", DOC_CONTENTS);
  al_autofree char *spec = al_strdup_printf("%s:%s", r, path);
  const char *typ[] = {"git", "cat-file", "-t", spec, NULL};
  const char *sha[] = {"git", "rev-parse", "--verify", "-q", spec, NULL};
  al_autofree char *type = NULL;
  al_autofree char *oid = NULL;
  if (forge_git_run(repo_full(repo), typ, &type, NULL) != 0 ||
      forge_git_run(repo_full(repo), sha, &oid, NULL) != 0)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_CONTENTS);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (!strcmp(type, "blob")) {
    size_t len = 0;
    al_autofree char *data = read_blob(repo, r, path, &len);
    if (!data)
      return forge_resp_error(c->resp, 403, "This API returns blobs up to 1 MB in size.",
                              DOC_CONTENTS);
    al_autofree char *b64 = b64_lines((unsigned char *)data, len);
    forge_resp_json(c->resp, 200,
                    json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s+++, s:s++++, s:s+++++, s:n, "
                              "s:{s:s+++, s:s+++, s:s++++}}",
                              "type", "file", "encoding", "base64", "name", base, "path", path,
                              "sha", oid, "size", (json_int_t)len, "content", b64, "url",
                              g_forge.base_url, "/repos/", repo_full(repo), "/contents", "git_url",
                              g_forge.base_url, "/repos/", repo_full(repo), "/git/blobs/", oid,
                              "html_url", g_forge.git_base_url, "/", repo_full(repo), "/blob/", r,
                              "/", "download_url", "_links", "self", g_forge.base_url, "/repos/",
                              repo_full(repo), "/contents", "git", g_forge.base_url, "/repos/",
                              repo_full(repo), "/git", "html", g_forge.git_base_url, "/",
                              repo_full(repo), "/blob/", r));
    return;
  }
  if (strcmp(type, "tree") != 0)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_CONTENTS);
  const char *ls[] = {"git", "ls-tree", "-l", spec, NULL};
  al_autofree char *out = NULL;
  if (forge_git_run(repo_full(repo), ls, &out, NULL) != 0)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_CONTENTS);
  json_t *arr = json_array();
  char *save = NULL;
  for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char mode[16], otype[16], o[80], size[32];
    int consumed = 0;
    if (sscanf(l, "%15s %15s %79s %31s%n", mode, otype, o, size, &consumed) != 4)
      continue;
    const char *name = strchr(l, '\t');
    if (!name)
      continue;
    name++;
    al_autofree char *p = path[0] ? al_strdup_printf("%s/%s", path, name) : al_xstrdup(name);
    bool dir = !strcmp(otype, "tree");
    /* content-directory items: the hypermedia links GitHub's schema requires */
    al_autofree char *self =
        al_strdup_printf("%s/repos/%s/contents/%s?ref=%s", g_forge.base_url, repo_full(repo), p, r);
    al_autofree char *git = al_strdup_printf("%s/repos/%s/git/%s/%s", g_forge.base_url,
                                             repo_full(repo), dir ? "trees" : "blobs", o);
    al_autofree char *html = al_strdup_printf("%s/%s/%s/%s/%s", g_forge.git_base_url,
                                              repo_full(repo), dir ? "tree" : "blob", r, p);
    al_autofree char *dl =
        dir ? NULL
            : al_strdup_printf("%s/%s/raw/%s/%s", g_forge.git_base_url, repo_full(repo), r, p);
    json_array_append_new(
        arr, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s?, s:{s:s, s:s, s:s}}", "type",
                       dir ? "dir" : "file", "name", name, "path", p, "sha", o, "size",
                       (json_int_t)(dir ? 0 : strtoll(size, NULL, 10)), "url", self, "git_url", git,
                       "html_url", html, "download_url", dl, "_links", "self", self, "git", git,
                       "html", html));
  }
  forge_resp_json(c->resp, 200, arr);
}

/* ---- branch protection (classic) ---- */

static json_t *enabled(json_t *prot, const char *k)
{
  return json_pack("{s:b}", "enabled", json_is_true(json_object_get(prot, k)));
}

static json_t *names_to_users(json_t *arr)
{
  json_t *out = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (json_is_string(v))
      json_array_append_new(out, user_obj(json_string_value(v)));
  }
  return out;
}

static json_t *names_to_apps(json_t *arr)
{
  json_t *out = json_array();
  size_t i, k;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    for (k = 0; k < g_forge.n_apps; k++)
      if (json_is_string(v) && !strcmp(g_forge.apps[k].slug, json_string_value(v)))
        json_array_append_new(out, app_obj(&g_forge.apps[k]));
  }
  return out;
}

static json_t *names_to_teams(json_t *arr)
{
  json_t *out = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (json_is_string(v))
      json_array_append_new(
          out, json_pack("{s:s, s:s}", "slug", json_string_value(v), "name", json_string_value(v)));
  }
  return out;
}

/* Render stored PUT-form protection in the GET response shape. */
static json_t *protection_obj(json_t *repo, const char *branch, json_t *prot)
{
  al_autofree char *url = al_strdup_printf("%s/repos/%s/branches/%s/protection", g_forge.base_url,
                                           repo_full(repo), branch);
  json_t *o = json_pack("{s:s}", "url", url);
  json_t *rsc = json_object_get(prot, "required_status_checks");
  if (json_is_object(rsc))
    json_object_set_new(
        o, "required_status_checks",
        json_pack(
            "{s:b, s:O, s:[]}", "strict", json_is_true(json_object_get(rsc, "strict")), "contexts",
            json_object_get(rsc, "contexts") ? json_object_get(rsc, "contexts") : json_array(),
            "checks"));
  json_t *rpr = json_object_get(prot, "required_pull_request_reviews");
  if (json_is_object(rpr)) {
    json_t *bpa = json_object_get(rpr, "bypass_pull_request_allowances");
    json_object_set_new(
        o, "required_pull_request_reviews",
        json_pack("{s:b, s:b, s:I, s:b, s:{s:o, s:o, s:o}}", "dismiss_stale_reviews",
                  json_is_true(json_object_get(rpr, "dismiss_stale_reviews")),
                  "require_code_owner_reviews",
                  json_is_true(json_object_get(rpr, "require_code_owner_reviews")),
                  "required_approving_review_count",
                  json_integer_value(json_object_get(rpr, "required_approving_review_count")),
                  "require_last_push_approval",
                  json_is_true(json_object_get(rpr, "require_last_push_approval")),
                  "bypass_pull_request_allowances", "users",
                  names_to_users(json_object_get(bpa, "users")), "teams",
                  names_to_teams(json_object_get(bpa, "teams")), "apps",
                  names_to_apps(json_object_get(bpa, "apps"))));
  }
  json_t *restr = json_object_get(prot, "restrictions");
  if (json_is_object(restr))
    json_object_set_new(o, "restrictions",
                        json_pack("{s:o, s:o, s:o}", "users",
                                  names_to_users(json_object_get(restr, "users")), "teams",
                                  names_to_teams(json_object_get(restr, "teams")), "apps",
                                  names_to_apps(json_object_get(restr, "apps"))));
  json_object_set_new(o, "required_signatures",
                      json_pack("{s:s+++++, s:b}", "url", g_forge.base_url, "/repos/",
                                repo_full(repo), "/branches/", branch,
                                "/protection/required_signatures", "enabled",
                                json_is_true(json_object_get(prot, "required_signatures"))));
  json_object_set_new(o, "enforce_admins", enabled(prot, "enforce_admins"));
  {
    al_autofree char *eu = al_strdup_printf("%s/repos/%s/branches/%s/protection/enforce_admins",
                                            g_forge.base_url, repo_full(repo), branch);
    json_object_set_new(json_object_get(o, "enforce_admins"), "url", json_string(eu));
  }
  json_object_set_new(o, "required_linear_history", enabled(prot, "required_linear_history"));
  json_object_set_new(o, "allow_force_pushes", enabled(prot, "allow_force_pushes"));
  json_object_set_new(o, "allow_deletions", enabled(prot, "allow_deletions"));
  json_object_set_new(o, "block_creations", enabled(prot, "block_creations"));
  json_object_set_new(o, "required_conversation_resolution",
                      enabled(prot, "required_conversation_resolution"));
  json_object_set_new(o, "lock_branch", enabled(prot, "lock_branch"));
  json_object_set_new(o, "allow_fork_syncing", enabled(prot, "allow_fork_syncing"));
  return o;
}

static bool is_bool_or_null(json_t *v)
{
  return !v || json_is_boolean(v) || json_is_null(v);
}

static bool string_array_or_absent(json_t *v)
{
  if (!v)
    return true;
  if (!json_is_array(v))
    return false;
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e)
  {
    if (!json_is_string(e))
      return false;
  }
  return true;
}

static void h_protection(struct ctx *c, json_t *repo, const char *branch)
{
  const char *doc =
      method(c, "PUT") ? DOC_PROT "#update-branch-protection" : DOC_PROT "#get-branch-protection";
  if (!authorize(c, repo, "administration", method(c, "PUT") ? 2 : 1, doc))
    return;
  al_autofree char *sha = branch_sha(repo, branch);
  if (!sha)
    return forge_resp_error(c->resp, 404, "Branch not found", doc);
  json_t *all = json_object_get(repo, "protection");
  if (method(c, "GET")) {
    json_t *prot = forge_classic_for(repo, branch); /* exact name, else a pattern: as on push */
    /* GitHub quirk: a branch protected only by a ruleset is "not protected"
     * on the classic endpoint. */
    if (!json_is_object(prot))
      return forge_resp_error(c->resp, 404, "Branch not protected", doc);
    return forge_resp_json(c->resp, 200, protection_obj(repo, branch, prot));
  }
  if (method(c, "DELETE")) {
    if (!json_object_get(all, branch))
      return forge_resp_error(c->resp, 404, "Branch not protected", doc);
    json_object_del(all, branch);
    c->resp->status = 204;
    c->resp->content_type = NULL;
    return;
  }
  if (!method(c, "PUT"))
    return forge_resp_error(c->resp, 404, "Not Found", doc);
  if (!parse_body(c, false, doc))
    return;
  static const char *const required[] = {"required_status_checks", "enforce_admins",
                                         "required_pull_request_reviews", "restrictions"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(required); i++) {
    if (!json_object_get(c->body, required[i])) {
      al_autofree char *m = al_strdup_printf("\"%s\" wasn't supplied.", required[i]);
      return invalid_request(c, m, doc);
    }
  }
  json_t *rpr = json_object_get(c->body, "required_pull_request_reviews");
  json_t *restr = json_object_get(c->body, "restrictions");
  json_t *rsc = json_object_get(c->body, "required_status_checks");
  if (!json_is_null(rsc) && !json_is_object(rsc))
    return invalid_request(
        c, "For 'properties/required_status_checks', it is not an object or null.", doc);
  if (!json_is_null(rpr)) {
    if (!json_is_object(rpr))
      return invalid_request(
          c, "For 'properties/required_pull_request_reviews', it is not an object or null.", doc);
    json_t *n = json_object_get(rpr, "required_approving_review_count");
    if (n && (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 6))
      return invalid_request(
          c, "For 'properties/required_approving_review_count', it is not an integer in 0..6.",
          doc);
    json_t *bpa = json_object_get(rpr, "bypass_pull_request_allowances");
    if (bpa && (!json_is_object(bpa) || !string_array_or_absent(json_object_get(bpa, "users")) ||
                !string_array_or_absent(json_object_get(bpa, "teams")) ||
                !string_array_or_absent(json_object_get(bpa, "apps"))))
      return invalid_request(c, "For 'properties/bypass_pull_request_allowances', it is not valid.",
                             doc);
  }
  if (!json_is_null(restr) &&
      (!json_is_object(restr) || !json_is_array(json_object_get(restr, "users")) ||
       !json_is_array(json_object_get(restr, "teams")) ||
       !string_array_or_absent(json_object_get(restr, "users")) ||
       !string_array_or_absent(json_object_get(restr, "teams")) ||
       !string_array_or_absent(json_object_get(restr, "apps"))))
    return invalid_request(
        c, "For 'properties/restrictions', \"users\" and \"teams\" must be arrays of strings.",
        doc);
  static const char *const bools[] = {"enforce_admins",     "required_linear_history",
                                      "allow_force_pushes", "allow_deletions",
                                      "block_creations",    "required_conversation_resolution",
                                      "lock_branch",        "allow_fork_syncing"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(bools); i++) {
    if (!is_bool_or_null(json_object_get(c->body, bools[i]))) {
      al_autofree char *m = al_strdup_printf("For 'properties/%s', it is not a boolean.", bools[i]);
      return invalid_request(c, m, doc);
    }
  }
  json_object_set(all, branch, c->body);
  forge_resp_json(c->resp, 200, protection_obj(repo, branch, c->body));
}

/* ---- rulesets ---- */

static json_t *ruleset_summary(json_t *repo, json_t *rs)
{
  al_autofree char *href =
      al_strdup_printf("%s/repos/%s/rulesets/%lld", g_forge.base_url, repo_full(repo),
                       (long long)json_integer_value(json_object_get(rs, "id")));
  const char *target = json_string_value(json_object_get(rs, "target"));
  const char *enf = json_string_value(json_object_get(rs, "enforcement"));
  const char *st = json_string_value(json_object_get(rs, "source_type"));
  const char *src = json_string_value(json_object_get(rs, "source"));
  return json_pack("{s:O, s:O, s:s, s:s, s:s, s:s, s:s, s:{s:{s:s}}, s:s, s:s}", "id",
                   json_object_get(rs, "id"), "name", json_object_get(rs, "name"), "target",
                   target ? target : "branch", "source_type", st ? st : "Repository", "source",
                   src ? src : repo_full(repo), "enforcement", enf ? enf : "active", "node_id",
                   "RRS_forge", "_links", "self", "href", href, "created_at",
                   "2024-01-01T00:00:00Z", "updated_at", "2024-01-01T00:00:00Z");
}

/* GET /repos/{o}/{r}/rulesets[/{id}] ("Get all repository rulesets", "Get
 * a repository ruleset"): organisation rulesets too unless
 * includes_parents=false; current_user_can_bypass for the caller's App;
 * bypass_actors only for a caller who can edit the ruleset. */
static void h_rulesets(struct ctx *c, json_t *repo, const char *id)
{
  const char *doc = DOC_RULES "#get-all-repository-rulesets";
  if (!authorize(c, repo, "metadata", 1, doc))
    return;
  al_autofree char *ip = forge_query_param(c->rq->query, "includes_parents");
  bool parents = !ip || strcmp(ip, "false") != 0;
  json_t *all = forge_rulesets_of(repo);
  size_t i;
  json_t *rs;
  if (!id) {
    json_t *arr = json_array();
    json_array_foreach(all, i, rs)
    {
      const char *st = json_string_value(json_object_get(rs, "source_type"));
      if (parents || !st || strcmp(st, "Organization") != 0)
        json_array_append_new(arr, ruleset_summary(repo, rs));
    }
    json_decref(all);
    return forge_resp_json(c->resp, 200, arr);
  }
  long long want = parse_num(id);
  json_array_foreach(all, i, rs)
  {
    if (json_integer_value(json_object_get(rs, "id")) != want)
      continue;
    json_t *o = ruleset_summary(repo, rs);
    json_object_set(o, "conditions",
                    json_object_get(rs, "conditions") ? json_object_get(rs, "conditions")
                                                      : json_object());
    json_object_set(o, "rules", json_object_get(rs, "rules"));
    json_object_set_new(o, "current_user_can_bypass",
                        json_string(forge_ruleset_bypass(rs, c->au.app)));
    if (forge_ruleset_actors_visible(rs, &c->au))
      json_object_set(o, "bypass_actors",
                      json_object_get(rs, "bypass_actors") ? json_object_get(rs, "bypass_actors")
                                                           : json_array());
    json_decref(all);
    return forge_resp_json(c->resp, 200, o);
  }
  json_decref(all);
  forge_resp_error(c->resp, 404, "Not Found", DOC_RULES "#get-a-repository-ruleset");
}

/* GET /repos/{o}/{r}/rules/branches/{branch}: the active rules from every
 * ruleset in force, organisation rulesets included (classic protection is
 * not included, as on GitHub). */
static void h_rules_for_branch(struct ctx *c, json_t *repo, const char *branch)
{
  const char *doc = DOC_RULES "#get-rules-for-a-branch";
  if (!authorize(c, repo, "metadata", 1, doc))
    return;
  json_t *arr = json_array();
  const char *defb = json_string_value(json_object_get(repo, "default_branch"));
  json_t *all = forge_rulesets_of(repo);
  size_t i, j;
  json_t *rs, *rule;
  json_array_foreach(all, i, rs)
  {
    if (!forge_ruleset_applies(rs, "branch", branch, defb))
      continue;
    json_array_foreach(json_object_get(rs, "rules"), j, rule)
    {
      json_t *o = json_deep_copy(rule);
      json_object_set(o, "ruleset_source_type", json_object_get(rs, "source_type"));
      json_object_set(o, "ruleset_source", json_object_get(rs, "source"));
      json_object_set(o, "ruleset_id", json_object_get(rs, "id"));
      json_array_append_new(arr, o);
    }
  }
  json_decref(all);
  forge_resp_json(c->resp, 200, arr);
}

/* ---- issues and comments ---- */

static json_t *labels_obj(json_t *labels)
{
  json_t *a = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(labels, i, v)
  {
    if (json_is_string(v))
      json_array_append_new(a, json_pack("{s:O, s:s}", "name", v, "color", "ededed"));
  }
  return a;
}

static long long count_comments(const char *full, long long number)
{
  long long n = 0;
  size_t i;
  json_t *v;
  json_array_foreach(g_forge.comments, i, v)
  {
    if (!strcasecmp(json_string_value(json_object_get(v, "repo")), full) &&
        json_integer_value(json_object_get(v, "issue_number")) == number)
      n++;
  }
  return n;
}

static json_t *issue_obj(json_t *repo, json_t *is, bool is_pull)
{
  long long num = json_integer_value(json_object_get(is, "number"));
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/issues/%lld", g_forge.base_url, repo_full(repo), num);
  al_autofree char *html = al_strdup_printf("%s/%s/%s/%lld", g_forge.git_base_url, repo_full(repo),
                                            is_pull ? "pull" : "issues", num);
  json_t *created = json_object_get(is, "created_at");
  json_t *o = json_pack(
      "{s:O, s:s, s:s, s:s++, s:s, s:I, s:O, s:O, s:o, s:o, s:O, s:b, s:[], s:I, s:O, s:O, s:n, "
      "s:s}",
      "id", json_object_get(is, "id"), "node_id", "I_forge", "url", url, "repository_url",
      g_forge.base_url, "/repos/", repo_full(repo), "html_url", html, "number", (json_int_t)num,
      "title", json_object_get(is, "title"), "body",
      json_object_get(is, "body") ? json_object_get(is, "body") : json_null(), "user",
      user_obj(json_string_value(json_object_get(is, "user"))), "labels",
      labels_obj(json_object_get(is, "labels")), "state", json_object_get(is, "state"), "locked", 0,
      "assignees", "comments", (json_int_t)count_comments(repo_full(repo), num), "created_at",
      created ? created : json_string("2024-01-01T00:00:00Z"), "updated_at",
      created ? created : json_string("2024-01-01T00:00:00Z"), "closed_at", "author_association",
      "NONE");
  if (is_pull) {
    al_autofree char *purl =
        al_strdup_printf("%s/repos/%s/pulls/%lld", g_forge.base_url, repo_full(repo), num);
    json_object_set_new(o, "pull_request", json_pack("{s:s}", "url", purl));
  }
  return forge_shape_issue(o, repo_full(repo));
}

static void h_issue(struct ctx *c, json_t *repo, long long num)
{
  json_t *is = find_in(g_forge.issues, repo ? repo_full(repo) : "", "number", num);
  json_t *pr = find_in(g_forge.pulls, repo ? repo_full(repo) : "", "number", num);
  if (!authorize(c, repo, pr ? "pull_requests" : "issues", 1, DOC_ISSUE))
    return;
  if (!is && !pr)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_ISSUE);
  forge_resp_json(c->resp, 200, issue_obj(repo, is ? is : pr, pr != NULL));
}

static json_t *comment_obj(json_t *repo, json_t *cm)
{
  long long id = json_integer_value(json_object_get(cm, "id"));
  long long num = json_integer_value(json_object_get(cm, "issue_number"));
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/issues/comments/%lld", g_forge.base_url, repo_full(repo), id);
  al_autofree char *iurl =
      al_strdup_printf("%s/repos/%s/issues/%lld", g_forge.base_url, repo_full(repo), num);
  al_autofree char *html = al_strdup_printf("%s/%s/issues/%lld#issuecomment-%lld",
                                            g_forge.git_base_url, repo_full(repo), num, id);
  return json_pack("{s:I, s:s, s:s, s:s, s:s, s:O, s:o, s:O, s:O, s:s}", "id", (json_int_t)id,
                   "node_id", "IC_forge", "url", url, "html_url", html, "issue_url", iurl, "body",
                   json_object_get(cm, "body"), "user",
                   user_obj(json_string_value(json_object_get(cm, "user"))), "created_at",
                   json_object_get(cm, "created_at"), "updated_at",
                   json_object_get(cm, "created_at"), "author_association", "NONE");
}

static void h_comments(struct ctx *c, json_t *repo, long long num)
{
  const char *doc = method(c, "POST") ? DOC_COMMENTS "#create-an-issue-comment"
                                      : DOC_COMMENTS "#list-issue-comments";
  json_t *is = find_in(g_forge.issues, repo ? repo_full(repo) : "", "number", num);
  json_t *pr = find_in(g_forge.pulls, repo ? repo_full(repo) : "", "number", num);
  if (!authorize(c, repo, pr ? "pull_requests" : "issues", method(c, "POST") ? 2 : 1, doc))
    return;
  if (!is && !pr)
    return forge_resp_error(c->resp, 404, "Not Found", doc);
  if (method(c, "GET")) {
    json_t *arr = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(g_forge.comments, i, v)
    {
      if (!strcasecmp(json_string_value(json_object_get(v, "repo")), repo_full(repo)) &&
          json_integer_value(json_object_get(v, "issue_number")) == num)
        json_array_append_new(arr, comment_obj(repo, v));
    }
    return forge_resp_json(c->resp, 200, arr);
  }
  if (!method(c, "POST"))
    return forge_resp_error(c->resp, 404, "Not Found", doc);
  if (!parse_body(c, false, doc))
    return;
  json_t *body = json_object_get(c->body, "body");
  if (!body)
    return invalid_request(c, "\"body\" wasn't supplied.", doc);
  if (!json_is_string(body))
    return invalid_request(c, "For 'properties/body', it is not a string.", doc);
  if (json_string_length(body) > 65536)
    return validation_failed(c,
                             json_pack("[{s:s, s:s, s:s, s:s}]", "resource", "IssueComment", "code",
                                       "custom", "field", "body", "message",
                                       "body is too long (maximum is 65536 characters)"),
                             doc);
  char who[160];
  /* content_type: what the poster declared, for the admin view (a test
   * sees what the gateway sends up; GitHub itself reads the body as JSON) */
  json_t *cm = json_pack("{s:I, s:s, s:I, s:O, s:s, s:o, s:s}", "id", (json_int_t)g_forge.next_id++,
                         "repo", repo_full(repo), "issue_number", (json_int_t)num, "body", body,
                         "user", actor_login(c, who, sizeof who), "created_at", iso(forge_now()),
                         "content_type", c->rq->content_type ? c->rq->content_type : "");
  json_array_append_new(g_forge.comments, cm);
  forge_resp_json(c->resp, 201, comment_obj(repo, cm));
}

/* ---- pulls ---- */

static json_t *pull_obj(json_t *repo, json_t *pr)
{
  long long num = json_integer_value(json_object_get(pr, "number"));
  const char *head = json_string_value(json_object_get(pr, "head"));
  const char *base = json_string_value(json_object_get(pr, "base"));
  al_autofree char *hs = branch_sha(repo, head);
  al_autofree char *bs = branch_sha(repo, base);
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/pulls/%lld", g_forge.base_url, repo_full(repo), num);
  al_autofree char *html =
      al_strdup_printf("%s/%s/pull/%lld", g_forge.git_base_url, repo_full(repo), num);
  const char *owner = json_string_value(json_object_get(repo, "owner"));
  al_autofree char *hl = al_strdup_printf("%s:%s", owner, head);
  al_autofree char *bl = al_strdup_printf("%s:%s", owner, base);
  bool merged = json_is_true(json_object_get(pr, "merged"));
  json_t *o = json_pack(
      "{s:s, s:O, s:s, s:s, s:I, s:O, s:b, s:O, s:O, s:o, s:O, s:O, s:O, s:O, s:O, s:b, s:b, "
      "s:O, s:[], s:[]}",
      "url", url, "id", json_object_get(pr, "id"), "node_id", "PR_forge", "html_url", html,
      "number", (json_int_t)num, "state", json_object_get(pr, "state"), "locked", 0, "title",
      json_object_get(pr, "title"), "body",
      json_object_get(pr, "body") ? json_object_get(pr, "body") : json_null(), "user",
      user_obj(json_string_value(json_object_get(pr, "user"))), "created_at",
      json_object_get(pr, "created_at"), "updated_at", json_object_get(pr, "created_at"),
      "closed_at",
      json_object_get(pr, "closed_at") ? json_object_get(pr, "closed_at") : json_null(),
      "merged_at",
      json_object_get(pr, "merged_at") ? json_object_get(pr, "merged_at") : json_null(),
      "merge_commit_sha",
      json_object_get(pr, "merge_commit_sha") ? json_object_get(pr, "merge_commit_sha")
                                              : json_null(),
      "draft", json_is_true(json_object_get(pr, "draft")), "merged", merged, "mergeable",
      merged ? json_null() : json_true(), "requested_reviewers", "labels");
  json_object_set_new(o, "head",
                      json_pack("{s:s, s:s, s:s, s:o, s:o}", "label", hl, "ref", head, "sha",
                                hs ? hs : json_string_value(json_object_get(pr, "head_sha")),
                                "repo", repo_obj(repo), "user", user_obj(owner)));
  json_object_set_new(o, "base",
                      json_pack("{s:s, s:s, s:s, s:o, s:o}", "label", bl, "ref", base, "sha",
                                bs ? bs : json_string_value(json_object_get(pr, "base_sha")),
                                "repo", repo_obj(repo), "user", user_obj(owner)));
  return forge_shape_pull(o, repo_full(repo));
}

static void h_pulls(struct ctx *c, json_t *repo)
{
  const char *doc =
      method(c, "POST") ? DOC_PULLS "#create-a-pull-request" : DOC_PULLS "#list-pull-requests";
  if (!authorize(c, repo, "pull_requests", method(c, "POST") ? 2 : 1, doc))
    return;
  size_t i;
  json_t *v;
  if (method(c, "GET")) {
    al_autofree char *state = forge_query_param(c->rq->query, "state");
    /* `head` is OWNER:BRANCH (forks are not emulated: OWNER must be the
     * repository's), `base` a branch name ("List pull requests"). */
    al_autofree char *head_q = forge_query_param(c->rq->query, "head");
    al_autofree char *base_q = forge_query_param(c->rq->query, "base");
    const char *owner = json_string_value(json_object_get(repo, "owner"));
    const char *head_branch = NULL;
    if (head_q) {
      const char *colon = strchr(head_q, ':');
      size_t ol = colon ? (size_t)(colon - head_q) : 0;
      if (!colon || !owner || strlen(owner) != ol || strncasecmp(head_q, owner, ol))
        return forge_resp_json(c->resp, 200, json_array()); /* another owner: none */
      head_branch = colon + 1;
    }
    json_t *arr = json_array();
    json_array_foreach(g_forge.pulls, i, v)
    {
      if (strcasecmp(json_string_value(json_object_get(v, "repo")), repo_full(repo)))
        continue;
      if (head_branch && strcmp(json_string_value(json_object_get(v, "head")), head_branch))
        continue;
      if (base_q && strcmp(json_string_value(json_object_get(v, "base")), base_q))
        continue;
      const char *st = json_string_value(json_object_get(v, "state"));
      if ((!state && !strcmp(st, "open")) ||
          (state && (!strcmp(state, "all") || !strcmp(state, st))))
        json_array_append_new(arr, pull_obj(repo, v));
    }
    return forge_resp_json(c->resp, 200, arr);
  }
  if (!method(c, "POST"))
    return forge_resp_error(c->resp, 404, "Not Found", doc);
  if (!parse_body(c, false, doc))
    return;
  json_t *title = json_object_get(c->body, "title");
  json_t *head = json_object_get(c->body, "head");
  json_t *base = json_object_get(c->body, "base");
  json_t *body = json_object_get(c->body, "body");
  json_t *draft = json_object_get(c->body, "draft");
  if (!head)
    return invalid_request(c, "\"head\" wasn't supplied.", doc);
  if (!base)
    return invalid_request(c, "\"base\" wasn't supplied.", doc);
  if (!json_is_string(head) || !json_is_string(base) || (title && !json_is_string(title)) ||
      (body && !json_is_string(body) && !json_is_null(body)) || (draft && !json_is_boolean(draft)))
    return invalid_request(c, "For 'properties', a field has the wrong type.", doc);
  if (!title)
    return validation_failed(c,
                             json_pack("[{s:s, s:s, s:s}]", "resource", "PullRequest", "field",
                                       "title", "code", "missing_field"),
                             doc);
  const char *h = json_string_value(head);
  const char *owner = json_string_value(json_object_get(repo, "owner"));
  const char *colon = strchr(h, ':');
  if (colon) {
    if ((size_t)(colon - h) != strlen(owner) || strncasecmp(h, owner, strlen(owner)))
      return validation_failed(c,
                               json_pack("[{s:s, s:s, s:s}]", "resource", "PullRequest", "field",
                                         "head", "code", "invalid"),
                               doc);
    h = colon + 1;
  }
  const char *b = json_string_value(base);
  al_autofree char *hs = branch_sha(repo, h);
  if (!hs)
    return validation_failed(c,
                             json_pack("[{s:s, s:s, s:s}]", "resource", "PullRequest", "field",
                                       "head", "code", "invalid"),
                             doc);
  al_autofree char *bs = branch_sha(repo, b);
  if (!bs)
    return validation_failed(c,
                             json_pack("[{s:s, s:s, s:s}]", "resource", "PullRequest", "field",
                                       "base", "code", "invalid"),
                             doc);
  json_array_foreach(g_forge.pulls, i, v)
  {
    if (!strcasecmp(json_string_value(json_object_get(v, "repo")), repo_full(repo)) &&
        !strcmp(json_string_value(json_object_get(v, "state")), "open") &&
        !strcmp(json_string_value(json_object_get(v, "head")), h) &&
        !strcmp(json_string_value(json_object_get(v, "base")), b)) {
      al_autofree char *m = al_strdup_printf("A pull request already exists for %s:%s.", owner, h);
      return validation_failed(
          c,
          json_pack("[{s:s, s:s, s:s}]", "resource", "PullRequest", "code", "custom", "message", m),
          doc);
    }
  }
  al_autofree char *range = al_strdup_printf("%s..%s", bs, hs);
  const char *cnt[] = {"git", "rev-list", "--count", range, NULL};
  al_autofree char *n = NULL;
  if (forge_git_run(repo_full(repo), cnt, &n, NULL) != 0 || atoi(n) == 0) {
    al_autofree char *m = al_strdup_printf("No commits between %s and %s", b, h);
    return validation_failed(
        c,
        json_pack("[{s:s, s:s, s:s}]", "resource", "PullRequest", "code", "custom", "message", m),
        doc);
  }
  char who[160];
  long long num = json_integer_value(json_object_get(repo, "next_number"));
  json_object_set_new(repo, "next_number", json_integer(num + 1));
  json_t *pr = json_pack("{s:s, s:I, s:I, s:O, s:O, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:o}",
                         "repo", repo_full(repo), "number", (json_int_t)num, "id",
                         (json_int_t)g_forge.next_id++, "title", title, "body",
                         body ? body : json_null(), "user", actor_login(c, who, sizeof who),
                         "state", "open", "head", h, "base", b, "head_sha", hs, "base_sha", bs,
                         "draft", json_is_true(draft), "merged", 0, "created_at", iso(forge_now()));
  json_array_append_new(g_forge.pulls, pr);
  json_t *o = pull_obj(repo, pr);
  c->resp->headers = json_pack("{s:O}", "Location", json_object_get(o, "url"));
  forge_resp_json(c->resp, 201, o);
}

static json_t *find_pull(struct ctx *c, json_t *repo, long long num, const char *doc)
{
  json_t *pr = find_in(g_forge.pulls, repo_full(repo), "number", num);
  if (!pr)
    forge_resp_error(c->resp, 404, "Not Found", doc);
  return pr;
}

static void h_pull(struct ctx *c, json_t *repo, long long num)
{
  const char *doc = DOC_PULLS "#get-a-pull-request";
  if (!authorize(c, repo, "pull_requests", 1, doc))
    return;
  json_t *pr = find_pull(c, repo, num, doc);
  if (pr)
    forge_resp_json(c->resp, 200, pull_obj(repo, pr));
}

static void h_pull_files(struct ctx *c, json_t *repo, long long num)
{
  const char *doc = DOC_PULLS "#list-pull-requests-files";
  if (!authorize(c, repo, "pull_requests", 1, doc))
    return;
  json_t *pr = find_pull(c, repo, num, doc);
  if (!pr)
    return;
  const char *base = json_string_value(json_object_get(pr, "base_sha"));
  al_autofree char *hs = branch_sha(repo, json_string_value(json_object_get(pr, "head")));
  const char *head = hs ? hs : json_string_value(json_object_get(pr, "head_sha"));
  al_autofree char *api = al_strdup_printf("%s/repos/%s", g_forge.base_url, repo_full(repo));
  al_autofree char *web = al_strdup_printf("%s/%s", g_forge.git_base_url, repo_full(repo));
  json_t *arr = forge_pull_files(repo_full(repo), base, head, api, web);
  if (!arr)
    return forge_resp_error(c->resp, 500, "Server Error", doc);
  forge_resp_json(c->resp, 200, arr);
}

static json_t *review_obj(json_t *repo, json_t *rv)
{
  long long num = json_integer_value(json_object_get(rv, "pull_number"));
  al_autofree char *purl =
      al_strdup_printf("%s/repos/%s/pulls/%lld", g_forge.base_url, repo_full(repo), num);
  return forge_shape_review(
      json_pack("{s:O, s:s, s:o, s:O, s:O, s:s, s:O, s:O, s:s}", "id", json_object_get(rv, "id"),
                "node_id", "PRR_forge", "user",
                user_obj(json_string_value(json_object_get(rv, "user"))), "body",
                json_object_get(rv, "body"), "state", json_object_get(rv, "state"),
                "pull_request_url", purl, "commit_id", json_object_get(rv, "commit_id"),
                "submitted_at", json_object_get(rv, "submitted_at"), "author_association", "NONE"),
      repo_full(repo), num);
}

/* Create a review as login (the token's bot, or a human through the admin
 * API). Returns the review (borrowed) or NULL with resp filled. */
json_t *forge_create_review(json_t *repo, json_t *pr, const char *login, json_t *req,
                            struct forge_resp *resp)
{
  const char *doc = DOC_REVIEWS "#create-a-review-for-a-pull-request";
  json_t *event = json_object_get(req, "event");
  json_t *body = json_object_get(req, "body");
  if ((event && !json_is_string(event)) || (body && !json_is_string(body))) {
    forge_resp_error(resp, 422, "Invalid request.\n\nFor 'properties', a field has the wrong type.",
                     doc);
    return NULL;
  }
  const char *ev = event ? json_string_value(event) : "PENDING";
  const char *state;
  if (!strcmp(ev, "APPROVE"))
    state = "APPROVED";
  else if (!strcmp(ev, "REQUEST_CHANGES"))
    state = "CHANGES_REQUESTED";
  else if (!strcmp(ev, "COMMENT"))
    state = "COMMENTED";
  else if (!strcmp(ev, "PENDING"))
    state = "PENDING";
  else {
    forge_resp_error(resp, 422,
                     "Invalid request.\n\nFor 'properties/event', it is not one of APPROVE, "
                     "REQUEST_CHANGES, COMMENT.",
                     doc);
    return NULL;
  }
  bool own = !strcasecmp(json_string_value(json_object_get(pr, "user")), login);
  const char *own_err = !strcmp(state, "APPROVED") ? "Can not approve your own pull request"
                        : !strcmp(state, "CHANGES_REQUESTED")
                            ? "Can not request changes on your own pull request"
                            : NULL;
  if (own && own_err) {
    forge_resp_json(resp, 422,
                    json_pack("{s:s, s:[s], s:s, s:s}", "message", "Unprocessable Entity", "errors",
                              own_err, "documentation_url", doc, "status", "422"));
    return NULL;
  }
  if ((!strcmp(state, "CHANGES_REQUESTED") || !strcmp(state, "COMMENTED")) &&
      (!body || json_string_length(body) == 0)) {
    forge_resp_json(resp, 422,
                    json_pack("{s:s, s:[s], s:s, s:s}", "message", "Unprocessable Entity", "errors",
                              "Review Comment is missing body.", "documentation_url", doc, "status",
                              "422"));
    return NULL;
  }
  al_autofree char *hs = branch_sha(repo, json_string_value(json_object_get(pr, "head")));
  json_t *rv =
      json_pack("{s:I, s:s, s:O, s:s, s:s, s:s, s:s, s:o}", "id", (json_int_t)g_forge.next_id++,
                "repo", repo_full(repo), "pull_number", json_object_get(pr, "number"), "user",
                login, "state", state, "body", body ? json_string_value(body) : "", "commit_id",
                hs ? hs : json_string_value(json_object_get(pr, "head_sha")), "submitted_at",
                iso(forge_now()));
  json_array_append_new(g_forge.reviews, rv);
  forge_resp_json(resp, 200, review_obj(repo, rv));
  return rv;
}

static void h_reviews(struct ctx *c, json_t *repo, long long num)
{
  const char *doc = method(c, "POST") ? DOC_REVIEWS "#create-a-review-for-a-pull-request"
                                      : DOC_REVIEWS "#list-reviews-for-a-pull-request";
  if (!authorize(c, repo, "pull_requests", method(c, "POST") ? 2 : 1, doc))
    return;
  json_t *pr = find_pull(c, repo, num, doc);
  if (!pr)
    return;
  if (method(c, "GET")) {
    json_t *arr = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(g_forge.reviews, i, v)
    {
      if (!strcasecmp(json_string_value(json_object_get(v, "repo")), repo_full(repo)) &&
          json_integer_value(json_object_get(v, "pull_number")) == num)
        json_array_append_new(arr, review_obj(repo, v));
    }
    return forge_resp_json(c->resp, 200, arr);
  }
  if (!method(c, "POST"))
    return forge_resp_error(c->resp, 404, "Not Found", doc);
  if (!parse_body(c, true, doc))
    return;
  char who[160];
  forge_create_review(repo, pr, actor_login(c, who, sizeof who), c->body, c->resp);
}

/* CODEOWNERS: the owners of path (last matching line wins), as a JSON array
 * of "@login" strings, or NULL when no rule matches. Follows "About code
 * owners" (docs.github.com) for the common pattern forms. */
static json_t *codeowners_for(const char *codeowners, const char *path)
{
  json_t *owners = NULL;
  al_autofree char *copy = al_xstrdup(codeowners);
  char *save = NULL;
  for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    while (*l == ' ' || *l == '\t')
      l++;
    if (!*l || *l == '#')
      continue;
    char *sp = l + strcspn(l, " \t");
    char pat[1024];
    snprintf(pat, sizeof pat, "%.*s", (int)(sp - l), l);
    bool match = false;
    size_t pl = strlen(pat);
    if (!strcmp(pat, "*")) {
      match = true;
    } else if (pat[0] == '/') {
      const char *p = pat + 1;
      if (pl > 1 && pat[pl - 1] == '/')
        match = !strncmp(path, p, strlen(p));
      else
        match = !fnmatch(p, path, FNM_PATHNAME) ||
                (!strncmp(path, p, strlen(p)) && path[strlen(p)] == '/');
    } else if (pl > 0 && pat[pl - 1] == '/') {
      al_autofree char *needle = al_strdup_printf("/%s", pat);
      al_autofree char *hay = al_strdup_printf("/%s", path);
      match = strstr(hay, needle) != NULL;
    } else if (!strchr(pat, '/')) {
      const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
      match = !fnmatch(pat, b, 0);
      /* a bare name also matches a directory component */
      al_autofree char *needle = al_strdup_printf("/%s/", pat);
      al_autofree char *hay = al_strdup_printf("/%s", path);
      match |= strstr(hay, needle) != NULL;
    } else {
      match = !fnmatch(pat, path, FNM_PATHNAME) || !strncmp(path, pat, strlen(pat));
    }
    if (!match)
      continue;
    json_decref(owners);
    owners = json_array();
    char *save2 = NULL;
    for (char *o = strtok_r(sp, " \t", &save2); o; o = strtok_r(NULL, " \t", &save2)) {
      if (*o == '#')
        break;
      json_array_append_new(owners, json_string(o));
    }
  }
  return owners;
}

static void h_merge(struct ctx *c, json_t *repo, long long num)
{
  const char *doc = DOC_MERGE;
  if (!authorize(c, repo, "contents", 2, doc))
    return;
  json_t *pr = find_pull(c, repo, num, doc);
  if (!pr || !parse_body(c, true, doc))
    return;
  if (json_is_true(json_object_get(pr, "merged")) ||
      strcmp(json_string_value(json_object_get(pr, "state")), "open"))
    return forge_resp_error(c->resp, 405, "Pull Request is not mergeable", doc);
  const char *head = json_string_value(json_object_get(pr, "head"));
  const char *base = json_string_value(json_object_get(pr, "base"));
  al_autofree char *hs = branch_sha(repo, head);
  al_autofree char *bs = branch_sha(repo, base);
  if (!hs || !bs)
    return forge_resp_error(c->resp, 405, "Pull Request is not mergeable", doc);
  json_t *want_sha = json_object_get(c->body, "sha");
  if (json_is_string(want_sha) && strcmp(json_string_value(want_sha), hs))
    return forge_resp_error(c->resp, 409,
                            "Head branch was modified. Review and try the merge again.", doc);
  json_t *view = rules_view(repo);
  json_t *rules = forge_branch_rules(view, base, c->au.app);
  json_decref(view);
  long long need = json_integer_value(json_object_get(rules, "required_approvals"));
  bool pr_required = json_is_true(json_object_get(rules, "pr_classic")) ||
                     json_is_true(json_object_get(rules, "pr_ruleset"));
  bool code_owners = json_is_true(json_object_get(rules, "code_owner_reviews"));
  bool last_push = json_is_true(json_object_get(rules, "last_push_approval"));
  json_decref(rules);
  /* Latest review per reviewer; an approval counts when it is not by the
   * author (and, with last-push approval, is on the current head). */
  json_t *latest = json_object();
  size_t i;
  json_t *v;
  json_array_foreach(g_forge.reviews, i, v)
  {
    if (strcasecmp(json_string_value(json_object_get(v, "repo")), repo_full(repo)) ||
        json_integer_value(json_object_get(v, "pull_number")) != num)
      continue;
    const char *st = json_string_value(json_object_get(v, "state"));
    if (!strcmp(st, "COMMENTED") || !strcmp(st, "PENDING"))
      continue;
    json_object_set(latest, json_string_value(json_object_get(v, "user")), v);
  }
  long long approvals = 0;
  const char *k;
  json_object_foreach(latest, k, v)
  {
    if (!strcasecmp(k, json_string_value(json_object_get(pr, "user"))))
      continue;
    if (strcmp(json_string_value(json_object_get(v, "state")), "APPROVED"))
      continue;
    if (last_push && strcmp(json_string_value(json_object_get(v, "commit_id")), hs))
      continue;
    approvals++;
  }
  if (pr_required && approvals < need) {
    json_decref(latest);
    al_autofree char *m = al_strdup_printf(
        "At least %lld approving review%s required by reviewers with write access.", need,
        need == 1 ? " is" : "s are");
    return forge_resp_error(c->resp, 405, m, doc);
  }
  if (pr_required && code_owners) {
    static const char *const locs[] = {".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"};
    size_t len;
    char *co = NULL;
    for (size_t l = 0; l < AL_ARRAY_SIZE(locs) && !co; l++)
      co = read_blob(repo, bs, locs[l], &len);
    if (co) {
      al_autofree char *range = al_strdup_printf("%s...%s", bs, hs);
      const char *ns[] = {"git", "diff", "--no-renames", "--name-only", range, NULL};
      al_autofree char *files = NULL;
      forge_git_run(repo_full(repo), ns, &files, NULL);
      char *save = NULL;
      for (char *f = files ? strtok_r(files, "\n", &save) : NULL; f;
           f = strtok_r(NULL, "\n", &save)) {
        json_t *owners = codeowners_for(co, f);
        if (!owners)
          continue;
        bool ok = false;
        size_t j;
        json_t *o;
        json_array_foreach(owners, j, o)
        {
          const char *on = json_string_value(o);
          json_t *rv = on[0] == '@' ? json_object_get(latest, on + 1) : NULL;
          if (rv && !strcmp(json_string_value(json_object_get(rv, "state")), "APPROVED"))
            ok = true;
        }
        if (!ok) {
          al_autofree char *m = al_strdup_printf("Waiting on code owner review from %s.",
                                                 json_string_value(json_array_get(owners, 0))
                                                     ? json_string_value(json_array_get(owners, 0))
                                                     : "a code owner");
          json_decref(owners);
          free(co);
          json_decref(latest);
          return forge_resp_error(c->resp, 405, m, doc);
        }
        json_decref(owners);
      }
      free(co);
    }
  }
  json_decref(latest);
  /* Merge commit (or squash) built with merge-tree; refuse conflicts. */
  const char *mt[] = {"git", "merge-tree", "--write-tree", bs, hs, NULL};
  al_autofree char *tree = NULL;
  if (forge_git_run(repo_full(repo), mt, &tree, NULL) != 0 || !tree)
    return forge_resp_error(c->resp, 405, "Pull Request is not mergeable", doc);
  char *nl = strchr(tree, '\n');
  if (nl)
    *nl = '\0';
  const char *method_s = json_string_value(json_object_get(c->body, "merge_method"));
  bool squash = method_s && (!strcmp(method_s, "squash") || !strcmp(method_s, "rebase"));
  const char *ct_title = json_string_value(json_object_get(c->body, "commit_title"));
  al_autofree char *msg =
      ct_title ? al_xstrdup(ct_title)
               : al_strdup_printf("Merge pull request #%lld from %s/%s", num,
                                  json_string_value(json_object_get(repo, "owner")), head);
  const char *ctm[] = {"git",
                       "-c",
                       "user.name=GitHub",
                       "-c",
                       "user.email=noreply@github.com",
                       "commit-tree",
                       tree,
                       "-p",
                       bs,
                       "-p",
                       hs,
                       "-m",
                       msg,
                       NULL};
  const char *cts[] = {"git",
                       "-c",
                       "user.name=GitHub",
                       "-c",
                       "user.email=noreply@github.com",
                       "commit-tree",
                       tree,
                       "-p",
                       bs,
                       "-m",
                       msg,
                       NULL};
  al_autofree char *commit = NULL;
  if (forge_git_run(repo_full(repo), squash ? cts : ctm, &commit, NULL) != 0 || !commit)
    return forge_resp_error(c->resp, 500, "Server Error", doc);
  al_autofree char *ref = al_strdup_printf("refs/heads/%s", base);
  const char *ur[] = {"git", "update-ref", ref, commit, bs, NULL};
  if (forge_git_run(repo_full(repo), ur, NULL, NULL) != 0)
    return forge_resp_error(c->resp, 409,
                            "Base branch was modified. Review and try the merge again.", doc);
  json_object_set_new(pr, "merged", json_true());
  json_object_set_new(pr, "state", json_string("closed"));
  json_object_set_new(pr, "merged_at", iso(forge_now()));
  json_object_set_new(pr, "closed_at", iso(forge_now()));
  json_object_set_new(pr, "merge_commit_sha", json_string(commit));
  forge_resp_json(c->resp, 200,
                  json_pack("{s:s, s:b, s:s}", "sha", commit, "merged", 1, "message",
                            "Pull Request successfully merged"));
}

/* GET /repos/{o}/{r}/collaborators/{user}/permission: "Get repository
 * permissions for a user" (REST › Collaborators). `permission` is admin,
 * write (maintain too), read (triage too) or none; role_name is exact. */
static void h_collaborator_permission(struct ctx *c, json_t *repo, const char *login)
{
  const char *doc = "https://docs.github.com/rest/collaborators/"
                    "collaborators#get-repository-permissions-for-a-user";
  if (!authorize(c, repo, "metadata", 1, doc))
    return;
  if (!forge_user(login))
    return forge_resp_error(c->resp, 404, "Not Found", doc);
  const char *role = json_is_true(json_object_get(repo, "private")) ? "none" : "read";
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(repo, "collaborators"), i, v)
  {
    const char *l = json_string_value(json_object_get(v, "login"));
    if (l && !strcasecmp(l, login))
      role = json_string_value(json_object_get(v, "permission")) ?: "read";
  }
  const char *perm = !strcmp(role, "maintain") ? "write" : !strcmp(role, "triage") ? "read" : role;
  forge_resp_json(
      c->resp, 200,
      json_pack("{s:s, s:s, s:o}", "permission", perm, "role_name", role, "user", user_obj(login)));
}

/* ---- dispatch ---- */

static size_t split_path(char *p, char **seg, size_t max)
{
  size_t n = 0;
  char *save = NULL;
  for (char *s = strtok_r(p, "/", &save); s && n < max; s = strtok_r(NULL, "/", &save))
    seg[n++] = s;
  return n;
}

/* Join segments [from, n) with '/' into a malloc'd string. */
static char *join_from(char **seg, size_t n, size_t from, size_t drop_tail)
{
  size_t len = 1;
  for (size_t i = from; i + drop_tail < n; i++)
    len += strlen(seg[i]) + 1;
  char *out = al_xmalloc(len);
  out[0] = '\0';
  for (size_t i = from; i + drop_tail < n; i++) {
    if (i > from)
      strcat(out, "/");
    strcat(out, seg[i]);
  }
  return out;
}

static bool is_seg(struct ctx *c, size_t i, const char *s)
{
  return i < c->nseg && !strcmp(c->seg[i], s);
}

void forge_api_handle(struct forge_req *rq, struct forge_resp *resp)
{
  struct ctx c = {.rq = rq, .resp = resp};
  al_autofree char *moved = NULL; /* a /repositories/{id} path, rewritten */
  pthread_mutex_lock(&g_forge.lock);
  bool answered = forge_behave_pre(rq, resp, &moved);
  pthread_mutex_unlock(&g_forge.lock);
  if (answered)
    return;
  const char *path = moved ? moved : rq->path;
  if (!strncmp(path, "/api/v3/", 8))
    path += 7;
  if (strlen(path) > 4096)
    return forge_resp_error(resp, 414, "URI Too Long", NULL);
  al_autofree char *p = al_xstrdup(path);
  c.nseg = split_path(p, c.seg, AL_ARRAY_SIZE(c.seg));

  pthread_mutex_lock(&g_forge.lock);
  forge_authenticate(rq->authorization, &c.au);
  bool get = method(&c, "GET"), post = method(&c, "POST"), put = method(&c, "PUT");
  forge_resp_error(resp, 404, "Not Found", FORGE_DOCS);

  if (c.nseg == 0 && get) {
    forge_resp_json(resp, 200, json_pack("{s:s+}", "current_user_url", g_forge.base_url, "/user"));
  } else if (is_seg(&c, 0, "app")) {
    if (c.nseg == 1 && get)
      h_app(&c);
    else if (c.nseg == 2 && get && is_seg(&c, 1, "installations"))
      h_app_installations(&c);
    else if (c.nseg == 3 && get && is_seg(&c, 1, "installations"))
      h_installation(&c, c.seg[2]);
    else if (c.nseg == 4 && post && is_seg(&c, 1, "installations") &&
             is_seg(&c, 3, "access_tokens"))
      h_mint(&c, c.seg[2]);
  } else if (is_seg(&c, 0, "installation")) {
    if (c.nseg == 2 && is_seg(&c, 1, "token") && method(&c, "DELETE"))
      h_revoke(&c);
    else if (c.nseg == 2 && is_seg(&c, 1, "repositories") && get)
      h_installation_repos(&c);
  } else if (post && ((c.nseg == 1 && is_seg(&c, 0, "graphql")) ||
                      (c.nseg == 2 && is_seg(&c, 0, "api") && is_seg(&c, 1, "graphql")))) {
    forge_graphql(&c); /* graphql.c; GHE's /api/graphql as well */
  } else if (is_seg(&c, 0, "rate_limit") && c.nseg == 1 && get) {
    forge_resp_json(resp, 200,
                    json_pack("{s:{s:{s:i, s:i, s:i}}}", "resources", "core", "limit", 5000,
                              "remaining", 5000, "used", 0));
  } else if (is_seg(&c, 0, "repos") && c.nseg >= 3) {
    json_t *repo = forge_repo(c.seg[1], c.seg[2]);
    size_t n = c.nseg;
    if (n == 3 && get) {
      h_repo(&c, repo);
    } else if (n == 4 && get && is_seg(&c, 3, "installation")) {
      h_repo_installation(&c, repo);
    } else if (n >= 4 && get && is_seg(&c, 3, "contents")) {
      al_autofree char *cp = join_from(c.seg, n, 4, 0);
      h_contents(&c, repo, cp);
    } else if (n >= 5 && is_seg(&c, 3, "branches") && !strcmp(c.seg[n - 1], "protection") &&
               n >= 6) {
      al_autofree char *b = join_from(c.seg, n, 4, 1);
      h_protection(&c, repo, b);
    } else if (n >= 5 && get && is_seg(&c, 3, "branches")) {
      al_autofree char *b = join_from(c.seg, n, 4, 0);
      h_branch(&c, repo, b);
    } else if (n >= 6 && get && is_seg(&c, 3, "rules") && is_seg(&c, 4, "branches")) {
      al_autofree char *b = join_from(c.seg, n, 5, 0);
      h_rules_for_branch(&c, repo, b);
    } else if ((n == 4 || n == 5) && get && is_seg(&c, 3, "rulesets")) {
      h_rulesets(&c, repo, n == 5 ? c.seg[4] : NULL);
    } else if (n >= 5 && is_seg(&c, 3, "issues") && parse_num(c.seg[4]) > 0) {
      long long num = parse_num(c.seg[4]);
      if (n == 5 && get)
        h_issue(&c, repo, num);
      else if (n == 6 && is_seg(&c, 5, "comments") && (get || post))
        h_comments(&c, repo, num);
    } else if (n >= 7 && method(&c, "DELETE") && is_seg(&c, 3, "git") && is_seg(&c, 4, "refs") &&
               is_seg(&c, 5, "heads")) {
      al_autofree char *b = join_from(c.seg, n, 6, 0);
      h_delete_branch_ref(&c, repo, b);
    } else if (n == 6 && get && is_seg(&c, 3, "git") && is_seg(&c, 4, "trees")) {
      forge_h_git_tree(&c, repo, c.seg[5]);
    } else if (n == 6 && get && is_seg(&c, 3, "git") && is_seg(&c, 4, "blobs")) {
      forge_h_git_blob(&c, repo, c.seg[5]);
    } else if (n == 5 && get && is_seg(&c, 3, "actions") && is_seg(&c, 4, "permissions")) {
      forge_h_actions_permissions(&c, repo);
    } else if (n == 6 && get && is_seg(&c, 3, "actions") && is_seg(&c, 4, "permissions") &&
               is_seg(&c, 5, "workflow")) {
      forge_h_workflow_permissions(&c, repo);
    } else if (n == 4 && get && is_seg(&c, 3, "environments")) {
      forge_h_environments(&c, repo);
    } else if (n == 6 && get && is_seg(&c, 3, "collaborators") && is_seg(&c, 5, "permission")) {
      h_collaborator_permission(&c, repo, c.seg[4]);
    } else if (n == 4 && is_seg(&c, 3, "pulls") && (get || post)) {
      h_pulls(&c, repo);
    } else if (n >= 5 && is_seg(&c, 3, "pulls") && parse_num(c.seg[4]) > 0) {
      long long num = parse_num(c.seg[4]);
      if (n == 5 && get)
        h_pull(&c, repo, num);
      else if (n == 6 && get && is_seg(&c, 5, "files"))
        h_pull_files(&c, repo, num);
      else if (n == 6 && get && is_seg(&c, 5, "commits"))
        forge_h_pull_commits(&c, repo, num);
      else if (n == 6 && (get || post) && is_seg(&c, 5, "comments"))
        forge_h_pull_review_comments(&c, repo, num);
      else if (n == 6 && (get || post) && is_seg(&c, 5, "reviews"))
        h_reviews(&c, repo, num);
      else if (n == 6 && put && is_seg(&c, 5, "merge"))
        h_merge(&c, repo, num);
    }
  }
  forge_behave_post(rq, resp);
  pthread_mutex_unlock(&g_forge.lock);
  json_decref(c.body);
}

/* ---- for the other route files (api_internal.h) ---- */

bool forge_api_authorize(struct ctx *c, json_t *repo, const char *perm, int level, const char *doc)
{
  return authorize(c, repo, perm, level, doc);
}

json_t *forge_api_find_pull(struct ctx *c, json_t *repo, long long num, const char *doc)
{
  return find_pull(c, repo, num, doc);
}

char *forge_api_branch_sha(json_t *repo, const char *branch)
{
  return branch_sha(repo, branch);
}

json_t *forge_api_user(const char *login)
{
  return user_obj(login);
}

const char *forge_api_actor(struct ctx *c, char *buf, size_t n)
{
  return actor_login(c, buf, n);
}

char *forge_api_b64_lines(const unsigned char *data, size_t len)
{
  return b64_lines(data, len);
}

bool forge_api_parse_body(struct ctx *c, bool allow_empty, const char *doc)
{
  return parse_body(c, allow_empty, doc);
}

json_t *forge_api_iso(long long t)
{
  return iso(t);
}

/* for graphql.c */
json_t *forge_api_issue_obj(json_t *repo, json_t *is, bool is_pull)
{
  return issue_obj(repo, is, is_pull);
}
json_t *forge_api_pull_obj(json_t *repo, json_t *pr)
{
  return pull_obj(repo, pr);
}
json_t *forge_api_find_in(json_t *arr, const char *full, const char *numkey, long long num)
{
  return find_in(arr, full, numkey, num);
}
