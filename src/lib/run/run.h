/* One sandboxed command with its egress proxy: what `airlock run` does and
 * what `airlock ticket` builds on. */
#ifndef AL_RUN_H
#define AL_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "sandbox/sandbox.h"

#define AL_PROXY_PORT 3128
#define AL_RUN_LOG_CAP AL_PROXY_LOG_CAP

typedef struct al_run_opts {
  const al_policy *policy; /* borrowed */
  char *const *argv;       /* command */
  char *const *env;        /* extra NAME=VALUE, NULL-terminated or NULL; borrowed, never logged */
  uint64_t timeout_ms;     /* 0: the policy's wall limit */
  const char *log_path;    /* proxy decisions (JSON lines) go here; NULL: stderr */
  int decisions_fd;        /* if > 0 and log_path is NULL: decisions go to this fd instead */
  uint64_t decisions_cap;  /* bytes the decisions may take (proxy/decisions.h); 0: AL_RUN_LOG_CAP
                          for log_path, none for decisions_fd or stderr */
  const char *run_id;      /* NULL: a random one */
  const char *const *extra_ro_paths; /* see al_sandbox_opts; may be NULL */
  int stdout_fd;                     /* > 0: the command's stdout; else inherited */
  int stdin_fd;                      /* > 0: the command's stdin; else inherited */
  bool *timed_out;                   /* out (may be NULL): killed at the wall-clock limit */
  int stderr_fd;                     /* > 0: the command's stderr; else inherited */
  bool quiet;
  /* Called after the sandbox started and before the proxy process is
   * forked, so the caller can wipe secrets it put into `env` (the proxy
   * must never hold a copy). May be NULL. */
  void (*after_start)(void *ctx);
  void *after_start_ctx;
  /* The model relay (when the policy has a relay section): its JSON lines
   * (one per model call) go to relay_log_fd if > 2, else to
   * relay_log_path (created 0600, appended), else to stderr. */
  int relay_log_fd;
  const char *relay_log_path;
  /* With `relay.key: broker`: the model key from the broker lease
   * (`airlock ticket`), NUL-terminated, borrowed; wiped in place
   * (explicit_bzero) by the relay launcher once the relay sandbox started
   * (or failed to). Required then: without it al_run_command refuses
   * (`airlock run` has no broker; it takes relay.key_file only). */
  char *relay_key;
  /* Read-only files placed in the sandbox (al_sandbox_file: the CA
   * bundle); borrowed; may be NULL. */
  const al_sandbox_file *files;
  size_t n_files;
  /* Sealed credentials: the forge gateway's hand-off (gateway.h), set on
   * the agent's proxy listener; borrowed; NULL: none. */
  const al_proxy_handoff *handoff;
} al_run_opts;

/* Start the sandbox (with a listener at 127.0.0.1:3128 inside and the
 * proxy variables set when the policy has a network section), fork the
 * egress proxy on that listener, wait for the command, stop the proxy.
 * With a relay section, also a listener at 127.0.0.1:8080 inside, served
 * by the model relay in its own sandbox (relay/launch.h), whose egress is
 * a second listener of the same proxy allowing only the model API host.
 * *status gets the exit status per sandbox.h (125 on setup failure).
 * Returns 0, or -1 with err (then *status is 125, 126 or 127). */
int al_run_command(const al_run_opts *o, int *status, al_error *err);

/* The counts of a decision log (JSON lines, as the proxy or the relay
 * wrote them to fd, read from offset 0 to fd's offset). The proxy's
 * closing summary line gives exact counts; without one (a proxy that did
 * not finish), each line is read: a "deny" whose reason is a failure of
 * the way out (al_proxy_reason_is_failure) is failed, not denied (the
 * relay's log: only its lines are counted). 0, or -1 when fd cannot be
 * read. */
typedef struct al_run_decision_counts {
  size_t lines;  /* connections (summary) or decision lines */
  size_t denied; /* refused by the policy or a rule */
  size_t failed; /* DNS, connect, the client: not refusals */
} al_run_decision_counts;
int al_run_count_decisions(int fd, al_run_decision_counts *out);

/* Fork the egress proxy serving n listeners (1..2; each with its own run id
 * and policy, see proxy.h), writing decisions to decisions_fd (-1: none). The
 * child closes every other descriptor, confines itself
 * (al_confine_service: nobody, no capabilities, no filesystem writes, no
 * exec), re-arms PR_SET_PDEATHSIG(SIGKILL) after the uid change and serves
 * until SIGTERM. Returns the child's pid, or -1 with err. */
pid_t al_run_start_proxy(const al_proxy_listener *ls, size_t n, int decisions_fd, al_error *err);
/* The same with a cap on the decisions written to decisions_fd (bytes, 0: none;
 * proxy/decisions.h). */
pid_t al_run_start_proxy_capped(const al_proxy_listener *ls, size_t n, int decisions_fd,
                                uint64_t decisions_cap, al_error *err);

/* SIGTERM the proxy, give it a second to finish, then SIGKILL; reap it. */
void al_run_stop_proxy(pid_t pid);

/* ---- `airlock run`, after its options are parsed (request.c) ---- */

/* Without --log, the proxy's decisions (and the relay's calls) go to a
 * capped memfd of this size, not to stderr where they would interleave
 * with the command's output; at the end one line counts them. */
#define AL_RUN_DECISIONS_CAP (8u << 20)

typedef struct al_run_request {
  const char *policy_path;    /* -p, or NULL: the embedded default policy */
  char *const *argv;          /* the command; borrowed */
  char *const *env;           /* --env NAME=VALUE, NULL-terminated; borrowed, never logged */
  uint64_t timeout_ms;        /* 0: the policy's wall limit */
  const char *log_path;       /* --log FILE, or NULL: the decisions counted in a memfd */
  uint64_t log_max;           /* --log-max (bytes), 0: AL_RUN_LOG_CAP */
  const char *relay_log_path; /* --relay-log FILE, or NULL: counted likewise (native only) */
  bool quiet;
  const char *run_id; /* --run-id (16 lowercase hex), or NULL: random */
  /* --backend docker (al_docker_run_request, run/docker.h) */
  const char *proxy_image, *agent_image, *network;
  bool egress_internal;
} al_run_request;

typedef struct al_run_result {
  int status;                       /* the exit status of `airlock run` */
  bool timed_out;                   /* killed at the wall-clock limit */
  al_run_decision_counts decisions; /* counted from the memfd (lines 0: none, or --log) */
  al_run_decision_counts relay;     /* the relay's calls, likewise */
} al_run_result;

/* The native backend: load the policy (al_policy_load_or_default), send
 * the decisions and the relay's calls to --log / --relay-log or to capped
 * memfds (AL_RUN_DECISIONS_CAP, counted after the run), run the command
 * (al_run_command). res->status: 2 when the policy is refused, else the
 * command's status per al_run_command. 0, or -1 with err. */
int al_run_request_native(const al_run_request *rq, al_run_result *res, al_error *err);

/* A sealed memfd of AL_RUN_DECISIONS_CAP bytes (common/memfd.h), or -1
 * (then the decisions are dropped; the count says none). */
int al_run_decisions_memfd(const char *name);

/* Count the decisions in dfd and the relay's calls in rfd (-1: not
 * counted) into res (al_run_count_decisions; unreadable counts as none). */
void al_run_request_count(int dfd, int rfd, al_run_result *res);

#endif
