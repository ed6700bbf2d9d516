/* Unit tests for common/secretfile.c, the one reader of a secret kept in a
 * file: each rule has a control (the same file made right is read) and
 * the refusal, whose message names the setting and never the value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/secmem.h"
#include "common/secretfile.h"

static char dir[64];

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/al-secretfile.XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

static const char *put(const char *name, const char *bytes, size_t n, mode_t mode)
{
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  fclose(f);
  assert_int_equal(chmod(path, mode), 0);
  return path;
}

static int read_tok(const char *path, size_t max, char **out, al_error *e)
{
  return al_secret_file_read(path, "test.token_file", max, al_secret_byte_printable,
                             "one token of printable ASCII", out, NULL, e);
}

static void test_token_read_and_trimmed(void **state)
{
  (void)state;
  char *v = NULL;
  size_t n = 0;
  al_error e = {0};
  const char *p = put("t", " tok-123 \r\n", 11, 0600);
  assert_int_equal(
      al_secret_file_read(p, "test.token_file", 64, al_secret_byte_printable, "x", &v, &n, &e), 0);
  assert_string_equal(v, "tok-123");
  assert_int_equal(n, 7);
  al_secret_free(v);
  p = put("t4", "tok", 3, 0400); /* 0400 is stricter than 0600 */
  assert_int_equal(read_tok(p, 64, &v, &e), 0);
  al_secret_free(v);
}

static void test_mode_refused(void **state)
{
  (void)state;
  char dummy = 0;
  char *v = &dummy; /* a failed read leaves NULL here */
  al_error e = {0};
  const char *p = put("m", "tok\n", 4, 0644);
  assert_int_equal(read_tok(p, 64, &v, &e), -1);
  assert_null(v);
  assert_int_equal(e.code, EPERM);
  assert_non_null(strstr(e.msg, "test.token_file `"));
  assert_non_null(strstr(e.msg, "mode 0644: readable or writable by group or others"));
  assert_non_null(strstr(e.msg, "chmod 600"));
  assert_null(strstr(e.msg, "tok\n"));
  p = put("m2", "tok\n", 4, 0620); /* group write alone is refused too */
  assert_int_equal(read_tok(p, 64, &v, &e), -1);
  assert_int_equal(e.code, EPERM);
}

static void test_owner_refused(void **state)
{
  (void)state;
  if (geteuid() != 0) {
    skip(); /* chown to another uid needs root */
  }
  char *v = NULL;
  al_error e = {0};
  const char *p = put("o", "tok\n", 4, 0600);
  assert_int_equal(read_tok(p, 64, &v, &e), 0); /* control */
  al_secret_free(v);
  assert_int_equal(chown(p, 65534, 65534), 0);
  assert_int_equal(read_tok(p, 64, &v, &e), -1);
  assert_int_equal(e.code, EPERM);
  assert_non_null(strstr(e.msg, "owned by uid 65534, not by this user"));
}

static void test_not_regular_or_symlink(void **state)
{
  (void)state;
  char *v = NULL;
  al_error e = {0};
  const char *p = put("real", "tok\n", 4, 0600);
  char link[128], sub[128];
  snprintf(link, sizeof link, "%s/link", dir);
  assert_int_equal(symlink(p, link), 0);
  assert_int_equal(read_tok(link, 64, &v, &e), -1);
  assert_int_equal(e.code, ELOOP); /* O_NOFOLLOW */
  assert_non_null(strstr(e.msg, "test.token_file `"));
  snprintf(sub, sizeof sub, "%s/d", dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  assert_int_equal(read_tok(sub, 64, &v, &e), -1);
  assert_non_null(strstr(e.msg, "not a regular file"));
  snprintf(sub, sizeof sub, "%s/absent", dir);
  assert_int_equal(read_tok(sub, 64, &v, &e), -1);
  assert_int_equal(e.code, ENOENT);
}

static void test_size_and_shape(void **state)
{
  (void)state;
  char *v = NULL;
  al_error e = {0};
  const char *p = put("eight", "12345678", 8, 0600);
  assert_int_equal(read_tok(p, 8, &v, &e), 0); /* control: exactly max */
  al_secret_free(v);
  p = put("nine", "123456789", 9, 0600);
  assert_int_equal(read_tok(p, 8, &v, &e), -1);
  assert_int_equal(e.code, EINVAL);
  assert_non_null(strstr(e.msg, "expected one token of printable ASCII, 1 to 8 bytes"));
  assert_null(strstr(e.msg, "12345678"));
  p = put("empty", "\n", 1, 0600);
  assert_int_equal(read_tok(p, 8, &v, &e), -1);
  p = put("space", "to k\n", 5, 0600);
  assert_int_equal(read_tok(p, 8, &v, &e), -1);
  assert_null(v);
}

static void test_bytes_keep_all_but_one_line_end(void **state)
{
  (void)state;
  char *v = NULL;
  size_t n = 0;
  al_error e = {0};
  const char *p = put("b", " a b\t\r\n", 7, 0600);
  assert_int_equal(al_secret_file_read(p, "webhook.secret_file", 16, NULL, NULL, &v, &n, &e), 0);
  assert_int_equal(n, 5);
  assert_memory_equal(v, " a b\t", 5);
  al_secret_free(v);
  p = put("b2", "\n\n", 2, 0600);
  assert_int_equal(al_secret_file_read(p, "webhook.secret_file", 16, NULL, NULL, &v, &n, &e), 0);
  assert_int_equal(n, 1); /* only one line end is dropped */
  al_secret_free(v);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_token_read_and_trimmed),
      cmocka_unit_test(test_mode_refused),
      cmocka_unit_test(test_owner_refused),
      cmocka_unit_test(test_not_regular_or_symlink),
      cmocka_unit_test(test_size_and_shape),
      cmocka_unit_test(test_bytes_keep_all_but_one_line_end),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
