/* CODEOWNERS scanning (src/lib/forge/codeowners.c): which rules name the bot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "forge/codeowners.h"

static const char *const bot[] = {"@airlock-bot[bot]", "@airlock-bot"};

static size_t scan(const char *text, unsigned *lines, size_t max)
{
  return al_codeowners_lines_owned_by(text, strlen(text), bot, 2, lines, max);
}

static void test_owner_found(void **state)
{
  (void)state;
  unsigned l[4];
  const char *t = "# owners\n*  @alice\n/src/ @bob @AIRLOCK-BOT[bot]\ndocs/ @airlock-bot\n";
  assert_int_equal(scan(t, l, 4), 2);
  assert_int_equal(l[0], 3);
  assert_int_equal(l[1], 4);
}

static void test_not_owner(void **state)
{
  (void)state;
  unsigned l[4];
  /* the pattern itself, comments, longer names and teams are not the bot */
  const char *t = "@airlock-bot[bot] @alice\n* @alice # @airlock-bot[bot]\n"
                  "#* @airlock-bot[bot]\n* @airlock-bot[bot]x @acme/airlock-bot\n"
                  "\\#x @alice\n";
  assert_int_equal(scan(t, l, 4), 0);
}

static void test_crlf_tabs_and_nul(void **state)
{
  (void)state;
  unsigned l[4];
  const char t[] = "*\t@alice\r\n/a/\t@airlock-bot[bot]\r\n\0/b/ @airlock-bot[bot]";
  assert_int_equal(al_codeowners_lines_owned_by(t, sizeof t - 1, bot, 2, l, 4), 2);
  assert_int_equal(l[0], 2);
  assert_int_equal(l[1], 4); /* a NUL ends a line like \n */
}

static void test_max_respected(void **state)
{
  (void)state;
  unsigned l[1] = {0};
  assert_int_equal(scan("a @airlock-bot\nb @airlock-bot\nc @airlock-bot\n", l, 1), 3);
  assert_int_equal(l[0], 1);
  assert_int_equal(scan("", l, 1), 0);
  assert_int_equal(scan("\\", l, 1), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_owner_found),
      cmocka_unit_test(test_not_owner),
      cmocka_unit_test(test_crlf_tabs_and_nul),
      cmocka_unit_test(test_max_respected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
