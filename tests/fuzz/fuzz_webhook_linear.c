/* libFuzzer target: airlock serve's linear webhook parser and signature check
 * (serve/webhook_linear.c, issue #31). Invariants: a trigger has a ticket key
 * that parses as a linear ticket name, a non-empty sender and id and one of
 * the trigger names; an ignored delivery says why; the signature check
 * accepts the body's own HMAC and refuses it over the body one byte shorter. */
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/webhook_tickets.h"
#include "tickets/tickets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *body = (const char *)data;
  al_error err = {0};
  al_wh_ticket_event ev;
  int rc = al_wh_linear_parse(body, size, 1764633600000, "airlock", "app-1", NULL, &ev, &err);
  if (rc == 0 && ev.kind == AL_WEBHOOK_RUN) {
    al_tk_target t;
    if (al_tk_target_parse(AL_TK_LINEAR, ev.key, NULL, &t, &err) < 0 || !ev.sender[0] ||
        !ev.id[0] ||
        !(strcmp(ev.trigger, "label") == 0 || strcmp(ev.trigger, "assignee") == 0 ||
          strcmp(ev.trigger, "delegate") == 0))
      abort();
  } else if (rc == 0 && (ev.kind != AL_WEBHOOK_IGNORE || !ev.why[0])) {
    abort();
  }
  static const char key[] = "fuzz-secret";
  unsigned char md[32];
  unsigned int ml = 0;
  HMAC(EVP_sha256(), key, (int)strlen(key), data, size, md, &ml);
  char hex[80] = "";
  size_t o = strlen(hex);
  for (int i = 0; i < 32; i++)
    snprintf(hex + o + 2 * i, 3, "%02x", md[i]);
  if (al_wh_linear_verify(key, strlen(key), hex, body, size, &err) != 0)
    abort();
  if (size > 0 && al_wh_linear_verify(key, strlen(key), hex, body, size - 1, &err) == 0)
    abort();
  return 0;
}
