/* GitLab webhooks as triggers (issue #30 item 5): authenticate, then parse
 * strictly.
 *
 * Follows GitLab docs "Webhooks" (the secret token sent as X-Gitlab-Token;
 * X-Gitlab-Event, X-Gitlab-Event-UUID, Idempotency-Key), the signing token
 * of GitLab 18 ("webhook-id", "webhook-timestamp", "webhook-signature":
 * "v1,<base64 HMAC-SHA256 of id.timestamp.body>", space-separated entries,
 * the key the base64 after "whsec_"; the Standard Webhooks specification),
 * and "Webhook events" (Issue Hook with object_attributes.action "update"
 * and changes.labels, Note Hook on an Issue). As for GitHub, the payload's
 * user is only the name the service then asks the forge about. */
#ifndef AL_SERVE_WEBHOOK_GITLAB_H
#define AL_SERVE_WEBHOOK_GITLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "serve/webhook.h"

typedef struct al_gl_webhook_event {
  al_webhook_kind kind; /* RUN or IGNORE (GitLab has no ping event) */
  char event[65];       /* X-Gitlab-Event: "Issue Hook", "Note Hook" */
  char project[256];    /* project.path_with_namespace */
  long long project_id; /* project.id */
  unsigned long number; /* the iid (object_attributes.iid, issue.iid) */
  char sender[256];     /* user.username */
  char why[200];        /* AL_WEBHOOK_IGNORE: the reason */
} al_gl_webhook_event;

/* Compare X-Gitlab-Token (header, may be NULL) with the secret in time
 * independent of where they differ and of the header's length (both
 * SHA-256'd, then CRYPTO_memcmp). Returns 0 on a match; -1 with err
 * (EACCES): missing, or not the secret. secret_len 1..4096. */
int al_gl_webhook_verify_token(const void *secret, size_t secret_len, const char *header,
                               al_error *err);

/* The HMAC key of a signing token "whsec_<base64 of 16..64 bytes>" into
 * key[0..64), its length in *key_len. -1 with err (EINVAL) otherwise. */
int al_gl_webhook_signing_key(const char *token, unsigned char key[64], size_t *key_len,
                              al_error *err);

/* Verify the signed form: id ("webhook-id", 1..128 printable ASCII without
 * '.' or space), ts ("webhook-timestamp", decimal Unix seconds within
 * tolerance_s of now), sig ("webhook-signature", 1..8 space-separated
 * "v1,<base64 of 32 bytes>"; one matching entry suffices, each compared in
 * constant time) over HMAC-SHA256(key, id "." ts "." body). Returns 0, or
 * -1 with err (EACCES) naming the header and the rule it broke. */
int al_gl_webhook_verify_signed(const unsigned char *key, size_t key_len, const char *id,
                                const char *ts, const char *sig, const void *body, size_t len,
                                int64_t now, int64_t tolerance_s, al_error *err);

/* Whether s is a plausible X-Gitlab-Event-UUID (the replay key): a UUID,
 * 8-4-4-4-12 hex digits. */
bool al_gl_webhook_uuid_ok(const char *s);

/* Parse an authenticated delivery of X-Gitlab-Event `event` with body
 * (len bytes, not NUL-terminated). `label` and `command` are the triggers.
 * Strict: one JSON object without duplicate keys; object_kind must agree
 * with the event; project.path_with_namespace a GitLab full path,
 * project.id >= 1, the iid 1..2^31-1, user.username a GitLab
 * username, a note at most 1 MiB. A RUN is an Issue Hook whose
 * changes.labels.current holds the label and whose previous does not (the
 * label added by this change), or a Note Hook on an Issue (noteable_type
 * "Issue", action "create" when given) whose first line is the command.
 * Returns 0 with out filled (RUN or IGNORE with why), -1 with err (EINVAL)
 * naming the field and the rule. */
int al_gl_webhook_parse(const char *event, const char *body, size_t len, const char *label,
                        const char *command, al_gl_webhook_event *out, al_error *err);

#endif
