/* The catalogue of files that run outside the sandbox later (see
 * review/catalogue.h for how a pattern matches). To extend it, add a row
 * to `rules` in the family's block: lower-case pattern, and the reason in
 * words a reviewer acts on (what runs, when, for whom). Order matters only
 * where a specific rule must win over a catch-all of the same prefix
 * (first match wins), e.g. `.github/copilot-instructions.md` before
 * the `.github/` catch-all. docs/review.md lists every pattern (a unit test checks). */
#include "review/catalogue.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "common/util.h"

static const al_review_family families[] = {
    {"ci", "CI and deploy pipelines"},
    {"git", "git itself: hooks, attributes, submodules, config, nested repositories"},
    {"hooks", "git hook managers"},
    {"build", "build tools"},
    {"package", "package managers, dependencies and lockfiles"},
    {"test", "test runners, their configuration and plugins"},
    {"script", "scripts that build and test commands run"},
    {"editor", "editors and dev containers"},
    {"agent", "coding-agent instructions, settings and MCP servers"},
    {"env", "environment loaders and tool-version files"},
    {"credentials", "credential and client configuration files"},
    {"review", "who reviews, what is shown, what bots do"},
    {"name", "file names"},
};

/* clang-format off */
static const al_review_rule rules[] = {
    /* --- coding agents (before the .github/ and .vscode/ catch-alls) --- */
    {"agent", ".github/copilot-instructions.md", "GitHub Copilot instructions: obeyed by the next Copilot agent or chat in this repository"},
    {"agent", "copilot-instructions.md", "Copilot instructions: obeyed by the next Copilot agent"},
    {"agent", ".github/instructions/*", "Copilot path-specific instructions: obeyed by the next Copilot agent"},
    {"agent", ".github/prompts/*", "Copilot prompt files: run as the next agent's prompts"},
    {"agent", ".github/chatmodes/*", "Copilot chat modes: tools and instructions for the next agent"},
    {"agent", ".github/agents/*", "Copilot custom agents: instructions and tools for the next agent"},
    {"agent", ".github/copilot/*", "Copilot agent settings (e.g. its MCP servers and setup steps)"},
    {"agent", ".vscode/mcp.json", "VS Code MCP servers: commands the editor's agent starts"},
    {"agent", "claude.md", "Claude Code memory: instructions the next agent obeys"},
    {"agent", "claude.local.md", "Claude Code memory: instructions the next agent obeys"},
    {"agent", ".claude/*", "Claude Code settings, hooks, commands and agents: hooks run shell commands for the next agent or developer"},
    {"agent", "agents.md", "AGENTS.md: instructions the next coding agent (Codex, Jules, Cursor, ...) obeys"},
    {"agent", "agent.md", "agent instructions: obeyed by the next coding agent"},
    {"agent", ".codex/*", "Codex settings and instructions: run for the next Codex agent"},
    {"agent", "gemini.md", "Gemini CLI context: instructions the next agent obeys"},
    {"agent", ".gemini/*", "Gemini CLI settings: MCP servers, tools and instructions for the next agent"},
    {"agent", ".cursor/*", "Cursor rules, MCP servers and settings: for the next agent"},
    {"agent", ".cursorrules", "Cursor rules: obeyed by the next agent"},
    {"agent", ".cursorignore", "Cursor ignore list: hides files from the next agent"},
    {"agent", ".windsurfrules", "Windsurf rules: obeyed by the next agent"},
    {"agent", ".windsurf/*", "Windsurf rules and workflows: for the next agent"},
    {"agent", ".codeium/*", "Codeium/Windsurf settings: for the next agent"},
    {"agent", ".mcp.json", "MCP servers: commands the next agent starts"},
    {"agent", "mcp.json", "MCP servers: commands the next agent starts"},
    {"agent", "*mcp*.json", "MCP server configuration: commands an agent starts"},
    {"agent", ".clinerules", "Cline rules: obeyed by the next agent"},
    {"agent", ".clinerules/*", "Cline rules: obeyed by the next agent"},
    {"agent", ".roo/*", "Roo Code rules and modes: for the next agent"},
    {"agent", ".roomodes", "Roo Code modes: tools and instructions for the next agent"},
    {"agent", ".aider*", "aider configuration: commands, models and files for the next agent"},
    {"agent", ".continue/*", "Continue settings: models, tools and MCP servers for the next agent"},
    {"agent", ".continuerc.json", "Continue settings for the next agent"},
    {"agent", ".goosehints", "Goose hints: instructions the next agent obeys"},
    {"agent", ".junie/*", "JetBrains Junie guidelines: instructions the next agent obeys"},
    {"agent", ".amazonq/*", "Amazon Q rules and MCP servers: for the next agent"},
    {"agent", ".kiro/*", "Kiro steering, hooks and MCP servers: for the next agent"},
    {"agent", ".augment*", "Augment rules and guidelines: for the next agent"},
    {"agent", ".opencode/*", "opencode agents, commands and plugins: for the next agent"},
    {"agent", "opencode.json", "opencode configuration: MCP servers and commands for the next agent"},
    {"agent", ".openhands/*", "OpenHands microagents and setup script: run for the next agent"},
    {"agent", ".rules", "Zed agent rules: obeyed by the next agent"},

    /* --- review: who reviews and what the reviewer sees --- */
    {"review", ".github/codeowners", "CODEOWNERS: changes who must review"},
    {"review", "codeowners", "CODEOWNERS: changes who must review"},
    {"review", ".gitlab/codeowners", "GitLab CODEOWNERS: changes who must approve"},
    {"review", ".github/settings.yml", "Probot Settings app: applies repository settings (branch protection included) when merged"},
    {"review", ".github/dependabot.yml", "Dependabot: changes what is fetched and which PRs a bot opens"},
    {"review", ".github/dependabot.yaml", "Dependabot: changes what is fetched and which PRs a bot opens"},
    {"review", "renovate.json", "Renovate: changes what a bot updates and automerges"},
    {"review", "renovate.json5", "Renovate: changes what a bot updates and automerges"},
    {"review", ".renovaterc*", "Renovate: changes what a bot updates and automerges"},
    {"review", ".github/renovate.json*", "Renovate: changes what a bot updates and automerges"},
    {"review", ".mailmap", "mailmap: rewrites who authored commits in git log and blame"},
    {"review", ".git-blame-ignore-revs", "blame ignore list: hides commits from git blame and the forge's blame view"},

    /* --- CI and deploy --- */
    {"ci", ".github/workflows/*", "GitHub Actions workflow: runs in CI with the repository's secrets"},
    {"ci", ".github/actions/*", "GitHub Actions action: runs in CI when a workflow uses it"},
    {"ci", "action.yml", "GitHub Action definition: runs in CI when a workflow uses it"},
    {"ci", "action.yaml", "GitHub Action definition: runs in CI when a workflow uses it"},
    {"ci", ".github/*", "GitHub repository configuration: read by GitHub, its apps and Actions"},
    {"ci", ".gitlab-ci.yml", "GitLab CI pipeline: runs with the project's CI variables"},
    {"ci", ".gitlab-ci.yaml", "GitLab CI pipeline: runs with the project's CI variables"},
    {"ci", ".gitlab/ci/*", "GitLab CI include: runs in the pipeline"},
    {"ci", ".gitlab/*", "GitLab project configuration (CI includes, templates, agents)"},
    {"ci", ".forgejo/*", "Forgejo Actions workflow: runs in CI"},
    {"ci", ".gitea/*", "Gitea Actions workflow: runs in CI"},
    {"ci", ".circleci/*", "CircleCI pipeline: runs in CI"},
    {"ci", ".travis.yml", "Travis CI pipeline: runs in CI"},
    {"ci", "azure-pipelines*.yml", "Azure Pipelines: runs in CI"},
    {"ci", "azure-pipelines*.yaml", "Azure Pipelines: runs in CI"},
    {"ci", ".azure-pipelines/*", "Azure Pipelines: runs in CI"},
    {"ci", ".azuredevops/*", "Azure DevOps configuration: runs in CI"},
    {"ci", "jenkinsfile", "Jenkins pipeline: runs on the Jenkins agents"},
    {"ci", "jenkinsfile.*", "Jenkins pipeline: runs on the Jenkins agents"},
    {"ci", "*.jenkinsfile", "Jenkins pipeline: runs on the Jenkins agents"},
    {"ci", ".jenkins/*", "Jenkins pipeline files: run on the Jenkins agents"},
    {"ci", ".buildkite/*", "Buildkite pipeline: runs on the Buildkite agents"},
    {"ci", "buildkite.yml", "Buildkite pipeline: runs on the Buildkite agents"},
    {"ci", "buildkite.yaml", "Buildkite pipeline: runs on the Buildkite agents"},
    {"ci", ".drone.yml", "Drone pipeline: runs in CI"},
    {"ci", ".drone.yaml", "Drone pipeline: runs in CI"},
    {"ci", ".drone.jsonnet", "Drone pipeline: runs in CI"},
    {"ci", ".drone.star", "Drone pipeline: runs in CI"},
    {"ci", ".woodpecker.yml", "Woodpecker pipeline: runs in CI"},
    {"ci", ".woodpecker.yaml", "Woodpecker pipeline: runs in CI"},
    {"ci", ".woodpecker/*", "Woodpecker pipeline: runs in CI"},
    {"ci", "bitbucket-pipelines.yml", "Bitbucket Pipelines: runs in CI"},
    {"ci", ".cirrus.yml", "Cirrus CI: runs in CI"},
    {"ci", ".cirrus.star", "Cirrus CI: runs in CI"},
    {"ci", "appveyor.yml", "AppVeyor: runs in CI"},
    {"ci", ".appveyor.yml", "AppVeyor: runs in CI"},
    {"ci", ".semaphore/*", "Semaphore CI: runs in CI"},
    {"ci", ".builds/*", "sourcehut builds: run in CI"},
    {"ci", ".build.yml", "sourcehut build: runs in CI"},
    {"ci", ".tekton/*", "Tekton pipeline: runs in CI"},
    {"ci", "cloudbuild.yaml", "Google Cloud Build: runs with the project's service account"},
    {"ci", "cloudbuild.yml", "Google Cloud Build: runs with the project's service account"},
    {"ci", "buildspec.yml", "AWS CodeBuild: runs with the project's IAM role"},
    {"ci", "buildspec.yaml", "AWS CodeBuild: runs with the project's IAM role"},
    {"ci", "netlify.toml", "Netlify: build command runs on deploy"},
    {"ci", "vercel.json", "Vercel: build command runs on deploy"},
    {"ci", "procfile", "Procfile: processes started on deploy"},
    {"ci", "app.json", "Heroku app manifest: scripts run on deploy"},
    {"ci", "fly.toml", "Fly.io: release command runs on deploy"},
    {"ci", ".goreleaser.y*ml", "GoReleaser: hooks run when releasing"},

    /* --- git itself --- */
    {"git", ".git", "a `.git` entry in the tree: a nested repository or a gitdir link that git and tools follow"},
    {"git", ".git/*", "inside a `.git` directory in the tree: hooks and config of a nested repository run for whoever uses it"},
    {"git", ".gitattributes", "git attributes: filter, diff and merge drivers run commands; also changes how files show in the diff"},
    {"git", ".gitmodules", "submodules: URLs fetched on clone --recursive, and their update commands"},
    {"git", ".gitconfig", "git configuration: can name programs git runs"},
    {"git", "*.gitconfig", "git configuration: can name programs git runs"},
    {"git", ".lfsconfig", "git LFS configuration: changes where objects come from"},
    {"git", ".githooks/*", "git hooks directory: runs on developers' machines once core.hooksPath points here"},
    {"git", ".git-hooks/*", "git hooks directory: runs on developers' machines once core.hooksPath points here"},
    {"git", ".hooks/*", "hooks directory: runs on developers' machines once configured"},
    {"git", "githooks/*", "git hooks directory: runs on developers' machines once core.hooksPath points here"},
    {NULL, ".gitignore", NULL},
    {NULL, ".gitkeep", NULL},
    {"git", ".git*", "git-related configuration: read by git or the forge"},

    /* --- git hook managers --- */
    {"hooks", ".husky/*", "husky git hooks: run on every developer's commit and push"},
    {"hooks", ".pre-commit-config.yaml", "pre-commit hooks: fetched and run on developers' commits and in CI"},
    {"hooks", ".pre-commit-config.yml", "pre-commit hooks: fetched and run on developers' commits and in CI"},
    {"hooks", ".pre-commit-hooks.yaml", "pre-commit hook definitions: run by every repository that uses them"},
    {"hooks", "lefthook*.yml", "lefthook git hooks: run on developers' commits and pushes"},
    {"hooks", "lefthook*.yaml", "lefthook git hooks: run on developers' commits and pushes"},
    {"hooks", "lefthook*.toml", "lefthook git hooks: run on developers' commits and pushes"},
    {"hooks", "lefthook*.json", "lefthook git hooks: run on developers' commits and pushes"},
    {"hooks", ".lefthook*", "lefthook git hooks: run on developers' commits and pushes"},
    {"hooks", ".overcommit.yml", "overcommit git hooks: run on developers' commits"},
    {"hooks", "*simple-git-hooks*", "simple-git-hooks: git hooks installed on npm install"},
    {"hooks", ".lintstagedrc*", "lint-staged: commands run on every commit"},
    {"hooks", "lint-staged.config.*", "lint-staged: commands run on every commit"},
    {"hooks", "captainhook.json", "CaptainHook (PHP) git hooks: run on developers' commits"},
    {"hooks", "grumphp.yml", "GrumPHP git hooks: run on developers' commits"},
    {"hooks", ".rusty-hook.toml", "rusty-hook git hooks: run on developers' commits"},
    {"hooks", ".cargo-husky/*", "cargo-husky git hooks: installed by cargo test"},

    /* --- scripts (what `make test`, `npm test`, CI steps call) --- */
    {"script", "scripts/*", "script: run by the build, the test command or CI"},
    {"script", "script/*", "script (scripts-to-rule-them-all): run by the build, the test command or CI"},
    {"script", "bin/*", "program in bin/: run by the build, the test command, CI or developers"},
    {"script", ".bin/*", "program in .bin/: run by the build or developers"},
    {"script", "hack/*", "script in hack/: run by the build or CI"},
    {"script", "tools/*.sh", "shell script in tools/: run by the build or CI"},
    {"script", "autogen.sh", "autogen.sh: run to bootstrap the build"},

    /* --- test runners --- */
    {"test", "conftest.py", "pytest plugin (conftest.py): runs with the tests, at any depth of tests/"},
    {"test", "pytest.ini", "pytest configuration: addopts `-p` loads plugins, options change what runs"},
    {"test", ".pytest.ini", "pytest configuration: addopts `-p` loads plugins"},
    {"test", "tests/*plugin*", "test plugin: loaded by the test runner"},
    {"test", "test/*plugin*", "test plugin: loaded by the test runner"},
    {"test", "testing/*plugin*", "test plugin: loaded by the test runner"},
    {"test", "*setuptests.*", "test setup file: runs before every test file"},
    {"test", "*test-setup.*", "test setup file: runs before every test file"},
    {"test", "*test_setup.*", "test setup file: runs before every test file"},
    {"test", "jest.setup*", "Jest setup file: runs before every test file"},
    {"test", "vitest.setup*", "Vitest setup file: runs before every test file"},
    {"test", "*global-setup*", "test global setup: runs before the test suite"},
    {"test", "*globalsetup*", "test global setup: runs before the test suite"},
    {"test", "jest.config.*", "Jest configuration: loads transforms, setup files and reporters (JS config runs as code)"},
    {"test", "jest.preset.*", "Jest preset: loads transforms and setup files"},
    {"test", ".mocharc*", "Mocha configuration: `require` loads code before the tests"},
    {"test", "karma.conf.*", "Karma configuration: runs as code"},
    {"test", "cypress/plugins/*", "Cypress plugins: run in Node with the tests"},
    {"test", "cypress/support/*", "Cypress support file: runs before every spec"},
    {"test", "phpunit.xml*", "PHPUnit configuration: the bootstrap file runs before the tests"},
    {"test", ".rspec", "RSpec options: `--require` loads code before the specs"},
    {"test", ".rspec-local", "RSpec options: `--require` loads code before the specs"},
    {"test", "spec/spec_helper.rb", "RSpec helper: runs before the specs"},
    {"test", "spec/rails_helper.rb", "RSpec helper: runs before the specs"},
    {"test", "test/test_helper.rb", "Minitest helper: runs before the tests"},
    {"test", ".nycrc*", "nyc configuration: `require` loads code"},
    {"test", ".c8rc*", "c8 configuration"},
    {"test", "ava.config.*", "AVA configuration: runs as code"},
    {"test", "tests/meson.build", "Meson test definitions: what `meson test` runs"},

    /* --- build tools (C/C++, and the general-purpose ones) --- */
    {"build", "makefile", "Makefile: recipes run on make"},
    {"build", "gnumakefile", "Makefile: recipes run on make"},
    {"build", "*.mk", "make include: recipes run on make"},
    {"build", "*.mak", "make include: recipes run on make"},
    {"build", "makefile.am", "automake input: generates the Makefile"},
    {"build", "makefile.in", "Makefile template: configure turns it into the Makefile"},
    {"build", "cmakelists.txt", "CMake build script: runs commands at configure and build time"},
    {"build", "*.cmake", "CMake script: runs at configure time"},
    {"build", "cmakepresets.json", "CMake presets: toolchains and commands"},
    {"build", "cmakeuserpresets.json", "CMake presets: toolchains and commands"},
    {"build", "meson.build", "Meson build script: run_command() and custom targets run commands"},
    {"build", "meson_options.txt", "Meson options: change what the build does"},
    {"build", "meson.options", "Meson options: change what the build does"},
    {"build", "configure", "configure script: runs as a shell script"},
    {"build", "configure.ac", "autoconf input: generates the configure script"},
    {"build", "configure.in", "autoconf input: generates the configure script"},
    {"build", "conanfile.py", "Conan recipe: Python run at install and build time"},
    {"build", "conanfile.txt", "Conan dependencies: what gets fetched"},
    {"build", "vcpkg.json", "vcpkg manifest: what gets fetched and built"},
    {"build", "vcpkg-configuration.json", "vcpkg registries: where ports come from"},
    {"build", "sconstruct", "SCons build script: Python run on build"},
    {"build", "sconscript", "SCons build script: Python run on build"},
    {"build", "wscript", "waf build script: Python run on build"},
    {"build", "*.ninja", "Ninja build file: commands run on build"},
    {"build", "xmake.lua", "xmake build script: Lua run on build"},
    {"build", "premake*.lua", "premake build script: Lua run on build"},
    {"build", "taskfile*.yml", "Taskfile: commands run by `task`"},
    {"build", "taskfile*.yaml", "Taskfile: commands run by `task`"},
    {"build", "justfile", "justfile: recipes run by `just`"},
    {"build", ".justfile", "justfile: recipes run by `just`"},
    {"build", "*.just", "just module: recipes run by `just`"},
    {"build", "earthfile", "Earthfile: build steps run by Earthly"},
    {"build", "makefile.toml", "cargo-make tasks: commands run by `cargo make`"},
    {"build", "dockerfile*", "Dockerfile: RUN steps execute on image builds"},
    {"build", "*.dockerfile", "Dockerfile: RUN steps execute on image builds"},
    {"build", "containerfile*", "Containerfile: RUN steps execute on image builds"},
    {"build", "docker-compose*.yml", "Compose file: containers, mounts and commands run by `docker compose`"},
    {"build", "docker-compose*.yaml", "Compose file: containers, mounts and commands run by `docker compose`"},
    {"build", "compose*.yml", "Compose file: containers, mounts and commands run by `docker compose`"},
    {"build", "compose*.yaml", "Compose file: containers, mounts and commands run by `docker compose`"},
    {"build", "vagrantfile", "Vagrantfile: Ruby run by vagrant, provisioners run commands"},
    {"build", "tiltfile", "Tiltfile: Starlark run by tilt, runs commands"},
    {"build", "skaffold.yaml", "Skaffold: builds and hooks run commands"},
    {"build", "*.tf", "Terraform: providers and local-exec run in CI with cloud credentials"},
    {"build", "terragrunt.hcl", "Terragrunt: hooks run commands"},
    /* Bazel, Buck, Pants */
    {"build", "build", "Bazel BUILD file: rules and genrules run on build"},
    {"build", "build.bazel", "Bazel BUILD file: rules and genrules run on build"},
    {"build", "workspace", "Bazel WORKSPACE: fetches and runs repository rules"},
    {"build", "workspace.bazel", "Bazel WORKSPACE: fetches and runs repository rules"},
    {"build", "workspace.bzlmod", "Bazel WORKSPACE: fetches and runs repository rules"},
    {"build", "module.bazel", "Bazel module: fetches dependencies and runs extensions"},
    {"build", "*.bzl", "Starlark extension: runs in Bazel"},
    {"build", ".bazelrc", "Bazel options: can add --run_under, --action_env, startup flags"},
    {"build", ".bazelversion", "Bazel version: Bazelisk downloads and runs it"},
    {"build", ".bazeliskrc", "Bazelisk configuration: where Bazel is downloaded from"},
    {"build", "buck", "Buck build file: rules run on build"},
    {"build", ".buckconfig", "Buck configuration"},
    {"build", "pants.toml", "Pants configuration: plugins and backends"},
    /* Python */
    {"build", "setup.py", "Python build script: runs on pip install and build"},
    {"build", "pyproject.toml", "Python project: the build backend runs on install; tool sections configure pytest, hatch scripts, ..."},
    {"build", "setup.cfg", "Python build configuration (also [tool:pytest] addopts)"},
    {"test", "tox.ini", "tox: commands run for each environment (and [pytest] addopts)"},
    {"build", "noxfile.py", "nox sessions: Python that runs commands"},
    {"build", "sitecustomize.py", "sitecustomize: Python runs it at every interpreter start-up"},
    {"build", "usercustomize.py", "usercustomize: Python runs it at every interpreter start-up"},
    {"build", "*.pth", ".pth file: `import` lines in it run at every interpreter start-up"},
    {"build", "hatch.toml", "Hatch: environment scripts run commands"},
    {"build", "pixi.toml", "pixi: tasks run commands"},
    {"build", "fabfile.py", "Fabric tasks: run commands"},
    {"build", "dodo.py", "doit tasks: run commands"},
    {"build", "pavement.py", "Paver tasks: run commands"},
    {"build", "tasks.py", "invoke tasks: run commands"},
    {"package", "requirements*.txt", "Python dependencies: what pip installs (URLs and options included)"},
    {"package", "requirements/*", "Python dependencies: what pip installs"},
    {"package", "constraints*.txt", "Python constraints: which versions pip installs"},
    {"package", "pipfile", "Pipfile: what pipenv installs, and its scripts"},
    {"package", "pipfile.lock", "Pipfile.lock: exactly what pipenv installs"},
    {"package", "poetry.lock", "poetry.lock: exactly what poetry installs"},
    {"package", "uv.lock", "uv.lock: exactly what uv installs"},
    {"package", "pdm.lock", "pdm.lock: exactly what pdm installs"},
    {"package", "environment.y*ml", "conda environment: what gets installed"},
    {"package", "pip.conf", "pip configuration: index URL and options"},
    {"package", "pip.ini", "pip configuration: index URL and options"},
    {"package", ".condarc", "conda configuration: channels"},
    /* JavaScript / TypeScript */
    {"package", "package.json", "npm package: install and lifecycle scripts run on npm install and npm test"},
    {"package", "package-lock.json", "npm lockfile: exactly what gets installed, and from where"},
    {"package", "npm-shrinkwrap.json", "npm lockfile: exactly what gets installed, and from where"},
    {"package", "yarn.lock", "yarn lockfile: exactly what gets installed, and from where"},
    {"package", "pnpm-lock.yaml", "pnpm lockfile: exactly what gets installed, and from where"},
    {"package", "bun.lock*", "bun lockfile: exactly what gets installed"},
    {"package", ".npmrc", "npm configuration: registry, scripts and script-shell"},
    {"package", ".yarnrc", "yarn configuration: registry and yarn-path (a program yarn runs)"},
    {"package", ".yarnrc.yml", "yarn configuration: yarnPath and plugins (programs yarn runs)"},
    {"package", ".yarn/*", "yarn releases and plugins: JavaScript yarn runs"},
    {"package", ".pnpmfile.*", "pnpmfile: JavaScript pnpm runs on install"},
    {"package", "pnpmfile.*", "pnpmfile: JavaScript pnpm runs on install"},
    {"package", "pnpm-workspace.yaml", "pnpm workspace: packages, hooks and overrides"},
    {"package", "bunfig.toml", "bun configuration: preload scripts run with every bun command"},
    {"package", "deno.json", "deno configuration: tasks run commands"},
    {"package", "deno.jsonc", "deno configuration: tasks run commands"},
    {"package", "lerna.json", "lerna: commands run across packages"},
    {"package", "nx.json", "Nx: targets and plugins run commands"},
    {"package", "project.json", "Nx project: targets run commands"},
    {"package", "turbo.json", "Turborepo: tasks run commands"},
    {"package", "rush.json", "Rush monorepo configuration"},
    {"build", "*.config.js", "JavaScript config file: run as code by the tool that loads it (webpack, vite, eslint, babel, playwright, ...)"},
    {"build", "*.config.cjs", "JavaScript config file: run as code by the tool that loads it"},
    {"build", "*.config.mjs", "JavaScript config file: run as code by the tool that loads it"},
    {"build", "*.config.ts", "TypeScript config file: run as code by the tool that loads it"},
    {"build", "*.config.mts", "TypeScript config file: run as code by the tool that loads it"},
    {"build", "*.config.cts", "TypeScript config file: run as code by the tool that loads it"},
    {"build", ".babelrc*", "Babel configuration: plugins run on every build"},
    {"build", "babel.config.*", "Babel configuration: plugins run on every build"},
    {"build", ".eslintrc*", "ESLint configuration: plugins run in editors and CI"},
    {"build", ".prettierrc*", "Prettier configuration: plugins run in editors and CI"},
    {"build", ".swcrc", "SWC configuration: plugins run on build"},
    {"build", ".postcssrc*", "PostCSS configuration: plugins run on build"},
    {"build", "gulpfile.*", "gulp tasks: run commands"},
    {"build", "gruntfile.*", "Grunt tasks: run commands"},
    {"build", "jakefile*", "Jake tasks: run commands"},
    {"build", ".storybook/*", "Storybook configuration: runs as code"},
    {"build", ".puppeteerrc*", "Puppeteer configuration: which browser is downloaded and run"},
    /* Go */
    {"package", "go.mod", "Go module: replace directives swap dependencies, toolchain downloads a Go toolchain"},
    {"package", "go.work", "Go workspace: replaces modules with local directories"},
    {"package", "go.sum", "Go checksums: which dependency contents are accepted"},
    {"build", "magefile.go", "Mage targets: Go run by `mage`"},
    {"build", "magefiles/*", "Mage targets: Go run by `mage`"},
    /* Rust */
    {"build", "cargo.toml", "Cargo manifest: build scripts, proc-macros and where dependencies come from"},
    {"package", "cargo.lock", "Cargo lockfile: exactly what gets built"},
    {"build", "build.rs", "Cargo build script: runs at build time"},
    {"build", ".cargo/*", "Cargo configuration: target runners, rustc wrappers, aliases and registries"},
    {"build", "rust-toolchain", "Rust toolchain file: rustup downloads and runs that toolchain"},
    {"build", "rust-toolchain.toml", "Rust toolchain file: rustup downloads and runs that toolchain"},
    /* Java, Kotlin, Scala, Clojure */
    {"build", "pom.xml", "Maven build: plugins and their executions run"},
    {"build", ".mvn/*", "Maven extensions, JVM and wrapper configuration: run with every build"},
    {"build", "mvnw", "Maven wrapper: downloads and runs Maven"},
    {"build", "mvnw.cmd", "Maven wrapper: downloads and runs Maven"},
    {"build", "build.gradle", "Gradle build script: Groovy run on every build"},
    {"build", "build.gradle.kts", "Gradle build script: Kotlin run on every build"},
    {"build", "settings.gradle", "Gradle settings: plugins and includes run on every build"},
    {"build", "settings.gradle.kts", "Gradle settings: plugins and includes run on every build"},
    {"build", "*.gradle", "Gradle script: run on build"},
    {"build", "*.gradle.kts", "Gradle script: run on build"},
    {"build", "gradle.properties", "Gradle properties: JVM arguments and settings of every build"},
    {"build", "gradle/wrapper/*", "Gradle wrapper: distributionUrl says which Gradle is downloaded and run"},
    {"build", "gradle/*.toml", "Gradle version catalog: which dependencies and plugins are fetched"},
    {"build", "gradlew", "Gradle wrapper script: runs on every build"},
    {"build", "gradlew.bat", "Gradle wrapper script: runs on every build"},
    {"build", "buildsrc/*", "Gradle buildSrc: code compiled and run on every build"},
    {"build", "build.xml", "Ant build: tasks run commands"},
    {"build", "build.sbt", "sbt build: Scala run on every build"},
    {"build", "project/*.sbt", "sbt plugins: run on every build"},
    {"build", "project/*.scala", "sbt build code: runs on every build"},
    {"build", "project/build.properties", "sbt version: downloaded and run"},
    {"build", ".sbtopts", "sbt options"},
    {"build", ".jvmopts", "JVM options for the build (-javaagent runs code)"},
    {"build", "build.sc", "Mill build: Scala run on every build"},
    {"build", "deps.edn", "Clojure deps: aliases run code"},
    {"build", "project.clj", "Leiningen project: plugins and hooks run"},
    /* Ruby */
    {"package", "gemfile", "Gemfile: Ruby run by bundler; what gets installed"},
    {"package", "gemfile.lock", "Gemfile.lock: exactly what gets installed"},
    {"build", "rakefile", "Rakefile: Ruby tasks"},
    {"build", "*.rake", "Rake tasks: Ruby"},
    {"package", "*.gemspec", "gemspec: Ruby run by bundler and gem build"},
    {"package", ".bundle/*", "bundler configuration: paths and build flags"},
    {"build", "guardfile", "Guardfile: Ruby run by guard"},
    {"build", "capfile", "Capistrano: deploy tasks"},
    {"build", ".rubocop*.yml", "RuboCop configuration: `require` loads Ruby code"},
    {"editor", ".irbrc", "irb start-up file: Ruby run when a console starts"},
    {"editor", ".pryrc", "pry start-up file: Ruby run when a console starts"},
    /* PHP */
    {"package", "composer.json", "Composer: scripts run on install and update; plugins run"},
    {"package", "composer.lock", "Composer lockfile: exactly what gets installed"},
    {"build", ".php-cs-fixer*.php", "PHP CS Fixer configuration: PHP run by the tool"},
    {"build", "rector.php", "Rector configuration: PHP run by the tool"},
    {"build", "phpstan.neon*", "PHPStan configuration: bootstrap files run"},
    {"build", ".user.ini", "PHP per-directory ini: auto_prepend_file runs on every request"},
    {"build", ".htaccess", "Apache per-directory configuration: handlers and rewrites on deploy"},
    /* .NET */
    {"build", "*.csproj", "MSBuild project: targets and Exec tasks run on build"},
    {"build", "*.fsproj", "MSBuild project: targets and Exec tasks run on build"},
    {"build", "*.vbproj", "MSBuild project: targets and Exec tasks run on build"},
    {"build", "*.vcxproj", "MSBuild project: targets and Exec tasks run on build"},
    {"build", "*.props", "MSBuild props (Directory.Build.props): imported into every project"},
    {"build", "*.targets", "MSBuild targets (Directory.Build.targets): run on every build"},
    {"build", "*.sln", "Visual Studio solution: which projects build"},
    {"package", "nuget.config", "NuGet configuration: package sources"},
    {"package", "packages.config", "NuGet packages: what gets installed"},
    {"package", "*.nuspec", "NuGet package spec: install scripts"},
    {"package", "paket.dependencies", "Paket: what gets installed"},
    {"build", "global.json", ".NET SDK selection"},
    {"build", ".config/dotnet-tools.json", ".NET local tools: programs `dotnet tool restore` installs"},
    {"build", "*.cake", "Cake build script: C# run on build"},
    /* Nix */
    {"build", "flake.nix", "Nix flake: what nix develop and nix build evaluate and run"},
    {"build", "flake.lock", "Nix flake lock: exactly which inputs are fetched"},
    {"build", "default.nix", "Nix expression: evaluated and built by nix-build"},
    {"build", "shell.nix", "Nix shell: its shellHook runs in nix-shell"},
    {"build", "*.nix", "Nix expression: evaluated and built"},
    {"env", "devbox.json", "devbox: init_hook and scripts run in the shell"},
    {"env", "devenv.*", "devenv: enterShell and processes run"},

    /* --- editors and dev containers --- */
    {"editor", ".vscode/*", "VS Code workspace: tasks (runOn: folderOpen), launch configs and settings that name programs"},
    {"editor", "*.code-workspace", "VS Code workspace: tasks and settings"},
    {"editor", ".devcontainer/*", "dev container: image, features and lifecycle commands run on the developer's machine"},
    {"editor", ".devcontainer.json", "dev container: lifecycle commands run on the developer's machine"},
    {"editor", ".idea/*", "JetBrains project: run configurations and startup tasks"},
    {"editor", ".fleet/*", "JetBrains Fleet: run configurations"},
    {"editor", ".zed/*", "Zed: tasks and settings"},
    {"editor", ".theia/*", "Theia: tasks and settings"},
    {"editor", ".nvim.lua", "Neovim exrc: Lua run when the directory is opened (with 'exrc')"},
    {"editor", ".nvimrc", "Neovim exrc: run when the directory is opened (with 'exrc')"},
    {"editor", ".exrc", "vi exrc: run when the directory is opened (with 'exrc')"},
    {"editor", ".lvimrc", "local vimrc: run when the directory is opened"},
    {"editor", ".dir-locals*.el", "Emacs directory variables: eval forms run on opening a file"},
    {"editor", "*.sublime-project", "Sublime Text project: build systems run commands"},
    {"editor", ".gitpod.yml", "Gitpod: tasks run when a workspace starts"},
    {"editor", ".gitpod.dockerfile", "Gitpod image: RUN steps execute"},
    {"editor", ".replit", "Replit: run and on-boot commands"},
    {"editor", "replit.nix", "Replit environment"},
    {"editor", ".idx/*", "Project IDX: dev.nix and startup commands"},
    {"editor", ".codesandbox/*", "CodeSandbox: tasks run on start"},
    {"editor", ".editorconfig", "EditorConfig: changes how files are shown and saved"},

    /* --- environment loaders and tool versions --- */
    {"env", ".envrc", "direnv: shell run when a developer enters the directory"},
    {"env", ".env", "dotenv file: variables loaded by tools and shells (PATH, LD_PRELOAD, NODE_OPTIONS...)"},
    {"env", ".env.*", "dotenv file: variables loaded by tools and shells"},
    {"env", "*.env", "dotenv file: variables loaded by tools and shells"},
    {"env", ".flaskenv", "dotenv file: variables loaded by flask"},
    {"env", ".mise.toml", "mise: env, hooks and tasks run on entering the directory; tools downloaded"},
    {"env", "mise.toml", "mise: env, hooks and tasks run on entering the directory; tools downloaded"},
    {"env", "mise.*.toml", "mise: env, hooks and tasks run on entering the directory"},
    {"env", ".mise.*.toml", "mise: env, hooks and tasks run on entering the directory"},
    {"env", ".mise/*", "mise tasks and configuration"},
    {"env", ".config/mise*", "mise tasks and configuration"},
    {"env", ".rtx.toml", "rtx (mise): env and tools for the directory"},
    {"env", ".tool-versions", "asdf/mise tool versions: downloaded and run on entering the directory"},
    {"env", ".sdkmanrc", "SDKMAN: Java tools switched on entering the directory"},
    {"env", ".nvmrc", "Node version: downloaded and run by nvm/fnm"},
    {"env", ".node-version", "Node version: downloaded and run by version managers"},
    {"env", ".python-version", "Python version: selected by pyenv/uv"},
    {"env", ".ruby-version", "Ruby version: selected by rbenv/chruby"},
    {"env", ".flox/*", "flox environment: hooks run on activation"},
    {"env", ".autoenv*", "autoenv: shell run when a developer enters the directory"},
    {"env", ".bashrc", "shell start-up file"},
    {"env", ".bash_profile", "shell start-up file"},
    {"env", ".profile", "shell start-up file"},
    {"env", ".zshrc", "shell start-up file"},
    {"env", ".zshenv", "shell start-up file"},
    {"env", ".zprofile", "shell start-up file"},

    /* --- credentials and client configuration --- */
    {"credentials", ".netrc", "netrc: credentials curl, git and pip send"},
    {"credentials", ".pypirc", "PyPI credentials and upload targets"},
    {"credentials", ".pgpass", "PostgreSQL credentials"},
    {"credentials", ".ssh/*", "ssh configuration or keys (ProxyCommand runs a program)"},
    {"credentials", ".docker/*", "docker client configuration (credential helpers are programs)"},
    {"credentials", ".aws/*", "AWS client configuration (credential_process runs a program)"},
    {"credentials", ".kube/*", "kubeconfig (exec credential plugins run a program)"},
    {"credentials", ".terraformrc", "Terraform CLI configuration: provider sources and credentials"},
    {"credentials", "*.pem", "PEM file: a certificate or private key"},
    {"credentials", "*.key", "key file"},
    {"credentials", "id_rsa*", "ssh key"},
    {"credentials", "id_ed25519*", "ssh key"},
};

static const al_review_content_rule content_rules[] = {
    {"build", "*.go", "//go:generate", "`//go:generate` line: `go generate` runs this command"},
    {"test", "*.py", "def pytest_", "pytest hook function: a plugin that runs with the tests"},
    {"test", "*.py", "pytest_plugins", "`pytest_plugins`: loads pytest plugins"},
    {"package", "requirements*.txt", "://", "installs from a URL rather than the index"},
    {"package", "*.txt", "--index-url", "changes the package index pip installs from"},
    {"package", "*.txt", "--extra-index-url", "adds a package index pip installs from"},
    {"git", ".gitattributes", "filter=", "names a filter driver: git runs its clean/smudge command"},
    {"test", "*.ini", "addopts", "pytest addopts: `-p` loads plugins"},
    {"test", "*.toml", "addopts", "pytest addopts: `-p` loads plugins"},
    {"test", "*.cfg", "addopts", "pytest addopts: `-p` loads plugins"},
    {"package", "package.json", "\"postinstall\"", "npm postinstall script: runs on every npm install"},
    {"package", "package.json", "\"preinstall\"", "npm preinstall script: runs on every npm install"},
    {"package", "package.json", "\"prepare\"", "npm prepare script: runs on npm install"},
    {"package", "go.mod", "toolchain", "go.mod toolchain line: the go command downloads and runs that toolchain"},
    {"package", "go.mod", "replace", "go.mod replace: swaps a dependency for another module or a local directory"},
    {"build", "*", "#!/", "shebang: an executable script"},
};
/* clang-format on */

const al_review_family *al_review_families(size_t *n)
{
  *n = AL_ARRAY_SIZE(families);
  return families;
}

const al_review_rule *al_review_rules(size_t *n)
{
  *n = AL_ARRAY_SIZE(rules);
  return rules;
}

const al_review_content_rule *al_review_content_rules(size_t *n)
{
  *n = AL_ARRAY_SIZE(content_rules);
  return content_rules;
}

const char *al_review_family_title(const char *id)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(families); i++)
    if (strcmp(families[i].id, id) == 0)
      return families[i].title;
  return id;
}

/* Length of a UTF-8 code point HFS+ ignores at p (git's is_hfs_dotgit
 * list), or 0. */
static size_t hfs_ignorable(const unsigned char *p)
{
  if (p[0] == 0xe2 && p[1] == 0x80 &&
      ((p[2] >= 0x8c && p[2] <= 0x8f) || /* U+200C..200F */
       (p[2] >= 0xaa && p[2] <= 0xae)))  /* U+202A..202E */
    return 3;
  if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xaa && p[2] <= 0xaf) /* U+206A..206F */
    return 3;
  if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf) /* U+FEFF */
    return 3;
  return 0;
}

/* Fold one component [s, s+n) into out; returns the bytes written. */
static size_t fold_component(const unsigned char *s, size_t n, char *out, size_t room)
{
  char buf[512];
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < sizeof buf;) {
    size_t skip = i + 3 <= n ? hfs_ignorable(s + i) : 0;
    if (skip) {
      i += skip;
      continue;
    }
    unsigned char c = s[i++];
    if (c == ':') /* NTFS alternate stream: `.git::$INDEX_ALLOCATION` is `.git` */
      break;
    buf[o++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  while (o > 0 && (buf[o - 1] == '.' || buf[o - 1] == ' ')) /* NTFS drops these */
    o--;
  buf[o] = '\0';
  /* 8.3 short names NTFS gives `.git` and `.gitmodules` */
  if (o == 5 && strncmp(buf, "git~", 4) == 0 && buf[4] >= '1' && buf[4] <= '9')
    o = (size_t)snprintf(buf, sizeof buf, ".git");
  else if (o == 8 && strncmp(buf, "gitmod~", 7) == 0 && buf[7] >= '1' && buf[7] <= '9')
    o = (size_t)snprintf(buf, sizeof buf, ".gitmodules");
  if (o >= room)
    o = room ? room - 1 : 0;
  memcpy(out, buf, o);
  return o;
}

size_t al_review_fold_path(const char *path, char *out, size_t outsz)
{
  const unsigned char *p = (const unsigned char *)path;
  size_t o = 0;
  if (!outsz)
    return 0;
  while (*p) {
    const unsigned char *e = p;
    while (*e && *e != '/')
      e++;
    o += fold_component(p, (size_t)(e - p), out + o, outsz - o);
    if (*e == '/' && o + 1 < outsz)
      out[o++] = '/';
    p = *e ? e + 1 : e;
  }
  out[o] = '\0';
  return o;
}

static bool matches_at_any_depth(const char *pattern, const char *folded)
{
  for (const char *s = folded; s; s = strchr(s, '/') ? strchr(s, '/') + 1 : NULL) {
    if (!*s)
      break;
    if (fnmatch(pattern, s, 0) == 0)
      return true;
  }
  return false;
}

static const al_review_rule too_long = {"name", "", "path longer than 4 KiB: not checked"};

const al_review_rule *al_review_catalogue_match(const char *path)
{
  char folded[4096];
  if (strlen(path) >= sizeof folded)
    return &too_long;
  al_review_fold_path(path, folded, sizeof folded);
  for (size_t i = 0; i < AL_ARRAY_SIZE(rules); i++)
    if (matches_at_any_depth(rules[i].pattern, folded))
      return rules[i].family ? &rules[i] : NULL;
  return NULL;
}

static bool contains(const char *hay, size_t len, const char *needle)
{
  size_t nl = strlen(needle);
  if (nl > len)
    return false;
  for (size_t i = 0; i + nl <= len; i++)
    if (hay[i] == needle[0] && memcmp(hay + i, needle, nl) == 0)
      return true;
  return false;
}

const al_review_content_rule *al_review_content_match(const char *path, const char *text,
                                                      size_t len)
{
  char folded[4096];
  if (!text || strlen(path) >= sizeof folded)
    return NULL;
  al_review_fold_path(path, folded, sizeof folded);
  for (size_t i = 0; i < AL_ARRAY_SIZE(content_rules); i++) {
    const al_review_content_rule *r = &content_rules[i];
    if (!matches_at_any_depth(r->pattern, folded))
      continue;
    if (strcmp(r->needle, "#!/") == 0) { /* a shebang only counts at the start */
      if (len >= 3 && memcmp(text, "#!/", 3) == 0)
        return r;
      continue;
    }
    if (contains(text, len, r->needle))
      return r;
  }
  return NULL;
}

bool al_review_is_gitlab_ci_path(const char *path, const char *ci_config_path)
{
  if (!strcmp(path, ".gitlab-ci.yml") || !strcmp(path, ".gitlab-ci.yaml") ||
      !strncmp(path, ".gitlab/ci/", 11))
    return true;
  return ci_config_path && ci_config_path[0] && !strchr(ci_config_path, '@') &&
         !strchr(ci_config_path, ':') && !strcmp(path, ci_config_path);
}

static bool entry_differs(const json_t *a, const json_t *b)
{
  if (!a || !b)
    return true;
  const char *sa = json_string_value(json_object_get(a, "sha"));
  const char *sb = json_string_value(json_object_get(b, "sha"));
  const char *ma = json_string_value(json_object_get(a, "mode"));
  const char *mb = json_string_value(json_object_get(b, "mode"));
  return !sa || !sb || strcmp(sa, sb) != 0 || !ma || !mb || strcmp(ma, mb) != 0;
}

int al_review_gitlab_ci_changed(const json_t *base, const json_t *head, const char *ci_config_path,
                                char *out, size_t n)
{
  if (!json_is_object(base) || !json_is_object(head))
    return -1;
  const json_t *trees[2] = {head, base};
  for (int k = 0; k < 2; k++) {
    const char *path;
    json_t *v;
    json_object_foreach((json_t *)trees[k], path, v)
    {
      if (!al_review_is_gitlab_ci_path(path, ci_config_path))
        continue;
      if (entry_differs(v, json_object_get(trees[1 - k], path))) {
        snprintf(out, n, "%s", path);
        return 1;
      }
    }
  }
  return 0;
}
