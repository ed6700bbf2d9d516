/* The policy's schema, `network:` (docs/policy.md): the tables of the
 * allow list, the pins, the resolver and the timeouts for the one YAML
 * walker (common/yamlwalk.h), and the rules a table cannot say (hosts,
 * wildcards, IP literals and their ambiguous IPv4 spellings, addresses).
 * Split from schema.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "net/addr.h"
#include "net/host.h"
#include "policy/schema.h"

/* An IPv4 literal written any way but the plain dotted quad: inet_aton(3)
 * reads `010.0.0.1` as octal (8.0.0.1), `0x7f.1` as hex, `127.1` as
 * 127.0.0.1, so a reader and the proxy could disagree on what it means.
 * in[0..len) is the text as written, h its canonical form. Writes the
 * rule into msg and returns true when the spelling is ambiguous. */
bool al_policy_ambiguous_ipv4(const char *in, size_t len, const al_host *h, char *msg, size_t n)
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

/* ---- network ---- */

/* network.allow[i].host: a name, a *.suffix wildcard or a public IP literal. */
static int allow_host(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_net_allow *a = obj;
  al_autofree char *s = NULL;
  if (al_yw_str(c, kv, &s) < 0)
    return -1;
  int col;
  al_yw_pos(al_yw_at(kv), &a->line, &col);
  const char *name = s;
  if (strncmp(s, "*.", 2) == 0) {
    a->wildcard = true;
    name = s + 2;
  } else if (strchr(s, '*')) {
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s`: a wildcard is written `*.suffix` with at least two labels after it",
                      s);
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
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` is not a valid host: %s", s, why);
  if (a->wildcard) {
    if (h.is_ip)
      return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: a wildcard never matches an IP literal",
                        s);
    if (!strchr(h.name, '.'))
      return al_yw_fail(c, al_yw_at(kv), kv->path,
                        "`%s`: a wildcard needs at least two labels after `*.` (no `*.com`)", s);
  }
  free(a->host);
  a->host = al_xstrdup(h.name);
  a->is_ip = h.is_ip;
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
      return al_yw_fail(c, al_yw_at(kv), kv->path,
                        "`%s` is a %s address, which the proxy never dials; to reach a test host, "
                        "allow a name and map it with network.pin",
                        s, range);
    /* after the range check: its advice (a name and a pin) is the one
     * that works for a refused range, however it is spelt */
    char amb[400];
    if (al_policy_ambiguous_ipv4(canon_in, canon_len, &h, amb, sizeof amb))
      return al_yw_fail(c, al_yw_at(kv), kv->path, "%s", amb);
    al_policy_warn(c, al_yw_at(kv), kv->path,
                   "`%s` is a public IP literal: whoever holds that address later gets the agent's "
                   "traffic, and TLS is checked against no name; allow the host's name instead",
                   s);
  }
  return 0;
}

static struct fy_node *host_node(const al_yw_kv *kv)
{
  struct fy_node *n = kv->val ? fy_node_mapping_lookup_by_string(kv->val, "host", 4) : NULL;
  return n ? n : kv->key;
}

/* One allow entry, all keys read: tls defaults to port == 443. */
static int allow_done(al_yw *c, const al_yw_kv *kv, void *obj, const bool *seen)
{
  al_net_allow *a = obj;
  if (!seen[2])
    a->tls = a->port == 443;
  else if (!a->tls && a->port == 443)
    al_policy_warn(
        c, host_node(kv), kv->path,
        "`tls: false` on port 443: plain HTTP is relayed and the CONNECT tunnel's SNI is "
        "not checked for this entry; drop `tls: false` unless the service really speaks "
        "plain HTTP on 443");
  return 0;
}

static const al_yw_field allow_fields[] = {
    {.key = "host",
     .type = AL_YW_CUSTOM,
     .flags = AL_YW_REQUIRED,
     .parse = allow_host,
     .doc = "an allow entry needs `host`"},
    {.key = "port",
     .type = AL_YW_UINT,
     .flags = AL_YW_REQUIRED,
     .off = F(al_net_allow, port),
     .width = 2,
     .min = 1,
     .max = 65535,
     .doc = "an allow entry needs `port`: exactly host:port pairs"},
    {.key = "tls", .type = AL_YW_BOOL, .off = F(al_net_allow, tls)},
};
static const al_yw_map allow_map = {allow_fields, AL_ARRAY_SIZE(allow_fields), allow_done};
static const al_yw_field allow_item = {.type = AL_YW_MAP, .map = &allow_map};

/* After each allow entry: no two alike. */
static int allow_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy_network *n = obj;
  const al_net_allow *a = &n->allow[n->n_allow - 1];
  for (size_t j = 0; j + 1 < n->n_allow; j++)
    if (n->allow[j].port == a->port && n->allow[j].wildcard == a->wildcard &&
        strcmp(n->allow[j].host, a->host) == 0)
      return al_yw_fail(c, host_node(kv), kv->path, "duplicate of entry %zu", j);
  return 0;
}

static int pin_host(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_net_pin *p = obj;
  al_autofree char *s = NULL;
  if (al_yw_str(c, kv, &s) < 0)
    return -1;
  al_host h;
  const char *why = NULL;
  if (al_host_canonicalize(s, strlen(s), &h, &why) < 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` is not a valid host: %s", s, why);
  if (h.is_ip)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "a pin maps a name, not an IP literal");
  free(p->host);
  p->host = al_xstrdup(h.name);
  int col;
  al_yw_pos(al_yw_at(kv), &p->line, &col);
  return 0;
}

bool al_policy_numeric_ip(const char *s)
{
  unsigned char buf[16];
  return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int pin_address(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_net_pin *p = obj;
  if (!al_policy_numeric_ip(p->address))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` must be a numeric IPv4 or IPv6 address (dotted quad or RFC 5952)",
                      p->address);
  return 0;
}

static const al_yw_field pin_fields[] = {
    {.key = "host",
     .type = AL_YW_CUSTOM,
     .flags = AL_YW_REQUIRED,
     .parse = pin_host,
     .doc = "a pin needs both `host` and `address`"},
    {.key = "address",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = F(al_net_pin, address),
     .check = pin_address,
     .doc = "a pin needs both `host` and `address`"},
};
static const al_yw_map pin_map = {pin_fields, AL_ARRAY_SIZE(pin_fields), NULL};
static const al_yw_field pin_item = {.type = AL_YW_MAP, .map = &pin_map};

/* network.resolver: ADDR:PORT with a numeric address; IPv6 in brackets. */
static int resolver_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_policy_network *n = obj;
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
  uint16_t port;
  const char *why;
  if (!al_policy_numeric_ip(addr) || al_port_parse(colon + 1, strlen(colon + 1), &port, &why) < 0)
    goto bad_resolver;
  return 0;
bad_resolver:
  return al_yw_fail(c, al_yw_at(kv), kv->path,
                    "`%s` must be a numeric ADDR:PORT (IPv6 as [ADDR]:PORT)", n->resolver);
}

static const al_yw_field net_timeout_fields[] = {
    {.key = "head",
     .type = AL_YW_DURATION,
     .off = F(al_policy_network, head_timeout_ms),
     .min = 100,
     .max = 300000},
    {.key = "connect",
     .type = AL_YW_DURATION,
     .off = F(al_policy_network, connect_timeout_ms),
     .min = 100,
     .max = 300000},
    {.key = "idle",
     .type = AL_YW_DURATION,
     .off = F(al_policy_network, idle_timeout_ms),
     .min = 100,
     .max = 86400000},
    {.key = "tunnel",
     .type = AL_YW_DURATION,
     .off = F(al_policy_network, max_tunnel_ms),
     .min = 100,
     .max = 7 * 86400000ull},
};
static const al_yw_map net_timeout_map = {net_timeout_fields, AL_ARRAY_SIZE(net_timeout_fields),
                                          NULL};

static const al_yw_field network_fields[] = {
    {.key = "allow",
     .type = AL_YW_LIST,
     .off = F(al_policy_network, allow),
     .off_n = F(al_policy_network, n_allow),
     .item = &allow_item,
     .item_size = sizeof(al_net_allow),
     .check = allow_check},
    {.key = "pin",
     .type = AL_YW_LIST,
     .off = F(al_policy_network, pin),
     .off_n = F(al_policy_network, n_pin),
     .item = &pin_item,
     .item_size = sizeof(al_net_pin)},
    {.key = "resolver",
     .type = AL_YW_STR,
     .off = F(al_policy_network, resolver),
     .check = resolver_check},
    {.key = "max_connections",
     .type = AL_YW_UINT,
     .off = F(al_policy_network, max_conns),
     .width = 4,
     .min = 1,
     .max = 100000},
    {.key = "egress_budget",
     .type = AL_YW_SIZE,
     .off = F(al_policy_network, egress_budget),
     .min = 1},
    {.key = "timeouts", .type = AL_YW_MAP, .off = 0, .map = &net_timeout_map},
    {.key = "transparent", .type = AL_YW_BOOL, .off = F(al_policy_network, transparent)},
};
static const al_yw_map network_map = {network_fields, AL_ARRAY_SIZE(network_fields), NULL};

/* network: `none`, or the mapping. */
int al_policy_network_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy *p = obj;
  p->network.present = true;
  if (kv->val && fy_node_is_scalar(kv->val)) {
    if (al_yw_plain(c, kv->val, kv->key, kv->path) < 0)
      return -1;
    size_t l = 0;
    const char *s = fy_node_get_scalar(kv->val, &l);
    if (s && l == 4 && memcmp(s, "none", 4) == 0) {
      p->network.present = false;
      return 0;
    }
    return al_yw_fail(c, kv->val, kv->path,
                      "must be `none` or a mapping with `allow` (exactly host:port pairs)");
  }
  return al_yw_walk(c, kv, &network_map, &p->network);
}
