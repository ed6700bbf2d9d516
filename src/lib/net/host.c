/* Host and port canonicalization (issue #3 item 4). See host.h for the
 * rules. Pure functions over bytes: no allocation, no DNS, no locale. */
#include "net/host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

static bool is_digit(unsigned char c)
{
  return c >= '0' && c <= '9';
}

static bool is_hex(unsigned char c)
{
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_ldh(unsigned char c)
{
  return is_digit(c) || (c >= 'a' && c <= 'z') || c == '-';
}

/* True when a label looks like a number in any inet_aton(3) radix:
 * decimal digits, or 0x followed by hex digits (also a bare "0x"). Such a
 * last label makes the whole name an attempted IPv4 literal (the WHATWG URL
 * "ends in a number" rule), never a DNS name. */
static bool label_is_numeric(const char *s, size_t len)
{
  if (len == 0)
    return false;
  if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (size_t i = 2; i < len; i++)
      if (!is_hex((unsigned char)s[i]))
        return false;
    return true;
  }
  for (size_t i = 0; i < len; i++)
    if (!is_digit((unsigned char)s[i]))
      return false;
  return true;
}

static int canon_ipv6(const char *in, size_t len, al_host *out, const char **why)
{
  char buf[INET6_ADDRSTRLEN + 1];
  struct in6_addr a6;

  if (memchr(in, '%', len)) {
    *why = "ipv6 zone id";
    return -1;
  }
  if (len >= sizeof buf) {
    *why = "ipv6 literal too long";
    return -1;
  }
  memcpy(buf, in, len);
  buf[len] = '\0';
  if (inet_pton(AF_INET6, buf, &a6) != 1) {
    *why = "bad ipv6 literal";
    return -1;
  }
  if (!inet_ntop(AF_INET6, &a6, out->name, sizeof out->name)) {
    *why = "bad ipv6 literal";
    return -1;
  }
  out->is_ip = true;
  out->family = AF_INET6;
  return 0;
}

int al_host_canonicalize(const char *in, size_t len, al_host *out, const char **why)
{
  char buf[AL_HOST_MAX + 1];
  const char *dummy;

  if (!why)
    why = &dummy;
  memset(out, 0, sizeof *out);
  if (!in || len == 0) {
    *why = "empty host";
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c == '@') {
      *why = "userinfo in host";
      return -1;
    }
    if (c >= 0x80) {
      *why = "non-ascii host";
      return -1;
    }
    if (c <= 0x20 || c == 0x7f) {
      *why = "control or space in host";
      return -1;
    }
  }
  if (memchr(in, ':', len))
    return canon_ipv6(in, len, out, why);
  if (memchr(in, '%', len)) {
    *why = "percent-encoding in host";
    return -1;
  }

  /* exactly one trailing dot is the root label; remove it */
  if (in[len - 1] == '.')
    len--;
  if (len == 0) {
    *why = "empty host";
    return -1;
  }
  if (len > 253) {
    *why = "host name too long";
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    buf[i] = (char)((c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c);
  }
  buf[len] = '\0';

  /* Walk the labels. Remember where the last one starts. */
  size_t start = 0, last_start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && buf[i] != '.') {
      unsigned char c = (unsigned char)buf[i];
      if (!is_ldh(c)) {
        *why = "host has a byte outside letters, digits, '-' and '.'";
        return -1;
      }
      continue;
    }
    size_t llen = i - start;
    if (llen == 0) {
      *why = "empty label in host";
      return -1;
    }
    if (llen > 63) {
      *why = "label longer than 63 bytes";
      return -1;
    }
    if (buf[start] == '-' || buf[i - 1] == '-') {
      *why = "label starts or ends with '-'";
      return -1;
    }
    last_start = start;
    start = i + 1;
  }

  /* Anything inet_aton accepts is an IPv4 literal; a name whose last label
   * is numeric but that inet_aton refuses is neither. */
  struct in_addr a4;
  if (inet_aton(buf, &a4) == 1) {
    if (!inet_ntop(AF_INET, &a4, out->name, sizeof out->name)) {
      *why = "bad ipv4 literal";
      return -1;
    }
    out->is_ip = true;
    out->family = AF_INET;
    return 0;
  }
  if (label_is_numeric(buf + last_start, len - last_start)) {
    *why = "malformed ip literal";
    return -1;
  }
  memcpy(out->name, buf, len + 1);
  out->is_ip = false;
  out->family = 0;
  return 0;
}

int al_port_parse(const char *in, size_t len, uint16_t *out, const char **why)
{
  const char *dummy;
  uint32_t v = 0;

  if (!why)
    why = &dummy;
  if (!in || len == 0) {
    *why = "empty port";
    return -1;
  }
  if (len > 5) {
    *why = "port out of range";
    return -1;
  }
  if (in[0] == '0') {
    *why = len == 1 ? "port zero" : "port with leading zero";
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    if (!is_digit((unsigned char)in[i])) {
      *why = "port is not decimal digits";
      return -1;
    }
    v = v * 10 + (uint32_t)(in[i] - '0');
  }
  if (v > 65535) {
    *why = "port out of range";
    return -1;
  }
  *out = (uint16_t)v;
  return 0;
}

int al_authority_parse(const char *in, size_t len, al_host *host, uint16_t *port, const char **why)
{
  const char *dummy;
  const char *colon;
  size_t hlen;

  if (!why)
    why = &dummy;
  memset(host, 0, sizeof *host);
  *port = 0;
  if (!in || len == 0) {
    *why = "empty authority";
    return -1;
  }
  if (memchr(in, '@', len)) {
    *why = "userinfo in authority";
    return -1;
  }
  if (in[0] == '[') {
    const char *rb = memchr(in, ']', len);
    if (!rb) {
      *why = "unterminated ipv6 literal";
      return -1;
    }
    hlen = (size_t)(rb - in) - 1;
    if (hlen == 0 || !memchr(in + 1, ':', hlen)) {
      *why = "bad ipv6 literal";
      return -1;
    }
    colon = rb + 1;
    if (colon >= in + len || *colon != ':') {
      *why = "missing port";
      return -1;
    }
    if (canon_ipv6(in + 1, hlen, host, why) < 0)
      return -1;
  } else {
    colon = memchr(in, ':', len);
    if (!colon) {
      *why = "missing port";
      return -1;
    }
    if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - in))) {
      *why = "more than one ':' in authority";
      return -1;
    }
    hlen = (size_t)(colon - in);
    if (memchr(in, ']', hlen)) {
      *why = "stray ']' in authority";
      return -1;
    }
    if (al_host_canonicalize(in, hlen, host, why) < 0)
      return -1;
  }
  return al_port_parse(colon + 1, len - (size_t)(colon + 1 - in), port, why);
}

int al_host_wildcard_suffix_check(const al_host *suffix, const char **why)
{
  const char *dummy;

  if (!why)
    why = &dummy;
  if (suffix->is_ip) {
    *why = "wildcard over an ip literal";
    return -1;
  }
  if (!strchr(suffix->name, '.')) {
    *why = "wildcard suffix must have at least two labels";
    return -1;
  }
  return 0;
}

bool al_host_matches(const char *host, const char *pattern, bool wildcard)
{
  size_t hl = strlen(host), pl = strlen(pattern);

  if (!wildcard)
    return hl == pl && memcmp(host, pattern, hl) == 0;
  /* "*.suffix" matches one or more whole labels before ".suffix" */
  return hl > pl + 1 && host[hl - pl - 1] == '.' && memcmp(host + hl - pl, pattern, pl) == 0;
}
