/* The ticket-system seam (issue #31): a run's ticket, wherever it lives.
 *
 * Three operations, the same for every vendor: parse a ticket's name
 * (al_tk_target_parse), read the ticket (title, body, comments:
 * al_tk_read) and post one comment on it (al_tk_post_comment). Each vendor is a
 * driver behind them:
 *   - GitHub issues (REST "Issues": Get an issue, List issue comments,
 *     Create an issue comment), through the one forge client (forge/ghapi.h);
 *   - Jira Cloud REST v3 (developer.atlassian.com/cloud/jira/platform/rest/v3:
 *     GET /rest/api/3/issue/{issueIdOrKey}, GET and POST
 *     /rest/api/3/issue/{issueIdOrKey}/comment), bodies in Atlassian
 *     Document Format (adf.h); the key's project is the policy's project;
 *   - Linear GraphQL (POST https://api.linear.app/graphql: the `issue(id:)`
 *     query, which takes the identifier "ENG-42", and the `commentCreate`
 *     mutation with `input: {issueId, body}`); the identifier's team is the
 *     policy's team.
 * The codecs (what is sent, what is read back) are pure functions here so
 * the gateway, the tests and the fuzzers share them; client.c does the
 * HTTP (libcurl). Everything a vendor answers is untrusted input: read with
 * jansson, typed, bounded, and a bad answer is an error naming the field. */
#ifndef AL_TICKETS_H
#define AL_TICKETS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum al_tk_kind {
  AL_TK_GITHUB = 0, /* the default: the ticket is an issue of the run's repository */
  AL_TK_JIRA = 1,
  AL_TK_LINEAR = 2,
} al_tk_kind;

/* "github", "jira", "linear". */
const char *al_tk_kind_name(al_tk_kind k);

/* Sizes of the parts of a ticket's name. */
#define AL_TK_KEY_MAX 48     /* "PROJ-123", "ENG-42", "OWNER/REPO#N" is not a key */
#define AL_TK_PROJECT_MAX 16 /* a Jira project key or a Linear team key */

/* A ticket's name, parsed. */
typedef struct al_tk_target {
  al_tk_kind kind;
  char key[AL_TK_KEY_MAX];         /* Jira/Linear: "PROJ-123" (upper case); GitHub: "" */
  char project[AL_TK_PROJECT_MAX]; /* Jira project key / Linear team key: "PROJ" */
  unsigned long number;            /* the number after the dash, or the GitHub issue number */
  char repo[201];                  /* GitHub: "OWNER/REPO"; else "" */
} al_tk_target;

/* Whether s is a project or team key as Jira and Linear write one: an
 * upper-case ASCII letter, then 1..9 upper-case letters, digits or `_`
 * (Jira's default project key rule, "Project key" in the Jira Cloud admin
 * docs; Linear's team keys are a subset). */
bool al_tk_project_ok(const char *s);

/* Parse a Jira or Linear key "KEY-N" (the two vendors write keys alike):
 * KEY as al_tk_project_ok into project (AL_TK_PROJECT_MAX bytes, "" on
 * error), N 1..2^31-1 without a leading zero into *number. vendor is the
 * word the message names ("jira", or "Jira or Linear" when the policy is not
 * read yet). Returns 0 or -1 with err (EINVAL) naming s and the rule it
 * broke. */
int al_tk_key_parse(const char *s, const char *vendor, char project[AL_TK_PROJECT_MAX],
                    unsigned long *number, al_error *err);

/* Parse a ticket's name for kind k:
 *   github: "OWNER/REPO#N" (N 1..2^31-1);
 *   jira, linear: "KEY-N", KEY as al_tk_project_ok (lower case refused:
 *     the vendors print keys upper case; one spelling is matched), N
 *     1..2^31-1 without a leading zero.
 * project (may be NULL): the policy's project (Jira) or team (Linear); when
 * set the key's project must be exactly it ("the key's project is the one
 * project"). Returns 0 or -1 with err (EINVAL) naming the input and the
 * rule. */
int al_tk_target_parse(al_tk_kind k, const char *s, const char *project, al_tk_target *t,
                       al_error *err);

/* One comment as read. Strings are malloc'd, UTF-8, NUL-free. */
typedef struct al_tk_comment {
  char *id;     /* the vendor's comment id */
  char *author; /* display name, "" when absent */
  char *body;   /* plain text (ADF flattened for Jira, Markdown for Linear and GitHub) */
} al_tk_comment;

#define AL_TK_COMMENTS_MAX 500 /* comments kept of one ticket (the rest is dropped, counted) */
#define AL_TK_TEXT_MAX (256 * 1024)

/* A ticket as read. Free with al_tk_ticket_free (safe on a zeroed struct). */
typedef struct al_tk_ticket {
  char *id;    /* the vendor's id: Jira's numeric id, Linear's UUID, GitHub's number */
  char *key;   /* "PROJ-123" / "ENG-42" / "#N" */
  char *title; /* Jira fields.summary, Linear title, GitHub title */
  char *body;  /* description as plain text, "" when none */
  char *url;   /* the human's link, "" when unknown */
  char *project;
  al_tk_comment *comments;
  size_t n_comments;
  size_t comments_dropped; /* past AL_TK_COMMENTS_MAX */
} al_tk_ticket;

void al_tk_ticket_free(al_tk_ticket *t);

/* ---- Jira Cloud REST v3 codecs (pure) ---- */

/* Read the body of GET /rest/api/3/issue/{key} (fields id, key,
 * fields.summary (string), fields.description (ADF or null),
 * fields.project.key) into t, checking that the answer's key is
 * `want->key` and its project `want->project`. Returns 0 or -1 with err
 * naming the field. */
int al_tk_jira_read_issue(const char *body, size_t len, const al_tk_target *want, al_tk_ticket *t,
                          al_error *err);

/* Append the comments of GET /rest/api/3/issue/{key}/comment
 * ({"comments": [{"id", "author": {"displayName"}, "body": ADF}], "total",
 * "startAt", "maxResults"}) to t. *more is set when the page says there
 * are more (startAt + len(comments) < total). Returns 0 or -1 with err. */
int al_tk_jira_read_comments(const char *body, size_t len, al_tk_ticket *t, bool *more,
                             al_error *err);

/* The request body of POST /rest/api/3/issue/{key}/comment for the plain
 * text `text`: {"body": ADF(text)} (adf.h). New reference. */
json_t *al_tk_jira_comment_body(const char *text);

/* ---- Linear GraphQL codecs (pure) ---- */

/* The query that reads one issue by identifier (variables {"id": KEY}),
 * and the mutation that posts one comment (variables {"input":
 * {"issueId": ID, "body": TEXT}}). Both are documents the gateway's
 * Linear rules admit (gateway/rules_linear.c). */
extern const char al_tk_linear_issue_query[];
extern const char al_tk_linear_comment_mutation[];

/* The request bodies: {"query", "variables"}. New references. */
json_t *al_tk_linear_issue_request(const char *key);
json_t *al_tk_linear_comment_request(const char *issue_id, const char *text);

/* Read the answer to al_tk_linear_issue_request: {"data": {"issue": {id,
 * identifier, title, description, url, team {key}, comments {nodes [{id,
 * body, user {name}}]}}}}; a GraphQL `errors` array is an error quoting
 * its first message (escaped). The identifier and team are checked
 * against want. Returns 0 or -1 with err. */
int al_tk_linear_read_issue(const char *body, size_t len, const al_tk_target *want, al_tk_ticket *t,
                            al_error *err);

/* Read the answer to al_tk_linear_comment_request: data.commentCreate
 * .success true; *url (malloc'd, may be "") the comment's url. */
int al_tk_linear_read_comment(const char *body, size_t len, char **url, al_error *err);

/* ---- the drivers (client.c: HTTP) ---- */

/* Where the ticket system is and how to reach it. */
typedef struct al_tk_config {
  al_tk_kind kind;
  const char *url;     /* Jira: "https://SITE.atlassian.net" (or the OAuth base
                          "https://api.atlassian.com/ex/jira/CLOUDID"); Linear:
                          "https://api.linear.app" (the endpoint is URL + "/graphql");
                          GitHub: the forge's API URL */
  const char *ca_file; /* PEM trust anchors instead of the system store, or NULL */
  const char *user;    /* Jira API tokens: the account's e-mail (Basic user:token); NULL:
                          the token is sent as `Authorization: Bearer` (OAuth 2.0) */
  uint64_t timeout_ms; /* one exchange; 0 = 30 s */
  const char *resolve; /* curl's "HOST:PORT:ADDR" pin, or NULL (tests, the gateway's pin) */
} al_tk_config;

/* Read ticket t with token (a secret: never logged, never in a message).
 * Fills out (al_tk_ticket_free). Errors: -1 with err naming the request
 * (method and path, never the token), the HTTP status and the vendor's
 * message (escaped), or the field of the answer that was wrong. */
int al_tk_read(const al_tk_config *c, const al_tk_target *t, const char *token, al_tk_ticket *out,
               al_error *err);

/* Post `text` (already made safe by the caller: common/safetext.h) as one
 * comment on ticket t. *url (may be NULL) gets the comment's link
 * (malloc'd, may be ""). Not retried (a retry could post twice). */
int al_tk_post_comment(const al_tk_config *c, const al_tk_target *t, const char *token,
                       const char *text, char **url, al_error *err);

#endif
