/* Unit tests for review/secrets.c: every token format is found in
 * every encoding (positive controls), the run's own token is recognised
 * from its fingerprint, length and prefix alone, and ordinary text, hashes
 * and near-misses are not findings (negative controls). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "common/redact.h"
#include "review/secrets.h"

/* an installation token of the emulator's shape (ghs_ + 36..76 base62) */
static const char *TOK = "ghs_Q8xV2mN7pL4kR9tY1wE6uI3oA5sD0fG8hJ2kZ";

struct got {
  int n;
  char kinds[32][32];
  char encs[32][32];
  char fps[32][20];
  int known[32];
};

static void collect(const al_secret_hit *h, void *ctx)
{
  struct got *g = ctx;
  if (g->n >= 32)
    return;
  snprintf(g->kinds[g->n], 32, "%s", h->kind);
  snprintf(g->encs[g->n], 32, "%s", h->encoding);
  memcpy(g->fps[g->n], h->fp, 20);
  g->known[g->n] = h->known;
  g->n++;
}

static struct got scan(const char *text, const al_secret_known *k, size_t nk)
{
  struct got g = {0};
  al_secret_scan(text, strlen(text), k, nk, collect, &g, NULL);
  return g;
}

static bool has(const struct got *g, const char *kind, const char *enc)
{
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->kinds[i], kind) == 0 && (!enc || strcmp(g->encs[i], enc) == 0))
      return true;
  return false;
}

static al_secret_known known_tok(void)
{
  al_secret_known k = {.len = strlen(TOK), .name = "git token"};
  al_secret_fingerprint(TOK, k.fp);
  snprintf(k.prefix, sizeof k.prefix, "ghs_");
  return k;
}

static void test_formats(void **state)
{
  (void)state;
  static const struct {
    const char *text, *kind;
  } rows[] = {
      {"x ghp_abcdefghijklmnopqrstuvwxyz0123456789 y", "github-token"},
      {"gho_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"},
      {"ghu_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"},
      {"ghr_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"},
      {"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github-pat"},
      {"t=ghs_eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlc2lnbmF0dXJl", "github-token"},
      {"glpat-abcdefghij0123456789", "gitlab-token"},
      {"GR1348941abcdefghij0123456789", "gitlab-token"},
      {"AKIAIOSFODNN7EXAMPLE", "aws-access-key-id"},
      {"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n", "private-key"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
       "private-key"},
      {"xoxb-1234567890-abcdefghij", "slack-token"},
      {"sk_live_abcdefghij0123456789ab", "stripe-key"},
      {"AIzaSyA-abcdefghijklmnopqrstuvwxyz012345", "google-api-key"},
      {"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "api-key"},
      {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop", "jwt"},
      {"DB_PASSWORD=\"x7Kq9Lm2Pz4Rt8Vw\"", "generic-credential"},
      {"api_key: a8F3kL9mQ2xZ7pR4", "generic-credential"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct got g = scan(rows[i].text, NULL, 0);
    if (!has(&g, rows[i].kind, "plain"))
      print_error("row %zu: %s not found as %s\n", i, rows[i].text, rows[i].kind);
    assert_true(has(&g, rows[i].kind, "plain"));
  }
}

static void test_negatives(void **state)
{
  (void)state;
  static const char *const clean[] = {
      "plain prose about tokens and passwords",
      "ghs_short",
      "ghx_abcdefghijklmnopqrstuvwxyz0123456789",
      "commit 3f786850e387550fdab836ed7e6dc881de23001b", /* a sha is not a secret */
      "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      "password = \"changeme\"",
      "token: aaaaaaaaaaaaaaaaaaaaaaaa",
      "MAKIAIOSFODNN7EXAMPLEX",
      "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
      "@@ -1,3 +1,4 @@\n def median(s):\n+    return sorted(s)[len(s) // 2]\n",
  };
  for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
    struct got g = scan(clean[i], NULL, 0);
    if (g.n)
      print_error("clean %zu: found %s (%s)\n", i, g.kinds[0], g.encs[0]);
    assert_int_equal(g.n, 0);
  }
}

static void test_encodings_of_run_token(void **state)
{
  (void)state;
  al_secret_known k = known_tok();
  char b64[200], hex[200], rev[100], buf[600];
  EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)TOK, (int)strlen(TOK));
  size_t n = strlen(TOK);
  for (size_t i = 0; i < n; i++) {
    snprintf(hex + 2 * i, 3, "%02x", (unsigned char)TOK[i]);
    rev[i] = TOK[n - 1 - i];
  }
  rev[n] = '\0';
  struct {
    const char *pre, *enc;
  } rows[] = {
      {"token: ", "plain"},
      {"echo ", "base64"},
      {"data = ", "hex"},
      {"x=", "reversed"},
  };
  const char *forms[] = {TOK, b64, hex, rev};
  for (size_t i = 0; i < 4; i++) {
    snprintf(buf, sizeof buf, "%s%s.", rows[i].pre, forms[i]);
    struct got g = scan(buf, &k, 1);
    bool found = false;
    for (int j = 0; j < g.n; j++)
      if (g.known[j] == 0 && strcmp(g.encs[j], rows[i].enc) == 0)
        found = true;
    if (!found)
      print_error("%s form not recognised as the run's token: %s\n", rows[i].enc, buf);
    assert_true(found);
  }
  /* split across string literals and across diff lines */
  snprintf(buf, sizeof buf, "t = \"%.10s\" + \"%.12s\" +\n+ \"%s\"\n", TOK, TOK + 10, TOK + 22);
  struct got g = scan(buf, &k, 1);
  assert_true(g.n >= 1 && g.known[0] == 0 && strcmp(g.encs[0], "split") == 0);
  /* glued to other characters: found by its length, not by the pattern */
  snprintf(buf, sizeof buf, "X%sABCDEF", TOK);
  g = scan(buf, &k, 1);
  bool glued = false;
  for (int j = 0; j < g.n; j++)
    glued |= g.known[j] == 0;
  assert_true(glued);
  /* %XX-encoded */
  snprintf(buf, sizeof buf, "u=%%67%%68%%73%%5F%s", TOK + 4);
  g = scan(buf, &k, 1);
  assert_true(g.n >= 1 && g.known[0] == 0);
  /* base64 of a text holding it, cut in 60-column lines (split + base64) */
  char inner[200], ib64[400], lines[500];
  snprintf(inner, sizeof inner, "Authorization: token %s\n", TOK);
  EVP_EncodeBlock((unsigned char *)ib64, (const unsigned char *)inner, (int)strlen(inner));
  size_t o = 0;
  for (size_t i = 0; ib64[i]; i++) {
    lines[o++] = ib64[i];
    if (i % 60 == 59)
      lines[o++] = '\n';
  }
  lines[o] = '\0';
  g = scan(lines, &k, 1);
  bool b = false;
  for (int j = 0; j < g.n; j++)
    b |= g.known[j] == 0;
  assert_true(b);
  /* control: another token of the same shape is found but is not the run's */
  g = scan("ghs_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ", &k, 1);
  assert_int_equal(g.n, 1);
  assert_int_equal(g.known[0], -1);
}

static void test_dedupe_and_binary(void **state)
{
  (void)state;
  char buf[300];
  snprintf(buf, sizeof buf, "%s and again %s", TOK, TOK);
  struct got g = scan(buf, NULL, 0);
  assert_int_equal(g.n, 1); /* one fingerprint, one finding */
  /* inside binary bytes (NULs around it) */
  unsigned char bin[128] = {0};
  memcpy(bin + 7, TOK, strlen(TOK));
  bin[3] = 0xff;
  struct got gb = {0};
  al_secret_scan((const char *)bin, sizeof bin, NULL, 0, collect, &gb, NULL);
  assert_int_equal(gb.n, 1);
  assert_string_equal(gb.kinds[0], "github-token");
  /* a 520-character installation token (new format) */
  char big[600] = "ghs_";
  for (int i = 4; i < 524; i++)
    big[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[i % 62];
  big[524] = '\0';
  g = scan(big, NULL, 0);
  assert_true(g.n >= 1 && strcmp(g.kinds[0], "github-token") == 0);
  bool trunc = true;
  al_secret_scan("", 0, NULL, 0, collect, &g, &trunc);
  assert_false(trunc);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_formats),
      cmocka_unit_test(test_negatives),
      cmocka_unit_test(test_encodings_of_run_token),
      cmocka_unit_test(test_dedupe_and_binary),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
