/* Read-only GitHub REST client: see ghapi.h. */
#include "forge/ghapi.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/config.h"
#include "broker/secmem.h"
#include "common/log.h"
#include "common/util.h"

#define BODY_MAX (4u << 20)
#define API_VERSION "2022-11-28"
#define ATTEMPTS 3
#define MAX_RATE_WAIT_S 60
#define MAX_PAGES 20

struct al_ghapi {
  char *base;
  char *ca_file;
  uint64_t timeout_ms;
  bool allow_http;
  struct curl_slist *resolve; /* CURLOPT_RESOLVE entries (policy pins) */
};

struct raw {
  char *body;
  size_t len;
  bool too_big;
  long long retry_after;
  long long rl_remaining;
  long long rl_reset;
  char *next; /* Link rel="next" URL */
};

static void raw_free(struct raw *r)
{
  free(r->body);
  free(r->next);
  memset(r, 0, sizeof *r);
}

int al_ghapi_new(const char *api_url, const char *ca_file, uint64_t timeout_ms, al_ghapi **out,
                 al_error *err)
{
  const char *why = NULL;
  if (!api_url || al_api_url_check(api_url, &why) < 0)
    return al_make_error(err, EINVAL, "API URL `%s`: %s", api_url ? api_url : "(none)",
                         why ? why : "missing");
  al_ghapi *c = al_xcalloc(1, sizeof *c);
  c->base = al_xstrdup(api_url);
  size_t n = strlen(c->base);
  while (n > 0 && c->base[n - 1] == '/')
    c->base[--n] = '\0';
  c->ca_file = ca_file ? al_xstrdup(ca_file) : NULL;
  c->timeout_ms = timeout_ms ? timeout_ms : 30000;
  c->allow_http = strncmp(c->base, "http://", 7) == 0;
  *out = c;
  return 0;
}

void al_ghapi_free(al_ghapi *c)
{
  if (!c)
    return;
  free(c->base);
  free(c->ca_file);
  curl_slist_free_all(c->resolve);
  free(c);
}

void al_ghapi_set_resolve(al_ghapi *c, const char *const *entries)
{
  curl_slist_free_all(c->resolve);
  c->resolve = NULL;
  for (const char *const *e = entries; e && *e; e++)
    c->resolve = curl_slist_append(c->resolve, *e);
}

const char *al_ghapi_base(const al_ghapi *c)
{
  return c->base;
}

void al_ghapi_resp_free(al_ghapi_resp *r)
{
  if (!r)
    return;
  json_decref(r->json);
  memset(r, 0, sizeof *r);
}

char *al_ghapi_escape(const char *s)
{
  size_t n = strlen(s);
  char *o = al_xmalloc(n * 3 + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/')
      o[k++] = (char)ch;
    else
      k += (size_t)sprintf(o + k, "%%%02X", ch);
  }
  o[k] = '\0';
  return o;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
  struct raw *r = ud;
  size_t n = size * nmemb;
  if (r->len + n > BODY_MAX) {
    r->too_big = true;
    return 0;
  }
  char *nb = realloc(r->body, r->len + n + 1);
  if (!nb)
    return 0;
  memcpy(nb + r->len, ptr, n);
  r->len += n;
  nb[r->len] = '\0';
  r->body = nb;
  return n;
}

/* Link: <url>; rel="next", <url>; rel="last"  (RFC 8288 §3) */
static char *link_next(const char *line, size_t n)
{
  if (n < 6 || strncasecmp(line, "link:", 5) != 0)
    return NULL;
  al_autofree char *copy = al_xmalloc(n + 1);
  memcpy(copy, line, n);
  copy[n] = '\0';
  char *p = copy + 5;
  while ((p = strchr(p, '<')) != NULL) {
    char *e = strchr(p, '>');
    if (!e)
      return NULL;
    char *params = e + 1;
    char *comma = strchr(params, ',');
    if (comma)
      *comma = '\0';
    if (strstr(params, "rel=\"next\"") || strstr(params, "rel=next")) {
      *e = '\0';
      return al_xstrdup(p + 1);
    }
    if (!comma)
      return NULL;
    p = comma + 1;
  }
  return NULL;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
  struct raw *r = ud;
  size_t n = size * nmemb;
  if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
    r->retry_after = r->rl_remaining = r->rl_reset = -1;
    free(r->next);
    r->next = NULL;
    return n;
  }
  al_http_header_number(line, n, "retry-after", &r->retry_after);
  al_http_header_number(line, n, "x-ratelimit-remaining", &r->rl_remaining);
  al_http_header_number(line, n, "x-ratelimit-reset", &r->rl_reset);
  char *nx = link_next(line, n);
  if (nx) {
    free(r->next);
    r->next = nx;
  }
  return n;
}

static CURLcode get_once(al_ghapi *c, const char *url, const char *bearer, struct raw *r,
                         long *status, char *errbuf)
{
  CURL *h = curl_easy_init();
  if (!h)
    return CURLE_OUT_OF_MEMORY;
  struct curl_slist *hd = NULL;
  hd = curl_slist_append(hd, "Accept: application/vnd.github+json");
  hd = curl_slist_append(hd, "X-GitHub-Api-Version: " API_VERSION);
  char *auth = NULL;
  if (bearer) {
    auth = al_strdup_printf("Authorization: Bearer %s", bearer);
    hd = curl_slist_append(hd, auth);
    al_wipe_str(auth);
    free(auth);
  }
  r->retry_after = r->rl_remaining = r->rl_reset = -1;
  errbuf[0] = '\0';
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, c->allow_http ? "http,https" : "https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   (long)(c->timeout_ms < 10000 ? c->timeout_ms : 10000));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "airlock-audit/0.1");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
  if (c->ca_file)
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
  if (c->resolve)
    curl_easy_setopt(h, CURLOPT_RESOLVE, c->resolve);
  CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(h);
  for (struct curl_slist *p = hd; p; p = p->next)
    al_wipe_str(p->data);
  curl_slist_free_all(hd);
  return rc;
}

static void sleep_ms(uint64_t ms)
{
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static bool retryable(CURLcode rc)
{
  switch (rc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
    return true;
  default:
    return false;
  }
}

/* GET an absolute URL with the retry and rate-limit policy. */
static int get_url(al_ghapi *c, const char *url, const char *bearer, al_ghapi_resp *out,
                   char **next, al_error *err)
{
  char errbuf[CURL_ERROR_SIZE] = "";
  uint64_t backoff = 250;
  unsigned waits = 0;
  memset(out, 0, sizeof *out);
  for (unsigned attempt = 1;; attempt++) {
    struct raw r = {0};
    long status = 0;
    CURLcode rc = get_once(c, url, bearer, &r, &status, errbuf);
    if (rc != CURLE_OK) {
      bool big = r.too_big;
      raw_free(&r);
      if (big)
        return al_make_error(err, EFBIG, "GET %s: the response is over %u bytes", url, BODY_MAX);
      if (retryable(rc) && attempt < ATTEMPTS) {
        sleep_ms(backoff);
        backoff *= 2;
        continue;
      }
      if (err) {
        snprintf(err->msg, sizeof err->msg, "GET %s: %s (after %u attempts)", url,
                 errbuf[0] ? errbuf : curl_easy_strerror(rc), attempt);
        err->code = rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNREFUSED;
      }
      return -1;
    }
    bool limited = (status == 403 || status == 429) && (r.retry_after >= 0 || r.rl_remaining == 0);
    if (limited && waits < 2) {
      long long now = (long long)time(NULL);
      long long wait_s = r.retry_after >= 0 ? r.retry_after
                         : r.rl_reset > now ? r.rl_reset - now
                                            : MAX_RATE_WAIT_S + 1;
      if (wait_s <= MAX_RATE_WAIT_S) {
        al_warn("GET %s: rate limited (HTTP %ld), waiting %llds as the API asks", url, status,
                wait_s);
        raw_free(&r);
        waits++;
        sleep_ms((uint64_t)wait_s * 1000 + 100);
        attempt--;
        continue;
      }
    }
    if (status >= 500 && attempt < ATTEMPTS) {
      raw_free(&r);
      sleep_ms(backoff);
      backoff *= 2;
      continue;
    }
    out->status = status;
    if (r.body)
      out->json = json_loadb(r.body, r.len, 0, NULL);
    const char *m = json_string_value(json_object_get(out->json, "message"));
    if (m) {
      size_t k = 0;
      for (size_t i = 0; m[i] && k + 1 < sizeof out->message; i++)
        out->message[k++] = isprint((unsigned char)m[i]) ? m[i] : '?';
      out->message[k] = '\0';
    }
    if (next) {
      *next = r.next;
      r.next = NULL;
    }
    raw_free(&r);
    return 0;
  }
}

int al_ghapi_get(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r, al_error *err)
{
  al_autofree char *url = al_strdup_printf("%s%s", c->base, path);
  return get_url(c, url, bearer, r, NULL, err);
}

int al_ghapi_get_list(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r,
                      al_error *err)
{
  char *url = al_strdup_printf("%s%s", c->base, path);
  json_t *all = json_array();
  size_t base_len = strlen(c->base);
  for (int page = 0; page < MAX_PAGES && url; page++) {
    char *next = NULL;
    al_ghapi_resp pr;
    int rc = get_url(c, url, bearer, &pr, &next, err);
    free(url);
    url = NULL;
    if (rc < 0) {
      json_decref(all);
      return -1;
    }
    if (pr.status != 200 || !json_is_array(pr.json)) {
      json_decref(all);
      free(next);
      *r = pr;
      return 0;
    }
    json_array_extend(all, pr.json);
    al_ghapi_resp_free(&pr);
    /* Follow only links under our own API base: a response cannot send
     * the token elsewhere. */
    if (next && strncmp(next, c->base, base_len) == 0 && next[base_len] == '/')
      url = next;
    else
      free(next);
  }
  free(url);
  memset(r, 0, sizeof *r);
  r->status = 200;
  r->json = all;
  return 0;
}
