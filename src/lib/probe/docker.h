/* `airlock probe --backend docker`: the probe catalogue inside the docker
 * backend's agent container (run/docker.h), judged like the native run
 * (docs/probes.md, "The docker backend"). net_sources: airlock-net only. */
#ifndef AL_PROBE_DOCKER_H
#define AL_PROBE_DOCKER_H

#include <stdbool.h>

#include "common/error.h"
#include "probe/probe.h"

typedef struct al_probe_docker_opts {
  al_probe_opts probe;        /* policy, only_group, preflight, timeout_ms; unconfined and
                                 self_exe are not used */
  const char *proxy_image;    /* unused (the proxy runs on the host) */
  const char *agent_image;    /* NULL: policy filesystem.image, else airlock-agent:local;
                                 must hold /usr/bin/airlock (scripts/docker-images.sh) */
  const char *socket_path;    /* NULL: /var/run/docker.sock or $DOCKER_HOST unix://... */
  bool egress_internal;       /* unused: no egress network (al_docker_opts) */
  const char *egress_network; /* ignored with a warning (al_docker_opts.egress_network) */
  /* The run's id (its container's airlock.run label), 16 lowercase hex;
   * NULL: the probe's nonce. */
  const char *run_id;
  /* Tests only, the positive control: the agent container without
   * airlock's hardening (al_docker_opts.control_unhardened). */
  bool control_unhardened;
} al_probe_docker_opts;

/* Run `/usr/bin/airlock probe --inside` in the agent container that
 * al_docker_run makes from the policy (and its egress proxy on the host
 * when the policy has a network section), with the context in
 * $AIRLOCK_PROBE_CONTEXT, then judge its results together with the host's
 * evidence exactly as al_probe_run does (canaries on the host's loopback,
 * processes and files left on the host after the containers are removed).
 * Returns 0 with *out filled (free with al_probe_report_free), or -1 with
 * err when the run could not be set up (engine unreachable, image missing,
 * no result at all from inside) or was interrupted by SIGINT/SIGTERM
 * (everything of the run removed all the same). Probes without a result
 * (e.g. the wall-clock limit cut the run) are `inconclusive`. Forks the
 * canary process, gone on return; installs SIGINT/SIGTERM handlers for the
 * run (al_docker_run). */
int al_probe_run_docker(const al_probe_docker_opts *o, al_probe_report *out, al_error *err);

#endif
