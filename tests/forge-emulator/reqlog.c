/* The request log (--request-log FILE) and conditional GETs (ETag,
 * If-None-Match, 304) of the REST API.
 *
 * ETag: GitHub answers REST GETs with an ETag and honours If-None-Match
 * with 304 Not Modified, which "does not count against your primary rate
 * limit" (docs.github.com, "Best practices for using the REST API" § Use
 * conditional requests if appropriate). Here the ETag is strong: the
 * SHA-256 of the body, quoted (RFC 9110 §8.8.3); If-None-Match is compared
 * weakly as RFC 9110 §13.1.2 says (a W/ prefix is ignored), `*` matches any
 * current answer. A 304 carries the ETag and no body.
 *
 * The log: one JSON line per request the forge answered on its main
 * listener (REST and git; the admin listener is not logged), appended under
 * a mutex: {"method", "path", "query" (or ""), "kind": "api"|"git",
 * "status", "conditional" (an If-None-Match was sent), "not_modified" (the
 * answer was 304), "auth": "jwt"|"token"|"basic"|"none", "ua" (User-Agent,
 * at most 120 bytes), "remaining" (the x-ratelimit-remaining answered, -1
 * for git)}. Never a credential: only its kind.
 *
 * The rate limit: one budget of 5,000 for the whole forge (not split per
 * installation): every REST request with a token, except a 304 and a 401,
 * uses one; x-ratelimit-remaining and -used say so (a fault's own headers,
 * behave.c, are left as they are). */
#include "forge.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/util.h"

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_log_fd = -1;

int forge_reqlog_open(const char *path, al_error *err)
{
  g_log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_log_fd < 0)
    return al_make_error(err, errno, "--request-log `%s`", path);
  return 0;
}

/* Whether the If-None-Match list inm names etag (weak comparison). */
static bool inm_matches(const char *inm, const char *etag)
{
  const char *p = inm;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    if (!*p)
      break;
    if (*p == '*')
      return true;
    if (!strncmp(p, "W/", 2))
      p += 2;
    const char *e = p;
    if (*e == '"') {
      e = strchr(p + 1, '"');
      if (!e)
        return false;
      e++;
    } else {
      while (*e && *e != ',' && *e != ' ')
        e++;
    }
    size_t n = (size_t)(e - p);
    if (n == strlen(etag) && !memcmp(p, etag, n))
      return true;
    p = e;
  }
  return false;
}

bool forge_etag_apply(const struct forge_req *rq, struct forge_resp *resp, const char *inm)
{
  if (strcmp(rq->method, "GET") != 0 || resp->status != 200)
    return false;
  char hex[65];
  al_sha256_hex(resp->body ? resp->body : "", resp->body_len, hex);
  char etag[70];
  snprintf(etag, sizeof etag, "\"%s\"", hex);
  if (!resp->headers)
    resp->headers = json_object();
  json_object_set_new(resp->headers, "ETag", json_string(etag));
  if (!inm || !inm_matches(inm, etag))
    return false;
  resp->status = 304;
  free(resp->body);
  resp->body = NULL;
  resp->body_len = 0;
  return true;
}

static const char *auth_kind(const char *a)
{
  if (!a || !*a)
    return "none";
  if (!strncasecmp(a, "Basic ", 6))
    return "basic";
  const char *v = strchr(a, ' ');
  v = v ? v + 1 : a;
  /* an App JWT is three base64url parts; a token has no dots */
  return strchr(v, '.') ? "jwt" : "token";
}

static _Atomic long long g_used;

long long forge_ratelimit_apply(const struct forge_req *rq, struct forge_resp *resp, bool is_git,
                                bool not_modified)
{
  json_t *h = resp->headers ? json_object_get(resp->headers, "x-ratelimit-remaining") : NULL;
  const char *v = json_string_value(h);
  if (is_git || !v)
    return -1;
  if (strcmp(v, "4999") != 0) /* a fault's own answer (behave.c) */
    return strtoll(v, NULL, 10);
  long long used = g_used;
  if (!strcmp(auth_kind(rq->authorization), "token") && !not_modified && resp->status != 401)
    used = ++g_used;
  char b[32];
  snprintf(b, sizeof b, "%lld", 5000 - used);
  json_object_set_new(resp->headers, "x-ratelimit-remaining", json_string(b));
  snprintf(b, sizeof b, "%lld", used);
  json_object_set_new(resp->headers, "x-ratelimit-used", json_string(b));
  return 5000 - used;
}

void forge_reqlog_write(const struct forge_req *rq, const struct forge_resp *resp, bool is_git,
                        bool conditional, bool not_modified, long long remaining, const char *ua)
{
  if (g_log_fd < 0)
    return;
  char uab[121];
  snprintf(uab, sizeof uab, "%s", ua ? ua : "");
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:b, s:b, s:s, s:s, s:I}", "method", rq->method,
                        "path", rq->path, "query", rq->query ? rq->query : "", "kind",
                        is_git ? "git" : "api", "status", resp->status, "conditional", conditional,
                        "not_modified", not_modified, "auth", auth_kind(rq->authorization), "ua",
                        uab, "remaining", (json_int_t)remaining);
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
  json_decref(j);
  if (!s)
    return;
  size_t n = strlen(s);
  s[n] = '\n'; /* replaces the terminator: written with its length */
  pthread_mutex_lock(&g_log_lock);
  ssize_t w = write(g_log_fd, s, n + 1);
  pthread_mutex_unlock(&g_log_lock);
  (void)w;
  free(s);
}
