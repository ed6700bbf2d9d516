/* Unit tests for the forge gateway's parsers and rule table (issue #15):
 * the origin-form target canonicaliser, the chunked decoder, pkt-lines, the
 * receive-pack update request, the response head, the rule table, the
 * credential check, and every entry of shared/hostile/gateway-requests.md
 * that a unit can decide (the framing and TLS entries, 23-28, are in the
 * integration suite `gateway`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "gateway/query.h"
#include "gateway/rules.h"
#include "gateway/wire.h"
#include "net/chunked.h"
#include "net/http.h"

#define PH "airlock-placeholder-0123456789abcdef0123456789abcdef01234567"
#define OID_A "1111111111111111111111111111111111111111"
#define OID_B "2222222222222222222222222222222222222222"
#define ZERO "0000000000000000000000000000000000000000"

static al_gw_rules R;
static const unsigned API = AL_GW_SIDE_API;

static int setup(void **state)
{
  (void)state;
  al_error e;
  return al_gw_rules_init(&R, "acme/tally", 1, "airlock/1-ab12cd34", 0, "", "", &e);
}

/* ---- target ---- */

static void test_target(void **state)
{
  static const struct {
    const char *t, *path, *query;
  } good[] = {
      {"/repos/acme/tally", "/repos/acme/tally", NULL},
      {"/acme/tally.git/info/refs?service=git-upload-pack", "/acme/tally.git/info/refs",
       "service=git-upload-pack"},
      {"/repos/acme/tally/contents/a%20b.txt?ref=main", "/repos/acme/tally/contents/a%20b.txt",
       "ref=main"},
      {"/", "/", NULL},
      {"/a?", "/a", ""},
  };
  static const struct {
    const char *t, *why;
  } bad[] = {
      {"repos/acme", "target-not-origin-form"},
      {"https://forge.test/acme/tally", "target-not-origin-form"},
      {"*", "target-not-origin-form"},
      {"/repos//acme", "path-empty-segment"},
      {"/repos/acme/", "path-empty-segment"},
      {"/repos/acme/../loose", "path-dot-segment"},
      {"/repos/./acme", "path-dot-segment"},
      {"/repos/acme%2Floose", "path-encoded-separator"},
      {"/repos/acme%2floose", "path-encoded-separator"},
      {"/repos/%2e%2e/x", "path-encoded-separator"},
      {"/repos/%2E/x", "path-encoded-separator"},
      {"/repos/a%5cb", "path-encoded-separator"},
      {"/repos/a%00b", "path-bad-escape"},
      {"/repos/a%0ab", "path-bad-escape"},
      {"/repos/a%zz", "path-bad-escape"},
      {"/repos/a%2", "path-bad-escape"},
      {"/repos/a\\b", "path-backslash"},
      {"/repos/a#frag", "target-not-origin-form"},
      {"/repos/a?x=%00", "query-nul"},
  };
  char path[AL_GW_PATH_MAX];
  const char *q, *why;
  size_t ql;
  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    assert_int_equal(al_gw_target_parse(good[i].t, strlen(good[i].t), path, &q, &ql, &why), 0);
    assert_string_equal(path, good[i].path);
    if (good[i].query) {
      assert_non_null(q);
      assert_int_equal(ql, strlen(good[i].query));
      assert_memory_equal(q, good[i].query, ql);
    } else {
      assert_null(q);
    }
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why = NULL;
    int r = al_gw_target_parse(bad[i].t, strlen(bad[i].t), path, &q, &ql, &why);
    if (r != -1 || !why || strcmp(why, bad[i].why) != 0)
      fail_msg("%s: got %d %s, want %s", bad[i].t, r, why ? why : "-", bad[i].why);
  }
  char longt[AL_GW_PATH_MAX + 10];
  longt[0] = '/';
  memset(longt + 1, 'a', sizeof longt - 2);
  longt[sizeof longt - 1] = '\0';
  assert_int_equal(al_gw_target_parse(longt, strlen(longt), path, &q, &ql, &why), -1);
  assert_string_equal(why, "target-too-long");
}

static void test_query(void **state)
{
  char out[128];
  const char *v;
  size_t vl;
  (void)state;
  static const char q1[] = "service=git-upload-pack";
  al_gw_query_redact(q1, strlen(q1), out, sizeof out);
  assert_string_equal(out, "service=git-upload-pack");
  static const char q2[] = "ref=secret-branch&per_page=100&flag";
  al_gw_query_redact(q2, strlen(q2), out, sizeof out);
  assert_string_equal(out, "ref=*&per_page=*&flag");
  static const char q3[] = "service=a&service=b";
  assert_int_equal(al_gw_query_param(q3, strlen(q3), "service", &v, &vl), 2);
  assert_int_equal(vl, 1);
  assert_int_equal(v[0], 'a');
  assert_int_equal(al_gw_query_param(q3, strlen(q3), "serv", &v, &vl), 0);
}

/* ---- the query decoder (gateway/query.h, issue #26) ---- */

static void test_query_decode(void **state)
{
  static const struct {
    const char *q;
    const char *want; /* the decoded params as "name=value|name|..." */
    const char *canon;
  } good[] = {
      {"", "", ""},
      {"&&;", "", ""},
      {"service=git-upload-pack", "service=git-upload-pack", "service=git-upload-pack"},
      {"a=1&b=2;c=3", "a=1|b=2|c=3", "a=1&b=2&c=3"},
      {"flag&x=", "flag|x=", "flag&x="},
      {"Ref=Main", "ref=Main", "ref=Main"},
      {"q=a+b%20c%2B", "q=a b c+", "q=a%20b%20c%2B"},
      {"head=acme%3Aairlock%2F1-x", "head=acme:airlock/1-x", "head=acme%3Aairlock%2F1-x"},
      {"access_token%5B%5D=v", "access_token=v", "access_token=v"},
      {"access_token%5b0%5d=v", "access_token=v", "access_token=v"},
      {"a[b][c]=1", "a=1", "a=1"},
      {"[x]=1", "x=1", "x=1"},
      {"%61ccess%5Ftoken=v", "access_token=v", "access_token=v"},
      {"access.token=v", "access.token=v", "access.token=v"},
      {"access_token%20=v", "access_token =v", "access_token%20=v"},
      {"ref=%C3%A9", "ref=\xc3\xa9", "ref=%C3%A9"},
  };
  static const struct {
    const char *q, *why, *bad;
  } bad[] = {
      {"a=%zz", "query-bad-escape", "a"},
      {"a=%4", "query-bad-escape", "a"},
      {"a%=1", "query-bad-escape", "a?"},
      {"a=%0a", "query-control-byte", "a"},
      {"a=%7f", "query-control-byte", "a"},
      {"a\x01=1", "query-control-byte", "a?"},
      {"=1", "query-bad-name", ""},
      {"%5B%5D=1", "query-bad-name", "[]"},
      {"%C3%A9=1", "query-bad-name", "??"},
      {"a=1&A=2", "query-param-duplicate", "a"},
      {"head=1&h%65ad=2", "query-param-duplicate", "head"},
      {"x=1;x=2", "query-param-duplicate", "x"},
      {"x=1&x[]=2", "query-param-duplicate", "x"},
      {"a\"b=1", NULL, NULL}, /* a quote is a name byte, made printable as '?' */
  };
  al_gw_qparams *qp = malloc(sizeof *qp);
  char out[3 * AL_GW_QUERY_MAX + 1], got[512];
  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    if (al_gw_query_decode(good[i].q, strlen(good[i].q), qp) != 0)
      fail_msg("%s: refused (%s)", good[i].q, qp->why);
    size_t o = 0;
    for (size_t k = 0; k < qp->n; k++)
      o += (size_t)snprintf(got + o, sizeof got - o, "%s%s%s%s", k ? "|" : "", qp->p[k].name,
                            qp->p[k].has_value ? "=" : "", qp->p[k].value);
    got[o] = '\0';
    if (strcmp(got, good[i].want) != 0)
      fail_msg("%s: decoded %s, want %s", good[i].q, got, good[i].want);
    assert_int_equal(al_gw_query_canon(qp, out, sizeof out), (int)strlen(good[i].canon));
    assert_string_equal(out, good[i].canon);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int r = al_gw_query_decode(bad[i].q, strlen(bad[i].q), qp);
    if (!bad[i].why) {
      assert_int_equal(r, 0);
      al_gw_query_log(qp, got, sizeof got);
      assert_string_equal(got, "a?b=*");
      continue;
    }
    if (r != -1 || !qp->why || strcmp(qp->why, bad[i].why) != 0 || strcmp(qp->bad, bad[i].bad))
      fail_msg("%s: got %d %s (%s), want %s (%s)", bad[i].q, r, qp->why ? qp->why : "-", qp->bad,
               bad[i].why, bad[i].bad);
  }
  /* limits */
  char big[AL_GW_QUERY_MAX + 2];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(al_gw_query_decode(big, strlen(big), qp), -1);
  assert_string_equal(qp->why, "query-too-long");
  size_t o = 0;
  for (int k = 0; k <= AL_GW_QUERY_PARAMS; k++)
    o += (size_t)snprintf(big + o, sizeof big - o, "p%d=1&", k);
  assert_int_equal(al_gw_query_decode(big, o, qp), -1);
  assert_string_equal(qp->why, "query-too-many-params");
  /* the record: decoded names, values redacted but service= */
  static const char q1[] = "x=1;access_token=secret&service=git-upload-pack";
  assert_int_equal(al_gw_query_decode(q1, strlen(q1), qp), 0);
  al_gw_query_log(qp, got, sizeof got);
  assert_string_equal(got, "x=*&access_token=*&service=git-upload-pack");
  static const char q2[] = "service=evil&ok=1&%7A=%zz";
  assert_int_equal(al_gw_query_decode(q2, strlen(q2), qp), -1);
  al_gw_query_log(qp, got, sizeof got);
  assert_string_equal(got, "service=*&ok=*&z=*");
  /* credential names, however spelled */
  static const char *const cred[] = {"access_token", "access.token", "access_token ",
                                     "access-token", "accesstoken",  "client_secret",
                                     "client.secret"};
  for (size_t i = 0; i < sizeof cred / sizeof cred[0]; i++)
    assert_true(al_gw_query_name_is_credential(cred[i]));
  assert_false(al_gw_query_name_is_credential("access_tokens"));
  assert_false(al_gw_query_name_is_credential("ref"));
  free(qp);
}

/* ---- chunked ---- */

static int decode_all(const char *in, size_t n, size_t step, char *out, size_t *outn,
                      const char **why, size_t *consumed)
{
  al_chunked c;
  al_chunked_init(&c);
  size_t pos = 0, o = 0;
  char tmp[4096];
  while (pos < n) {
    size_t len = n - pos < step ? n - pos : step;
    size_t got = 0;
    int r = al_chunked_decode(&c, in + pos, &len, tmp, &got, why);
    if (r < 0)
      return -1;
    memcpy(out + o, tmp, got);
    o += got;
    pos += len;
    if (r == 1) {
      *outn = o;
      *consumed = pos;
      return 1;
    }
  }
  *outn = o;
  *consumed = pos;
  return 0;
}

static void test_chunked(void **state)
{
  static const char body[] =
      "5\r\nhello\r\n7;ext=1\r\n, world\r\nA \r\n0123456789\r\n0\r\n\r\nNEXT";
  char out[256];
  size_t on, used;
  const char *why = NULL;
  (void)state;
  for (size_t step = 1; step <= sizeof body; step++) {
    assert_int_equal(decode_all(body, sizeof body - 1, step, out, &on, &why, &used), 1);
    assert_int_equal(on, 22);
    assert_memory_equal(out, "hello, world0123456789", 22);
    assert_int_equal(used, sizeof body - 1 - 4); /* "NEXT" belongs to the next message */
  }
  static const struct {
    const char *in, *why;
  } bad[] = {
      {"ffffffffffffffff\r\n", "chunk-size-overflow"},
      {"10000000000000000\r\n", "chunk-size-overflow"},
      {"-1\r\n", "chunk-size-bad"},
      {"\r\n", "chunk-size-bad"},
      {"5\nhello\r\n", "chunk-size-bad"},
      {"5\rhello", "chunk-line-bad"},
      {"5\r\nhelloX\r\n", "chunk-missing-crlf"},
      {"5\r\nhello\rX", "chunk-missing-crlf"},
      {"0\r\nX-Trailer: 1\r\n\r\n", "chunked-trailer"},
      {"5;a\x01\r\n", "chunk-ext-bad"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why = NULL;
    int r = decode_all(bad[i].in, strlen(bad[i].in), 3, out, &on, &why, &used);
    if (r != -1 || strcmp(why, bad[i].why) != 0)
      fail_msg("case %zu: got %d %s, want %s", i, r, why ? why : "-", bad[i].why);
  }
  /* a 64 KiB chunk extension */
  size_t n = 3 + 65536 + 2;
  char *ext = malloc(n + 1);
  memcpy(ext, "1;", 2);
  memset(ext + 2, 'x', 65536);
  memcpy(ext + 2 + 65536, "\r\n", 3);
  char *big = malloc(n + 1);
  al_chunked c;
  al_chunked_init(&c);
  size_t len = strlen(ext), got;
  assert_int_equal(al_chunked_decode(&c, ext, &len, big, &got, &why), -1);
  assert_string_equal(why, "chunk-ext-too-long");
  free(ext);
  free(big);
  /* incomplete input: 0, all consumed */
  al_chunked_init(&c);
  len = 6;
  assert_int_equal(al_chunked_decode(&c, "5\r\nhel", &len, out, &got, &why), 0);
  /* in place */
  char inplace[] = "3\r\nabc\r\n0\r\n\r\n";
  al_chunked_init(&c);
  len = strlen(inplace);
  assert_int_equal(al_chunked_decode(&c, inplace, &len, inplace, &got, &why), 1);
  assert_int_equal(got, 3);
  assert_memory_equal(inplace, "abc", 3);
  /* skip_trailers (the model relay's answers): a trailer section is
   * skipped to its end, byte by byte too; control: without it, refused */
  static const char tr[] = "3\r\nabc\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\nNEXT";
  for (size_t step = 1; step <= sizeof tr; step++) {
    al_chunked_init(&c);
    c.skip_trailers = true;
    size_t pos = 0, o = 0;
    int r = 0;
    while (r == 0 && pos < sizeof tr - 1) {
      len = sizeof tr - 1 - pos < step ? sizeof tr - 1 - pos : step;
      r = al_chunked_decode(&c, tr + pos, &len, out + o, &got, &why);
      pos += len;
      o += got;
    }
    assert_int_equal(r, 1);
    assert_int_equal(o, 3);
    assert_int_equal(pos, sizeof tr - 1 - 4);
  }
  al_chunked_init(&c);
  len = sizeof tr - 1;
  assert_int_equal(al_chunked_decode(&c, tr, &len, out, &got, &why), -1);
  assert_string_equal(why, "chunked-trailer");
  static const char trbad[] = "0\r\nX: a\x01\r\n\r\n";
  al_chunked_init(&c);
  c.skip_trailers = true;
  len = sizeof trbad - 1;
  assert_int_equal(al_chunked_decode(&c, trbad, &len, out, &got, &why), -1);
  assert_string_equal(why, "chunk-trailer-bad");
  char *longtr = malloc(AL_CHUNK_TRAILER_MAX + 16);
  memcpy(longtr, "0\r\nX: ", 6);
  memset(longtr + 6, 'a', AL_CHUNK_TRAILER_MAX + 9);
  al_chunked_init(&c);
  c.skip_trailers = true;
  len = AL_CHUNK_TRAILER_MAX + 15;
  char *longout = malloc(AL_CHUNK_TRAILER_MAX + 16);
  assert_int_equal(al_chunked_decode(&c, longtr, &len, longout, &got, &why), -1);
  assert_string_equal(why, "chunk-trailer-too-long");
  free(longtr);
  free(longout);
  char hdr[20];
  assert_int_equal(al_chunk_header(255, hdr), 4);
  assert_memory_equal(hdr, "ff\r\n", 4);
}

/* ---- pkt-line ---- */

static void test_pkt(void **state)
{
  al_pkt p;
  const char *why = NULL;
  (void)state;
  assert_int_equal(al_pkt_next("0000", 4, false, &p, &why), 4);
  assert_int_equal(p.kind, AL_PKT_FLUSH);
  assert_int_equal(al_pkt_next("0009hello", 9, false, &p, &why), 9);
  assert_int_equal(p.kind, AL_PKT_DATA);
  assert_int_equal(p.len, 5);
  assert_int_equal(al_pkt_next("000Ahello\n", 10, false, &p, &why), 10);
  assert_int_equal(al_pkt_next("0004", 4, false, &p, &why), 4);
  assert_int_equal(p.len, 0);
  assert_int_equal(al_pkt_next("0001", 4, true, &p, &why), 4);
  assert_int_equal(p.kind, AL_PKT_DELIM);
  assert_int_equal(al_pkt_next("0002", 4, true, &p, &why), 4);
  assert_int_equal(p.kind, AL_PKT_END);
  static const char *const reserved[] = {"0001", "0002", "0003"};
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(al_pkt_next(reserved[i], 4, false, &p, &why), -1);
    assert_string_equal(why, "pkt-len-reserved");
  }
  assert_int_equal(al_pkt_next("0003", 4, true, &p, &why), -1);
  assert_int_equal(al_pkt_next("fff5", 4, false, &p, &why), -1);
  assert_string_equal(why, "pkt-too-long");
  assert_int_equal(al_pkt_next("ffff", 4, false, &p, &why), -1);
  assert_int_equal(al_pkt_next("fff0", 4, false, &p, &why), 0); /* 65520: needs its bytes */
  assert_int_equal(al_pkt_next("00zz", 4, false, &p, &why), -1);
  assert_string_equal(why, "pkt-len-bad");
  assert_int_equal(al_pkt_next("0010abc", 7, false, &p, &why), 0); /* longer than the body */
  assert_int_equal(al_pkt_next("00", 2, false, &p, &why), 0);
}

/* ---- receive-pack ---- */

/* Build a pkt-line body into out from NUL-separated parts; "F" is a flush. */
static size_t pkts(char *out, const char *const *lines, const size_t *lens, size_t n)
{
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (!lines[i]) {
      memcpy(out + o, "0000", 4);
      o += 4;
      continue;
    }
    size_t l = lens ? lens[i] : strlen(lines[i]);
    o += (size_t)sprintf(out + o, "%04zx", l + 4);
    memcpy(out + o, lines[i], l);
    o += l;
  }
  return o;
}

static int rp(const char *first_cmd, const char *second, al_rp_request *q, const char **why)
{
  char line[512], buf[2048];
  int n = snprintf(line, sizeof line, "%s%creport-status side-band-64k\n", first_cmd, 0);
  const char *lines[3] = {line, second, NULL};
  size_t lens[3] = {(size_t)n, second ? strlen(second) : 0, 0};
  size_t len = second ? pkts(buf, lines, lens, 3)
                      : pkts(buf, (const char *const[]){line, NULL}, (size_t[]){(size_t)n, 0}, 2);
  memcpy(buf + len, "PACK....", 8); /* the pack follows */
  int r = al_rp_parse(buf, len + 8, q, why);
  if (r > 0)
    assert_int_equal((size_t)r, len);
  return r;
}

static void test_receive_pack(void **state)
{
  al_rp_request *q = calloc(1, sizeof *q);
  const char *why = NULL;
  (void)state;
  assert_true(rp(OID_A " " OID_B " refs/heads/airlock/1-ab12cd34", NULL, q, &why) > 0);
  assert_int_equal(q->n_cmds, 1);
  assert_string_equal(q->cmd[0].ref, "refs/heads/airlock/1-ab12cd34");
  assert_string_equal(q->cmd[0].old_oid, OID_A);
  assert_true(rp(OID_A " " OID_B " refs/heads/a", OID_A " " OID_B " refs/heads/b\n", q, &why) > 0);
  assert_int_equal(q->n_cmds, 2);
  /* case 10 */
  assert_int_equal(al_rp_parse("0000PACK", 8, q, &why), -1);
  assert_string_equal(why, "rp-no-commands");
  static const char *const lens[] = {"0001", "0002", "0003", "fff5", "ffff"};
  for (size_t i = 0; i < 5; i++) {
    char b[16];
    snprintf(b, sizeof b, "%sxxxx", lens[i]);
    assert_int_equal(al_rp_parse(b, 8, q, &why), -1);
  }
  assert_int_equal(al_rp_parse("00ff" OID_A, 44, q, &why), 0); /* longer than the body */
  char nocap[200];
  size_t n = pkts(nocap, (const char *const[]){OID_A " " OID_B " refs/heads/x\n", NULL}, NULL, 2);
  assert_int_equal(al_rp_parse(nocap, n, q, &why), -1);
  assert_string_equal(why, "rp-no-capabilities");
  /* case 11 */
  static const char *const bad_oid[] = {
      "111 " OID_B " refs/heads/x", OID_A " 22 refs/heads/x",
      "111111111111111111111111111111111111111G " OID_B " refs/heads/x",
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA " OID_B " refs/heads/x"};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(rp(bad_oid[i], NULL, q, &why), -1);
    assert_string_equal(why, "rp-bad-oid");
  }
  static const char *const bad_ref[] = {
      OID_A " " OID_B " refs/heads/a..b",   OID_A " " OID_B " refs/heads/a@{1}",
      OID_A " " OID_B " refs/heads/a b",    OID_A " " OID_B " refs/heads/a\x01",
      OID_A " " OID_B " refs/heads/x.lock", OID_A " " OID_B " refs/heads/.hidden",
      OID_A " " OID_B " refs/heads/x/",     OID_A " " OID_B " HEAD",
      OID_A " " OID_B " refs/heads//x",     OID_A " " OID_B " refs/heads/x."};
  for (size_t i = 0; i < sizeof bad_ref / sizeof bad_ref[0]; i++) {
    int r = rp(bad_ref[i], NULL, q, &why);
    if (r != -1 || strcmp(why, "rp-bad-ref") != 0)
      fail_msg("ref case %zu: %d %s", i, r, why);
  }
  assert_int_equal(rp(OID_A " " OID_B "refs/heads/x", NULL, q, &why), -1);
  /* shallow lines first, push options after a flush */
  char b[1024];
  char first[256];
  int fl = snprintf(first, sizeof first, "%s%cpush-options report-status",
                    OID_A " " OID_B " refs/heads/x", 0);
  const char *ls[] = {"shallow " OID_A, first, NULL, "ci.skip", NULL};
  size_t ll[] = {strlen(ls[0]), (size_t)fl, 0, 7, 0};
  n = pkts(b, ls, ll, 5);
  assert_int_equal(al_rp_parse(b, n, q, &why), (int)n);
  assert_int_equal(q->n_shallow, 1);
  assert_int_equal(q->n_push_options, 1);
  assert_int_equal(al_rp_parse(b, n - 4, q, &why), 0); /* the second flush is missing */
  assert_int_equal(al_rp_parse("0009push-cert", 13, q, &why), -1);
  free(q);
}

/* ---- GitLab's ci.skip push option (issue #30) ---- */

static void test_push_option_rewrite(void **state)
{
  (void)state;
  al_rp_request *q = calloc(1, sizeof *q);
  const char *why = NULL;
  char in[2048], want[2048], out[2048];
  size_t ol = 0;
  /* a shallow, two commands (the first with caps and LF), the flush, the pack */
  char first[256], firstw[256];
  int fl = snprintf(first, sizeof first, "%s%creport-status side-band-64k\n",
                    OID_A " " OID_B " refs/heads/airlock/1-ab12cd34", 0);
  int fw = snprintf(firstw, sizeof firstw, "%s%creport-status side-band-64k push-options\n",
                    OID_A " " OID_B " refs/heads/airlock/1-ab12cd34", 0);
  const char *ls[] = {"shallow " OID_A, first, OID_A " " OID_B " refs/heads/b\n", NULL};
  size_t ll[] = {strlen(ls[0]), (size_t)fl, strlen(ls[2]), 0};
  size_t n = pkts(in, ls, ll, 4);
  memcpy(in + n, "PACK", 4);
  const char *lw[] = {"shallow " OID_A, firstw, OID_A " " OID_B " refs/heads/b\n", NULL,
                      "ci.skip",        NULL};
  size_t llw[] = {strlen(lw[0]), (size_t)fw, strlen(lw[2]), 0, 7, 0};
  size_t wn = pkts(want, lw, llw, 6);
  assert_int_equal(al_rp_add_push_option(in, n, "ci.skip", out, sizeof out, &ol, &why), 0);
  assert_int_equal(ol, wn);
  assert_memory_equal(out, want, wn);
  assert_int_equal(al_rp_parse(out, ol, q, &why), (int)ol);
  assert_true(q->push_options);
  assert_int_equal(q->n_push_options, 1);
  assert_int_equal(q->n_cmds, 2);
  assert_string_equal(q->cmd[0].ref, "refs/heads/airlock/1-ab12cd34");
  assert_string_equal(q->cmd[1].ref, "refs/heads/b");
  /* the first command without LF: the capability goes at its end */
  fl = snprintf(first, sizeof first, "%s%c report-status", OID_A " " OID_B " refs/heads/x", 0);
  n = pkts(in, (const char *const[]){first, NULL}, (size_t[]){(size_t)fl, 0}, 2);
  assert_int_equal(al_rp_add_push_option(in, n, "ci.skip", out, sizeof out, &ol, &why), 0);
  assert_int_equal(ol, n + 13 + 11 + 4);
  assert_memory_equal(out + 4 + fl, " push-options0000000bci.skip0000", 32);
  char hx[8];
  snprintf(hx, sizeof hx, "%04x", (unsigned)(fl + 4 + 13)); /* the pkt-len recomputed */
  assert_memory_equal(out, hx, 4);
  /* the client asked for push-options already (none sent): ci.skip before
   * the options' flush */
  fl = snprintf(first, sizeof first, "%s%cpush-options report-status",
                OID_A " " OID_B " refs/heads/x", 0);
  n = pkts(in, (const char *const[]){first, NULL, NULL}, (size_t[]){(size_t)fl, 0, 0}, 3);
  assert_int_equal(al_rp_add_push_option(in, n, "ci.skip", out, sizeof out, &ol, &why), 0);
  assert_int_equal(ol, n + 11);
  assert_memory_equal(out + n - 4, "000bci.skip0000", 15);
  assert_int_equal(al_rp_parse(out, ol, q, &why), (int)ol);
  assert_int_equal(q->n_push_options, 1);
  /* hostile command lists */
  assert_int_equal(al_rp_add_push_option(in, n - 4, "ci.skip", out, sizeof out, &ol, &why), -1);
  assert_string_equal(why, "rp-partial"); /* the options' flush missing */
  assert_int_equal(al_rp_add_push_option(in, n - 1, "ci.skip", out, sizeof out, &ol, &why), -1);
  assert_int_equal(al_rp_add_push_option(in, n, "ci.skip", out, n + 10, &ol, &why), -1);
  assert_string_equal(why, "rp-rewrite-no-room");
  assert_int_equal(al_rp_add_push_option(in, n, "ci.skip\n0000", out, sizeof out, &ol, &why), -1);
  assert_string_equal(why, "rp-option-bad");
  assert_int_equal(al_rp_add_push_option(in, n, "", out, sizeof out, &ol, &why), -1);
  assert_string_equal(why, "rp-option-bad");
  /* a second command smuggling its own capability list */
  char second[128];
  int sl = snprintf(second, sizeof second, "%s%cpush-options", OID_A " " OID_B " refs/heads/y", 0);
  fl = snprintf(first, sizeof first, "%s%creport-status", OID_A " " OID_B " refs/heads/x", 0);
  n = pkts(in, (const char *const[]){first, second, NULL}, (size_t[]){(size_t)fl, (size_t)sl, 0},
           3);
  assert_int_equal(al_rp_add_push_option(in, n, "ci.skip", out, sizeof out, &ol, &why), -1);
  assert_string_equal(why, "rp-bad-command");
  assert_int_equal(al_rp_add_push_option("0000", 4, "ci.skip", out, sizeof out, &ol, &why), -1);
  assert_string_equal(why, "rp-no-commands");
  assert_int_equal(
      al_rp_add_push_option("000dpush-cert0000", 17, "ci.skip", out, sizeof out, &ol, &why), -1);
  assert_string_equal(why, "rp-push-cert");
  /* a first command so long that one more capability would pass 65520 */
  char *big = malloc(70000), *bout = malloc(70100);
  size_t bl = AL_PKT_MAX - 4;
  memset(big, 0, 70000);
  int hl = snprintf(big + 4, 200, "%s%creport-status ", OID_A " " OID_B " refs/heads/x", 0);
  memset(big + 4 + hl, 'a', bl - (size_t)hl);
  memcpy(big, "fff0", 4);
  memcpy(big + 4 + bl, "0000", 4);
  assert_int_equal(al_rp_add_push_option(big, bl + 8, "ci.skip", bout, 70100, &ol, &why), -1);
  assert_string_equal(why, "rp-command-too-long");
  free(big);
  free(bout);
  free(q);
}

static void test_advert_caps(void **state)
{
  (void)state;
  char b[1024], ref[256];
  int rl = snprintf(ref, sizeof ref, "%s%creport-status delete-refs push-options agent=git/2\n",
                    OID_A " refs/heads/main", 0);
  size_t n = pkts(b, (const char *const[]){"# service=git-receive-pack\n", NULL, ref, NULL},
                  (size_t[]){27, 0, (size_t)rl, 0}, 4);
  assert_true(al_rp_advert_has_cap(b, n, "push-options"));
  assert_false(al_rp_advert_has_cap(b, n, "atomic"));
  assert_false(al_rp_advert_has_cap(b, 40, "push-options")); /* a fragment: fail closed */
  /* protocol v1's version line; no service line (a plain receive-pack) */
  n = pkts(b, (const char *const[]){"version 1\n", ref, NULL}, (size_t[]){10, (size_t)rl, 0}, 3);
  assert_true(al_rp_advert_has_cap(b, n, "push-options"));
  /* push-options only in a later ref's line, or a longer word: not listed */
  rl = snprintf(ref, sizeof ref, "%s%creport-status push-optionsx\n", OID_A " refs/heads/main", 0);
  char ref2[256];
  int r2 = snprintf(ref2, sizeof ref2, "%s%cpush-options\n", OID_A " refs/heads/b", 0);
  n = pkts(b, (const char *const[]){"# service=git-receive-pack\n", NULL, ref, ref2, NULL},
           (size_t[]){27, 0, (size_t)rl, (size_t)r2, 0}, 5);
  assert_false(al_rp_advert_has_cap(b, n, "push-options"));
  n = pkts(b, (const char *const[]){OID_A " refs/heads/main\n", NULL}, NULL, 2);
  assert_false(al_rp_advert_has_cap(b, n, "push-options")); /* no NUL */
  assert_false(al_rp_advert_has_cap("0000", 4, "push-options"));
  assert_false(al_rp_advert_has_cap("", 0, "push-options"));
}

/* ---- response ---- */

static void test_response(void **state)
{
  al_gw_response r;
  const char *why = NULL;
  (void)state;
  static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello";
  assert_int_equal(al_gw_parse_response(ok, sizeof ok - 1, &r, &why), (int)(sizeof ok - 1 - 5));
  assert_int_equal(r.status, 200);
  assert_int_equal(r.content_length, 5);
  assert_int_equal(r.n_headers, 2);
  static const char ch[] = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n"
                           "Connection: close\r\n\r\n";
  assert_true(al_gw_parse_response(ch, sizeof ch - 1, &r, &why) > 0);
  assert_true(r.chunked && r.close && r.status == 404);
  static const char v10[] = "HTTP/1.0 200 OK\r\n\r\n";
  assert_true(al_gw_parse_response(v10, sizeof v10 - 1, &r, &why) > 0);
  assert_true(r.close);
  assert_int_equal(al_gw_parse_response("HTTP/1.1 200 OK\r\nA: b\r\n", 23, &r, &why), 0);
  static const char *const bad[] = {
      "HTTP/2 200 OK\r\n\r\n",
      "HTTP/1.1 20 OK\r\n\r\n",
      "HTTP/1.1 200 OK\nA: b\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      "HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
      /* the one strict parser's rules (net/http.h), now the gateway's too */
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (al_gw_parse_response(bad[i], strlen(bad[i]), &r, &why) != -1)
      fail_msg("response case %zu accepted", i);
}

/* ---- rules ---- */

static const char *decide(unsigned sides, const char *method, const char *target,
                          const al_gw_rule **rule)
{
  char path[AL_GW_PATH_MAX];
  const char *q, *why;
  size_t ql;
  if (al_gw_target_parse(target, strlen(target), path, &q, &ql, &why) < 0)
    return why;
  const char *reason = NULL;
  *rule = al_gw_match(&R, sides, method, strlen(method), path, q, ql, &reason);
  return reason;
}

static void test_rules(void **state)
{
  static const struct {
    unsigned sides;
    const char *method, *target, *want; /* the rule name, or the reason of a refusal */
    int token;                          /* for allowed: AL_GW_TOKEN_* */
  } cases[] = {
      /* git (entries 7, 8, 9, 12) */
      {2, "GET", "/acme/tally.git/info/refs?service=git-upload-pack", "git-info-refs", 0},
      {2, "GET", "/acme/tally/info/refs?service=git-receive-pack", "git-info-refs", 0},
      {2, "GET", "/ACME/Tally.git/info/refs?service=git-upload-pack", "git-info-refs", 0},
      {2, "POST", "/acme/tally.git/git-upload-pack", "git-upload-pack", 0},
      {2, "POST", "/acme/tally.git/git-receive-pack", "git-receive-pack", 0},
      {2, "POST", "/acme/loose.git/git-receive-pack", "other-repository", -1},
      {2, "GET", "/acme/loose.git/info/refs?service=git-upload-pack", "other-repository", -1},
      {2, "GET", "/acme/tally.git/info/refs?service=git-receive-pack&service=git-upload-pack",
       "query-param-duplicate", -1},
      {2, "GET", "/acme/tally.git/info/refs?service=git-upload-pack&x=1", "query-param-refused",
       -1},
      {2, "GET", "/acme/tally.git/info/refs?Service=git-upload-pack", "git-info-refs", 0},
      {2, "GET", "/acme/tally.git/info/refs", "bad-service-query", -1},
      {2, "GET", "/acme/tally.git/info/refs?service=git-upload-archive", "bad-service-query", -1},
      {2, "POST", "/acme/tally.git/git-upload-pack?x=1", "query-param-refused", -1},
      {2, "POST", "/acme/tally.git/git-upload-pack?", "git-upload-pack", 0},
      {2, "GET", "/acme/tally.git/HEAD", "no-rule", -1},
      {2, "GET", "/acme/tally.git/objects/info/packs", "no-rule", -1},
      /* an API route on the git host, a git route on the API host */
      {2, "GET", "/repos/acme/tally", "no-rule", -1},
      {1, "POST", "/acme/tally.git/git-receive-pack", "write-refused", -1},
      /* API (entries 13-18, 21) */
      {1, "POST", "/repos/acme/tally/pulls", "write-refused", -1},
      {1, "POST", "/repos/acme/tally/issues/2/comments", "other-ticket", -1},
      {1, "POST", "/repos/acme/tally/issues/1/comments", "write-refused", -1},
      {1, "PATCH", "/repos/acme/tally/issues/1", "write-refused", -1},
      {1, "POST", "/repos/acme/tally/pulls/3/reviews", "write-refused", -1},
      {1, "PUT", "/repos/acme/tally/pulls/3/merge", "write-refused", -1},
      {1, "PUT", "/repos/acme/tally/branches/main/protection", "write-refused", -1},
      {1, "GET", "/repos/acme/loose", "other-repository", -1},
      {1, "GET", "/installation/repositories", "no-rule", -1},
      {1, "GET", "/app", "no-rule", -1},
      {1, "POST", "/app/installations/1/access_tokens", "write-refused", -1},
      {1, "GET", "/repos/acme/tally/issues/1", "api-issue", AL_GW_TOKEN_TICKET},
      {1, "GET", "/repos/ACME/TALLY/issues/1", "api-issue", AL_GW_TOKEN_TICKET},
      {1, "GET", "/repos/acme/tally/issues/01", "other-ticket", -1},
      {1, "GET", "/repos/acme/tally/issues/2", "other-ticket", -1},
      {1, "GET", "/repos/acme/tally/issues/1/comments?per_page=100", "api-issue-comments",
       AL_GW_TOKEN_TICKET},
      {1, "GET", "/repos/acme/tally", "api-repo", AL_GW_TOKEN_GIT},
      /* each route's parameters by name (issue #26) */
      {1, "GET", "/repos/acme/tally?x=1", "query-param-refused", -1},
      {1, "GET", "/repos/acme/tally/issues/1?per_page=1", "query-param-refused", -1},
      {1, "GET", "/repos/acme/tally/issues/1/comments?since=2020-01-01T00:00:00Z&page=2",
       "api-issue-comments", AL_GW_TOKEN_TICKET},
      {1, "GET", "/repos/acme/tally/issues/1/comments?per_page=1&per_page=100",
       "query-param-duplicate", -1},
      {1, "GET", "/repos/acme/tally/contents/a.py?ref=main&REF=x", "query-param-duplicate", -1},
      {1, "GET", "/repos/acme/tally/contents/a.py?ref=m%zzain", "query-bad-escape", -1},
      {1, "GET", "/repos/acme/tally/contents/a.py?ref=main%0a", "query-control-byte", -1},
      {1, "GET", "/repos/acme/tally/contents/a.py?path=x", "query-param-refused", -1},
      {1, "GET", "/repos/acme/tally/commits?sha=main&path=a.py&per_page=5", "api-commits",
       AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/branches?protected=true", "api-branches", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/branches/main?x=1", "query-param-refused", -1},
      {1, "GET", "/repos/acme/loose?x=1", "other-repository", -1},
      {1, "DELETE", "/repos/acme/tally", "write-refused", -1},
      {1, "GET", "/repos/acme/tally/contents", "api-contents-root", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/contents/tally/stats.py?ref=main", "api-contents",
       AL_GW_TOKEN_GIT},
      {1, "PUT", "/repos/acme/tally/contents/x.py", "write-refused", -1},
      {1, "GET", "/repos/acme/tally/commits", "api-commits", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/commits/" OID_A, "api-commit", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/branches", "api-branches", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/branches/airlock/1-ab12cd34", "api-branch", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:airlock/1-ab12cd34", "api-run-pulls",
       AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/pulls?head=acme%3Aairlock%2F1-ab12cd34&state=all",
       "api-run-pulls", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/pulls", "pulls-not-run-branch", -1},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:main", "pulls-not-run-branch", -1},
      {1, "GET", "/repos/acme/tally/pulls?head=ACME:airlock/1-ab12cd34&sort=created",
       "api-run-pulls", AL_GW_TOKEN_GIT},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:airlock/1-AB12CD34", "pulls-not-run-branch",
       -1},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:airlock/1-ab12cd34&h%65ad=acme:main",
       "query-param-duplicate", -1},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:airlock/1-ab12cd34;head=acme:main",
       "query-param-duplicate", -1},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:airlock/1-ab12cd34&head[]=acme:main",
       "query-param-duplicate", -1},
      {1, "GET", "/repos/acme/tally/pulls?head=acme:airlock/1-ab12cd34&labels=x",
       "query-param-refused", -1},
      {1, "GET", "/repos/acme/tally/pulls/3", "no-rule", -1},
      {1, "GET", "/repos/acme/tally/hooks", "no-rule", -1},
      {1, "POST", "/graphql", "graphql-refused", -1},
      {1, "GET", "/graphql", "graphql-refused", -1},
      {1, "GET", "/repos/acme/tally/../loose", "path-dot-segment", -1},
      {1, "GET", "/repos/acme%2Ftally", "path-encoded-separator", -1},
      {1, "GET", "/repos/acme/tally/", "path-empty-segment", -1},
      {3, "GET", "/repos/acme/tally", "api-repo", AL_GW_TOKEN_GIT},
      {3, "POST", "/acme/tally.git/git-upload-pack", "git-upload-pack", AL_GW_TOKEN_GIT},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const al_gw_rule *rule = NULL;
    const char *got = decide(cases[i].sides, cases[i].method, cases[i].target, &rule);
    if (!got || strcmp(got, cases[i].want) != 0 || (cases[i].token >= 0) != (rule != NULL) ||
        (rule && (int)rule->token != cases[i].token))
      fail_msg("%s %s: got %s (rule %s), want %s", cases[i].method, cases[i].target,
               got ? got : "-", rule ? rule->name : "none", cases[i].want);
  }
}

static void test_rules_prefix_and_comments(void **state)
{
  al_gw_rules r2;
  al_error e;
  const char *reason;
  (void)state;
  assert_int_equal(al_gw_rules_init(&r2, "acme/tally", 7, "airlock/7-x", 2, "/api/v3", "", &e), 0);
  assert_non_null(al_gw_match(&r2, API, "GET", 3, "/api/v3/repos/acme/tally", NULL, 0, &reason));
  assert_null(al_gw_match(&r2, API, "GET", 3, "/repos/acme/tally", NULL, 0, &reason));
  assert_null(al_gw_match(&r2, API, "POST", 4, "/api/v3/graphql", NULL, 0, &reason));
  assert_string_equal(reason, "graphql-refused");
  const al_gw_rule *c = al_gw_match(&r2, API, "POST", 4,
                                    "/api/v3/repos/acme/tally/issues/7/comments", NULL, 0, &reason);
  assert_non_null(c);
  assert_int_equal(c->body, AL_GW_BODY_COMMENT);
  assert_null(al_gw_match(&r2, API, "POST", 4, "/api/v3/repos/acme/tally/issues/1/comments", NULL,
                          0, &reason));
  assert_string_equal(reason, "other-ticket");
  /* bad inputs */
  assert_int_equal(al_gw_rules_init(&r2, "acme", 1, "b", 0, "", "", &e), -1);
  assert_int_equal(al_gw_rules_init(&r2, "acme/../x", 1, "b", 0, "", "", &e), -1);
  /* ticket 0: a Jira or Linear ticket, no issue of the forge: every issue
   * route is refused (the number the key carries and #0 included), the
   * repository's reads and the run branch's PR reads still pass; control:
   * the same paths with ticket 7 bound */
  assert_int_equal(al_gw_rules_init(&r2, "acme/tally", 0, "airlock/PROJ-7-x", 2, "", "", &e), 0);
  static const char *const issue_paths[] = {"/repos/acme/tally/issues/7",
                                            "/repos/acme/tally/issues/7/comments",
                                            "/repos/acme/tally/issues/0/comments"};
  for (size_t i = 0; i < sizeof issue_paths / sizeof issue_paths[0]; i++) {
    assert_null(al_gw_match(&r2, API, "GET", 3, issue_paths[i], NULL, 0, &reason));
    assert_null(al_gw_match(&r2, API, "POST", 4, issue_paths[i], NULL, 0, &reason));
  }
  assert_non_null(al_gw_match(&r2, API, "GET", 3, "/repos/acme/tally", NULL, 0, &reason));
  al_gw_rules r7;
  assert_int_equal(al_gw_rules_init(&r7, "acme/tally", 7, "airlock/7-x", 2, "", "", &e), 0);
  assert_non_null(al_gw_match(&r7, API, "GET", 3, "/repos/acme/tally/issues/7", NULL, 0, &reason));
  assert_non_null(
      al_gw_match(&r7, API, "POST", 4, "/repos/acme/tally/issues/7/comments", NULL, 0, &reason));
  assert_int_equal(al_gw_rules_init(&r2, "acme/x", 1, "a..b", 0, "", "", &e), -1);
  assert_int_equal(al_gw_rules_init(&r2, "acme/x", 1, "b", 0, "/api/", "", &e), -1);
  size_t n;
  const al_gw_rule *t = al_gw_rule_table(&n);
  assert_true(n >= 10);
  /* docs/gateway.md's table names every rule */
  FILE *f = fopen(AIRLOCK_SRC "/docs/gateway.md", "r");
  assert_non_null(f);
  static char doc[65536];
  size_t dl = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[dl] = '\0';
  for (size_t i = 0; i < n; i++) {
    assert_true(t[i].name && t[i].method && t[i].path && t[i].doc);
    char cell[80];
    snprintf(cell, sizeof cell, "| `%s` |", t[i].name);
    if (!strstr(doc, cell))
      fail_msg("docs/gateway.md does not list rule %s", t[i].name);
  }
}

static al_rp_request *cmds(const char *const *triples, size_t n)
{
  al_rp_request *q = calloc(1, sizeof *q);
  for (size_t i = 0; i < n; i++) {
    snprintf(q->cmd[i].old_oid, 65, "%s", triples[3 * i]);
    snprintf(q->cmd[i].new_oid, 65, "%s", triples[3 * i + 1]);
    snprintf(q->cmd[i].ref, 256, "%s", triples[3 * i + 2]);
  }
  q->n_cmds = n;
  return q;
}

static void test_push_check(void **state)
{
  static const struct {
    const char *cmd[6];
    size_t n;
    const char *want; /* NULL: allowed */
  } cases[] = {
      /* entry 5: create, update, force-update of the run branch */
      {{ZERO, OID_B, "refs/heads/airlock/1-ab12cd34"}, 1, NULL},
      {{OID_A, OID_B, "refs/heads/airlock/1-ab12cd34"}, 1, NULL},
      /* entries 1-4, 6 */
      {{ZERO, OID_B, "refs/heads/feature-x"}, 1, "push-other-branch"},
      {{ZERO, OID_B, "refs/heads/airlock/999-deadbeef"}, 1, "push-other-branch"},
      {{ZERO, OID_B, "refs/tags/v9.9.9"}, 1, "push-tag"},
      {{OID_A, OID_B, "refs/tags/v9.9.9"}, 1, "push-tag"},
      {{OID_A, ZERO, "refs/tags/v9.9.9"}, 1, "push-tag"},
      {{OID_A, ZERO, "refs/heads/airlock/1-ab12cd34"}, 1, "push-delete"},
      {{ZERO, OID_B, "refs/notes/commits"}, 1, "push-other-ref"},
      {{ZERO, OID_B, "refs/pull/1/head"}, 1, "push-other-ref"},
      {{OID_A, OID_B, "refs/heads/main"}, 1, "push-other-branch"},
      {{ZERO, OID_B, "refs/heads/airlock/1-ab12cd34x"}, 1, "push-other-branch"},
      {{ZERO, OID_B, "refs/heads/Airlock/1-ab12cd34"}, 1, "push-other-branch"},
      /* mixed: refused whole */
      {{ZERO, OID_B, "refs/heads/airlock/1-ab12cd34", ZERO, OID_B, "refs/heads/feature-y"},
       2,
       "push-other-branch"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    al_rp_request *q = cmds(cases[i].cmd, cases[i].n);
    const char *reason = NULL;
    size_t bad = 99;
    int r = al_gw_check_push(&R, q, &reason, &bad);
    if (cases[i].want ? (r != -1 || strcmp(reason, cases[i].want) != 0) : r != 0)
      fail_msg("push case %zu: %d %s", i, r, reason ? reason : "-");
    free(q);
  }
  al_rp_request empty = {0};
  const char *reason;
  size_t bad;
  assert_int_equal(al_gw_check_push(&R, &empty, &reason, &bad), -1);
  /* push options (git push -o), parsed as the gateway parses them: the run
   * branch with GitLab's merge_request.create is refused whole; control:
   * the same push without options passes */
  char b[1024], first[256];
  const char *why = NULL;
  int fl = snprintf(first, sizeof first, "%s%creport-status push-options",
                    ZERO " " OID_B " refs/heads/airlock/1-ab12cd34", 0);
  const char *ls[] = {first, NULL, "merge_request.create", "ci.variable=A=b", NULL};
  size_t ll[] = {(size_t)fl, 0, 20, 15, 0};
  size_t n = pkts(b, ls, ll, 5);
  al_rp_request *q = calloc(1, sizeof *q);
  assert_non_null(q);
  assert_int_equal(al_rp_parse(b, n, q, &why), (int)n);
  assert_int_equal(q->n_push_options, 2);
  assert_int_equal(al_gw_check_push(&R, q, &reason, &bad), -1);
  assert_string_equal(reason, "push-option-refused");
  fl = snprintf(first, sizeof first, "%s%creport-status",
                ZERO " " OID_B " refs/heads/airlock/1-ab12cd34", 0);
  ll[0] = (size_t)fl;
  n = pkts(b, ls, ll, 2);
  assert_int_equal(al_rp_parse(b, n, q, &why), (int)n);
  assert_int_equal(q->n_push_options, 0);
  assert_int_equal(al_gw_check_push(&R, q, &reason, &bad), 0);
  free(q);
}

/* ---- credentials (entries 19, 20, 22) ---- */

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
  al_gw_target_parse(q.target, q.target_len, path, &query, &ql, &tw);
  return al_gw_credential(&q, query, ql, PH, why);
}

static void b64(const char *s, char *out)
{
  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)strlen(s));
}

static void test_credentials(void **state)
{
  const char *why = NULL;
  char h[1024];
  (void)state;
  /* base64("x-access-token:" PH), base64(PH ":") */
  static const char *const ok[] = {
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: token " PH "\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " PH "\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nauthorization: BEARER " PH "\r\n\r\n",
  };
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(cred_of(ok[i], &why), AL_GW_CRED_PLACEHOLDER);
  char b1[512], b2[512], b3[512];
  b64("x-access-token:" PH, b1);
  b64(PH ":", b2);
  b64("x:ghs_notit", b3);
  snprintf(h, sizeof h, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic %s\r\n\r\n", b1);
  assert_int_equal(cred_of(h, &why), AL_GW_CRED_PLACEHOLDER);
  snprintf(h, sizeof h, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic %s\r\n\r\n", b2);
  assert_int_equal(cred_of(h, &why), AL_GW_CRED_PLACEHOLDER);
  snprintf(h, sizeof h, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic %s\r\n\r\n", b3);
  assert_int_equal(cred_of(h, &why), AL_GW_CRED_FOREIGN);
  static const char *const foreign[] = {
      /* entry 19 */
      "GET /repos/acme/tally/issues/1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer "
      "ghs_0123456789abcdefghijklmnopqrstuvwxyz\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: token " PH "x\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Digest " PH "\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: " PH "\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic !!!!\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: token " PH "\r\nAuthorization: token " PH
      "\r\n\r\n",
      /* entry 22 */
      "GET / HTTP/1.1\r\nHost: a\r\nCookie: token=" PH "\r\n\r\n",
      "GET /?access_token=" PH " HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: token " PH "\r\nCookie: a=b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nProxy-Authorization: Basic eDp5\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
    why = NULL;
    if (cred_of(foreign[i], &why) != AL_GW_CRED_FOREIGN || strcmp(why, "foreign-credential") != 0)
      fail_msg("foreign case %zu accepted", i);
  }
  /* entry 20 */
  assert_int_equal(cred_of("GET /repos/acme/tally HTTP/1.1\r\nHost: a\r\n\r\n", &why),
                   AL_GW_CRED_NONE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_target),
      cmocka_unit_test(test_query),
      cmocka_unit_test(test_query_decode),
      cmocka_unit_test(test_chunked),
      cmocka_unit_test(test_pkt),
      cmocka_unit_test(test_receive_pack),
      cmocka_unit_test(test_push_option_rewrite),
      cmocka_unit_test(test_advert_caps),
      cmocka_unit_test(test_response),
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_rules_prefix_and_comments),
      cmocka_unit_test(test_push_check),
      cmocka_unit_test(test_credentials),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
