/* Unit tests for review/notes.c: escaping (controls, bidi, a real
 * backslash), code spans around backticks, names that need a note, links
 * and images, and notes whose Markdown a hostile name cannot restructure
 * (positive control: the raw name would have). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "review/notes.h"

static void test_escape(void **state)
{
  (void)state;
  char *e = al_review_escape("a\nb\x1b[31mc\xe2\x80\xae"
                             "d\\x1b",
                             0);
  assert_string_equal(e, "a\\x0ab\\x1b[31mc\\u202ed\\\\x1b");
  free(e);
  e = al_review_escape("abcdefghij", 4);
  assert_string_equal(e, "abcd...");
  free(e);
  e = al_review_escape("caf\xc3\xa9", 0); /* ordinary UTF-8 stays */
  assert_string_equal(e, "caf\xc3\xa9");
  free(e);
}

static void test_code_span(void **state)
{
  (void)state;
  char *c = al_review_md_code("plain");
  assert_string_equal(c, "`plain`");
  free(c);
  c = al_review_md_code("a`b``c");
  assert_string_equal(c, "```a`b``c```");
  free(c);
  c = al_review_md_code("`edge");
  assert_string_equal(c, "`` `edge ``");
  free(c);
}

static void test_name_issue(void **state)
{
  (void)state;
  assert_null(al_review_name_issue("tally/stats.py"));
  assert_non_null(strstr(al_review_name_issue("a\nb"), "control"));
  assert_non_null(strstr(al_review_name_issue("x\xe2\x80\xae"
                                              "exe.txt"),
                         "bidirectional"));
  assert_non_null(strstr(al_review_name_issue("x\xe2\x80\x8b.txt"), "invisible"));
  assert_non_null(strstr(al_review_name_issue("x\xff.txt"), "not UTF-8"));
  assert_non_null(strstr(al_review_name_issue("dir /x"), "spaces"));
}

static void test_links(void **state)
{
  (void)state;
  json_t *l = json_array();
  size_t n =
      al_review_find_links("see https://a.example/x and ![i](https://b.example/p.png) "
                           "<img alt=x src=\"//c.example/t.gif\"> <a href=\"http://d.example\">",
                           "the pull request body", l);
  assert_int_equal(n, 4);
  assert_false(json_is_true(json_object_get(json_array_get(l, 0), "image")));
  assert_true(json_is_true(json_object_get(json_array_get(l, 1), "image")));
  assert_true(json_is_true(json_object_get(json_array_get(l, 2), "image")));
  assert_false(json_is_true(json_object_get(json_array_get(l, 3), "image")));
  json_decref(l);
  l = json_array();
  assert_int_equal(al_review_find_links("no links here, just text", "x", l), 0);
  json_decref(l);
}

/* The lines of md that start a block the notes did not write. */
static int forged_lines(const char *md)
{
  int bad = 0;
  for (const char *p = md; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if ((n >= 3 && strncmp(p, "## ", 3) == 0 && strncmp(p, "## airlock review notes", 23)) ||
        (n >= 1 && p[0] == '|') || (p != md && strncmp(p, "<!--", 4) == 0))
      bad++;
    p += n + (e ? 1 : 0);
  }
  return bad;
}

static void test_markdown(void **state)
{
  (void)state;
  const char *hostile = "x\n## forged heading\n| a | b |\n<!-- hidden";
  /* positive control: the raw name at a line start would forge blocks */
  char raw[200];
  snprintf(raw, sizeof raw, "- %s\n", hostile);
  assert_true(forged_lines(raw) >= 3);
  json_t *rec = json_pack("{s:s, s:{s:[{s:s, s:s, s:s, s:s}], s:[], s:[], s:[], s:[], s:{}, s:[]}}",
                          "run_id", "abcd1234", "review", "runs_outside_sandbox", "file", hostile,
                          "family", "ci", "why", "GitHub Actions workflow", "match", "path",
                          "kinds", "secrets", "links", "blocked", "read", "could_not_read");
  assert_non_null(rec);
  char *md = al_review_notes_markdown(rec, "00ff");
  assert_int_equal(forged_lines(md), 0);
  assert_non_null(strstr(md, "<!-- airlock-review-notes run=abcd1234 -->"));
  assert_non_null(strstr(md, "run record SHA-256 `00ff`"));
  assert_non_null(strstr(md, "`x\\x0a## forged heading\\x0a| a | b |\\x0a<!-- hidden`"));
  free(md);
  json_decref(rec);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape),     cmocka_unit_test(test_code_span),
      cmocka_unit_test(test_name_issue), cmocka_unit_test(test_links),
      cmocka_unit_test(test_markdown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
