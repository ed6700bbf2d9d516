/* libFuzzer target: the gateway's GitLab matcher (src/lib/gateway/
 * rules_gitlab.c) over a raw request path and query, and its credential
 * classifier over a request head. Invariants: a decision is a rule whose
 * name is the reason, or NULL with a reason; an allowed API request names
 * the run's project (by its id or its encoded full path) and never holds
 * an encoded separator outside an encoded segment; an allowed push route is
 * the project's own path. Input: byte 0 picks side and method, the rest is
 * the target. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "gateway/rules_gitlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_gw_gl_rules r;
  static int ready;
  if (!ready) {
    al_error e = {0};
    if (al_gw_gl_rules_init(&r, "acme/tools/tally", 42, 7, "airlock/7-ab12", 1, "/api/v4", "", &e) <
        0)
      __builtin_trap();
    ready = 1;
  }
  if (size < 1 || size > 8192)
    return 0;
  static const char *const methods[] = {"GET", "POST", "PUT", "DELETE"};
  const char *method = methods[data[0] & 3];
  unsigned sides = (data[0] & 4) ? AL_GW_SIDE_GIT : AL_GW_SIDE_API;
  const char *t = (const char *)data + 1;
  size_t tl = size - 1;
  const char *q = memchr(t, '?', tl);
  size_t pl = q ? (size_t)(q - t) : tl;
  static al_gw_qparams qp;
  if (q)
    (void)al_gw_query_decode(q + 1, tl - pl - 1, &qp);
  const char *reason = NULL, *param = NULL;
  const al_gw_rule *rule =
      al_gw_gl_match(&r, sides, method, strlen(method), t, pl, q ? &qp : NULL, &reason, &param);
  if (!reason)
    __builtin_trap();
  if (rule) {
    if (strcmp(reason, rule->name) != 0 || strcmp(rule->method, method) != 0)
      __builtin_trap();
    if (rule->sides == AL_GW_SIDE_API) {
      static const char pre[] = "/api/v4/projects/";
      if (pl < sizeof pre - 1 || memcmp(t, pre, sizeof pre - 1) != 0)
        __builtin_trap();
      const char *id = t + sizeof pre - 1;
      size_t il = 0;
      while (id + il < t + pl && id[il] != '/')
        il++;
      bool by_id = il == 2 && memcmp(id, "42", 2) == 0;
      bool by_path = il >= 20 && il <= 3 * 16 && strncasecmp(id, "acme%2", 6) == 0;
      if (!by_id && !by_path)
        __builtin_trap();
    } else {
      if (pl < 17 || strncasecmp(t, "/acme/tools/tally", 17) != 0)
        __builtin_trap();
    }
  }
  return 0;
}
