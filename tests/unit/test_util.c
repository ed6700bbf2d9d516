/* common/util.c: the small parsers every component shares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/memfd.h"
#include "common/procstat.h"
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

/* common/base64.c: line breaks skipped, '=' ends the data. */
static void base64_lines(void **state)
{
  (void)state;
  size_t n = 99;
  const char *in = "aGVs\nbG8g\r\nd29y\nbGQ=\n";
  char *out = al_base64_decode_lines(in, strlen(in), &n);
  assert_int_equal(n, 11);
  assert_string_equal(out, "hello world");
  free(out);
  out = al_base64_decode_lines("AAE=QUJD", 8, &n); /* nothing after the padding */
  assert_int_equal(n, 2);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 1);
  free(out);
  out = al_base64_decode_lines("", 0, &n);
  assert_int_equal(n, 0);
  assert_string_equal(out, "");
  free(out);
  /* the forge's (standard) alphabet only: '-' and '_' are skipped */
  out = al_base64_decode_lines("-_+/", 4, &n);
  assert_int_equal(n, 1);
  assert_int_equal((unsigned char)out[0], 0xfb);
  free(out);
  /* the one table: RFC 4648 §4, and §5's URL-safe pair only when asked */
  static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; i++) {
    assert_int_equal(al_base64_value((unsigned char)std[i], false), i);
    assert_int_equal(al_base64_value((unsigned char)std[i], true), i);
  }
  assert_int_equal(al_base64_value('-', true), 62);
  assert_int_equal(al_base64_value('_', true), 63);
  assert_int_equal(al_base64_value('-', false), -1);
  assert_int_equal(al_base64_value('_', false), -1);
  assert_int_equal(al_base64_value('=', true), -1);
  assert_int_equal(al_base64_value(0x80, true), -1);
  assert_int_equal(al_base64_value(0, true), -1);
}

/* common/memfd.c: sized, sealed against growth (a write past the cap
 * fails), and extra seals honoured. */
static void sealed_memfd(void **state)
{
  (void)state;
  al_error e = {0};
  int fd = al_sealed_memfd("test-memfd", 8, 0, &e);
  assert_true(fd >= 0);
  assert_int_equal(lseek(fd, 0, SEEK_END), 8);
  int seals = fcntl(fd, F_GET_SEALS);
  assert_true((seals & F_SEAL_GROW) && (seals & F_SEAL_SHRINK) && !(seals & F_SEAL_SEAL));
  assert_int_equal(pwrite(fd, "12345678", 8, 0), 8);
  assert_true(pwrite(fd, "9", 1, 8) < 0); /* past the cap */
  assert_true(ftruncate(fd, 4) < 0);
  close(fd);
  fd = al_sealed_memfd("test-memfd", 4096, F_SEAL_SEAL, &e);
  assert_true(fd >= 0);
  assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_SEAL);
  close(fd);
}

/* common/procstat.c: our own stat (self and by pid agree), and a gone pid. */
static void proc_stat(void **state)
{
  (void)state;
  al_proc_stat a, b;
  assert_int_equal(al_proc_stat_read(0, &a), 0);
  assert_int_equal(al_proc_stat_read(getpid(), &b), 0);
  assert_true(a.state == 'R' || a.state == 'S');
  assert_true(a.start_time > 0);
  assert_true(a.start_time == b.start_time);
  assert_true(a.arg_start > 0 && a.arg_end > a.arg_start);
  assert_int_equal(al_proc_stat_read(0x3ffffff, &a), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(header_number), cmocka_unit_test(sizes_and_durations),
      cmocka_unit_test(utf8_cut),      cmocka_unit_test(base64_lines),
      cmocka_unit_test(sealed_memfd),  cmocka_unit_test(proc_stat)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
