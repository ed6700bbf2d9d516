/* Unit tests for the ticket seam (src/lib/tickets/, issue #31): a ticket's
 * name per vendor, ADF flattened and built, the Jira and Linear answers
 * read (shaped from the vendors' documented examples: Jira Cloud REST v3
 * "Get issue" and "Get comments", Linear's `issue` query), and the
 * policy's `ticket:` block with an error naming the field for each rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "tickets/adf.h"
#include "tickets/tickets.h"

static void target_parse(void **state)
{
  (void)state;
  al_tk_target t;
  al_error e = {0};
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-123", "PROJ", &t, &e), 0);
  assert_string_equal(t.key, "PROJ-123");
  assert_string_equal(t.project, "PROJ");
  assert_int_equal(t.number, 123);
  assert_int_equal(al_tk_target_parse(AL_TK_LINEAR, "ENG-42", NULL, &t, &e), 0);
  assert_string_equal(t.project, "ENG");
  assert_int_equal(al_tk_target_parse(AL_TK_GITHUB, "acme/tally#7", NULL, &t, &e), 0);
  assert_string_equal(t.repo, "acme/tally");
  assert_int_equal(t.number, 7);

  /* the key's project is the one project */
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "OTHER-1", "PROJ", &t, &e), -1);
  assert_non_null(strstr(e.msg, "ticket.project"));
  static const char *const bad[] = {
      "proj-1",  "PROJ-01",          "PROJ-0",  "PROJ-",   "-1",      "PROJ1",           "P-1",
      "PROJ-1a", "PROJ-99999999999", "PR OJ-1", "1PROJ-2", "PROJ--1", "PROJ-2147483648", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e.msg[0] = '\0';
    assert_int_equal(al_tk_target_parse(AL_TK_JIRA, bad[i], NULL, &t, &e), -1);
    assert_non_null(strstr(e.msg, "ticket `"));
  }
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-2147483647", NULL, &t, &e), 0);
  assert_int_equal(al_tk_target_parse(AL_TK_GITHUB, "acme/tally", NULL, &t, &e), -1);
  assert_int_equal(al_tk_target_parse(AL_TK_GITHUB, "a/b/c#1", NULL, &t, &e), -1);
  assert_int_equal(al_tk_target_parse(AL_TK_GITHUB, "../x#1", NULL, &t, &e), -1);
}

static json_t *load(const char *s)
{
  json_error_t je;
  json_t *j = json_loads(s, 0, &je);
  assert_non_null(j);
  return j;
}

static void adf_flatten(void **state)
{
  (void)state;
  /* Atlassian's example shapes: paragraph with marks, a link, a mention */
  json_t *doc = load(
      "{\"version\":1,\"type\":\"doc\",\"content\":["
      "{\"type\":\"paragraph\",\"content\":[{\"type\":\"text\",\"text\":\"Hello \"},"
      "{\"type\":\"text\",\"text\":\"world\",\"marks\":[{\"type\":\"link\",\"attrs\":{\"href\":"
      "\"https://exfil.example/x\"}}]},{\"type\":\"hardBreak\"},{\"type\":\"mention\",\"attrs\":"
      "{\"id\":\"abc\",\"text\":\"@Admin\"}}]},"
      "{\"type\":\"bulletList\",\"content\":[{\"type\":\"listItem\",\"content\":[{\"type\":"
      "\"paragraph\",\"content\":[{\"type\":\"text\",\"text\":\"one\"}]}]}]}]}");
  char *text = NULL;
  al_error e = {0};
  assert_int_equal(al_adf_to_text(doc, &text, &e), 0);
  assert_string_equal(text, "Hello world\n@Admin\n\n- one");
  assert_null(strstr(text, "exfil")); /* a link mark's target is dropped */
  free(text);
  json_decref(doc);

  assert_int_equal(al_adf_to_text(json_null(), &text, &e), 0);
  assert_string_equal(text, "");
  free(text);

  static const char *const bad[] = {
      "{\"type\":\"paragraph\"}",
      "[]",
      "{\"type\":\"doc\",\"content\":{}}",
      "{\"type\":\"doc\",\"content\":[1]}",
      "{\"type\":\"doc\",\"content\":[{\"type\":7}]}",
      "{\"type\":\"doc\",\"content\":[{\"type\":\"text\",\"text\":1}]}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = load(bad[i]);
    text = NULL;
    assert_int_equal(al_adf_to_text(j, &text, &e), -1);
    assert_null(text);
    assert_non_null(strstr(e.msg, "ADF"));
    json_decref(j);
  }
  /* depth: 40 nested blockquotes */
  char deep[4096] = "{\"type\":\"doc\",\"content\":[";
  for (int i = 0; i < 40; i++)
    strcat(deep, "{\"type\":\"blockquote\",\"content\":[");
  for (int i = 0; i < 40; i++)
    strcat(deep, "]}");
  strcat(deep, "]}");
  json_t *j = load(deep);
  assert_int_equal(al_adf_to_text(j, &text, &e), -1);
  assert_non_null(strstr(e.msg, "deeper"));
  json_decref(j);
}

static void adf_build(void **state)
{
  (void)state;
  json_t *d = al_adf_from_text("line one\nline two\n\nsecond para");
  char *s = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
  assert_string_equal(
      s, "{\"content\":[{\"content\":[{\"text\":\"line one\",\"type\":\"text\"},{\"type\":"
         "\"hardBreak\"},{\"text\":\"line two\",\"type\":\"text\"}],\"type\":\"paragraph\"},"
         "{\"content\":[{\"text\":\"second para\",\"type\":\"text\"}],\"type\":\"paragraph\"}],"
         "\"type\":\"doc\",\"version\":1}");
  char *back = NULL;
  al_error e = {0};
  assert_int_equal(al_adf_to_text(d, &back, &e), 0);
  assert_string_equal(back, "line one\nline two\n\nsecond para");
  free(back);
  free(s);
  json_decref(d);
}

static const char jira_issue[] =
    "{\"expand\":\"renderedFields\",\"id\":\"10002\",\"self\":\"https://acme.atlassian.net/rest/"
    "api/3/issue/10002\",\"key\":\"PROJ-7\",\"fields\":{\"summary\":\"Fix the tally\","
    "\"project\":{\"id\":\"10000\",\"key\":\"PROJ\",\"name\":\"Project\"},\"description\":"
    "{\"type\":\"doc\",\"version\":1,\"content\":[{\"type\":\"paragraph\",\"content\":[{\"type\":"
    "\"text\",\"text\":\"The sum is off by one.\"}]}]}}}";

static void jira_read(void **state)
{
  (void)state;
  al_tk_target want;
  al_error e = {0};
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-7", "PROJ", &want, &e), 0);
  al_tk_ticket t = {0};
  assert_int_equal(al_tk_jira_read_issue(jira_issue, strlen(jira_issue), &want, &t, &e), 0);
  assert_string_equal(t.title, "Fix the tally");
  assert_string_equal(t.body, "The sum is off by one.");
  assert_string_equal(t.id, "10002");
  static const char page[] =
      "{\"startAt\":0,\"maxResults\":1,\"total\":2,\"comments\":[{\"id\":\"10000\",\"author\":"
      "{\"accountId\":\"5b10a\",\"displayName\":\"Mia Krystof\"},\"body\":{\"type\":\"doc\","
      "\"version\":1,\"content\":[{\"type\":\"paragraph\",\"content\":[{\"type\":\"text\","
      "\"text\":\"Also the average.\"}]}]}}]}";
  bool more = false;
  assert_int_equal(al_tk_jira_read_comments(page, strlen(page), &t, &more, &e), 0);
  assert_true(more);
  assert_int_equal(t.n_comments, 1);
  assert_string_equal(t.comments[0].author, "Mia Krystof");
  assert_string_equal(t.comments[0].body, "Also the average.");
  al_tk_ticket_free(&t);

  /* the answer names another issue, another project, lacks a field */
  al_tk_target other;
  assert_int_equal(al_tk_target_parse(AL_TK_JIRA, "PROJ-8", "PROJ", &other, &e), 0);
  assert_int_equal(al_tk_jira_read_issue(jira_issue, strlen(jira_issue), &other, &t, &e), -1);
  assert_non_null(strstr(e.msg, "asked for PROJ-8"));
  assert_int_equal(al_tk_jira_read_issue("{}", 2, &want, &t, &e), -1);
  assert_non_null(strstr(e.msg, "`id`"));
  assert_int_equal(al_tk_jira_read_issue("{\"id\":1,\"id\":2}", 15, &want, &t, &e), -1);
  assert_non_null(strstr(e.msg, "not JSON"));
  assert_int_equal(al_tk_jira_read_comments("{\"comments\":{}}", 15, &t, &more, &e), -1);

  json_t *b = al_tk_jira_comment_body("hi");
  char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
  assert_non_null(strstr(s, "{\"body\":{\"content\":[{\"content\":[{\"text\":\"hi\""));
  free(s);
  json_decref(b);
}

static void linear_read(void **state)
{
  (void)state;
  al_tk_target want;
  al_error e = {0};
  assert_int_equal(al_tk_target_parse(AL_TK_LINEAR, "ENG-42", "ENG", &want, &e), 0);
  static const char ans[] =
      "{\"data\":{\"issue\":{\"id\":\"8f1c2d6e-1111-4a2b-9c3d-0123456789ab\",\"identifier\":"
      "\"ENG-42\",\"title\":\"Tally\",\"description\":\"Off by **one**\",\"url\":\"https://"
      "linear.app/acme/issue/ENG-42/tally\",\"team\":{\"key\":\"ENG\"},\"comments\":{\"nodes\":"
      "[{\"id\":\"c1\",\"body\":\"+1\",\"user\":{\"name\":\"Ann\"}}]}}}}";
  al_tk_ticket t = {0};
  assert_int_equal(al_tk_linear_read_issue(ans, strlen(ans), &want, &t, &e), 0);
  assert_string_equal(t.body, "Off by **one**");
  assert_int_equal(t.n_comments, 1);
  assert_string_equal(t.comments[0].author, "Ann");
  al_tk_ticket_free(&t);
  static const char err[] = "{\"errors\":[{\"message\":\"Entity not found\\u001b[31m\"}]}";
  assert_int_equal(al_tk_linear_read_issue(err, strlen(err), &want, &t, &e), -1);
  assert_non_null(strstr(e.msg, "Entity not found?[31m"));
  al_tk_target other;
  assert_int_equal(al_tk_target_parse(AL_TK_LINEAR, "ENG-41", "ENG", &other, &e), 0);
  assert_int_equal(al_tk_linear_read_issue(ans, strlen(ans), &other, &t, &e), -1);

  char *url = NULL;
  static const char ok[] =
      "{\"data\":{\"commentCreate\":{\"success\":true,\"comment\":{\"id\":\"c2\",\"url\":\"u\"}}}}";
  assert_int_equal(al_tk_linear_read_comment(ok, strlen(ok), &url, &e), 0);
  assert_string_equal(url, "u");
  free(url);
  assert_int_equal(al_tk_linear_read_comment("{\"data\":{}}", 11, &url, &e), -1);

  json_t *rq = al_tk_linear_comment_request("ENG-42", "text");
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(json_object_get(rq, "variables"), "input"), "issueId")),
                      "ENG-42");
  json_decref(rq);
}

static int policy_of(const char *yaml, al_policy **p, al_error *e)
{
  return al_policy_load_buffer("t.yaml", yaml, strlen(yaml), p, e);
}

static void policy_ticket(void **state)
{
  (void)state;
  al_policy *p = NULL;
  al_error e = {0};
  assert_int_equal(policy_of("version: 1\nticket: {kind: jira, url: 'https://acme.atlassian.net/',"
                             " project: PROJ}\n",
                             &p, &e),
                   0);
  assert_true(p->ticket.present);
  assert_int_equal(p->ticket.kind, AL_TK_JIRA);
  assert_string_equal(p->ticket.url, "https://acme.atlassian.net");
  al_policy_free(p);
  assert_int_equal(policy_of("version: 1\nticket: {kind: linear, team: ENG}\n", &p, &e), 0);
  assert_string_equal(p->ticket.url, "https://api.linear.app");
  al_policy_free(p);
  assert_int_equal(policy_of("version: 1\n", &p, &e), 0);
  assert_false(p->ticket.present);
  al_policy_free(p);

  static const struct {
    const char *yaml, *msg;
  } bad[] = {
      {"ticket: {kind: trello}", "ticket.kind: must be one of"},
      {"ticket: {url: 'https://x.example'}", "`ticket.kind` is required"},
      {"ticket: {kind: jira, project: PROJ}", "`ticket.url` is required for kind jira"},
      {"ticket: {kind: jira, url: 'https://a.example'}", "`ticket.project` is required"},
      {"ticket: {kind: jira, url: 'http://a.example', project: PROJ}", "ticket.url"},
      {"ticket: {kind: jira, url: 'https://a.example', project: proj}", "ticket.project: `proj`"},
      {"ticket: {kind: jira, url: 'https://a.example', project: PROJ, team: ENG}",
       "`ticket.team` has no meaning for kind jira"},
      {"ticket: {kind: linear, team: ENG, user: a@b.example}", "`ticket.user` has no meaning"},
      {"ticket: {kind: linear, team: ENG, colour: red}", "ticket.colour: unknown key"},
      {"ticket: {kind: github, project: PROJ}", "has no meaning for kind github"},
      {"ticket: {kind: jira, url: 'https://a.example', project: PROJ, user: nobody}",
       "ticket.user: `nobody` is not an e-mail"},
      {"ticket: jira", "ticket"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char y[512];
    snprintf(y, sizeof y, "version: 1\n%s\n", bad[i].yaml);
    e.msg[0] = '\0';
    p = NULL;
    assert_int_equal(policy_of(y, &p, &e), -1);
    if (!strstr(e.msg, bad[i].msg))
      fail_msg("%s: got `%s`, want `%s`", bad[i].yaml, e.msg, bad[i].msg);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(target_parse), cmocka_unit_test(adf_flatten),
      cmocka_unit_test(adf_build),    cmocka_unit_test(jira_read),
      cmocka_unit_test(linear_read),  cmocka_unit_test(policy_ticket),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
