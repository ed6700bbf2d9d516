/* The outer side of `airlock probe`: canaries on the host, the sandbox
 * (and its egress proxy) from the policy running `airlock probe --inside`,
 * then the judgments only the host can make. See probe.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/procstat.h"
#include "common/util.h"
#include "probe/internal.h"
#include "proxy/proxy.h"
#include "run/run.h"
#include "sandbox/sandbox.h"

#define LEAKED_FD_MIN 97

static const char *const always_allowed_env[] = {
    "PATH", "LANG",       "TERM",        "HOME",       "USER",        "LOGNAME",  "TMPDIR",
    "PWD",  "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"};

static unsigned long long proc_start_time(pid_t pid)
{
  al_proc_stat st;
  return al_proc_stat_read(pid, &st) == 0 ? st.start_time : 0;
}

static bool env_name_allowed(const pr_ctx *c, const char *name, size_t nl)
{
  for (size_t i = 0; i < c->n_env_allowed; i++)
    if (strlen(c->env_allowed[i]) == nl && strncmp(c->env_allowed[i], name, nl) == 0)
      return true;
  return false;
}

static void build_ctx(pr_ctx *c, const al_probe_opts *o, const pr_canary *cn, const char *nonce,
                      const char *dir)
{
  const al_policy *p = o->policy;
  memset(c, 0, sizeof *c);
  c->unconfined = o->unconfined;
  c->preflight = o->preflight;
  snprintf(c->only, sizeof c->only, "%s", o->only_group ? o->only_group : "");
  snprintf(c->nonce, sizeof c->nonce, "%s", nonce);
  c->canary_tcp = cn->tcp;
  c->canary_tcp6 = cn->tcp6;
  c->canary_udp = cn->udp;
  c->canary_dns = cn->dns;
  snprintf(c->canary_unix, sizeof c->canary_unix, "%s", cn->unix_name);
  const char *home = getenv("HOME");
  if (!home || !*home) {
    struct passwd *pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : "/root";
  }
  snprintf(c->host_home, sizeof c->host_home, "%s", home);
  snprintf(c->canary_dir, sizeof c->canary_dir, "%s", dir);
  if (!getcwd(c->outer_cwd, sizeof c->outer_cwd))
    snprintf(c->outer_cwd, sizeof c->outer_cwd, "/");
  if (o->unconfined)
    snprintf(c->proxy, sizeof c->proxy, "127.0.0.1:%d", cn->proxy_port);
  else if (p->network.present)
    snprintf(c->proxy, sizeof c->proxy, "127.0.0.1:%d", AL_PROXY_PORT);
  for (size_t i = 0; i < p->network.n_allow; i++)
    if (!p->network.allow[i].wildcard && !p->network.allow[i].is_ip) {
      snprintf(c->allow_host, sizeof c->allow_host, "%s", p->network.allow[i].host);
      c->allow_port = p->network.allow[i].port;
      break;
    }
  for (size_t i = 0; i < p->network.n_allow; i++)
    if (!p->network.allow[i].wildcard && !p->network.allow[i].is_ip && p->network.allow[i].tls) {
      snprintf(c->tls_host, sizeof c->tls_host, "%s", p->network.allow[i].host);
      c->tls_port = p->network.allow[i].port;
      break;
    }
  if (o->unconfined) {
    snprintf(c->ws_path, sizeof c->ws_path, "%s/workspace", dir);
    snprintf(c->tmp_path, sizeof c->tmp_path, "%s/tmp", dir);
  } else {
    snprintf(c->ws_path, sizeof c->ws_path, "/workspace");
    snprintf(c->tmp_path, sizeof c->tmp_path, "/tmp");
  }
  c->mem_limit = p->process.limits.memory;
  c->ws_size = p->filesystem.workspace_size;
  c->tmp_size = p->filesystem.tmp_size;
  c->pids = p->process.limits.pids;
  c->nofile = p->process.limits.nofile;
  c->outer_pid = getpid();
  c->outer_start = proc_start_time(getpid());
  for (size_t i = 0; i < AL_ARRAY_SIZE(always_allowed_env); i++)
    c->env_allowed[c->n_env_allowed++] = (char *)always_allowed_env[i];
  for (size_t i = 0; i < p->process.n_env_pass && c->n_env_allowed < PR_MAX_ENV; i++)
    c->env_allowed[c->n_env_allowed++] = p->process.env_pass[i];
  for (size_t i = 0; i < p->process.n_secret_env && c->n_env_allowed < PR_MAX_ENV; i++)
    c->env_allowed[c->n_env_allowed++] = p->process.secret_env[i];
  for (size_t i = 0; i < p->filesystem.n_ro_paths && c->n_ro_paths < PR_MAX_RO; i++)
    c->ro_paths[c->n_ro_paths++] = p->filesystem.ro_paths[i];
  for (size_t i = 0; i < p->filesystem.n_sensitive_ro_paths && c->n_ro_paths < PR_MAX_RO; i++)
    c->ro_paths[c->n_ro_paths++] = p->filesystem.sensitive_ro_paths[i];
  /* the ticket's preflight: the names of the agent's environment (its
   * values are judged by cred.run-tokens) */
  static char names[PR_MAX_ENV][64];
  for (char *const *e = o->env; e && *e && c->n_env_allowed < PR_MAX_ENV; e++) {
    size_t nl = strcspn(*e, "=");
    size_t slot = c->n_env_allowed;
    snprintf(names[slot], sizeof names[slot], "%.*s", (int)nl, *e);
    c->env_allowed[c->n_env_allowed++] = names[slot];
  }
  /* Host values the sandbox must never hold, as SHA-256 prefixes. Paths
   * and short values are skipped: they are not secrets and legitimately
   * recur inside (the airlock binary's path, /bin/bash). */
  for (char **e = environ; e && *e && c->n_host_hashes < PR_MAX_HASHES; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || env_name_allowed(c, *e, (size_t)(eq - *e)))
      continue;
    const char *v = eq + 1;
    size_t vl = strlen(v);
    if (vl < 8 || v[0] == '/')
      continue;
    char hex[65];
    al_sha256_hex(v, vl, hex);
    snprintf(c->host_hashes[c->n_host_hashes++], 17, "%.16s", hex);
  }
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

/* The proxy is started exactly as for a run (run.h), confined the same way,
 * so the probes attack what production runs. Decisions go nowhere. */
static pid_t start_proxy(const al_policy *policy, int listen_fd, al_error *err)
{
  al_autoclose int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  al_proxy_listener l = {.fd = listen_fd, .run_id = "probe", .policy = policy};
  return al_run_start_proxy(&l, 1, devnull, err);
}

static void stop_child(pid_t pid)
{
  if (pid <= 0)
    return;
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* Run the inner process confined: the sandbox from the policy. */
static int run_confined(const al_probe_opts *o, const char *self, const pr_ctx *ctx, int in_r,
                        int out_w, int leaked, int *status, bool *mem_enforced, al_error *err)
{
  al_policy local = *o->policy;
  char resolver[64];
  bool net = local.network.present;
  if (net) {
    /* The proxy resolves through the canary: a name it looks up is seen. */
    snprintf(resolver, sizeof resolver, "127.0.0.1:%d", ctx->canary_dns);
    local.network.resolver = resolver;
  }
  static const char *const proxy_env[] = {"HTTP_PROXY=http://127.0.0.1:3128",
                                          "HTTPS_PROXY=http://127.0.0.1:3128",
                                          "http_proxy=http://127.0.0.1:3128",
                                          "https_proxy=http://127.0.0.1:3128",
                                          "NO_PROXY=",
                                          "no_proxy=",
                                          NULL};
  char *argv[] = {(char *)self, (char *)"probe", (char *)"--inside", NULL};
  const char *ro[] = {self, NULL};
  /* the ticket's preflight: the agent's own environment after the proxy's */
  size_t ne = 0;
  for (char *const *e = o->env; e && *e; e++)
    ne++;
  al_autofree char **env = al_xcalloc(ne + AL_ARRAY_SIZE(proxy_env) + 1, sizeof(char *));
  size_t k = 0;
  for (size_t i = 0; net && proxy_env[i]; i++)
    env[k++] = (char *)proxy_env[i];
  for (size_t i = 0; i < ne; i++)
    env[k++] = o->env[i];
  env[k] = NULL;
  uint16_t port = AL_PROXY_PORT;
  al_sandbox_opts so = {
      .command_is_airlock = true,
      .policy = &local,
      .argv = argv,
      .env = k ? env : NULL,
      .listen_ports = net ? &port : NULL,
      .n_listen = net ? 1 : 0,
      .timeout_ms = o->timeout_ms ? o->timeout_ms : (o->preflight ? 10000 : 120000),
      .run_id = ctx->nonce,
      .extra_ro_paths = ro,
      .quiet = true,
  };
  if (al_sandbox_block_signals(err) < 0)
    return -1;
  /* Only fds 0, 1, 2 cross into the sandbox: point 0 and 1 at our pipes
   * for the moment of the clone. */
  int save0 = fcntl(0, F_DUPFD_CLOEXEC, 3), save1 = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (save0 < 0 || save1 < 0) {
    if (save0 >= 0)
      close(save0);
    return al_make_error(err, errno, "save stdin/stdout");
  }
  dup2(in_r, 0);
  dup2(out_w, 1);
  /* fs.stdio-dir: the host canary directory as the command's stderr; the
   * sandbox must hand /dev/null in instead. */
  int canary = open(ctx->canary_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  so.stderr_fd = canary > 2 ? canary : 0;
  al_sandbox *sb = NULL;
  int setup = AL_EXIT_SETUP;
  int rc = al_sandbox_start(&so, &sb, &setup, err);
  if (canary >= 0)
    close(canary);
  dup2(save0, 0);
  dup2(save1, 1);
  close(save0);
  close(save1);
  (void)leaked;
  if (rc < 0) {
    *status = setup;
    return al_error_wrap(err, "start the probe sandbox");
  }
  pid_t proxy = -1;
  if (net) {
    int lfd = al_sandbox_take_listener(sb, 0);
    proxy = start_proxy(&local, lfd, err);
    close(lfd);
    if (proxy < 0) {
      al_sandbox_destroy(sb);
      return -1;
    }
  }
  rc = al_sandbox_wait(sb, status, err);
  al_sandbox_report rep;
  al_sandbox_get_report(sb, &rep);
  *mem_enforced = rep.mem_enforced;
  al_sandbox_destroy(sb);
  stop_child(proxy);
  return rc;
}

/* The stand-in for a run token when no run's tokens were given (`airlock
 * probe`): put in the positive control's environment only, so the control
 * shows the search finds a token where there is one. */
static void canary_token(const pr_ctx *ctx, char *out, size_t n)
{
  snprintf(out, n, "ghs_AIRLOCKPROBECANARYTOKEN%sX", ctx->nonce);
}

/* The positive control: the same inner process as a plain child. */
static int run_unconfined(const al_probe_opts *o, const char *self, const pr_ctx *ctx, int in_r,
                          int out_w, int *status, al_error *err)
{
  char decoy[64];
  /* a token-shaped decoy on the command line, for cred.cmdline */
  snprintf(decoy, sizeof decoy, "ghp_AIRLOCKPROBEDECOY%s", ctx->nonce);
  pid_t pid = fork();
  if (pid < 0)
    return al_make_error(err, errno, "fork the inner probe");
  if (pid == 0) {
    dup2(in_r, 0);
    dup2(out_w, 1);
    int canary = open(ctx->canary_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (canary >= 0)
      dup2(canary, 2); /* fs.stdio-dir: nothing replaces it here */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char px[96];
    snprintf(px, sizeof px, "http://%s", ctx->proxy);
    setenv("HTTPS_PROXY", px, 1);
    setenv("HTTP_PROXY", px, 1);
    setenv("AIRLOCK_PROBE_HOST_VARIABLE", "host-only", 1);
    if (!o->secrets) {
      char tok[96];
      canary_token(ctx, tok, sizeof tok);
      setenv("AIRLOCK_PROBE_CANARY_TOKEN", tok, 1);
    }
    char *argv[] = {(char *)self,      (char *)"probe", (char *)"--inside",
                    (char *)"--decoy", decoy,           NULL};
    execv(self, argv);
    _exit(127);
  }
  uint64_t deadline = al_now_ms() + (o->timeout_ms ? o->timeout_ms : 120000);
  int ws = 0;
  for (;;) {
    pid_t r = waitpid(pid, &ws, WNOHANG);
    if (r == pid)
      break;
    if (al_now_ms() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &ws, 0);
      *status = AL_EXIT_TIMEOUT;
      return 0;
    }
    usleep(5000);
  }
  *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return 0;
}

char *pr_read_all_fd(int fd)
{
  size_t cap = 64 * 1024, n = 0;
  char *b = al_xmalloc(cap + 1);
  al_set_nonblock(fd, true);
  for (;;) {
    if (n == cap) {
      cap *= 2;
      b = al_xrealloc(b, cap + 1);
    }
    ssize_t k = read(fd, b + n, cap - n);
    if (k > 0) {
      n += (size_t)k;
      continue;
    }
    if (k == 0)
      break;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, 1000) <= 0)
        break;
      continue;
    }
    break;
  }
  b[n] = '\0';
  return b;
}

/* Does the canary log hold this probe's marker? kind gets the record type. */
static bool canary_saw(const char *log, size_t len, const pr_ctx *ctx, const char *id, char *kind)
{
  char m[96];
  pr_marker(ctx, id, m, sizeof m);
  const char *hit = len ? memmem(log, len, m, strlen(m)) : NULL;
  if (!hit)
    return false;
  /* walk back to the record header "K N\n" */
  *kind = '?';
  for (const char *p = hit; p > log; p--)
    if (p[-1] == '\n' && p + 2 < log + len && p[1] == ' ') {
      *kind = p[0];
      break;
    }
  if (hit - log >= 0 && *kind == '?' && len > 0)
    *kind = log[0];
  return true;
}

static int judge_linger(const pr_ctx *ctx, char *ev, size_t evlen)
{
  char name[16];
  snprintf(name, sizeof name, "alp-%.11s", ctx->nonce);
  DIR *d = opendir("/proc");
  if (!d) {
    snprintf(ev, evlen, "host /proc unreadable");
    return AL_PROBE_INCONCLUSIVE;
  }
  struct dirent *de;
  int found = 0;
  pid_t first = 0;
  /* the sandbox's pid namespace is gone; a straggler may need a moment */
  while ((de = readdir(d))) {
    pid_t pid = (pid_t)atoi(de->d_name);
    if (pid <= 0)
      continue;
    char p[64], comm[32] = "";
    snprintf(p, sizeof p, "/proc/%d/comm", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    ssize_t n = read(fd, comm, sizeof comm - 1);
    close(fd);
    if (n <= 0)
      continue;
    comm[n] = '\0';
    comm[strcspn(comm, "\n")] = '\0';
    if (strcmp(comm, name) == 0) {
      found++;
      if (!first)
        first = pid;
      kill(pid, SIGKILL); /* our own probe's process, by its exact pid */
    }
  }
  closedir(d);
  if (found) {
    snprintf(ev, evlen, "host side: `%s` (pid %d) outlived the run; killed", name, (int)first);
    return AL_PROBE_ESCAPED;
  }
  snprintf(ev, evlen, "host side: no process `%s` after the run", name);
  return AL_PROBE_BLOCKED;
}

static int judge_persist(const pr_ctx *ctx, const char *dir, char *ev, size_t evlen)
{
  char name[64];
  snprintf(name, sizeof name, "alprobe-persist-%s", ctx->nonce);
  char ws[PATH_MAX], tmp[PATH_MAX];
  snprintf(ws, sizeof ws, "%s/workspace", dir);
  snprintf(tmp, sizeof tmp, "%s/tmp", dir);
  const char *home = getenv("HOME");
  const char *dirs[] = {
      "/tmp",         "/var/tmp", "/dev/shm", "/workspace", ctx->host_home, home ? home : "/",
      ctx->outer_cwd, "/",        ws,         tmp};
  int found = 0;
  char first[PATH_MAX + 80] = "";
  for (size_t i = 0; i < AL_ARRAY_SIZE(dirs); i++) {
    char path[PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/%s", dirs[i], name);
    struct stat st;
    if (lstat(path, &st) == 0) {
      if (!found)
        snprintf(first, sizeof first, "%s", path);
      found++;
      unlink(path);
    }
  }
  if (found) {
    snprintf(ev, evlen, "host side: %s (and %d more) left on the host; removed", first, found - 1);
    return AL_PROBE_ESCAPED;
  }
  snprintf(ev, evlen, "host side: the marker file is in none of %zu host places",
           AL_ARRAY_SIZE(dirs));
  return AL_PROBE_BLOCKED;
}

static int parse_verdict(const char *s)
{
  if (!s)
    return -1;
  if (strcmp(s, "blocked") == 0)
    return AL_PROBE_BLOCKED;
  if (strcmp(s, "escaped") == 0)
    return AL_PROBE_ESCAPED;
  if (strcmp(s, "inconclusive") == 0)
    return AL_PROBE_INCONCLUSIVE;
  if (strcmp(s, "pending") == 0)
    return PR_PENDING;
  return -1;
}

/* cred.run-tokens: look up the digest of every searchable part of each run
 * token (maximal runs of [A-Za-z0-9_], 20..255 bytes, as probes_tokens.c
 * cuts them) in what the inside found. */
static int judge_run_tokens(const al_probe_opts *o, const pr_ctx *ctx, const char *digests,
                            const char *ev, char *out, size_t outlen)
{
  char canary[96];
  const char *one[2] = {NULL, NULL};
  const char *const *secrets = o->secrets;
  if (!secrets) {
    canary_token(ctx, canary, sizeof canary);
    one[0] = canary;
    secrets = one;
  }
  size_t searchable = 0, n = 0;
  for (; secrets[n]; n++) {
    const char *t = secrets[n];
    size_t tl = strlen(t), i = 0;
    while (i < tl) {
      while (i < tl && !(isalnum((unsigned char)t[i]) || t[i] == '_'))
        i++;
      size_t st = i;
      while (i < tl && (isalnum((unsigned char)t[i]) || t[i] == '_'))
        i++;
      if (i - st < 20 || i - st > 255)
        continue;
      searchable++;
      char *in = al_strdup_printf("%s:%.*s", ctx->nonce, (int)(i - st), t + st);
      char hex[65];
      al_sha256_hex(in, strlen(in), hex);
      explicit_bzero(in, strlen(in));
      free(in);
      for (const char *d = digests; d && strlen(d) >= 16; d += strlen(d) > 16 ? 17 : 16)
        if (memcmp(d, hex, 16) == 0) {
          snprintf(out, outlen, "host side: %s #%zu is inside (digest match); %s",
                   o->secrets ? "run token" : "the control's canary token", n + 1, ev);
          return AL_PROBE_ESCAPED;
        }
    }
  }
  if (searchable == 0) {
    snprintf(out, outlen, "host side: no token has a searchable part; %s", ev);
    return AL_PROBE_INCONCLUSIVE;
  }
  if (strstr(ev, "INCOMPLETE")) {
    snprintf(out, outlen, "host side: no match, but the scan was cut; %s", ev);
    return AL_PROBE_INCONCLUSIVE;
  }
  snprintf(out, outlen, "host side: none of %zu %s is inside; %s", n,
           o->secrets ? "run token(s)" : "canary token(s) (no run's tokens given)", ev);
  return AL_PROBE_BLOCKED;
}

static void judge(const al_probe_opts *o, const pr_ctx *ctx, const char *dir, const char *lines,
                  const char *log, size_t loglen, bool mem_enforced, int status,
                  al_probe_report *out)
{
  size_t n = 0;
  for (size_t i = 0; i < pr_catalogue_len; i++)
    n += pr_selected(&pr_catalogue[i], o->preflight, o->only_group);
  out->results = al_xcalloc(n ? n : 1, sizeof(al_probe_result));
  bool unattributed = false;
  /* any connection or datagram the canary got, confined, is an escape
   * even without a marker */
  if (!o->unconfined)
    for (const char *p = log; p && p < log + loglen; p++)
      if ((p == log || p[-1] == '\n') && (p[0] == 'T' || p[0] == 'U' || p[0] == 'X') && p[1] == ' ')
        unattributed = true;
  for (size_t i = 0; i < pr_catalogue_len; i++) {
    const pr_probe *p = &pr_catalogue[i];
    if (!pr_selected(p, o->preflight, o->only_group))
      continue;
    al_probe_result *r = &out->results[out->n++];
    r->id = p->id;
    r->group = p->group;
    int v = -1;
    char ev[AL_PROBE_EVIDENCE_MAX] = "";
    al_autofree char *digests = NULL;
    /* find this probe's line */
    char key[96];
    snprintf(key, sizeof key, "{\"id\":\"%s\",", p->id);
    const char *l = lines ? strstr(lines, key) : NULL;
    if (l) {
      size_t ll = strcspn(l, "\n");
      json_error_t je;
      json_t *j = json_loadb(l, ll, 0, &je);
      if (j) {
        v = parse_verdict(json_string_value(json_object_get(j, "verdict")));
        const char *e = json_string_value(json_object_get(j, "evidence"));
        snprintf(ev, sizeof ev, "%s", e ? e : "");
        const char *dg = json_string_value(json_object_get(j, "digests"));
        digests = al_xstrdup(dg ? dg : "");
        r->elapsed_ms = (uint32_t)json_integer_value(json_object_get(j, "ms"));
        json_decref(j);
      }
    }
    if (v < 0) {
      r->verdict = AL_PROBE_INCONCLUSIVE;
      snprintf(r->evidence, sizeof r->evidence, "no result from inside (inner exit status %d)",
               status);
      continue;
    }
    /* judgments from the host */
    char kind;
    if (canary_saw(log, loglen, ctx, p->id, &kind)) {
      v = AL_PROBE_ESCAPED;
      snprintf(r->evidence, sizeof r->evidence, "host side: the canary logged this probe (%s); %s",
               kind == 'D'   ? "resolver"
               : kind == 'U' ? "udp"
               : kind == 'X' ? "unix"
               : kind == 'P' ? "proxy"
                             : "tcp",
               ev);
    } else if (strcmp(p->id, "res.linger") == 0 && v != AL_PROBE_INCONCLUSIVE) {
      v = judge_linger(ctx, r->evidence, sizeof r->evidence);
    } else if (strcmp(p->id, "persist.host-files") == 0 && v != AL_PROBE_INCONCLUSIVE) {
      v = judge_persist(ctx, dir, r->evidence, sizeof r->evidence);
    } else if (strcmp(p->id, "net.canary-tcp") == 0 && unattributed) {
      v = AL_PROBE_ESCAPED;
      snprintf(r->evidence, sizeof r->evidence,
               "host side: the canary saw a connection or datagram from the run; %s", ev);
    } else if (v == PR_PENDING && strcmp(p->id, "cred.run-tokens") == 0) {
      v = judge_run_tokens(o, ctx, digests, ev, r->evidence, sizeof r->evidence);
    } else if (v == PR_PENDING && strcmp(p->id, "res.memory") == 0) {
      if (!o->unconfined && mem_enforced) {
        v = AL_PROBE_BLOCKED;
        snprintf(r->evidence, sizeof r->evidence,
                 "cgroup memory limit enforced (v2 memory.max or v1 memory.limit_in_bytes, sandbox "
                 "report); %s",
                 ev);
      } else if (ctx->docker) {
        /* the engine is asked for the limit but says nothing back we
         * could check; a limit of 448 MiB or less is tested by allocation */
        v = AL_PROBE_INCONCLUSIVE;
        snprintf(r->evidence, sizeof r->evidence,
                 "docker backend: the engine's memory limit cannot be confirmed from here; %s", ev);
      } else {
        v = AL_PROBE_ESCAPED;
        snprintf(r->evidence, sizeof r->evidence, "no memory limit enforced; %s", ev);
      }
    } else if (v == PR_PENDING) {
      v = AL_PROBE_BLOCKED;
      snprintf(r->evidence, sizeof r->evidence, "%s; host side saw nothing", ev);
    } else {
      snprintf(r->evidence, sizeof r->evidence, "%s", ev);
    }
    r->verdict = (al_probe_verdict)v;
  }
  for (size_t i = 0; i < out->n; i++) {
    out->n_blocked += out->results[i].verdict == AL_PROBE_BLOCKED;
    out->n_escaped += out->results[i].verdict == AL_PROBE_ESCAPED;
    out->n_inconclusive += out->results[i].verdict == AL_PROBE_INCONCLUSIVE;
  }
}

int pr_host_setup(const al_probe_opts *o, pr_host *h, pr_ctx *ctx, al_error *err)
{
  memset(h, 0, sizeof *h);
  h->leaked = -1;
  h->sock_fd = -1;
  h->cn.pid = -1;
  h->cn.log_fd = -1;
  h->t0_ns = al_now_ns();
  if (al_random_hex(h->nonce, 8, err) < 0)
    return -1;

  /* host-side canaries: a directory with a secret, a /dev/shm file */
  const char *tmpdir = getenv("TMPDIR");
  snprintf(h->dir, sizeof h->dir, "%s/airlock-probe-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(h->dir)) {
    al_make_error(err, errno, "mkdtemp `%s`", h->dir);
    h->dir[0] = '\0';
    return -1;
  }
  chmod(h->dir, 0755);
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/secret", h->dir);
  if (al_write_file(path, "airlock-probe canary\n", 21, 0644, err) < 0)
    goto fail;
  if (o->unconfined) {
    snprintf(path, sizeof path, "%s/workspace", h->dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/tmp", h->dir);
    mkdir(path, 0755);
  }
  snprintf(h->shm, sizeof h->shm, "/dev/shm/airlock-probe-%s", h->nonce);
  al_write_file(h->shm, "canary\n", 7, 0644, NULL);

  if (pr_canary_start(&h->cn, h->nonce, o->unconfined, err) < 0)
    goto fail;
  h->canary_up = true;
  build_ctx(ctx, o, &h->cn, h->nonce, h->dir);
  /* a pathname socket listening in the canary directory: outside the
   * sandbox fs.ro-path-sockets reaches it (its positive control); inside,
   * the directory is not there */
  {
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int n = snprintf(sun.sun_path, sizeof sun.sun_path, "%s/canary.sock", h->dir);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && n > 0 && (size_t)n < sizeof sun.sun_path &&
        bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0 && listen(fd, 64) == 0 &&
        chmod(sun.sun_path, 0666) == 0) {
      h->sock_fd = fd;
      snprintf(ctx->canary_sock, sizeof ctx->canary_sock, "%s", sun.sun_path);
    } else if (fd >= 0) {
      close(fd);
    }
  }

  /* an fd left open on purpose (fs.inherited-fds) */
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  h->leaked = devnull >= 0 ? fcntl(devnull, F_DUPFD, LEAKED_FD_MIN) : -1;
  if (devnull >= 0)
    close(devnull);
  ctx->leaked_fd = h->leaked;
  return 0;
fail:
  pr_host_finish(h);
  return -1;
}

void pr_host_close_leaked(pr_host *h)
{
  if (h->leaked >= 0)
    close(h->leaked);
  h->leaked = -1;
}

void pr_host_judge(const al_probe_opts *o, pr_host *h, const pr_ctx *ctx, const char *lines,
                   bool mem_enforced, int status, al_probe_report *out)
{
  char *log = NULL;
  size_t loglen = 0;
  pr_canary_stop(&h->cn, &log, &loglen);
  h->canary_up = false;
  out->inner_status = status;
  judge(o, ctx, h->dir, lines, log, loglen, mem_enforced, status, out);
  free(log);
  out->elapsed_us = (al_now_ns() - h->t0_ns) / 1000;
}

void pr_host_finish(pr_host *h)
{
  pr_host_close_leaked(h);
  if (h->sock_fd >= 0)
    close(h->sock_fd);
  h->sock_fd = -1;
  if (h->canary_up) {
    char *l = NULL;
    size_t ll = 0;
    pr_canary_stop(&h->cn, &l, &ll);
    free(l);
    h->canary_up = false;
  }
  if (h->shm[0])
    unlink(h->shm);
  h->shm[0] = '\0';
  if (h->dir[0])
    nftw(h->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  h->dir[0] = '\0';
}

int al_probe_run(const al_probe_opts *o, al_probe_report *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  char self[PATH_MAX];
  if (o->self_exe) {
    snprintf(self, sizeof self, "%s", o->self_exe);
  } else {
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      return al_make_error(err, errno, "readlink /proc/self/exe");
    self[n] = '\0';
  }
  pr_host h;
  pr_ctx ctx;
  if (pr_host_setup(o, &h, &ctx, err) < 0)
    return -1;

  int rc = 0;
  int in[2] = {-1, -1}, outp[2] = {-1, -1};
  char *json = pr_ctx_to_json(&ctx);
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0) {
    rc = al_make_error(err, errno, "pipe");
    goto out;
  }
  fcntl(in[1], F_SETPIPE_SZ, 1 << 20);
  fcntl(outp[1], F_SETPIPE_SZ, 1 << 20);
  if (al_write_all(in[1], json, strlen(json)) < 0) {
    rc = al_make_error(err, errno, "write the probe context");
    goto out;
  }
  close(in[1]);
  in[1] = -1;

  int status = 0;
  bool mem_enforced = false;
  if (o->unconfined)
    rc = run_unconfined(o, self, &ctx, in[0], outp[1], &status, err);
  else
    rc = run_confined(o, self, &ctx, in[0], outp[1], h.leaked, &status, &mem_enforced, err);
  close(outp[1]);
  outp[1] = -1;
  pr_host_close_leaked(&h);
  if (rc < 0)
    goto out;
  char *lines = pr_read_all_fd(outp[0]);
  pr_host_judge(o, &h, &ctx, lines, mem_enforced, status, out);
  free(lines);

out:
  free(json);
  for (int i = 0; i < 2; i++) {
    if (in[i] >= 0)
      close(in[i]);
    if (outp[i] >= 0)
      close(outp[i]);
  }
  pr_host_finish(&h);
  if (rc < 0)
    al_probe_report_free(out);
  return rc;
}

int al_probe_preflight(const al_policy *p, al_probe_report *out, al_error *err)
{
  al_probe_opts o = {.policy = p, .preflight = true};
  if (al_probe_run(&o, out, err) < 0)
    return -1;
  return out->n_escaped || out->n_inconclusive || out->n == 0 ? 1 : 0;
}

void al_probe_report_free(al_probe_report *r)
{
  free(r->results);
  memset(r, 0, sizeof *r);
}

void al_probe_report_print(const al_probe_report *r, FILE *f)
{
  fprintf(f, "%-26s %-12s %-13s %s\n", "PROBE", "GROUP", "VERDICT", "EVIDENCE");
  for (size_t i = 0; i < r->n; i++) {
    const al_probe_result *x = &r->results[i];
    fprintf(f, "%-26s %-12s %-13s %s\n", x->id, x->group, al_probe_verdict_name(x->verdict),
            x->evidence);
  }
  fprintf(f, "\n%zu probes: %zu blocked, %zu escaped, %zu inconclusive (%.0f ms)\n", r->n,
          r->n_blocked, r->n_escaped, r->n_inconclusive, (double)r->elapsed_us / 1000.0);
  if (r->n_inconclusive && !r->n_escaped)
    fprintf(f, "nothing escaped, but an inconclusive probe is not a pass (exit 1): its evidence "
               "above says what it could not decide; docs/probes.md, \"Known limits\", says "
               "when that is expected (e.g. an allowed host this machine cannot reach)\n");
}

int al_probe_report_print_json(const al_probe_report *r, FILE *f)
{
  json_t *j = json_object();
  json_t *a = json_array();
  for (size_t i = 0; i < r->n; i++) {
    const al_probe_result *x = &r->results[i];
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(x->id));
    json_object_set_new(o, "group", json_string(x->group));
    json_object_set_new(o, "verdict", json_string(al_probe_verdict_name(x->verdict)));
    json_object_set_new(o, "evidence", json_string(x->evidence));
    json_object_set_new(o, "ms", json_integer(x->elapsed_ms));
    json_array_append_new(a, o);
  }
  json_object_set_new(j, "results", a);
  json_object_set_new(j, "probes", json_integer((json_int_t)r->n));
  json_object_set_new(j, "blocked", json_integer((json_int_t)r->n_blocked));
  json_object_set_new(j, "escaped", json_integer((json_int_t)r->n_escaped));
  json_object_set_new(j, "inconclusive", json_integer((json_int_t)r->n_inconclusive));
  json_object_set_new(j, "elapsed_ms", json_integer((json_int_t)(r->elapsed_us / 1000)));
  int rc = json_dumpf(j, f, JSON_INDENT(2));
  fputc('\n', f);
  json_decref(j);
  return rc;
}
