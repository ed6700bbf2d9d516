/* GitHub REST calls of the broker: see github.h. */
#include "forge/app.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "forge/jwt.h"
#include "common/secmem.h"
#include "forge/ghapi.h"
#include "forge/gitlab.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"

#define BODY_MAX (1u << 20)
#define API_VERSION "2022-11-28"
#define TOKEN_MAX 4096

struct repo_id {
  char *repo;
  long long id;
};

struct al_gh {
  const al_broker_config *cfg;
  EVP_PKEY *key;
  al_ghapi *api; /* the one forge client */
  pthread_mutex_t lock;
  /* Primary rate limit of the app (JWT) as last reported. */
  long long app_remaining; /* -1: unknown */
  time_t app_reset;
  struct repo_id *ids; /* repository ids learned from earlier mints */
  size_t n_ids;
  char *gl_admin; /* gitlab.token_file's token (secret memory), or NULL: a GitHub App */
};

int al_gh_new(const al_broker_config *cfg, EVP_PKEY *key, al_gh **out, al_error *err)
{
  al_gh *gh = al_xcalloc(1, sizeof *gh);
  gh->cfg = cfg;
  gh->key = key;
  gh->app_remaining = -1;
  /* Token minting is safe to retry on 5xx (a token from a lost answer
   * expires within the hour; GitHub creates none on a 5xx in practice);
   * bodies carry tokens, so every copy is wiped. */
  al_ghapi_opts o = {.ca_file = cfg->ca_file,
                     .timeout_ms = cfg->http_timeout_ms,
                     .retries = cfg->retries ? cfg->retries : AL_GHAPI_NO_RETRY,
                     .max_wait_ms = cfg->max_rate_wait_ms,
                     .body_max = BODY_MAX,
                     .user_agent = "airlock-broker/0.1",
                     .retry_unsafe = true,
                     .wipe_bodies = true};
  if (al_ghapi_open(cfg->api_url, &o, &gh->api, err) < 0) {
    free(gh);
    return -1;
  }
  if (cfg->gitlab_token_file &&
      al_broker_gitlab_token_load(cfg->gitlab_token_file, &gh->gl_admin, err) < 0) {
    al_ghapi_free(gh->api);
    free(gh);
    return -1;
  }
  if (pthread_mutex_init(&gh->lock, NULL) != 0) {
    al_secret_free(gh->gl_admin);
    al_ghapi_free(gh->api);
    free(gh);
    return al_make_error(err, ENOMEM, "mutex");
  }
  *out = gh;
  return 0;
}

void al_gh_free(al_gh *gh)
{
  if (!gh)
    return;
  for (size_t i = 0; i < gh->n_ids; i++)
    free(gh->ids[i].repo);
  free(gh->ids);
  al_ghapi_free(gh->api);
  al_secret_free(gh->gl_admin);
  pthread_mutex_destroy(&gh->lock);
  free(gh);
}

void al_token_clear(al_token *t)
{
  al_secret_free(t->value);
  memset(t, 0, sizeof *t);
}

void al_perm_set_format(const al_perm_set *s, char *out, size_t outsz)
{
  size_t off = 0;
  out[0] = '\0';
  for (size_t i = 0; i < s->n && off < outsz; i++) {
    int n = snprintf(out + off, outsz - off, "%s%s:%s", i ? "," : "", s->items[i].name,
                     s->items[i].write ? "write" : "read");
    if (n < 0)
      break;
    off += (size_t)n;
  }
}

int al_parse_iso8601(const char *s, time_t *out)
{
  struct tm tm = {0};
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end)
    return -1;
  if (*end == '.') { /* fractional seconds */
    end++;
    while (isdigit((unsigned char)*end))
      end++;
  }
  if (strcmp(end, "Z") != 0 && strcmp(end, "+00:00") != 0)
    return -1;
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *out = t;
  return 0;
}

/* ---- HTTP: the one forge client (forge/ghapi.h) -------------------- */

/* A request through the one forge client, with the app's primary rate
 * limit checked first for app-JWT calls (`app`): when GitHub last said the
 * app has no request left until a reset further away than
 * api.max_rate_limit_wait, fail at once instead of spending a request.
 * Any HTTP status is a success here (the caller judges r->cls); -1 with
 * err only when no answer came. */
static int gh_request(al_gh *gh, const char *method, const char *path, const char *bearer, bool app,
                      json_t *body, al_ghapi_resp *r, al_error *err)
{
  if (app) {
    pthread_mutex_lock(&gh->lock);
    long long rem = gh->app_remaining;
    time_t reset = gh->app_reset;
    pthread_mutex_unlock(&gh->lock);
    time_t now = time(NULL);
    if (rem == 0 && reset > now && (uint64_t)(reset - now) * 1000 > gh->cfg->max_rate_wait_ms)
      return al_error_set(err, EAGAIN, "%s %s: the app's rate limit is exhausted for %llds more",
                          method, path, (long long)(reset - now));
  }
  al_ghapi_resp_free(r);
  if (al_ghapi_request(gh->api, method, path, bearer, body, r, err) < 0)
    return -1;
  if (app && r->rl_remaining >= 0) {
    pthread_mutex_lock(&gh->lock);
    gh->app_remaining = r->rl_remaining;
    gh->app_reset = (time_t)r->rl_reset;
    pthread_mutex_unlock(&gh->lock);
  }
  return 0;
}

/* "POST /x: HTTP 422: The permissions requested..." (the forge client's
 * class and note when they add something: rate limited, redirected). */
static int status_error(const char *method, const char *path, const al_ghapi_resp *r, al_error *err)
{
  int code = r->cls == AL_GHAPI_UNAUTHORIZED || r->cls == AL_GHAPI_FORBIDDEN ? EACCES
             : r->cls == AL_GHAPI_RATE_LIMITED                               ? EAGAIN
                                                                             : EPROTO;
  if (r->cls == AL_GHAPI_RATE_LIMITED || r->cls == AL_GHAPI_REDIRECTED || r->note[0])
    return al_error_set(err, code, "%s %s: HTTP %ld%s%s (%s%s%s)", method, path, r->status,
                        r->message[0] ? ": " : "", r->message, al_ghapi_class_name(r->cls),
                        r->note[0] ? "; " : "", r->note);
  return al_error_set(err, code, "%s %s: HTTP %ld%s%s", method, path, r->status,
                      r->message[0] ? ": " : "", r->message);
}

/* ---- minting ---------------------------------------------------------- */

static int make_jwt(al_gh *gh, char **out, al_error *err)
{
  const al_broker_config *c = gh->cfg;
  return al_app_jwt(gh->key, c->app_id ? c->app_id : c->client_id, c->app_id != NULL, time(NULL),
                    out, err);
}

static long long cached_repo_id(al_gh *gh, const char *repo)
{
  long long id = 0;
  pthread_mutex_lock(&gh->lock);
  for (size_t i = 0; i < gh->n_ids; i++)
    if (strcasecmp(gh->ids[i].repo, repo) == 0)
      id = gh->ids[i].id;
  pthread_mutex_unlock(&gh->lock);
  return id;
}

static void cache_repo_id(al_gh *gh, const char *repo, long long id)
{
  pthread_mutex_lock(&gh->lock);
  size_t i;
  for (i = 0; i < gh->n_ids; i++)
    if (strcasecmp(gh->ids[i].repo, repo) == 0)
      break;
  if (i == gh->n_ids) {
    if (id == 0) {
      pthread_mutex_unlock(&gh->lock);
      return;
    }
    gh->ids = al_xrealloc(gh->ids, (gh->n_ids + 1) * sizeof *gh->ids);
    gh->ids[i].repo = al_xstrdup(repo);
    gh->n_ids++;
  }
  gh->ids[i].id = id;
  pthread_mutex_unlock(&gh->lock);
}

static bool token_chars_ok(const char *s, size_t n)
{
  if (n < 16 || n > TOKEN_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
      return false;
  return true;
}

/* Check the granted permissions against the asked ones and copy them. */
static int check_granted(json_t *perms, const al_perm_set *asked, al_perm_set *granted,
                         al_error *err)
{
  if (!json_is_object(perms))
    return al_error_set(err, EPROTO, "the response has no `permissions` object");
  granted->n = 0;
  const char *k;
  json_t *v;
  json_object_foreach(perms, k, v)
  {
    const char *lvl = json_string_value(v);
    bool w;
    if (!lvl || (strcmp(lvl, "read") != 0 && strcmp(lvl, "write") != 0))
      return al_error_set(err, EPROTO, "the API granted `%s` at an unexpected level", k);
    w = strcmp(lvl, "write") == 0;
    const al_perm *a = al_perm_find(asked, k);
    bool ok = a ? (!w || a->write) : (strcmp(k, "metadata") == 0 && !w);
    if (!ok)
      return al_error_set(err, EPROTO, "the API granted `%s: %s`, which was not asked for", k, lvl);
    if (granted->n < AL_ARRAY_SIZE(granted->items) && strlen(k) < AL_PERM_NAME_MAX) {
      snprintf(granted->items[granted->n].name, AL_PERM_NAME_MAX, "%s", k);
      granted->items[granted->n].write = w;
      granted->n++;
    }
  }
  for (size_t i = 0; i < asked->n; i++)
    if (!json_is_string(json_object_get(perms, asked->items[i].name)))
      return al_error_set(err, EPROTO, "the API did not grant `%s`", asked->items[i].name);
  return 0;
}

static int get_installation(al_gh *gh, const char *jwt, const char *repo, long long *id,
                            al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/installation", repo);
  al_ghapi_resp r = {0};
  if (gh_request(gh, "GET", path, jwt, true, NULL, &r, err) < 0)
    return -1;
  if (r.status != 200) {
    status_error("GET", path, &r, err);
    al_ghapi_resp_free(&r);
    return -1;
  }
  json_t *j = json_incref(r.json);
  al_ghapi_resp_free(&r);
  json_t *jid = json_object_get(j, "id");
  if (!json_is_integer(jid) || json_integer_value(jid) <= 0) {
    json_decref(j);
    return al_error_set(err, EPROTO, "GET %s: the response has no installation `id`", path);
  }
  json_t *susp = json_object_get(j, "suspended_at");
  if (susp && !json_is_null(susp)) {
    json_decref(j);
    return al_error_set(err, EACCES, "GET %s: the installation is suspended", path);
  }
  *id = json_integer_value(jid);
  json_decref(j);
  return 0;
}

/* ---- the App's own view (for the audit) ------------------------------ */

/* "HTTP 403: Resource not accessible by integration" (audit.c's wording) */
static void why_status(char *out, size_t n, const al_ghapi_resp *r)
{
  snprintf(out, n, "HTTP %ld%s%s", r->status, r->message[0] ? ": " : "", r->message);
}

void al_app_facts_free(al_app_facts *f)
{
  json_decref(f->permissions);
  memset(f, 0, sizeof *f);
}

/* Reads only what names the App and its installation: the audit (in the
 * caller's process) judges them. */
int al_gh_app_facts(al_gh *gh, const char *repo, al_app_facts *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  if (gh->gl_admin)
    return al_error_set(err, ENOTSUP,
                        "%s: a GitLab broker has no App to show (the GitLab audit is not built "
                        "yet, issue #30 item 4)",
                        repo);
  char *jwt = NULL;
  if (make_jwt(gh, &jwt, err) < 0)
    return -1;
  int ret = -1;
  al_ghapi_resp r = {0};
  al_autofree char *p = NULL; /* before the first goto: freed at `out` */
  char w[300];
  if (gh_request(gh, "GET", "/app", jwt, true, NULL, &r, err) < 0)
    goto out;
  if (r.status != 200) {
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
  snprintf(out->slug, sizeof out->slug, "%s", slug);
  out->app_id = json_integer_value(id);
  p = al_strdup_printf("/repos/%s/installation", repo);
  if (gh_request(gh, "GET", p, jwt, true, NULL, &r, err) < 0)
    goto out;
  if (r.status == 404) {
    al_error_set(err, ENOENT, "the App `%s` is not installed on %s (GET %s: 404)", out->slug, repo,
                 p);
    goto out;
  }
  if (r.status != 200) {
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
  out->installation_id = json_integer_value(iid);
  out->permissions = json_incref(perms);
  ret = 0;
out:
  al_ghapi_resp_free(&r);
  al_wipe_str(jwt);
  free(jwt);
  if (ret < 0)
    al_app_facts_free(out);
  return ret;
}

/* Parse and check a 201 access_tokens response into out. */
static int parse_minted(json_t *j, const char *repo, const al_perm_set *asked, al_token *out,
                        al_error *err)
{
  json_t *jt = json_object_get(j, "token");
  const char *tok = json_string_value(jt);
  size_t tl = tok ? json_string_length(jt) : 0;
  if (!tok || !token_chars_ok(tok, tl))
    return al_error_set(err, EPROTO, "the response has no well-formed `token`");
  out->value = al_secret_dupn(tok, tl);
  if (!out->value)
    return al_make_error(err, errno, "secret memory");
  al_secret_fingerprint(out->value, out->fp);
  const char *exp = json_string_value(json_object_get(j, "expires_at"));
  if (!exp || strlen(exp) >= sizeof out->expires_at_str ||
      al_parse_iso8601(exp, &out->expires_at) < 0)
    return al_error_set(err, EPROTO, "the response has no valid `expires_at`");
  snprintf(out->expires_at_str, sizeof out->expires_at_str, "%s", exp);
  if (out->expires_at <= time(NULL))
    return al_error_set(err, EPROTO, "the token expires at %s, which is already past", exp);
  if (check_granted(json_object_get(j, "permissions"), asked, &out->perms, err) < 0)
    return -1;
  const char *sel = json_string_value(json_object_get(j, "repository_selection"));
  if (sel && strcmp(sel, "selected") != 0)
    return al_error_set(err, EPROTO, "the token covers `%s` repositories, not the one selected",
                        sel);
  json_t *repos = json_object_get(j, "repositories");
  if (repos) {
    json_t *r0 = json_array_get(repos, 0);
    const char *fn = json_string_value(json_object_get(r0, "full_name"));
    json_t *rid = json_object_get(r0, "id");
    if (json_array_size(repos) != 1 || !fn || strcasecmp(fn, repo) != 0 || !json_is_integer(rid))
      return al_error_set(err, EPROTO, "the token's repositories are not exactly `%s`", repo);
    out->repo_id = json_integer_value(rid);
  }
  return 0;
}

/* ---- GitLab (gitlab.token_file): project access tokens ---------------- */

/* A role's scopes (GitLab's are coarser than an App's permissions: the
 * git token needs `api` for the supervisor's merge request; the ticket
 * token's notes need it too). The role's GitHub-named permissions stay
 * the broker's contract with the client; docs/gitlab.md maps them. */
static const char *const gl_git_scopes[] = {"read_repository", "write_repository", "api", NULL};
static const char *const gl_ticket_scopes[] = {"api", NULL};
/* A lease that asks no write (serve's trigger check: pull_requests read):
 * GitLab's read scopes only, so the token can read the project, its
 * members and merge requests, and fetch, but write nothing. */
static const char *const gl_read_scopes[] = {"read_api", "read_repository", NULL};

static bool perms_read_only(const al_perm_set *perms)
{
  for (size_t i = 0; i < perms->n; i++)
    if (perms->items[i].write)
      return false;
  return true;
}

/* The audit's read token (forge/audit_gitlab.h wants a Maintainer's
 * read_api: protected branches, variables and deploy tokens need the role). */
static const char *const gl_audit_scopes[] = {"read_api", NULL};

static int gl_mint_as(al_gh *gh, const char *name, const char *const *scopes, int level,
                      const char *repo, const al_perm_set *perms, al_token *out, al_error *err)
{
  char exp[11];
  al_gl_expiry_tomorrow(time(NULL), exp);
  al_gl_token t;
  if (al_gl_token_mint(gh->api, gh->gl_admin, repo, name, scopes, level, exp, &t, err) < 0)
    return al_error_wrap(err, "GitLab project %s", repo);
  out->installation_id = t.id; /* GitLab: the project access token's id */
  int rc = 0;
  size_t tl = strlen(t.value);
  if (!token_chars_ok(t.value, tl)) {
    rc = al_error_set(err, EPROTO, "GitLab project %s: the minted token is not well-formed", repo);
  } else if (t.access_level != level || strcmp(t.expires_at, exp) != 0) {
    rc = al_error_set(err, EPROTO,
                      "GitLab project %s: the token was minted with access level %d expiring "
                      "`%s`, not %d expiring %s",
                      repo, t.access_level, t.expires_at, level, exp);
  } else if (!(out->value = al_secret_dupn(t.value, tl))) {
    rc = al_make_error(err, errno, "secret memory");
  }
  if (rc < 0) {
    /* a token was issued but is not what was asked: kill it */
    bool confirmed;
    al_error rerr = {0};
    if (al_gl_token_revoke(gh->api, gh->gl_admin, repo, &t, &confirmed, &rerr) < 0)
      al_error_log("revoking the rejected GitLab token %lld: %s", t.id, rerr.msg);
    al_gl_token_wipe(&t);
    return -1;
  }
  al_gl_token_wipe(&t);
  al_secret_fingerprint(out->value, out->fp);
  /* GitLab's expires_at is a day: the token dies at its start, UTC */
  snprintf(out->expires_at_str, sizeof out->expires_at_str, "%sT00:00:00Z", exp);
  (void)al_parse_iso8601(out->expires_at_str, &out->expires_at);
  out->perms = *perms;
  return 0;
}

static int gl_mint(al_gh *gh, al_role role, const char *repo, const al_perm_set *perms,
                   al_token *out, al_error *err)
{
  char name[32];
  snprintf(name, sizeof name, "airlock-%s", al_role_name(role));
  const char *const *scopes = perms_read_only(perms) ? gl_read_scopes
                              : role == AL_ROLE_GIT  ? gl_git_scopes
                                                     : gl_ticket_scopes;
  return gl_mint_as(gh, name, scopes, 30, repo, perms, out, err);
}

bool al_gh_is_gitlab(const al_gh *gh)
{
  return gh->gl_admin != NULL;
}

int al_gh_mint_gl_audit(al_gh *gh, const char *repo, al_token *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  out->role = AL_ROLE_GIT;
  snprintf(out->repo, sizeof out->repo, "%s", repo);
  if (!gh->gl_admin)
    return al_error_set(err, EINVAL, "the GitLab audit token: this broker is not GitLab's");
  al_perm_set none = {0};
  return gl_mint_as(gh, "airlock-audit", gl_audit_scopes, 40, repo, &none, out, err);
}

/* DELETE /projects/:id/access_tokens/:token_id with the broker's token
 * (the id kept with the token; a token kept without one is revoked with
 * itself, DELETE /personal_access_tokens/self), then the 401 confirmed
 * with the token itself (forge/gitlab.c). */
static int gl_revoke(al_gh *gh, const al_token *t, bool *confirmed, al_error *err)
{
  al_gl_token g;
  memset(&g, 0, sizeof g);
  g.id = t->installation_id;
  if (strlen(t->value) >= sizeof g.value)
    return al_error_set(err, EINVAL, "token %s: too long for GitLab", t->fp);
  snprintf(g.value, sizeof g.value, "%s", t->value);
  int rc;
  if (g.id > 0) {
    rc = al_gl_token_revoke(gh->api, gh->gl_admin, t->repo, &g, confirmed, err);
  } else {
    al_ghapi_resp r = {0};
    rc =
        al_ghapi_request(gh->api, "DELETE", "/personal_access_tokens/self", g.value, NULL, &r, err);
    al_ghapi_resp_free(&r);
    al_ghapi_resp s = {0};
    *confirmed = rc == 0 &&
                 al_ghapi_get(gh->api, "/personal_access_tokens/self", g.value, &s, err) == 0 &&
                 s.status == 401;
    al_ghapi_resp_free(&s);
    if (rc == 0 && !*confirmed)
      rc = al_error_set(err, EIO, "token %s still answers after its revocation", t->fp);
  }
  al_gl_token_wipe(&g);
  return rc < 0 ? al_error_wrap(err, "revoking token %s", t->fp) : 0;
}

int al_gh_mint(al_gh *gh, al_role role, const char *repo, const al_perm_set *perms, al_token *out,
               al_error *err)
{
  memset(out, 0, sizeof *out);
  out->role = role;
  snprintf(out->repo, sizeof out->repo, "%s", repo);
  if (gh->gl_admin)
    return gl_mint(gh, role, repo, perms, out, err);
  char *jwt = NULL;
  if (make_jwt(gh, &jwt, err) < 0)
    return -1;
  int ret = -1;
  long long inst = 0;
  al_ghapi_resp r = {0};
  json_t *b = NULL;
  al_autofree char *path = NULL;
  if (get_installation(gh, jwt, repo, &inst, err) < 0)
    goto out;
  out->installation_id = inst;

  /* Body: the one repository (by id once known, by name the first time)
   * and exactly the permissions asked. */
  b = json_object();
  long long rid = cached_repo_id(gh, repo);
  if (rid > 0) {
    json_object_set_new(b, "repository_ids", json_pack("[I]", (json_int_t)rid));
  } else {
    const char *name = strchr(repo, '/') + 1;
    json_object_set_new(b, "repositories", json_pack("[s]", name));
  }
  json_t *pj = json_object();
  for (size_t i = 0; i < perms->n; i++)
    json_object_set_new(pj, perms->items[i].name,
                        json_string(perms->items[i].write ? "write" : "read"));
  json_object_set_new(b, "permissions", pj);
  path = al_strdup_printf("/app/installations/%lld/access_tokens", inst);
  if (gh_request(gh, "POST", path, jwt, true, b, &r, err) < 0)
    goto out;
  if (r.status != 201) {
    status_error("POST", path, &r, err);
    if (r.status == 422 && rid > 0)
      cache_repo_id(gh, repo, 0); /* the id may be stale: ask by name next time */
    goto out;
  }
  json_t *j = json_incref(r.json);
  al_ghapi_resp_free(&r);
  if (!j) {
    al_error_set(err, EPROTO, "POST %s: the response is not JSON", path);
    goto out;
  }
  int pr = parse_minted(j, repo, perms, out, err);
  /* Wipe jansson's copy of the token before it is freed. */
  json_t *jt = json_object_get(j, "token");
  if (json_is_string(jt))
    OPENSSL_cleanse((char *)json_string_value(jt), json_string_length(jt));
  json_decref(j);
  if (pr < 0) {
    al_error_wrap(err, "POST %s", path);
    if (out->value) { /* a token was issued but is unusable: kill it */
      bool confirmed;
      al_error rerr;
      if (al_gh_revoke(gh, out, &confirmed, &rerr) < 0)
        al_error_log("revoking rejected token %s: %s", out->fp, rerr.msg);
    }
    al_token_clear(out);
    goto out;
  }
  if (out->repo_id > 0)
    cache_repo_id(gh, repo, out->repo_id);
  ret = 0;
out:
  al_ghapi_resp_free(&r);
  json_decref(b);
  al_wipe_str(jwt);
  free(jwt);
  return ret;
}

/* ---- revocation ------------------------------------------------------- */

/* 1: the token gets 401 (dead), 0: it still works, -1: could not tell. */
static int probe_token(al_gh *gh, const al_token *t, al_error *err)
{
  al_autofree char *p2 = al_strdup_printf("/repos/%s", t->repo);
  const char *paths[] = {"/installation/repositories?per_page=1", p2};
  char last[300] = "";
  for (size_t i = 0; i < AL_ARRAY_SIZE(paths); i++) {
    al_ghapi_resp r = {0};
    if (gh_request(gh, "GET", paths[i], t->value, false, NULL, &r, err) < 0)
      return -1;
    al_ghapi_class cls = r.cls;
    al_ghapi_describe(&r, last, sizeof last);
    al_ghapi_resp_free(&r);
    if (cls == AL_GHAPI_UNAUTHORIZED)
      return 1;
    if (cls == AL_GHAPI_OK)
      return 0;
  }
  return al_error_set(err, EPROTO, "no probe endpoint answered 401 or 2xx (last: %s)", last);
}

static int revoke_once(al_gh *gh, const al_token *t, al_error *err)
{
  al_ghapi_resp r = {0};
  if (gh_request(gh, "DELETE", "/installation/token", t->value, false, NULL, &r, err) < 0)
    return al_error_wrap(err, "revoking token %s", t->fp);
  if (r.status != 204 && r.status != 401) {
    status_error("DELETE", "/installation/token", &r, err);
    al_ghapi_resp_free(&r);
    return al_error_wrap(err, "revoking token %s", t->fp);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

static void nap_ms(uint64_t ms)
{
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

int al_gh_revoke(al_gh *gh, const al_token *t, bool *confirmed, al_error *err)
{
  *confirmed = false;
  if (!t->value)
    return al_error_set(err, EINVAL, "token %s: no value to revoke", t->fp);
  if (gh->gl_admin)
    return gl_revoke(gh, t, confirmed, err);
  if (revoke_once(gh, t, err) < 0)
    return -1;
  /* GitHub documents no propagation time for a revocation (the stateless
   * JWT-shaped ghs_ tokens may stay valid for a moment): check again with
   * a short backoff, DELETE once more after the second check, and give up
   * only after AL_GH_REVOKE_CONFIRM_MS. */
  uint64_t start = al_now_ms(), wait = 250;
  for (unsigned check = 1;; check++) {
    int p = probe_token(gh, t, err);
    if (p < 0)
      return al_error_wrap(err, "confirming revocation of token %s", t->fp);
    if (p == 1) {
      *confirmed = true;
      if (check > 1)
        al_info("token %s: revocation confirmed (401) on check %u, after %llums", t->fp, check,
                (unsigned long long)(al_now_ms() - start));
      return 0;
    }
    uint64_t spent = al_now_ms() - start;
    if (spent + wait > AL_GH_REVOKE_CONFIRM_MS)
      return al_error_set(err, EPROTO,
                          "token %s still works %llums after DELETE /installation/token (%u "
                          "checks, two revocations)",
                          t->fp, (unsigned long long)spent, check);
    al_warn("token %s still works after DELETE /installation/token; checking again in %llums",
            t->fp, (unsigned long long)wait);
    nap_ms(wait);
    if (check == 2 && revoke_once(gh, t, err) < 0)
      return -1;
    wait = wait * 2 > 4000 ? 4000 : wait * 2;
  }
}
