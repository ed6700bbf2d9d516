/* The gateway's read-only GraphQL (issue #27): a table of documents,
 * allowed and refused, for the run acme/tally, ticket 7, branch
 * airlock/7-abcd. The allowed rows include the queries gh 2.23 sends for
 * `gh issue view --comments`, `gh pr view` and its feature detection
 * (captured through the gateway with GH_DEBUG=api); each refused row is
 * the control of an allowed one with one thing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/graphql.h"
#include "gateway/rules.h"

static al_gw_rules R;

static int setup(void **st)
{
  (void)st;
  al_error err = {0};
  return al_gw_rules_init(&R, "acme/tally", 7, "airlock/7-abcd", 0, "", "", &err);
}

static const struct row {
  const char *body, *why; /* why NULL: allowed */
} rows[] = {
    /* allowed */
    {"{\"query\":\"query Issue_fields{Issue: __type(name: \\\"Issue\\\"){fields(includeDeprecated: "
     "true){name}}}\"}",
     NULL},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { name } }\"}", NULL},
    {"{\"query\":\"{ repository(owner: \\\"ACME\\\", name: \\\"Tally\\\") { name } }\"}", NULL},
    {"{\"query\":\"query IssueByNumber($owner: String!, $repo: String!, $number: Int!) { "
     "repository(owner: $owner, name: $repo) { hasIssuesEnabled issue: issueOrPullRequest(number: "
     "$number) { __typename ...on Issue { title body comments(first: 100) { nodes { author { login "
     "...on User { name } } body } totalCount } } ...on PullRequest { title } } } }\","
     "\"variables\":{\"owner\":\"acme\",\"repo\":\"tally\",\"number\":7}}",
     NULL},
    {"{\"query\":\"query PullRequestByNumber($owner: String!, $repo: String!, $pr_number: Int!) { "
     "repository(owner: $owner, name: $repo) { pullRequest(number: $pr_number) { number title "
     "headRepository { name } headRepositoryOwner { login } isCrossRepository } } }\","
     "\"variables\":{\"owner\":\"acme\",\"repo\":\"tally\",\"pr_number\":3},\"operationName\":"
     "\"PullRequestByNumber\"}",
     NULL},
    {"{\"query\":\"query PullRequestForBranch($owner: String!, $repo: String!, $headRefName: "
     "String!, $states: [PullRequestState!]) { repository(owner: $owner, name: $repo) { "
     "pullRequests(headRefName: $headRefName, states: $states, first: 30, orderBy: { field: "
     "CREATED_AT, direction: DESC }) { nodes { number } } } }\","
     "\"variables\":{\"owner\":\"acme\",\"repo\":\"tally\",\"headRefName\":\"airlock/"
     "7-abcd\",\"states\":[\"OPEN\"]}}",
     NULL},
    {"{\"query\":\"# a comment\\n,,{ __typename }\"}", NULL},
    {"{\"query\":\"query CommentsForIssue($endCursor:String$id:ID!){node(id: $id){...on "
     "Issue{comments(first: 100, after: "
     "$endCursor){nodes{id,author{login},body},totalCount,pageInfo{hasNextPage,endCursor}}},...on "
     "PullRequest{comments(first: 100, after: "
     "$endCursor){nodes{id},totalCount}}}}\",\"variables\":{\"id\":\"I_x\",\"endCursor\":null}}",
     NULL},
    /* refused */
    {"{\"query\":\"mutation { createPullRequest(input: {}) { clientMutationId } }\"}",
     "graphql-refused: mutation"},
    {"{\"query\":\"mutation CreatePullRequest($input: CreatePullRequestInput!) { "
     "createPullRequest(input: $input) { pullRequest { url } } }\",\"variables\":{\"input\":{}}}",
     "graphql-refused: mutation"},
    {"{\"query\":\"{ __typename } mutation { x }\"}", "graphql-refused: mutation"},
    {"{\"query\":\"subscription { x }\"}", "graphql-refused: subscription"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"loose\\\") { name } }\"}",
     "graphql-refused: other-repository"},
    {"{\"query\":\"query($o: String!) { repository(owner: $o, name: \\\"tally\\\") { name } "
     "}\",\"variables\":{\"o\":\"evil\"}}",
     "graphql-refused: other-repository"},
    {"{\"query\":\"query($o: String = \\\"acme\\\") { repository(owner: $o, name: \\\"tally\\\") { "
     "name } }\"}",
     "graphql-refused: variable-value"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\", followRenames: true) { "
     "name } }\"}",
     "graphql-refused: other-repository"},
    {"{\"query\":\"{ a: repository(owner: \\\"acme\\\", name: \\\"tally\\\") { name } b: "
     "repository(owner: \\\"acme\\\", name: \\\"loose\\\") { name } }\"}",
     "graphql-refused: other-repository"},
    {"{\"query\":\"{ viewer { login } }\"}", "graphql-refused: top-level-field"},
    {"{\"query\":\"{ node(id: \\\"x\\\") { id } }\"}", "graphql-refused: field"},
    {"{\"query\":\"{ node(id: \\\"x\\\") { ... on Repository { name } } }\"}",
     "graphql-refused: fragment"},
    {"{\"query\":\"{ node(id: \\\"x\\\") { ... on Issue { title } } }\"}",
     "graphql-refused: field"},
    {"{\"query\":\"{ node(id: \\\"x\\\") { ... on Issue { comments(first: 1) { nodes { repository "
     "{ name } } } } } }\"}",
     "graphql-refused: field"},
    {"{\"query\":\"{ nodes(ids: [\\\"x\\\"]) { id } }\"}", "graphql-refused: top-level-field"},
    {"{\"query\":\"{ search(query: \\\"x\\\", type: REPOSITORY, first: 1) { issueCount } }\"}",
     "graphql-refused: top-level-field"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { owner { ... on User { "
     "repositories(first: 5) { nodes { name } } } } } }\"}",
     "graphql-refused: field"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { forks(first: 5) { "
     "nodes { name } } } }\"}",
     "graphql-refused: field"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { pullRequest(number: 1) "
     "{ headRepository { issues(first: 1) { totalCount } } } } }\"}",
     "graphql-refused: field"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { issues(first: 5) { "
     "nodes { title } } } }\"}",
     "graphql-refused: field"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { issue(number: 8) { "
     "title } } }\"}",
     "graphql-refused: other-ticket"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { pullRequests(first: 5) "
     "{ nodes { title } } } }\"}",
     "graphql-refused: pulls-not-run-branch"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { ...F } } fragment F on "
     "Repository { name }\"}",
     "graphql-refused: fragment"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { ... on Repository { "
     "name } } }\"}",
     "graphql-refused: fragment"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { name @include(if: "
     "true) } }\"}",
     "graphql-refused: directive"},
    {"{\"query\":\"query($i: CreatePullRequestInput) { __typename }\"}",
     "graphql-refused: variable-type"},
    {"{\"query\":\"query($s: String) { __typename }\",\"variables\":{\"s\":{\"a\":1}}}",
     "graphql-refused: variable-value"},
    {"{\"query\":\"{ __typename }\",\"variables\":{\"undeclared\":1}}",
     "graphql-refused: variable-value"},
    {"{\"query\":\"{ __typename }\",\"extensions\":{}}", "graphql-refused: body-shape"},
    {"{\"query\":\"{ __typename }\",\"query\":\"mutation{x}\"}", "graphql-refused: body-not-json"},
    {"[{\"query\":\"{ __typename }\"}]", "graphql-refused: body-shape"},
    {"not json", "graphql-refused: body-not-json"},
    {"{\"query\":\"{ __typename \"}", "graphql-refused: syntax"},
    {"{\"query\":\"{ repository(owner: \\\"\\\"\\\"acme\\\"\\\"\\\", name: \\\"tally\\\") { name } "
     "}\"}",
     "graphql-refused: syntax"},
    {"{\"query\":\"{ __typename(a: 01) }\"}", "graphql-refused: syntax"},
    {"{\"query\":\"{ }\"}", "graphql-refused: syntax"},
    {"{\"query\":\"{ __typename } { __typename }\"}", "graphql-refused: several-operations"},
    {"{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { a { b { c { d { e { f "
     "{ g { h { i { j { k { l { m { n { o { p } } } } } } } } } } } } } } } } }\"}",
     "graphql-refused: too-deep"},
};

static void table(void **st)
{
  (void)st;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    al_gql_info info;
    const char *why = NULL;
    char where[80];
    int rc = al_gql_check(&R, rows[i].body, strlen(rows[i].body), &info, &why, where);
    if (rows[i].why == NULL) {
      if (rc != 0)
        fail_msg("row %zu refused (%s %s): %s", i, why, where, rows[i].body);
    } else {
      if (rc == 0 || strcmp(why, rows[i].why) != 0)
        fail_msg("row %zu: want %s, got %s: %s", i, rows[i].why, rc == 0 ? "allowed" : why,
                 rows[i].body);
    }
  }
}

static void ticket_token(void **st)
{
  (void)st;
  al_gql_info info;
  const char *why;
  char where[80];
  const char *q = "{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { "
                  "issue(number: 7) { title } } }\"}";
  assert_int_equal(al_gql_check(&R, q, strlen(q), &info, &why, where), 0);
  assert_true(info.issue);
  q = "{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { name } }\"}";
  assert_int_equal(al_gql_check(&R, q, strlen(q), &info, &why, where), 0);
  assert_false(info.issue);
  /* a ticket that is no issue of the forge (Jira, Linear: ticket 0): the
   * issue with the key's number, or any other, is not the agent's; the
   * repository's own reads still pass */
  al_gw_rules none;
  al_error err = {0};
  assert_int_equal(al_gw_rules_init(&none, "acme/tally", 0, "airlock/PROJ-7-abcd", 0, "", "", &err),
                   0);
  q = "{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { "
      "issue(number: 7) { title } } }\"}";
  assert_int_equal(al_gql_check(&none, q, strlen(q), &info, &why, where), -1);
  assert_non_null(strstr(why, "graphql-refused"));
  q = "{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { name } }\"}";
  assert_int_equal(al_gql_check(&none, q, strlen(q), &info, &why, where), 0);
}

static void limits(void **st)
{
  (void)st;
  /* a query over AL_GQL_QUERY_MAX, and 2001 fields */
  size_t cap = AL_GQL_BODY_MAX * 2;
  char *b = malloc(cap);
  assert_non_null(b);
  size_t n = (size_t)snprintf(b, cap, "{\"query\":\"{ __typename ");
  while (n < AL_GQL_QUERY_MAX + 100)
    b[n++] = ' ';
  n += (size_t)snprintf(b + n, cap - n, "}\"}");
  al_gql_info info;
  const char *why;
  char where[80];
  assert_int_equal(al_gql_check(&R, b, n, &info, &why, where), -1);
  assert_string_equal(why, "graphql-refused: too-large");
  n = (size_t)snprintf(b, cap,
                       "{\"query\":\"{ repository(owner: \\\"acme\\\", name: \\\"tally\\\") { ");
  for (int i = 0; i < AL_GQL_FIELDS_MAX + 1; i++)
    n += (size_t)snprintf(b + n, cap - n, "a ");
  n += (size_t)snprintf(b + n, cap - n, "} }\"}");
  assert_int_equal(al_gql_check(&R, b, n, &info, &why, where), -1);
  assert_string_equal(why, "graphql-refused: too-many-fields");
  free(b);
}

int main(void)
{
  const struct CMUnitTest t[] = {cmocka_unit_test(table), cmocka_unit_test(ticket_token),
                                 cmocka_unit_test(limits)};
  return cmocka_run_group_tests(t, setup, NULL);
}
