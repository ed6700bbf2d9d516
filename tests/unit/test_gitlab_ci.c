/* The .gitlab-ci.yml reader (src/lib/forge/gitlab_ci.c): a table of CI
 * files shaped like GitLab's documented examples ("CI/CD YAML syntax
 * reference", "CI/CD job rules") with whether job `j` runs in the run
 * branch's pipeline and in its merge request's, and whether it carries
 * id_tokens. Rows come in pairs where they can: a file, then the same file
 * with the smallest change that flips the answer (each row's expected
 * answer differs from its neighbour's, so every row can fail). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "forge/gitlab_ci.h"

struct row {
  const char *what;
  const char *yaml;
  int push, mr; /* for job `j`; -1: the file is unreadable */
  int oidc;
};

#define N AL_GLCI_NO
#define Y AL_GLCI_YES
#define M AL_GLCI_MAYBE

static const struct row rows[] = {
    {"no rules: branch pipelines only (the default)", "j:\n  script: [x]\n", Y, N, 0},
    {"only: [main]", "j:\n  script: [x]\n  only: [main]\n", N, N, 0},
    {"only: merge_requests", "j:\n  script: [x]\n  only: [merge_requests]\n", N, Y, 0},
    {"only: a regex matching the run branch", "j:\n  script: [x]\n  only: ['/^airlock\\/.*$/']\n",
     Y, N, 0},
    {"only: a regex for release branches", "j:\n  script: [x]\n  only: ['/^release-.*$/']\n", N, N,
     0},
    {"except: the run prefix", "j:\n  script: [x]\n  except: ['/^airlock\\//']\n", N, N, 0},
    {"except: main only", "j:\n  script: [x]\n  except: [main]\n", Y, N, 0},
    {"only: refs + variables (a project variable: may)",
     "j:\n  script: [x]\n  only:\n    refs: [branches]\n    variables: ['$DEPLOY == \"1\"']\n", M,
     N, 0},
    {"rules: default branch only",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n", N, N, 0},
    {"rules: merge_request_event",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n", N,
     Y, 0},
    {"rules: when never for the run prefix, then always",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_REF_NAME =~ /^airlock\\//\n      when: "
     "never\n    - when: always\n",
     N, N, 0},
    {"rules: when never for release, then always",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_REF_NAME =~ /^release\\//\n      when: "
     "never\n    - when: always\n",
     Y, Y, 0},
    {"rules: protected refs only",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_REF_PROTECTED == \"true\"\n", N, N, 0},
    {"rules: a tag pipeline", "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_TAG\n", N, N, 0},
    {"rules: && and ||",
     "j:\n  script: [x]\n  rules:\n    - if: ($CI_PIPELINE_SOURCE == \"push\" && "
     "$CI_COMMIT_BRANCH != \"main\") || $CI_COMMIT_TAG\n",
     Y, N, 0},
    {"rules: a project variable (may)", "j:\n  script: [x]\n  rules:\n    - if: $RUN_IT\n", M, M,
     0},
    {"rules: changes: (may)",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_BRANCH\n      changes: [src/**]\n", M, N,
     0},
    {"rules: MR target is main",
     "j:\n  script: [x]\n  rules:\n    - if: $CI_MERGE_REQUEST_TARGET_BRANCH_NAME == \"main\"\n", N,
     Y, 0},
    {"workflow:rules drop run branches",
     "workflow:\n  rules:\n    - if: $CI_COMMIT_BRANCH =~ /^airlock\\//\n      when: never\n    - "
     "when: always\nj:\n  script: [x]\n",
     N, N, 0},
    {"workflow:rules keep them", "workflow:\n  rules:\n    - when: always\nj:\n  script: [x]\n", Y,
     N, 0},
    {"id_tokens on the job", "j:\n  script: [x]\n  id_tokens:\n    T:\n      aud: https://a\n", Y,
     N, 1},
    {"id_tokens through extends",
     ".tpl:\n  id_tokens:\n    T:\n      aud: https://a\nj:\n  extends: .tpl\n  script: [x]\n", Y,
     N, 1},
    {"rules through extends",
     ".tpl:\n  rules:\n    - if: $CI_COMMIT_BRANCH == \"main\"\nj:\n  extends: [.tpl]\n  script: "
     "[x]\n",
     N, N, 0},
    {"id_tokens from default:",
     "default:\n  id_tokens:\n    T:\n      aud: https://a\nj:\n  script: [x]\n", Y, N, 1},
    {"include: is not followed", "include: ci/x.yml\nj:\n  script: [x]\n", -1, -1, 0},
    {"anchors are not followed", ".a: &a\n  script: [x]\nj:\n  <<: *a\n", -1, -1, 0},
    {"not YAML", "j: [unclosed\n", -1, -1, 0},
    /* hostile shapes: bounded, answered "may" rather than guessed */
    {"parentheses past the bound: may",
     "j:\n  script: [x]\n  rules:\n    - if: ((((((((((((((((((((((((((((((((((($CI_COMMIT_TAG"
     "))))))))))))))))))))))))))))))))))\n",
     M, M, 0},
    {"parentheses within it: decided",
     "j:\n  script: [x]\n  rules:\n    - if: (((($CI_COMMIT_TAG))))\n", N, N, 0},
    {"an extends loop ends",
     ".a:\n  extends: .b\n.b:\n  extends: .a\nj:\n  extends: .a\n  script: [x]\n", Y, N, 0},
};

static void test_table(void **state)
{
  (void)state;
  al_glci_ctx ctx = {.run_prefix = "airlock/", .target_branch = "main", .default_branch = "main"};
  int bad = 0;
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    const struct row *r = &rows[i];
    al_glci g;
    al_glci_read(&ctx, ".gitlab-ci.yml", r->yaml, strlen(r->yaml), &g);
    int push = -1, mr = -1, oidc = 0;
    if (!g.broken) {
      for (size_t k = 0; k < g.n_jobs; k++)
        if (!strcmp(g.jobs[k].name, "j")) {
          push = g.jobs[k].push;
          mr = g.jobs[k].mr;
          oidc = g.jobs[k].oidc;
        }
      if (push < 0)
        push = mr = -2; /* no job j */
    }
    if (push != r->push || mr != r->mr || oidc != r->oidc) {
      print_error("row %zu (%s): push %d mr %d oidc %d, want %d %d %d (%s)\n", i, r->what, push, mr,
                  oidc, r->push, r->mr, r->oidc, g.broken ? g.why : "");
      bad++;
    }
    al_glci_free(&g);
  }
  assert_int_equal(bad, 0);
}

/* The protected run branch: CI_COMMIT_REF_PROTECTED follows the context. */
static void test_protected_ref(void **state)
{
  (void)state;
  const char *y = "j:\n  script: [x]\n  rules:\n    - if: $CI_COMMIT_REF_PROTECTED == \"true\"\n";
  al_glci_ctx ctx = {.run_prefix = "airlock/", .target_branch = "main", .default_branch = "main"};
  al_glci g;
  al_glci_read(&ctx, "x", y, strlen(y), &g);
  assert_int_equal(g.n_jobs, 1);
  assert_int_equal(g.jobs[0].push, AL_GLCI_NO);
  al_glci_free(&g);
  ctx.run_protected = true;
  al_glci_read(&ctx, "x", y, strlen(y), &g);
  assert_int_equal(g.jobs[0].push, AL_GLCI_YES);
  al_glci_free(&g);
}

static void test_regex(void **state)
{
  (void)state;
  assert_int_equal(al_glci_regex_match("/^airlock\\//", "airlock/7-x"), AL_GLCI_YES);
  assert_int_equal(al_glci_regex_match("/^airlock\\//", "main"), AL_GLCI_NO);
  assert_int_equal(al_glci_regex_match("/^AIRLOCK/i", "airlock/7"), AL_GLCI_YES);
  assert_int_equal(al_glci_regex_match("/^AIRLOCK/", "airlock/7"), AL_GLCI_NO);
  assert_int_equal(al_glci_regex_match("/^\\d+-x$/", "12-x"), AL_GLCI_YES);
  /* outside the subset: cannot tell, never a quiet no */
  assert_int_equal(al_glci_regex_match("/(?i)airlock/", "airlock"), AL_GLCI_MAYBE);
  assert_int_equal(al_glci_regex_match("/\\Aairlock/", "airlock"), AL_GLCI_MAYBE);
  assert_int_equal(al_glci_regex_match("/[/", "x"), AL_GLCI_MAYBE);
  assert_int_equal(al_glci_regex_match("/^(a{1,9}){1,9}$/", "aaa"), AL_GLCI_MAYBE);
  /* a quantifier on a quantifier (the fuzzer's out-of-memory in regcomp) */
  assert_int_equal(al_glci_regex_match("/^a++++$/", "aaa"), AL_GLCI_MAYBE);
  assert_int_equal(al_glci_regex_match("/^a+$/", "aaa"), AL_GLCI_YES);
  assert_int_equal(al_glci_regex_match("airlock", "airlock"), AL_GLCI_MAYBE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_protected_ref),
      cmocka_unit_test(test_regex),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
