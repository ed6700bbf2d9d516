/* The workflow reader (src/lib/forge/workflow.c, workflow_jobs.c, wfglob.c):
 * GitHub's filter patterns judged against every run branch, and a table of
 * workflow files shaped like GitHub's documented examples with the verdict
 * each ci.* criterion must give. Every row can fail: the expected verdicts
 * differ between rows, and each "remedy" row is the control of the row
 * before it (the same workflow with the smallest fix applied). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "forge/wfglob.h"
#include "forge/workflow.h"

/* ---- the pattern engine ----------------------------------------------- */

struct grow {
  const char *pats[4];
  const char *name; /* NULL: the run branches under "airlock/" */
  int sel, unsel;   /* expected; -1: refused */
};

static const struct grow globs[] = {
    /* `*` stops at `/`, `**` does not */
    {{"airlock/*"}, NULL, 1, 0},
    {{"airlock/**"}, NULL, 1, 0},
    {{"air*"}, NULL, 0, 1},
    {{"air**"}, NULL, 1, 0},
    {{"*"}, NULL, 0, 1},
    {{"**"}, NULL, 1, 0},
    /* a ticket number, then a dash: `+` after a class */
    {{"airlock/[0-9]+-*"}, NULL, 1, 0},
    {{"airlock/[1-2]+-*"}, NULL, 1, 1},
    /* `?`: zero or one of the preceding character */
    {{"airlock/1?2-*"}, NULL, 1, 1},
    /* negation and order: the last matching pattern decides */
    {{"**", "!airlock/**"}, NULL, 0, 1},
    {{"**", "!airlock/**", "airlock/7*"}, NULL, 1, 1},
    {{"!airlock/**"}, NULL, 0, 1},
    /* `!` is special only at the start; `\` escapes */
    {{"airlock/!*"}, NULL, 0, 1},
    {{"airlock\\/**"}, NULL, 1, 0},
    /* one name: the base branch */
    {{"main"}, "main", 1, 0},
    {{"release/**"}, "main", 0, 1},
    {{"ma[a-z]n"}, "main", 1, 0},
    {{"MAIN"}, "main", 0, 1},
    /* refused: no rule for them (never guessed) */
    {{"airlock/[a-"}, NULL, -1, -1},
    {{"airlock/[]"}, NULL, -1, -1},
    {{"airlock/[!a]"}, NULL, -1, -1},
    {{"+airlock"}, NULL, -1, -1},
    {{"airlock/**+"}, NULL, -1, -1},
    {{"airlock/\\"}, NULL, -1, -1},
    /* the answer differs between the two readings of `?` */
    {{"airlock/?-*"}, NULL, -1, -1},
};

static void test_globs(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof globs / sizeof globs[0]; i++) {
    const struct grow *g = &globs[i];
    size_t n = 0;
    while (n < 4 && g->pats[n])
      n++;
    al_wfg_subject s = {.name = g->name, .run_prefix = "airlock/"};
    al_wfg_result r;
    char why[300] = "";
    int rc = al_wfg_judge(g->pats, n, &s, &r, why, sizeof why);
    if (g->sel < 0) {
      if (rc == 0)
        fail_msg("glob row %zu (%s): expected a refusal", i, g->pats[0]);
      assert_true(why[0] != '\0');
      continue;
    }
    if (rc != 0)
      fail_msg("glob row %zu (%s): refused: %s", i, g->pats[0], why);
    if ((int)r.some_selected != g->sel || (int)r.some_unselected != g->unsel)
      fail_msg("glob row %zu (%s): selected %d unselected %d, expected %d %d (e.g. %s / %s)", i,
               g->pats[0], r.some_selected, r.some_unselected, g->sel, g->unsel, r.selected_example,
               r.unselected_example);
    if (r.some_selected && !g->name)
      assert_true(strncmp(r.selected_example, "airlock/", 8) == 0);
  }
}

/* ---- workflows -------------------------------------------------------- */

enum { PUB = 0, PRIV = 1 };
enum { DREAD = 0, DWRITE = 1, DUNK = 2 };

struct wrow {
  const char *what;
  int vis, defperm;
  const char *expect;      /* secrets oidc token runner private base: P W F U */
  const char *files[3][2]; /* path, text */
};

#define CI ".github/workflows/ci.yml"
#define DEPLOY ".github/workflows/deploy.yml"
#define REUSE ".github/workflows/reuse.yml"

static const struct wrow rows[] = {
    {"push+pull_request with a secret (the issue's ci.yml)",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on: [push, pull_request]\n"
           "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - uses: actions/checkout@v4\n      - run: make test\n"
           "        env:\n          TOKEN: ${{ secrets.DEPLOY_TOKEN }}\n"}}},
    {"remedy: branches-ignore the run branches, guard the PR job",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on:\n  push:\n    branches-ignore: ['airlock/**']\n  pull_request:\n"
           "jobs:\n  test:\n    if: ${{ !startsWith(github.head_ref, 'airlock/') }}\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n"
           "        env:\n          TOKEN: ${{ secrets.DEPLOY_TOKEN }}\n"}}},
    {"the head_ref guard alone does not cover push",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on: [push, pull_request]\njobs:\n  test:\n"
           "    if: \"!startsWith(github.head_ref, 'airlock/')\"\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.X }}\n"}}},
    {"OIDC deploy on every branch",
     PUB,
     DREAD,
     "PFPPPP",
     {{DEPLOY, "name: Deploy\non:\n  push:\n    branches: [\"**\"]\n"
               "permissions:\n  id-token: write\n  contents: read\n"
               "jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    steps:\n"
               "      - uses: aws-actions/configure-aws-credentials@v4\n"
               "        with:\n          role-to-assume: arn:aws:iam::1:role/deploy\n"}}},
    {"remedy: OIDC deploy only from main",
     PUB,
     DREAD,
     "PPPPPP",
     {{DEPLOY,
       "on:\n  push:\n    branches: [main]\npermissions:\n  id-token: write\n"
       "jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    steps:\n      - run: ./deploy\n"}}},
    {"a read-only PR workflow in a private repository",
     PRIV,
     DREAD,
     "PPPPFP",
     {{CI, "on: pull_request\npermissions:\n  contents: read\n"
           "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - uses: actions/checkout@v4\n      - run: npm test\n"}}},
    {"the same workflow in a public repository",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on: pull_request\npermissions:\n  contents: read\n"
           "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - uses: actions/checkout@v4\n      - run: npm test\n"}}},
    {"private: CI only on main and by hand",
     PRIV,
     DWRITE,
     "PPPPPP",
     {{CI, "on:\n  push:\n    branches: [main]\n  workflow_dispatch:\n  schedule:\n"
           "    - cron: '0 3 * * *'\njobs:\n  build:\n    runs-on: self-hosted\n    steps:\n"
           "      - run: make release\n        env:\n          K: ${{ secrets.K }}\n"}}},
    {"pull_request_target checking out the PR head",
     PUB,
     DREAD,
     "FPFPPF",
     {{CI, "on: pull_request_target\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - uses: actions/checkout@v4\n        with:\n"
           "          ref: ${{ github.event.pull_request.head.sha }}\n"
           "      - run: make test\n        env:\n          T: ${{ secrets.NPM_TOKEN }}\n"}}},
    {"pull_request_target on the base's code only: a caution",
     PUB,
     DREAD,
     "PPPPPW",
     {{CI, "on:\n  pull_request_target:\n    types: [opened]\njobs:\n  label:\n"
           "    runs-on: ubuntu-latest\n    permissions:\n      pull-requests: write\n"
           "    steps:\n      - uses: actions/labeler@v5\n"}}},
    {"`*` does not cross `/`: airlock/* excludes every run branch",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on:\n  push:\n    branches-ignore: ['airlock/*']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"air* selects no run branch; air** selects them all",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on:\n  push:\n    branches: ['air*']\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
           "    steps:\n      - run: echo ${{ secrets.S }}\n"},
      {DEPLOY, "on:\n  push:\n    branches: ['air**']\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
               "    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"class and +: airlock/[0-9]+-* selects the run branches",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on:\n  push:\n    branches: ['airlock/[0-9]+-*']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"negation: every branch but the run branches",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on:\n  push:\n    branches: ['**', '!airlock/**']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"order: a later positive includes some run branches again",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on:\n  push:\n    branches: ['**', '!airlock/**', 'airlock/1*']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"branches-ignore with a negation lets some run branches through",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on:\n  push:\n    branches-ignore: ['airlock/**', '!airlock/12*']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"push with tags only: a branch push does not fire",
     PUB,
     DWRITE,
     "PPPPPP",
     {{CI, "on:\n  push:\n    tags: ['v*']\njobs:\n  release:\n    runs-on: ubuntu-latest\n"
           "    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"a paths filter is taken as firing",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on:\n  push:\n    branches: ['**']\n    paths: ['src/**']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"pull_request into release branches only (the base is main)",
     PUB,
     DWRITE,
     "PPPPPP",
     {{CI, "on:\n  pull_request:\n    branches: ['release/**']\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"types: [closed] fires when a reviewer rejects the PR",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on:\n  pull_request:\n    types: [closed]\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"types: [closed] with the merged guard runs only after approval",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on:\n  pull_request:\n    types: [closed]\njobs:\n  a:\n"
           "    if: github.event.pull_request.merged == true\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"create fires when the run branch is pushed for the first time",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on: create\n"
           "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - uses: actions/checkout@v4\n      - run: make\n"
           "        env:\n          T: ${{ secrets.DEPLOY_TOKEN }}\n"}}},
    {"a secret after `}}` inside an expression's string literal",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on: push\n"
           "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - run: echo \"${{ format('}}{0}', secrets.DEPLOY_TOKEN) }}\"\n"}}},
    {"workflow_dispatch and schedule only: nothing fires",
     PRIV,
     DWRITE,
     "PPPPPP",
     {{CI, "on:\n  workflow_dispatch:\n  schedule:\n    - cron: '0 0 * * 0'\njobs:\n  a:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"workflow_run chain: deploy after CI, with the head's artifacts",
     PUB,
     DREAD,
     "FPPPPF",
     {{CI, "name: CI\non: [push]\npermissions: {}\njobs:\n  t:\n    runs-on: ubuntu-latest\n"
           "    steps:\n      - run: make\n"},
      {DEPLOY, "on:\n  workflow_run:\n    workflows: [CI]\n    types: [completed]\njobs:\n"
               "  d:\n    runs-on: ubuntu-latest\n    permissions:\n      contents: read\n"
               "    steps:\n      - uses: actions/download-artifact@v4\n"
               "      - run: ./publish\n        env:\n          T: ${{ secrets.PUBLISH }}\n"}}},
    {"workflow_run after a workflow that never fires for a run",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "name: CI\non:\n  push:\n    branches: [main]\njobs:\n  t:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: make\n"},
      {DEPLOY, "on:\n  workflow_run:\n    workflows: [CI]\njobs:\n  d:\n"
               "    runs-on: ubuntu-latest\n    steps:\n"
               "      - run: git checkout ${{ github.event.workflow_run.head_sha }}\n"
               "        env:\n          T: ${{ secrets.PUBLISH }}\n"}}},
    {"a local reusable workflow with secrets: inherit",
     PUB,
     DREAD,
     "FPPFPP",
     {{CI, "on: push\npermissions:\n  contents: read\njobs:\n  call:\n"
           "    uses: ./.github/workflows/reuse.yml\n    secrets: inherit\n"},
      {REUSE, "on: workflow_call\njobs:\n  build:\n    runs-on: [self-hosted, linux]\n"
              "    steps:\n      - run: make\n"}}},
    {"a remote reusable workflow with secrets: inherit",
     PUB,
     DREAD,
     "FPPUPP",
     {{CI, "on: pull_request\npermissions: read-all\njobs:\n  call:\n"
           "    uses: acme/shared/.github/workflows/ci.yml@v1\n    secrets: inherit\n"}}},
    {"a self-hosted runner on pull requests",
     PUB,
     DREAD,
     "PPPFPP",
     {{CI, "on: pull_request\njobs:\n  t:\n    runs-on: [self-hosted, gpu]\n    steps:\n"
           "      - run: make test\n"}}},
    {"a matrix of GitHub-hosted runners",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on: pull_request\njobs:\n  t:\n    strategy:\n      matrix:\n"
           "        os: [ubuntu-latest, windows-latest, macos-14]\n"
           "    runs-on: ${{ matrix.os }}\n    steps:\n      - run: make test\n"}}},
    {"a matrix that includes a self-hosted runner",
     PUB,
     DREAD,
     "PPPFPP",
     {{CI, "on: pull_request\njobs:\n  t:\n    strategy:\n      matrix:\n"
           "        os: [ubuntu-latest]\n        include:\n          - os: build-farm\n"
           "    runs-on: ${{ matrix.os }}\n    steps:\n      - run: make test\n"}}},
    {"a runner group",
     PUB,
     DREAD,
     "PPPFPP",
     {{CI, "on: push\njobs:\n  t:\n    runs-on:\n      group: big\n    steps:\n      - run: x\n"}}},
    {"an environment with required reviewers gates the job",
     PRIV,
     DWRITE,
     "PPPPPP",
     {{DEPLOY, "on: push\njobs:\n  d:\n    environment: production\n"
               "    runs-on: self-hosted\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"an environment without reviewers: its secrets",
     PUB,
     DREAD,
     "FPPPPP",
     {{DEPLOY, "on: push\njobs:\n  d:\n    environment:\n      name: staging\n"
               "    runs-on: ubuntu-latest\n    steps:\n      - run: ./deploy\n"}}},
    {"no permissions: the repository default is read and write",
     PUB,
     DWRITE,
     "PPFPPP",
     {{CI, "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: x\n"}}},
    {"no permissions and the default could not be read",
     PUB,
     DUNK,
     "PPUPPP",
     {{CI, "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: x\n"}}},
    {"write-all",
     PUB,
     DREAD,
     "PFFPPP",
     {{CI, "on: push\npermissions: write-all\njobs:\n  t:\n    runs-on: ubuntu-latest\n"
           "    steps:\n      - run: x\n"}}},
    {"only secrets.GITHUB_TOKEN (judged by its permissions)",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - run: gh pr list\n        env:\n          GH_TOKEN: ${{ secrets.GITHUB_TOKEN "
           "}}\n"}}},
    {"a secret in the workflow's env",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on: push\nenv:\n  K: ${{ secrets['API_KEY'] }}\njobs:\n  t:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: x\n"}}},
    {"guard: event_name == workflow_dispatch",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on: [push, workflow_dispatch]\njobs:\n  t:\n"
           "    if: github.event_name == 'workflow_dispatch'\n    runs-on: ubuntu-latest\n"
           "    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"guard: ref == refs/heads/main (push and pull_request)",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on: [push, pull_request]\njobs:\n  t:\n"
           "    if: ${{ github.ref == 'refs/heads/main' && success() }}\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"guard: the PR comes from another repository",
     PUB,
     DREAD,
     "PPPPPP",
     {{CI, "on: pull_request_target\njobs:\n  t:\n"
           "    if: github.event.pull_request.head.repo.full_name != github.repository\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"
           "      - run: git checkout ${{ github.head_ref }}\n"}}},
    {"head.repo.fork is no guard (a forked repository's own PRs)",
     PUB,
     DREAD,
     "FPFPPF",
     {{CI, "on: pull_request_target\njobs:\n  t:\n"
           "    if: github.event.pull_request.head.repo.fork\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"
           "      - run: git checkout ${{ github.head_ref }}\n"}}},
    {"a guard with || is no guard",
     PUB,
     DREAD,
     "FPPPPP",
     {{CI, "on: [push]\njobs:\n  t:\n"
           "    if: github.ref == 'refs/heads/main' || github.event_name == 'push'\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ secrets.S }}\n"}}},
    {"check_suite checking out the head (write-all: OIDC too)",
     PUB,
     DREAD,
     "FFFPPF",
     {{CI, "on:\n  check_suite:\n    types: [completed]\npermissions: write-all\njobs:\n  t:\n"
           "    runs-on: ubuntu-latest\n    steps:\n      - run: git checkout "
           "${{ github.event.check_suite.head_sha }} && make\n"
           "        env:\n          T: ${{ secrets.T }}\n"}}},
    {"issue_comment with the comment body in a script",
     PUB,
     DREAD,
     "FPPPPF",
     {{CI, "on: issue_comment\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - run: echo \"${{ github.event.comment.body }}\"\n"
           "        env:\n          T: ${{ secrets.T }}\n"}}},
    {"YAML aliases are not followed",
     PUB,
     DREAD,
     "UUUUUU",
     {{CI, "on: push\njobs:\n  a: &j\n    runs-on: ubuntu-latest\n    steps: [{run: x}]\n"
           "  b: *j\n"}}},
    {"a file that does not parse", PUB, DREAD, "UUUUUU", {{CI, "on: [push\njobs: {\n"}}},
    {"no on:", PUB, DREAD, "UUUUUU", {{CI, "jobs:\n  a:\n    runs-on: ubuntu-latest\n"}}},
    {"branches and branches-ignore together",
     PUB,
     DREAD,
     "UUUUUU",
     {{CI, "on:\n  push:\n    branches: [main]\n    branches-ignore: [dev]\njobs: {}\n"}}},
    {"an ambiguous `?` in a filter",
     PUB,
     DREAD,
     "UUUUUU",
     {{CI, "on:\n  push:\n    branches: ['airlock/?-*']\njobs: {}\n"}}},
};

static const al_wf_env envs[] = {{"production", true}, {"staging", false}};

static char letter(al_wf_status s)
{
  return s == AL_WF_PASS ? 'P' : s == AL_WF_WARN ? 'W' : s == AL_WF_FAIL ? 'F' : 'U';
}

static void judge_row(const struct wrow *w, char got[7], al_wf_verdict v[AL_WF_C_N])
{
  al_wf_file files[3];
  size_t n = 0;
  for (; n < 3 && w->files[n][0]; n++)
    files[n] =
        (al_wf_file){.path = w->files[n][0], .text = w->files[n][1], .len = strlen(w->files[n][1])};
  al_wf_repo repo = {
      .run_prefix = "airlock/",
      .base_branch = "main",
      .visibility = w->vis == PRIV ? AL_WF_VIS_PRIVATE : AL_WF_VIS_PUBLIC,
      .default_perms = w->defperm == DREAD    ? AL_WF_LEVEL_READ
                       : w->defperm == DWRITE ? AL_WF_LEVEL_WRITE
                                              : AL_WF_LEVEL_UNKNOWN,
      .perms_why = "HTTP 403",
      .files_known = true,
      .files = files,
      .n_files = n,
      .envs_known = true,
      .envs = envs,
      .n_envs = 2,
  };
  al_wf_judge(&repo, v);
  for (int c = 0; c < AL_WF_C_N; c++)
    got[c] = letter(v[c].status);
  got[6] = '\0';
}

static void test_workflow_table(void **state)
{
  (void)state;
  assert_true(sizeof rows / sizeof rows[0] >= 25);
  int bad = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    al_wf_verdict v[AL_WF_C_N];
    char got[7];
    judge_row(&rows[i], got, v);
    if (strcmp(got, rows[i].expect) != 0) {
      bad++;
      print_error("row %zu (%s): got %s, expected %s\n", i, rows[i].what, got, rows[i].expect);
      for (int c = 0; c < AL_WF_C_N; c++)
        print_error("   %s %c: %s\n", al_wf_crit_id((al_wf_crit)c), got[c], v[c].evidence);
    }
    for (int c = 0; c < AL_WF_C_N; c++) {
      assert_non_null(v[c].evidence);
      /* a finding names the file; a non-PASS has a fix */
      if (got[c] == 'F')
        assert_non_null(strstr(v[c].evidence, ".github/workflows/"));
      if (got[c] != 'P')
        assert_non_null(v[c].fix);
    }
    al_wf_verdicts_free(v);
  }
  assert_int_equal(bad, 0);
}

/* The finding says the trigger, the job and what it reaches, and the fix
 * gives the run prefix. */
static void test_finding_text(void **state)
{
  (void)state;
  al_wf_verdict v[AL_WF_C_N];
  char got[7];
  judge_row(&rows[0], got, v);
  const char *e = v[AL_WF_C_SECRETS].evidence;
  assert_non_null(strstr(e, ".github/workflows/ci.yml"));
  assert_non_null(strstr(e, "push"));
  assert_non_null(strstr(e, "job `test`"));
  assert_non_null(strstr(e, "secrets.DEPLOY_TOKEN"));
  assert_non_null(strstr(v[AL_WF_C_SECRETS].fix, "branches-ignore: ['airlock/**']"));
  al_wf_verdicts_free(v);
}

/* Unreadable directory or file: UNKNOWN, never a pass; Actions disabled:
 * nothing runs. */
static void test_unknowns(void **state)
{
  (void)state;
  al_wf_verdict v[AL_WF_C_N];
  al_wf_repo repo = {.run_prefix = "airlock/",
                     .base_branch = "main",
                     .visibility = AL_WF_VIS_PUBLIC,
                     .files_known = false,
                     .files_why = "HTTP 403: Resource not accessible by integration"};
  al_wf_judge(&repo, v);
  for (int c = 0; c < AL_WF_C_N; c++)
    assert_int_equal(v[c].status, AL_WF_UNKNOWN);
  al_wf_verdicts_free(v);
  al_wf_file f = {.path = CI, .text = NULL, .why = "HTTP 404"};
  repo.files_known = true;
  repo.files = &f;
  repo.n_files = 1;
  al_wf_judge(&repo, v);
  for (int c = 0; c < AL_WF_C_N; c++)
    assert_int_equal(v[c].status, AL_WF_UNKNOWN);
  al_wf_verdicts_free(v);
  repo.actions_disabled = true;
  al_wf_judge(&repo, v);
  for (int c = 0; c < AL_WF_C_N; c++)
    assert_int_equal(v[c].status, AL_WF_PASS);
  al_wf_verdicts_free(v);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_globs),
      cmocka_unit_test(test_workflow_table),
      cmocka_unit_test(test_finding_text),
      cmocka_unit_test(test_unknowns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
