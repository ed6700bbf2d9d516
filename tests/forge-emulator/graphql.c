/* POST /graphql (and /api/graphql, GitHub Enterprise's spelling): enough of
 * GitHub's GraphQL API for `gh issue view [--comments]`, `gh pr view` and
 * `gh repo view` (docs.github.com "GraphQL API" reference: Query.repository,
 * Repository.issue/issueOrPullRequest/pullRequest/pullRequests, Issue,
 * PullRequest, IssueComment, Actor). A small executor over the query's
 * selection: each object is a JSON "source" whose keys are GraphQL field
 * names; a field the source lacks is null, or an empty connection when it
 * has a selection and its name is a connection of GitHub's schema. Queries
 * only; a mutation is answered with GitHub's error shape. Test host only. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_internal.h"
#include "common/util.h"

/* ---- a small parser: fields, aliases, arguments, inline fragments ---- */

typedef struct gnode {
  char alias[64], name[64];
  json_t *args; /* resolved values */
  char on[64];  /* inline fragment's type, or "" for a field */
  struct gnode *kids[96];
  size_t nkids;
} gnode;

typedef struct gp {
  const char *s;
  size_t i, n;
  json_t *vars;
  int err;
  int depth;
} gp;

static void ws(gp *p)
{
  while (p->i < p->n) {
    char c = p->s[p->i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',')
      p->i++;
    else if (c == '#')
      while (p->i < p->n && p->s[p->i] != '\n')
        p->i++;
    else
      break;
  }
}

static bool eat(gp *p, char c)
{
  ws(p);
  if (p->i < p->n && p->s[p->i] == c) {
    p->i++;
    return true;
  }
  return false;
}

static size_t name(gp *p, char *out, size_t cap)
{
  ws(p);
  size_t j = p->i;
  while (j < p->n && (p->s[j] == '_' || (p->s[j] >= 'a' && p->s[j] <= 'z') ||
                      (p->s[j] >= 'A' && p->s[j] <= 'Z') || (p->s[j] >= '0' && p->s[j] <= '9')))
    j++;
  size_t l = j - p->i;
  if (l == 0 || l >= cap) {
    p->err = 1;
    return 0;
  }
  memcpy(out, p->s + p->i, l);
  out[l] = '\0';
  p->i = j;
  return l;
}

static json_t *value(gp *p)
{
  ws(p);
  if (p->i >= p->n || ++p->depth > 20) {
    p->err = 1;
    return json_null();
  }
  char c = p->s[p->i];
  json_t *v = NULL;
  if (c == '$') {
    p->i++;
    char nm[64];
    name(p, nm, sizeof nm);
    json_t *x = p->vars ? json_object_get(p->vars, nm) : NULL;
    v = x ? json_incref(x) : json_null();
  } else if (c == '"') {
    size_t j = ++p->i;
    while (j < p->n && p->s[j] != '"')
      j += p->s[j] == '\\' ? 2 : 1;
    v = json_stringn(p->s + p->i, j < p->n ? j - p->i : 0);
    p->i = j + 1;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    v = json_integer(strtoll(p->s + p->i, NULL, 10));
    while (p->i < p->n && strchr("-+.eE0123456789", p->s[p->i]))
      p->i++;
  } else if (c == '[') {
    p->i++;
    v = json_array();
    while (!p->err && !eat(p, ']'))
      json_array_append_new(v, value(p));
  } else if (c == '{') {
    p->i++;
    v = json_object();
    while (!p->err && !eat(p, '}')) {
      char k[64];
      name(p, k, sizeof k);
      if (!eat(p, ':'))
        p->err = 1;
      json_object_set_new(v, k, value(p));
    }
  } else {
    char nm[64];
    name(p, nm, sizeof nm);
    v = !strcmp(nm, "true")    ? json_true()
        : !strcmp(nm, "false") ? json_false()
        : !strcmp(nm, "null")  ? json_null()
                               : json_string(nm);
  }
  p->depth--;
  return v;
}

static void free_node(gnode *g)
{
  if (!g)
    return;
  for (size_t i = 0; i < g->nkids; i++)
    free_node(g->kids[i]);
  json_decref(g->args);
  free(g);
}

static void selection(gp *p, gnode *parent)
{
  if (++p->depth > 20 || !eat(p, '{')) {
    p->err = 1;
    return;
  }
  while (!p->err && !eat(p, '}')) {
    gnode *g = al_xcalloc(1, sizeof *g);
    ws(p);
    if (p->i + 3 <= p->n && !memcmp(p->s + p->i, "...", 3)) {
      p->i += 3;
      char on[8];
      name(p, on, sizeof on);
      name(p, g->on, sizeof g->on);
      selection(p, g);
    } else {
      name(p, g->name, sizeof g->name);
      if (eat(p, ':')) {
        memcpy(g->alias, g->name, sizeof g->alias);
        name(p, g->name, sizeof g->name);
      } else {
        memcpy(g->alias, g->name, sizeof g->alias);
      }
      g->args = json_object();
      if (eat(p, '('))
        while (!p->err && !eat(p, ')')) {
          char k[64];
          name(p, k, sizeof k);
          if (!eat(p, ':'))
            p->err = 1;
          json_object_set_new(g->args, k, value(p));
        }
      ws(p);
      if (p->i < p->n && p->s[p->i] == '{')
        selection(p, g);
    }
    if (parent->nkids == sizeof parent->kids / sizeof parent->kids[0])
      p->err = 1;
    if (p->err) {
      free_node(g);
      break;
    }
    parent->kids[parent->nkids++] = g;
  }
  p->depth--;
}

/* ---- sources: GitHub's GraphQL field names over the REST objects ---- */

static json_t *conn(json_t *nodes)
{
  size_t n = json_array_size(nodes);
  return json_pack("{s:o, s:I, s:{s:b, s:n}}", "nodes", nodes, "totalCount", (json_int_t)n,
                   "pageInfo", "hasNextPage", 0, "endCursor");
}

static json_t *actor(json_t *user)
{
  const char *login = json_string_value(json_object_get(user, "login"));
  return json_pack("{s:s, s:s, s:s?, s:s}", "__typename", "User", "login", login ? login : "ghost",
                   "name", login, "id", "U_forge");
}

static char *upper(const char *s)
{
  char *u = al_xstrdup(s ? s : "");
  for (char *p = u; *p; p++)
    if (*p >= 'a' && *p <= 'z')
      *p = (char)(*p - 32);
  return u;
}

static json_t *comments_of(json_t *repo, long long num, const char *full)
{
  (void)repo;
  json_t *nodes = json_array();
  size_t i;
  json_t *cm;
  json_array_foreach(g_forge.comments, i, cm)
  {
    if (strcmp(json_string_value(json_object_get(cm, "repo")) ?: "", full) ||
        json_integer_value(json_object_get(cm, "issue_number")) != num)
      continue;
    json_t *u = forge_api_user(json_string_value(json_object_get(cm, "user")));
    json_array_append_new(
        nodes, json_pack("{s:s, s:s, s:o, s:s, s:O, s:O, s:s, s:b, s:b, s:s, s:o, s:b}",
                         "__typename", "IssueComment", "id", "IC_forge", "author", actor(u),
                         "authorAssociation", "NONE", "body", json_object_get(cm, "body"),
                         "createdAt", json_object_get(cm, "created_at"), "url", "",
                         "includesCreatedEdit", 0, "isMinimized", 0, "minimizedReason", "",
                         "reactionGroups", json_array(), "viewerDidAuthor", 0));
    json_decref(u);
  }
  return conn(nodes);
}

/* An Issue or PullRequest source from the REST object o. */
static json_t *item_source(json_t *repo, json_t *o, bool pr, const char *full)
{
  long long num = json_integer_value(json_object_get(o, "number"));
  char idbuf[64];
  snprintf(idbuf, sizeof idbuf, "%s_forge_%s_%lld", pr ? "PR" : "I", full, num);
  al_autofree char *st = upper(json_string_value(json_object_get(o, "state")));
  json_t *labels = json_array();
  size_t i;
  json_t *l;
  json_array_foreach(json_object_get(o, "labels"), i, l) json_array_append_new(
      labels, json_pack("{s:s, s:O, s:s, s:s}", "id", "LA_forge", "name",
                        json_object_get(l, "name"), "color", "ededed", "description", ""));
  json_t *src = json_pack(
      "{s:s, s:s, s:I, s:O, s:O, s:s, s:O, s:O, s:O, s:O, s:b, s:o, s:o, s:o, s:o, s:o, s:n, s:o,"
      " s:o, s:o}",
      "__typename", pr ? "PullRequest" : "Issue", "id", idbuf, "number", (json_int_t)num, "title",
      json_object_get(o, "title"), "body", json_object_get(o, "body"), "state", st, "url",
      json_object_get(o, "html_url"), "createdAt", json_object_get(o, "created_at"), "updatedAt",
      json_object_get(o, "updated_at"), "closedAt", json_object_get(o, "closed_at"), "closed",
      !strcmp(st, "CLOSED"), "author", actor(json_object_get(o, "user")), "labels", conn(labels),
      "assignees", conn(json_array()), "comments", comments_of(repo, num, full), "projectCards",
      conn(json_array()), "milestone", "projectItems", conn(json_array()), "reactionGroups",
      json_array(), "stateReason", json_null());
  if (pr) {
    json_t *head = json_object_get(o, "head"), *base = json_object_get(o, "base");
    json_object_set(src, "headRefName", json_object_get(head, "ref"));
    json_object_set(src, "baseRefName", json_object_get(base, "ref"));
    json_object_set(src, "headRefOid", json_object_get(head, "sha"));
    json_object_set_new(src, "isDraft", json_boolean(json_is_true(json_object_get(o, "draft"))));
    json_object_set_new(src, "isCrossRepository", json_false());
    json_object_set_new(src, "maintainerCanModify", json_false());
    json_object_set_new(src, "mergeable", json_string("UNKNOWN"));
    json_object_set_new(src, "additions", json_integer(0));
    json_object_set_new(src, "deletions", json_integer(0));
    json_object_set_new(src, "changedFiles", json_integer(0));
    json_object_set_new(src, "reviewDecision", json_null());
    json_object_set_new(
        src, "headRepositoryOwner",
        json_pack("{s:s, s:O}", "id", "U_forge", "login", json_object_get(repo, "owner")));
    json_object_set_new(
        src, "headRepository",
        json_pack("{s:s, s:O}", "id", "R_forge", "name", json_object_get(repo, "name")));
    json_object_set_new(src, "reviewRequests", conn(json_array()));
    json_object_set_new(src, "reviews", conn(json_array()));
    json_object_set_new(src, "latestReviews", conn(json_array()));
    json_object_set_new(src, "commits", conn(json_array()));
    json_object_set_new(src, "files", conn(json_array()));
  }
  return src;
}

/* ---- the executor ---- */

typedef struct ex {
  struct ctx *c;
  json_t *repo;
  const char *full;
  json_t *errors;
} ex;

static json_t *resolve(ex *e, const char *type, json_t *src, gnode *sel);

static bool connection_name(const char *n)
{
  static const char *const names[] = {
      "comments", "labels",         "assignees",     "projectCards",     "projectItems",
      "reviews",  "reviewRequests", "latestReviews", "commits",          "files",
      "contexts", "checkSuites",    "nodes",         "repositoryTopics", NULL};
  for (size_t i = 0; names[i]; i++)
    if (!strcmp(n, names[i]))
      return true;
  return false;
}

/* A Repository's fields that take arguments or read the store. */
static json_t *repo_field(ex *e, gnode *g, bool *handled)
{
  *handled = true;
  json_t *num = json_object_get(g->args, "number");
  if (!strcmp(g->name, "issue") || !strcmp(g->name, "issueOrPullRequest") ||
      !strcmp(g->name, "pullRequest")) {
    long long n = json_integer_value(num);
    json_t *is = forge_api_find_in(g_forge.issues, e->full, "number", n);
    json_t *pr = forge_api_find_in(g_forge.pulls, e->full, "number", n);
    bool want_pr = !strcmp(g->name, "pullRequest") || (!is && pr);
    if (!strcmp(g->name, "issue") && !is)
      want_pr = false;
    json_t *o = want_pr ? pr : is;
    const char *perm = want_pr ? "pull_requests" : "issues";
    if (!o || !forge_api_authorize(e->c, e->repo, perm, 1, "https://docs.github.com/graphql")) {
      json_array_append_new(
          e->errors, json_pack("{s:s, s:s, s:[s]}", "type", "NOT_FOUND", "message",
                               "Could not resolve to an issue or pull request.", "path", g->alias));
      return json_null();
    }
    json_t *rest =
        want_pr ? forge_api_pull_obj(e->repo, o) : forge_api_issue_obj(e->repo, o, false);
    json_t *src = item_source(e->repo, rest, want_pr, e->full);
    json_decref(rest);
    json_t *out = resolve(e, want_pr ? "PullRequest" : "Issue", src, g);
    json_decref(src);
    return out;
  }
  if (!strcmp(g->name, "pullRequests")) {
    const char *head = json_string_value(json_object_get(g->args, "headRefName"));
    json_t *nodes = json_array();
    size_t i;
    json_t *pr;
    json_array_foreach(g_forge.pulls, i, pr)
    {
      if (strcmp(json_string_value(json_object_get(pr, "repo")) ?: "", e->full))
        continue;
      json_t *rest = forge_api_pull_obj(e->repo, pr);
      const char *ref = json_string_value(json_object_get(json_object_get(rest, "head"), "ref"));
      if (!head || (ref && !strcmp(ref, head)))
        json_array_append_new(nodes, item_source(e->repo, rest, true, e->full));
      json_decref(rest);
    }
    json_t *src = conn(nodes);
    json_t *out = resolve(e, "PullRequestConnection", src, g);
    json_decref(src);
    return out;
  }
  *handled = false;
  return NULL;
}

static json_t *resolve(ex *e, const char *type, json_t *src, gnode *sel)
{
  json_t *out = json_object();
  for (size_t i = 0; i < sel->nkids; i++) {
    gnode *g = sel->kids[i];
    if (g->on[0]) {
      const char *tn = json_string_value(json_object_get(src, "__typename"));
      if (!strcmp(g->on, type) || (tn && !strcmp(g->on, tn))) {
        json_t *sub = resolve(e, type, src, g);
        json_object_update(out, sub);
        json_decref(sub);
      }
      continue;
    }
    if (!strcmp(g->name, "__typename")) {
      json_t *tn = json_object_get(src, "__typename");
      json_object_set_new(out, g->alias, tn ? json_incref(tn) : json_string(type));
      continue;
    }
    if (!strcmp(type, "Repository")) {
      bool handled;
      json_t *v = repo_field(e, g, &handled);
      if (handled) {
        json_object_set_new(out, g->alias, v);
        continue;
      }
    }
    json_t *v = json_object_get(src, g->name);
    if (g->nkids == 0) {
      json_object_set_new(out, g->alias, v ? json_incref(v) : json_null());
    } else if (json_is_array(v)) {
      json_t *arr = json_array();
      size_t k;
      json_t *x;
      json_array_foreach(v, k, x) json_array_append_new(arr, resolve(e, g->name, x, g));
      json_object_set_new(out, g->alias, arr);
    } else if (json_is_object(v)) {
      json_object_set_new(out, g->alias, resolve(e, g->name, v, g));
    } else if (connection_name(g->name)) {
      json_t *empty = conn(json_array());
      json_object_set_new(out, g->alias, resolve(e, g->name, empty, g));
      json_decref(empty);
    } else {
      json_object_set_new(out, g->alias, json_null());
    }
  }
  return out;
}

static json_t *type_fields(const char *tn)
{
  static const char *const issue[] = {"assignees",    "author",         "body",      "closed",
                                      "closedAt",     "comments",       "createdAt", "id",
                                      "labels",       "milestone",      "number",    "projectCards",
                                      "projectItems", "reactionGroups", "state",     "stateReason",
                                      "title",        "updatedAt",      "url",       NULL};
  json_t *f = json_array();
  for (size_t i = 0; issue[i]; i++)
    json_array_append_new(f, json_pack("{s:s}", "name", issue[i]));
  if (tn && !strcmp(tn, "PullRequest"))
    json_array_append_new(f, json_pack("{s:s}", "name", "headRefName"));
  return f;
}

void forge_graphql(struct ctx *c)
{
  if (!forge_api_parse_body(c, false, "https://docs.github.com/graphql"))
    return;
  const char *q = json_string_value(json_object_get(c->body, "query"));
  if (!q)
    return forge_resp_error(c->resp, 400,
                            "A query attribute must be specified and must be a string.",
                            "https://docs.github.com/graphql");
  gp p = {.s = q, .n = strlen(q), .vars = json_object_get(c->body, "variables")};
  ws(&p);
  if (p.i + 8 <= p.n && !strncmp(q + p.i, "mutation", 8))
    return forge_resp_json(
        c->resp, 200,
        json_pack("{s:[{s:s}]}", "errors", "message", "airlock-forge answers queries only"));
  if (p.i + 5 <= p.n && !strncmp(q + p.i, "query", 5)) {
    p.i += 5;
    while (p.i < p.n && q[p.i] != '{') /* name and variable definitions */
      p.i++;
  }
  gnode *root = al_xcalloc(1, sizeof *root);
  selection(&p, root);
  if (p.err) {
    free_node(root);
    return forge_resp_json(c->resp, 200,
                           json_pack("{s:[{s:s}]}", "errors", "message", "Parse error on query"));
  }
  ex e = {.c = c, .errors = json_array()};
  json_t *data = json_object();
  for (size_t i = 0; i < root->nkids; i++) {
    gnode *g = root->kids[i];
    if (!strcmp(g->name, "__typename")) {
      json_object_set_new(data, g->alias, json_string("Query"));
    } else if (!strcmp(g->name, "__type")) {
      const char *tn = json_string_value(json_object_get(g->args, "name"));
      json_t *src = json_pack("{s:s?, s:o}", "name", tn, "fields", type_fields(tn));
      json_object_set_new(data, g->alias, resolve(&e, "__Type", src, g));
      json_decref(src);
    } else if (!strcmp(g->name, "node")) {
      /* our own ids: I_forge_OWNER/REPO_N, PR_forge_OWNER/REPO_N */
      const char *id = json_string_value(json_object_get(g->args, "id"));
      char full[256] = "";
      long long n = 0;
      bool pr = id && !strncmp(id, "PR_forge_", 9);
      const char *rest = id ? strchr(id, '_') : NULL;
      rest = rest ? strchr(rest + 1, '_') : NULL;
      const char *us = rest ? strrchr(rest + 1, '_') : NULL;
      if (us && (size_t)(us - rest - 1) < sizeof full) {
        memcpy(full, rest + 1, (size_t)(us - rest - 1));
        full[us - rest - 1] = '\0';
        n = strtoll(us + 1, NULL, 10);
      }
      char *sl = strchr(full, '/');
      json_t *repo = NULL;
      if (sl) {
        *sl = '\0';
        repo = forge_repo(full, sl + 1);
        *sl = '/';
      }
      json_t *o =
          repo ? forge_api_find_in(pr ? g_forge.pulls : g_forge.issues, full, "number", n) : NULL;
      if (!o || !forge_api_authorize(c, repo, pr ? "pull_requests" : "issues", 1,
                                     "https://docs.github.com/graphql")) {
        json_array_append_new(e.errors,
                              json_pack("{s:s, s:s, s:[s]}", "type", "NOT_FOUND", "message",
                                        "Could not resolve to a node.", "path", g->alias));
        json_object_set_new(data, g->alias, json_null());
        continue;
      }
      e.repo = repo;
      e.full = json_string_value(json_object_get(repo, "full_name"));
      json_t *rest_obj = pr ? forge_api_pull_obj(repo, o) : forge_api_issue_obj(repo, o, false);
      json_t *src = item_source(repo, rest_obj, pr, e.full);
      json_decref(rest_obj);
      json_object_set_new(data, g->alias, resolve(&e, pr ? "PullRequest" : "Issue", src, g));
      json_decref(src);
    } else if (!strcmp(g->name, "repository")) {
      const char *o = json_string_value(json_object_get(g->args, "owner"));
      const char *n = json_string_value(json_object_get(g->args, "name"));
      json_t *repo = o && n ? forge_repo(o, n) : NULL;
      if (!repo ||
          !forge_api_authorize(c, repo, "metadata", 1, "https://docs.github.com/graphql")) {
        json_array_append_new(e.errors,
                              json_pack("{s:s, s:s, s:[s]}", "type", "NOT_FOUND", "message",
                                        "Could not resolve to a Repository.", "path", g->alias));
        json_object_set_new(data, g->alias, json_null());
        continue;
      }
      e.repo = repo;
      e.full = json_string_value(json_object_get(repo, "full_name"));
      al_autofree char *url = al_strdup_printf("%s/%s", g_forge.git_base_url, e.full);
      json_t *src = json_pack(
          "{s:s, s:s, s:O, s:O, s:{s:O, s:s}, s:b, s:b, s:s, s:s, s:{s:O}, s:s, s:s, s:b, s:b}",
          "__typename", "Repository", "id", "R_forge", "name", json_object_get(repo, "name"),
          "nameWithOwner", json_object_get(repo, "full_name"), "owner", "login",
          json_object_get(repo, "owner"), "__typename", "Organization", "hasIssuesEnabled", 1,
          "isPrivate", json_is_true(json_object_get(repo, "private")), "description", "", "url",
          url, "defaultBranchRef", "name", json_object_get(repo, "default_branch"),
          "viewerPermission", "WRITE", "visibility", "PRIVATE", "isFork", 0, "isArchived", 0);
      json_object_set_new(data, g->alias, resolve(&e, "Repository", src, g));
      json_decref(src);
    } else {
      json_object_set_new(data, g->alias, json_null());
    }
  }
  free_node(root);
  json_t *res = json_pack("{s:o}", "data", data);
  if (json_array_size(e.errors))
    json_object_set_new(res, "errors", e.errors);
  else
    json_decref(e.errors);
  /* forge_api_authorize may have filled resp with a refusal: the GraphQL
   * answer replaces it (GitHub answers 200 with errors) */
  forge_resp_json(c->resp, 200, res);
}
