/* The service's queue stores what it is given, column by column (issue
 * #29): the denials of a finished run are the JSON object of the counts,
 * not an address (the format-string binder read the `char *` as an
 * integer); /runs.json and the metrics' source read them back; a finish
 * on a row that is no longer active says so (not "not an error"); an
 * existing database of schema 0 is migrated (bad denials dropped, the
 * version set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "serve/queue.h"

static char dir[] = "/tmp/airlock-queue.XXXXXX";

static void db_path(char *out, size_t n)
{
  snprintf(out, n, "%s/q.db", dir);
}

static al_queue *open_q(bool fresh)
{
  char path[128];
  db_path(path, sizeof path);
  if (fresh) {
    unlink(path);
    char side[160];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
  }
  al_queue *q = NULL;
  al_error err = {0};
  assert_int_equal(al_queue_open(path, &q, &err), 0);
  return q;
}

static json_t *row_of(json_t *rows, int64_t id)
{
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) if (json_integer_value(json_object_get(r, "id")) == id) return r;
  return NULL;
}

static long long stat_n(json_t *arr, const char *key, const char *val)
{
  size_t i;
  json_t *r;
  json_array_foreach(arr, i, r)
  {
    const char *k = json_string_value(json_object_get(r, key));
    if (k && !strcmp(k, val))
      return (long long)json_integer_value(json_object_get(r, "n"));
  }
  return -1;
}

static void test_finish_columns(void **state)
{
  (void)state;
  al_queue *q = open_q(true);
  al_error err = {0};
  int64_t id = 0, id2 = 0;
  assert_int_equal(al_queue_enqueue(q, "acme/a", 7, "label", "alice", "d-1", &id, &err), 0);
  assert_int_equal(al_queue_enqueue(q, "acme/a", 8, "comment", "bob", NULL, &id2, &err), 0);
  assert_int_equal(al_queue_start(q, id,
                                  &(al_queue_attempt){.pid = 4242,
                                                      .pid_start = "99",
                                                      .record = "/r/1.json",
                                                      .log = "/l/1.log",
                                                      .fence = "1.1.0.i"},
                                  &err),
                   0);
  assert_int_equal(
      al_queue_start(q, id2,
                     &(al_queue_attempt){
                         .pid = 4243, .pid_start = "98", .record = "/r/2.json", .log = "/l/2.log"},
                     &err),
      0);
  al_queue_result r = {.state = "succeeded",
                       .exit_status = 0,
                       .reason = "pull request x",
                       .pr_url = "https://forge.test/acme/a/pull/3",
                       .run_id = "0123abcd",
                       .denials = "{\"host-not-allowed\":3,\"method\":1}",
                       .tokens_unconfirmed = 2};
  assert_int_equal(al_queue_finish(q, id, &r, &err), 0);
  al_queue_result r2 = {.state = "failed",
                        .exit_status = 1,
                        .reason = "agent failed",
                        .denials = "{\"host-not-allowed\":1}"};
  assert_int_equal(al_queue_finish(q, id2, &r2, &err), 0);

  json_t *rows = al_queue_list(q, 10);
  json_t *row = row_of(rows, id);
  assert_non_null(row);
  assert_string_equal(json_string_value(json_object_get(row, "state")), "succeeded");
  assert_int_equal(json_integer_value(json_object_get(row, "exit_status")), 0);
  assert_string_equal(json_string_value(json_object_get(row, "pr_url")),
                      "https://forge.test/acme/a/pull/3");
  assert_string_equal(json_string_value(json_object_get(row, "run_id")), "0123abcd");
  assert_int_equal(json_integer_value(json_object_get(row, "tokens_unconfirmed")), 2);
  assert_int_equal(json_integer_value(json_object_get(row, "attempts")), 1);
  assert_true(json_is_null(json_object_get(row, "pid")));
  json_t *d = json_object_get(row, "denials");
  assert_true(json_is_object(d));
  assert_int_equal(json_integer_value(json_object_get(d, "host-not-allowed")), 3);
  assert_int_equal(json_integer_value(json_object_get(d, "method")), 1);
  assert_int_equal(json_object_size(d), 2);
  json_decref(rows);

  json_t *st = al_queue_stats(q);
  json_t *den = json_object_get(st, "denials");
  assert_int_equal(json_array_size(den), 2);
  assert_int_equal(stat_n(den, "reason", "host-not-allowed"), 4);
  assert_int_equal(stat_n(den, "reason", "method"), 1);
  assert_int_equal(stat_n(json_object_get(st, "states"), "state", "succeeded"), 1);
  assert_int_equal(stat_n(json_object_get(st, "states"), "state", "failed"), 1);
  json_t *tot = json_array_get(json_object_get(st, "totals"), 0);
  assert_int_equal(json_integer_value(json_object_get(tot, "tokens_unconfirmed")), 2);
  json_decref(st);

  /* a finish on a row that is no longer queued or running: a message that
   * says so, not SQLite's "not an error" */
  memset(&err, 0, sizeof err);
  assert_int_equal(al_queue_finish(q, id, &r, &err), -1);
  assert_null(strstr(err.msg, "not an error"));
  assert_non_null(strstr(err.msg, "succeeded"));
  al_queue_close(q);
}

/* The schema of the first release (schema 0), as a database of that time
 * holds it, with the denials the old binder stored: an address. */
static const char schema0[] =
    "CREATE TABLE runs("
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
    "CREATE TABLE events("
    " run INTEGER NOT NULL REFERENCES runs(id), ms INTEGER NOT NULL, what TEXT NOT NULL);"
    "CREATE TABLE deliveries("
    " id TEXT PRIMARY KEY, body_sha256 TEXT NOT NULL UNIQUE, event TEXT NOT NULL,"
    " received_ms INTEGER NOT NULL, outcome TEXT, run INTEGER);"
    "INSERT INTO runs(repo, number, state, trigger, sender, created_ms, denials)"
    " VALUES('acme/a', 9, 'failed', 'label', 'alice', 1, 94162185794736),"
    " ('acme/a', 10, 'failed', 'label', 'alice', 1, '{\"method\":2}'),"
    " ('acme/a', 11, 'running', 'label', 'alice', 1, NULL);";

static int user_version_of(const char *path)
{
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *s = NULL;
  assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(s), SQLITE_ROW);
  int v = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

static void test_migrate_schema0(void **state)
{
  (void)state;
  char path[128];
  db_path(path, sizeof path);
  unlink(path);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, schema0, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(user_version_of(path), 0);
  al_queue *q = open_q(false);
  json_t *st = al_queue_stats(q);
  json_t *den = json_object_get(st, "denials");
  assert_int_equal(json_array_size(den), 1); /* the address is gone, the real count stays */
  assert_int_equal(stat_n(den, "reason", "method"), 2);
  json_decref(st);
  json_t *row = al_queue_get(q, 1);
  assert_true(json_is_null(json_object_get(row, "denials")));
  assert_true(json_is_null(json_object_get(row, "fence"))); /* schema 2's columns exist */
  assert_int_equal(json_integer_value(json_object_get(row, "fenced")), 0);
  json_decref(row);
  /* the claim: the file's own instance; its old running row is the instance's */
  char inst[40], foreign[40];
  al_error err = {0};
  assert_int_equal(al_queue_claim(q, path, inst, foreign, &err), 0);
  assert_int_equal(strlen(inst), 32);
  al_queue_run r[4];
  assert_int_equal(al_queue_running(q, r, 4, &err), 1);
  assert_string_equal(r[0].instance, inst);
  char again[40];
  assert_int_equal(al_queue_claim(q, path, again, foreign, &err), 0);
  assert_string_equal(again, inst);
  al_queue_close(q);
  assert_int_equal(user_version_of(path), AL_QUEUE_SCHEMA);

  /* a copy of the file is another instance: the rows it holds running are
   * the first instance's */
  char copy[160];
  snprintf(copy, sizeof copy, "%s/copy.db", dir);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "cp %s %s", path, copy);
  assert_int_equal(system(cmd), 0);
  al_queue *c = NULL;
  assert_int_equal(al_queue_open(copy, &c, &err), 0);
  assert_int_equal(al_queue_claim(c, copy, again, foreign, &err), 1);
  assert_string_equal(foreign, inst);
  assert_string_not_equal(again, inst);
  assert_int_equal(al_queue_running(c, r, 4, &err), 1);
  assert_string_equal(r[0].instance, inst);
  al_queue_close(c);

  /* a newer schema is refused, naming the file */
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  q = NULL;
  memset(&err, 0, sizeof err);
  assert_int_equal(al_queue_open(path, &q, &err), -1);
  assert_non_null(strstr(err.msg, "schema version 99"));
  assert_non_null(strstr(err.msg, path));
}

static void test_fence(void **state)
{
  (void)state;
  al_queue *q = open_q(true);
  al_error err = {0};
  int64_t id = 0;
  assert_int_equal(al_queue_enqueue(q, "acme/a", 7, "label", "alice", NULL, &id, &err), 0);
  assert_int_equal(
      al_queue_start(q, id, &(al_queue_attempt){.pid = 1, .pid_start = "1", .fence = "T1"}, &err),
      0);
  /* a recovery replaces T1 by T2; the T1 attempt's own finish then changes nothing */
  assert_int_equal(al_queue_fence(q, id, "T1", "T2", &err), 0);
  assert_int_equal(al_queue_fence(q, id, "T1", "T3", &err), 1);
  al_queue_result late = {.state = "succeeded", .exit_status = 0, .reason = "late", .fence = "T1"};
  memset(&err, 0, sizeof err);
  assert_int_equal(al_queue_finish(q, id, &late, &err), -1);
  assert_int_equal(err.code, ESTALE);
  al_queue_result now = {
      .state = "queued", .exit_status = -1, .reason = "recovered", .fence = "T2"};
  assert_int_equal(al_queue_finish(q, id, &now, &err), 0);
  json_t *row = al_queue_get(q, id);
  assert_string_equal(json_string_value(json_object_get(row, "state")), "queued");
  assert_int_equal(json_integer_value(json_object_get(row, "fenced")), 1);
  json_decref(row);
  al_queue_close(q);
}

/* The intake's limits (issue #29 item 4), each with its control: the
 * same enqueue admitted while under the limit, refused past it. */
static void test_intake_limits(void **state)
{
  (void)state;
  al_queue *q = open_q(true);
  al_error err = {0};
  int64_t id = 0;
  al_queue_refusal why;
  al_queue_limits l = {.max_queued = 100, .per_sender = 2, .per_repo = 100, .window_ms = 3600000};
  /* per_sender: 2 rows, the third refused (any repository) */
  assert_int_equal(al_queue_enqueue_limited(q, &l, "acme/a", 1, NULL, "comment", "mallory", "d1",
                                            &id, &why, &err),
                   0);
  assert_int_equal(al_queue_enqueue_limited(q, &l, "acme/b", 2, NULL, "comment", "Mallory", "d2",
                                            &id, &why, &err),
                   0);
  assert_int_equal(al_queue_enqueue_limited(q, &l, "acme/a", 3, NULL, "comment", "mallory", "d3",
                                            &id, &why, &err),
                   2);
  assert_int_equal(why, AL_QUEUE_SENDER_LIMIT);
  assert_non_null(strstr(err.msg, "intake.per_sender 2"));
  /* an active ticket: no limit is spent, the active row is named */
  int64_t act = 0;
  assert_int_equal(al_queue_enqueue_limited(q, &l, "acme/a", 1, NULL, "comment", "mallory", "d4",
                                            &act, &why, &err),
                   1);
  assert_int_equal(why, AL_QUEUE_ADMITTED);
  /* control: another sender is admitted */
  assert_int_equal(
      al_queue_enqueue_limited(q, &l, "acme/a", 3, NULL, "label", "alice", "d5", &id, &why, &err),
      0);
  /* a window that no longer holds mallory's rows admits them again */
  l.window_ms = 1;
  usleep(5000);
  assert_int_equal(al_queue_enqueue_limited(q, &l, "acme/a", 4, NULL, "comment", "mallory", "d6",
                                            &id, &why, &err),
                   0);
  l.window_ms = 3600000;
  /* per_repo */
  l.per_sender = 100;
  l.per_repo = 4;
  assert_int_equal(
      al_queue_enqueue_limited(q, &l, "acme/a", 5, NULL, "label", "alice", "d7", &id, &why, &err),
      0);
  assert_int_equal(
      al_queue_enqueue_limited(q, &l, "acme/a", 6, NULL, "label", "alice", "d8", &id, &why, &err),
      2);
  assert_int_equal(why, AL_QUEUE_REPO_LIMIT);
  assert_int_equal(
      al_queue_enqueue_limited(q, &l, "acme/b", 6, NULL, "label", "alice", "d9", &id, &why, &err),
      0);
  /* max_queued: 6 queued now */
  l.per_repo = 100;
  l.max_queued = 6;
  assert_int_equal(
      al_queue_enqueue_limited(q, &l, "acme/c", 1, NULL, "label", "alice", "d10", &id, &why, &err),
      2);
  assert_int_equal(why, AL_QUEUE_FULL);
  assert_int_equal(err.code, ENOSPC);
  l.max_queued = 7;
  assert_int_equal(
      al_queue_enqueue_limited(q, &l, "acme/c", 1, NULL, "label", "alice", "d10", &id, &why, &err),
      0);
  al_queue_close(q);
}

/* The cached permission answer, and the retention. */
static void test_cache_and_gc(void **state)
{
  (void)state;
  al_queue *q = open_q(true);
  al_error err = {0};
  int64_t a = 0, b = 0, c = 0, d = 0;
  char perm[32] = "";
  assert_int_equal(al_queue_enqueue(q, "acme/a", 1, "comment", "mallory", NULL, &a, &err), 0);
  assert_int_equal(al_queue_cached_permission(q, "acme/a", "mallory", 600000, perm, sizeof perm),
                   0);
  assert_int_equal(al_queue_set_check(q, a, "read", "check: read", &err), 0);
  assert_int_equal(al_queue_cached_permission(q, "acme/a", "MALLORY", 600000, perm, sizeof perm),
                   1);
  assert_string_equal(perm, "read");
  /* another repository, or no cache: nothing */
  assert_int_equal(al_queue_cached_permission(q, "acme/b", "mallory", 600000, perm, sizeof perm),
                   0);
  assert_int_equal(al_queue_cached_permission(q, "acme/a", "mallory", 0, perm, sizeof perm), 0);
  /* a check that could not be made (NULL permission) is no answer */
  assert_int_equal(al_queue_enqueue(q, "acme/b", 1, "comment", "eve", NULL, &b, &err), 0);
  assert_int_equal(al_queue_set_check(q, b, NULL, "trigger check refused", &err), 0);
  assert_int_equal(al_queue_cached_permission(q, "acme/b", "eve", 600000, perm, sizeof perm), 0);

  al_queue_result done = {.state = "refused", .exit_status = -1, .reason = "r"};
  assert_int_equal(al_queue_finish(q, a, &done, &err), 0);
  assert_int_equal(al_queue_finish(q, b, &done, &err), 0);
  assert_int_equal(al_queue_enqueue(q, "acme/c", 1, "label", "alice", NULL, &c, &err), 0);
  assert_int_equal(al_queue_finish(q, c, &done, &err), 0);
  assert_int_equal(al_queue_enqueue(q, "acme/d", 1, "label", "alice", NULL, &d, &err), 0);
  int64_t n = -1;
  /* no rule: nothing deleted */
  assert_int_equal(al_queue_gc(q, 0, 0, &n, &err), 0);
  assert_int_equal(n, 0);
  /* max_age far away: nothing */
  assert_int_equal(al_queue_gc(q, 86400000, 0, &n, &err), 0);
  assert_int_equal(n, 0);
  /* max_rows 1: the two oldest finished rows go, the queued one stays */
  assert_int_equal(al_queue_gc(q, 0, 1, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_null(al_queue_get(q, a));
  assert_null(al_queue_get(q, b));
  json_t *row = al_queue_get(q, c);
  assert_non_null(row);
  json_decref(row);
  /* max_age 1 ms: every finished row is older (sleep past it), a queued one never goes */
  usleep(5000);
  assert_int_equal(al_queue_gc(q, 1, 0, &n, &err), 0);
  assert_int_equal(n, 1);
  row = al_queue_get(q, d);
  assert_non_null(row);
  assert_string_equal(json_string_value(json_object_get(row, "state")), "queued");
  json_decref(row);
  al_queue_close(q);
}

int main(void)
{
  if (!mkdtemp(dir))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_finish_columns), cmocka_unit_test(test_migrate_schema0),
      cmocka_unit_test(test_fence), cmocka_unit_test(test_intake_limits),
      cmocka_unit_test(test_cache_and_gc)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    rc = rc ? rc : 1;
  return rc;
}
