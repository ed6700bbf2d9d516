/* The GitLab audit, the ci.* criteria: which jobs of the audited branch's
 * CI file run in a pipeline of a run branch or of its merge request
 * (forge/gitlab_ci.h), and what they reach there: the project's CI/CD
 * variables (an unprotected one reaches every branch's pipelines; a
 * protected one too when a protected-branch rule matches the run
 * branches), OIDC id_tokens, and the gitlab-deploy-token GitLab exposes to
 * every job ("Deploy tokens" § "GitLab deploy token"). Judged as GitHub's
 * ci.* are (forge/workflow.h): what the base branch's file runs for the
 * run's code before a human approves; a file the reader cannot follow is
 * UNKNOWN. Variable values are never read into the report. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "forge/audit_gitlab_internal.h"
#include "forge/gitlab_ci.h"

/* The jobs that may run for the run's code, named into ev; their count. */
static size_t firing(const al_glci *g, struct sb *ev, bool oidc_only)
{
  size_t n = 0;
  for (size_t i = 0; i < g->n_jobs; i++) {
    const al_glci_job *j = &g->jobs[i];
    if ((j->push == AL_GLCI_NO && j->mr == AL_GLCI_NO) || (oidc_only && !j->oidc))
      continue;
    n++;
    if (n <= 6)
      au_sb_part(ev, "job `%s` %s%s (%s)%s", j->name,
                 j->push == AL_GLCI_YES || j->mr == AL_GLCI_YES ? "runs" : "may run",
                 j->push != AL_GLCI_NO ? " in the run branch's pipeline" : " in the MR pipeline",
                 j->how, j->oidc ? ", with id_tokens" : "");
  }
  if (n > 6)
    au_sb_part(ev, "and %zu more", n - 6);
  return n;
}

/* One variable's reach. */
static void judge_secrets(struct glx *c, size_t n_fire, bool run_protected)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_VARIABLES | AL_AUDIT_FROM_GL_FILES | AL_AUDIT_FROM_GL_PROTECTED;
  if (c->vars.st != L_PRESENT || !json_is_array(c->vars.json)) {
    au_sb_part(&ev, "CI/CD variables: not visible (%s)",
               c->vars.st == L_UNKNOWN ? c->vars.why : "not a list");
    gl_set(c, AL_GL_CI_SECRETS, n_fire ? AL_AUDIT_UNKNOWN : AL_AUDIT_WARN, &ev,
           "audit with a Maintainer's read token: GitLab shows CI/CD variables to Maintainers "
           "(and keep them under 100: the audit reads one page)");
    return;
  }
  size_t unprot = 0, prot = 0, i;
  json_t *v;
  json_array_foreach(c->vars.json, i, v)
  {
    const char *k = au_str_or(json_string_value(json_object_get(v, "key")), "?");
    bool p = json_is_true(json_object_get(v, "protected"));
    bool m = json_is_true(json_object_get(v, "masked"));
    const char *scope = au_str_or(json_string_value(json_object_get(v, "environment_scope")), "*");
    if (!p || run_protected) {
      if (unprot + prot < 8)
        au_sb_part(&ev, "variable %s: %s%s, environment_scope %s", k,
                   p ? "protected" : "NOT protected",
                   m ? ", masked (masking hides it from the "
                       "log, not from the job)"
                     : "",
                   scope);
      p ? prot++ : unprot++;
    }
  }
  /* the groups' variables: inherited by the project's pipelines */
  bool groups_hidden = c->groups_cut;
  for (size_t g = 0; g < c->n_groups; g++) {
    const struct gl_group *gr = &c->groups[g];
    if (gr->vars.st != L_PRESENT) {
      au_sb_part(&ev, "%s: CI/CD variables not visible (%s)", gr->path, gr->vars.why);
      groups_hidden = true;
      continue;
    }
    size_t gn = 0;
    json_array_foreach(gr->vars.json, i, v)
    {
      const char *k = au_str_or(json_string_value(json_object_get(v, "key")), "?");
      bool p = json_is_true(json_object_get(v, "protected"));
      if (p && !run_protected)
        continue;
      au_sb_part(&ev, "%s's variable %s: %s (inherited by the project)", gr->path, k,
                 p ? "protected" : "NOT protected");
      p ? prot++ : unprot++;
      gn++;
    }
    if (!gn)
      au_sb_part(&ev, "%s: %zu CI/CD variable(s), none reaching a run branch", gr->path,
                 json_array_size(gr->vars.json));
  }
  if (c->groups_cut)
    au_sb_part(&ev, "the groups above: %s", c->groups_why);
  if (run_protected)
    au_sb_part(&ev,
               "a protected-branch rule matches %s: its pipelines get the protected "
               "variables too",
               c->run_branch);
  size_t reach = unprot + prot;
  if (!reach)
    au_sb_part(&ev, "%zu CI/CD variable(s), all protected: none reaches %s",
               json_array_size(c->vars.json), c->run_branch);
  /* a group's variables that cannot be read: a WARN naming them, not a
   * pass (a project Maintainer often cannot read its group's settings) */
  al_audit_status st = reach           ? (n_fire ? AL_AUDIT_FAIL : AL_AUDIT_WARN)
                       : groups_hidden ? AL_AUDIT_WARN
                                       : AL_AUDIT_PASS;
  if (reach && !n_fire)
    au_sb_part(&ev,
               "no job of %s's CI file runs for the run's code now, but any pipeline of "
               "a run branch would get these",
               c->rep->branch);
  gl_set(c, AL_GL_CI_SECRETS, st, &ev,
         !reach && groups_hidden
             ? "audit with a token that can read the groups' CI/CD variables (a group "
               "Maintainer's read_api), or check each group's Settings › CI/CD › Variables: "
               "every variable protected"
         : run_protected ? "Settings › Repository › Protected branches: remove the rule that "
                           "matches the run branches (they must not be protected), and protect "
                           "every variable"
                         : "Settings › CI/CD › Variables: turn on \"Protect variable\" for each "
                           "(protected variables reach only protected branches and tags)");
}

static void judge_oidc(struct glx *c, const al_glci *g)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_FILES;
  size_t n = firing(g, &ev, true);
  if (!n)
    au_sb_part(&ev, "no job that runs for the run's code has id_tokens");
  gl_set(c, AL_GL_CI_OIDC, n ? AL_AUDIT_FAIL : AL_AUDIT_PASS, &ev,
         "keep id_tokens: out of jobs that run for branches other than protected ones: add "
         "`rules: - if: $CI_COMMIT_REF_PROTECTED == \"true\"` to them (or `when: never` for "
         "the run prefix)");
}

static void judge_deploy(struct glx *c, size_t n_fire)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_DEPLOY | AL_AUDIT_FROM_GL_FILES;
  if (c->deploy.st != L_PRESENT || !json_is_array(c->deploy.json)) {
    au_sb_part(&ev, "deploy tokens: not visible (%s)",
               c->deploy.st == L_UNKNOWN ? c->deploy.why : "not a list");
    gl_set(c, AL_GL_CI_DEPLOY, n_fire ? AL_AUDIT_UNKNOWN : AL_AUDIT_WARN, &ev,
           "audit with a Maintainer's read token: GitLab shows deploy tokens to Maintainers");
    return;
  }
  bool live = false;
  size_t i;
  json_t *t;
  json_array_foreach(c->deploy.json, i, t)
  {
    const char *name = json_string_value(json_object_get(t, "name"));
    if (!name || strcmp(name, "gitlab-deploy-token") != 0 ||
        json_is_true(json_object_get(t, "revoked")) || json_is_true(json_object_get(t, "expired")))
      continue;
    al_autofree char *sc = json_dumps(json_object_get(t, "scopes"), JSON_COMPACT | JSON_ENCODE_ANY);
    au_sb_part(&ev,
               "deploy token gitlab-deploy-token (id %lld, scopes %s) is given to every job "
               "as CI_DEPLOY_USER / CI_DEPLOY_PASSWORD",
               (long long)json_integer_value(json_object_get(t, "id")), sc ? sc : "?");
    live = true;
  }
  if (!live)
    au_sb_part(&ev, "no active deploy token named gitlab-deploy-token (%zu deploy token(s))",
               json_array_size(c->deploy.json));
  gl_set(c, AL_GL_CI_DEPLOY,
         !live    ? AL_AUDIT_PASS
         : n_fire ? AL_AUDIT_FAIL
                  : AL_AUDIT_WARN,
         &ev,
         "Settings › Repository › Deploy tokens: revoke gitlab-deploy-token (or give it another "
         "name: only that name reaches CI jobs)");
}

/* All three the same: CI cannot run, or its file cannot be read. */
static void all_ci(struct glx *c, al_audit_status st, const char *evidence, const char *fix)
{
  static const al_audit_gl_id ids[] = {AL_GL_CI_SECRETS, AL_GL_CI_OIDC, AL_GL_CI_DEPLOY};
  for (size_t i = 0; i < AL_ARRAY_SIZE(ids); i++) {
    struct sb ev = {0};
    au_sb_add(&ev, "%s", evidence);
    c->from = AL_AUDIT_FROM_GL_PROJECT | AL_AUDIT_FROM_GL_FILES;
    gl_set(c, ids[i], st, &ev, fix);
  }
}

void gl_judge_ci(struct glx *c)
{
  if (c->ci_disabled) {
    all_ci(c, AL_AUDIT_PASS, "CI/CD is disabled for the project (builds_access_level disabled)",
           NULL);
    return;
  }
  if (c->ci_external) {
    char e[400];
    snprintf(e, sizeof e, "ci_config_path `%s` is another project's file or a URL: not read",
             c->ci_path);
    all_ci(c, AL_AUDIT_UNKNOWN, e,
           "keep the CI file in the project (Settings › CI/CD › General pipelines › CI/CD "
           "configuration file)");
    return;
  }
  if (c->ci.st == L_UNKNOWN) {
    char e[400];
    snprintf(e, sizeof e, "%s on %s: not visible (%s)", c->ci_path, c->rep->branch, c->ci.why);
    all_ci(c, AL_AUDIT_UNKNOWN, e, "give the audit a token that can read the repository");
    return;
  }
  al_glci g = {0};
  json_t *m = json_array();
  size_t i;
  json_t *e;
  json_array_foreach(c->pb.json, i, e)
  {
    const char *n = json_string_value(json_object_get(e, "name"));
    if (n && gl_branch_match(n, c->run_branch))
      json_array_append(m, e);
  }
  bool run_protected = json_array_size(m) > 0;
  json_decref(m);
  if (c->ci.st == L_PRESENT) {
    al_glci_ctx ctx = {.run_prefix = c->rep->run_prefix,
                       .target_branch = c->rep->branch,
                       .default_branch = c->default_branch,
                       .run_protected = run_protected};
    al_glci_read(&ctx, c->ci_path, json_string_value(c->ci.json), json_string_length(c->ci.json),
                 &g);
    if (g.broken) {
      all_ci(c, AL_AUDIT_UNKNOWN, g.why,
             "keep the CI file readable by the audit: no anchors, aliases or include:; "
             "extends: and rules: are followed");
      al_glci_free(&g);
      return;
    }
  }
  struct sb ev = {0};
  size_t n_fire = firing(&g, &ev, false);
  free(au_sb_take(&ev));
  if (c->ci.st == L_ABSENT && c->auto_devops)
    n_fire = 1; /* Auto DevOps runs its jobs for every branch */
  judge_secrets(c, n_fire, run_protected);
  judge_oidc(c, &g);
  judge_deploy(c, n_fire);
  /* the jobs that fire, for the reader of each verdict */
  struct sb jobs = {0};
  size_t nj = firing(&g, &jobs, false);
  if (!nj)
    au_sb_part(&jobs, "%s",
               c->ci.st == L_ABSENT
                   ? (c->auto_devops ? "no CI file, but Auto DevOps is on"
                                     : "no CI file on the branch: no pipeline runs")
                   : "no job of the CI file runs for the run's code");
  if (g.workflow[0])
    au_sb_part(&jobs, "%s", g.workflow);
  al_autofree char *jt = au_sb_take(&jobs);
  static const al_audit_gl_id ids[] = {AL_GL_CI_SECRETS, AL_GL_CI_DEPLOY};
  for (size_t k = 0; k < AL_ARRAY_SIZE(ids); k++) {
    al_audit_criterion *cr = &c->rep->c[ids[k]];
    char *x = al_strdup_printf("%s; %s: %s", cr->evidence, c->ci_path, jt);
    free(cr->evidence);
    cr->evidence = x;
  }
  al_glci_free(&g);
}
