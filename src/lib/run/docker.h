/* The docker backend: the seed's design on a Docker engine, driven over the
 * Engine API's Unix socket (libcurl; net_sources, airlock-net only).
 * docs/docker.md describes what one run makes and why. */
#ifndef AL_RUN_DOCKER_H
#define AL_RUN_DOCKER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"

typedef struct al_docker_opts {
  const al_policy *policy; /* borrowed; policy->source must name a readable file when the
                              policy has a network section (bound into the proxy) */
  char *const *argv;       /* command run in the agent container; each argument valid UTF-8 */
  char *const *env;        /* extra NAME=VALUE (tokens), NULL-terminated or NULL; borrowed.
                              Given to the agent on its stdin (read by a /bin/sh prologue),
                              never in the container's configuration, never logged. NAME:
                              [A-Za-z_][A-Za-z0-9_]*, VALUE one line */
  uint64_t timeout_ms;     /* 0: the policy's wall limit */
  const char *socket_path; /* NULL: /var/run/docker.sock (or $DOCKER_HOST unix://...) */
  const char *proxy_image; /* NULL: airlock-proxy:local */
  const char *agent_image; /* NULL: policy filesystem.image, else airlock-agent:local */
  bool egress_internal;    /* tests: make the proxy's egress network internal too */
  const char *run_id;      /* NULL: random */
  /* Where the agent's output goes, streamed while it runs (the attach
   * stream, demultiplexed; a reader that goes away only drops output).
   * 0 means the default: our stdout (1) and stderr (2). */
  int stdout_fd;
  int stderr_fd;
  /* The proxy's decisions (JSON lines, at most ~8 MiB: the first ones of a
   * flood) are copied here after the agent has stopped; 0 or -1: dropped. */
  int audit_fd;
  /* Set (when not NULL) if the decisions were cut at their cap or could not
   * be read at all. */
  bool *decisions_truncated;
  /* Set (when not NULL) when the run's limit ended the agent (the status is
   * then 124; an agent that exits 124 itself does not set it). */
  bool *timed_out;
  /* Set (when not NULL) to the signal's number when SIGINT, SIGTERM, SIGHUP
   * or SIGQUIT ended the run (the status is then 128+N); else left alone. */
  int *stopped_by;
  /* An existing network (name or id) for the proxy's egress side instead
   * of a network created for the run; it is not removed afterwards. Tests
   * use it to put the test forge on the proxy's side. NULL: create one. */
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
  /* Sealed credentials (docs/docker.md): the host path of the forge
   * gateway's Unix SOCK_SEQPACKET socket (gateway.h, al_gateway_listen),
   * bound read-only into the proxy container only, and the host:port pairs
   * (NULL-terminated, at most 4) whose CONNECTs the proxy hands to it.
   * Once the proxy holds the agent's listener, proxy_ready is called with
   * the proxy container's pid on the host (State.Pid); it must adopt the
   * proxy's connection (al_gateway_adopt) or fail the run. NULL: none. */
  const char *handoff_socket;
  char *const *handoff_hosts;
  int (*proxy_ready)(void *ctx, int proxy_pid, al_error *err);
  void *proxy_ready_ctx;
  /* Tests only, the positive control of the probe: the agent container
   * WITHOUT airlock's hardening (root, Docker's default capabilities and
   * seccomp profile, writable root, no no-new-privileges, the engine's
   * /sys). Networks stay as configured. Never reachable from a policy. */
  bool control_unhardened;
} al_docker_opts;

/* One run on the engine (Engine API v1.41,
 * https://docs.docker.com/engine/api/v1.41/): with a network section an
 * egress network (or o->egress_network), a tmpfs hand-off volume and the
 * proxy container on it; always the holder container (PID 1 and owner of
 * the loopback-only network namespace of the agent; with a network it
 * makes the proxy's listener there and hands it over); then the hardened
 * agent container in the holder's namespaces, attached before its start,
 * its secrets written on stdin, its output streamed. The proxy and the
 * holder stop by themselves after the limit plus a grace (--deadline), so
 * nothing keeps running if we die. At the end (exit, limit, failure, or
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT) the agent is stopped, the decisions are
 * copied, and every container, network and volume of the run is removed.
 * Never pulls an image.
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

#endif
