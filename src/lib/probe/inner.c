/* The inner side of `airlock probe`: inside the sandbox (or, for the
 * positive control, on the host), read the context on fd 0 (or, docker
 * backend, from $AIRLOCK_PROBE_CONTEXT), run every
 * selected probe in its own child with a timeout, and write one JSON line
 * per probe on fd 1: {"id","verdict","evidence","ms"}. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"

/* ---- the context as JSON ---- */

char *pr_ctx_to_json(const pr_ctx *c)
{
  json_t *j = json_object();
  json_object_set_new(j, "unconfined", json_boolean(c->unconfined));
  json_object_set_new(j, "docker", json_boolean(c->docker));
  json_object_set_new(j, "proxy_from_env", json_boolean(c->proxy_from_env));
  json_object_set_new(j, "preflight", json_boolean(c->preflight));
  json_object_set_new(j, "only", json_string(c->only));
  json_object_set_new(j, "nonce", json_string(c->nonce));
  json_object_set_new(j, "canary_tcp", json_integer(c->canary_tcp));
  json_object_set_new(j, "canary_tcp6", json_integer(c->canary_tcp6));
  json_object_set_new(j, "canary_udp", json_integer(c->canary_udp));
  json_object_set_new(j, "canary_dns", json_integer(c->canary_dns));
  json_object_set_new(j, "canary_unix", json_string(c->canary_unix));
  json_object_set_new(j, "host_home", json_string(c->host_home));
  json_object_set_new(j, "canary_dir", json_string(c->canary_dir));
  json_object_set_new(j, "canary_sock", json_string(c->canary_sock));
  json_object_set_new(j, "outer_cwd", json_string(c->outer_cwd));
  json_object_set_new(j, "proxy", json_string(c->proxy));
  json_object_set_new(j, "allow_host", json_string(c->allow_host));
  json_object_set_new(j, "allow_port", json_integer(c->allow_port));
  json_object_set_new(j, "tls_host", json_string(c->tls_host));
  json_object_set_new(j, "tls_port", json_integer(c->tls_port));
  json_object_set_new(j, "ws_path", json_string(c->ws_path));
  json_object_set_new(j, "tmp_path", json_string(c->tmp_path));
  json_object_set_new(j, "mem_limit", json_integer((json_int_t)c->mem_limit));
  json_object_set_new(j, "ws_size", json_integer((json_int_t)c->ws_size));
  json_object_set_new(j, "tmp_size", json_integer((json_int_t)c->tmp_size));
  json_object_set_new(j, "pids", json_integer(c->pids));
  json_object_set_new(j, "nofile", json_integer(c->nofile));
  json_object_set_new(j, "leaked_fd", json_integer(c->leaked_fd));
  json_object_set_new(j, "outer_pid", json_integer(c->outer_pid));
  json_object_set_new(j, "outer_start", json_integer((json_int_t)c->outer_start));
  json_t *env = json_array();
  for (size_t i = 0; i < c->n_env_allowed; i++)
    json_array_append_new(env, json_string(c->env_allowed[i]));
  json_object_set_new(j, "env_allowed", env);
  json_t *ro = json_array();
  for (size_t i = 0; i < c->n_ro_paths; i++)
    json_array_append_new(ro, json_string(c->ro_paths[i]));
  json_object_set_new(j, "ro_paths", ro);
  json_t *h = json_array();
  for (size_t i = 0; i < c->n_host_hashes; i++)
    json_array_append_new(h, json_string(c->host_hashes[i]));
  json_object_set_new(j, "host_hashes", h);
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

static void get_str(json_t *j, const char *k, char *out, size_t len)
{
  const char *v = json_string_value(json_object_get(j, k));
  snprintf(out, len, "%s", v ? v : "");
}

static long long get_int(json_t *j, const char *k)
{
  return json_integer_value(json_object_get(j, k));
}

int pr_ctx_from_json(const char *text, pr_ctx *c)
{
  memset(c, 0, sizeof *c);
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  if (!j || !json_is_object(j)) {
    json_decref(j);
    return -1;
  }
  c->unconfined = json_is_true(json_object_get(j, "unconfined"));
  c->docker = json_is_true(json_object_get(j, "docker"));
  c->proxy_from_env = json_is_true(json_object_get(j, "proxy_from_env"));
  c->preflight = json_is_true(json_object_get(j, "preflight"));
  get_str(j, "only", c->only, sizeof c->only);
  get_str(j, "nonce", c->nonce, sizeof c->nonce);
  c->canary_tcp = (int)get_int(j, "canary_tcp");
  c->canary_tcp6 = (int)get_int(j, "canary_tcp6");
  c->canary_udp = (int)get_int(j, "canary_udp");
  c->canary_dns = (int)get_int(j, "canary_dns");
  get_str(j, "canary_unix", c->canary_unix, sizeof c->canary_unix);
  get_str(j, "host_home", c->host_home, sizeof c->host_home);
  get_str(j, "canary_dir", c->canary_dir, sizeof c->canary_dir);
  get_str(j, "canary_sock", c->canary_sock, sizeof c->canary_sock);
  get_str(j, "outer_cwd", c->outer_cwd, sizeof c->outer_cwd);
  get_str(j, "proxy", c->proxy, sizeof c->proxy);
  get_str(j, "allow_host", c->allow_host, sizeof c->allow_host);
  c->allow_port = (int)get_int(j, "allow_port");
  get_str(j, "tls_host", c->tls_host, sizeof c->tls_host);
  c->tls_port = (int)get_int(j, "tls_port");
  get_str(j, "ws_path", c->ws_path, sizeof c->ws_path);
  get_str(j, "tmp_path", c->tmp_path, sizeof c->tmp_path);
  c->mem_limit = (uint64_t)get_int(j, "mem_limit");
  c->ws_size = (uint64_t)get_int(j, "ws_size");
  c->tmp_size = (uint64_t)get_int(j, "tmp_size");
  c->pids = (uint32_t)get_int(j, "pids");
  c->nofile = (uint32_t)get_int(j, "nofile");
  c->leaked_fd = (int)get_int(j, "leaked_fd");
  c->outer_pid = (pid_t)get_int(j, "outer_pid");
  c->outer_start = (unsigned long long)get_int(j, "outer_start");
  json_t *a;
  size_t i;
  json_array_foreach(json_object_get(j, "env_allowed"), i, a)
  {
    if (c->n_env_allowed < PR_MAX_ENV && json_string_value(a))
      c->env_allowed[c->n_env_allowed++] = al_xstrdup(json_string_value(a));
  }
  json_array_foreach(json_object_get(j, "ro_paths"), i, a)
  {
    if (c->n_ro_paths < PR_MAX_RO && json_string_value(a))
      c->ro_paths[c->n_ro_paths++] = al_xstrdup(json_string_value(a));
  }
  json_array_foreach(json_object_get(j, "host_hashes"), i, a)
  {
    if (c->n_host_hashes < PR_MAX_HASHES && json_string_value(a))
      snprintf(c->host_hashes[c->n_host_hashes++], 17, "%s", json_string_value(a));
  }
  json_decref(j);
  return c->nonce[0] ? 0 : -1;
}

void pr_ctx_free(pr_ctx *c)
{
  for (size_t i = 0; i < c->n_env_allowed; i++)
    free(c->env_allowed[i]);
  c->n_env_allowed = 0;
  for (size_t i = 0; i < c->n_ro_paths; i++)
    free(c->ro_paths[i]);
  c->n_ro_paths = 0;
}

/* ---- the runner ---- */

static const char *verdict_word(int v)
{
  return v == PR_PENDING ? "pending" : al_probe_verdict_name((al_probe_verdict)v);
}

static void run_one(const pr_ctx *ctx, const pr_probe *p)
{
  pr_result res = {.verdict = AL_PROBE_INCONCLUSIVE};
  snprintf(res.evidence, sizeof res.evidence, "no result");
  uint64_t t0 = al_now_ms();
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0) {
    pr_inconclusive(&res, "pipe: %s", pr_errname(errno));
    goto out;
  }
  pid_t pid = fork();
  if (pid < 0) {
    pr_inconclusive(&res, "fork: %s", pr_errname(errno));
    close(pfd[0]);
    close(pfd[1]);
    goto out;
  }
  if (pid == 0) {
    close(pfd[0]);
    setpgid(0, 0);
    pr_result r = {.verdict = AL_PROBE_INCONCLUSIVE};
    snprintf(r.evidence, sizeof r.evidence, "the probe set no verdict");
    p->run(ctx, &r);
    (void)!write(pfd[1], &r, sizeof r);
    _exit(0);
  }
  close(pfd[1]);
  int timeout = p->timeout_ms ? p->timeout_ms : 3000;
  struct pollfd pl = {.fd = pfd[0], .events = POLLIN};
  bool got = false, timed_out = false;
  int n = poll(&pl, 1, timeout);
  if (n == 1) {
    pr_result r;
    if (al_read_all(pfd[0], &r, sizeof r) == (ssize_t)sizeof r) {
      res = r;
      res.evidence[sizeof res.evidence - 1] = '\0';
      got = true;
    }
  } else {
    timed_out = true;
  }
  close(pfd[0]);
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
    ;
  if (!got) {
    int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    if (timed_out)
      pr_inconclusive(&res, "timed out after %d ms", timeout);
    else if (sig == SIGSYS && (p->flags & PR_SIGSYS_BLOCKS))
      pr_blocked(&res, "killed by SIGSYS (the seccomp filter)");
    else if (sig == SIGSEGV && (p->flags & PR_SEGV_NOABI))
      pr_blocked(&res, "int 0x80 faulted (SIGSEGV): this machine has no i386 syscall entry, so "
                       "the ABI is closed before seccomp (the filter's arch check is untested "
                       "here; docs/probes.md, \"Known limits\")");
    else if (sig == SIGKILL && (p->flags & PR_KILL_BLOCKS))
      pr_blocked(&res, "killed by SIGKILL (the limit's OOM kill)");
    else if (sig)
      pr_inconclusive(&res, "the probe died of signal %d (%s)", sig, sigabbrev_np(sig));
    else
      pr_inconclusive(&res, "the probe exited without a verdict");
  }
out:;
  json_t *j = json_object();
  json_object_set_new(j, "id", json_string(p->id));
  json_object_set_new(j, "verdict", json_string(verdict_word(res.verdict)));
  json_object_set_new(j, "evidence", json_string(res.evidence));
  res.digests[sizeof res.digests - 1] = '\0';
  if (res.digests[0])
    json_object_set_new(j, "digests", json_string(res.digests));
  json_object_set_new(j, "ms", json_integer((json_int_t)(al_now_ms() - t0)));
  char *line = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (line) {
    size_t l = strlen(line);
    line[l] = '\n';
    (void)!al_write_all(1, line, l + 1);
    free(line);
  }
}

/* docker backend: the proxy is where al_docker_run's HTTPS_PROXY points
 * ("http://IP:PORT" or "http://IP:PORT/"). */
static void proxy_from_env(pr_ctx *ctx)
{
  const char *v = getenv("HTTPS_PROXY");
  if (!v || strncmp(v, "http://", 7) != 0)
    return;
  snprintf(ctx->proxy, sizeof ctx->proxy, "%s", v + 7);
  ctx->proxy[strcspn(ctx->proxy, "/")] = '\0';
}

int al_probe_inner_main(void)
{
  /* The context comes on stdin, or (docker backend, whose stdin is only
   * for the run's secrets) in PR_CONTEXT_ENV. */
  const char *from = "stdin";
  char *buf = NULL;
  const char *env = getenv(PR_CONTEXT_ENV);
  if (env && *env) {
    from = "$" PR_CONTEXT_ENV;
    buf = al_xstrdup(env);
    /* not part of the environment the probes inspect */
    unsetenv(PR_CONTEXT_ENV);
  } else {
    buf = al_xmalloc(1 << 20);
    ssize_t n = al_read_all(0, buf, (1 << 20) - 1);
    if (n <= 0) {
      fprintf(stderr, "airlock probe --inside: no context on stdin\n");
      free(buf);
      return 2;
    }
    buf[n] = '\0';
  }
  pr_ctx ctx;
  int rc = pr_ctx_from_json(buf, &ctx);
  free(buf);
  if (rc < 0) {
    fprintf(stderr, "airlock probe --inside: bad context in %s\n", from);
    return 2;
  }
  if (ctx.proxy_from_env)
    proxy_from_env(&ctx);
  signal(SIGPIPE, SIG_IGN);
  for (size_t i = 0; i < pr_catalogue_len; i++)
    if (pr_selected(&pr_catalogue[i], ctx.preflight, ctx.only))
      run_one(&ctx, &pr_catalogue[i]);
  pr_ctx_free(&ctx);
  return 0;
}
