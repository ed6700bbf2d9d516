/* The gateway's refusals as the client reads them (issue #27 item 4):
 * the receive-pack report-status is parsed back with the gateway's own
 * pkt-line reader the way git's send-pack reads it (gitprotocol-pack(5)
 * "Report Status", side band per gitprotocol-protocol-capabilities(5)),
 * the API body is JSON with message and documentation_url, and git paths
 * are told apart from API paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "gateway/refusal.h"
#include "gateway/rules.h"
#include "gateway/wire.h"

static al_gw_rules R;

static int setup(void **st)
{
  (void)st;
  al_error err = {0};
  return al_gw_rules_init(&R, "acme/tally", 7, "airlock/7-abcd", 0, "", "", &err);
}

static void two_cmds(al_rp_request *q)
{
  memset(q, 0, sizeof *q);
  q->n_cmds = 2;
  q->report_status = true;
  for (int i = 0; i < 2; i++) {
    memset(q->cmd[i].old_oid, '0', 40);
    memset(q->cmd[i].new_oid, 'a', 40);
  }
  snprintf(q->cmd[0].ref, sizeof q->cmd[0].ref, "refs/heads/airlock/7-abcd");
  snprintf(q->cmd[1].ref, sizeof q->cmd[1].ref, "refs/heads/main");
}

/* Read the plain report-status at buf: "unpack ok", ng lines, flush. */
static void check_report(const char *buf, size_t len, char lines[4][1100], size_t *nl)
{
  size_t pos = 0;
  al_pkt p;
  const char *why;
  *nl = 0;
  for (;;) {
    int r = al_pkt_next(buf + pos, len - pos, false, &p, &why);
    assert_true(r > 0);
    pos += (size_t)r;
    if (p.kind == AL_PKT_FLUSH)
      break;
    assert_true(*nl < 4 && p.len < 1100);
    memcpy(lines[*nl], p.data, p.len);
    lines[(*nl)++][p.len] = '\0';
  }
  assert_int_equal(pos, len);
}

static void report_plain(void **st)
{
  (void)st;
  al_rp_request q;
  two_cmds(&q);
  char out[AL_GW_RP_REPORT_MAX], lines[4][1100];
  size_t n = al_gw_rp_report(&R, &q, "push-other-branch", 1, out, sizeof out), nl;
  assert_true(n > 0);
  check_report(out, n, lines, &nl);
  assert_int_equal(nl, 3);
  assert_string_equal(lines[0], "unpack ok\n");
  assert_non_null(strstr(lines[2], "ng refs/heads/main airlock: push-other-branch: only "
                                   "refs/heads/airlock/7-abcd may be pushed"));
  assert_non_null(strstr(lines[1], "ng refs/heads/airlock/7-abcd airlock: refused with the rest"));
  /* control: without report-status there is no report (403 instead) */
  q.report_status = false;
  assert_int_equal(al_gw_rp_report(&R, &q, "push-other-branch", 1, out, sizeof out), 0);
}

static void report_side_band(void **st)
{
  (void)st;
  al_rp_request q;
  two_cmds(&q);
  char out[AL_GW_RP_REPORT_MAX], inner[AL_GW_RP_REPORT_MAX], lines[4][1100];
  for (unsigned sb = 0; sb < 2; sb++) {
    q.side_band = sb ? AL_PKT_MAX : 1000;
    size_t n = al_gw_rp_report(&R, &q, "push-tag", 0, out, sizeof out), pos = 0, il = 0, nl;
    assert_true(n > 0);
    bool saw2 = false;
    al_pkt p;
    const char *why;
    for (;;) {
      int r = al_pkt_next(out + pos, n - pos, false, &p, &why);
      assert_true(r > 0);
      pos += (size_t)r;
      if (p.kind == AL_PKT_FLUSH)
        break;
      assert_true(p.len >= 1 && p.len + 4 <= q.side_band);
      if (p.data[0] == 2) {
        saw2 = true;
        assert_memory_equal(p.data + 1, "airlock: push-tag: ", 19);
      } else {
        assert_int_equal(p.data[0], 1);
        memcpy(inner + il, p.data + 1, p.len - 1);
        il += p.len - 1;
      }
    }
    assert_int_equal(pos, n); /* the side band's own flush ends it */
    assert_true(saw2);
    check_report(inner, il, lines, &nl);
    assert_int_equal(nl, 3);
    assert_non_null(strstr(lines[1], "ng refs/heads/airlock/7-abcd airlock: push-tag: "));
  }
}

static void long_refs_split(void **st)
{
  (void)st;
  /* 32 commands of long refs: the report spans several side-band packets */
  al_rp_request q;
  memset(&q, 0, sizeof q);
  q.report_status = true;
  q.side_band = 1000;
  q.n_cmds = AL_RP_MAX_CMDS;
  for (size_t i = 0; i < q.n_cmds; i++) {
    memset(q.cmd[i].ref, 'x', 250);
    memcpy(q.cmd[i].ref, "refs/heads/", 11);
  }
  char out[AL_GW_RP_REPORT_MAX];
  size_t n = al_gw_rp_report(&R, &q, "push-other-branch", 3, out, sizeof out);
  assert_true(n > 0);
  /* too small a buffer: 0, never a cut report */
  assert_int_equal(al_gw_rp_report(&R, &q, "push-other-branch", 3, out, n - 1), 0);
}

static void api_json(void **st)
{
  (void)st;
  char out[2048];
  size_t n = al_gw_refusal_json(&R, "write-refused", "POST", "/api/v3/repos/acme/tally/pulls", out,
                                sizeof out);
  assert_true(n > 0);
  json_error_t je;
  json_t *j = json_loadb(out, n, 0, &je);
  assert_non_null(j);
  const char *m = json_string_value(json_object_get(j, "message"));
  assert_non_null(m);
  assert_non_null(strstr(m, "airlock: write-refused: the agent does not open the pull request"));
  assert_non_null(strstr(m, "the supervisor opens the pull request after the agent exits"));
  assert_string_equal(json_string_value(json_object_get(j, "documentation_url")),
                      AL_GW_REFUSAL_DOC);
  json_decref(j);
  /* another write: the generic sentence, still naming who opens the PR */
  n = al_gw_refusal_json(&R, "write-refused", "PATCH", "/repos/acme/tally/issues/7", out,
                         sizeof out);
  assert_non_null(strstr(out, "the agent may not write to the forge here"));
  /* a reason with a quote or a control byte stays valid JSON */
  n = al_gw_refusal_json(&R, "x\"y\n", "GET", "/", out, sizeof out);
  j = json_loadb(out, n, 0, &je);
  assert_non_null(j);
  json_decref(j);
  /* prefix entries: graphql-refused: mutation */
  char t[512];
  al_gw_refusal_text(&R, "graphql-refused: mutation", "POST", "/graphql", t, sizeof t);
  assert_non_null(strstr(t, "airlock: graphql-refused: mutation: only read-only GraphQL"));
}

static void git_paths(void **st)
{
  (void)st;
  assert_true(al_gw_path_is_git("/acme/tally.git/info/refs"));
  assert_true(al_gw_path_is_git("/acme/tally/git-upload-pack"));
  assert_true(al_gw_path_is_git("/acme/tally.git/git-receive-pack"));
  assert_false(al_gw_path_is_git("/repos/acme/tally"));
  assert_false(al_gw_path_is_git("/info/refsx"));
  assert_false(al_gw_path_is_git(NULL));
}

int main(void)
{
  const struct CMUnitTest t[] = {
      cmocka_unit_test(report_plain),    cmocka_unit_test(report_side_band),
      cmocka_unit_test(long_refs_split), cmocka_unit_test(api_json),
      cmocka_unit_test(git_paths),
  };
  return cmocka_run_group_tests(t, setup, NULL);
}
