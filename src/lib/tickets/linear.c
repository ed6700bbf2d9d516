/* Linear GraphQL codecs. See tickets.h. Schema followed: Linear's public
 * GraphQL API (developers.linear.app, "GraphQL API"; the schema @linear/sdk
 * ships): Query.issue(id: String!): Issue! ("The issue's identifier or
 * UUID"), Issue {id, identifier, title, description, url, team {key},
 * comments {nodes [Comment {id, body, user {name}}]}}, Mutation
 * .commentCreate(input: CommentCreateInput!): CommentPayload! {success,
 * comment {id, url}}, CommentCreateInput {issueId: String, body: String}. */
#include "tickets/tickets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tickets/codec_int.h"

const char al_tk_linear_issue_query[] =
    "query AirlockIssue($id: String!) { issue(id: $id) { id identifier title description url "
    "team { key } comments(first: 100) { nodes { id body user { name } } } } }";

const char al_tk_linear_comment_mutation[] =
    "mutation AirlockComment($input: CommentCreateInput!) { commentCreate(input: $input) { "
    "success comment { id url } } }";

json_t *al_tk_linear_issue_request(const char *key)
{
  return json_pack("{s:s, s:{s:s}}", "query", al_tk_linear_issue_query, "variables", "id", key);
}

json_t *al_tk_linear_comment_request(const char *issue_id, const char *text)
{
  return json_pack("{s:s, s:{s:{s:s, s:s}}}", "query", al_tk_linear_comment_mutation, "variables",
                   "input", "issueId", issue_id, "body", text);
}

/* A GraphQL `errors` array, as an error; 0 when there is none. */
static int gql_errors(const json_t *j, al_error *err)
{
  const json_t *errs = json_object_get(j, "errors");
  if (!errs || json_is_null(errs))
    return 0;
  const char *m = al_tk_str(json_array_get(errs, 0), "message");
  char safe[200];
  size_t o = 0;
  for (const char *p = m ? m : "(no message)"; *p && o + 1 < sizeof safe; p++)
    safe[o++] = (char)((*p >= 0x20 && *p < 0x7f) ? *p : '?');
  safe[o] = '\0';
  return al_error_set(err, EINVAL, "linear: the API answered an error: %s", safe);
}

/* body[0..len) as a GraphQL answer: one JSON object without `errors`.
 * NULL with err. */
static json_t *gql_answer(const char *body, size_t len, al_error *err)
{
  json_t *j = al_tk_json_object("linear", body, len, err);
  if (j && gql_errors(j, err) < 0) {
    json_decref(j);
    return NULL;
  }
  return j;
}

int al_tk_linear_read_issue(const char *body, size_t len, const al_tk_target *want, al_tk_ticket *t,
                            al_error *err)
{
  json_t *j = gql_answer(body, len, err);
  if (!j)
    return -1;
  const json_t *issue = json_object_get(json_object_get(j, "data"), "issue");
  const char *id = al_tk_str(issue, "id"), *ident = al_tk_str(issue, "identifier");
  const char *title = al_tk_str(issue, "title"), *team = al_tk_str(issue, "team.key");
  const json_t *desc = json_is_object(issue) ? json_object_get(issue, "description") : NULL;
  int rc = -1;
  if (!json_is_object(issue))
    al_error_set(err, EINVAL, "linear: the answer lacks `data.issue`");
  else if (!id || !ident || !title)
    al_error_set(err, EINVAL, "linear: the issue lacks %s (a string)",
                 !id      ? "`id`"
                 : !ident ? "`identifier`"
                          : "`title`");
  else if (strcmp(ident, want->key) != 0)
    al_error_set(err, EINVAL, "linear: asked for %s, the answer is %.60s", want->key, ident);
  else if (!team || strcmp(team, want->project) != 0)
    al_error_set(err, EINVAL, "linear: the issue's `team.key` is not %s", want->project);
  else if (desc && !json_is_null(desc) && !json_is_string(desc))
    al_error_set(err, EINVAL, "linear: the issue's `description` is not a string");
  else
    rc = 0;
  if (rc == 0) {
    const json_t *nodes = json_object_get(json_object_get(issue, "comments"), "nodes");
    if (nodes && !json_is_array(nodes)) {
      json_decref(j);
      return al_error_set(err, EINVAL, "linear: `comments.nodes` is not an array");
    }
    t->id = al_tk_dup(id);
    t->key = al_tk_dup(ident);
    t->title = al_tk_dup(title);
    t->body = al_tk_dup(json_is_string(desc) ? json_string_value(desc) : "");
    t->url = al_tk_dup(al_tk_str(issue, "url"));
    t->project = al_tk_dup(team);
    size_t i;
    const json_t *c;
    json_array_foreach(nodes, i, c)
    {
      const char *cid = al_tk_str(c, "id"), *cb = al_tk_str(c, "body");
      if (!cid || !cb) {
        al_tk_ticket_free(t);
        json_decref(j);
        return al_error_set(err, EINVAL, "linear: comments.nodes[%zu] lacks `%s`", i,
                            !cid ? "id" : "body");
      }
      al_tk_add_comment(t, cid, al_tk_str(c, "user.name"), cb);
    }
  }
  json_decref(j);
  return rc;
}

int al_tk_linear_read_comment(const char *body, size_t len, char **url, al_error *err)
{
  *url = NULL;
  json_t *j = gql_answer(body, len, err);
  if (!j)
    return -1;
  const json_t *p = json_object_get(json_object_get(j, "data"), "commentCreate");
  if (!json_is_true(json_object_get(p, "success"))) {
    json_decref(j);
    return al_error_set(err, EINVAL, "linear: commentCreate did not answer success: true");
  }
  *url = al_tk_dup(al_tk_str(p, "comment.url"));
  json_decref(j);
  return 0;
}
