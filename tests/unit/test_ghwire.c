/* The forge client's wire rules (src/lib/forge/ghwire.c): the Link parser,
 * the classification of answers, the rate-limit waits and the check that a
 * server-given URL stays under the API base. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forge/ghwire.h"

static char *next_of(const char *v, bool *bad)
{
  return al_link_next(v, strlen(v), bad);
}

static void test_link_github_shape(void **state)
{
  (void)state;
  bool bad = true;
  /* As docs.github.com "Using pagination in the REST API" shows it. */
  char *n =
      next_of("<https://api.github.com/repositories/1300192/issues?page=2>; rel=\"prev\", "
              "<https://api.github.com/repositories/1300192/issues?page=4>; rel=\"next\", "
              "<https://api.github.com/repositories/1300192/issues?page=515>; rel=\"last\", "
              "<https://api.github.com/repositories/1300192/issues?page=1>; rel=\"first\"\r\n",
              &bad);
  assert_false(bad);
  assert_non_null(n);
  assert_string_equal(n, "https://api.github.com/repositories/1300192/issues?page=4");
  free(n);
}

static void test_link_no_next(void **state)
{
  (void)state;
  bool bad = true;
  char *n =
      next_of("<https://x/a?page=1>; rel=\"first\", <https://x/a?page=3>; rel=\"prev\"", &bad);
  assert_null(n);
  assert_false(bad);
  n = next_of("", &bad);
  assert_null(n);
  assert_false(bad);
}

static void test_link_rel_forms(void **state)
{
  (void)state;
  bool bad;
  /* unquoted, upper case, several types in one rel, other params first,
   * a comma and a semicolon inside a quoted param */
  char *n = next_of("<https://x/1>; rel=NEXT", &bad);
  assert_string_equal(n, "https://x/1");
  free(n);
  n = next_of("<https://x/2>; title=\"a, b; c\"; rel=\"last next\"", &bad);
  assert_false(bad);
  assert_string_equal(n, "https://x/2");
  free(n);
  /* "nextpage" is not "next"; a rel on another link does not count */
  n = next_of("<https://x/3>; rel=\"nextpage\", <https://x/4>; rev=\"next\"", &bad);
  assert_null(n);
  assert_false(bad);
  /* the first next wins */
  n = next_of("<https://x/5>; rel=next, <https://x/6>; rel=next", &bad);
  assert_string_equal(n, "https://x/5");
  free(n);
}

static void test_link_malformed(void **state)
{
  (void)state;
  bool bad = false;
  assert_null(next_of("<https://x/1; rel=\"next\"", &bad)); /* unterminated <...> */
  assert_true(bad);
  bad = false;
  assert_null(next_of("<https://x/1>; rel=\"next", &bad)); /* unterminated quote */
  assert_true(bad);
  bad = false;
  assert_null(next_of("https://x/1; rel=next", &bad)); /* no <...> */
  assert_true(bad);
  bad = false;
  assert_null(next_of("<https://x/a b>; rel=next", &bad)); /* a space in the target */
  assert_true(bad);
  bad = false;
  assert_null(next_of("<https://x/1>; rel=next junk", &bad));
  assert_true(bad);
  /* NUL inside the value: not a target character */
  const char nul[] = "<https://x/\0y>; rel=next";
  bad = false;
  assert_null(al_link_next(nul, sizeof nul - 1, &bad));
  assert_true(bad);
}

static void test_classify(void **state)
{
  (void)state;
  al_ghapi_rate r;
  assert_int_equal(al_ghapi_classify(200, NULL, -1, -1, &r), AL_GHAPI_OK);
  assert_int_equal(r, AL_GHAPI_RATE_NONE);
  assert_int_equal(al_ghapi_classify(204, NULL, -1, -1, NULL), AL_GHAPI_OK);
  assert_int_equal(al_ghapi_classify(401, "Bad credentials", -1, 4999, &r), AL_GHAPI_UNAUTHORIZED);
  assert_int_equal(al_ghapi_classify(404, "Not Found", -1, -1, &r), AL_GHAPI_NOT_FOUND);
  assert_int_equal(al_ghapi_classify(410, NULL, -1, -1, &r), AL_GHAPI_NOT_FOUND);
  assert_int_equal(al_ghapi_classify(422, "Validation Failed", -1, -1, &r), AL_GHAPI_INVALID);
  assert_int_equal(al_ghapi_classify(502, NULL, -1, -1, &r), AL_GHAPI_SERVER_ERROR);
  assert_int_equal(al_ghapi_classify(301, NULL, -1, -1, &r), AL_GHAPI_REDIRECTED);
  assert_int_equal(al_ghapi_classify(308, NULL, -1, -1, &r), AL_GHAPI_REDIRECTED);
  assert_int_equal(al_ghapi_classify(304, NULL, -1, -1, &r), AL_GHAPI_OTHER);
  /* a plain 403 is a missing permission, not a rate limit */
  assert_int_equal(al_ghapi_classify(403, "Resource not accessible by integration", -1, 4999, &r),
                   AL_GHAPI_FORBIDDEN);
  assert_int_equal(r, AL_GHAPI_RATE_NONE);
  /* primary: remaining 0, on 403 or 429 */
  assert_int_equal(al_ghapi_classify(403, "API rate limit exceeded", -1, 0, &r),
                   AL_GHAPI_RATE_LIMITED);
  assert_int_equal(r, AL_GHAPI_RATE_PRIMARY);
  assert_int_equal(al_ghapi_classify(429, NULL, -1, 0, &r), AL_GHAPI_RATE_LIMITED);
  assert_int_equal(r, AL_GHAPI_RATE_PRIMARY);
  /* secondary: any 429, a Retry-After, or the message */
  assert_int_equal(al_ghapi_classify(429, NULL, -1, -1, &r), AL_GHAPI_RATE_LIMITED);
  assert_int_equal(r, AL_GHAPI_RATE_SECONDARY);
  assert_int_equal(al_ghapi_classify(403, NULL, 30, 100, &r), AL_GHAPI_RATE_LIMITED);
  assert_int_equal(r, AL_GHAPI_RATE_SECONDARY);
  assert_int_equal(al_ghapi_classify(403, "You have exceeded a secondary rate limit.", -1, 100, &r),
                   AL_GHAPI_RATE_LIMITED);
  assert_int_equal(r, AL_GHAPI_RATE_SECONDARY);
  assert_string_equal(al_ghapi_class_name(AL_GHAPI_NOT_FOUND), "not found");
  assert_string_equal(al_ghapi_class_name(AL_GHAPI_RATE_LIMITED), "rate limited");
}

static void test_rate_wait(void **state)
{
  (void)state;
  /* Retry-After wins */
  assert_int_equal(al_ghapi_rate_wait_ms(7, 0, 2000, 1000, 0, 60000), 7000);
  /* primary: until reset + 1 s */
  assert_int_equal(al_ghapi_rate_wait_ms(-1, 0, 1030, 1000, 0, 60000), 31000);
  /* a reset in the past: the floor */
  assert_int_equal(al_ghapi_rate_wait_ms(-1, 0, 900, 1000, 0, 60000), 1000);
  /* secondary without Retry-After: at least a minute, then doubling, capped */
  assert_int_equal(al_ghapi_rate_wait_ms(-1, -1, -1, 1000, 0, 60000), 60000);
  assert_int_equal(al_ghapi_rate_wait_ms(-1, 50, -1, 1000, 1, 60000), 120000);
  assert_int_equal(al_ghapi_rate_wait_ms(-1, 50, -1, 1000, 2, 60000), 240000);
  assert_int_equal(al_ghapi_rate_wait_ms(-1, 50, -1, 1000, 40, 60000), 15u * 60u * 1000u);
  /* Retry-After: 0 still waits a second */
  assert_int_equal(al_ghapi_rate_wait_ms(0, -1, -1, 1000, 0, 60000), 1000);
}

static void test_url_under(void **state)
{
  (void)state;
  const char *b = "https://api.github.com";
  assert_true(al_ghapi_url_under(b, "https://api.github.com/repos/o/r/pulls?page=2"));
  assert_true(al_ghapi_url_under(b, "HTTPS://API.GITHUB.COM/repositories/1/issues"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com.evil.example/repos"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com:444/repos"));
  assert_false(al_ghapi_url_under(b, "http://api.github.com/repos"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com@evil.example/"));
  assert_false(al_ghapi_url_under(b, "https://evil.example/?https://api.github.com/"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com/repos/../x"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com/repos/%2E%2e/x"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com/a/./b"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com/a#frag"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com/a b"));
  assert_false(al_ghapi_url_under(b, "https://api.github.com/a\\b"));
  assert_false(al_ghapi_url_under(b, "/repos/o/r"));
  /* a base with a path (GitHub Enterprise Server's /api/v3) */
  const char *e = "https://ghe.example/api/v3";
  assert_true(al_ghapi_url_under(e, "https://ghe.example/api/v3/repos/o/r"));
  assert_false(al_ghapi_url_under(e, "https://ghe.example/api/v3x/repos"));
  assert_false(al_ghapi_url_under(e, "https://ghe.example/other/repos"));
  assert_false(al_ghapi_url_under(e, "https://ghe.example/api/v3/%2e%2e/%2e%2e/x"));
  assert_false(al_ghapi_url_under(e, "https://ghe.example/api/v3%2F..%2Fx"));
  /* the dots of a file name are fine */
  assert_true(al_ghapi_url_under(e, "https://ghe.example/api/v3/repos/o/r/contents/a..b"));
}

static void test_sanitise(void **state)
{
  (void)state;
  char out[8];
  al_ghapi_sanitise("ab\x1b[31mcdefgh", out, sizeof out);
  assert_string_equal(out, "ab?[31m");
  al_ghapi_sanitise(NULL, out, sizeof out);
  assert_string_equal(out, "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_link_github_shape), cmocka_unit_test(test_link_no_next),
      cmocka_unit_test(test_link_rel_forms),    cmocka_unit_test(test_link_malformed),
      cmocka_unit_test(test_classify),          cmocka_unit_test(test_rate_wait),
      cmocka_unit_test(test_url_under),         cmocka_unit_test(test_sanitise),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
