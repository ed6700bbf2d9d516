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
