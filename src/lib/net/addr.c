/* Address classification. Tables follow the IANA IPv4 and IPv6
 * Special-Purpose Address Registries (RFC 6890 and updates) as of 2024;
 * entries the registry marks "globally reachable" but which are still no
 * business of an agent (6to4 relay anycast, AS112) are refused too. */
#include "net/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <ifaddrs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct range4 {
  uint32_t net;
  int len;
  const char *what;
};

static const struct range4 v4_special[] = {
    {0x00000000, 8, "this-network"},   /* 0.0.0.0/8 */
    {0x0a000000, 8, "private"},        /* 10/8 */
    {0x64400000, 10, "cgnat"},         /* 100.64/10 (holds 100.100.100.200) */
    {0x7f000000, 8, "loopback"},       /* 127/8 */
    {0xa9fe0000, 16, "link-local"},    /* 169.254/16 (holds 169.254.169.254) */
    {0xac100000, 12, "private"},       /* 172.16/12 */
    {0xc0000000, 24, "ietf-protocol"}, /* 192.0.0/24 */
    {0xc0000200, 24, "documentation"}, /* 192.0.2/24 */
    {0xc01fc400, 24, "as112"},         /* 192.31.196/24 */
    {0xc034c100, 24, "amt"},           /* 192.52.193/24 */
    {0xc0586300, 24, "6to4-relay"},    /* 192.88.99/24 */
    {0xc0a80000, 16, "private"},       /* 192.168/16 */
    {0xc0af3000, 24, "as112"},         /* 192.175.48/24 */
    {0xc6120000, 15, "benchmarking"},  /* 198.18/15 */
    {0xc6336400, 24, "documentation"}, /* 198.51.100/24 */
    {0xcb007100, 24, "documentation"}, /* 203.0.113/24 */
    {0xe0000000, 4, "multicast"},      /* 224/4 */
    {0xf0000000, 4, "reserved"},       /* 240/4 and 255.255.255.255 */
    {0xa83f8110, 32, "metadata"},      /* 168.63.129.16 Azure wireserver */
};

struct range6 {
  uint8_t net[16];
  int len;
  const char *what;
};

static const struct range6 v6_special[] = {
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "ietf-protocol"}, /* 64:ff9b:1::/48 */
    {{0x01, 0x00}, 64, "discard"},                               /* 100::/64 */
    {{0x20, 0x01, 0x00, 0x00}, 23, "ietf-protocol"},             /* 2001::/23 (Teredo, ...) */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation"},             /* 2001:db8::/32 */
    {{0x3f, 0xff}, 20, "documentation"},                         /* 3fff::/20 */
    {{0x5f, 0x00}, 16, "srv6-sid"},                              /* 5f00::/16 */
    {{0xfc}, 7, "unique-local"},                                 /* fc00::/7 (fd00:ec2::254) */
    {{0xfe, 0x80}, 10, "link-local"},                            /* fe80::/10 */
    {{0xfe, 0xc0}, 10, "site-local"},                            /* fec0::/10 */
    {{0xff}, 8, "multicast"},                                    /* ff00::/8 */
};

static bool prefix6(const uint8_t *a, const uint8_t *net, int len)
{
  int full = len / 8, rest = len % 8;
  if (memcmp(a, net, (size_t)full) != 0)
    return false;
  if (rest == 0)
    return true;
  uint8_t mask = (uint8_t)(0xff << (8 - rest));
  return (a[full] & mask) == (net[full] & mask);
}

const char *al_addr_classify4(const struct in_addr *a, const al_addr_set *local)
{
  uint32_t h = ntohl(a->s_addr);

  for (size_t i = 0; i < sizeof v4_special / sizeof v4_special[0]; i++) {
    uint32_t mask = v4_special[i].len == 0 ? 0 : 0xffffffffu << (32 - v4_special[i].len);
    if ((h & mask) == v4_special[i].net)
      return v4_special[i].what;
  }
  if (local)
    for (size_t i = 0; i < local->n_v4; i++)
      if (local->v4[i].s_addr == a->s_addr)
        return "local-interface";
  return NULL;
}

const char *al_addr_classify6(const struct in6_addr *a, const al_addr_set *local)
{
  const uint8_t *b = a->s6_addr;
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
  struct in_addr v4;

  /* IPv4 inside IPv6: judge the IPv4 address. */
  if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0) {
    memcpy(&v4.s_addr, b + 12, 4);
    const char *w = al_addr_classify4(&v4, local);
    return w ? w : NULL;
  }
  if (b[0] == 0x20 && b[1] == 0x02) { /* 2002::/16 6to4: V4ADDR in bits 16..47 */
    memcpy(&v4.s_addr, b + 2, 4);
    const char *w = al_addr_classify4(&v4, local);
    if (w)
      return w;
  }
  for (size_t i = 0; i < sizeof v6_special / sizeof v6_special[0]; i++)
    if (prefix6(b, v6_special[i].net, v6_special[i].len))
      return v6_special[i].what;
  /* Everything outside 2000::/3 (global unicast) is reserved or special:
   * ::, ::1, ::/96 IPv4-compatible, and the unassigned space. */
  if ((b[0] & 0xe0) != 0x20)
    return b[0] == 0 && memcmp(b, (const uint8_t[16]){[15] = 1}, 16) == 0 ? "loopback" : "reserved";
  if (local)
    for (size_t i = 0; i < local->n_v6; i++)
      if (memcmp(&local->v6[i], a, sizeof *a) == 0)
        return "local-interface";
  return NULL;
}

const char *al_addr_classify(const struct sockaddr *sa, const al_addr_set *local)
{
  if (sa->sa_family == AF_INET)
    return al_addr_classify4(&((const struct sockaddr_in *)(const void *)sa)->sin_addr, local);
  if (sa->sa_family == AF_INET6)
    return al_addr_classify6(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, local);
  return "unsupported-family";
}

int al_addr_set_local(al_addr_set *set)
{
  struct ifaddrs *ifa, *i;

  memset(set, 0, sizeof *set);
  if (getifaddrs(&ifa) < 0)
    return -errno;
  for (i = ifa; i; i = i->ifa_next) {
    if (!i->ifa_addr)
      continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      void *n = realloc(set->v4, (set->n_v4 + 1) * sizeof *set->v4);
      if (!n)
        goto oom;
      set->v4 = n;
      set->v4[set->n_v4++] = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      void *n = realloc(set->v6, (set->n_v6 + 1) * sizeof *set->v6);
      if (!n)
        goto oom;
      set->v6 = n;
      set->v6[set->n_v6++] = ((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
    }
  }
  freeifaddrs(ifa);
  return 0;
oom:
  freeifaddrs(ifa);
  al_addr_set_free(set);
  return -ENOMEM;
}

void al_addr_set_free(al_addr_set *set)
{
  free(set->v4);
  free(set->v6);
  memset(set, 0, sizeof *set);
}

int al_addr_special_cidr(int family, size_t i, char *out, size_t outsz)
{
  char a[INET6_ADDRSTRLEN];
  if (family == AF_INET) {
    if (i >= sizeof v4_special / sizeof v4_special[0])
      return -1;
    struct in_addr v = {.s_addr = htonl(v4_special[i].net)};
    inet_ntop(AF_INET, &v, a, sizeof a);
    snprintf(out, outsz, "%s/%d", a, v4_special[i].len);
    return 0;
  }
  /* IPv6: the ranges inside global unicast (2000::/3; everything outside it
   * is refused anyway, NAT64 and IPv4-mapped included), and 6to4 whole. */
  size_t n = 0;
  for (size_t k = 0; k < sizeof v6_special / sizeof v6_special[0]; k++) {
    if ((v6_special[k].net[0] & 0xe0) != 0x20)
      continue;
    if (n++ == i) {
      struct in6_addr v = {0};
      memcpy(v.s6_addr, v6_special[k].net, 16);
      inet_ntop(AF_INET6, &v, a, sizeof a);
      snprintf(out, outsz, "%s/%d", a, v6_special[k].len);
      return 0;
    }
  }
  if (n == i) {
    snprintf(out, outsz, "2002::/16");
    return 0;
  }
  return -1;
}
