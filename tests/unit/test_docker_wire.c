/* Unit test for the docker engine's attach answer (run/dockerwire.h
 * al_docker_attach_head), read through the one strict response head parser
 * of net/http.h (issue 28: one HTTP head parser): the engine's own answers
 * (101 UPGRADED, 200 from older engines, each with stream bytes after the
 * head) give what the hand-written reader gave (complete, the first stream
 * byte's offset); a head cut short waits for more; an error answer (404,
 * HTTP/1.0) is refused with the status line for the message; and the
 * control: a head the strict parser refuses (a field without a colon,
 * Content-Length with Transfer-Encoding) is refused even with a 101. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "run/dockerwire.h"

static int head(const char *s, size_t *off)
{
  return al_docker_attach_head(s, strlen(s), off);
}

static void test_engine_answers(void **state)
{
  (void)state;
  static const char up[] = "HTTP/1.1 101 UPGRADED\r\n"
                           "Content-Type: application/vnd.docker.raw-stream\r\n"
                           "Connection: Upgrade\r\nUpgrade: tcp\r\n"
                           "Api-Version: 1.41\r\nDocker-Experimental: false\r\n"
                           "Ostype: linux\r\nServer: Docker/24.0.7 (linux)\r\n\r\n";
  static const char frame[] = "\x01\x00\x00\x00\x00\x00\x00\x03hi\n";
  char buf[1024];
  memcpy(buf, up, strlen(up));
  memcpy(buf + strlen(up), frame, sizeof frame - 1);
  size_t off = 99;
  assert_int_equal(al_docker_attach_head(buf, strlen(up) + sizeof frame - 1, &off), 0);
  assert_int_equal(off, strlen(up));
  static const char ok[] = "HTTP/1.1 200 OK\r\n"
                           "Content-Type: application/vnd.docker.raw-stream\r\n\r\n";
  off = 99;
  assert_int_equal(head(ok, &off), 0);
  assert_int_equal(off, strlen(ok));
}

static void test_incomplete(void **state)
{
  (void)state;
  size_t off = 99;
  assert_int_equal(head("", &off), 1);
  assert_int_equal(head("HTTP/1.1 101 UPGRADED\r\nContent-Type: applic", &off), 1);
  assert_int_equal(head("HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n", &off), 1);
  assert_int_equal(off, 0);
}

static void test_errors(void **state)
{
  (void)state;
  size_t off = 0;
  static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                           "Content-Length: 33\r\n\r\n{\"message\":\"No such container: x\"}";
  assert_int_equal(head(nf, &off), -1);
  assert_int_equal(off, strlen("HTTP/1.1 404 Not Found"));
  assert_int_equal(head("HTTP/1.0 200 OK\r\n\r\n", &off), -1);
  assert_int_equal(off, strlen("HTTP/1.0 200 OK"));
  assert_int_equal(head("HTTP/1.1 500 Internal Server Error\r\n\r\n", &off), -1);
  assert_int_equal(off, strlen("HTTP/1.1 500 Internal Server Error"));
}

static void test_strict(void **state)
{
  (void)state;
  size_t off = 0;
  /* the positive control: the same head with its fields well formed */
  assert_int_equal(head("HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n\r\n", &off), 0);
  assert_int_equal(head("HTTP/1.1 101 UPGRADED\r\nUpgrade tcp\r\n\r\n", &off), -1);
  assert_int_equal(off, strlen("HTTP/1.1 101 UPGRADED"));
  assert_int_equal(
      head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", &off), -1);
  assert_int_equal(head("HTTP/1.1 101 UPGRADED\nUpgrade: tcp\n\n", &off), -1);
  assert_true(off <= strlen("HTTP/1.1 101 UPGRADED\nUpgrade: tcp\n\n"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_engine_answers),
      cmocka_unit_test(test_incomplete),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_strict),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
