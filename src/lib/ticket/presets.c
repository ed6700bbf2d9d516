/* The agent presets (presets.h): one table, then the code that finds a
 * preset's program on the host. Documented in docs/agents.md. */
#include "ticket/presets.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* The contract (docs/agents.md), for an agent that reads instructions. It
 * names variables, never values: the prompt is on the agent's command line,
 * which every process in the sandbox can read. */
static const char prompt[] =
    "You are an autonomous coding agent working on one ticket inside airlock's sandbox. "
    "Use your shell tool for everything below; the environment variables hold all you need.\n"
    "1. Clone the repository: git clone \"$AIRLOCK_GIT_URL\" /workspace/repo, and work in "
    "/workspace/repo (only /workspace and /tmp are writable; the network reaches only the "
    "forge, through $HTTPS_PROXY).\n"
    "2. Read the ticket: curl -sf -H \"Authorization: Bearer $AIRLOCK_TICKET_TOKEN\" "
    "\"$AIRLOCK_API_URL/repos/$AIRLOCK_REPO/issues/$AIRLOCK_TICKET\".\n"
    "3. Make the change the ticket asks for. Run the repository's tests (make test, or "
    "python3 -m unittest discover -s tests, or what its README says) until they pass.\n"
    "4. Commit, and push only the run branch: git push origin HEAD:refs/heads/$AIRLOCK_BRANCH\n"
    "5. Do not open a pull request and do not comment on the ticket: after you exit, airlock "
    "opens the pull request from that branch with what you declare.\n"
    "6. End your final answer with one line declaring it: AIRLOCK_RESULT {\"title\": \"<the "
    "pull request's title>\", \"body\": \"<what you changed and how you tested it>\"}\n"
    "Never print, log or write a token anywhere; never push another branch.";

static const char *const claude_args[] = {
    "-p", "{PROMPT}",
    /* -p runs without asking; these are the tools it may use without a prompt */
    "--allowedTools", "Bash,Read,Edit,Write,Glob,Grep", "--output-format", "text", "--model",
    "{MODEL}", NULL};

static const char *const claude_env[] = {
    /* no telemetry, error reports, update checks or other calls home (each
     * would be a proxy denial in the record) */
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
    "DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1",
    /* its home: writable, gone with the run */
    "CLAUDE_CONFIG_DIR=/tmp/home/.claude", NULL};

/* Codex: exec mode, its own bwrap/landlock sandbox bypassed (it cannot
 * start inside airlock's, and airlock is the sandbox), a custom provider
 * pointing at the relay (Codex ignores OPENAI_BASE_URL), and the features
 * that reach other hosts or change the wire format off: plugins, apps and
 * connectors (github.com, chatgpt.com), hosted tools the relay refuses
 * anyway (web search, image generation), request compression (the relay
 * reads bodies as JSON). */
static const char *const codex_args[] = {
    "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--ephemeral",
    "--color", "never", "-C", "/workspace", "-m", "{MODEL}", "-c", "model_provider=\"airlock\"",
    "-c", "model_providers.airlock.name=\"airlock relay\"", "-c",
    "model_providers.airlock.base_url=\"http://127.0.0.1:8080/v1\"", "-c",
    "model_providers.airlock.env_key=\"OPENAI_API_KEY\"", "-c",
    "model_providers.airlock.wire_api=\"responses\"", "-c", "web_search=\"disabled\"",
    /* its shell keeps the AIRLOCK_*_TOKEN variables (by default it drops
     * names with KEY, SECRET or TOKEN in them) */
    "-c", "shell_environment_policy.inherit=\"all\"", "-c",
    "shell_environment_policy.ignore_default_excludes=true", "-c",
    "check_for_update_on_startup=false", "-c", "analytics.enabled=false", "--disable", "plugins",
    "--disable", "remote_plugin", "--disable", "apps", "--disable", "image_generation", "--disable",
    "enable_request_compression", "--disable", "computer_use", "--disable", "browser_use",
    "{PROMPT}", NULL};

static const char *const codex_env[] = {
    /* its home: writable and not under /tmp (where it refuses its helpers) */
    "CODEX_HOME=/workspace/.codex", "NO_COLOR=1", NULL};

static const al_agent_preset presets[] = {
    {
        .name = "claude",
        .what = "Claude Code (Anthropic Messages API)",
        .npm_package = "@anthropic-ai/claude-code",
        .program = "claude",
        .vendor = "anthropic",
        .api_path = "/v1/messages",
        .model = "claude-sonnet-4-5",
        .args = claude_args,
        .env = claude_env,
    },
    {
        .name = "codex",
        .what = "Codex CLI (OpenAI Responses API)",
        .npm_package = "@openai/codex",
        .program = "codex",
        .vendor = "openai",
        .api_path = "/v1/responses",
        .model = "gpt-5-codex",
        .args = codex_args,
        .env = codex_env,
        .make_dir = "/workspace/.codex", /* CODEX_HOME must exist */
    },
};

const al_agent_preset *al_agent_preset_find(const char *name)
{
  for (size_t i = 0; name && i < AL_ARRAY_SIZE(presets); i++)
    if (strcmp(presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

const al_agent_preset *al_agent_presets(size_t *n)
{
  *n = AL_ARRAY_SIZE(presets);
  return presets;
}

const char *al_agent_prompt(void)
{
  return prompt;
}

static bool executable(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The program under an npm prefix, or on PATH; realpath into out. */
static bool find_program(const char *name, const char *prefix, char *out, size_t outlen)
{
  char cand[PATH_MAX];
  if (prefix) {
    static const char *const subdirs[] = {"node_modules/.bin", "bin"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(subdirs); i++) {
      snprintf(cand, sizeof cand, "%s/%s/%s", prefix, subdirs[i], name);
      if (executable(cand) && realpath(cand, out) && strlen(out) < outlen)
        return true;
    }
    return false;
  }
  const char *path = getenv("PATH");
  al_autofree char *copy = al_xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
  char *save = NULL;
  for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    if (d[0] != '/')
      continue; /* a relative PATH entry names nothing stable */
    snprintf(cand, sizeof cand, "%s/%s", d, name);
    if (executable(cand) && realpath(cand, out) && strlen(out) < outlen)
      return true;
  }
  return false;
}

/* Whether the file starts with a `#!` line naming node. */
static bool node_script(const char *path)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return false;
  char line[256] = "";
  bool r = fgets(line, sizeof line, f) && strncmp(line, "#!", 2) == 0 && strstr(line, "node");
  fclose(f);
  return r;
}

static void push(char ***v, size_t *n, char *s)
{
  *v = al_xrealloc(*v, (*n + 2) * sizeof **v);
  (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
}

/* What to bind for a program at `real`: its outermost node_modules tree
 * (the package, its dependencies and the platform packages beside it), or
 * its own directory. NULL when it is under /usr (already in the view). */
static char *tree_of(const char *real)
{
  if (strncmp(real, "/usr/", 5) == 0 && !strstr(real, "/node_modules/"))
    return NULL;
  const char *nm = strstr(real, "/node_modules/");
  if (nm)
    return strndup(real, (size_t)(nm - real) + strlen("/node_modules"));
  char *d = al_xstrdup(real);
  char *slash = strrchr(d, '/');
  if (slash && slash != d)
    *slash = '\0';
  return d;
}

static bool has_route(const al_policy *policy, const char *vendor, const char *path)
{
  for (size_t i = 0; policy->relay.present && i < policy->relay.n_upstreams; i++) {
    const al_relay_upstream *u = &policy->relay.upstreams[i];
    if (strcmp(u->vendor, vendor) != 0)
      continue;
    for (size_t k = 0; k < u->n_routes; k++)
      if (strcmp(u->routes[k].path, path) == 0 && strcmp(u->routes[k].method, "POST") == 0)
        return true;
  }
  return false;
}

int al_agent_preset_resolve(const al_agent_preset *p, const char *prefix, const al_policy *policy,
                            char *const *extra, al_agent_plan *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  if (!has_route(policy, p->vendor, p->api_path))
    return al_make_error(
        err, EINVAL,
        "--agent %s talks to the %s API (POST %s) through the model relay, and %s has no relay "
        "upstream with vendor: %s for it: add one (relay.upstreams: [{vendor: %s, upstream: ..., "
        "key_file: ...}], docs/agents.md \"Run Claude Code (or Codex) on a GitHub ticket\")",
        p->name, p->vendor, p->api_path, policy->source ? policy->source : "the policy", p->vendor,
        p->vendor);
  if (!prefix)
    prefix = getenv("AIRLOCK_AGENT_PREFIX");
  if (prefix && !prefix[0])
    prefix = NULL;
  char real[PATH_MAX];
  if (!find_program(p->program, prefix, real, sizeof real)) {
    if (prefix)
      return al_make_error(err, ENOENT,
                           "--agent %s: `%s` is not under the npm prefix %s (looked in "
                           "%s/node_modules/.bin and %s/bin); install it there with `npm install "
                           "--prefix %s %s`",
                           p->name, p->program, prefix, prefix, prefix, prefix, p->npm_package);
    return al_make_error(err, ENOENT,
                         "--agent %s: %s is not installed: `%s` is not on PATH. Install it with "
                         "`npm install -g %s`, or into a directory with `npm install --prefix DIR "
                         "%s` and pass --agent-prefix DIR (or set AIRLOCK_AGENT_PREFIX)",
                         p->name, p->what, p->program, p->npm_package, p->npm_package);
  }
  out->program = al_xstrdup(real);
  size_t na = 0, ne = 0, nr = 0;
  if (p->make_dir) {
    /* /bin/sh -c 'mkdir -p "$1" && shift && exec "$@"' sh DIR PROGRAM ARGS... */
    push(&out->argv, &na, al_xstrdup("/bin/sh"));
    push(&out->argv, &na, al_xstrdup("-c"));
    push(&out->argv, &na, al_xstrdup("mkdir -p \"$1\" && shift && exec \"$@\""));
    push(&out->argv, &na, al_xstrdup("sh"));
    push(&out->argv, &na, al_xstrdup(p->make_dir));
  }
  char *tree = tree_of(real);
  if (tree)
    push(&out->ro_paths, &nr, tree);
  if (node_script(real)) {
    char node[PATH_MAX];
    if (!find_program("node", NULL, node, sizeof node)) {
      al_agent_plan_free(out);
      return al_make_error(err, ENOENT,
                           "--agent %s: `%s` is a node script and node is not on PATH (install "
                           "Node.js 18 or newer)",
                           p->name, real);
    }
    /* node by its absolute path: the sandbox's PATH has only the system
     * directories; its own tree is bound when it lives outside /usr */
    push(&out->argv, &na, al_xstrdup(node));
    if (strncmp(node, "/usr/", 5) != 0) {
      char *nd = al_xstrdup(node);
      char *s = strrchr(nd, '/');
      if (s && s != nd)
        *s = '\0';
      s = strrchr(nd, '/'); /* .../bin -> ... (the node install with its lib/) */
      if (s && s != nd && strcmp(s, "/bin") == 0)
        *s = '\0';
      push(&out->ro_paths, &nr, nd);
    }
  }
  push(&out->argv, &na, al_xstrdup(real));
  for (const char *const *a = p->args; *a; a++) {
    if (strcmp(*a, "{PROMPT}") == 0)
      push(&out->argv, &na, al_xstrdup(prompt));
    else if (strcmp(*a, "{MODEL}") == 0)
      push(&out->argv, &na, al_xstrdup(p->model));
    else
      push(&out->argv, &na, al_xstrdup(*a));
  }
  for (char *const *a = extra; a && *a; a++)
    push(&out->argv, &na, al_xstrdup(*a));
  for (const char *const *e = p->env; *e; e++)
    push(&out->env, &ne, al_xstrdup(*e));
  return 0;
}

static void free_strv(char **v)
{
  for (char **p = v; p && *p; p++)
    free(*p);
  free(v);
}

void al_agent_plan_free(al_agent_plan *pl)
{
  free_strv(pl->argv);
  free_strv(pl->env);
  free_strv(pl->ro_paths);
  free(pl->program);
  memset(pl, 0, sizeof *pl);
}
