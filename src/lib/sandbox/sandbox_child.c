/* The sandbox's child side, between clone and exec (split from sandbox.c,
 * which has the supervisor's side and the message diagram): the reports to
 * the supervisor, the child's start-up (hostname, root, cgroup, privileges
 * dropped, Landlock, seccomp) and the minimal pid 1 that forks the command,
 * forwards signals and reaps. */
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
int sb_send_fds_msg(int sock, const struct sb_msg *msg, const int *fds, size_t n)
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
  int r = sb_send_fds_msg(sync_fd, &m, fds, n);
  if (r < 0)
    sb_die(sync_fd, 125, -r, "send listener sockets to the supervisor");
}

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

int sb_child_main(struct child_args *a)
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
  if (sb_recv_msg(sync_fd, &m, cfds, AL_ARRAY_SIZE(cfds), &ncfds) <= 0 || m.type != MSG_CGROUP)
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
