/* The REST API routes. Each handler names the docs.github.com page it
 * follows; status codes and messages are GitHub's (see README.md). */
#include "forge.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

#define DOC_APPS "https://docs.github.com/rest/apps/apps"
#define DOC_MINT DOC_APPS "#create-an-installation-access-token-for-an-app"
#define DOC_INST DOC_APPS "#get-an-installation-for-the-authenticated-app"
#define DOC_REPO_INST DOC_APPS "#get-a-repository-installation-for-the-authenticated-app"
#define DOC_REVOKE "https://docs.github.com/rest/apps/installations#revoke-an-installation-access-token"
#define DOC_INST_REPOS                                                                             \
  "https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation"
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
        return json_pack("{s:s, s:I, s:s, s:s, s:b}", "login", login, "id",
                         (json_int_t)bot_user_id(&g_forge.apps[i]), "type", "Bot", "node_id",
                         "BOT_forge", "site_admin", 0);
    }
  }
  json_t *u = forge_user(login);
  long long id = u ? json_integer_value(json_object_get(u, "id")) : 1;
  const char *type = u && json_string_value(json_object_get(u, "type"))
                         ? json_string_value(json_object_get(u, "type"))
                         : "User";
  return json_pack("{s:s, s:I, s:s, s:s, s:s, s:b}", "login", login, "id", (json_int_t)id,
                   "node_id", "U_forge", "type", type, "html_url", "https://forge.test/", "site_admin",
                   0);
}

static json_t *repo_obj(json_t *r)
{
  const char *full = json_string_value(json_object_get(r, "full_name"));
  bool priv = json_is_true(json_object_get(r, "private"));
  return json_pack("{s:O, s:s, s:O, s:s, s:b, s:o, s:s+, s:s+, s:s+, s:O, s:s, s:b, s:b, s:b}",
                   "id", json_object_get(r, "id"), "node_id", "R_forge", "name",
                   json_object_get(r, "name"), "full_name", full, "private", priv, "owner",
                   user_obj(json_string_value(json_object_get(r, "owner"))), "html_url",
                   g_forge.git_base_url, "/", full, "url", g_forge.base_url, "/repos/", full,
                   "clone_url", g_forge.git_base_url, "/", full, ".git", "default_branch",
                   json_object_get(r, "default_branch"), "visibility",
                   priv ? "private" : "public", "fork", 0, "archived", 0, "disabled", 0);
}

static json_t *app_obj(struct forge_app *app)
{
  return json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:O, s:[s,s]}", "id", (json_int_t)app->id,
                   "slug", app->slug, "client_id", app->client_id, "node_id", "A_forge", "name",
                   app->name, "owner", user_obj(app->owner), "permissions", app->permissions,
                   "events", "issues", "pull_request");
}

static json_t *installation_obj(json_t *inst)
{
  struct forge_app *app = forge_app_by_id(json_integer_value(json_object_get(inst, "app_id")));
  char url[256];
  snprintf(url, sizeof url, "%s/app/installations/%lld/access_tokens", g_forge.base_url,
           (long long)json_integer_value(json_object_get(inst, "id")));
  return json_pack("{s:O, s:o, s:O, s:s, s:s+, s:O, s:s, s:s, s:O, s:[], s:s, s:n}", "id",
                   json_object_get(inst, "id"), "account",
                   user_obj(json_string_value(json_object_get(inst, "account"))),
                   "repository_selection", json_object_get(inst, "repository_selection"),
                   "access_tokens_url", url, "repositories_url", g_forge.base_url,
                   "/installation/repositories", "app_id", json_object_get(inst, "app_id"),
                   "app_slug", app ? app->slug : "", "target_type", "Organization", "permissions",
                   json_object_get(inst, "permissions"), "events", "created_at",
                   "2024-01-01T00:00:00Z", "suspended_at");
}

static json_t *iso(long long t)
{
  char b[32];
  forge_iso8601(t, b);
  return json_string(b);
}

/* ---- request helpers ---- */

struct ctx {
  struct forge_req *rq;
  struct forge_resp *resp;
  struct forge_auth au;
  char *seg[16];
  size_t nseg;
  json_t *body; /* parsed JSON body or NULL */
};

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
                  json_pack("{s:s, s:o, s:s, s:s}", "message", "Validation Failed", "errors", errors,
                            "documentation_url", doc, "status", "422"));
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
    forge_resp_json(c->resp, 200, installation_obj(inst));
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
  forge_resp_json(c->resp, 200, installation_obj(inst));
}

static const char *const token_perm_names[] = {
    "actions", "administration", "checks", "contents", "deployments", "environments",
    "issues", "metadata", "packages", "pages", "pull_requests", "repository_hooks",
    "repository_projects", "secret_scanning_alerts", "secrets", "security_events",
    "statuses", "vulnerability_alerts", "workflows", "members", "organization_administration",
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
    al_autofree char *full = strchr(nm, '/') ? al_xstrdup(nm) : al_strdup_printf("%s/%s", account, nm);
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

  char value[128];
  if (forge_new_token_value(value, sizeof value) < 0) {
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
    return forge_resp_error(c->resp, 401, c->au.kind == AUTH_BAD ? c->au.message : "Bad credentials",
                            DOC_REVOKE);
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

static bool branch_protected_any(json_t *repo, const char *branch)
{
  json_t *r = forge_branch_rules(repo, branch, NULL);
  bool p = json_is_true(json_object_get(r, "classic")) || json_is_true(json_object_get(r, "ruleset"));
  json_decref(r);
  return p;
}

static void h_branch(struct ctx *c, json_t *repo, const char *branch)
{
  if (!authorize(c, repo, "metadata", 1, DOC_BRANCH))
    return;
  al_autofree char *sha = branch_sha(repo, branch);
  if (!sha)
    return forge_resp_error(c->resp, 404, "Branch not found", DOC_BRANCH);
  forge_resp_json(c->resp, 200,
                  json_pack("{s:s, s:{s:s}, s:b, s:s+}", "name", branch, "commit", "sha", sha,
                            "protected", branch_protected_any(repo, branch), "protection_url",
                            g_forge.base_url, "/repos/", repo_full(repo)));
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
                    json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s}", "type", "file",
                              "encoding", "base64", "name", base, "path", path, "sha", oid, "size",
                              (json_int_t)len, "content", b64, "url", ""));
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
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:I}", "type",
                                         !strcmp(otype, "tree") ? "dir" : "file", "name", name,
                                         "path", p, "sha", o, "size",
                                         (json_int_t)strtoll(size, NULL, 10)));
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
      json_array_append_new(out, json_pack("{s:s, s:s}", "slug", json_string_value(v), "name",
                                           json_string_value(v)));
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
    json_object_set_new(o, "required_status_checks",
                        json_pack("{s:b, s:O, s:[]}", "strict",
                                  json_is_true(json_object_get(rsc, "strict")), "contexts",
                                  json_object_get(rsc, "contexts") ? json_object_get(rsc, "contexts")
                                                                   : json_array(),
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
                      json_pack("{s:b}", "enabled", json_is_true(json_object_get(prot, "required_signatures"))));
  json_object_set_new(o, "enforce_admins", enabled(prot, "enforce_admins"));
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
  const char *doc = method(c, "PUT") ? DOC_PROT "#update-branch-protection"
                                     : DOC_PROT "#get-branch-protection";
  if (!authorize(c, repo, "administration", method(c, "PUT") ? 2 : 1, doc))
    return;
  al_autofree char *sha = branch_sha(repo, branch);
  if (!sha)
    return forge_resp_error(c->resp, 404, "Branch not found", doc);
  json_t *all = json_object_get(repo, "protection");
  if (method(c, "GET")) {
    json_t *prot = json_object_get(all, branch);
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
    return invalid_request(c, "For 'properties/required_status_checks', it is not an object or null.", doc);
  if (!json_is_null(rpr)) {
    if (!json_is_object(rpr))
      return invalid_request(
          c, "For 'properties/required_pull_request_reviews', it is not an object or null.", doc);
    json_t *n = json_object_get(rpr, "required_approving_review_count");
    if (n && (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 6))
      return invalid_request(c, "For 'properties/required_approving_review_count', it is not an integer in 0..6.", doc);
    json_t *bpa = json_object_get(rpr, "bypass_pull_request_allowances");
    if (bpa && (!json_is_object(bpa) || !string_array_or_absent(json_object_get(bpa, "users")) ||
                !string_array_or_absent(json_object_get(bpa, "teams")) ||
                !string_array_or_absent(json_object_get(bpa, "apps"))))
      return invalid_request(c, "For 'properties/bypass_pull_request_allowances', it is not valid.", doc);
  }
  if (!json_is_null(restr) &&
      (!json_is_object(restr) || !json_is_array(json_object_get(restr, "users")) ||
       !json_is_array(json_object_get(restr, "teams")) ||
       !string_array_or_absent(json_object_get(restr, "users")) ||
       !string_array_or_absent(json_object_get(restr, "teams")) ||
       !string_array_or_absent(json_object_get(restr, "apps"))))
    return invalid_request(c, "For 'properties/restrictions', \"users\" and \"teams\" must be arrays of strings.", doc);
  static const char *const bools[] = {"enforce_admins", "required_linear_history",
                                      "allow_force_pushes", "allow_deletions", "block_creations",
                                      "required_conversation_resolution", "lock_branch",
                                      "allow_fork_syncing"};
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
  al_autofree char *href = al_strdup_printf("%s/repos/%s/rulesets/%lld", g_forge.base_url,
                                            repo_full(repo),
                                            (long long)json_integer_value(json_object_get(rs, "id")));
  const char *target = json_string_value(json_object_get(rs, "target"));
  const char *enf = json_string_value(json_object_get(rs, "enforcement"));
  return json_pack("{s:O, s:O, s:s, s:s, s:s, s:s, s:s, s:{s:{s:s}}, s:s, s:s}", "id",
                   json_object_get(rs, "id"), "name", json_object_get(rs, "name"), "target",
                   target ? target : "branch", "source_type", "Repository", "source",
                   repo_full(repo), "enforcement", enf ? enf : "active", "node_id", "RRS_forge",
                   "_links", "self", "href", href, "created_at", "2024-01-01T00:00:00Z",
                   "updated_at", "2024-01-01T00:00:00Z");
}

static void h_rulesets(struct ctx *c, json_t *repo, const char *id)
{
  const char *doc = DOC_RULES "#get-all-repository-rulesets";
  if (!authorize(c, repo, "metadata", 1, doc))
    return;
  size_t i;
  json_t *rs;
  if (!id) {
    json_t *arr = json_array();
    json_array_foreach(json_object_get(repo, "rulesets"), i, rs)
        json_array_append_new(arr, ruleset_summary(repo, rs));
    return forge_resp_json(c->resp, 200, arr);
  }
  long long want = parse_num(id);
  json_array_foreach(json_object_get(repo, "rulesets"), i, rs)
  {
    if (json_integer_value(json_object_get(rs, "id")) != want)
      continue;
    json_t *o = ruleset_summary(repo, rs);
    json_object_set(o, "conditions", json_object_get(rs, "conditions") ? json_object_get(rs, "conditions") : json_object());
    json_object_set(o, "rules", json_object_get(rs, "rules"));
    bool bypass = false;
    size_t j;
    json_t *ba;
    json_array_foreach(json_object_get(rs, "bypass_actors"), j, ba)
    {
      const char *t = json_string_value(json_object_get(ba, "actor_type"));
      if (c->au.app && t && !strcmp(t, "Integration") &&
          json_integer_value(json_object_get(ba, "actor_id")) == c->au.app->id)
        bypass = true;
    }
    json_object_set_new(o, "current_user_can_bypass", json_string(bypass ? "always" : "never"));
    json_object_set(o, "bypass_actors",
                    json_object_get(rs, "bypass_actors") ? json_object_get(rs, "bypass_actors")
                                                          : json_array());
    return forge_resp_json(c->resp, 200, o);
  }
  forge_resp_error(c->resp, 404, "Not Found", DOC_RULES "#get-a-repository-ruleset");
}

/* GET /repos/{o}/{r}/rules/branches/{branch}: the active rules from rulesets
 * (classic protection is not included, as on GitHub). */
static void h_rules_for_branch(struct ctx *c, json_t *repo, const char *branch)
{
  const char *doc = DOC_RULES "#get-rules-for-a-branch";
  if (!authorize(c, repo, "metadata", 1, doc))
    return;
  json_t *arr = json_array();
  const char *defb = json_string_value(json_object_get(repo, "default_branch"));
  size_t i, j;
  json_t *rs, *rule;
  json_array_foreach(json_object_get(repo, "rulesets"), i, rs)
  {
    /* Reuse the hook's matcher through forge_branch_rules on a one-ruleset repo. */
    json_t *one = json_pack("{s:s, s:{}, s:[O]}", "default_branch", defb ? defb : "main",
                            "protection", "rulesets", rs);
    json_t *r = forge_branch_rules(one, branch, NULL);
    bool match = json_is_true(json_object_get(r, "ruleset"));
    json_decref(r);
    json_decref(one);
    if (!match)
      continue;
    json_array_foreach(json_object_get(rs, "rules"), j, rule)
    {
      json_t *o = json_deep_copy(rule);
      json_object_set_new(o, "ruleset_source_type", json_string("Repository"));
      json_object_set_new(o, "ruleset_source", json_string(repo_full(repo)));
      json_object_set(o, "ruleset_id", json_object_get(rs, "id"));
      json_array_append_new(arr, o);
    }
  }
  forge_resp_json(c->resp, 200, arr);
}
