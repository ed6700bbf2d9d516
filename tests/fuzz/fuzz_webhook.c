/* libFuzzer target: the service's webhook parser and signature check
 * (src/lib/serve/webhook.c) and the broker's trigger-check decoding
 * (src/lib/broker/check_proto.c). A webhook body is the network's; its
 * event name is a header. Input: the first byte picks the event, the rest
 * is the body. Invariants: a parse either fails with a message or yields a
 * kind; a RUN has a repository OWNER/NAME, a ticket >= 1 and a sender; the
 * signature check never accepts a header that is not sha256=<64 hex>; an
 * X-Forwarded-For client is a numeric address and never a trusted hop. */
#include <arpa/inet.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "broker/check.h"
#include "common/error.h"
#include "serve/webhook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const events[] = {"issues", "issue_comment", "ping", "push", "Issues", ""};
  if (size < 1 || size > (1u << 20))
    return 0;
  const char *event = events[data[0] % (sizeof events / sizeof events[0])];
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  al_webhook_event ev;
  al_error err = {0};
  if (al_webhook_parse(event, body, len, "airlock", "/airlock run", &ev, &err) < 0) {
    if (!err.msg[0])
      __builtin_trap();
  } else if (ev.kind == AL_WEBHOOK_RUN) {
    if (!strchr(ev.repo, '/') || ev.number < 1 || !ev.sender[0])
      __builtin_trap();
  }
  /* the body as a signature header: only a well-formed one can match */
  char hdr[80];
  size_t hl = len < sizeof hdr - 1 ? len : sizeof hdr - 1;
  memcpy(hdr, body, hl);
  hdr[hl] = '\0';
  if (al_webhook_verify("secret", 6, hdr, body, len, &err) == 0 &&
      (strncmp(hdr, "sha256=", 7) != 0 || strlen(hdr) != 71))
    __builtin_trap();
  /* the bytes as an X-Forwarded-For value behind two trusted proxies */
  {
    char xff[1100];
    size_t xl = len < sizeof xff - 1 ? len : sizeof xff - 1;
    memcpy(xff, body, xl);
    xff[xl] = '\0';
    static const char *const trusted[] = {"127.0.0.1", "::1"};
    char client[64];
    al_webhook_xff_client(xff, trusted, 2, client, sizeof client);
    unsigned char a[16];
    if (client[0] && ((inet_pton(AF_INET, client, a) != 1 && inet_pton(AF_INET6, client, a) != 1) ||
                      !strcmp(client, "127.0.0.1") || !strcmp(client, "::1")))
      __builtin_trap();
  }
  /* the same bytes as a check request line */
  json_t *m = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
  if (json_is_object(m)) {
    al_proto_check_req req;
    if (al_proto_check_req_from_json(m, &req, &err) == 0 && (req.ticket < 1 || !req.repo[0]))
      __builtin_trap();
  }
  json_decref(m);
  return 0;
}
