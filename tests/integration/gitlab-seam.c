/* A test-only driver of the forge seam for a GitLab run (gitlab-broker.sh):
 * the policy's forge.kind picks the driver (al_forge_ops_of), which then
 * does what the supervisor does on a run's forge with the run's leased
 * tokens: the project's default branch, the issue and a note on it, the
 * one Draft merge request, the MR found again from its branch, and (with
 * AL_TEST_DIRECT=1) the supervisor's own revocation of the ticket token
 * (forge.h token_revoke, broker/direct.h). The tokens come from the
 * environment (AL_GIT_TOKEN, AL_TICKET_TOKEN: broker-lease-exec), never a
 * command line. The API URL is argv's: the test forge speaks plain HTTP on
 * loopback, which a policy's https-only forge.api_url does not take.
 * usage: gitlab-seam POLICY API_URL PROJECT ISSUE BRANCH
 * Prints one "key value" line per fact; never a token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/forge.h"
#include "forge/ghapi.h"
#include "policy/policy.h"

int main(int argc, char **argv)
{
  if (argc != 6) {
    fprintf(stderr, "usage: gitlab-seam POLICY API_URL PROJECT ISSUE BRANCH\n");
    return 2;
  }
  const char *git = getenv("AL_GIT_TOKEN"), *tik = getenv("AL_TICKET_TOKEN");
  if (!git || !tik) {
    fprintf(stderr, "gitlab-seam: AL_GIT_TOKEN and AL_TICKET_TOKEN are unset\n");
    return 2;
  }
  al_error err = {0};
  al_policy *p = NULL;
  if (al_policy_load_file(argv[1], &p, &err) < 0) {
    printf("policy-error %s\n", err.msg);
    return 1;
  }
  const al_forge_ops *ops = al_forge_ops_of(p->forge.kind);
  al_policy_free(p);
  printf("driver %s\n", ops->kind);
  al_ghapi *c = NULL;
  if (al_ghapi_new(argv[2], NULL, 20000, &c, &err) < 0) {
    printf("client-error %s\n", err.msg);
    return 1;
  }
  const char *project = argv[3], *branch = argv[5];
  unsigned long issue = strtoul(argv[4], NULL, 10);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c, "/personal_access_tokens/self", git, &r, &err) == 0)
    printf("alive %ld\n", r.status);
  al_ghapi_resp_free(&r);
  char base[256] = "";
  if (ops->default_branch(c, git, project, base, sizeof base, &err) == 0)
    printf("default %s\n", base);
  else
    printf("default-error %s\n", err.msg);
  json_t *j = NULL;
  if (ops->issue_get(c, tik, project, issue, &j, &err) == 0)
    printf("issue %s (%s)\n", json_string_value(json_object_get(j, "title")),
           json_string_value(json_object_get(j, "state")));
  else
    printf("issue-error %s\n", err.msg);
  json_decref(j);
  j = NULL;
  if (ops->issue_comment(c, tik, project, issue, "airlock: working on it", &j, &err) == 0)
    printf("comment %lld\n", (long long)json_integer_value(json_object_get(j, "id")));
  else
    printf("comment-error %s\n", err.msg);
  json_decref(j);
  j = NULL;
  if (ops->issue_comments(c, tik, project, issue, 100, &j, &err) == 0)
    printf("comments %zu\n", json_array_size(j));
  json_decref(j);
  j = NULL;
  al_forge_pr_req req = {.title = "tally: count empty lines",
                         .body = "Closes nothing; by airlock",
                         .head = branch,
                         .base = base[0] ? base : "main"};
  if (ops->pr_open(c, git, project, &req, &j, &err) == 0)
    printf("mr %lld %s\n", (long long)json_integer_value(json_object_get(j, "number")),
           json_string_value(json_object_get(j, "url"))
               ? json_string_value(json_object_get(j, "url"))
               : "-");
  else
    printf("mr-error %s\n", err.msg);
  json_decref(j);
  j = NULL;
  if (ops->prs_from_branch(c, git, project, branch, &j, &err) == 0)
    printf("from-branch %zu %s\n", json_array_size(j),
           json_array_size(j) ? json_string_value(json_object_get(json_array_get(j, 0), "state"))
                              : "-");
  else
    printf("from-branch-error %s\n", err.msg);
  json_decref(j);
  j = NULL;
  if (ops->prs_open(c, git, project, 100, &j, &err) == 0)
    printf("open %zu\n", json_array_size(j));
  json_decref(j);
  const char *direct = getenv("AL_TEST_DIRECT");
  if (direct && strcmp(direct, "1") == 0) {
    bool revoked = false, confirmed = false;
    char e[512] = "";
    ops->token_revoke(c, tik, &revoked, &confirmed, e, sizeof e);
    printf("direct revoked=%d confirmed=%d%s%s\n", revoked, confirmed, e[0] ? " " : "", e);
  }
  al_ghapi_free(c);
  return 0;
}
