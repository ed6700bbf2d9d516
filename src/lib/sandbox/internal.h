/* Pieces of the sandbox shared between its files; not a public API. */
#ifndef AL_SANDBOX_INTERNAL_H
#define AL_SANDBOX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/error.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"

struct al_sandbox_opts;
/* The command's stdio (stdio.c): for i = 0, 1, 2 the descriptor it gets
 * (opts' stdin_fd/stdout_fd/stderr_fd when > 0, else the caller's own i),
 * with a directory, an O_PATH descriptor or a closed one replaced by
 * /dev/null (*devnull, opened once, O_CLOEXEC, the caller closes it; -1
 * when not needed) and a warning naming it. Returns 0, or -1 with err
 * when /dev/null cannot be opened. */
int sb_stdio_check(const struct al_sandbox_opts *o, int out[3], int *devnull, al_error *err);

/* Messages on the supervisor <-> init socket. */
enum {
  MSG_HELLO = 1,
  MSG_GO,
  MSG_CGROUP,
  MSG_LISTENERS,
  MSG_READY,
  MSG_ERROR,
  MSG_EXIT,
  MSG_SIGNAL
};

/* Start-up milestones the child stamps (CLOCK_MONOTONIC, al_now_ns; the
 * sandbox has no time namespace) and sends with MSG_READY, for
 * AIRLOCK_DEBUG_TIMING and bench/. */
enum {
  SB_T_GO,       /* MSG_GO received */
  SB_T_ROOTFS,   /* root built and pivoted into */
  SB_T_CGROUP,   /* MSG_CGROUP received and the cgroup joined */
  SB_T_SESSION,  /* cgroup namespace and session made */
  SB_T_CONFINED, /* privileges dropped, Landlock and seccomp applied */
  SB_T_FORKED,   /* pid 1 forked the command */
  SB_T_N
};

struct sb_msg {
  uint32_t type;
  int32_t status; /* MSG_ERROR: exit status to use; MSG_EXIT: wait status; MSG_SIGNAL: signo */
  int32_t err;    /* errno */
  char text[480];
  uint64_t t[SB_T_N]; /* MSG_READY: the milestones */
};

/* The child of the raw clone(2) is single-threaded, but glibc's copy of
 * the thread list still names the supervisor's other threads (e.g. the
 * ticket's stderr relay): glibc's setresuid() and friends would signal
 * them all and wait forever (nptl_setxid). In the child, change
 * credentials with the raw system calls, which act on this thread only —
 * exactly what a single-threaded process needs. */
#define sb_setresuid(u) ((int)syscall(SYS_setresuid, (u), (u), (u)))
#define sb_setresgid(g) ((int)syscall(SYS_setresgid, (g), (g), (g)))
#define sb_setgroups0() ((int)syscall(SYS_setgroups, 0, NULL))

/* Child side: report a failed step and _exit. Only between clone and exec. */
__attribute__((noreturn, format(printf, 4, 5))) void sb_die(int sync_fd, int status, int errnum,
                                                            const char *fmt, ...);

/* hostpaths.c: the host paths bound into the sandbox (the policy's
 * ro_paths, then the caller's extra_ro_paths, and filesystem.root),
 * resolved by the supervisor before clone. fd: a detached read-only
 * private copy of the mount tree there (open_tree(2)), which the child
 * attaches with move_mount(2) without resolving the host path; -1 when the
 * supervisor may not clone mounts (unprivileged: the sandbox's uid is its
 * own), and the child binds the path. */
#define SB_HOSTPATHS_MAX 256 /* read-only paths and the root, in all */
struct sb_hostpath {
  const char *path; /* borrowed from the options; the same path in the sandbox */
  int fd;           /* O_CLOEXEC, or -1 */
  bool dir;         /* a directory (else a regular file) */
};
struct sb_hostpaths {
  struct sb_hostpath *ro; /* n_ro entries, owned */
  size_t n_ro;
  struct sb_hostpath root; /* filesystem.root (path NULL when unset) */
};
/* Resolve every path of o; 0, or -1 with err naming the path (absent, not
 * reachable by the supervisor, neither a directory nor a regular file). */
int sb_hostpaths_open(struct sb_hostpaths *hp, const al_sandbox_opts *o, al_error *err);
/* The descriptors of hp (at most cap) into out; returns how many. */
size_t sb_hostpaths_fds(const struct sb_hostpaths *hp, int *out, size_t cap);
void sb_hostpaths_close_one(struct sb_hostpath *h);
void sb_hostpaths_close(struct sb_hostpaths *hp);

/* rootfs.c: build the new root and pivot into it. Runs in the child, with
 * all capabilities of the new user namespace. Dies on failure. Closes the
 * descriptors of hp. hosts: lines for /etc/hosts after localhost's, or
 * NULL (al_sandbox_opts.hosts). */
void sb_setup_rootfs(int sync_fd, const al_policy *policy, struct sb_hostpaths *hp,
                     const al_sandbox_file *files, size_t n_files, uint32_t uid, const char *hosts);

/* confine.c */
void sb_drop_privileges(int sync_fd, uint32_t uid, bool can_setgroups);
int sb_landlock_abi(void);
void sb_apply_landlock(int sync_fd, int abi);
/* Load the built-in sandbox filter (seccomp_bpf.h); child side. */
void sb_seccomp_load(int sync_fd);
void sb_loopback_up(int sync_fd);

/* sandbox_child.c: send the listening sockets to the supervisor (MSG_LISTENERS). */
void sb_send_listeners(int sync_fd, const int *fds, size_t n);

/* netns.c: the network namespace, made by a helper (pid 2) while init
 * builds the root. sb_netns_start forks it (it brings lo up and sends the
 * listeners to the supervisor) and returns init's end of their socket;
 * sb_netns_join waits for it, joins its namespace, reaps it and checks the
 * namespace is owned by the sandbox's user namespace. Both die on failure. */
int sb_netns_start(int sync_fd, const al_sandbox_opts *o, pid_t *helper);
void sb_netns_join(int sync_fd, int sock, pid_t helper);

/* cgroup.c: supervisor side. */
struct sb_cgroup {
  const char *kind; /* "v2", "v1", "none" */
  char *paths[4];   /* created directories */
  size_t n;
  bool mem, pids, cpu;
  char why[256]; /* what could not be enforced */
  /* v1: the `tasks` file of each created cgroup, opened O_WRONLY by the
   * supervisor (its credentials are the ones the kernel checks); the child
   * writes "0" to each to move itself in (sb_cgroup_join). -1 when unused. */
  int join_fds[3];
  size_t n_join;
};
/* Create the run's cgroup(s) and set the limits. v2: pid is moved in here.
 * v1: pid is not moved; cg->join_fds are for the child (sb_cgroup_join),
 * which moves itself in: a single thread moving itself through `tasks`
 * skips the global cgroup_threadgroup_rwsem whose write side waits for an
 * RCU grace period (0.2-15 ms here) when the supervisor moves another
 * process (kernel/cgroup/cgroup.c, cgroup_procs_write_start). */
int sb_cgroup_create(struct sb_cgroup *cg, const char *name, const al_policy_limits *lim,
                     pid_t pid);
/* Child side, single-threaded, before the command is forked: move the
 * calling thread into each cgroup of fds (v1 `tasks` files). Dies on
 * failure (the supervisor has already reported the limits enforced). */
void sb_cgroup_join(int sync_fd, const int *fds, size_t n);
/* Supervisor: close the join descriptors (after sending them). */
void sb_cgroup_close_join(struct sb_cgroup *cg);
void sb_cgroup_kill(struct sb_cgroup *cg);
void sb_cgroup_destroy(struct sb_cgroup *cg);

/* ---- sandbox.c (the supervisor) and sandbox_child.c (the child) ---- */

/* What the child gets from the supervisor across clone(2). */
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

/* The child of clone(2): builds the sandbox and becomes its pid 1, which
 * execs the command; never returns (reports through a->sync_fd). */
__attribute__((noreturn)) int sb_child_main(struct child_args *a);
/* Send one message with n file descriptors attached (SCM_RIGHTS); 0 or
 * -errno. Both sides. */
int sb_send_fds_msg(int sock, const struct sb_msg *msg, const int *fds, size_t n);
/* Receive one message on the sync socket, with up to maxfds descriptors
 * into fds (*nfds of them) when fds is given: 1, 0 at EOF, -errno
 * (-EPROTO: a short or malformed message). Both sides. */
int sb_recv_msg(int fd, struct sb_msg *m, int *fds, size_t maxfds, size_t *nfds);

#endif
