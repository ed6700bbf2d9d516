#include "common/term.h"

#include <stdbool.h>
#include <string.h>

#include "common/util.h"

static size_t put_hex(char *out, unsigned char c)
{
  static const char hex[] = "0123456789abcdef";
  out[0] = '\\';
  out[1] = 'x';
  out[2] = hex[c >> 4];
  out[3] = hex[c & 15];
  return 4;
}

size_t al_term_sanitize_into(const char *in, size_t n, char *out)
{
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)in;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = p[i];
    bool esc = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    /* C1 controls: raw 0x80..0x9f not continuing a UTF-8 sequence, and
     * the two-byte UTF-8 forms C2 80..C2 9F */
    if (c >= 0x80 && c <= 0x9f && (i == 0 || p[i - 1] < 0xc2))
      esc = true;
    if (c == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
      o += put_hex(out + o, c);
      o += put_hex(out + o, p[i + 1]);
      i++;
      continue;
    }
    if (esc)
      o += put_hex(out + o, c);
    else
      out[o++] = (char)c;
  }
  out[o] = '\0';
  return o;
}

char *al_term_sanitize(const char *in, size_t n)
{
  char *out = al_xmalloc(4 * n + 1);
  al_term_sanitize_into(in, n, out);
  return out;
}
