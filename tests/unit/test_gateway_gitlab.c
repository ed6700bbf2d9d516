/* Unit tests for gateway/rules_gitlab.c (issue #30 item 2): the GitLab
 * route table, the project named by its numeric id or its URL-encoded full
 * path, encoded separators only where a route reads them, and GitLab's
 * credential fields. Every refusal has its control: the nearest request
 * that is allowed, so a matcher that refuses everything fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/rules_gitlab.h"
#include "gateway/wire.h"

#include <openssl/evp.h>

#define PH "airlock-placeholder-0123456789abcdef"

static al_gw_gl_rules R;

static int setup(void **state)
{
  (void)state;
  al_error e = {0};
  assert_int_equal(
      al_gw_gl_rules_init(&R, "acme/tools/tally", 42, 7, "airlock/7-ab12", 1, "/api/v4", "", &e),
      0);
  return 0;
}

/* The rule's name, or "REFUSED:<reason>". */
static const char *decide(unsigned sides, const char *method, const char *target)
{
  static char out[200];
  const char *q = strchr(target, '?');
  size_t pl = q ? (size_t)(q - target) : strlen(target);
  al_gw_qparams qp;
  if (q)
    (void)al_gw_query_decode(q + 1, strlen(q + 1), &qp);
  const char *reason = NULL, *param = NULL;
  const al_gw_rule *rule = al_gw_gl_match(&R, sides, method, strlen(method), target, pl,
                                          q ? &qp : NULL, &reason, &param);
  if (rule) {
    assert_string_equal(reason, rule->name);
    return rule->name;
  }
  assert_non_null(reason);
  snprintf(out, sizeof out, "REFUSED:%s", reason);
  return out;
}

#define API AL_GW_SIDE_API
#define GIT AL_GW_SIDE_GIT

static void test_init(void **state)
{
  (void)state;
  al_gw_gl_rules r;
  al_error e = {0};
  assert_int_equal(al_gw_gl_rules_init(&r, "acme/tally", 1, 1, "airlock/1-a", 0, "/api/v4", "", &e),
                   0);
  assert_string_equal(r.base.owner, "acme");
  assert_string_equal(r.base.name, "tally");
  const char *bad[] = {"tally",       "acme//tally", "acme/../tally", "acme/tally.git", "-x/tally",
                       "acme/ta lly", "/acme/tally", "acme/tally/",   "acme/%2e"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(al_gw_gl_rules_init(&r, bad[i], 1, 1, "airlock/1-a", 0, "/api/v4", "", &e),
                     -1);
  assert_int_equal(al_gw_gl_rules_init(&r, "acme/tally", 0, 1, "airlock/1-a", 0, "/api/v4", "", &e),
                   -1);
  /* issue iid 0: the ticket is no issue of the project; every issue route
   * is refused, the project's own read still passes */
  assert_int_equal(
      al_gw_gl_rules_init(&r, "acme/tally", 1, 0, "airlock/PROJ-1-a", 2, "/api/v4", "", &e), 0);
  const char *reason = NULL, *param = NULL;
  static const char *const issue_paths[] = {"/api/v4/projects/1/issues/1",
                                            "/api/v4/projects/1/issues/1/notes",
                                            "/api/v4/projects/1/issues/0/notes"};
  for (size_t i = 0; i < sizeof issue_paths / sizeof issue_paths[0]; i++) {
    const char *p = issue_paths[i];
    assert_null(al_gw_gl_match(&r, API, "GET", 3, p, strlen(p), NULL, &reason, &param));
    assert_null(al_gw_gl_match(&r, API, "POST", 4, p, strlen(p), NULL, &reason, &param));
  }
  const char *proj = "/api/v4/projects/1";
  assert_non_null(al_gw_gl_match(&r, API, "GET", 3, proj, strlen(proj), NULL, &reason, &param));
  /* control: with iid 1 bound, the issue and its notes are the agent's */
  assert_int_equal(al_gw_gl_rules_init(&r, "acme/tally", 1, 1, "airlock/1-a", 2, "/api/v4", "", &e),
                   0);
  assert_non_null(al_gw_gl_match(&r, API, "GET", 3, issue_paths[0], strlen(issue_paths[0]), NULL,
                                 &reason, &param));
  assert_int_equal(al_gw_gl_rules_init(&r, "acme/tally", 1, 1, "bad..ref", 0, "/api/v4", "", &e),
                   -1);
}

/* The project by id and by encoded path, each spelling; another is refused. */
static void test_project(void **state)
{
  (void)state;
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42"), "gl-project");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2Ftools%2Ftally"), "gl-project");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/ACME%2fTools%2FTally"), "gl-project");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2Ftools%2Ftally?statistics=true"),
                      "gl-project");
  /* refusals (controls above) */
  assert_string_equal(decide(API, "GET", "/api/v4/projects/43"), "REFUSED:other-project");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/042"), "REFUSED:other-project");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2Ftools%2Fother"),
                      "REFUSED:other-project");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2Ftally"), "REFUSED:other-project");
  /* the raw slash spelling is another route for GitLab, none here */
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme/tools/tally"), "REFUSED:no-rule");
  /* an encoded dot segment in the project: not the project, never decoded twice */
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2F..%2Ftally"),
                      "REFUSED:path-encoded-separator");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%252Ftools%252Ftally"),
                      "REFUSED:no-rule");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%00%2Ftally"),
                      "REFUSED:path-bad-escape");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42?private_token=x"),
                      "REFUSED:query-param-refused");
  /* without the API prefix: not the API */
  assert_string_equal(decide(API, "GET", "/projects/42"), "REFUSED:no-rule");
}

static void test_issue_and_notes(void **state)
{
  (void)state;
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/issues/7"), "gl-issue");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2Ftools%2Ftally/issues/7/notes"),
                      "gl-issue-notes");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/issues/7/notes?sort=asc&per_page=50"),
                      "gl-issue-notes");
  assert_string_equal(decide(API, "POST", "/api/v4/projects/42/issues/7/notes"),
                      "gl-issue-note-create");
  /* refusals */
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/issues/8"), "REFUSED:other-ticket");
  assert_string_equal(decide(API, "POST", "/api/v4/projects/42/issues/8/notes"),
                      "REFUSED:other-ticket");
  assert_string_equal(decide(API, "PUT", "/api/v4/projects/42/issues/7"), "REFUSED:write-refused");
  assert_string_equal(decide(API, "DELETE", "/api/v4/projects/42/issues/7/notes"),
                      "REFUSED:write-refused");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/issues/7/notes?author=x"),
                      "REFUSED:query-param-refused");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/issues"), "REFUSED:no-rule");
  /* no comment budget: the note route is not there */
  al_gw_gl_rules r0 = R;
  r0.base.max_comments = 0;
  const char *reason, *param;
  const char *p = "/api/v4/projects/42/issues/7/notes";
  assert_null(al_gw_gl_match(&r0, API, "POST", 4, p, strlen(p), NULL, &reason, &param));
  assert_string_equal(reason, "write-refused");
}

static void test_files_branches(void **state)
{
  (void)state;
  assert_string_equal(
      decide(API, "GET", "/api/v4/projects/42/repository/files/src%2Fmain.c?ref=main"), "gl-file");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/files/README.md/raw"),
                      "gl-file-raw");
  assert_string_equal(
      decide(API, "GET", "/api/v4/projects/42/repository/tree?path=src&recursive=true"), "gl-tree");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/branches"), "gl-branches");
  assert_string_equal(
      decide(API, "GET", "/api/v4/projects/42/repository/branches/airlock%2F7-ab12"), "gl-branch");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/branches/main"),
                      "gl-branch");
  /* refusals */
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/files/..%2F..%2Fetc"),
                      "REFUSED:bad-file-path");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/files/a%2F%2Fb"),
                      "REFUSED:bad-file-path");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/files/a%5Cb"),
                      "REFUSED:bad-file-path");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/branches/a..b"),
                      "REFUSED:bad-branch-name");
  assert_string_equal(decide(API, "PUT", "/api/v4/projects/42/repository/files/src%2Fmain.c"),
                      "REFUSED:write-refused");
  assert_string_equal(decide(API, "POST", "/api/v4/projects/42/repository/branches"),
                      "REFUSED:write-refused");
  assert_string_equal(decide(API, "DELETE", "/api/v4/projects/42/repository/branches/main"),
                      "REFUSED:write-refused");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository%2Ffiles/x"),
                      "REFUSED:path-encoded-separator");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/repository/files/x?ref=a&ref=b"),
                      "REFUSED:query-param-duplicate");
}

static void test_writes_refused(void **state)
{
  (void)state;
  /* the writes GitLab would take from a Developer token, each refused;
   * the control of each is the GET above that passes */
  const char *w[][2] = {
      {"POST", "/api/v4/projects/42/merge_requests"},
      {"PUT", "/api/v4/projects/42/merge_requests/1/merge"},
      {"POST", "/api/v4/projects/42/merge_requests/1/approve"},
      {"POST", "/api/v4/projects/42/protected_branches"},
      {"DELETE", "/api/v4/projects/42/protected_branches/main"},
      {"POST", "/api/v4/projects/42/access_tokens"},
      {"POST", "/api/v4/projects/42/hooks"},
      {"PUT", "/api/v4/projects/42"},
      {"POST", "/api/v4/projects/42/pipeline"},
      {"POST", "/api/v4/projects/42/variables"},
      {"POST", "/api/v4/projects/42/repository/commits"},
      {"POST", "/api/v4/projects/42/issues"},
      {"POST", "/api/v4/projects/42/approval_rules"},
      {"PUT", "/api/v4/projects/42/push_rule"},
  };
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
    const char *d = decide(API, w[i][0], w[i][1]);
    if (strncmp(d, "REFUSED:", 8) != 0)
      fail_msg("%s %s allowed as %s", w[i][0], w[i][1], d);
  }
  /* the same writes with the project's encoded full path (as the hostile
   * agent sends them): refused as writes, not as an encoded separator (the
   * reason the record gave before: the path GitLab reads is no bad path) */
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
    char enc[160];
    snprintf(enc, sizeof enc, "/api/v4/projects/acme%%2Ftools%%2Ftally%s",
             w[i][1] + strlen("/api/v4/projects/42"));
    const char *d = decide(API, w[i][0], enc);
    if (strcmp(d, "REFUSED:write-refused") != 0)
      fail_msg("%s %s: %s, not REFUSED:write-refused", w[i][0], enc, d);
    /* API and git on one host (the gateway matches both sides) */
    d = decide(API | GIT, w[i][0], enc);
    if (strcmp(d, "REFUSED:write-refused") != 0)
      fail_msg("%s %s (both sides): %s, not REFUSED:write-refused", w[i][0], enc, d);
  }
  assert_string_equal(decide(API, "GET", "/api/v4/projects/acme%2Ftools%2Ftally/hooks"),
                      "REFUSED:no-rule");
  /* an encoded separator elsewhere, or a project path that is none: still that */
  assert_string_equal(decide(API, "POST", "/api/v4/projects/acme%2Ftools%2Ftally/hooks%2Fx"),
                      "REFUSED:path-encoded-separator");
  assert_string_equal(decide(API, "POST", "/api/v4/projects/acme%2F..%2Ftally/hooks"),
                      "REFUSED:path-encoded-separator");
  assert_string_equal(decide(API, "POST", "/api/graphql"), "REFUSED:graphql-refused");
  assert_string_equal(decide(API, "GET", "/api/graphql"), "REFUSED:graphql-refused");
  /* the run's own MR list: only source_branch=<run branch> */
  assert_string_equal(
      decide(API, "GET", "/api/v4/projects/42/merge_requests?source_branch=airlock%2F7-ab12"),
      "gl-run-mrs");
  assert_string_equal(
      decide(API, "GET", "/api/v4/projects/42/merge_requests?source_branch=main&state=opened"),
      "REFUSED:mr-not-run-branch");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/merge_requests"),
                      "REFUSED:mr-not-run-branch");
  assert_string_equal(decide(API, "GET", "/api/v4/projects/42/merge_requests/1"),
                      "REFUSED:no-rule");
}

static void test_git(void **state)
{
  (void)state;
  assert_string_equal(decide(GIT, "GET", "/acme/tools/tally.git/info/refs?service=git-upload-pack"),
                      "git-info-refs");
  assert_string_equal(decide(GIT, "GET", "/Acme/Tools/Tally/info/refs?service=git-receive-pack"),
                      "git-info-refs");
  assert_string_equal(decide(GIT, "POST", "/acme/tools/tally.git/git-upload-pack"),
                      "git-upload-pack");
  assert_string_equal(decide(GIT, "POST", "/acme/tools/tally.git/git-receive-pack"),
                      "git-receive-pack");
  /* refusals */
  assert_string_equal(decide(GIT, "POST", "/acme/tools/other.git/git-receive-pack"),
                      "REFUSED:other-project");
  assert_string_equal(decide(GIT, "POST", "/acme/tally.git/git-receive-pack"),
                      "REFUSED:other-project");
  assert_string_equal(decide(GIT, "GET", "/acme/tools/tally.git/info/refs?service=x"),
                      "REFUSED:bad-service-query");
  assert_string_equal(decide(GIT, "POST", "/acme%2Ftools%2Ftally.git/git-receive-pack"),
                      "REFUSED:path-encoded-separator");
  assert_string_equal(decide(GIT, "POST", "/acme/tools/../tools/tally.git/git-receive-pack"),
                      "REFUSED:path-dot-segment");
  assert_string_equal(decide(GIT, "POST", "/acme//tools/tally.git/git-receive-pack"),
                      "REFUSED:path-empty-segment");
  /* the API on the git host is not served, and git on the API side neither */
  assert_string_equal(decide(GIT, "GET", "/api/v4/projects/42"), "REFUSED:no-rule");
  assert_string_equal(decide(API, "POST", "/acme/tools/tally.git/git-receive-pack"),
                      "REFUSED:write-refused");
  /* the push's commands: the generic check on the GitLab rules' branch */
  al_rp_request rq = {0};
  rq.n_cmds = 1;
  snprintf(rq.cmd[0].ref, sizeof rq.cmd[0].ref, "refs/heads/airlock/7-ab12");
  snprintf(rq.cmd[0].new_oid, sizeof rq.cmd[0].new_oid, "%040d", 1);
  const char *why;
  size_t bad;
  assert_int_equal(al_gw_check_push(&R.base, &rq, &why, &bad), 0);
  snprintf(rq.cmd[0].ref, sizeof rq.cmd[0].ref, "refs/heads/main");
  assert_int_equal(al_gw_check_push(&R.base, &rq, &why, &bad), -1);
  assert_string_equal(why, "push-other-branch");
}

static al_http_request *req_with(const char *head)
{
  static char buf[2048];
  static al_http_request rq;
  snprintf(buf, sizeof buf, "GET /api/v4/projects/42 HTTP/1.1\r\nHost: gitlab.test\r\n%s\r\n",
           head);
  const char *why;
  int r = al_http_parse_head(buf, strlen(buf), &rq, &why);
  if (r <= 0)
    fail_msg("head did not parse: %s (%s)", head, r < 0 ? why : "incomplete");
  return &rq;
}

static const char *cred(const char *head, const char *query)
{
  al_gw_qparams qp;
  if (query)
    (void)al_gw_query_decode(query, strlen(query), &qp);
  const char *why = NULL;
  al_gw_cred c = al_gw_gl_credential(req_with(head), query ? &qp : NULL, PH, &why);
  if (c == AL_GW_CRED_FOREIGN)
    assert_string_equal(why, "foreign-credential");
  return c == AL_GW_CRED_NONE ? "none" : c == AL_GW_CRED_PLACEHOLDER ? "ph" : "foreign";
}

static void test_credentials(void **state)
{
  (void)state;
  /* base64("oauth2:" PH) */
  char basic[300];
  {
    const char *raw = "oauth2:" PH;
    unsigned char b64[200];
    int n = EVP_EncodeBlock(b64, (const unsigned char *)raw, (int)strlen(raw));
    snprintf(basic, sizeof basic, "Authorization: Basic %.*s\r\n", n, (const char *)b64);
  }
  /* accepted: each of GitLab's three fields and git's Basic */
  assert_string_equal(cred("PRIVATE-TOKEN: " PH "\r\n", NULL), "ph");
  assert_string_equal(cred("private-token: " PH "\r\n", NULL), "ph");
  assert_string_equal(cred("JOB-TOKEN: " PH "\r\n", NULL), "ph");
  assert_string_equal(cred("Authorization: Bearer " PH "\r\n", NULL), "ph");
  assert_string_equal(cred(basic, NULL), "ph");
  assert_string_equal(cred("", NULL), "none");
  assert_string_equal(cred("", "ref=main"), "none");
  /* foreign (the control of each is the accepted line above it) */
  assert_string_equal(cred("PRIVATE-TOKEN: glpat-realtoken0123456789\r\n", NULL), "foreign");
  assert_string_equal(cred("PRIVATE-TOKEN: " PH "x\r\n", NULL), "foreign");
  assert_string_equal(cred("JOB-TOKEN: glcbt-64_abcdef\r\n", NULL), "foreign");
  assert_string_equal(cred("Authorization: Bearer glpat-realtoken0123456789\r\n", NULL), "foreign");
  assert_string_equal(cred("Authorization: token " PH "\r\n", NULL), "foreign");
  assert_string_equal(cred("PRIVATE-TOKEN: " PH "\r\nJOB-TOKEN: " PH "\r\n", NULL), "foreign");
  assert_string_equal(cred("PRIVATE-TOKEN: " PH "\r\nAuthorization: Bearer " PH "\r\n", NULL),
                      "foreign");
  assert_string_equal(cred("PRIVATE-TOKEN: " PH "\r\nCookie: _gitlab_session=abc\r\n", NULL),
                      "foreign");
  assert_string_equal(cred("Proxy-Authorization: Basic eDp5\r\n", NULL), "foreign");
  assert_string_equal(cred("PRIVATE-TOKEN: " PH "\r\n", "private_token=glpat-x"), "foreign");
  assert_string_equal(cred("", "job_token=x"), "foreign");
  assert_string_equal(cred("", "access_token=x"), "foreign");
  assert_string_equal(cred("", "Private_Token=x"), "foreign");
  /* the fields dropped from what is forwarded */
  al_http_request *rq = req_with("PRIVATE-TOKEN: " PH "\r\nAccept: */*\r\n");
  size_t dropped = 0;
  for (size_t i = 0; i < rq->n_headers; i++)
    dropped += al_gw_gl_header_is_credential(&rq->headers[i]);
  assert_int_equal(dropped, 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init),
      cmocka_unit_test_setup(test_project, setup),
      cmocka_unit_test_setup(test_issue_and_notes, setup),
      cmocka_unit_test_setup(test_files_branches, setup),
      cmocka_unit_test_setup(test_writes_refused, setup),
      cmocka_unit_test_setup(test_git, setup),
      cmocka_unit_test_setup(test_credentials, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
