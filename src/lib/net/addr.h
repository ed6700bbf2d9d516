/* Classification of resolved addresses for the egress proxy (issue #3
 * item 6): everything the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries mark as not globally reachable, multicast, cloud metadata
 * addresses, IPv4 embedded in ::ffff:0:0/96, 64:ff9b::/96 and 2002::/16,
 * and the host's own interface addresses. */
#ifndef AL_PROXY_ADDR_H
#define AL_PROXY_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct al_addr_set {
  struct in_addr *v4;
  size_t n_v4;
  struct in6_addr *v6;
  size_t n_v6;
} al_addr_set;

/* Classify one IPv4 / IPv6 address (network byte order). Returns NULL when
 * it is globally reachable and not in `local` (may be NULL), else a static
 * range name ("loopback", "private", "link-local", "cgnat", "metadata",
 * "multicast", "reserved", "documentation", "local-interface", ...). */
const char *al_addr_classify4(const struct in_addr *a, const al_addr_set *local);
const char *al_addr_classify6(const struct in6_addr *a, const al_addr_set *local);
/* Either family from a sockaddr; NULL for global, else the range name
 * ("unsupported-family" for anything but AF_INET/AF_INET6). */
const char *al_addr_classify(const struct sockaddr *sa, const al_addr_set *local);

/* Fill *set with the host's interface addresses (getifaddrs(3)). Returns 0
 * or -errno. Release with al_addr_set_free(). */
int al_addr_set_local(al_addr_set *set);
void al_addr_set_free(al_addr_set *set);

/* The i-th CIDR the guard refuses, as text into out, for manifests that
 * must say the same thing (render kubernetes' NetworkPolicy `except`):
 * AF_INET: every special IPv4 range; AF_INET6: the special ranges inside
 * 2000::/3 (the only IPv6 the guard lets through at all) and 2002::/16
 * whole (6to4 embeds any IPv4). Returns 0, or -1 past the last one. */
int al_addr_special_cidr(int family, size_t i, char *out, size_t outsz);

#endif
