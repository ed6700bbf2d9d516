/* The docker backend: the seed's design on a Docker engine, driven over the
 * Engine API's Unix socket (libcurl; net_sources, airlock-net only). */
#ifndef AL_RUN_DOCKER_H
#define AL_RUN_DOCKER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"

typedef struct al_docker_opts {
  const al_policy *policy; /* borrowed; policy->source must name a readable file when the
                              policy has a network section (bound into the proxy) */
  char *const *argv;       /* command run in the agent container */
  char *const *env;        /* extra NAME=VALUE (tokens), NULL-terminated or NULL; borrowed;
                              sent once in the create request, never logged */
  uint64_t timeout_ms;     /* 0: the policy's wall limit */
  const char *socket_path; /* NULL: /var/run/docker.sock (or $DOCKER_HOST unix://...) */
  const char *proxy_image; /* NULL: airlock-proxy:local */
  const char *agent_image; /* NULL: policy filesystem.image, else airlock-agent:local */
  bool egress_internal;    /* tests: make the proxy's egress network internal too */
  const char *run_id;      /* NULL: random */
  /* Where the agent's output goes, streamed while it runs (the engine's
   * multiplexed log stream, demultiplexed). 0 means the default: our
   * stdout (1) and stderr (2); set both explicitly. */
  int stdout_fd;
  int stderr_fd;
  /* The proxy's decisions (its JSON lines, from the proxy container's
   * stdout) are copied here after the run; 0 or -1: dropped. */
  int audit_fd;
  /* An existing network (name or id) for the proxy's egress side instead
   * of a network created for the run; it is not removed afterwards. Tests
   * use it to put the test forge on the proxy's side. NULL: create one. */
  const char *egress_network;
  /* Files to place in the agent container before it starts, as
   * NAME=CONTENT pairs in env form: each becomes /tmp/airlock/<NAME> (0444)
   * through a wrapper (`sh -c`) that writes them from the environment and
   * execs argv; needs /bin/sh in the image. Used for the forge's CA
   * certificate (never for secrets). NULL: none, argv runs directly. */
  char *const *files;
  /* Tests only, the positive control of the probe: the agent container
   * WITHOUT airlock's hardening (root, Docker's default capabilities and
   * seccomp profile, writable root, no no-new-privileges). Networks stay as
   * configured. Never reachable from a policy. */
  bool control_unhardened;
} al_docker_opts;

/* Create, per run: an internal network (Internal: true) and an egress
 * network; the proxy container (`airlock proxy`) on both; the agent
 * container on the internal one only (read-only root, tmpfs /workspace and
 * /tmp with the policy's sizes, CapDrop ALL, no-new-privileges, airlock's
 * seccomp profile, uid 1000, DNS forwarding disabled, no host path). Start,
 * wait (timeout: kill, status 124), copy the agent's output to our stdout
 * and stderr, then remove every container and network of the run, also on
 * failure and on SIGINT/SIGTERM. Engine API v1.41:
 * https://docs.docker.com/engine/api/v1.41/. *status gets the agent's exit
 * status (125 when it could not be started). Returns 0 or -1 with err. */
int al_docker_run(const al_docker_opts *o, int *status, al_error *err);

#endif
