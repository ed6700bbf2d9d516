/* `airlock serve`: the service (docs/serve.md).
 *
 *   forge ──webhook──► listener (HMAC, size cap, delivery de-dup, strict parse)
 *                          │ accepted: one row, state queued (queue.h)
 *   airlock serve enqueue ─┤
 *                          ▼
 *   scheduler (main thread, signalfd + a 250 ms tick)
 *     1 next runnable row (caps: global, per repository; backoff)
 *     2 trigger check through the broker (check.h): the sender's permission,
 *       an open PR from airlock/<ticket>-*  ── refused / succeeded ──► done
 *     3 fork + exec `airlock ticket REPO#N -p POLICY --record ...` in its
 *       own process group, PR_SET_PDEATHSIG = SIGTERM, output to its log
 *     4 SIGCHLD: read the run record, classify (succeeded, failed, refused,
 *       transient → re-queued with backoff), store
 *   status listener: GET / (HTML), /runs.json, /runs/N, /runs/N/record, /metrics
 *
 * Privilege separation: this process holds no forge token and no App key.
 * Each run's tokens are leased by its child from the broker, which revokes
 * them when the child's connection closes, however the child ends; the
 * trigger check's read token never leaves the broker. A restart marks runs
 * that were running as interrupted (their old processes are stopped first)
 * and re-queues them or not per runs.on_interrupt; a re-queued run whose PR
 * is found open on the forge is not run again. */
#ifndef AL_SERVE_SERVE_H
#define AL_SERVE_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "serve/config.h"

/* Run the service until SIGTERM or SIGINT. Returns 0 after a clean stop
 * (children interrupted and recorded), -1 with err when it cannot start
 * (state directory, database, secret file, listeners). Logs JSON lines to
 * stderr. */
int al_serve_run(const al_serve_config *cfg, al_error *err);

/* `airlock serve enqueue`: add repo#number to the queue in cfg's state
 * directory as `sender` (e.g. "local:uid=1000"). The daemon picks it up
 * within a tick. Returns 0 (new row) or 1 (the ticket already has a
 * queued or running run: *id is that one), -1 with err (a repository the
 * service does not serve is EINVAL). */
int al_serve_enqueue(const al_serve_config *cfg, const char *target, const char *sender,
                     int64_t *id, al_error *err);

/* `airlock serve --gc`: apply cfg's retention (retention.max_age,
 * retention.max_rows) to the queue in cfg's state directory now
 * (al_queue_gc); *deleted: the rows deleted. Safe while the daemon runs
 * (SQLite's lock). -1 with err (no queue: ENOENT naming the file). */
int al_serve_gc(const al_serve_config *cfg, int64_t *deleted, al_error *err);

#endif
