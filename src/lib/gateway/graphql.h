/* Read-only GraphQL for the forge gateway (issue #27): a strict lexer and
 * parser of the GraphQL language (the GraphQL specification, October 2021,
 * §2 "Language": §2.1 source text and tokens, §2.2 Document, §2.3
 * operations, §2.4 selection sets, §2.5 fields, §2.6 arguments, §2.7
 * aliases, §2.8 fragments (inline only), §2.9 input values, §2.10
 * variables, §2.11 type references) over the JSON body gh sends to
 * /graphql ({"query", "variables", "operationName"}), and the policy that
 * decides it. Allowed: one `query` operation (or the anonymous shorthand)
 * whose top-level fields are only `repository(owner:, name:)` naming the
 * run's repository (literal or variable), `__typename` and `__type(name:)`
 * (gh's feature detection), and `node(id:)` with only `... on
 * Issue|PullRequest { comments(...) { ... } }` below it (gh issue view
 * --comments pages the ticket's comments by its node id: the id is not
 * checked, so the comments of another issue the token can read are
 * readable this way; the token is the run's, scoped to its repository);
 * below repository, no field that leaves the repository
 * (see graphql.c's table), `issue`/`issueOrPullRequest(number:)` only for
 * the ticket, `pullRequests` only with `headRefName:` the run branch.
 * Refused: mutation, subscription, named fragments, directives, block
 * strings, variables of non-scalar types. Limits: the body 64 KiB, the
 * query 32 KiB, depth 16, 2000 fields, 64 variables, 4 KiB per string.
 * Pure; no I/O. */
#ifndef AL_GATEWAY_GRAPHQL_H
#define AL_GATEWAY_GRAPHQL_H

#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>

#include "gateway/rules.h"

#define AL_GQL_BODY_MAX (64 * 1024)
#define AL_GQL_QUERY_MAX (32 * 1024)
#define AL_GQL_DEPTH_MAX 16
#define AL_GQL_FIELDS_MAX 2000
#define AL_GQL_VARS_MAX 64
#define AL_GQL_STRING_MAX 4096

typedef struct al_gql_info {
  bool issue; /* reads the ticket (issue / issueOrPullRequest): the ticket token upstream */
  unsigned fields, depth;
} al_gql_info;

/* The two rules a GraphQL request is forwarded under (not in the table:
 * the path is the API's GraphQL endpoint, apipath.h, and the token
 * depends on the body): "api-graphql" with the git token, and
 * "api-graphql-ticket" with the ticket token when the query reads the
 * ticket (info.issue). */
extern const al_gw_rule al_gql_rule_git, al_gql_rule_ticket;

/* Decide the GraphQL request body[0..len) for the run's rules r. Returns
 * 0 (allowed; *info filled), or -1 with a static *why
 * "graphql-refused: REASON", REASON one of body-not-json, body-shape,
 * too-large, syntax, mutation, subscription, fragment, directive,
 * several-operations, operation-name, too-deep, too-many-fields,
 * variable-type, variable-value, top-level-field, other-repository,
 * other-ticket, pulls-not-run-branch, field. *where (may be NULL) gets a
 * static-or-body-borrowed description of the offending field's name when
 * there is one (up to 64 bytes, NUL-terminated, in where_buf). */
int al_gql_check(const al_gw_rules *r, const char *body, size_t len, al_gql_info *info,
                 const char **why, char where_buf[80]);

/* Another GraphQL API's policy over the same lexer, parser and limits
 * (the ticket host's: gateway/rules_linear.c). What stays the parser's:
 * one operation, no subscription, no fragment of any kind, no directive,
 * no block string, every variable declared and of a type in
 * `var_types`, a variable given as a JSON object only when its declared
 * type is in `object_types` (the hook then reads it), the limits above.
 * What the profile decides: whether a `mutation` is parsed, and every
 * field, through `field`. */
enum {
  AL_GQL_ARG_OTHER,      /* a literal the hook cannot read (enum, float, list, object) */
  AL_GQL_ARG_STR,        /* a string, literal or a variable's (s decoded, ASCII, cut at 255) */
  AL_GQL_ARG_INT,        /* an integer, literal or a variable's (s its decimal text) */
  AL_GQL_ARG_VAR_OBJECT, /* a variable whose JSON value is an object (s its name) */
  AL_GQL_ARG_NONE,       /* a variable without a value (null or absent) */
};
typedef struct al_gql_arg {
  const char *name;
  int kind; /* AL_GQL_ARG_* */
  const char *s;
} al_gql_arg;

typedef struct al_gql_profile {
  bool mutation;                   /* parse `mutation` operations (the hook decides them) */
  const char *const *var_types;    /* NULL-terminated variable type names admitted */
  const char *const *object_types; /* NULL-terminated input-object types (or NULL) */
  /* Decide the field `name` (nl bytes; the alias is not passed) in context
   * cx (0 at the operation's top level; else what the hook returned for
   * the parent), with its arguments and the request's variables object
   * (may be NULL). Returns the context of its selection set (>= 0), or -1
   * with *why a static "graphql-refused: REASON" (default "field"); the
   * parser names the field in `where`. */
  int (*field)(void *ctx, int cx, bool mutation, const char *name, size_t nl,
               const al_gql_arg *args, size_t nargs, const json_t *vars, const char **why);
} al_gql_profile;

/* al_gql_check under another API's profile: ctx is the hook's. Returns 0
 * (allowed; info->fields and depth filled) or -1 with *why and where_buf
 * as al_gql_check. */
int al_gql_check_profile(const al_gql_profile *prof, void *ctx, const char *body, size_t len,
                         al_gql_info *info, const char **why, char where_buf[80]);

#endif
