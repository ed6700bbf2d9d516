/* What the files of the workflow reader share (workflow.c: the YAML, the
 * triggers and the verdicts; workflow_jobs.c: what one job reaches and
 * the guards it carries). Not installed; see workflow.h. */
#ifndef AL_FORGE_WORKFLOW_INTERNAL_H
#define AL_FORGE_WORKFLOW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/yamlwalk.h"
#include "forge/workflow.h"

/* ---- a growing string ------------------------------------------------- */

struct wf_buf {
  char *s;
  size_t len, cap;
};
__attribute__((format(printf, 2, 3))) void wf_buf_add(struct wf_buf *b, const char *fmt, ...);
char *wf_buf_take(struct wf_buf *b); /* malloc'd ("" when empty); b is reset */

/* ---- YAML helpers ----------------------------------------------------- */

/* A plain value: a scalar that is not an alias. */
bool wf_is_scalar(struct fy_node *n);
/* The scalar's text, malloc'd (NUL-terminated), or NULL. */
char *wf_scalar(struct fy_node *n);
/* Is the scalar equal to s? */
bool wf_scalar_is(struct fy_node *n, const char *s);
/* The value of key in mapping m (*val may be NULL for `key:` alone);
 * false when m is not a mapping or has no such key. */
bool wf_get(struct fy_node *m, const char *key, struct fy_node **val);

/* ---- triggers --------------------------------------------------------- */

/* How a trigger relates to the run. */
enum wf_tclass {
  WF_T_PUSH = 0,  /* push of the run branch: runs the run's code */
  WF_T_PR,        /* pull_request from it: runs the run's code */
  WF_T_PRT,       /* pull_request_target: the base's code, with the base's secrets */
  WF_T_WFRUN,     /* workflow_run after a workflow that fired */
  WF_T_ON_COMMIT, /* check_run, check_suite, status on the run's commits */
  WF_T_TICKET,    /* issues, issue_comment: airlock writes on the ticket */
  WF_T_N
};

struct wf_fire {
  enum wf_tclass cls;
  char event[32];
  char how[320]; /* "push (branches-ignore [...] leaves airlock/1-0000000a)" */
};

/* One workflow file being judged. */
struct wf_file {
  const al_wf_file *f;
  al_yw yw;
  struct fy_node *root;
  char name[256]; /* its `name:`, else its path (what workflow_run names) */
  bool broken;
  char why[400];
  struct wf_fire fires[WF_T_N];
  size_t n_fires;
  struct wf_buf quiet; /* why each trigger does not fire, for the PASS evidence */
  /* workflow_run: the workflows it follows, and whether its branch filter
   * lets a run branch through */
  struct fy_node *wfrun;
  bool wfrun_branch_ok;
  char wfrun_how[200];
};

/* ---- jobs (workflow_jobs.c) ------------------------------------------- */

enum { WF_NO = 0, WF_YES = 1, WF_MAYBE = 2 };

/* What one job can reach when it runs for one trigger. */
struct wf_reach {
  bool runs_run_code; /* the run's code or text reaches the job */
  char code_how[160];
  int secrets;
  char secrets_what[200];
  int oidc, write;
  char perms_what[200];
  int runner;
  char runner_what[200];
  int gate; /* WF_YES: waits on an environment with required reviewers; WF_MAYBE: cannot tell */
  char gate_what[200];
  bool broken; /* the job itself could not be read */
  char broken_why[200];
};

struct wf_judge;

/* Does the job's `if:` keep it from running for this trigger? (the list
 * of guard spellings is in docs/audit.md). *what names the guard. */
bool wf_job_guarded(const al_wf_repo *repo, struct fy_node *job, enum wf_tclass cls,
                    const char *event, char *what, size_t n);

/* What job `id` of w reaches for trigger fire. files: every workflow of
 * the base branch (for a local reusable workflow). */
void wf_job_reach(const al_wf_repo *repo, struct wf_file *files, size_t n_files, struct wf_file *w,
                  struct fy_node *job, const struct wf_fire *fire, struct wf_reach *r);

#endif
