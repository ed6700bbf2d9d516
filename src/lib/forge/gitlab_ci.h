/* A project's .gitlab-ci.yml, read as GitLab CI/CD would run it for
 * airlock's output: which jobs of the audited branch's file would run in a
 * branch pipeline for a push of a run branch (`PREFIX<ticket>-<run>`) and
 * in a merge request pipeline from it into the target branch, and which of
 * those carry OIDC tokens (`id_tokens:`). The ci.* criteria of the GitLab
 * audit (forge/audit_gitlab.h, docs/audit.md "GitLab").
 *
 * Follows docs.gitlab.com "CI/CD YAML syntax reference" (workflow:rules,
 * rules:if / when, only / except with refs and variables, extends,
 * default, id_tokens, include, hidden jobs `.name`), "CI/CD job rules"
 * (the first matching rule decides; `when: never`), "CI/CD expressions"
 * (`$VAR`, `==`, `!=`, `=~`, `!~`, `null`, `&&` before `||`, parentheses)
 * and "Predefined CI/CD variables" (CI_PIPELINE_SOURCE push or
 * merge_request_event, CI_COMMIT_BRANCH, CI_COMMIT_REF_NAME,
 * CI_DEFAULT_BRANCH, CI_MERGE_REQUEST_SOURCE/TARGET_BRANCH_NAME,
 * CI_COMMIT_TAG). Regular expressions (RE2 on GitLab) are matched with
 * POSIX extended ones after mapping \d, \w, \s and \/; a pattern outside
 * that subset is "may match". A run branch is judged by one sample name,
 * PREFIX "7-0123abcd".
 *
 * Everything in the file is repository content (hostile): a file that
 * cannot be parsed, uses anchors or aliases, or includes other files
 * (`include:`, which this reader does not follow) is unreadable, never
 * quiet; a condition the reader cannot decide (a variable of the project,
 * `changes:`, `exists:`) counts as may-run. Pure: no I/O. */
#ifndef AL_FORGE_GITLAB_CI_H
#define AL_FORGE_GITLAB_CI_H

#include <stdbool.h>
#include <stddef.h>

/* Does a job run? */
enum { AL_GLCI_NO = 0, AL_GLCI_YES = 1, AL_GLCI_MAYBE = 2 };

typedef struct al_glci_job {
  char *name;    /* the job's key */
  int push;      /* AL_GLCI_*: in the run branch's branch pipeline */
  int mr;        /* AL_GLCI_*: in the merge request pipeline from it */
  bool oidc;     /* id_tokens: on the job, an extended template or default: */
  char how[240]; /* why it runs ("no rules: only branches and tags (the default)") */
} al_glci_job;

typedef struct al_glci {
  bool broken; /* the file could not be read: every verdict on it is unknown */
  char why[400];
  al_glci_job *jobs; /* every job that is not hidden (`.name`) */
  size_t n_jobs;
  char workflow[240]; /* what workflow:rules decided, or "" */
} al_glci;

/* What the reader needs of the project. */
typedef struct al_glci_ctx {
  const char *run_prefix;     /* "airlock/" */
  const char *target_branch;  /* the merge requests' target (the audited branch) */
  const char *default_branch; /* the project's default branch (CI_DEFAULT_BRANCH) */
  bool run_protected;         /* a protected-branch rule matches the run branches */
} al_glci_ctx;

/* Read text[0..len) (path names it in messages) into *out (al_glci_free).
 * Never fails: an unreadable file is out->broken with out->why. */
void al_glci_read(const al_glci_ctx *ctx, const char *path, const char *text, size_t len,
                  al_glci *out);

void al_glci_free(al_glci *g);

/* The sample run branch for prefix into out[n] (PREFIX "7-0123abcd"). */
void al_glci_run_branch(const char *prefix, char *out, size_t n);

/* Does GitLab's regular expression `/re/flags` (the slashes included)
 * match s? AL_GLCI_MAYBE when the pattern is outside the subset above. */
int al_glci_regex_match(const char *re, const char *s);

#endif
