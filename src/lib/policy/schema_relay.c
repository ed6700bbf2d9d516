/* The policy's schema, `relay:` (the model relay, issues #10 and #17): the
 * tables of one upstream and of the relay section, for the one YAML walker
 * (common/yamlwalk.h), and the rules a table cannot say (upstream URLs,
 * routes, header and feature names). Both the one-upstream shorthand at the
 * top of `relay:` and `relay.upstreams` read the same upstream table. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "policy/schema.h"
#include "net/host.h"

static int relay_route_parse(al_yw *c, const al_yw_kv *kv, al_relay_route *r)
{
  al_autofree char *s = NULL;
  if (al_yw_str(c, kv, &s) < 0)
    return -1;
  const char *sp = strchr(s, ' ');
  if (!sp || sp == s || sp[1] != '/')
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` must be `METHOD /path`, like `POST /v1/messages`", s);
  for (const char *q = s; q < sp; q++)
    if (*q < 'A' || *q > 'Z')
      return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: the method is upper-case letters only",
                        s);
  const char *path = sp + 1;
  if (strlen(path) > 256 || strstr(path, "..") || strstr(path, "//"))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s`: the path must be normalized (no `..`, no `//`)", s);
  for (const char *q = path; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '.' || *q == '_' || *q == '-'))
      return al_yw_fail(c, al_yw_at(kv), kv->path,
                        "`%s`: the path may only hold letters, digits and `/._-` (no query)", s);
  r->method = strndup(s, (size_t)(sp - s));
  r->path = al_xstrdup(path);
  if (!r->method)
    return al_make_error(c->err, ENOMEM, "policy");
  return 0;
}

static int relay_upstream_url(al_yw *c, const al_yw_kv *kv, al_relay_upstream *r)
{
  if (al_yw_str(c, kv, &r->upstream) < 0)
    return -1;
  size_t n = strlen(r->upstream);
  while (n > 8 && r->upstream[n - 1] == '/')
    r->upstream[--n] = '\0';
  if (al_policy_https_url(c, kv, r->upstream) < 0)
    return -1;
  const char *h = r->upstream + 8;
  size_t hl = strcspn(h, ":/");
  al_host host;
  const char *why = NULL;
  if (al_host_canonicalize(h, hl, &host, &why) < 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: not a valid host", r->upstream);
  free(r->host);
  r->host = al_xstrdup(host.name);
  r->port = 443;
  const char *rest = h + hl;
  if (*rest == ':') {
    size_t pl = strcspn(rest + 1, "/");
    if (al_port_parse(rest + 1, pl, &r->port, &why) < 0)
      return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: bad port", r->upstream);
    rest += 1 + pl;
  }
  for (const char *q = rest; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '.' || *q == '_' || *q == '-'))
      return al_yw_fail(c, al_yw_at(kv), kv->path,
                        "`%s`: the path prefix may only hold `[A-Za-z0-9/._-]`", r->upstream);
  if (strstr(rest, ".."))
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: no `..` in the path prefix", r->upstream);
  free(r->prefix);
  r->prefix = al_xstrdup(rest);
  /* canonical spelling: lower-case host, no default port */
  char portbuf[8] = "";
  if (r->port != 443)
    snprintf(portbuf, sizeof portbuf, ":%u", (unsigned)r->port);
  char *u = al_strdup_printf("https://%s%s%s", r->host, portbuf, r->prefix);
  free(r->upstream);
  r->upstream = u;
  return 0;
}

static bool name_chars(const char *s, const char *extra)
{
  if (!s[0] || strlen(s) > 100)
    return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr(extra, *p)))
      return false;
  return true;
}

static bool feature_name(const char *s)
{
  return name_chars(s, "_-.");
}

static bool beta_name(const char *s)
{
  return name_chars(s, "-_.");
}

/* Extra headers: lower-case tokens, never a credential, a hop-by-hop or an
 * identity header the relay sets itself. */
static bool header_name(const char *s)
{
  static const char *const refused[] = {"authorization",
                                        "x-api-key",
                                        "api-key",
                                        "cookie",
                                        "host",
                                        "connection",
                                        "upgrade",
                                        "content-length",
                                        "transfer-encoding",
                                        "te",
                                        "trailer",
                                        "openai-organization",
                                        "openai-project",
                                        "proxy-authorization",
                                        "forwarded",
                                        "x-forwarded-for",
                                        NULL};
  if (!name_chars(s, "-_"))
    return false;
  for (size_t i = 0; refused[i]; i++)
    if (strcmp(s, refused[i]) == 0)
      return false;
  return strncmp(s, "proxy-", 6) != 0;
}

static bool org_value(const char *s)
{
  if (!s || !s[0] || strlen(s) > 128)
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_'))
      return false;
  return true;
}

static int upstream_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  return relay_upstream_url(c, kv, obj);
}

static int auth_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  if (strcmp(r->auth, "x-api-key") != 0 && strcmp(r->auth, "bearer") != 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "must be `x-api-key` or `bearer`, got `%s`",
                      r->auth);
  return 0;
}

static int vendor_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  if (strcmp(r->vendor, "anthropic") != 0 && strcmp(r->vendor, "openai") != 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "must be `anthropic` or `openai`, got `%s`",
                      r->vendor);
  return 0;
}

static int relay_pin_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  if (!al_policy_numeric_ip(r->pin))
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` must be a numeric IPv4 or IPv6 address",
                      r->pin);
  return 0;
}

/* relay.ca_file: an absolute, normalized path naming a regular file (it
 * replaces the system store, so a missing file would fail every call). */
static int relay_ca_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  const al_relay_upstream *r = obj;
  if (al_policy_abs_path_check(c, f, kv, obj) < 0)
    return -1;
  struct stat st;
  if (stat(r->ca_file, &st) < 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s`: %s (the CA bundle the relay verifies the upstream with must exist)",
                      r->ca_file, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` must be a regular file (a PEM bundle of CA certificates)", r->ca_file);
  return 0;
}

int al_policy_pubkey_pin_syntax(const char *s, const char **why)
{
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = 0;
  const char *p = s;
  for (;;) {
    if (strncmp(p, "sha256//", 8) != 0) {
      *why = "each pin must start with `sha256//`";
      return -1;
    }
    p += 8;
    /* base64 of 32 bytes: 43 characters of the alphabet, then one `=` */
    for (size_t i = 0; i < 43; i++, p++)
      if (!*p || !strchr(b64, *p)) {
        *why = "`sha256//` must be followed by the 44-character base64 of a SHA-256 "
               "(43 characters of [A-Za-z0-9+/] and `=`)";
        return -1;
      }
    if (*p != '=' || !strchr("AEIMQUYcgkosw048", p[-1])) {
      *why = "`sha256//` must be followed by the 44-character base64 of a SHA-256 "
             "(43 characters of [A-Za-z0-9+/] and `=`)";
      return -1;
    }
    p++;
    if (++n > 8) {
      *why = "at most 8 pins";
      return -1;
    }
    if (!*p)
      return 0;
    if (*p != ';') {
      *why = "pins are separated by `;`, nothing else follows one";
      return -1;
    }
    p++;
  }
}

static int pubkey_pin_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  const char *why = NULL;
  if (al_policy_pubkey_pin_syntax(r->pubkey_pin, &why) < 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%.120s` is not `sha256//BASE64[;sha256//BASE64...]` (curl's "
                      "--pinnedpubkey form): %s",
                      r->pubkey_pin, why);
  return 0;
}

static int key_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_relay_upstream *r = obj;
  al_autofree char *k = NULL;
  if (al_yw_str(c, kv, &k) < 0)
    return -1;
  if (strcmp(k, "broker") != 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "must be `broker` (the run's broker lease carries the key), got `%s`", k);
  r->key_broker = true;
  return 0;
}

static int org_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  const char *s = *(char **)(void *)((char *)obj + f->off);
  if (!org_value(s))
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` must be an id ([A-Za-z0-9_-], 1..128)", s);
  return 0;
}

static int route_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  return relay_route_parse(c, kv, obj);
}

static const al_yw_field route_item = {.type = AL_YW_CUSTOM, .parse = route_parse};

static int route_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  const al_relay_route *rt = &r->routes[r->n_routes - 1];
  for (size_t j = 0; j + 1 < r->n_routes; j++)
    if (strcmp(r->routes[j].method, rt->method) == 0 && strcmp(r->routes[j].path, rt->path) == 0)
      return al_yw_fail(c, al_yw_at(kv), kv->path, "duplicate of route %zu", j);
  return 0;
}

/* A list of names: the element just read (s) must pass `ok`. */
static int names_check(al_yw *c, const al_yw_kv *kv, const char *s, bool (*ok)(const char *),
                       const char *what)
{
  if (!ok(s))
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` is not %s", s, what);
  return 0;
}

static int allow_names(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  return names_check(c, kv, LAST(r->allow, r->n_allow), feature_name,
                     "a feature name ([a-z0-9_.-]; see docs/policy.md)");
}

static int header_names(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  return names_check(c, kv, LAST(r->headers, r->n_headers), header_name,
                     "a header the relay may forward (lower case; no credential, hop-by-hop "
                     "or organization/project header)");
}

static int beta_names(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_relay_upstream *r = obj;
  return names_check(c, kv, LAST(r->betas, r->n_betas), beta_name, "a beta name ([a-z0-9._-])");
}

/* The keys of one upstream; the shorthand form takes the same keys at the
 * top of `relay:`. */
static const al_yw_field upstream_fields[] = {
    {.key = "upstream",
     .type = AL_YW_CUSTOM,
     .flags = AL_YW_REQUIRED,
     .parse = upstream_parse,
     .doc = "https://HOST[:PORT][/PREFIX]"},
    {.key = "auth", .type = AL_YW_STR, .off = F(al_relay_upstream, auth), .check = auth_check},
    {.key = "key_file",
     .type = AL_YW_STR,
     .off = F(al_relay_upstream, key_file),
     .check = al_policy_abs_path_check},
    {.key = "ca_file",
     .type = AL_YW_STR,
     .off = F(al_relay_upstream, ca_file),
     .check = relay_ca_check},
    {.key = "pubkey_pin",
     .type = AL_YW_STR,
     .off = F(al_relay_upstream, pubkey_pin),
     .check = pubkey_pin_check},
    {.key = "pin", .type = AL_YW_STR, .off = F(al_relay_upstream, pin), .check = relay_pin_check},
    {.key = "routes",
     .type = AL_YW_LIST,
     .off = F(al_relay_upstream, routes),
     .off_n = F(al_relay_upstream, n_routes),
     .min = 1,
     .item = &route_item,
     .item_size = sizeof(al_relay_route),
     .check = route_check},
    {.key = "key", .type = AL_YW_CUSTOM, .parse = key_parse},
    {.key = "vendor",
     .type = AL_YW_STR,
     .off = F(al_relay_upstream, vendor),
     .check = vendor_check},
    {.key = "allow",
     .type = AL_YW_LIST,
     .off = F(al_relay_upstream, allow),
     .off_n = F(al_relay_upstream, n_allow),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = allow_names},
    {.key = "headers",
     .type = AL_YW_LIST,
     .off = F(al_relay_upstream, headers),
     .off_n = F(al_relay_upstream, n_headers),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = header_names},
    {.key = "anthropic_beta",
     .type = AL_YW_LIST,
     .off = F(al_relay_upstream, betas),
     .off_n = F(al_relay_upstream, n_betas),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = beta_names},
    {.key = "organization",
     .type = AL_YW_STR,
     .off = F(al_relay_upstream, organization),
     .check = org_check},
    {.key = "project", .type = AL_YW_STR, .off = F(al_relay_upstream, project), .check = org_check},
};
static const al_yw_map upstream_map = {upstream_fields, AL_ARRAY_SIZE(upstream_fields), NULL};
static const al_yw_field upstream_list = {
    .key = "upstreams",
    .type = AL_YW_LIST,
    .off = F(al_policy_relay, upstreams),
    .off_n = F(al_policy_relay, n_upstreams),
    .min = 1,
    .max = 16,
    .item = &(const al_yw_field){.type = AL_YW_MAP, .map = &upstream_map},
    .item_size = sizeof(al_relay_upstream)};

/* A shorthand key at the top of `relay:`: the one upstream's. */
static int relay_short(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  al_policy_relay *r = obj;
  struct policy_walk *rw = c->user;
  if (r->listed)
    return al_yw_fail(c, kv->key, kv->path,
                      "`relay.upstreams` is given: put this key inside one of its entries");
  if (!rw->short_key)
    rw->short_key = kv->key;
  if (r->n_upstreams == 0) {
    r->upstreams = al_xcalloc(1, sizeof *r->upstreams);
    r->n_upstreams = 1;
  }
  const al_yw_field *uf = al_yw_find(&upstream_map, f->key, strlen(f->key));
  return al_yw_value(c, uf, kv, &r->upstreams[0]);
}

static int relay_list(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy_relay *r = obj;
  struct policy_walk *rw = c->user;
  if (rw->short_key)
    return al_yw_fail(c, kv->key, kv->path,
                      "give either `upstreams` or the one-upstream shorthand (`upstream`, "
                      "`key_file`, ...), not both");
  r->listed = true;
  return al_yw_value(c, &upstream_list, kv, r);
}

static const al_yw_field relay_budget_fields[] = {
    {.key = "requests",
     .type = AL_YW_UINT,
     .off = F(al_policy_relay, budget_requests),
     .min = 0,
     .max = 10000000ull},
    {.key = "tokens",
     .type = AL_YW_UINT,
     .off = F(al_policy_relay, budget_tokens),
     .min = 0,
     .max = 1000000000000ull},
};
static const al_yw_map relay_budget_map = {relay_budget_fields, AL_ARRAY_SIZE(relay_budget_fields),
                                           NULL};

static const al_yw_field relay_timeout_fields[] = {
    {.key = "connect",
     .type = AL_YW_DURATION,
     .off = F(al_policy_relay, connect_timeout_ms),
     .min = 100,
     .max = 300000},
    {.key = "first_byte",
     .type = AL_YW_DURATION,
     .off = F(al_policy_relay, first_byte_timeout_ms),
     .min = 100,
     .max = 3600000},
    {.key = "idle",
     .type = AL_YW_DURATION,
     .off = F(al_policy_relay, idle_timeout_ms),
     .min = 100,
     .max = 3600000},
    {.key = "total",
     .type = AL_YW_DURATION,
     .off = F(al_policy_relay, total_timeout_ms),
     .min = 100,
     .max = 86400000},
};
static const al_yw_map relay_timeout_map = {relay_timeout_fields,
                                            AL_ARRAY_SIZE(relay_timeout_fields), NULL};

#define SHORT(k)                                                                                   \
  {                                                                                                \
    .key = (k), .type = AL_YW_CUSTOM, .parse = relay_short                                         \
  }
static const al_yw_field relay_fields[] = {
    SHORT("upstream"),
    SHORT("auth"),
    SHORT("key_file"),
    SHORT("ca_file"),
    SHORT("pubkey_pin"),
    SHORT("pin"),
    SHORT("routes"),
    SHORT("key"),
    SHORT("vendor"),
    SHORT("allow"),
    SHORT("headers"),
    SHORT("anthropic_beta"),
    SHORT("organization"),
    SHORT("project"),
    {.key = "upstreams", .type = AL_YW_CUSTOM, .parse = relay_list},
    {.key = "max_request",
     .type = AL_YW_SIZE,
     .off = F(al_policy_relay, max_request),
     .min = 1024,
     .max = 256ull << 20},
    {.key = "budget", .type = AL_YW_MAP, .off = 0, .map = &relay_budget_map},
    {.key = "timeouts", .type = AL_YW_MAP, .off = 0, .map = &relay_timeout_map},
    {.key = "max_connections",
     .type = AL_YW_UINT,
     .off = F(al_policy_relay, max_conns),
     .width = 4,
     .min = 1,
     .max = 1024},
};
static const al_yw_map relay_map = {relay_fields, AL_ARRAY_SIZE(relay_fields), NULL};

int al_policy_relay_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy *p = obj;
  al_policy_relay *r = &p->relay;
  r->present = true;
  r->max_request = 8ull << 20;
  r->budget_requests = 1000;
  r->max_conns = 16;
  r->connect_timeout_ms = 10000;
  r->first_byte_timeout_ms = 300000;
  r->idle_timeout_ms = 300000;
  r->total_timeout_ms = 1800000;
  int col;
  al_yw_pos(kv->key, &r->line, &col);
  return al_yw_walk(c, kv, &relay_map, r);
}
