#include "common/redact.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define MAX_SECRETS 32
#define FORMS 3

static char *g_forms[MAX_SECRETS][FORMS];
static size_t g_nsecrets;

static char *percent_encode_all(const char *s)
{
  size_t n = strlen(s);
  char *out = al_xmalloc(3 * n + 1);
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    out[3 * i] = '%';
    out[3 * i + 1] = hex[(unsigned char)s[i] >> 4];
    out[3 * i + 2] = hex[(unsigned char)s[i] & 15];
  }
  out[3 * n] = '\0';
  return out;
}

static char *basic_auth_form(const char *s)
{
  al_autofree char *plain = al_strdup_printf("x-access-token:%s", s);
  size_t n = strlen(plain);
  char *out = al_xmalloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)plain, (int)n);
  return out;
}

int al_redact_register(const char *secret)
{
  if (!secret || strlen(secret) < 8)
    return 0;
  for (size_t i = 0; i < g_nsecrets; i++)
    if (strcmp(g_forms[i][0], secret) == 0)
      return 0;
  if (g_nsecrets == MAX_SECRETS)
    return -1;
  g_forms[g_nsecrets][0] = al_xstrdup(secret);
  g_forms[g_nsecrets][1] = percent_encode_all(secret);
  g_forms[g_nsecrets][2] = basic_auth_form(secret);
  g_nsecrets++;
  return 0;
}

static void wipe_slot(size_t i)
{
  for (int f = 0; f < FORMS; f++) {
    OPENSSL_cleanse(g_forms[i][f], strlen(g_forms[i][f]));
    free(g_forms[i][f]);
    g_forms[i][f] = NULL;
  }
}

void al_redact_unregister(const char *secret)
{
  for (size_t i = 0; i < g_nsecrets; i++) {
    if (strcmp(g_forms[i][0], secret) == 0) {
      wipe_slot(i);
      for (int f = 0; f < FORMS; f++)
        g_forms[i][f] = g_forms[g_nsecrets - 1][f];
      g_nsecrets--;
      return;
    }
  }
}

void al_redact_clear(void)
{
  for (size_t i = 0; i < g_nsecrets; i++)
    wipe_slot(i);
  g_nsecrets = 0;
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
  if (p[0] == 'g' && p[1] == 'h' && p[2] && strchr("pousr", p[2]) && p[3] == '_') {
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

/* Length of a secret match at p (registered forms first), or 0. */
static size_t match_at(const char *p)
{
  for (size_t i = 0; i < g_nsecrets; i++)
    for (int f = 0; f < FORMS; f++) {
      size_t l = strlen(g_forms[i][f]);
      if (strncmp(p, g_forms[i][f], l) == 0)
        return l;
    }
  return pattern_at(p);
}

char *al_redact(const char *text)
{
  size_t n = strlen(text);
  size_t cap = n + 1, len = 0;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  for (size_t i = 0; i < n;) {
    size_t m = match_at(text + i);
    if (m) {
      char fp[20];
      char *span = strndup(text + i, m);
      if (!span) {
        free(out);
        return NULL;
      }
      al_secret_fingerprint(span, fp);
      OPENSSL_cleanse(span, m);
      free(span);
      char rep[48];
      int rl = snprintf(rep, sizeof rep, "[REDACTED %s]", fp);
      if (len + (size_t)rl + 1 > cap) {
        cap = len + (size_t)rl + 1 + (n - i);
        char *q = realloc(out, cap);
        if (!q) {
          free(out);
          return NULL;
        }
        out = q;
      }
      memcpy(out + len, rep, (size_t)rl);
      len += (size_t)rl;
      i += m;
    } else {
      if (len + 2 > cap) {
        cap = cap * 2;
        char *q = realloc(out, cap);
        if (!q) {
          free(out);
          return NULL;
        }
        out = q;
      }
      out[len++] = text[i++];
    }
  }
  out[len] = '\0';
  return out;
}

bool al_redact_contains_secret(const char *text)
{
  for (const char *p = text; *p; p++)
    if (match_at(p))
      return true;
  return false;
}
