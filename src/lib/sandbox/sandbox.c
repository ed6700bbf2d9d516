/* Sandbox orchestration: clone into new namespaces, write the id maps,
 * place the child in a cgroup, let it build its root and confine itself,
 * then start the command under a minimal pid 1.
 *
 * Supervisor                                 child (pid 1 in the new pid ns)
 *   socketpair(SEQPACKET) ───────────────────  sync
 *   clone(NEWUSER|NEWNS|NEWPID|NEWIPC|NEWUTS)
 *   uid_map / setgroups / gid_map
 *   cgroup: create, move child in
 *   MSG_GO ─────────────────────────────────►  hostname; helper: NEWNET, lo,
 *   ◄───────────── MSG_LISTENERS(fds) (helper)   listeners (netns.c)
 *                                              rootfs; join the helper's netns
 *   MSG_CGROUP(fds) ────────────────────────►  join the cgroup, NEWCGROUP
 *                                              drop privileges, Landlock, seccomp
 *                                              vfork ─► command: exec
 *   ◄──────────────────── MSG_READY | ERROR    reap, forward signals
 *   ◄──────────────────── MSG_EXIT(wstatus)    exit
 */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <linux/securebits.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "common/log.h"
#include "common/owned.h"
#include "common/procstat.h"
#include "common/util.h"
#include "sandbox/internal.h"

struct al_sandbox {
  pid_t pid;
  int sync_fd;
  int listen_fds[AL_SANDBOX_MAX_LISTENERS];
  size_t n_listen;
  uint64_t timeout_ms;
  bool reaped;
  bool killed;
  int exit_wstatus;
  bool have_exit;
  struct sb_cgroup cg;
  int landlock_abi;
  uint32_t host_uid;
  uint64_t t_clone_ns, t_hello_ns, t_go_ns, t_ready_ns;
  uint64_t t_cgroup_ns, t_sent_ns; /* supervisor: cgroup made; MSG_CGROUP sent */
  uint64_t t_child[SB_T_N];        /* the child's milestones (MSG_READY) */
  bool timed_out;
  int interrupted_signal; /* SIGINT/SIGTERM/SIGHUP that ended the run, or 0 */
};

static int recv_msg(int fd, struct sb_msg *m, int *fds, size_t maxfds, size_t *nfds);

/* ---------------- child side (between clone and exec) ---------------- */

void sb_die(int sync_fd, int status, int errnum, const char *fmt, ...)
{
  struct sb_msg m = {.type = MSG_ERROR, .status = status, .err = errnum};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m.text, sizeof m.text, fmt, ap);
  va_end(ap);
  if (sync_fd >= 0 && send(sync_fd, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == ENOTSOCK)
    (void)!write(sync_fd, &m, sizeof m); /* the exec-status pipe */
  _exit(status);
}

static void send_msg(int fd, uint32_t type, int status)
{
  struct sb_msg m = {.type = type, .status = status};
  (void)!send(fd, &m, sizeof m, MSG_NOSIGNAL);
}

/* Send one message with n file descriptors attached (SCM_RIGHTS, unix(7)).
 * Returns 0 or -errno. Used by both sides. */
static int send_fds_msg(int sock, const struct sb_msg *msg, const int *fds, size_t n)
{
  struct sb_msg m = *msg;
  struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
  union {
    char buf[CMSG_SPACE(sizeof(int) * AL_SANDBOX_MAX_LISTENERS)];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n > 0) {
    mh.msg_control = u.buf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (!c || n > AL_SANDBOX_MAX_LISTENERS)
      return -EINVAL;
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  }
  return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

void sb_send_listeners(int sync_fd, const int *fds, size_t n)
{
  struct sb_msg m = {.type = MSG_LISTENERS, .status = (int32_t)n};
  int r = send_fds_msg(sync_fd, &m, fds, n);
  if (r < 0)
    sb_die(sync_fd, 125, -r, "send listener sockets to the supervisor");
}

struct child_args {
  const al_sandbox_opts *opts;
  char **envp; /* built by the supervisor before clone */
  char **argv; /* copy of the command */
  int sync_fd;
  bool can_setgroups;
  int landlock_abi;
  bool rlimit_data;
  int stdio[3];             /* the command's 0, 1, 2 (sb_stdio_check) */
  struct sb_hostpaths host; /* the host paths to bind, opened by the supervisor */
  uint64_t t[SB_T_N];       /* start-up milestones (SB_T_*), sent with MSG_READY */
};

static void set_rlimit(int sync_fd, int res, rlim_t v, const char *name)
{
  struct rlimit rl = {v, v};
  struct rlimit cur;
  if (getrlimit(res, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < v)
    rl.rlim_cur = rl.rlim_max = cur.rlim_max; /* never try to raise */
  if (setrlimit(res, &rl) < 0)
    sb_die(sync_fd, 125, errno, "setrlimit %s", name);
}

static void exec_command(struct child_args *a, int status_fd) __attribute__((noreturn));
static void exec_command(struct child_args *a, int status_fd)
{
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int s = 1; s < NSIG; s++)
    signal(s, SIG_DFL);
  int keep[] = {status_fd};
  al_close_fds_from(3, keep, 1);
  /* Without a memory cgroup, bound each process's data instead (set here,
   * not in init, so airlock's own init is not constrained by it). */
  if (a->rlimit_data)
    set_rlimit(status_fd, RLIMIT_DATA, a->opts->policy->process.limits.memory, "DATA");
  /* execvpe, not `environ = envp`: under vfork the memory is pid 1's */
  execvpe(a->argv[0], a->argv, a->envp);
  int e = errno;
  int st = (e == ENOENT || e == ENOTDIR) ? AL_EXIT_NOTFOUND : AL_EXIT_NOEXEC;
  sb_die(status_fd, st, e, "exec `%s`", a->argv[0]);
}

/* pid 1 is a clone of the supervisor that never execs: its command line and
 * environment are the supervisor's (`airlock run --env NAME=VALUE ...`),
 * and /proc/1/cmdline is readable by every process in the sandbox. Wipe
 * both areas (addresses from /proc/self/stat, proc(5) fields 48-51) and
 * leave a plain name. Best effort: on any surprise, nothing is touched. */
static void wipe_own_args(void)
{
  al_proc_stat st;
  if (al_proc_stat_read(0, &st) < 0)
    return;
  unsigned long long as = st.arg_start, ae = st.arg_end, es = st.env_start, ee = st.env_end;
  if (as && ae > as && ae - as < (1u << 20)) {
    memset((void *)(uintptr_t)as, 0, (size_t)(ae - as));
    static const char name[] = "airlock-init";
    if (ae - as > sizeof name)
      memcpy((void *)(uintptr_t)as, name, sizeof name);
  }
  if (es && ee > es && ee - es < (1u << 20))
    memset((void *)(uintptr_t)es, 0, (size_t)(ee - es));
}

/* pid 1: forward signals to the command, reap everything, exit with it.
 * SIGINT, SIGTERM and SIGHUP end the whole sandbox, not just the command
 * (a shell waiting for its child would otherwise defer them, and the
 * command's own children would live on): they go to every process of the
 * pid namespace (kill(-1), kill(2)), and whatever is still alive a second
 * later gets SIGKILL; once the command is reaped pid 1 exits, and the
 * kernel kills what is left of the namespace (pid_namespaces(7)). */
static void run_init(struct child_args *a) __attribute__((noreturn));
static void run_init(struct child_args *a)
{
  int sync_fd = a->sync_fd;
  sigset_t set;
  sigemptyset(&set);
  int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD};
  for (size_t i = 0; i < AL_ARRAY_SIZE(fwd); i++)
    sigaddset(&set, fwd[i]);
  if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
    sb_die(sync_fd, 125, errno, "init: block signals");
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0)
    sb_die(sync_fd, 125, errno, "init: signalfd");

  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0)
    sb_die(sync_fd, 125, errno, "init: pipe");
  /* vfork(2): the command's process borrows pid 1's memory until its exec
   * (or _exit) instead of copying pid 1's page tables and faulting in a
   * copy of every page either side writes; pid 1 waits meanwhile, which it
   * would do anyway (the pipe below). exec_command touches nothing of the
   * shared memory but its own stack: signal dispositions, the signal mask,
   * descriptors and rlimits are its own (no CLONE_SIGHAND, CLONE_FILES or
   * CLONE_THREAD), and the environment goes to execvpe. This is the
   * pattern of posix_spawn(3), which cannot set RLIMIT_DATA for us. */
  // NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.vfork): see above
  pid_t child = vfork();
  if (child < 0)
    sb_die(sync_fd, 125, errno, "init: start the command");
  if (child == 0) {
    close(pfd[0]);
    exec_command(a, pfd[1]);
  }
  a->t[SB_T_FORKED] = al_now_ns();
  close(pfd[1]);
  struct sb_msg m;
  ssize_t n = al_read_all(pfd[0], &m, sizeof m);
  close(pfd[0]);
  if (n == (ssize_t)sizeof m) {
    /* exec failed: forward the child's message as ours */
    (void)!send(sync_fd, &m, sizeof m, MSG_NOSIGNAL);
    _exit(m.status);
  }
  {
    struct sb_msg ready = {.type = MSG_READY};
    memcpy(ready.t, a->t, sizeof ready.t);
    (void)!send(sync_fd, &ready, sizeof ready, MSG_NOSIGNAL);
  }

  uint64_t kill_at = 0; /* ms: SIGKILL everything then (0: not ending) */
  for (;;) {
    int wait_ms = -1;
    if (kill_at) {
      uint64_t now = al_now_ms();
      wait_ms = now >= kill_at ? 0 : (int)(kill_at - now);
    }
    struct pollfd pf = {.fd = sfd, .events = POLLIN};
    int pr = poll(&pf, 1, wait_ms);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr == 0) {
      kill(-1, SIGKILL);
      kill_at = 0;
      continue; /* the command's SIGCHLD follows */
    }
    struct signalfd_siginfo si;
    ssize_t r = read(sfd, &si, sizeof si);
    if (r < 0 && errno == EINTR)
      continue;
    if (r != (ssize_t)sizeof si)
      _exit(125);
    int sig = (int)si.ssi_signo;
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      kill(-1, sig);
      if (!kill_at)
        kill_at = al_now_ms() + 1000;
      continue;
    }
    if (sig != SIGCHLD) {
      kill(child, sig);
      continue;
    }
    for (;;) {
      int ws;
      pid_t p = waitpid(-1, &ws, WNOHANG);
      if (p <= 0)
        break;
      if (p == child) {
        send_msg(sync_fd, MSG_EXIT, ws);
        _exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
      }
    }
  }
}

static int child_main(struct child_args *a) __attribute__((noreturn));
static int child_main(struct child_args *a)
{
  int sync_fd = a->sync_fd;
  const al_policy *pol = a->opts->policy;

  static const char *const what[3] = {"stdin", "stdout", "stderr"};
  for (int i = 0; i < 3; i++)
    if (a->stdio[i] != i && dup2(a->stdio[i], i) < 0)
      sb_die(sync_fd, 125, errno, "redirect the command's %s", what[i]);
  /* Nothing of the supervisor's fds but the sync socket and the host
   * paths to bind (hostpaths.c; closed once attached) stays open. */
  int keep[1 + SB_HOSTPATHS_MAX];
  keep[0] = sync_fd;
  size_t nkeep = 1 + sb_hostpaths_fds(&a->host, keep + 1, SB_HOSTPATHS_MAX);
  if (al_close_fds_from(3, keep, nkeep) < 0)
    sb_die(sync_fd, 125, errno, "close inherited file descriptors");

  /* The supervisor is non-dumpable (it may hold secrets), and so were we
   * at clone; /proc/<pid>/uid_map then belongs to root and an unprivileged
   * supervisor could not write it. Become dumpable for that moment only. */
  if (prctl(PR_SET_DUMPABLE, 1) < 0)
    sb_die(sync_fd, 125, errno, "PR_SET_DUMPABLE");
  send_msg(sync_fd, MSG_HELLO, 0);

  /* Wait until the supervisor has written our id maps and cgroup. */
  struct sb_msg m;
  ssize_t n = recv(sync_fd, &m, sizeof m, 0);
  if (n != (ssize_t)sizeof m || m.type != MSG_GO)
    _exit(125);
  a->t[SB_T_GO] = al_now_ns();

  /* Become the sandbox user now, keeping the namespace's capabilities: the
   * kernel refuses to create files for an fsuid the namespace does not map
   * (EOVERFLOW), and only the sandbox user is mapped. */
  if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP) < 0)
    sb_die(sync_fd, 125, errno, "securebits for setup");
  if (sb_setresgid(pol->process.user) < 0 || sb_setresuid(pol->process.user) < 0)
    sb_die(sync_fd, 125, errno, "switch to uid %u for setup", pol->process.user);

  if (sethostname("airlock", 7) < 0 || setdomainname("airlock", 7) < 0)
    sb_die(sync_fd, 125, errno, "set hostname");
  /* The network namespace (lo, the listeners) is made by a helper while we
   * build the root, and joined after it (netns.c). */
  pid_t net_helper = -1;
  int net_sock = sb_netns_start(sync_fd, a->opts, &net_helper);

  sb_setup_rootfs(sync_fd, pol, &a->host, a->opts->files, a->opts->n_files, pol->process.user,
                  a->opts->hosts);
  a->t[SB_T_ROOTFS] = al_now_ns();
  sb_netns_join(sync_fd, net_sock, net_helper);

  /* Meanwhile the supervisor made our cgroup (v2: and put us in it; v1:
   * we join it ourselves, see sb_cgroup_create); wait for it. */
  int cfds[AL_SANDBOX_MAX_LISTENERS]; /* v1 cgroups to join */
  size_t ncfds = 0;
  if (recv_msg(sync_fd, &m, cfds, AL_ARRAY_SIZE(cfds), &ncfds) <= 0 || m.type != MSG_CGROUP)
    _exit(125);
  sb_cgroup_join(sync_fd, cfds, ncfds);
  for (size_t i = 0; i < ncfds; i++)
    close(cfds[i]);
  a->t[SB_T_CGROUP] = al_now_ns();
  if (unshare(CLONE_NEWCGROUP) < 0)
    sb_die(sync_fd, 125, errno, "unshare cgroup namespace");
  if (setsid() < 0)
    sb_die(sync_fd, 125, errno, "setsid");
  a->t[SB_T_SESSION] = al_now_ns();

  /* Limits that hold even without cgroups. RLIMIT_NPROC counts per user in
   * the sandbox's user namespace, so it bounds the sandbox's processes. */
  const al_policy_limits *lim = &pol->process.limits;
  set_rlimit(sync_fd, RLIMIT_NOFILE, lim->nofile, "NOFILE");
  set_rlimit(sync_fd, RLIMIT_NPROC, lim->pids, "NPROC");
  set_rlimit(sync_fd, RLIMIT_CORE, 0, "CORE");
  /* No cgroup memory limit: fall back to RLIMIT_DATA for the command.
   * Not for airlock's own binary when it is built with AddressSanitizer
   * (test builds only): ASan reserves terabytes of shadow memory up front
   * and cannot start under any data limit. */
  a->rlimit_data = m.status == 0;
#if defined(__SANITIZE_ADDRESS__)
  if (a->opts->command_is_airlock)
    a->rlimit_data = false;
#endif

  sb_drop_privileges(sync_fd, pol->process.user, a->can_setgroups);
  /* The uid change cleared the parent-death signal; set it again and make
   * sure the supervisor did not die in between. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
    sb_die(sync_fd, 125, errno, "PR_SET_PDEATHSIG");
  struct pollfd pf = {.fd = sync_fd, .events = POLLIN};
  if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLERR)))
    _exit(125);
  /* pid 1 keeps a copy of the supervisor's memory: never let the sandbox
   * read it through /proc/1. */
  if (prctl(PR_SET_DUMPABLE, 0) < 0)
    sb_die(sync_fd, 125, errno, "PR_SET_DUMPABLE");
  sb_apply_landlock(sync_fd, a->landlock_abi);
  sb_seccomp_load(sync_fd);
  a->t[SB_T_CONFINED] = al_now_ns();
  wipe_own_args();
  run_init(a);
}

/* ---------------- supervisor side ---------------- */

static int write_proc(pid_t pid, const char *file, const char *text, al_error *err)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return al_make_error(err, errno, "open %s", path);
  int r = al_write_all(fd, text, strlen(text));
  close(fd);
  if (r < 0)
    return al_make_error(err, -r, "write %s `%s`", path, text);
  return 0;
}

/* The host uid the sandbox user maps to when airlock runs as root: a high,
 * per-run id that no host account uses, so the sandbox owns nothing on the
 * host and two runs cannot signal or trace each other. */
static uint32_t pick_host_id(void)
{
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != sizeof r)
    r = (uint32_t)getpid();
  return 0x70000000u + (r & 0x00ffffffu);
}

static char **build_env(const al_sandbox_opts *o)
{
  const al_policy *p = o->policy;
  size_t cap = 16 + p->process.n_env_pass + p->process.n_secret_env;
  for (char *const *e = o->env; e && *e; e++)
    cap++;
  char **env = al_xcalloc(cap + 1, sizeof(char *));
  size_t n = 0;
  /* later entries replace earlier ones with the same name */
  const char *lang = getenv("LANG");
  const char *term = getenv("TERM");
  char *base[] = {
      al_xstrdup("PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"),
      al_xstrdup("HOME=/tmp/home"),
      al_xstrdup("USER=airlock"),
      al_xstrdup("LOGNAME=airlock"),
      al_xstrdup("TMPDIR=/tmp"),
      al_strdup_printf("LANG=%s", lang ? lang : "C.UTF-8"),
      term ? al_strdup_printf("TERM=%s", term) : NULL,
  };
  for (size_t i = 0; i < AL_ARRAY_SIZE(base); i++)
    if (base[i])
      env[n++] = base[i];
  for (size_t i = 0; i < p->process.n_env_pass; i++) {
    const char *v = getenv(p->process.env_pass[i]);
    if (v)
      env[n++] = al_strdup_printf("%s=%s", p->process.env_pass[i], v);
  }
  for (size_t i = 0; i < p->process.n_secret_env; i++) { /* the override (policy.h) */
    const char *v = getenv(p->process.secret_env[i]);
    if (v)
      env[n++] = al_strdup_printf("%s=%s", p->process.secret_env[i], v);
  }
  for (char *const *e = o->env; e && *e; e++)
    env[n++] = al_xstrdup(*e);

  /* de-duplicate, last one wins */
  for (size_t i = 0; i < n; i++) {
    if (!env[i])
      continue;
    size_t li = strcspn(env[i], "=");
    for (size_t j = i + 1; j < n; j++)
      if (env[j] && strncmp(env[i], env[j], li + 1) == 0) {
        free(env[i]);
        env[i] = NULL;
        break;
      }
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (env[i])
      env[k++] = env[i];
  env[k] = NULL;
  return env;
}

static void free_strv(char **v)
{
  if (!v)
    return;
  for (char **p = v; *p; p++) {
    explicit_bzero(*p, strlen(*p));
    free(*p);
  }
  free(v);
}

static int recv_msg(int fd, struct sb_msg *m, int *fds, size_t maxfds, size_t *nfds)
{
  struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
  union {
    char buf[CMSG_SPACE(sizeof(int) * AL_SANDBOX_MAX_LISTENERS)];
    struct cmsghdr align;
  } u;
  struct msghdr mh = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  ssize_t n;
  do {
    n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  if (n == 0)
    return 0;
  if (n != (ssize_t)sizeof *m)
    return -EPROTO;
  m->text[sizeof m->text - 1] = '\0';
  if (nfds)
    *nfds = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      int tmp[AL_SANDBOX_MAX_LISTENERS * 2];
      if (k > AL_ARRAY_SIZE(tmp))
        k = AL_ARRAY_SIZE(tmp);
      memcpy(tmp, CMSG_DATA(c), k * sizeof(int));
      for (size_t i = 0; i < k; i++) {
        if (fds && nfds && *nfds < maxfds)
          fds[(*nfds)++] = tmp[i];
        else
          close(tmp[i]);
      }
    }
  }
  return 1;
}

int al_sandbox_block_signals(al_error *err)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  sigaddset(&set, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
    return al_make_error(err, errno, "block signals");
  return 0;
}

static void reap(al_sandbox *sb)
{
  if (sb->reaped || sb->pid <= 0)
    return;
  int ws;
  while (waitpid(sb->pid, &ws, 0) < 0 && errno == EINTR)
    ;
  sb->reaped = true;
}

bool al_sandbox_file_path_ok(const char *path, const char **why)
{
  size_t dl = strlen(AL_SANDBOX_FILES_DIR);
  if (!path || strncmp(path, AL_SANDBOX_FILES_DIR, dl) != 0) {
    *why = "must be under " AL_SANDBOX_FILES_DIR;
    return false;
  }
  const char *name = path + dl;
  size_t n = strlen(name);
  if (n == 0 || n > 64 || name[0] == '.' ||
      strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n) {
    *why = "the name must be 1-64 of [A-Za-z0-9._-], not starting with a dot";
    return false;
  }
  return true;
}

int al_sandbox_start(const al_sandbox_opts *o, al_sandbox **out, int *setup_status, al_error *err)
{
  if (setup_status)
    *setup_status = AL_EXIT_SETUP;
  if (!o->argv || !o->argv[0])
    return al_make_error(err, EINVAL, "no command to run");
  if (o->n_listen > AL_SANDBOX_MAX_LISTENERS)
    return al_make_error(err, EINVAL, "too many listeners");
  for (size_t i = 0; o->listen_addrs && i < o->n_listen; i++)
    if (o->listen_addrs[i] && (o->listen_addrs[i] >> 24) != 127)
      return al_make_error(err, EINVAL, "listener %zu: not a loopback address", i);
  if (o->hosts && strlen(o->hosts) > AL_SANDBOX_HOSTS_MAX)
    return al_make_error(err, EINVAL, "the sandbox's /etc/hosts lines: more than %u bytes",
                         AL_SANDBOX_HOSTS_MAX);
  if (o->policy->process.user == 0)
    return al_make_error(err, EINVAL, "process.user must not be 0");
  size_t total = 0;
  for (size_t i = 0; i < o->n_files; i++) {
    const char *why = NULL;
    if (!al_sandbox_file_path_ok(o->files[i].path, &why))
      return al_make_error(err, EINVAL, "sandbox file `%s`: %s", o->files[i].path, why);
    total += o->files[i].len;
    if (total > AL_SANDBOX_FILES_MAX)
      return al_make_error(err, E2BIG, "sandbox files: more than %u bytes in all",
                           AL_SANDBOX_FILES_MAX);
  }

  al_sandbox *sb = al_xcalloc(1, sizeof *sb);
  sb->sync_fd = -1;
  sb->pid = -1;
  for (size_t i = 0; i < AL_SANDBOX_MAX_LISTENERS; i++)
    sb->listen_fds[i] = -1;
  sb->timeout_ms = o->timeout_ms ? o->timeout_ms : o->policy->process.limits.wall_ms;
  sb->landlock_abi = sb_landlock_abi();
  sb->cg.kind = "none";

  /* The policy's overrides of what it may not hand the sandbox silently
   * (filesystem.sensitive_ro_paths, process.secret_env): said on every
   * start, -q or not (policy/sensitive.h). */
  for (size_t i = 0; i < o->policy->n_loud; i++)
    al_warn("%s", o->policy->loud[i]);
  /* Before anything starts: every host path to bind, resolved with the
   * supervisor's credentials (hostpaths.c). */
  struct sb_hostpaths host;
  if (sb_hostpaths_open(&host, o, err) < 0) {
    free(sb);
    return -1;
  }
  int stdio[3], devnull = -1;
  if (sb_stdio_check(o, stdio, &devnull, err) < 0) {
    sb_hostpaths_close(&host);
    free(sb);
    return -1;
  }
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    if (devnull >= 0)
      close(devnull);
    sb_hostpaths_close(&host);
    free(sb);
    return al_make_error(err, errno, "socketpair");
  }

  struct child_args a = {
      .opts = o,
      .envp = build_env(o),
      .sync_fd = sp[1],
      .landlock_abi = sb->landlock_abi,
      .stdio = {stdio[0], stdio[1], stdio[2]},
      .host = host,
  };
  size_t argc = 0;
  while (o->argv[argc])
    argc++;
  a.argv = al_xcalloc(argc + 1, sizeof(char *));
  for (size_t i = 0; i < argc; i++)
    a.argv[i] = al_xstrdup(o->argv[i]);

  bool root = geteuid() == 0;
  a.can_setgroups = root;
  uint32_t outer_uid = root ? pick_host_id() : (uint32_t)getuid();
  uint32_t outer_gid = root ? outer_uid : (uint32_t)getgid();
  sb->host_uid = outer_uid;

  fflush(NULL);
  sb->t_clone_ns = al_now_ns();
  pid_t pid = (pid_t)syscall(SYS_clone,
                             CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
                                 CLONE_NEWUTS | SIGCHLD, /* CLONE_NEWNET: netns.c */
                             NULL, NULL, NULL, NULL);
  if (pid == 0) {
    close(sp[0]);
    child_main(&a);
  }
  int clone_errno = errno;
  close(sp[1]);
  if (devnull >= 0)
    close(devnull);
  sb_hostpaths_close(&a.host); /* the child has its own copies */
  free_strv(a.envp);
  free_strv(a.argv);
  sb->sync_fd = sp[0];
  if (pid < 0) {
    al_sandbox_destroy(sb);
    return al_make_error(err, clone_errno, "clone into new namespaces");
  }
  sb->pid = pid;

  {
    struct sb_msg hello;
    int hr = recv_msg(sb->sync_fd, &hello, NULL, 0, NULL);
    if (hr <= 0 || hello.type != MSG_HELLO) {
      if (hr > 0 && hello.type == MSG_ERROR)
        al_make_error(err, hello.err, "%s", hello.text);
      else
        al_make_error(err, hr < 0 ? -hr : EPROTO, "sandbox setup: no greeting from the child");
      goto fail;
    }
  }
  sb->t_hello_ns = al_now_ns();
  char map[64];
  uint32_t inner = o->policy->process.user;
  snprintf(map, sizeof map, "%u %u 1\n", inner, outer_uid);
  if (write_proc(pid, "uid_map", map, err) < 0)
    goto fail;
  if (!root && write_proc(pid, "setgroups", "deny", err) < 0)
    goto fail;
  snprintf(map, sizeof map, "%u %u 1\n", inner, outer_gid);
  if (write_proc(pid, "gid_map", map, err) < 0)
    goto fail;

  /* Let the child build its root now; the cgroup is made in parallel and
   * sent when ready (the seccomp program is built in: seccomp_bpf.h). */
  struct sb_msg go = {.type = MSG_GO};
  sb->t_go_ns = al_now_ns();
  (void)!send(sb->sync_fd, &go, sizeof go, MSG_NOSIGNAL); /* a dead child reports below */
  char name[96];
  snprintf(name, sizeof name, "airlock-%s", o->run_id ? o->run_id : "run");
  for (char *c = name; *c; c++)
    if (*c == '/')
      *c = '_';
  sb_cgroup_create(&sb->cg, name, &o->policy->process.limits, pid);
  sb->t_cgroup_ns = al_now_ns();
  if (!o->quiet && sb->cg.why[0])
    al_warn("not enforced by a cgroup:%s (cgroup %s; rlimits still apply)", sb->cg.why,
            sb->cg.kind);
  if (!o->quiet && sb->landlock_abi == 0)
    al_warn("Landlock is not available on this kernel; writes are limited by read-only mounts "
            "only");
  {
    struct sb_msg cgm = {.type = MSG_CGROUP, .status = sb->cg.mem ? 1 : 0};
    int fds[AL_SANDBOX_MAX_LISTENERS];
    size_t nfds = 0;
    for (size_t i = 0; i < sb->cg.n_join && nfds < AL_ARRAY_SIZE(fds); i++)
      fds[nfds++] = sb->cg.join_fds[i];
    int r = send_fds_msg(sb->sync_fd, &cgm, fds, nfds);
    sb_cgroup_close_join(&sb->cg);
    sb->t_sent_ns = al_now_ns();
    /* A failed send means the child already died: its reason is waiting
     * in the socket, and the loop below reports it. */
    (void)r;
  }

  for (;;) {
    struct sb_msg m;
    size_t nfds = 0;
    int r = recv_msg(sb->sync_fd, &m, sb->listen_fds, AL_SANDBOX_MAX_LISTENERS, &nfds);
    if (r < 0) {
      al_make_error(err, -r, "sandbox setup");
      goto fail;
    }
    if (r == 0) {
      al_make_error(err, EPROTO, "sandbox setup: the sandbox exited before starting the command");
      goto fail;
    }
    if (m.type == MSG_LISTENERS) {
      sb->n_listen = nfds;
      if (nfds != o->n_listen) {
        al_make_error(err, EPROTO, "sandbox setup: expected %zu listeners, got %zu", o->n_listen,
                      nfds);
        goto fail;
      }
      continue;
    }
    if (m.type == MSG_READY) {
      sb->t_ready_ns = al_now_ns();
      memcpy(sb->t_child, m.t, sizeof sb->t_child);
      break;
    }
    if (m.type == MSG_ERROR) {
      errno = 0;
      al_make_error(err, m.err, "%s", m.text);
      if (setup_status)
        *setup_status = m.status;
      goto fail;
    }
    al_make_error(err, EPROTO, "sandbox setup: unexpected message %u", m.type);
    goto fail;
  }
  *out = sb;
  return 0;

fail:
  al_sandbox_destroy(sb);
  return -1;
}

int al_sandbox_take_listener(al_sandbox *sb, size_t i)
{
  if (i >= sb->n_listen)
    return -1;
  return al_steal_fd(&sb->listen_fds[i]);
}

pid_t al_sandbox_pid(const al_sandbox *sb)
{
  return sb->pid;
}

void al_sandbox_kill(al_sandbox *sb)
{
  if (sb->pid > 0 && !sb->reaped) {
    kill(sb->pid, SIGKILL);
    sb->killed = true;
  }
  sb_cgroup_kill(&sb->cg);
}

static int status_from(al_sandbox *sb)
{
  if (sb->have_exit) {
    int ws = sb->exit_wstatus;
    if (WIFEXITED(ws))
      return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
      return 128 + WTERMSIG(ws);
  }
  return 128 + SIGKILL;
}

int al_sandbox_wait(al_sandbox *sb, int *status, al_error *err)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  al_autoclose int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    al_sandbox_kill(sb);
    return al_make_error(err, errno, "signalfd");
  }
  al_autoclose int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (tfd < 0) {
    al_sandbox_kill(sb);
    return al_make_error(err, errno, "timerfd");
  }
  struct itimerspec its = {0};
  its.it_value.tv_sec = (time_t)(sb->timeout_ms / 1000);
  its.it_value.tv_nsec = (long)(sb->timeout_ms % 1000) * 1000000L;
  timerfd_settime(tfd, 0, &its, NULL);

  bool timed_out = false;
  for (;;) {
    struct pollfd p[3] = {{sb->sync_fd, POLLIN, 0}, {sfd, POLLIN, 0}, {tfd, POLLIN, 0}};
    int n = poll(p, 3, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      al_sandbox_kill(sb);
      return al_make_error(err, errno, "poll");
    }
    if (p[2].revents & POLLIN) {
      /* the wall limit, or the grace after an interruption */
      timed_out = !sb->interrupted_signal;
      al_sandbox_kill(sb);
      break;
    }
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP) {
          kill(sb->pid, sig); /* SIGQUIT: the command's business */
          continue;
        }
        /* An interruption ends the run: pid 1 takes its namespace down
         * within a second; if it has not exited 2 s from now (or a second
         * signal comes), the supervisor SIGKILLs it. */
        al_term_signal_note(sig);
        if (sb->interrupted_signal) {
          al_sandbox_kill(sb);
          continue;
        }
        sb->interrupted_signal = sig;
        kill(sb->pid, sig);
        struct itimerspec grace = {.it_value = {.tv_sec = 2}};
        timerfd_settime(tfd, 0, &grace, NULL);
      }
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      struct sb_msg m;
      int r = recv_msg(sb->sync_fd, &m, NULL, 0, NULL);
      if (r > 0 && m.type == MSG_EXIT) {
        sb->have_exit = true;
        sb->exit_wstatus = m.status;
        break;
      }
      if (r <= 0)
        break; /* init is gone without telling us: it was killed */
    }
  }
  reap(sb);
  *status = timed_out                ? AL_EXIT_TIMEOUT
            : sb->interrupted_signal ? 128 + sb->interrupted_signal
                                     : status_from(sb);
  sb->timed_out = timed_out;
  return 0;
}

void al_sandbox_get_report(const al_sandbox *sb, al_sandbox_report *out)
{
  out->landlock_abi = sb->landlock_abi;
  out->cgroup = sb->cg.kind;
  out->mem_enforced = sb->cg.mem;
  out->pids_enforced = sb->cg.pids;
  out->cpu_enforced = sb->cg.cpu;
  out->host_uid = sb->host_uid;
  out->timed_out = sb->timed_out;
  out->interrupted_signal = sb->interrupted_signal;
  out->clone_to_hello_us = (sb->t_hello_ns - sb->t_clone_ns) / 1000;
  out->hello_to_go_us = (sb->t_go_ns - sb->t_hello_ns) / 1000;
  out->go_to_exec_us = (sb->t_ready_ns - sb->t_go_ns) / 1000;
}

void al_sandbox_format_timing(const al_sandbox *sb, char *buf, size_t len)
{
  uint64_t t0 = sb->t_clone_ns;
#define US(t) ((t) > t0 ? (unsigned long long)(((t)-t0) / 1000) : 0ULL)
  snprintf(buf, len,
           "hello %llu go %llu | supervisor: cgroup %llu sent %llu | child: go %llu "
           "rootfs %llu cgroup %llu session %llu confined %llu forked %llu | exec %llu (us)",
           US(sb->t_hello_ns), US(sb->t_go_ns), US(sb->t_cgroup_ns), US(sb->t_sent_ns),
           US(sb->t_child[SB_T_GO]), US(sb->t_child[SB_T_ROOTFS]), US(sb->t_child[SB_T_CGROUP]),
           US(sb->t_child[SB_T_SESSION]), US(sb->t_child[SB_T_CONFINED]),
           US(sb->t_child[SB_T_FORKED]), US(sb->t_ready_ns));
#undef US
}

void al_sandbox_destroy(al_sandbox *sb)
{
  if (!sb)
    return;
  if (sb->pid > 0 && !sb->reaped) {
    kill(sb->pid, SIGKILL);
    reap(sb);
  }
  sb_cgroup_kill(&sb->cg);
  sb_cgroup_destroy(&sb->cg);
  for (size_t i = 0; i < AL_SANDBOX_MAX_LISTENERS; i++)
    if (sb->listen_fds[i] >= 0)
      close(sb->listen_fds[i]);
  if (sb->sync_fd >= 0)
    close(sb->sync_fd);
  free(sb);
}
