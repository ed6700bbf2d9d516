/* GitHub webhooks as triggers: authenticate, then parse strictly.
 *
 * Follows docs.github.com "Validating webhook deliveries" (X-Hub-Signature-256
 * = "sha256=" + hex HMAC-SHA256 of the raw body with the webhook secret,
 * compared in constant time), "Webhook events and payloads" (`issues`
 * action `labeled`, `issue_comment` action `created`, `ping`) and
 * "Handling webhook deliveries" (X-GitHub-Event, X-GitHub-Delivery).
 * Nothing here trusts the payload to say who may trigger: `sender` is only
 * the name the service then checks against the forge (broker "check"). */
#ifndef AL_SERVE_WEBHOOK_H
#define AL_SERVE_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef enum al_webhook_kind {
  AL_WEBHOOK_RUN,    /* a trigger: run this ticket (after the forge check) */
  AL_WEBHOOK_IGNORE, /* well-formed but not a trigger (why says which rule) */
  AL_WEBHOOK_PING,   /* the `ping` event GitHub sends when a hook is created */
} al_webhook_kind;

typedef struct al_webhook_event {
  al_webhook_kind kind;
  char event[65];            /* X-GitHub-Event */
  char action[33];           /* payload `action`, "" for ping */
  char repo[201];            /* repository.full_name */
  unsigned long number;      /* issue.number */
  char sender[48];           /* sender.login (who labeled or commented) */
  long long installation_id; /* installation.id, 0 when absent */
  char why[200];             /* AL_WEBHOOK_IGNORE: the reason */
} al_webhook_event;

/* Check header ("sha256=" + 64 hex digits, case-insensitive hex) against
 * HMAC-SHA256(secret, body) with CRYPTO_memcmp. Returns 0 when it matches;
 * -1 with err (EACCES) naming what was wrong: missing, malformed, or not
 * matching. secret_len must be > 0. */
int al_webhook_verify(const void *secret, size_t secret_len, const char *header, const void *body,
                      size_t len, al_error *err);

/* Whether s is a plausible X-GitHub-Delivery: 1..64 of [0-9A-Za-z-]. */
bool al_webhook_delivery_ok(const char *s);

/* Parse an authenticated delivery of event `event` (X-GitHub-Event) with
 * body (len bytes, not NUL-terminated, at most the caller's cap). `label`
 * and `command` are the triggers (config webhook.label / webhook.command).
 * Strict: the body is one JSON object without duplicate keys; the fields
 * used are typed and checked (repository.full_name as OWNER/NAME,
 * issue.number 1..2^31-1, sender.login as a GitHub login, comment.body a
 * string of at most 65536 bytes); a trigger on a pull request (issue with
 * `pull_request`) is ignored. Returns 0 with out filled (kind RUN, IGNORE
 * or PING) or -1 with err (EINVAL) naming the field and the rule. */
int al_webhook_parse(const char *event, const char *body, size_t len, const char *label,
                     const char *command, al_webhook_event *out, al_error *err);

/* The client a trusted reverse proxy forwards for, from its
 * X-Forwarded-For value xff (may be NULL): the hops read from the right,
 * those in trusted[0..n) (numeric addresses, the config's
 * listen.trusted_proxies) skipped; the first other hop, when it is a
 * numeric IPv4 or IPv6 address (inet_pton), is copied to out. out is ""
 * when there is none, when a hop is not an address (nothing after it is
 * believed), or xff is over 1024 bytes. The reading of RFC 7239 §5.2 for
 * the de-facto header (MDN "X-Forwarded-For": the rightmost untrusted). */
void al_webhook_xff_client(const char *xff, const char *const *trusted, size_t n, char *out,
                           size_t out_n);

#endif
