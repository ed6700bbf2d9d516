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

int sb_recv_msg(int fd, struct sb_msg *m, int *fds, size_t maxfds, size_t *nfds)
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
    sb_child_main(&a);
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
    int hr = sb_recv_msg(sb->sync_fd, &hello, NULL, 0, NULL);
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
    int r = sb_send_fds_msg(sb->sync_fd, &cgm, fds, nfds);
    sb_cgroup_close_join(&sb->cg);
    sb->t_sent_ns = al_now_ns();
    /* A failed send means the child already died: its reason is waiting
     * in the socket, and the loop below reports it. */
    (void)r;
  }

  for (;;) {
    struct sb_msg m;
    size_t nfds = 0;
    int r = sb_recv_msg(sb->sync_fd, &m, sb->listen_fds, AL_SANDBOX_MAX_LISTENERS, &nfds);
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
      int r = sb_recv_msg(sb->sync_fd, &m, NULL, 0, NULL);
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
