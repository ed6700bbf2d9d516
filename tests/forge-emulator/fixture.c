/* Seeding from one JSON fixture file: apps, users, installations,
 * repositories (bare repos created from source directories), issues,
 * classic branch protection and rulesets. See fixtures/sample.json. */
#include "forge.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

struct forge_app *forge_app_by_id(long long id)
{
  for (size_t i = 0; i < g_forge.n_apps; i++)
    if (g_forge.apps[i].id == id)
      return &g_forge.apps[i];
  return NULL;
}

struct forge_app *forge_app_by_iss(const char *iss)
{
  char *end;
  errno = 0;
  long long id = strtoll(iss, &end, 10);
  if (*iss && !*end && !errno)
    return forge_app_by_id(id);
  for (size_t i = 0; i < g_forge.n_apps; i++)
    if (g_forge.apps[i].client_id && !strcmp(g_forge.apps[i].client_id, iss))
      return &g_forge.apps[i];
  return NULL;
}

json_t *forge_repo(const char *owner, const char *name)
{
  size_t i;
  json_t *r;
  json_array_foreach(g_forge.repos, i, r)
  {
    if (!strcasecmp(json_string_value(json_object_get(r, "owner")), owner) &&
        !strcasecmp(json_string_value(json_object_get(r, "name")), name))
      return r;
  }
  return NULL;
}

json_t *forge_installation(long long id)
{
  size_t i;
  json_t *v;
  json_array_foreach(g_forge.installations, i, v)
  {
    if (json_integer_value(json_object_get(v, "id")) == id)
      return v;
  }
  return NULL;
}

json_t *forge_installation_for_repo(struct forge_app *app, const char *full_name)
{
  size_t i, j;
  json_t *v, *r;
  json_array_foreach(g_forge.installations, i, v)
  {
    if (json_integer_value(json_object_get(v, "app_id")) != app->id)
      continue;
    json_array_foreach(json_object_get(v, "repositories"), j, r)
    {
      if (!strcasecmp(json_string_value(r), full_name))
        return v;
    }
  }
  return NULL;
}

json_t *forge_user(const char *login)
{
  size_t i;
  json_t *u;
  json_array_foreach(g_forge.users, i, u)
  {
    const char *l = json_string_value(json_object_get(u, "login"));
    if (l && !strcasecmp(l, login))
      return u;
  }
  return NULL;
}

static char *resolve(const char *base_dir, const char *p)
{
  if (!p || p[0] == '/')
    return al_xstrdup(p ? p : "");
  return al_strdup_printf("%s/%s", base_dir, p);
}

static const char *const known_perms[] = {
    "actions",
    "administration",
    "checks",
    "contents",
    "deployments",
    "environments",
    "issues",
    "metadata",
    "packages",
    "pages",
    "pull_requests",
    "repository_hooks",
    "repository_projects",
    "secret_scanning_alerts",
    "secrets",
    "security_events",
    "statuses",
    "vulnerability_alerts",
    "workflows",
    "members",
    "organization_administration",
};

static int check_perms(json_t *perms, const char *where, al_error *err)
{
  if (!json_is_object(perms))
    return al_make_error(err, 0, "%s: \"permissions\" must be an object", where);
  const char *k;
  json_t *v;
  json_object_foreach(perms, k, v)
  {
    bool known = false;
    for (size_t i = 0; i < AL_ARRAY_SIZE(known_perms); i++)
      known |= !strcmp(known_perms[i], k);
    if (!known)
      return al_make_error(err, 0, "%s: unknown permission \"%s\"", where, k);
    if (!json_is_string(v) || forge_perm_level(json_string_value(v)) == 0)
      return al_make_error(err, 0, "%s: permission \"%s\" must be \"read\", \"write\" or \"admin\"",
                           where, k);
  }
  return 0;
}

/* Run a command (argv) with env additions, stdout captured into out when
 * non-NULL (trailing newline stripped). Returns exit status or -1. */
static int run_cmd(const char *const *argv, const char *const *extra_env, char **out)
{
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(pfd[1], 1);
    for (size_t i = 0; extra_env && extra_env[i]; i++)
      putenv((char *)extra_env[i]);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  size_t cap = 4096, len = 0;
  char *buf = al_xmalloc(cap);
  for (;;) {
    if (len + 1 >= cap)
      buf = al_xrealloc(buf, cap *= 2);
    ssize_t n = read(pfd[0], buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(pfd[0]);
  buf[len] = '\0';
  while (len > 0 && buf[len - 1] == '\n')
    buf[--len] = '\0';
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (out)
    *out = buf;
  else
    free(buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Create <repos_dir>/<owner>/<name>.git from src_dir with one commit on
 * default_branch, extra branches pointing at it, and the pre-receive hook. */
static int create_repo(const char *full_name, const char *src_dir, const char *default_branch,
                       json_t *branches, al_error *err)
{
  al_autofree char *bare = al_strdup_printf("%s/%s.git", g_forge.repos_dir, full_name);
  al_autofree char *owner_dir = al_strdup_printf("%s/%s", g_forge.repos_dir, full_name);
  char *slash = strrchr(owner_dir, '/');
  *slash = '\0';
  if (mkdir(owner_dir, 0755) < 0 && errno != EEXIST)
    return al_make_error(err, errno, "mkdir `%s`", owner_dir);
  struct stat st;
  if (stat(src_dir, &st) < 0 || !S_ISDIR(st.st_mode))
    return al_make_error(err, ENOTDIR, "repository %s: source `%s`", full_name, src_dir);
  al_autofree char *headopt = al_strdup_printf("--initial-branch=%s", default_branch);
  const char *init[] = {"git", "init", "-q", "--bare", headopt, bare, NULL};
  if (run_cmd(init, NULL, NULL) != 0)
    return al_make_error(err, 0, "repository %s: git init failed", full_name);
  al_autofree char *idx = al_strdup_printf("GIT_INDEX_FILE=%s/seed.index", bare);
  al_autofree char *gd = al_strdup_printf("GIT_DIR=%s", bare);
  al_autofree char *wt = al_strdup_printf("GIT_WORK_TREE=%s", src_dir);
  const char *env[] = {idx,
                       gd,
                       wt,
                       "GIT_AUTHOR_NAME=forge-seed",
                       "GIT_AUTHOR_EMAIL=seed@forge.test",
                       "GIT_COMMITTER_NAME=forge-seed",
                       "GIT_COMMITTER_EMAIL=seed@forge.test",
                       "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
                       "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
                       NULL};
  const char *add[] = {"git", "-c", "core.bare=false", "add", "-A", "-f", ".", NULL};
  if (run_cmd(add, env, NULL) != 0)
    return al_make_error(err, 0, "repository %s: git add of `%s` failed", full_name, src_dir);
  char *tree = NULL, *commit = NULL;
  const char *wtree[] = {"git", "write-tree", NULL};
  if (run_cmd(wtree, env, &tree) != 0) {
    free(tree);
    return al_make_error(err, 0, "repository %s: git write-tree failed", full_name);
  }
  const char *ct[] = {"git", "commit-tree", tree, "-m", "Initial commit", NULL};
  int r = run_cmd(ct, env, &commit);
  free(tree);
  if (r != 0) {
    free(commit);
    return al_make_error(err, 0, "repository %s: git commit-tree failed", full_name);
  }
  al_autofree char *ref = al_strdup_printf("refs/heads/%s", default_branch);
  const char *ur[] = {"git", "update-ref", ref, commit, NULL};
  r = run_cmd(ur, env, NULL);
  const char *k;
  json_t *v;
  json_object_foreach(branches, k, v)
  {
    al_autofree char *bref = al_strdup_printf("refs/heads/%s", k);
    const char *ub[] = {"git", "update-ref", bref, commit, NULL};
    r |= run_cmd(ub, env, NULL);
  }
  free(commit);
  al_autofree char *idxpath = al_strdup_printf("%s/seed.index", bare);
  unlink(idxpath);
  if (r != 0)
    return al_make_error(err, 0, "repository %s: git update-ref failed", full_name);
  /* The hook is this binary, dispatched on argv[0] = ".../pre-receive". */
  al_autofree char *hook = al_strdup_printf("%s/hooks/pre-receive", bare);
  unlink(hook);
  if (symlink(g_forge.self_exe, hook) < 0)
    return al_make_error(err, errno, "symlink hook `%s`", hook);
  const char *cfg[] = {"git", "config", "http.receivepack", "true", NULL};
  run_cmd(cfg, env, NULL);
  return 0;
}

static const char *str_field(json_t *o, const char *k)
{
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static int load_apps(json_t *root, const char *dir, char **keys, size_t n_keys, al_error *err)
{
  json_t *apps = json_object_get(root, "apps");
  if (!json_is_array(apps) || json_array_size(apps) == 0)
    return al_make_error(err, 0, "fixture: \"apps\" must be a non-empty array");
  g_forge.n_apps = json_array_size(apps);
  g_forge.apps = al_xcalloc(g_forge.n_apps, sizeof *g_forge.apps);
  size_t i;
  json_t *a;
  json_array_foreach(apps, i, a)
  {
    struct forge_app *app = &g_forge.apps[i];
    json_t *id = json_object_get(a, "id");
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
      return al_make_error(err, 0, "fixture: apps[%zu].id must be a positive integer", i);
    app->id = json_integer_value(id);
    const char *slug = str_field(a, "slug");
    if (!slug)
      return al_make_error(err, 0, "fixture: apps[%zu].slug must be a string", i);
    app->slug = al_xstrdup(slug);
    app->client_id = al_xstrdup(str_field(a, "client_id") ? str_field(a, "client_id") : "");
    app->name = al_xstrdup(str_field(a, "name") ? str_field(a, "name") : slug);
    app->owner = al_xstrdup(str_field(a, "owner") ? str_field(a, "owner") : "forge");
    json_t *perms = json_object_get(a, "permissions");
    if (!perms)
      perms = json_object();
    else
      json_incref(perms);
    al_autofree char *where = al_strdup_printf("fixture: apps[%zu]", i);
    if (check_perms(perms, where, err) < 0) {
      json_decref(perms);
      return -1;
    }
    app->permissions = perms;
    /* --key ID=PATH overrides the fixture's public_key. */
    char *key_path = NULL;
    char idprefix[32];
    snprintf(idprefix, sizeof idprefix, "%lld=", app->id);
    for (size_t k = 0; k < n_keys; k++)
      if (!strncmp(keys[k], idprefix, strlen(idprefix)))
        key_path = al_xstrdup(keys[k] + strlen(idprefix));
    if (!key_path && str_field(a, "public_key"))
      key_path = resolve(dir, str_field(a, "public_key"));
    if (!key_path)
      return al_make_error(err, 0,
                           "fixture: apps[%zu] (%s) has no public_key (and no --key %lld=PATH)", i,
                           slug, app->id);
    FILE *f = fopen(key_path, "re");
    if (!f) {
      al_make_error(err, errno, "fixture: apps[%zu] public key `%s`", i, key_path);
      free(key_path);
      return -1;
    }
    app->key = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    if (!app->key || EVP_PKEY_base_id(app->key) != EVP_PKEY_RSA) {
      al_make_error(err, 0, "fixture: apps[%zu] public key `%s` is not an RSA public key PEM", i,
                    key_path);
      free(key_path);
      return -1;
    }
    free(key_path);
  }
  return 0;
}

int forge_load_fixture(const char *path, char **keys, size_t n_keys, al_error *err)
{
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return al_make_error(err, 0, "fixture `%s` line %d: %s", path, jerr.line, jerr.text);
  if (!json_is_object(root)) {
    json_decref(root);
    return al_make_error(err, 0, "fixture `%s`: top level must be an object", path);
  }
  char rp[PATH_MAX];
  if (!realpath(path, rp)) {
    json_decref(root);
    return al_make_error(err, errno, "realpath `%s`", path);
  }
  char *dir = dirname(rp);
  int ret = -1;
  if (load_apps(root, dir, keys, n_keys, err) < 0)
    goto out;

  g_forge.users = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(root, "users"), i, v)
  {
    if (!str_field(v, "login") || !json_is_integer(json_object_get(v, "id"))) {
      al_make_error(err, 0, "fixture: users[%zu] needs login (string) and id (integer)", i);
      goto out;
    }
    json_array_append(g_forge.users, v);
  }

  /* Repositories. */
  g_forge.repos = json_array();
  g_forge.issues = json_array();
  json_t *repos = json_object_get(root, "repositories");
  if (!json_is_array(repos)) {
    al_make_error(err, 0, "fixture: \"repositories\" must be an array");
    goto out;
  }
  json_array_foreach(repos, i, v)
  {
    const char *full = str_field(v, "full_name");
    const char *src = str_field(v, "source");
    const char *slash = full ? strchr(full, '/') : NULL;
    if (!full || !slash || slash == full || !slash[1] || strchr(slash + 1, '/') ||
        strspn(full, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./") !=
            strlen(full) ||
        strstr(full, "..")) {
      al_make_error(err, 0, "fixture: repositories[%zu].full_name must be \"owner/name\"", i);
      goto out;
    }
    if (!src) {
      al_make_error(err, 0, "fixture: repositories[%zu] (%s): \"source\" directory missing", i,
                    full);
      goto out;
    }
    json_t *id = json_object_get(v, "id");
    if (!json_is_integer(id)) {
      al_make_error(err, 0, "fixture: repositories[%zu] (%s): \"id\" must be an integer", i, full);
      goto out;
    }
    const char *defb = str_field(v, "default_branch") ? str_field(v, "default_branch") : "main";
    json_t *repo = json_pack(
        "{s:O, s:s, s:s%, s:s, s:s, s:b, s:O, s:O, s:O, s:I}", "id", id, "full_name", full, "owner",
        full, (size_t)(slash - full), "name", slash + 1, "default_branch", defb, "private",
        json_is_false(json_object_get(v, "private")) ? 0 : 1, "protection",
        json_object_get(v, "protection") ? json_object_get(v, "protection") : json_object(),
        "rulesets", json_object_get(v, "rulesets") ? json_object_get(v, "rulesets") : json_array(),
        "collaborators",
        json_object_get(v, "collaborators") ? json_object_get(v, "collaborators") : json_array(),
        "next_number", (json_int_t)1);
    if (!repo) {
      al_make_error(err, 0, "fixture: repositories[%zu] (%s): bad field types", i, full);
      goto out;
    }
    json_t *act = json_object_get(v, "actions"), *envs = json_object_get(v, "environments");
    if ((act && !json_is_object(act)) || (envs && !json_is_array(envs))) {
      json_decref(repo);
      al_make_error(err, 0,
                    "fixture: repositories[%zu] (%s): actions must be an object "
                    "{enabled, default_workflow_permissions, can_approve_pull_request_reviews} "
                    "and environments an array of {name, reviewers}",
                    i, full);
      goto out;
    }
    if (act)
      json_object_set(repo, "actions", act);
    json_object_set_new(repo, "environments", envs ? json_incref(envs) : json_array());
    if (!json_is_object(json_object_get(repo, "protection")) ||
        !json_is_array(json_object_get(repo, "rulesets"))) {
      json_decref(repo);
      al_make_error(err, 0,
                    "fixture: repositories[%zu] (%s): protection must be an object {branch: "
                    "{...}} and rulesets an array",
                    i, full);
      goto out;
    }
    size_t j;
    json_t *rs;
    json_array_foreach(json_object_get(repo, "rulesets"), j, rs)
    {
      if (!json_is_integer(json_object_get(rs, "id")) || !str_field(rs, "name") ||
          !json_is_array(json_object_get(rs, "rules"))) {
        json_decref(repo);
        al_make_error(err, 0,
                      "fixture: repositories[%zu] (%s).rulesets[%zu] needs id, name, rules[]", i,
                      full, j);
        goto out;
      }
    }
    json_array_append_new(g_forge.repos, repo);
    al_autofree char *srcdir = resolve(dir, src);
    json_t *branches = json_object_get(v, "branches");
    if (create_repo(full, srcdir, defb, json_is_object(branches) ? branches : NULL, err) < 0)
      goto out;
    /* Issues of this repository. */
    json_t *iss;
    json_array_foreach(json_object_get(v, "issues"), j, iss)
    {
      json_t *num = json_object_get(iss, "number");
      if (!json_is_integer(num) || json_integer_value(num) <= 0 || !str_field(iss, "title")) {
        al_make_error(err, 0, "fixture: repositories[%zu] (%s).issues[%zu] needs number and title",
                      i, full, j);
        goto out;
      }
      json_t *copy = json_deep_copy(iss);
      json_object_set_new(copy, "repo", json_string(full));
      if (!json_object_get(copy, "state"))
        json_object_set_new(copy, "state", json_string("open"));
      if (!json_object_get(copy, "user"))
        json_object_set_new(copy, "user", json_string("octocat"));
      json_object_set_new(copy, "id", json_integer(g_forge.next_id++));
      json_array_append_new(g_forge.issues, copy);
      if (json_integer_value(num) >= json_integer_value(json_object_get(repo, "next_number")))
        json_object_set_new(repo, "next_number", json_integer(json_integer_value(num) + 1));
    }
  }

  /* Installations. */
  g_forge.installations = json_array();
  json_array_foreach(json_object_get(root, "installations"), i, v)
  {
    json_t *id = json_object_get(v, "id"), *app_id = json_object_get(v, "app_id");
    if (!json_is_integer(id) || !json_is_integer(app_id) ||
        !forge_app_by_id(json_integer_value(app_id)) || !str_field(v, "account")) {
      al_make_error(err, 0,
                    "fixture: installations[%zu] needs id, app_id (of a listed app), account", i);
      goto out;
    }
    al_autofree char *where = al_strdup_printf("fixture: installations[%zu]", i);
    if (check_perms(json_object_get(v, "permissions"), where, err) < 0)
      goto out;
    json_t *inst = json_deep_copy(v);
    json_t *rl = json_object_get(inst, "repositories");
    if (!rl) {
      /* "all": every repository of the account. */
      rl = json_array();
      size_t k;
      json_t *r;
      json_array_foreach(g_forge.repos, k, r)
      {
        if (!strcasecmp(json_string_value(json_object_get(r, "owner")), str_field(v, "account")))
          json_array_append(rl, json_object_get(r, "full_name"));
      }
      json_object_set_new(inst, "repositories", rl);
      json_object_set_new(inst, "repository_selection", json_string("all"));
    } else {
      size_t k;
      json_t *r;
      json_array_foreach(rl, k, r)
      {
        const char *fn = json_string_value(r);
        const char *sl = fn ? strchr(fn, '/') : NULL;
        al_autofree char *own = sl ? al_strdup_printf("%.*s", (int)(sl - fn), fn) : NULL;
        if (!sl || !forge_repo(own, sl + 1)) {
          json_decref(inst);
          al_make_error(err, 0,
                        "fixture: installations[%zu].repositories[%zu] is not a listed repository",
                        i, k);
          goto out;
        }
      }
      json_object_set_new(inst, "repository_selection", json_string("selected"));
    }
    json_array_append_new(g_forge.installations, inst);
  }
  ret = 0;
out:
  json_decref(root);
  return ret;
}
