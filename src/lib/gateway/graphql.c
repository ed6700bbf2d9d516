/* Read-only GraphQL: lexer, parser and policy. See graphql.h. */
#include "gateway/graphql.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const al_gw_rule al_gql_rule_git = {
    .name = "api-graphql",
    .sides = AL_GW_SIDE_API,
    .method = "POST",
    .path = "/graphql",
    .query = AL_GW_QUERY_NONE,
    .token = AL_GW_TOKEN_GIT,
    .body = AL_GW_BODY_GRAPHQL,
    .doc = "GraphQL: read-only queries of the run's repository (graphql.h)"};
const al_gw_rule al_gql_rule_ticket = {
    .name = "api-graphql-ticket",
    .sides = AL_GW_SIDE_API,
    .method = "POST",
    .path = "/graphql",
    .query = AL_GW_QUERY_NONE,
    .token = AL_GW_TOKEN_TICKET,
    .body = AL_GW_BODY_GRAPHQL,
    .doc = "GraphQL: read-only queries that read the ticket (graphql.h)"};

/* Fields refused anywhere below the top: they lead out of the run's
 * repository (another repository, an owner's or a user's other
 * repositories, search, global ids) or list the repository's other
 * issues (the REST rules read only the ticket). */
static const char *const refused_fields[] = {"repository",
                                             "repositories",
                                             "repositoryOwner",
                                             "forks",
                                             "parent",
                                             "source",
                                             "templateRepository",
                                             "organizations",
                                             "user",
                                             "viewer",
                                             "search",
                                             "node",
                                             "nodes_ids",
                                             "starredRepositories",
                                             "watching",
                                             "topRepositories",
                                             "pinnedItems",
                                             "pinnableItems",
                                             "pinnedRepositories",
                                             "contributionsCollection",
                                             "gist",
                                             "gists",
                                             "resource",
                                             "issues",
                                             "crossReferencedEvents_",
                                             "repositoryDiscussions",
                                             "sponsoring",
                                             "sponsors",
                                             "sponsorshipsAsMaintainer",
                                             "sponsorshipsAsSponsor",
                                             "enterprise",
                                             "enterprises",
                                             "projectsV2",
                                             "projectV2",
                                             "projects",
                                             "packages",
                                             "mentionableUsers_",
                                             "submodules",
                                             "lists",
                                             "socialAccounts",
                                             "savedReplies",
                                             "issueComments",
                                             "pullRequestsOwned_",
                                             "recentProjects",
                                             "topics",
                                             "repositoryTopics_",
                                             NULL};

/* Objects that may lie outside the repository, read only by their names:
 * a pull request's head and base repositories, a project card's project,
 * a team's organization (gh asks their name or login); below them only
 * these scalar fields. */
static const char *const foreign_repo_fields[] = {"headRepository", "baseRepository", "project",
                                                  "organization", NULL};
static const char *const foreign_repo_children[] = {
    "id", "name", "nameWithOwner", "login", "title", "number", "url", "__typename", NULL};

/* Types an inline fragment may name (§2.8.2). */
static const char *const fragment_types[] = {"Issue",
                                             "PullRequest",
                                             "User",
                                             "Bot",
                                             "Organization",
                                             "Mannequin",
                                             "EnterpriseUserAccount",
                                             "Team",
                                             "CheckRun",
                                             "StatusContext",
                                             "Commit",
                                             "App",
                                             "IssueComment",
                                             "PullRequestReview",
                                             "ProjectV2ItemFieldSingleSelectValue",
                                             NULL};

/* Variable types (§2.11): the built-in scalars and GitHub's scalars and
 * the two state enums gh passes as variables; [T], T! of them. */
static const char *const var_types[] = {
    "String",   "Int",         "Boolean",          "ID",         "Float", "URI",
    "DateTime", "GitObjectID", "PullRequestState", "IssueState", NULL};

static bool in(const char *const *set, const char *s, size_t n)
{
  for (size_t i = 0; set[i]; i++)
    if (strlen(set[i]) == n && memcmp(set[i], s, n) == 0)
      return true;
  return false;
}

/* ---- lexer (§2.1) ---- */

enum tk { T_EOF, T_PUNCT, T_NAME, T_INT, T_FLOAT, T_STRING, T_SPREAD, T_ERR };

typedef struct lex {
  const char *s;
  size_t n, i;
  enum tk k;
  const char *t; /* token text */
  size_t tl;
  char punct;
} lex;

static bool name_start(char c)
{
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool name_cont(char c)
{
  return name_start(c) || (c >= '0' && c <= '9');
}

static bool digit(char c)
{
  return c >= '0' && c <= '9';
}

static void next(lex *l)
{
  /* ignored tokens (§2.1.2-2.1.7): BOM, space, tab, line terminators,
   * comments, commas */
  for (;;) {
    if (l->i + 3 <= l->n && memcmp(l->s + l->i, "\xEF\xBB\xBF", 3) == 0) {
      l->i += 3;
      continue;
    }
    if (l->i >= l->n)
      break;
    char c = l->s[l->i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') {
      l->i++;
    } else if (c == '#') {
      while (l->i < l->n && l->s[l->i] != '\n' && l->s[l->i] != '\r')
        l->i++;
    } else {
      break;
    }
  }
  l->t = l->s + l->i;
  l->tl = 0;
  if (l->i >= l->n) {
    l->k = T_EOF;
    return;
  }
  char c = l->s[l->i];
  if (strchr("!$&():=@[]{}|", c) && c) {
    l->k = T_PUNCT;
    l->punct = c;
    l->tl = 1;
    l->i++;
    return;
  }
  if (c == '.') {
    if (l->i + 3 <= l->n && memcmp(l->s + l->i, "...", 3) == 0) {
      l->k = T_SPREAD;
      l->tl = 3;
      l->i += 3;
      return;
    }
    l->k = T_ERR;
    return;
  }
  if (name_start(c)) {
    size_t j = l->i;
    while (j < l->n && name_cont(l->s[j]))
      j++;
    l->k = T_NAME;
    l->tl = j - l->i;
    l->i = j;
    return;
  }
  if (c == '-' || digit(c)) {
    /* IntValue / FloatValue (§2.9.1, §2.9.2): no leading zero, and not
     * followed by a NameStart or '.' */
    size_t j = l->i;
    if (l->s[j] == '-')
      j++;
    if (j >= l->n || !digit(l->s[j]) || (l->s[j] == '0' && j + 1 < l->n && digit(l->s[j + 1]))) {
      l->k = T_ERR;
      return;
    }
    while (j < l->n && digit(l->s[j]))
      j++;
    bool fl = false;
    if (j < l->n && l->s[j] == '.') {
      j++;
      if (j >= l->n || !digit(l->s[j])) {
        l->k = T_ERR;
        return;
      }
      while (j < l->n && digit(l->s[j]))
        j++;
      fl = true;
    }
    if (j < l->n && (l->s[j] == 'e' || l->s[j] == 'E')) {
      j++;
      if (j < l->n && (l->s[j] == '+' || l->s[j] == '-'))
        j++;
      if (j >= l->n || !digit(l->s[j])) {
        l->k = T_ERR;
        return;
      }
      while (j < l->n && digit(l->s[j]))
        j++;
      fl = true;
    }
    if (j < l->n && (name_start(l->s[j]) || l->s[j] == '.')) {
      l->k = T_ERR;
      return;
    }
    l->k = fl ? T_FLOAT : T_INT;
    l->tl = j - l->i;
    l->i = j;
    return;
  }
  if (c == '"') {
    /* StringValue (§2.9.4); block strings are refused */
    if (l->i + 3 <= l->n && memcmp(l->s + l->i, "\"\"\"", 3) == 0) {
      l->k = T_ERR;
      return;
    }
    size_t j = l->i + 1;
    while (j < l->n && l->s[j] != '"') {
      unsigned char b = (unsigned char)l->s[j];
      if (b < 0x20 && b != '\t') {
        l->k = T_ERR;
        return;
      }
      if (b == '\\') {
        if (j + 1 >= l->n) {
          l->k = T_ERR;
          return;
        }
        char e = l->s[j + 1];
        if (e == 'u') {
          if (j + 6 > l->n) {
            l->k = T_ERR;
            return;
          }
          for (size_t h = j + 2; h < j + 6; h++)
            if (!strchr("0123456789abcdefABCDEF", l->s[h]) || !l->s[h]) {
              l->k = T_ERR;
              return;
            }
          j += 6;
          continue;
        }
        if (!strchr("\"\\/bfnrt", e) || !e) {
          l->k = T_ERR;
          return;
        }
        j += 2;
        continue;
      }
      j++;
    }
    if (j >= l->n || j - l->i - 1 > AL_GQL_STRING_MAX) {
      l->k = T_ERR;
      return;
    }
    l->k = T_STRING;
    l->t = l->s + l->i + 1; /* the raw contents, escapes undecoded */
    l->tl = j - l->i - 1;
    l->i = j + 1;
    return;
  }
  l->k = T_ERR;
}

static bool is_p(const lex *l, char p)
{
  return l->k == T_PUNCT && l->punct == p;
}

static bool is_name(const lex *l, const char *w)
{
  return l->k == T_NAME && strlen(w) == l->tl && memcmp(l->t, w, l->tl) == 0;
}

/* ---- the parser and the policy ---- */

typedef struct value {
  enum { V_NONE, V_STR, V_INT, V_OTHER, V_VAR_OBJECT } k;
  char s[256]; /* V_STR decoded (ASCII; other escapes as '?'), V_INT text */
} value;

typedef struct pstate {
  lex l;
  const al_gw_rules *r;
  json_t *vars; /* the request's variables object, or NULL */
  char vnames[AL_GQL_VARS_MAX][64];
  char vtypes[AL_GQL_VARS_MAX][64]; /* the named type of each (innermost of lists) */
  bool vlist[AL_GQL_VARS_MAX];      /* its type is a list ([T], [T!]!, ...) */
  size_t nvars;
  const al_gql_profile *prof; /* NULL: the forge's policy (check_field); else its hooks */
  void *pctx;
  bool mutation; /* the operation is a mutation (prof->mutation only) */
  al_gql_info *info;
  const char *why;
  char *where;
} pstate;

#define FAIL(ps, reason)                                                                           \
  do {                                                                                             \
    (ps)->why = "graphql-refused: " reason;                                                        \
    return -1;                                                                                     \
  } while (0)

static void set_where(pstate *ps, const char *s, size_t n)
{
  if (n > 64)
    n = 64;
  memcpy(ps->where, s, n);
  ps->where[n] = '\0';
}

static void decode_str(const char *t, size_t n, char *out, size_t cap)
{
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < cap; i++) {
    char c = t[i];
    if (c == '\\' && i + 1 < n) {
      char e = t[++i];
      if (e == 'u' && i + 4 < n) {
        char h[5] = {t[i + 1], t[i + 2], t[i + 3], t[i + 4], 0};
        long v = strtol(h, NULL, 16);
        c = '?';
        if (v >= 0x20 && v < 0x7f)
          c = (char)v;
        i += 4;
      } else {
        switch (e) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        case 'r':
          c = '\r';
          break;
        case 'b':
          c = '\b';
          break;
        case 'f':
          c = '\f';
          break;
        default:
          c = e;
        }
      }
    }
    out[o++] = c;
  }
  out[o] = '\0';
}

static int parse_value(pstate *ps, value *v, bool is_const, int depth);

/* A value (§2.9); *v gets strings, ints and resolved variables. */
static int parse_value(pstate *ps, value *v, bool is_const, int depth)
{
  lex *l = &ps->l;
  v->k = V_OTHER;
  v->s[0] = '\0';
  if (depth > 8)
    FAIL(ps, "too-deep");
  if (is_p(l, '$')) {
    if (is_const)
      FAIL(ps, "syntax");
    next(l);
    if (l->k != T_NAME)
      FAIL(ps, "syntax");
    bool declared = false;
    for (size_t i = 0; i < ps->nvars; i++)
      if (strlen(ps->vnames[i]) == l->tl && memcmp(ps->vnames[i], l->t, l->tl) == 0)
        declared = true;
    if (!declared)
      FAIL(ps, "variable-value");
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)l->tl, l->t);
    json_t *jv = ps->vars ? json_object_get(ps->vars, nm) : NULL;
    if (json_is_string(jv)) {
      v->k = V_STR;
      snprintf(v->s, sizeof v->s, "%s", json_string_value(jv));
    } else if (json_is_integer(jv)) {
      v->k = V_INT;
      snprintf(v->s, sizeof v->s, "%lld", (long long)json_integer_value(jv));
    } else if (json_is_object(jv) && ps->prof) {
      v->k = V_VAR_OBJECT; /* the profile's hook reads it by name */
      snprintf(v->s, sizeof v->s, "%s", nm);
    } else {
      v->k = V_NONE; /* absent or null: the default applies (a literal we saw) */
    }
    next(l);
    return 0;
  }
  switch (l->k) {
  case T_INT:
    v->k = V_INT;
    snprintf(v->s, sizeof v->s, "%.*s", (int)(l->tl < 40 ? l->tl : 40), l->t);
    next(l);
    return 0;
  case T_FLOAT:
  case T_NAME: /* true, false, null, enum values */
    next(l);
    return 0;
  case T_STRING:
    v->k = V_STR;
    decode_str(l->t, l->tl, v->s, sizeof v->s);
    next(l);
    return 0;
  default:
    break;
  }
  if (is_p(l, '[')) {
    next(l);
    while (!is_p(l, ']')) {
      value sub;
      if (l->k == T_EOF || parse_value(ps, &sub, is_const, depth + 1) < 0)
        FAIL(ps, "syntax");
    }
    next(l);
    return 0;
  }
  if (is_p(l, '{')) {
    next(l);
    while (!is_p(l, '}')) {
      if (l->k != T_NAME)
        FAIL(ps, "syntax");
      next(l);
      if (!is_p(l, ':'))
        FAIL(ps, "syntax");
      next(l);
      value sub;
      if (parse_value(ps, &sub, is_const, depth + 1) < 0)
        return -1;
    }
    next(l);
    return 0;
  }
  FAIL(ps, "syntax");
}

typedef struct args {
  struct {
    char name[32];
    value v;
  } a[16];
  size_t n;
} args;

static const value *arg(const args *a, const char *name)
{
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->a[i].name, name) == 0)
      return &a->a[i].v;
  return NULL;
}

static int parse_args(pstate *ps, args *a)
{
  lex *l = &ps->l;
  a->n = 0;
  if (!is_p(l, '('))
    return 0;
  next(l);
  while (!is_p(l, ')')) {
    if (l->k != T_NAME || a->n == 16)
      FAIL(ps, "syntax");
    snprintf(a->a[a->n].name, sizeof a->a[a->n].name, "%.*s", (int)(l->tl < 31 ? l->tl : 31), l->t);
    next(l);
    if (!is_p(l, ':'))
      FAIL(ps, "syntax");
    next(l);
    if (parse_value(ps, &a->a[a->n].v, false, 0) < 0)
      return -1;
    a->n++;
  }
  next(l);
  if (a->n == 0)
    FAIL(ps, "syntax");
  return 0;
}

/* C_NODE: under the top-level node(id:) gh uses to page the ticket's
 * comments (only `... on Issue|PullRequest` there); C_NODE_FRAG: inside one
 * of those fragments (only `comments` there). */
enum ctx { C_TOP, C_INSIDE, C_FOREIGN, C_NODE, C_NODE_FRAG };

static int parse_selection_set(pstate *ps, enum ctx cx, unsigned depth);

static int check_field(pstate *ps, enum ctx cx, const char *name, size_t nl, const args *a)
{
  const al_gw_rules *r = ps->r;
  if (cx == C_NODE || (cx == C_NODE_FRAG && !(nl == 8 && memcmp(name, "comments", 8) == 0))) {
    set_where(ps, name, nl);
    FAIL(ps, "field");
  }
  if (cx == C_FOREIGN && !in(foreign_repo_children, name, nl)) {
    set_where(ps, name, nl);
    FAIL(ps, "field");
  }
  if (cx == C_TOP) {
    if (nl == 10 && memcmp(name, "__typename", 10) == 0)
      return 0;
    if (nl == 6 && memcmp(name, "__type", 6) == 0)
      return 0;
    if (nl == 4 && memcmp(name, "node", 4) == 0) {
      /* gh issue view --comments pages comments by the issue's node id
       * (preloadIssueComments): allowed for comments only; see graphql.h */
      if (a->n != 1 || !arg(a, "id"))
        FAIL(ps, "top-level-field");
      ps->info->issue = true;
      return 0;
    }
    if (!(nl == 10 && memcmp(name, "repository", 10) == 0)) {
      set_where(ps, name, nl);
      FAIL(ps, "top-level-field");
    }
    const value *o = arg(a, "owner"), *n = arg(a, "name");
    if (a->n != 2 || !o || !n || o->k != V_STR || n->k != V_STR)
      FAIL(ps, "other-repository");
    if (strcasecmp(o->s, r->owner) != 0 || strcasecmp(n->s, r->name) != 0)
      FAIL(ps, "other-repository");
    return 0;
  }
  if (in(refused_fields, name, nl) || (nl == 5 && memcmp(name, "nodes", 5) == 0 && a->n > 0)) {
    set_where(ps, name, nl);
    FAIL(ps, "field");
  }
  if ((nl == 5 && memcmp(name, "issue", 5) == 0) ||
      (nl == 18 && memcmp(name, "issueOrPullRequest", 18) == 0)) {
    const value *num = arg(a, "number");
    if (a->n != 1 || !num || num->k != V_INT || strcmp(num->s, r->ticket) != 0)
      FAIL(ps, "other-ticket");
    ps->info->issue = true;
  }
  if (nl == 12 && memcmp(name, "pullRequests", 12) == 0) {
    const value *h = arg(a, "headRefName");
    if (!h || h->k != V_STR || strcmp(h->s, r->branch) != 0)
      FAIL(ps, "pulls-not-run-branch");
  }
  return 0;
}

static int parse_field(pstate *ps, enum ctx cx, unsigned depth)
{
  lex *l = &ps->l;
  const char *name = l->t;
  size_t nl = l->tl;
  next(l);
  if (is_p(l, ':')) { /* alias (§2.7) */
    next(l);
    if (l->k != T_NAME)
      FAIL(ps, "syntax");
    name = l->t;
    nl = l->tl;
    next(l);
  }
  if (++ps->info->fields > AL_GQL_FIELDS_MAX)
    FAIL(ps, "too-many-fields");
  args a;
  if (parse_args(ps, &a) < 0)
    return -1;
  if (is_p(l, '@'))
    FAIL(ps, "directive");
  if (ps->prof) {
    al_gql_arg pa[16];
    for (size_t i = 0; i < a.n; i++) {
      pa[i].name = a.a[i].name;
      pa[i].kind = a.a[i].v.k == V_STR          ? AL_GQL_ARG_STR
                   : a.a[i].v.k == V_INT        ? AL_GQL_ARG_INT
                   : a.a[i].v.k == V_VAR_OBJECT ? AL_GQL_ARG_VAR_OBJECT
                   : a.a[i].v.k == V_NONE       ? AL_GQL_ARG_NONE
                                                : AL_GQL_ARG_OTHER;
      pa[i].s = a.a[i].v.s;
    }
    const char *why = NULL;
    int sub = ps->prof->field(ps->pctx, (int)cx, ps->mutation, name, nl, pa, a.n, ps->vars, &why);
    if (sub < 0) {
      set_where(ps, name, nl);
      ps->why = why ? why : "graphql-refused: field";
      return -1;
    }
    if (is_p(l, '{'))
      return parse_selection_set(ps, (enum ctx)sub, depth + 1);
    return 0;
  }
  if (check_field(ps, cx, name, nl, &a) < 0)
    return -1;
  if (is_p(l, '{')) {
    enum ctx sub = cx == C_FOREIGN || in(foreign_repo_fields, name, nl) ? C_FOREIGN : C_INSIDE;
    if (cx == C_TOP && nl == 6 && memcmp(name, "__type", 6) == 0)
      sub = C_INSIDE;
    if (cx == C_TOP && nl == 4 && memcmp(name, "node", 4) == 0)
      sub = C_NODE;
    return parse_selection_set(ps, sub, depth + 1);
  }
  return 0;
}

/* SelectionSet (§2.4): { Selection+ } */
static int parse_selection_set(pstate *ps, enum ctx cx, unsigned depth)
{
  lex *l = &ps->l;
  if (depth > AL_GQL_DEPTH_MAX)
    FAIL(ps, "too-deep");
  if (depth > ps->info->depth)
    ps->info->depth = depth;
  if (!is_p(l, '{'))
    FAIL(ps, "syntax");
  next(l);
  if (is_p(l, '}'))
    FAIL(ps, "syntax");
  while (!is_p(l, '}')) {
    if (l->k == T_NAME) {
      if (parse_field(ps, cx, depth) < 0)
        return -1;
    } else if (l->k == T_SPREAD) {
      if (ps->prof)
        FAIL(ps, "fragment"); /* another API's profile admits no fragment */
      next(l);
      if (!is_name(l, "on"))
        FAIL(ps, "fragment"); /* a named spread, or a condition-less inline fragment */
      next(l);
      if (l->k != T_NAME || !in(fragment_types, l->t, l->tl)) {
        if (l->k == T_NAME)
          set_where(ps, l->t, l->tl);
        FAIL(ps, "fragment");
      }
      bool item = is_name(l, "Issue") || is_name(l, "PullRequest");
      next(l);
      if (is_p(l, '@'))
        FAIL(ps, "directive");
      if (cx == C_TOP || cx == C_NODE_FRAG || (cx == C_NODE && !item))
        FAIL(ps, "fragment");
      if (parse_selection_set(ps, cx == C_NODE ? C_NODE_FRAG : cx, depth + 1) < 0)
        return -1;
    } else {
      FAIL(ps, "syntax");
    }
  }
  next(l);
  return 0;
}

/* Type (§2.11): NamedType, [Type], Type! */
static int parse_type(pstate *ps, int depth, char *tname, bool *list)
{
  lex *l = &ps->l;
  if (depth > 3)
    FAIL(ps, "variable-type");
  if (is_p(l, '[')) {
    *list = true;
    next(l);
    if (parse_type(ps, depth + 1, tname, list) < 0)
      return -1;
    if (!is_p(l, ']'))
      FAIL(ps, "syntax");
    next(l);
  } else if (l->k == T_NAME) {
    snprintf(tname, 64, "%.*s", (int)(l->tl < 63 ? l->tl : 63), l->t);
    if (!in(ps->prof ? ps->prof->var_types : var_types, l->t, l->tl)) {
      set_where(ps, l->t, l->tl);
      FAIL(ps, "variable-type");
    }
    next(l);
  } else {
    FAIL(ps, "syntax");
  }
  if (is_p(l, '!'))
    next(l);
  return 0;
}

/* VariableDefinitions (§2.10) */
static int parse_var_defs(pstate *ps)
{
  lex *l = &ps->l;
  if (!is_p(l, '('))
    return 0;
  next(l);
  while (!is_p(l, ')')) {
    if (!is_p(l, '$'))
      FAIL(ps, "syntax");
    next(l);
    if (l->k != T_NAME || l->tl >= 64)
      FAIL(ps, "syntax");
    if (ps->nvars == AL_GQL_VARS_MAX)
      FAIL(ps, "variable-type");
    for (size_t k = 0; k < ps->nvars; k++)
      if (strlen(ps->vnames[k]) == l->tl && memcmp(ps->vnames[k], l->t, l->tl) == 0) {
        set_where(ps, l->t, l->tl);
        FAIL(ps, "variable-duplicate"); /* §5.8.1 Variable Uniqueness */
      }
    size_t vi = ps->nvars++;
    snprintf(ps->vnames[vi], 64, "%.*s", (int)l->tl, l->t);
    ps->vlist[vi] = false;
    next(l);
    if (!is_p(l, ':'))
      FAIL(ps, "syntax");
    next(l);
    if (parse_type(ps, 0, ps->vtypes[vi], &ps->vlist[vi]) < 0)
      return -1;
    if (is_p(l, '=')) {
      next(l);
      value v;
      if (parse_value(ps, &v, true, 0) < 0)
        return -1;
      if (v.k == V_STR || v.k == V_INT) /* a default value cannot name the repository */
        FAIL(ps, "variable-value");
    }
    if (is_p(l, '@'))
      FAIL(ps, "directive");
  }
  next(l);
  if (ps->nvars == 0)
    FAIL(ps, "syntax");
  return 0;
}

/* Every variable value must be declared, and a scalar or a list of them. */
static int check_vars(pstate *ps)
{
  const char *k;
  json_t *v;
  json_object_foreach(ps->vars, k, v)
  {
    bool declared = false, object_ok = false;
    for (size_t i = 0; i < ps->nvars; i++)
      if (strcmp(ps->vnames[i], k) == 0) {
        declared = true;
        /* an object only for a variable of an input object type itself,
         * not a list of one (§5.8.5 Variable Usages Are Allowed) */
        object_ok = ps->prof && ps->prof->object_types && !ps->vlist[i] &&
                    in(ps->prof->object_types, ps->vtypes[i], strlen(ps->vtypes[i]));
      }
    if (!declared)
      FAIL(ps, "variable-value");
    if (json_is_object(v) && !object_ok)
      FAIL(ps, "variable-value");
    if (json_is_array(v)) {
      size_t i;
      json_t *e;
      json_array_foreach(v, i, e) if (json_is_object(e) || json_is_array(e))
          FAIL(ps, "variable-value");
    }
  }
  return 0;
}

static int parse_document(pstate *ps)
{
  lex *l = &ps->l;
  next(l);
  if (l->k == T_EOF)
    FAIL(ps, "syntax");
  if (is_name(l, "mutation") && !(ps->prof && ps->prof->mutation))
    FAIL(ps, "mutation");
  if (is_name(l, "subscription"))
    FAIL(ps, "subscription");
  if (is_name(l, "fragment"))
    FAIL(ps, "fragment");
  if (is_name(l, "query") || is_name(l, "mutation")) {
    ps->mutation = is_name(l, "mutation");
    next(l);
    if (l->k == T_NAME)
      next(l); /* the operation's name */
    if (parse_var_defs(ps) < 0)
      return -1;
    if (is_p(l, '@'))
      FAIL(ps, "directive");
  } else if (!is_p(l, '{')) {
    FAIL(ps, "syntax");
  }
  if (check_vars(ps) < 0)
    return -1;
  if (parse_selection_set(ps, C_TOP, 1) < 0)
    return -1;
  if (l->k == T_ERR)
    FAIL(ps, "syntax");
  if (l->k != T_EOF) {
    if (is_name(l, "mutation"))
      FAIL(ps, "mutation");
    if (is_name(l, "subscription"))
      FAIL(ps, "subscription");
    if (is_name(l, "fragment"))
      FAIL(ps, "fragment");
    FAIL(ps, "several-operations");
  }
  return 0;
}

static int check_body(const al_gw_rules *r, const al_gql_profile *prof, void *pctx,
                      const char *body, size_t len, al_gql_info *info, const char **why,
                      char where_buf[80])
{
  memset(info, 0, sizeof *info);
  where_buf[0] = '\0';
  if (len > AL_GQL_BODY_MAX) {
    *why = "graphql-refused: too-large";
    return -1;
  }
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    *why = "graphql-refused: body-not-json";
    return -1;
  }
  json_t *q = json_object_get(j, "query"), *vars = json_object_get(j, "variables");
  json_t *opn = json_object_get(j, "operationName");
  size_t keys = json_object_size(j);
  size_t want = 1 + (vars != NULL) + (opn != NULL);
  if (!json_is_object(j) || !json_is_string(q) || keys != want ||
      (vars && !json_is_object(vars) && !json_is_null(vars)) ||
      (opn && !json_is_string(opn) && !json_is_null(opn))) {
    json_decref(j);
    *why = "graphql-refused: body-shape";
    return -1;
  }
  size_t ql = json_string_length(q);
  if (ql > AL_GQL_QUERY_MAX ||
      json_object_size(json_is_object(vars) ? vars : NULL) > AL_GQL_VARS_MAX) {
    json_decref(j);
    *why = "graphql-refused: too-large";
    return -1;
  }
  pstate *ps = calloc(1, sizeof *ps);
  if (!ps) {
    json_decref(j);
    *why = "graphql-refused: too-large";
    return -1;
  }
  ps->l.s = json_string_value(q);
  ps->l.n = ql;
  ps->r = r;
  ps->prof = prof;
  ps->pctx = pctx;
  ps->vars = json_is_object(vars) ? vars : NULL;
  ps->info = info;
  ps->where = where_buf;
  int rc = parse_document(ps);
  if (rc < 0)
    *why = ps->why;
  free(ps);
  json_decref(j);
  return rc;
}

int al_gql_check(const al_gw_rules *r, const char *body, size_t len, al_gql_info *info,
                 const char **why, char where_buf[80])
{
  return check_body(r, NULL, NULL, body, len, info, why, where_buf);
}

int al_gql_check_profile(const al_gql_profile *prof, void *ctx, const char *body, size_t len,
                         al_gql_info *info, const char **why, char where_buf[80])
{
  return check_body(NULL, prof, ctx, body, len, info, why, where_buf);
}
