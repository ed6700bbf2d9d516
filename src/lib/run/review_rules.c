#include "run/review.h"

#include <ctype.h>
#include <fnmatch.h>
#include <string.h>

#include "common/redact.h"
#include "common/util.h"

/* Each rule: an fnmatch(3) pattern over the whole path (FNM_PATHNAME off,
 * so `*` crosses '/'), matched case-insensitively, and why it matters. */
static const struct {
  const char *pattern;
  const char *why;
} rules[] = {
    {".github/workflows/*", "GitHub Actions workflow: runs in CI with the repository's secrets"},
    {".github/actions/*", "GitHub Actions composite action: runs in CI"},
    {"*action.yml", "GitHub Action definition: runs in CI"},
    {"*action.yaml", "GitHub Action definition: runs in CI"},
    {".github/dependabot.yml", "Dependabot config: changes what is fetched and updated"},
    {".github/codeowners", "CODEOWNERS: changes who must review"},
    {"codeowners", "CODEOWNERS: changes who must review"},
    {"docs/codeowners", "CODEOWNERS: changes who must review"},
    {".gitlab-ci.yml", "GitLab CI pipeline"},
    {".circleci/*", "CircleCI pipeline"},
    {".travis.yml", "Travis CI pipeline"},
    {"azure-pipelines*.yml", "Azure Pipelines"},
    {"jenkinsfile", "Jenkins pipeline"},
    {".buildkite/*", "Buildkite pipeline"},
    {".githooks/*", "git hooks directory: runs on developers' machines"},
    {".husky/*", "husky git hooks: runs on developers' machines"},
    {".pre-commit-config.yaml", "pre-commit hooks: runs on developers' machines"},
    {".gitattributes", "git attributes: filters and diff drivers can run commands"},
    {".gitmodules", "submodules: fetched from other URLs"},
    {".gitconfig", "git configuration"},
    {"*.gitconfig", "git configuration"},
    {".lfsconfig", "git LFS configuration: changes where objects come from"},
    {"package.json", "npm package: install/test scripts run on install"},
    {"*/package.json", "npm package: install/test scripts run on install"},
    {".npmrc", "npm configuration: registry and scripts"},
    {".yarnrc*", "yarn configuration"},
    {"setup.py", "Python build script: runs on install"},
    {"*/setup.py", "Python build script: runs on install"},
    {"setup.cfg", "Python build configuration"},
    {"pyproject.toml", "Python build configuration: build backend runs on install"},
    {"*/pyproject.toml", "Python build configuration: build backend runs on install"},
    {"conftest.py", "pytest plugin: runs with the tests"},
    {"*/conftest.py", "pytest plugin: runs with the tests"},
    {"tox.ini", "tox: runs commands"},
    {"noxfile.py", "nox: runs commands"},
    {"requirements*.txt", "Python dependencies: what gets installed"},
    {"makefile", "Makefile: runs commands"},
    {"*/makefile", "Makefile: runs commands"},
    {"gnumakefile", "Makefile: runs commands"},
    {"*.mk", "make include: runs commands"},
    {"cmakelists.txt", "CMake build script"},
    {"*/cmakelists.txt", "CMake build script"},
    {"*.cmake", "CMake script"},
    {"meson.build", "Meson build script: runs commands"},
    {"*/meson.build", "Meson build script: runs commands"},
    {"meson_options.txt", "Meson options"},
    {"configure", "configure script"},
    {"configure.ac", "autoconf input: generates the configure script"},
    {"build.gradle*", "Gradle build script"},
    {"settings.gradle*", "Gradle settings"},
    {"gradlew*", "Gradle wrapper: downloads and runs a build tool"},
    {"pom.xml", "Maven build: plugins run"},
    {"cargo.toml", "Cargo manifest: build scripts and dependencies"},
    {"build.rs", "Cargo build script: runs at build time"},
    {"*/build.rs", "Cargo build script: runs at build time"},
    {"go.mod", "Go module: dependencies"},
    {"rakefile", "Rake tasks"},
    {"gemfile", "Ruby dependencies"},
    {"*.gemspec", "Ruby gem spec"},
    {"dockerfile*", "Dockerfile: image builds run commands"},
    {"*/dockerfile*", "Dockerfile: image builds run commands"},
    {"docker-compose*.yml", "Compose file: runs containers"},
    {"compose*.yaml", "Compose file: runs containers"},
    {".devcontainer/*", "dev container: runs on developers' machines"},
    {".devcontainer.json", "dev container: runs on developers' machines"},
    {".vscode/*", "VS Code settings and tasks: run in developers' editors"},
    {".idea/*", "JetBrains settings: run configurations"},
    {".claude/*", "Claude Code settings, hooks and commands: run for the next agent or developer"},
    {"claude.md", "agent instructions: read by the next agent"},
    {"*/claude.md", "agent instructions: read by the next agent"},
    {"agents.md", "agent instructions: read by the next agent"},
    {".cursor/*", "Cursor settings and rules"},
    {".cursorrules", "Cursor rules: read by the next agent"},
    {".mcp.json", "MCP servers: commands the next agent will start"},
    {".envrc", "direnv: runs when a developer enters the directory"},
    {".editorconfig", "editor configuration"},
    {".bashrc", "shell startup file"},
    {".profile", "shell startup file"},
};

const char *al_review_runs_outside(const char *path)
{
  char low[1024];
  size_t n = strlen(path);
  if (n >= sizeof low)
    return "path longer than 1 KiB";
  for (size_t i = 0; i <= n; i++)
    low[i] = (char)tolower((unsigned char)path[i]);
  for (size_t i = 0; i < AL_ARRAY_SIZE(rules); i++)
    if (fnmatch(rules[i].pattern, low, 0) == 0)
      return rules[i].why;
  return NULL;
}

size_t al_review_scan_secrets(const char *text, const char *where, const char *const *run_fps,
                              size_t nfps, json_t *found)
{
  size_t count = 0;
  if (!text)
    return 0;
  for (const char *p = text; *p; p++) {
    size_t len = 0;
    if (p[0] == 'g' && p[1] == 'h' && p[2] && strchr("pousr", p[2]) && p[3] == '_') {
      size_t k = 4;
      while (isalnum((unsigned char)p[k]) || p[k] == '_' || p[k] == '.' || p[k] == '-')
        k++;
      if (k - 4 >= 36)
        len = k;
    } else if (strncmp(p, "github_pat_", 11) == 0) {
      size_t k = 11;
      while (isalnum((unsigned char)p[k]) || p[k] == '_')
        k++;
      if (k - 11 >= 22)
        len = k;
    }
    if (!len)
      continue;
    al_autofree char *tok = al_xmalloc(len + 1);
    memcpy(tok, p, len);
    tok[len] = '\0';
    char fp[20];
    al_secret_fingerprint(tok, fp);
    explicit_bzero(tok, len);
    bool mine = false;
    for (size_t i = 0; i < nfps; i++)
      if (run_fps[i] && strcmp(run_fps[i], fp) == 0)
        mine = true;
    json_array_append_new(
        found, json_pack("{s:s, s:s, s:b}", "where", where, "fingerprint", fp, "run_token", mine));
    count++;
    p += len - 1;
  }
  return count;
}
