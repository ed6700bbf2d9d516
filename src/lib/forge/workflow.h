/* The repository's CI, read as GitHub Actions would run it for airlock's
 * output: which workflows of the base branch fire for a push to a run
 * branch (`PREFIX<ticket>-<run>`) or for a pull request from one into the
 * base branch, and what each firing job could reach before a human
 * approves. The `ci.*` criteria of `airlock audit` (docs/audit.md).
 *
 * Follows GitHub Docs "Events that trigger workflows", "Workflow syntax
 * for GitHub Actions" (on.<push|pull_request|pull_request_target>.
 * <branches|branches-ignore|tags|tags-ignore|paths|paths-ignore>, types,
 * on.workflow_run.<workflows|branches>, jobs.<id>.<if|permissions|
 * environment|runs-on|uses|secrets|strategy>), "Reusing workflows",
 * "Controlling permissions for GITHUB_TOKEN", "Managing environments for
 * deployment" (required reviewers) and "About GitHub-hosted runners"
 * (the labels). Branch filters are judged exactly against every run
 * branch (wfglob.h); a `paths` filter is taken as firing (the agent may
 * change any path).
 *
 * Everything in a workflow file is repository content (hostile): a file
 * that cannot be parsed, or uses what the reader does not follow (anchors
 * and aliases), is UNKNOWN, never quiet. Pure: no I/O. */
#ifndef AL_FORGE_WORKFLOW_H
#define AL_FORGE_WORKFLOW_H

#include <stdbool.h>
#include <stddef.h>

/* The largest workflow file read (GitHub's contents API returns files up
 * to 1 MB with their content). */
#define AL_WF_MAX_FILE (1u << 20)

typedef enum al_wf_status {
  AL_WF_PASS = 0,
  AL_WF_WARN = 1,
  AL_WF_FAIL = 2,
  AL_WF_UNKNOWN = 3,
} al_wf_status;

/* The criteria, in report order (ids in al_wf_crit_id). */
typedef enum al_wf_crit {
  AL_WF_C_SECRETS = 0, /* ci.no_secrets */
  AL_WF_C_OIDC,        /* ci.no_oidc */
  AL_WF_C_TOKEN,       /* ci.read_only_token */
  AL_WF_C_RUNNER,      /* ci.hosted_runners */
  AL_WF_C_PRIVATE,     /* ci.private_quiet */
  AL_WF_C_BASE,        /* ci.base_context */
  AL_WF_C_N
} al_wf_crit;

typedef enum al_wf_level {
  AL_WF_LEVEL_UNKNOWN = 0,
  AL_WF_LEVEL_READ,
  AL_WF_LEVEL_WRITE,
} al_wf_level;

typedef enum al_wf_visibility {
  AL_WF_VIS_UNKNOWN = 0,
  AL_WF_VIS_PUBLIC,
  AL_WF_VIS_PRIVATE, /* private or internal: the runner can take the source out */
} al_wf_visibility;

/* One workflow file of the base branch. text NULL: it could not be read
 * (why says so). */
typedef struct al_wf_file {
  const char *path; /* ".github/workflows/ci.yml" */
  const char *text;
  size_t len;
  const char *why;
} al_wf_file;

/* One deployment environment (GET /repos/{o}/{r}/environments). */
typedef struct al_wf_env {
  const char *name;
  bool reviewers; /* a required_reviewers protection rule with at least one reviewer */
} al_wf_env;

/* What the audit read about the repository. */
typedef struct al_wf_repo {
  const char *run_prefix;  /* the policy's review.branch_prefix, "airlock/" */
  const char *base_branch; /* the pull requests' base */
  al_wf_visibility visibility;
  bool actions_disabled;     /* GET .../actions/permissions: enabled false (nothing runs) */
  al_wf_level default_perms; /* GET .../actions/permissions/workflow */
  const char *perms_why;     /* why default_perms is unknown */
  bool can_approve;          /* can_approve_pull_request_reviews */
  bool files_known;          /* the workflows directory was listed (absent counts as known) */
  const char *files_why;
  const al_wf_file *files;
  size_t n_files;
  bool envs_known;
  const char *envs_why;
  const al_wf_env *envs;
  size_t n_envs;
} al_wf_repo;

typedef struct al_wf_verdict {
  al_wf_status status;
  char *evidence; /* malloc'd, never NULL after al_wf_judge */
  char *fix;      /* malloc'd when status is not PASS, else NULL */
} al_wf_verdict;

/* A run branch prefix as the policy's review.branch_prefix allows it: 2
 * to 64 bytes of letters, digits, / - _ ., ending in `/`, not starting
 * with `/`, no `..` or `//`. 0, or -1 with a static *why. */
int al_wf_run_prefix_check(const char *s, const char **why);

/* "ci.no_secrets" ... for a criterion; its one-line title. */
const char *al_wf_crit_id(al_wf_crit c);
const char *al_wf_crit_title(al_wf_crit c);

/* Judge every ci.* criterion for repo into out[AL_WF_C_N] (free with
 * al_wf_verdicts_free). Evidence names each firing workflow file, the
 * trigger, the job and what it could reach; the fix the smallest remedy
 * (`branches-ignore: ['PREFIX**']`, an environment with required
 * reviewers, a job guard from the list in docs/audit.md). Never fails. */
void al_wf_judge(const al_wf_repo *repo, al_wf_verdict out[AL_WF_C_N]);

void al_wf_verdicts_free(al_wf_verdict v[AL_WF_C_N]);

#endif
