/* Jira Cloud webhooks: see webhook_tickets.h. */
#include "serve/webhook_tickets.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/hmac.h"
#include "serve/webhook_json.h"
#include "tickets/tickets.h"

int al_wh_jira_verify(const void *secret, size_t secret_len, const char *header, const void *body,
                      size_t len, al_error *err)
{
  if (header && strncmp(header, "sha256=", 7) != 0)
    return al_error_set(err, EACCES, "X-Hub-Signature malformed (expected sha256=<64 hex>)");
  return al_hmac_sha256_hex_verify("X-Hub-Signature", "sha256=<64 hex>", secret, secret_len,
                                   header ? header + 7 : NULL, body, len, err);
}

bool al_wh_ticket_delivery_ok(const char *s)
{
  return al_webhook_delivery_ok(s);
}

static int ignore(al_wh_ticket_event *out, const char *why)
{
  out->kind = AL_WEBHOOK_IGNORE;
  snprintf(out->why, sizeof out->why, "%s", why);
  return 0;
}

/* Is `word` one of the space-separated words of s? (Jira's labels
 * changelog: "toString": "airlock bug".) */
static bool has_word(const char *s, const char *word)
{
  size_t wl = strlen(word);
  for (const char *p = s; p && *p;) {
    while (*p == ' ')
      p++;
    const char *e = strchr(p, ' ');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == wl && n && memcmp(p, word, n) == 0)
      return true;
    p += n;
  }
  return false;
}

int al_wh_jira_parse(const char *body, size_t len, const char *label, const char *bot,
                     const char *project, al_wh_ticket_event *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!j || !json_is_object(j)) {
    json_decref(j);
    return al_error_set(err, EINVAL, "the body is not one JSON object");
  }
  int rc = -1;
  const char *ev, *key, *id, *sender, *pkey;
  const json_t *issue = json_object_get(j, "issue");
  const json_t *fields = json_object_get(issue, "fields");
  if (al_wh_json_opt_string(j, "webhookEvent", "webhookEvent", 64, &ev, err) < 0)
    goto done;
  if (!ev) {
    al_error_set(err, EINVAL, "webhookEvent missing");
    goto done;
  }
  if (strcmp(ev, "jira:issue_created") != 0 && strcmp(ev, "jira:issue_updated") != 0) {
    rc = ignore(out, "not an issue created or updated event");
    goto done;
  }
  if (!json_is_object(issue) || !json_is_object(fields)) {
    al_error_set(err, EINVAL, "issue.fields missing (an object)");
    goto done;
  }
  if (al_wh_json_opt_string(issue, "key", "issue.key", 40, &key, err) < 0 ||
      al_wh_json_opt_string(issue, "id", "issue.id", 63, &id, err) < 0 ||
      al_wh_json_opt_string(json_object_get(j, "user"), "accountId", "user.accountId", 128, &sender,
                            err) < 0 ||
      al_wh_json_opt_string(json_object_get(fields, "project"), "key", "issue.fields.project.key",
                            15, &pkey, err) < 0)
    goto done;
  al_tk_target t;
  if (!key || al_tk_target_parse(AL_TK_JIRA, key, NULL, &t, err) < 0) {
    if (!key)
      al_error_set(err, EINVAL, "issue.key missing");
    else
      al_error_wrap(err, "issue.key");
    goto done;
  }
  if (!id || !id[0] || !sender || !sender[0] || !pkey || !pkey[0]) {
    /* empty is missing: a run is never queued for no one */
    al_error_set(err, EINVAL, "%s missing or empty",
                 !id || !id[0]           ? "issue.id"
                 : !sender || !sender[0] ? "user.accountId"
                                         : "issue.fields.project.key");
    goto done;
  }
  if (strcmp(pkey, t.project) != 0) {
    al_error_set(err, EINVAL, "issue.fields.project.key `%s` is not the key's project", pkey);
    goto done;
  }
  snprintf(out->key, sizeof out->key, "%s", t.key);
  snprintf(out->project, sizeof out->project, "%s", t.project);
  snprintf(out->id, sizeof out->id, "%s", id);
  snprintf(out->sender, sizeof out->sender, "%s", sender);
  if (project && strcmp(project, t.project) != 0) {
    rc = ignore(out, "the issue is not in the served project");
    goto done;
  }
  const char *trig = NULL;
  if (strcmp(ev, "jira:issue_created") == 0) {
    const json_t *labels = json_object_get(fields, "labels");
    size_t i;
    const json_t *l;
    json_array_foreach(labels, i, l) if (label && json_is_string(l) &&
                                         strcmp(json_string_value(l), label) == 0) trig = "label";
    const char *as = NULL;
    if (al_wh_json_opt_string(json_object_get(fields, "assignee"), "accountId",
                              "issue.fields.assignee.accountId", 128, &as, err) < 0)
      goto done;
    if (!trig && bot && as && strcmp(as, bot) == 0)
      trig = "assignee";
  } else {
    const json_t *items = json_object_get(json_object_get(j, "changelog"), "items");
    if (items && !json_is_array(items)) {
      al_error_set(err, EINVAL, "changelog.items must be an array");
      goto done;
    }
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it)
    {
      const char *f, *from_s, *to_s, *to;
      if (al_wh_json_opt_string(it, "field", "changelog.items[].field", 64, &f, err) < 0 ||
          al_wh_json_opt_string(it, "fromString", "changelog.items[].fromString", 65536, &from_s,
                                err) < 0 ||
          al_wh_json_opt_string(it, "toString", "changelog.items[].toString", 65536, &to_s, err) <
              0 ||
          al_wh_json_opt_string(it, "to", "changelog.items[].to", 65536, &to, err) < 0)
        goto done;
      if (!f)
        continue;
      if (label && strcmp(f, "labels") == 0 && has_word(to_s, label) && !has_word(from_s, label))
        trig = trig ? trig : "label";
      if (bot && strcmp(f, "assignee") == 0 && to && strcmp(to, bot) == 0)
        trig = trig ? trig : "assignee";
    }
  }
  if (!trig) {
    rc = ignore(out, "neither the trigger label added nor an assignment to the bot");
    goto done;
  }
  out->kind = AL_WEBHOOK_RUN;
  snprintf(out->trigger, sizeof out->trigger, "%s", trig);
  rc = 0;
done:
  json_decref(j);
  return rc;
}
