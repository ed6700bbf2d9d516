/* The sandbox's seccomp deny table (data only; see syscalls.h). Read by
 * the build-time generator of the BPF programs (seccomp_gen.c), by the
 * Docker/Kubernetes profile (syscalls.c) and by the unit test that checks
 * the generated programs against libseccomp (tests/unit/test_seccomp.c). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/util.h"
#include "sandbox/syscalls.h"

#define DENY(n)                                                                                    \
  {                                                                                                \
    .name = (n), .errno_ret = EPERM                                                                \
  }
#define DENY_IF1(n, c0)                                                                            \
  {                                                                                                \
    .name = (n), .errno_ret = EPERM, .n_cmp = 1, .cmp = { c0 }                                     \
  }
#define DENY_IF2(n, c0, c1)                                                                        \
  {                                                                                                \
    .name = (n), .errno_ret = EPERM, .n_cmp = 2, .cmp = { c0, c1 }                                 \
  }
#define CMP(i, o, x, y)                                                                            \
  {                                                                                                \
    .arg = (i), .op = (o), .a = (x), .b = (y)                                                      \
  }
#define CLONE_NS(f) DENY_IF1("clone", CMP(0, AL_SC_MASKED_EQ, f, f))

/* The syscalls refused outright (EPERM): namespaces, mounts, kernel
 * modules, tracing, keyrings, BPF, perf, io_uring, handles, and host-wide
 * administration (DESIGN.md §2's list plus the new mount API); then the
 * calls refused by argument. */
static const al_sc_rule rules[] = {
    DENY("mount"),
    DENY("umount"),
    DENY("umount2"),
    DENY("pivot_root"),
    DENY("chroot"),
    DENY("fsopen"),
    DENY("fsconfig"),
    DENY("fsmount"),
    DENY("fspick"),
    DENY("move_mount"),
    DENY("open_tree"),
    DENY("mount_setattr"),
    DENY("unshare"),
    DENY("setns"),
    DENY("ptrace"),
    DENY("process_vm_readv"),
    DENY("process_vm_writev"),
    DENY("process_madvise"),
    DENY("bpf"),
    DENY("perf_event_open"),
    DENY("keyctl"),
    DENY("add_key"),
    DENY("request_key"),
    DENY("kexec_load"),
    DENY("kexec_file_load"),
    DENY("init_module"),
    DENY("finit_module"),
    DENY("delete_module"),
    DENY("create_module"),
    DENY("userfaultfd"),
    DENY("io_uring_setup"),
    DENY("io_uring_enter"),
    DENY("io_uring_register"),
    DENY("open_by_handle_at"),
    DENY("name_to_handle_at"),
    DENY("acct"),
    DENY("swapon"),
    DENY("swapoff"),
    DENY("reboot"),
    DENY("syslog"),
    DENY("quotactl"),
    DENY("quotactl_fd"),
    DENY("lookup_dcookie"),
    DENY("nfsservctl"),
    DENY("vhangup"),
    DENY("iopl"),
    DENY("ioperm"),
    DENY("settimeofday"),
    DENY("clock_settime"),
    DENY("clock_adjtime"),
    DENY("adjtimex"),
    DENY("stime"),
    DENY("uselib"),
    DENY("fanotify_init"),
    DENY("kcmp"),
    DENY("pidfd_getfd"),
    DENY("modify_ldt"),
    /* clone3 takes its flags in a struct seccomp cannot read: ENOSYS makes
     * libc fall back to clone(2), whose flags are checked below. */
    {.name = "clone3", .errno_ret = ENOSYS},
    CLONE_NS(CLONE_NEWNS),
    CLONE_NS(CLONE_NEWUSER),
    CLONE_NS(CLONE_NEWPID),
    CLONE_NS(CLONE_NEWNET),
    CLONE_NS(CLONE_NEWIPC),
    CLONE_NS(CLONE_NEWUTS),
    CLONE_NS(CLONE_NEWCGROUP),
    /* TIOCSTI / TIOCLINUX push input into a terminal; the kernel compares the
     * request as a 32-bit value, so mask it the same way. */
    DENY_IF1("ioctl", CMP(1, AL_SC_MASKED_EQ, 0xffffffffUL, TIOCSTI)),
    DENY_IF1("ioctl", CMP(1, AL_SC_MASKED_EQ, 0xffffffffUL, TIOCLINUX)),
    /* personality: anything but PER_LINUX (0). */
    DENY_IF1("personality", CMP(0, AL_SC_GT, 0, 0)),
    /* Address families: only AF_UNIX (1), AF_INET (2), AF_INET6 (10) and
     * AF_NETLINK (16; getaddrinfo and `ip` need it, and without
     * capabilities it can only read). Everything above 16 is refused with
     * one 64-bit comparison, which also catches a family with high bits set
     * (the kernel reads an int: 0x1_0000_0011 would be AF_PACKET); the
     * gaps below 16 one by one. No packet, vsock (the hypervisor, which no
     * network namespace separates), bluetooth, CAN, XDP, ... */
    DENY_IF1("socket", CMP(0, AL_SC_GT, AF_NETLINK, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 0, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 3, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 4, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 5, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 6, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 7, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 8, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 9, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 11, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 12, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 13, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 14, 0)),
    DENY_IF1("socket", CMP(0, AL_SC_EQ, 15, 0)),
    /* Raw and packet-type IP sockets (the type's low bits). */
    DENY_IF2("socket", CMP(0, AL_SC_EQ, AF_INET, 0), CMP(1, AL_SC_MASKED_EQ, 0xf, SOCK_RAW)),
    DENY_IF2("socket", CMP(0, AL_SC_EQ, AF_INET6, 0), CMP(1, AL_SC_MASKED_EQ, 0xf, SOCK_RAW)),
    DENY_IF2("socket", CMP(0, AL_SC_EQ, AF_INET, 0), CMP(1, AL_SC_MASKED_EQ, 0xf, SOCK_PACKET)),
};

const al_sc_rule *al_seccomp_rules(size_t *n)
{
  *n = AL_ARRAY_SIZE(rules);
  return rules;
}
