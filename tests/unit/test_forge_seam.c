/* forge/forge.h, the forge seam (issue #28 item 3): the policy's forge.kind
 * picks a driver (github by default), an unknown kind is refused naming
 * the field and the kinds there are, every driver fills every operation,
 * and the GitHub driver's webhook check follows "Validating webhook
 * deliveries" (the documented test vector); forge.kind gitlab's rules and
 * the GitLab driver's X-Gitlab-Token check (issue #30). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "forge/forge.h"
#include "policy/policy.h"

static al_policy *load(const char *y, al_error *err)
{
  al_policy *p = NULL;
  if (al_policy_load_buffer("<t>", y, strlen(y), &p, err) < 0)
    return NULL;
  return p;
}

static void test_kind(void **state)
{
  (void)state;
  al_error err = {0};
  al_policy *p = load("version: 1\n", &err);
  if (!p) {
    fail_msg("%s", err.msg);
    return;
  }
  assert_int_equal(p->forge.kind, AL_FORGE_GITHUB);
  assert_ptr_equal(al_forge_ops_of(p->forge.kind), &al_forge_github);
  al_policy_free(p);
  p = load("version: 1\nforge: {kind: github}\n", &err);
  if (!p) {
    fail_msg("%s", err.msg);
    return;
  }
  assert_string_equal(al_forge_ops_of(p->forge.kind)->kind, "github");
  al_policy_free(p);
  /* an unknown kind: the field, the value and the kinds there are */
  p = load("version: 1\nforge: {kind: bitbucket}\n", &err);
  assert_null(p);
  assert_non_null(strstr(err.msg, "forge.kind"));
  assert_non_null(strstr(err.msg, "bitbucket"));
  assert_non_null(strstr(err.msg, "github"));
  al_error e2 = {0};
  assert_null(al_forge_ops_find("bitbucket", "forge.kind", &e2));
  assert_non_null(strstr(e2.msg, "forge.kind"));
  assert_non_null(strstr(e2.msg, "github"));
  assert_ptr_equal(al_forge_ops_find("github", "forge.kind", &e2), &al_forge_github);
}

static void test_every_op(void **state)
{
  (void)state;
  for (size_t k = 0; al_forge_kind_names[k]; k++) {
    const al_forge_ops *o = al_forge_ops_of((al_forge_kind)k);
    assert_string_equal(o->kind, al_forge_kind_names[k]);
    assert_non_null(o->default_branch);
    assert_non_null(o->branch_head);
    assert_non_null(o->prs_from_branch);
    assert_non_null(o->prs_open);
    assert_non_null(o->pr_open);
    assert_non_null(o->issue_get);
    assert_non_null(o->issue_comments);
    assert_non_null(o->issue_comment);
    assert_non_null(o->user_permission);
    assert_non_null(o->token_revoke);
    assert_non_null(o->webhook_signature_header);
    assert_non_null(o->webhook_verify);
    /* the review's reads: all of them or none (the review phase refuses a
     * driver without them, ticket/ticket_review.c) */
    size_t review_ops = (o->pr_for_review != NULL) + (o->pr_files != NULL) + (o->tree != NULL) +
                        (o->blob != NULL) + (o->pr_commits != NULL) + (o->pr_texts != NULL) +
                        (o->pr_comment != NULL);
    assert_true(review_ops == 0 || review_ops == 7);
  }
  /* GitHub, the first driver, reads a pull request back; so does GitLab's
   * (forge/gitlab_review.c, checked against the test forge by gitlab-review) */
  assert_non_null(al_forge_github.pr_for_review);
  assert_non_null(al_forge_github.pr_comment);
  assert_non_null(al_forge_gitlab.pr_for_review);
  assert_non_null(al_forge_gitlab.pr_comment);
}

static void test_github_webhook(void **state)
{
  (void)state;
  /* docs.github.com "Validating webhook deliveries", "Testing the webhook
   * payload validation": secret "It's a Secret to Everybody", payload
   * "Hello, World!" */
  const char *secret = "It's a Secret to Everybody", *body = "Hello, World!";
  const char *good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
  al_error err = {0};
  const al_forge_ops *o = &al_forge_github;
  assert_string_equal(o->webhook_signature_header, "X-Hub-Signature-256");
  assert_int_equal(o->webhook_verify(secret, strlen(secret), good, body, strlen(body), &err), 0);
  char bad[80];
  snprintf(bad, sizeof bad, "%s", good);
  bad[strlen(bad) - 1] = '8';
  assert_int_equal(o->webhook_verify(secret, strlen(secret), bad, body, strlen(body), &err), -1);
  assert_non_null(strstr(err.msg, "does not match"));
  assert_int_equal(o->webhook_verify(secret, strlen(secret), NULL, body, strlen(body), &err), -1);
  assert_int_equal(o->webhook_verify(secret, strlen(secret), "sha1=00", body, strlen(body), &err),
                   -1);
}

/* forge.kind gitlab (issue #30): the GitLab driver, with its two URLs
 * named and the REST base ending in /api/v4; either missing is refused. */
static void test_gitlab_kind(void **state)
{
  (void)state;
  al_error err = {0};
  al_policy *p = load("version: 1\nforge: {kind: gitlab, api_url: \"https://gl.test/api/v4/\", "
                      "git_url: \"https://gl.test\"}\n",
                      &err);
  assert_non_null(p);
  if (!p)
    return;
  assert_int_equal(p->forge.kind, AL_FORGE_GITLAB);
  assert_ptr_equal(al_forge_ops_of(p->forge.kind), &al_forge_gitlab);
  assert_string_equal(p->forge.api_url, "https://gl.test/api/v4");
  al_policy_free(p);
  assert_ptr_equal(al_forge_ops_find("gitlab", "forge.kind", &err), &al_forge_gitlab);
  p = load("version: 1\nforge: {kind: gitlab}\n", &err);
  assert_null(p);
  assert_non_null(strstr(err.msg, "kind gitlab needs api_url"));
  p = load("version: 1\nforge: {kind: gitlab, api_url: \"https://gl.test/api/v4\"}\n", &err);
  assert_null(p);
  assert_non_null(strstr(err.msg, "git_url"));
  p = load("version: 1\nforge: {kind: gitlab, api_url: \"https://gl.test/api/v3\", git_url: "
           "\"https://gl.test\"}\n",
           &err);
  assert_null(p);
  assert_non_null(strstr(err.msg, "must end in /api/v4"));
  /* control: the same URLs with kind github are GitHub Enterprise-style, accepted */
  p = load("version: 1\nforge: {api_url: \"https://gl.test/api/v3\"}\n", &err);
  assert_non_null(p);
  al_policy_free(p);
}

/* GitLab's plain webhook secret ("Validate payloads by using a secret
 * token"): X-Gitlab-Token is the secret itself. */
static void test_gitlab_webhook(void **state)
{
  (void)state;
  const al_forge_ops *o = &al_forge_gitlab;
  al_error err = {0};
  assert_string_equal(o->webhook_signature_header, "X-Gitlab-Token");
  assert_int_equal(o->webhook_verify("s3cret", 6, "s3cret", "{}", 2, &err), 0);
  assert_int_equal(o->webhook_verify("s3cret", 6, "s3creT", "{}", 2, &err), -1);
  assert_non_null(strstr(err.msg, "does not match"));
  assert_int_equal(o->webhook_verify("s3cret", 6, "s3cre", "{}", 2, &err), -1);
  assert_int_equal(o->webhook_verify("s3cret", 6, NULL, "{}", 2, &err), -1);
  assert_non_null(strstr(err.msg, "missing"));
  /* user_permission asks GitLab (tests/integration/serve-gitlab.sh); a
   * name that is no GitLab username is refused before any request (the
   * client is NULL here) and the answer is none, never a guess */
  char perm[16] = "x", role[16] = "x";
  assert_int_equal(o->user_permission(NULL, "t", "acme/tally", "al/ice", perm, sizeof perm, role,
                                      sizeof role, &err),
                   -1);
  assert_int_equal(err.code, EINVAL);
  assert_string_equal(perm, "none");
  assert_string_equal(role, "");
  assert_non_null(strstr(err.msg, "GitLab user `al/ice`"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kind),           cmocka_unit_test(test_every_op),
      cmocka_unit_test(test_github_webhook), cmocka_unit_test(test_gitlab_kind),
      cmocka_unit_test(test_gitlab_webhook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
