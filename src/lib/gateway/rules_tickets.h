/* The gateway's rules for the ticket system's host (issue #31,
 * docs/gateway.md "The ticket host"): the run may read its one ticket and
 * that ticket's comments, and post at most max_comments comments on it,
 * each rewritten by the safe-text rules; every other path, method, GraphQL
 * operation, field or argument is refused with its reason. Vendors:
 *   - Jira Cloud REST v3 (rules_jira.c): GET /rest/api/3/issue/{key},
 *     GET /rest/api/3/issue/{key}/comment[/{id}], POST
 *     /rest/api/3/issue/{key}/comment {"body": ADF};
 *   - Linear GraphQL (rules_linear.c): POST /graphql holding either one
 *     `query` whose one top-level field is issue(id: KEY) with fields of a
 *     fixed table below it, or one `mutation` whose one field is
 *     commentCreate(input: $var) with the variable exactly {"issueId": KEY,
 *     "body": STRING}.
 * {key} is the ticket's key ("PROJ-7") or its id as the vendor gave it
 * (Jira's numeric id, Linear's UUID), exactly. The credential rule is the
 * forge's (al_gw_credential_q: the placeholder only). Pure; fuzzed. */
#ifndef AL_GATEWAY_RULES_TICKETS_H
#define AL_GATEWAY_RULES_TICKETS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/safetext.h"
#include "gateway/graphql.h"
#include "gateway/query.h"
#include "gateway/rules.h"

typedef struct al_gw_tk_rules {
  int kind;         /* 1 jira, 2 linear (tickets/tickets.h al_tk_kind) */
  char key[48];     /* "PROJ-7", upper case */
  char id[64];      /* the vendor's id of the same ticket, or "" */
  char prefix[128]; /* the ticket URL's path ("" or "/ex/jira/CLOUDID"), no trailing slash */
  unsigned max_comments;
} al_gw_tk_rules;

/* Bind the ticket rules to one run: kind 1 or 2, key a ticket name as
 * tickets/tickets.h al_tk_target_parse reads it, id "" or 1..63 bytes of
 * [0-9A-Za-z-], prefix "" or "/seg[/seg...]" of [A-Za-z0-9._~-]. Returns
 * 0 or -1 with err (EINVAL) naming the input. */
int al_gw_tk_rules_init(al_gw_tk_rules *r, int kind, const char *key, const char *id,
                        const char *prefix, unsigned max_comments, al_error *err);

/* Decide a Jira request (path canonical, qp the decoded query or NULL), as
 * al_gw_match_q does for the forge: the matching rule, or NULL with a
 * static *reason: "other-ticket" (a route of another issue),
 * "write-refused" (any other method on an issue: an edit (PUT), a
 * transition (POST .../transitions), a comment's edit or deletion, a
 * comment when max_comments is 0), "no-rule", or a query reason
 * ("query-param-refused" and the decoder's, *param naming it). */
const al_gw_rule *al_gw_jira_match(const al_gw_tk_rules *r, const char *method, size_t method_len,
                                   const char *path, const al_gw_qparams *qp, const char **reason,
                                   const char **param);

/* The body of a Jira comment create, read whole: exactly {"body": ADF doc}
 * (Jira's other members, `visibility` and `properties`, refused by name);
 * the document flattened (tickets/adf.h), the text rewritten by
 * al_safetext_render (hosts: links that may stay, NULL-terminated, or
 * NULL) and rebuilt as plain ADF paragraphs: {"body": ADF}. *out
 * malloc'd, *out_len bytes. Returns 0, or -1 with a static *why
 * ("comment-not-json", "comment-not-object", "comment-member-refused" (bad
 * names it), "comment-body-missing", "comment-body-not-adf",
 * "comment-rewrite-failed"). */
int al_gw_jira_comment_rewrite(const char *in, size_t len, const char *const *hosts, char **out,
                               size_t *out_len, struct al_safetext_counts *counts, const char **why,
                               char *bad);

/* The rules a Linear request is forwarded under. */
extern const al_gw_rule al_gw_linear_rule_read, al_gw_linear_rule_comment;

/* Decide a Linear request's path and method: POST {prefix}/graphql with
 * no query parameter, else NULL with *reason "write-refused" / "no-rule"
 * / "query-param-refused". The body is decided by al_gw_linear_check. */
const al_gw_rule *al_gw_linear_match(const al_gw_tk_rules *r, const char *method, size_t method_len,
                                     const char *path, const al_gw_qparams *qp, const char **reason,
                                     const char **param);

typedef struct al_gw_linear_info {
  bool comment; /* the operation is the one commentCreate */
  char var[64]; /* its input variable's name */
  al_gql_info gql;
} al_gw_linear_info;

/* Decide a Linear GraphQL body (at most AL_GQL_BODY_MAX). Returns 0
 * (allowed; info filled) or -1 with a static *why "graphql-refused:
 * REASON": the parser's (graphql.h), or top-level-field (anything but
 * issue / commentCreate), other-ticket (issue(id:) or input.issueId not
 * this ticket), mutation (a mutation but the one commentCreate, or
 * commentCreate when max_comments is 0), several-mutations, input-shape
 * (input not a variable, or not exactly {issueId, body} strings), field
 * (a field outside the table; where_buf names it), argument. */
int al_gw_linear_check(const al_gw_tk_rules *r, const char *body, size_t len,
                       al_gw_linear_info *info, const char **why, char where_buf[80]);

/* Rewrite an allowed commentCreate body: variables[info->var].body by
 * al_safetext_render, the document re-serialised (jansson, compact). *out
 * malloc'd. Returns 0 or -1 with *why "comment-rewrite-failed". */
int al_gw_linear_comment_rewrite(const char *in, size_t len, const al_gw_linear_info *info,
                                 const char *const *hosts, char **out, size_t *out_len,
                                 struct al_safetext_counts *counts, const char **why);

#endif
