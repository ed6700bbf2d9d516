/* libFuzzer target: airlock serve's jira webhook parser and signature check
 * (serve/webhook_jira.c, issue #31), held to webhook_tickets_check.h's
 * invariants: Jira's triggers are a label and an assignment. */
#include <stdint.h>

#include "webhook_tickets_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const triggers[] = {"label", "assignee", NULL};
  al_error err = {0};
  al_wh_ticket_event ev;
  int rc = al_wh_jira_parse((const char *)data, size, "airlock", "bot-1", NULL, &ev, &err);
  wh_check_event(rc, &ev, AL_TK_JIRA, triggers);
  wh_check_signature(al_wh_jira_verify, "sha256=", data, size);
  return 0;
}
