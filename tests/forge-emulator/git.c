/* Git smart HTTP through the real `git http-backend` (CGI, RFC 3875), with
 * GitHub's installation-token auth (HTTP Basic, user x-access-token,
 * password = token), and the pre-receive hook that enforces branch
 * protection, rulesets and the `workflows` permission.
 * Follows: docs.github.com "Authenticating as a GitHub App installation"
 * (git over HTTPS), "About protected branches", "About rulesets",
 * "Troubleshooting rules" (GH006/GH013), and git-http-backend(1). */
#include "forge.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "rulesets.h"

static const char zero_sha[] = "0000000000000000000000000000000000000000";

/* /owner/name(.git)/(info/refs|git-upload-pack|git-receive-pack) */
static bool split_git_path(const char *path, char *owner, char *name, const char **rest)
{
  if (path[0] != '/')
    return false;
  const char *o = path + 1;
  const char *s1 = strchr(o, '/');
  if (!s1 || s1 == o || s1 - o > 100)
    return false;
  const char *nm = s1 + 1;
  const char *s2 = strchr(nm, '/');
  if (!s2 || s2 == nm || s2 - nm > 100)
    return false;
  const char *tail = s2;
  if (strcmp(tail, "/info/refs") && strcmp(tail, "/git-upload-pack") &&
      strcmp(tail, "/git-receive-pack"))
    return false;
  memcpy(owner, o, (size_t)(s1 - o));
  owner[s1 - o] = '\0';
  size_t nl = (size_t)(s2 - nm);
  if (nl > 4 && !strncmp(s2 - 4, ".git", 4))
    nl -= 4;
  memcpy(name, nm, nl);
  name[nl] = '\0';
  static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
  if (strspn(owner, ok) != strlen(owner) || strspn(name, ok) != strlen(name) || owner[0] == '.' ||
      name[0] == '.')
    return false;
  *rest = tail;
  return true;
}

bool forge_git_path(const char *path)
{
  char o[128], n[128];
  const char *rest;
  return split_git_path(path, o, n, &rest);
}

/* fork/exec argv with envp (NULL = inherit), stdin from in_fd (-1 = /dev/null),
 * stdout captured (memfd) into *out. Returns exit status or -1. */
static int spawn_capture(const char *const *argv, char *const *envp, int in_fd, char **out,
                         size_t *out_len, size_t max)
{
  int ofd = memfd_create("forge-out", MFD_CLOEXEC);
  if (ofd < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(ofd);
    return -1;
  }
  if (pid == 0) {
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int nul = open("/dev/null", O_RDWR);
    dup2(in_fd >= 0 ? in_fd : nul, 0);
    dup2(ofd, 1);
    if (in_fd >= 0)
      lseek(0, 0, SEEK_SET);
    al_close_fds_from(3, NULL, 0);
    if (envp)
      execvpe(argv[0], (char *const *)argv, envp);
    else
      execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (out) {
    struct stat sb;
    if (fstat(ofd, &sb) < 0 || (size_t)sb.st_size > max) {
      close(ofd);
      return -1;
    }
    size_t len = (size_t)sb.st_size;
    char *buf = al_xmalloc(len + 1);
    lseek(ofd, 0, SEEK_SET);
    ssize_t n = al_read_all(ofd, buf, len);
    if (n < 0)
      n = 0;
    buf[n] = '\0';
    *out = buf;
    if (out_len)
      *out_len = (size_t)n;
  }
  close(ofd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int forge_git_run(const char *full_name, const char *const *argv, char **out, size_t *out_len)
{
  size_t n = 0;
  while (argv[n])
    n++;
  const char **a = al_xcalloc(n + 3, sizeof *a);
  al_autofree char *gd = al_strdup_printf("--git-dir=%s/%s.git", g_forge.repos_dir, full_name);
  a[0] = "git";
  a[1] = gd;
  for (size_t i = 1; i < n; i++)
    a[i + 1] = argv[i];
  int r = spawn_capture(a, NULL, -1, out, out_len, FORGE_CGI_OUT_MAX);
  free(a);
  /* Text callers (out_len == NULL) get trailing newlines stripped. */
  if (out && *out && !out_len) {
    size_t l = strlen(*out);
    while (l > 0 && (*out)[l - 1] == '\n')
      (*out)[--l] = '\0';
  }
  return r;
}

/* ---- branch rules ---- */

static bool json_list_has(json_t *arr, const char *s)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (json_is_string(v) && !strcasecmp(json_string_value(v), s))
      return true;
    if (json_is_object(v)) {
      const char *f = json_string_value(json_object_get(v, "slug"));
      const char *l = json_string_value(json_object_get(v, "login"));
      if ((f && !strcasecmp(f, s)) || (l && !strcasecmp(l, s)))
        return true;
    }
  }
  return false;
}

json_t *forge_branch_rules(json_t *repo, const char *branch, struct forge_app *app)
{
  const char *slug = app ? app->slug : "";
  const char *defb = json_string_value(json_object_get(repo, "default_branch"));
  json_t *out = json_object();
  /* Classic protection: exact name first, then fnmatch patterns (the
   * same matcher as GET .../protection: rulesets.h). */
  json_t *prot = forge_classic_for(repo, branch);
  long long approvals = 0;
  bool code_owners = false, last_push = false;
  if (json_is_object(prot)) {
    json_object_set_new(out, "classic", json_true());
    json_t *rpr = json_object_get(prot, "required_pull_request_reviews");
    if (json_is_object(rpr)) {
      bool bypass = json_list_has(
          json_object_get(json_object_get(rpr, "bypass_pull_request_allowances"), "apps"), slug);
      json_object_set_new(out, "pr_classic", json_boolean(!bypass));
      approvals = json_integer_value(json_object_get(rpr, "required_approving_review_count"));
      code_owners |= json_is_true(json_object_get(rpr, "require_code_owner_reviews"));
      last_push |= json_is_true(json_object_get(rpr, "require_last_push_approval"));
    }
    json_object_set_new(out, "nonff_classic",
                        json_boolean(!json_is_true(json_object_get(prot, "allow_force_pushes"))));
    json_object_set_new(out, "del_classic",
                        json_boolean(!json_is_true(json_object_get(prot, "allow_deletions"))));
    json_t *restr = json_object_get(prot, "restrictions");
    if (json_is_object(restr) && !json_list_has(json_object_get(restr, "apps"), slug))
      json_object_set_new(out, "restricted_classic", json_true());
  }
  size_t i;
  json_t *rs;
  json_array_foreach(json_object_get(repo, "rulesets"), i, rs)
  {
    if (!forge_ruleset_applies(rs, "branch", branch, defb ? defb : "main"))
      continue;
    json_object_set_new(out, "ruleset", json_true());
    /* A push is not a pull request: bypass_mode pull_request does not
     * bypass it; always and exempt do. */
    const char *by = forge_ruleset_bypass(rs, app);
    bool bypass = !strcmp(by, "always") || !strcmp(by, "exempt");
    size_t j;
    if (bypass)
      json_object_set_new(out, "bypass_ruleset", json_true());
    json_t *rule;
    json_array_foreach(json_object_get(rs, "rules"), j, rule)
    {
      const char *t = json_string_value(json_object_get(rule, "type"));
      if (!t)
        continue;
      json_t *params = json_object_get(rule, "parameters");
      if (!strcmp(t, "pull_request")) {
        long long n =
            json_integer_value(json_object_get(params, "required_approving_review_count"));
        if (n > approvals)
          approvals = n;
        code_owners |= json_is_true(json_object_get(params, "require_code_owner_review"));
        last_push |= json_is_true(json_object_get(params, "require_last_push_approval"));
      }
      if (bypass)
        continue;
      if (!strcmp(t, "pull_request"))
        json_object_set_new(out, "pr_ruleset", json_true());
      else if (!strcmp(t, "non_fast_forward"))
        json_object_set_new(out, "nonff_ruleset", json_true());
      else if (!strcmp(t, "deletion"))
        json_object_set_new(out, "del_ruleset", json_true());
      else if (!strcmp(t, "update"))
        json_object_set_new(out, "update_ruleset", json_true());
      else if (!strcmp(t, "creation"))
        json_object_set_new(out, "create_ruleset", json_true());
    }
  }
  json_object_set_new(out, "required_approvals", json_integer(approvals));
  json_object_set_new(out, "code_owner_reviews", json_boolean(code_owners));
  json_object_set_new(out, "last_push_approval", json_boolean(last_push));
  return out;
}

/* ---- the CGI ---- */

static void env_add(char ***env, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void env_add(char ***env, size_t *n, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  va_end(ap);
  *env = al_xrealloc(*env, (*n + 2) * sizeof **env);
  (*env)[(*n)++] = s;
  (*env)[*n] = NULL;
}

static void git_denied(struct forge_resp *resp, int status, const char *msg)
{
  forge_resp_text(resp, status, msg);
  if (status == 401) {
    resp->headers = json_pack("{s:s}", "WWW-Authenticate", "Basic realm=\"GitHub\"");
  }
}

void forge_git_handle(struct forge_req *rq, struct forge_resp *resp)
{
  char owner[128], name[128];
  const char *rest;
  if (!split_git_path(rq->path, owner, name, &rest))
    return forge_resp_text(resp, 404, "Not Found\n");
  bool push = !strcmp(rest, "/git-receive-pack");
  if (!strcmp(rest, "/info/refs")) {
    al_autofree char *svc = forge_query_param(rq->query, "service");
    if (!svc || (strcmp(svc, "git-upload-pack") && strcmp(svc, "git-receive-pack")))
      return forge_resp_text(resp, 403, "Please upgrade your git client.\n"); /* no dumb HTTP */
    push = !strcmp(svc, "git-receive-pack");
  }
  if (strcmp(rq->method, rest[1] == 'i' ? "GET" : "POST") != 0)
    return forge_resp_text(resp, 405, "Method Not Allowed\n");

  char **env = NULL;
  size_t n_env = 0;
  al_autofree char *full = al_strdup_printf("%s/%s", owner, name);
  char remote_user[160] = "anonymous";
  pthread_mutex_lock(&g_forge.lock);
  json_t *repo = forge_repo(owner, name);
  struct forge_auth au;
  forge_authenticate(rq->authorization, &au);
  int deny = 0;
  const char *deny_msg = NULL;
  static char denied[512];
  if (au.kind == AUTH_BAD) {
    deny = 401;
    deny_msg = "remote: Invalid username or token. Password authentication is not supported for "
               "Git operations.\n";
  } else if (au.kind == AUTH_NONE) {
    if (!repo || json_is_true(json_object_get(repo, "private")) || push) {
      deny = 401;
      deny_msg = "Authentication required\n";
    }
  } else if (au.kind == AUTH_JWT) {
    deny = 401;
    deny_msg = "remote: Invalid username or token.\n";
  } else if (!repo || !forge_token_has_repo(
                          au.token, json_string_value(json_object_get(repo, "full_name")))) {
    deny = 404;
    deny_msg = "Repository not found.\n";
  } else {
    const char *lvl =
        json_string_value(json_object_get(json_object_get(au.token, "permissions"), "contents"));
    if (forge_perm_level(lvl) < (push ? 2 : 1)) {
      deny = 403;
      snprintf(denied, sizeof denied, "Permission to %s.git denied to %s[bot].\n",
               json_string_value(json_object_get(repo, "full_name")),
               au.app ? au.app->slug : "app");
      deny_msg = denied;
    }
  }
  if (!deny && repo) {
    const char *canonical = json_string_value(json_object_get(repo, "full_name"));
    snprintf(full, strlen(full) + 1, "%s", canonical);
    if (au.kind == AUTH_TOKEN) {
      snprintf(remote_user, sizeof remote_user, "%s[bot]", au.app ? au.app->slug : "app");
      json_t *rules = json_pack(
          "{s:O, s:o, s:O}", "protection", json_object_get(repo, "protection"), "rulesets",
          forge_rulesets_of(repo), "default_branch", json_object_get(repo, "default_branch"));
      char *rs = json_dumps(rules, JSON_COMPACT);
      json_decref(rules);
      env_add(&env, &n_env, "FORGE_HOOK_RULES=%s", rs);
      free(rs);
      const char *wf =
          json_string_value(json_object_get(json_object_get(au.token, "permissions"), "workflows"));
      env_add(&env, &n_env, "FORGE_HOOK_WORKFLOWS=%s", wf ? wf : "none");
      env_add(&env, &n_env, "FORGE_HOOK_APP_ID=%lld", au.app ? au.app->id : -1LL);
      env_add(&env, &n_env, "FORGE_HOOK_APP_SLUG=%s", au.app ? au.app->slug : "");
      env_add(&env, &n_env, "FORGE_HOOK_TOKEN=sha256:%.12s",
              json_string_value(json_object_get(au.token, "sha256")));
    }
  } else if (!deny) {
    deny = 404;
    deny_msg = "Repository not found.\n";
  }
  pthread_mutex_unlock(&g_forge.lock);
  if (deny) {
    for (size_t i = 0; i < n_env; i++)
      free(env[i]);
    free(env);
    return git_denied(resp, deny, deny_msg);
  }

  env_add(&env, &n_env, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  env_add(&env, &n_env, "HOME=%s", g_forge.data_dir);
  env_add(&env, &n_env, "GIT_CONFIG_NOSYSTEM=1");
  env_add(&env, &n_env, "GIT_CONFIG_GLOBAL=/dev/null");
  env_add(&env, &n_env, "GIT_PROJECT_ROOT=%s", g_forge.repos_dir);
  env_add(&env, &n_env, "GIT_HTTP_EXPORT_ALL=1");
  env_add(&env, &n_env, "GATEWAY_INTERFACE=CGI/1.1");
  env_add(&env, &n_env, "PATH_INFO=/%s.git%s", full, rest);
  env_add(&env, &n_env, "REQUEST_METHOD=%s", rq->method);
  env_add(&env, &n_env, "QUERY_STRING=%s", rq->query ? rq->query : "");
  env_add(&env, &n_env, "CONTENT_TYPE=%s", rq->content_type ? rq->content_type : "");
  env_add(&env, &n_env, "CONTENT_LENGTH=%zu", rq->body_len);
  env_add(&env, &n_env, "REMOTE_USER=%s", remote_user);
  env_add(&env, &n_env, "REMOTE_ADDR=127.0.0.1");
  env_add(&env, &n_env, "FORGE_HOOK_LOG=%s", g_forge.push_log);
  env_add(&env, &n_env, "FORGE_HOOK_REPO=%s", full);
  if (rq->content_encoding)
    env_add(&env, &n_env, "HTTP_CONTENT_ENCODING=%s", rq->content_encoding);
  if (rq->git_protocol && strlen(rq->git_protocol) < 256)
    env_add(&env, &n_env, "GIT_PROTOCOL=%s", rq->git_protocol);

  int in_fd = memfd_create("forge-in", MFD_CLOEXEC);
  char *out = NULL;
  size_t out_len = 0;
  int r = -1;
  if (in_fd >= 0 && al_write_all(in_fd, rq->body, rq->body_len) == 0) {
    const char *argv[] = {"git", "http-backend", NULL};
    r = spawn_capture(argv, env, in_fd, &out, &out_len, FORGE_CGI_OUT_MAX);
  }
  if (in_fd >= 0)
    close(in_fd);
  for (size_t i = 0; i < n_env; i++)
    free(env[i]);
  free(env);
  if (r < 0 || !out) {
    free(out);
    return forge_resp_text(resp, 500, "git http-backend failed\n");
  }
  /* Parse CGI headers. */
  char *sep = strstr(out, "\r\n\r\n");
  size_t seplen = 4;
  char *sep2 = strstr(out, "\n\n");
  if (!sep || (sep2 && sep2 < sep)) {
    sep = sep2;
    seplen = 2;
  }
  if (!sep) {
    free(out);
    return forge_resp_text(resp, 500, "git http-backend: bad CGI output\n");
  }
  *sep = '\0';
  resp->status = 200;
  resp->headers = json_object();
  char *save = NULL;
  for (char *line = strtok_r(out, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    *colon = '\0';
    char *val = colon + 1;
    while (*val == ' ')
      val++;
    if (!strcasecmp(line, "Status"))
      resp->status = atoi(val) > 0 ? atoi(val) : 500;
    else if (!strcasecmp(line, "Content-Type"))
      json_object_set_new(resp->headers, "Content-Type", json_string(val));
    else
      json_object_set_new(resp->headers, line, json_string(val));
  }
  size_t hdr_len = (size_t)(sep - out) + seplen;
  resp->body_len = out_len - hdr_len;
  resp->body = al_xmalloc(resp->body_len + 1);
  memcpy(resp->body, out + hdr_len, resp->body_len);
  resp->content_type = NULL;
  free(out);
}

/* ---- the pre-receive hook (runs as a child of git receive-pack) ---- */

static int hook_capture(const char *const *argv, char **out)
{
  size_t len;
  int r = spawn_capture(argv, NULL, -1, out, &len, 64u << 20);
  return r;
}

static bool touches_workflows(const char *old, const char *new_sha, char *which, size_t wsz)
{
  char *out = NULL;
  const char *log[] = {"git", "log",   "--format=", "--name-only", "--no-renames",
                       "-m",  new_sha, "--not",     "--all",       NULL};
  bool hit = false;
  for (int pass = 0; pass < 2 && !hit; pass++) {
    if (pass == 1) {
      if (!strcmp(old, zero_sha))
        break;
      const char *diff[] = {"git", "diff", "--name-only", "--no-renames", old, new_sha, NULL};
      if (hook_capture(diff, &out) != 0) {
        free(out);
        out = NULL;
        continue;
      }
    } else if (hook_capture(log, &out) != 0) {
      free(out);
      out = NULL;
      continue;
    }
    char *save = NULL;
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      if (!strncmp(l, ".github/workflows/", 18)) {
        snprintf(which, wsz, "%s", l);
        hit = true;
        break;
      }
    }
    free(out);
    out = NULL;
  }
  return hit;
}

static void log_push(const char *ref, const char *old, const char *new_sha, bool accepted,
                     const char *reason)
{
  const char *path = getenv("FORGE_HOOK_LOG");
  if (!path)
    return;
  char ts[32];
  forge_iso8601((long long)time(NULL), ts);
  json_t *j =
      json_pack("{s:s, s:s?, s:s, s:s, s:s, s:b, s:s?, s:s?, s:s}", "repo",
                getenv("FORGE_HOOK_REPO") ? getenv("FORGE_HOOK_REPO") : "", "token",
                getenv("FORGE_HOOK_TOKEN"), "ref", ref, "old", old, "new", new_sha, "accepted",
                accepted, "reason", reason, "app", getenv("FORGE_HOOK_APP_SLUG"), "time", ts);
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!s)
    return;
  al_autofree char *line = al_strdup_printf("%s\n", s);
  free(s);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    al_write_all(fd, line, strlen(line));
    close(fd);
  }
}

int forge_hook_main(void)
{
  const char *rules_s = getenv("FORGE_HOOK_RULES");
  json_t *repo = rules_s ? json_loads(rules_s, 0, NULL) : NULL;
  if (!repo) {
    fprintf(stderr, "error: airlock-forge: push refused (no authenticated installation token)\n");
    return 1;
  }
  struct forge_app app = {0};
  const char *app_id = getenv("FORGE_HOOK_APP_ID");
  app.id = app_id ? atoll(app_id) : -1;
  app.slug = (char *)(getenv("FORGE_HOOK_APP_SLUG") ? getenv("FORGE_HOOK_APP_SLUG") : "");
  const char *wf = getenv("FORGE_HOOK_WORKFLOWS");
  bool can_workflows = wf && !strcmp(wf, "write");

  json_t *lines = json_array();
  char buf[4096];
  bool refuse_all = false;
  while (fgets(buf, sizeof buf, stdin)) {
    char old[128], new_sha[128], ref[3000];
    if (sscanf(buf, "%127s %127s %2999s", old, new_sha, ref) != 3)
      continue;
    /* Zero id of the same length (sha1 or sha256). */
    bool old_zero = strspn(old, "0") == strlen(old);
    bool new_zero = strspn(new_sha, "0") == strlen(new_sha);
    const char *reason = NULL;
    char msg[4096] = "";
    if (!strncmp(ref, "refs/heads/", 11)) {
      const char *branch = ref + 11;
      json_t *r = forge_branch_rules(repo, branch, &app);
      bool classic = json_is_true(json_object_get(r, "classic"));
      const char *code = classic ? "GH006" : "GH013";
      char head[3200];
      if (classic)
        snprintf(head, sizeof head, "error: GH006: Protected branch update failed for %s.", ref);
      else
        snprintf(head, sizeof head, "error: GH013: Repository rule violations found for %s.", ref);
      (void)code;
      if (new_zero && (json_is_true(json_object_get(r, "del_classic")) ||
                       json_is_true(json_object_get(r, "del_ruleset")))) {
        reason = "Cannot delete this protected branch";
      } else if (!new_zero && !old_zero &&
                 (json_is_true(json_object_get(r, "nonff_classic")) ||
                  json_is_true(json_object_get(r, "nonff_ruleset")))) {
        const char *anc[] = {"git", "merge-base", "--is-ancestor", old, new_sha, NULL};
        if (hook_capture(anc, NULL) != 0)
          reason = "Cannot force-push to this branch";
      }
      if (!reason && old_zero && json_is_true(json_object_get(r, "create_ruleset")))
        reason = "Cannot create ref due to creations being restricted.";
      if (!reason && !new_zero && json_is_true(json_object_get(r, "restricted_classic")))
        reason = "You're not authorized to push to this branch.";
      if (!reason && !new_zero &&
          (json_is_true(json_object_get(r, "pr_classic")) ||
           json_is_true(json_object_get(r, "pr_ruleset"))))
        reason = "Changes must be made through a pull request.";
      if (!reason && !new_zero && json_is_true(json_object_get(r, "update_ruleset")))
        reason = "Cannot update this protected ref.";
      if (reason)
        snprintf(msg, sizeof msg, "%s\nerror: %s", head, reason);
      json_decref(r);
    } else if (!strncmp(ref, "refs/tags/", 10)) {
      /* Tag rulesets, enforced on push as GitHub does (GH013). */
      json_t *r = forge_tag_rules(repo, ref + 10, &app);
      if (old_zero && !new_zero && json_is_true(json_object_get(r, "create")))
        reason = "Cannot create ref due to creations being restricted.";
      else if (!old_zero && !new_zero && json_is_true(json_object_get(r, "update")))
        reason = "Cannot update this protected ref.";
      else if (!old_zero && new_zero && json_is_true(json_object_get(r, "del")))
        reason = "Cannot delete this protected ref.";
      if (reason)
        snprintf(msg, sizeof msg,
                 "error: GH013: Repository rule violations found for %s.\nerror: %s", ref, reason);
      json_decref(r);
    }
    char which[512];
    if (!reason && !new_zero && !can_workflows &&
        touches_workflows(old, new_sha, which, sizeof which)) {
      reason = "refusing to allow a GitHub App to create or update workflow without `workflows` "
               "permission";
      snprintf(msg, sizeof msg,
               "error: refusing to allow a GitHub App to create or update workflow `%s` without "
               "`workflows` permission",
               which);
    }
    if (reason) {
      fprintf(stderr, "%s\n", msg);
      refuse_all = true;
    }
    json_array_append_new(lines, json_pack("{s:s, s:s, s:s, s:s?}", "ref", ref, "old", old, "new",
                                           new_sha, "reason", reason));
  }
  size_t i;
  json_t *l;
  json_array_foreach(lines, i, l)
  {
    const char *reason = json_string_value(json_object_get(l, "reason"));
    log_push(json_string_value(json_object_get(l, "ref")),
             json_string_value(json_object_get(l, "old")),
             json_string_value(json_object_get(l, "new")), !refuse_all,
             reason ? reason : (refuse_all ? "another ref in the same push was refused" : NULL));
  }
  json_decref(lines);
  json_decref(repo);
  return refuse_all ? 1 : 0;
}
