/* libFuzzer target: the gateway's ticket-host rules (issue #31):
 * gateway/rules_linear.c's GraphQL policy over graphql.c's parser, and
 * rules_jira.c's comment rewrite (ADF in, ADF out) and path matcher. The
 * first byte picks. Invariants: an allowed Linear comment names this
 * ticket, its rewrite is allowed again and holds no live `@` mention; a
 * rewritten Jira comment is {"body": doc} with no `marks` and no node
 * but doc, paragraph, text and hardBreak; an allowed Jira path is one of
 * the four rules and names the ticket. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/rules_tickets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void only_plain(const json_t *n)
{
  if (json_is_array(n)) {
    size_t i;
    const json_t *c;
    json_array_foreach(n, i, c) only_plain(c);
    return;
  }
  if (!json_is_object(n))
    return;
  const char *t = json_string_value(json_object_get(n, "type"));
  if (!t || !(strcmp(t, "doc") == 0 || strcmp(t, "paragraph") == 0 || strcmp(t, "text") == 0 ||
              strcmp(t, "hardBreak") == 0))
    abort();
  if (json_object_get(n, "marks") || json_object_get(n, "attrs"))
    abort();
  only_plain(json_object_get(n, "content"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > 70000)
    return 0;
  const char *in = (const char *)data + 1;
  size_t len = size - 1;
  al_gw_tk_rules jr, lr;
  al_error e = {0};
  if (al_gw_tk_rules_init(&jr, 1, "PROJ-7", "10002", "", 1, &e) < 0 ||
      al_gw_tk_rules_init(&lr, 2, "ENG-42", "", "", 1, &e) < 0)
    abort();
  const char *why;
  char where[80], bad[65];
  char *out = NULL;
  size_t ol;
  switch (data[0] % 3) {
  case 0: {
    al_gw_linear_info info;
    if (al_gw_linear_check(&lr, in, len, &info, &why, where) == 0 && info.comment) {
      if (al_gw_linear_comment_rewrite(in, len, &info, NULL, &out, &ol, NULL, &why) < 0)
        break;
      al_gw_linear_info again;
      if (al_gw_linear_check(&lr, out, ol, &again, &why, where) < 0 || !again.comment)
        abort();
      json_error_t je;
      json_t *j = json_loadb(out, ol, 0, &je);
      const char *b = json_string_value(
          json_object_get(json_object_get(json_object_get(j, "variables"), info.var), "body"));
      const char *id = json_string_value(
          json_object_get(json_object_get(json_object_get(j, "variables"), info.var), "issueId"));
      if (!b || !id || strcmp(id, "ENG-42") != 0)
        abort();
      for (const char *p = strchr(b, '@'); p; p = strchr(p + 1, '@'))
        if ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z') ||
            (p[1] >= '0' && p[1] <= '9'))
          abort();
      json_decref(j);
    }
    break;
  }
  case 1:
    if (al_gw_jira_comment_rewrite(in, len, NULL, &out, &ol, NULL, &why, bad) == 0) {
      json_error_t je;
      json_t *j = json_loadb(out, ol, 0, &je);
      if (!j || json_object_size(j) != 1)
        abort();
      only_plain(json_object_get(j, "body"));
      json_decref(j);
    }
    break;
  default: {
    char path[512];
    size_t n = len < sizeof path - 1 ? len : sizeof path - 1;
    memcpy(path, in, n);
    path[n] = '\0';
    if (strlen(path) != n)
      break;
    const char *reason, *param;
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE"};
    for (size_t m = 0; m < 4; m++) {
      const al_gw_rule *r =
          al_gw_jira_match(&jr, methods[m], strlen(methods[m]), path, NULL, &reason, &param);
      if (r && !(strstr(path, "/PROJ-7") || strstr(path, "/10002")))
        abort();
      if (r && strcmp(r->method, methods[m]) != 0)
        abort();
    }
  }
  }
  free(out);
  return 0;
}
