/* The service's batch of runnable rows (al_queue_next_batch, whose trigger
 * checks run concurrently) honours the same caps as one-by-one starts, and
 * the Lease reader (al_kube_lease_parse) refuses what breaks its rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/kube.h"
#include "serve/queue.h"

static char dir[] = "/tmp/airlock-qbatch.XXXXXX";

static al_queue *open_q(void)
{
  char path[128];
  snprintf(path, sizeof path, "%s/q.db", dir);
  unlink(path);
  al_queue *q = NULL;
  al_error err = {0};
  assert_int_equal(al_queue_open(path, &q, &err), 0);
  return q;
}

static void add(al_queue *q, const char *repo, unsigned long n, int64_t *id)
{
  al_error err = {0};
  assert_int_equal(al_queue_enqueue(q, repo, n, "enqueue", "local:uid=0", NULL, id, &err), 0);
}

static void test_batch_caps(void **state)
{
  (void)state;
  al_queue *q = open_q();
  int64_t ids[8];
  for (unsigned long i = 0; i < 4; i++)
    add(q, "acme/a", i + 1, &ids[i]);
  for (unsigned long i = 0; i < 3; i++)
    add(q, "acme/b", i + 1, &ids[4 + i]);
  al_queue_run rows[16];
  al_error err = {0};
  /* all 4, at most 2 per repository: a1 a2 b1 b2, oldest first */
  int n = al_queue_next_batch(q, 4, 2, rows, 16, &err);
  assert_int_equal(n, 4);
  assert_string_equal(rows[0].repo, "acme/a");
  assert_int_equal(rows[0].number, 1);
  assert_int_equal(rows[1].number, 2);
  assert_string_equal(rows[2].repo, "acme/b");
  assert_string_equal(rows[3].repo, "acme/b");
  /* max smaller than what the caps allow */
  assert_int_equal(al_queue_next_batch(q, 4, 2, rows, 1, &err), 1);
  /* a running row of acme/a counts against both caps */
  assert_int_equal(al_queue_start(q, ids[0],
                                  &(al_queue_attempt){.pid = 999999,
                                                      .pid_start = "1",
                                                      .record = "/nonexistent",
                                                      .log = "/nonexistent"},
                                  &err),
                   0);
  n = al_queue_next_batch(q, 3, 2, rows, 16, &err);
  assert_int_equal(n, 2); /* 3 - 1 running: a2 (a now 2), b1 */
  assert_int_equal(rows[0].number, 2);
  assert_string_equal(rows[1].repo, "acme/b");
  assert_int_equal(al_queue_next_batch(q, 1, 2, rows, 16, &err), 0); /* global cap full */
  al_queue_close(q);
}

static void test_lease_parse(void **state)
{
  (void)state;
  al_kube_lease l;
  al_error err = {0};
  const char *good = "{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{"
                     "\"holderIdentity\":\"pod-a\",\"leaseDurationSeconds\":15,\"renewTime\":"
                     "\"2026-12-01T11:00:00.000000Z\",\"leaseTransitions\":2}}";
  assert_int_equal(al_kube_lease_parse(good, strlen(good), &l, &err), 0);
  assert_string_equal(l.holder, "pod-a");
  assert_string_equal(l.resource_version, "42");
  assert_int_equal(l.duration_s, 15);
  assert_int_equal(l.transitions, 2);
  static const struct {
    const char *json, *why;
  } bad[] = {
      {"{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"1\"}}", "kind Lease"},
      {"{\"kind\":\"Lease\",\"metadata\":{}}", "resourceVersion missing"},
      {"{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"\"}}", "empty"},
      {"{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":"
       "\"a b\"}}",
       "holderIdentity"},
      {"{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{"
       "\"leaseDurationSeconds\":-1}}",
       "leaseDurationSeconds"},
      {"{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{"
       "\"leaseDurationSeconds\":\"15\"}}",
       "leaseDurationSeconds"},
      {"{\"kind\":\"Lease\",\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"1\"}}", "JSON"},
      {"{\"kind\":\"Lease\",\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":[]}", "spec"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&err, 0, sizeof err);
    assert_int_equal(al_kube_lease_parse(bad[i].json, strlen(bad[i].json), &l, &err), -1);
    if (!strstr(err.msg, bad[i].why))
      fail_msg("case %zu: `%s` does not name `%s`", i, err.msg, bad[i].why);
  }
  /* the written form reads back (l again: a failed parse clears it) */
  assert_int_equal(al_kube_lease_parse(good, strlen(good), &l, &err), 0);
  char *j = al_kube_lease_json("airlock", "airlock-serve", &l);
  al_kube_lease back;
  assert_int_equal(al_kube_lease_parse(j, strlen(j), &back, &err), 0);
  assert_string_equal(back.holder, "pod-a");
  free(j);
}

int main(void)
{
  if (!mkdtemp(dir))
    return 1;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_batch_caps),
                                     cmocka_unit_test(test_lease_parse)};
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    r = r ? r : 1;
  return r;
}
