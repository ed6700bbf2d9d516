/* Leader election for several `airlock serve` replicas (docs/scale.md):
 * the holder of a coordination.k8s.io/v1 Lease dequeues, the others only
 * take webhooks and enqueue. The algorithm is client-go's leaderelection
 * (k8s.io/client-go/tools/leaderelection), written from its description:
 *
 * - every `retry`, read the Lease; absent: create it holding it (the API
 *   answers 409 AlreadyExists to the loser of a race);
 * - held by another identity whose record we saw change less than
 *   `duration` ago (by our own clock: no comparison of two machines'
 *   clocks): stand by;
 * - otherwise (ours, empty, or not renewed for `duration`): update it with
 *   the resourceVersion we read; a 409 Conflict means someone else wrote
 *   first: stand by;
 * - a leader that has not renewed for `renew_deadline` (< duration) since
 *   the request that last succeeded was *sent* stops being leader, so it
 *   stops before any standby may take the Lease.
 */
#ifndef AL_SERVE_ELECTION_H
#define AL_SERVE_ELECTION_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "kube/kube.h"
#include "serve/config.h"

struct serve_election {
  al_kube k;
  char ns[254], name[254], id[254];
  uint64_t duration_ms, renew_ms, retry_ms;
  bool leader;
  uint64_t renewed_ms; /* when the request that last renewed was sent */
  uint64_t next_ms;    /* the next attempt */
  char seen_holder[254], seen_renew[40];
  uint64_t seen_ms;     /* when (holder, renewTime) last changed, by our clock */
  al_kube_lease cur;    /* the Lease as last read or written */
  char last_error[256]; /* for the log: reported once per change */
};

/* From c's election.* keys. -1 with err (EINVAL: names, API address). */
int serve_election_init(struct serve_election *e, const al_serve_config *c, al_error *err);

/* One attempt when due (now_ms: al_now_ms()); returns whether this
 * replica is the leader now. Never blocks longer than the API timeout. */
bool serve_election_step(struct serve_election *e, uint64_t now_ms);

/* Leader and within renew_deadline of its last renewal. */
bool serve_election_leading(const struct serve_election *e, uint64_t now_ms);

/* A leader that stops: hand the Lease over at once (holderIdentity "",
 * as client-go's ReleaseOnCancel). Best effort. */
void serve_election_release(struct serve_election *e);

#endif
