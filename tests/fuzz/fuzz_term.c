/* libFuzzer target: the one escaper of untrusted text (common/term.c) and
 * the agent's gutter. Invariants: the output is well-formed UTF-8 with no
 * control, format or bidi character left (only \n and \t when kept);
 * escaping is the same whether the bytes come at once or split anywhere
 * (AL_TERM_PARTIAL); through the gutter every output line starts with the
 * gutter, so no input can make a line that does not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/term.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_clean(const unsigned char *s, size_t n, bool nl_ok)
{
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (c < 0x80) {
      if ((c < 0x20 && !(nl_ok && (c == '\n' || c == '\t'))) || c == 0x7f)
        __builtin_trap();
      i++;
      continue;
    }
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (len == 0 || i + len > n)
      __builtin_trap();
    uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        __builtin_trap();
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (cp <= 0x9f || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff || (len == 3 && cp < 0x800) ||
        (len == 4 && cp < 0x10000))
      __builtin_trap();
    if (cp == 0x061c || cp == 0x00ad || (cp >= 0x200b && cp <= 0x200f) ||
        (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff ||
        (cp >= 0xe0000 && cp <= 0xe007f))
      __builtin_trap();
    i += len;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 1 << 16)
    return 0;
  char *out = malloc(4 * size + 1);
  char *out2 = malloc(4 * size + 1 + 8);
  if (!out || !out2)
    abort();
  size_t used = 0;
  size_t n = al_term_escape_into((const char *)data, size, 0, out, &used);
  if (used != size || strlen(out) != n || n > 4 * size)
    __builtin_trap();
  check_clean((const unsigned char *)out, n, false);
  n = al_term_sanitize_into((const char *)data, size, out);
  check_clean((const unsigned char *)out, n, true);

  /* split at every point derived from the first byte: the same result */
  size_t cut = size ? data[0] % (size + 1) : 0;
  size_t a = al_term_escape_into((const char *)data, cut,
                                 AL_TERM_KEEP_NL | AL_TERM_KEEP_TAB | AL_TERM_PARTIAL, out2, &used);
  if (cut - used > 3)
    __builtin_trap();
  size_t b = al_term_escape_into((const char *)data + used, size - used,
                                 AL_TERM_KEEP_NL | AL_TERM_KEEP_TAB, out2 + a, NULL);
  if (a + b != n || memcmp(out, out2, n) != 0)
    __builtin_trap();

  /* the gutter, written in two pieces split at `cut` */
  int p[2];
  if (size <= 4096 && pipe(p) == 0) {
    al_term_gutter g;
    al_term_gutter_init(&g, p[1], "G| ");
    al_term_gutter_write(&g, (const char *)data, cut);
    al_term_gutter_write(&g, (const char *)data + cut, size - cut);
    al_term_gutter_end(&g);
    close(p[1]);
    static char buf[1 << 16];
    size_t got = 0;
    ssize_t r;
    while ((r = read(p[0], buf + got, sizeof buf - got)) > 0)
      got += (size_t)r;
    close(p[0]);
    if (got && buf[got - 1] != '\n')
      __builtin_trap();
    for (size_t i = 0; i < got;) {
      if (got - i < 3 || memcmp(buf + i, "G| ", 3) != 0)
        __builtin_trap();
      const char *nl = memchr(buf + i, '\n', got - i);
      i = (size_t)(nl - buf) + 1;
    }
    check_clean((const unsigned char *)buf, got, true);
  }
  free(out);
  free(out2);
  return 0;
}
