/* libFuzzer target: the service's GitLab webhook parser and its checks
 * (src/lib/serve/webhook_gitlab.c). Input: the first byte picks the event,
 * the rest is the body (the network's). Invariants: a parse either fails
 * with a message or yields a kind; a RUN has a full path GROUP/PROJECT, a
 * project id and an iid >= 1 and a sender; the signed form never accepts
 * a signature that is not v1,<base64> of the HMAC it computes, nor a
 * token that is not the secret. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "serve/webhook_gitlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const events[] = {"Issue Hook", "Note Hook", "Push Hook", "issue", ""};
  if (size < 1 || size > (1u << 20))
    return 0;
  const char *event = events[data[0] % (sizeof events / sizeof events[0])];
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  al_gl_webhook_event ev;
  al_error err = {0};
  if (al_gl_webhook_parse(event, body, len, "airlock", "/airlock run", &ev, &err) < 0) {
    if (!err.msg[0])
      __builtin_trap();
  } else if (ev.kind == AL_WEBHOOK_RUN) {
    if (!strchr(ev.project, '/') || ev.project_id < 1 || ev.number < 1 || !ev.sender[0])
      __builtin_trap();
  }
  /* the body's first bytes as the headers of the signed form */
  char hdr[160];
  size_t hl = len < sizeof hdr - 1 ? len : sizeof hdr - 1;
  memcpy(hdr, body, hl);
  hdr[hl] = '\0';
  static const unsigned char key[32] = {7};
  if (al_gl_webhook_verify_signed(key, sizeof key, "id", "1000", hdr, body, len, 1000, 300, &err) ==
          0 &&
      strncmp(hdr, "v1,", 3) != 0 && !strstr(hdr, " v1,"))
    __builtin_trap();
  if (al_gl_webhook_verify_token("secret", 6, hdr, &err) == 0 && strcmp(hdr, "secret") != 0)
    __builtin_trap();
  unsigned char k[64];
  size_t kl;
  if (al_gl_webhook_signing_key(hdr, k, &kl, &err) == 0 && (kl < 16 || kl > 64))
    __builtin_trap();
  (void)al_gl_webhook_uuid_ok(hdr);
  return 0;
}
