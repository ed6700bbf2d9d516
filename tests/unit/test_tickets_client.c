/* The ticket seam's drivers end to end over HTTP (src/lib/tickets/
 * client.c; issue #31): airlock reads a Jira and a Linear ticket and posts
 * its comment against the test doubles on loopback
 * (tests/ticket-doubles/). Controls: the same read with a wrong token is
 * refused by the double (so the double checks the credential the driver
 * sends), another ticket is an error naming it, and the comment the
 * double recorded is the text airlock sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ticket-doubles/double.h"
#include "tickets/tickets.h"

static void jira_end_to_end(void **state)
{
  (void)state;
  unsigned port = 0;
  td *d = td_start(1, "PROJ-7", "Fix the tally", "Off by one.", "bot@acme.example",
                   "jira-test-token", &port);
  if (!d)
    skip(); /* no loopback listener here */
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
  al_tk_config c = {
      .kind = AL_TK_JIRA, .url = url, .user = "bot@acme.example", .timeout_ms = 10000};
  al_tk_target t;
  al_error e = {0};
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-7", "PROJ", &t, &e), 0);
  al_tk_ticket tk;
  assert_int_equal(al_tk_read(&c, &t, "jira-test-token", &tk, &e), 0);
  assert_string_equal(tk.title, "Fix the tally");
  assert_string_equal(tk.body, "Off by one.");
  assert_int_equal(tk.n_comments, 0);
  al_tk_ticket_free(&tk);
  char *link = NULL;
  assert_int_equal(al_tk_post_comment(&c, &t, "jira-test-token", "line one\nline two", &link, &e),
                   0);
  assert_non_null(strstr(link, "/comment/10001"));
  free(link);
  assert_int_equal(td_comments(d), 1);
  assert_string_equal(td_comment(d, 0), "line one\nline two");
  /* read back: the comment is there */
  assert_int_equal(al_tk_read(&c, &t, "jira-test-token", &tk, &e), 0);
  assert_int_equal(tk.n_comments, 1);
  assert_string_equal(tk.comments[0].body, "line one\nline two");
  al_tk_ticket_free(&tk);
  /* control: a wrong token is refused, and the error holds no token */
  size_t before = td_auth_refused(d);
  assert_int_equal(al_tk_read(&c, &t, "wrong-token", &tk, &e), -1);
  assert_int_equal(td_auth_refused(d), before + 1);
  assert_non_null(strstr(e.msg, "HTTP 401"));
  assert_null(strstr(e.msg, "wrong-token"));
  /* another ticket: the double has none, the driver says which */
  al_tk_target other;
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-8", "PROJ", &other, &e), 0);
  assert_int_equal(al_tk_read(&c, &other, "jira-test-token", &tk, &e), -1);
  assert_non_null(strstr(e.msg, "PROJ-8"));
  assert_non_null(strstr(e.msg, "404"));
  td_stop(d);
}

static void linear_end_to_end(void **state)
{
  (void)state;
  unsigned port = 0;
  td *d = td_start(2, "ENG-42", "Tally", "Off by **one**", NULL, "lin_api_testkey", &port);
  if (!d)
    skip();
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
  al_tk_config c = {.kind = AL_TK_LINEAR, .url = url, .timeout_ms = 10000};
  al_tk_target t;
  al_error e = {0};
  assert_int_equal(al_tk_target_parse(AL_TK_LINEAR, "ENG-42", "ENG", &t, &e), 0);
  al_tk_ticket tk;
  assert_int_equal(al_tk_read(&c, &t, "lin_api_testkey", &tk, &e), 0);
  assert_string_equal(tk.title, "Tally");
  assert_string_equal(tk.body, "Off by **one**");
  al_tk_ticket_free(&tk);
  char *link = NULL;
  assert_int_equal(al_tk_post_comment(&c, &t, "lin_api_testkey", "done: see PR", &link, &e), 0);
  assert_non_null(strstr(link, "comment-c2"));
  free(link);
  assert_int_equal(td_comments(d), 1);
  assert_string_equal(td_comment(d, 0), "done: see PR");
  size_t before = td_auth_refused(d);
  assert_int_equal(al_tk_read(&c, &t, "lin_api_wrong", &tk, &e), -1);
  assert_int_equal(td_auth_refused(d), before + 1);
  al_tk_target other;
  assert_int_equal(al_tk_target_parse(AL_TK_LINEAR, "ENG-41", "ENG", &other, &e), 0);
  assert_int_equal(al_tk_read(&c, &other, "lin_api_testkey", &tk, &e), -1);
  assert_non_null(strstr(e.msg, "Entity not found"));
  assert_int_equal(al_tk_post_comment(&c, &other, "lin_api_testkey", "x", NULL, &e), -1);
  assert_int_equal(td_comments(d), 1);
  /* the kind of the config and of the target must agree */
  c.kind = AL_TK_JIRA;
  assert_int_equal(al_tk_read(&c, &t, "lin_api_testkey", &tk, &e), -1);
  td_stop(d);
}

static void url_rules(void **state)
{
  (void)state;
  al_tk_target t;
  al_error e = {0};
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-7", NULL, &t, &e), 0);
  al_tk_ticket tk;
  /* http only to loopback: a plain-HTTP vendor URL is refused before any I/O */
  al_tk_config c = {.kind = AL_TK_JIRA, .url = "http://acme.atlassian.net"};
  assert_int_equal(al_tk_read(&c, &t, "x", &tk, &e), -1);
  assert_non_null(strstr(e.msg, "refused"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jira_end_to_end),
      cmocka_unit_test(linear_end_to_end),
      cmocka_unit_test(url_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
