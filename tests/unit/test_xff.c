/* airlock serve: the client a trusted reverse proxy forwards for (issue
 * #29 item 4): X-Forwarded-For read from the right, trusted hops skipped,
 * nothing believed past a hop that is not an address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "serve/webhook.h"

static const char *const trusted[] = {"127.0.0.1", "10.0.0.2"};

static const char *xff(const char *v)
{
  static char out[64];
  al_webhook_xff_client(v, trusted, 2, out, sizeof out);
  return out;
}

static void test_xff(void **state)
{
  (void)state;
  assert_string_equal(xff("203.0.113.7"), "203.0.113.7");
  /* the client may write anything on the left: only the hop our proxy added counts */
  assert_string_equal(xff("6.6.6.6, 203.0.113.7"), "203.0.113.7");
  /* a chain of trusted proxies is skipped */
  assert_string_equal(xff("198.51.100.1,203.0.113.7 ,10.0.0.2, 127.0.0.1"), "203.0.113.7");
  assert_string_equal(xff("2001:db8::1"), "2001:db8::1");
  /* only trusted hops, none, a name, an over-long value: no client */
  assert_string_equal(xff("127.0.0.1, 10.0.0.2"), "");
  assert_string_equal(xff(NULL), "");
  assert_string_equal(xff(""), "");
  assert_string_equal(xff("evil, 127.0.0.1"), "");
  assert_string_equal(xff("203.0.113.7, unknown"), "");
  assert_string_equal(xff("203.0.113.7/24"), "");
  char big[1100];
  memset(big, '1', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_string_equal(xff(big), "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_xff)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
