/* libFuzzer target: the forge gateway's read-only GraphQL check (issue
 * #27): any body, as a whole JSON body and as the query string of a
 * well-formed one; whatever it decides, the refusal reason is one of
 * graphql-refused: ... and the counts stay within the documented limits. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/graphql.h"
#include "gateway/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const al_gw_rules *r, const char *b, size_t n)
{
  al_gql_info info;
  const char *why = NULL;
  char where[80];
  int rc = al_gql_check(r, b, n, &info, &why, where);
  if (rc == 0 && (info.fields > AL_GQL_FIELDS_MAX || info.depth > AL_GQL_DEPTH_MAX))
    __builtin_trap();
  if (rc < 0 && (!why || strncmp(why, "graphql-refused: ", 17) != 0 || strlen(where) > 64))
    __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_gw_rules r;
  static int init;
  if (!init) {
    al_error e;
    if (al_gw_rules_init(&r, "acme/tally", 7, "airlock/7-ab12cd34", 0, "", "", &e) < 0)
      __builtin_trap();
    init = 1;
  }
  one(&r, (const char *)data, size);
  json_t *j = json_pack("{s:s%, s:{s:s, s:s, s:i}}", "query", (const char *)data, size, "variables",
                        "owner", "acme", "repo", "tally", "number", 7);
  char *b = j ? json_dumps(j, JSON_COMPACT) : NULL;
  if (b)
    one(&r, b, strlen(b));
  free(b);
  json_decref(j);
  return 0;
}
