/* Unit tests for Jira and Linear webhooks (serve/webhook_jira.c,
 * webhook_linear.c; issue #31 item 4): signed deliveries accepted and
 * read as triggers, forged ones (another secret, a changed body, no
 * signature, a malformed one, no secret configured) refused, replayed ones
 * refused (Jira: the same X-Atlassian-Webhook-Identifier, through the
 * queue's delivery table as serve uses it; Linear: webhookTimestamp more
 * than a minute away, and the same Linear-Delivery through the queue).
 * Each refusal's control is the same delivery accepted with the right
 * signature, identifier or timestamp. Payloads are shaped from the
 * vendors' documented examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/hmac.h>

#include "common/util.h"
#include "serve/queue.h"
#include "serve/webhook_tickets.h"

static const char secret[] = "s3cret-for-tests";

static void sign(const char *body, const char *key, char hex[65])
{
  unsigned char md[32];
  unsigned int ml = 0;
  HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)body, strlen(body), md, &ml);
  for (int i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static const char jira_labeled[] =
    "{\"timestamp\":1764633600000,\"webhookEvent\":\"jira:issue_updated\",\"issue_event_type_"
    "name\":"
    "\"issue_generic\",\"user\":{\"self\":\"https://acme.atlassian.net/rest/api/2/user?accountId="
    "5b10a2844c20165700ede21g\",\"accountId\":\"5b10a2844c20165700ede21g\",\"displayName\":\"Mia\"}"
    ","
    "\"issue\":{\"id\":\"10002\",\"key\":\"PROJ-7\",\"fields\":{\"project\":{\"key\":\"PROJ\"},"
    "\"labels\":[\"airlock\",\"bug\"],\"assignee\":null}},\"changelog\":{\"id\":\"10100\","
    "\"items\":"
    "[{\"field\":\"labels\",\"fieldtype\":\"jira\",\"from\":null,\"fromString\":\"bug\",\"to\":"
    "null,"
    "\"toString\":\"airlock bug\"}]}}";

static void jira_signed_and_forged(void **state)
{
  (void)state;
  char hex[65], hdr[80];
  al_error e = {0};
  sign(jira_labeled, secret, hex);
  snprintf(hdr, sizeof hdr, "sha256=%s", hex);
  /* signed: accepted, and a trigger */
  assert_int_equal(
      al_wh_jira_verify(secret, strlen(secret), hdr, jira_labeled, strlen(jira_labeled), &e), 0);
  al_wh_ticket_event ev;
  assert_int_equal(
      al_wh_jira_parse(jira_labeled, strlen(jira_labeled), "airlock", NULL, "PROJ", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_RUN);
  assert_string_equal(ev.key, "PROJ-7");
  assert_string_equal(ev.trigger, "label");
  assert_string_equal(ev.sender, "5b10a2844c20165700ede21g");

  /* forged: another secret, a changed body, no or bad header, no secret */
  char other[65], ohdr[80];
  sign(jira_labeled, "another-secret", other);
  snprintf(ohdr, sizeof ohdr, "sha256=%s", other);
  assert_int_equal(
      al_wh_jira_verify(secret, strlen(secret), ohdr, jira_labeled, strlen(jira_labeled), &e), -1);
  assert_non_null(strstr(e.msg, "does not match"));
  char changed[sizeof jira_labeled];
  memcpy(changed, jira_labeled, sizeof changed);
  memcpy(strstr(changed, "PROJ-7"), "PROJ-8", 6);
  assert_int_equal(al_wh_jira_verify(secret, strlen(secret), hdr, changed, strlen(changed), &e),
                   -1);
  assert_int_equal(
      al_wh_jira_verify(secret, strlen(secret), NULL, jira_labeled, strlen(jira_labeled), &e), -1);
  assert_non_null(strstr(e.msg, "missing"));
  assert_int_equal(
      al_wh_jira_verify(secret, strlen(secret), hex, jira_labeled, strlen(jira_labeled), &e), -1);
  assert_non_null(strstr(e.msg, "malformed"));
  hdr[20] = 'x';
  assert_int_equal(
      al_wh_jira_verify(secret, strlen(secret), hdr, jira_labeled, strlen(jira_labeled), &e), -1);
  assert_int_equal(al_wh_jira_verify(secret, 0, ohdr, jira_labeled, strlen(jira_labeled), &e), -1);
  assert_non_null(strstr(e.msg, "no usable webhook secret"));
}

static void jira_triggers(void **state)
{
  (void)state;
  al_wh_ticket_event ev;
  al_error e = {0};
  /* `bug` was there before (fromString): not added, not a trigger */
  assert_int_equal(al_wh_jira_parse(jira_labeled, strlen(jira_labeled), "bug", NULL, NULL, &ev, &e),
                   0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  /* another project: ignored with its reason */
  assert_int_equal(
      al_wh_jira_parse(jira_labeled, strlen(jira_labeled), "airlock", NULL, "OPS", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  assert_non_null(strstr(ev.why, "project"));
  /* assignment to the bot */
  static const char assigned[] =
      "{\"webhookEvent\":\"jira:issue_updated\",\"user\":{\"accountId\":\"u1\"},\"issue\":{\"id\":"
      "\"10002\",\"key\":\"PROJ-7\",\"fields\":{\"project\":{\"key\":\"PROJ\"}}},\"changelog\":{"
      "\"items\":[{\"field\":\"assignee\",\"from\":null,\"to\":\"bot-1\",\"toString\":\"airlock\"}]"
      "}}";
  assert_int_equal(al_wh_jira_parse(assigned, strlen(assigned), NULL, "bot-1", "PROJ", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_RUN);
  assert_string_equal(ev.trigger, "assignee");
  assert_int_equal(al_wh_jira_parse(assigned, strlen(assigned), NULL, "bot-2", "PROJ", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  /* malformed: each names its field */
  static const struct {
    const char *body, *msg;
  } bad[] = {
      {"[]", "JSON object"},
      {"{\"webhookEvent\":1}", "webhookEvent"},
      {"{\"webhookEvent\":\"jira:issue_updated\"}", "issue.fields"},
      {"{\"webhookEvent\":\"jira:issue_updated\",\"issue\":{\"key\":\"proj-7\",\"fields\":{}}}",
       "issue.key"},
      {"{\"webhookEvent\":\"jira:issue_updated\",\"user\":{\"accountId\":\"u\"},\"issue\":{\"id\":"
       "\"1\",\"key\":\"PROJ-7\",\"fields\":{\"project\":{\"key\":\"OPS\"}}}}",
       "not the key's project"},
      {"{\"webhookEvent\":\"a\",\"webhookEvent\":\"b\"}", "JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e.msg[0] = '\0';
    assert_int_equal(
        al_wh_jira_parse(bad[i].body, strlen(bad[i].body), "airlock", NULL, NULL, &ev, &e), -1);
    if (!strstr(e.msg, bad[i].msg))
      fail_msg("%s: got `%s`", bad[i].body, e.msg);
  }
  /* not an issue event: ignored */
  static const char cc[] = "{\"webhookEvent\":\"comment_created\"}";
  assert_int_equal(al_wh_jira_parse(cc, strlen(cc), "a", NULL, NULL, &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
}

static char *linear_body(int64_t ts, const char *action, const char *from)
{
  char *b = al_xmalloc(2048);
  snprintf(b, 2048,
           "{\"action\":\"%s\",\"type\":\"Issue\",\"createdAt\":\"2026-12-02T00:00:00.000Z\","
           "\"organizationId\":\"org-1\",\"url\":\"https://linear.app/acme/issue/ENG-42\","
           "\"actor\":{\"id\":\"user-7\",\"type\":\"user\",\"name\":\"Ann\"},\"data\":{\"id\":"
           "\"8f1c2d6e-1111-4a2b-9c3d-0123456789ab\",\"identifier\":\"ENG-42\",\"title\":\"Tally\","
           "\"team\":{\"id\":\"t1\",\"key\":\"ENG\",\"name\":\"Eng\"},\"labelIds\":[\"l-air\"],"
           "\"labels\":[{\"id\":\"l-air\",\"name\":\"airlock\"}],\"assigneeId\":\"app-1\"},"
           "\"updatedFrom\":%s,\"webhookTimestamp\":%lld,\"webhookId\":\"wh-1\"}",
           action, from, (long long)ts);
  return b;
}

static void linear_signed_forged_replayed(void **state)
{
  (void)state;
  int64_t now = 1764633600000;
  al_error e = {0};
  al_wh_ticket_event ev;
  char *b = linear_body(now - 1000, "update", "{\"labelIds\":[],\"updatedAt\":\"x\"}");
  char hex[65];
  sign(b, secret, hex);
  assert_int_equal(al_wh_linear_verify(secret, strlen(secret), hex, b, strlen(b), &e), 0);
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now, "airlock", "app-1", "ENG", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_RUN);
  assert_string_equal(ev.trigger, "label");
  assert_string_equal(ev.key, "ENG-42");
  /* forged */
  char other[65];
  sign(b, "another-secret", other);
  assert_int_equal(al_wh_linear_verify(secret, strlen(secret), other, b, strlen(b), &e), -1);
  assert_non_null(strstr(e.msg, "Linear-Signature does not match"));
  assert_int_equal(al_wh_linear_verify(secret, strlen(secret), NULL, b, strlen(b), &e), -1);
  char pre[80];
  snprintf(pre, sizeof pre, "sha256=%s", hex);
  assert_int_equal(al_wh_linear_verify(secret, strlen(secret), pre, b, strlen(b), &e), -1);
  /* replayed: the same signed body, a minute and more later; the control
   * is the same body within the minute, both ways */
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now + 59000, "airlock", NULL, NULL, &ev, &e),
                   0);
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now + 60001, "airlock", NULL, NULL, &ev, &e),
                   -1);
  assert_non_null(strstr(e.msg, "replayed"));
  free(b);
  b = linear_body(now + 61001, "update", "{\"labelIds\":[]}");
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now, "airlock", NULL, NULL, &ev, &e), -1);
  free(b);
  /* the label was there before; then assignment to the app is the trigger */
  b = linear_body(now, "update", "{\"labelIds\":[\"l-air\"],\"assigneeId\":null}");
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now, "airlock", NULL, NULL, &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now, "airlock", "app-1", NULL, &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_RUN);
  assert_string_equal(ev.trigger, "assignee");
  /* another team */
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now, "airlock", "app-1", "OPS", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  free(b);
  b = linear_body(now, "remove", "{}");
  assert_int_equal(al_wh_linear_parse(b, strlen(b), now, "airlock", "app-1", NULL, &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  free(b);
  static const char *const bad[] = {
      "{\"action\":\"update\"}", "{\"webhookTimestamp\":\"1\"}", "[1]",
      ("{\"webhookTimestamp\":1764633600000,\"action\":\"update\",\"type\":\"Issue\",\"data\":{"
       "\"identifier\":\"eng-42\"}}")}; /* one literal, split */
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(al_wh_linear_parse(bad[i], strlen(bad[i]), now, "a", NULL, NULL, &ev, &e), -1);
}

/* A copy of body with its first `from` replaced by `to` (malloc'd). */
static char *swap(const char *body, const char *from, const char *to)
{
  const char *at = strstr(body, from);
  assert_non_null(at);
  return al_strdup_printf("%.*s%s%s", (int)(at - body), body, to, at + strlen(from));
}

/* Linear: an id or sender read for a run is present and not empty, and a
 * field has its documented type. An empty actor.id queued a run for no
 * one and an empty data.id a run for no issue (Jira's were fixed in
 * 9bb1f1d); data.team.key as a number was read as no team key, and the
 * check that it is the identifier's team skipped. Each refusal's control
 * is the same delivery with the documented value: a trigger. */
static void linear_fields_present_and_typed(void **state)
{
  (void)state;
  al_wh_ticket_event ev;
  al_error e = {0};
  int64_t now = 1764633600000;
  char *ok = linear_body(now, "create", "{}");
  assert_int_equal(al_wh_linear_parse(ok, strlen(ok), now, "airlock", NULL, "ENG", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_RUN);
  assert_string_equal(ev.sender, "user-7");
  static const struct {
    const char *from, *to, *msg;
  } bad[] = {
      {"{\"id\":\"user-7\"", "{\"id\":\"\"", "actor.id"},
      {"\"8f1c2d6e-1111-4a2b-9c3d-0123456789ab\"", "\"\"", "data.id"},
      {"\"key\":\"ENG\"", "\"key\":7", "data.team.key"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *b = swap(ok, bad[i].from, bad[i].to);
    e.msg[0] = '\0';
    int rc = al_wh_linear_parse(b, strlen(b), now, "airlock", NULL, "ENG", &ev, &e);
    if (rc != -1 || !strstr(e.msg, bad[i].msg))
      fail_msg("%s: rc %d kind %d sender `%s`, `%s`", bad[i].to, rc, ev.kind, ev.sender, e.msg);
    free(b);
  }
  free(ok);
}

/* A replay by identifier, as serve records deliveries: the queue's
 * delivery table answers 1 the second time. Control: another identifier
 * with another body is new. */
static void replay_through_queue(void **state)
{
  (void)state;
  char dir[] = "/tmp/airlock-whtk.XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/q.db", dir);
  al_queue *q = NULL;
  al_error e = {0};
  assert_int_equal(al_queue_open(path, &q, &e), 0);
  char d1[65], d2[65];
  al_sha256_hex(jira_labeled, strlen(jira_labeled), d1);
  al_sha256_hex("other", 5, d2);
  assert_true(al_wh_ticket_delivery_ok("9a2b6c4e-5d1f-4e8a-b0c3-1d2e3f4a5b6c"));
  assert_false(al_wh_ticket_delivery_ok("x y"));
  assert_false(al_wh_ticket_delivery_ok(""));
  assert_int_equal(al_queue_delivery_new(q, "jira-9a2b6c4e", d1, "jira:issue_updated", &e), 0);
  assert_int_equal(al_queue_delivery_new(q, "jira-9a2b6c4e", d1, "jira:issue_updated", &e), 1);
  assert_int_equal(al_queue_delivery_new(q, "jira-77", d2, "jira:issue_updated", &e), 0);
  assert_int_equal(al_queue_delivery_new(q, "linear-1", d1, "Issue", &e), 1); /* same body */
  al_queue_close(q);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jira_signed_and_forged),
      cmocka_unit_test(jira_triggers),
      cmocka_unit_test(linear_signed_forged_replayed),
      cmocka_unit_test(linear_fields_present_and_typed),
      cmocka_unit_test(replay_through_queue),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
