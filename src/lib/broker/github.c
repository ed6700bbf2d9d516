/* GitHub REST calls of the broker: see github.h. */
#include "broker/github.h"

#include <ctype.h>
#include <curl/curl.h>
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

#include "broker/jwt.h"
#include "broker/secmem.h"
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
  bool allow_http;
  pthread_mutex_t lock;
  /* Primary rate limit of the app (JWT) as last reported. */
  long long app_remaining; /* -1: unknown */
  time_t app_reset;
  struct repo_id *ids; /* repository ids learned from earlier mints */
  size_t n_ids;
};

struct http_resp {
  long status;
  char *body; /* NUL-terminated, wiped on free */
  size_t len;
  long long retry_after;  /* seconds, -1 unknown */
  long long rl_remaining; /* -1 unknown */
  long long rl_reset;     /* epoch seconds, -1 unknown */
};

static void resp_free(struct http_resp *r)
{
  if (r->body) {
    OPENSSL_cleanse(r->body, r->len);
    free(r->body);
  }
  memset(r, 0, sizeof *r);
}

int al_gh_new(const al_broker_config *cfg, EVP_PKEY *key, al_gh **out, al_error *err)
{
  al_gh *gh = al_xcalloc(1, sizeof *gh);
  gh->cfg = cfg;
  gh->key = key;
  gh->allow_http = strncmp(cfg->api_url, "http://", 7) == 0;
  gh->app_remaining = -1;
  if (pthread_mutex_init(&gh->lock, NULL) != 0) {
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

/* ---- HTTP ------------------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
  struct http_resp *r = ud;
  size_t n = size * nmemb;
  if (r->len + n > BODY_MAX)
    return 0; /* CURLE_WRITE_ERROR */
  char *nb = malloc(r->len + n + 1);
  if (!nb)
    return 0;
  if (r->body) {
    memcpy(nb, r->body, r->len);
    OPENSSL_cleanse(r->body, r->len);
    free(r->body);
  }
  memcpy(nb + r->len, ptr, n);
  r->len += n;
  nb[r->len] = '\0';
  r->body = nb;
  return n;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
  struct http_resp *r = ud;
  size_t n = size * nmemb;
  /* A new status line (after a 100 Continue) resets what we saw. */
  if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
    r->retry_after = r->rl_remaining = r->rl_reset = -1;
    return n;
  }
  al_http_header_number(line, n, "retry-after", &r->retry_after);
  al_http_header_number(line, n, "x-ratelimit-remaining", &r->rl_remaining);
  al_http_header_number(line, n, "x-ratelimit-reset", &r->rl_reset);
  return n;
}

static void slist_wipe_free(struct curl_slist *l)
{
  for (struct curl_slist *p = l; p; p = p->next)
    al_wipe_str(p->data);
  curl_slist_free_all(l);
}

/* One HTTP exchange, no retries. Returns the CURLcode. */
static CURLcode http_once(al_gh *gh, const char *method, const char *url, const char *bearer,
                          const char *body, struct http_resp *r, char *errbuf)
{
  CURL *c = curl_easy_init();
  if (!c)
    return CURLE_OUT_OF_MEMORY;
  struct curl_slist *h = NULL;
  h = curl_slist_append(h, "Accept: application/vnd.github+json");
  h = curl_slist_append(h, "X-GitHub-Api-Version: " API_VERSION);
  if (body)
    h = curl_slist_append(h, "Content-Type: application/json");
  h = curl_slist_append(h, "Expect:");
  char *auth = al_strdup_printf("Authorization: Bearer %s", bearer);
  h = curl_slist_append(h, auth);
  al_wipe_str(auth);
  free(auth);

  r->retry_after = r->rl_remaining = r->rl_reset = -1;
  errbuf[0] = '\0';
  uint64_t t = gh->cfg->http_timeout_ms;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, gh->allow_http ? "http,https" : "https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)t);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(t < 10000 ? t : 10000));
  curl_easy_setopt(c, CURLOPT_USERAGENT,
                   "airlock-broker/"
                   "0.1");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  if (gh->cfg->ca_file)
    curl_easy_setopt(c, CURLOPT_CAINFO, gh->cfg->ca_file);
  if (strcmp(method, "GET") != 0)
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_cleanup(c);
  slist_wipe_free(h);
  return rc;
}

static bool curl_retryable(CURLcode rc)
{
  switch (rc) {
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return true;
  default:
    return false;
  }
}

static void sleep_ms(uint64_t ms)
{
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* The API's own message from an error body, sanitised, or "". */
static void api_message(const struct http_resp *r, char *out, size_t outsz)
{
  out[0] = '\0';
  if (!r->body)
    return;
  json_t *j = json_loadb(r->body, r->len, 0, NULL);
  const char *m = json_string_value(json_object_get(j, "message"));
  if (m) {
    size_t k = 0;
    for (size_t i = 0; m[i] && k + 1 < outsz && i < 300; i++)
      out[k++] = isprint((unsigned char)m[i]) ? m[i] : '?';
    out[k] = '\0';
  }
  json_decref(j);
}

/* Perform a request with the retry and rate-limit policy of github.h.
 * `app` marks app-JWT calls (their primary rate limit is tracked). On a
 * transport failure returns -1 with err; any HTTP status is a success
 * here (the caller judges it). */
static int gh_request(al_gh *gh, const char *method, const char *path, const char *bearer, bool app,
                      const char *body, struct http_resp *r, al_error *err)
{
  al_autofree char *url = al_strdup_printf("%s%s", gh->cfg->api_url, path);
  unsigned attempts = 0, waits = 0;
  uint64_t backoff = 250;
  char errbuf[CURL_ERROR_SIZE] = "";
  for (;;) {
    if (app) {
      pthread_mutex_lock(&gh->lock);
      long long rem = gh->app_remaining;
      time_t reset = gh->app_reset;
      pthread_mutex_unlock(&gh->lock);
      time_t now = time(NULL);
      if (rem == 0 && reset > now) {
        uint64_t wait = (uint64_t)(reset - now) * 1000;
        if (wait > gh->cfg->max_rate_wait_ms)
          return al_error_set(err, EAGAIN,
                              "%s %s: the app's rate limit is exhausted for %llds more", method,
                              path, (long long)(reset - now));
        al_warn("%s %s: rate limit exhausted, waiting %llds", method, path,
                (long long)(reset - now));
        sleep_ms(wait);
      }
    }
    resp_free(r);
    CURLcode rc = http_once(gh, method, url, bearer, body, r, errbuf);
    if (rc != CURLE_OK) {
      const char *what = errbuf[0] ? errbuf : curl_easy_strerror(rc);
      if (curl_retryable(rc) && attempts < gh->cfg->retries) {
        attempts++;
        al_warn("%s %s: %s; retry %u/%u in %llums", method, url, what, attempts, gh->cfg->retries,
                (unsigned long long)backoff);
        sleep_ms(backoff);
        backoff = backoff * 2 > 8000 ? 8000 : backoff * 2;
        continue;
      }
      return al_error_set(err, rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
                          "%s %s: %s (after %u attempts)", method, url, what, attempts + 1);
    }
    if (app && r->rl_remaining >= 0) {
      pthread_mutex_lock(&gh->lock);
      gh->app_remaining = r->rl_remaining;
      gh->app_reset = (time_t)r->rl_reset;
      pthread_mutex_unlock(&gh->lock);
    }
    bool limited =
        (r->status == 403 || r->status == 429) && (r->retry_after >= 0 || r->rl_remaining == 0);
    if (limited && waits < 3) {
      time_t now = time(NULL);
      long long wait_s = r->retry_after >= 0 ? r->retry_after
                         : r->rl_reset > now ? r->rl_reset - now
                                             : 60;
      if ((uint64_t)wait_s * 1000 <= gh->cfg->max_rate_wait_ms) {
        waits++;
        al_warn("%s %s: rate limited (%ld), waiting %llds as the API asks", method, path, r->status,
                wait_s);
        sleep_ms((uint64_t)wait_s * 1000 + 100);
        continue;
      }
      return al_error_set(err, EAGAIN, "%s %s: rate limited for %llds (more than %llums)", method,
                          path, wait_s, (unsigned long long)gh->cfg->max_rate_wait_ms);
    }
    if (r->status >= 500 && attempts < gh->cfg->retries) {
      attempts++;
      al_warn("%s %s: HTTP %ld; retry %u/%u in %llums", method, path, r->status, attempts,
              gh->cfg->retries, (unsigned long long)backoff);
      sleep_ms(backoff);
      backoff = backoff * 2 > 8000 ? 8000 : backoff * 2;
      continue;
    }
    return 0;
  }
}

static int status_error(const char *method, const char *path, const struct http_resp *r,
                        al_error *err)
{
  char msg[320];
  api_message(r, msg, sizeof msg);
  return al_error_set(err, r->status == 401 || r->status == 403 ? EACCES : EPROTO,
                      "%s %s: HTTP %ld%s%s", method, path, r->status, msg[0] ? ": " : "", msg);
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
  struct http_resp r = {0};
  if (gh_request(gh, "GET", path, jwt, true, NULL, &r, err) < 0)
    return -1;
  if (r.status != 200) {
    status_error("GET", path, &r, err);
    resp_free(&r);
    return -1;
  }
  json_error_t je;
  json_t *j = json_loadb(r.body ? r.body : "", r.len, 0, &je);
  resp_free(&r);
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

int al_gh_mint(al_gh *gh, al_role role, const char *repo, const al_perm_set *perms, al_token *out,
               al_error *err)
{
  memset(out, 0, sizeof *out);
  out->role = role;
  snprintf(out->repo, sizeof out->repo, "%s", repo);
  char *jwt = NULL;
  if (make_jwt(gh, &jwt, err) < 0)
    return -1;
  int ret = -1;
  long long inst = 0;
  struct http_resp r = {0};
  char *body = NULL;
  al_autofree char *path = NULL;
  if (get_installation(gh, jwt, repo, &inst, err) < 0)
    goto out;
  out->installation_id = inst;

  /* Body: the one repository (by id once known, by name the first time)
   * and exactly the permissions asked. */
  json_t *b = json_object();
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
  body = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(b);
  path = al_strdup_printf("/app/installations/%lld/access_tokens", inst);
  if (gh_request(gh, "POST", path, jwt, true, body, &r, err) < 0)
    goto out;
  if (r.status != 201) {
    status_error("POST", path, &r, err);
    if (r.status == 422 && rid > 0)
      cache_repo_id(gh, repo, 0); /* the id may be stale: ask by name next time */
    goto out;
  }
  json_t *j = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
  resp_free(&r);
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
  resp_free(&r);
  if (body)
    free(body);
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
  for (size_t i = 0; i < AL_ARRAY_SIZE(paths); i++) {
    struct http_resp r = {0};
    if (gh_request(gh, "GET", paths[i], t->value, false, NULL, &r, err) < 0)
      return -1;
    long st = r.status;
    resp_free(&r);
    if (st == 401)
      return 1;
    if (st >= 200 && st < 300)
      return 0;
  }
  return al_error_set(err, EPROTO, "no probe endpoint answered 401 or 2xx");
}

int al_gh_revoke(al_gh *gh, const al_token *t, bool *confirmed, al_error *err)
{
  *confirmed = false;
  if (!t->value)
    return al_make_error(err, EINVAL, "token %s: no value to revoke", t->fp);
  for (int round = 0; round < 2; round++) {
    struct http_resp r = {0};
    if (gh_request(gh, "DELETE", "/installation/token", t->value, false, NULL, &r, err) < 0)
      return al_error_wrap(err, "revoking token %s", t->fp);
    long st = r.status;
    if (st != 204 && st != 401) {
      status_error("DELETE", "/installation/token", &r, err);
      resp_free(&r);
      return al_error_wrap(err, "revoking token %s", t->fp);
    }
    resp_free(&r);
    int p = probe_token(gh, t, err);
    if (p < 0)
      return al_error_wrap(err, "confirming revocation of token %s", t->fp);
    if (p == 1) {
      *confirmed = true;
      return 0;
    }
    al_warn("token %s still works after DELETE /installation/token (HTTP %ld); retrying", t->fp,
            st);
  }
  return al_error_set(err, EPROTO, "token %s still works after two revocations", t->fp);
}
