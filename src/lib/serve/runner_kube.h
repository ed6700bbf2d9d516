/* `runs.runner: kubernetes` (issue #32, docs/scale.md): a run as the
 * per-run objects of `airlock render kubernetes --run-id`, created, watched
 * and deleted through the API server by `airlock serve kube-run`, a child
 * of the service in place of `airlock ticket` (runner_kube.c says what it
 * does, and what it does not: sealed runs are refused, no token is
 * delivered into the pod). */
#ifndef AL_SERVE_RUNNER_KUBE_H
#define AL_SERVE_RUNNER_KUBE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "serve/config.h"

struct al_serve_kube_args {
  const char *target;   /* "OWNER/REPO#N" or "OWNER/REPO#KEY" */
  const char *policy;   /* the repository's policy file */
  const char *record;   /* where the run record is written (0600, whole or not at all) */
  const char *instance; /* the queue's instance id (al_queue_claim) */
  int64_t row;          /* the queue row */
};

/* The run id of a row: "s" + the instance's first 8 [0-9a-z] + "-" + row
 * (at most 40 bytes: it ends every object's name). The same for every
 * attempt of the row, on every replica sharing the queue: what makes a new
 * leader's attempt adopt a dead leader's Job (409) instead of making a
 * second. 0, or -1 when it does not fit cap or 40 bytes. */
int serve_kube_run_id(const char *instance, int64_t row, char *out, size_t cap);

/* Run one row's run as Kubernetes objects (the API connection and
 * namespace of cfg's election.* keys) and write its record to a->record.
 * Returns the child's exit status: 0 the Job completed, 1 it failed or an
 * object could not be made (the reason in the record's `error`), 3
 * refused (a sealed policy: record `refused: true`, nothing asked of the
 * broker, no object created); -1 with err when the record could not be
 * written. */
int al_serve_kube_run(const al_serve_config *cfg, const struct al_serve_kube_args *a,
                      al_error *err);

/* The child's argv (serve.c's spawn, in place of `airlock ticket`'s):
 * AIRLOCK serve kube-run -c CONFIG --row ID --instance INST -p POLICY
 * --record RECORD TARGET, NULL-terminated, in argv (>= 16 slots); buf holds
 * the row's digits and the config's absolute path. */
struct serve;
void serve_kube_argv(const struct serve *s, int64_t row, const char *target, const char *policy,
                     const char *record, char buf[2][4096], const char **argv);

#endif
