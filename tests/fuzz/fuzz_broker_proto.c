/* libFuzzer target: the broker's request decoding (src/lib/broker/proto.c).
 * A request line comes from any local client the broker accepts; it is
 * parsed as JSON (jansson, as broker.c does) and then decoded strictly.
 * Invariants: a decoded lease has 1..AL_ROLE_COUNT distinct roles; a
 * rejected request says why. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/proto.h"
#include "common/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > AL_PROTO_LINE_MAX)
    return 0;
  /* al_perm_set_parse takes a C string: the --permissions argument. */
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  al_perm_set set;
  al_error err = {0};
  if (al_perm_set_parse(s, &set, &err) < 0 && err.msg[0] == '\0')
    __builtin_trap();
  free(s);

  json_t *msg = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(msg)) {
    json_decref(msg);
    return 0;
  }
  al_proto_lease_req lease;
  memset(&err, 0, sizeof err);
  if (al_proto_lease_req_from_json(msg, &lease, &err) == 0) {
    if (lease.n_tokens == 0 || lease.n_tokens > AL_ROLE_COUNT)
      __builtin_trap();
    if (lease.n_tokens == 2 && lease.tokens[0].role == lease.tokens[1].role)
      __builtin_trap();
    json_t *again = al_proto_lease_req_to_json(&lease);
    size_t len = 0;
    char *line = al_proto_line(again, &len);
    if (!line || len == 0 || line[len - 1] != '\n')
      __builtin_trap();
    free(line);
    json_decref(again);
  } else if (err.msg[0] == '\0') {
    __builtin_trap();
  }
  al_proto_audit_req audit;
  memset(&err, 0, sizeof err);
  if (al_proto_audit_req_from_json(msg, &audit, &err) == 0) {
    json_decref(al_proto_audit_req_to_json(&audit));
  } else if (err.msg[0] == '\0') {
    __builtin_trap();
  }
  json_decref(msg);
  return 0;
}
