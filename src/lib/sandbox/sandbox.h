/* The native sandbox: one command in new user, mount, pid, net, ipc, uts and
 * cgroup namespaces, with a tmpfs root, no capabilities, Landlock, a seccomp
 * filter and limits. DESIGN.md §2; issue #2.
 *
 * Process shape:
 *   supervisor (caller) ──clone──► pid 1 "airlock init" (in all namespaces,
 *   unprivileged, under seccomp) ──fork──► the command (pid 2).
 * pid 1 reaps, takes the whole sandbox down on SIGINT/SIGTERM/SIGHUP
 * (kill(-1), then SIGKILL a second later), forwards SIGQUIT/SIGUSR1/2 to
 * the command, and exits with the command; when pid 1 dies the kernel kills every process of the
 * pid namespace. pid 1 has PR_SET_PDEATHSIG(SIGKILL) on the supervisor, so the sandbox dies with
 * the supervisor even after SIGKILL.
 *
 * Errors raised in the child during setup travel back over a SOCK_SEQPACKET
 * socket as (exit code, errno, step text), as crun does. */
#ifndef AL_SANDBOX_H
#define AL_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "policy/policy.h"

#define AL_SANDBOX_MAX_LISTENERS 12

/* Exit statuses of `airlock run` beyond the command's own. */
#define AL_EXIT_TIMEOUT 124
#define AL_EXIT_SETUP 125
#define AL_EXIT_NOEXEC 126
#define AL_EXIT_NOTFOUND 127

/* A read-only file the supervisor puts into the sandbox (the CA bundle):
 * written into the sandbox's root tmpfs during setup, mode 0444, before
 * the root is made read-only. */
#define AL_SANDBOX_FILES_DIR "/run/airlock/"
#define AL_SANDBOX_FILES_MAX (2u << 20) /* bytes, all files together (the root tmpfs has 4 MiB) */
typedef struct al_sandbox_file {
  const char *path; /* AL_SANDBOX_FILES_DIR + a name of [A-Za-z0-9._-]{1,64}, no dot name */
  const char *data; /* borrowed; not a secret (the sandbox can read it) */
  size_t len;
} al_sandbox_file;

#define AL_SANDBOX_HOSTS_MAX (256u << 10)

typedef struct al_sandbox_opts {
  const al_policy *policy; /* borrowed; must outlive the sandbox */
  char *const *argv;       /* command, NULL-terminated; argv[0] looked up in the sandbox PATH */
  char *const *env;        /* extra "NAME=VALUE" entries (NULL-terminated, may be NULL); borrowed.
                              They win over the defaults; never logged. */
  const uint16_t *listen_ports; /* TCP ports to listen on at 127.0.0.1 inside the netns */
  const uint32_t *listen_addrs; /* NULL, or per listener its IPv4 loopback address (host byte
                                   order, in 127.0.0.0/8; 0: 127.0.0.1) */
  size_t n_listen;
  const char *hosts;   /* NULL, or lines appended to the sandbox's /etc/hosts (hosts(5)) after
                          localhost's: the transparent path's names (proxy.h). At most
                          AL_SANDBOX_HOSTS_MAX bytes; not with filesystem.root (its /etc is
                          the rootfs's own). Borrowed. */
  uint64_t timeout_ms; /* wall-clock limit; 0 = policy's process.limits.wall */
  const char *run_id;  /* for cgroup names; may be NULL */
  const char *const *extra_ro_paths; /* NULL-terminated absolute host paths bound read-only at
                                        the same place, besides the policy's ro_paths (e.g. the
                                        airlock binary itself, for probes); may be NULL */
  bool quiet;              /* no warnings on stderr about limits that could not be enforced */
  bool command_is_airlock; /* the command is airlock's own binary (probe inner, relay):
                              see the RLIMIT_DATA note in sandbox_child.c */
  int stdin_fd;  /* > 0: the command's stdin (dup'd; the caller keeps it); else inherited */
  int stderr_fd; /* > 0: the command's stderr (likewise) */
  int stdout_fd; /* > 0: the command's stdout (dup'd; the caller keeps it); else
                    inherited. Note 0 means "inherit" so zeroed opts are safe. */
  const al_sandbox_file *files; /* read-only files to place (see al_sandbox_file); may be NULL */
  size_t n_files;
} al_sandbox_opts;

/* Is `path` a valid al_sandbox_file path? (why: the rule it breaks) */
bool al_sandbox_file_path_ok(const char *path, const char **why);

/* Can every host path o would bind be bound (the policy's
 * filesystem.ro_paths and filesystem.root, o->extra_ro_paths)? Each must
 * exist, be reachable with the caller's credentials (as root the sandbox
 * gets it from the caller, not by its own uid: a 0700 directory is fine;
 * unprivileged, the sandbox's uid is the caller's own), and be a directory
 * or a regular file. The check al_sandbox_start makes, for callers that
 * must refuse before they start anything (the ticket, before the lease).
 * Returns 0, or -1 with err naming the path and the reason. */
int al_sandbox_check_paths(const al_sandbox_opts *o, al_error *err);

typedef struct al_sandbox al_sandbox;

/* Create the sandbox and start the command in it. Returns 0 once the
 * command has been exec'd (the returned sandbox must be waited for and
 * destroyed), or -1 with err filled: err->code is the errno; *setup_status
 * (may be NULL) gets 125 for a setup failure, 126 (not executable) or 127
 * (not found) when exec failed. On failure nothing is left running. */
int al_sandbox_start(const al_sandbox_opts *opts, al_sandbox **out, int *setup_status,
                     al_error *err);

/* Listening socket i (0..n_listen-1) created inside the sandbox's network
 * namespace; the sandbox keeps ownership (closed by al_sandbox_destroy,
 * or taken with al_sandbox_take_listener). -1 if out of range. */
int al_sandbox_take_listener(al_sandbox *sb, size_t i);

/* pid of the sandbox's init in the caller's pid namespace. */
pid_t al_sandbox_pid(const al_sandbox *sb);

/* Wait for the command to end, enforcing the timeout. SIGINT, SIGTERM and
 * SIGHUP end the run: they go to pid 1, which sends them to every process
 * of the sandbox and SIGKILLs what is left a second later; a second such
 * signal, or no exit 2 s later, and the supervisor SIGKILLs pid 1 itself.
 * The signal is noted (common/owned.h al_term_signal_note) and reported
 * (al_sandbox_report.interrupted_signal). SIGQUIT goes to the command.
 * The caller must have blocked those signals (al_sandbox_block_signals).
 * *status gets the command's exit status, 128+N if it was killed by signal
 * N or interrupted by signal N, or 124 on timeout. Returns 0, or -1 with err on an internal error
 * (the sandbox is then killed). */
int al_sandbox_wait(al_sandbox *sb, int *status, al_error *err);

/* SIGKILL the whole sandbox (idempotent). */
void al_sandbox_kill(al_sandbox *sb);

/* Kill if still running, reap, remove the cgroup, close fds, free. */
void al_sandbox_destroy(al_sandbox *sb);

/* Block SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD in the calling thread so
 * al_sandbox_wait can take them from a signalfd. */
int al_sandbox_block_signals(al_error *err);

/* What could be enforced on this machine, for the run record and probes. */
typedef struct al_sandbox_report {
  int landlock_abi;   /* 0 when Landlock is unavailable */
  const char *cgroup; /* "v2", "v1" or "none" */
  bool mem_enforced, pids_enforced, cpu_enforced;
  uint32_t host_uid;      /* host uid the sandbox user maps to */
  bool timed_out;         /* al_sandbox_wait killed it at the wall-clock limit */
  int interrupted_signal; /* SIGINT, SIGTERM or SIGHUP that ended it, or 0 */
  /* start-up phases, microseconds: clone until the child greets; id maps
   * and cgroup; child setup until the command was exec'd */
  uint64_t clone_to_hello_us, hello_to_go_us, go_to_exec_us;
} al_sandbox_report;

void al_sandbox_get_report(const al_sandbox *sb, al_sandbox_report *out);

/* The start-up milestones as one line for AIRLOCK_DEBUG_TIMING and bench/:
 * microseconds since the clone(2) of each step, e.g. "hello 410 go 450
 * cgroup 2100 ...": supervisor steps (hello, maps written = go, cgroup
 * made, its message sent) and the child's (got go, root built, got cgroup,
 * session, confined, command forked), then exec'd (ready). Writes at most
 * len bytes (NUL-terminated) into buf. */
void al_sandbox_format_timing(const al_sandbox *sb, char *buf, size_t len);

/* Confine the calling process as an airlock service that parses hostile
 * bytes but needs no filesystem (the egress proxy forked for a run): as
 * root it becomes nobody (65534) with no supplementary groups; every
 * capability set is emptied; no_new_privs; Landlock (when available)
 * refuses every filesystem write; seccomp refuses the sandbox's deny list
 * plus execve/execveat. It keeps its open descriptors and its network
 * namespace. Call after fork(2), before serving. Returns 0 or -1 with err. */
int al_confine_service(al_error *err);

#endif
