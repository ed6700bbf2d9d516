/* libFuzzer target: airlock serve's linear webhook parser and signature
 * check (serve/webhook_linear.c, issue #31), held to
 * webhook_tickets_check.h's invariants: Linear's triggers are a label, an
 * assignment and a delegation. */
#include <stdint.h>

#include "webhook_tickets_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const triggers[] = {"label", "assignee", "delegate", NULL};
  al_error err = {0};
  al_wh_ticket_event ev;
  int rc = al_wh_linear_parse((const char *)data, size, 1764633600000, "airlock", "app-1", NULL,
                              &ev, &err);
  wh_check_event(rc, &ev, AL_TK_LINEAR, triggers);
  wh_check_signature(al_wh_linear_verify, "", data, size);
  return 0;
}
