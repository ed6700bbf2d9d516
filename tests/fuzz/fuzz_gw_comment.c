/* libFuzzer target: the forge gateway's reader of an agent comment (issue
 * #26): the JSON body, the safe-text rewriting and the re-serialisation.
 * An accepted body always gives {"body": STRING} again, with airlock's
 * header first and no raw '<' in the text. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/comment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const hosts[] = {"forge.test", "api.forge.test", NULL};
  char *out = NULL, bad[AL_GW_COMMENT_NAME_MAX + 1];
  size_t n = 0;
  const char *why = NULL;
  if (size > AL_GW_COMMENT_BODY_MAX)
    return 0;
  if (al_gw_comment_rewrite((const char *)data, size, hosts, &out, &n, NULL, &why, bad) < 0) {
    if (!why || out || strlen(bad) > AL_GW_COMMENT_NAME_MAX)
      __builtin_trap();
    return 0;
  }
  json_error_t e;
  json_t *j = json_loadb(out, n, JSON_REJECT_DUPLICATES, &e);
  const char *body = json_string_value(json_object_get(j, "body"));
  if (!j || json_object_size(j) != 1 || !body ||
      strncmp(body, AL_SAFETEXT_HEADER, strlen(AL_SAFETEXT_HEADER)) != 0 || strchr(body, '<'))
    __builtin_trap();
  json_decref(j);
  free(out);
  return 0;
}
