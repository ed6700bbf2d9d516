/* The forge gateway's reader of an agent comment. See comment.h. */
#include "gateway/comment.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/query.h"

int al_gw_comment_body(const char *in, size_t len, char **text, size_t *text_len, const char **why,
                       char *bad)
{
  json_error_t jerr;
  *text = NULL;
  *text_len = 0;
  bad[0] = '\0';
  json_t *j = json_loadb(in, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!j) {
    *why = "comment-not-json";
    return -1;
  }
  int rc = -1;
  const char *key;
  json_t *v;
  if (!json_is_object(j)) {
    *why = "comment-not-object";
    goto out;
  }
  json_object_foreach(j, key, v)
  {
    if (strcmp(key, "body") != 0) {
      char name[AL_GW_COMMENT_NAME_MAX + 1];
      size_t kl = strlen(key);
      if (kl > AL_GW_COMMENT_NAME_MAX)
        kl = AL_GW_COMMENT_NAME_MAX;
      memcpy(name, key, kl);
      name[kl] = '\0';
      al_gw_query_printable(name, bad, AL_GW_COMMENT_NAME_MAX + 1);
      *why = "comment-member-refused";
      goto out;
    }
  }
  v = json_object_get(j, "body");
  if (!v) {
    *why = "comment-body-missing";
    goto out;
  }
  if (!json_is_string(v)) {
    *why = "comment-body-not-string";
    goto out;
  }
  *text_len = json_string_length(v);
  *text = malloc(*text_len + 1);
  if (!*text) {
    *why = "out-of-memory";
    goto out;
  }
  memcpy(*text, json_string_value(v), *text_len);
  (*text)[*text_len] = '\0';
  rc = 0;
out:
  json_decref(j);
  return rc;
}

int al_gw_comment_rewrite(const char *in, size_t len, const char *const *forge_hosts, char **out,
                          size_t *out_len, struct al_safetext_counts *counts, const char **why,
                          char *bad)
{
  char *text = NULL, *shown = NULL;
  size_t text_len = 0;
  *out = NULL;
  *out_len = 0;
  if (al_gw_comment_body(in, len, &text, &text_len, why, bad) < 0)
    return -1;
  struct al_safetext_opts opts = {.forge_hosts = forge_hosts, .counts = counts};
  al_error err;
  int rc = al_safetext_render(text, text_len, &opts, &shown, &err);
  free(text);
  json_t *j = rc == 0 ? json_pack("{s:s}", "body", shown) : NULL;
  free(shown);
  char *dump = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!dump) {
    *why = "comment-rewrite-failed";
    return -1;
  }
  *out = dump;
  *out_len = strlen(dump);
  return 0;
}
