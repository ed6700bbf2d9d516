/* Confinement of the sandbox's init (and so of everything it starts):
 * capabilities, securebits, no_new_privs, Landlock and seccomp.
 * Runs between clone and exec; failures die with the step named. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"
#include "sandbox/internal.h"
#include "sandbox/seccomp_bpf.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscalls.h"

#define DIE(fd, ...) sb_die(fd, 125, errno, __VA_ARGS__)

void sb_loopback_up(int sync_fd)
{
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    DIE(sync_fd, "socket for loopback");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
    DIE(sync_fd, "SIOCGIFFLAGS lo");
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
    DIE(sync_fd, "bring lo up");
  close(s);
}

static int last_cap(void)
{
  int last = CAP_LAST_CAP;
  char buf[16];
  int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n > 0) {
      buf[n] = '\0';
      int v = (int)strtol(buf, NULL, 10);
      if (v > 0 && v < 64)
        last = v;
    }
    close(fd);
  }
  return last;
}

/* Empty the permitted, effective and inheritable sets of this thread with
 * one capset(2) (version 3: two 32-bit words per set, all zero), which is
 * what libcap's cap_set_proc(cap_init()) does; a direct call keeps libcap
 * out of the core binary (its loading costs every start, bench/README.md).
 * Returns 0 or -1 with errno. Dropping is always allowed (capabilities(7)). */
static int clear_capability_sets(void)
{
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  return (int)syscall(SYS_capset, &hdr, data);
}

/* Order matters: securebits and the bounding set need CAP_SETPCAP, so they
 * go first; the uid change comes next (SECBIT_NO_SETUID_FIXUP keeps the
 * kernel from touching the sets, we empty them ourselves afterwards). */
void sb_drop_privileges(int sync_fd, uint32_t uid, bool can_setgroups)
{
  int lc = last_cap(); /* read before anything is locked down */
  if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                   SECBIT_NO_CAP_AMBIENT_RAISE |
                                   SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
    DIE(sync_fd, "lock securebits");
  for (int c = 0; c <= lc; c++)
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
      DIE(sync_fd, "drop capability %d from the bounding set", c);
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    DIE(sync_fd, "clear ambient capabilities");
  if (can_setgroups && sb_setgroups0() < 0)
    DIE(sync_fd, "setgroups");
  if (sb_setresgid(uid) < 0)
    DIE(sync_fd, "setresgid %u", uid);
  if (sb_setresuid(uid) < 0)
    DIE(sync_fd, "setresuid %u", uid);
  if (clear_capability_sets() < 0)
    DIE(sync_fd, "clear capability sets");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    DIE(sync_fd, "PR_SET_NO_NEW_PRIVS");
}

/* ---- Landlock (Documentation/userspace-api/landlock.rst) ---- */

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define AL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define AL_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

/* Our own copy of the ABI-6 attribute layout; the kernel reads `size` bytes. */
struct al_landlock_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

int sb_landlock_abi(void)
{
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : (int)v;
}

static void ll_allow(int sync_fd, int ruleset, const char *path, uint64_t access)
{
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return;
    DIE(sync_fd, "landlock: open `%s`", path);
  }
  struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
    DIE(sync_fd, "landlock: add rule for `%s`", path);
  close(fd);
}

/* Writes only under /workspace, /tmp, /dev/shm and to the writable device
 * nodes; reads and execution are left to the read-only mounts. With ABI >= 6
 * also scope abstract unix sockets and signals to the sandbox. */
void sb_apply_landlock(int sync_fd, int abi)
{
  if (abi <= 0)
    return;
  uint64_t file_w = LANDLOCK_ACCESS_FS_WRITE_FILE;
  uint64_t dir_w = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                   LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                   LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                   LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                   LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2)
    dir_w |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) {
    dir_w |= LANDLOCK_ACCESS_FS_TRUNCATE;
    file_w |= LANDLOCK_ACCESS_FS_TRUNCATE;
  }
  struct al_landlock_ruleset_attr attr = {.handled_access_fs = dir_w};
  size_t size = offsetof(struct al_landlock_ruleset_attr, handled_access_net);
  if (abi >= 6) {
    attr.scoped = AL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | AL_LANDLOCK_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0)
    DIE(sync_fd, "landlock: create ruleset (ABI %d)", abi);
  /* Device nodes do not need REFER and only take file rights. */
  uint64_t dir_no_refer = dir_w & ~LANDLOCK_ACCESS_FS_REFER;
  ll_allow(sync_fd, rs, "/workspace", dir_w);
  ll_allow(sync_fd, rs, "/tmp", dir_w);
  ll_allow(sync_fd, rs, "/dev/shm", dir_no_refer);
  ll_allow(sync_fd, rs, "/dev/pts", file_w);
  static const char *const nodes[] = {"/dev/null", "/dev/zero",   "/dev/full",
                                      "/dev/tty",  "/dev/random", "/dev/urandom"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(nodes); i++)
    ll_allow(sync_fd, rs, nodes[i], file_w);
  if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
    DIE(sync_fd, "landlock: restrict self");
  close(rs);
}

/* ---- seccomp (seccomp(2)) ---- */

/* Load one of the built-in programs (seccomp_bpf.h, compiled at build time
 * from the table by libseccomp). Returns 0 or -errno. */
static int load_prog(const struct sock_filter *prog, size_t len)
{
  struct sock_fprog fprog = {.len = (unsigned short)len, .filter = (struct sock_filter *)prog};
  if (len == 0 || len > 4096) /* BPF_MAXINSNS */
    return -EINVAL;
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0 ? -errno : 0;
}

/* SECCOMP_SET_MODE_FILTER needs no_new_privs, which is set. Child side;
 * dies on failure. */
void sb_seccomp_load(int sync_fd)
{
  int r = load_prog(al_seccomp_bpf_sandbox, al_seccomp_bpf_sandbox_len);
  if (r < 0) {
    errno = -r;
    DIE(sync_fd, "seccomp: load the filter");
  }
}

int al_confine_service(al_error *err)
{
  if (geteuid() == 0) {
    /* A service parsing hostile bytes needs no root: become nobody. In a
     * user namespace that maps neither nobody nor setgroups (EINVAL,
     * EPERM), we are root only inside it; emptying the capability sets
     * below is then what counts. */
    if (setgroups(0, NULL) < 0 && errno != EPERM)
      return al_make_error(err, errno, "confine service: setgroups");
    if (setresgid(65534, 65534, 65534) < 0 && errno != EINVAL)
      return al_make_error(err, errno, "confine service: drop to gid nobody");
    if (setresuid(65534, 65534, 65534) < 0 && errno != EINVAL)
      return al_make_error(err, errno, "confine service: drop to uid nobody");
  }
  if (clear_capability_sets() < 0)
    return al_make_error(err, errno, "confine service: clear capabilities");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return al_make_error(err, errno, "confine service: PR_SET_NO_NEW_PRIVS");
  int abi = sb_landlock_abi();
  if (abi > 0) {
    /* Every write access handled, none allowed: the service writes only to
     * descriptors it already holds. */
    uint64_t w = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2)
      w |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
      w |= LANDLOCK_ACCESS_FS_TRUNCATE;
    struct al_landlock_ruleset_attr attr = {.handled_access_fs = w};
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr,
                          offsetof(struct al_landlock_ruleset_attr, handled_access_net), 0);
    if (rs < 0 || syscall(SYS_landlock_restrict_self, rs, 0) < 0)
      return al_make_error(err, errno, "confine service: landlock");
    close(rs);
  }
  int r = load_prog(al_seccomp_bpf_service, al_seccomp_bpf_service_len);
  if (r < 0)
    return al_make_error(err, -r, "confine service: seccomp");
  return 0;
}
