/* The one forge client (libcurl): see ghapi.h. The wire rules it applies
 * (Link, classification, rate-limit waits, URLs under the base) are the
 * pure functions of ghwire.c. */
#include "forge/ghapi.h"
#include "forge/etags.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "forge/appconfig.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/util.h"

#define API_VERSION "2022-11-28"
#define DEFAULT_BODY_MAX (4u << 20)
#define DEFAULT_TIMEOUT_MS 30000u
#define DEFAULT_RETRIES 2u
#define DEFAULT_MAX_WAIT_MS (10u * 60u * 1000u)
#define DEFAULT_SECONDARY_MS 60000u
#define DEFAULT_MAX_ITEMS 100000u
#define MAX_REDIRECTS 5
#define MAX_RATE_WAITS 6
#define BACKOFF_FIRST_MS 250u
#define BACKOFF_MAX_MS 8000u

struct al_ghapi {
  char *base;
  char *ca_file;
  char *ua;
  uint64_t timeout_ms;
  unsigned retries;
  uint64_t max_wait_ms;
  uint64_t secondary_ms;
  size_t body_max;
  bool retry_unsafe;
  bool wipe;
  bool allow_http;
  uint64_t deadline_ms;
  struct curl_slist *resolve; /* CURLOPT_RESOLVE entries (policy pins) */
  al_etags *etags;            /* conditional GETs (borrowed), or NULL */
};

/* What one exchange brought back. */
struct raw {
  char *body;
  size_t len;
  size_t max;
  bool too_big;
  bool wipe;
  long long retry_after;
  long long rl_remaining;
  long long rl_reset;
  char *next; /* Link rel="next" target */
  bool link_bad;
  char *location;
  char *etag; /* the ETag header */
};

static void wipe_free(char *p, size_t n, bool wipe)
{
  if (p && wipe)
    OPENSSL_cleanse(p, n);
  free(p);
}

static void raw_reset_headers(struct raw *r)
{
  r->retry_after = r->rl_remaining = r->rl_reset = -1;
  free(r->next);
  r->next = NULL;
  r->link_bad = false;
  free(r->location);
  r->location = NULL;
  free(r->etag);
  r->etag = NULL;
}

static void raw_free(struct raw *r)
{
  wipe_free(r->body, r->len, r->wipe);
  free(r->next);
  free(r->location);
  free(r->etag);
  memset(r, 0, sizeof *r);
}

int al_ghapi_open(const char *api_url, const al_ghapi_opts *o, al_ghapi **out, al_error *err)
{
  static const al_ghapi_opts none = {0};
  if (!o)
    o = &none;
  const char *why = NULL;
  if (!api_url || al_api_url_check(api_url, &why) < 0)
    return al_error_set(err, EINVAL, "API URL `%s`: %s", api_url ? api_url : "(none)",
                        why ? why : "missing");
  al_ghapi *c = al_xcalloc(1, sizeof *c);
  c->base = al_xstrdup(api_url);
  size_t n = strlen(c->base);
  while (n > 0 && c->base[n - 1] == '/')
    c->base[--n] = '\0';
  c->ca_file = o->ca_file ? al_xstrdup(o->ca_file) : NULL;
  c->ua = al_xstrdup(o->user_agent ? o->user_agent : "airlock/0.1");
  c->timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
  c->retries = o->retries == AL_GHAPI_NO_RETRY ? 0 : o->retries ? o->retries : DEFAULT_RETRIES;
  c->max_wait_ms = o->max_wait_ms ? o->max_wait_ms : DEFAULT_MAX_WAIT_MS;
  c->secondary_ms = o->secondary_wait_ms ? o->secondary_wait_ms : DEFAULT_SECONDARY_MS;
  c->body_max = o->body_max ? o->body_max : DEFAULT_BODY_MAX;
  c->retry_unsafe = o->retry_unsafe;
  c->wipe = o->wipe_bodies;
  c->allow_http = strncmp(c->base, "http://", 7) == 0;
  *out = c;
  return 0;
}

int al_ghapi_new(const char *api_url, const char *ca_file, uint64_t timeout_ms, al_ghapi **out,
                 al_error *err)
{
  al_ghapi_opts o = {.ca_file = ca_file, .timeout_ms = timeout_ms};
  return al_ghapi_open(api_url, &o, out, err);
}

void al_ghapi_free(al_ghapi *c)
{
  if (!c)
    return;
  free(c->base);
  free(c->ca_file);
  free(c->ua);
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

void al_ghapi_set_deadline(al_ghapi *c, uint64_t deadline_ms)
{
  c->deadline_ms = deadline_ms;
}

void al_ghapi_set_etags(al_ghapi *c, al_etags *e)
{
  c->etags = e;
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

void al_ghapi_describe(const al_ghapi_resp *r, char *out, size_t outsz)
{
  snprintf(out, outsz, "%s (HTTP %ld%s%s%s%s)", al_ghapi_class_name(r->cls), r->status,
           r->message[0] ? ": " : "", r->message, r->note[0] ? "; " : "", r->note);
}

/* ---- one exchange ----------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
  struct raw *r = ud;
  size_t n = size * nmemb;
  if (r->len + n > r->max) {
    r->too_big = true;
    return 0;
  }
  char *nb = malloc(r->len + n + 1);
  if (!nb)
    return 0;
  if (r->body)
    memcpy(nb, r->body, r->len);
  wipe_free(r->body, r->len, r->wipe);
  memcpy(nb + r->len, ptr, n);
  r->len += n;
  nb[r->len] = '\0';
  r->body = nb;
  return n;
}

/* "Name:" at the start of a header line: the value after it, or NULL. */
static const char *header_value(const char *line, size_t n, const char *name, size_t *vlen)
{
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
    return NULL;
  const char *v = line + k + 1;
  const char *e = line + n;
  while (v < e && (*v == ' ' || *v == '\t'))
    v++;
  while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
    e--;
  *vlen = (size_t)(e - v);
  return v;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
  struct raw *r = ud;
  size_t n = size * nmemb;
  /* A new status line (after a 100 Continue) resets what we saw. */
  if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
    raw_reset_headers(r);
    return n;
  }
  al_http_header_number(line, n, "retry-after", &r->retry_after);
  al_http_header_number(line, n, "x-ratelimit-remaining", &r->rl_remaining);
  al_http_header_number(line, n, "x-ratelimit-reset", &r->rl_reset);
  size_t vl = 0;
  const char *v = header_value(line, n, "link", &vl);
  if (v) {
    bool bad = false;
    char *nx = al_link_next(v, vl, &bad);
    if (bad)
      r->link_bad = true;
    if (nx && r->next && strcmp(nx, r->next) != 0)
      r->link_bad = true; /* two Link headers naming different next pages */
    if (nx && !r->next)
      r->next = nx;
    else
      free(nx);
  }
  v = header_value(line, n, "etag", &vl);
  if (v && vl <= 200) {
    free(r->etag);
    r->etag = al_xmalloc(vl + 1);
    memcpy(r->etag, v, vl);
    r->etag[vl] = '\0';
  }
  v = header_value(line, n, "location", &vl);
  if (v && vl < 8192) {
    free(r->location);
    r->location = al_xmalloc(vl + 1);
    memcpy(r->location, v, vl);
    r->location[vl] = '\0';
  }
  return n;
}

static void slist_wipe_free(struct curl_slist *l)
{
  for (struct curl_slist *p = l; p; p = p->next)
    al_wipe_str(p->data);
  curl_slist_free_all(l);
}

static _Atomic uint64_t g_requests_sent, g_not_modified, g_app, g_rejected;
static _Thread_local al_ghapi_counts t_counts;

uint64_t al_ghapi_requests_sent(void)
{
  return g_requests_sent;
}

void al_ghapi_counts_process(al_ghapi_counts *out)
{
  out->sent = g_requests_sent;
  out->not_modified = g_not_modified;
  out->app = g_app;
  out->rejected = g_rejected;
}

void al_ghapi_counts_thread(al_ghapi_counts *out)
{
  *out = t_counts;
}

static pthread_mutex_t g_rate_lock = PTHREAD_MUTEX_INITIALIZER;
static long long g_rate_remaining = -1, g_rate_reset = -1;

static void rate_seen(long long remaining, long long reset)
{
  if (remaining < 0)
    return;
  pthread_mutex_lock(&g_rate_lock);
  if (g_rate_remaining < 0 || remaining < g_rate_remaining) {
    g_rate_remaining = remaining;
    g_rate_reset = reset;
  }
  pthread_mutex_unlock(&g_rate_lock);
}

void al_ghapi_rate_seen(long long *remaining, long long *reset)
{
  pthread_mutex_lock(&g_rate_lock);
  *remaining = g_rate_remaining;
  *reset = g_rate_reset;
  pthread_mutex_unlock(&g_rate_lock);
}

/* An App JWT (header.payload.signature) rather than a token: two dots. */
static bool bearer_is_jwt(const char *bearer)
{
  const char *d = bearer ? strchr(bearer, '.') : NULL;
  return d && strchr(d + 1, '.');
}

static CURLcode exchange(al_ghapi *c, const char *method, const char *url, const char *bearer,
                         const char *body, const char *inm, uint64_t timeout_ms, struct raw *r,
                         long *status, char *errbuf)
{
  CURL *h = curl_easy_init();
  if (!h)
    return CURLE_OUT_OF_MEMORY;
  struct curl_slist *hd = NULL;
  hd = curl_slist_append(hd, "Accept: application/vnd.github+json");
  hd = curl_slist_append(hd, "X-GitHub-Api-Version: " API_VERSION);
  hd = curl_slist_append(hd, "Expect:");
  if (body)
    hd = curl_slist_append(hd, "Content-Type: application/json");
  if (inm) {
    char *ih = al_strdup_printf("If-None-Match: %s", inm);
    hd = curl_slist_append(hd, ih);
    free(ih);
  }
  if (bearer) {
    char *auth = al_strdup_printf("Authorization: Bearer %s", bearer);
    hd = curl_slist_append(hd, auth);
    al_wipe_str(auth);
    free(auth);
  }
  raw_reset_headers(r);
  errbuf[0] = '\0';
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, c->allow_http ? "http,https" : "https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 10000 ? timeout_ms : 10000));
  curl_easy_setopt(h, CURLOPT_USERAGENT, c->ua);
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
  if (strcmp(method, "GET") != 0)
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  if (strcmp(method, "HEAD") == 0)
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  g_requests_sent++;
  t_counts.sent++;
  if (bearer_is_jwt(bearer)) {
    g_app++;
    t_counts.app++;
  }
  CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  if (rc == CURLE_OK && *status == 304) {
    g_not_modified++;
    t_counts.not_modified++;
  }
  if (rc == CURLE_OK && *status == 401) {
    g_rejected++;
    t_counts.rejected++;
  }
  curl_easy_cleanup(h);
  slist_wipe_free(hd);
  return rc;
}

static void sleep_ms(uint64_t ms)
{
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* Transport errors worth another attempt; *unsent: the request surely
 * never reached the server. */
static bool retryable(CURLcode rc, bool *unsent)
{
  *unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
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

static bool idempotent(const char *method)
{
  return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 || strcmp(method, "PUT") == 0 ||
         strcmp(method, "DELETE") == 0 || strcmp(method, "OPTIONS") == 0;
}

/* The budget of one call: may a wait of `ms` begin now? *left gets the
 * milliseconds the budget still has. */
static bool may_wait(const al_ghapi *c, uint64_t waited, uint64_t ms, uint64_t *left)
{
  uint64_t l = waited < c->max_wait_ms ? c->max_wait_ms - waited : 0;
  if (c->deadline_ms) {
    uint64_t now = al_now_ms();
    uint64_t d = c->deadline_ms > now ? c->deadline_ms - now : 0;
    if (d < l)
      l = d;
  }
  *left = l;
  return ms < l;
}

/* The part of an absolute URL under the base ("/repos/o/r?x"), or the
 * URL itself. */
static const char *rel_to_base(const al_ghapi *c, const char *url)
{
  size_t n = strlen(c->base);
  return strncmp(url, c->base, n) == 0 ? url + n : url;
}

/* Resolve a Location value against the base: an absolute URL as it is, an
 * absolute path on the base's origin; anything else NULL. malloc'd. */
static char *resolve_location(const al_ghapi *c, const char *loc)
{
  if (loc[0] == '/' && loc[1] != '/') {
    const char *p = strstr(c->base, "://");
    const char *e = p ? strchr(p + 3, '/') : NULL;
    size_t on = e ? (size_t)(e - c->base) : strlen(c->base);
    return al_strdup_printf("%.*s%s", (int)on, c->base, loc);
  }
  if (strncasecmp(loc, "https://", 8) == 0 || strncasecmp(loc, "http://", 7) == 0)
    return al_xstrdup(loc);
  return NULL;
}

/* One call to an absolute URL with the whole policy of ghapi.h. On 0, out
 * is filled; *next (may be NULL) gets the Link rel="next" target and
 * *link_bad whether the Link header was malformed. */
static int call_url(al_ghapi *c, const char *method, const char *url0, const char *bearer,
                    const char *body, al_ghapi_resp *out, char **next, bool *link_bad,
                    al_error *err)
{
  char errbuf[CURL_ERROR_SIZE] = "";
  char *url = al_xstrdup(url0);
  uint64_t backoff = BACKOFF_FIRST_MS, waited = 0, left = 0;
  unsigned attempts = 0, redirects = 0, secondary = 0;
  bool safe = idempotent(method) || c->retry_unsafe, no_inm = false;
  const char *shown = rel_to_base(c, url0); /* the path named in messages */
  memset(out, 0, sizeof *out);
  if (next)
    *next = NULL;
  if (link_bad)
    *link_bad = false;
  for (;;) {
    uint64_t timeout = c->timeout_ms;
    if (c->deadline_ms) {
      uint64_t now = al_now_ms();
      if (now >= c->deadline_ms) {
        free(url);
        return al_error_set(err, ETIMEDOUT, "%s %s: the deadline passed before an answer came",
                            method, shown);
      }
      if (c->deadline_ms - now < timeout)
        timeout = c->deadline_ms - now;
    }
    struct raw r = {.max = c->body_max, .wipe = c->wipe};
    long status = 0;
    /* a conditional GET with the ETags kept for this path (etags.h) */
    const char *rel = rel_to_base(c, url);
    bool cond = c->etags && !body && !strcmp(method, "GET") && !no_inm && rel[0] == '/';
    al_autofree char *inm = cond ? al_etags_if_none_match(c->etags, rel) : NULL;
    CURLcode rc = exchange(c, method, url, bearer, body, inm, timeout, &r, &status, errbuf);
    if (rc == CURLE_OK && inm && status == 304) {
      char *kb = NULL, *knx = NULL;
      size_t kl = 0;
      if (!al_etags_hit(c->etags, rel, r.etag, &kb, &kl, &knx)) {
        /* a 304 naming no answer kept: ask again, unconditionally */
        raw_free(&r);
        no_inm = true;
        continue;
      }
      wipe_free(r.body, r.len, r.wipe);
      r.body = kb;
      r.len = kl;
      free(r.next);
      r.next = knx ? al_strdup_printf("%s%s", c->base, knx) : NULL;
      free(knx);
      status = 200;
      out->not_modified = true;
    } else if (rc == CURLE_OK && cond && status == 200 && r.etag) {
      al_etags_store(c->etags, rel, r.etag, r.body ? r.body : "", r.len,
                     r.next ? rel_to_base(c, r.next) : NULL);
    }
    if (rc != CURLE_OK) {
      bool big = r.too_big, unsent = false;
      raw_free(&r);
      if (big) {
        free(url);
        return al_error_set(err, EFBIG, "%s %s: the answer is over %zu bytes", method, shown,
                            c->body_max);
      }
      const char *what = errbuf[0] ? errbuf : curl_easy_strerror(rc);
      if (retryable(rc, &unsent) && (safe || unsent) && attempts < c->retries &&
          may_wait(c, waited, backoff, &left)) {
        attempts++;
        al_warn("%s %s: %s; retry %u/%u in %llums", method, shown, what, attempts, c->retries,
                (unsigned long long)backoff);
        sleep_ms(backoff);
        waited += backoff;
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        continue;
      }
      al_error_set(err, rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
                   "%s %s: %s (after %u attempt%s)", method, shown, what, attempts + 1,
                   attempts ? "s" : "");
      free(url);
      return -1;
    }
    json_t *j = r.body && r.len ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    char msg[sizeof out->message] = "";
    al_ghapi_sanitise(json_string_value(json_object_get(j, "message")), msg, sizeof msg);
    al_ghapi_rate rate = AL_GHAPI_RATE_NONE;
    al_ghapi_class cls = al_ghapi_classify(status, msg, r.retry_after, r.rl_remaining, &rate);
    char note[sizeof out->note] = "";

    if (cls == AL_GHAPI_RATE_LIMITED) {
      uint64_t ms = al_ghapi_rate_wait_ms(r.retry_after, r.rl_remaining, r.rl_reset,
                                          (long long)time(NULL), secondary, c->secondary_ms);
      const char *kind = rate == AL_GHAPI_RATE_PRIMARY ? "primary rate limit"
                         : r.retry_after >= 0          ? "secondary rate limit"
                                                       : "secondary rate limit without Retry-After";
      if (out->rate_waits < MAX_RATE_WAITS && may_wait(c, waited, ms, &left)) {
        al_warn("%s %s: %s (HTTP %ld), waiting %llus as GitHub asks", method, shown, kind, status,
                (unsigned long long)((ms + 999) / 1000));
        if (rate == AL_GHAPI_RATE_SECONDARY && r.retry_after < 0)
          secondary++;
        json_decref(j);
        raw_free(&r);
        sleep_ms(ms);
        waited += ms;
        out->rate_waits++;
        continue;
      }
      if (out->rate_waits >= MAX_RATE_WAITS)
        snprintf(note, sizeof note, "%s: still limited after %u waits", kind, out->rate_waits);
      else {
        /* which bound is the tighter one: the client's deadline, or the
         * per-call wait budget (opts.max_wait_ms) */
        uint64_t now = al_now_ms();
        bool by_deadline =
            c->deadline_ms && (c->deadline_ms > now ? c->deadline_ms - now : 0) <=
                                  (waited < c->max_wait_ms ? c->max_wait_ms - waited : 0);
        snprintf(note, sizeof note,
                 "%s: GitHub asks to wait %llus, which does not fit in the %llus left %s; not "
                 "retried",
                 kind, (unsigned long long)((ms + 999) / 1000), (unsigned long long)(left / 1000),
                 by_deadline ? "before the deadline" : "of the call's wait budget (max_wait)");
      }
    }

    if (cls == AL_GHAPI_REDIRECTED) {
      char *to = r.location ? resolve_location(c, r.location) : NULL;
      bool follow = (status == 301 || status == 302 || status == 307 || status == 308) && to &&
                    al_ghapi_url_under(c->base, to) && redirects < MAX_REDIRECTS;
      if (follow) {
        if (!out->moved_status)
          out->moved_status = status;
        redirects++;
        al_warn("%s %s: HTTP %ld, following to %s", method, shown, status, rel_to_base(c, to));
        free(url);
        url = to;
        json_decref(j);
        raw_free(&r);
        continue;
      }
      char where[200];
      al_ghapi_sanitise(r.location ? r.location : "(no Location header)", where, sizeof where);
      snprintf(note, sizeof note, "redirect to %s not followed: %s", where,
               !r.location                  ? "no Location"
               : redirects >= MAX_REDIRECTS ? "too many redirects"
               : status == 303 || !to       ? "not a redirect this client repeats"
                                            : "outside the API base");
      free(to);
    }

    if (cls == AL_GHAPI_SERVER_ERROR && safe && attempts < c->retries &&
        may_wait(c, waited, backoff, &left)) {
      attempts++;
      al_warn("%s %s: HTTP %ld; retry %u/%u in %llums", method, shown, status, attempts, c->retries,
              (unsigned long long)backoff);
      json_decref(j);
      raw_free(&r);
      sleep_ms(backoff);
      waited += backoff;
      backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
      continue;
    }

    out->status = status;
    out->cls = cls;
    out->json = j;
    out->rate = rate;
    out->retry_after_s = r.retry_after;
    out->rl_remaining = r.rl_remaining;
    out->rl_reset = r.rl_reset;
    rate_seen(r.rl_remaining, r.rl_reset);
    snprintf(out->message, sizeof out->message, "%s", msg);
    if (out->moved_status) {
      snprintf(out->moved_to, sizeof out->moved_to, "%s", rel_to_base(c, url));
      if (!note[0])
        snprintf(note, sizeof note, "followed %ld to %s", out->moved_status, out->moved_to);
    }
    snprintf(out->note, sizeof out->note, "%s", note);
    if (next) {
      *next = r.next;
      r.next = NULL;
    }
    if (link_bad)
      *link_bad = r.link_bad;
    raw_free(&r);
    free(url);
    return 0;
  }
}

int al_ghapi_request(al_ghapi *c, const char *method, const char *path, const char *bearer,
                     json_t *body, al_ghapi_resp *r, al_error *err)
{
  memset(r, 0, sizeof *r);
  if (!method || !path || path[0] != '/')
    return al_error_set(err, EINVAL, "%s %s: the path must start with '/'",
                        method ? method : "(no method)", path ? path : "(none)");
  char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
  if (body && !b)
    return al_error_set(err, EINVAL, "%s %s: the body cannot be encoded as JSON", method, path);
  al_autofree char *url = al_strdup_printf("%s%s", c->base, path);
  int rc = call_url(c, method, url, bearer, b, r, NULL, NULL, err);
  if (b)
    wipe_free(b, strlen(b), c->wipe);
  return rc;
}

int al_ghapi_get(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r, al_error *err)
{
  return al_ghapi_request(c, "GET", path, bearer, NULL, r, err);
}

/* ---- lists ------------------------------------------------------------ */

const char *al_ghapi_list_status_name(al_ghapi_list_status s)
{
  switch (s) {
  case AL_GHAPI_LIST_COMPLETE:
    return "complete";
  case AL_GHAPI_LIST_CAPPED:
    return "capped";
  case AL_GHAPI_LIST_HTTP:
    return "HTTP error";
  case AL_GHAPI_LIST_TRANSPORT:
    return "transport error";
  case AL_GHAPI_LIST_TOO_BIG:
    return "page too big";
  case AL_GHAPI_LIST_BAD_PAGE:
  default:
    return "malformed page";
  }
}

/* Does the query of path already carry per_page? */
static bool has_per_page(const char *path)
{
  const char *q = strchr(path, '?');
  for (const char *p = q; p; p = strchr(p + 1, '&'))
    if (strncmp(p + 1, "per_page=", 9) == 0)
      return true;
  return false;
}

__attribute__((format(printf, 3, 4))) static void
list_stop(al_ghapi_list_info *st, al_ghapi_list_status s, const char *fmt, ...)
{
  st->status = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->why, sizeof st->why, fmt, ap);
  va_end(ap);
}

static int list_impl(al_ghapi *c, const char *path, const char *field, const char *bearer,
                     size_t max_items, json_t **items, al_ghapi_list_info *st, al_error *err)
{
  memset(st, 0, sizeof *st);
  json_t *all = json_array();
  *items = all;
  if (!path || path[0] != '/') {
    list_stop(st, AL_GHAPI_LIST_BAD_PAGE, "GET %s: the path must start with '/'",
              path ? path : "(none)");
    return al_error_set(err, EINVAL, "%s", st->why);
  }
  if (max_items == 0)
    max_items = DEFAULT_MAX_ITEMS;
  char *url = al_strdup_printf("%s%s%s", c->base, path,
                               has_per_page(path)  ? ""
                               : strchr(path, '?') ? "&per_page=100"
                                                   : "?per_page=100");
  for (size_t page = 1;; page++) {
    char *next = NULL;
    bool link_bad = false;
    al_ghapi_resp pr;
    al_error e = {0};
    int rc = call_url(c, "GET", url, bearer, NULL, &pr, &next, &link_bad, &e);
    free(url);
    url = NULL;
    if (rc < 0) {
      list_stop(st, e.code == EFBIG ? AL_GHAPI_LIST_TOO_BIG : AL_GHAPI_LIST_TRANSPORT,
                "GET %s: page %zu: %s; the list is incomplete (%zu item(s) read)", path, page,
                e.msg, json_array_size(all));
      break;
    }
    if (page == 1 && pr.moved_status) {
      st->moved_status = pr.moved_status;
      snprintf(st->moved_to, sizeof st->moved_to, "%s", pr.moved_to);
    }
    if (pr.status != 200) {
      char d[600];
      al_ghapi_describe(&pr, d, sizeof d);
      st->http_status = pr.status;
      st->cls = pr.cls;
      snprintf(st->message, sizeof st->message, "%s", pr.message);
      list_stop(st, AL_GHAPI_LIST_HTTP,
                "GET %s: page %zu: %s; the list is incomplete (%zu item(s) read)", path, page, d,
                json_array_size(all));
      al_ghapi_resp_free(&pr);
      free(next);
      break;
    }
    json_t *arr = field ? json_object_get(pr.json, field) : pr.json;
    if (!json_is_array(arr) || link_bad) {
      list_stop(st, AL_GHAPI_LIST_BAD_PAGE,
                "GET %s: page %zu: %s; the list is incomplete (%zu item(s) read)", path, page,
                link_bad ? "a malformed Link header"
                : field  ? "the answer has no array in the expected member"
                         : "the answer is not a JSON array",
                json_array_size(all));
      al_ghapi_resp_free(&pr);
      free(next);
      break;
    }
    st->pages++;
    size_t i;
    json_t *v;
    bool capped = false;
    json_array_foreach(arr, i, v)
    {
      if (json_array_size(all) >= max_items) {
        capped = true;
        break;
      }
      json_array_append(all, v);
    }
    size_t got = json_array_size(arr);
    al_ghapi_resp_free(&pr);
    if (capped || (next && json_array_size(all) >= max_items)) {
      list_stop(st, AL_GHAPI_LIST_CAPPED,
                "GET %s: stopped at the cap of %zu item(s) on page %zu while the server had "
                "more; the list is incomplete",
                path, max_items, page);
      free(next);
      break;
    }
    if (!next) {
      st->status = AL_GHAPI_LIST_COMPLETE;
      break;
    }
    if (!al_ghapi_url_under(c->base, next)) {
      char where[200];
      al_ghapi_sanitise(next, where, sizeof where);
      list_stop(st, AL_GHAPI_LIST_BAD_PAGE,
                "GET %s: page %zu links its next page outside the API base (%s); not followed, "
                "the list is incomplete (%zu item(s) read)",
                path, page, where, json_array_size(all));
      free(next);
      break;
    }
    if (got == 0) {
      list_stop(st, AL_GHAPI_LIST_BAD_PAGE,
                "GET %s: page %zu is empty but links to a next page; the list is incomplete "
                "(%zu item(s) read)",
                path, page, json_array_size(all));
      free(next);
      break;
    }
    url = next;
  }
  free(url);
  st->items = json_array_size(all);
  if (st->status == AL_GHAPI_LIST_COMPLETE)
    return 0;
  return al_error_set(err, st->status == AL_GHAPI_LIST_TOO_BIG ? EFBIG : EPROTO, "%s", st->why);
}

int al_ghapi_list(al_ghapi *c, const char *path, const char *bearer, size_t max_items,
                  json_t **items, al_ghapi_list_info *st, al_error *err)
{
  return list_impl(c, path, NULL, bearer, max_items, items, st, err);
}

int al_ghapi_list_field(al_ghapi *c, const char *path, const char *field, const char *bearer,
                        size_t max_items, json_t **items, al_ghapi_list_info *st, al_error *err)
{
  return list_impl(c, path, field, bearer, max_items, items, st, err);
}

int al_ghapi_get_list(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r,
                      al_error *err)
{
  memset(r, 0, sizeof *r);
  json_t *items = NULL;
  al_ghapi_list_info st;
  al_error e = {0};
  int rc = list_impl(c, path, NULL, bearer, 0, &items, &st, &e);
  if (rc == 0) {
    r->status = 200;
    r->json = items;
    r->moved_status = st.moved_status;
    snprintf(r->moved_to, sizeof r->moved_to, "%s", st.moved_to);
    return 0;
  }
  json_decref(items);
  if (st.status == AL_GHAPI_LIST_HTTP) {
    r->status = st.http_status;
    r->cls = st.cls;
    snprintf(r->message, sizeof r->message, "%s", st.message);
    return 0;
  }
  if (err)
    *err = e;
  return -1;
}
