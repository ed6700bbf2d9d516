/* The Actions settings and deployment environments a repository has, as
 * the audit's ci.* criteria read them (fixture fields `actions` and
 * `environments`, README.md). Shapes follow GitHub's OpenAPI description
 * (actions-repository-permissions, actions-get-default-workflow-
 * permissions, environment); tests/integration/forge-schema.sh checks
 * them. Call with g_forge.lock held. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "common/util.h"

#define DOC_ACTIONS_PERMS                                                                          \
  "https://docs.github.com/rest/actions/permissions#get-github-actions-permissions-for-a-"         \
  "repository"
#define DOC_WORKFLOW_PERMS                                                                         \
  "https://docs.github.com/rest/actions/permissions#get-default-workflow-permissions-for-a-"       \
  "repository"
#define DOC_ENVIRONMENTS "https://docs.github.com/rest/deployments/environments#list-environments"

static json_t *actions_of(json_t *repo)
{
  json_t *a = json_object_get(repo, "actions");
  return json_is_object(a) ? a : NULL;
}

/* GET /repos/{o}/{r}/actions/permissions (Administration: read). */
void forge_h_actions_permissions(struct ctx *c, json_t *repo)
{
  if (!forge_api_authorize(c, repo, "administration", 1, DOC_ACTIONS_PERMS))
    return;
  json_t *a = actions_of(repo);
  json_t *en = json_object_get(a, "enabled");
  forge_resp_json(
      c->resp, 200,
      json_pack("{s:b, s:s}", "enabled", en ? json_is_true(en) : 1, "allowed_actions", "all"));
}

/* GET /repos/{o}/{r}/actions/permissions/workflow (Administration: read).
 * GitHub's default for a new repository is read. */
void forge_h_workflow_permissions(struct ctx *c, json_t *repo)
{
  if (!forge_api_authorize(c, repo, "administration", 1, DOC_WORKFLOW_PERMS))
    return;
  json_t *a = actions_of(repo);
  const char *d = json_string_value(json_object_get(a, "default_workflow_permissions"));
  forge_resp_json(c->resp, 200,
                  json_pack("{s:s, s:b}", "default_workflow_permissions", d ? d : "read",
                            "can_approve_pull_request_reviews",
                            json_is_true(json_object_get(a, "can_approve_pull_request_reviews"))));
}

/* GET /repos/{o}/{r}/environments: Actions: read, or any reader of a
 * public repository ("List environments"). A fixture environment
 * {"name", "reviewers": [logins]} gets a required_reviewers rule when it
 * names reviewers. Not paginated here (the fixtures hold few). */
void forge_h_environments(struct ctx *c, json_t *repo)
{
  bool pub = !json_is_true(json_object_get(repo, "private"));
  if (!forge_api_authorize(c, repo, pub ? "metadata" : "actions", 1, DOC_ENVIRONMENTS))
    return;
  const char *full = json_string_value(json_object_get(repo, "full_name"));
  json_t *list = json_array();
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(repo, "environments"), i, e)
  {
    const char *name = json_string_value(json_object_get(e, "name"));
    if (!name)
      continue;
    json_t *rules = json_array();
    json_t *revs = json_object_get(e, "reviewers");
    if (json_array_size(revs) > 0) {
      json_t *rl = json_array();
      size_t j;
      json_t *r;
      json_array_foreach(revs, j, r)
      {
        if (json_is_string(r))
          json_array_append_new(rl, json_pack("{s:s, s:o}", "type", "User", "reviewer",
                                              forge_api_user(json_string_value(r))));
      }
      json_array_append_new(rules, json_pack("{s:I, s:s, s:b, s:s, s:o}", "id",
                                             (json_int_t)1000 + (json_int_t)i, "node_id",
                                             "GA_forge", "prevent_self_review", 1, "type",
                                             "required_reviewers", "reviewers", rl));
    }
    al_autofree char *url =
        al_strdup_printf("%s/repos/%s/environments/%s", g_forge.base_url, full, name);
    al_autofree char *html = al_strdup_printf(
        "%s/%s/deployments/activity_log?environments_filter=%s", g_forge.git_base_url, full, name);
    json_array_append_new(list, json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:n}", "id",
                                          (json_int_t)100 + (json_int_t)i, "node_id", "EN_forge",
                                          "name", name, "url", url, "html_url", html, "created_at",
                                          forge_api_iso(0), "updated_at", forge_api_iso(0),
                                          "protection_rules", rules, "deployment_branch_policy"));
  }
  forge_resp_json(c->resp, 200,
                  json_pack("{s:I, s:o}", "total_count", (json_int_t)json_array_size(list),
                            "environments", list));
}
