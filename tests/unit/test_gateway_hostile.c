/* The forge gateway against requests that read one way to the gateway and
 * another to the forge (attacker, issue #15; shared/hostile/
 * gateway-requests.md plus our own): each case first shows what the forge
 * side would understand (the positive control: the spelling means the
 * thing the rule refuses), then that the gateway refuses it or reads it
 * the same way.
 *
 * - query credentials spelled with percent-escapes or Rack/Rails array
 *   syntax (`access%5Ftoken=`, `access_token[]=`): Rails' query parser
 *   decodes the name first, so these are the same `access_token`;
 * - receive-pack capabilities: git's parse_feature_request(): a feature
 *   is a word of the list, followed by the end, a space or `=`
 *   (connect.c), so `push-options=x` turns push options on in
 *   receive-pack, and the option block after the command list must be
 *   read (and checked) by the gateway too;
 * - owner/repo case variants and percent-escaped segments in paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/query.h"
#include "gateway/rules.h"
#include "gateway/wire.h"
#include "net/http.h"

#define PH "airlock-placeholder-0123456789abcdef0123456789abcdef01234567"
#define OID_A "1111111111111111111111111111111111111111"
#define OID_B "2222222222222222222222222222222222222222"

static al_gw_rules R;

static int setup(void **state)
{
  (void)state;
  al_error e;
  return al_gw_rules_init(&R, "acme/tally", 1, "airlock/1-ab12cd34", 0, "", "", &e);
}

static al_gw_cred cred_of(const char *head, const char **why)
{
  static char buf[4096];
  static al_http_request q;
  snprintf(buf, sizeof buf, "%s", head);
  const char *pwhy;
  if (al_http_parse_head(buf, strlen(buf), &q, &pwhy) <= 0)
    fail_msg("head did not parse: %s", pwhy);
  char path[AL_GW_PATH_MAX];
  const char *query, *tw;
  size_t ql;
  if (al_gw_target_parse(q.target, q.target_len, path, &query, &ql, &tw) < 0)
    fail_msg("target did not parse: %s", tw);
  return al_gw_credential(&q, query, ql, PH, why);
}

/* What a Rails-style reader takes as a parameter's name: the part before
 * `=`, percent-decoded, up to a `[` (the control side of the cases). */
static void forge_name(const char *param, char *out, size_t cap)
{
  size_t o = 0;
  for (const char *p = param; *p && *p != '=' && o + 1 < cap; p++) {
    if (*p == '%' && p[1] && p[2]) {
      char h[3] = {p[1], p[2], 0};
      out[o++] = (char)strtol(h, NULL, 16);
      p += 2;
    } else {
      out[o++] = *p == '+' ? ' ' : *p;
    }
  }
  out[o] = '\0';
  char *br = strchr(out, '[');
  if (br)
    *br = '\0';
}

static void query_credentials_in_any_spelling(void **state)
{
  (void)state;
  static const char *const spellings[] = {
      "access%5Ftoken=" PH,  "access%5ftoken=" PH,  "%61ccess_token=" PH,     "access_token[]=" PH,
      "access_token[x]=" PH, "client%5Fsecret=" PH, "a=1&access%5Ftoken=" PH,
  };
  for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
    /* control: the forge's reading is a credential parameter */
    char name[64];
    forge_name(strstr(spellings[i], "&") ? strstr(spellings[i], "&") + 1 : spellings[i], name,
               sizeof name);
    assert_true(strcmp(name, "access_token") == 0 || strcmp(name, "client_secret") == 0);
    char head[512];
    snprintf(head, sizeof head,
             "GET /repos/acme/tally?%s HTTP/1.1\r\nHost: a\r\nAuthorization: token " PH "\r\n\r\n",
             spellings[i]);
    const char *why = NULL;
    if (cred_of(head, &why) != AL_GW_CRED_FOREIGN)
      fail_msg("query credential `%s` (the forge reads `%s`) not refused", spellings[i], name);
    assert_string_equal(why, "foreign-credential");
  }
  /* unrelated names stay allowed */
  const char *why = NULL;
  assert_int_equal(cred_of("GET /repos/acme/tally?ref=main&per_page=5 HTTP/1.1\r\nHost: "
                           "a\r\nAuthorization: token " PH "\r\n\r\n",
                           &why),
                   AL_GW_CRED_PLACEHOLDER);
  assert_int_equal(cred_of("GET /repos/acme/tally?access_tokens=1 HTTP/1.1\r\nHost: "
                           "a\r\nAuthorization: token " PH "\r\n\r\n",
                           &why),
                   AL_GW_CRED_PLACEHOLDER);
}

/* Three real readers of a query, the control side of the cases below
 * (issue #26): Rack 3's parse_nested_query (Rails; `&` and `;` separate,
 * the name percent-decoded with `+` a space, then cut at a `[` after its
 * first byte), Rack 2's (the same, but the name is /\A[\[\]]*([^\[\]]+)/:
 * leading brackets dropped), and PHP's parse_str (only `&`, the name
 * decoded, leading spaces dropped, then ` ` and `.` become `_`, cut at
 * `[`). reader_names writes every name each reads, '\n'-separated. */
static void pct_name(const char *s, size_t n, char *out, size_t cap)
{
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < cap; i++) {
    if (s[i] == '%' && i + 2 < n) {
      char h[3] = {s[i + 1], s[i + 2], 0};
      out[o++] = (char)strtol(h, NULL, 16);
      i += 2;
    } else {
      out[o++] = s[i] == '+' ? ' ' : s[i];
    }
  }
  out[o] = '\0';
}

static void reader_names(const char *q, char *out, size_t cap)
{
  size_t o = 0;
  out[0] = '\0';
  for (int rd = 0; rd < 3; rd++) {
    bool php = rd == 2, rack2 = rd == 1;
    const char *seps = php ? "&" : "&;";
    for (const char *p = q; *p;) {
      size_t seg = strcspn(p, seps), nl = strcspn(p, "=");
      if (nl > seg)
        nl = seg;
      char name[128];
      pct_name(p, nl, name, sizeof name);
      char *n = name;
      if (rack2) {
        while (*n == '[' || *n == ']')
          n++;
        n[strcspn(n, "[]")] = '\0';
      }
      if (php) {
        while (*n == ' ')
          n++;
        for (char *c = n; *c; c++)
          if (*c == ' ' || *c == '.')
            *c = '_';
      }
      char *br = strchr(n + (php ? 0 : 1), '[');
      if (br && *n)
        *br = '\0';
      o += (size_t)snprintf(out + o, cap - o, "%s\n", n);
      p += seg + (p[seg] ? 1 : 0);
    }
  }
}

/* The spellings of issue #26 that reached the forge with the real token:
 * each is a credential to one of the readers (the control), and each is
 * refused by the gateway, by the credential check or by the route's
 * parameter list. */
static void query_spellings_the_forge_decodes(void **state)
{
  (void)state;
  static const char *const spellings[] = {
      "access_token%5B%5D=" PH,
      "access_token%5b%5d=" PH,
      "access_token%5B0%5D=" PH,
      "client_secret%5B%5D=" PH,
      "x=1;access_token=" PH,
      "access.token=" PH,
      "%5Baccess_token%5D=" PH,
      /* no modelled reader takes these two for a credential (PHP reads
       * `access_token_`), a reader that trims names would: no control,
       * refused twice over all the same */
      "access_token%20=" PH,
      "access_token+=" PH,
  };
  for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
    char names[512];
    reader_names(spellings[i], names, sizeof names);
    bool control = !strstr(spellings[i], "%20") && !strstr(spellings[i], "+=");
    if (control && !strstr(names, "access_token\n") && !strstr(names, "client_secret\n"))
      fail_msg("control: no reader takes `%s` for a credential (%s)", spellings[i], names);
    char head[512];
    snprintf(head, sizeof head,
             "GET /repos/acme/tally?%s HTTP/1.1\r\nHost: a\r\nAuthorization: token " PH "\r\n\r\n",
             spellings[i]);
    const char *why = NULL;
    if (cred_of(head, &why) != AL_GW_CRED_FOREIGN)
      fail_msg("query credential `%s` (a reader takes %s) not refused", spellings[i], names);
    assert_string_equal(why, "foreign-credential");
    /* and the route would refuse the name anyway */
    const char *q = strchr(head, '?') + 1;
    size_t ql = (size_t)(strchr(q, ' ') - q);
    why = NULL;
    assert_null(al_gw_match(&R, AL_GW_SIDE_API, "GET", 3, "/repos/acme/tally", q, ql, &why));
  }
  /* the decision record reads the name after `;` (it said "x=*") */
  al_gw_qparams *qp = malloc(sizeof *qp);
  static const char semi[] = "x=1;access_token=" PH;
  assert_int_equal(al_gw_query_decode(semi, strlen(semi), qp), 0);
  char log[256];
  al_gw_query_log(qp, log, sizeof log);
  assert_string_equal(log, "x=*&access_token=*");
  /* the head filter: `h%65ad` is `head` to every reader (control), and two
   * heads are refused: Rack keeps the last, the gateway checked the first */
  static const char heads[] = "head=acme:airlock/1-ab12cd34&h%65ad=acme:main";
  char names[512];
  reader_names(heads, names, sizeof names);
  assert_string_equal(names, "head\nhead\nhead\nhead\nhead\nhead\n");
  const char *why = NULL, *param = NULL;
  assert_int_equal(al_gw_query_decode(heads, strlen(heads), qp), -1);
  assert_null(
      al_gw_match_q(&R, AL_GW_SIDE_API, "GET", 3, "/repos/acme/tally/pulls", qp, &why, &param));
  assert_string_equal(why, "query-param-duplicate");
  assert_string_equal(param, "head");
  /* control: the first head alone is the run's own PR list */
  assert_int_equal(al_gw_query_decode(heads, 28, qp), 0);
  assert_non_null(
      al_gw_match_q(&R, AL_GW_SIDE_API, "GET", 3, "/repos/acme/tally/pulls", qp, &why, &param));
  /* what goes upstream is the gateway's reading, re-encoded */
  char out[3 * AL_GW_QUERY_MAX + 1];
  assert_int_equal(al_gw_query_canon(qp, out, sizeof out) > 0, 1);
  assert_string_equal(out, "head=acme%3Aairlock%2F1-ab12cd34");
  free(qp);
}

static size_t pkt(char *out, const char *data, size_t n)
{
  sprintf(out, "%04zx", n + 4);
  memcpy(out + 4, data, n);
  return n + 4;
}

/* git's parse_feature_request (connect.c parse_feature_value): `feature`
 * as a word of the list, followed by '\0', ' ' or '='. The control. */
static bool git_has_feature(const char *list, const char *feature)
{
  size_t len = strlen(feature);
  for (const char *p = list; (p = strstr(p, feature)) != NULL; p += len) {
    if (p != list && p[-1] != ' ')
      continue;
    if (p[len] == '\0' || p[len] == ' ' || p[len] == '=')
      return true;
  }
  return false;
}

static void push_options_as_git_reads_them(void **state)
{
  (void)state;
  static const char *const caps[] = {"report-status push-options=1", "push-options=x report-status",
                                     "push-options"};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    assert_true(git_has_feature(caps[i], "push-options")); /* control: git reads options */
    char first[300], buf[1024];
    int fl = snprintf(first, sizeof first, "%s%c%s",
                      OID_A " " OID_B " refs/heads/airlock/1-ab12cd34", 0, caps[i]);
    size_t n = pkt(buf, first, (size_t)fl);
    memcpy(buf + n, "0000", 4);
    n += 4;
    /* the option block git will read, with a control byte the gateway refuses */
    n += pkt(buf + n, "ci.skip\x1b[2J", 11);
    memcpy(buf + n, "0000PACK", 8);
    n += 8;
    al_rp_request *q = calloc(1, sizeof *q);
    const char *why = NULL;
    int r = al_rp_parse(buf, n, q, &why);
    if (r != -1 || !why || strcmp(why, "rp-bad-push-option") != 0)
      fail_msg("caps `%s`: the option block git reads was not checked (%d %s)", caps[i], r,
               why ? why : "-");
    free(q);
  }
  assert_false(git_has_feature("report-status xpush-options", "push-options"));
  assert_false(git_has_feature("report-status push-optionsx", "push-options"));
}

static void path_spellings_of_another_repository(void **state)
{
  (void)state;
  const char *why = NULL;
  /* case variants: GitHub matches owner/repo case-insensitively, so does the rule */
  assert_non_null(al_gw_match(&R, AL_GW_SIDE_API, "GET", 3, "/repos/ACME/Tally", NULL, 0, &why));
  assert_non_null(al_gw_match(&R, AL_GW_SIDE_GIT, "GET", 3, "/Acme/TALLY.GIT/info/refs",
                              "service=git-upload-pack", 23, &why));
  /* escaped letters are compared raw: never the run's repository */
  static const char *const other[] = {"/repos/acme/tall%79", "/repos/%61cme/tally",
                                      "/repos/acme/tally%2Fx", "/repos/acme/tally%2e"};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    char path[AL_GW_PATH_MAX];
    const char *q, *tw = NULL;
    size_t ql;
    if (al_gw_target_parse(other[i], strlen(other[i]), path, &q, &ql, &tw) < 0)
      continue; /* refused by the target parser: fine */
    why = NULL;
    assert_null(al_gw_match(&R, AL_GW_SIDE_API, "GET", 3, path, NULL, 0, &why));
  }
  /* overlong UTF-8 for '.' and '/' (%c0%ae, %c0%af) */
  char path[AL_GW_PATH_MAX];
  const char *q, *tw = NULL;
  size_t ql;
  assert_int_equal(
      al_gw_target_parse("/repos/acme/tally/contents/%c0%ae%c0%ae/x", 41, path, &q, &ql, &tw), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(query_credentials_in_any_spelling),
      cmocka_unit_test(query_spellings_the_forge_decodes),
      cmocka_unit_test(push_options_as_git_reads_them),
      cmocka_unit_test(path_spellings_of_another_repository),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
