/* The ETag cache (src/lib/forge/etags.c): what it keeps and gives back,
 * and that a file breaking a rule is not used at all (hostile input): each
 * bad file is beside a control, the same file made good, that is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "forge/etags.h"

#define API "https://api.example.test"
#define REPO "acme/tally"
#define P "/repos/acme/tally/branches/main/protection"

static char g_dir[] = "/tmp/test-etags.XXXXXX";

static char *file_in(const char *name)
{
  char *f = malloc(strlen(g_dir) + strlen(name) + 2);
  sprintf(f, "%s/%s", g_dir, name);
  return f;
}

static void write_text(const char *f, const char *s, mode_t mode)
{
  unlink(f);
  FILE *o = fopen(f, "w");
  assert_non_null(o);
  fputs(s, o);
  fclose(o);
  assert_int_equal(chmod(f, mode), 0);
}

/* Whether a cache opened on f offers an If-None-Match for P. */
static bool used(const char *f)
{
  al_etags *e = NULL;
  al_error err = {0};
  assert_int_equal(al_etags_open(f, API, REPO, &e, &err), 0);
  char *inm = al_etags_if_none_match(e, P);
  bool u = inm != NULL;
  free(inm);
  al_etags_free(e);
  return u;
}

static const char *good_doc =
    "{\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[{\"path\":\"" P
    "\",\"etag\":\"\\\"abc\\\"\",\"body\":\"{}\"}]}";

static void test_roundtrip(void **state)
{
  (void)state;
  char *f = file_in("rt.json");
  al_etags *e = NULL;
  al_error err = {0};
  assert_int_equal(al_etags_open(f, API, REPO, &e, &err), 0);
  assert_null(al_etags_if_none_match(e, P));
  al_etags_store(e, P, "\"one\"", "{\"a\":1}", 7, NULL);
  al_etags_store(e, P, "W/\"two\"", "{\"a\":2}", 7, NULL);
  /* outside the repository, a bad ETag: not kept */
  al_etags_store(e, "/repos/acme/other", "\"x\"", "{}", 2, NULL);
  al_etags_store(e, "/repos/acme/tally/x", "no-quotes", "{}", 2, NULL);
  assert_int_equal(al_etags_save(e, &err), 0);
  al_etags_free(e);
  struct stat st;
  assert_int_equal(stat(f, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);

  assert_int_equal(al_etags_open(f, API, REPO, &e, &err), 0);
  char *inm = al_etags_if_none_match(e, P);
  assert_string_equal(inm, "\"one\", W/\"two\"");
  free(inm);
  assert_null(al_etags_if_none_match(e, "/repos/acme/other"));
  assert_null(al_etags_if_none_match(e, "/repos/acme/tally/x"));
  char *body = NULL, *next = NULL;
  size_t len = 0;
  assert_true(al_etags_hit(e, P, "W/\"two\"", &body, &len, &next));
  assert_string_equal(body, "{\"a\":2}");
  assert_null(next);
  free(body);
  assert_false(al_etags_hit(e, P, "\"three\"", &body, &len, &next));
  /* no ETag on the 304 and two answers kept: ambiguous, not used */
  assert_false(al_etags_hit(e, P, NULL, &body, &len, &next));
  al_etags_free(e);
  free(f);
}

static void test_hostile_files(void **state)
{
  (void)state;
  char *f = file_in("c.json");
  write_text(f, good_doc, 0600);
  assert_true(used(f)); /* control: the good file is used */

  write_text(f, good_doc, 0666);
  assert_false(used(f)); /* writable by others */
  write_text(f, good_doc, 0620);
  assert_false(used(f)); /* writable by the group */

  char *l = file_in("link.json");
  write_text(f, good_doc, 0600);
  unlink(l);
  assert_int_equal(symlink(f, l), 0);
  assert_false(used(l)); /* a symlink, even to a good file */
  assert_true(used(f));

  static const char *const bad[] = {
      "not json",
      "[]",
      "{\"version\":2,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[]}",
      /* another repository's file */
      "{\"version\":1,\"api\":\"" API "\",\"repo\":\"acme/loose\",\"entries\":[{\"path\":\"" P
      "\",\"etag\":\"\\\"abc\\\"\",\"body\":\"{}\"}]}",
      /* an entry outside the repository, beside a good one */
      "{\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[{\"path\":\"" P
      "\",\"etag\":\"\\\"abc\\\"\",\"body\":\"{}\"},{\"path\":\"/repos/acme/other\","
      "\"etag\":\"\\\"abc\\\"\",\"body\":\"{}\"}]}",
      /* a path climbing out */
      "{\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[{\"path\":\"" P
      "\",\"etag\":\"\\\"abc\\\"\",\"body\":\"{}\"},{\"path\":\"/repos/acme/tally/../../x\","
      "\"etag\":\"\\\"abc\\\"\",\"body\":\"{}\"}]}",
      /* an ETag with a header injection */
      "{\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[{\"path\":\"" P
      "\",\"etag\":\"\\\"a\\\"\\r\\nX-Evil: 1\",\"body\":\"{}\"}]}",
      /* an unquoted ETag */
      "{\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[{\"path\":\"" P
      "\",\"etag\":\"abc\",\"body\":\"{}\"}]}",
      /* a body that is not a string */
      "{\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[{\"path\":\"" P
      "\",\"etag\":\"\\\"abc\\\"\",\"body\":{}}]}",
      /* a duplicate key */
      "{\"version\":1,\"version\":1,\"api\":\"" API "\",\"repo\":\"" REPO "\",\"entries\":[]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_text(f, bad[i], 0600);
    if (used(f))
      fail_msg("bad cache file %zu was used: %s", i, bad[i]);
  }
  /* another API URL: stale, not used either */
  write_text(f, good_doc, 0600);
  al_etags *e = NULL;
  al_error err = {0};
  assert_int_equal(al_etags_open(f, "https://api.example.test:8443", REPO, &e, &err), 0);
  assert_null(al_etags_if_none_match(e, P));
  al_etags_free(e);
  free(l);
  free(f);
}

static void test_per_path_cap(void **state)
{
  (void)state;
  char *f = file_in("cap.json");
  unlink(f);
  al_etags *e = NULL;
  al_error err = {0};
  assert_int_equal(al_etags_open(f, API, REPO, &e, &err), 0);
  char t[16];
  for (int i = 0; i < AL_ETAGS_PER_PATH + 2; i++) {
    snprintf(t, sizeof t, "\"%d\"", i);
    al_etags_store(e, P, t, "{}", 2, NULL);
  }
  char *inm = al_etags_if_none_match(e, P);
  /* the oldest went: 2..5 are kept */
  assert_string_equal(inm, "\"2\", \"3\", \"4\", \"5\"");
  free(inm);
  al_etags_free(e);
  free(f);
}

int main(void)
{
  if (!mkdtemp(g_dir))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_hostile_files),
      cmocka_unit_test(test_per_path_cap),
  };
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  (void)!system(cmd);
  return r;
}
