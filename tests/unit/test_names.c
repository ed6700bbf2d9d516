/* forge/names.h: the one rule for OWNER/REPO, logins, API URLs and
 * permissions, with the cases where the six old checks disagreed (issue
 * #28 item 2): al_repo_name_check allowed 200 bytes and any owner of
 * [A-Za-z0-9._-]; al_ticket_parse_target, the policy and `policy init`
 * allowed 140 and refused OWNER/.github; the broker's check refused a bot's
 * login the webhook accepted; the policy's never-granted list was 4 names,
 * the broker's 20. Each case is asserted through every entry point that
 * once had its own rule (and tickets/target.c, the seventh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forge/names.h"
#include "policy/policy.h"
#include "ticket/ticket.h"
#include "tickets/tickets.h"

static int repo(const char *s)
{
  const char *why = NULL;
  int r = al_repo_name_check(s, &why);
  if (r < 0)
    assert_non_null(why);
  return r;
}

/* The target parser with a GitHub policy's check (al_ticket_repo_for_forge)
 * agrees with the name rule, whatever the name. */
static int target(const char *s)
{
  char t[512], out[300];
  unsigned long n = 0;
  al_error err = {0};
  snprintf(t, sizeof t, "%s#7", s);
  int r = al_ticket_parse_target(t, out, sizeof out, &n, &err);
  if (r == 0)
    r = al_ticket_repo_for_forge(out, AL_FORGE_GITHUB, &err);
  if (r == 0) {
    assert_string_equal(out, s);
    assert_int_equal(n, 7);
  } else {
    assert_true(err.msg[0]);
  }
  return r;
}

/* The policy's credentials role agrees too. */
static int policy_repo(const char *s)
{
  char y[512];
  snprintf(y, sizeof y, "version: 1\ncredentials:\n  git: {repo: \"%s\"}\n", s);
  al_policy *p = NULL;
  al_error err = {0};
  int r = al_policy_load_buffer("<t>", y, strlen(y), &p, &err);
  al_policy_free(p);
  return r < 0 ? -1 : 0;
}

/* And the tickets seam's GitHub target (tickets/target.c). */
static int tk_target(const char *s)
{
  char t[512];
  snprintf(t, sizeof t, "%s#7", s);
  al_tk_target tt;
  al_error err = {0};
  int r = al_tk_target_parse(AL_TK_GITHUB, t, NULL, &tt, &err);
  if (r == 0)
    assert_string_equal(tt.repo, s);
  return r < 0 ? -1 : 0;
}

static void both(const char *s, int want)
{
  assert_int_equal(repo(s), want);
  assert_int_equal(tk_target(s), want);
  assert_int_equal(target(s), want);
  assert_int_equal(policy_repo(s), want);
}

static char *rep(char c, size_t n)
{
  char *s = malloc(n + 1);
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

static void test_repo_rule(void **state)
{
  (void)state;
  both("acme/widget", 0);
  both("octo-org/.github", 0); /* the org's defaults repository: the target parser refused it */
  both("acme/a.b_c-d", 0);
  both("acme/.", -1);
  both("acme/..", -1);
  both("a.b/widget", -1); /* an owner is a login: al_repo_name_check allowed '.' */
  both("_acme/widget", -1);
  both(".acme/widget", -1);
  both("-acme/widget", -1);
  both("acme/", -1);
  both("/widget", -1);
  both("acme/w/x", -1);
  both("acme/wid get", -1);
  both("acme/wid#get", -1);
  both("octo_shortcode/widget", 0); /* an Enterprise Managed User's personal repository */
  both("octo_/widget", -1);
  both("acme[bot]/widget", -1);
  /* lengths: 39 + 1 + 100 = 140 the most; al_repo_name_check allowed 200 */
  char *o39 = rep('o', 39), *o40 = rep('o', 40), *r100 = rep('r', 100), *r101 = rep('r', 101);
  char s[300];
  snprintf(s, sizeof s, "%s/%s", o39, r100);
  assert_int_equal(strlen(s), 140);
  both(s, 0);
  snprintf(s, sizeof s, "%s/%s", o40, "x");
  both(s, -1);
  snprintf(s, sizeof s, "acme/%s", r101);
  both(s, -1);
  snprintf(s, sizeof s, "o/%s%s", r100,
           "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr");
  both(s, -1); /* 168 bytes: al_repo_name_check took it */
  free(o39), free(o40), free(r100), free(r101);
}

/* issue #30: a GitLab project in a subgroup, GROUP/SUB/PROJECT#N, parses;
 * a GitHub policy refuses it naming forge.kind gitlab, a GitLab one takes
 * it; GitLab's own rules still hold (no `.git` end, no leading `-`). */
static void test_target_gitlab(void **state)
{
  (void)state;
  char out[AL_TICKET_REPO_MAX];
  unsigned long n = 0;
  al_error err = {0};
  assert_int_equal(al_ticket_parse_target("acme/tools/tally#7", out, sizeof out, &n, &err), 0);
  assert_string_equal(out, "acme/tools/tally");
  assert_int_equal(n, 7);
  assert_int_equal(al_ticket_repo_for_forge(out, AL_FORGE_GITLAB, &err), 0);
  assert_int_equal(al_ticket_repo_for_forge(out, AL_FORGE_GITHUB, &err), -1);
  assert_non_null(strstr(err.msg, "forge.kind: gitlab"));
  /* control: OWNER/REPO is both forges' */
  assert_int_equal(al_ticket_repo_for_forge("acme/tally", AL_FORGE_GITHUB, &err), 0);
  assert_int_equal(al_ticket_repo_for_forge("acme/tally", AL_FORGE_GITLAB, &err), 0);
  assert_int_equal(al_ticket_parse_target("acme/tools/tally.git#7", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("acme/-tools/tally#7", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("acme//tally#7", out, sizeof out, &n, &err), -1);
  /* the policy's roles: a subgroup only with forge.kind gitlab */
  const char *gl = "version: 1\nforge: {kind: gitlab, api_url: \"https://g.test/api/v4\", git_url: "
                   "\"https://g.test\"}\ncredentials:\n  git: {repo: acme/tools/tally}\n";
  al_policy *p = NULL;
  assert_int_equal(al_policy_load_buffer("<t>", gl, strlen(gl), &p, &err), 0);
  al_policy_free(p);
  assert_int_equal(policy_repo("acme/tools/tally"), -1);
  p = NULL;
  assert_int_equal(
      al_policy_load_buffer("<t>", "version: 1\ncredentials:\n  git: {repo: acme/tools/tally}\n",
                            strlen("version: 1\ncredentials:\n  git: {repo: acme/tools/tally}\n"),
                            &p, &err),
      -1);
  assert_non_null(strstr(err.msg, "only with forge.kind: gitlab"));
  /* a GitLab path of 200 bytes fits; GitHub's rule alone would stop at 140 */
  char t[300];
  snprintf(t, sizeof t, "a/%0100d/%096d#3", 0, 0);
  assert_int_equal(al_ticket_parse_target(t, out, sizeof out, &n, &err), 0);
  assert_int_equal(strlen(out), 199);
}

static void test_target_shape(void **state)
{
  (void)state;
  char out[AL_REPO_MAX];
  unsigned long n;
  al_error err = {0};
  assert_int_equal(al_ticket_parse_target("acme/w#0", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("acme/w#", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("acme/w", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("acme/w#1x", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("a#b/w#1", out, sizeof out, &n, &err), -1);
  assert_int_equal(al_ticket_parse_target("acme/w#999999999", out, sizeof out, &n, &err), 0);
  assert_int_equal(n, 999999999);
  /* a caller's buffer too small is an error, never a cut name */
  char small[8];
  assert_int_equal(al_ticket_parse_target("acme/widget#1", small, sizeof small, &n, &err), -1);
  /* a Jira or Linear key (issue #31): only through the _key form, checked
   * later against the policy's kind (tickets/target.c) */
  assert_int_equal(al_ticket_parse_target("acme/w#PROJ-7", out, sizeof out, &n, &err), -1);
  char key[16];
  assert_int_equal(
      al_ticket_parse_target_key("acme/w#PROJ-7", out, sizeof out, &n, key, sizeof key, &err), 0);
  assert_string_equal(out, "acme/w");
  assert_string_equal(key, "PROJ-7");
  assert_int_equal(n, 0);
  assert_int_equal(
      al_ticket_parse_target_key("acme/w#12", out, sizeof out, &n, key, sizeof key, &err), 0);
  assert_string_equal(key, "");
  assert_int_equal(n, 12);
  assert_int_equal(al_ticket_parse_target_key("acme/w#PROJ-12345678901", out, sizeof out, &n, key,
                                              sizeof key, &err),
                   -1); /* longer than the caller's buffer: an error, never a cut key */
  assert_int_equal(
      al_ticket_parse_target_key("a#b/w#PROJ-7", out, sizeof out, &n, key, sizeof key, &err), -1);
  assert_int_equal(
      al_ticket_parse_target_key("acme/w#proj-7", out, sizeof out, &n, key, sizeof key, &err), -1);
  /* a key's shape is checked here, so a mistyped one is a usage error
   * before the policy is read: no dash, no number, a zero or signed number,
   * a one-letter or too long KEY */
  static const char *const bad_keys[] = {"acme/w#PROJ",    "acme/w#PROJ-",        "acme/w#PROJ-0",
                                         "acme/w#PROJ-07", "acme/w#PROJ-+7",      "acme/w#P-7",
                                         "acme/w#PROJ-7x", "acme/w#ABCDEFGHIJK-7"};
  for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
    err.msg[0] = '\0';
    assert_int_equal(
        al_ticket_parse_target_key(bad_keys[i], out, sizeof out, &n, key, sizeof key, &err), -1);
    assert_non_null(strstr(err.msg, "KEY-N"));
  }
  /* one key rule: what the target parse takes as a key is exactly what the
   * ticket systems' own parse takes (al_tk_key_parse), bounds included */
  static const char *const keys[] = {
      "PROJ-2147483647", "PROJ-2147483648", "PROJ-999999999", "PROJ-1000000000", "AB-1", "A_-1",
      "AB-01",           "ABCDEFGHIJ-3"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char t[64];
    al_tk_target tt;
    snprintf(t, sizeof t, "acme/w#%s", keys[i]);
    int a = al_ticket_parse_target_key(t, out, sizeof out, &n, key, sizeof key, &err);
    int b = al_tk_target_parse(AL_TK_JIRA, keys[i], NULL, &tt, &err);
    assert_int_equal(a, b);
  }
  assert_int_equal(al_ticket_parse_target_key("acme/w#PROJ-2147483647", out, sizeof out, &n, key,
                                              sizeof key, &err),
                   0);
  /* control: the same shapes made right pass */
  assert_int_equal(
      al_ticket_parse_target_key("acme/w#AB_1-7", out, sizeof out, &n, key, sizeof key, &err), 0);
  assert_string_equal(key, "AB_1-7");
  /* the README's placeholder as typed: named as such, by both forms */
  assert_int_equal(
      al_ticket_parse_target_key("OWNER/REPO#N", out, sizeof out, &n, key, sizeof key, &err), -1);
  assert_non_null(strstr(err.msg, "placeholder"));
  assert_int_equal(al_ticket_parse_target("OWNER/REPO#1", out, sizeof out, &n, &err), -1);
  assert_non_null(strstr(err.msg, "placeholder"));
}

static void test_login_rule(void **state)
{
  (void)state;
  const char *why;
  assert_int_equal(al_login_check("octocat", false, &why), 0);
  assert_int_equal(al_login_check("a", false, &why), 0);
  assert_int_equal(al_login_check("old--name-", false, &why), 0); /* legacy accounts */
  assert_int_equal(al_login_check("-lead", false, &why), -1);
  assert_int_equal(al_login_check("", false, &why), -1);
  assert_int_equal(al_login_check("a.b", false, &why), -1);
  assert_int_equal(al_login_check("name_acme", false, &why), 0);
  assert_int_equal(al_login_check("name_", false, &why), -1);
  assert_int_equal(al_login_check("name_a_b", false, &why), -1);
  assert_int_equal(al_login_check("name_a-b", false, &why), -1);
  /* an App's bot: the webhook took it, the broker's check refused it */
  assert_int_equal(al_login_check("airlock-app[bot]", true, &why), 0);
  assert_int_equal(al_login_check("airlock-app[bot]", false, &why), -1);
  assert_int_equal(al_login_check("[bot]", true, &why), -1);
  char *l39 = rep('l', 39), *l40 = rep('l', 40);
  assert_int_equal(al_login_check(l39, false, &why), 0);
  assert_int_equal(al_login_check(l40, false, &why), -1);
  l40[34] = '_'; /* an EMU login counts its shortcode in the 39 */
  assert_int_equal(al_login_check(l40, false, &why), -1);
  l39[34] = '_';
  assert_int_equal(al_login_check(l39, false, &why), 0);
  free(l39), free(l40);
}

static void test_api_url(void **state)
{
  (void)state;
  const char *why;
  assert_int_equal(al_api_url_check("https://api.github.com", &why), 0);
  assert_int_equal(al_api_url_check("https://gitlab.example/api/v4", &why), 0);
  assert_int_equal(al_api_url_check("http://127.0.0.1:9", &why), 0);
  assert_int_equal(al_api_url_check("http://[::1]:9", &why), 0);
  assert_int_equal(al_api_url_check("http://api.github.com", &why), -1);
  assert_int_equal(al_api_url_check("http://127.0.0.1.evil.example", &why), -1);
  assert_int_equal(al_api_url_check("https://u@api.github.com", &why), -1);
  assert_int_equal(al_api_url_check("https://api.github.com/?x", &why), -1);
  assert_int_equal(al_api_url_check("https://", &why), -1);
}

static int policy_perm(const char *name)
{
  char y[256];
  snprintf(y, sizeof y,
           "version: 1\ncredentials:\n  git: {repo: acme/w, permissions: {%s: read}}\n", name);
  al_policy *p = NULL;
  al_error err = {0};
  int r = al_policy_load_buffer("<t>", y, strlen(y), &p, &err);
  if (r == 0) {
    assert_int_equal(p->credentials.git.n_perms, 1);
    assert_string_equal(p->credentials.git.perms[0].name, name);
    assert_false(p->credentials.git.perms[0].write);
    assert_string_equal(al_perm_level(&p->credentials.git.perms[0]), "read");
  } else {
    assert_non_null(strstr(err.msg, name));
  }
  al_policy_free(p);
  return r;
}

static void test_perm_one_type(void **state)
{
  (void)state;
  bool w;
  const char *why;
  assert_int_equal(al_perm_check("contents", "write", &w, &why), 0);
  assert_true(w);
  assert_int_equal(al_perm_check("contents", "admin", &w, &why), -1);
  assert_int_equal(al_perm_check("Contents", "read", &w, &why), -1);
  assert_int_equal(al_perm_check("environments", "read", &w, &why), -1);
  /* the policy reads into the same type and refuses by the same list */
  assert_int_equal(policy_perm("contents"), 0);
  assert_true(al_perm_never_granted("environments"));
  assert_int_equal(policy_perm("environments"), -1);
  assert_int_equal(policy_perm("administration"), -1);
  al_perm_set s = {.items = {{"issues", true}}, .n = 1};
  assert_non_null(al_perm_find(&s, "issues"));
  assert_null(al_perm_find(&s, "contents"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_repo_rule),     cmocka_unit_test(test_target_shape),
      cmocka_unit_test(test_target_gitlab), cmocka_unit_test(test_login_rule),
      cmocka_unit_test(test_api_url),       cmocka_unit_test(test_perm_one_type),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
