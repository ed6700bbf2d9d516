/* Unit tests for common/redact.c: registered values in every form, the
 * token patterns, fingerprints, and thread safety basics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "common/redact.h"

static const char *TOK = "ghs_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789xyz";

static int teardown(void **state)
{
  (void)state;
  al_redact_clear();
  return 0;
}

static void assert_clean(const char *in, const char *secret)
{
  char *out = al_redact(in);
  assert_non_null(out);
  assert_null(strstr(out, secret));
  assert_non_null(strstr(out, "[REDACTED sha256:"));
  free(out);
}

static void test_raw_registered(void **state)
{
  (void)state;
  const char *secret = "s3cr3t-value-not-token-shaped";
  char *out = al_redact("before s3cr3t-value-not-token-shaped after");
  assert_string_equal(out, "before s3cr3t-value-not-token-shaped after"); /* control */
  free(out);
  al_redact_register(secret);
  char fp[20];
  al_secret_fingerprint(secret, fp);
  out = al_redact("before s3cr3t-value-not-token-shaped after");
  char want[96];
  snprintf(want, sizeof want, "before [REDACTED %s] after", fp);
  assert_string_equal(out, want);
  free(out);
  assert_true(al_redact_contains_secret("x s3cr3t-value-not-token-shaped"));
  al_redact_unregister(secret);
  assert_false(al_redact_contains_secret("x s3cr3t-value-not-token-shaped"));
}

static void test_percent_encoded(void **state)
{
  (void)state;
  const char *secret = "abc.def-ghi_jkl";
  al_redact_register(secret);
  /* fully encoded, upper and lower case hex, and mixed */
  assert_clean("u=%61%62%63%2E%64%65%66%2D%67%68%69%5F%6A%6B%6C&x", secret);
  assert_clean("u=%61%62%63%2e%64%65%66%2d%67%68%69%5f%6a%6b%6c&x", "%2e%64");
  assert_clean("u=abc%2Edef%2Dghi_jkl&x", "abc%2Edef");
  char *out = al_redact("u=abc%2Edef%2Dghi_jkX");
  assert_null(strstr(out, "REDACTED")); /* not the secret: left alone */
  free(out);
}

static void test_basic_auth(void **state)
{
  (void)state;
  al_redact_register(TOK);
  char plain[128], b64[200];
  snprintf(plain, sizeof plain, "x-access-token:%s", TOK);
  EVP_EncodeBlock((unsigned char *)b64, (unsigned char *)plain, (int)strlen(plain));
  char line[300];
  snprintf(line, sizeof line, "Authorization: Basic %s", b64);
  char *out = al_redact(line);
  assert_null(strstr(out, b64));
  char fp[20], want[64];
  al_secret_fingerprint(TOK, fp);
  snprintf(want, sizeof want, "Authorization: Basic [REDACTED %s]", fp);
  assert_string_equal(out, want); /* padding consumed, fingerprint of the token */
  free(out);
  /* without padding too */
  size_t l = strlen(b64);
  while (l && b64[l - 1] == '=')
    b64[--l] = '\0';
  snprintf(line, sizeof line, "Basic %s.", b64);
  out = al_redact(line);
  snprintf(want, sizeof want, "Basic [REDACTED %s].", fp);
  assert_string_equal(out, want);
  free(out);
}

static void test_patterns(void **state)
{
  (void)state;
  /* unregistered token-shaped strings */
  assert_clean("token ghs_123456789012345678901234567890123456 end", "ghs_1234");
  assert_clean("ghp_abcdefghijabcdefghijabcdefghij.-_abcd", "ghp_abcd");
  assert_clean("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11");
  /* a long (new-format) token, no upper bound */
  char big[700] = "ghs_";
  for (int i = 4; i < 690; i++)
    big[i] = (char)('a' + i % 26);
  big[690] = '\0';
  char *out = al_redact(big);
  assert_true(strncmp(out, "[REDACTED sha256:", 17) == 0);
  assert_int_equal(strlen(out), strlen("[REDACTED sha256:123456789012]"));
  free(out);
  /* too short, or not a known prefix: left alone (negative controls) */
  const char *keep[] = {"ghs_12345678901234567890123456789012345",
                        "ghx_1234567890123456789012345678901234567", "github_pat_short",
                        "plain text"};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
    out = al_redact(keep[i]);
    assert_string_equal(out, keep[i]);
    free(out);
  }
}

static void test_fingerprint_and_many(void **state)
{
  (void)state;
  char fp[20];
  al_secret_fingerprint("abc", fp);
  /* SHA-256("abc") = ba7816bf8f01cfea... */
  assert_string_equal(fp, "sha256:ba7816bf8f01");
  /* more than the old fixed limit of 32 values */
  char vals[100][32];
  for (int i = 0; i < 100; i++) {
    snprintf(vals[i], sizeof vals[i], "secret-number-%03d-xyz", i);
    al_redact_register(vals[i]);
  }
  for (int i = 0; i < 100; i += 7)
    assert_true(al_redact_contains_secret(vals[i]));
  al_redact_unregister(vals[50]);
  assert_false(al_redact_contains_secret(vals[50]));
  assert_true(al_redact_contains_secret(vals[99]));
  al_redact_unregister(NULL);  /* no-op */
  al_redact_register("short"); /* ignored */
  assert_false(al_redact_contains_secret("short"));
}

/* al_redact copies the bytes no match can start with in runs and looks
 * only at the others: a match right after a long run, at the very start
 * and end, a registered value with a rare first byte, raw and with that
 * byte percent-encoded; 'g's that start nothing are kept. */
static void test_runs_between_candidates(void **state)
{
  (void)state;
  const char *secret = "~rare-first-byte-1234";
  char fp_tok[20], fp_sec[20], in[2048], want[2048];
  al_secret_fingerprint(TOK, fp_tok);
  al_secret_fingerprint(secret, fp_sec);
  char run[401];
  memset(run, 'A', 400);
  run[400] = '\0';

  snprintf(in, sizeof in, "%s %s gg g %s", TOK, run, TOK);
  snprintf(want, sizeof want, "[REDACTED %s] %s gg g [REDACTED %s]", fp_tok, run, fp_tok);
  char *out = al_redact(in);
  assert_string_equal(out, want);
  free(out);

  snprintf(in, sizeof in, "%s%s|%%7Erare-first-byte-1234", run, secret);
  out = al_redact(in); /* control: not registered yet */
  assert_string_equal(out, in);
  free(out);
  al_redact_register(secret);
  out = al_redact(in);
  snprintf(want, sizeof want, "%s[REDACTED %s]|[REDACTED %s]", run, fp_sec, fp_sec);
  assert_string_equal(out, want);
  free(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_raw_registered, teardown),
      cmocka_unit_test_teardown(test_percent_encoded, teardown),
      cmocka_unit_test_teardown(test_basic_auth, teardown),
      cmocka_unit_test_teardown(test_patterns, teardown),
      cmocka_unit_test_teardown(test_fingerprint_and_many, teardown),
      cmocka_unit_test_teardown(test_runs_between_candidates, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
