/* Unit tests for the gateway's ticket-host rules (gateway/rules_jira.c,
 * rules_linear.c; issue #31 item 3). Each refusal has its control: the
 * same request on the run's own ticket (or with the comment rule on) is
 * allowed, so the matcher is seen to tell them apart, not to refuse
 * everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "gateway/rules_tickets.h"

static al_gw_tk_rules jira(unsigned comments)
{
  al_gw_tk_rules r;
  al_error e = {0};
  assert_int_equal(al_gw_tk_rules_init(&r, 1, "PROJ-7", "10002", "", comments, &e), 0);
  return r;
}

/* the reason for METHOD PATH[?QUERY], or the rule's name when allowed */
static const char *jm(const al_gw_tk_rules *r, const char *method, const char *path,
                      const char *query)
{
  static al_gw_qparams qp;
  if (query)
    (void)al_gw_query_decode(query, strlen(query), &qp);
  const char *reason = NULL, *param = NULL;
  const al_gw_rule *rule =
      al_gw_jira_match(r, method, strlen(method), path, query ? &qp : NULL, &reason, &param);
  assert_non_null(reason);
  if (rule)
    assert_string_equal(rule->name, reason);
  return reason;
}

static void jira_routes(void **state)
{
  (void)state;
  al_gw_tk_rules r = jira(1), off = jira(0);
  static const struct {
    const char *method, *path, *query, *want;
  } cases[] = {
      /* allowed: the ticket, by key and by id, and its comments */
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary,description,project", "jira-issue"},
      {"GET", "/rest/api/3/issue/10002", "fields=summary,description", "jira-issue"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=Summary,status&expand=renderedFields",
       "jira-issue"},
      {"GET", "/rest/api/3/issue/PROJ-7/comment", "startAt=0&maxResults=50", "jira-issue-comments"},
      {"GET", "/rest/api/3/issue/PROJ-7/comment", "expand=renderedBody", "jira-issue-comments"},
      /* the ticket's read, but what it names is other issues, or every
       * field (issuelinks, subtasks, parent), or a write (updateHistory) */
      {"GET", "/rest/api/3/issue/PROJ-7", NULL, "query-fields-required"},
      {"GET", "/rest/api/3/issue/PROJ-7", "expand=renderedFields", "query-fields-required"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary,issuelinks", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=subtasks", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=parent", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=*all", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary,", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary&expand=changelog", "query-value-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary&updateHistory=true",
       "query-param-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary&fieldsByKeys=true",
       "query-param-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=summary&properties=*all", "query-param-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7/comment", "expand=properties", "query-value-refused"},
      /* one comment by id: not served (nothing but the vendor ties the id
       * to the ticket; the list holds every comment) */
      {"GET", "/rest/api/3/issue/PROJ-7/comment/10000", NULL, "no-rule"},
      {"POST", "/rest/api/3/issue/PROJ-7/comment", NULL, "jira-comment-create"},
      /* another ticket: read or comment */
      {"GET", "/rest/api/3/issue/PROJ-8", NULL, "other-ticket"},
      {"GET", "/rest/api/3/issue/proj-7", NULL, "other-ticket"},
      {"GET", "/rest/api/3/issue/10003/comment", NULL, "other-ticket"},
      {"POST", "/rest/api/3/issue/PROJ-8/comment", NULL, "other-ticket"},
      {"POST", "/rest/api/3/issue/OTHER-1/comment", NULL, "other-ticket"},
      /* an edit, a transition, a comment's edit or deletion, a delete */
      {"PUT", "/rest/api/3/issue/PROJ-7", NULL, "write-refused"},
      {"POST", "/rest/api/3/issue/PROJ-7/transitions", NULL, "write-refused"},
      {"PUT", "/rest/api/3/issue/PROJ-7/comment/10000", NULL, "write-refused"},
      {"DELETE", "/rest/api/3/issue/PROJ-7/comment/10000", NULL, "write-refused"},
      {"DELETE", "/rest/api/3/issue/PROJ-7", NULL, "write-refused"},
      {"POST", "/rest/api/3/issue", NULL, "write-refused"},
      {"POST", "/rest/api/3/issue/PROJ-7/attachments", NULL, "write-refused"},
      /* everything else */
      {"GET", "/rest/api/3/search", "jql=project=PROJ", "no-rule"},
      {"GET", "/rest/api/2/issue/PROJ-7", NULL, "no-rule"},
      {"GET", "/rest/api/3/issue/PROJ-7/transitions", NULL, "no-rule"},
      {"GET", "/rest/api/3/myself", NULL, "no-rule"},
      {"GET", "/rest/api/3/issue/PROJ-7", "jql=x", "query-param-refused"},
      {"GET", "/rest/api/3/issue/PROJ-7", "fields=a&FIELDS=b", "query-param-duplicate"},
      {"POST", "/rest/api/3/issue/PROJ-7/comment", "expand=x", "query-param-refused"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *got = jm(&r, cases[i].method, cases[i].path, cases[i].query);
    if (strcmp(got, cases[i].want) != 0)
      fail_msg("%s %s: got %s, want %s", cases[i].method, cases[i].path, got, cases[i].want);
  }
  /* the comment rule off (credentials.agent_comments 0): refused */
  assert_string_equal(jm(&off, "POST", "/rest/api/3/issue/PROJ-7/comment", NULL), "write-refused");
  /* a prefix (OAuth's /ex/jira/CLOUDID) is required when set */
  al_gw_tk_rules p;
  al_error e = {0};
  assert_int_equal(al_gw_tk_rules_init(&p, 1, "PROJ-7", "", "/ex/jira/abc-1", 1, &e), 0);
  assert_string_equal(jm(&p, "GET", "/ex/jira/abc-1/rest/api/3/issue/PROJ-7", "fields=summary"),
                      "jira-issue");
  assert_string_equal(jm(&p, "GET", "/rest/api/3/issue/PROJ-7", NULL), "no-rule");
  assert_int_equal(al_gw_tk_rules_init(&p, 1, "proj-7", "", "", 1, &e), -1);
  assert_int_equal(al_gw_tk_rules_init(&p, 1, "PROJ-7", "1/2", "", 1, &e), -1);
  assert_int_equal(al_gw_tk_rules_init(&p, 1, "PROJ-7", "", "/a/../b", 1, &e), -1);
  assert_int_equal(al_gw_tk_rules_init(&p, 3, "PROJ-7", "", "", 1, &e), -1);
}

static void jira_comment(void **state)
{
  (void)state;
  static const char in[] =
      "{\"body\":{\"type\":\"doc\",\"version\":1,\"content\":[{\"type\":\"paragraph\",\"content\":"
      "[{\"type\":\"mention\",\"attrs\":{\"id\":\"557058:x\",\"text\":\"@admin\"}},{\"type\":"
      "\"text\",\"text\":\" see \"},{\"type\":\"text\",\"text\":\"here\",\"marks\":[{\"type\":"
      "\"link\",\"attrs\":{\"href\":\"https://exfil.example/?d=SECRET\"}}]},{\"type\":\"text\","
      "\"text\":\" https://exfil.example/x\"}]}]}}";
  char *out = NULL, bad[65];
  size_t ol = 0;
  const char *why = NULL;
  struct al_safetext_counts counts = {0};
  assert_int_equal(al_gw_jira_comment_rewrite(in, strlen(in), NULL, &out, &ol, &counts, &why, bad),
                   0);
  assert_int_equal(strlen(out), ol);
  /* control: the agent's document holds a mention node and a link mark */
  assert_non_null(strstr(in, "\"mention\""));
  assert_non_null(strstr(in, "\"link\""));
  assert_null(strstr(out, "\"mention\""));
  assert_null(strstr(out, "\"marks\""));
  assert_null(strstr(out, "SECRET"));
  assert_null(strstr(out, "https://exfil"));
  assert_non_null(strstr(out, "airlock:"));
  assert_true(counts.mentions >= 1 && counts.links >= 1);
  free(out);

  static const struct {
    const char *in, *why;
  } bad_in[] = {
      {"nope", "comment-not-json"},
      {"[]", "comment-not-object"},
      {"{\"body\":{\"type\":\"doc\",\"content\":[]},\"visibility\":{\"type\":\"role\"}}",
       "comment-member-refused"},
      {"{}", "comment-body-missing"},
      {"{\"body\":\"plain text\"}", "comment-body-not-adf"},
      {"{\"body\":null}", "comment-body-not-adf"},
      {"{\"body\":{\"type\":\"doc\"},\"body\":{\"type\":\"doc\"}}", "comment-not-json"},
  };
  for (size_t i = 0; i < sizeof bad_in / sizeof bad_in[0]; i++) {
    out = NULL;
    assert_int_equal(al_gw_jira_comment_rewrite(bad_in[i].in, strlen(bad_in[i].in), NULL, &out, &ol,
                                                NULL, &why, bad),
                     -1);
    assert_null(out);
    assert_string_equal(why, bad_in[i].why);
  }
}

static al_gw_tk_rules linear(unsigned comments)
{
  al_gw_tk_rules r;
  al_error e = {0};
  assert_int_equal(al_gw_tk_rules_init(&r, 2, "ENG-42", "8f1c2d6e-1111-4a2b-9c3d-0123456789ab", "",
                                       comments, &e),
                   0);
  return r;
}

static const char *lc(const al_gw_tk_rules *r, const char *query, const char *vars,
                      al_gw_linear_info *info)
{
  json_t *b = json_pack("{s:s}", "query", query);
  if (vars) {
    json_error_t je;
    json_t *v = json_loads(vars, 0, &je);
    assert_non_null(v);
    json_object_set_new(b, "variables", v);
  }
  char *s = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  const char *why = NULL;
  char where[80];
  int rc = al_gw_linear_check(r, s, strlen(s), info, &why, where);
  free(s);
  return rc == 0 ? (info->comment ? "comment" : "read") : why;
}

#define MUT "mutation C($input: CommentCreateInput!) { commentCreate(input: $input) { success } }"

static void linear_graphql(void **state)
{
  (void)state;
  al_gw_tk_rules r = linear(1), off = linear(0);
  al_gw_linear_info info;
  static const struct {
    const char *q, *vars, *want;
  } cases[] = {
      /* allowed: the client's own documents (tickets/linear.c) and small variants */
      {"query AirlockIssue($id: String!) { issue(id: $id) { id identifier title description url "
       "team { key } comments(first: 100) { nodes { id body user { name } } } } }",
       "{\"id\":\"ENG-42\"}", "read"},
      {"{ issue(id: \"8f1c2d6e-1111-4a2b-9c3d-0123456789ab\") { title labels { nodes { name } } "
       "state { name } __typename } }",
       NULL, "read"},
      {MUT, "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"done\"}}", "comment"},
      /* another ticket */
      {"{ issue(id: \"ENG-41\") { title } }", NULL, "graphql-refused: other-ticket"},
      {"query($id: String!) { issue(id: $id) { title } }", "{\"id\":\"eng-42\"}",
       "graphql-refused: other-ticket"},
      {MUT, "{\"input\":{\"issueId\":\"ENG-41\",\"body\":\"x\"}}", "graphql-refused: other-ticket"},
      /* the input: more members, a literal object, not an object */
      {MUT, "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"x\",\"parentId\":\"c1\"}}",
       "graphql-refused: input-shape"},
      {MUT, "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"x\",\"createAsUser\":\"CEO\"}}",
       "graphql-refused: input-shape"},
      {"mutation { commentCreate(input: {issueId: \"ENG-42\", body: \"x\"}) { success } }", NULL,
       "graphql-refused: input-shape"},
      /* other mutations: an edit, a transition, a deletion, a second comment */
      {"mutation { issueUpdate(id: \"ENG-42\", input: {title: \"x\"}) { success } }", NULL,
       "graphql-refused: mutation"},
      {"mutation($i: String!) { issueUpdate(id: $i) { success } }", "{\"i\":\"ENG-42\"}",
       "graphql-refused: mutation"},
      {"mutation { commentDelete(id: \"c1\") { success } }", NULL, "graphql-refused: mutation"},
      {"mutation C($input: CommentCreateInput!) { a: commentCreate(input: $input) { success } "
       "b: commentCreate(input: $input) { success } }",
       "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"x\"}}", "graphql-refused: several-mutations"},
      {"subscription { issues { id } }", NULL, "graphql-refused: subscription"},
      /* variables GraphQL's validation refuses (§5.8.1, §5.8.5): refused
       * here too, not left to the vendor */
      {"mutation C($input: CommentCreateInput!, $input: CommentCreateInput!) { "
       "commentCreate(input: $input) { success } }",
       "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"x\"}}",
       "graphql-refused: variable-duplicate"},
      {"mutation C($input: [CommentCreateInput]) { commentCreate(input: $input) { success } }",
       "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"x\"}}", "graphql-refused: variable-value"},
      /* other reads: other top-level fields, fields that leave the issue */
      {"{ viewer { id } }", NULL, "graphql-refused: top-level-field"},
      {"{ issues { nodes { title } } }", NULL, "graphql-refused: top-level-field"},
      {"{ issue(id: \"ENG-42\") { title } viewer { id } }", NULL,
       "graphql-refused: top-level-field"},
      {"{ issue(id: \"ENG-42\") { parent { title } } }", NULL, "graphql-refused: field"},
      {"{ issue(id: \"ENG-42\") { team { issues { nodes { title } } } } }", NULL,
       "graphql-refused: field"},
      {"{ issue(id: \"ENG-42\") { comments(filter: {}) { nodes { body } } } }", NULL,
       "graphql-refused: argument"},
      {"{ issue(id: \"ENG-42\") { ... on Issue { title } } }", NULL, "graphql-refused: fragment"},
      {"{ issue(id: \"ENG-42\") { title @include(if: true) } }", NULL,
       "graphql-refused: directive"},
      {"query($x: IssueFilter) { issue(id: \"ENG-42\") { title } }", NULL,
       "graphql-refused: variable-type"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *got = lc(&r, cases[i].q, cases[i].vars, &info);
    if (strcmp(got, cases[i].want) != 0)
      fail_msg("%s: got %s, want %s", cases[i].q, got, cases[i].want);
  }
  /* the comment rule off: the same mutation is refused */
  assert_string_equal(lc(&off, MUT, "{\"input\":{\"issueId\":\"ENG-42\",\"body\":\"x\"}}", &info),
                      "graphql-refused: mutation");

  /* the rewrite: the body made safe, the rest as it was */
  const char *body = "{\"query\":\"" MUT "\",\"variables\":{\"input\":{\"issueId\":\"ENG-42\","
                     "\"body\":\"cc @admin ![x](https://exfil.example/a.png)\"}}}";
  const char *why = NULL;
  char where[80];
  assert_int_equal(al_gw_linear_check(&r, body, strlen(body), &info, &why, where), 0);
  assert_true(info.comment);
  char *out = NULL;
  size_t ol;
  assert_int_equal(
      al_gw_linear_comment_rewrite(body, strlen(body), &info, NULL, &out, &ol, NULL, &why), 0);
  assert_null(strstr(out, "@admin"));
  assert_null(strstr(out, "https://exfil"));
  assert_non_null(strstr(out, "\"issueId\":\"ENG-42\""));
  assert_non_null(strstr(out, "commentCreate(input: $input)"));
  /* and what it made is still allowed */
  assert_int_equal(al_gw_linear_check(&r, out, ol, &info, &why, where), 0);
  free(out);

  /* the path and method */
  const char *reason, *param;
  assert_non_null(al_gw_linear_match(&r, "POST", 4, "/graphql", NULL, &reason, &param));
  assert_null(al_gw_linear_match(&r, "GET", 3, "/graphql", NULL, &reason, &param));
  assert_string_equal(reason, "no-rule");
  assert_null(al_gw_linear_match(&r, "PUT", 3, "/graphql", NULL, &reason, &param));
  assert_string_equal(reason, "write-refused");
  assert_null(al_gw_linear_match(&r, "POST", 4, "/oauth/token", NULL, &reason, &param));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jira_routes),
      cmocka_unit_test(jira_comment),
      cmocka_unit_test(linear_graphql),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
