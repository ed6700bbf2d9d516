/* GitLab's per-run project access tokens and the run's merge request
 * (issue #30 items 1 and 3), over the one forge client (ghapi.h: one
 * libcurl setup, Authorization: Bearer, which GitLab takes for personal
 * and project access tokens; docs.gitlab.com "REST API authentication").
 * GitLab has no installation tokens: the broker holds a credential allowed
 * to create project access tokens (a Maintainer's) and mints one per run on
 * the one project. Pages followed: "Project access tokens API" (create,
 * revoke), "Personal access tokens API" (GET /personal_access_tokens/self,
 * which answers 401 for a revoked token), "Merge requests API" (create).
 * A token's value is never logged nor put in an error message. The seam's
 * GitLab driver (gitlab_ops.c) and the broker's GitLab mode (app.c) call
 * these. */
#ifndef AL_FORGE_GITLAB_H
#define AL_FORGE_GITLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/error.h"
#include "forge/ghapi.h"

/* A minted project access token. The value is a secret: al_gl_token_wipe. */
typedef struct al_gl_token {
  long long id;        /* the token's id, for DELETE .../access_tokens/:id */
  char value[256];     /* the secret, NUL-terminated */
  char expires_at[11]; /* YYYY-MM-DD as GitLab answered */
  int access_level;    /* as GitLab answered */
} al_gl_token;

void al_gl_token_wipe(al_gl_token *t);

/* The URL-encoded full path of project "group/sub/proj" for a REST path
 * ("group%2Fsub%2Fproj"; GitLab docs "Namespaced paths"), into out[0..cap).
 * Only [A-Za-z0-9._-] and '/' are accepted. Returns 0, -1 with err
 * (EINVAL) naming the project. */
int al_gl_project_escape(const char *project, char *out, size_t cap, al_error *err);

/* The day after now (UTC) as YYYY-MM-DD: GitLab's expiry granularity is a
 * day, and a token expires at the start of its expires_at day. */
void al_gl_expiry_tomorrow(time_t now, char out[11]);

/* Mint the run's token on project (full path): POST
 * /projects/:id/access_tokens with name, scopes (a NULL-terminated list,
 * at least one), access_level (30 Developer), expires_at. admin is the
 * broker's credential. Returns 0 with *out filled (201 and a token in the
 * answer), -1 with err naming the status and GitLab's message. */
int al_gl_token_mint(al_ghapi *c, const char *admin, const char *project, const char *name,
                     const char *const *scopes, int access_level, const char *expires_at,
                     al_gl_token *out, al_error *err);

/* Revoke t (DELETE /projects/:id/access_tokens/:token_id, 204; a 404 or a
 * 400 "already revoked" is not an error if the confirmation holds) and
 * confirm: GET /personal_access_tokens/self with the token must answer
 * 401. Returns 0 when confirmed, -1 with err (EIO: the revocation failed
 * or the token still answers). *confirmed_401 says whether the 401 came. */
int al_gl_token_revoke(al_ghapi *c, const char *admin, const char *project, const al_gl_token *t,
                       bool *confirmed_401, al_error *err);

/* Open the run's merge request: POST /projects/:id/merge_requests with
 * source_branch, target_branch, title ("Draft: " prepended when draft and
 * not already there), description, remove_source_branch true, and no
 * auto-merge. Returns 0 with *iid and web_url (may be NULL), -1 with err. */
int al_gl_mr_open(al_ghapi *c, const char *bearer, const char *project, const char *source,
                  const char *target, const char *title, const char *description, bool draft,
                  long long *iid, char *web_url, size_t web_cap, al_error *err);

/* The project's numeric id (GET /projects/:urlencoded-path, "Get a
 * single project"), with tok (a run's token): the gateway resolves the
 * agent's numeric-id requests to it. The answer's path_with_namespace must
 * be project (any case), its id a positive integer. 0 with *id, or -1 with
 * err (the status and GitLab's message; EPROTO for another project or no
 * id). Its ci_config_path ("Specify a custom CI/CD configuration file"; null
 * or absent: "") is copied to ci_path (ci_cap bytes, ci_path may be NULL):
 * printable ASCII, shorter than 256 bytes and than ci_cap, or EPROTO naming
 * the rule. */
int al_gl_project_id(al_ghapi *c, const char *tok, const char *project, unsigned long *id,
                     char *ci_path, size_t ci_cap, al_error *err);

/* What `user` (a GitLab username; the webhook payload's user.username,
 * asked about by name because that is what serve's queue row keeps) may
 * do on project `repo` (its full path, GROUP[/SUB...]/PROJECT), asked of
 * GitLab with tok (forge/gitlab_members.c): Users API "List users"
 * (GET /users?username=NAME) for the numeric id, then Project members API
 * "Get a member of a project, including inherited and invited members"
 * (GET /projects/:id/members/all/:user_id). access_level 50 Owner and 40
 * Maintainer are perm "admin", 30 Developer "write", 20 Reporter, 15
 * Planner and 10 Guest "read", 5 Minimal Access and anything lower
 * "none"; role (rn bytes) GitLab's name of it ("developer"). GitLab knows
 * no such user, or 404 (not a member): "none", role "". A member whose
 * `state` is not "active" (blocked, awaiting): "none", role "inactive".
 * perm n bytes (at least 6). -1 with err: EINVAL for a user that is not a
 * GitLab username, EPROTO for an answer of the wrong shape (the member's
 * id must be the one asked for), the client's errno otherwise. This is
 * al_forge_gitlab.user_permission. */
int al_gl_user_permission(al_ghapi *c, const char *tok, const char *repo, const char *user,
                          char *perm, size_t n, char *role, size_t rn, al_error *err);

#endif
