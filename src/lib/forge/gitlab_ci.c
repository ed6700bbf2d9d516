/* .gitlab-ci.yml read as GitLab would run it for a run branch: see
 * gitlab_ci.h. The YAML through the one walker's parser (al_yw_open), the
 * expressions of rules:if and only:variables by a small recursive parser
 * with three answers (yes, no, cannot tell). */
#include "forge/gitlab_ci.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "forge/workflow.h"
#include "forge/workflow_internal.h"

/* The most top-level keys (jobs, templates, keywords) a file may have. */
#define MAX_KEYS 1000

/* the pipeline being judged */
enum pipe { P_PUSH = 0, P_MR = 1 };

struct env {
  const al_glci_ctx *ctx;
  enum pipe pipe;
  char run[96];
};

/* ---- regular expressions ------------------------------------------------ */

#define MAX_RE 256
#define MAX_QUANT 16

int al_glci_regex_match(const char *re, const char *s)
{
  size_t n = strlen(re);
  if (n < 2 || re[0] != '/')
    return AL_GLCI_MAYBE;
  const char *end = strrchr(re, '/');
  if (end == re)
    return AL_GLCI_MAYBE;
  int flags = REG_EXTENDED | REG_NOSUB;
  for (const char *f = end + 1; *f; f++) {
    if (*f == 'i')
      flags |= REG_ICASE;
    else
      return AL_GLCI_MAYBE;
  }
  /* RE2 to POSIX ERE for the common subset: at most MAX_RE bytes and
   * MAX_QUANT quantifiers, never one quantifier on another (`a++`,
   * undefined in ERE: glibc's regcomp can grow without bound on them) */
  if ((size_t)(end - re) > MAX_RE)
    return AL_GLCI_MAYBE;
  struct wf_buf b = {0};
  bool after_quant = false;
  int n_quant = 0;
  for (const char *p = re + 1; p < end; p++) {
    bool quant = *p == '*' || *p == '+' || *p == '?';
    if (quant && (after_quant || ++n_quant > MAX_QUANT)) {
      free(wf_buf_take(&b));
      return AL_GLCI_MAYBE;
    }
    after_quant = quant;
    /* (?flags) and bounded repeats {n,m} are outside the subset (a
     * repeat of repeats can make regcomp's automaton huge) */
    if ((*p == '(' && p[1] == '?') || *p == '{') {
      free(wf_buf_take(&b));
      return AL_GLCI_MAYBE;
    }
    if (*p == '\\' && p + 1 < end) {
      p++;
      switch (*p) {
      case 'd':
        wf_buf_add(&b, "[0-9]");
        break;
      case 'w':
        wf_buf_add(&b, "[A-Za-z0-9_]");
        break;
      case 's':
        wf_buf_add(&b, "[[:space:]]");
        break;
      case '/':
        wf_buf_add(&b, "/");
        break;
      default:
        if (isalnum((unsigned char)*p)) {
          free(wf_buf_take(&b));
          return AL_GLCI_MAYBE;
        }
        wf_buf_add(&b, "\\%c", *p);
      }
      continue;
    }
    wf_buf_add(&b, "%c", *p);
  }
  al_autofree char *pat = wf_buf_take(&b);
  regex_t rx;
  if (regcomp(&rx, pat, flags) != 0)
    return AL_GLCI_MAYBE;
  int m = regexec(&rx, s, 0, NULL, 0) == 0 ? AL_GLCI_YES : AL_GLCI_NO;
  regfree(&rx);
  return m;
}

void al_glci_run_branch(const char *prefix, char *out, size_t n)
{
  snprintf(out, n, "%s7-0123abcd", prefix ? prefix : "airlock/");
}

/* ---- expressions -------------------------------------------------------- */

enum vkind { V_UNDEF, V_STR, V_UNKNOWN, V_REGEX };

struct val {
  enum vkind k;
  char s[256];
};

struct parser {
  const char *p;
  const struct env *e;
  bool bad;
  int depth; /* parentheses open (hostile input: bounded) */
};

/* The deepest nesting of parentheses an expression may have. */
#define MAX_PARENS 32

static void skip_ws(struct parser *ps)
{
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
    ps->p++;
}

/* A predefined variable's value in this pipeline. */
static void lookup(const struct env *e, const char *name, struct val *v)
{
  const al_glci_ctx *c = e->ctx;
  bool mr = e->pipe == P_MR;
  v->k = V_STR;
  v->s[0] = '\0';
  if (!strcmp(name, "CI_PIPELINE_SOURCE"))
    snprintf(v->s, sizeof v->s, "%s", mr ? "merge_request_event" : "push");
  else if (!strcmp(name, "CI_COMMIT_REF_NAME") || !strcmp(name, "CI_COMMIT_REF_SLUG"))
    snprintf(v->s, sizeof v->s, "%s", e->run);
  else if (!strcmp(name, "CI_COMMIT_BRANCH"))
    mr ? (void)(v->k = V_UNDEF) : (void)snprintf(v->s, sizeof v->s, "%s", e->run);
  else if (!strcmp(name, "CI_DEFAULT_BRANCH"))
    snprintf(v->s, sizeof v->s, "%s", c->default_branch ? c->default_branch : "");
  else if (!strcmp(name, "CI_COMMIT_TAG") || !strcmp(name, "CI_EXTERNAL_PULL_REQUEST_IID"))
    v->k = V_UNDEF;
  else if (!strcmp(name, "CI_COMMIT_REF_PROTECTED"))
    snprintf(v->s, sizeof v->s, "%s", c->run_protected ? "true" : "false");
  else if (!strcmp(name, "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"))
    mr ? (void)snprintf(v->s, sizeof v->s, "%s", e->run) : (void)(v->k = V_UNDEF);
  else if (!strcmp(name, "CI_MERGE_REQUEST_TARGET_BRANCH_NAME"))
    mr ? (void)snprintf(v->s, sizeof v->s, "%s", c->target_branch) : (void)(v->k = V_UNDEF);
  else if (!strcmp(name, "CI_MERGE_REQUEST_IID") || !strcmp(name, "CI_MERGE_REQUEST_ID"))
    mr ? (void)snprintf(v->s, sizeof v->s, "1") : (void)(v->k = V_UNDEF);
  else
    v->k = V_UNKNOWN; /* the project's own variables, CI_OPEN_MERGE_REQUESTS ... */
}

static void operand(struct parser *ps, struct val *v)
{
  skip_ws(ps);
  const char *p = ps->p;
  v->k = V_UNKNOWN;
  v->s[0] = '\0';
  if (*p == '$') {
    p++;
    bool brace = *p == '{';
    if (brace)
      p++;
    char name[128];
    size_t n = 0;
    while ((isalnum((unsigned char)*p) || *p == '_') && n + 1 < sizeof name)
      name[n++] = *p++;
    name[n] = '\0';
    if (brace) {
      if (*p != '}')
        ps->bad = true;
      else
        p++;
    }
    if (!n)
      ps->bad = true;
    else
      lookup(ps->e, name, v);
  } else if (*p == '"' || *p == '\'') {
    char q = *p++;
    size_t n = 0;
    while (*p && *p != q) {
      if (n + 1 < sizeof v->s)
        v->s[n++] = *p;
      p++;
    }
    v->s[n] = '\0';
    if (*p != q)
      ps->bad = true;
    else
      p++;
    v->k = V_STR;
  } else if (*p == '/') {
    size_t n = 0;
    v->s[n++] = *p++;
    while (*p && *p != '/') {
      if (*p == '\\' && p[1] && n + 2 < sizeof v->s) {
        v->s[n++] = *p++;
      }
      if (n + 1 < sizeof v->s)
        v->s[n++] = *p;
      p++;
    }
    if (*p != '/') {
      ps->bad = true;
    } else {
      v->s[n++] = *p++;
      while (*p == 'i' && n + 1 < sizeof v->s)
        v->s[n++] = *p++;
    }
    v->s[n < sizeof v->s ? n : sizeof v->s - 1] = '\0';
    v->k = V_REGEX;
  } else if (!strncmp(p, "null", 4) && !isalnum((unsigned char)p[4])) {
    p += 4;
    v->k = V_UNDEF;
  } else {
    ps->bad = true;
  }
  ps->p = p;
}

static int tri_not(int t)
{
  return t == AL_GLCI_MAYBE ? t : !t;
}

static int compare(const struct val *a, const char *op, const struct val *b)
{
  bool neg = op[0] == '!';
  int r;
  if (op[1] == '~') {
    if (b->k != V_REGEX || a->k == V_UNKNOWN)
      return AL_GLCI_MAYBE;
    r = a->k == V_UNDEF ? AL_GLCI_NO : al_glci_regex_match(b->s, a->s);
  } else {
    if (a->k == V_UNKNOWN || b->k == V_UNKNOWN || a->k == V_REGEX || b->k == V_REGEX)
      return AL_GLCI_MAYBE;
    if (a->k == V_UNDEF || b->k == V_UNDEF)
      r = a->k == b->k ? AL_GLCI_YES : AL_GLCI_NO;
    else
      r = strcmp(a->s, b->s) == 0 ? AL_GLCI_YES : AL_GLCI_NO;
  }
  return neg ? tri_not(r) : r;
}

static int expr_or(struct parser *ps);

static int primary(struct parser *ps)
{
  skip_ws(ps);
  if (*ps->p == '(') {
    if (++ps->depth > MAX_PARENS) {
      ps->bad = true;
      ps->p += strlen(ps->p);
      return AL_GLCI_MAYBE;
    }
    ps->p++;
    int r = expr_or(ps);
    ps->depth--;
    skip_ws(ps);
    if (*ps->p != ')')
      ps->bad = true;
    else
      ps->p++;
    return r;
  }
  struct val a;
  operand(ps, &a);
  skip_ws(ps);
  const char *p = ps->p;
  if ((p[0] == '=' || p[0] == '!') && (p[1] == '=' || p[1] == '~')) {
    char op[3] = {p[0], p[1], 0};
    ps->p += 2;
    struct val b;
    operand(ps, &b);
    return compare(&a, op, &b);
  }
  /* `$VAR` alone: defined and not empty */
  if (a.k == V_UNKNOWN)
    return AL_GLCI_MAYBE;
  return a.k == V_STR && a.s[0] ? AL_GLCI_YES : AL_GLCI_NO;
}

static int expr_and(struct parser *ps)
{
  int r = primary(ps);
  for (;;) {
    skip_ws(ps);
    if (ps->p[0] != '&' || ps->p[1] != '&')
      return r;
    ps->p += 2;
    if (ps->bad)
      return AL_GLCI_MAYBE;
    int b = primary(ps);
    r = (r == AL_GLCI_NO || b == AL_GLCI_NO)     ? AL_GLCI_NO
        : (r == AL_GLCI_YES && b == AL_GLCI_YES) ? AL_GLCI_YES
                                                 : AL_GLCI_MAYBE;
  }
}

static int expr_or(struct parser *ps)
{
  int r = expr_and(ps);
  for (;;) {
    skip_ws(ps);
    if (ps->p[0] != '|' || ps->p[1] != '|')
      return r;
    ps->p += 2;
    if (ps->bad)
      return AL_GLCI_MAYBE;
    int b = expr_and(ps);
    r = (r == AL_GLCI_YES || b == AL_GLCI_YES) ? AL_GLCI_YES
        : (r == AL_GLCI_NO && b == AL_GLCI_NO) ? AL_GLCI_NO
                                               : AL_GLCI_MAYBE;
  }
}

/* A whole expression; one the parser does not follow is may-match. */
static int eval(const struct env *e, const char *s)
{
  struct parser ps = {.p = s, .e = e};
  int r = expr_or(&ps);
  skip_ws(&ps);
  if (ps.bad || *ps.p)
    return AL_GLCI_MAYBE;
  return r;
}

/* ---- rules, only, except ------------------------------------------------ */

/* rules: (a job's, or workflow:'s with default_when "always"): may it run?
 * The first rule whose if: holds decides; rules that cannot be decided make
 * the answer "maybe" unless a rule before them surely excludes it. */
static int eval_rules(const struct env *e, struct fy_node *rules, char *how, size_t hn)
{
  if (!fy_node_is_sequence(rules)) {
    snprintf(how, hn, "rules: is not a list");
    return AL_GLCI_MAYBE;
  }
  void *it = NULL;
  struct fy_node *r;
  int idx = 0;
  bool maybe_never = false; /* a `when: never` rule before may have matched */
  while ((r = fy_node_sequence_iterate(rules, &it)) != NULL) {
    idx++;
    int cond = AL_GLCI_YES;
    struct fy_node *v;
    if (wf_get(r, "if", &v)) {
      al_autofree char *s = wf_scalar(v);
      cond = s ? eval(e, s) : AL_GLCI_MAYBE;
    }
    if (cond != AL_GLCI_NO && (wf_get(r, "changes", &v) || wf_get(r, "exists", &v)))
      cond = AL_GLCI_MAYBE;
    bool never = wf_get(r, "when", &v) && wf_scalar_is(v, "never");
    if (cond == AL_GLCI_NO)
      continue;
    if (never) {
      if (cond == AL_GLCI_YES) {
        snprintf(how, hn, "rules[%d] (when: never) matches first", idx);
        return AL_GLCI_NO;
      }
      maybe_never = true;
      continue;
    }
    snprintf(how, hn, "rules[%d] %s", idx, cond == AL_GLCI_YES ? "matches" : "may match");
    return cond == AL_GLCI_YES && !maybe_never ? AL_GLCI_YES : AL_GLCI_MAYBE;
  }
  snprintf(how, hn, "no rule matches");
  return AL_GLCI_NO;
}

/* One refs: entry of only/except for this pipeline. */
static int ref_matches(const struct env *e, const char *ref)
{
  char r[256];
  snprintf(r, sizeof r, "%s", ref);
  char *at = strchr(r, '@'); /* REF@group/project: the project part is not judged */
  if (at && r[0] != '/')
    *at = '\0';
  if (e->pipe == P_MR)
    return !strcmp(r, "merge_requests") ? AL_GLCI_YES : AL_GLCI_NO;
  if (!strcmp(r, "branches") || !strcmp(r, "pushes"))
    return AL_GLCI_YES;
  static const char *const kw[] = {
      "tags",     "api", "external",       "pipelines", "schedules",
      "triggers", "web", "merge_requests", "chat",      "external_pull_requests"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(kw); i++)
    if (!strcmp(r, kw[i]))
      return AL_GLCI_NO;
  if (r[0] == '/')
    return al_glci_regex_match(r, e->run);
  return !strcmp(r, e->run) ? AL_GLCI_YES : AL_GLCI_NO;
}

/* only: or except: (a list of refs, or a mapping of refs/variables/changes):
 * does it match this pipeline? */
static int only_matches(const struct env *e, struct fy_node *v)
{
  struct fy_node *refs = v, *vars = NULL, *x = NULL;
  if (fy_node_is_mapping(v)) {
    refs = NULL;
    wf_get(v, "refs", &refs);
    wf_get(v, "variables", &vars);
    if (wf_get(v, "changes", &x) || wf_get(v, "kubernetes", &x))
      return AL_GLCI_MAYBE;
  } else if (wf_is_scalar(v)) {
    al_autofree char *s = wf_scalar(v);
    return ref_matches(e, s);
  }
  int r = AL_GLCI_YES;
  if (refs) {
    if (!fy_node_is_sequence(refs))
      return AL_GLCI_MAYBE;
    r = AL_GLCI_NO;
    void *it = NULL;
    struct fy_node *n;
    while ((n = fy_node_sequence_iterate(refs, &it)) != NULL) {
      al_autofree char *s = wf_scalar(n);
      int m = s ? ref_matches(e, s) : AL_GLCI_MAYBE;
      if (m == AL_GLCI_YES)
        r = AL_GLCI_YES;
      else if (m == AL_GLCI_MAYBE && r == AL_GLCI_NO)
        r = AL_GLCI_MAYBE;
    }
  }
  if (vars && r != AL_GLCI_NO) {
    int any = AL_GLCI_NO;
    void *it = NULL;
    struct fy_node *n;
    while (fy_node_is_sequence(vars) && (n = fy_node_sequence_iterate(vars, &it)) != NULL) {
      al_autofree char *s = wf_scalar(n);
      int m = s ? eval(e, s) : AL_GLCI_MAYBE;
      any = m == AL_GLCI_YES ? AL_GLCI_YES : (m == AL_GLCI_MAYBE && !any) ? AL_GLCI_MAYBE : any;
    }
    r = any == AL_GLCI_NO                          ? AL_GLCI_NO
        : (r == AL_GLCI_YES && any == AL_GLCI_YES) ? r
                                                   : AL_GLCI_MAYBE;
  }
  return r;
}

/* ---- jobs --------------------------------------------------------------- */

/* The job named `name` of the file (a hidden `.template` too), or NULL. */
static struct fy_node *job_node(struct fy_node *root, const char *name)
{
  struct fy_node *v;
  return wf_get(root, name, &v) && v && fy_node_is_mapping(v) ? v : NULL;
}

/* key of the job, or of the templates it extends (depth-first, the last
 * extended first as GitLab merges them), or NULL. GitLab allows 11 levels
 * of extends; *budget bounds the templates visited (a hostile file's
 * `extends: [a, a, a, ...]` on every level). */
static struct fy_node *inherited_b(struct fy_node *root, struct fy_node *job, const char *key,
                                   int depth, int *budget)
{
  struct fy_node *v;
  if (!job || depth > 11 || --*budget < 0)
    return NULL;
  if (wf_get(job, key, &v))
    return v ? v : NULL;
  struct fy_node *ext;
  if (!wf_get(job, "extends", &ext) || !ext)
    return NULL;
  if (wf_is_scalar(ext)) {
    al_autofree char *s = wf_scalar(ext);
    return inherited_b(root, job_node(root, s), key, depth + 1, budget);
  }
  if (!fy_node_is_sequence(ext))
    return NULL;
  struct fy_node *found = NULL, *n;
  void *it = NULL;
  while ((n = fy_node_sequence_iterate(ext, &it)) != NULL) {
    al_autofree char *s = wf_scalar(n);
    struct fy_node *f = s ? inherited_b(root, job_node(root, s), key, depth + 1, budget) : NULL;
    if (f)
      found = f;
  }
  return found;
}

static struct fy_node *inherited(struct fy_node *root, struct fy_node *job, const char *key)
{
  int budget = 50;
  return inherited_b(root, job, key, 0, &budget);
}

/* May this job run in the pipeline e? */
static int job_runs(const struct env *e, struct fy_node *root, struct fy_node *job, char *how,
                    size_t hn)
{
  struct fy_node *rules = inherited(root, job, "rules");
  if (rules)
    return eval_rules(e, rules, how, hn);
  struct fy_node *only = inherited(root, job, "only");
  struct fy_node *except = inherited(root, job, "except");
  int r;
  if (only) {
    r = only_matches(e, only);
    snprintf(how, hn, "only: %s",
             r == AL_GLCI_YES ? "matches"
             : r              ? "may match"
                              : "does not match");
  } else {
    r = e->pipe == P_PUSH ? AL_GLCI_YES : AL_GLCI_NO; /* the default: only branches and tags */
    snprintf(how, hn, "no rules or only: (the default, branches and tags)");
  }
  if (r != AL_GLCI_NO && except) {
    int x = only_matches(e, except);
    if (x == AL_GLCI_YES) {
      snprintf(how, hn, "except: matches");
      return AL_GLCI_NO;
    }
    if (x == AL_GLCI_MAYBE)
      r = AL_GLCI_MAYBE;
  }
  return r;
}

static bool reserved(const char *k)
{
  static const char *const kw[] = {"default",       "include",      "stages",   "variables",
                                   "workflow",      "image",        "services", "cache",
                                   "before_script", "after_script", "types",    "spec"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(kw); i++)
    if (!strcmp(k, kw[i]))
      return true;
  return false;
}

static int count_nodes(struct fy_document *d, struct fy_node *n, int depth, size_t *count)
{
  if (!n)
    return 0;
  if (++*count > 100000 || depth > 64 || fy_node_is_alias(n) ||
      fy_document_lookup_anchor_by_node(d, n))
    return -1;
  if (fy_node_is_mapping(n)) {
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it)) != NULL) {
      struct fy_node *k = fy_node_pair_key(p);
      if ((k && fy_node_is_scalar(k) && wf_scalar_is(k, "<<")) ||
          count_nodes(d, k, depth + 1, count) < 0 ||
          count_nodes(d, fy_node_pair_value(p), depth + 1, count) < 0)
        return -1;
    }
  } else if (fy_node_is_sequence(n)) {
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(n, &it)) != NULL)
      if (count_nodes(d, e, depth + 1, count) < 0)
        return -1;
  }
  return 0;
}

static void broken(al_glci *g, const char *path, const char *why)
{
  g->broken = true;
  snprintf(g->why, sizeof g->why, "%s %s", path, why);
}

void al_glci_read(const al_glci_ctx *ctx, const char *path, const char *text, size_t len,
                  al_glci *out)
{
  memset(out, 0, sizeof *out);
  al_error err = {0};
  al_yw yw = {.name = path, .err = &err};
  if (al_yw_open(&yw, text, len, AL_WF_MAX_FILE, "empty CI file") < 0) {
    char w[300];
    snprintf(w, sizeof w, "does not parse: %s", err.msg);
    broken(out, path, w);
    return;
  }
  struct fy_node *root = fy_document_root(yw.doc), *v;
  size_t count = 0;
  if (count_nodes(yw.doc, root, 0, &count) < 0)
    broken(out, path, "uses anchors, aliases or `<<` merges (not followed by the audit)");
  else if (!fy_node_is_mapping(root))
    broken(out, path, "is not a mapping");
  else if (fy_node_mapping_item_count(root) > MAX_KEYS)
    broken(out, path, "has more top-level keys than the audit reads (1000)");
  else if (wf_get(root, "include", &v))
    broken(out, path,
           "has `include:`, which the audit does not follow (the included "
           "files may add jobs)");
  if (out->broken) {
    al_yw_close(&yw);
    return;
  }
  struct env e[2] = {{.ctx = ctx, .pipe = P_PUSH}, {.ctx = ctx, .pipe = P_MR}};
  for (int i = 0; i < 2; i++)
    al_glci_run_branch(ctx->run_prefix, e[i].run, sizeof e[i].run);
  /* workflow:rules: whether each pipeline is created at all (default
   * when: always); without them a push makes a branch pipeline and a merge
   * request pipeline exists when a job asks for it */
  int wf[2] = {AL_GLCI_YES, AL_GLCI_YES};
  struct fy_node *wrules;
  if (wf_get(root, "workflow", &v) && wf_get(v, "rules", &wrules) && wrules) {
    char h[2][120];
    for (int i = 0; i < 2; i++)
      wf[i] = eval_rules(&e[i], wrules, h[i], sizeof h[i]);
    snprintf(out->workflow, sizeof out->workflow,
             "workflow:rules: branch pipeline %s (%s), merge request pipeline %s (%s)",
             wf[0] == AL_GLCI_YES ? "created"
             : wf[0]              ? "may be created"
                                  : "not created",
             h[0],
             wf[1] == AL_GLCI_YES ? "created"
             : wf[1]              ? "may be created"
                                  : "not created",
             h[1]);
  }
  struct fy_node *def = NULL;
  wf_get(root, "default", &def);
  struct fy_node *def_oidc = NULL;
  bool dflt_oidc = def && wf_get(def, "id_tokens", &def_oidc) && def_oidc;
  void *it = NULL;
  struct fy_node_pair *p;
  while ((p = fy_node_mapping_iterate(root, &it)) != NULL) {
    al_autofree char *k = wf_scalar(fy_node_pair_key(p));
    struct fy_node *job = fy_node_pair_value(p);
    if (!k || k[0] == '.' || reserved(k) || !job || !fy_node_is_mapping(job))
      continue;
    out->jobs = al_xrealloc(out->jobs, (out->n_jobs + 1) * sizeof *out->jobs);
    al_glci_job *j = &out->jobs[out->n_jobs++];
    memset(j, 0, sizeof *j);
    j->name = al_xstrdup(k);
    char h[2][120] = {"", ""};
    int r[2];
    for (int i = 0; i < 2; i++) {
      r[i] = wf[i] == AL_GLCI_NO ? AL_GLCI_NO : job_runs(&e[i], root, job, h[i], sizeof h[i]);
      if (r[i] == AL_GLCI_YES && wf[i] == AL_GLCI_MAYBE)
        r[i] = AL_GLCI_MAYBE;
    }
    j->push = r[0];
    j->mr = r[1];
    snprintf(j->how, sizeof j->how, "branch pipeline: %s; merge request pipeline: %s",
             wf[0] == AL_GLCI_NO ? "not created (workflow:rules)" : h[0],
             wf[1] == AL_GLCI_NO ? "not created (workflow:rules)" : h[1]);
    struct fy_node *tok = inherited(root, job, "id_tokens");
    j->oidc = (tok && fy_node_is_mapping(tok) && fy_node_mapping_item_count(tok) > 0) ||
              (!tok && dflt_oidc);
  }
  al_yw_close(&yw);
}

void al_glci_free(al_glci *g)
{
  for (size_t i = 0; i < g->n_jobs; i++)
    free(g->jobs[i].name);
  free(g->jobs);
  memset(g, 0, sizeof *g);
}
