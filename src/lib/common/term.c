/* The one escaper of text from outside (term.h), and the agent's gutter. */
#include "common/term.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* Unicode characters shown escaped although they are well-formed: format
 * characters (general category Cf), the line and paragraph separators (Zl,
 * Zp) and the bidi controls. They draw nothing, or reorder or break what
 * is drawn, so a line holding one does not read as what it is. Unicode 15,
 * DerivedGeneralCategory.txt. Sorted, inclusive ranges. */
static const struct {
  uint32_t lo, hi;
} invisible[] = {
    {0x00ad, 0x00ad}, /* soft hyphen */
    {0x0600, 0x0605}, /* Arabic number signs */
    {0x061c, 0x061c}, /* ARABIC LETTER MARK (bidi) */
    {0x06dd, 0x06dd},   {0x070f, 0x070f},   {0x0890, 0x0891},
    {0x08e2, 0x08e2},   {0x180e, 0x180e}, /* Mongolian vowel separator */
    {0x200b, 0x200f},                     /* zero-width space, ZWNJ, ZWJ, LRM, RLM */
    {0x2028, 0x202e},                     /* line/paragraph separators; LRE RLE PDF LRO RLO */
    {0x2060, 0x206f}, /* word joiner, invisible operators; LRI RLI FSI PDI; deprecated */
    {0xfeff, 0xfeff}, /* BOM / zero-width no-break space */
    {0xfff9, 0xfffb}, /* interlinear annotation */
    {0x110bd, 0x110bd}, {0x110cd, 0x110cd}, {0x13430, 0x1343f},
    {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe007f}, /* tags */
};

static bool is_invisible(uint32_t cp)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(invisible); i++)
    if (cp >= invisible[i].lo && cp <= invisible[i].hi)
      return true;
  return false;
}

/* One UTF-8 sequence at p[0..n) (RFC 3629 §4). Returns its length and the
 * code point; 0 when the first byte does not start a well-formed sequence;
 * -1 when p[0..n) is a well-formed but incomplete start of one. */
static int utf8_next(const unsigned char *p, size_t n, uint32_t *cp)
{
  unsigned c = p[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len;
  uint32_t v;
  unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    v = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    v = c & 0x0f;
    if (c == 0xe0)
      lo = 0xa0; /* no overlong forms */
    if (c == 0xed)
      hi = 0x9f; /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    v = c & 0x07;
    if (c == 0xf0)
      lo = 0x90;
    if (c == 0xf4)
      hi = 0x8f; /* nothing above U+10FFFF */
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; k++) {
    if (k >= n)
      return -1;
    unsigned b = p[k];
    if (k == 1 ? (b < lo || b > hi) : (b & 0xc0) != 0x80)
      return 0;
    v = (v << 6) | (b & 0x3f);
  }
  *cp = v;
  return (int)len;
}

/* `\` lead (x, u or U) and `digits` hex digits of v; not NUL-terminated
 * (the caller terminates the whole output). */
static size_t put_hex(char *out, char lead, uint32_t v, int digits)
{
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  out[o++] = '\\';
  out[o++] = lead;
  for (int d = digits - 1; d >= 0; d--)
    out[o++] = hex[(v >> (4 * d)) & 15];
  return o;
}

size_t al_term_escape_into(const char *in, size_t n, unsigned flags, char *out, size_t *consumed)
{
  const unsigned char *p = (const unsigned char *)in;
  size_t o = 0, i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      bool keep = (c >= 0x20 && c != 0x7f) || (c == '\n' && (flags & AL_TERM_KEEP_NL)) ||
                  (c == '\t' && (flags & AL_TERM_KEEP_TAB));
      if (keep)
        out[o++] = (char)c;
      else
        o += put_hex(out + o, 'x', c, 2);
      i++;
      continue;
    }
    uint32_t cp = 0;
    int len = utf8_next(p + i, n - i, &cp);
    if (len < 0 && (flags & AL_TERM_PARTIAL))
      break; /* the rest of this sequence comes with the next bytes */
    if (len <= 0) {
      o += put_hex(out + o, 'x', c, 2);
      i++;
      continue;
    }
    if (cp <= 0x9f) { /* C1, UTF-8 encoded: escape its bytes as they came */
      for (int k = 0; k < len; k++)
        o += put_hex(out + o, 'x', p[i + (size_t)k], 2);
    } else if (is_invisible(cp)) {
      o += cp > 0xffff ? put_hex(out + o, 'U', cp, 8) : put_hex(out + o, 'u', cp, 4);
    } else {
      memcpy(out + o, p + i, (size_t)len);
      o += (size_t)len;
    }
    i += (size_t)len;
  }
  out[o] = '\0';
  if (consumed)
    *consumed = i;
  return o;
}

size_t al_term_sanitize_into(const char *in, size_t n, char *out)
{
  return al_term_escape_into(in, n, AL_TERM_KEEP_NL | AL_TERM_KEEP_TAB, out, NULL);
}

char *al_term_sanitize(const char *in, size_t n)
{
  char *out = al_xmalloc(4 * n + 1);
  al_term_sanitize_into(in, n, out);
  return out;
}

char *al_term_escape_line(const char *s)
{
  size_t n = strlen(s);
  char *out = al_xmalloc(4 * n + 1);
  al_term_escape_into(s, n, 0, out, NULL);
  return out;
}

void al_term_gutter_init(al_term_gutter *g, int fd, const char *prefix)
{
  memset(g, 0, sizeof *g);
  g->fd = fd;
  g->prefix = prefix;
}

/* Escape and write one piece of a line (no '\n' in it). */
static void gutter_piece(al_term_gutter *g, const unsigned char *p, size_t n, bool final)
{
  char out[4 * (256 + 4) + 1];
  while (n > 0 || (final && g->nheld)) {
    unsigned char in[256 + 4];
    size_t k = 0;
    memcpy(in, g->held, g->nheld);
    k = g->nheld;
    size_t take = n < 256 ? n : 256;
    memcpy(in + k, p, take);
    k += take;
    p += take;
    n -= take;
    g->nheld = 0;
    if (!g->mid_line && k > 0) {
      (void)!write(g->fd, g->prefix, strlen(g->prefix));
      g->mid_line = true;
      g->lines++;
    }
    size_t used = 0;
    /* hold a split sequence back unless this is the line's last piece */
    size_t len = al_term_escape_into((const char *)in, k, (final && n == 0) ? 0 : AL_TERM_PARTIAL,
                                     out, &used);
    (void)!write(g->fd, out, len);
    if (used < k) { /* at most 3 bytes: the start of a split sequence */
      memcpy(g->held, in + used, k - used);
      g->nheld = k - used;
    }
  }
}

void al_term_gutter_write(al_term_gutter *g, const char *buf, size_t n)
{
  const unsigned char *p = (const unsigned char *)buf;
  while (n > 0) {
    const unsigned char *nl = memchr(p, '\n', n);
    size_t seg = nl ? (size_t)(nl - p) : n;
    if (nl && !g->mid_line && seg == 0 && g->nheld == 0) {
      (void)!write(g->fd, g->prefix, strlen(g->prefix)); /* an empty line is the agent's too */
      g->lines++;
      g->mid_line = true;
    }
    gutter_piece(g, p, seg, nl != NULL);
    if (!nl)
      return;
    (void)!write(g->fd, "\n", 1);
    g->mid_line = false;
    p += seg + 1;
    n -= seg + 1;
  }
}

void al_term_gutter_end(al_term_gutter *g)
{
  if (g->nheld)
    gutter_piece(g, (const unsigned char *)"", 0, true);
  if (g->mid_line)
    (void)!write(g->fd, "\n", 1);
  g->mid_line = false;
}
