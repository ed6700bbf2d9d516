/* libFuzzer target: the proxy's decision-line string writer
 * (proxy/decisions.c al_decisions_json_string, issue #19: lines serialised
 * by hand instead of by jansson) and the redaction the line then goes
 * through (common/redact.c al_redact). The bytes are what a hostile client
 * controls (a target, a host, an SNI name). Invariants:
 *  - the output is one JSON string (jansson reads it back), on one line
 *    (no byte below 0x20), within the documented 6 * n + 3 bytes;
 *  - for input jansson accepts (well-formed UTF-8, no NUL), the output is
 *    exactly jansson's and reads back as the input;
 *  - a decision line made of it, redacted with a token-shaped string and a
 *    registered secret in it, is still one JSON object, and neither the
 *    token nor the secret is left in it. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "proxy/decisions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A registered secret of the shape the supervisor registers (tokens and
 * keys: letters, digits, '_' and '-'); fixed, so registration happens once. */
#define SECRET "sk-fuzzSecretValue_0123456789"
#define TOKEN "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static char *quote(const char *s, size_t n)
{
  char *out = malloc(6 * n + 3);
  if (!out)
    __builtin_trap();
  size_t l = al_decisions_json_string(out, s, n);
  if (l != strlen(out) || l > 6 * n + 2)
    __builtin_trap();
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int registered;
  if (!registered) {
    al_redact_register(SECRET);
    registered = 1;
  }
  if (size > 4096)
    return 0;
  const char *s = (const char *)data;
  char *q = quote(s, size);
  for (const char *p = q; *p; p++)
    if ((unsigned char)*p < 0x20)
      __builtin_trap(); /* a raw control byte: the line would break */

  json_error_t je;
  json_t *back = json_loads(q, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
  if (!back || !json_is_string(back))
    __builtin_trap();
  json_t *j = json_stringn(s, size);
  if (j) {
    /* jansson takes it: the same bytes out, the same string back */
    char *d = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!d || strcmp(d, q) != 0)
      __builtin_trap();
    if (json_string_length(back) != size || memcmp(json_string_value(back), s, size) != 0)
      __builtin_trap();
    free(d);
    json_decref(j);
  }
  json_decref(back);

  /* the input around a token and the secret, as in a decision line */
  size_t half = size / 2;
  char *mixed = malloc(size + sizeof TOKEN + sizeof SECRET + 2);
  if (!mixed)
    __builtin_trap();
  size_t m = 0;
  memcpy(mixed + m, s, half);
  m += half;
  memcpy(mixed + m, " " TOKEN " ", sizeof TOKEN + 1);
  m += sizeof TOKEN + 1;
  memcpy(mixed + m, SECRET, sizeof SECRET - 1);
  m += sizeof SECRET - 1;
  memcpy(mixed + m, s + half, size - half);
  m += size - half;
  char *mq = quote(mixed, m);
  size_t ll = strlen(mq) + 64;
  char *line = malloc(ll);
  if (!line)
    __builtin_trap();
  snprintf(line, ll, "{\"event\":\"deny\",\"target\":%s}", mq);
  char *r = al_redact(line);
  if (strstr(r, TOKEN) || strstr(r, SECRET))
    __builtin_trap(); /* a token or the secret left in the log */
  json_t *o = json_loads(r, JSON_ALLOW_NUL, &je);
  if (!o || !json_is_object(o) || !json_is_string(json_object_get(o, "target")))
    __builtin_trap(); /* redaction broke the line */
  json_decref(o);
  free(r);
  free(line);
  free(mq);
  free(mixed);
  free(q);
  return 0;
}
