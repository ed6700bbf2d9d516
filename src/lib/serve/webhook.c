/* Webhook authentication and parsing: see webhook.h. */
#include "serve/webhook.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "forge/appconfig.h"
#include "forge/forge.h"
#include "forge/names.h"
#include "common/util.h"
#include "serve/webhook_json.h"

int al_webhook_verify(const void *secret, size_t secret_len, const char *header, const void *body,
                      size_t len, al_error *err)
{
  return al_github_webhook_verify(secret, secret_len, header, body, len, err); /* forge/forge.h */
}

bool al_webhook_delivery_ok(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))
      return false;
  }
  return true;
}

static int ignore(al_webhook_event *out, const char *why)
{
  out->kind = AL_WEBHOOK_IGNORE;
  snprintf(out->why, sizeof out->why, "%s", why);
  return 0;
}

int al_webhook_parse(const char *event, const char *body, size_t len, const char *label,
                     const char *command, al_webhook_event *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  size_t el = event ? strlen(event) : 0;
  if (el == 0 || el > 64)
    return al_error_set(err, EINVAL, "X-GitHub-Event missing or longer than 64 bytes");
  for (size_t i = 0; i < el; i++)
    if (!((event[i] >= 'a' && event[i] <= 'z') || event[i] == '_'))
      return al_error_set(err, EINVAL, "X-GitHub-Event: expected [a-z_]");
  snprintf(out->event, sizeof out->event, "%s", event);
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    return al_error_set(err, EINVAL, "body: not JSON (%s at byte %d)", je.text, je.position);
  int ret = -1;
  const char *s;
  if (!json_is_object(j)) {
    al_error_set(err, EINVAL, "body: expected a JSON object");
    goto out;
  }
  if (!strcmp(event, "ping")) {
    out->kind = AL_WEBHOOK_PING;
    ret = 0;
    goto out;
  }
  if (strcmp(event, "issues") != 0 && strcmp(event, "issue_comment") != 0) {
    ret = ignore(out, "not a trigger event (issues, issue_comment)");
    goto out;
  }
  if (al_wh_json_string(j, "action", "action", 32, &s, err) < 0)
    goto out;
  snprintf(out->action, sizeof out->action, "%s", s);
  json_t *repo = json_object_get(j, "repository");
  const char *why;
  if (al_wh_json_string(repo, "full_name", "repository.full_name", 200, &s, err) < 0)
    goto out;
  if (al_repo_name_check(s, &why) < 0) {
    al_error_set(err, EINVAL, "repository.full_name: %s", why);
    goto out;
  }
  snprintf(out->repo, sizeof out->repo, "%s", s);
  json_t *issue = json_object_get(j, "issue");
  long long num;
  if (al_wh_json_int(issue, "number", "issue.number", 2147483647, &num, err) < 0)
    goto out;
  out->number = (unsigned long)num;
  if (al_wh_json_string(json_object_get(j, "sender"), "login", "sender.login", 64, &s, err) < 0)
    goto out;
  if (al_login_check(s, true, &why) < 0) {
    al_error_set(err, EINVAL, "sender.login: %s", why);
    goto out;
  }
  snprintf(out->sender, sizeof out->sender, "%s", s);
  json_t *inst = json_object_get(j, "installation");
  if (inst) {
    json_t *id = json_is_object(inst) ? json_object_get(inst, "id") : NULL;
    if (!json_is_integer(id) || json_integer_value(id) < 1) {
      al_error_set(err, EINVAL, "installation.id: expected a positive number");
      goto out;
    }
    out->installation_id = (long long)json_integer_value(id);
  }
  json_t *pr = json_object_get(issue, "pull_request");
  if (!strcmp(event, "issues")) {
    if (strcmp(out->action, "labeled") != 0) {
      ret = ignore(out, "issues: only the `labeled` action triggers");
      goto out;
    }
    if (al_wh_json_string(json_object_get(j, "label"), "name", "label.name", 100, &s, err) < 0)
      goto out;
    if (strcmp(s, label) != 0) {
      ret = ignore(out, "issues labeled: not the trigger label");
      goto out;
    }
  } else {
    if (strcmp(out->action, "created") != 0) {
      ret = ignore(out, "issue_comment: only the `created` action triggers");
      goto out;
    }
    if (al_wh_json_string(json_object_get(j, "comment"), "body", "comment.body", 65536, &s, err) <
        0)
      goto out;
    if (!al_wh_command_matches(s, command)) {
      ret = ignore(out, "issue_comment: not the trigger command");
      goto out;
    }
  }
  if (pr && !json_is_null(pr)) {
    ret = ignore(out, "a pull request, not an issue");
    goto out;
  }
  out->kind = AL_WEBHOOK_RUN;
  ret = 0;
out:
  json_decref(j);
  return ret;
}

static bool listed(const char *ip, const char *const *trusted, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!strcmp(trusted[i], ip))
      return true;
  return false;
}

void al_webhook_xff_client(const char *xff, const char *const *trusted, size_t n, char *out,
                           size_t out_n)
{
  out[0] = '\0';
  if (!xff)
    return;
  size_t len = strlen(xff);
  if (len > 1024)
    return;
  char buf[1025];
  memcpy(buf, xff, len + 1);
  for (;;) {
    char *comma = strrchr(buf, ',');
    char *hop = comma ? comma + 1 : buf;
    while (*hop == ' ' || *hop == '\t')
      hop++;
    size_t hl = strlen(hop);
    while (hl && (hop[hl - 1] == ' ' || hop[hl - 1] == '\t'))
      hop[--hl] = '\0';
    unsigned char a[16];
    if (inet_pton(AF_INET, hop, a) != 1 && inet_pton(AF_INET6, hop, a) != 1)
      return; /* not an address: nothing believed */
    if (!listed(hop, trusted, n)) {
      snprintf(out, out_n, "%s", hop);
      return;
    }
    if (!comma)
      return; /* only trusted hops */
    *comma = '\0';
  }
}
