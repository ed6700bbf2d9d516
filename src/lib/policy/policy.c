/* Policy loader: libfyaml document → validated al_policy.
 *
 * Strictness rules: the top level and every mapping accept only the keys of
 * the schema; scalars must have the right shape (integers in decimal,
 * booleans true/false, sizes and durations with units); anchors, aliases
 * and tags are refused (no billion-laughs, no type games); duplicate keys
 * are refused by libfyaml. Messages are "FILE:LINE:COL: PATH: rule". */
#include "policy/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proxy/addr.h"
#include "proxy/host.h"

#define POLICY_MAX_BYTES (1024 * 1024)
#define MAX_LIST 1024

struct ctx {
  const char *name;
  al_error *err;
  struct fy_document *doc;
  al_policy *pol; /* for warnings */
};

static void node_pos(struct fy_node *n, int *line, int *col)
{
  *line = 0;
  *col = 0;
  struct fy_token *t = n ? fy_node_get_scalar_token(n) : NULL;
  if (t) {
    const struct fy_mark *m = fy_token_start_mark(t);
    if (m) {
      *line = m->line + 1;
      *col = m->column + 1;
    }
  }
}

__attribute__((format(printf, 4, 5))) static int fail(struct ctx *c, struct fy_node *at,
                                                      const char *path, const char *fmt, ...)
{
  char rule[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rule, sizeof rule, fmt, ap);
  va_end(ap);
  int line, col;
  node_pos(at, &line, &col);
  if (line > 0)
    al_make_error(c->err, 0, "%s:%d:%d: %s: %s", c->name, line, col, path, rule);
  else
    al_make_error(c->err, 0, "%s: %s: %s", c->name, path, rule);
  if (c->err)
    c->err->code = EINVAL;
  return -1;
}
/* A surprising but valid choice: appended to the policy's warnings in the
 * same "FILE:LINE:COL: PATH: why" form as an error. */
__attribute__((format(printf, 4, 5))) static void warn(struct ctx *c, struct fy_node *at,
                                                       const char *path, const char *fmt, ...)
{
  if (!c->pol)
    return;
  char rule[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rule, sizeof rule, fmt, ap);
  va_end(ap);
  int line, col;
  node_pos(at, &line, &col);
  al_policy *p = c->pol;
  p->warnings = al_xrealloc(p->warnings, (p->n_warnings + 1) * sizeof *p->warnings);
  p->warnings[p->n_warnings++] =
      line > 0 ? al_strdup_printf("%s:%d:%d: %s: %s", c->name, line, col, path, rule)
               : al_strdup_printf("%s: %s: %s", c->name, path, rule);
}

/* An IPv4 literal written any way but the plain dotted quad: inet_aton(3)
 * reads `010.0.0.1` as octal (8.0.0.1), `0x7f.1` as hex, `127.1` as
 * 127.0.0.1, so a reader and the proxy could disagree on what it means.
 * in[0..len) is the text as written, h its canonical form. Writes the
 * rule into msg and returns true when the spelling is ambiguous. */
static bool ambiguous_ipv4(const char *in, size_t len, const al_host *h, char *msg, size_t n)
{
  if (!h->is_ip || h->family != AF_INET)
    return false;
  if (strlen(h->name) == len && memcmp(h->name, in, len) == 0)
    return false;
  /* the decimal reading, when the text is four decimal parts */
  unsigned part[4];
  int np = 0;
  bool dec = true;
  const char *q = in, *end = in + len;
  while (dec && q < end && np < 4) {
    unsigned v = 0;
    size_t d = 0;
    while (q < end && *q >= '0' && *q <= '9' && d < 4) {
      v = v * 10 + (unsigned)(*q - '0');
      q++;
      d++;
    }
    dec = d > 0 && v <= 255;
    part[np++] = v;
    if (q < end && *q == '.')
      q++;
    else
      break;
  }
  dec = dec && np == 4 && q == end;
  char alt[40] = "";
  if (dec) {
    snprintf(alt, sizeof alt, "%u.%u.%u.%u", part[0], part[1], part[2], part[3]);
    struct in_addr ia;
    /* offered only when the policy would accept it */
    if (strcmp(alt, h->name) == 0 || inet_pton(AF_INET, alt, &ia) != 1 ||
        al_addr_classify4(&ia, NULL))
      alt[0] = '\0';
  }
  snprintf(msg, n,
           "`%.*s` is an ambiguous IPv4 spelling (leading zeros, octal, hex or a short form): "
           "inet_aton(3) reads it as %s; write the dotted quad `%s`%s%s%s",
           (int)(len > 64 ? 64 : len), in, h->name, h->name, alt[0] ? " (or `" : "", alt,
           alt[0] ? "` if that is what you meant)" : "");
  return true;
}

/* fail() is always -1; say so where the static analyzer can see it (it does
 * not follow variadic calls, and would report values as unset after it). */
#define fail(...) (fail(__VA_ARGS__), -1)

/* The node used for positions of a value: the value if it is a scalar, else
 * the key (mappings and sequences carry no token of their own). */
struct kv {
  struct fy_node *key;
  struct fy_node *val;
  const char *path;
};

static struct fy_node *pos_of(const struct kv *kv)
{
  return (kv->val && fy_node_is_scalar(kv->val)) ? kv->val : kv->key;
}

/* `at` names where to point when n (a mapping or sequence) has no token of
 * its own: the key it is the value of. */
static int refuse_tricks(struct ctx *c, struct fy_node *n, struct fy_node *at, const char *path)
{
  if (!n)
    return 0;
  if (fy_node_get_scalar_token(n) || !at)
    at = n;
  if (fy_node_is_alias(n) || (c->doc && fy_document_lookup_anchor_by_node(c->doc, n)))
    return fail(c, at, path, "anchors and aliases are not allowed in a policy");
  size_t tl = 0;
  if (fy_node_get_tag(n, &tl) && tl > 0)
    return fail(c, at, path, "tags are not allowed in a policy");
  return 0;
}

static int get_str(struct ctx *c, const struct kv *kv, char **out)
{
  if (refuse_tricks(c, kv->val, kv->key, kv->path) < 0)
    return -1;
  if (!kv->val || !fy_node_is_scalar(kv->val))
    return fail(c, pos_of(kv), kv->path, "must be a string");
  size_t len = 0;
  const char *s = fy_node_get_scalar(kv->val, &len);
  if (!s)
    return fail(c, pos_of(kv), kv->path, "must be a string");
  if (memchr(s, '\0', len))
    return fail(c, pos_of(kv), kv->path, "must not contain a NUL byte");
  if (len > 4096)
    return fail(c, pos_of(kv), kv->path, "longer than 4096 bytes");
  free(*out);
  *out = strndup(s, len);
  if (!*out)
    return al_make_error(c->err, ENOMEM, "policy");
  return 0;
}

static int get_uint(struct ctx *c, const struct kv *kv, uint64_t min, uint64_t max, uint64_t *out)
{
  al_autofree char *s = NULL;
  if (get_str(c, kv, &s) < 0)
    return -1;
  if (fy_node_get_style(kv->val) != FYNS_PLAIN)
    return fail(c, pos_of(kv), kv->path, "must be a number, not a quoted string");
  if (!s[0] || !isdigit((unsigned char)s[0]) || (s[0] == '0' && s[1]))
    goto bad;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (!isdigit((unsigned char)*p))
      goto bad;
    if (v > (UINT64_MAX - 9) / 10)
      goto bad;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (v < min || v > max)
    return fail(c, pos_of(kv), kv->path, "must be between %llu and %llu", (unsigned long long)min,
                (unsigned long long)max);
  *out = v;
  return 0;
bad:
  return fail(c, pos_of(kv), kv->path,
              "must be a whole number in decimal (no sign, no leading zero), got `%s`", s);
}

static int get_bool(struct ctx *c, const struct kv *kv, bool *out)
{
  al_autofree char *s = NULL;
  if (get_str(c, kv, &s) < 0)
    return -1;
  if (fy_node_get_style(kv->val) != FYNS_PLAIN)
    return fail(c, pos_of(kv), kv->path, "must be true or false, not a quoted string");
  if (strcmp(s, "true") == 0)
    *out = true;
  else if (strcmp(s, "false") == 0)
    *out = false;
  else
    return fail(c, pos_of(kv), kv->path, "must be true or false, got `%s`", s);
  return 0;
}

static int get_size(struct ctx *c, const struct kv *kv, uint64_t min, uint64_t *out)
{
  al_autofree char *s = NULL;
  if (get_str(c, kv, &s) < 0)
    return -1;
  const char *why = NULL;
  if (al_parse_size(s, out, &why) < 0)
    return fail(c, pos_of(kv), kv->path, "%s, got `%s`", why, s);
  if (*out < min)
    return fail(c, pos_of(kv), kv->path, "must be at least %llu bytes", (unsigned long long)min);
  return 0;
}

/* 60000 -> "1m", 3600000 -> "1h", 1500 -> "1500ms": the largest exact unit. */
static const char *fmt_duration(uint64_t ms, char *buf, size_t len)
{
  static const struct {
    uint64_t mult;
    const char *unit;
  } u[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
  for (size_t i = 0; i < AL_ARRAY_SIZE(u); i++)
    if (ms && ms % u[i].mult == 0) {
      snprintf(buf, len, "%llu%s", (unsigned long long)(ms / u[i].mult), u[i].unit);
      return buf;
    }
  snprintf(buf, len, "%llums", (unsigned long long)ms);
  return buf;
}

static int get_duration(struct ctx *c, const struct kv *kv, uint64_t min_ms, uint64_t max_ms,
                        uint64_t *out)
{
  al_autofree char *s = NULL;
  if (get_str(c, kv, &s) < 0)
    return -1;
  const char *why = NULL;
  if (al_parse_duration_ms(s, out, &why) < 0)
    return fail(c, pos_of(kv), kv->path, "%s, got `%s`", why, s);
  if (*out < min_ms || *out > max_ms) {
    char lo[32], hi[32];
    return fail(c, pos_of(kv), kv->path, "must be between %s and %s, got `%s`",
                fmt_duration(min_ms, lo, sizeof lo), fmt_duration(max_ms, hi, sizeof hi), s);
  }
  return 0;
}

/* Iterate a mapping, checking every key against `allowed`; calls back with
 * the key index. */
typedef int (*field_fn)(struct ctx *c, void *obj, size_t idx, const struct kv *kv);

static int walk_map(struct ctx *c, struct fy_node *map, struct fy_node *pos, const char *path,
                    const char *const *allowed, field_fn fn, void *obj)
{
  if (refuse_tricks(c, map, pos, path) < 0)
    return -1;
  if (!map || !fy_node_is_mapping(map))
    return fail(c, pos, path, "must be a mapping");
  void *it = NULL;
  struct fy_node_pair *pair;
  while ((pair = fy_node_mapping_iterate(map, &it)) != NULL) {
    struct fy_node *k = fy_node_pair_key(pair);
    struct fy_node *v = fy_node_pair_value(pair);
    if (refuse_tricks(c, k, k, path) < 0)
      return -1;
    size_t klen = 0;
    const char *ks = (k && fy_node_is_scalar(k)) ? fy_node_get_scalar(k, &klen) : NULL;
    if (!ks)
      return fail(c, k ? k : pos, path, "keys must be strings");
    size_t idx = 0;
    for (; allowed[idx]; idx++)
      if (strlen(allowed[idx]) == klen && memcmp(allowed[idx], ks, klen) == 0)
        break;
    char sub[256];
    snprintf(sub, sizeof sub, "%s%s%.*s", path, path[0] ? "." : "", (int)(klen > 64 ? 64 : klen),
             ks);
    if (!allowed[idx]) {
      char list[512] = "";
      for (size_t i = 0; allowed[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, allowed[i], sizeof list - strlen(list) - 1);
      }
      return fail(c, k, sub, "unknown key (allowed here: %s)", list);
    }
    struct kv kv = {k, v, sub};
    if (v == NULL || (fy_node_is_scalar(v) && fy_node_get_scalar(v, &klen) == NULL))
      return fail(c, k, sub, "has no value");
    if (fn(c, obj, idx, &kv) < 0)
      return -1;
  }
  return 0;
}

static int walk_seq(struct ctx *c, const struct kv *kv, size_t *count)
{
  if (refuse_tricks(c, kv->val, kv->key, kv->path) < 0)
    return -1;
  if (!kv->val || !fy_node_is_sequence(kv->val))
    return fail(c, pos_of(kv), kv->path, "must be a list");
  *count = (size_t)fy_node_sequence_item_count(kv->val);
  if (*count > MAX_LIST)
    return fail(c, kv->key, kv->path, "more than %d entries", MAX_LIST);
  return 0;
}

/* ---- network ---- */

struct allow_tmp {
  al_net_allow *a;
  bool have_port, have_tls, have_host;
  struct fy_node *host_node;
};

static int allow_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  struct allow_tmp *t = obj;
  switch (idx) {
  case 0: { /* host */
    al_autofree char *s = NULL;
    if (get_str(c, kv, &s) < 0)
      return -1;
    t->host_node = pos_of(kv);
    t->have_host = true;
    const char *name = s;
    if (strncmp(s, "*.", 2) == 0) {
      t->a->wildcard = true;
      name = s + 2;
    } else if (strchr(s, '*')) {
      return fail(c, pos_of(kv), kv->path,
                  "`%s`: a wildcard is written `*.suffix` with at least two labels after it", s);
    }
    const char *why = NULL;
    al_host h;
    const char *canon_in = name;
    size_t canon_len = strlen(name);
    if (canon_len >= 2 && name[0] == '[' && name[canon_len - 1] == ']') {
      canon_in = name + 1;
      canon_len -= 2;
    }
    if (al_host_canonicalize(canon_in, canon_len, &h, &why) < 0)
      return fail(c, pos_of(kv), kv->path, "`%s` is not a valid host: %s", s, why);
    if (t->a->wildcard) {
      if (h.is_ip)
        return fail(c, pos_of(kv), kv->path, "`%s`: a wildcard never matches an IP literal", s);
      if (!strchr(h.name, '.'))
        return fail(c, pos_of(kv), kv->path,
                    "`%s`: a wildcard needs at least two labels after `*.` (no `*.com`)", s);
    }
    t->a->host = al_xstrdup(h.name);
    t->a->is_ip = h.is_ip;
    if (h.is_ip) {
      /* The proxy refuses these ranges for every connection: an entry for
       * one could never work, and is a sign someone meant a test host. */
      unsigned char ab[16];
      const char *range = NULL;
      if (h.family == AF_INET && inet_pton(AF_INET, h.name, ab) == 1)
        range = al_addr_classify4((const struct in_addr *)ab, NULL);
      else if (h.family == AF_INET6 && inet_pton(AF_INET6, h.name, ab) == 1)
        range = al_addr_classify6((const struct in6_addr *)ab, NULL);
      if (range)
        return fail(c, pos_of(kv), kv->path,
                    "`%s` is a %s address, which the proxy never dials; to reach a test host, "
                    "allow a name and map it with network.pin",
                    s, range);
      /* after the range check: its advice (a name and a pin) is the one
       * that works for a refused range, however it is spelt */
      char amb[400];
      if (ambiguous_ipv4(canon_in, canon_len, &h, amb, sizeof amb))
        return fail(c, pos_of(kv), kv->path, "%s", amb);
      warn(c, pos_of(kv), kv->path,
           "`%s` is a public IP literal: whoever holds that address later gets the agent's "
           "traffic, and TLS is checked against no name; allow the host's name instead",
           s);
    }
    return 0;
  }
  case 1: { /* port */
    uint64_t v;
    if (get_uint(c, kv, 1, 65535, &v) < 0)
      return -1;
    t->a->port = (uint16_t)v;
    t->have_port = true;
    return 0;
  }
  case 2: /* tls */
    t->have_tls = true;
    return get_bool(c, kv, &t->a->tls);
  default:
    return -1;
  }
}

static int parse_allow(struct ctx *c, al_policy_network *n, const struct kv *kv)
{
  size_t count = 0;
  if (walk_seq(c, kv, &count) < 0)
    return -1;
  n->allow = al_xcalloc(count, sizeof *n->allow);
  void *it = NULL;
  struct fy_node *item;
  size_t i = 0;
  static const char *const keys[] = {"host", "port", "tls", NULL};
  while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
    char path[128];
    snprintf(path, sizeof path, "%s[%zu]", kv->path, i);
    struct allow_tmp t = {.a = &n->allow[i]};
    n->n_allow = i + 1;
    if (walk_map(c, item, kv->key, path, keys, allow_field, &t) < 0)
      return -1;
    if (!t.have_host)
      return fail(c, kv->key, path, "an allow entry needs `host`");
    if (!t.have_port)
      return fail(c, t.host_node, path, "an allow entry needs `port` (exactly host:port pairs)");
    if (!t.have_tls)
      t.a->tls = t.a->port == 443;
    else if (!t.a->tls && t.a->port == 443)
      warn(c, t.host_node, path,
           "`tls: false` on port 443: plain HTTP is relayed and the CONNECT tunnel's SNI is "
           "not checked for this entry; drop `tls: false` unless the service really speaks "
           "plain HTTP on 443");
    int line, col;
    node_pos(t.host_node, &line, &col);
    t.a->line = line;
    for (size_t j = 0; j < i; j++)
      if (n->allow[j].port == t.a->port && n->allow[j].wildcard == t.a->wildcard &&
          strcmp(n->allow[j].host, t.a->host) == 0)
        return fail(c, t.host_node, path, "duplicate of entry %zu", j);
    i++;
  }
  return 0;
}

struct pin_tmp {
  al_net_pin *p;
};

static int pin_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  struct pin_tmp *t = obj;
  al_autofree char *s = NULL;
  if (get_str(c, kv, &s) < 0)
    return -1;
  if (idx == 0) {
    al_host h;
    const char *why = NULL;
    if (al_host_canonicalize(s, strlen(s), &h, &why) < 0)
      return fail(c, pos_of(kv), kv->path, "`%s` is not a valid host: %s", s, why);
    if (h.is_ip)
      return fail(c, pos_of(kv), kv->path, "a pin maps a name, not an IP literal");
    t->p->host = al_xstrdup(h.name);
    int col;
    node_pos(pos_of(kv), &t->p->line, &col);
  } else {
    unsigned char buf[16];
    if (inet_pton(AF_INET, s, buf) != 1 && inet_pton(AF_INET6, s, buf) != 1)
      return fail(c, pos_of(kv), kv->path,
                  "`%s` must be a numeric IPv4 or IPv6 address (dotted quad or RFC 5952)", s);
    t->p->address = al_xstrdup(s);
  }
  return 0;
}

static int parse_pins(struct ctx *c, al_policy_network *n, const struct kv *kv)
{
  size_t count = 0;
  if (walk_seq(c, kv, &count) < 0)
    return -1;
  n->pin = al_xcalloc(count, sizeof *n->pin);
  void *it = NULL;
  struct fy_node *item;
  size_t i = 0;
  static const char *const keys[] = {"host", "address", NULL};
  while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
    char path[128];
    snprintf(path, sizeof path, "%s[%zu]", kv->path, i);
    struct pin_tmp t = {.p = &n->pin[i]};
    n->n_pin = i + 1;
    if (walk_map(c, item, kv->key, path, keys, pin_field, &t) < 0)
      return -1;
    if (!t.p->host || !t.p->address)
      return fail(c, kv->key, path, "a pin needs both `host` and `address`");
    i++;
  }
  return 0;
}

static int timeouts_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_network *n = obj;
  uint64_t *dst[] = {&n->head_timeout_ms, &n->connect_timeout_ms, &n->idle_timeout_ms,
                     &n->max_tunnel_ms};
  static const uint64_t maxv[] = {300000, 300000, 86400000, 7 * 86400000ull};
  return get_duration(c, kv, 100, maxv[idx], dst[idx]);
}

static int network_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_network *n = obj;
  switch (idx) {
  case 0:
    return parse_allow(c, n, kv);
  case 1:
    return parse_pins(c, n, kv);
  case 2: {
    if (get_str(c, kv, &n->resolver) < 0)
      return -1;
    /* ADDR:PORT with a numeric address; IPv6 in brackets. */
    char addr[64];
    const char *s = n->resolver, *colon;
    if (s[0] == '[') {
      const char *rb = strchr(s, ']');
      if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= sizeof addr)
        goto bad_resolver;
      memcpy(addr, s + 1, (size_t)(rb - s - 1));
      addr[rb - s - 1] = '\0';
      colon = rb + 1;
    } else {
      colon = strrchr(s, ':');
      if (!colon || (size_t)(colon - s) >= sizeof addr)
        goto bad_resolver;
      memcpy(addr, s, (size_t)(colon - s));
      addr[colon - s] = '\0';
    }
    unsigned char buf[16];
    uint16_t port;
    const char *why;
    if ((inet_pton(AF_INET, addr, buf) != 1 && inet_pton(AF_INET6, addr, buf) != 1) ||
        al_port_parse(colon + 1, strlen(colon + 1), &port, &why) < 0)
      goto bad_resolver;
    return 0;
  bad_resolver:
    return fail(c, pos_of(kv), kv->path, "`%s` must be a numeric ADDR:PORT (IPv6 as [ADDR]:PORT)",
                n->resolver);
  }
  case 3: {
    uint64_t v;
    if (get_uint(c, kv, 1, 100000, &v) < 0)
      return -1;
    n->max_conns = (uint32_t)v;
    return 0;
  }
  case 4:
    return get_size(c, kv, 1, &n->egress_budget);
  case 5: {
    static const char *const keys[] = {"head", "connect", "idle", "tunnel", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, timeouts_field, n);
  }
  default:
    return -1;
  }
}

/* ---- filesystem ---- */

static int check_abs_path(struct ctx *c, const struct kv *kv, const char *s)
{
  if (s[0] != '/')
    return fail(c, pos_of(kv), kv->path, "`%s` must be an absolute path", s);
  if (strstr(s, "/../") || strstr(s, "/./") || strstr(s, "//") ||
      (strlen(s) >= 3 && strcmp(s + strlen(s) - 3, "/..") == 0) ||
      (strlen(s) >= 2 && strcmp(s + strlen(s) - 2, "/.") == 0))
    return fail(c, pos_of(kv), kv->path, "`%s` must be normalized (no `.`, `..` or `//`)", s);
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return fail(c, pos_of(kv), kv->path, "path contains a control character");
  return 0;
}

/* A Docker image reference as `docker run` takes it (distribution's
 * reference grammar, loosely): [A-Za-z0-9._/:@-], at most 255 bytes, not
 * starting with `-` or `.`. Keeps it safe to emit into YAML and JSON. */
static int check_image(struct ctx *c, const struct kv *kv, const char *s)
{
  size_t n = strlen(s);
  if (n == 0 || n > 255 || s[0] == '-' || s[0] == '.' || s[0] == '/' || s[0] == ':')
    return fail(c, pos_of(kv), kv->path, "`%.64s` is not an image reference", s);
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          strchr("._/:@-", *p)))
      return fail(c, pos_of(kv), kv->path,
                  "image reference may only contain letters, digits and `._/:@-`");
  return 0;
}

static int fs_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_filesystem *f = obj;
  switch (idx) {
  case 0: {
    al_autofree char *s = NULL;
    if (get_str(c, kv, &s) < 0)
      return -1;
    if (strcmp(s, "host") == 0)
      return 0;
    if (check_abs_path(c, kv, s) < 0)
      return -1;
    if (strcmp(s, "/") == 0)
      return fail(c, pos_of(kv), kv->path, "the host's / is not a rootfs (use `host`)");
    f->root = al_steal_ptr(&s);
    return 0;
  }
  case 1:
    return get_size(c, kv, 1024 * 1024, &f->workspace_size);
  case 2:
    return get_size(c, kv, 1024 * 1024, &f->tmp_size);
  case 3: {
    size_t count = 0;
    if (walk_seq(c, kv, &count) < 0)
      return -1;
    f->ro_paths = al_xcalloc(count, sizeof(char *));
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
      char path[128];
      snprintf(path, sizeof path, "%s[%zu]", kv->path, f->n_ro_paths);
      struct kv ikv = {kv->key, item, path};
      al_autofree char *s = NULL;
      if (get_str(c, &ikv, &s) < 0 || check_abs_path(c, &ikv, s) < 0)
        return -1;
      static const char *const reserved[] = {"/",    "/proc", "/dev", "/workspace",
                                             "/tmp", "/sys",  NULL};
      for (size_t i = 0; reserved[i]; i++)
        if (strcmp(s, reserved[i]) == 0)
          return fail(c, pos_of(&ikv), path, "`%s` is managed by airlock and cannot be bound", s);
      f->ro_paths[f->n_ro_paths++] = al_steal_ptr(&s);
    }
    return 0;
  }
  case 4:
    if (get_str(c, kv, &f->image) < 0)
      return -1;
    return check_image(c, kv, f->image);
  default:
    return -1;
  }
}

/* ---- process ---- */

static int limits_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_limits *l = obj;
  uint64_t v;
  switch (idx) {
  case 0:
    return get_size(c, kv, 16 * 1024 * 1024, &l->memory);
  case 1:
    if (get_uint(c, kv, 8, 1000000, &v) < 0)
      return -1;
    l->pids = (uint32_t)v;
    return 0;
  case 2: {
    /* cpu: cores as a decimal, e.g. 2 or 0.5 */
    al_autofree char *s = NULL;
    if (get_str(c, kv, &s) < 0)
      return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || !end || *end || !isdigit((unsigned char)s[0]) || d < 0.01 || d > 1024)
      return fail(c, pos_of(kv), kv->path,
                  "cpu is a number of cores between 0.01 and 1024, got `%s`", s);
    l->cpu_milli = (uint32_t)(d * 1000.0 + 0.5);
    return 0;
  }
  case 3:
    return get_duration(c, kv, 1000, 7 * 86400000ull, &l->wall_ms);
  case 4:
    if (get_uint(c, kv, 16, 1048576, &v) < 0)
      return -1;
    l->nofile = (uint32_t)v;
    return 0;
  default:
    return -1;
  }
}

static bool valid_env_name(const char *s)
{
  if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return false;
  return strlen(s) <= 128;
}

static int process_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_process *p = obj;
  switch (idx) {
  case 0: {
    uint64_t v;
    if (get_uint(c, kv, 1, 65533, &v) < 0)
      return -1;
    p->user = (uint32_t)v;
    return 0;
  }
  case 1: {
    size_t count = 0;
    if (walk_seq(c, kv, &count) < 0)
      return -1;
    p->env_pass = al_xcalloc(count, sizeof(char *));
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
      char path[128];
      snprintf(path, sizeof path, "%s[%zu]", kv->path, p->n_env_pass);
      struct kv ikv = {kv->key, item, path};
      al_autofree char *s = NULL;
      if (get_str(c, &ikv, &s) < 0)
        return -1;
      if (!valid_env_name(s))
        return fail(c, pos_of(&ikv), path, "`%s` is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
                    s);
      if (al_policy_env_reserved(s))
        return fail(c, pos_of(&ikv), path, "`%s` is set by airlock and cannot be passed through",
                    s);
      p->env_pass[p->n_env_pass++] = al_steal_ptr(&s);
    }
    return 0;
  }
  case 2: {
    static const char *const keys[] = {"memory", "pids", "cpu", "wall", "nofile", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, limits_field, &p->limits);
  }
  default:
    return -1;
  }
}

/* ---- credentials ---- */

bool al_policy_env_reserved(const char *name)
{
  static const char *const exact[] = {"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", NULL};
  static const char *const nocase[] = {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", NULL};
  if (strncmp(name, "AIRLOCK_", 8) == 0 || strncmp(name, "GIT_CONFIG_", 11) == 0)
    return true;
  for (size_t i = 0; exact[i]; i++)
    if (strcmp(name, exact[i]) == 0)
      return true;
  for (size_t i = 0; nocase[i]; i++)
    if (strcasecmp(name, nocase[i]) == 0)
      return true;
  return false;
}

static bool valid_repo(const char *s)
{
  const char *slash = strchr(s, '/');
  if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
    return false;
  for (const char *p = s; *p; p++)
    if (p != slash && !(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
      return false;
  const char *name = slash + 1;
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || s[0] == '.' || strlen(s) > 140)
    return false;
  return true;
}

static const char *const grantable[] = {"contents", "pull_requests", "issues", "metadata",
                                        "checks",   "statuses",      NULL};
static const char *const never[] = {"administration", "workflows", "actions", "secrets", NULL};

static int perms_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  (void)idx;
  return 0;
}

static int parse_perms(struct ctx *c, al_policy_role *r, const struct kv *kv)
{
  if (refuse_tricks(c, kv->val, kv->key, kv->path) < 0)
    return -1;
  if (!kv->val || !fy_node_is_mapping(kv->val))
    return fail(c, pos_of(kv), kv->path, "must be a mapping of permission: read|write");
  size_t count = (size_t)fy_node_mapping_item_count(kv->val);
  if (count > 32)
    return fail(c, kv->key, kv->path, "too many permissions");
  r->perms = al_xcalloc(count, sizeof *r->perms);
  void *it = NULL;
  struct fy_node_pair *pair;
  while ((pair = fy_node_mapping_iterate(kv->val, &it)) != NULL) {
    struct fy_node *k = fy_node_pair_key(pair);
    char path[160];
    struct kv kkv = {k, k, kv->path};
    al_autofree char *name = NULL;
    if (get_str(c, &kkv, &name) < 0)
      return -1;
    snprintf(path, sizeof path, "%s.%.40s", kv->path, name);
    for (size_t i = 0; never[i]; i++)
      if (strcmp(name, never[i]) == 0)
        return fail(c, k, path, "`%s` is never granted to a run (escape budget)", name);
    size_t g = 0;
    for (; grantable[g]; g++)
      if (strcmp(name, grantable[g]) == 0)
        break;
    if (!grantable[g])
      return fail(c, k, path,
                  "unknown permission (grantable: contents, pull_requests, issues, metadata, "
                  "checks, statuses)");
    struct kv vkv = {k, fy_node_pair_value(pair), path};
    al_autofree char *level = NULL;
    if (get_str(c, &vkv, &level) < 0)
      return -1;
    if (strcmp(level, "read") != 0 && strcmp(level, "write") != 0)
      return fail(c, pos_of(&vkv), path, "must be `read` or `write`, got `%s`", level);
    r->perms[r->n_perms].name = al_steal_ptr(&name);
    r->perms[r->n_perms].level = al_steal_ptr(&level);
    r->n_perms++;
  }
  (void)perms_field;
  return 0;
}

static int role_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_role *r = obj;
  if (idx == 0) {
    if (get_str(c, kv, &r->repo) < 0)
      return -1;
    if (!valid_repo(r->repo))
      return fail(c, pos_of(kv), kv->path, "`%s` must be OWNER/REPO", r->repo);
    return 0;
  }
  return parse_perms(c, r, kv);
}

static int creds_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_credentials *cr = obj;
  static const char *const keys[] = {"repo", "permissions", NULL};
  switch (idx) {
  case 0:
    if (get_str(c, kv, &cr->broker) < 0)
      return -1;
    return check_abs_path(c, kv, cr->broker);
  case 1:
    cr->git.present = true;
    return walk_map(c, kv->val, kv->key, kv->path, keys, role_field, &cr->git);
  case 2:
    cr->ticket.present = true;
    return walk_map(c, kv->val, kv->key, kv->path, keys, role_field, &cr->ticket);
  case 3:
    return get_duration(c, kv, 60000, 3600000, &cr->ttl_ms);
  case 4: {
    al_autofree char *m = NULL;
    if (get_str(c, kv, &m) < 0)
      return -1;
    if (strcmp(m, "sealed") == 0)
      cr->mode = AL_CRED_SEALED;
    else if (strcmp(m, "env") == 0)
      cr->mode = AL_CRED_ENV;
    else
      return fail(c, pos_of(kv), kv->path,
                  "must be `sealed` (the tokens stay outside the sandbox) or `env` (the agent "
                  "holds them), got `%s`",
                  m);
    return 0;
  }
  case 5: {
    uint64_t v;
    if (get_uint(c, kv, 0, 100, &v) < 0)
      return -1;
    cr->agent_comments = (uint32_t)v;
    return 0;
  }
  default:
    return -1;
  }
}

const char *al_cred_mode_name(al_cred_mode m)
{
  return m == AL_CRED_ENV ? "env" : "sealed";
}

/* https://HOST[:PORT][/PATH] with an LDH host; no userinfo, query or fragment. */
static int check_url(struct ctx *c, const struct kv *kv, const char *u)
{
  if (strncmp(u, "https://", 8) != 0)
    return fail(c, pos_of(kv), kv->path, "`%s` must start with https://", u);
  const char *h = u + 8;
  size_t hl = strcspn(h, ":/");
  al_host host;
  const char *why = NULL;
  if (hl == 0 || al_host_canonicalize(h, hl, &host, &why) < 0)
    return fail(c, pos_of(kv), kv->path, "`%s`: not a valid host%s%s", u, why ? ": " : "",
                why ? why : "");
  char amb[400];
  if (ambiguous_ipv4(h, hl, &host, amb, sizeof amb))
    return fail(c, pos_of(kv), kv->path, "%s", amb);
  const char *rest = h + hl;
  if (*rest == ':') {
    size_t pl = strcspn(rest + 1, "/");
    uint16_t port;
    if (al_port_parse(rest + 1, pl, &port, &why) < 0)
      return fail(c, pos_of(kv), kv->path, "`%s`: bad port: %s", u, why);
    rest += 1 + pl;
  }
  for (const char *q = rest; *q; q++)
    if (*q == '?' || *q == '#' || *q == '@' || (unsigned char)*q <= 0x20 ||
        (unsigned char)*q >= 0x7f)
      return fail(c, pos_of(kv), kv->path, "`%s`: only https://HOST[:PORT][/PATH] is allowed", u);
  return 0;
}

static int forge_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_forge *f = obj;
  char **dst[] = {&f->api_url, &f->git_url, &f->ca_file};
  if (get_str(c, kv, dst[idx]) < 0)
    return -1;
  int col;
  node_pos(pos_of(kv), &f->line[idx], &col);
  if (idx == 2)
    return check_abs_path(c, kv, f->ca_file);
  size_t n = strlen(*dst[idx]);
  while (n > 8 && (*dst[idx])[n - 1] == '/')
    (*dst[idx])[--n] = '\0';
  return check_url(c, kv, *dst[idx]);
}

static int review_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy *p = obj;
  if (idx == 1) {
    if (get_str(c, kv, &p->base_branch) < 0)
      return -1;
    const char *b = p->base_branch;
    if (!b[0] || strlen(b) > 200 || b[0] == '-' || b[0] == '/' || strstr(b, "..") ||
        strstr(b, "//") || strpbrk(b, " ~^:?*[\\"))
      return fail(c, pos_of(kv), kv->path, "`%s` is not a valid branch name (git-check-ref-format)",
                  b);
    return 0;
  }
  if (get_str(c, kv, &p->branch_prefix) < 0)
    return -1;
  const char *s = p->branch_prefix;
  size_t n = strlen(s);
  if (n < 2 || n > 64 || s[n - 1] != '/' || s[0] == '/' || strstr(s, "..") || strstr(s, "//"))
    return fail(c, pos_of(kv), kv->path,
                "`%s` must be a branch prefix ending in `/`, like airlock/", s);
  for (const char *q = s; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '-' || *q == '_' || *q == '.'))
      return fail(c, pos_of(kv), kv->path, "`%s` may only hold letters, digits, / - _ .", s);
  if (strcmp(s, "main/") == 0 || strcmp(s, "master/") == 0)
    return fail(c, pos_of(kv), kv->path, "`%s` is too close to a default branch name", s);
  return 0;
}

/* ---- relay (the model relay, issues #10 and #17) ---- */

static json_t *str_array(char **v, size_t n)
{
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_string(v[i]));
  return a;
}

static int relay_route_parse(struct ctx *c, const struct kv *kv, al_relay_route *r)
{
  al_autofree char *s = NULL;
  if (get_str(c, kv, &s) < 0)
    return -1;
  const char *sp = strchr(s, ' ');
  if (!sp || sp == s || sp[1] != '/')
    return fail(c, pos_of(kv), kv->path, "`%s` must be `METHOD /path`, like `POST /v1/messages`",
                s);
  for (const char *q = s; q < sp; q++)
    if (*q < 'A' || *q > 'Z')
      return fail(c, pos_of(kv), kv->path, "`%s`: the method is upper-case letters only", s);
  const char *path = sp + 1;
  if (strlen(path) > 256 || strstr(path, "..") || strstr(path, "//"))
    return fail(c, pos_of(kv), kv->path, "`%s`: the path must be normalized (no `..`, no `//`)", s);
  for (const char *q = path; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '.' || *q == '_' || *q == '-'))
      return fail(c, pos_of(kv), kv->path,
                  "`%s`: the path may only hold letters, digits and `/._-` (no query)", s);
  r->method = strndup(s, (size_t)(sp - s));
  r->path = al_xstrdup(path);
  if (!r->method)
    return al_make_error(c->err, ENOMEM, "policy");
  return 0;
}

static int relay_budget_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_relay *r = obj;
  return get_uint(c, kv, 0, idx == 0 ? 10000000ull : 1000000000000ull,
                  idx == 0 ? &r->budget_requests : &r->budget_tokens);
}

static int relay_timeouts_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_policy_relay *r = obj;
  uint64_t *dst[] = {&r->connect_timeout_ms, &r->first_byte_timeout_ms, &r->idle_timeout_ms,
                     &r->total_timeout_ms};
  static const uint64_t maxv[] = {300000, 3600000, 3600000, 86400000};
  return get_duration(c, kv, 100, maxv[idx], dst[idx]);
}

static int relay_upstream_url(struct ctx *c, const struct kv *kv, al_relay_upstream *r)
{
  if (get_str(c, kv, &r->upstream) < 0)
    return -1;
  size_t n = strlen(r->upstream);
  while (n > 8 && r->upstream[n - 1] == '/')
    r->upstream[--n] = '\0';
  if (check_url(c, kv, r->upstream) < 0)
    return -1;
  const char *h = r->upstream + 8;
  size_t hl = strcspn(h, ":/");
  al_host host;
  const char *why = NULL;
  if (al_host_canonicalize(h, hl, &host, &why) < 0)
    return fail(c, pos_of(kv), kv->path, "`%s`: not a valid host", r->upstream);
  free(r->host);
  r->host = al_xstrdup(host.name);
  r->port = 443;
  const char *rest = h + hl;
  if (*rest == ':') {
    size_t pl = strcspn(rest + 1, "/");
    if (al_port_parse(rest + 1, pl, &r->port, &why) < 0)
      return fail(c, pos_of(kv), kv->path, "`%s`: bad port", r->upstream);
    rest += 1 + pl;
  }
  for (const char *q = rest; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '.' || *q == '_' || *q == '-'))
      return fail(c, pos_of(kv), kv->path, "`%s`: the path prefix may only hold `[A-Za-z0-9/._-]`",
                  r->upstream);
  if (strstr(rest, ".."))
    return fail(c, pos_of(kv), kv->path, "`%s`: no `..` in the path prefix", r->upstream);
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

/* A list of names matching `ok` (a short description for the message). */
static int relay_names(struct ctx *c, const struct kv *kv, bool (*ok)(const char *),
                       const char *what, char ***out, size_t *n)
{
  size_t count = 0;
  if (walk_seq(c, kv, &count) < 0)
    return -1;
  *out = al_xcalloc(count + 1, sizeof(char *));
  void *it = NULL;
  struct fy_node *item;
  while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
    char path[160];
    snprintf(path, sizeof path, "%s[%zu]", kv->path, *n);
    struct kv ikv = {kv->key, item, path};
    al_autofree char *s = NULL;
    if (get_str(c, &ikv, &s) < 0)
      return -1;
    if (!ok(s))
      return fail(c, pos_of(&ikv), path, "`%s` is not %s", s, what);
    (*out)[(*n)++] = al_steal_ptr(&s);
  }
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

/* The keys of one upstream, in relay_upstream_field's order; the shorthand
 * form takes the same keys at the top of `relay:`. */
static const char *const upstream_keys[] = {
    "upstream", "auth",  "key_file", "ca_file",        "pin",          "routes",  "key",
    "vendor",   "allow", "headers",  "anthropic_beta", "organization", "project", NULL};

static int relay_upstream_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  al_relay_upstream *r = obj;
  switch (idx) {
  case 0:
    return relay_upstream_url(c, kv, r);
  case 1:
    if (get_str(c, kv, &r->auth) < 0)
      return -1;
    if (strcmp(r->auth, "x-api-key") != 0 && strcmp(r->auth, "bearer") != 0)
      return fail(c, pos_of(kv), kv->path, "must be `x-api-key` or `bearer`, got `%s`", r->auth);
    return 0;
  case 2:
    if (get_str(c, kv, &r->key_file) < 0)
      return -1;
    return check_abs_path(c, kv, r->key_file);
  case 3:
    if (get_str(c, kv, &r->ca_file) < 0)
      return -1;
    return check_abs_path(c, kv, r->ca_file);
  case 4: {
    if (get_str(c, kv, &r->pin) < 0)
      return -1;
    unsigned char buf[16];
    if (inet_pton(AF_INET, r->pin, buf) != 1 && inet_pton(AF_INET6, r->pin, buf) != 1)
      return fail(c, pos_of(kv), kv->path, "`%s` must be a numeric IPv4 or IPv6 address", r->pin);
    return 0;
  }
  case 5: {
    size_t count = 0;
    if (walk_seq(c, kv, &count) < 0)
      return -1;
    if (count == 0)
      return fail(c, kv->key, kv->path, "needs at least one route");
    r->routes = al_xcalloc(count, sizeof *r->routes);
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
      char path[128];
      snprintf(path, sizeof path, "%s[%zu]", kv->path, r->n_routes);
      struct kv ikv = {kv->key, item, path};
      al_relay_route rt = {0};
      if (relay_route_parse(c, &ikv, &rt) < 0)
        return -1;
      for (size_t j = 0; j < r->n_routes; j++)
        if (strcmp(r->routes[j].method, rt.method) == 0 &&
            strcmp(r->routes[j].path, rt.path) == 0) {
          free(rt.method);
          free(rt.path);
          return fail(c, pos_of(&ikv), path, "duplicate of route %zu", j);
        }
      r->routes[r->n_routes++] = rt;
    }
    return 0;
  }
  case 6: {
    al_autofree char *k = NULL;
    if (get_str(c, kv, &k) < 0)
      return -1;
    if (strcmp(k, "broker") != 0)
      return fail(c, pos_of(kv), kv->path,
                  "must be `broker` (the run's broker lease carries the key), got `%s`", k);
    r->key_broker = true;
    return 0;
  }
  case 7:
    if (get_str(c, kv, &r->vendor) < 0)
      return -1;
    if (strcmp(r->vendor, "anthropic") != 0 && strcmp(r->vendor, "openai") != 0)
      return fail(c, pos_of(kv), kv->path, "must be `anthropic` or `openai`, got `%s`", r->vendor);
    return 0;
  case 8:
    return relay_names(c, kv, feature_name, "a feature name ([a-z0-9_.-]; see docs/policy.md)",
                       &r->allow, &r->n_allow);
  case 9:
    return relay_names(c, kv, header_name,
                       "a header the relay may forward (lower case; no credential, hop-by-hop "
                       "or organization/project header)",
                       &r->headers, &r->n_headers);
  case 10:
    return relay_names(c, kv, beta_name, "a beta name ([a-z0-9._-])", &r->betas, &r->n_betas);
  case 11:
  case 12: {
    char **dst = idx == 11 ? &r->organization : &r->project;
    if (get_str(c, kv, dst) < 0)
      return -1;
    if (!org_value(*dst))
      return fail(c, pos_of(kv), kv->path, "`%s` must be an id ([A-Za-z0-9_-], 1..128)", *dst);
    return 0;
  }
  default:
    return -1;
  }
}

static al_relay_upstream *relay_add_upstream(al_policy_relay *r)
{
  r->upstreams = al_xrealloc(r->upstreams, (r->n_upstreams + 1) * sizeof *r->upstreams);
  al_relay_upstream *u = &r->upstreams[r->n_upstreams++];
  memset(u, 0, sizeof *u);
  return u;
}

struct relay_tmp {
  al_policy_relay *r;
  struct fy_node *short_key; /* the first shorthand key, for the "both forms" message */
  bool have_list;
};

static int relay_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  struct relay_tmp *t = obj;
  al_policy_relay *r = t->r;
  size_t nup = AL_ARRAY_SIZE(upstream_keys) - 1;
  if (idx < nup) { /* the shorthand: one upstream, its keys at the top */
    if (t->have_list)
      return fail(c, kv->key, kv->path,
                  "`relay.upstreams` is given: put this key inside one of its entries");
    if (!t->short_key)
      t->short_key = kv->key;
    if (r->n_upstreams == 0)
      relay_add_upstream(r);
    return relay_upstream_field(c, &r->upstreams[0], idx, kv);
  }
  switch (idx - nup) {
  case 0: {
    if (t->short_key)
      return fail(c, kv->key, kv->path,
                  "give either `upstreams` or the one-upstream shorthand (`upstream`, `key_file`, "
                  "...), not both");
    t->have_list = true;
    r->listed = true;
    size_t count = 0;
    if (walk_seq(c, kv, &count) < 0)
      return -1;
    if (count == 0 || count > 16)
      return fail(c, kv->key, kv->path, "needs 1 to 16 upstreams");
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(kv->val, &it)) != NULL) {
      char path[128];
      snprintf(path, sizeof path, "%s[%zu]", kv->path, r->n_upstreams);
      al_relay_upstream *u = relay_add_upstream(r);
      if (walk_map(c, item, kv->key, path, upstream_keys, relay_upstream_field, u) < 0)
        return -1;
      if (!u->upstream)
        return fail(c, kv->key, path, "upstream: required (https://HOST[:PORT][/PREFIX])");
    }
    return 0;
  }
  case 1:
    if (get_size(c, kv, 1024, &r->max_request) < 0)
      return -1;
    if (r->max_request > (256ull << 20))
      return fail(c, pos_of(kv), kv->path, "at most 256MiB");
    return 0;
  case 2: {
    static const char *const keys[] = {"requests", "tokens", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, relay_budget_field, r);
  }
  case 3: {
    static const char *const keys[] = {"connect", "first_byte", "idle", "total", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, relay_timeouts_field, r);
  }
  case 4: {
    uint64_t v;
    if (get_uint(c, kv, 1, 1024, &v) < 0)
      return -1;
    r->max_conns = (uint32_t)v;
    return 0;
  }
  default:
    return -1;
  }
}

static int parse_relay(struct ctx *c, const struct kv *kv, al_policy_relay *r)
{
  /* the upstream keys, then the relay's own */
  const char *keys[AL_ARRAY_SIZE(upstream_keys) + 6];
  size_t n = 0;
  for (; upstream_keys[n]; n++)
    keys[n] = upstream_keys[n];
  static const char *const own[] = {"upstreams", "max_request",     "budget",
                                    "timeouts",  "max_connections", NULL};
  for (size_t i = 0; own[i]; i++)
    keys[n++] = own[i];
  keys[n] = NULL;
  r->present = true;
  r->max_request = 8ull << 20;
  r->budget_requests = 1000;
  r->max_conns = 16;
  r->connect_timeout_ms = 10000;
  r->first_byte_timeout_ms = 300000;
  r->idle_timeout_ms = 300000;
  r->total_timeout_ms = 1800000;
  int col;
  node_pos(kv->key, &r->line, &col);
  struct relay_tmp t = {.r = r};
  return walk_map(c, kv->val, kv->key, kv->path, keys, relay_field, &t);
}

/* The vendor of an upstream that does not name one: by its host, else by
 * its auth style, else Anthropic (what `relay:` meant before #17). */
static const char *guess_vendor(const al_relay_upstream *u)
{
  size_t hl = strlen(u->host);
  if (strcmp(u->host, "api.openai.com") == 0 ||
      (hl > 11 && !strcmp(u->host + hl - 11, ".openai.com")))
    return "openai";
  if (strcmp(u->host, "api.anthropic.com") == 0)
    return "anthropic";
  if (u->auth && strcmp(u->auth, "bearer") == 0)
    return "openai";
  return "anthropic";
}

/* After parsing: required keys, vendor defaults (auth, routes), routes
 * unique across upstreams (a path picks its upstream). */
static int relay_finish(al_policy_relay *r, const char *name, al_error *err)
{
  if (r->n_upstreams == 0 || !r->upstreams[0].upstream)
    return al_error_set(err, EINVAL,
                        "%s:%d: relay.upstream: required (https://HOST[:PORT]), or relay.upstreams",
                        name, r->line);
  size_t brokers = 0;
  for (size_t i = 0; i < r->n_upstreams; i++) {
    al_relay_upstream *u = &r->upstreams[i];
    char where[32] = "relay";
    if (r->listed)
      snprintf(where, sizeof where, "relay.upstreams[%zu]", i);
    if (!u->key_file && !u->key_broker)
      return al_error_set(err, EINVAL,
                          "%s:%d: %s.key_file: required (a 0600 file the supervisor reads), or "
                          "`key: broker` (the `model_key` secret of the run's broker lease)",
                          name, r->line, where);
    if (u->key_file && u->key_broker)
      return al_error_set(err, EINVAL,
                          "%s:%d: %s: `key_file` and `key: broker` are exclusive; give one of them",
                          name, r->line, where);
    brokers += u->key_broker;
    if (!u->vendor)
      u->vendor = al_xstrdup(guess_vendor(u));
    bool openai = strcmp(u->vendor, "openai") == 0;
    if (!u->auth)
      u->auth = al_xstrdup(openai ? "bearer" : "x-api-key");
    if (!openai && (u->organization || u->project))
      return al_error_set(err, EINVAL, "%s:%d: %s: organization/project are OpenAI headers", name,
                          r->line, where);
    if (openai && u->n_betas)
      return al_error_set(err, EINVAL, "%s:%d: %s: anthropic_beta needs vendor: anthropic", name,
                          r->line, where);
    if (u->n_routes == 0) {
      static const char *const anth[] = {"/v1/messages", "/v1/messages/count_tokens"};
      static const char *const oai[] = {"/v1/responses", "/v1/chat/completions"};
      const char *const *def = openai ? oai : anth;
      u->routes = al_xcalloc(2, sizeof *u->routes);
      for (size_t k = 0; k < 2; k++) {
        u->routes[k].method = al_xstrdup("POST");
        u->routes[k].path = al_xstrdup(def[k]);
      }
      u->n_routes = 2;
    }
  }
  if (brokers > 1)
    return al_error_set(err, EINVAL,
                        "%s:%d: relay: only one upstream can take its key from the broker "
                        "(`key: broker`, the `model_key` secret); give the others key_file",
                        name, r->line);
  for (size_t i = 0; i < r->n_upstreams; i++)
    for (size_t k = 0; k < r->upstreams[i].n_routes; k++)
      for (size_t j = i + 1; j < r->n_upstreams; j++)
        for (size_t m = 0; m < r->upstreams[j].n_routes; m++)
          if (strcmp(r->upstreams[i].routes[k].path, r->upstreams[j].routes[m].path) == 0)
            return al_error_set(err, EINVAL,
                                "%s:%d: relay.upstreams[%zu] and [%zu] both route `%s`: a path "
                                "picks one upstream",
                                name, r->line, i, j, r->upstreams[i].routes[k].path);
  return 0;
}

static json_t *relay_upstream_json(const al_relay_upstream *u)
{
  json_t *routes = json_array();
  for (size_t i = 0; i < u->n_routes; i++) {
    al_autofree char *s = al_strdup_printf("%s %s", u->routes[i].method, u->routes[i].path);
    json_array_append_new(routes, json_string(s));
  }
  return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s?, s:s*, s:s?, s:s?, s:o, s:o, s:o, s:o, "
                   "s:s?, s:s?}",
                   "vendor", u->vendor, "upstream", u->upstream, "host", u->host, "port",
                   (int)u->port, "prefix", u->prefix ? u->prefix : "", "auth", u->auth, "key_file",
                   u->key_file, "key", u->key_broker ? "broker" : NULL, "ca_file", u->ca_file,
                   "pin", u->pin, "routes", routes, "allow", str_array(u->allow, u->n_allow),
                   "headers", str_array(u->headers, u->n_headers), "anthropic_beta",
                   str_array(u->betas, u->n_betas), "organization", u->organization, "project",
                   u->project);
}

static json_t *relay_json(const al_policy_relay *r)
{
  json_t *ups = json_array();
  for (size_t i = 0; i < r->n_upstreams; i++)
    json_array_append_new(ups, relay_upstream_json(&r->upstreams[i]));
  return json_pack("{s:o, s:I, s:{s:I, s:I}, s:I, s:{s:I, s:I, s:I, s:I}}", "upstreams", ups,
                   "max_request", (json_int_t)r->max_request, "budget", "requests",
                   (json_int_t)r->budget_requests, "tokens", (json_int_t)r->budget_tokens,
                   "max_connections", (json_int_t)r->max_conns, "timeouts_ms", "connect",
                   (json_int_t)r->connect_timeout_ms, "first_byte",
                   (json_int_t)r->first_byte_timeout_ms, "idle", (json_int_t)r->idle_timeout_ms,
                   "total", (json_int_t)r->total_timeout_ms);
}

char *al_policy_relay_canonical(const al_policy *p)
{
  if (!p->relay.present)
    return NULL;
  json_t *j = relay_json(&p->relay);
  char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(j);
  return s;
}

static void free_strv(char **v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void al_policy_relay_clear(al_policy_relay *r)
{
  for (size_t i = 0; i < r->n_upstreams; i++) {
    al_relay_upstream *u = &r->upstreams[i];
    free(u->vendor);
    free(u->upstream);
    free(u->host);
    free(u->prefix);
    free(u->auth);
    free(u->key_file);
    free(u->ca_file);
    free(u->pin);
    for (size_t k = 0; k < u->n_routes; k++) {
      free(u->routes[k].method);
      free(u->routes[k].path);
    }
    free(u->routes);
    free_strv(u->allow, u->n_allow);
    free_strv(u->headers, u->n_headers);
    free_strv(u->betas, u->n_betas);
    free(u->organization);
    free(u->project);
  }
  free(r->upstreams);
  memset(r, 0, sizeof *r);
}

const al_relay_upstream *al_policy_relay_key_broker(const al_policy *p)
{
  for (size_t i = 0; p->relay.present && i < p->relay.n_upstreams; i++)
    if (p->relay.upstreams[i].key_broker)
      return &p->relay.upstreams[i];
  return NULL;
}

/* ---- top level ---- */

struct top_tmp {
  al_policy *p;
  bool have_version;
};

static int top_field(struct ctx *c, void *obj, size_t idx, const struct kv *kv)
{
  struct top_tmp *t = obj;
  al_policy *p = t->p;
  switch (idx) {
  case 0: {
    uint64_t v;
    if (get_uint(c, kv, 1, 1, &v) < 0)
      return fail(c, pos_of(kv), kv->path, "only version 1 is understood by this airlock");
    p->version = 1;
    t->have_version = true;
    return 0;
  }
  case 1: {
    static const char *const keys[] = {"allow",         "pin",      "resolver", "max_connections",
                                       "egress_budget", "timeouts", NULL};
    p->network.present = true;
    if (kv->val && fy_node_is_scalar(kv->val)) {
      size_t l = 0;
      const char *s = fy_node_get_scalar(kv->val, &l);
      if (s && l == 4 && memcmp(s, "none", 4) == 0) {
        p->network.present = false;
        return 0;
      }
      return fail(c, kv->val, kv->path,
                  "must be `none` or a mapping with `allow` (exactly host:port pairs)");
    }
    return walk_map(c, kv->val, kv->key, kv->path, keys, network_field, &p->network);
  }
  case 2: {
    static const char *const keys[] = {"root",     "workspace_size", "tmp_size",
                                       "ro_paths", "image",          NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, fs_field, &p->filesystem);
  }
  case 3: {
    static const char *const keys[] = {"user", "env_pass", "limits", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, process_field, &p->process);
  }
  case 4: {
    static const char *const keys[] = {"broker",         "git", "ticket", "ttl", "mode",
                                       "agent_comments", NULL};
    p->credentials.present = true;
    return walk_map(c, kv->val, kv->key, kv->path, keys, creds_field, &p->credentials);
  }
  case 5: {
    static const char *const keys[] = {"branch_prefix", "base_branch", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, review_field, p);
  }
  case 6: {
    static const char *const keys[] = {"api_url", "git_url", "ca_file", NULL};
    return walk_map(c, kv->val, kv->key, kv->path, keys, forge_field, &p->forge);
  }
  case 7:
    return parse_relay(c, kv, &p->relay);
  default:
    return -1;
  }
}

static void set_defaults(al_policy *p)
{
  p->version = 1;
  p->network.max_conns = 64;
  p->network.head_timeout_ms = 10000;
  p->network.connect_timeout_ms = 10000;
  p->network.idle_timeout_ms = 300000;
  p->network.max_tunnel_ms = 3600000;
  p->filesystem.workspace_size = 2ull << 30;
  p->filesystem.tmp_size = 512ull << 20;
  p->process.user = 1000;
  p->process.limits.memory = 4ull << 30;
  p->process.limits.pids = 512;
  p->process.limits.wall_ms = 60 * 60000;
  p->process.limits.nofile = 4096;
  p->credentials.ttl_ms = 15 * 60000;
  p->credentials.mode = AL_CRED_SEALED; /* issue #15: the tokens stay outside */
  p->branch_prefix = al_xstrdup("airlock/");
  p->forge.api_url = al_xstrdup("https://api.github.com");
  p->forge.git_url = al_xstrdup("https://github.com");
}

static int finish(al_policy *p, const char *name, al_error *err)
{
  p->source = al_xstrdup(name);
  if (p->relay.present && relay_finish(&p->relay, name, err) < 0)
    return -1;
  if (p->credentials.present) {
    if (!p->credentials.broker)
      p->credentials.broker = al_xstrdup("/run/airlock/broker.sock");
    if (p->credentials.mode == AL_CRED_ENV && p->credentials.agent_comments)
      return al_error_set(err, EINVAL,
                          "%s: credentials.agent_comments: only with `mode: sealed` (in env mode "
                          "the agent holds the ticket token and the gateway counts nothing)",
                          name);
  }
  for (size_t i = 0; i < p->network.n_pin; i++) {
    bool used = false;
    for (size_t j = 0; j < p->network.n_allow; j++)
      if (!p->network.allow[j].wildcard &&
          strcmp(p->network.allow[j].host, p->network.pin[i].host) == 0)
        used = true;
    if (!used)
      return al_error_set(err, EINVAL,
                          "%s:%d: network.pin: `%s` is pinned but not in network.allow (a pin "
                          "only says where an allowed name is)",
                          name, p->network.pin[i].line, p->network.pin[i].host);
  }
  return 0;
}

const char *al_policy_sha256(al_policy *p)
{
  if (!p->sha256[0]) {
    al_autofree char *canon = al_policy_canonical(p);
    al_sha256_hex(canon, strlen(canon), p->sha256);
  }
  return p->sha256;
}

/* Only blanks in buf[0..len)? buf need not be NUL-terminated (fuzz_policy). */
static bool all_blank(const char *buf, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r' && buf[i] != '\n')
      return false;
  return true;
}

/* Offset of the first byte of buf[0..len) that is not well-formed UTF-8
 * (RFC 3629 §4: no overlong forms, no surrogates, nothing above U+10FFFF),
 * or len. YAML 1.2 §5.2 streams are Unicode; libfyaml 0.8 loops forever on
 * some invalid bytes after a `%` directive (found by tests/fuzz/fuzz_policy). */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 0;
    if (n == 0 || c == 0xc0 || c == 0xc1 || c > 0xf4 || len - i < n)
      return i;
    for (size_t k = 1; k < n; k++)
      if ((s[i + k] & 0xc0) != 0x80)
        return i;
    if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0) ||
        (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))
      return i;
    i += n;
  }
  return len;
}

/* The 1-based line of byte off of buf. */
static size_t line_of(const char *buf, size_t off)
{
  size_t line = 1;
  for (size_t i = 0; i < off; i++)
    line += buf[i] == '\n';
  return line;
}

int al_policy_load_buffer(const char *name, const char *buf, size_t len, al_policy **out,
                          al_error *err)
{
  struct ctx c = {.name = name, .err = err};
  if (len > POLICY_MAX_BYTES)
    return al_make_error(err, EFBIG, "%s: larger than %d bytes", name, POLICY_MAX_BYTES);
  size_t bad = utf8_invalid_at((const unsigned char *)buf, len);
  if (bad < len) {
    al_make_error(err, 0, "%s:%zu: not valid UTF-8 at byte %zu (YAML 1.2 §5.2)", name,
                  line_of(buf, bad), bad);
    if (err)
      err->code = EINVAL;
    return -1;
  }
  const char *nul = memchr(buf, '\0', len);
  if (nul)
    return al_error_set(err, EINVAL, "%s:%zu: contains a NUL byte", name,
                        line_of(buf, (size_t)(nul - buf)));

  struct fy_diag_cfg dcfg;
  fy_diag_cfg_default(&dcfg);
  dcfg.fp = NULL;
  dcfg.output_fn = NULL;
  dcfg.level = FYET_ERROR;
  struct fy_diag *diag = fy_diag_create(&dcfg);
  if (!diag)
    return al_make_error(err, ENOMEM, "%s: libfyaml diagnostics", name);
  fy_diag_set_collect_errors(diag, true);
  struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_JSON_NONE, .diag = diag};
  /* Parse as a stream: a second document would be silently ignored by a
   * single-document load, and a reader of the file could then believe a
   * different policy than the one enforced. */
  struct fy_parser *fyp = fy_parser_create(&cfg);
  if (!fyp) {
    fy_diag_destroy(diag);
    return al_make_error(err, ENOMEM, "%s: libfyaml parser", name);
  }
  struct fy_document *doc = NULL;
  if (fy_parser_set_string(fyp, buf, len) == 0)
    doc = fy_parse_load_document(fyp);
  if (doc) {
    struct fy_document *extra = fy_parse_load_document(fyp);
    if (extra) {
      fy_parse_document_destroy(fyp, extra);
      fy_parse_document_destroy(fyp, doc);
      fy_parser_destroy(fyp);
      fy_diag_destroy(diag);
      return al_error_set(err, EINVAL,
                          "%s: more than one YAML document (`---`): a policy is exactly one", name);
    }
  }
  if (!doc) {
    void *it = NULL;
    struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
    int line = de ? de->line + 1 : 0, col = de ? de->column + 1 : 0;
    if (de && de->fyt) {
      const struct fy_mark *mk = fy_token_start_mark(de->fyt);
      if (mk) {
        line = mk->line + 1;
        col = mk->column + 1;
      }
    }
    if (de)
      al_make_error(err, 0, "%s:%d:%d: not valid YAML: %s", name, line, col,
                    de->msg ? de->msg : "parse error");
    else if (all_blank(buf, len))
      al_make_error(err, 0, "%s:1:1: empty policy (at least `version: 1`)", name);
    else
      al_make_error(err, 0, "%s:1:1: not valid YAML", name);
    if (err)
      err->code = EINVAL;
    fy_parser_destroy(fyp);
    fy_diag_destroy(diag);
    return -1;
  }
  c.doc = doc;

  al_policy *p = al_xcalloc(1, sizeof *p);
  set_defaults(p);
  c.pol = p;
  int r = 0;
  struct fy_node *root = fy_document_root(doc);
  if (!root) {
    r = al_error_set(err, EINVAL, "%s:1:1: empty policy (at least `version: 1`)", name);
    goto out;
  }
  static const char *const keys[] = {"version", "network", "filesystem", "process", "credentials",
                                     "review",  "forge",   "relay",      NULL};
  struct top_tmp t = {.p = p};
  r = walk_map(&c, root, NULL, "", keys, top_field, &t);
  if (r == 0 && !t.have_version)
    r = al_error_set(err, EINVAL, "%s:1:1: version: required (write `version: 1`)", name);
  if (r == 0)
    r = finish(p, name, err);
out:
  fy_parse_document_destroy(fyp, doc);
  fy_parser_destroy(fyp);
  fy_diag_destroy(diag);
  if (r < 0) {
    al_policy_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

int al_policy_load_file(const char *path, al_policy **out, al_error *err)
{
  al_autofree char *buf = NULL;
  size_t len = 0;
  if (al_read_file(path, POLICY_MAX_BYTES, &buf, &len, err) < 0)
    return -1;
  return al_policy_load_buffer(path, buf, len, out, err);
}

int al_policy_load_or_default(const char *path, al_policy **out, al_error *err)
{
  return path ? al_policy_load_file(path, out, err) : al_policy_default(out, err);
}

int al_policy_default(al_policy **out, al_error *err)
{
  static const char def[] = "version: 1\n";
  return al_policy_load_buffer("<default>", def, sizeof def - 1, out, err);
}

static json_t *role_json(const al_policy_role *r)
{
  if (!r->present)
    return json_null();
  json_t *perms = json_object();
  for (size_t i = 0; i < r->n_perms; i++)
    json_object_set_new(perms, r->perms[i].name, json_string(r->perms[i].level));
  return json_pack("{s:s?, s:o}", "repo", r->repo, "permissions", perms);
}

static int cmp_json_compact(const void *a, const void *b)
{
  char *x = json_dumps(*(json_t *const *)a, JSON_SORT_KEYS | JSON_COMPACT);
  char *y = json_dumps(*(json_t *const *)b, JSON_SORT_KEYS | JSON_COMPACT);
  int r = strcmp(x ? x : "", y ? y : "");
  free(x);
  free(y);
  return r;
}

/* Sort a JSON array of objects by their compact, key-sorted text. */
static void sort_entries(json_t *arr)
{
  size_t n = json_array_size(arr);
  if (n < 2)
    return;
  json_t **v = al_xcalloc(n, sizeof(json_t *));
  for (size_t i = 0; i < n; i++)
    v[i] = json_incref(json_array_get(arr, i));
  qsort(v, n, sizeof(json_t *), cmp_json_compact);
  json_array_clear(arr);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(arr, v[i]);
  free(v);
}

char *al_policy_canonical(const al_policy *p)
{
  json_t *root = json_object();
  json_object_set_new(root, "version", json_integer(p->version));
  if (p->network.present) {
    const al_policy_network *n = &p->network;
    json_t *allow = json_array();
    for (size_t i = 0; i < n->n_allow; i++) {
      const al_net_allow *a = &n->allow[i];
      al_autofree char *h = al_strdup_printf("%s%s", a->wildcard ? "*." : "", a->host);
      json_array_append_new(
          allow, json_pack("{s:s, s:i, s:b}", "host", h, "port", (int)a->port, "tls", a->tls));
    }
    json_t *pins = json_array();
    for (size_t i = 0; i < n->n_pin; i++)
      json_array_append_new(
          pins, json_pack("{s:s, s:s}", "host", n->pin[i].host, "address", n->pin[i].address));
    /* The allowlist and the pins are sets: their order in the file does not
     * change what is enforced, so it does not change the hash either. */
    sort_entries(allow);
    sort_entries(pins);
    json_object_set_new(
        root, "network",
        json_pack("{s:o, s:o, s:s?, s:I, s:I, s:{s:I, s:I, s:I, s:I}}", "allow", allow, "pin", pins,
                  "resolver", n->resolver, "max_connections", (json_int_t)n->max_conns,
                  "egress_budget", (json_int_t)n->egress_budget, "timeouts_ms", "head",
                  (json_int_t)n->head_timeout_ms, "connect", (json_int_t)n->connect_timeout_ms,
                  "idle", (json_int_t)n->idle_timeout_ms, "tunnel", (json_int_t)n->max_tunnel_ms));
  } else {
    json_object_set_new(root, "network", json_string("none"));
  }
  const al_policy_filesystem *f = &p->filesystem;
  json_object_set_new(root, "filesystem",
                      json_pack("{s:s, s:I, s:I, s:o, s:s?}", "root", f->root ? f->root : "host",
                                "workspace_size", (json_int_t)f->workspace_size, "tmp_size",
                                (json_int_t)f->tmp_size, "ro_paths",
                                str_array(f->ro_paths, f->n_ro_paths), "image", f->image));
  const al_policy_limits *l = &p->process.limits;
  json_object_set_new(
      root, "process",
      json_pack("{s:i, s:o, s:{s:I, s:i, s:i, s:I, s:i}}", "user", (int)p->process.user, "env_pass",
                str_array(p->process.env_pass, p->process.n_env_pass), "limits", "memory",
                (json_int_t)l->memory, "pids", (int)l->pids, "cpu_milli", (int)l->cpu_milli,
                "wall_ms", (json_int_t)l->wall_ms, "nofile", (int)l->nofile));
  if (p->credentials.present)
    json_object_set_new(root, "credentials",
                        json_pack("{s:s?, s:o, s:o, s:I, s:s, s:i}", "broker",
                                  p->credentials.broker, "git", role_json(&p->credentials.git),
                                  "ticket", role_json(&p->credentials.ticket), "ttl_ms",
                                  (json_int_t)p->credentials.ttl_ms, "mode",
                                  al_cred_mode_name(p->credentials.mode), "agent_comments",
                                  (int)p->credentials.agent_comments));
  json_object_set_new(
      root, "review",
      json_pack("{s:s, s:s?}", "branch_prefix", p->branch_prefix, "base_branch", p->base_branch));
  json_object_set_new(root, "forge",
                      json_pack("{s:s, s:s, s:s?}", "api_url", p->forge.api_url, "git_url",
                                p->forge.git_url, "ca_file", p->forge.ca_file));
  if (p->relay.present)
    json_object_set_new(root, "relay", relay_json(&p->relay));
  char *s = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(root);
  if (!s)
    s = al_xstrdup("{}");
  return s;
}

static void free_role(al_policy_role *r)
{
  free(r->repo);
  for (size_t i = 0; i < r->n_perms; i++) {
    free(r->perms[i].name);
    free(r->perms[i].level);
  }
  free(r->perms);
}

void al_policy_free(al_policy *p)
{
  if (!p)
    return;
  for (size_t i = 0; i < p->n_warnings; i++)
    free(p->warnings[i]);
  free(p->warnings);
  for (size_t i = 0; i < p->network.n_allow; i++)
    free(p->network.allow[i].host);
  free(p->network.allow);
  for (size_t i = 0; i < p->network.n_pin; i++) {
    free(p->network.pin[i].host);
    free(p->network.pin[i].address);
  }
  free(p->network.pin);
  free(p->network.resolver);
  free(p->filesystem.root);
  for (size_t i = 0; i < p->filesystem.n_ro_paths; i++)
    free(p->filesystem.ro_paths[i]);
  free(p->filesystem.ro_paths);
  free(p->filesystem.image);
  for (size_t i = 0; i < p->process.n_env_pass; i++)
    free(p->process.env_pass[i]);
  free(p->process.env_pass);
  free(p->credentials.broker);
  free_role(&p->credentials.git);
  free_role(&p->credentials.ticket);
  free(p->branch_prefix);
  free(p->base_branch);
  free(p->forge.api_url);
  free(p->forge.git_url);
  free(p->forge.ca_file);
  al_policy_relay_clear(&p->relay);
  free(p->source);
  free(p);
}
