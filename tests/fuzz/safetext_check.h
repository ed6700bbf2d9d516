/* An independent reader of what GitHub would act on in posted Markdown, for
 * the safe-text tests (tests/unit/test_safetext.c, tests/fuzz/fuzz_safetext.c):
 * written apart from src/lib/common/safetext.c, from the rules it must meet
 * (safetext.h), and broader than GitHub where in doubt. st_live(s) names
 * the first live pattern in s, or NULL:
 *   "html"     a `<`
 *   "mention"  an `@` followed by an ASCII letter or digit
 *   "image"    a `![` that is not `![alt](http(s)://FORGE[:port]/`
 *   "link"     a `:` followed by `/` or `\` (or after http, https, ftp, ftps,
 *              mailto, file, ws, wss) that is not http(s)://FORGE
 *              (then neither `\` nor `@` nor `%` before the path), a `//`
 *              or `\\` after a non-word byte (not after a defanged `[:]`)
 *              before a host byte, a `www.`
 *              after a non-word byte not followed by FORGE
 *   "keyword"  a closing keyword (Markdown's *_~`\ removed first) as a word
 *              with a reference within 300 non-blank ASCII bytes after it
 *   "entity"   an `&` followed by `#` or a letter or digit, but `&lt;` and
 *              `&amp;` (text, never markup)
 *   "quick-action" a `/` followed by an ASCII letter with only blanks and
 *              `>` before it on its line (GitLab runs `/merge` there)
 * FORGE is ST_FORGE. Header-only, static functions: include it once. */
#ifndef AL_TEST_SAFETEXT_CHECK_H
#define AL_TEST_SAFETEXT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ST_FORGE "forge.test"

static bool st_alpha(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool st_alnum(unsigned char c)
{
  return st_alpha(c) || (c >= '0' && c <= '9');
}
static unsigned char st_low(unsigned char c)
{
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}
static bool st_prefix(const char *s, size_t n, const char *p)
{
  size_t l = strlen(p);
  if (n < l)
    return false;
  for (size_t i = 0; i < l; i++)
    if (st_low((unsigned char)s[i]) != (unsigned char)p[i])
      return false;
  return true;
}

/* s[0..n) starts with FORGE, then an optional :port, then one of `end`
 * (NULL: a byte that ends a host, but `\\`), or its end. */
static bool st_forge(const char *s, size_t n, const char *end)
{
  size_t l = strlen(ST_FORGE);
  if (!st_prefix(s, n, ST_FORGE))
    return false;
  size_t i = l;
  if (i < n && s[i] == ':') {
    i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == d)
      return false;
  }
  if (i == n)
    return true;
  unsigned char c = (unsigned char)s[i];
  if (!end) /* a link: what ends a host but `\` */
    return c <= 0x20 || c == 0x7f || strchr("/?#<>\"'`()[]{}|", c) != NULL;
  return strchr(end, c) != NULL;
}

static bool st_hostbyte(unsigned char c)
{
  return c > 0x20 && c != 0x7f && !strchr("/?#\\<>\"'`()[]{}|", c);
}

static const char *st_keyword_live(const char *s, size_t n)
{
  /* the skeleton: Markdown's emphasis, code and escape bytes removed */
  char *k = malloc(n + 1);
  size_t *at = malloc((n + 1) * sizeof *at);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!strchr("*_~`\\", s[i]) || s[i] == '\0') {
      at[m] = i;
      k[m++] = s[i];
    }
  static const char *const kw[] = {"close", "closes",  "closed",   "fix",     "fixes",
                                   "fixed", "resolve", "resolves", "resolved"};
  const char *why = NULL;
  for (size_t i = 0; i < m && !why; i++) {
    /* a word start as written: the byte before it in s, not in k */
    if (at[i] > 0 && st_alnum((unsigned char)s[at[i] - 1]))
      continue;
    for (size_t w = 0; w < sizeof kw / sizeof kw[0] && !why; w++) {
      size_t l = strlen(kw[w]);
      if (!st_prefix(k + i, m - i, kw[w]) || (i + l < m && st_alnum((unsigned char)k[i + l])))
        continue;
      size_t counted = 0;
      for (size_t j = i + l; j < m && counted <= 300; j++) {
        unsigned char c = (unsigned char)k[j];
        bool ref =
            (c == '#' && j + 1 < m && k[j + 1] >= '0' && k[j + 1] <= '9') ||
            (st_prefix(k + j, m - j, "gh-") && j + 3 < m && k[j + 3] >= '0' && k[j + 3] <= '9') ||
            st_prefix(k + j, m - j, "://") || st_prefix(k + j, m - j, "/issues/") ||
            st_prefix(k + j, m - j, "/pull/") || st_prefix(k + j, m - j, "/pulls/");
        if (ref)
          why = "keyword";
        if (c < 0x80 && !strchr(" \t\n\r\f\v", c))
          counted++;
      }
    }
  }
  free(k);
  free(at);
  return why;
}

static const char *st_live(const char *s, size_t n)
{
  bool bol = true; /* only blanks and `>` since the line began */
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '/' && bol && i + 1 < n && st_alpha((unsigned char)s[i + 1]))
      return "quick-action";
    if (s[i] == '\n' || s[i] == '\r')
      bol = true;
    else if (!strchr(" \t>", s[i]) || s[i] == '\0')
      bol = false;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    unsigned char prev = i ? (unsigned char)s[i - 1] : ' ';
    if (c == '<')
      return "html";
    if (c == '&' && i + 1 < n && (s[i + 1] == '#' || st_alnum((unsigned char)s[i + 1])) &&
        !st_prefix(s + i, n - i, "&lt;") && !st_prefix(s + i, n - i, "&amp;"))
      return "entity";
    if (c == '@' && i + 1 < n && st_alnum((unsigned char)s[i + 1]))
      return "mention";
    if (c == '!' && i + 1 < n && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < n && !strchr("[]\n\\", s[j]))
        j++;
      if (j + 1 >= n || s[j] != ']' || s[j + 1] != '(')
        return "image";
      j += 2;
      size_t sl = st_prefix(s + j, n - j, "https://")  ? 8
                  : st_prefix(s + j, n - j, "http://") ? 7
                                                       : 0;
      if (!sl || !st_forge(s + j + sl, n - j - sl, "/"))
        return "image";
    }
    if (c == ':') {
      size_t b = i;
      while (b > 0 && st_alpha((unsigned char)s[b - 1]))
        b--;
      static const char *const always[] = {"http",   "https", "ftp", "ftps",
                                           "mailto", "file",  "ws",  "wss"};
      bool slash = i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '\\');
      for (size_t a = 0; a < sizeof always / sizeof always[0] && !slash; a++)
        slash = i - b == strlen(always[a]) && st_prefix(s + b, i - b, always[a]);
      if (!slash)
        continue;
      bool http = (i - b == 4 && st_prefix(s + b, 4, "http")) ||
                  (i - b == 5 && st_prefix(s + b, 5, "https"));
      if (!http || !st_prefix(s + i, n - i, "://") || !st_forge(s + i + 3, n - i - 3, NULL))
        return "link";
    }
    if ((c == '/' || c == '\\') && i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '\\') &&
        !st_alnum(prev) && !strchr(":/\\", prev) && !(i >= 3 && !memcmp(s + i - 3, "[:]", 3))) {
      size_t j = i;
      while (j < n && (s[j] == '/' || s[j] == '\\'))
        j++;
      if (j < n && st_hostbyte((unsigned char)s[j]))
        return "link";
    }
    if (st_prefix(s + i, n - i, "www.") && !st_alnum(prev)) {
      size_t j = i;
      while (j < n && st_hostbyte((unsigned char)s[j]))
        j++;
      if (!(j - i == strlen(ST_FORGE) && st_prefix(s + i, n - i, ST_FORGE)))
        return "link";
    }
  }
  return st_keyword_live(s, n);
}

#endif
