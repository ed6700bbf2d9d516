/* `airlock audit`, the ci.* criteria: the reads (the workflows of the
 * audited branch through the contents API, the Actions settings, the
 * environments) and the verdicts, which forge/workflow.c decides from
 * them. Each read that fails leaves its reason, so that what rests on it
 * is UNKNOWN, never a pass. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "common/util.h"
#include "forge/audit_internal.h"
#include "forge/ghapi.h"
#include "forge/workflow.h"

/* The most workflow files read; beyond it the rest are UNKNOWN. */
#define MAX_WORKFLOWS 100

/* A name GitHub would run: *.yml or *.yaml directly in .github/workflows
 * ("Workflow syntax for GitHub Actions": workflow files use YAML syntax
 * and must have a .yml or .yaml extension, stored in .github/workflows). */
static bool workflow_name(const char *n)
{
  size_t l = strlen(n);
  if (l == 0 || l > 200 || strchr(n, '/'))
    return false;
  for (const char *p = n; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return false;
  return (l > 4 && !strcasecmp(n + l - 4, ".yml")) || (l > 5 && !strcasecmp(n + l - 5, ".yaml"));
}

static void wf_add(struct ctx *c, const char *name, char *text, size_t len, const char *why)
{
  c->wf = al_xrealloc(c->wf, (c->n_wf + 1) * sizeof *c->wf);
  struct au_wf_file *f = &c->wf[c->n_wf++];
  f->path = al_strdup_printf(".github/workflows/%s", name);
  f->text = text;
  f->len = len;
  f->why = why ? al_xstrdup(why) : NULL;
}

/* One file: Repos › Contents › "Get repository content" (base64; files
 * over 1 MB come with encoding "none" and no content). */
static int read_workflow(struct ctx *c, const char *name, const char *ref, al_error *err)
{
  al_autofree char *esc = al_ghapi_escape(name);
  al_autofree char *p =
      al_strdup_printf("%s/contents/.github/workflows/%s?ref=%s", c->repo_path, esc, ref);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
    return -1;
  const char *content = json_string_value(json_object_get(r.json, "content"));
  const char *enc = json_string_value(json_object_get(r.json, "encoding"));
  const char *type = json_string_value(json_object_get(r.json, "type"));
  if (r.status == 200 && content && enc && !strcmp(enc, "base64") && type &&
      !strcmp(type, "file") && strlen(content) <= 2 * AL_WF_MAX_FILE) {
    size_t len = 0;
    char *text = al_base64_decode_lines(content, strlen(content), &len);
    wf_add(c, name, text, len, NULL);
  } else {
    char w[320];
    if (r.status == 200)
      snprintf(w, sizeof w, "GET %s: not a base64 file (over 1 MB, or not a file)", name);
    else
      au_why_status(w, sizeof w, &r);
    wf_add(c, name, NULL, 0, w);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* The directory listing, then each workflow file. */
static int gather_workflows(struct ctx *c, al_error *err)
{
  al_autofree char *ref = al_ghapi_escape(c->rep->branch);
  al_autofree char *p = al_strdup_printf("%s/contents/.github/workflows?ref=%s", c->repo_path, ref);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
    return -1;
  if (au_check_401(&r, p, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status == 404 && !strcasecmp(r.message, "Not Found")) {
    c->wf_known = true; /* no .github/workflows on the branch: nothing runs */
    al_ghapi_resp_free(&r);
    return 0;
  }
  if (r.status != 200 || !json_is_array(r.json)) {
    if (r.status == 200)
      snprintf(c->wf_why, sizeof c->wf_why, ".github/workflows on %s is not a directory",
               c->rep->branch);
    else
      au_why_status(c->wf_why, sizeof c->wf_why, &r);
    al_ghapi_resp_free(&r);
    return 0;
  }
  c->wf_known = true;
  json_t *list = json_incref(r.json);
  al_ghapi_resp_free(&r);
  size_t i, n = 0;
  json_t *e;
  int ret = 0;
  json_array_foreach(list, i, e)
  {
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *name = json_string_value(json_object_get(e, "name"));
    /* GitHub runs only the files directly in the directory; a symlink's
     * target is not followed here either, so it is unknown */
    if (!name || !type || !strcmp(type, "dir") || !workflow_name(name))
      continue;
    if (strcmp(type, "file") != 0) {
      wf_add(c, name, NULL, 0, "not a regular file (a symlink or submodule)");
      continue;
    }
    if (++n > MAX_WORKFLOWS) {
      wf_add(c, name, NULL, 0, "more workflow files than the audit reads (100)");
      continue;
    }
    if ((ret = read_workflow(c, name, ref, err)) < 0)
      break;
  }
  json_decref(list);
  return ret;
}

/* Actions › Permissions: enabled, and the GITHUB_TOKEN's default
 * (Administration: read). */
static int gather_actions(struct ctx *c, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s/actions/permissions", c->repo_path);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
    return -1;
  json_t *en = json_object_get(r.json, "enabled");
  if (r.status == 200 && json_is_boolean(en)) {
    c->actions_known = true;
    c->actions_disabled = json_is_false(en);
  } else {
    au_why_status(c->actions_why, sizeof c->actions_why, &r);
  }
  al_ghapi_resp_free(&r);

  al_autofree char *q = al_strdup_printf("%s/actions/permissions/workflow", c->repo_path);
  if (al_ghapi_get(c->api, q, c->tok, &r, err) < 0)
    return -1;
  const char *d = json_string_value(json_object_get(r.json, "default_workflow_permissions"));
  if (r.status == 200 && d && (!strcmp(d, "read") || !strcmp(d, "write"))) {
    c->default_perms = !strcmp(d, "read") ? AL_WF_LEVEL_READ : AL_WF_LEVEL_WRITE;
    c->can_approve = json_is_true(json_object_get(r.json, "can_approve_pull_request_reviews"));
  } else {
    char w[300];
    if (r.status == 200)
      snprintf(w, sizeof w, "no default_workflow_permissions in the answer");
    else
      au_why_status(w, sizeof w, &r);
    snprintf(c->perms_why, sizeof c->perms_why, "GET .../actions/permissions/workflow: %s", w);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Deployments › Environments › "List environments" (Actions: read; any
 * reader of a public repository): a protection rule of type
 * required_reviewers with at least one reviewer makes a job wait. */
static int gather_envs(struct ctx *c, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s/environments?per_page=100", c->repo_path);
  json_t *items = NULL;
  al_ghapi_list_info st;
  al_error e = {0};
  if (al_ghapi_list_field(c->api, p, "environments", c->tok, 1000, &items, &st, &e) < 0) {
    json_decref(items);
    if (st.status == AL_GHAPI_LIST_TRANSPORT)
      return al_error_set(err, e.code, "%s", st.why);
    snprintf(c->env_why, sizeof c->env_why, "%s", st.why);
    return 0;
  }
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    const char *name = json_string_value(json_object_get(v, "name"));
    if (!name)
      continue;
    bool rev = false;
    size_t j;
    json_t *rule;
    json_array_foreach(json_object_get(v, "protection_rules"), j, rule)
    {
      const char *t = json_string_value(json_object_get(rule, "type"));
      if (t && !strcmp(t, "required_reviewers") &&
          json_array_size(json_object_get(rule, "reviewers")) > 0)
        rev = true;
    }
    c->env = al_xrealloc(c->env, (c->n_env + 1) * sizeof *c->env);
    c->env[c->n_env].name = al_xstrdup(name);
    c->env[c->n_env].reviewers = rev;
    c->n_env++;
  }
  json_decref(items);
  c->env_known = true;
  return 0;
}

int au_gather_ci(struct ctx *c, al_error *err)
{
  if (gather_workflows(c, err) < 0 || gather_actions(c, err) < 0 || gather_envs(c, err) < 0)
    return -1;
  return 0;
}

void au_judge_ci(struct ctx *c)
{
  al_wf_file *files = al_xcalloc(c->n_wf ? c->n_wf : 1, sizeof *files);
  for (size_t i = 0; i < c->n_wf; i++)
    files[i] = (al_wf_file){
        .path = c->wf[i].path, .text = c->wf[i].text, .len = c->wf[i].len, .why = c->wf[i].why};
  al_wf_env *envs = al_xcalloc(c->n_env ? c->n_env : 1, sizeof *envs);
  for (size_t i = 0; i < c->n_env; i++)
    envs[i] = (al_wf_env){.name = c->env[i].name, .reviewers = c->env[i].reviewers};
  al_wf_repo repo = {
      .run_prefix = c->rep->run_prefix,
      .base_branch = c->rep->branch,
      .visibility = (al_wf_visibility)c->visibility,
      .actions_disabled = c->actions_known && c->actions_disabled,
      .default_perms = (al_wf_level)c->default_perms,
      .perms_why = c->perms_why,
      .can_approve = c->can_approve,
      .files_known = c->wf_known,
      .files_why = c->wf_why,
      .files = files,
      .n_files = c->n_wf,
      .envs_known = c->env_known,
      .envs_why = c->env_why,
      .envs = envs,
      .n_envs = c->n_env,
  };
  al_wf_verdict v[AL_WF_C_N];
  al_wf_judge(&repo, v);
  static const al_audit_status map[] = {[AL_WF_PASS] = AL_AUDIT_PASS,
                                        [AL_WF_WARN] = AL_AUDIT_WARN,
                                        [AL_WF_FAIL] = AL_AUDIT_FAIL,
                                        [AL_WF_UNKNOWN] = AL_AUDIT_UNKNOWN};
  for (int k = 0; k < AL_WF_C_N; k++) {
    c->from = AL_AUDIT_FROM_WORKFLOWS | AL_AUDIT_FROM_ACTIONS;
    if (k == AL_WF_C_PRIVATE)
      c->from |= AL_AUDIT_FROM_REPO;
    if (k != AL_WF_C_BASE && k != AL_WF_C_PRIVATE)
      c->from |= AL_AUDIT_FROM_ENVIRONMENTS;
    struct sb ev = {0};
    au_sb_add(&ev, "%s", v[k].evidence);
    if (!c->actions_known && v[k].status != AL_WF_PASS)
      au_sb_add(&ev, " (whether Actions is enabled could not be read: %s)", c->actions_why);
    au_set(c, (al_audit_id)(AL_AC_CI_SECRETS + k), map[v[k].status], &ev, v[k].fix);
  }
  al_wf_verdicts_free(v);
  free(files);
  free(envs);
}

void au_ci_free(struct ctx *c)
{
  for (size_t i = 0; i < c->n_wf; i++) {
    free(c->wf[i].path);
    free(c->wf[i].text);
    free(c->wf[i].why);
  }
  free(c->wf);
  for (size_t i = 0; i < c->n_env; i++)
    free(c->env[i].name);
  free(c->env);
  c->wf = NULL;
  c->env = NULL;
  c->n_wf = c->n_env = 0;
}
