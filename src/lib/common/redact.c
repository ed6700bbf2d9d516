/* Redaction: see redact.h.
 *
 * Registered values are matched in three forms:
 *  - raw, and percent-encoded in any mix: each byte of the secret may appear
 *    literally or as %XX with upper- or lower-case hex (RFC 3986 §2.1), so a
 *    fully or partly URL-encoded token is found too;
 *  - base64("x-access-token:" + token) (RFC 4648 §4, the HTTP Basic
 *    credentials git sends), with or without its '=' padding.
 * A registered match is replaced by the fingerprint of the secret itself,
 * so every form of one token shows the same "sha256:..." as the broker's
 * records. Pattern matches get the fingerprint of the matched text. */
#include "common/redact.h"

#include <ctype.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/lazycrypto.h"
#include "common/util.h"

struct secret {
  char *raw;
  size_t raw_len;
  char *b64; /* without padding */
  size_t b64_len;
  char fp[20];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct secret *g_secrets;
static size_t g_n, g_cap;

static char *basic_auth_form(const char *s, size_t *len)
{
  al_autofree char *plain = al_strdup_printf("x-access-token:%s", s);
  size_t n = strlen(plain);
  char *out = al_xmalloc(4 * ((n + 2) / 3) + 1);
  int l = al_lazy_base64(out, plain, n);
  explicit_bzero(plain, n);
  while (l > 0 && out[l - 1] == '=')
    l--;
  out[l] = '\0';
  *len = (size_t)l;
  return out;
}

int al_redact_register(const char *secret)
{
  if (!secret || strlen(secret) < 8)
    return 0;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_n; i++)
    if (strcmp(g_secrets[i].raw, secret) == 0) {
      pthread_mutex_unlock(&g_lock);
      return 0;
    }
  if (g_n == g_cap) {
    g_cap = g_cap ? g_cap * 2 : 16;
    g_secrets = al_xrealloc(g_secrets, g_cap * sizeof *g_secrets);
  }
  struct secret *s = &g_secrets[g_n++];
  s->raw = al_xstrdup(secret);
  s->raw_len = strlen(secret);
  s->b64 = basic_auth_form(secret, &s->b64_len);
  al_secret_fingerprint(secret, s->fp);
  pthread_mutex_unlock(&g_lock);
  return 0;
}

static void wipe_secret(struct secret *s)
{
  explicit_bzero(s->raw, s->raw_len);
  explicit_bzero(s->b64, s->b64_len);
  free(s->raw);
  free(s->b64);
  memset(s, 0, sizeof *s);
}

void al_redact_unregister(const char *secret)
{
  if (!secret)
    return;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_n; i++) {
    if (strcmp(g_secrets[i].raw, secret) == 0) {
      wipe_secret(&g_secrets[i]);
      g_secrets[i] = g_secrets[g_n - 1];
      memset(&g_secrets[g_n - 1], 0, sizeof g_secrets[0]);
      g_n--;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

void al_redact_clear(void)
{
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_n; i++)
    wipe_secret(&g_secrets[i]);
  g_n = 0;
  pthread_mutex_unlock(&g_lock);
}

void al_secret_fingerprint(const char *secret, char out[20])
{
  char hex[65];
  al_sha256_hex(secret, strlen(secret), hex);
  memcpy(out, "sha256:", 7);
  memcpy(out + 7, hex, 12);
  out[19] = '\0';
}

static bool tok_char(char c, bool allow_dot_dash)
{
  return isalnum((unsigned char)c) || c == '_' || (allow_dot_dash && (c == '.' || c == '-'));
}

/* Length of a token-shaped string starting at p, or 0. */
static size_t pattern_at(const char *p)
{
  if (p[0] != 'g') /* both shapes start with 'g': most bytes stop here */
    return 0;
  if (p[1] == 'h' && p[2] && strchr("pousr", p[2]) && p[3] == '_') {
    size_t n = 4;
    while (tok_char(p[n], true))
      n++;
    return n - 4 >= 36 ? n : 0;
  }
  if (strncmp(p, "github_pat_", 11) == 0) {
    size_t n = 11;
    while (tok_char(p[n], false))
      n++;
    return n - 11 >= 22 ? n : 0;
  }
  return 0;
}

/* Length of s at p where each byte is literal or %XX-encoded, or 0. */
static size_t encoded_match(const char *p, const char *s, size_t slen)
{
  size_t k = 0;
  for (size_t j = 0; j < slen; j++) {
    if (p[k] == s[j]) {
      k++;
    } else if (p[k] == '%') {
      int hi = al_hex_digit(p[k + 1]);
      int lo = hi < 0 ? -1 : al_hex_digit(p[k + 2]);
      if (lo < 0 || (char)(hi * 16 + lo) != s[j])
        return 0;
      k += 3;
    } else {
      return 0;
    }
  }
  return k;
}

/* A secret match at p: its length and its fingerprint; lock held. */
static size_t match_at(const char *p, const char **fp)
{
  for (size_t i = 0; i < g_n; i++) {
    struct secret *s = &g_secrets[i];
    size_t m = encoded_match(p, s->raw, s->raw_len);
    if (m) {
      *fp = s->fp;
      return m;
    }
    if (p[0] == s->b64[0] && strncmp(p, s->b64, s->b64_len) == 0) {
      m = s->b64_len;
      while (m < s->b64_len + 2 && p[m] == '=')
        m++;
      *fp = s->fp;
      return m;
    }
  }
  *fp = NULL;
  return pattern_at(p);
}

char *al_redact(const char *text)
{
  size_t n = strlen(text);
  size_t cap = n + 1, len = 0;
  char *out = al_xmalloc(cap);
  pthread_mutex_lock(&g_lock);
  /* the bytes a match can start with: 'g' (both token shapes), the first
   * byte of each registered value raw and in base64, '%' (an encoded
   * first byte); the others are copied in runs without a look */
  bool start[256] = {false};
  start['g'] = true;
  if (g_n)
    start['%'] = true;
  for (size_t k = 0; k < g_n; k++) {
    start[(unsigned char)g_secrets[k].raw[0]] = true;
    start[(unsigned char)g_secrets[k].b64[0]] = true;
  }
  for (size_t i = 0; i < n;) {
    size_t run = i;
    while (run < n && !start[(unsigned char)text[run]])
      run++;
    if (run > i) {
      if (len + (run - i) + 1 > cap) {
        cap = (len + (run - i) + 1) * 2;
        out = al_xrealloc(out, cap);
      }
      memcpy(out + len, text + i, run - i);
      len += run - i;
      i = run;
      if (i == n)
        break;
    }
    const char *sfp;
    size_t m = match_at(text + i, &sfp);
    if (m) {
      char fp[20];
      if (sfp) {
        memcpy(fp, sfp, sizeof fp);
      } else {
        char *span = al_xmalloc(m + 1);
        memcpy(span, text + i, m);
        span[m] = '\0';
        al_secret_fingerprint(span, fp);
        explicit_bzero(span, m);
        free(span);
      }
      char rep[48];
      int rl = snprintf(rep, sizeof rep, "[REDACTED %s]", fp);
      if (len + (size_t)rl + 1 > cap) {
        cap = len + (size_t)rl + 1 + (n - i);
        out = al_xrealloc(out, cap);
      }
      memcpy(out + len, rep, (size_t)rl);
      len += (size_t)rl;
      i += m;
    } else {
      if (len + 2 > cap) {
        cap = cap * 2;
        out = al_xrealloc(out, cap);
      }
      out[len++] = text[i++];
    }
  }
  pthread_mutex_unlock(&g_lock);
  out[len] = '\0';
  return out;
}

bool al_redact_contains_secret(const char *text)
{
  bool found = false;
  pthread_mutex_lock(&g_lock);
  for (const char *p = text; *p && !found; p++) {
    const char *fp;
    found = match_at(p, &fp) != 0;
  }
  pthread_mutex_unlock(&g_lock);
  return found;
}
