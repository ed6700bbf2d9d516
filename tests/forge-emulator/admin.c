/* The admin listener (loopback, plain HTTP): JSON inspection of the forge's
 * state for tests, the movable clock, and human reviews. Never returns a
 * token value: tokens are identified by the first 12 hex of their SHA-256. */
#include "forge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "behave.h"
#include "rulesets.h"
#include "common/util.h"

static json_t *tokens_view(void)
{
  json_t *arr = json_array();
  size_t i;
  json_t *t;
  json_array_foreach(g_forge.tokens, i, t)
  {
    char fp[32], created[32], expires[32], revoked[32];
    snprintf(fp, sizeof fp, "sha256:%.12s", json_string_value(json_object_get(t, "sha256")));
    forge_iso8601(json_integer_value(json_object_get(t, "created_at")), created);
    forge_iso8601(json_integer_value(json_object_get(t, "expires_at")), expires);
    long long rv = json_integer_value(json_object_get(t, "revoked_at"));
    if (rv)
      forge_iso8601(rv, revoked);
    json_array_append_new(
        arr, json_pack("{s:O, s:s, s:s, s:O, s:O, s:O, s:O, s:O, s:s, s:s, s:s?}", "id",
                       json_object_get(t, "id"), "fingerprint", fp, "state", forge_token_state(t),
                       "app_id", json_object_get(t, "app_id"), "installation_id",
                       json_object_get(t, "installation_id"), "permissions",
                       json_object_get(t, "permissions"), "repositories",
                       json_object_get(t, "repositories"), "repository_selection",
                       json_object_get(t, "repository_selection"), "created_at", created,
                       "expires_at", expires, "revoked_at", rv ? revoked : NULL));
  }
  return arr;
}

static json_t *pushes_view(void)
{
  json_t *arr = json_array();
  char *data = NULL;
  size_t len;
  al_error err;
  if (al_read_file(g_forge.push_log, 64u << 20, &data, &len, &err) < 0)
    return arr;
  char *save = NULL;
  for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    json_t *j = json_loads(l, 0, NULL);
    if (j)
      json_array_append_new(arr, j);
  }
  free(data);
  return arr;
}

static json_t *refs_view(const char *full)
{
  json_t *o = json_object();
  const char *argv[] = {"git", "for-each-ref", "--format=%(refname) %(objectname)", NULL};
  char *out = NULL;
  if (forge_git_run(full, argv, &out, NULL) == 0 && out) {
    char *save = NULL;
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      char *sp = strchr(l, ' ');
      if (sp) {
        *sp = '\0';
        json_object_set_new(o, l, json_string(sp + 1));
      }
    }
  }
  free(out);
  return o;
}

void forge_admin_handle(struct forge_req *rq, struct forge_resp *resp)
{
  bool get = !strcmp(rq->method, "GET"), post = !strcmp(rq->method, "POST");
  if (forge_webhooks_admin(rq, resp)) /* webhooks.c: sends outside the lock */
    return;
  pthread_mutex_lock(&g_forge.lock);
  forge_resp_error(resp, 404, "Not Found", NULL);
  const char *p = rq->path;
  if (forge_behave_admin(rq, resp) || forge_rulesets_admin(rq, resp)) {
    /* faults, settings, renames, suspensions (behave.c) */
  } else if (get && !strcmp(p, "/health")) {
    forge_resp_json(resp, 200, json_pack("{s:b}", "ok", 1));
  } else if (get && !strcmp(p, "/tokens")) {
    forge_resp_json(resp, 200, tokens_view());
  } else if (get && !strcmp(p, "/pushes")) {
    forge_resp_json(resp, 200, pushes_view());
  } else if (get && !strcmp(p, "/pulls")) {
    forge_resp_json(resp, 200, json_deep_copy(g_forge.pulls));
  } else if (get && !strcmp(p, "/reviews")) {
    forge_resp_json(resp, 200, json_deep_copy(g_forge.reviews));
  } else if (get && !strcmp(p, "/comments")) {
    forge_resp_json(resp, 200, json_deep_copy(g_forge.comments));
  } else if (get && !strcmp(p, "/issues")) {
    forge_resp_json(resp, 200, json_deep_copy(g_forge.issues));
  } else if (get && !strcmp(p, "/refs")) {
    al_autofree char *full = forge_query_param(rq->query, "repo");
    const char *sl = full ? strchr(full, '/') : NULL;
    al_autofree char *own = sl ? al_strdup_printf("%.*s", (int)(sl - full), full) : NULL;
    json_t *repo = sl ? forge_repo(own, sl + 1) : NULL;
    if (!repo)
      forge_resp_error(resp, 404, "unknown repo (use ?repo=owner/name)", NULL);
    else
      forge_resp_json(resp, 200, refs_view(json_string_value(json_object_get(repo, "full_name"))));
  } else if ((get || post) && !strcmp(p, "/clock")) {
    if (post) {
      json_t *b = json_loadb(rq->body, rq->body_len, 0, NULL);
      json_t *adv = json_object_get(b, "advance");
      if (!json_is_integer(adv) || json_integer_value(adv) < 0 ||
          json_integer_value(adv) > 100LL * 365 * 86400) {
        json_decref(b);
        forge_resp_error(resp, 400, "body must be {\"advance\": SECONDS (>= 0)}", NULL);
        goto out;
      }
      __atomic_add_fetch(&g_forge.clock_offset, (long long)json_integer_value(adv),
                         __ATOMIC_SEQ_CST);
      json_decref(b);
    }
    char now[32];
    forge_iso8601(forge_now(), now);
    forge_resp_json(resp, 200,
                    json_pack("{s:I, s:s, s:I}", "now", (json_int_t)forge_now(), "iso", now,
                              "offset", (json_int_t)g_forge.clock_offset));
  } else if (post && !strcmp(p, "/protection")) {
    /* A repository admin's change, without a token: {"repo": "o/r",
     * "branch": "main", "set": {FIELD: VALUE, ...}} replaces those fields of
     * the branch's stored classic protection (the PUT body's form). */
    json_t *b = json_loadb(rq->body, rq->body_len, 0, NULL);
    const char *full = json_string_value(json_object_get(b, "repo"));
    const char *br = json_string_value(json_object_get(b, "branch"));
    json_t *set = json_object_get(b, "set");
    const char *sl = full ? strchr(full, '/') : NULL;
    al_autofree char *own = sl ? al_strdup_printf("%.*s", (int)(sl - full), full) : NULL;
    json_t *repo = sl ? forge_repo(own, sl + 1) : NULL;
    json_t *prot = repo && br ? json_object_get(json_object_get(repo, "protection"), br) : NULL;
    if (!json_is_object(prot) || !json_is_object(set))
      forge_resp_error(
          resp, 400, "body must be {repo, branch (classic protection), set: {FIELD: VALUE}}", NULL);
    else {
      json_object_update(prot, set);
      forge_resp_json(resp, 200, json_deep_copy(prot));
    }
    json_decref(b);
  } else if (post && !strcmp(p, "/reviews")) {
    /* A human review: {"repo": "o/r", "number": N, "user": "alice", "event": "APPROVE"}. */
    json_t *b = json_loadb(rq->body, rq->body_len, 0, NULL);
    const char *full = json_string_value(json_object_get(b, "repo"));
    const char *user = json_string_value(json_object_get(b, "user"));
    const char *sl = full ? strchr(full, '/') : NULL;
    al_autofree char *own = sl ? al_strdup_printf("%.*s", (int)(sl - full), full) : NULL;
    json_t *repo = sl ? forge_repo(own, sl + 1) : NULL;
    json_t *pr = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(g_forge.pulls, i, v)
    {
      if (repo &&
          !strcasecmp(json_string_value(json_object_get(v, "repo")),
                      json_string_value(json_object_get(repo, "full_name"))) &&
          json_integer_value(json_object_get(v, "number")) ==
              json_integer_value(json_object_get(b, "number")))
        pr = v;
    }
    if (!pr || !user)
      forge_resp_error(resp, 400, "body must be {repo, number (an existing PR), user, event}",
                       NULL);
    else
      forge_create_review(repo, pr, user, b, resp);
    json_decref(b);
  }
out:
  pthread_mutex_unlock(&g_forge.lock);
}
