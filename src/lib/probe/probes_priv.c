/* Privilege probes (docs/probes.md, group "privileges"). Every attempt
 * that changes process state runs in a throwaway child (pr_in_child). */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"
#include "probe/probes.h"

/* A line of /proc/self/status, value into out. */
static bool status_line(const char *key, char *out, size_t len)
{
  al_autofree char *buf = NULL;
  al_error e = {0};
  if (al_read_file("/proc/self/status", 1u << 16, &buf, NULL, &e) < 0)
    return false;
  size_t kl = strlen(key);
  for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, key, kl) == 0 && l[kl] == ':') {
      char *v = l + kl + 1;
      while (*v == '\t' || *v == ' ')
        v++;
      size_t n = strcspn(v, "\n");
      snprintf(out, len, "%.*s", (int)n, v);
      return true;
    }
  }
  return false;
}

PR_DECL(pr_priv_caps)
{
  (void)ctx;
  static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(sets); i++) {
    char v[64];
    if (!status_line(sets[i], v, sizeof v)) {
      pr_inconclusive(r, "/proc/self/status has no %s line", sets[i]);
      return;
    }
    if (strtoull(v, NULL, 16) != 0) {
      pr_escaped(r, "%s is %s", sets[i], v);
      return;
    }
  }
  pr_blocked(r, "all five capability sets are empty");
}

PR_DECL(pr_priv_nnp)
{
  (void)ctx;
  char v[16];
  if (!status_line("NoNewPrivs", v, sizeof v))
    pr_inconclusive(r, "no NoNewPrivs line");
  else if (strcmp(v, "1") == 0)
    pr_blocked(r, "NoNewPrivs: 1");
  else
    pr_escaped(r, "NoNewPrivs: %s", v);
}

PR_DECL(pr_priv_seccomp)
{
  (void)ctx;
  char v[16];
  if (!status_line("Seccomp", v, sizeof v))
    pr_inconclusive(r, "no Seccomp line");
  else if (strcmp(v, "2") == 0)
    pr_blocked(r, "Seccomp: 2 (filter)");
  else
    pr_escaped(r, "Seccomp: %s", v);
}

/* Is host uid 0 mapped into our user namespace? (user_namespaces(7)) */
PR_DECL(pr_priv_uid_map)
{
  (void)ctx;
  al_autofree char *buf = NULL;
  al_error e = {0};
  if (al_read_file("/proc/self/uid_map", 1u << 16, &buf, NULL, &e) < 0) {
    pr_inconclusive(r, "/proc/self/uid_map: %s", pr_errname(e.code));
    return;
  }
  unsigned long inside, outside, count;
  int off = 0, k;
  const char *p = buf;
  while (sscanf(p, "%lu %lu %lu%n", &inside, &outside, &count, &k) == 3) {
    if (outside == 0) {
      pr_escaped(r, "host uid 0 is mapped (uid_map: %lu %lu %lu)", inside, outside, count);
      return;
    }
    p += k;
    off++;
  }
  pr_blocked(r, "host uid 0 is not mapped (uid %u -> host %s)", (unsigned)getuid(),
             buf[0] ? "unprivileged" : "?");
  (void)off;
}

/* Set-uid and file-capability binaries only elevate when the mount allows
 * set-uid and no_new_privs is off (prctl(2) PR_SET_NO_NEW_PRIVS,
 * mount(8) nosuid). */
static void elevate_probe(pr_result *r, bool want_fcaps)
{
  static const char *const cand_suid[] = {"/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount",
                                          "/usr/bin/sudo", "/usr/bin/newgrp"};
  static const char *const cand_caps[] = {
      "/usr/bin/ping", "/usr/bin/mtr-packet", "/usr/sbin/arping", "/usr/bin/newuidmap",
      "/usr/lib/x86_64-linux-gnu/gstreamer1.0/gstreamer-1.0/gst-ptp-helper"};
  const char *const *cand = want_fcaps ? cand_caps : cand_suid;
  const char *bin = NULL;
  struct stat st;
  for (size_t i = 0; i < 5 && !bin; i++) {
    if (stat(cand[i], &st) < 0)
      continue;
    if (!want_fcaps && (st.st_mode & S_ISUID))
      bin = cand[i];
    if (want_fcaps && getxattr(cand[i], "security.capability", NULL, 0) > 0)
      bin = cand[i];
  }
  char nnp[16] = "?";
  status_line("NoNewPrivs", nnp, sizeof nnp);
  struct statvfs sv;
  const char *probe_path = bin ? bin : "/usr/bin";
  bool nosuid = statvfs(probe_path, &sv) == 0 && (sv.f_flag & ST_NOSUID);
  if (strcmp(nnp, "1") == 0 || nosuid)
    pr_blocked(r, "%s%s: NoNewPrivs %s, %s %s", bin ? bin : "no ",
               bin ? "" : (want_fcaps ? "file-capability binary" : "set-uid binary"), nnp,
               probe_path, nosuid ? "nosuid" : "suid allowed");
  else
    pr_escaped(r, "%s would elevate: NoNewPrivs %s and %s allows set-uid", bin ? bin : probe_path,
               nnp, probe_path);
}

PR_DECL(pr_priv_setuid)
{
  (void)ctx;
  elevate_probe(r, false);
}

PR_DECL(pr_priv_file_caps)
{
  (void)ctx;
  elevate_probe(r, true);
}

static int ptrace_child(void *arg)
{
  (void)arg;
  pid_t target = getppid();
  if (ptrace(PTRACE_SEIZE, target, NULL, NULL) < 0)
    return -errno;
  ptrace(PTRACE_DETACH, target, NULL, NULL);
  return 0;
}

PR_DECL(pr_priv_ptrace)
{
  (void)ctx;
  int rc = pr_in_child(ptrace_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "PTRACE_SEIZE of the parent succeeded (detached)");
  else
    pr_blocked(r, "PTRACE_SEIZE of the parent: %s", rc <= -128 ? "killed" : pr_errname(-rc));
}

static int mount_child(void *arg)
{
  (void)arg;
  /* As for binfmt_misc: mount only in a private mount namespace. Root
   * without one (never the case inside the sandbox, where we are uid
   * 1000) does not try, so the host's mounts are never touched. */
  if (unshare(CLONE_NEWNS) == 0) {
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
      return -errno;
  } else if (geteuid() == 0) {
    return -errno;
  }
  if (mount("airlock-probe", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0)
    return -errno;
  umount2("/tmp", MNT_DETACH);
  return 0;
}

PR_DECL(pr_priv_mount)
{
  (void)ctx;
  int rc = pr_in_child(mount_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "mounted a tmpfs");
  else
    pr_blocked(r, "mount: %s", rc <= -128 ? "killed" : pr_errname(-rc));
}

static int userns_child(void *arg)
{
  (void)arg;
  return unshare(CLONE_NEWUSER) < 0 ? -errno : 0;
}

PR_DECL(pr_priv_userns)
{
  (void)ctx;
  int rc = pr_in_child(userns_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "unshare(CLONE_NEWUSER) succeeded: a nested user namespace");
  else
    pr_blocked(r, "unshare(CLONE_NEWUSER): %s", rc <= -128 ? "killed" : pr_errname(-rc));
}

static int clone_ns_child(void *arg)
{
  (void)arg;
  /* raw clone(2) with namespace flags; the child exits at once */
  long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWNET | CLONE_NEWUTS | SIGCHLD), 0, 0, 0, 0);
  if (pid < 0)
    return -errno;
  if (pid == 0)
    _exit(0);
  waitpid((pid_t)pid, NULL, 0);
  return 0;
}

PR_DECL(pr_priv_clone_ns)
{
  (void)ctx;
  int rc = pr_in_child(clone_ns_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "clone(CLONE_NEWNET|CLONE_NEWUTS) succeeded");
  else
    pr_blocked(r, "clone with namespace flags: %s", rc <= -128 ? "killed" : pr_errname(-rc));
}

static int setns_child(void *arg)
{
  (void)arg;
  int fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = setns(fd, 0);
  int e = errno;
  close(fd);
  return rc < 0 ? -e : 0;
}

PR_DECL(pr_priv_setns)
{
  (void)ctx;
  int rc = pr_in_child(setns_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "setns into a mount namespace succeeded");
  else
    pr_blocked(r, "setns(mount namespace): %s", rc <= -128 ? "killed" : pr_errname(-rc));
}

PR_DECL(pr_priv_bpf)
{
  (void)ctx;
  union bpf_attr a;
  memset(&a, 0, sizeof a);
  a.map_type = BPF_MAP_TYPE_ARRAY;
  a.key_size = 4;
  a.value_size = 4;
  a.max_entries = 1;
  long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
  if (fd < 0) {
    pr_blocked(r, "bpf(BPF_MAP_CREATE): %s", pr_errname(errno));
    return;
  }
  close((int)fd);
  pr_escaped(r, "bpf(BPF_MAP_CREATE) made a map");
}

PR_DECL(pr_priv_keyctl)
{
  (void)ctx;
  /* KEYCTL_GET_KEYRING_ID (0) of the session keyring (-3), no create */
  long id = syscall(SYS_keyctl, 0, -3, 0, 0, 0);
  if (id < 0 && errno != ENOKEY) {
    pr_blocked(r, "keyctl(KEYCTL_GET_KEYRING_ID): %s", pr_errname(errno));
    return;
  }
  pr_escaped(r, "keyctl reached the kernel keyrings (%s)", id < 0 ? pr_errname(errno) : "ok");
}

PR_DECL(pr_priv_perf)
{
  (void)ctx;
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof a;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
  if (fd < 0) {
    pr_blocked(r, "perf_event_open: %s", pr_errname(errno));
    return;
  }
  close((int)fd);
  pr_escaped(r, "perf_event_open gave a counter");
}

PR_DECL(pr_priv_userfaultfd)
{
  (void)ctx;
  long fd = syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
  if (fd < 0 && errno == EINVAL)
    fd = syscall(SYS_userfaultfd, O_CLOEXEC);
  if (fd < 0) {
    pr_blocked(r, "userfaultfd: %s", pr_errname(errno));
    return;
  }
  close((int)fd);
  pr_escaped(r, "userfaultfd gave an fd");
}

PR_DECL(pr_priv_io_uring)
{
  (void)ctx;
  char params[120];
  memset(params, 0, sizeof params);
  long fd = syscall(425 /* io_uring_setup */, 4, params);
  if (fd < 0) {
    pr_blocked(r, "io_uring_setup: %s", pr_errname(errno));
    return;
  }
  close((int)fd);
  pr_escaped(r, "io_uring_setup gave a ring");
}

PR_DECL(pr_priv_module)
{
  (void)ctx;
  /* init_module with an empty image: EPERM without CAP_SYS_MODULE or
   * under the filter; anything else means the loader was reached (it
   * then refuses the empty image: nothing is ever loaded). */
  long rc = syscall(SYS_init_module, NULL, 0, "");
  int e = errno;
  if (rc < 0 && e == EPERM)
    pr_blocked(r, "init_module: EPERM");
  else
    pr_escaped(r, "init_module reached the module loader (%s)", rc < 0 ? pr_errname(e) : "ok");
}

static int personality_child(void *arg)
{
  (void)arg;
  if (personality(READ_IMPLIES_EXEC | ADDR_NO_RANDOMIZE) < 0)
    return -errno;
  int now = personality(0xffffffff);
  return (now & ADDR_NO_RANDOMIZE) ? 0 : -EPERM;
}

PR_DECL(pr_priv_personality)
{
  (void)ctx;
  int rc = pr_in_child(personality_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "personality(ADDR_NO_RANDOMIZE|READ_IMPLIES_EXEC) accepted");
  else
    pr_blocked(r, "personality: %s", rc <= -128 ? "killed" : pr_errname(-rc));
}

/* The foreign-ABI probes run in the probe's own child: SIGSYS kills it
 * (PR_SIGSYS_BLOCKS), returning at all is the escape. */
PR_DECL(pr_priv_x32)
{
  (void)ctx;
  long rc = syscall(0x40000000L + SYS_getpid);
  pr_escaped(r, "an x32 syscall returned (%s)", rc < 0 ? pr_errname(errno) : "ok");
}

PR_DECL(pr_priv_i386)
{
  (void)ctx;
#if defined(__x86_64__)
  /* This child must die by the signal itself: a sanitizer's SIGSEGV
   * handler would turn a faulting int 0x80 (no i386 entry on the machine,
   * PR_SEGV_NOABI) into an abort. rt_sigaction(2) directly, past any
   * interceptor of sigaction(2); the kernel's struct: handler, flags,
   * restorer, 8-byte mask. */
  struct {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
  } dfl = {.handler = NULL}; /* SIG_DFL */
  (void)syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, sizeof dfl.mask);
  long rc;
  __asm__ volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory");
  pr_escaped(r, "an i386 int 0x80 syscall returned (%ld)", rc);
#else
  pr_inconclusive(r, "not an x86-64 machine");
#endif
}

/* Numbers above 334 (x86-64) and their expected refusal inside. */
PR_DECL(pr_priv_syscall_sweep)
{
  (void)ctx;
  static const struct {
    long nr;
    const char *name;
  } calls[] = {{425, "io_uring_setup"}, {426, "io_uring_enter"}, {427, "io_uring_register"},
               {428, "open_tree"},      {429, "move_mount"},     {430, "fsopen"},
               {431, "fsconfig"},       {432, "fsmount"},        {433, "fspick"},
               {435, "clone3"},         {438, "pidfd_getfd"},    {440, "process_madvise"},
               {442, "mount_setattr"}};
  char reached[200] = "";
  size_t n_reached = 0;
  for (size_t i = 0; i < AL_ARRAY_SIZE(calls); i++) {
    /* invalid arguments everywhere: a call that gets past the filter
     * fails in the kernel with EINVAL/EFAULT/EBADF and changes nothing */
    errno = 0;
    long rc = syscall(calls[i].nr, -1L, 0L, 0L, 0L, 0L, 0L);
    int e = errno;
    if (rc >= 0 && calls[i].nr != 435)
      close((int)rc);
    if (rc >= 0 && calls[i].nr == 435)
      continue; /* never: clone3 with NULL args is EFAULT/EINVAL */
    bool refused = e == EPERM || e == ENOSYS;
    if (calls[i].nr == 435)
      refused = e == ENOSYS; /* clone3 must look absent so libc falls back to clone */
    if (!refused) {
      n_reached++;
      size_t l = strlen(reached);
      snprintf(reached + l, sizeof reached - l, "%s%s=%s", l ? "," : "", calls[i].name,
               pr_errname(e));
    }
  }
  if (n_reached)
    pr_escaped(r, "%zu of %zu reached the kernel: %s", n_reached, AL_ARRAY_SIZE(calls), reached);
  else
    pr_blocked(r, "all %zu refused (EPERM, clone3 ENOSYS)", AL_ARRAY_SIZE(calls));
}

/* Numbers newer than the build's libseccomp (x86-64: statmount 457 ...
 * file_setattr 469): the native filter answers ENOSYS whether or not this
 * kernel has them (docs/sandbox.md, Privileges step 5). Invalid arguments
 * everywhere; a call that gets through fails with EFAULT/EBADF/EINVAL. */
PR_DECL(pr_priv_syscall_new)
{
  (void)ctx;
  static const struct {
    long nr;
    const char *name;
  } calls[] = {{457, "statmount"},      {458, "listmount"},    {463, "setxattrat"},
               {464, "getxattrat"},     {465, "listxattrat"},  {466, "removexattrat"},
               {467, "open_tree_attr"}, {468, "file_getattr"}, {469, "file_setattr"}};
  char reached[240] = "";
  size_t n_reached = 0;
  for (size_t i = 0; i < AL_ARRAY_SIZE(calls); i++) {
    errno = 0;
    long rc = syscall(calls[i].nr, -1L, 0L, 0L, 0L, 0L, 0L);
    int e = errno;
    if (rc > 2)
      close((int)rc);
    if (rc >= 0 || e != ENOSYS) {
      n_reached++;
      size_t l = strlen(reached);
      snprintf(reached + l, sizeof reached - l, "%s%s=%s", l ? "," : "", calls[i].name,
               rc >= 0 ? "ok" : pr_errname(e));
    }
  }
  if (n_reached)
    pr_escaped(r, "%zu of %zu reached the kernel: %s", n_reached, AL_ARRAY_SIZE(calls), reached);
  else
    pr_blocked(r, "all %zu answer ENOSYS", AL_ARRAY_SIZE(calls));
}
