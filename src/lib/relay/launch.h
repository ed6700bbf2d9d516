/* The supervisor's side of the model relay: start `airlock relay` in its
 * own, smaller sandbox for one run, and stop it (issue #10).
 *
 * Shape (DESIGN.md §3):
 *   agent sandbox netns: 127.0.0.1:8080 ──(fd 0 of the relay)──► relay sandbox
 *   relay sandbox netns: 127.0.0.1:3128 ──► the run's egress proxy, whose
 *     policy for this listener allows exactly relay.host:relay.port (TLS)
 * The relay sandbox's command is the sibling `airlock-net relay` binary,
 * bound read-only; it gets the listening socket of the agent's namespace
 * as its stdin, the relay section as --config-json, its log as stdout and
 * the key as the environment variable AIRLOCK_RELAY_KEY (read from
 * relay.key_file by the supervisor, or with `relay.key: broker` the
 * `model_key` secret of the run's broker lease handed over by `airlock
 * ticket`; wiped from the supervisor's memory as soon as the sandbox runs;
 * never in the agent's sandbox, never on a command line, never logged). */
#ifndef AL_RELAY_LAUNCH_H
#define AL_RELAY_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "policy/policy.h"

/* The broker secret `relay.key: broker` takes the key from. */
#define AL_RELAY_BROKER_SECRET "model_key"

typedef struct al_relay_proc al_relay_proc;

typedef struct al_relay_start_opts {
  const al_policy *policy; /* the run's policy, with a relay section; borrowed */
  int agent_listener;      /* listening socket at 127.0.0.1:8080 in the agent's netns; borrowed
                              (the relay sandbox gets its own copy) */
  int log_fd;              /* > 2: where the relay writes its JSON lines; borrowed */
  const char *run_id;      /* borrowed */
  bool quiet;
  /* With `relay.key: broker`: the key's value (the lease's `model_key`),
   * NUL-terminated, borrowed; al_relay_start wipes it in place
   * (explicit_bzero) once the relay sandbox started or failed to start.
   * Ignored (and left alone) with relay.key_file. */
  char *key;
} al_relay_start_opts;

/* Read the key (relay.key_file: a regular file, not a symlink, owned by
 * the caller's euid, no group/other permission bits, at most 1 KiB, one
 * line of printable ASCII; or o->key with `relay.key: broker`, the same
 * shape, EINVAL when missing), build the relay's own policy, and start the
 * relay sandbox. On success *out owns the sandbox. Errors: EPERM for a key
 * file with loose permissions or the wrong owner, EINVAL for a bad key,
 * the errno of the failing call otherwise. Requires the caller to have
 * blocked signals (al_sandbox_block_signals). Nothing runs after a failure. */
int al_relay_start(const al_relay_start_opts *o, al_relay_proc **out, al_error *err);

/* The relay sandbox's listening socket at 127.0.0.1:3128 (its egress), and
 * the policy the egress proxy must apply to it (allow: the model API host
 * only). Both owned by the relay process handle. */
int al_relay_proxy_listener(const al_relay_proc *rp);
const al_policy *al_relay_proxy_policy(const al_relay_proc *rp);

/* The policy of the relay's own egress listener, derived from p's `relay`
 * section: allow only the model API host:port (TLS), with its pin and the
 * network's resolver, timeouts from the relay section. Used by the native
 * relay sandbox and by `airlock proxy --relay-egress` (the Compose
 * rendering's relay-proxy service). *out is owned by the caller
 * (al_policy_free). EINVAL when p has no relay section. */
int al_relay_egress_policy(const al_policy *p, al_policy **out, al_error *err);

/* SIGTERM, then SIGKILL, the relay sandbox; reap; free. NULL is a no-op. */
void al_relay_stop(al_relay_proc *rp);

/* NAME=VALUE entries the agent gets when the policy has a relay section:
 * ANTHROPIC_BASE_URL, OPENAI_BASE_URL, placeholder API keys (the SDKs
 * refuse to start without one; the relay drops them) and NO_PROXY for
 * loopback. NULL-terminated, static. */
const char *const *al_relay_agent_env(void);

#endif
