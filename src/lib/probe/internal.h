/* Private to src/lib/probe: the catalogue's types and the context the
 * outer process hands to the inner one. */
#ifndef AL_PROBE_INTERNAL_H
#define AL_PROBE_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe/probe.h"

/* Inner-only verdict: the effect would land outside, the outer process
 * decides (no outer evidence of an escape means blocked). */
#define PR_PENDING 3

#define PR_MAX_HASHES 128
#define PR_MAX_ENV 64
#define PR_MAX_RO 64 /* ro_paths the probes look under */

/* Everything the inner process knows, sent as JSON on its stdin. Nothing
 * here is secret: host environment values travel only as truncated
 * SHA-256 hashes. */
typedef struct pr_ctx {
  bool unconfined; /* positive-control run on the host */
  bool docker;     /* the docker backend: the inner side runs in an agent container */
  /* docker: the proxy's address is the agent's HTTPS_PROXY (set by
   * al_docker_run to the proxy container's IP:3128); the inner side fills
   * `proxy` from it */
  bool proxy_from_env;
  bool preflight;  /* run only the PR_PREFLIGHT probes */
  char only[32];   /* run only this group ("" = all) */
  char nonce[17];  /* 16 hex chars, unique per run */
  int canary_tcp;  /* host loopback ports of the canary (0 if none) */
  int canary_tcp6; /* on ::1 (0 if IPv6 is unavailable on the host) */
  int canary_udp;
  int canary_dns;
  char canary_unix[64];       /* abstract unix name (without the leading NUL) */
  char host_home[PATH_MAX];   /* the invoker's HOME on the host */
  char canary_dir[PATH_MAX];  /* host directory holding a canary file `secret` */
  char canary_sock[PATH_MAX]; /* a listening Unix socket there (fs.ro-path-sockets' control) */
  char outer_cwd[PATH_MAX];
  char proxy[64];       /* "127.0.0.1:PORT" of the proxy inside, or "" */
  char allow_host[256]; /* an allowlisted host (first exact entry) or "" */
  int allow_port;
  char tls_host[256]; /* an allowlisted `tls: true` host (the SNI gate's) or "" */
  int tls_port;
  char ws_path[PATH_MAX]; /* /workspace, /tmp inside; host temp dirs when unconfined */
  char tmp_path[PATH_MAX];
  uint64_t mem_limit, ws_size, tmp_size;
  uint32_t pids, nofile;
  int leaked_fd; /* the fd number the outer left open on purpose */
  pid_t outer_pid;
  unsigned long long outer_start; /* field 22 of /proc/PID/stat */
  char *env_allowed[PR_MAX_ENV];  /* variable names the sandbox may hold */
  char *ro_paths[PR_MAX_RO];      /* the policy's filesystem.ro_paths (bound at the same place) */
  size_t n_ro_paths;
  size_t n_env_allowed;
  char host_hashes[PR_MAX_HASHES][17]; /* sha256(value)[0..16) of host env values */
  size_t n_host_hashes;
} pr_ctx;

/* cred.run-tokens: digests of token-like strings found inside, for the
 * host to compare with the run's tokens (probes_tokens.c). */
#define PR_MAX_DIGESTS 1024

typedef struct pr_result {
  int verdict; /* al_probe_verdict or PR_PENDING */
  char evidence[AL_PROBE_EVIDENCE_MAX];
  /* cred.run-tokens only: "HEX16 HEX16 ..." (at most PR_MAX_DIGESTS), else "" */
  char digests[PR_MAX_DIGESTS * 17 + 1];
} pr_result;

enum {
  PR_PREFLIGHT = 1u << 0,     /* part of the fast subset */
  PR_SIGSYS_BLOCKS = 1u << 1, /* death by SIGSYS means the filter held */
  PR_KILL_BLOCKS = 1u << 2,   /* death by SIGKILL means a limit held (OOM) */
  PR_OUTER = 1u << 3,         /* the outer process adds a judgment */
  /* death by SIGSEGV means the machine has no entry for this ABI at all
   * (priv.i386: `int 0x80` faults before any syscall, and so before
   * seccomp, when the kernel or its hypervisor has no i386 entry): the
   * ABI is closed, but the filter's arch check went untested */
  PR_SEGV_NOABI = 1u << 4,
};

typedef struct pr_probe {
  const char *id;
  const char *group;
  const char *tries;  /* one line: what it attempts */
  const char *judged; /* one line: how the verdict is reached */
  const char *source; /* man page, CVE, writeup */
  void (*run)(const pr_ctx *ctx, pr_result *r);
  unsigned flags;
  int timeout_ms; /* 0: 3000 */
} pr_probe;

extern const pr_probe pr_catalogue[];
extern const size_t pr_catalogue_len;

/* Whether probe p runs under these selection options. */
bool pr_selected(const pr_probe *p, bool preflight, const char *only);

/* Defined in probes_*.c, listed in catalogue.c. */
#define PR_DECL(fn) void fn(const pr_ctx *ctx, pr_result *r)

/* Result helpers: printf into r->evidence and set the verdict. */
void pr_set(pr_result *r, int verdict, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define pr_blocked(r, ...) pr_set((r), AL_PROBE_BLOCKED, __VA_ARGS__)
#define pr_escaped(r, ...) pr_set((r), AL_PROBE_ESCAPED, __VA_ARGS__)
#define pr_inconclusive(r, ...) pr_set((r), AL_PROBE_INCONCLUSIVE, __VA_ARGS__)
#define pr_pending(r, ...) pr_set((r), PR_PENDING, __VA_ARGS__)

/* The marker a probe puts in whatever it sends out ("alprobe-<id>-<nonce>",
 * dots of the id as dashes), so the canary log says which probe got out. */
void pr_marker(const pr_ctx *ctx, const char *id, char *out, size_t len);
/* errno name ("EPERM"), never NULL. */
const char *pr_errname(int e);

/* Fork, run fn(arg) in the child (own process group), return its int
 * result through a pipe; -ETIMEDOUT after timeout_ms, -(128+sig) when
 * killed. Used by probes that must not disturb the probe process. */
int pr_in_child(int (*fn)(void *arg), void *arg, int timeout_ms);

/* Network helpers (probes_net.c). */
int pr_tcp_connect(int family, const char *addr, int port, int timeout_ms, int *err_out);

/* JSON context (inner.c / outer.c). */
char *pr_ctx_to_json(const pr_ctx *ctx);
int pr_ctx_from_json(const char *text, pr_ctx *ctx);
void pr_ctx_free(pr_ctx *ctx);

/* The environment variable that carries the context (JSON) in the docker
 * backend, where the agent's stdin carries only the run's secrets (read by
 * al_docker_run's prologue; the probe has none). */
#define PR_CONTEXT_ENV "AIRLOCK_PROBE_CONTEXT"

/* The canary process (canary.c). */
typedef struct pr_canary {
  pid_t pid;
  int log_fd; /* read end: records "KIND LEN\n<bytes>\n" */
  int tcp, tcp6, udp, dns;
  char unix_name[64];
  int proxy_port; /* the open proxy (unconfined) or 0 */
} pr_canary;

int pr_canary_start(pr_canary *c, const char *nonce, bool open_proxy, al_error *err);
/* Stop it and read its whole log into a malloc'd buffer (*log, *len). */
void pr_canary_stop(pr_canary *c, char **log, size_t *len);

/* The host side of one probe run (outer.c), shared by the native and the
 * docker backends so both judge alike. */
typedef struct pr_host {
  char nonce[17];
  char dir[PATH_MAX]; /* host canary directory (holds `secret`), removed at the end */
  char shm[128];      /* host /dev/shm canary file */
  pr_canary cn;       /* running until pr_host_finish */
  int leaked;         /* fd left open on purpose (fs.inherited-fds), or -1 */
  bool canary_up;
  int sock_fd; /* listening at dir/canary.sock (ctx->canary_sock), or -1 */
  uint64_t t0_ns;
} pr_host;

/* Make the canary directory and /dev/shm file, start the canary process,
 * leave the fd of fs.inherited-fds open and fill *ctx for the inner side
 * (native paths and proxy; the docker backend adjusts the container's).
 * Returns 0, or -1 with err after undoing what it did. */
int pr_host_setup(const al_probe_opts *o, pr_host *h, pr_ctx *ctx, al_error *err);

/* Close the leaked fd (call when the inner side has started or is gone). */
void pr_host_close_leaked(pr_host *h);

/* Stop the canary, then judge the inner side's JSON lines (`lines`, may be
 * NULL) together with the host's evidence into *out. mem_enforced: a cgroup
 * memory limit is known to be enforced (res.memory). status: the inner
 * side's exit status. */
void pr_host_judge(const al_probe_opts *o, pr_host *h, const pr_ctx *ctx, const char *lines,
                   bool mem_enforced, int status, al_probe_report *out);

/* Stop the canary if still running, remove the host canaries. */
void pr_host_finish(pr_host *h);

/* Read fd to EOF (or 1 s without data) into a malloc'd NUL-terminated buffer. */
char *pr_read_all_fd(int fd);

#endif
