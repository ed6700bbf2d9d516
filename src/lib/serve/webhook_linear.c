/* Linear webhooks: see webhook_tickets.h. */
#include "serve/webhook_tickets.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/hmac.h"
#include "serve/webhook_json.h"
#include "tickets/tickets.h"

int al_wh_linear_verify(const void *secret, size_t secret_len, const char *header, const void *body,
                        size_t len, al_error *err)
{
  return al_hmac_sha256_hex_verify("Linear-Signature", "64 hex digits", secret, secret_len, header,
                                   body, len, err);
}

static int ignore(al_wh_ticket_event *out, const char *why)
{
  out->kind = AL_WEBHOOK_IGNORE;
  snprintf(out->why, sizeof out->why, "%s", why);
  return 0;
}

/* Is id in the array a (of strings)? */
static bool in_ids(const json_t *a, const char *id)
{
  size_t i;
  const json_t *v;
  json_array_foreach(a, i,
                     v) if (json_is_string(v) && strcmp(json_string_value(v), id) == 0) return true;
  return false;
}

int al_wh_linear_parse(const char *body, size_t len, int64_t now_ms, const char *label,
                       const char *app, const char *team, al_wh_ticket_event *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!j || !json_is_object(j)) {
    json_decref(j);
    return al_error_set(err, EINVAL, "the body is not one JSON object");
  }
  int rc = -1;
  const json_t *ts = json_object_get(j, "webhookTimestamp");
  const json_t *data = json_object_get(j, "data"), *from = json_object_get(j, "updatedFrom");
  const char *action, *type, *ident, *id, *tkey, *actor;
  if (!json_is_integer(ts)) {
    al_error_set(err, EINVAL, "webhookTimestamp missing (an integer, ms since the epoch)");
    goto done;
  }
  int64_t t = (int64_t)json_integer_value(ts);
  if (t < now_ms - AL_WH_LINEAR_SKEW_MS || t > now_ms + AL_WH_LINEAR_SKEW_MS) {
    al_error_set(err, EACCES,
                 "webhookTimestamp is more than a minute from now: replayed or delayed, refused");
    goto done;
  }
  if (al_wh_json_string(j, "action", "action", 16, &action, err) < 0 ||
      al_wh_json_string(j, "type", "type", 64, &type, err) < 0)
    goto done;
  if (strcmp(type, "Issue") != 0 ||
      !(strcmp(action, "create") == 0 || strcmp(action, "update") == 0)) {
    rc = ignore(out, "not an Issue create or update");
    goto done;
  }
  if (!json_is_object(data)) {
    al_error_set(err, EINVAL, "data missing (an object)");
    goto done;
  }
  if (al_wh_json_string(data, "identifier", "data.identifier", 40, &ident, err) < 0 ||
      al_wh_json_string(data, "id", "data.id", 63, &id, err) < 0 ||
      al_wh_json_opt_string(json_object_get(data, "team"), "key", "data.team.key", 15, &tkey, err) <
          0 ||
      al_wh_json_string(json_object_get(j, "actor"), "id", "actor.id", 128, &actor, err) < 0)
    goto done;
  al_tk_target tg;
  if (al_tk_target_parse(AL_TK_LINEAR, ident, NULL, &tg, err) < 0) {
    al_error_wrap(err, "data.identifier");
    goto done;
  }
  if (!id[0] || !actor[0]) {
    /* empty is missing: a run is never queued for no one or no issue */
    al_error_set(err, EINVAL, "%s empty", !id[0] ? "data.id" : "actor.id");
    goto done;
  }
  if (tkey && strcmp(tkey, tg.project) != 0) {
    al_error_set(err, EINVAL, "data.team.key `%s` is not the identifier's team", tkey);
    goto done;
  }
  snprintf(out->key, sizeof out->key, "%s", tg.key);
  snprintf(out->project, sizeof out->project, "%s", tg.project);
  snprintf(out->id, sizeof out->id, "%s", id);
  snprintf(out->sender, sizeof out->sender, "%s", actor);
  if (team && strcmp(team, tg.project) != 0) {
    rc = ignore(out, "the issue is not in the served team");
    goto done;
  }
  bool create = strcmp(action, "create") == 0;
  if (!create && from && !json_is_object(from)) {
    al_error_set(err, EINVAL, "updatedFrom must be an object");
    goto done;
  }
  const char *trig = NULL;
  const json_t *labels = json_object_get(data, "labels");
  if (label && json_is_array(labels)) {
    size_t i;
    const json_t *l;
    json_array_foreach(labels, i, l)
    {
      const char *name, *lid;
      if (al_wh_json_string(l, "name", "data.labels[].name", 256, &name, err) < 0 ||
          al_wh_json_string(l, "id", "data.labels[].id", 63, &lid, err) < 0)
        goto done;
      if (strcmp(name, label) != 0)
        continue;
      const json_t *before = json_object_get(from, "labelIds");
      if (create || (json_is_array(before) && !in_ids(before, lid)))
        trig = "label";
    }
  }
  static const char *const keys[] = {"assigneeId", "delegateId"};
  static const char *const names[] = {"assignee", "delegate"};
  for (size_t k = 0; !trig && app && k < 2; k++) {
    const char *now;
    if (al_wh_json_opt_string(data, keys[k], keys[k], 128, &now, err) < 0)
      goto done;
    if (now && strcmp(now, app) == 0 && (create || json_object_get(from, keys[k])))
      trig = names[k];
  }
  if (!trig) {
    rc = ignore(out, "neither the trigger label added nor an assignment or delegation to the app");
    goto done;
  }
  out->kind = AL_WEBHOOK_RUN;
  snprintf(out->trigger, sizeof out->trigger, "%s", trig);
  rc = 0;
done:
  json_decref(j);
  return rc;
}
