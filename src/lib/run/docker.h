/* The docker backend: the seed's design on a Docker engine, driven over the
 * Engine API's Unix socket (libcurl; net_sources, airlock-net only).
 * docs/docker.md describes what one run makes and why. */
#ifndef AL_RUN_DOCKER_H
#define AL_RUN_DOCKER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"
#include "proxy/handoff.h"

typedef struct al_docker_opts {
  const al_policy *policy; /* borrowed */
  char *const *argv;       /* command run in the agent container; each argument valid UTF-8 */
  char *const *env;        /* extra NAME=VALUE (tokens), NULL-terminated or NULL; borrowed.
                              Given to the agent on its stdin (read by a /bin/sh prologue),
                              never in the container's configuration, never logged. NAME:
                              [A-Za-z_][A-Za-z0-9_]*, VALUE one line */
  uint64_t timeout_ms;     /* 0: the policy's wall limit */
  const char *socket_path; /* NULL: /var/run/docker.sock (or $DOCKER_HOST unix://...) */
  const char *proxy_image; /* unused (the proxy runs on the host); kept for callers */
  const char *agent_image; /* NULL: policy filesystem.image, else airlock-agent:local */
  bool egress_internal;    /* unused: there is no egress network (the proxy runs on the host) */
  const char *run_id;      /* NULL: random */
  /* Where the agent's output goes, streamed while it runs (the attach
   * stream, demultiplexed; a reader that goes away only drops output).
   * 0 means the default: our stdout (1) and stderr (2). */
  int stdout_fd;
  int stderr_fd;
  /* The proxy's decisions (JSON lines, at most ~8 MiB: the first ones of a
   * flood) are copied here after the agent has stopped; 0 or -1: dropped. */
  int decisions_fd;
  /* Set (when not NULL) if the decisions were cut at their cap or could not
   * be read at all. */
  bool *decisions_truncated;
  /* Set (when not NULL) when the run's limit ended the agent (the status is
   * then 124; an agent that exits 124 itself does not set it). */
  bool *timed_out;
  /* Set (when not NULL) to the signal's number when SIGINT, SIGTERM, SIGHUP
   * or SIGQUIT ended the run (the status is then 128+N); else left alone. */
  int *stopped_by;
  /* Ignored with a warning: the proxy runs on the host and reaches what the
   * host reaches (it was the proxy container's egress network). */
  const char *egress_network;
  /* Files to place in the agent container before it starts, as
   * NAME=CONTENT pairs (NAME [A-Za-z0-9._-]{1,64}, CONTENT valid UTF-8, at
   * most 1 MiB): each becomes /tmp/airlock/<NAME> (0444) through the /bin/sh
   * prologue, from the container's environment (in pieces of 64 KiB). Used
   * for the CA bundle (never for secrets). NULL: none. */
  char *const *files;
  /* Called once the agent has started and its secrets have been written
   * (e.g. to wipe the caller's copies); NULL: none. */
  void (*after_start)(void *ctx);
  void *after_start_ctx;
  /* Sealed credentials: the forge gateway's hand-off (gateway.h), set on
   * the egress proxy's listener exactly as for the native sandbox (the
   * proxy runs on the host); borrowed; NULL: none. */
  const al_proxy_handoff *handoff;
  /* Bytes the proxy's decisions may take in decisions_fd (proxy/decisions.h);
   * 0: 8 MiB. */
  uint64_t decisions_cap;
  /* The host path of airlock-shim (src/shim/), bound read-only into the
   * agent container as its PID 1. NULL: $AIRLOCK_LIBEXEC_DIR/airlock-shim,
   * else beside /proc/self/exe, else ../libexec/airlock/ from there. */
  const char *shim_path;
  /* Tests only, the positive control of the probe: the agent container
   * WITHOUT airlock's hardening (root, Docker's default capabilities and
   * seccomp profile, writable root, no no-new-privileges, the engine's
   * /sys). Networks stay as configured. Never reachable from a policy. */
  bool control_unhardened;
} al_docker_opts;

/* One run on the engine (Engine API v1.41,
 * https://docs.docker.com/engine/api/v1.41/): one hardened agent container,
 * NetworkMode none, whose PID 1 is airlock-shim (src/shim/shim.c); with a
 * network section the shim makes the proxy's listener at 127.0.0.1:3128 in
 * the container's network namespace and hands it over a Unix socket bound
 * into that container only (dockerdoor.h, SO_PEERCRED checked), and the
 * egress proxy runs on the host, forked and confined as for the native
 * sandbox (run.h al_run_start_proxy_capped), its decisions written to
 * decisions_fd directly. Attached before its start, its secrets written on
 * stdin, its output streamed. The shim ends the container at the limit
 * plus a grace (its --deadline) if we die; the proxy dies with us
 * (PR_SET_PDEATHSIG). At the end (exit, limit, failure, or
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT) the agent is stopped, then the proxy, and
 * the container is removed. Never pulls an image; makes no network and no
 * volume.
 *
 * *status: the agent's exit status; 124 when the limit passed; 128+N when
 * signal N ended the run (then the return is 0); 125 when it could not be
 * started. Returns 0, or -1 with err: ECONNREFUSED (no engine), ENOENT (an
 * image or the policy file missing), EINVAL (a bad argument, variable or
 * file name), E2BIG (a file too big), EPROTO (an answer we cannot use),
 * ETIMEDOUT/EIO (the engine). Installs handlers for SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT and ignores SIGPIPE for the call, restoring them after;
 * keeps process-wide state, so one call at a time. */
int al_docker_run(const al_docker_opts *o, int *status, al_error *err);

/* `airlock run --backend docker` after its options are parsed: load the
 * policy, open --log FILE (0600, appended, O_NOFOLLOW) or count the
 * decisions in a capped memfd (run.h al_run_decisions_memfd; without a
 * network section, or when the memfd fails, they go to stderr), run
 * (al_docker_run), count. rq->relay_log_path is not used. res->status: 2
 * when the policy or --log is refused, else al_docker_run's. 0, or -1 with
 * err ("--log FILE: ..." for the log). */
struct al_run_request;
struct al_run_result;
int al_docker_run_request(const struct al_run_request *rq, struct al_run_result *res,
                          al_error *err);

#endif
