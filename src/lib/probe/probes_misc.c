/* Resource, persistence and credential probes (docs/probes.md). Every
 * resource probe is capped: the fork bomb by count, the memory hog by
 * size, the disk fill by the tmpfs size, the lingering process by time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"
#include "probe/probes.h"

#define TMPFS_MAGIC_ 0x01021994
#define MIB (1024ull * 1024ull)

PR_DECL(pr_res_pids)
{
  uint32_t want = ctx->pids + 16;
  if (want > 2048)
    want = 2048;
  pid_t *kids = al_xcalloc(want, sizeof(pid_t));
  uint32_t n = 0;
  int e = 0;
  for (; n < want; n++) {
    pid_t p = fork();
    if (p < 0) {
      e = errno;
      break;
    }
    if (p == 0) {
      pause();
      _exit(0);
    }
    kids[n] = p;
  }
  for (uint32_t i = 0; i < n; i++)
    kill(kids[i], SIGKILL);
  for (uint32_t i = 0; i < n; i++)
    waitpid(kids[i], NULL, 0);
  free(kids);
  if (n == want)
    pr_escaped(r, "forked %u processes, more than the limit of %u", n, ctx->pids);
  else
    pr_blocked(r, "fork stopped after %u of %u: %s", n, want, pr_errname(e));
}

PR_DECL(pr_res_memory)
{
  uint64_t limit = ctx->mem_limit;
  if (limit <= 448 * MIB) {
    uint64_t want = limit + 64 * MIB, got = 0;
    while (got < want) {
      char *p = malloc(16 * MIB);
      if (!p) {
        pr_blocked(r, "allocation refused after %llu MiB of %llu (ENOMEM)",
                   (unsigned long long)(got / MIB), (unsigned long long)(want / MIB));
        return;
      }
      memset(p, 0x5a, 16 * MIB); /* touch every page; never freed until exit */
      got += 16 * MIB;
    }
    pr_escaped(r, "allocated and touched %llu MiB, over the %llu MiB limit",
               (unsigned long long)(got / MIB), (unsigned long long)(limit / MIB));
    return;
  }
  struct rlimit rl;
  getrlimit(RLIMIT_DATA, &rl);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= limit) {
    pr_blocked(r, "RLIMIT_DATA is %llu MiB (limit %llu MiB; too large to test by allocation)",
               (unsigned long long)(rl.rlim_cur / MIB), (unsigned long long)(limit / MIB));
    return;
  }
  pr_pending(r, "limit %llu MiB is too large to test by allocation; no RLIMIT_DATA",
             (unsigned long long)(limit / MIB));
}

static void disk_probe(pr_result *r, const char *dir, uint64_t size, const char *nonce)
{
  struct statfs sf;
  if (statfs(dir, &sf) < 0) {
    pr_inconclusive(r, "statfs %s: %s", dir, pr_errname(errno));
    return;
  }
  uint64_t total = (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize;
  if ((unsigned long)sf.f_type != TMPFS_MAGIC_) {
    pr_escaped(r, "%s is not a tmpfs (type 0x%lx): a fill lands on a host disk", dir,
               (unsigned long)sf.f_type);
    return;
  }
  if (total > size) {
    pr_escaped(r, "%s holds %llu MiB, more than the policy's %llu MiB", dir,
               (unsigned long long)(total / MIB), (unsigned long long)(size / MIB));
    return;
  }
  if (size > 240 * MIB) {
    pr_blocked(r, "%s is a tmpfs capped at %llu MiB (too large to fill here)", dir,
               (unsigned long long)(total / MIB));
    return;
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/.airlock-probe-fill-%s", dir, nonce);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    pr_inconclusive(r, "create %s: %s", path, pr_errname(errno));
    return;
  }
  static char chunk[1 << 20];
  uint64_t wrote = 0, want = size + 16 * MIB;
  int e = 0;
  while (wrote < want) {
    ssize_t n = write(fd, chunk, sizeof chunk);
    if (n <= 0) {
      e = n < 0 ? errno : ENOSPC;
      break;
    }
    wrote += (uint64_t)n;
  }
  close(fd);
  unlink(path);
  if (wrote >= want)
    pr_escaped(r, "wrote %llu MiB into %s, over its %llu MiB cap",
               (unsigned long long)(wrote / MIB), dir, (unsigned long long)(size / MIB));
  else
    pr_blocked(r, "%s full after %llu MiB (%s), cap %llu MiB", dir,
               (unsigned long long)(wrote / MIB), pr_errname(e), (unsigned long long)(size / MIB));
}

PR_DECL(pr_res_disk_workspace)
{
  disk_probe(r, ctx->ws_path, ctx->ws_size, ctx->nonce);
}

PR_DECL(pr_res_disk_tmp)
{
  disk_probe(r, ctx->tmp_path, ctx->tmp_size, ctx->nonce);
}

static int rt_child(void *arg)
{
  (void)arg;
  struct sched_param sp = {.sched_priority = 1};
  if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
    return 1;
  int e = errno;
  if (setpriority(PRIO_PROCESS, 0, -5) == 0)
    return 2;
  return -e;
}

PR_DECL(pr_res_cpu_priority)
{
  (void)ctx;
  int rc = pr_in_child(rt_child, NULL, 2000);
  if (rc == 1)
    pr_escaped(r, "SCHED_FIFO granted: a busy loop could starve the host");
  else if (rc == 2)
    pr_escaped(r, "nice -5 granted");
  else
    pr_blocked(r, "SCHED_FIFO and negative nice refused: %s",
               rc <= -128 ? "killed" : pr_errname(-rc));
}

PR_DECL(pr_res_nofile)
{
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= ctx->nofile) {
    struct rlimit up = {rl.rlim_max + 1, rl.rlim_max + 1};
    if (setrlimit(RLIMIT_NOFILE, &up) == 0)
      pr_escaped(r, "raised RLIMIT_NOFILE past its hard limit %llu",
                 (unsigned long long)rl.rlim_max);
    else
      pr_blocked(r, "RLIMIT_NOFILE hard limit %llu (policy %u), raising it: %s",
                 (unsigned long long)rl.rlim_max, ctx->nofile, pr_errname(errno));
  } else {
    pr_escaped(r, "RLIMIT_NOFILE hard limit %llu exceeds the policy's %u",
               (unsigned long long)rl.rlim_max, ctx->nofile);
  }
}

PR_DECL(pr_res_linger)
{
  char name[16];
  snprintf(name, sizeof name, "alp-%.11s", ctx->nonce);
  pid_t p = fork();
  if (p < 0) {
    pr_inconclusive(r, "fork: %s", pr_errname(errno));
    return;
  }
  if (p == 0) {
    setsid();
    if (fork() == 0) {
      syscall(SYS_close_range, 0u, ~0u, 0u);
      int fd = open("/dev/null", O_RDWR);
      if (fd == 0) {
        (void)!dup(0);
        (void)!dup(0);
      }
      prctl(PR_SET_NAME, name);
      signal(SIGHUP, SIG_IGN);
      for (int i = 0; i < 30; i++) /* bounded: gone after 30 s at most */
        sleep(1);
      _exit(0);
    }
    _exit(0);
  }
  waitpid(p, NULL, 0);
  pr_pending(r, "left a setsid + double-fork process `%s` behind (judged on the host)", name);
}

/* ---- persistence ---- */

PR_DECL(pr_persist_host_files)
{
  char name[64];
  snprintf(name, sizeof name, "alprobe-persist-%s", ctx->nonce);
  const char *home = getenv("HOME");
  const char *dirs[] = {ctx->ws_path,      ctx->tmp_path,  "/dev/shm",     "/var/tmp",
                        home ? home : "/", ctx->host_home, ctx->outer_cwd, "."};
  int made = 0;
  for (size_t i = 0; i < AL_ARRAY_SIZE(dirs); i++) {
    char path[PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/%s", dirs[i], name);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
      made++;
      close(fd);
    }
  }
  pr_pending(r, "wrote %s into %d of %zu places (judged on the host after the run)", name, made,
             AL_ARRAY_SIZE(dirs));
}

PR_DECL(pr_persist_autostart)
{
  char rel[64];
  snprintf(rel, sizeof rel, "alprobe-%s", ctx->nonce);
  char paths[6][PATH_MAX + 80];
  snprintf(paths[0], sizeof paths[0], "/etc/cron.d/%s", rel);
  snprintf(paths[1], sizeof paths[1], "/etc/profile.d/%s.sh", rel);
  snprintf(paths[2], sizeof paths[2], "/etc/systemd/system/%s.service", rel);
  snprintf(paths[3], sizeof paths[3], "%s/.config/autostart/%s.desktop", ctx->host_home, rel);
  snprintf(paths[4], sizeof paths[4], "%s/.config/systemd/user/%s.service", ctx->host_home, rel);
  snprintf(paths[5], sizeof paths[5], "/var/spool/cron/crontabs/%s", rel);
  int last = 0;
  for (size_t i = 0; i < 6; i++) {
    int fd = open(paths[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      close(fd);
      unlink(paths[i]);
      pr_escaped(r, "created (and removed) %s", paths[i]);
      return;
    }
    last = errno;
  }
  pr_blocked(r, "no autostart location writable (cron.d, profile.d, systemd, autostart): %s",
             pr_errname(last));
}

/* ---- credentials ---- */

PR_DECL(pr_cred_env_allowlist)
{
  char extra[200] = "";
  size_t n_extra = 0, n = 0;
  for (char **e = environ; e && *e; e++, n++) {
    size_t nl = strcspn(*e, "=");
    bool ok = false;
    for (size_t i = 0; i < ctx->n_env_allowed && !ok; i++)
      ok = strlen(ctx->env_allowed[i]) == nl && strncmp(ctx->env_allowed[i], *e, nl) == 0;
    if (!ok) {
      n_extra++;
      size_t l = strlen(extra);
      if (l + nl + 2 < sizeof extra)
        snprintf(extra + l, sizeof extra - l, "%s%.*s", l ? "," : "", (int)nl, *e);
    }
  }
  if (n_extra)
    pr_escaped(r, "%zu variables beyond the policy: %s", n_extra, extra);
  else
    pr_blocked(r, "%zu variables, all passed by the policy or airlock", n);
}

static bool host_hash_match(const pr_ctx *ctx, const char *v, size_t len)
{
  if (len < 6)
    return false;
  char hex[65];
  al_sha256_hex(v, len, hex);
  for (size_t i = 0; i < ctx->n_host_hashes; i++)
    if (memcmp(ctx->host_hashes[i], hex, 16) == 0)
      return true;
  return false;
}

/* Scan NUL-separated entries of a /proc file: environ values after '=',
 * cmdline arguments whole. */
static bool scan_nul(const pr_ctx *ctx, const char *buf, size_t len, bool env)
{
  for (size_t off = 0; off < len;) {
    const char *s = buf + off;
    size_t l = strnlen(s, len - off);
    const char *v = s;
    size_t vl = l;
    if (env) {
      const char *eq = memchr(s, '=', l);
      if (eq) {
        v = eq + 1;
        vl = l - (size_t)(v - s);
      }
    }
    if (host_hash_match(ctx, v, vl))
      return true;
    off += l + 1;
  }
  return false;
}

static int read_proc(pid_t pid, const char *what, char *buf, size_t cap)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, what);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = al_read_all(fd, buf, cap);
  close(fd);
  return n < 0 ? -1 : (int)n;
}

PR_DECL(pr_cred_host_env)
{
  static char buf[1 << 17];
  /* our own environment first */
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (eq && host_hash_match(ctx, eq + 1, strlen(eq + 1))) {
      pr_escaped(r, "a host variable's value is in our environment (%.*s)", (int)(eq - *e), *e);
      return;
    }
  }
  DIR *d = opendir("/proc");
  if (!d) {
    pr_inconclusive(r, "/proc: %s", pr_errname(errno));
    return;
  }
  struct dirent *de;
  int seen = 0, readable = 0;
  while ((de = readdir(d))) {
    pid_t pid = (pid_t)atoi(de->d_name);
    if (pid <= 0)
      continue;
    seen++;
    int n = read_proc(pid, "environ", buf, sizeof buf);
    if (n < 0)
      continue;
    readable++;
    if (scan_nul(ctx, buf, (size_t)n, true)) {
      closedir(d);
      pr_escaped(r, "a host variable's value is in /proc/%d/environ", (int)pid);
      return;
    }
  }
  closedir(d);
  pr_blocked(r, "no host variable value in %d environments (%d of %d processes readable)", readable,
             readable, seen);
}

static bool token_shaped(const char *s, size_t l)
{
  static const char *const prefixes[] = {"ghp_",   "gho_",  "ghs_",  "ghu_", "ghr_", "github_pat_",
                                         "glpat-", "xoxb-", "xoxp-", "AKIA", "sk-"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(prefixes); i++) {
    size_t pl = strlen(prefixes[i]);
    for (size_t k = 0; k + pl + 12 <= l; k++)
      if (memcmp(s + k, prefixes[i], pl) == 0)
        return true;
  }
  return false;
}

PR_DECL(pr_cred_cmdline)
{
  static char buf[1 << 16];
  DIR *d = opendir("/proc");
  if (!d) {
    pr_inconclusive(r, "/proc: %s", pr_errname(errno));
    return;
  }
  struct dirent *de;
  int seen = 0;
  while ((de = readdir(d))) {
    pid_t pid = (pid_t)atoi(de->d_name);
    if (pid <= 0)
      continue;
    int n = read_proc(pid, "cmdline", buf, sizeof buf);
    if (n < 0)
      continue;
    seen++;
    bool tok = false;
    for (int off = 0; off < n && !tok;) {
      size_t l = strnlen(buf + off, (size_t)(n - off));
      tok = token_shaped(buf + off, l) || host_hash_match(ctx, buf + off, l);
      off += (int)l + 1;
    }
    if (tok) {
      closedir(d);
      pr_escaped(r, "a token-shaped or host-secret argument on /proc/%d/cmdline", (int)pid);
      return;
    }
  }
  closedir(d);
  pr_blocked(r, "no token on %d command lines", seen);
}

PR_DECL(pr_cred_host_procs)
{
  char buf[1024];
  int n = read_proc(ctx->outer_pid, "stat", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long st = 0;
    if (p &&
        sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
               "%*d %*d %llu",
               &st) == 1 &&
        st == ctx->outer_start) {
      pr_escaped(r, "the supervisor (host pid %d) is visible in /proc", (int)ctx->outer_pid);
      return;
    }
  }
  int count = 0;
  DIR *d = opendir("/proc");
  struct dirent *de;
  while (d && (de = readdir(d)))
    count += atoi(de->d_name) > 0;
  if (d)
    closedir(d);
  pr_blocked(r, "the supervisor is not visible; %d processes in this pid namespace", count);
}

PR_DECL(pr_cred_parent_memory)
{
  /* process_vm_readv(2) of the supervisor when it is visible, else of
   * pid 1 (the sandbox init, a clone of the supervisor): where tokens
   * live for a few milliseconds. */
  pid_t target = 1;
  char sb[1024];
  int sn = read_proc(ctx->outer_pid, "stat", sb, sizeof sb - 1);
  if (sn > 0) {
    sb[sn] = '\0';
    const char *q = strrchr(sb, ')');
    unsigned long long st = 0;
    if (q &&
        sscanf(q + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
               "%*d %*d %llu",
               &st) == 1 &&
        st == ctx->outer_start)
      target = ctx->outer_pid;
  }
  char local[8];
  struct iovec li = {local, sizeof local};
  struct iovec ri = {(void *)&environ, sizeof local};
  ssize_t n = process_vm_readv(target, &li, 1, &ri, 1, 0);
  if (n > 0) {
    pr_escaped(r, "read %zd bytes of pid %d's memory", n, (int)target);
    return;
  }
  int e = errno;
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/mem", (int)target);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    pr_escaped(r, "opened %s", p);
    return;
  }
  pr_blocked(r, "process_vm_readv(pid %d): %s; %s: %s", (int)target, pr_errname(e), p,
             pr_errname(errno));
}
