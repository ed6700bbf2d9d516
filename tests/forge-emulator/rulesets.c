/* Rulesets and classic protection as GitHub applies them: see rulesets.h. */
#include "rulesets.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

static bool pattern_hit(const char *pat, const char *ref, const char *name, const char *defb,
                        bool branch)
{
  return !strcmp(pat, "~ALL") ||
         (branch && !strcmp(pat, "~DEFAULT_BRANCH") && !strcmp(name, defb)) ||
         !fnmatch(pat, ref, 0) || !fnmatch(pat, name, 0);
}

static bool cond_matches(json_t *cond, const char *ref, const char *name, const char *defb,
                         bool branch)
{
  bool inc = false;
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(cond, "include"), i, p)
  {
    if (json_is_string(p) && pattern_hit(json_string_value(p), ref, name, defb, branch))
      inc = true;
  }
  json_array_foreach(json_object_get(cond, "exclude"), i, p)
  {
    if (json_is_string(p) && pattern_hit(json_string_value(p), ref, name, defb, branch))
      inc = false;
  }
  return inc;
}

bool forge_ruleset_applies(json_t *rs, const char *target, const char *name,
                           const char *repo_default)
{
  const char *enf = json_string_value(json_object_get(rs, "enforcement"));
  if (enf && strcmp(enf, "active") != 0)
    return false;
  const char *t = json_string_value(json_object_get(rs, "target"));
  if (strcmp(t ? t : "branch", target) != 0)
    return false;
  bool branch = !strcmp(target, "branch");
  al_autofree char *ref = al_strdup_printf("refs/%s/%s", branch ? "heads" : "tags", name);
  return cond_matches(json_object_get(json_object_get(rs, "conditions"), "ref_name"), ref, name,
                      repo_default ? repo_default : "main", branch);
}

json_t *forge_rulesets_of(json_t *repo)
{
  json_t *out = json_array();
  const char *full = json_string_value(json_object_get(repo, "full_name"));
  const char *owner = json_string_value(json_object_get(repo, "owner"));
  const char *name = json_string_value(json_object_get(repo, "name"));
  size_t i;
  json_t *rs;
  json_array_foreach(json_object_get(repo, "rulesets"), i, rs)
  {
    json_t *c = json_deep_copy(rs);
    json_object_set_new(c, "source_type", json_string("Repository"));
    json_object_set_new(c, "source", json_string(full ? full : ""));
    json_array_append_new(out, c);
  }
  json_t *org = owner ? forge_user(owner) : NULL;
  const char *type = json_string_value(json_object_get(org, "type"));
  if (!org || !type || strcmp(type, "Organization") != 0)
    return out;
  json_array_foreach(json_object_get(org, "rulesets"), i, rs)
  {
    json_t *rn = json_object_get(json_object_get(rs, "conditions"), "repository_name");
    if (!cond_matches(rn, name ? name : "", name ? name : "", "", false))
      continue;
    json_t *c = json_deep_copy(rs);
    json_object_set_new(c, "source_type", json_string("Organization"));
    json_object_set_new(c, "source", json_string(owner));
    json_array_append_new(out, c);
  }
  return out;
}

const char *forge_ruleset_bypass(json_t *rs, const struct forge_app *app)
{
  if (!app)
    return "never";
  size_t i;
  json_t *ba;
  json_array_foreach(json_object_get(rs, "bypass_actors"), i, ba)
  {
    const char *t = json_string_value(json_object_get(ba, "actor_type"));
    if (!t || strcmp(t, "Integration") != 0 ||
        json_integer_value(json_object_get(ba, "actor_id")) != app->id)
      continue;
    const char *m = json_string_value(json_object_get(ba, "bypass_mode"));
    if (m && !strcmp(m, "pull_request"))
      return "pull_requests_only";
    if (m && !strcmp(m, "exempt"))
      return "exempt";
    return "always";
  }
  return "never";
}

bool forge_ruleset_actors_visible(json_t *rs, const struct forge_auth *au)
{
  if (au->kind != AUTH_TOKEN)
    return false;
  const char *st = json_string_value(json_object_get(rs, "source_type"));
  const char *perm =
      st && !strcmp(st, "Organization") ? "organization_administration" : "administration";
  json_t *perms = json_object_get(au->token, "permissions");
  return forge_perm_level(json_string_value(json_object_get(perms, perm))) >= 2;
}

json_t *forge_classic_for(json_t *repo, const char *branch)
{
  json_t *all = json_object_get(repo, "protection");
  json_t *prot = json_object_get(all, branch);
  if (json_is_object(prot))
    return prot;
  const char *k;
  json_t *v;
  json_object_foreach(all, k, v)
  {
    if (json_is_object(v) && !fnmatch(k, branch, 0))
      return v;
  }
  return NULL;
}

json_t *forge_tag_rules(json_t *repo, const char *tag, const struct forge_app *app)
{
  const char *defb = json_string_value(json_object_get(repo, "default_branch"));
  json_t *out = json_pack("{s:b, s:b, s:b, s:b}", "ruleset", 0, "create", 0, "update", 0, "del", 0);
  size_t i, j;
  json_t *rs, *rule;
  json_array_foreach(json_object_get(repo, "rulesets"), i, rs)
  {
    if (!forge_ruleset_applies(rs, "tag", tag, defb))
      continue;
    json_object_set_new(out, "ruleset", json_true());
    const char *by = forge_ruleset_bypass(rs, app);
    if (!strcmp(by, "always") || !strcmp(by, "exempt"))
      continue; /* a push is not a pull request: pull_requests_only does not bypass it */
    json_array_foreach(json_object_get(rs, "rules"), j, rule)
    {
      const char *t = json_string_value(json_object_get(rule, "type"));
      if (t && !strcmp(t, "creation"))
        json_object_set_new(out, "create", json_true());
      else if (t && !strcmp(t, "update"))
        json_object_set_new(out, "update", json_true());
      else if (t && !strcmp(t, "deletion"))
        json_object_set_new(out, "del", json_true());
    }
  }
  return out;
}

bool forge_rulesets_admin(struct forge_req *rq, struct forge_resp *resp)
{
  if (strcmp(rq->method, "POST") != 0 || strcmp(rq->path, "/rulesets") != 0)
    return false;
  json_t *b = json_loadb(rq->body, rq->body_len, 0, NULL);
  const char *repo_s = json_string_value(json_object_get(b, "repo"));
  const char *org_s = json_string_value(json_object_get(b, "org"));
  json_t *holder = NULL;
  if (repo_s && strchr(repo_s, '/')) {
    const char *sl = strchr(repo_s, '/');
    al_autofree char *own = al_strdup_printf("%.*s", (int)(sl - repo_s), repo_s);
    holder = forge_repo(own, sl + 1);
  } else if (org_s) {
    holder = forge_user(org_s);
    const char *type = json_string_value(json_object_get(holder, "type"));
    if (!type || strcmp(type, "Organization") != 0)
      holder = NULL;
  }
  json_t *rs = json_object_get(b, "ruleset");
  json_t *del = json_object_get(b, "delete");
  if (!holder || (!json_is_integer(del) &&
                  (!json_is_object(rs) || !json_is_integer(json_object_get(rs, "id")) ||
                   !json_is_string(json_object_get(rs, "name")) ||
                   !json_is_array(json_object_get(rs, "rules"))))) {
    forge_resp_error(
        resp, 400,
        "body must be {\"repo\": \"o/r\" | \"org\": \"login\", \"ruleset\": {id, name, "
        "rules[], ...}} or {..., \"delete\": ID}",
        NULL);
    json_decref(b);
    return true;
  }
  json_t *list = json_object_get(holder, "rulesets");
  if (!json_is_array(list)) {
    json_object_set_new(holder, "rulesets", json_array());
    list = json_object_get(holder, "rulesets");
  }
  long long id = json_is_integer(del) ? json_integer_value(del)
                                      : json_integer_value(json_object_get(rs, "id"));
  for (size_t i = json_array_size(list); i-- > 0;)
    if (json_integer_value(json_object_get(json_array_get(list, i), "id")) == id)
      json_array_remove(list, i);
  if (!json_is_integer(del))
    json_array_append_new(list, json_deep_copy(rs));
  forge_resp_json(resp, 200, json_deep_copy(list));
  json_decref(b);
  return true;
}
