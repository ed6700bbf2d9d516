/* The ticket host's rules for Linear's GraphQL API. See rules_tickets.h.
 * Schema followed: Linear's public API (developers.linear.app "GraphQL
 * API"; the schema @linear/sdk ships): Query.issue(id: String!): Issue,
 * Mutation.commentCreate(input: CommentCreateInput!): CommentPayload!,
 * and the fields of Issue, Comment, User, Team, WorkflowState,
 * IssueLabel, PageInfo and CommentPayload in the table below. Fields that
 * lead to other issues (parent, children, relations, team.issues,
 * project, cycle, subscribers, history ...) are not in it. */
#include "gateway/rules_tickets.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const al_gw_rule al_gw_linear_rule_read = {
    .name = "linear-issue",
    .sides = AL_GW_SIDE_TICKET,
    .method = "POST",
    .path = "/graphql",
    .query = AL_GW_QUERY_NONE,
    .token = AL_GW_TOKEN_TICKET,
    .body = AL_GW_BODY_LINEAR_GRAPHQL,
    .doc = "Linear GraphQL: the issue(id:) query of the ticket"};
const al_gw_rule al_gw_linear_rule_comment = {
    .name = "linear-comment-create",
    .sides = AL_GW_SIDE_TICKET,
    .method = "POST",
    .path = "/graphql",
    .query = AL_GW_QUERY_NONE,
    .token = AL_GW_TOKEN_TICKET,
    .body = AL_GW_BODY_LINEAR_GRAPHQL,
    .needs_comments = true,
    .doc = "Linear GraphQL: one commentCreate on the ticket, rewritten, max_comments times"};

const al_gw_rule *al_gw_linear_match(const al_gw_tk_rules *r, const char *method, size_t method_len,
                                     const char *path, const al_gw_qparams *qp, const char **reason,
                                     const char **param)
{
  *param = NULL;
  bool post = method_len == 4 && memcmp(method, "POST", 4) == 0;
  size_t pl = strlen(r->prefix);
  bool gql = strncmp(path, r->prefix, pl) == 0 && strcmp(path + pl, "/graphql") == 0;
  if (!gql || !post) {
    *reason = method_len == 3 && memcmp(method, "GET", 3) == 0 ? "no-rule" : "write-refused";
    return NULL;
  }
  if (qp && qp->why) {
    *reason = qp->why;
    *param = qp->bad[0] ? qp->bad : NULL;
    return NULL;
  }
  if (qp && qp->n) {
    *reason = "query-param-refused";
    *param = qp->p[0].name;
    return NULL;
  }
  *reason = al_gw_linear_rule_read.name;
  return &al_gw_linear_rule_read;
}

/* Contexts of the selection sets (0 is the operation's top level). */
enum {
  L_TOP = 0,
  L_LEAF,
  L_ISSUE,
  L_COMMENTS,
  L_COMMENT,
  L_USER,
  L_TEAM,
  L_STATE,
  L_LABELS,
  L_LABEL,
  L_PAGEINFO,
  L_PAYLOAD,
  L_PAYLOAD_COMMENT,
};

typedef struct lfield {
  int cx;
  const char *name;
  int sub;
  const char *args; /* space-separated argument names admitted, NULL: none */
} lfield;

static const lfield table[] = {
    {L_ISSUE, "id", L_LEAF, NULL},
    {L_ISSUE, "identifier", L_LEAF, NULL},
    {L_ISSUE, "number", L_LEAF, NULL},
    {L_ISSUE, "title", L_LEAF, NULL},
    {L_ISSUE, "description", L_LEAF, NULL},
    {L_ISSUE, "url", L_LEAF, NULL},
    {L_ISSUE, "branchName", L_LEAF, NULL},
    {L_ISSUE, "priority", L_LEAF, NULL},
    {L_ISSUE, "priorityLabel", L_LEAF, NULL},
    {L_ISSUE, "estimate", L_LEAF, NULL},
    {L_ISSUE, "createdAt", L_LEAF, NULL},
    {L_ISSUE, "updatedAt", L_LEAF, NULL},
    {L_ISSUE, "dueDate", L_LEAF, NULL},
    {L_ISSUE, "state", L_STATE, NULL},
    {L_ISSUE, "team", L_TEAM, NULL},
    {L_ISSUE, "assignee", L_USER, NULL},
    {L_ISSUE, "creator", L_USER, NULL},
    {L_ISSUE, "labels", L_LABELS, "first after"},
    {L_ISSUE, "comments", L_COMMENTS, "first after"},
    {L_COMMENTS, "nodes", L_COMMENT, NULL},
    {L_COMMENTS, "pageInfo", L_PAGEINFO, NULL},
    {L_COMMENT, "id", L_LEAF, NULL},
    {L_COMMENT, "body", L_LEAF, NULL},
    {L_COMMENT, "url", L_LEAF, NULL},
    {L_COMMENT, "createdAt", L_LEAF, NULL},
    {L_COMMENT, "updatedAt", L_LEAF, NULL},
    {L_COMMENT, "user", L_USER, NULL},
    {L_USER, "id", L_LEAF, NULL},
    {L_USER, "name", L_LEAF, NULL},
    {L_USER, "displayName", L_LEAF, NULL},
    {L_TEAM, "id", L_LEAF, NULL},
    {L_TEAM, "key", L_LEAF, NULL},
    {L_TEAM, "name", L_LEAF, NULL},
    {L_STATE, "id", L_LEAF, NULL},
    {L_STATE, "name", L_LEAF, NULL},
    {L_STATE, "type", L_LEAF, NULL},
    {L_LABELS, "nodes", L_LABEL, NULL},
    {L_LABELS, "pageInfo", L_PAGEINFO, NULL},
    {L_LABEL, "id", L_LEAF, NULL},
    {L_LABEL, "name", L_LEAF, NULL},
    {L_PAGEINFO, "hasNextPage", L_LEAF, NULL},
    {L_PAGEINFO, "hasPreviousPage", L_LEAF, NULL},
    {L_PAGEINFO, "startCursor", L_LEAF, NULL},
    {L_PAGEINFO, "endCursor", L_LEAF, NULL},
    {L_PAYLOAD, "success", L_LEAF, NULL},
    {L_PAYLOAD, "lastSyncId", L_LEAF, NULL},
    {L_PAYLOAD, "comment", L_PAYLOAD_COMMENT, NULL},
    {L_PAYLOAD_COMMENT, "id", L_LEAF, NULL},
    {L_PAYLOAD_COMMENT, "url", L_LEAF, NULL},
    {L_PAYLOAD_COMMENT, "body", L_LEAF, NULL},
    {L_PAYLOAD_COMMENT, "createdAt", L_LEAF, NULL},
};

static const char *const var_types[] = {"String", "ID", "Int", "Boolean", "CommentCreateInput",
                                        NULL};
static const char *const object_types[] = {"CommentCreateInput", NULL};

typedef struct lctx {
  const al_gw_tk_rules *r;
  al_gw_linear_info *info;
  unsigned top_fields;
} lctx;

static bool is(const char *name, size_t nl, const char *w)
{
  return strlen(w) == nl && memcmp(name, w, nl) == 0;
}

static bool this_ticket(const al_gw_tk_rules *r, const char *s)
{
  return strcmp(s, r->key) == 0 || (r->id[0] && strcmp(s, r->id) == 0);
}

/* The commentCreate input variable: exactly {"issueId": this ticket,
 * "body": a string}. */
static int input_ok(const lctx *c, const json_t *vars, const char *var, const char **why)
{
  const json_t *in = vars ? json_object_get(vars, var) : NULL;
  const json_t *id = json_object_get(in, "issueId"), *body = json_object_get(in, "body");
  if (!json_is_object(in) || json_object_size(in) != 2 || !json_is_string(id) ||
      !json_is_string(body)) {
    *why = "graphql-refused: input-shape";
    return -1;
  }
  if (!this_ticket(c->r, json_string_value(id))) {
    *why = "graphql-refused: other-ticket";
    return -1;
  }
  return 0;
}

static int field(void *ctx, int cx, bool mutation, const char *name, size_t nl,
                 const al_gql_arg *args, size_t nargs, const json_t *vars, const char **why)
{
  lctx *c = ctx;
  if (is(name, nl, "__typename") && nargs == 0)
    return L_LEAF;
  if (cx == L_TOP) {
    if (++c->top_fields > 1) {
      *why = mutation ? "graphql-refused: several-mutations" : "graphql-refused: top-level-field";
      return -1;
    }
    if (!mutation) {
      if (!is(name, nl, "issue")) {
        *why = "graphql-refused: top-level-field";
        return -1;
      }
      if (nargs != 1 || strcmp(args[0].name, "id") != 0 || args[0].kind != AL_GQL_ARG_STR ||
          !this_ticket(c->r, args[0].s)) {
        *why = "graphql-refused: other-ticket";
        return -1;
      }
      return L_ISSUE;
    }
    if (!is(name, nl, "commentCreate") || c->r->max_comments == 0) {
      *why = "graphql-refused: mutation";
      return -1;
    }
    if (nargs != 1 || strcmp(args[0].name, "input") != 0 || args[0].kind != AL_GQL_ARG_VAR_OBJECT) {
      *why = "graphql-refused: input-shape";
      return -1;
    }
    if (input_ok(c, vars, args[0].s, why) < 0)
      return -1;
    c->info->comment = true;
    snprintf(c->info->var, sizeof c->info->var, "%s", args[0].s);
    return L_PAYLOAD;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (table[i].cx != cx || !is(name, nl, table[i].name))
      continue;
    for (size_t a = 0; a < nargs; a++)
      if (!al_gw_word_listed(table[i].args, args[a].name) ||
          !(args[a].kind == AL_GQL_ARG_STR || args[a].kind == AL_GQL_ARG_INT ||
            args[a].kind == AL_GQL_ARG_NONE)) {
        *why = "graphql-refused: argument";
        return -1;
      }
    return table[i].sub;
  }
  *why = "graphql-refused: field";
  return -1;
}

int al_gw_linear_check(const al_gw_tk_rules *r, const char *body, size_t len,
                       al_gw_linear_info *info, const char **why, char where_buf[80])
{
  memset(info, 0, sizeof *info);
  static const al_gql_profile prof = {
      .mutation = true, .var_types = var_types, .object_types = object_types, .field = field};
  lctx c = {.r = r, .info = info};
  if (al_gql_check_profile(&prof, &c, body, len, &info->gql, why, where_buf) < 0)
    return -1;
  if (c.top_fields == 0) {
    *why = "graphql-refused: top-level-field";
    return -1;
  }
  return 0;
}

int al_gw_linear_comment_rewrite(const char *in, size_t len, const al_gw_linear_info *info,
                                 const char *const *hosts, char **out, size_t *out_len,
                                 struct al_safetext_counts *counts, const char **why)
{
  *out = NULL;
  *out_len = 0;
  *why = "comment-rewrite-failed";
  json_error_t je;
  json_t *j = json_loadb(in, len, JSON_REJECT_DUPLICATES, &je);
  json_t *input = json_object_get(json_object_get(j, "variables"), info->var);
  json_t *body = json_object_get(input, "body");
  if (!info->comment || !json_is_string(body)) {
    json_decref(j);
    return -1;
  }
  struct al_safetext_opts o = {.forge_hosts = hosts, .counts = counts};
  char *safe = NULL;
  al_error e = {0};
  if (al_safetext_render(json_string_value(body), json_string_length(body), &o, &safe, &e) < 0) {
    json_decref(j);
    return -1;
  }
  json_object_set_new(input, "body", json_string(safe));
  free(safe);
  *out = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!*out)
    return -1;
  *out_len = strlen(*out);
  return 0;
}
