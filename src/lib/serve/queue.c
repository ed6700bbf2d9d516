/* The durable queue on SQLite: see queue.h for the state machine. */
#include "serve/queue.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/queue_int.h"

static int db_error(al_queue *q, al_error *err, const char *what)
{
  return al_error_set(err, EIO, "queue: %s: %s", what, sqlite3_errmsg(q->db));
}

/* An UPDATE of one row that changed none: SQLite's error when it failed,
 * else the row's state (it is no longer queued or running: someone else
 * finished it), never SQLite's "not an error". Lock held. */
static int not_active(al_queue *q, int rc, int64_t id, const char *what, al_error *err)
{
  if (rc != SQLITE_DONE)
    return db_error(q, err, what);
  sqlite3_stmt *st = NULL;
  char state[32] = "";
  if (sqlite3_prepare_v2(q->db, "SELECT state FROM runs WHERE id = ?", -1, &st, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      snprintf(state, sizeof state, "%s", (const char *)sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  if (!state[0])
    return al_error_set(err, ENOENT, "queue: %s: run %lld: no such run", what, (long long)id);
  return al_error_set(err, ESTALE, "queue: %s: run %lld is %s, no longer queued or running", what,
                      (long long)id, state);
}

/* One bound parameter. Made only by q_text() and q_int(): each takes its
 * column's C type, so the compiler checks every argument (a char * given
 * to q_int is a constraint violation, an error under -Werror), where the
 * format-string binder this replaces read a pointer as an integer. */
typedef struct qarg {
  bool text;
  const char *s; /* text: NULL binds NULL */
  int64_t i;
} qarg;

static inline qarg q_text(const char *s)
{
  return (qarg){.text = true, .s = s};
}

static inline qarg q_int(int64_t i)
{
  return (qarg){.text = false, .i = i};
}

/* Prepare sql and bind args[0..n) to ?1..?n; NULL when the statement does
 * not prepare or its parameter count is not n (a mismatch between the SQL
 * and the call is refused, never bound short). Lock held. */
static sqlite3_stmt *prep(al_queue *q, const char *sql, const qarg *args, size_t n)
{
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
    return NULL;
  if ((size_t)sqlite3_bind_parameter_count(st) != n) {
    sqlite3_finalize(st);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    int idx = (int)i + 1;
    if (!args[i].text)
      sqlite3_bind_int64(st, idx, args[i].i);
    else if (args[i].s)
      sqlite3_bind_text(st, idx, args[i].s, -1, SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(st, idx);
  }
  return st;
}

/* Run one statement without results. Returns the sqlite3 code. Lock held. */
static int exec_args(al_queue *q, const char *sql, const qarg *args, size_t n)
{
  sqlite3_stmt *st = prep(q, sql, args, n);
  if (!st)
    return SQLITE_ERROR;
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}
#define QARGS(...)                                                                                 \
  ((const qarg[]){__VA_ARGS__}), (sizeof((const qarg[]){__VA_ARGS__}) / sizeof(qarg))
#define EXEC(q, sql, ...) exec_args((q), (sql), QARGS(__VA_ARGS__))

/* A wall clock in ms (al_now_ms is monotonic). */
static int64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* events.ms is wall-clock ms, as every other *_ms column. */
static void event_locked(al_queue *q, int64_t id, const char *what)
{
  EXEC(q, "INSERT INTO events(run, ms, what) VALUES(?, ?, ?)", q_int(id), q_int(wall_ms()),
       q_text(what));
}

int al_queue_enqueue(al_queue *q, const char *repo, unsigned long number, const char *trigger,
                     const char *sender, const char *delivery, int64_t *id, al_error *err)
{
  return al_queue_enqueue_key(q, repo, number, NULL, trigger, sender, delivery, id, err);
}

int al_queue_enqueue_key(al_queue *q, const char *repo, unsigned long number, const char *key,
                         const char *trigger, const char *sender, const char *delivery, int64_t *id,
                         al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int ret = -1;
  int rc = EXEC(q,
                "INSERT INTO runs(repo, number, ticket_key, state, trigger, sender, delivery,"
                " created_ms) VALUES(?, ?, ?, 'queued', ?, ?, ?, ?)",
                q_text(repo), q_int((int64_t)number), q_text(key && *key ? key : NULL),
                q_text(trigger), q_text(sender), q_text(delivery), q_int(wall_ms()));
  if (rc == SQLITE_DONE) {
    *id = sqlite3_last_insert_rowid(q->db);
    char what[200];
    snprintf(what, sizeof what, "queued (%s by %s)", trigger, sender);
    event_locked(q, *id, what);
    ret = 0;
  } else if (rc == SQLITE_CONSTRAINT) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db,
                           "SELECT id FROM runs WHERE repo = ? AND number = ? AND state IN "
                           "('queued','running')",
                           -1, &st, NULL) == SQLITE_OK) {
      sqlite3_bind_text(st, 1, repo, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 2, (int64_t)number);
      if (sqlite3_step(st) == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        ret = 1;
      }
      sqlite3_finalize(st);
    }
    if (ret < 0)
      db_error(q, err, "enqueue");
  } else {
    db_error(q, err, "enqueue");
  }
  pthread_mutex_unlock(&q->lock);
  return ret;
}

/* One integer from sql (its first column of its first row), or -1. Lock held. */
static int64_t scalar_args(al_queue *q, const char *sql, const qarg *args, size_t n)
{
  sqlite3_stmt *st = prep(q, sql, args, n);
  if (!st)
    return -1;
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}
#define SCALAR(q, sql, ...) scalar_args((q), (sql), QARGS(__VA_ARGS__))

int al_queue_enqueue_limited(al_queue *q, const al_queue_limits *l, const char *repo,
                             unsigned long number, const char *key, const char *trigger,
                             const char *sender, const char *delivery, int64_t *id,
                             al_queue_refusal *refusal, al_error *err)
{
  *refusal = AL_QUEUE_ADMITTED;
  pthread_mutex_lock(&q->lock);
  int ret = -1;
  int64_t now = wall_ms();
  int64_t since = now - (int64_t)l->window_ms;
  if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
    db_error(q, err, "enqueue");
    pthread_mutex_unlock(&q->lock);
    return -1;
  }
  /* an active row for the ticket: nothing is added, no limit is spent */
  int64_t active = SCALAR(q,
                          "SELECT coalesce((SELECT id FROM runs WHERE repo = ? AND number = ? AND"
                          " state IN ('queued','running')), 0)",
                          q_text(repo), q_int((int64_t)number));
  int64_t queued = scalar_args(q, "SELECT count(*) FROM runs WHERE state = 'queued'", NULL, 0);
  int64_t by_sender =
      SCALAR(q, "SELECT count(*) FROM runs WHERE sender = ? COLLATE NOCASE AND created_ms >= ?",
             q_text(sender), q_int(since));
  int64_t by_repo = SCALAR(q, "SELECT count(*) FROM runs WHERE repo = ? AND created_ms >= ?",
                           q_text(repo), q_int(since));
  if (active < 0 || queued < 0 || by_sender < 0 || by_repo < 0) {
    db_error(q, err, "enqueue");
  } else if (active > 0) {
    *id = active;
    ret = 1;
  } else if ((uint64_t)queued >= l->max_queued) {
    *refusal = AL_QUEUE_FULL;
    al_error_set(err, ENOSPC, "the queue is full (%lld queued, intake.max_queued %llu)",
                 (long long)queued, (unsigned long long)l->max_queued);
    ret = 2;
  } else if ((uint64_t)by_sender >= l->per_sender) {
    *refusal = AL_QUEUE_SENDER_LIMIT;
    al_error_set(err, EAGAIN,
                 "sender %s made %lld runs within intake.window (intake.per_sender %llu)", sender,
                 (long long)by_sender, (unsigned long long)l->per_sender);
    ret = 2;
  } else if ((uint64_t)by_repo >= l->per_repo) {
    *refusal = AL_QUEUE_REPO_LIMIT;
    al_error_set(err, EAGAIN,
                 "repository %s has %lld runs within intake.window (intake.per_repo %llu)", repo,
                 (long long)by_repo, (unsigned long long)l->per_repo);
    ret = 2;
  } else {
    int rc = EXEC(q,
                  "INSERT INTO runs(repo, number, ticket_key, state, trigger, sender, delivery,"
                  " created_ms) VALUES(?, ?, ?, 'queued', ?, ?, ?, ?)",
                  q_text(repo), q_int((int64_t)number), q_text(key && *key ? key : NULL),
                  q_text(trigger), q_text(sender), q_text(delivery), q_int(now));
    if (rc == SQLITE_DONE) {
      *id = sqlite3_last_insert_rowid(q->db);
      char what[200];
      snprintf(what, sizeof what, "queued (%s by %s)", trigger, sender);
      event_locked(q, *id, what);
      ret = 0;
    } else {
      db_error(q, err, "enqueue");
    }
  }
  if (ret >= 0 && sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    ret = db_error(q, err, "enqueue: commit");
  if (ret < 0)
    sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_cached_permission(al_queue *q, const char *repo, const char *sender,
                               uint64_t max_age_ms, char *permission, size_t n)
{
  if (max_age_ms == 0)
    return 0;
  pthread_mutex_lock(&q->lock);
  int ret = 0;
  sqlite3_stmt *st =
      prep(q,
           "SELECT permission FROM runs WHERE repo = ? AND sender = ? COLLATE NOCASE"
           " AND checked_ms >= ? AND permission IS NOT NULL AND permission != ''"
           " ORDER BY checked_ms DESC LIMIT 1",
           QARGS(q_text(repo), q_text(sender), q_int(wall_ms() - (int64_t)max_age_ms)));
  if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
    snprintf(permission, n, "%s", (const char *)sqlite3_column_text(st, 0));
    ret = 1;
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_gc(al_queue *q, uint64_t max_age_ms, uint64_t max_rows, int64_t *deleted,
                al_error *err)
{
  static const char finished[] = "state NOT IN ('queued','running')";
  *deleted = 0;
  pthread_mutex_lock(&q->lock);
  int ret = -1;
  if (sqlite3_exec(q->db,
                   "BEGIN IMMEDIATE; CREATE TEMP TABLE IF NOT EXISTS gc(id INTEGER PRIMARY KEY);"
                   " DELETE FROM temp.gc;",
                   NULL, NULL, NULL) != SQLITE_OK)
    goto fail;
  if (max_age_ms) {
    al_autofree char *sql =
        al_strdup_printf("INSERT OR IGNORE INTO temp.gc SELECT id FROM runs WHERE %s AND"
                         " coalesce(finished_ms, created_ms) < ?",
                         finished);
    if (EXEC(q, sql, q_int(wall_ms() - (int64_t)max_age_ms)) != SQLITE_DONE)
      goto fail;
  }
  if (max_rows) {
    al_autofree char *sql = al_strdup_printf(
        "INSERT OR IGNORE INTO temp.gc SELECT id FROM runs WHERE %s ORDER BY id DESC"
        " LIMIT -1 OFFSET ?",
        finished);
    if (EXEC(q, sql, q_int((int64_t)max_rows)) != SQLITE_DONE)
      goto fail;
  }
  /* deliveries stay (their ids and digests are the replay check); their
   * link to a deleted row is cleared */
  if (sqlite3_exec(q->db,
                   "DELETE FROM events WHERE run IN (SELECT id FROM temp.gc);"
                   " UPDATE deliveries SET run = NULL WHERE run IN (SELECT id FROM temp.gc);"
                   " DELETE FROM runs WHERE id IN (SELECT id FROM temp.gc);",
                   NULL, NULL, NULL) != SQLITE_OK)
    goto fail;
  *deleted = sqlite3_changes(q->db);
  if (sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    goto fail;
  ret = 0;
  goto out;
fail:
  db_error(q, err, "gc");
  sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
out:
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_delivery_new(al_queue *q, const char *delivery, const char *body_sha256,
                          const char *event, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int rc = EXEC(q, "INSERT INTO deliveries(id, body_sha256, event, received_ms) VALUES(?, ?, ?, ?)",
                q_text(delivery), q_text(body_sha256), q_text(event), q_int(wall_ms()));
  int ret = rc == SQLITE_DONE ? 0 : rc == SQLITE_CONSTRAINT ? 1 : db_error(q, err, "delivery");
  pthread_mutex_unlock(&q->lock);
  return ret;
}

void al_queue_delivery_outcome(al_queue *q, const char *delivery, const char *outcome, int64_t run)
{
  pthread_mutex_lock(&q->lock);
  EXEC(q, "UPDATE deliveries SET outcome = ?, run = ? WHERE id = ?", q_text(outcome), q_int(run),
       q_text(delivery));
  pthread_mutex_unlock(&q->lock);
}

static void fill_run(sqlite3_stmt *st, al_queue_run *r)
{
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(st, 0);
  snprintf(r->repo, sizeof r->repo, "%s", (const char *)sqlite3_column_text(st, 1));
  r->number = (unsigned long)sqlite3_column_int64(st, 2);
  snprintf(r->trigger, sizeof r->trigger, "%s", (const char *)sqlite3_column_text(st, 3));
  snprintf(r->sender, sizeof r->sender, "%s", (const char *)sqlite3_column_text(st, 4));
  r->attempts = sqlite3_column_int(st, 5);
  r->interrupted = sqlite3_column_int(st, 6) != 0;
  r->pid = (pid_t)sqlite3_column_int(st, 7);
  const unsigned char *ps = sqlite3_column_text(st, 8);
  snprintf(r->pid_start, sizeof r->pid_start, "%s", ps ? (const char *)ps : "");
  const unsigned char *in = sqlite3_column_text(st, 9);
  snprintf(r->instance, sizeof r->instance, "%s", in ? (const char *)in : "");
  const unsigned char *fe = sqlite3_column_text(st, 10);
  snprintf(r->fence, sizeof r->fence, "%s", fe ? (const char *)fe : "");
  const unsigned char *ns = sqlite3_column_text(st, 11);
  snprintf(r->pid_ns, sizeof r->pid_ns, "%s", ns ? (const char *)ns : "");
  const unsigned char *tk = sqlite3_column_text(st, 12);
  snprintf(r->key, sizeof r->key, "%s", tk ? (const char *)tk : "");
}

#define RUN_COLS                                                                                   \
  "id, repo, number, trigger, sender, attempts, interrupted, pid, pid_start, instance, fence,"     \
  " pid_ns, ticket_key"

int al_queue_next(al_queue *q, uint64_t now_ms, unsigned max_all, unsigned max_repo,
                  al_queue_run *out, al_error *err)
{
  (void)now_ms;
  pthread_mutex_lock(&q->lock);
  int ret = -1;
  sqlite3_stmt *st = NULL;
  const char *sql =
      "SELECT " RUN_COLS " FROM runs AS r WHERE state = 'queued' AND not_before <= ?1"
      " AND (SELECT count(*) FROM runs WHERE state = 'running') < ?2"
      " AND (SELECT count(*) FROM runs AS o WHERE o.state = 'running' AND o.repo = r.repo) < ?3"
      " ORDER BY not_before, id LIMIT 1";
  if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_error(q, err, "next");
    goto out;
  }
  sqlite3_bind_int64(st, 1, wall_ms());
  sqlite3_bind_int64(st, 2, max_all);
  sqlite3_bind_int64(st, 3, max_repo);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    fill_run(st, out);
    ret = 1;
  } else if (rc == SQLITE_DONE) {
    ret = 0;
  } else {
    db_error(q, err, "next");
  }
out:
  sqlite3_finalize(st);
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_next_batch(al_queue *q, unsigned max_all, unsigned max_repo, al_queue_run *out,
                        int max, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int n = 0;
  sqlite3_stmt *st = NULL;
  /* Each candidate with the number of running rows of its repository and
   * in all; the rows picked before it in this batch are added below. */
  const char *sql =
      "SELECT " RUN_COLS ","
      " (SELECT count(*) FROM runs AS o WHERE o.state = 'running' AND o.repo = r.repo),"
      " (SELECT count(*) FROM runs WHERE state = 'running')"
      " FROM runs AS r WHERE state = 'queued' AND not_before <= ?1"
      " ORDER BY not_before, id LIMIT 512";
  if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) {
    n = db_error(q, err, "next batch");
    goto out;
  }
  sqlite3_bind_int64(st, 1, wall_ms());
  int rc = SQLITE_ROW;
  while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    int ncols = sqlite3_column_count(st);
    long long repo_running = sqlite3_column_int64(st, ncols - 2);
    long long all_running = sqlite3_column_int64(st, ncols - 1);
    if (all_running + n >= (long long)max_all)
      break;
    al_queue_run r;
    fill_run(st, &r);
    for (int i = 0; i < n; i++)
      if (!strcmp(out[i].repo, r.repo))
        repo_running++;
    if (repo_running >= (long long)max_repo)
      continue;
    out[n++] = r;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    n = db_error(q, err, "next batch"); /* the rows picked stay queued */
out:
  sqlite3_finalize(st);
  pthread_mutex_unlock(&q->lock);
  return n;
}

int al_queue_running(al_queue *q, al_queue_run *out, int max, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int n = 0;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(q->db, "SELECT " RUN_COLS " FROM runs WHERE state = 'running'", -1, &st,
                         NULL) != SQLITE_OK) {
    n = db_error(q, err, "running");
  } else {
    while (n < max && sqlite3_step(st) == SQLITE_ROW)
      fill_run(st, &out[n++]);
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&q->lock);
  return n;
}

int al_queue_set_check(al_queue *q, int64_t id, const char *permission, const char *detail,
                       al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int rc = EXEC(q, "UPDATE runs SET permission = ?, check_detail = ?, checked_ms = ? WHERE id = ?",
                q_text(permission), q_text(detail), q_int(permission ? wall_ms() : 0), q_int(id));
  if (rc == SQLITE_DONE)
    event_locked(q, id, detail);
  int ret = rc == SQLITE_DONE ? 0 : db_error(q, err, "check");
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_start(al_queue *q, int64_t id, const al_queue_attempt *a, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  pid_t pid = a->pid;
  int rc =
      EXEC(q,
           "UPDATE runs SET state = 'running', attempts = attempts + 1, pid = ?,"
           " pid_start = ?, record = ?, log = ?, started_ms = ?, finished_ms = NULL,"
           " exit_status = NULL, instance = ?, fence = ?, pid_ns = ?"
           " WHERE id = ? AND state = 'queued'",
           q_int((int64_t)pid), q_text(a->pid_start), q_text(a->record), q_text(a->log),
           q_int(wall_ms()), q_text(a->instance), q_text(a->fence), q_text(a->pid_ns), q_int(id));
  int ret = -1;
  if (rc == SQLITE_DONE && sqlite3_changes(q->db) == 1) {
    char what[400];
    snprintf(what, sizeof what, "running (pid %d, token %s)", (int)pid, a->fence ? a->fence : "-");
    event_locked(q, id, what);
    ret = 0;
  } else {
    not_active(q, rc, id, "start", err);
  }
  pthread_mutex_unlock(&q->lock);
  return ret;
}

static int meta_get(al_queue *q, const char *key, char *out, size_t n)
{
  out[0] = '\0';
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(q->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
      snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  sqlite3_finalize(st);
  return rc;
}

int al_queue_claim(al_queue *q, const char *path, char *instance, char *foreign, al_error *err)
{
  struct stat st;
  if (stat(path, &st) < 0)
    return al_make_error(err, errno, "queue: `%s`", path);
  char file[64], have_file[64], have[40];
  snprintf(file, sizeof file, "%llu:%llu", (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino);
  foreign[0] = '\0';
  pthread_mutex_lock(&q->lock);
  int ret = -1;
  if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
    db_error(q, err, "claim");
    goto out;
  }
  if (meta_get(q, "instance", have, sizeof have) != SQLITE_OK ||
      meta_get(q, "file", have_file, sizeof have_file) != SQLITE_OK) {
    db_error(q, err, "claim");
    goto rollback;
  }
  bool copy = have[0] && strcmp(have_file, file) != 0;
  if (have[0] && !copy) {
    snprintf(instance, 40, "%s", have);
  } else if (al_random_hex(instance, 16, err) < 0) {
    goto rollback;
  }
  if (copy) {
    snprintf(foreign, 40, "%s", have);
    /* the rows left running are the old instance's, whatever they say */
    EXEC(q, "UPDATE runs SET instance = ? WHERE state = 'running' AND instance IS NULL",
         q_text(have));
  } else {
    /* rows of schema 1 (no instance column then) are this file's own */
    EXEC(q, "UPDATE runs SET instance = ? WHERE state = 'running' AND instance IS NULL",
         q_text(instance));
  }
  if (EXEC(q, "INSERT OR REPLACE INTO meta(key, value) VALUES('instance', ?), ('file', ?)",
           q_text(instance), q_text(file)) != SQLITE_DONE ||
      sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    db_error(q, err, "claim");
    goto rollback;
  }
  ret = copy ? 1 : 0;
  goto out;
rollback:
  sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
out:
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_fence(al_queue *q, int64_t id, const char *old, const char *token, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int rc = EXEC(q,
                "UPDATE runs SET fence = ?, fenced = fenced + 1 WHERE id = ? AND state = 'running'"
                " AND fence IS ?",
                q_text(token), q_int(id), q_text(old));
  int ret;
  if (rc != SQLITE_DONE) {
    ret = db_error(q, err, "fence");
  } else if (sqlite3_changes(q->db) == 1) {
    char what[800];
    snprintf(what, sizeof what, "fenced: token %s revoked, now %s", old ? old : "-", token);
    event_locked(q, id, what);
    ret = 0;
  } else {
    ret = 1;
  }
  pthread_mutex_unlock(&q->lock);
  return ret;
}

int al_queue_finish(al_queue *q, int64_t id, const al_queue_result *r, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  bool requeue = !strcmp(r->state, "queued");
  bool interrupted = r->interrupted || !strcmp(r->state, "interrupted");
  int rc = EXEC(q,
                "UPDATE runs SET state = ?, exit_status = ?, reason = ?,"
                " pr_url = coalesce(?, pr_url), run_id = coalesce(?, run_id),"
                " denials = coalesce(?, denials),"
                " tokens_unconfirmed = tokens_unconfirmed + ?, pid = NULL, pid_start = NULL,"
                " finished_ms = ?, not_before = ?, interrupted = interrupted OR ?"
                " , fenced = fenced + ?, fence = CASE WHEN ?1 = 'queued' THEN NULL ELSE fence END"
                " WHERE id = ? AND state IN ('queued','running') AND (? IS NULL OR fence IS ?)",
                q_text(r->state), q_int(r->exit_status), q_text(r->reason), q_text(r->pr_url),
                q_text(r->run_id), q_text(r->denials), q_int(r->tokens_unconfirmed),
                q_int(requeue ? 0 : wall_ms()),
                q_int(requeue ? wall_ms() + (int64_t)r->not_before_ms : 0), q_int(interrupted),
                q_int(r->fenced), q_int(id), q_text(r->fence), q_text(r->fence));
  int ret = -1;
  if (rc == SQLITE_DONE && sqlite3_changes(q->db) == 1) {
    char what[600];
    snprintf(what, sizeof what, "%s%s%s", r->state, r->reason ? ": " : "",
             r->reason ? r->reason : "");
    event_locked(q, id, what);
    ret = 0;
  } else {
    not_active(q, rc, id, "finish", err);
  }
  pthread_mutex_unlock(&q->lock);
  return ret;
}

void al_queue_event(al_queue *q, int64_t id, const char *fmt, ...)
{
  char what[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&q->lock);
  event_locked(q, id, what);
  pthread_mutex_unlock(&q->lock);
}

/* Rows of a query as JSON objects, column names as keys. Lock held. */
static json_t *rows_json(al_queue *q, const char *sql, int64_t arg)
{
  json_t *arr = json_array();
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
    return arr;
  if (sqlite3_bind_parameter_count(st) > 0)
    sqlite3_bind_int64(st, 1, arg);
  while (sqlite3_step(st) == SQLITE_ROW) {
    json_t *o = json_object();
    for (int i = 0; i < sqlite3_column_count(st); i++) {
      const char *name = sqlite3_column_name(st, i);
      switch (sqlite3_column_type(st, i)) {
      case SQLITE_INTEGER:
        json_object_set_new(o, name, json_integer(sqlite3_column_int64(st, i)));
        break;
      case SQLITE_NULL:
        json_object_set_new(o, name, json_null());
        break;
      default:
        json_object_set_new(o, name, json_string((const char *)sqlite3_column_text(st, i)));
        break;
      }
    }
    json_array_append_new(arr, o);
  }
  sqlite3_finalize(st);
  return arr;
}

static void add_events(al_queue *q, json_t *row)
{
  int64_t id = json_integer_value(json_object_get(row, "id"));
  json_object_set_new(row, "events",
                      rows_json(q, "SELECT ms, what FROM events WHERE run = ? ORDER BY rowid", id));
  const char *dn = json_string_value(json_object_get(row, "denials"));
  if (dn) { /* stored as JSON text: show it as JSON */
    json_t *d = json_loads(dn, 0, NULL);
    json_object_set_new(row, "denials", d ? d : json_null());
  }
}

json_t *al_queue_list(al_queue *q, int limit)
{
  pthread_mutex_lock(&q->lock);
  json_t *rows = rows_json(q, "SELECT * FROM runs ORDER BY id DESC LIMIT ?", limit);
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) add_events(q, r);
  pthread_mutex_unlock(&q->lock);
  return rows;
}

json_t *al_queue_without_denials(al_queue *q, int limit)
{
  pthread_mutex_lock(&q->lock);
  json_t *rows = rows_json(q,
                           "SELECT id, record FROM runs WHERE denials IS NULL AND record IS NOT"
                           " NULL AND state NOT IN ('queued','running') ORDER BY id LIMIT ?",
                           limit);
  pthread_mutex_unlock(&q->lock);
  return rows;
}

int al_queue_set_denials(al_queue *q, int64_t id, const char *denials, al_error *err)
{
  pthread_mutex_lock(&q->lock);
  int rc = EXEC(q,
                "UPDATE runs SET denials = ? WHERE id = ? AND denials IS NULL AND json_valid(?)"
                " AND json_type(?) = 'object'",
                q_text(denials), q_int(id), q_text(denials), q_text(denials));
  int ret = rc == SQLITE_DONE ? 0 : db_error(q, err, "denials");
  pthread_mutex_unlock(&q->lock);
  return ret;
}

json_t *al_queue_get(al_queue *q, int64_t id)
{
  pthread_mutex_lock(&q->lock);
  json_t *rows = rows_json(q, "SELECT * FROM runs WHERE id = ?", id);
  json_t *r = json_incref(json_array_get(rows, 0));
  if (r)
    add_events(q, r);
  json_decref(rows);
  pthread_mutex_unlock(&q->lock);
  return r;
}

json_t *al_queue_deliveries(al_queue *q, int limit)
{
  pthread_mutex_lock(&q->lock);
  json_t *rows = rows_json(
      q,
      "SELECT id, event, received_ms, outcome, run FROM deliveries ORDER BY received_ms DESC, "
      "rowid DESC LIMIT ?",
      limit);
  pthread_mutex_unlock(&q->lock);
  return rows;
}

json_t *al_queue_stats(al_queue *q)
{
  pthread_mutex_lock(&q->lock);
  json_t *o = json_object();
  json_object_set_new(o, "states",
                      rows_json(q, "SELECT state, count(*) AS n FROM runs GROUP BY state", 0));
  json_object_set_new(
      o, "durations",
      rows_json(q,
                "SELECT state, count(*) AS n, sum(finished_ms - started_ms) AS sum_ms FROM runs"
                " WHERE finished_ms IS NOT NULL AND started_ms IS NOT NULL GROUP BY state",
                0));
  json_object_set_new(
      o, "denials",
      rows_json(q,
                "SELECT d.key AS reason, sum(d.value) AS n FROM runs, json_each(runs.denials) AS d"
                " WHERE runs.denials IS NOT NULL GROUP BY d.key",
                0));
  json_object_set_new(
      o, "totals",
      rows_json(q,
                "SELECT coalesce(sum(tokens_unconfirmed), 0) AS tokens_unconfirmed,"
                " (SELECT count(*) FROM runs WHERE state = 'queued') AS queue_depth,"
                " (SELECT count(*) FROM runs WHERE state = 'running') AS running,"
                " (SELECT count(*) FROM deliveries) AS deliveries FROM runs",
                0));
  json_object_set_new(
      o, "deliveries",
      rows_json(q,
                "SELECT CASE WHEN instr(coalesce(outcome, ''), ':') > 0 THEN substr(outcome, 1,"
                " instr(outcome, ':') - 1) ELSE coalesce(outcome, 'none') END AS outcome,"
                " count(*) AS n FROM deliveries GROUP BY 1",
                0));
  pthread_mutex_unlock(&q->lock);
  return o;
}
