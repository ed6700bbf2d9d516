/* Jira and Linear webhooks as triggers (issue #31 item 4): authenticate,
 * then parse strictly. Follows:
 *   - Jira Cloud "Webhooks" (developer.atlassian.com/cloud/jira/platform/
 *     webhooks): a webhook with a secret signs each delivery with
 *     `X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>`; each
 *     delivery carries `X-Atlassian-Webhook-Identifier` (the same on
 *     retries: the replay key); the payload {"timestamp", "webhookEvent":
 *     "jira:issue_created"|"jira:issue_updated", "user": {"accountId"},
 *     "issue": {"id", "key", "fields": {"project": {"key"}, "labels",
 *     "assignee": {"accountId"}}}, "changelog": {"items": [{"field",
 *     "from", "to", "fromString", "toString"}]}};
 *   - Linear "Webhooks" (developers.linear.app/docs/graphql/webhooks):
 *     `Linear-Signature` = hex HMAC-SHA256 of the raw body with the
 *     webhook's signing secret, `Linear-Delivery` (a UUID), the payload
 *     {"action": "create"|"update"|"remove", "type": "Issue", "actor":
 *     {"id"}, "data": {"id", "identifier", "team": {"key"}, "labels":
 *     [{"id", "name"}], "labelIds", "assigneeId", "delegateId"},
 *     "updatedFrom": {...the previous values of what changed},
 *     "webhookTimestamp": ms since the epoch}, refused when the timestamp
 *     is more than a minute from now (Linear's own advice against replay).
 * Signatures are checked by common/hmac.h (constant time). As for
 * GitHub, the payload never says who may trigger: `sender` is the name
 * the service then asks the vendor about. Pure; fuzzed. */
#ifndef AL_SERVE_WEBHOOK_TICKETS_H
#define AL_SERVE_WEBHOOK_TICKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "serve/webhook.h"

typedef struct al_wh_ticket_event {
  al_webhook_kind kind; /* AL_WEBHOOK_RUN or AL_WEBHOOK_IGNORE */
  char key[48];         /* "PROJ-7" / "ENG-42" */
  char project[16];     /* the key's project / team (checked against the payload's) */
  char id[64];          /* Jira's issue id / Linear's issue UUID */
  char sender[129];     /* Jira user.accountId / Linear actor.id */
  char trigger[16];     /* "label", "assignee", "delegate" */
  char why[200];        /* AL_WEBHOOK_IGNORE: the rule */
} al_wh_ticket_event;

/* Jira: header is X-Hub-Signature ("sha256=" + 64 hex). A secret is
 * required (airlock serve accepts no unsigned Jira delivery): secret_len
 * 0 is refused. 0 or -1 with err (EACCES) naming what was wrong. */
int al_wh_jira_verify(const void *secret, size_t secret_len, const char *header, const void *body,
                      size_t len, al_error *err);

/* Whether s is a plausible X-Atlassian-Webhook-Identifier or
 * Linear-Delivery: 1..64 of [0-9A-Za-z-]. */
bool al_wh_ticket_delivery_ok(const char *s);

/* Parse an authenticated Jira delivery: a trigger when `label` was added
 * (changelog item "labels" whose toString holds it and fromString does
 * not; on jira:issue_created, fields.labels holding it) or the issue was
 * assigned to `bot` (an accountId; changelog "assignee" to it, or
 * fields.assignee on create). label or bot may be NULL (that trigger
 * off). project: the one project; another is ignored with its reason.
 * Strict: one JSON object without duplicate keys, typed fields, the key a
 * ticket name (tickets/ rules). 0 (out filled) or -1 with err (EINVAL)
 * naming the field. */
int al_wh_jira_parse(const char *body, size_t len, const char *label, const char *bot,
                     const char *project, al_wh_ticket_event *out, al_error *err);

/* Linear: header is Linear-Signature (64 hex, no prefix); secret
 * required. 0 or -1 with err (EACCES). */
int al_wh_linear_verify(const void *secret, size_t secret_len, const char *header, const void *body,
                        size_t len, al_error *err);

#define AL_WH_LINEAR_SKEW_MS 60000 /* webhookTimestamp within a minute of now */

/* Parse an authenticated Linear delivery at now_ms (ms since the epoch):
 * webhookTimestamp further than AL_WH_LINEAR_SKEW_MS from now_ms is
 * refused (-1, EACCES: "replayed or delayed"). A trigger on type Issue,
 * action create or update, when `label` (a label name) was added
 * (data.labels has it; on update its id is not in updatedFrom.labelIds,
 * which must then be present), or the issue was assigned or delegated to
 * `app` (the app user's id: data.assigneeId / data.delegateId, and on
 * update updatedFrom holds that key). team: the one team. Strict as
 * al_wh_jira_parse. */
int al_wh_linear_parse(const char *body, size_t len, int64_t now_ms, const char *label,
                       const char *app, const char *team, al_wh_ticket_event *out, al_error *err);

#endif
