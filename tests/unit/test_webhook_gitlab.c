/* Unit tests for serve/webhook_gitlab.c (issue #30 item 5): GitLab's Issue
 * Hook and Note Hook payloads (tests/unit/gitlab-webhooks/, shaped from the
 * examples of GitLab's "Webhook events" page) as triggers, the secret token
 * and the signed form. Each refusal beside its control: the delivery that
 * passes, changed in the one thing the rule reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "serve/webhook_gitlab.h"

static json_t *fixture(const char *name)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/unit/gitlab-webhooks/%s", AIRLOCK_SRC, name);
  json_error_t je;
  json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    fail_msg("%s: %s", path, je.text);
  return j;
}

/* Parse j as event: 1 RUN, 0 IGNORE, -1 refused. */
static int parse(const char *event, json_t *j, al_gl_webhook_event *ev)
{
  char *b = json_dumps(j, JSON_COMPACT);
  al_error e = {0};
  int r = al_gl_webhook_parse(event, b, strlen(b), "airlock", "/airlock run", ev, &e);
  free(b);
  if (r < 0) {
    assert_true(e.msg[0] != '\0');
    return -1;
  }
  return ev->kind == AL_WEBHOOK_RUN ? 1 : 0;
}

static void test_issue_label(void **state)
{
  (void)state;
  al_gl_webhook_event ev;
  json_t *j = fixture("issue-label-added.json");
  assert_int_equal(parse("Issue Hook", j, &ev), 1);
  assert_string_equal(ev.project, "gitlabhq/gitlab-test");
  assert_int_equal(ev.project_id, 1);
  assert_int_equal(ev.number, 23);
  assert_string_equal(ev.sender, "root");
  /* another trigger label: ignored (control: the fixture's own) */
  al_error e = {0};
  char *b = json_dumps(j, JSON_COMPACT);
  assert_int_equal(al_gl_webhook_parse("Issue Hook", b, strlen(b), "other", "/x", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  free(b);
  /* the label was already there: not added by this change */
  json_t *prev =
      json_object_get(json_object_get(json_object_get(j, "changes"), "labels"), "previous");
  json_array_append_new(prev, json_pack("{s:s}", "title", "airlock"));
  assert_int_equal(parse("Issue Hook", j, &ev), 0);
  json_array_remove(prev, json_array_size(prev) - 1);
  assert_int_equal(parse("Issue Hook", j, &ev), 1);
  /* no labels change at all */
  json_t *ch = json_deep_copy(json_object_get(j, "changes"));
  json_object_del(json_object_get(j, "changes"), "labels");
  assert_int_equal(parse("Issue Hook", j, &ev), 0);
  json_object_set_new(j, "changes", ch);
  assert_int_equal(parse("Issue Hook", j, &ev), 1);
  /* a closing, not an update */
  json_object_set_new(json_object_get(j, "object_attributes"), "action", json_string("close"));
  assert_int_equal(parse("Issue Hook", j, &ev), 0);
  json_object_set_new(json_object_get(j, "object_attributes"), "action", json_string("update"));
  /* the header and the payload disagree: refused */
  assert_int_equal(parse("Note Hook", j, &ev), -1);
  assert_int_equal(parse("Issue Hook", j, &ev), 1);
  json_decref(j);
}

static void test_note(void **state)
{
  (void)state;
  al_gl_webhook_event ev;
  json_t *j = fixture("note-on-issue.json");
  assert_int_equal(parse("Note Hook", j, &ev), 1);
  assert_string_equal(ev.project, "gitlab-org/gitlab-test");
  assert_int_equal(ev.number, 17);
  json_t *a = json_object_get(j, "object_attributes");
  /* not the command at the start */
  json_object_set_new(a, "note", json_string("please /airlock run"));
  assert_int_equal(parse("Note Hook", j, &ev), 0);
  json_object_set_new(a, "note", json_string("/airlock running"));
  assert_int_equal(parse("Note Hook", j, &ev), 0);
  json_object_set_new(a, "note", json_string("  /airlock run"));
  assert_int_equal(parse("Note Hook", j, &ev), 1);
  /* a note on a merge request, an edited note */
  json_object_set_new(a, "noteable_type", json_string("MergeRequest"));
  assert_int_equal(parse("Note Hook", j, &ev), 0);
  json_object_set_new(a, "noteable_type", json_string("Issue"));
  json_object_set_new(a, "action", json_string("update"));
  assert_int_equal(parse("Note Hook", j, &ev), 0);
  json_object_del(a, "action"); /* older GitLab: no action, a new note */
  assert_int_equal(parse("Note Hook", j, &ev), 1);
  json_decref(j);
}

static void test_strict(void **state)
{
  (void)state;
  al_gl_webhook_event ev;
  al_error e = {0};
  json_t *j = fixture("note-on-issue.json");
  struct {
    const char *obj, *key;
    json_t *v;
  } bad[] = {
      {"project", "path_with_namespace", json_string("gitlab-test")},
      {"project", "path_with_namespace", json_string("a/../b")},
      /* GitLab refuses a path ending in .git, and so does the gateway that
       * run would go through (forge/names.h, the one rule) */
      {"project", "path_with_namespace", json_string("gitlab-org/gitlab-test.git")},
      {"project", "path_with_namespace", json_string("gitlab-org.GIT/gitlab-test")},
      {"project", "path_with_namespace", json_integer(5)},
      {"project", "id", json_integer(0)},
      {"user", "username", json_string("-root")},
      {"user", "username", json_string("ro ot")},
      {"issue", "iid", json_integer(0)},
      {"issue", "iid", json_string("17")},
      {"issue", "iid", json_integer(2147483648LL)},
      {"object_attributes", "note", json_integer(1)},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *c = json_deep_copy(j);
    json_object_set_new(json_object_get(c, bad[i].obj), bad[i].key, bad[i].v);
    if (parse("Note Hook", c, &ev) != -1)
      fail_msg("%s.%s: accepted", bad[i].obj, bad[i].key);
    json_decref(c);
  }
  assert_int_equal(parse("Note Hook", j, &ev), 1); /* the control */
  const char *dup = "{\"object_kind\":\"note\",\"object_kind\":\"note\"}";
  assert_int_equal(al_gl_webhook_parse("Note Hook", dup, strlen(dup), "a", "/a", &ev, &e), -1);
  assert_int_equal(al_gl_webhook_parse("Note Hook", "[]", 2, "a", "/a", &ev, &e), -1);
  assert_int_equal(al_gl_webhook_parse("Note\nHook", "{}", 2, "a", "/a", &ev, &e), -1);
  assert_int_equal(al_gl_webhook_parse("Push Hook", "{}", 2, "a", "/a", &ev, &e), 0);
  assert_int_equal(ev.kind, AL_WEBHOOK_IGNORE);
  json_decref(j);
}

static void test_token(void **state)
{
  (void)state;
  al_error e = {0};
  assert_int_equal(al_gl_webhook_verify_token("s3cret", 6, "s3cret", &e), 0);
  assert_int_equal(al_gl_webhook_verify_token("s3cret", 6, "s3creT", &e), -1);
  assert_int_equal(al_gl_webhook_verify_token("s3cret", 6, "s3cret ", &e), -1);
  assert_int_equal(al_gl_webhook_verify_token("s3cret", 6, "", &e), -1);
  assert_int_equal(al_gl_webhook_verify_token("s3cret", 6, NULL, &e), -1);
  assert_int_equal(al_gl_webhook_verify_token("", 0, "", &e), -1);
}

static void sign(const unsigned char *key, size_t kl, const char *id, const char *ts,
                 const char *body, char *out, size_t cap)
{
  char msg[4096];
  int ml = snprintf(msg, sizeof msg, "%s.%s.%s", id, ts, body);
  unsigned char mac[32];
  unsigned int macl = 0;
  assert_non_null(HMAC(EVP_sha256(), key, (int)kl, (unsigned char *)msg, (size_t)ml, mac, &macl));
  unsigned char b64[64];
  int bl = EVP_EncodeBlock(b64, mac, 32);
  snprintf(out, cap, "v1,%.*s", bl, (const char *)b64);
}

static void test_signed(void **state)
{
  (void)state;
  al_error e = {0};
  unsigned char key[64];
  size_t kl;
  /* whsec_ + base64("0123456789abcdef0123456789abcdef") */
  const char *tok = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
  assert_int_equal(al_gl_webhook_signing_key(tok, key, &kl, &e), 0);
  assert_int_equal(kl, 32);
  assert_memory_equal(key, "0123456789abcdef0123456789abcdef", 32);
  assert_int_equal(
      al_gl_webhook_signing_key("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", key, &kl, &e), -1);
  assert_int_equal(al_gl_webhook_signing_key("whsec_MDEy", key, &kl, &e), -1);
  assert_int_equal(al_gl_webhook_signing_key("whsec_!!!!", key, &kl, &e), -1);
  assert_int_equal(al_gl_webhook_signing_key(tok, key, &kl, &e), 0);

  const char *body = "{\"object_kind\":\"note\"}";
  const char *id = "d7b1e5c2-7f35-4d6e-9d5a-2f4f8c3b9a10";
  char sig[128], other[128], both[300];
  sign(key, kl, id, "1764633600", body, sig, sizeof sig);
  int64_t now = 1764633600 + 10;
  assert_int_equal(
      al_gl_webhook_verify_signed(key, kl, id, "1764633600", sig, body, strlen(body), now, 300, &e),
      0);
  /* one of several entries (key rotation) */
  unsigned char k2[32] = {1};
  sign(k2, sizeof k2, id, "1764633600", body, other, sizeof other);
  snprintf(both, sizeof both, "%s %s", other, sig);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, id, "1764633600", both, body, strlen(body),
                                               now, 300, &e),
                   0);
  /* refusals: the wrong key, a changed body, id or time, too old, malformed */
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, id, "1764633600", other, body, strlen(body),
                                               now, 300, &e),
                   -1);
  assert_int_equal(
      al_gl_webhook_verify_signed(key, kl, id, "1764633600", sig, "{}", 2, now, 300, &e), -1);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, "other-id", "1764633600", sig, body,
                                               strlen(body), now, 300, &e),
                   -1);
  assert_int_equal(
      al_gl_webhook_verify_signed(key, kl, id, "1764633601", sig, body, strlen(body), now, 300, &e),
      -1);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, id, "1764633600", sig, body, strlen(body),
                                               now + 1000, 300, &e),
                   -1);
  assert_non_null(strstr(e.msg, "webhook-timestamp"));
  assert_int_equal(
      al_gl_webhook_verify_signed(key, kl, id, "17646336x0", sig, body, strlen(body), now, 300, &e),
      -1);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, id, "1764633600", sig + 3, body,
                                               strlen(body), now, 300, &e),
                   -1);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, id, "1764633600", "v1,", body, strlen(body),
                                               now, 300, &e),
                   -1);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, id, "1764633600", NULL, body, strlen(body),
                                               now, 300, &e),
                   -1);
  assert_int_equal(al_gl_webhook_verify_signed(key, kl, "a.b", "1764633600", sig, body,
                                               strlen(body), now, 300, &e),
                   -1);
}

static void test_uuid(void **state)
{
  (void)state;
  assert_true(al_gl_webhook_uuid_ok("d7b1e5c2-7f35-4d6e-9d5a-2f4f8c3b9a10"));
  assert_false(al_gl_webhook_uuid_ok("d7b1e5c2-7f35-4d6e-9d5a-2f4f8c3b9a1"));
  assert_false(al_gl_webhook_uuid_ok("d7b1e5c2x7f35-4d6e-9d5a-2f4f8c3b9a10"));
  assert_false(al_gl_webhook_uuid_ok("g7b1e5c2-7f35-4d6e-9d5a-2f4f8c3b9a10"));
  assert_false(al_gl_webhook_uuid_ok(""));
  assert_false(al_gl_webhook_uuid_ok(NULL));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_issue_label), cmocka_unit_test(test_note),
      cmocka_unit_test(test_strict),      cmocka_unit_test(test_token),
      cmocka_unit_test(test_signed),      cmocka_unit_test(test_uuid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
