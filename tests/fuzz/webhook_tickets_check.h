/* The invariants fuzz_webhook_jira.c and fuzz_webhook_linear.c hold the
 * ticket webhooks' readers to (serve/webhook_tickets.h), one copy for both:
 *   - wh_check_event: a parse that returns 0 is a trigger or an ignored
 *     delivery; a trigger's key parses as a ticket name of `kind` whose
 *     project is ev->project, its sender and id are not empty, and its
 *     trigger is one of the vendor's (`triggers`, NULL-terminated); an
 *     ignored delivery says why;
 *   - wh_check_signature: the signature check accepts the body's own
 *     HMAC-SHA256 (hex after `prefix`, lower and upper case) and refuses it
 *     over the body one byte shorter and with one digit changed.
 * Header-only, static functions: include it once. Aborts on a breach. */
#ifndef AL_TEST_WEBHOOK_TICKETS_CHECK_H
#define AL_TEST_WEBHOOK_TICKETS_CHECK_H

#include <ctype.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/webhook_tickets.h"
#include "tickets/tickets.h"

static void wh_check_event(int rc, const al_wh_ticket_event *ev, al_tk_kind kind,
                           const char *const *triggers)
{
  if (rc != 0)
    return;
  if (ev->kind == AL_WEBHOOK_IGNORE) {
    if (!ev->why[0])
      abort();
    return;
  }
  if (ev->kind != AL_WEBHOOK_RUN)
    abort();
  al_tk_target t;
  al_error err = {0};
  if (al_tk_target_parse(kind, ev->key, NULL, &t, &err) < 0 ||
      strcmp(t.project, ev->project) != 0 || !ev->sender[0] || !ev->id[0])
    abort();
  for (; *triggers; triggers++)
    if (strcmp(ev->trigger, *triggers) == 0)
      return;
  abort();
}

typedef int (*wh_verify_fn)(const void *secret, size_t secret_len, const char *header,
                            const void *body, size_t len, al_error *err);

static void wh_check_signature(wh_verify_fn verify, const char *prefix, const uint8_t *data,
                               size_t size)
{
  static const char key[] = "fuzz-secret";
  unsigned char md[32];
  unsigned int ml = 0;
  if (!HMAC(EVP_sha256(), key, (int)strlen(key), data, size, md, &ml) || ml != 32)
    abort();
  char hdr[80];
  size_t o = (size_t)snprintf(hdr, sizeof hdr, "%s", prefix);
  for (int i = 0; i < 32; i++)
    snprintf(hdr + o + 2 * i, 3, "%02x", md[i]);
  al_error err = {0};
  if (verify(key, strlen(key), hdr, data, size, &err) != 0)
    abort();
  if (size > 0 && verify(key, strlen(key), hdr, data, size - 1, &err) == 0)
    abort();
  char upper[80];
  memcpy(upper, hdr, sizeof upper);
  for (size_t i = o; upper[i]; i++)
    upper[i] = (char)toupper((unsigned char)upper[i]);
  if (verify(key, strlen(key), upper, data, size, &err) != 0)
    abort();
  hdr[o + (size % 64)] = hdr[o + (size % 64)] == '0' ? '1' : '0';
  if (verify(key, strlen(key), hdr, data, size, &err) == 0)
    abort();
}

#endif
