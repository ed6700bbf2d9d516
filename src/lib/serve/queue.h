/* The service's durable queue: one SQLite database (WAL, synchronous=FULL)
 * in the state directory, one row per run.
 *
 *   queued ──(trigger check: permission, open PR)──► refused
 *     │  └──────────────────────────────────────────► succeeded (its PR was found)
 *     ▼
 *   running ──► succeeded | failed | refused (the run's audit or broker refused)
 *     │   └──► queued again, not_before = now + backoff (transient cause, attempts left)
 *     └─(the service stopped or died)─► interrupted ──► queued (on_interrupt: requeue)
 *
 * At most one row per ticket is queued or running (a partial unique index,
 * so two processes cannot race past it). Every change is one transaction;
 * a row's history is in `events`. Webhook deliveries are remembered by id
 * and by the SHA-256 of their body (a replay under a new id is still a
 * replay). Thread-safe: one connection behind a mutex; other processes
 * (`airlock serve enqueue`) open their own and wait on the lock up to 5 s. */
#ifndef AL_SERVE_QUEUE_H
#define AL_SERVE_QUEUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

typedef struct al_queue al_queue;

/* The schema this code writes (PRAGMA user_version); al_queue_open
 * migrates an older database in place and refuses a newer one. */
#define AL_QUEUE_SCHEMA 4

/* A queued or running row, as the scheduler sees it. */
typedef struct al_queue_run {
  int64_t id;
  char repo[256];       /* OWNER/REPO, or a GitLab project's full path (up to 255) */
  unsigned long number; /* the forge issue's number, or the N of key */
  char key[48];         /* a Jira or Linear ticket's key ("PROJ-7"), else "" */
  char trigger[16];     /* label | comment | enqueue | assignee | delegate */
  char sender[104];     /* forge login (a GitLab username: up to 100), or "local:uid=N" */
  int attempts;         /* runs started so far */
  bool interrupted;     /* was interrupted at least once */
  pid_t pid;            /* running: the child, else 0 */
  char pid_start[32];   /* running: the child's start time (/proc/PID/stat field 22) */
  char instance[40];    /* running: the instance that started it (al_queue_claim) */
  char fence[300];      /* running: the attempt's fencing token */
  char pid_ns[64];      /* running: its PID namespace ("pid:[N]"), "" when unknown */
} al_queue_run;

/* Open (create) the database at path (mode 0600), checked (PRAGMA
 * quick_check) and migrated to AL_QUEUE_SCHEMA. -1 with err: EIO (a
 * damaged file: the message names it and says what to do; or SQLite's
 * message), EPROTO (a schema newer than this code). */
int al_queue_open(const char *path, al_queue **out, al_error *err);
void al_queue_close(al_queue *q);

/* The queue can be read now (every table): 0, or -1 with why (one line),
 * for /healthz and the status page. */
int al_queue_health(al_queue *q, char *why, size_t n);

/* Add a run for repo#number. Returns 0 and *id for a new row, 1 and the
 * active row's *id when the ticket already has a queued or running run
 * (nothing added), -1 with err. delivery may be NULL. */
int al_queue_enqueue(al_queue *q, const char *repo, unsigned long number, const char *trigger,
                     const char *sender, const char *delivery, int64_t *id, al_error *err);
/* The same for a Jira or Linear ticket: key "PROJ-7" (NULL or "": none),
 * number its N (as al_queue_enqueue_limited). */
int al_queue_enqueue_key(al_queue *q, const char *repo, unsigned long number, const char *key,
                         const char *trigger, const char *sender, const char *delivery, int64_t *id,
                         al_error *err);

/* The intake's limits (config intake.*). */
typedef struct al_queue_limits {
  uint64_t max_queued; /* queued rows at most */
  uint64_t per_sender; /* rows created by one sender (any repository) within window_ms */
  uint64_t per_repo;   /* rows created for one repository within window_ms */
  uint64_t window_ms;
} al_queue_limits;

typedef enum al_queue_refusal {
  AL_QUEUE_ADMITTED,
  AL_QUEUE_FULL,         /* max_queued: answer 503 */
  AL_QUEUE_SENDER_LIMIT, /* per_sender: answer 429 */
  AL_QUEUE_REPO_LIMIT,   /* per_repo: answer 429 */
} al_queue_refusal;

/* al_queue_enqueue behind the limits, all in one transaction (two
 * listener threads cannot both pass a count): 1 and the active row's *id
 * when the ticket has a queued or running row (no limit is spent), else 2
 * with *refusal and err (ENOSPC: full; EAGAIN: a rate limit) saying which
 * limit and the count, else 0 and the new row's *id; -1 with err. Rows
 * count whatever became of them (a refused trigger still counts). key
 * (may be NULL or ""): a Jira or Linear ticket's key, number then its N
 * (the repository's policy names the one project the key is in). */
int al_queue_enqueue_limited(al_queue *q, const al_queue_limits *l, const char *repo,
                             unsigned long number, const char *key, const char *trigger,
                             const char *sender, const char *delivery, int64_t *id,
                             al_queue_refusal *refusal, al_error *err);

/* The permission the last trigger check of sender on repo answered, when
 * it was made within max_age_ms (column checked_ms): 1 with permission
 * filled, 0 when none (or max_age_ms is 0). */
int al_queue_cached_permission(al_queue *q, const char *repo, const char *sender,
                               uint64_t max_age_ms, char *permission, size_t n);

/* Retention: delete finished rows (every state but queued and running)
 * that finished (or, never started, were created) more than max_age_ms
 * ago, and those past the newest max_rows finished ones, with their
 * events (0: no such rule). Deliveries are kept (the replay check reads
 * them); their link to a deleted row is cleared. *deleted: rows deleted.
 * One transaction. -1 with err. */
int al_queue_gc(al_queue *q, uint64_t max_age_ms, uint64_t max_rows, int64_t *deleted,
                al_error *err);

/* Remember a delivery. Returns 0 when new, 1 when its id or body digest
 * was seen before (a replay: nothing stored), -1 with err. */
int al_queue_delivery_new(al_queue *q, const char *delivery, const char *body_sha256,
                          const char *event, al_error *err);
/* The outcome of a delivery for the status page ("queued run 7",
 * "ignored: ...", "refused: ..."). */
void al_queue_delivery_outcome(al_queue *q, const char *delivery, const char *outcome, int64_t run);

/* The next runnable queued row: not_before passed, fewer than max_repo
 * rows of its repository running and fewer than max_all running in all.
 * Oldest first. Returns 1 with out, 0 when none, -1 with err. */
int al_queue_next(al_queue *q, uint64_t now_ms, unsigned max_all, unsigned max_repo,
                  al_queue_run *out, al_error *err);

/* Up to max runnable queued rows at once, oldest first, as al_queue_next
 * would hand them out one by one if each were started: the caps count
 * the running rows plus the rows already picked. Returns the count (0..max)
 * or -1 with err. */
int al_queue_next_batch(al_queue *q, unsigned max_all, unsigned max_repo, al_queue_run *out,
                        int max, al_error *err);

/* The rows in state running (for recovery at start-up). Returns the count
 * (up to max) or -1. */
int al_queue_running(al_queue *q, al_queue_run *out, int max, al_error *err);

/* Record the trigger check on a queued row: the sender's permission as the
 * forge answered it, and the detail line. */
int al_queue_set_check(al_queue *q, int64_t id, const char *permission, const char *detail,
                       al_error *err);
/* An attempt as it starts. */
typedef struct al_queue_attempt {
  pid_t pid;
  const char *pid_start; /* /proc/PID/stat field 22 */
  const char *pid_ns;    /* readlink /proc/self/ns/pid of the starter */
  const char *record, *log;
  const char *instance; /* al_queue_claim's */
  const char *fence;    /* the attempt's fencing token */
} al_queue_attempt;
/* queued → running (attempts + 1). */
int al_queue_start(al_queue *q, int64_t id, const al_queue_attempt *a, al_error *err);

/* The daemon's claim on the file: the instance id stored in it (meta)
 * with the file's identity (st_dev:st_ino). A file whose identity is not
 * the one stored is a copy (or a restore): it gets a new instance id, and
 * the rows that were running are the old instance's (*foreign gets its
 * id, return 1); else 0. instance, foreign: 40 bytes. -1 with err. */
int al_queue_claim(al_queue *q, const char *path, char *instance, char *foreign, al_error *err);

/* Fence a running attempt: its token `old` is replaced by `token` (the
 * attempt the row runs is no longer `old`'s). 0 when replaced, 1 when the
 * row no longer holds `old` (someone else fenced or finished it), -1. */
int al_queue_fence(al_queue *q, int64_t id, const char *old, const char *token, al_error *err);

/* What a finished attempt left behind. */
typedef struct al_queue_result {
  const char *state;      /* succeeded | failed | refused | interrupted | queued (a retry) */
  int exit_status;        /* the child's, or -1 */
  const char *reason;     /* one line: why */
  const char *pr_url;     /* or NULL */
  const char *run_id;     /* the record's run_id, or NULL */
  const char *denials;    /* JSON object {reason: count} of the proxy's denials, or NULL */
  int tokens_unconfirmed; /* tokens in the record whose revocation was not confirmed */
  uint64_t not_before_ms; /* state queued: earliest start */
  bool interrupted;       /* the attempt was interrupted (also when re-queued) */
  const char *fence;      /* the attempt's token: the row must still hold it (NULL: no check) */
  int fenced;             /* 1: this attempt was fenced (counted in the row) */
} al_queue_result;
/* Finish (or re-queue) a queued or running row. With r->fence, only while
 * the row still holds that token: else -1 with ESTALE (the attempt was
 * fenced; nothing changed). */
int al_queue_finish(al_queue *q, int64_t id, const al_queue_result *r, al_error *err);

/* Finished rows whose denials column is NULL and that have a record:
 * [{id, record}] (at most limit). New reference. */
json_t *al_queue_without_denials(al_queue *q, int limit);
/* Set a finished row's denials (JSON text {reason: count}). */
int al_queue_set_denials(al_queue *q, int64_t id, const char *denials, al_error *err);

/* Append a line to a row's history. */
void al_queue_event(al_queue *q, int64_t id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The last `limit` rows (newest first) as a JSON array of objects with
 * every column, and each row's events. New reference, or NULL. */
json_t *al_queue_list(al_queue *q, int limit);
/* One row (with events) or NULL. */
json_t *al_queue_get(al_queue *q, int64_t id);
/* Counts per state, durations per final state, denials by reason,
 * tokens unconfirmed, queue depth: the metrics' source. New reference. */
json_t *al_queue_stats(al_queue *q);
/* Recent deliveries (newest first). */
json_t *al_queue_deliveries(al_queue *q, int limit);

#endif
