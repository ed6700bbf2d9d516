/* The forge gateway's default-deny request rules (issue #15, docs/gateway.md).
 *
 * ONE table (rules.c) of what the agent may ask the forge for; a request
 * matching no entry is refused with a reason. Each entry is a method, a
 * path template, the query parameters it admits (by name, read by the one
 * decoder of gateway/query.h), the token injected upstream and how its body
 * is read. The table's placeholders are bound per run by
 * al_gw_rules_init: {owner}/{repo} to the run's repository (matched
 * case-insensitively, as GitHub does), {repo.git} to the repository name
 * with or without ".git", {ticket} to the ticket number; {seg} is any one
 * segment, {rest} one or more. API templates are matched after the API
 * URL's prefix (e.g. /api/v3), git templates after the git URL's. */
#ifndef AL_GATEWAY_RULES_H
#define AL_GATEWAY_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "gateway/query.h"
#include "gateway/wire.h"
#include "net/http.h"

/* AL_GW_SIDE_TICKET: the ticket system's host (Jira, Linear; issue #31),
 * decided by gateway/rules_tickets.h, never by this table. */
typedef enum { AL_GW_SIDE_API = 1, AL_GW_SIDE_GIT = 2, AL_GW_SIDE_TICKET = 4 } al_gw_side;
typedef enum { AL_GW_TOKEN_GIT, AL_GW_TOKEN_TICKET } al_gw_token;

typedef enum {
  AL_GW_BODY_NONE,           /* no body allowed (GET) */
  AL_GW_BODY_PASS,           /* streamed through as it is, any Content-Encoding */
  AL_GW_BODY_RECEIVE_PACK,   /* the update request is parsed and checked (al_gw_check_push)
                                before a byte goes upstream; no Content-Encoding */
  AL_GW_BODY_COMMENT,        /* streamed through; counts against max_comments */
  AL_GW_BODY_GRAPHQL,        /* read whole (at most AL_GQL_BODY_MAX) and decided by
                                al_gql_check (graphql.h) before a byte goes upstream */
  AL_GW_BODY_JIRA_COMMENT,   /* read whole; {"body": ADF} flattened, rewritten by the safe-text
                                rules and rebuilt (rules_tickets.h); counts against max_comments */
  AL_GW_BODY_LINEAR_GRAPHQL, /* read whole and decided by al_gw_linear_check (rules_tickets.h);
                                its one commentCreate rewritten, counted against max_comments */
} al_gw_body;

/* How a route reads its query, once decoded (al_gw_query_decode: a name
 * given twice is refused on every route). A parameter whose name is not in
 * the rule's `params` is refused: "query-param-refused". */
typedef enum {
  AL_GW_QUERY_NONE,       /* no parameter at all (params NULL) */
  AL_GW_QUERY_LISTED,     /* the names in params, each optional */
  AL_GW_QUERY_SERVICE,    /* exactly service=git-upload-pack|git-receive-pack */
  AL_GW_QUERY_PULLS_HEAD, /* head=OWNER:<run branch>, required; the rest of params optional */
  AL_GW_QUERY_MR_SOURCE,  /* GitLab: source_branch=<run branch>, required (rules_gitlab.h) */
} al_gw_query;

typedef struct al_gw_rule {
  const char *name; /* in the decision line: "git-receive-pack", "api-issue", ... */
  unsigned sides;   /* AL_GW_SIDE_* */
  const char *method;
  const char *path; /* template, see above */
  al_gw_query query;
  const char *params; /* the parameter names it admits, space-separated, lower-case, as
                         its docs page lists them; NULL: none */
  al_gw_token token;
  al_gw_body body;
  bool needs_comments; /* present only when max_comments > 0 */
  const char *doc;     /* what it is for, and the spec page */
} al_gw_rule;

/* The table, for docs and tests. */
const al_gw_rule *al_gw_rule_table(size_t *n);

/* Is name one of the space-separated words of list (a route's `params`,
 * a GraphQL field's arguments)? Exact bytes, no case folding. */
bool al_gw_word_listed(const char *list, const char *name);

/* What every route's query check shares, whatever the vendor (GitHub,
 * GitLab, Jira): the decoder's own refusal (qp->why), then each parameter
 * name against the route's allow-list (none at all for AL_GW_QUERY_NONE),
 * then git smart HTTP's `service` (AL_GW_QUERY_SERVICE: exactly one
 * parameter, git-upload-pack or git-receive-pack; gitprotocol-http(5)).
 * true, or false with *reason ("query-param-refused", "bad-service-query"
 * or the decoder's) and *param (the name, or NULL). The vendor's own value
 * checks follow. */
bool al_gw_query_names_ok(const al_gw_rule *rule, const al_gw_qparams *qp, const char **reason,
                          const char **param);

/* The rules of one run. Plain data; copied freely. */
typedef struct al_gw_rules {
  char owner[128], name[128]; /* the repository, as given */
  char ticket[24];            /* decimal, no leading zero */
  char branch[240];           /* run branch, without refs/heads/ */
  char branch_ref[256];       /* "refs/heads/" + branch */
  char api_prefix[128];       /* "" or "/api/v3" (no trailing slash) */
  char git_prefix[128];
  unsigned max_comments;
} al_gw_rules;

/* Bind the table to one run. repo is "OWNER/REPO" (GitHub's characters:
 * [A-Za-z0-9._-], not "." or ".."), ticket the issue number, or 0 when
 * the ticket is not an issue of this forge (a Jira or Linear ticket):
 * then every route of an issue is refused ("other-ticket"), the run's
 * own number included; branch a valid ref name
 * under refs/heads/ (git-check-ref-format(1)), prefixes "" or "/seg[/seg]"
 * without trailing slash. Returns 0 or -1 with err (EINVAL, naming the
 * input). */
int al_gw_rules_init(al_gw_rules *r, const char *repo, unsigned long ticket, const char *branch,
                     unsigned max_comments, const char *api_prefix, const char *git_prefix,
                     al_error *err);

/* Decide one request: `sides` says what the connection's host serves,
 * path is canonical (al_gw_target_parse), qp the decoded query (NULL when
 * the target has none; a refused decoding refuses the request with its
 * reason, once the path matched a route). Returns the matching rule, or
 * NULL with a static reason in *reason: "graphql-refused",
 * "other-repository", "other-ticket", "write-refused" (a route that exists
 * read-only), "no-rule", a decoder's "query-*" reason,
 * "query-param-refused" (a name the route does not list),
 * "bad-service-query", "pulls-not-run-branch"; and for the query reasons
 * the parameter's decoded name in *param (into qp, printable), else NULL. */
const al_gw_rule *al_gw_match_q(const al_gw_rules *r, unsigned sides, const char *method,
                                size_t method_len, const char *path, const al_gw_qparams *qp,
                                const char **reason, const char **param);

/* al_gw_match_q over a raw query (may be NULL), decoded here: for tests,
 * fuzzers and callers that do not keep the decoded query. */
const al_gw_rule *al_gw_match(const al_gw_rules *r, unsigned sides, const char *method,
                              size_t method_len, const char *path, const char *query,
                              size_t query_len, const char **reason);

/* Check a push's update request: every command must create or update
 * exactly refs/heads/<run branch>. Returns 0, or -1 with *reason
 * ("push-delete", "push-tag", "push-other-branch", "push-other-ref",
 * "push-option-refused": any `git push -o` option, which GitLab acts on)
 * and *bad the index of the first refused command (0 for an option). */
int al_gw_check_push(const al_gw_rules *r, const al_rp_request *rq, const char **reason,
                     size_t *bad);

typedef enum {
  AL_GW_CRED_NONE,        /* no credential at all: answer 401 (git asks its helper) */
  AL_GW_CRED_PLACEHOLDER, /* exactly airlock's placeholder, in Authorization */
  AL_GW_CRED_FOREIGN,     /* anything else: refused, never forwarded */
} al_gw_cred;

/* Classify the request's credentials. Accepted: one Authorization field,
 * "Basic base64(user:PH)" (any user; git's credential helper) or
 * "Basic base64(PH:)", "token PH" or "Bearer PH" (gh, curl); compared in
 * constant time. Foreign (*why set): any other Authorization, two of them,
 * Proxy-Authorization, Cookie, a query parameter the decoder reads as a
 * credential (al_gw_query_name_is_credential; every parameter decoded
 * before a refused one is looked at). qp may be NULL (no query). */
al_gw_cred al_gw_credential_q(const al_http_request *req, const al_gw_qparams *qp,
                              const char *placeholder, const char **why);

/* al_gw_credential_q over a raw query (may be NULL), decoded here. */
al_gw_cred al_gw_credential(const al_http_request *req, const char *query, size_t query_len,
                            const char *placeholder, const char **why);

#endif
