/* The ticket drivers' HTTP (libcurl). See tickets.h. Jira and Linear get
 * their own small exchange (their headers and auth differ from GitHub's);
 * GitHub issues go through the one forge client (forge/ghapi.h). Bodies
 * are capped at 4 MiB, redirects are never followed, http only to a
 * loopback URL (the test doubles), a token only ever in one header. */
#include "tickets/tickets.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secmem.h"
#include "common/util.h"
#include "forge/appconfig.h"
#include "forge/ghapi.h"
#include "tickets/codec_int.h"

#define BODY_MAX (4u * 1024 * 1024)

typedef struct buf {
  char *p;
  size_t n;
  bool over;
} buf;

static size_t on_body(char *d, size_t sz, size_t nm, void *u)
{
  buf *b = u;
  size_t n = sz * nm;
  if (b->n + n > BODY_MAX) {
    b->over = true;
    return 0;
  }
  char *np = realloc(b->p, b->n + n + 1);
  if (!np)
    return 0;
  memcpy(np + b->n, d, n);
  b->p = np;
  b->n += n;
  b->p[b->n] = '\0';
  return n;
}

/* One exchange: method, c->url + path, the JSON body (or NULL). *out the
 * answer's body; *status its status. Errors name the method and path. */
static int exchange(const al_tk_config *c, const char *method, const char *path, const char *token,
                    const json_t *body, long *status, buf *out, al_error *err)
{
  *status = 0; /* set on every path, the refusals' included */
  const char *why = NULL;
  if (!c->url || al_api_url_check(c->url, &why) < 0)
    return al_error_set(err, EINVAL, "%s: the ticket URL `%.100s` is refused: %s",
                        al_tk_kind_name(c->kind), c->url ? c->url : "(none)", why ? why : "");
  char url[1024];
  if ((size_t)snprintf(url, sizeof url, "%s%s", c->url, path) >= sizeof url)
    return al_error_set(err, EINVAL, "%s %s: URL too long", method, path);
  CURL *h = curl_easy_init();
  if (!h)
    return al_error_set(err, ENOMEM, "%s %s: curl_easy_init failed", method, path);
  char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
  struct curl_slist *hd = NULL, *pin = NULL;
  hd = curl_slist_append(hd, "Accept: application/json");
  hd = curl_slist_append(hd, "Expect:");
  if (payload)
    hd = curl_slist_append(hd, "Content-Type: application/json");
  /* The token: Jira's API tokens are Basic e-mail:token; OAuth and Linear
   * API keys as their docs say (Linear: `Authorization: <API key>`, or
   * `Bearer <OAuth token>`; we send Bearer for OAuth, the bare key else). */
  char *auth = NULL;
  size_t auth_len = 0;
  if (token && c->kind == AL_TK_JIRA && c->user) {
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
    curl_easy_setopt(h, CURLOPT_PASSWORD, token);
  } else if (token) {
    bool bare = c->kind == AL_TK_LINEAR && strncmp(token, "lin_api_", 8) == 0;
    auth_len = strlen(token) + 32;
    auth = al_xmalloc(auth_len);
    snprintf(auth, auth_len, "Authorization: %s%s", bare ? "" : "Bearer ", token);
    hd = curl_slist_append(hd, auth);
  }
  if (c->resolve)
    pin = curl_slist_append(NULL, c->resolve);
  bool loopback_http = strncmp(c->url, "http://", 7) == 0;
  uint64_t to = c->timeout_ms ? c->timeout_ms : 30000;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, loopback_http ? "http" : "https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)to);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(to < 10000 ? to : 10000));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "airlock/0.1");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  if (payload)
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
  if (c->ca_file)
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
  if (pin)
    curl_easy_setopt(h, CURLOPT_RESOLVE, pin);
  CURLcode cc = curl_easy_perform(h);
  *status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(h);
  curl_slist_free_all(hd);
  curl_slist_free_all(pin);
  if (auth) {
    al_wipe_str(auth);
    free(auth);
  }
  free(payload);
  if (out->over)
    return al_error_set(err, EFBIG, "%s %s: the answer is over %u bytes", method, path, BODY_MAX);
  if (cc != CURLE_OK)
    return al_error_set(err, ECONNREFUSED, "%s %s: %s", method, path, curl_easy_strerror(cc));
  return 0;
}

static int want_2xx(const char *vendor, const char *method, const char *path, long status,
                    al_error *err)
{
  if (status >= 200 && status < 300)
    return 0;
  return al_error_set(err, status == 401 || status == 403 ? EACCES : EIO,
                      "%s: %s %s answered HTTP %ld", vendor, method, path, status);
}

static int jira_read(const al_tk_config *c, const al_tk_target *t, const char *token,
                     al_tk_ticket *out, al_error *err)
{
  char path[256];
  snprintf(path, sizeof path, "/rest/api/3/issue/%s?fields=summary,description,project", t->key);
  buf b = {0};
  long st;
  int rc = exchange(c, "GET", path, token, NULL, &st, &b, err);
  if (rc == 0)
    rc = want_2xx("jira", "GET", path, st, err);
  if (rc == 0)
    rc = al_tk_jira_read_issue(b.p, b.n, t, out, err);
  free(b.p);
  for (unsigned start = 0, page = 0; rc == 0 && page < 10; page++) {
    snprintf(path, sizeof path, "/rest/api/3/issue/%s/comment?startAt=%u&maxResults=50", t->key,
             start);
    buf cb = {0};
    bool more = false;
    size_t before = out->n_comments + out->comments_dropped;
    rc = exchange(c, "GET", path, token, NULL, &st, &cb, err);
    if (rc == 0)
      rc = want_2xx("jira", "GET", path, st, err);
    if (rc == 0)
      rc = al_tk_jira_read_comments(cb.p, cb.n, out, &more, err);
    free(cb.p);
    start += (unsigned)(out->n_comments + out->comments_dropped - before);
    if (!more)
      break;
  }
  if (rc < 0)
    al_tk_ticket_free(out);
  return rc;
}

static int linear_read(const al_tk_config *c, const al_tk_target *t, const char *token,
                       al_tk_ticket *out, al_error *err)
{
  json_t *req = al_tk_linear_issue_request(t->key);
  buf b = {0};
  long st;
  int rc = exchange(c, "POST", "/graphql", token, req, &st, &b, err);
  json_decref(req);
  if (rc == 0)
    rc = want_2xx("linear", "POST", "/graphql", st, err);
  if (rc == 0)
    rc = al_tk_linear_read_issue(b.p, b.n, t, out, err);
  free(b.p);
  return rc;
}

static int github_open(const al_tk_config *c, al_ghapi **api, al_error *err)
{
  al_ghapi_opts o = {.ca_file = c->ca_file, .timeout_ms = c->timeout_ms};
  if (al_ghapi_open(c->url, &o, api, err) < 0)
    return -1;
  if (c->resolve) {
    const char *pins[] = {c->resolve, NULL};
    al_ghapi_set_resolve(*api, pins);
  }
  return 0;
}

static int github_read(const al_tk_config *c, const al_tk_target *t, const char *token,
                       al_tk_ticket *out, al_error *err)
{
  al_ghapi *api = NULL;
  if (github_open(c, &api, err) < 0)
    return -1;
  char path[300];
  snprintf(path, sizeof path, "/repos/%s/issues/%lu", t->repo, t->number);
  al_ghapi_resp r = {0};
  int rc = al_ghapi_get(api, path, token, &r, err);
  if (rc == 0 && r.cls != AL_GHAPI_OK)
    rc = al_error_set(err, EIO, "github: GET %s answered HTTP %ld: %s", path, r.status, r.message);
  const char *title = rc == 0 ? al_tk_str(r.json, "title") : NULL;
  if (rc == 0 && !title)
    rc = al_error_set(err, EINVAL, "github: GET %s: the issue lacks `title`", path);
  if (rc == 0) {
    char num[24];
    snprintf(num, sizeof num, "#%lu", t->number);
    out->id = al_tk_dup(num + 1);
    out->key = al_tk_dup(num);
    out->title = al_tk_dup(title);
    out->body = al_tk_dup(al_tk_str(r.json, "body"));
    out->url = al_tk_dup(al_tk_str(r.json, "html_url"));
    out->project = al_tk_dup(t->repo);
  }
  al_ghapi_resp_free(&r);
  if (rc == 0) {
    snprintf(path, sizeof path, "/repos/%s/issues/%lu/comments?per_page=100", t->repo, t->number);
    al_ghapi_resp l = {0};
    rc = al_ghapi_get(api, path, token, &l, err);
    if (rc == 0 && (l.cls != AL_GHAPI_OK || !json_is_array(l.json)))
      rc = al_error_set(err, EIO, "github: GET %s answered HTTP %ld", path, l.status);
    size_t i;
    const json_t *cm;
    json_array_foreach(rc == 0 ? l.json : NULL, i, cm)
    {
      const json_t *id = json_object_get(cm, "id");
      char ids[32];
      snprintf(ids, sizeof ids, "%lld",
               json_is_integer(id) ? (long long)json_integer_value(id) : 0);
      al_tk_add_comment(out, ids, al_tk_str(cm, "user.login"), al_tk_str(cm, "body"));
    }
    al_ghapi_resp_free(&l);
  }
  al_ghapi_free(api);
  if (rc < 0)
    al_tk_ticket_free(out);
  return rc;
}

int al_tk_read(const al_tk_config *c, const al_tk_target *t, const char *token, al_tk_ticket *out,
               al_error *err)
{
  memset(out, 0, sizeof *out);
  if (c->kind != t->kind)
    return al_error_set(err, EINVAL, "ticket: the target is a %s ticket, the config %s",
                        al_tk_kind_name(t->kind), al_tk_kind_name(c->kind));
  switch (c->kind) {
  case AL_TK_JIRA:
    return jira_read(c, t, token, out, err);
  case AL_TK_LINEAR:
    return linear_read(c, t, token, out, err);
  case AL_TK_GITHUB:
  default:
    return github_read(c, t, token, out, err);
  }
}

int al_tk_post_comment(const al_tk_config *c, const al_tk_target *t, const char *token,
                       const char *text, char **url, al_error *err)
{
  if (url)
    *url = NULL;
  if (c->kind != t->kind)
    return al_error_set(err, EINVAL, "ticket: the target is a %s ticket, the config %s",
                        al_tk_kind_name(t->kind), al_tk_kind_name(c->kind));
  char path[300];
  buf b = {0};
  long st = 0;
  int rc;
  char *link = NULL;
  if (c->kind == AL_TK_JIRA) {
    snprintf(path, sizeof path, "/rest/api/3/issue/%s/comment", t->key);
    json_t *body = al_tk_jira_comment_body(text);
    rc = exchange(c, "POST", path, token, body, &st, &b, err);
    json_decref(body);
    if (rc == 0)
      rc = want_2xx("jira", "POST", path, st, err);
    if (rc == 0) {
      json_t *j = al_tk_json_object("jira", b.p, b.n, err);
      rc = j ? 0 : -1;
      if (j) {
        link = al_tk_dup(al_tk_str(j, "self"));
        json_decref(j);
      }
    }
  } else if (c->kind == AL_TK_LINEAR) {
    /* commentCreate takes the issue's id; the identifier is accepted as one
     * (Linear resolves "ENG-42" as an issue id in every issueId field). */
    json_t *body = al_tk_linear_comment_request(t->key, text);
    rc = exchange(c, "POST", "/graphql", token, body, &st, &b, err);
    json_decref(body);
    if (rc == 0)
      rc = want_2xx("linear", "POST", "/graphql", st, err);
    if (rc == 0)
      rc = al_tk_linear_read_comment(b.p, b.n, &link, err);
  } else {
    al_ghapi *api = NULL;
    rc = github_open(c, &api, err);
    if (rc == 0) {
      snprintf(path, sizeof path, "/repos/%s/issues/%lu/comments", t->repo, t->number);
      json_t *body = json_pack("{s:s}", "body", text);
      al_ghapi_resp r = {0};
      rc = al_ghapi_request(api, "POST", path, token, body, &r, err);
      json_decref(body);
      if (rc == 0 && r.cls != AL_GHAPI_OK)
        rc = al_error_set(err, EIO, "github: POST %s answered HTTP %ld: %s", path, r.status,
                          r.message);
      if (rc == 0)
        link = al_tk_dup(al_tk_str(r.json, "html_url"));
      al_ghapi_resp_free(&r);
      al_ghapi_free(api);
    }
  }
  free(b.p);
  if (rc == 0 && url)
    *url = link;
  else
    free(link);
  return rc;
}
