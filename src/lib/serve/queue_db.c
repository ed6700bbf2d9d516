/* The durable queue's file (split from queue.c): its schema and the
 * migrations between versions (user_version), the integrity check before
 * anything is read, and al_queue_open / al_queue_close. The rows'
 * operations are in queue.c; see queue.h for the state machine. */
#include "serve/queue.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/queue_int.h"

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "PRAGMA foreign_keys=ON;"
    "CREATE TABLE IF NOT EXISTS runs("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " repo TEXT NOT NULL COLLATE NOCASE, number INTEGER NOT NULL CHECK(number > 0),"
    " state TEXT NOT NULL CHECK(state IN "
    "  ('queued','running','succeeded','failed','interrupted','refused')),"
    " trigger TEXT NOT NULL, sender TEXT NOT NULL, delivery TEXT,"
    " permission TEXT, check_detail TEXT,"
    " attempts INTEGER NOT NULL DEFAULT 0, interrupted INTEGER NOT NULL DEFAULT 0,"
    " not_before INTEGER NOT NULL DEFAULT 0,"
    " created_ms INTEGER NOT NULL, started_ms INTEGER, finished_ms INTEGER,"
    " pid INTEGER, pid_start TEXT, exit_status INTEGER, reason TEXT, pr_url TEXT,"
    " run_id TEXT, record TEXT, log TEXT, denials TEXT,"
    " tokens_unconfirmed INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_one_active ON runs(repo, number)"
    " WHERE state IN ('queued','running');"
    "CREATE INDEX IF NOT EXISTS runs_state ON runs(state, not_before);"
    "CREATE TABLE IF NOT EXISTS events("
    " run INTEGER NOT NULL REFERENCES runs(id), ms INTEGER NOT NULL, what TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS events_run ON events(run);"
    "CREATE TABLE IF NOT EXISTS deliveries("
    " id TEXT PRIMARY KEY, body_sha256 TEXT NOT NULL UNIQUE, event TEXT NOT NULL,"
    " received_ms INTEGER NOT NULL, outcome TEXT, run INTEGER);";

/* Migrations: migrations[v] takes a database of schema v to v + 1, in one
 * transaction with the new PRAGMA user_version. Schema 0 is the tables
 * above as they were first written. */
static const char *const migrations[] = {
    /* 0 → 1: the format-string binder stored the address of the denials
     * text as an integer; what is not a JSON object of counts is dropped
     * (serve re-reads it from the run's record, serve.c) */
    "UPDATE runs SET denials = NULL WHERE denials IS NOT NULL AND"
    " (typeof(denials) != 'text' OR NOT json_valid(denials) OR json_type(denials) != 'object');",
    /* 1 → 2: the instance that owns the file (meta), and per attempt the
     * instance that ran it, its fencing token, its PID namespace and the
     * count of fenced attempts (issue #29) */
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "ALTER TABLE runs ADD COLUMN instance TEXT;"
    "ALTER TABLE runs ADD COLUMN fence TEXT;"
    "ALTER TABLE runs ADD COLUMN pid_ns TEXT;"
    "ALTER TABLE runs ADD COLUMN fenced INTEGER NOT NULL DEFAULT 0;",
    /* 2 → 3: when the trigger check answered (its answer is reused for a
     * while, al_queue_cached_permission), and the indexes the intake's
     * counts and the retention read (issue #29 item 4) */
    "ALTER TABLE runs ADD COLUMN checked_ms INTEGER;"
    "CREATE INDEX IF NOT EXISTS runs_sender ON runs(sender, created_ms);"
    "CREATE INDEX IF NOT EXISTS runs_repo_created ON runs(repo, created_ms);"
    "CREATE INDEX IF NOT EXISTS runs_finished ON runs(finished_ms);",
    /* 3 → 4: a Jira or Linear ticket's key ("PROJ-7"; NULL: the forge's
     * issue `number`), the number being the key's N (issue #31: one
     * repository's policy names one project, so (repo, number) stays the
     * ticket's identity) */
    "ALTER TABLE runs ADD COLUMN ticket_key TEXT;",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == AL_QUEUE_SCHEMA,
               "one migration per schema version");

/* What a damaged file's message says: the file, what is wrong, what to do. */
#define DAMAGED_FMT                                                                                \
  "queue: `%s` is damaged (%s): airlock serve does not start on it. Stop every process using "     \
  "it, move it aside (mv %s %s.damaged, with its -wal and -shm files) and start again: the "       \
  "queue starts empty (the run records stay in records/; trigger the open tickets again), or "     \
  "restore a backup"

/* PRAGMA quick_check (sqlite.org/pragma.html#pragma_quick_check: the
 * b-trees, their pages and record formats, without the index contents):
 * 0 when it answers "ok", else -1 with its first line (or SQLite's error)
 * in why. */
static int check_integrity(al_queue *q, char *why, size_t n)
{
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(q->db, "PRAGMA quick_check(5)", -1, &st, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  int ret = 0;
  if (rc == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(st, 0);
    if (!line || strcmp(line, "ok") != 0) {
      snprintf(why, n, "PRAGMA quick_check: %s", line ? line : "no answer");
      ret = -1;
    }
  } else {
    snprintf(why, n, "PRAGMA quick_check: %s", sqlite3_errmsg(q->db));
    ret = -1;
  }
  sqlite3_finalize(st);
  return ret;
}

int al_queue_health(al_queue *q, char *why, size_t n)
{
  pthread_mutex_lock(&q->lock);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(q->db,
                              "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM events),"
                              " (SELECT count(*) FROM deliveries)",
                              -1, &st, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  int ret = rc == SQLITE_ROW ? 0 : -1;
  if (ret < 0)
    snprintf(why, n, "the queue cannot be read: %s", sqlite3_errmsg(q->db));
  sqlite3_finalize(st);
  pthread_mutex_unlock(&q->lock);
  return ret;
}

static int user_version(sqlite3 *db, int *v)
{
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    *v = sqlite3_column_int(st, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

static int migrate(al_queue *q, const char *path, al_error *err)
{
  int v = 0;
  if (user_version(q->db, &v) != SQLITE_OK)
    return al_error_set(err, EIO, "queue: `%s`: reading its schema version: %s", path,
                        sqlite3_errmsg(q->db));
  if (v > AL_QUEUE_SCHEMA || v < 0)
    return al_error_set(err, EPROTO,
                        "queue: `%s` has schema version %d, this airlock knows up to %d: it was "
                        "written by a newer airlock (run that one, or restore a backup)",
                        path, v, AL_QUEUE_SCHEMA);
  for (; v < AL_QUEUE_SCHEMA; v++) {
    al_autofree char *sql = al_strdup_printf(
        "BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;", migrations[v], v + 1);
    char *msg = NULL;
    if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
      al_error_set(err, EIO, "queue: `%s`: migrating schema %d to %d: %s", path, v, v + 1,
                   msg ? msg : sqlite3_errmsg(q->db));
      sqlite3_free(msg);
      sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
      return -1;
    }
  }
  return 0;
}

int al_queue_open(const char *path, al_queue **out, al_error *err)
{
  /* Create the file 0600 before SQLite does (it would follow the umask). */
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return al_make_error(err, errno, "queue: open `%s`", path);
  close(fd);
  al_queue *q = al_xcalloc(1, sizeof *q);
  pthread_mutex_init(&q->lock, NULL);
  if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) !=
      SQLITE_OK) {
    al_error_set(err, EIO, "queue: open `%s`: %s", path,
                 q->db ? sqlite3_errmsg(q->db) : "out of memory");
    al_queue_close(q);
    return -1;
  }
  sqlite3_busy_timeout(q->db, 5000);
  char *msg = NULL;
  char why[300] = "";
  if (check_integrity(q, why, sizeof why) < 0) {
    al_error_set(err, EIO, DAMAGED_FMT, path, why, path, path);
    al_queue_close(q);
    return -1;
  }
  if (sqlite3_exec(q->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
    int rc = sqlite3_errcode(q->db);
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
      al_error_set(err, EIO, DAMAGED_FMT, path, msg ? msg : "schema", path, path);
    else
      al_error_set(err, EIO, "queue: `%s`: %s", path, msg ? msg : "schema");
    sqlite3_free(msg);
    al_queue_close(q);
    return -1;
  }
  if (migrate(q, path, err) < 0) {
    al_queue_close(q);
    return -1;
  }
  *out = q;
  return 0;
}

void al_queue_close(al_queue *q)
{
  if (!q)
    return;
  sqlite3_close(q->db);
  pthread_mutex_destroy(&q->lock);
  free(q);
}
