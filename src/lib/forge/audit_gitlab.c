/* The GitLab audit: the run and the reads (audit_gitlab.h lists each GET
 * and its docs.gitlab.com page). Each read is kept with why it could not be
 * made, so that a verdict (audit_gitlab_judge.c) names the answer it rests
 * on and says UNKNOWN where GitLab did not show a setting. */
#include "forge/audit_gitlab.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "common/util.h"
#include "forge/appconfig.h"
#include "forge/audit_gitlab_internal.h"
#include "forge/gitlab.h"
#include "forge/gitlab_ci.h"
#include "forge/workflow.h"

static const struct {
  const char *id;
  const char *title;
  bool required;
} gl_meta[AL_AUDIT_GL_N] = {
    [AL_GL_PROTECTED] = {"branch.protected", "the target branch is a protected branch", true},
    [AL_GL_PUSH] = {"gitlab.push_access",
                    "push: No one, or Maintainers without the bot (push_access_levels)", true},
    [AL_GL_MERGE] = {"gitlab.merge_access", "merge: Maintainers, not the bot (merge_access_levels)",
                     true},
    [AL_GL_FORCE_PUSH] = {"push.no_force_push", "force push is off (allow_force_push)", true},
    [AL_GL_CODE_OWNERS] = {"reviews.code_owners",
                           "code owner approval is required where CODEOWNERS exists", true},
    [AL_GL_APPROVALS] = {"reviews.approvals",
                         "a merge request needs at least one approval from someone but the bot",
                         true},
    [AL_GL_AUTHOR] = {"gitlab.no_author_approval",
                      "the author cannot approve its own merge request", true},
    [AL_GL_RESET] = {"reviews.dismiss_stale", "a push resets the approvals", true},
    [AL_GL_OVERRIDE] = {"gitlab.no_mr_override",
                        "approval rules cannot be edited in a merge request", true},
    [AL_GL_PUSH_RULE] = {"gitlab.push_rule", "a push rule keeps new branches to the run prefix",
                         false},
    [AL_GL_BOT] = {"bot.not_maintainer", "the bot is not a Maintainer or Owner", true},
    [AL_GL_CI_SECRETS] = {"ci.no_secrets",
                          "no CI/CD variable reaches a pipeline of the run's branch or MR", true},
    [AL_GL_CI_OIDC] = {"ci.no_oidc", "no job of those pipelines gets OIDC id_tokens", true},
    [AL_GL_CI_DEPLOY] = {"gitlab.ci_deploy_token", "no gitlab-deploy-token reaches those pipelines",
                         true},
};

bool gl_branch_match(const char *pat, const char *s)
{
  /* GitLab's protected-branch wildcard: `*` matches any run of characters
   * ("Protected branches" § "Protect multiple branches with wildcard
   * rules"); nothing else is special */
  if (*pat == '\0')
    return *s == '\0';
  if (*pat == '*') {
    for (const char *t = s;; t++) {
      if (gl_branch_match(pat + 1, t))
        return true;
      if (!*t)
        return false;
    }
  }
  return *s == *pat && gl_branch_match(pat + 1, s + 1);
}

void gl_set(struct glx *c, al_audit_gl_id id, al_audit_status st, struct sb *ev, const char *fix)
{
  al_audit_criterion *k = &c->rep->c[id];
  k->status = st;
  free(k->evidence);
  k->evidence = au_sb_take(ev);
  free(k->fix);
  k->fix = st == AL_AUDIT_PASS || !fix ? NULL : al_xstrdup(fix);
  k->from = c->from;
  c->from = 0;
}

/* A path segment or query value, all but RFC 3986's unreserved characters
 * %XX-encoded (GitLab takes a file path or branch as one encoded segment). */
static char *enc(const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  char *out = al_xcalloc(3 * strlen(s) + 1, 1), *o = out;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        *p == '-' || *p == '_' || *p == '.' || *p == '~') {
      *o++ = (char)*p;
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  return out;
}

/* GET pp+tail into *out: 200 present (the JSON; `null` or an empty body
 * absent when absent_on_null), 404 absent when absent_on_404, anything else
 * unknown with the status. A 401 stops the audit. */
static int get(struct glx *c, const char *tail, bool absent_on_404, bool absent_on_null,
               struct gl_read *out, al_error *err)
{
  al_autofree char *p = al_strdup_printf("%s%s", c->pp, tail);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, p, c->tok, &r, err) < 0)
    return -1;
  if (au_check_401(&r, p, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status == 200 && (r.json && !json_is_null(r.json))) {
    out->st = L_PRESENT;
    out->json = json_incref(r.json);
  } else if ((r.status == 200 && absent_on_null) || (r.status == 404 && absent_on_404)) {
    out->st = L_ABSENT;
  } else {
    out->st = L_UNKNOWN;
    if (r.status == 200)
      snprintf(out->why, sizeof out->why, "GET %s: HTTP 200 without a JSON answer", tail);
    else
      snprintf(out->why, sizeof out->why, "GET %s: HTTP %ld%s%s", tail, r.status,
               r.message[0] ? ": " : "", r.message);
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Projects API › "Get a single project". */
static int gather_project(struct glx *c, al_error *err)
{
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c->api, c->pp, c->tok, &r, err) < 0)
    return -1;
  if (au_check_401(&r, c->pp, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status != 200 || !json_is_object(r.json)) {
    char w[600];
    al_ghapi_describe(&r, w, sizeof w);
    bool nf = r.cls == AL_GHAPI_NOT_FOUND;
    al_ghapi_resp_free(&r);
    return al_error_set(err, nf ? ENOENT : EPROTO, "GET %s: %s%s", c->pp, w,
                        nf ? ": the project does not exist or the token cannot see it" : "");
  }
  c->rep->installation_id = json_integer_value(json_object_get(r.json, "id"));
  const char *db = json_string_value(json_object_get(r.json, "default_branch"));
  if (db && strlen(db) < sizeof c->default_branch)
    snprintf(c->default_branch, sizeof c->default_branch, "%s", db);
  if (!c->o->branch) {
    if (!c->default_branch[0]) {
      al_ghapi_resp_free(&r);
      return al_error_set(err, EPROTO, "GET %s: no `default_branch` (an empty project?)", c->pp);
    }
    snprintf(c->rep->branch, sizeof c->rep->branch, "%s", c->default_branch);
  }
  const char *bal = json_string_value(json_object_get(r.json, "builds_access_level"));
  c->ci_disabled =
      (bal && !strcmp(bal, "disabled")) || json_is_false(json_object_get(r.json, "jobs_enabled"));
  c->auto_devops = json_is_true(json_object_get(r.json, "auto_devops_enabled"));
  const char *cp = json_string_value(json_object_get(r.json, "ci_config_path"));
  if (!cp || !*cp)
    cp = ".gitlab-ci.yml";
  snprintf(c->ci_path, sizeof c->ci_path, "%s", cp);
  /* "path@group/project", a URL: another project's file ("Specify a custom
   * CI/CD configuration file") */
  c->ci_external = strchr(cp, '@') || strstr(cp, "://") || strlen(cp) >= sizeof c->ci_path - 1;
  json_t *ns = json_object_get(r.json, "namespace");
  const char *kind = json_string_value(json_object_get(ns, "kind"));
  if (kind && !strcmp(kind, "group") && json_is_integer(json_object_get(ns, "id")))
    c->groups[c->n_groups++].id = json_integer_value(json_object_get(ns, "id"));
  al_ghapi_resp_free(&r);
  return 0;
}

/* A list read with per_page=100 that came back full: unknown. */
static void one_page(struct gl_read *r, const char *what)
{
  if (r->st != L_PRESENT || json_array_size(r->json) < 100)
    return;
  r->st = L_UNKNOWN;
  json_decref(r->json);
  r->json = NULL;
  snprintf(r->why, sizeof r->why, "GET /%s: 100 entries or more (the audit reads one page)", what);
}

/* Groups API › "Get a single group" (full_path, parent_id) and Group-level
 * CI/CD variables API › "List group variables", from the project's group
 * up through each parent ("CI/CD variables" § "For a group": a subgroup's
 * projects inherit the variables of every group above). */
static int gather_groups(struct glx *c, al_error *err)
{
  for (size_t i = 0; i < c->n_groups; i++) {
    struct gl_group *g = &c->groups[i];
    snprintf(g->path, sizeof g->path, "group %lld", g->id);
    char gp[64];
    snprintf(gp, sizeof gp, "/groups/%lld", g->id);
    al_ghapi_resp r = {0};
    if (al_ghapi_get(c->api, gp, c->tok, &r, err) < 0)
      return -1;
    long long parent = 0;
    if (r.status == 200 && json_is_object(r.json)) {
      const char *fp = json_string_value(json_object_get(r.json, "full_path"));
      if (fp && strlen(fp) < sizeof g->path)
        snprintf(g->path, sizeof g->path, "%s", fp);
      parent = json_integer_value(json_object_get(r.json, "parent_id"));
    } else {
      c->groups_cut = true;
      snprintf(c->groups_why, sizeof c->groups_why, "GET %s: HTTP %ld%s%s (its parents unread)", gp,
               r.status, r.message[0] ? ": " : "", r.message);
    }
    al_ghapi_resp_free(&r);
    al_autofree char *vp = al_strdup_printf("/groups/%lld/variables?per_page=100", g->id);
    al_ghapi_resp v = {0};
    if (al_ghapi_get(c->api, vp, c->tok, &v, err) < 0)
      return -1;
    if (v.status == 200 && json_is_array(v.json)) {
      g->vars.st = L_PRESENT;
      g->vars.json = json_incref(v.json);
      one_page(&g->vars, "groups/:id/variables");
    } else {
      g->vars.st = L_UNKNOWN;
      snprintf(g->vars.why, sizeof g->vars.why, "GET /groups/%lld/variables: HTTP %ld%s%s", g->id,
               v.status, v.message[0] ? ": " : "", v.message);
    }
    al_ghapi_resp_free(&v);
    if (parent > 0) {
      if (c->n_groups == AL_ARRAY_SIZE(c->groups)) {
        c->groups_cut = true;
        snprintf(c->groups_why, sizeof c->groups_why, "more than %zu group levels",
                 AL_ARRAY_SIZE(c->groups));
        break;
      }
      c->groups[c->n_groups++].id = parent;
    }
  }
  return 0;
}

/* Repository files API › "Get file from repository": a text as a JSON
 * string (base64 decoded) in out->json, absent on 404. */
static int get_file(struct glx *c, const char *path, struct gl_read *out, al_error *err)
{
  al_autofree char *fp = enc(path);
  al_autofree char *ref = enc(c->rep->branch);
  al_autofree char *tail = al_strdup_printf("/repository/files/%s?ref=%s", fp, ref);
  struct gl_read r = {0};
  if (get(c, tail, true, false, &r, err) < 0)
    return -1;
  *out = r;
  if (r.st != L_PRESENT)
    return 0;
  const char *content = json_string_value(json_object_get(r.json, "content"));
  const char *e = json_string_value(json_object_get(r.json, "encoding"));
  size_t len = 0;
  char *text = NULL;
  if (content && e && !strcmp(e, "base64") && strlen(content) <= 2 * AL_WF_MAX_FILE)
    text = al_base64_decode_lines(content, strlen(content), &len);
  json_decref(r.json);
  out->json = text ? json_stringn(text, len) : NULL;
  free(text);
  if (!out->json) {
    out->st = L_UNKNOWN;
    snprintf(out->why, sizeof out->why, "GET .../repository/files/%s: not a base64 text file",
             path);
  }
  return 0;
}

static int gather_all(struct glx *c, al_error *err)
{
  if (gather_project(c, err) < 0)
    return -1;
  /* the branch must exist (Branches API › "Get single repository branch") */
  al_autofree char *be = enc(c->rep->branch);
  al_autofree char *bt = al_strdup_printf("/repository/branches/%s", be);
  struct gl_read br = {0};
  if (get(c, bt, true, false, &br, err) < 0)
    return -1;
  json_decref(br.json);
  if (br.st == L_ABSENT)
    return al_error_set(err, ENOENT, "branch `%s` not found in %s (GET %s%s: 404)", c->rep->branch,
                        c->o->repo, c->pp, bt);
  if (get(c, "/protected_branches?per_page=100", false, false, &c->pb, err) < 0 ||
      get(c, "/approvals", false, false, &c->approvals, err) < 0 ||
      get(c, "/approval_rules?per_page=100", false, false, &c->rules, err) < 0 ||
      get(c, "/push_rule", false, true, &c->push_rule, err) < 0 ||
      get(c, "/variables?per_page=100", false, false, &c->vars, err) < 0 ||
      get(c, "/deploy_tokens?per_page=100", false, false, &c->deploy, err) < 0)
    return -1;
  if (c->pb.st == L_PRESENT && !json_is_array(c->pb.json)) {
    c->pb.st = L_UNKNOWN;
    snprintf(c->pb.why, sizeof c->pb.why, "GET /protected_branches: not a list");
  }
  /* one page of 100 is read: a full page may hide the rest (a variable
   * not protected on page 2 must not pass), so it is unknown */
  one_page(&c->pb, "protected_branches");
  one_page(&c->vars, "variables");
  one_page(&c->deploy, "deploy_tokens");
  if (c->o->app_id > 0) {
    char t[64];
    snprintf(t, sizeof t, "/members/all/%lld", c->o->app_id);
    if (get(c, t, true, false, &c->member, err) < 0)
      return -1;
  }
  /* CODEOWNERS: GitLab looks in the root, docs/ and .gitlab/ and uses the
   * first it finds in that order ("Code Owners" § "CODEOWNERS file";
   * ee/lib/gitlab/code_owners.rb FILE_PATHS) */
  static const char *const co[] = {"CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS"};
  c->co.st = L_ABSENT;
  for (size_t i = 0; i < AL_ARRAY_SIZE(co) && c->co.st == L_ABSENT; i++) {
    snprintf(c->co_path, sizeof c->co_path, "%s", co[i]);
    if (get_file(c, co[i], &c->co, err) < 0)
      return -1;
  }
  if (!c->ci_external && get_file(c, c->ci_path, &c->ci, err) < 0)
    return -1;
  return gather_groups(c, err);
}

static void read_free(struct gl_read *r)
{
  json_decref(r->json);
  r->json = NULL;
}

int al_audit_gitlab_run(const al_audit_opts *o, al_audit_report *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  snprintf(out->forge, sizeof out->forge, "gitlab");
  out->n_crit = AL_AUDIT_GL_N;
  for (int i = 0; i < AL_AUDIT_GL_N; i++) {
    out->c[i].id = gl_meta[i].id;
    out->c[i].title = gl_meta[i].title;
    out->c[i].required = gl_meta[i].required;
    out->c[i].status = AL_AUDIT_UNKNOWN;
  }
  if (o->broker_config || o->grant)
    return al_error_set(err, EINVAL,
                        "the GitLab audit takes a read token (AIRLOCK_AUDIT_TOKEN), not the "
                        "broker's config or grant");
  if (!o->repo || strlen(o->repo) >= sizeof out->repo)
    return al_error_set(err, EINVAL, "GitLab project: missing or longer than %zu bytes",
                        sizeof out->repo - 1);
  struct glx c = {.o = o, .rep = out};
  char pe[600];
  if (al_gl_project_escape(o->repo, pe, sizeof pe, err) < 0)
    return -1;
  snprintf(c.pp, sizeof c.pp, "/projects/%s", pe);
  if (!o->api_url)
    return al_error_set(err, EINVAL,
                        "the GitLab audit needs the API URL (the policy's forge.api_url, "
                        "ending in /api/v4)");
  const char *why = NULL;
  if (al_api_url_check(o->api_url, &why) < 0)
    return al_error_set(err, EINVAL, "GitLab API URL `%s`: %s", o->api_url, why);
  if (!o->token)
    return al_error_set(err, EINVAL,
                        "no credentials: set AIRLOCK_AUDIT_TOKEN to a read token (read_api) of "
                        "a Maintainer of %s",
                        o->repo);
  if (o->branch && (!*o->branch || strlen(o->branch) >= sizeof out->branch))
    return al_error_set(err, EINVAL, "bad branch name");
  const char *pfx = o->run_prefix ? o->run_prefix : "airlock/";
  if (al_wf_run_prefix_check(pfx, &why) < 0)
    return al_error_set(err, EINVAL, "run branch prefix `%.80s`: %s", pfx, why);
  snprintf(out->run_prefix, sizeof out->run_prefix, "%s", pfx);
  al_glci_run_branch(pfx, c.run_branch, sizeof c.run_branch);
  snprintf(out->repo, sizeof out->repo, "%s", o->repo);
  snprintf(out->api_url, sizeof out->api_url, "%s", o->api_url);
  if (o->branch)
    snprintf(out->branch, sizeof out->branch, "%s", o->branch);
  if (o->app_slug)
    snprintf(out->app_slug, sizeof out->app_slug, "%s", o->app_slug);
  out->app_id = o->app_id;
  snprintf(out->credentials, sizeof out->credentials, "token from %s",
           o->token_source ? o->token_source : "the caller");
  c.tok = o->token;

  al_ghapi_opts go = {
      .ca_file = o->ca_file, .timeout_ms = o->timeout_ms, .user_agent = "airlock-audit/0.1"};
  int ret = -1;
  if (al_ghapi_open(o->api_url, &go, &c.api, err) < 0)
    goto out;
  if (o->resolve)
    al_ghapi_set_resolve(c.api, o->resolve);
  if (gather_all(&c, err) < 0)
    goto out;
  gl_judge_all(&c);
  au_tally(out);
  ret = 0;
out:;
  struct gl_read *rs[] = {&c.pb,   &c.approvals, &c.rules, &c.push_rule, &c.member,
                          &c.vars, &c.deploy,    &c.co,    &c.ci};
  for (size_t i = 0; i < AL_ARRAY_SIZE(rs); i++)
    read_free(rs[i]);
  for (size_t i = 0; i < c.n_groups; i++)
    read_free(&c.groups[i].vars);
  al_ghapi_free(c.api);
  if (ret < 0)
    al_audit_report_free(out);
  return ret;
}
