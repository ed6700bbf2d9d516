/* libFuzzer target: the forge gateway's request admission (issue #15): the
 * strict head parser, the origin-form target canonicaliser, the credential
 * check and the rule table, in the order conn.c calls them. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gateway/rules.h"
#include "gateway/wire.h"
#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH "airlock-placeholder-0123456789abcdef0123456789abcdef01234567"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_gw_rules r;
  static int init;
  if (!init) {
    al_error e;
    if (al_gw_rules_init(&r, "acme/tally", 1, "airlock/1-ab12cd34", 2, "", "", &e) < 0)
      __builtin_trap();
    init = 1;
  }
  al_http_request q;
  const char *why = NULL;
  int h = al_http_parse_head((const char *)data, size, &q, &why);
  if (h <= 0)
    return 0;
  char path[AL_GW_PATH_MAX];
  const char *query;
  size_t ql;
  if (al_gw_target_parse(q.target, q.target_len, path, &query, &ql, &why) < 0)
    return 0;
  if (path[0] != '/' || strstr(path, "//") || strstr(path, "/../") || strchr(path, '\\'))
    __builtin_trap();
  char qlog[256];
  if (query)
    al_gw_query_redact(query, ql, qlog, sizeof qlog);
  (void)al_gw_credential(&q, query, ql, PH, &why);
  const char *reason = NULL;
  for (unsigned sides = 1; sides <= 3; sides++) {
    const al_gw_rule *rule =
        al_gw_match(&r, sides, q.method, q.method_len, path, query, ql, &reason);
    if (!reason || (rule && strcmp(reason, rule->name) != 0))
      __builtin_trap();
    /* an allowed request is always for the run's repository */
    if (rule && !strcasestr(path, "/acme/tally"))
      __builtin_trap();
  }
  return 0;
}
