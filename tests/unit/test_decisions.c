/* Unit tests for proxy/decisions.c (issue #19): the JSON string writer
 * against jansson's, and the batching of deferred lines (written by the
 * next line that is not deferred, by a flush, and at close; in order;
 * counted against the cap while they wait; a failed write counts them
 * dropped). Each batching test first shows the line is not in the file
 * yet (the control: the test can tell a missing line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/decisions.h"

/* ---- the JSON string writer ---- */

static char *quote(const char *s, size_t n)
{
  char *out = malloc(6 * n + 3);
  assert_non_null(out);
  size_t l = al_decisions_json_string(out, s, n);
  assert_int_equal(l, strlen(out));
  return out;
}

/* What jansson writes for the string s, or NULL when it refuses s. */
static char *jansson_quote(const char *s, size_t n)
{
  json_t *j = json_stringn(s, n);
  if (!j)
    return NULL;
  char *d = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(j);
  return d;
}

static void assert_same_as_jansson(const char *s, size_t n)
{
  char *mine = quote(s, n), *theirs = jansson_quote(s, n);
  assert_non_null(theirs);
  assert_string_equal(mine, theirs);
  free(mine);
  free(theirs);
}

static void test_json_string_as_jansson(void **state)
{
  (void)state;
  /* every single byte jansson accepts alone (not NUL: the fields are C
   * strings), and each next to ordinary text */
  for (int c = 1; c < 0x80; c++) {
    char s[4] = {'a', (char)c, 'b', 0};
    assert_same_as_jansson(s + 1, 1);
    assert_same_as_jansson(s, 3);
  }
  static const char *cases[] = {
      "",
      "plain.example:443",
      "CONNECT \"quoted\" \\back\\slash\\",
      "tab\tnl\ncr\rbs\bff\f\x01\x1f\x7f",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", /* 2, 3, 4 bytes, U+10FFFF */
      "\\x00...(300 bytes, sha256:0123456789ab)",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    assert_same_as_jansson(cases[i], strlen(cases[i]));
}

/* Bytes that are not well-formed UTF-8: jansson refuses the string (the
 * old code lost the field); ours writes each as \u00XX and the line stays
 * valid JSON with every byte kept. */
static void test_json_string_bad_utf8(void **state)
{
  (void)state;
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"\xff", "\"\\u00FF\""},
      {"a\xc3", "\"a\\u00C3\""},                                /* truncated */
      {"\xc0\xaf", "\"\\u00C0\\u00AF\""},                       /* overlong '/' */
      {"\xed\xa0\x80", "\"\\u00ED\\u00A0\\u0080\""},            /* a surrogate */
      {"\xf4\x90\x80\x80", "\"\\u00F4\\u0090\\u0080\\u0080\""}, /* past U+10FFFF */
      {"\xe2\x82", "\"\\u00E2\\u0082\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = strlen(cases[i].in);
    assert_null(jansson_quote(cases[i].in, n)); /* control: jansson would refuse it */
    char *mine = quote(cases[i].in, n);
    assert_string_equal(mine, cases[i].want);
    json_error_t e;
    json_t *back = json_loads(mine, JSON_DECODE_ANY, &e);
    assert_non_null(back);
    json_decref(back);
    free(mine);
  }
}

/* ---- batching ---- */

static const al_decisions_key KEY_CLOSE = {.event = "close", .run = "r", .host = "h", .port = 1};
static const al_decisions_key KEY_OPEN = {.event = "open", .run = "r", .host = "h", .port = 1};

/* The log's file so far, as a string (the caller frees). */
static char *contents(int fd)
{
  off_t end = lseek(fd, 0, SEEK_END);
  assert_true(end >= 0);
  char *s = calloc(1, (size_t)end + 1);
  assert_non_null(s);
  assert_int_equal(pread(fd, s, (size_t)end, 0), end);
  return s;
}

static int log_file(void)
{
  char path[] = "/tmp/airlock-test-decisions-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  return fd;
}

static void test_deferred_waits_for_flush(void **state)
{
  (void)state;
  int fd = log_file();
  al_decisions a;
  al_decisions_init(&a, fd, 0);
  al_decisions_write_line(&a, "{\"event\":\"close\",\"n\":1}", &KEY_CLOSE, true);
  assert_true(al_decisions_pending(&a));
  char *s = contents(fd);
  assert_string_equal(s, ""); /* control: deferred, not written yet */
  free(s);
  al_decisions_flush(&a);
  assert_false(al_decisions_pending(&a));
  s = contents(fd);
  assert_string_equal(s, "{\"event\":\"close\",\"n\":1}\n");
  free(s);
  assert_int_equal(a.lines, 1);
  al_decisions_close(&a, NULL);
  close(fd);
}

static void test_next_line_writes_deferred_in_order(void **state)
{
  (void)state;
  int fd = log_file();
  al_decisions a;
  al_decisions_init(&a, fd, 0);
  al_decisions_write_line(&a, "{\"event\":\"close\",\"n\":1}", &KEY_CLOSE, true);
  al_decisions_write_line(&a, "{\"event\":\"close\",\"n\":2}", &KEY_CLOSE, true);
  char *s = contents(fd);
  assert_string_equal(s, "");
  free(s);
  /* not deferred: written, after what waited, before the call returns */
  al_decisions_write_line(&a, "{\"event\":\"open\",\"n\":3}", &KEY_OPEN, false);
  assert_false(al_decisions_pending(&a));
  s = contents(fd);
  assert_string_equal(s, "{\"event\":\"close\",\"n\":1}\n{\"event\":\"close\",\"n\":2}\n"
                         "{\"event\":\"open\",\"n\":3}\n");
  free(s);
  al_decisions_close(&a, NULL);
  close(fd);
}

/* A line deferred just before the end is in the log, before the summary,
 * and counted in it. */
static void test_close_writes_deferred_before_summary(void **state)
{
  (void)state;
  int fd = log_file();
  al_decisions a;
  al_decisions_init(&a, fd, 0);
  al_decisions_write_line(&a, "{\"event\":\"close\",\"n\":1}", &KEY_CLOSE, true);
  char *s = contents(fd);
  assert_string_equal(s, "");
  free(s);
  al_decisions_close(&a, NULL);
  s = contents(fd);
  const char *nl = strchr(s, '\n');
  assert_non_null(nl);
  assert_memory_equal(s, "{\"event\":\"close\",\"n\":1}\n", (size_t)(nl - s) + 1);
  json_error_t e;
  json_t *sum = json_loads(nl + 1, 0, &e);
  assert_non_null(sum);
  assert_string_equal(json_string_value(json_object_get(sum, "event")), "summary");
  assert_int_equal(json_integer_value(json_object_get(sum, "lines_written")), 1);
  assert_int_equal(json_integer_value(json_object_get(sum, "lines_dropped")), 0);
  json_decref(sum);
  free(s);
  close(fd);
}

/* Deferred bytes count against the cap while they wait: with room for
 * 61 lines below the reserve, the next deferred ones are dropped and
 * counted, though nothing has been written yet. Offset mode (a
 * memfd, as airlock run and ticket use). */
static void test_cap_counts_what_waits(void **state)
{
  (void)state;
  int fd = memfd_create("decisions-test", MFD_CLOEXEC);
  assert_true(fd >= 0);
  al_decisions a;
  char line[101];
  memset(line, 'x', 100);
  memcpy(line, "{\"e\":\"", 6);
  memcpy(line + 97, "\"}", 3); /* 99 bytes + '\n' = 100 a line */
  line[99] = '\0';
  al_decisions_init(&a, fd, 8192); /* reserve 2048: lines up to 6144 */
  for (int i = 0; i < 61; i++)
    al_decisions_write_line(&a, line, &KEY_CLOSE, true);
  assert_int_equal(a.dropped, 0);
  assert_int_equal(a.buf_lines, 61);
  for (int i = 0; i < 3; i++)
    al_decisions_write_line(&a, line, &KEY_CLOSE, true);
  assert_int_equal(a.dropped, 3); /* 6100 waiting + 100 > 6144 */
  assert_int_equal(a.buf_lines, 61);
  assert_int_equal(lseek(fd, 0, SEEK_CUR), 0); /* still nothing written */
  al_decisions_flush(&a);
  assert_int_equal(lseek(fd, 0, SEEK_CUR), 6100);
  assert_int_equal(a.lines, 61);
  al_decisions_close(&a, NULL);
  close(fd);
}

/* A write that fails counts every line of the batch as dropped. */
static void test_failed_write_counts_batch(void **state)
{
  (void)state;
  int fd = log_file();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  FILE *ro = fopen(path, "r"); /* the same file, read-only: write(2) fails with EBADF */
  assert_non_null(ro);
  al_decisions a;
  al_decisions_init(&a, fileno(ro), 0);
  al_decisions_write_line(&a, "{\"event\":\"close\",\"n\":1}", &KEY_CLOSE, true);
  al_decisions_write_line(&a, "{\"event\":\"close\",\"n\":2}", &KEY_CLOSE, true);
  assert_int_equal(a.dropped, 0);
  al_decisions_flush(&a);
  assert_int_equal(a.dropped, 2);
  assert_int_equal(a.lines, 0);
  assert_false(al_decisions_pending(&a));
  al_decisions_close(&a, NULL);
  fclose(ro);
  close(fd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_string_as_jansson),
      cmocka_unit_test(test_json_string_bad_utf8),
      cmocka_unit_test(test_deferred_waits_for_flush),
      cmocka_unit_test(test_next_line_writes_deferred_in_order),
      cmocka_unit_test(test_close_writes_deferred_before_summary),
      cmocka_unit_test(test_cap_counts_what_waits),
      cmocka_unit_test(test_failed_write_counts_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
