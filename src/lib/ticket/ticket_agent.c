/* Phase: the agent in its sandbox (native or Docker) with the egress
 * proxy, then what it printed and what the proxy decided. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "broker/client.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/term.h"
#include "common/memfd.h"
#include "common/util.h"
#include "gateway/gateway.h"
#include "run/run.h"

/* The agent's own report: the last `AIRLOCK_RESULT {json}` line. The agent
 * is untrusted: only a PR URL under the forge's web URL for this repository
 * is accepted. */
static void agent_result(struct ticket *t, const char *out, al_ticket_outcome *res)
{
  const char *last = NULL;
  for (const char *p = strstr(out, "AIRLOCK_RESULT "); p; p = strstr(p + 1, "AIRLOCK_RESULT "))
    if (p == out || p[-1] == '\n')
      last = p;
  json_t *attempts = json_array();
  for (const char *p = strstr(out, "AIRLOCK_ATTEMPT "); p; p = strstr(p + 1, "AIRLOCK_ATTEMPT ")) {
    if (p != out && p[-1] != '\n')
      continue;
    const char *s = p + 16;
    json_t *j = json_loadb(s, strcspn(s, "\n"), 0, NULL);
    if (json_is_object(j) && json_array_size(attempts) < 200)
      json_array_append_new(attempts, j);
    else
      json_decref(j);
  }
  json_object_set_new(t->rec, "agent_attempts", attempts);
  if (!last)
    return;
  const char *s = last + 15;
  json_t *j = json_loadb(s, strcspn(s, "\n"), 0, NULL);
  /* What the agent asks the supervisor to put on the PR it opens (safe
   * outputs, ticket_outputs.c): data for the forge, never interpreted. */
  const char *title = j ? json_string_value(json_object_get(j, "title")) : NULL;
  const char *body = j ? json_string_value(json_object_get(j, "body")) : NULL;
  if (title || body)
    json_object_set_new(json_object_get(t->rec, "agent"), "declared",
                        json_pack("{s:s?, s:s?}", "title", title, "body", body));
  const char *url = j ? json_string_value(json_object_get(j, "pr_url")) : NULL;
  /* Only a hint until tk_verify_pr() has found the PR on the forge itself. */
  char prefix[1024];
  snprintf(prefix, sizeof prefix, "%s/%s/pull/", t->policy->forge.git_url, t->repo);
  bool ok = url && strncmp(url, prefix, strlen(prefix)) == 0 && strlen(url) < sizeof res->pr_url;
  if (ok) {
    const char *num = url + strlen(prefix);
    ok = *num && strspn(num, "0123456789") == strlen(num);
  }
  if (ok)
    snprintf(res->pr_url, sizeof res->pr_url, "%s", url);
  json_object_set_new(t->rec, "pull_request_reported",
                      ok ? json_pack("{s:s, s:s}", "url", url, "branch", t->branch)
                         : json_pack("{s:n, s:s}", "url", "rejected_report",
                                     url ? "the agent reported a URL outside this repository"
                                         : "no pull request reported"));
  json_decref(j);
}

/* gh in sealed mode (issue #27; "gh help environment"): gh sends GH_TOKEN
 * only to github.com and GH_ENTERPRISE_TOKEN to any other host, for which
 * it asks https://HOST/api/v3/... and https://HOST/api/graphql, the way
 * GitHub Enterprise serves them (the gateway maps both onto its rules,
 * gateway/apipath.h). GH_HOST: github.com when the API is api.github.com,
 * else the git host (gh also insists that a git remote names GH_HOST);
 * GH_REPO the run's repository; its config in /tmp; no prompt, pager,
 * spinner or update check. The CA bundle reaches gh through SSL_CERT_FILE
 * (Go's crypto/x509 on Linux), the proxy through HTTPS_PROXY. */
static void tk_gh_env(struct ticket *t)
{
  const char *api = t->policy->forge.api_url, *git = t->policy->forge.git_url;
  const char *u =
      strncasecmp(api, "https://api.github.com", 22) == 0 && (api[22] == '\0' || api[22] == '/')
          ? "https://github.com"
          : git;
  const char *h = strncmp(u, "https://", 8) == 0 ? u + 8 : u;
  size_t hl = strcspn(h, "/");
  char host[300];
  if (hl == 0 || hl >= sizeof host)
    return;
  memcpy(host, h, hl);
  host[hl] = '\0';
  tk_env_add(t, "GH_HOST=%s", host);
  tk_env_add(t, "GH_REPO=%s/%s", host, t->repo);
  tk_env_add(t, "GH_ENTERPRISE_TOKEN=%s", t->placeholder);
  tk_env_add(t, "GITHUB_ENTERPRISE_TOKEN=%s", t->placeholder);
  tk_env_add(t, "GH_CONFIG_DIR=/tmp/airlock-gh");
  tk_env_add(t, "GH_PROMPT_DISABLED=1");
  tk_env_add(t, "GH_NO_UPDATE_NOTIFIER=1");
  tk_env_add(t, "GH_SPINNER_DISABLED=1");
  tk_env_add(t, "GH_PAGER=cat");
}

void tk_build_env(struct ticket *t)
{
  const al_policy *p = t->policy;
  const char *ca = t->o->docker ? TK_CA_BUNDLE_DOCKER : TK_CA_BUNDLE_NATIVE;
  bool sealed = p->credentials.mode == AL_CRED_SEALED;
  tk_env_add(t, "AIRLOCK_RUN_ID=%s", t->run_id);
  tk_env_add(t, "AIRLOCK_REPO=%s", t->repo);
  if (tk_vendor(t)) { /* a Jira or Linear ticket (issue #31): its key */
    tk_env_add(t, "AIRLOCK_TICKET=%s", t->tk.key);
    tk_env_add(t, "AIRLOCK_TICKET_SYSTEM=%s", al_tk_kind_name(t->tk.kind));
    /* sealed: the ticket host is reached through the gateway, which holds
     * the vendor credential (ticket_sealed.c); the agent's is the
     * placeholder in AIRLOCK_TICKET_TOKEN */
    if (sealed && p->ticket.url)
      tk_env_add(t, "AIRLOCK_TICKET_URL=%s", p->ticket.url);
  } else {
    tk_env_add(t, "AIRLOCK_TICKET=%lu", t->number);
  }
  tk_env_add(t, "AIRLOCK_API_URL=%s", p->forge.api_url);
  /* which API that is (issue #30): github (REST /repos/...) or gitlab
   * (REST v4 /projects/:id/..., the ticket an issue's iid) */
  tk_env_add(t, "AIRLOCK_FORGE_KIND=%s", al_forge_kind_names[p->forge.kind]);
  tk_env_add(t, "AIRLOCK_GIT_URL=%s/%s.git", p->forge.git_url, t->repo);
  tk_env_add(t, "AIRLOCK_BRANCH=%s", t->branch);
  tk_env_add(t, "AIRLOCK_BASE_BRANCH=%s", p->base_branch ? p->base_branch : "");
  tk_env_add(t, "AIRLOCK_CREDENTIALS=%s", al_cred_mode_name(p->credentials.mode));
  if (sealed) {
    /* Sealed: the placeholder, worthless outside this run's gateway, under
     * every name a tool may look for a token in. */
    tk_env_add(t, "AIRLOCK_GIT_TOKEN=%s", t->placeholder);
    tk_env_add(t, "AIRLOCK_TICKET_TOKEN=%s", t->placeholder);
    tk_env_add(t, "GH_TOKEN=%s", t->placeholder);
    tk_env_add(t, "GITHUB_TOKEN=%s", t->placeholder);
    tk_gh_env(t);
  } else {
    tk_env_add(t, "AIRLOCK_GIT_TOKEN=%s", al_lease_token(t->lease, AL_ROLE_GIT));
    tk_env_add(t, "AIRLOCK_TICKET_TOKEN=%s", al_lease_token(t->lease, AL_ROLE_TICKET));
  }
  /* git, configured through the environment only: the credential helper
   * reads the token (sealed: the placeholder) from the environment when
   * git asks, so it is never in .git/config, a remote URL or a command
   * line. Only https, no prompts. */
  tk_env_add(t, "GIT_CONFIG_COUNT=2");
  tk_env_add(t, "GIT_CONFIG_KEY_0=credential.helper");
  tk_env_add(t, "GIT_CONFIG_VALUE_0=!f() { test \"$1\" = get || exit 0; "
                "echo username=x-access-token; echo \"password=$AIRLOCK_GIT_TOKEN\"; }; f");
  tk_env_add(t, "GIT_CONFIG_KEY_1=credential.useHttpPath");
  tk_env_add(t, "GIT_CONFIG_VALUE_1=false");
  tk_env_add(t, "GIT_ALLOW_PROTOCOL=https");
  tk_env_add(t, "GIT_TERMINAL_PROMPT=0");
  tk_env_add(t, "GIT_AUTHOR_NAME=airlock[bot]");
  tk_env_add(t, "GIT_AUTHOR_EMAIL=airlock-bot@users.noreply.localhost");
  tk_env_add(t, "GIT_COMMITTER_NAME=airlock[bot]");
  tk_env_add(t, "GIT_COMMITTER_EMAIL=airlock-bot@users.noreply.localhost");
  /* One bundle (system CAs + forge.ca_file + the run CA), never a single
   * CA file: a tool that trusts only it could reach nothing else. */
  tk_env_add(t, "AIRLOCK_CA_BUNDLE=%s", ca);
  tk_env_add(t, "SSL_CERT_FILE=%s", ca);
  tk_env_add(t, "CURL_CA_BUNDLE=%s", ca);
  tk_env_add(t, "GIT_SSL_CAINFO=%s", ca);
  tk_env_add(t, "REQUESTS_CA_BUNDLE=%s", ca);
  tk_env_add(t, "NODE_EXTRA_CA_CERTS=%s", ca);
  for (char **e = t->plan.env; e && *e; e++)
    tk_env_add(t, "%s", *e); /* the preset's (presets.c): telemetry off, its home */
}

/* The model relay's calls (issue #10) into the run record: one object per
 * call as the relay logged it (never a body), and totals. sum (sumlen
 * bytes) gets the agent phase line's part: calls, and the first refusal
 * and upstream error with their reasons (issue #17), or "". */
static void relay_record(struct ticket *t, int fd, char *sum, size_t sumlen)
{
  sum[0] = '\0';
  if (fd < 0)
    return;
  size_t n = 0;
  al_autofree char *text = tk_read_memfd(fd, &n);
  json_t *calls = tk_decisions_from(text);
  json_int_t in = 0, out = 0, refused = 0;
  unsigned nerr = 0, nref = 0;
  char err_why[200] = "", ref_why[200] = "";
  for (size_t i = 0; i < json_array_size(calls); i++) {
    json_t *c = json_array_get(calls, i);
    in += json_integer_value(json_object_get(c, "tokens_in"));
    out += json_integer_value(json_object_get(c, "tokens_out"));
    const char *d = json_string_value(json_object_get(c, "decision"));
    const char *why = json_string_value(json_object_get(c, "reason"));
    if (!d || strcmp(d, "forwarded") != 0)
      refused++;
    if (d && strcmp(d, "upstream_error") == 0 && !nerr++)
      snprintf(err_why, sizeof err_why, "%.160s", why ? why : "?");
    else if (d && strcmp(d, "forwarded") != 0 && strcmp(d, "upstream_error") != 0 && !nref++)
      snprintf(ref_why, sizeof ref_why, "%.160s", why ? why : "?");
  }
  if (json_array_size(calls))
    snprintf(sum, sumlen, ", model relay: %zu call(s)%s%s%s%s%s%s", json_array_size(calls),
             nref ? "; refused: " : "", ref_why, nref > 1 ? " (and more)" : "",
             nerr ? "; upstream errors: " : "", err_why, nerr > 1 ? " (and more)" : "");
  json_t *ups = json_array();
  for (size_t i = 0; i < t->policy->relay.n_upstreams; i++)
    json_array_append_new(ups, json_string(t->policy->relay.upstreams[i].upstream));
  json_object_set_new(t->rec, "model_relay",
                      json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I}, s:o}", "upstream",
                                t->policy->relay.upstreams[0].upstream, "upstreams", ups, "totals",
                                "calls", (json_int_t)json_array_size(calls), "not_forwarded",
                                refused, "tokens_in", in, "tokens_out", out, "calls", calls));
}

/* The agent phase on the Docker backend: the same environment, output and
 * decisions as the native sandbox (ro's fds), the CA bundle placed in the
 * container (docker.h `files`). Sealed: the proxy runs on the host as for
 * the native sandbox, with the gateway's hand-off on its listener. */
static int run_docker(struct ticket *t, const al_run_opts *ro, int *status, al_error *err)
{
  al_docker_opts d = *t->o->docker;
  d.handoff = ro->handoff;
  d.decisions_cap = ro->decisions_cap;
  d.policy = t->policy;
  d.argv = ro->argv;
  d.env = ro->env;
  d.timeout_ms = ro->timeout_ms;
  d.timed_out = ro->timed_out;
  d.stdout_fd = ro->stdout_fd;
  d.stderr_fd = ro->stderr_fd;
  d.decisions_fd = ro->decisions_fd;
  d.run_id = t->run_id;
  d.after_start = tk_wipe_env; /* as for the native sandbox: tokens gone once started */
  d.after_start_ctx = t;
  d.decisions_truncated = &t->decisions_truncated;
  char *files[2] = {NULL, NULL};
  files[0] = al_strdup_printf(TK_CA_BUNDLE_DOCKER_NAME "=%s", t->ca_bundle);
  d.files = files;
  int sig = 0;
  d.stopped_by = &sig;
  int r = al_docker_run(&d, status, err);
  if (sig) { /* the engine's run took the signal: the ticket was interrupted */
    t->signo = sig;
    t->interrupted = true;
  }
  free(files[0]);
  return r;
}

/* The host paths bound for the agent: the caller's (the agent's
 * directory), then the preset's (its package tree, node). ro holds 33. */
static void agent_ro_paths(const struct ticket *t, const char *ro[33])
{
  size_t nro = 0;
  for (const char *const *p = t->o->extra_ro_paths; p && *p && nro < 32; p++)
    ro[nro++] = *p;
  for (char **p = t->plan.ro_paths; p && *p && nro < 32; p++)
    ro[nro++] = *p;
  ro[nro] = NULL;
}

/* Is path at or under dir (both absolute, no trailing slash)? */
static bool path_under(const char *path, const char *dir)
{
  size_t l = strlen(dir);
  if (l == 1 && dir[0] == '/')
    return true;
  return strncmp(path, dir, l) == 0 && (path[l] == '\0' || path[l] == '/');
}

/* The native backend's agent, checked before any token is leased (the
 * audit, the lease and the preflight would otherwise run first and the
 * sandbox refuse it at the end): an absolute program must be an
 * executable regular file inside a path the sandbox binds (a read-only
 * path, or the host's /usr, /bin, /sbin, /lib...), and every path bound
 * for it must be bindable (al_sandbox_check_paths). Each message says what
 * to change. */
static int agent_check(const struct ticket *t, al_error *err)
{
  if (t->o->docker)
    return 0; /* the program is in the agent image */
  char *const *argv = t->plan.argv ? t->plan.argv : t->o->agent_argv;
  const char *ro[33];
  agent_ro_paths(t, ro);
  al_sandbox_opts so = {.policy = t->policy, .extra_ro_paths = ro};
  if (al_sandbox_check_paths(&so, err) < 0)
    return al_error_wrap(err, "the agent's sandbox (fix the path or the policy's "
                              "filesystem.ro_paths; nothing was leased)");
  const char *prog = argv ? argv[0] : NULL;
  if (!prog || !strchr(prog, '/') || t->policy->filesystem.root)
    return 0; /* looked up in the sandbox's PATH, or in the policy's own rootfs */
  if (prog[0] != '/')
    return al_make_error(err, EINVAL,
                         "the agent `%s`: a relative path means nothing inside the sandbox; give "
                         "an absolute path",
                         prog);
  struct stat st;
  if (stat(prog, &st) < 0)
    return al_make_error(err, errno, "the agent `%s` (nothing was leased)", prog);
  if (!S_ISREG(st.st_mode))
    return al_make_error(err, EINVAL,
                         "the agent `%s` is not a regular file; give the path of the program "
                         "(nothing was leased)",
                         prog);
  if (!(st.st_mode & 0111))
    return al_make_error(
        err, EACCES, "the agent `%s` is not executable; chmod +x it (nothing was leased)", prog);
  if (geteuid() != 0 && access(prog, X_OK) < 0)
    return al_make_error(err, errno,
                         "the agent `%s`: the sandbox runs it as your uid %u, which cannot execute "
                         "it; move it or fix its directory's mode (nothing was leased)",
                         prog, (unsigned)getuid());
  static const char *const system[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(system); i++)
    if (path_under(prog, system[i]))
      return 0;
  for (size_t i = 0; ro[i]; i++)
    if (path_under(prog, ro[i]))
      return 0;
  const al_policy_filesystem *fs = &t->policy->filesystem;
  for (size_t i = 0; i < fs->n_ro_paths; i++)
    if (path_under(prog, fs->ro_paths[i]))
      return 0;
  for (size_t i = 0; i < fs->n_sensitive_ro_paths; i++)
    if (path_under(prog, fs->sensitive_ro_paths[i]))
      return 0;
  return al_make_error(err, ENOENT,
                       "the agent `%s` is in no path the sandbox binds; add its directory to the "
                       "policy's filesystem.ro_paths (nothing was leased)",
                       prog);
}

int tk_agent_plan(struct ticket *t, al_error *err)
{
  if (!t->o->agent_preset)
    return agent_check(t, err);
  const al_agent_preset *p = al_agent_preset_find(t->o->agent_preset);
  if (!p)
    return al_error_set(err, EINVAL, "--agent %s: no such preset", t->o->agent_preset);
  if (t->o->docker)
    return al_make_error(err, ENOTSUP,
                         "--agent %s: presets run on the native backend (they bind the host's "
                         "install); on docker, name the program in the agent image",
                         p->name);
  if (al_agent_preset_resolve(p, t->o->agent_prefix, t->policy, t->o->agent_argv, &t->plan, err) <
      0)
    return -1;
  json_t *argv = json_array();
  for (char **a = t->plan.argv; *a; a++)
    json_array_append_new(argv, json_string(*a));
  json_t *ag = json_object_get(t->rec, "agent");
  json_object_set_new(ag, "argv", argv);
  json_object_set_new(ag, "preset", json_string(p->name));
  json_object_set_new(ag, "program", json_string(t->plan.program));
  return agent_check(t, err);
}

/* The agent's program as the record names it: agent.binary = {path,
 * sha256, bytes} of the host file argv[0] names (the file the sandbox
 * executes: it sees the host's paths read-only), or {path, error} when it
 * cannot be hashed (a bare name the sandbox finds through PATH, a file in
 * the docker image, unreadable). Read just before the start: a file changed
 * by someone who can write it between this read and the exec is not told
 * apart (the sandbox's binds are read-only from then on). */
static void agent_digest(struct ticket *t, const char *prog)
{
  json_t *b = json_pack("{s:s}", "path", prog ? prog : "");
  json_object_set_new(json_object_get(t->rec, "agent"), "binary", b);
  const char *why = NULL;
  char whybuf[256];
  int fd = -1;
  struct stat st;
  if (!prog || !strchr(prog, '/'))
    why = "found through PATH inside the sandbox: not hashed";
  else if (t->o->docker)
    why = "in the agent image (docker backend): not hashed";
  else if ((fd = open(prog, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0 || fstat(fd, &st) < 0) {
    snprintf(whybuf, sizeof whybuf, "%s", strerror(errno));
    why = whybuf;
  } else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if ((uint64_t)st.st_size > ((uint64_t)4 << 30))
    why = "larger than 4 GiB: not hashed";
  if (!why) {
    size_t n = (size_t)st.st_size;
    void *m = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    if (n && m == MAP_FAILED) {
      snprintf(whybuf, sizeof whybuf, "mmap: %s", strerror(errno));
      why = whybuf;
    } else {
      char hex[65];
      al_sha256_hex(n ? m : "", n, hex);
      if (n)
        munmap(m, n);
      json_object_set_new(b, "sha256", json_string(hex));
      json_object_set_new(b, "bytes", json_integer((json_int_t)n));
    }
  }
  if (fd >= 0)
    close(fd);
  if (why)
    json_object_set_new(b, "error", json_string(why));
}

/* Phase: run the agent. 0 when it ran and exited 0; -1 with err otherwise
 * (the record holds what happened either way). */
int tk_do_agent(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "agent");
  if ((t->decisions_fd = al_sealed_memfd("airlock-decisions", PX_DECISIONS_CAP, 0, err)) < 0 ||
      (t->out_fd = al_sealed_memfd("airlock-agent-stdout", AGENT_STDOUT_CAP, 0, err)) < 0 ||
      (t->policy->relay.present &&
       (t->relay_fd = al_sealed_memfd("airlock-relay", PX_DECISIONS_CAP, 0, err)) < 0)) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return -1;
  }
  if (tk_ca_bundle(t, err) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return -1;
  }
  tk_build_env(t);
  const char *ro[33];
  agent_ro_paths(t, ro);
  al_sandbox_file bundle = {
      .path = TK_CA_BUNDLE_NATIVE, .data = t->ca_bundle, .len = t->ca_bundle_len};
  al_run_opts ro_opts = {
      .policy = t->policy,
      .argv = t->plan.argv ? t->plan.argv : t->o->agent_argv,
      .env = t->env,
      .timeout_ms = t->o->timeout_ms,
      .decisions_fd = t->decisions_fd,
      .decisions_cap = PX_DECISIONS_CAP,
      .run_id = t->run_id,
      .quiet = t->o->quiet,
      .extra_ro_paths = ro,
      .stdout_fd = t->out_fd,
      .relay_log_fd = t->relay_fd,
      .relay_key = t->relay_key,
      .after_start = tk_wipe_env,
      .after_start_ctx = t,
      .files = &bundle,
      .n_files = 1,
      .handoff = t->gateway ? al_gateway_handoff(t->gateway) : NULL,
  };
  /* The agent's stdin is /dev/null (it must not read what the operator
   * types); its stderr goes through a pipe we forward with escape sequences
   * neutralised (it must not drive the operator's terminal, nor truncate
   * or rewrite our own stderr, which a shared descriptor would allow). */
  struct stderr_forward sr = {.fd = -1};
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int errp[2] = {-1, -1};
  if (devnull < 0 || pipe2(errp, O_CLOEXEC) < 0 || tk_stderr_forward_start(&sr, errp[0]) < 0) {
    al_make_error(err, errno, "agent stdio");
    tk_phase_end(t, s, "failed", "%s", err->msg);
    if (devnull >= 0)
      close(devnull);
    if (errp[0] >= 0) {
      close(errp[0]);
      close(errp[1]);
    }
    return -1;
  }
  bool timed_out = false; /* by the limit, not an agent that exits 124 */
  ro_opts.timed_out = &timed_out;
  ro_opts.stdin_fd = devnull;
  ro_opts.stderr_fd = errp[1];
  int status = 125;
  al_error re = {0};
  int r;
  agent_digest(t, ro_opts.argv ? ro_opts.argv[0] : NULL);
  if (t->o->docker)
    r = run_docker(t, &ro_opts, &status, &re);
  else
    r = al_run_command(&ro_opts, &status, &re);
  al_secret_free(t->relay_key); /* already wiped once the relay started */
  t->relay_key = NULL;
  close(errp[1]);
  close(devnull);
  tk_stderr_forward_join(&sr);
  tk_wipe_env(t);
  res->agent_status = r < 0 ? -1 : status;
  size_t n = 0;
  al_autofree char *lines = tk_read_memfd(t->decisions_fd, &n);
  size_t skipped = 0;
  json_t *decisions = tk_decisions_from_counted(lines, &skipped);
  char relay_sum[512];
  relay_record(t, t->relay_fd, relay_sum, sizeof relay_sum);
  size_t denied = tk_decisions_account(t, decisions, skipped);
  json_object_set_new(t->rec, "proxy_decisions", decisions);
  res->agent_stdout = tk_read_memfd(t->out_fd, &n);
  if (t->o->show_agent_stdout && n > 0) {
    /* the agent's stdout, through the gutter, before airlock's own lines
     * about what followed (common/term.h) */
    fflush(stdout);
    al_term_gutter g;
    al_term_gutter_init(&g, STDOUT_FILENO, AL_TERM_AGENT_GUTTER);
    al_term_gutter_write(&g, res->agent_stdout, n);
    al_term_gutter_end(&g);
  }
  agent_result(t, res->agent_stdout, res);
  json_object_set_new(json_object_get(t->rec, "agent"), "exit_status", json_integer(status));
  json_object_set_new(json_object_get(t->rec, "agent"), "timed_out", json_boolean(timed_out));
  t->timed_out = timed_out;
  if (r < 0) {
    json_object_set_new(json_object_get(t->rec, "agent"), "error", json_string(re.msg));
    tk_phase_end(t, s, "failed", "%s", re.msg);
    *err = re;
  } else {
    tk_phase_end(t, s, status == 0 ? "ok" : "failed",
                 "exit %d, %zu proxy decisions (%zu denied)%s%s%s%s", status,
                 json_array_size(decisions), denied, relay_sum, res->pr_url[0] ? ", reported " : "",
                 res->pr_url, res->pr_url[0] ? " (checked on the forge below)" : "");
    if (status != 0)
      al_make_error(err, 0, "the agent exited with status %d%s", status,
                    timed_out ? " (timeout)" : "");
  }
  return status == 0 && r == 0 ? 0 : -1;
}
