/* The forge gateway's default-deny rules for GitLab (issue #30 item 2).
 *
 * The same promise as rules.h for GitHub, in GitLab's shapes: one table
 * (rules_gitlab.c) of al_gw_rule entries, matched against the raw request
 * path, because GitLab's REST API v4 names a project by its numeric id or
 * by its URL-encoded full path ("group%2Fsub%2Fproj", GitLab docs "REST
 * API: Namespaced paths"), and a file or a branch the same way
 * ("repository/files/src%2Fmain.c"), which al_gw_target_parse refuses as
 * an encoded separator everywhere. Here an encoded '/' is read only in the
 * segments a route declares encoded ({project}, {file}, {branch}); each is
 * decoded once, strictly, and checked whole: {project} must be the run's
 * project (its full path without case, or its numeric id), {file} a
 * relative path without empty, "." or ".." pieces, {branch} a valid branch
 * name. Every other segment is read as GitHub's are (no %2F, %2E, %5C, no
 * control byte, no dot segment). Templates: {project}, {ticket} (the
 * issue's iid), {file}, {branch}, {seg} (any one plain segment); on the git
 * side {project.git} is the project's full path as plain segments, with or
 * without ".git" (gitprotocol-http(5), as GitLab serves it). API templates
 * are matched after the API URL's prefix ("/api/v4"), git templates after
 * the git URL's. GraphQL (/api/graphql) is refused. */
#ifndef AL_GATEWAY_RULES_GITLAB_H
#define AL_GATEWAY_RULES_GITLAB_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "gateway/query.h"
#include "gateway/rules.h"
#include "net/http.h"

/* The GitLab table, for docs and tests. */
const al_gw_rule *al_gw_gl_rule_table(size_t *n);

/* The rules of one GitLab run. Plain data. base holds the ticket (the
 * issue's iid), the run branch, the prefixes and max_comments (its
 * owner/name are the project's last two path pieces, for the refusal
 * texts); al_gw_check_push(&r->base, ...) checks a push. */
typedef struct al_gw_gl_rules {
  al_gw_rules base;
  char project[256];   /* full path "group/sub/proj", as given */
  char project_id[24]; /* decimal, no leading zero */
  size_t project_segs; /* pieces of project */
} al_gw_gl_rules;

/* Bind the table to one run. project is GitLab's full path: 2 to 20
 * pieces of [A-Za-z0-9._-] (not "." or "..", not starting with '-' or
 * '.', not ending in ".git"), joined by '/', at most 255 bytes; project_id
 * >= 1; issue_iid the issue's iid, or 0 when the ticket is no issue of
 * this project (Jira, Linear: no issue route is served); branch a valid
 * branch name; prefixes as for
 * al_gw_rules_init (api_prefix usually "/api/v4"). Returns 0 or -1 with err
 * (EINVAL, naming the input). */
int al_gw_gl_rules_init(al_gw_gl_rules *r, const char *project, unsigned long project_id,
                        unsigned long issue_iid, const char *branch, unsigned max_comments,
                        const char *api_prefix, const char *git_prefix, al_error *err);

/* Decide one request. path[0..path_len) is the raw path of the target
 * (origin-form, without '?' and the query); qp the decoded query (NULL:
 * none). Returns the matching rule, or NULL with a static reason in
 * *reason: a path reason ("target-not-origin-form", "path-empty-segment",
 * "path-dot-segment", "path-encoded-separator" (an encoded '/', '.' or '\'
 * outside an encoded segment), "path-bad-escape", "path-backslash",
 * "target-too-long", "bad-file-path", "bad-branch-name"), "graphql-refused",
 * "other-project", "other-ticket", "write-refused", "no-rule", a query
 * reason as al_gw_match_q's ("query-param-refused", "bad-service-query",
 * "mr-not-run-branch": a merge request list not of source_branch=<run
 * branch>), with *param the parameter concerned or NULL. */
const al_gw_rule *al_gw_gl_match(const al_gw_gl_rules *r, unsigned sides, const char *method,
                                 size_t method_len, const char *path, size_t path_len,
                                 const al_gw_qparams *qp, const char **reason, const char **param);

/* Classify a GitLab request's credentials (GitLab docs "REST API
 * authentication", "Git over HTTP"). Accepted, in constant time, exactly
 * one of: "PRIVATE-TOKEN: PH", "JOB-TOKEN: PH", "Authorization: Bearer PH",
 * "Authorization: Basic base64(user:PH)" (git's credential helper; GitLab
 * ignores the user name). Foreign (*why "foreign-credential"): any other
 * value in those fields, two credential fields (even both the
 * placeholder), Cookie, Proxy-Authorization, any other Authorization
 * scheme, a credential in the query (private_token, job_token,
 * access_token, or one al_gw_query_name_is_credential names). qp may be
 * NULL. The fields are never forwarded: the gateway sends its own. */
al_gw_cred al_gw_gl_credential(const al_http_request *req, const al_gw_qparams *qp,
                               const char *placeholder, const char **why);

/* Whether a request field is one of GitLab's credential fields
 * (PRIVATE-TOKEN, JOB-TOKEN, Authorization): dropped from what is
 * forwarded. */
bool al_gw_gl_header_is_credential(const al_http_header *h);

#endif
