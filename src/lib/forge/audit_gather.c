/* `airlock audit`, the reads: every GET the audit makes (audit.h lists
 * them with their GitHub REST pages), each stored in the run's state with
 * why it could not be read, so that a verdict (audit_judge.c) can name the
 * response it rests on. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "forge/appconfig.h"
#include "forge/app.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/base64.h"
#include "common/util.h"
#include "forge/audit_internal.h"
#include "forge/codeowners.h"
#include "forge/ghapi.h"
#include "forge/workflow.h"

/* ---- the installation ------------------------------------------------ */

const char *au_perm_level(json_t *perms, const char *name)
{
  const char *v = json_string_value(json_object_get(perms, name));
  return v ? v : NULL;
}

/* ---- repository reads ------------------------------------------------- */

/* Repos › "Get a repository": the default branch when none was given. */
static int gather_repo(struct ctx *c, al_error *err)
{
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, c->repo_path, c->tok, &r, err) < 0)
    return -1;
  if (au_check_401(&r, c->repo_path, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status != 200) {
    char w[600];
    al_ghapi_describe(&r, w, sizeof w);
    al_ghapi_class cls = r.cls;
    al_ghapi_resp_free(&r);
    if (cls == AL_GHAPI_NOT_FOUND)
      return al_error_set(err, ENOENT,
                          "GET %s: %s: the repository does not exist or the token cannot see it",
                          c->repo_path, w);
    /* Rate limited, forbidden, redirected elsewhere, a server error: say
     * which, never "does not exist". */
    return al_error_set(err, cls == AL_GHAPI_RATE_LIMITED ? EAGAIN : EPROTO, "GET %s: %s",
                        c->repo_path, w);
  }
  if (r.moved_status)
    snprintf(c->rep->redirected, sizeof c->rep->redirected,
             "GET %s answered %ld (a renamed or transferred repository); the audit read %s",
             c->repo_path, r.moved_status, r.moved_to);
  /* visibility: public, private or internal ("Get a repository"); an
   * older answer has only `private` */
  const char *vis = json_string_value(json_object_get(r.json, "visibility"));
  json_t *priv = json_object_get(r.json, "private");
  if (vis)
    c->visibility = !strcmp(vis, "public") ? AL_WF_VIS_PUBLIC : AL_WF_VIS_PRIVATE;
  else if (json_is_boolean(priv))
    c->visibility = json_is_true(priv) ? AL_WF_VIS_PRIVATE : AL_WF_VIS_PUBLIC;
  if (!c->o->branch) {
    const char *db = json_string_value(json_object_get(r.json, "default_branch"));
    if (!db || !*db || strlen(db) >= sizeof c->rep->branch) {
      al_ghapi_resp_free(&r);
      return al_make_error(err, EPROTO, "GET %s: no `default_branch`", c->repo_path);
    }
    snprintf(c->rep->branch, sizeof c->rep->branch, "%s", db);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Branches › Branch protection › "Get branch protection". 404 "Branch not
 * protected" is GitHub's answer for a branch without classic protection
 * (also when only rulesets protect it); 404 "Branch not found" means no
 * such branch; any other 403/404 means the token may not see it. */
static int gather_classic(struct ctx *c, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s/branches/%s/protection", c->repo_path, c->branch_esc);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
    return -1;
  if (au_check_401(&r, p, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status == 200 && json_is_object(r.json)) {
    c->classic = L_PRESENT;
    c->classic_json = json_incref(r.json);
  } else if (r.status == 404 && strcasecmp(r.message, "Branch not protected") == 0) {
    c->classic = L_ABSENT;
  } else if (r.status == 404 && strcasecmp(r.message, "Branch not found") == 0) {
    al_ghapi_resp_free(&r);
    return al_error_set(err, ENOENT, "branch `%s` not found in %s (GET %s: 404 Branch not found)",
                        c->rep->branch, c->o->repo, p);
  } else {
    c->classic = L_UNKNOWN;
    au_why_status(c->classic_why, sizeof c->classic_why, &r);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Repos › Rules › "Get rules for a branch": every active rule from every
 * ruleset (repository or organisation) that applies to the branch; rules
 * in "evaluate" or "disabled" rulesets are not returned. */
static int gather_rules(struct ctx *c, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s/rules/branches/%s", c->repo_path, c->branch_esc);
  json_t *items = NULL;
  al_ghapi_list_info st;
  al_error e = {0};
  if (al_ghapi_list(c->api, p, c->tok, 0, &items, &st, &e) == 0) {
    c->rules_known = true;
    c->rules = items;
    return 0;
  }
  json_decref(items);
  if (st.status == AL_GHAPI_LIST_HTTP && st.cls == AL_GHAPI_UNAUTHORIZED)
    return al_error_set(err, EACCES, "%s: the token is not valid", st.why);
  if (st.status == AL_GHAPI_LIST_TRANSPORT)
    return al_error_set(err, e.code, "%s", st.why);
  /* Anything less than the whole list is not known (fail closed). */
  snprintf(c->rules_why, sizeof c->rules_why, "%s", st.why);
  return 0;
}

void au_rs_key(char *k, size_t n, json_t *id)
{
  snprintf(k, n, "%lld", (long long)json_integer_value(id));
}

/* Repos › Rules › "Get all repository rulesets" (includes_parents: the
 * organisation's too) and "Get a repository ruleset" for each one that is
 * listed or that a rule of the branch came from. bypass_actors is returned
 * only to callers with write access to the ruleset. */
static int gather_rulesets(struct ctx *c, al_error *err)
{
  al_autofree char *p =
      al_strdup_printf("%s/rulesets?includes_parents=true&per_page=100", c->repo_path);
  al_ghapi_resp r = {0};
  if (al_ghapi_get_list(c->api, p, c->tok, &r, err) < 0)
    return -1;
  c->rs_detail = json_object();
  if (r.status == 200) {
    c->rs_list_known = true;
    c->rs_list = json_incref(r.json);
  } else {
    au_why_status(c->rs_list_why, sizeof c->rs_list_why, &r);
  }
  al_ghapi_resp_free(&r);

  json_t *ids = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(c->rs_list, i, v) json_array_append(ids, json_object_get(v, "id"));
  json_array_foreach(c->rules, i, v) json_array_append(ids, json_object_get(v, "ruleset_id"));
  json_array_foreach(ids, i, v)
  {
    if (!json_is_integer(v))
      continue;
    char k[32];
    au_rs_key(k, sizeof k, v);
    if (json_object_get(c->rs_detail, k))
      continue;
    al_autofree char *dp =
        al_strdup_printf("%s/rulesets/%s?includes_parents=true", c->repo_path, k);
    if (al_ghapi_get(c->api, dp, c->tok, &r, err) < 0) {
      json_decref(ids);
      return -1;
    }
    if (r.status == 200 && json_is_object(r.json)) {
      json_object_set(c->rs_detail, k, r.json);
    } else {
      char w[300];
      au_why_status(w, sizeof w, &r);
      json_object_set_new(c->rs_detail, k, json_string(w));
    }
    al_ghapi_resp_free(&r);
  }
  json_decref(ids);
  return 0;
}

json_t *au_branch_ruleset_ids(struct ctx *c)
{
  json_t *ids = json_object();
  size_t i;
  json_t *v;
  json_array_foreach(c->rules, i, v)
  {
    char k[32];
    au_rs_key(k, sizeof k, json_object_get(v, "ruleset_id"));
    json_object_set_new(ids, k, json_true());
  }
  return ids;
}

/* The ids of the rulesets that matter: those with rules on the branch
 * (from the effective rules) and the active tag rulesets. */
static json_t *rulesets_that_matter(struct ctx *c)
{
  json_t *ids = au_branch_ruleset_ids(c);
  size_t i;
  json_t *v;
  json_array_foreach(c->rs_list, i, v)
  {
    const char *t = json_string_value(json_object_get(v, "target"));
    const char *enf = json_string_value(json_object_get(v, "enforcement"));
    if (t && !strcmp(t, "tag") && (!enf || !strcmp(enf, "active"))) {
      char k[32];
      au_rs_key(k, sizeof k, json_object_get(v, "id"));
      json_object_set_new(ids, k, json_true());
    }
  }
  return ids;
}

/* The bot's own answer for every ruleset that matters: GET
 * /repos/{o}/{r}/rulesets/{id} with a token of the run's App, field
 * current_user_can_bypass ("Get a repository ruleset": always,
 * pull_requests_only, exempt or never, for the authenticated caller). GitHub
 * shows bypass_actors only to a caller that can edit the ruleset, but every
 * caller learns whether *it* may bypass: asked as the App, that is exactly
 * the criterion. The token has only metadata: read and is revoked before
 * the audit returns (by whoever minted it: the broker, or audit_key.c for
 * `airlock audit --config`). Without such a token the App is not known to
 * the audit, and the view stays unknown with the reason. */
int au_gather_bot_view(struct ctx *c, al_error *err)
{
  c->bot_view = json_object();
  const char *tok = NULL;
  if (c->tok_is_bot) {
    tok = c->tok;
    snprintf(c->rep->as_app, sizeof c->rep->as_app, "the read token (minted from the run's App)");
  } else if (c->bot_tok) {
    tok = c->bot_tok;
    snprintf(c->rep->as_app, sizeof c->rep->as_app,
             "installation token %s of the run's App (metadata: read)", c->bot_fp);
  } else {
    snprintf(c->bot_why, sizeof c->bot_why,
             "the run's App is not known to the audit (no broker config): its own "
             "current_user_can_bypass cannot be asked");
    return 0;
  }
  json_t *ids = rulesets_that_matter(c);
  const char *k;
  json_t *v;
  json_object_foreach(ids, k, v)
  {
    al_autofree char *p = al_strdup_printf("%s/rulesets/%s?includes_parents=true", c->repo_path, k);
    al_ghapi_resp r = {0};
    if (al_ghapi_get(c->api, p, tok, &r, err) < 0) {
      json_decref(ids);
      return -1;
    }
    const char *cu = json_string_value(json_object_get(r.json, "current_user_can_bypass"));
    if (r.status == 200 && cu) {
      json_object_set_new(c->bot_view, k, json_string(cu));
    } else {
      char w[400];
      al_ghapi_describe(&r, w, sizeof w);
      json_object_set_new(
          c->bot_view, k,
          json_pack("{s:s}", "why", r.status == 200 ? "no current_user_can_bypass" : w));
    }
    al_ghapi_resp_free(&r);
  }
  json_decref(ids);
  c->bot_known = true;
  return 0;
}

/* Repos › Contents › "Get repository content" for the CODEOWNERS
 * locations, on the target branch, in GitHub's order ("About code
 * owners": the first one found is used). */
static int gather_codeowners(struct ctx *c, al_error *err)
{
  al_autofree char *ref = al_ghapi_escape(c->rep->branch);
  for (size_t i = 0; i < AL_ARRAY_SIZE(AL_CODEOWNERS_PATHS); i++) {
    al_autofree char *p =
        al_strdup_printf("%s/contents/%s?ref=%s", c->repo_path, AL_CODEOWNERS_PATHS[i], ref);
    al_ghapi_resp r = {0};
    if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
      return -1;
    if (r.status == 404) {
      al_ghapi_resp_free(&r);
      continue;
    }
    const char *content = json_string_value(json_object_get(r.json, "content"));
    const char *enc = json_string_value(json_object_get(r.json, "encoding"));
    if (r.status == 200 && content && enc && strcmp(enc, "base64") == 0) {
      c->co = L_PRESENT;
      snprintf(c->co_path, sizeof c->co_path, "%s", AL_CODEOWNERS_PATHS[i]);
      c->co_text = al_base64_decode_lines(content, strlen(content), &c->co_len);
    } else {
      c->co = L_UNKNOWN;
      snprintf(c->co_path, sizeof c->co_path, "%s", AL_CODEOWNERS_PATHS[i]);
      if (r.status == 200)
        snprintf(c->co_why, sizeof c->co_why, "GET %s: not a base64 file", AL_CODEOWNERS_PATHS[i]);
      else
        au_why_status(c->co_why, sizeof c->co_why, &r);
    }
    al_ghapi_resp_free(&r);
    return 0;
  }
  c->co = L_ABSENT;
  return 0;
}

int au_gather_all(struct ctx *c, al_error *err)
{
  if (gather_repo(c, err) < 0)
    return -1;
  c->branch_esc = al_ghapi_escape(c->rep->branch);
  if (gather_classic(c, err) < 0 || gather_rules(c, err) < 0 || gather_rulesets(c, err) < 0 ||
      gather_codeowners(c, err) < 0 || au_gather_ci(c, err) < 0)
    return -1;
  return 0;
}
