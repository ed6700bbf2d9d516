#include "common/base64.h"

#include <stdint.h>

#include "common/util.h"

int al_base64_value(unsigned char c, bool url_too)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || (url_too && c == '-'))
    return 62;
  if (c == '/' || (url_too && c == '_'))
    return 63;
  return -1;
}

char *al_base64_decode_lines(const char *in, size_t n, size_t *outlen)
{
  char *out = al_xmalloc(n / 4 * 3 + 4);
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n && in[i] != '='; i++) {
    int v = al_base64_value((unsigned char)in[i], false);
    if (v < 0)
      continue; /* line breaks and spaces */
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (char)(acc >> bits);
    }
  }
  out[o] = '\0';
  *outlen = o;
  return out;
}
