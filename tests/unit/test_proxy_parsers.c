/* Unit tests for the proxy's parsers: host canonicalization, the HTTP head
 * parser and the ClientHello parser (issue #3 items 2, 4, 7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <cmocka.h>

#include "net/addr.h"
#include "net/host.h"
#include "net/http.h"
#include "proxy/tls.h"

static void test_authority(void **state)
{
  static const struct {
    const char *in, *canon;
  } good[] = {
      {"allowed.test:443", "allowed.test"}, {"ALLOWED.TEST.:443", "allowed.test"},
      {"127.1:443", "127.0.0.1"},           {"0x7f.1:443", "127.0.0.1"},
      {"2130706433:443", "127.0.0.1"},      {"[::FFFF:127.0.0.1]:443", "::ffff:127.0.0.1"},
  };
  static const char *const bad[] = {
      "allowed.test..:443",
      "allowed.test:0443",
      "allowed.test:+443",
      "allowed.test:0",
      "allowed.test:65536",
      "a@b:443",
      "allowed.test:443:80",
      "[::1%25x]:443",
      "%61llowed.test:443",
      "allowed.test",
      "1.2.3.999:443",
      "-a.test:443",
      "a_b.test:443",
      ":443",
      "[::1]443",
  };
  al_host h;
  uint16_t port;
  const char *why;
  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    assert_int_equal(al_authority_parse(good[i].in, strlen(good[i].in), &h, &port, &why), 0);
    assert_string_equal(h.name, good[i].canon);
    assert_int_equal(port, 443);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(al_authority_parse(bad[i], strlen(bad[i]), &h, &port, &why), -1);
}

static void test_match(void **state)
{
  (void)state;
  assert_true(al_host_matches("a.example.org", "example.org", true));
  assert_true(al_host_matches("b.a.example.org", "example.org", true));
  assert_false(al_host_matches("example.org", "example.org", true));
  assert_false(al_host_matches("badexample.org", "example.org", true));
  assert_false(al_host_matches("allowed.test.evil.example", "allowed.test", false));
}

static const char *parse_reason(const char *head)
{
  al_http_request req;
  const char *why = NULL;
  int r = al_http_parse_head(head, strlen(head), &req, &why);
  return r > 0 ? "ok" : r == 0 ? "more" : why;
}

static void test_head(void **state)
{
  (void)state;
  assert_string_equal(parse_reason("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n"),
                      "ok");
  assert_string_equal(parse_reason("CONNECT a.test:443 HTTP/1.1\r\nHost: a"), "more");
  assert_string_equal(parse_reason("CONNECT a.test:443 HTTP/1.1\nHost: a\r\n\r\n"), "bare-lf");
  assert_string_equal(parse_reason("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n"), "obs-fold");
  assert_string_equal(parse_reason("GET / HTTP/1.1\r\nA : b\r\n\r\n"), "space-before-colon");
  assert_string_equal(parse_reason("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"),
                      "duplicate-host");
  assert_string_equal(
      parse_reason("GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
      "cl-and-te");
  assert_string_equal(parse_reason("GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
                      "bad-transfer-encoding");
  assert_string_equal(parse_reason("GET / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n"),
                      "bad-content-length");
  assert_string_equal(parse_reason("GET / HTTP/1.1\r\nConnection: host\r\n\r\n"),
                      "bad-connection-header");
  assert_string_equal(parse_reason("GET / HTTP/2.0\r\n\r\n"), "bad-version");
}

static void test_absolute(void **state)
{
  al_host h;
  uint16_t port;
  const char *path, *why;
  size_t plen;
  const char *t = "http://Plain.Allowed.Test:8080/a?b";
  (void)state;
  assert_int_equal(al_http_absolute_target(t, strlen(t), &h, &port, &path, &plen, &why), 0);
  assert_string_equal(h.name, "plain.allowed.test");
  assert_int_equal(port, 8080);
  assert_int_equal(plen, 4);
  t = "http://a@b.test/";
  assert_int_equal(al_http_absolute_target(t, strlen(t), &h, &port, &path, &plen, &why), -1);
  t = "https://b.test/";
  assert_int_equal(al_http_absolute_target(t, strlen(t), &h, &port, &path, &plen, &why), -1);
}

/* A minimal ClientHello with the given extensions block. */
static size_t make_hello(uint8_t *out, const uint8_t *ext, size_t ext_len)
{
  uint8_t body[512];
  size_t n = 0;
  body[n++] = 3, body[n++] = 3;
  memset(body + n, 0, 32), n += 32;
  body[n++] = 0;                                                 /* session id */
  body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 1; /* one suite */
  body[n++] = 1, body[n++] = 0;                                  /* compression null */
  body[n++] = (uint8_t)(ext_len >> 8), body[n++] = (uint8_t)ext_len;
  memcpy(body + n, ext, ext_len), n += ext_len;
  size_t m = 0;
  out[m++] = 22, out[m++] = 3, out[m++] = 1;
  out[m++] = (uint8_t)((n + 4) >> 8), out[m++] = (uint8_t)(n + 4);
  out[m++] = 1, out[m++] = 0, out[m++] = (uint8_t)(n >> 8), out[m++] = (uint8_t)n;
  memcpy(out + m, body, n);
  return m + n;
}

/* The plain-HTTP response head filter (issue #26 item 5): the origin's
 * X-Airlock-* fields never reach the client. */
static void test_response_strip(void **state)
{
  (void)state;
  static const char in[] = "HTTP/1.1 200 OK\r\nX-Airlock-Deny: not-allowed\r\nX-Origin: a\r\n"
                           "x-airlock: 1\r\nX-AIRLOCK-decision: deny\r\nX-Airlockish: kept\r\n"
                           "Content-Length: 2\r\n\r\nhi";
  char out[512];
  size_t ol = 0;
  int status = 0;
  const char *why = NULL;
  int h = al_http_response_strip(in, sizeof in - 1, out, &ol, &status, &why);
  assert_int_equal(h, (int)(sizeof in - 1 - 2));
  assert_int_equal(status, 200);
  out[ol] = '\0';
  assert_string_equal(out, "HTTP/1.1 200 OK\r\nX-Origin: a\r\nX-Airlockish: kept\r\n"
                           "Content-Length: 2\r\n\r\n");
  /* control: the filter is what removes them (the input has them) */
  assert_non_null(strstr(in, "X-Airlock-Deny"));
  /* a 100 Continue, then more to come */
  static const char c100[] = "HTTP/1.1 100 Continue\r\nX-Airlock-Deny: x\r\n\r\nHTTP/1.1 2";
  h = al_http_response_strip(c100, sizeof c100 - 1, out, &ol, &status, &why);
  assert_int_equal(status, 100);
  out[ol] = '\0';
  assert_string_equal(out, "HTTP/1.1 100 Continue\r\n\r\n");
  assert_int_equal(
      al_http_response_strip(c100 + h, sizeof c100 - 1 - (size_t)h, out, &ol, &status, &why), 0);
  assert_int_equal(al_http_response_strip("HTTP/1.1 204\r\n\r\n", 16, out, &ol, &status, &why), 16);
  static const struct {
    const char *in, *why;
  } bad[] = {
      {"HTTP/1.1 200 OK\r\nX-Airlock-Deny: a\r\n b\r\n\r\n", "resp-bad-header"}, /* obs-fold */
      {"HTTP/1.1 200 OK\r\nX-Airlock-Deny : a\r\n\r\n", "resp-bad-header"},
      {"HTTP/1.1 200 OK\nX-Airlock-Deny: a\n\n", "resp-bad-status-line"},
      {"HTTP/1.1 200 OK\r\nX-Airlock-Deny: a\n\r\n", "resp-bad-header"},
      {"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "resp-bad-header"},
      {"HTTP/1.1 200 OK\r\nX: a\x01\r\n\r\n", "resp-bad-header"},
      {"HTTP/2 200\r\n\r\n", "resp-bad-status-line"},
      {"HTTP/1.1 20 OK\r\n\r\n", "resp-bad-status-line"},
      {"HTTP/1.1 200OK\r\n\r\n", "resp-bad-status-line"},
      {"HTTP/1.1 200 OK\r\n: a\r\n\r\n", "resp-bad-header"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why = NULL;
    int r = al_http_response_strip(bad[i].in, strlen(bad[i].in), out, &ol, &status, &why);
    if (r != -1 || !why)
      fail_msg("case %zu (%s): got %d, want a refusal", i, bad[i].why, r);
  }
  char *big = malloc(AL_HTTP_RESP_HEAD_MAX + 10);
  memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
  memset(big + 20, 'a', AL_HTTP_RESP_HEAD_MAX - 10);
  char *bo = malloc(AL_HTTP_RESP_HEAD_MAX + 10);
  assert_int_equal(al_http_response_strip(big, AL_HTTP_RESP_HEAD_MAX + 10, bo, &ol, &status, &why),
                   -1);
  assert_non_null(why);
  free(big);
  free(bo);
}

static void test_client_hello(void **state)
{
  static const uint8_t sni[] = {0,   0,   0,   17,  0,   15,  0,   0,   12,  'a', 'l',
                                'l', 'o', 'w', 'e', 'd', '.', 't', 'e', 's', 't'};
  static const uint8_t sni_ech[] = {0,   0,   0,   17,   0,    15,  0,   0,   12,
                                    'a', 'l', 'l', 'o',  'w',  'e', 'd', '.', 't',
                                    'e', 's', 't', 0xfe, 0x0d, 0,   1,   0};
  static const uint8_t two[] = {0, 0, 0, 10, 0, 8, 0, 0, 1, 'a', 0, 0, 1, 'b'};
  uint8_t buf[600];
  al_tls_hello h;
  const char *why;
  (void)state;
  size_t n = make_hello(buf, sni, sizeof sni);
  assert_int_equal(al_tls_parse_client_hello(buf, n, &h, &why), 1);
  assert_string_equal(h.sni, "allowed.test");
  for (size_t k = 0; k < n; k++) /* every prefix: need more, never an error */
    assert_int_equal(al_tls_parse_client_hello(buf, k, &h, &why), 0);
  n = make_hello(buf, sni_ech, sizeof sni_ech);
  assert_int_equal(al_tls_parse_client_hello(buf, n, &h, &why), 1);
  assert_true(h.ech);
  n = make_hello(buf, two, sizeof two);
  assert_int_equal(al_tls_parse_client_hello(buf, n, &h, &why), -1);
  assert_int_equal(al_tls_parse_client_hello((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &h, &why),
                   -1);
  assert_string_equal(why, "not-tls");
}

static void test_addr(void **state)
{
  static const char *const refused[] = {
      "169.254.169.254", "10.0.0.1",  "100.100.100.200", "127.0.0.1",     "0.1.2.3",
      "192.0.2.1",       "224.0.0.1", "255.255.255.255", "168.63.129.16", "198.18.0.1"};
  static const char *const refused6[] = {"::1",           "::",
                                         "::ffff:7f00:1", "64:ff9b::a9fe:a9fe",
                                         "2002:a00:1::",  "fd00:ec2::254",
                                         "fe80::1",       "2001:db8::1",
                                         "ff02::1",       "64:ff9b:1::1",
                                         "2001::1"};
  struct in_addr a;
  struct in6_addr a6;
  (void)state;
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    inet_pton(AF_INET, refused[i], &a);
    assert_non_null(al_addr_classify4(&a, NULL));
  }
  for (size_t i = 0; i < sizeof refused6 / sizeof refused6[0]; i++) {
    inet_pton(AF_INET6, refused6[i], &a6);
    assert_non_null(al_addr_classify6(&a6, NULL));
  }
  inet_pton(AF_INET, "8.8.8.8", &a);
  assert_null(al_addr_classify4(&a, NULL));
  inet_pton(AF_INET6, "2606:4700::1111", &a6);
  assert_null(al_addr_classify6(&a6, NULL));
  inet_pton(AF_INET6, "::ffff:8.8.8.8", &a6);
  assert_null(al_addr_classify6(&a6, NULL));
}

/* The response-head parser (issue #28: the model relay's upstream): each
 * rule has a case that breaks it and the well-formed control beside it. */
static void test_response_head(void **state)
{
  (void)state;
  al_http_response r;
  const char *why = NULL;
  static const char ok1[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX:\r\n\r\nok";
  assert_int_equal(al_http_parse_response_head(ok1, sizeof ok1 - 1, &r, &why), sizeof ok1 - 3);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.content_length, 2);
  assert_int_equal(r.n_headers, 2);
  assert_int_equal(r.headers[1].value_len, 0);
  assert_false(r.chunked);
  static const char ok2[] = "HTTP/1.0 404\r\nTransfer-Encoding: gzip , CHUNKED\r\n\r\n";
  assert_true(al_http_parse_response_head(ok2, sizeof ok2 - 1, &r, &why) > 0);
  assert_int_equal(r.status, 404);
  assert_int_equal(r.version_minor, 0);
  assert_true(r.chunked);
  assert_int_equal(r.transfer_codings, 2);
  assert_int_equal(r.content_length, -1);
  /* incomplete: more bytes needed, nothing wrong yet */
  assert_int_equal(al_http_parse_response_head(ok1, 20, &r, &why), 0);
  static const struct {
    const char *head, *why;
  } bad[] = {
      {"HTTP/1.1 200 OK\r\nx:\n\r\n", "bare-lf"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n",
       "duplicate-content-length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n", "bad-content-length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n", "bad-content-length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456\r\n\r\n", "bad-content-length"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "bad-transfer-encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", "bad-transfer-encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n", "bad-transfer-encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
       "bad-transfer-encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n", "bad-transfer-encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", "cl-and-te"},
      {"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", "obs-fold"},
      {"HTTP/1.1 200 OK\r\nX : a\r\n\r\n", "space-before-colon"},
      {"HTTP/1.1 200 OK\r\nX(y): a\r\n\r\n", "bad-header-name"},
      {"HTTP/1.1 200 OK\r\n: a\r\n\r\n", "bad-header-name"},
      {"HTTP/1.1 2000 OK\r\n\r\n", "bad-status-line"},
      {"HTTP/1.1 099 X\r\n\r\n", "bad-status-line"},
      {"HTTP/1.1 600 X\r\n\r\n", "bad-status-line"},
      {"HTTP/1.2 200 OK\r\n\r\n", "bad-status-line"},
      {"HTTP/2 200 OK\r\n\r\n", "bad-status-line"},
      {"\r\n\r\n", "bad-status-line"},
      {"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "bare-cr"},
      {"HTTP/1.1 200 OK\r\nX: \x80\r\n\r\n", "non-ascii-in-head"},
      {"HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n", "ctl-in-head"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why = NULL;
    int got = al_http_parse_response_head(bad[i].head, strlen(bad[i].head), &r, &why);
    if (got != -1 || !why || strcmp(why, bad[i].why) != 0)
      fail_msg("case %zu `%s`: got %d `%s`, want -1 `%s`", i, bad[i].head, got, why ? why : "",
               bad[i].why);
  }
  /* a NUL (strlen cannot carry it) */
  static const char nul[] = "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n";
  assert_int_equal(al_http_parse_response_head(nul, sizeof nul - 1, &r, &why), -1);
  assert_string_equal(why, "nul-in-head");
  /* 96 fields pass, 97 do not */
  char big[4096];
  size_t n = (size_t)snprintf(big, sizeof big, "HTTP/1.1 200 OK\r\n");
  for (int i = 0; i < AL_HTTP_RESP_MAX_HEADERS; i++)
    n += (size_t)snprintf(big + n, sizeof big - n, "x:\r\n");
  memcpy(big + n, "\r\n", 2);
  assert_true(al_http_parse_response_head(big, n + 2, &r, &why) > 0);
  memcpy(big + n, "x:\r\n\r\n", 7);
  assert_int_equal(al_http_parse_response_head(big, n + 7, &r, &why), -1);
  assert_string_equal(why, "too-many-headers");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_authority),     cmocka_unit_test(test_match),
      cmocka_unit_test(test_head),          cmocka_unit_test(test_absolute),
      cmocka_unit_test(test_client_hello),  cmocka_unit_test(test_addr),
      cmocka_unit_test(test_response_head), cmocka_unit_test(test_response_strip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
