/* The review's secret scanner: see review/secrets.h.
 *
 * One pass per view. A view is a byte buffer derived from the input
 * (reversed, split, %XX-decoded, base64- or hex-decoded runs); every view
 * is scanned with the same pattern table and the run's known tokens. A
 * finding is reported once per fingerprint (the first view that shows it
 * names the encoding). Decoded copies are wiped (OPENSSL_cleanse) before
 * they are freed: they may hold the very secrets we look for. */
#include "review/secrets.h"

#include <openssl/crypto.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/util.h"

#define SCAN_MAX (16u << 20)
#define MIN_B64_RUN 20
#define MIN_HEX_RUN 32
#define PEM_MAX (64u << 10)

struct scan {
  const al_secret_known *known;
  size_t nknown;
  al_secret_cb cb;
  void *ctx;
  char (*seen)[20];
  size_t nseen, capseen;
  size_t count;
  const unsigned char *plain; /* the input, to tell a split token from a glued one */
  size_t plain_len;
};

struct view {
  unsigned char *p;
  size_t n;
};

static void view_free(struct view *v)
{
  if (v->p) {
    OPENSSL_cleanse(v->p, v->n);
    free(v->p);
  }
  v->p = NULL;
  v->n = 0;
}

static bool is_alnum(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_upper_digit(unsigned char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_b64url(unsigned char c)
{
  return is_alnum(c) || c == '_' || c == '-';
}

static bool is_word(unsigned char c)
{
  return is_alnum(c) || c == '_';
}

static bool is_gh(unsigned char c)
{
  return is_alnum(c) || c == '_' || c == '.' || c == '-';
}

static bool is_value(unsigned char c)
{
  return is_alnum(c) || c == '+' || c == '/' || c == '=' || c == '_' || c == '.' || c == '~' ||
         c == '-';
}

/* How many bytes of p[from..n) satisfy ok. */
static size_t run_of(const unsigned char *p, size_t n, size_t from, bool (*ok)(unsigned char))
{
  size_t k = from;
  while (k < n && ok(p[k]))
    k++;
  return k - from;
}

static void fingerprint(const unsigned char *p, size_t n, char out[20])
{
  char hex[65];
  al_sha256_hex(p, n, hex);
  memcpy(out, "sha256:", 7);
  memcpy(out + 7, hex, 12);
  out[19] = '\0';
}

static void report(struct scan *s, const char *kind, const char *enc, const unsigned char *p,
                   size_t n, int known)
{
  al_secret_hit h = {.kind = kind, .encoding = enc, .known = known};
  fingerprint(p, n, h.fp);
  for (size_t i = 0; i < s->nseen; i++)
    if (memcmp(s->seen[i], h.fp, 20) == 0)
      return;
  if (h.known < 0)
    for (size_t i = 0; i < s->nknown; i++)
      if (strcmp(s->known[i].fp, h.fp) == 0)
        h.known = (int)i;
  if (s->nseen == s->capseen) {
    s->capseen = s->capseen ? s->capseen * 2 : 16;
    s->seen = al_xrealloc(s->seen, s->capseen * sizeof *s->seen);
  }
  memcpy(s->seen[s->nseen++], h.fp, 20);
  s->count++;
  s->cb(&h, s->ctx);
}

static bool starts(const unsigned char *p, size_t n, const char *lit)
{
  size_t l = strlen(lit);
  return n >= l && memcmp(p, lit, l) == 0;
}

static bool starts_icase(const unsigned char *p, size_t n, const char *lit)
{
  size_t l = strlen(lit);
  if (n < l)
    return false;
  for (size_t i = 0; i < l; i++) {
    unsigned char c = p[i];
    if (c >= 'A' && c <= 'Z')
      c = (unsigned char)(c - 'A' + 'a');
    if (c != (unsigned char)lit[i])
      return false;
  }
  return true;
}

/* How many distinct bytes p[0..n) holds: a cheap stand-in for entropy
 * (a random 16-character base62 value has about 14; `passwordpassword1`
 * has 9). */
static unsigned distinct_bytes(const unsigned char *p, size_t n)
{
  bool seen[256] = {false};
  unsigned d = 0;
  for (size_t i = 0; i < n; i++)
    if (!seen[p[i]]) {
      seen[p[i]] = true;
      d++;
    }
  return d;
}

/* A pattern hit at p (n bytes left; left_ok: the byte before is not a
 * word character). Sets *kind and the secret's span [*off, *off+*len);
 * returns how many bytes the match consumed, 0 for none. */
static size_t match_at(const unsigned char *p, size_t n, bool left_ok, bool generic,
                       const char **kind, size_t *off, size_t *len)
{
  *off = 0;
  if (n < 8)
    return 0;
  if (p[0] == 'g' && p[1] == 'h' && strchr("pousr", p[2]) && p[2] && p[3] == '_') {
    size_t k = run_of(p, n, 4, is_gh);
    while (k > 0 && (p[4 + k - 1] == '.' || p[4 + k - 1] == '-'))
      k--;
    if (k >= 36) {
      *kind = "github-token";
      return *len = 4 + k;
    }
  }
  if (starts(p, n, "github_pat_")) {
    size_t k = run_of(p, n, 11, is_word);
    if (k >= 22) {
      *kind = "github-pat";
      return *len = 11 + k;
    }
  }
  static const char *const gitlab[] = {"glpat-",   "gldt-",  "glrt-",    "glptt-",
                                       "glcbt-",   "glft-",  "glsoat-",  "glimt-",
                                       "glagent-", "gloas-", "GR1348941"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(gitlab); i++) {
    if (!starts(p, n, gitlab[i]))
      continue;
    size_t l = strlen(gitlab[i]);
    size_t k = run_of(p, n, l, is_b64url);
    if (k >= 20) {
      *kind = "gitlab-token";
      return *len = l + k;
    }
  }
  if (starts(p, n, "-----BEGIN ")) {
    size_t e = 11;
    while (e < n && e < 80 && (is_upper_digit(p[e]) || p[e] == ' '))
      e++;
    bool key = e >= 11 + 11 && memcmp(p + e - 11, "PRIVATE KEY", 11) == 0;
    bool pgp = e >= 11 + 21 && memcmp(p + e - 21, "PGP PRIVATE KEY BLOCK", 21) == 0;
    if ((key || pgp) && starts(p + e, n - e, "-----")) {
      size_t end = e + 5;
      for (size_t j = end; j + 8 <= n && j < PEM_MAX; j++)
        if (memcmp(p + j, "-----END", 8) == 0) {
          end = j + 8;
          while (end < n && p[end] != '\n' && end < j + 80)
            end++;
          break;
        }
      *kind = "private-key";
      return *len = end;
    }
  }
  if (!left_ok)
    return 0;
  if (starts(p, n, "ATBB")) {
    size_t k = run_of(p, n, 4, is_alnum);
    if (k >= 28) {
      *kind = "bitbucket-token";
      return *len = 4 + k;
    }
  }
  if ((starts(p, n, "AKIA") || starts(p, n, "ASIA") || starts(p, n, "ABIA") ||
       starts(p, n, "ACCA")) &&
      n >= 20) {
    size_t k = run_of(p, n, 4, is_upper_digit);
    if (k == 16 && (n == 20 || !is_alnum(p[20]))) {
      *kind = "aws-access-key-id";
      return *len = 20;
    }
  }
  if (starts(p, n, "xox") && strchr("baprs", p[3]) && p[3] && p[4] == '-') {
    size_t k = run_of(p, n, 5, is_b64url);
    if (k >= 10) {
      *kind = "slack-token";
      return *len = 5 + k;
    }
  }
  if (starts(p, n, "sk_live_") || starts(p, n, "rk_live_")) {
    size_t k = run_of(p, n, 8, is_alnum);
    if (k >= 20) {
      *kind = "stripe-key";
      return *len = 8 + k;
    }
  }
  if (starts(p, n, "AIza")) {
    size_t k = run_of(p, n, 4, is_b64url);
    if (k >= 35) {
      *kind = "google-api-key";
      return *len = 4 + k;
    }
  }
  if (starts(p, n, "npm_")) {
    size_t k = run_of(p, n, 4, is_alnum);
    if (k >= 36) {
      *kind = "npm-token";
      return *len = 4 + k;
    }
  }
  if (starts(p, n, "pypi-")) {
    size_t k = run_of(p, n, 5, is_b64url);
    if (k >= 50) {
      *kind = "pypi-token";
      return *len = 5 + k;
    }
  }
  if (starts(p, n, "sk-")) {
    size_t k = run_of(p, n, 3, is_b64url);
    if (k >= 32) {
      *kind = "api-key";
      return *len = 3 + k;
    }
  }
  if (starts(p, n, "eyJ")) {
    size_t a = run_of(p, n, 0, is_b64url);
    if (a >= 10 && a < n && p[a] == '.') {
      size_t b = run_of(p, n, a + 1, is_b64url);
      if (b >= 10 && a + 1 + b < n && p[a + 1 + b] == '.') {
        size_t c = run_of(p, n, a + 2 + b, is_b64url);
        if (c >= 10) {
          *kind = "jwt";
          return *len = a + 2 + b + c;
        }
      }
    }
  }
  static const char *const words[] = {"password",    "passwd",        "secret",     "token",
                                      "api_key",     "apikey",        "api-key",    "access_key",
                                      "private_key", "client_secret", "auth_token", "credential"};
  for (size_t i = 0; generic && i < AL_ARRAY_SIZE(words); i++) {
    if (!starts_icase(p, n, words[i]))
      continue;
    size_t k = strlen(words[i]);
    k += run_of(p, n, k, is_b64url);
    while (k < n && (p[k] == '"' || p[k] == '\'' || p[k] == ' '))
      k++;
    if (k >= n || (p[k] != '=' && p[k] != ':'))
      return 0;
    k++;
    while (k < n && (p[k] == '=' || p[k] == '>' || p[k] == ' ' || p[k] == '"' || p[k] == '\''))
      k++;
    size_t v = run_of(p, n, k, is_value);
    while (v > 0 && p[k + v - 1] == '.')
      v--;
    if (v < 16 || v > 200)
      return 0;
    const char *k2;
    size_t o2, l2;
    if (match_at(p + k, n - k, true, false, &k2, &o2, &l2)) /* a known format: reported as such */
      return 0;
    bool digit = false, alpha = false;
    for (size_t j = k; j < k + v; j++) {
      digit |= p[j] >= '0' && p[j] <= '9';
      alpha |= (p[j] >= 'a' && p[j] <= 'z') || (p[j] >= 'A' && p[j] <= 'Z');
    }
    if (!digit || !alpha || distinct_bytes(p + k, v) < 10)
      return 0;
    *kind = "generic-credential";
    *off = k;
    *len = v;
    return k + v;
  }
  return 0;
}

/* Whether a split-view hit is only a token glued to what followed it: its
 * first 24 bytes stand whole in the input, forward or reversed (the plain
 * or reversed view reported that token already). */
static bool glued(const struct scan *s, const unsigned char *span, size_t n)
{
  if (n < 24)
    return false;
  unsigned char rev[24]; /* a reversed view's span stands reversed in the input */
  for (size_t i = 0; i < 24; i++)
    rev[i] = span[23 - i];
  return memmem(s->plain, s->plain_len, span, 24) != NULL ||
         memmem(s->plain, s->plain_len, rev, 24) != NULL;
}

static void scan_view(struct scan *s, const unsigned char *p, size_t n, const char *enc)
{
  bool split = strncmp(enc, "split", 5) == 0;
  for (size_t i = 0; i < n; i++) {
    /* the run's own tokens, by fingerprint at exactly their length */
    for (size_t k = 0; k < s->nknown; k++) {
      const al_secret_known *kn = &s->known[k];
      size_t pl = strlen(kn->prefix);
      if (!pl || !kn->len || kn->len > n - i || memcmp(p + i, kn->prefix, pl) != 0)
        continue;
      char fp[20];
      fingerprint(p + i, kn->len, fp);
      if (strcmp(fp, kn->fp) == 0)
        report(s, "github-token", enc, p + i, kn->len, (int)k);
    }
    const char *kind = NULL;
    size_t off = 0, len = 0;
    size_t m = match_at(p + i, n - i, i == 0 || !is_alnum(p[i - 1]), true, &kind, &off, &len);
    if (m) {
      if (!split || !glued(s, p + i + off, len))
        report(s, kind, enc, p + i + off, len, -1);
      i += m - 1;
    }
  }
}

static struct view reversed(const unsigned char *p, size_t n)
{
  struct view v = {al_xmalloc(n + 1), n};
  for (size_t i = 0; i < n; i++)
    v.p[i] = p[n - 1 - i];
  return v;
}

static struct view split_view(const unsigned char *p, size_t n)
{
  struct view v = {al_xmalloc(n + 1), 0};
  for (size_t i = 0; i < n; i++)
    if (!strchr(" \t\r\n'\"`+,\\", p[i]) || !p[i])
      v.p[v.n++] = p[i];
  return v;
}

static struct view url_view(const unsigned char *p, size_t n)
{
  struct view v = {al_xmalloc(n + 1), 0};
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (p[i] == '%' && i + 2 < n && (hi = al_hex_digit((char)p[i + 1])) >= 0 &&
        (lo = al_hex_digit((char)p[i + 2])) >= 0) {
      v.p[v.n++] = (unsigned char)(hi * 16 + lo);
      i += 2;
    } else {
      v.p[v.n++] = p[i];
    }
  }
  return v;
}

/* both alphabets: a secret may be hidden in either */
static int b64_value(unsigned char c)
{
  return al_base64_value(c, true);
}

static void scan_both(struct scan *s, const unsigned char *p, size_t n, const char *fwd,
                      const char *rev)
{
  scan_view(s, p, n, fwd);
  struct view r = reversed(p, n);
  scan_view(s, r.p, r.n, rev);
  view_free(&r);
}

/* Decode every base64 run (4 alignments) and hex run (2) of p and scan
 * what comes out, forward and reversed. */
static void scan_decoded(struct scan *s, const unsigned char *p, size_t n, bool split)
{
  unsigned char *out = al_xmalloc(n + 1);
  for (size_t i = 0; i < n;) {
    size_t k = i;
    while (k < n && b64_value(p[k]) >= 0)
      k++;
    if (k - i >= MIN_B64_RUN) {
      for (size_t a = 0; a < 4; a++) {
        size_t o = 0;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t j = i + a; j < k; j++) {
          acc = (acc << 6) | (uint32_t)b64_value(p[j]);
          bits += 6;
          if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
          }
        }
        scan_both(s, out, o, split ? "base64 split" : "base64",
                  split ? "base64 split reversed" : "base64 reversed");
      }
    }
    i = k == i ? i + 1 : k;
  }
  for (size_t i = 0; i < n;) {
    size_t k = i;
    while (k < n && al_hex_digit((char)p[k]) >= 0)
      k++;
    if (k - i >= MIN_HEX_RUN) {
      for (size_t a = 0; a < 2; a++) {
        size_t o = 0;
        for (size_t j = i + a; j + 1 < k; j += 2)
          out[o++] = (unsigned char)(al_hex_digit((char)p[j]) * 16 + al_hex_digit((char)p[j + 1]));
        scan_both(s, out, o, split ? "hex split" : "hex",
                  split ? "hex split reversed" : "hex reversed");
      }
    }
    i = k == i ? i + 1 : k;
  }
  OPENSSL_cleanse(out, n);
  free(out);
}

size_t al_secret_scan(const char *buf, size_t len, const al_secret_known *known, size_t nknown,
                      al_secret_cb cb, void *ctx, bool *truncated)
{
  if (truncated)
    *truncated = len > SCAN_MAX;
  if (!buf || !len)
    return 0;
  if (len > SCAN_MAX)
    len = SCAN_MAX;
  const unsigned char *p = (const unsigned char *)buf;
  struct scan s = {
      .known = known, .nknown = nknown, .cb = cb, .ctx = ctx, .plain = p, .plain_len = len};
  scan_both(&s, p, len, "plain", "reversed");
  struct view sp = split_view(p, len);
  scan_both(&s, sp.p, sp.n, "split", "split reversed");
  if (memchr(p, '%', len)) {
    struct view u = url_view(p, len);
    scan_both(&s, u.p, u.n, "url", "url reversed");
    view_free(&u);
  }
  scan_decoded(&s, p, len, false);
  scan_decoded(&s, sp.p, sp.n, true);
  view_free(&sp);
  free(s.seen);
  return s.count;
}
