/* What the GitLab audit's files share (audit_gitlab.c: the run and the
 * reads; audit_gitlab_judge.c: the verdicts). Not installed; see
 * audit_gitlab.h for the public contract. */
#ifndef AL_FORGE_AUDIT_GITLAB_INTERNAL_H
#define AL_FORGE_AUDIT_GITLAB_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "forge/audit.h"
#include "forge/audit_internal.h"
#include "forge/ghapi.h"

/* One read: known (answered 200, or an answer that means "none"), or why not. */
struct gl_read {
  enum layer_state st; /* L_ABSENT, L_PRESENT, L_UNKNOWN */
  char why[320];       /* L_UNKNOWN: "HTTP 403: 403 Forbidden" */
  json_t *json;        /* L_PRESENT: the answer */
};

struct glx {
  const al_audit_opts *o;
  al_audit_report *rep;
  al_ghapi *api;
  const char *tok;
  char pp[700];        /* "/projects/group%2Fproject" */
  char run_branch[96]; /* the sample run branch (forge/gitlab_ci.h) */
  char default_branch[256];
  bool ci_disabled;  /* builds_access_level "disabled" (or jobs_enabled false) */
  bool auto_devops;  /* auto_devops_enabled */
  char ci_path[256]; /* ci_config_path, ".gitlab-ci.yml" by default */
  bool ci_external;  /* ci_config_path in another project or a URL */

  struct gl_read pb; /* protected branches (the list) */
  struct gl_read approvals, rules, push_rule, member, vars, deploy;
  struct gl_read co; /* CODEOWNERS: json is a string, the text */
  char co_path[32];
  struct gl_read ci; /* the CI file: json is a string, the text */

  /* the groups above the project (namespace kind "group", then each
   * parent_id): their CI/CD variables reach the project's pipelines too */
  struct gl_group {
    long long id;
    char path[256];      /* full_path, or "group ID" */
    struct gl_read vars; /* GET /groups/:id/variables */
  } groups[20];
  size_t n_groups;
  bool groups_cut; /* more than 20 levels, or a group could not be read */
  char groups_why[320];

  unsigned from; /* AL_AUDIT_FROM_* of the criterion being judged */
};

/* Does GitLab's protected-branch name (`*` wildcards) match branch? */
bool gl_branch_match(const char *pattern, const char *branch);

/* Criterion id gets status st, the evidence from ev, the fix unless it
 * passed, and the reads c->from it rests on (then cleared). */
void gl_set(struct glx *c, al_audit_gl_id id, al_audit_status st, struct sb *ev, const char *fix);

/* Every criterion from what was read (audit_gitlab_judge.c). */
void gl_judge_all(struct glx *c);

/* The ci.* criteria (audit_gitlab_ci.c): the CI file through
 * forge/gitlab_ci.h, the variables and deploy tokens. */
void gl_judge_ci(struct glx *c);

#endif
