/* Cross-route GitHub behaviours of the test forge: see behave.h. */
#include "behave.h"

#include <microhttpd.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/util.h"

#define DOC_PAGINATION                                                                             \
  "https://docs.github.com/rest/using-the-rest-api/using-pagination-in-the-rest-api"
#define DOC_RATE "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
#define SECONDARY_MSG                                                                              \
  "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."

static struct {
  json_t *faults;  /* [{path, method?, page?, status?, message?, retry_after?, primary?,
                      reset_in?, pad_bytes?, times, hits}] */
  json_t *renames; /* {"old/full": "new/full"} */
  bool jwt_tokens;
  long long revoke_delay_ms;
} g_b;

long long forge_mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long forge_behave_revoke_delay_ms(void)
{
  return g_b.revoke_delay_ms;
}

/* ---- helpers ---- */

static const char *api_path(const char *p)
{
  return strncmp(p, "/api/v3/", 8) == 0 ? p + 7 : p;
}

static long long query_int(const char *query, const char *name, long long dflt)
{
  al_autofree char *v = forge_query_param(query, name);
  if (!v || !*v)
    return dflt;
  char *end = NULL;
  long long n = strtoll(v, &end, 10);
  return end && *end == '\0' ? n : dflt;
}

/* "https://Host" of this request, as the client addressed us. */
static char *origin(struct forge_req *rq)
{
  struct MHD_Connection *conn = rq->conn;
  const char *host = conn ? MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host") : NULL;
  bool tls = conn && MHD_get_connection_info(conn, MHD_CONNECTION_INFO_PROTOCOL) != NULL;
  return al_strdup_printf("%s://%s", tls ? "https" : "http", host ? host : g_forge.api_host);
}

static void set_header(struct forge_resp *resp, const char *k, const char *v)
{
  if (!resp->headers)
    resp->headers = json_object();
  json_object_set_new(resp->headers, k, json_string(v));
}

static void set_header_ll(struct forge_resp *resp, const char *k, long long v)
{
  char b[32];
  snprintf(b, sizeof b, "%lld", v);
  set_header(resp, k, b);
}

/* ---- faults ---- */

static bool fault_matches(json_t *f, struct forge_req *rq, const char *path)
{
  const char *fp = json_string_value(json_object_get(f, "path"));
  const char *m = json_string_value(json_object_get(f, "method"));
  if (!fp || (m && strcasecmp(m, rq->method) != 0))
    return false;
  size_t n = strlen(fp);
  if (n && fp[n - 1] == '*') {
    if (strncmp(path, fp, n - 1) != 0)
      return false;
  } else if (strcmp(path, fp) != 0) {
    return false;
  }
  json_t *pg = json_object_get(f, "page");
  if (json_is_integer(pg) && json_integer_value(pg) != query_int(rq->query, "page", 1))
    return false;
  json_t *t = json_object_get(f, "times");
  return !json_is_integer(t) || json_integer_value(t) != 0;
}

static void fault_hit(json_t *f)
{
  json_t *t = json_object_get(f, "times");
  if (json_is_integer(t) && json_integer_value(t) > 0)
    json_object_set_new(f, "times", json_integer(json_integer_value(t) - 1));
  json_object_set_new(f, "hits", json_integer(json_integer_value(json_object_get(f, "hits")) + 1));
}

static bool answer_fault(json_t *f, struct forge_resp *resp)
{
  json_t *st = json_object_get(f, "status");
  if (!json_is_integer(st))
    return false;
  int status = (int)json_integer_value(st);
  bool primary = json_is_true(json_object_get(f, "primary"));
  const char *msg = json_string_value(json_object_get(f, "message"));
  if (!msg)
    msg = primary                          ? "API rate limit exceeded for installation."
          : status == 429 || status == 403 ? SECONDARY_MSG
          : status >= 500                  ? "Server Error"
                                           : "Fault injected by the test";
  forge_resp_error(resp, status, msg, status == 403 || status == 429 ? DOC_RATE : FORGE_DOCS);
  json_t *ra = json_object_get(f, "retry_after");
  if (json_is_integer(ra))
    set_header_ll(resp, "Retry-After", json_integer_value(ra));
  if (status == 403 || status == 429) {
    long long reset_in = json_integer_value(json_object_get(f, "reset_in"));
    set_header(resp, "x-ratelimit-limit", "5000");
    set_header(resp, "x-ratelimit-remaining", primary ? "0" : "4990");
    set_header_ll(resp, "x-ratelimit-reset",
                  (long long)time(NULL) + (reset_in > 0 ? reset_in : 60));
    set_header(resp, "x-ratelimit-resource", "core");
  }
  return true;
}

/* ---- renames ---- */

static json_t *repo_by_full(const char *full)
{
  const char *sl = strchr(full, '/');
  if (!sl)
    return NULL;
  al_autofree char *own = al_strdup_printf("%.*s", (int)(sl - full), full);
  return forge_repo(own, sl + 1);
}

static json_t *repo_by_id(long long id)
{
  size_t i;
  json_t *r;
  json_array_foreach(g_forge.repos, i, r)
  {
    if (json_integer_value(json_object_get(r, "id")) == id)
      return r;
  }
  return NULL;
}

/* /repos/{o}/{r}{rest} of a renamed repository → 301 to
 * /repositories/{id}{rest}, as GitHub answers for a renamed or
 * transferred repository. */
static bool answer_rename(struct forge_req *rq, const char *path, struct forge_resp *resp)
{
  if (strncmp(path, "/repos/", 7) != 0 || !json_object_size(g_b.renames))
    return false;
  const char *o = path + 7, *s1 = strchr(o, '/');
  if (!s1)
    return false;
  const char *s2 = strchr(s1 + 1, '/');
  size_t fl = s2 ? (size_t)(s2 - o) : strlen(o);
  al_autofree char *full = al_strdup_printf("%.*s", (int)fl, o);
  const char *k;
  json_t *v;
  json_t *to = NULL;
  json_object_foreach(g_b.renames, k, v)
  {
    if (!strcasecmp(k, full))
      to = repo_by_full(json_string_value(v));
  }
  if (!to || repo_by_full(full))
    return false;
  al_autofree char *org = origin(rq);
  bool v3 = strncmp(rq->path, "/api/v3/", 8) == 0;
  al_autofree char *loc =
      al_strdup_printf("%s%s/repositories/%lld%s%s%s", org, v3 ? "/api/v3" : "",
                       (long long)json_integer_value(json_object_get(to, "id")), s2 ? s2 : "",
                       rq->query && *rq->query ? "?" : "", rq->query ? rq->query : "");
  forge_resp_json(resp, 301,
                  json_pack("{s:s, s:s, s:s}", "message", "Moved Permanently", "url", loc,
                            "documentation_url",
                            "https://docs.github.com/rest/guides/"
                            "best-practices-for-using-the-rest-api#follow-redirects"));
  set_header(resp, "Location", loc);
  return true;
}

bool forge_behave_pre(struct forge_req *rq, struct forge_resp *resp, char **path_out)
{
  *path_out = NULL;
  const char *path = api_path(rq->path);
  size_t i;
  json_t *f;
  json_array_foreach(g_b.faults, i, f)
  {
    if (json_integer_value(json_object_get(f, "pad_bytes")) > 0 || !fault_matches(f, rq, path))
      continue;
    if (answer_fault(f, resp)) {
      fault_hit(f);
      return true;
    }
  }
  if (answer_rename(rq, path, resp))
    return true;
  if (strncmp(path, "/repositories/", 14) == 0) {
    char *end = NULL;
    long long id = strtoll(path + 14, &end, 10);
    json_t *r = end && end != path + 14 ? repo_by_id(id) : NULL;
    if (r && (*end == '/' || *end == '\0'))
      *path_out =
          al_strdup_printf("/repos/%s%s", json_string_value(json_object_get(r, "full_name")), end);
  }
  return false;
}

/* ---- pagination ---- */

/* Lists GitHub does not paginate (a directory's contents). */
static bool paginated(const char *path)
{
  return !strstr(path, "/contents/") &&
         !(strlen(path) >= 9 && !strcmp(path + strlen(path) - 9, "/contents"));
}

/* The query without `page` (and with per_page as given), for Link URLs. */
static char *query_without_page(const char *q)
{
  char *out = al_xstrdup("");
  if (!q)
    return out;
  al_autofree char *copy = al_xstrdup(q);
  char *save = NULL;
  for (char *p = strtok_r(copy, "&", &save); p; p = strtok_r(NULL, "&", &save)) {
    if (!strncmp(p, "page=", 5))
      continue;
    char *n = al_strdup_printf("%s%s%s", out, *out ? "&" : "", p);
    free(out);
    out = n;
  }
  return out;
}

static void paginate(struct forge_req *rq, struct forge_resp *resp)
{
  const char *path = api_path(rq->path);
  if (strcmp(rq->method, "GET") != 0 || resp->status != 200 || !resp->body || !paginated(path))
    return;
  json_t *j = json_loadb(resp->body, resp->body_len, 0, NULL);
  json_t *arr = json_is_array(j)                              ? j
                : !strcmp(path, "/installation/repositories") ? json_object_get(j, "repositories")
                                                              : NULL;
  if (!json_is_array(arr)) {
    json_decref(j);
    return;
  }
  long long pp = query_int(rq->query, "per_page", 30);
  if (pp < 1)
    pp = 30;
  if (pp > 100)
    pp = 100;
  long long page = query_int(rq->query, "page", 1);
  if (page < 1)
    page = 1;
  long long total = (long long)json_array_size(arr);
  long long last = total ? (total + pp - 1) / pp : 1;
  json_t *slice = json_array();
  for (long long k = (page - 1) * pp; k < page * pp && k < total; k++)
    json_array_append(slice, json_array_get(arr, (size_t)k));
  if (arr == j) {
    json_decref(j);
    j = slice;
  } else {
    json_object_set_new(j, "repositories", slice);
  }
  if (last > 1) {
    al_autofree char *org = origin(rq);
    al_autofree char *q = query_without_page(rq->query);
    char *link = al_xstrdup("");
    struct {
      const char *rel;
      long long p;
      bool on;
    } rels[] = {{"prev", page - 1, page > 1},
                {"next", page + 1, page < last},
                {"last", last, page < last},
                {"first", 1, page > 1}};
    for (size_t r = 0; r < AL_ARRAY_SIZE(rels); r++) {
      if (!rels[r].on)
        continue;
      char *n = al_strdup_printf("%s%s<%s%s?%s%spage=%lld>; rel=\"%s\"", link, *link ? ", " : "",
                                 org, rq->path, q, *q ? "&" : "", rels[r].p, rels[r].rel);
      free(link);
      link = n;
    }
    set_header(resp, "Link", link);
    free(link);
  }
  free(resp->body);
  resp->body = json_dumps(j, JSON_COMPACT);
  resp->body_len = resp->body ? strlen(resp->body) : 0;
  json_decref(j);
}

void forge_behave_post(struct forge_req *rq, struct forge_resp *resp)
{
  paginate(rq, resp);
  if (!resp->headers || !json_object_get(resp->headers, "x-ratelimit-limit")) {
    set_header(resp, "x-ratelimit-limit", "5000");
    set_header(resp, "x-ratelimit-remaining", "4999");
    set_header_ll(resp, "x-ratelimit-reset", (long long)time(NULL) + 3600);
    set_header(resp, "x-ratelimit-used", "1");
    set_header(resp, "x-ratelimit-resource", "core");
  }
  const char *path = api_path(rq->path);
  size_t i;
  json_t *f;
  json_array_foreach(g_b.faults, i, f)
  {
    long long pad = json_integer_value(json_object_get(f, "pad_bytes"));
    if (pad <= 0 || pad > (64LL << 20) || resp->status != 200 || !fault_matches(f, rq, path))
      continue;
    /* Trailing whitespace: still the same JSON document, just too big. */
    char *nb = realloc(resp->body, resp->body_len + (size_t)pad + 1);
    if (!nb)
      continue;
    memset(nb + resp->body_len, ' ', (size_t)pad);
    resp->body_len += (size_t)pad;
    nb[resp->body_len] = '\0';
    resp->body = nb;
    fault_hit(f);
  }
}

/* ---- tokens ---- */

static void b64url(const unsigned char *in, size_t n, char *out)
{
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16;
    if (i + 1 < n)
      v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[k++] = t[(v >> 18) & 63];
    out[k++] = t[(v >> 12) & 63];
    if (i + 1 < n)
      out[k++] = t[(v >> 6) & 63];
    if (i + 2 < n)
      out[k++] = t[v & 63];
  }
  out[k] = '\0';
}

int forge_behave_token_value(char *out, size_t out_size)
{
  if (!g_b.jwt_tokens)
    return forge_new_token_value(out, out_size);
  unsigned char jti[16], sig[64];
  if (RAND_bytes(jti, sizeof jti) != 1 || RAND_bytes(sig, sizeof sig) != 1 || out_size < 1024)
    return -1;
  char jh[33];
  for (size_t i = 0; i < sizeof jti; i++)
    sprintf(jh + 2 * i, "%02x", jti[i]);
  long long now = forge_now();
  char claims[256];
  snprintf(claims, sizeof claims,
           "{\"iss\":\"airlock-forge\",\"iat\":%lld,\"exp\":%lld,\"jti\":\"%s\",\"typ\":"
           "\"installation\"}",
           now, now + FORGE_TOKEN_TTL_S, jh);
  static const char hdr[] = "{\"alg\":\"ES256\",\"typ\":\"JWT\"}";
  char h64[64], c64[400], s64[96];
  b64url((const unsigned char *)hdr, strlen(hdr), h64);
  b64url((const unsigned char *)claims, strlen(claims), c64);
  b64url(sig, sizeof sig, s64);
  snprintf(out, out_size, "ghs_%s.%s.%s", h64, c64, s64);
  return 0;
}

/* ---- admin ---- */

static void admin_bad(struct forge_resp *resp, const char *what)
{
  forge_resp_error(resp, 400, what, NULL);
}

bool forge_behave_admin(struct forge_req *rq, struct forge_resp *resp)
{
  bool get = !strcmp(rq->method, "GET"), post = !strcmp(rq->method, "POST");
  const char *p = rq->path;
  if (get && !strcmp(p, "/faults")) {
    forge_resp_json(resp, 200, g_b.faults ? json_deep_copy(g_b.faults) : json_array());
    return true;
  }
  if (!post)
    return false;
  json_t *b = json_loadb(rq->body, rq->body_len, 0, NULL);
  bool handled = true;
  if (!strcmp(p, "/faults")) {
    /* {"faults": [...]} replaces the list ([] clears it). */
    json_t *fl = json_object_get(b, "faults");
    size_t i;
    json_t *f;
    bool ok = json_is_array(fl);
    json_array_foreach(fl, i, f) ok =
        ok && json_is_object(f) && json_is_string(json_object_get(f, "path"));
    if (!ok) {
      admin_bad(resp, "body must be {\"faults\": [{\"path\": ..., ...}]}");
    } else {
      json_decref(g_b.faults);
      g_b.faults = json_deep_copy(fl);
      json_array_foreach(g_b.faults, i, f) json_object_set_new(f, "hits", json_integer(0));
      forge_resp_json(resp, 200, json_deep_copy(g_b.faults));
    }
  } else if (!strcmp(p, "/settings")) {
    const char *tf = json_string_value(json_object_get(b, "token_format"));
    json_t *rd = json_object_get(b, "revoke_delay_ms");
    if ((tf && strcmp(tf, "jwt") && strcmp(tf, "classic")) ||
        (rd &&
         (!json_is_integer(rd) || json_integer_value(rd) < 0 || json_integer_value(rd) > 600000))) {
      admin_bad(resp,
                "body: {\"token_format\": \"jwt\"|\"classic\", \"revoke_delay_ms\": 0..600000}");
    } else {
      if (tf)
        g_b.jwt_tokens = !strcmp(tf, "jwt");
      if (rd)
        g_b.revoke_delay_ms = json_integer_value(rd);
      forge_resp_json(resp, 200,
                      json_pack("{s:s, s:I}", "token_format", g_b.jwt_tokens ? "jwt" : "classic",
                                "revoke_delay_ms", (json_int_t)g_b.revoke_delay_ms));
    }
  } else if (!strcmp(p, "/renames")) {
    /* {"from": "acme/old-name", "to": "acme/widget"}: the old name answers 301. */
    const char *from = json_string_value(json_object_get(b, "from"));
    const char *to = json_string_value(json_object_get(b, "to"));
    if (!from || !to || !strchr(from, '/') || !repo_by_full(to)) {
      admin_bad(resp, "body must be {\"from\": \"o/old\", \"to\": \"o/existing\"}");
    } else {
      if (!g_b.renames)
        g_b.renames = json_object();
      json_object_set_new(g_b.renames, from, json_string(to));
      forge_resp_json(resp, 200, json_deep_copy(g_b.renames));
    }
  } else if (!strncmp(p, "/installations/", 15) && strstr(p, "/suspend")) {
    long long id = atoll(p + 15);
    json_t *inst = forge_installation(id);
    json_t *s = json_object_get(b, "suspended");
    if (!inst || !json_is_boolean(s)) {
      admin_bad(resp, "POST /installations/{id}/suspend {\"suspended\": true|false}");
    } else {
      if (json_is_true(s)) {
        char now[32];
        forge_iso8601(forge_now(), now);
        json_object_set_new(inst, "suspended_at", json_string(now));
      } else {
        json_object_del(inst, "suspended_at");
      }
      forge_resp_json(resp, 200,
                      json_pack("{s:I, s:O*}", "id", (json_int_t)id, "suspended_at",
                                json_object_get(inst, "suspended_at")));
    }
  } else {
    handled = false;
  }
  json_decref(b);
  return handled;
}
