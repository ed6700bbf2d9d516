/* The forge seam: what airlock needs from a code host, behind one table of
 * function pointers (al_forge_ops), one driver per forge. GitHub is the
 * first driver (forge/github.c); a second forge is a new driver file (or
 * folder) and one line in forge/forge.c's table, not edits in the callers.
 * The policy's `forge.kind` (forge/names.h al_forge_kind, default github)
 * picks the driver for a run; the broker and `airlock serve` use the
 * driver of their forge (github until their configs name a kind).
 *
 * Scope: code hosting only (a repository, its branches, its pull or merge
 * requests, its people and tokens, its webhooks). The ticket system is a
 * seam of its own (src/lib/tickets/); where the ticket is an issue of the
 * same forge, its driver wraps this one's issue_get, issue_comments and
 * issue_comment.
 *
 * Conventions, every operation:
 *   - `c` is the one forge HTTP client (forge/ghapi.h: retries, rate
 *     limits, redirects under the API base, body cap), opened on the
 *     forge's API URL; `tok` the bearer the caller holds for the call (a
 *     run's git or ticket token, a read token), never logged;
 *   - `repo` is OWNER/REPO already checked (forge/names.h); numbers are
 *     the forge's own (issue, pull request);
 *   - the forge's answers are untrusted: a driver returns only the fields
 *     named below, checked for type, in a JSON value the caller owns
 *     (json_decref); strings may still hold anything (callers render them
 *     through common/safetext.h before posting them anywhere);
 *   - returns 0, or -1 with err naming the method, the path and the
 *     forge's answer (al_ghapi_describe), errno EPROTO for an answer of
 *     the wrong shape, the client's errno for a transport failure. */
#ifndef AL_FORGE_FORGE_H
#define AL_FORGE_FORGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "forge/ghapi.h"
#include "forge/names.h"

/* A pull (merge) request to open: the supervisor's one output. The
 * driver opens it with nobody allowed to change it but its author
 * (GitHub: maintainer_can_modify false). */
typedef struct al_forge_pr_req {
  const char *title; /* already made inert (common/safetext.h) */
  const char *body;
  const char *head; /* the run's branch */
  const char *base; /* the branch it targets */
} al_forge_pr_req;

/* The kinds of text on a pull request (al_forge_ops.pr_texts). */
enum { AL_FORGE_PR_COMMENTS, AL_FORGE_PR_REVIEWS, AL_FORGE_PR_REVIEW_COMMENTS };

typedef struct al_forge_ops {
  const char *kind; /* "github", "gitlab": al_forge_kind_names[] */

  /* ---- the repository ---- */
  /* The repository's default branch into out (n bytes). */
  int (*default_branch)(al_ghapi *c, const char *tok, const char *repo, char *out, size_t n,
                        al_error *err);
  /* Branch `branch`: *exists, and its head commit's id into sha (n bytes,
   * "" when the forge gave none). A missing branch is not an error. */
  int (*branch_head)(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                     bool *exists, char *sha, size_t n, al_error *err);

  /* ---- pull requests ---- */
  /* The pull requests (open or closed) whose head is exactly `branch` of
   * this repository: *prs an array of {number: int, url: str|null, head:
   * str, state: str ("open", "closed", or "" when the forge gave none)}. -1 when the list could not
   * be read whole. */
  int (*prs_from_branch)(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                         json_t **prs, al_error *err);
  /* The open pull requests, at most max: *prs as above. On -1 *prs holds
   * what was read (the caller decides whether a part is enough). */
  int (*prs_open)(al_ghapi *c, const char *tok, const char *repo, size_t max, json_t **prs,
                  al_error *err);
  /* Open the pull request: *pr {number: int, url: str|null}. */
  int (*pr_open)(al_ghapi *c, const char *tok, const char *repo, const al_forge_pr_req *req,
                 json_t **pr, al_error *err);

  /* ---- a pull request read back for the review notes (ticket/ticket_review.c) ----
   * Lists stop at max items; a list that is cut (max reached while the
   * forge has more) or fails part way is -1 with err saying where, and
   * *out still holds what was read. */
  /* The pull request whose head is exactly `branch`, with what the review
   * reads of it: *pr {number: int, url: str|null, title: str|null, body:
   * str|null, base: str|null (its base branch), head_sha: str|null,
   * base_sha: str|null, changed_files: int|null}, or NULL when there is
   * none. -1 when the list could not be read whole (*pr is the one found
   * in what was read, or NULL). */
  int (*pr_for_review)(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                       json_t **pr, al_error *err);
  /* Its changed files: *files an array of {filename: str, status: str|null,
   * previous_filename: str (renames only), patch: str (where the forge
   * gives a diff), sha: str|null (the file's blob in the head),
   * additions: int|null, deletions: int|null}. */
  int (*pr_files)(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                  json_t **files, al_error *err);
  /* The whole tree of commit `sha`: *tree {path: {mode: str ("100644",
   * "100755", "120000", "160000", "040000"), type: str ("blob", "tree",
   * "commit"), sha: str|null}}; *truncated when the forge says it cut the
   * tree (then *tree holds what it gave). */
  int (*tree)(al_ghapi *c, const char *tok, const char *repo, const char *sha, json_t **tree,
              bool *truncated, al_error *err);
  /* The bytes of blob `sha` (40 or 64 lower-case hex, else EINVAL), at
   * most max bytes (a larger one is -1, EFBIG): *out malloc'd (a NUL
   * follows the *len bytes), the caller frees. */
  int (*blob)(al_ghapi *c, const char *tok, const char *repo, const char *sha, size_t max,
              char **out, size_t *len, al_error *err);
  /* Its commits, oldest first: *commits an array of {sha: str|null,
   * message: str|null, author: str ("NAME <EMAIL>"), committer: str}. */
  int (*pr_commits)(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                    json_t **commits, al_error *err);
  /* The texts people (or agents) wrote on it, one kind at a time:
   * AL_FORGE_PR_COMMENTS its conversation, AL_FORGE_PR_REVIEWS review
   * bodies, AL_FORGE_PR_REVIEW_COMMENTS comments on lines of its diff:
   * *items an array of {body: str|null, path: str (a review comment's
   * file)}. A forge without that kind gives an empty array. */
  int (*pr_texts)(al_ghapi *c, const char *tok, const char *repo, long long number, int kind,
                  size_t max, json_t **items, al_error *err);
  /* Post one comment on it (the review notes; body already made inert):
   * *comment {id: int|null, url: str|null}. */
  int (*pr_comment)(al_ghapi *c, const char *tok, const char *repo, long long number,
                    const char *body, json_t **comment, al_error *err);

  /* ---- the ticket, when it is an issue of this forge ---- */
  /* Issue `number`: *issue {title: str, body: str, author: str, state:
   * str}; an issue that does not exist is -1 with ENOENT. */
  int (*issue_get)(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                   json_t **issue, al_error *err);
  /* Its comments, oldest first, at most max: *comments an array of {id:
   * int, author: str, body: str, url: str|null}. */
  int (*issue_comments)(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                        size_t max, json_t **comments, al_error *err);
  /* Post one comment (body already made inert): *comment {id: int|null,
   * url: str|null}. */
  int (*issue_comment)(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                       const char *body, json_t **comment, al_error *err);

  /* ---- people ---- */
  /* What `user` may do on the repository: perm (n bytes) one of admin,
   * write, read, none (a user the forge does not know: none); role (rn
   * bytes) the forge's own name of the role, or "". `user` is the forge's
   * login / username as the webhook's payload named it (GitHub's login, a
   * GitLab username: the driver resolves it to GitLab's numeric id). */
  int (*user_permission)(al_ghapi *c, const char *tok, const char *repo, const char *user,
                         char *perm, size_t n, char *role, size_t rn, al_error *err);

  /* ---- tokens ---- */
  /* Revoke a run's token with the token itself and confirm it dead
   * (*revoked: the forge took the revocation or already refused the
   * token; *confirmed: a read with it then answers 401, a few tries
   * within c's deadline). Never fails otherwise: error (n bytes) says
   * what did not happen. For the supervisor when the broker cannot
   * confirm (broker/direct.h). */
  void (*token_revoke)(al_ghapi *c, const char *token, bool *revoked, bool *confirmed, char *error,
                       size_t n);

  /* ---- webhooks (airlock serve) ---- */
  const char *webhook_signature_header; /* "X-Hub-Signature-256" */
  /* Check the delivery's signature header value against the raw body
   * with the webhook secret (constant time). 0 when it matches; -1 with
   * err (EACCES) naming what was wrong: missing, malformed, not matching. */
  int (*webhook_verify)(const void *secret, size_t secret_len, const char *header, const void *body,
                        size_t len, al_error *err);
} al_forge_ops;

/* The driver of a kind (never NULL for a value of al_forge_kind). */
const al_forge_ops *al_forge_ops_of(al_forge_kind kind);

/* The driver named `kind` ("github"), or NULL with err naming `field` (the
 * config key it came from, e.g. "forge.kind") and the kinds there are. */
const al_forge_ops *al_forge_ops_find(const char *kind, const char *field, al_error *err);

/* The GitHub driver (forge/github.c): GitHub REST 2022-11-28 and the
 * GitHub Enterprise Server /api/v3 paths; each operation names its REST
 * page. Exposed so that the tickets seam's GitHub driver can wrap the
 * issue operations. */
extern const al_forge_ops al_forge_github;

/* The GitLab driver (forge/gitlab_ops.c): GitLab REST v4 (api_url ends in
 * /api/v4), the project by its URL-encoded full path, the merge request's
 * iid as the number; user_permission asks the Project members API by the
 * username (forge/gitlab.h al_gl_user_permission, forge/gitlab_members.c:
 * the user's numeric id looked up first, its access level mapped onto
 * admin / write / read / none). The review's reads are forge/gitlab_review.c's: pr_for_review the
 * MR list by source_branch then the single MR (diff_refs head_sha/base_sha — the merge base —,
 * changes_count; "1000+" is null), pr_files "List merge request diffs"
 * (new_file/deleted_file/renamed_file/a_mode,b_mode give added/removed/renamed/changed/modified,
 * the diff is the patch unless GitLab cut it or it is binary, additions and deletions counted from
 * it, sha null: the head tree has it), tree the recursive repository tree (git's modes, types
 * blob/tree/commit; *truncated only when the driver's cap of 100000 entries stops it), blob the
 * base64 blob answer, pr_commits the MR's commits reversed to oldest first, pr_texts the MR's notes
 * (system notes and DiffNotes skipped), the discussions' DiffNotes
 * (position.new_path, else old_path) and no reviews (GitLab's approvals
 * have no body), pr_comment a note (url the MR's web_url + "#note_ID"). Their max counts what
 * GitLab lists (notes, discussions), skipped ones included. */
extern const al_forge_ops al_forge_gitlab;

/* The GitHub driver's webhook_verify (forge/github_hook.c, pure: the
 * service's fuzzed parser links it without the HTTP client). */
int al_github_webhook_verify(const void *secret, size_t secret_len, const char *header,
                             const void *body, size_t len, al_error *err);

#endif
