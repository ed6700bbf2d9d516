/* common/util.c: the small parsers every component shares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"

static void header_number(void **state)
{
  (void)state;
  long long v = -1;
  const char *l = "Retry-After: 30\r\n";
  assert_true(al_http_header_number(l, strlen(l), "retry-after", &v));
  assert_int_equal(v, 30);
  l = "x-ratelimit-remaining:\t0\r\n";
  assert_true(al_http_header_number(l, strlen(l), "x-ratelimit-remaining", &v));
  assert_int_equal(v, 0);
  /* a longer name is another header; no digits is no value */
  l = "retry-after-ms: 5\r\n";
  assert_false(al_http_header_number(l, strlen(l), "retry-after", &v));
  l = "retry-after: Wed, 21 Oct 2026 07:28:00 GMT\r\n";
  assert_false(al_http_header_number(l, strlen(l), "retry-after", &v));
  /* only n bytes are read, and at most 18 digits */
  l = "retry-after: 12345";
  assert_true(al_http_header_number(l, 14, "retry-after", &v));
  assert_int_equal(v, 1);
  l = "retry-after: 99999999999999999999999\r\n";
  assert_true(al_http_header_number(l, strlen(l), "retry-after", &v));
  assert_int_equal(v, 999999999999999999LL);
}

static void sizes_and_durations(void **state)
{
  (void)state;
  uint64_t v;
  const char *why;
  assert_int_equal(al_parse_size("2GiB", &v, &why), 0);
  assert_true(v == 2ull << 30);
  assert_int_equal(al_parse_size("1kB", &v, &why), 0);
  assert_true(v == 1000);
  assert_int_equal(al_parse_size("2GB0", &v, &why), -1);
  assert_int_equal(al_parse_size("-1MiB", &v, &why), -1);
  assert_int_equal(al_parse_size("99999999999999999999", &v, &why), -1);
  assert_int_equal(al_parse_duration_ms("1h30m", &v, &why), 0);
  assert_true(v == 5400000);
  assert_int_equal(al_parse_duration_ms("60", &v, &why), -1);
  assert_int_equal(al_parse_duration_ms("5mm", &v, &why), -1);
}

/* A truncating copy may end mid-sequence; the cut takes back only an
 * incomplete tail (the fuzz_runs finding: jansson refused the summary). */
static void utf8_cut(void **state)
{
  (void)state;
  char a[] = "ab\xc3\xa9";
  al_utf8_cut(a);
  assert_string_equal(a, "ab\xc3\xa9");
  char b[] = "ab\xc3";
  al_utf8_cut(b);
  assert_string_equal(b, "ab");
  char c[] = "x\xf0\x9f\x98";
  al_utf8_cut(c);
  assert_string_equal(c, "x");
  char d[] = "x\xf0\x9f\x98\x80";
  al_utf8_cut(d);
  assert_string_equal(d, "x\xf0\x9f\x98\x80");
  char e[] = "";
  al_utf8_cut(e);
  assert_string_equal(e, "");
  char f[] = "\xe2\x80";
  al_utf8_cut(f);
  assert_string_equal(f, "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(header_number),
                                     cmocka_unit_test(sizes_and_durations),
                                     cmocka_unit_test(utf8_cut)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
