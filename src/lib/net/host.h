/* Host and port canonicalization for the egress proxy and the policy.
 * In net/, below the proxy and the policy: the policy loader uses it to validate
 * allowlist entries so both sides agree on what a name means.
 *
 * Rules (issue #3, item 4): lower-case; exactly one trailing dot removed;
 * LDH labels of 1..63 bytes, name <= 253 bytes; '@', '%', spaces, non-ASCII
 * and empty labels rejected. Every spelling inet_aton(3) accepts (decimal,
 * octal, hex, short forms like 127.1 or 2130706433) and every IPv6 literal
 * (bracketed in authority-form) is an IP literal; its canonical form is the
 * inet_ntop(3) text. Ports: decimal 1..65535, no sign, no leading zero. */
#ifndef AL_PROXY_HOST_H
#define AL_PROXY_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_HOST_MAX 254 /* 253 + NUL */

typedef struct al_host {
  char name[AL_HOST_MAX]; /* canonical name, or canonical IP text (IPv6 without brackets) */
  bool is_ip;
  int family; /* AF_INET / AF_INET6 for IP literals, 0 for names */
} al_host;

/* Canonicalize a host name or IP literal (no port, IPv6 without brackets).
 * Returns 0, or -1 with a static reason string in *why. */
int al_host_canonicalize(const char *in, size_t len, al_host *out, const char **why);

/* Parse a port: decimal 1..65535, no sign, no leading zero. Returns 0 or -1
 * with *why set. */
int al_port_parse(const char *in, size_t len, uint16_t *out, const char **why);

/* Parse an authority-form target "host:port" / "[v6]:port" (RFC 9110
 * §9.3.6, RFC 9112 §3.2.3). Returns 0 or -1 with *why set. */
int al_authority_parse(const char *in, size_t len, al_host *host, uint16_t *port, const char **why);

/* Check the suffix of a "*.suffix" allowlist entry (already canonicalized):
 * never an IP literal, at least two labels (so "*" and "*.com" are
 * refused). Returns 0 or -1 with *why set. */
int al_host_wildcard_suffix_check(const al_host *suffix, const char **why);

/* Does canonical `host` match canonical `pattern`? Exact when !wildcard;
 * otherwise one or more whole labels before ".pattern" (label boundary). */
bool al_host_matches(const char *host, const char *pattern, bool wildcard);

#endif
