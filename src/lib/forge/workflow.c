/* The workflow reader: see workflow.h. Per file: parse (yamlwalk's
 * al_yw_open: size, UTF-8, one document), refuse aliases, read `on:` into
 * the triggers that fire for the run (branch filters judged by wfglob.c),
 * follow workflow_run chains; then, per firing job (workflow_jobs.c), what
 * it reaches, into the six ci.* verdicts. */
#include "forge/workflow.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "common/util.h"
#include "forge/wfglob.h"
#include "forge/workflow_internal.h"

/* ---- a growing string ------------------------------------------------- */

__attribute__((format(printf, 2, 3))) void wf_buf_add(struct wf_buf *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (b->len + (size_t)n + 1 > b->cap) {
    b->cap = (b->len + (size_t)n + 1) * 2;
    b->s = al_xrealloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *wf_buf_take(struct wf_buf *b)
{
  char *s = b->s ? b->s : al_xstrdup("");
  memset(b, 0, sizeof *b);
  return s;
}

/* ---- YAML helpers ----------------------------------------------------- */

bool wf_is_scalar(struct fy_node *n)
{
  return n && fy_node_is_scalar(n) && !fy_node_is_alias(n);
}

char *wf_scalar(struct fy_node *n)
{
  if (!wf_is_scalar(n))
    return NULL;
  size_t len = 0;
  const char *s = fy_node_get_scalar(n, &len);
  if (!s)
    return NULL;
  char *out = al_xmalloc(len + 1);
  memcpy(out, s, len);
  out[len] = '\0';
  return out;
}

bool wf_scalar_is(struct fy_node *n, const char *s)
{
  if (!wf_is_scalar(n))
    return false;
  size_t len = 0;
  const char *v = fy_node_get_scalar(n, &len);
  return v && len == strlen(s) && memcmp(v, s, len) == 0;
}

bool wf_get(struct fy_node *m, const char *key, struct fy_node **val)
{
  *val = NULL;
  if (!m || !fy_node_is_mapping(m))
    return false;
  void *it = NULL;
  struct fy_node_pair *p;
  while ((p = fy_node_mapping_iterate(m, &it)) != NULL) {
    if (wf_scalar_is(fy_node_pair_key(p), key)) {
      *val = fy_node_pair_value(p);
      return true;
    }
  }
  return false;
}

/* Aliases and merge keys are refused: the reader would have to follow
 * them to see what a job holds, and GitHub's support for them is recent. */
static int no_aliases(struct fy_node *n, int depth, size_t *count, char *why, size_t whyn)
{
  if (!n)
    return 0;
  if (++*count > 200000 || depth > 64) {
    snprintf(why, whyn, "nested too deeply or too large to read");
    return -1;
  }
  if (fy_node_is_alias(n)) {
    snprintf(why, whyn, "uses a YAML alias (`*name`), which the audit does not follow");
    return -1;
  }
  if (fy_node_is_mapping(n)) {
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it)) != NULL) {
      struct fy_node *k = fy_node_pair_key(p);
      if (!wf_is_scalar(k)) {
        snprintf(why, whyn, "a mapping key that is not a plain string");
        return -1;
      }
      if (wf_scalar_is(k, "<<")) {
        snprintf(why, whyn, "uses a YAML merge key (`<<`), which the audit does not follow");
        return -1;
      }
      if (no_aliases(fy_node_pair_value(p), depth + 1, count, why, whyn) < 0)
        return -1;
    }
  } else if (fy_node_is_sequence(n)) {
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(n, &it)) != NULL)
      if (no_aliases(e, depth + 1, count, why, whyn) < 0)
        return -1;
  }
  return 0;
}

/* A filter's patterns: one string, or a list of strings. */
static int string_list(struct fy_node *v, char ***out, size_t *n, char *why, size_t whyn)
{
  *out = NULL;
  *n = 0;
  if (wf_is_scalar(v)) {
    *out = al_xcalloc(1, sizeof **out);
    (*out)[0] = wf_scalar(v);
    *n = 1;
    return 0;
  }
  if (!v || !fy_node_is_sequence(v)) {
    snprintf(why, whyn, "must be a list of patterns");
    return -1;
  }
  size_t cnt = (size_t)fy_node_sequence_item_count(v);
  if (cnt > AL_WFG_MAX_PATTERNS) {
    snprintf(why, whyn, "more than %d patterns", AL_WFG_MAX_PATTERNS);
    return -1;
  }
  *out = al_xcalloc(cnt ? cnt : 1, sizeof **out);
  void *it = NULL;
  struct fy_node *e;
  while ((e = fy_node_sequence_iterate(v, &it)) != NULL) {
    if (!wf_is_scalar(e)) {
      snprintf(why, whyn, "an element that is not a string");
      return -1;
    }
    (*out)[(*n)++] = wf_scalar(e);
  }
  return 0;
}

static void free_list(char **l, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(l[i]);
  free(l);
}

/* "['a', 'b']" of a list, cut. */
static void list_text(char **l, size_t n, char *out, size_t on)
{
  size_t o = 0;
  o += (size_t)snprintf(out + o, on - o, "[");
  for (size_t i = 0; i < n && o < on; i++)
    o += (size_t)snprintf(out + o, on - o, "%s'%.60s'", i ? ", " : "", l[i]);
  if (o < on)
    snprintf(out + o, on - o, "]");
}

/* The branch filter of an event (branches / branches-ignore) against
 * subject: *fires, and how in words. 0, or -1 with why. */
static int branch_filter(struct fy_node *ev, const char *inc_key, const char *exc_key,
                         const al_wfg_subject *subj, const char *what, bool *fires, bool *has,
                         char *how, size_t hn, char *why, size_t whyn)
{
  struct fy_node *inc = NULL, *exc = NULL;
  bool hi = wf_get(ev, inc_key, &inc), he = wf_get(ev, exc_key, &exc);
  *has = hi || he;
  *fires = true;
  if (!hi && !he)
    return 0;
  if (hi && he) {
    snprintf(why, whyn,
             "both `%s` and `%s` (GitHub refuses such a workflow; the audit cannot say "
             "what runs)",
             inc_key, exc_key);
    return -1;
  }
  char **l = NULL;
  size_t n = 0;
  char w[240];
  if (string_list(hi ? inc : exc, &l, &n, w, sizeof w) < 0) {
    snprintf(why, whyn, "`%s`: %s", hi ? inc_key : exc_key, w);
    free_list(l, n);
    return -1;
  }
  al_wfg_result res;
  if (al_wfg_judge((const char *const *)l, n, subj, &res, w, sizeof w) < 0) {
    snprintf(why, whyn, "`%s`: %s", hi ? inc_key : exc_key, w);
    free_list(l, n);
    return -1;
  }
  char lt[200];
  list_text(l, n, lt, sizeof lt);
  free_list(l, n);
  if (hi) {
    *fires = res.some_selected;
    if (*fires)
      snprintf(how, hn, "%s %s selects %s", inc_key, lt, res.selected_example);
    else
      snprintf(how, hn, "%s %s selects no %s", inc_key, lt, what);
  } else {
    *fires = res.some_unselected;
    if (*fires)
      snprintf(how, hn, "%s %s leaves %s", exc_key, lt, res.unselected_example);
    else
      snprintf(how, hn, "%s %s excludes every %s", exc_key, lt, what);
  }
  return 0;
}

/* ---- triggers --------------------------------------------------------- */

enum ev_kind { EV_PUSH, EV_CREATE, EV_PR, EV_WFRUN, EV_ON_COMMIT, EV_TICKET, EV_QUIET };

/* Every event GitHub documents, and what a run does to it. Events not
 * listed are quiet for the run (nothing a run does causes them). */
static const struct {
  const char *name;
  enum ev_kind kind;
  enum wf_tclass cls;
  const char *quiet; /* EV_QUIET: why it does not fire */
} events[] = {
    {"push", EV_PUSH, WF_T_PUSH, NULL},
    /* the run branch's first push creates it; `create` has no filters and
     * runs the workflow of the created ref's commit, the run's own */
    {"create", EV_CREATE, WF_T_PUSH, NULL},
    {"pull_request", EV_PR, WF_T_PR, NULL},
    {"pull_request_target", EV_PR, WF_T_PRT, NULL},
    {"workflow_run", EV_WFRUN, WF_T_WFRUN, NULL},
    {"check_run", EV_ON_COMMIT, WF_T_ON_COMMIT, NULL},
    {"check_suite", EV_ON_COMMIT, WF_T_ON_COMMIT, NULL},
    {"status", EV_ON_COMMIT, WF_T_ON_COMMIT, NULL},
    {"issue_comment", EV_TICKET, WF_T_TICKET, NULL},
    {"issues", EV_TICKET, WF_T_TICKET, NULL},
    {"merge_group", EV_QUIET, WF_T_N,
     "only for a pull request a human queued for merging (after approval)"},
    {"pull_request_review", EV_QUIET, WF_T_N, "only when a human reviews"},
    {"pull_request_review_comment", EV_QUIET, WF_T_N, "only when a human comments on a review"},
    {"workflow_dispatch", EV_QUIET, WF_T_N, "by hand"},
    {"schedule", EV_QUIET, WF_T_N, "on a schedule, on the default branch"},
    {"workflow_call", EV_QUIET, WF_T_N, "only when another workflow calls it (judged there)"},
    {"repository_dispatch", EV_QUIET, WF_T_N, "only through the dispatches API (not a run's)"},
};

static void add_fire(struct wf_file *w, enum wf_tclass cls, const char *event, const char *how)
{
  if (w->n_fires >= WF_T_N)
    return;
  struct wf_fire *f = &w->fires[w->n_fires++];
  f->cls = cls;
  snprintf(f->event, sizeof f->event, "%s", event);
  snprintf(f->how, sizeof f->how, "%s", how);
}

static void quiet(struct wf_file *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void quiet(struct wf_file *w, const char *fmt, ...)
{
  char tmp[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  wf_buf_add(&w->quiet, "%s%s", w->quiet.len ? "; " : "", tmp);
}

static int broken(struct wf_file *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int broken(struct wf_file *w, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->why, sizeof w->why, fmt, ap);
  va_end(ap);
  w->broken = true;
  return -1;
}

/* push: the run branches through branches / branches-ignore (tags only:
 * a branch push does not fire; paths: taken as firing). */
static int ev_push(const al_wf_repo *repo, struct wf_file *w, struct fy_node *v)
{
  al_wfg_subject subj = {.run_prefix = repo->run_prefix};
  char how[300] = "", why[300] = "";
  if (v && !fy_node_is_mapping(v) && !wf_scalar_is(v, ""))
    return broken(w, "on.push: must be a mapping of filters");
  bool fires = true, has = false;
  if (branch_filter(v, "branches", "branches-ignore", &subj, "run branch", &fires, &has, how,
                    sizeof how, why, sizeof why) < 0)
    return broken(w, "on.push.%s", why);
  struct fy_node *t;
  bool tags = wf_get(v, "tags", &t) || wf_get(v, "tags-ignore", &t);
  if (!has && tags) {
    quiet(w, "push: tags only (a branch push does not fire it)");
    return 0;
  }
  if (!fires) {
    quiet(w, "push: %s", how);
    return 0;
  }
  bool paths = wf_get(v, "paths", &t) || wf_get(v, "paths-ignore", &t);
  char full[320];
  snprintf(full, sizeof full, "push (%s%s%s)", has ? how : "every branch",
           paths ? "; a paths filter is taken as firing: the run may change any path" : "", "");
  add_fire(w, WF_T_PUSH, "push", full);
  return 0;
}

/* pull_request, pull_request_target: the base branch through branches /
 * branches-ignore; every activity type can happen before an approval
 * (opened, synchronize; closed when a reviewer rejects; labels and
 * assignments by triage), so `types` narrows nothing. */
static int ev_pr(const al_wf_repo *repo, struct wf_file *w, const char *event, enum wf_tclass cls,
                 struct fy_node *v)
{
  al_wfg_subject subj = {.name = repo->base_branch};
  char how[300] = "", why[300] = "";
  if (v && !fy_node_is_mapping(v) && !wf_scalar_is(v, ""))
    return broken(w, "on.%s: must be a mapping of filters", event);
  bool fires = true, has = false;
  if (branch_filter(v, "branches", "branches-ignore", &subj, "base branch", &fires, &has, how,
                    sizeof how, why, sizeof why) < 0)
    return broken(w, "on.%s.%s", event, why);
  if (!fires) {
    quiet(w, "%s: %s (the base is %s)", event, how, repo->base_branch);
    return 0;
  }
  struct fy_node *t;
  char types[200] = "";
  if (wf_get(v, "types", &t)) {
    char **l = NULL;
    size_t n = 0;
    char w2[120];
    if (string_list(t, &l, &n, w2, sizeof w2) < 0) {
      free_list(l, n);
      return broken(w, "on.%s.types: %s", event, w2);
    }
    char lt[160];
    list_text(l, n, lt, sizeof lt);
    free_list(l, n);
    snprintf(types, sizeof types, "; types %s: each can happen before an approval", lt);
  }
  bool paths = wf_get(v, "paths", &t) || wf_get(v, "paths-ignore", &t);
  char full[320];
  snprintf(full, sizeof full, "%s into %s (%s%s%s)", event, repo->base_branch,
           has ? how : "every base branch", types,
           paths ? "; a paths filter is taken as firing" : "");
  add_fire(w, cls, event, full);
  return 0;
}

/* workflow_run: kept for the chain (resolved once every file's triggers
 * are known); its branches filter is the triggering run's head branch. */
static int ev_wfrun(const al_wf_repo *repo, struct wf_file *w, struct fy_node *v)
{
  struct fy_node *names;
  if (!v || !fy_node_is_mapping(v) || !wf_get(v, "workflows", &names))
    return broken(w, "on.workflow_run: needs `workflows:`");
  al_wfg_subject subj = {.run_prefix = repo->run_prefix};
  char how[300] = "", why[300] = "";
  bool fires = true, has = false;
  if (branch_filter(v, "branches", "branches-ignore", &subj, "run branch", &fires, &has, how,
                    sizeof how, why, sizeof why) < 0)
    return broken(w, "on.workflow_run.%s", why);
  char **l = NULL;
  size_t n = 0;
  if (string_list(names, &l, &n, why, sizeof why) < 0) {
    free_list(l, n);
    return broken(w, "on.workflow_run.workflows: %s", why);
  }
  free_list(l, n);
  w->wfrun = names;
  w->wfrun_branch_ok = fires;
  snprintf(w->wfrun_how, sizeof w->wfrun_how, "%s", has ? how : "any branch");
  if (!fires)
    quiet(w, "workflow_run: %s", how);
  return 0;
}

static int one_event(const al_wf_repo *repo, struct wf_file *w, const char *name, struct fy_node *v)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(events); i++) {
    if (strcmp(events[i].name, name) != 0)
      continue;
    switch (events[i].kind) {
    case EV_PUSH:
      return ev_push(repo, w, v);
    case EV_CREATE:
      add_fire(w, WF_T_PUSH, name,
               "create (the run branch is created by its first push; no filter narrows it)");
      return 0;
    case EV_PR:
      return ev_pr(repo, w, name, events[i].cls, v);
    case EV_WFRUN:
      return ev_wfrun(repo, w, v);
    case EV_ON_COMMIT: {
      char how[160];
      snprintf(how, sizeof how,
               "%s (the run's commits get checks and statuses; the base's workflow code)", name);
      add_fire(w, WF_T_ON_COMMIT, name, how);
      return 0;
    }
    case EV_TICKET: {
      char how[160];
      snprintf(how, sizeof how, "%s (airlock writes on the ticket; the base's workflow code)",
               name);
      add_fire(w, WF_T_TICKET, name, how);
      return 0;
    }
    case EV_QUIET:
    default:
      quiet(w, "%s: %s", name, events[i].quiet);
      return 0;
    }
  }
  quiet(w, "%.40s: not caused by a run", name);
  return 0;
}

static int read_on(const al_wf_repo *repo, struct wf_file *w)
{
  struct fy_node *on;
  if (!wf_get(w->root, "on", &on) || !on)
    return broken(w, "no `on:` (GitHub does not run it; the audit cannot read it either)");
  if (wf_is_scalar(on)) {
    al_autofree char *s = wf_scalar(on);
    return one_event(repo, w, s, NULL);
  }
  if (fy_node_is_sequence(on)) {
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(on, &it)) != NULL) {
      al_autofree char *s = wf_scalar(e);
      if (!s)
        return broken(w, "on: an event that is not a name");
      if (one_event(repo, w, s, NULL) < 0)
        return -1;
    }
    return 0;
  }
  void *it = NULL;
  struct fy_node_pair *p;
  while ((p = fy_node_mapping_iterate(on, &it)) != NULL) {
    al_autofree char *s = wf_scalar(fy_node_pair_key(p));
    if (!s || one_event(repo, w, s, fy_node_pair_value(p)) < 0)
      return w->broken ? -1 : broken(w, "on: a key that is not an event name");
  }
  return 0;
}

static void read_file(const al_wf_repo *repo, struct wf_file *w)
{
  snprintf(w->name, sizeof w->name, "%s", w->f->path);
  if (!w->f->text) {
    broken(w, "could not be read (%s)", w->f->why ? w->f->why : "no content");
    return;
  }
  al_error err = {0};
  w->yw.name = w->f->path;
  w->yw.err = &err;
  if (al_yw_open(&w->yw, w->f->text, w->f->len, AL_WF_MAX_FILE, "empty workflow") < 0) {
    broken(w, "does not parse: %s", err.msg);
    return;
  }
  w->root = fy_document_root(w->yw.doc);
  size_t count = 0;
  char why[200];
  if (no_aliases(w->root, 0, &count, why, sizeof why) < 0) {
    broken(w, "%s", why);
    return;
  }
  if (!fy_node_is_mapping(w->root)) {
    broken(w, "is not a mapping");
    return;
  }
  struct fy_node *nm;
  if (wf_get(w->root, "name", &nm) && wf_is_scalar(nm)) {
    al_autofree char *s = wf_scalar(nm);
    if (s[0])
      snprintf(w->name, sizeof w->name, "%s", s);
  }
  read_on(repo, w);
}

/* Does a workflow_run `workflows:` entry name workflow n? Names are
 * compared case-insensitively and an entry with a wildcard matches every
 * name (more firing, never less). */
static bool names_workflow(struct fy_node *names, const char *n)
{
  char **l = NULL;
  size_t cnt = 0;
  char why[80];
  bool hit = false;
  if (string_list(names, &l, &cnt, why, sizeof why) == 0)
    for (size_t i = 0; i < cnt && !hit; i++)
      hit = strcasecmp(l[i], n) == 0 || strpbrk(l[i], "*?[+") != NULL;
  free_list(l, cnt);
  return hit;
}

/* workflow_run chains: fire a workflow_run workflow when one it follows
 * fires, until nothing changes (GitHub stops chains at three levels; the
 * audit follows them all). */
static void resolve_chains(struct wf_file *files, size_t n)
{
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; i++) {
      struct wf_file *w = &files[i];
      if (w->broken || !w->wfrun || !w->wfrun_branch_ok)
        continue;
      bool has = false;
      for (size_t k = 0; k < w->n_fires; k++)
        has = has || w->fires[k].cls == WF_T_WFRUN;
      if (has)
        continue;
      for (size_t j = 0; j < n; j++) {
        struct wf_file *o = &files[j];
        if (j == i || o->broken || o->n_fires == 0 || !names_workflow(w->wfrun, o->name))
          continue;
        char how[320];
        snprintf(how, sizeof how, "workflow_run after \"%.80s\" (%.30s), %.150s", o->name,
                 o->fires[0].event, w->wfrun_how);
        add_fire(w, WF_T_WFRUN, "workflow_run", how);
        changed = true;
        break;
      }
    }
  }
}

/* ---- verdicts --------------------------------------------------------- */

static const struct {
  const char *id, *title;
} crit[AL_WF_C_N] = {
    [AL_WF_C_SECRETS] = {"ci.no_secrets",
                         "no workflow gives the run's code a secret before a human approves"},
    [AL_WF_C_OIDC] = {"ci.no_oidc", "no workflow gives the run's code an OIDC token (id-token: "
                                    "write) before a human approves"},
    [AL_WF_C_TOKEN] = {"ci.read_only_token",
                       "no workflow gives the run's code a write-scoped GITHUB_TOKEN"},
    [AL_WF_C_RUNNER] = {"ci.hosted_runners",
                        "no workflow runs the run's code on a self-hosted or unknown runner"},
    [AL_WF_C_PRIVATE] = {"ci.private_quiet", "in a private or internal repository, no workflow "
                                             "runs on the run's push or pull request"},
    [AL_WF_C_BASE] = {"ci.base_context", "pull_request_target, workflow_run, check and ticket "
                                         "workflows do not take the run's code or text"},
};

int al_wf_run_prefix_check(const char *s, const char **why)
{
  size_t n = strlen(s);
  if (n < 2 || n > 64 || s[n - 1] != '/' || s[0] == '/' || strstr(s, "..") || strstr(s, "//")) {
    *why = "must be 2 to 64 bytes ending in `/`, like airlock/";
    return -1;
  }
  for (const char *q = s; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '-' || *q == '_' || *q == '.')) {
      *why = "may only hold letters, digits, / - _ .";
      return -1;
    }
  return 0;
}

const char *al_wf_crit_id(al_wf_crit c)
{
  return c < AL_WF_C_N ? crit[c].id : NULL;
}

const char *al_wf_crit_title(al_wf_crit c)
{
  return c < AL_WF_C_N ? crit[c].title : NULL;
}

struct acc {
  al_wf_status st[AL_WF_C_N];
  struct wf_buf ev[AL_WF_C_N];
  unsigned n_ev[AL_WF_C_N];
};

static int rank(al_wf_status s)
{
  return s == AL_WF_FAIL ? 3 : s == AL_WF_UNKNOWN ? 2 : s == AL_WF_WARN ? 1 : 0;
}

static void note(struct acc *a, al_wf_crit c, al_wf_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note(struct acc *a, al_wf_crit c, al_wf_status s, const char *fmt, ...)
{
  if (rank(s) > rank(a->st[c]))
    a->st[c] = s;
  if (++a->n_ev[c] > 12) {
    if (a->n_ev[c] == 13)
      wf_buf_add(&a->ev[c], "; ... (more in the other files)");
    return;
  }
  char tmp[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  wf_buf_add(&a->ev[c], "%s%s", a->ev[c].len ? "; " : "", tmp);
}

static al_wf_status yn(int v)
{
  return v == WF_YES ? AL_WF_FAIL : v == WF_MAYBE ? AL_WF_UNKNOWN : AL_WF_PASS;
}

static bool on_run(enum wf_tclass c)
{
  return c == WF_T_PUSH || c == WF_T_PR || c == WF_T_PRT || c == WF_T_WFRUN || c == WF_T_ON_COMMIT;
}

/* One job for one trigger, into the verdicts. */
static void judge_job(const al_wf_repo *repo, struct acc *a, struct wf_file *files, size_t n,
                      struct wf_file *w, const char *id, struct fy_node *job,
                      const struct wf_fire *fire)
{
  char g[200];
  if (wf_job_guarded(repo, job, fire->cls, fire->event, g, sizeof g))
    return;
  struct wf_reach r;
  wf_job_reach(repo, files, n, w, job, fire, &r);
  char at[600];
  snprintf(at, sizeof at, "%s: on %s, job `%.60s`", w->f->path, fire->how, id);
  if (r.broken) {
    for (int c = 0; c < AL_WF_C_N; c++)
      note(a, (al_wf_crit)c, AL_WF_UNKNOWN, "%s: %s", at, r.broken_why);
    return;
  }
  if (r.gate == WF_YES)
    return; /* waits for a human: the PASS evidence says so below */
  bool gate_maybe = r.gate == WF_MAYBE;
  if (repo->visibility != AL_WF_VIS_PUBLIC && (on_run(fire->cls) || r.runs_run_code))
    note(a, AL_WF_C_PRIVATE,
         gate_maybe || repo->visibility == AL_WF_VIS_UNKNOWN ? AL_WF_UNKNOWN : AL_WF_FAIL,
         "%s: runs in a %s repository%s%s", at,
         repo->visibility == AL_WF_VIS_UNKNOWN ? "possibly private" : "private or internal",
         gate_maybe ? "; " : "", gate_maybe ? r.gate_what : "");
  bool base = fire->cls != WF_T_PUSH && fire->cls != WF_T_PR;
  if (base) {
    if (r.runs_run_code)
      note(a, AL_WF_C_BASE, gate_maybe ? AL_WF_UNKNOWN : AL_WF_FAIL,
           "%s: runs with the base's context but takes the run's %s", at, r.code_how);
    else if (r.secrets || r.write || r.oidc || r.runner)
      note(a, AL_WF_C_BASE, AL_WF_WARN,
           "%s: runs the base's code with %s%s%s; the audit sees it take nothing of the run's "
           "(keep it so)",
           at, r.secrets ? "secrets" : "", r.secrets && (r.write || r.oidc) ? " and " : "",
           r.write || r.oidc ? "a write token"
           : r.secrets       ? ""
                             : "its runner");
    if (!r.runs_run_code)
      return;
  }
  al_wf_status cap = gate_maybe ? AL_WF_UNKNOWN : AL_WF_FAIL;
  const char *gw = gate_maybe ? r.gate_what : "";
  if (r.secrets)
    note(a, AL_WF_C_SECRETS, rank(yn(r.secrets)) < rank(cap) ? yn(r.secrets) : cap, "%s: %s%s%s",
         at, r.secrets_what, gate_maybe ? "; " : "", gw);
  if (r.oidc)
    note(a, AL_WF_C_OIDC, rank(yn(r.oidc)) < rank(cap) ? yn(r.oidc) : cap, "%s: %s", at,
         r.perms_what);
  if (r.write)
    note(a, AL_WF_C_TOKEN, rank(yn(r.write)) < rank(cap) ? yn(r.write) : cap, "%s: %s%s", at,
         r.perms_what,
         repo->can_approve && r.write == WF_YES
             ? " (and GitHub Actions may approve pull requests in this repository)"
             : "");
  if (r.runner)
    note(a, AL_WF_C_RUNNER, rank(yn(r.runner)) < rank(cap) ? yn(r.runner) : cap, "%s: %s", at,
         r.runner_what);
}

static void judge_file(const al_wf_repo *repo, struct acc *a, struct wf_file *files, size_t n,
                       struct wf_file *w, struct wf_buf *pass)
{
  if (w->broken) {
    for (int c = 0; c < AL_WF_C_N; c++)
      note(a, (al_wf_crit)c, AL_WF_UNKNOWN, "%s %s", w->f->path, w->why);
    return;
  }
  if (w->n_fires == 0) {
    wf_buf_add(pass, "%s%s: quiet (%s)", pass->len ? "; " : "", w->f->path,
               w->quiet.len ? w->quiet.s : "no trigger");
    return;
  }
  struct fy_node *jobs;
  if (!wf_get(w->root, "jobs", &jobs) || !jobs || !fy_node_is_mapping(jobs)) {
    for (int c = 0; c < AL_WF_C_N; c++)
      note(a, (al_wf_crit)c, AL_WF_UNKNOWN, "%s: fires (%s) but its `jobs:` cannot be read",
           w->f->path, w->fires[0].how);
    return;
  }
  unsigned before[AL_WF_C_N];
  for (int c = 0; c < AL_WF_C_N; c++)
    before[c] = a->n_ev[c];
  void *it = NULL;
  struct fy_node_pair *p;
  while ((p = fy_node_mapping_iterate(jobs, &it)) != NULL) {
    al_autofree char *id = wf_scalar(fy_node_pair_key(p));
    struct fy_node *job = fy_node_pair_value(p);
    for (size_t k = 0; k < w->n_fires; k++)
      judge_job(repo, a, files, n, w, id ? id : "?", job, &w->fires[k]);
  }
  bool any = false;
  for (int c = 0; c < AL_WF_C_N; c++)
    any = any || a->n_ev[c] != before[c];
  if (!any)
    wf_buf_add(pass,
               "%s%s: fires (%s) but every job is guarded, waits on a reviewed "
               "environment, or reaches nothing%s%s",
               pass->len ? "; " : "", w->f->path, w->fires[0].how, w->quiet.len ? "; " : "",
               w->quiet.len ? w->quiet.s : "");
}

static const char *fix_text(const al_wf_repo *repo, al_wf_crit c, al_wf_status st, char *buf,
                            size_t n)
{
  const char *p = repo->run_prefix;
#define KEEP_OUT                                                                                   \
  "keep the run branches out of the workflow: `on: push: branches-ignore: ['%s**']` for "          \
  "push, and on each job run for pull requests the guard `if: ${{ !startsWith(github.head_ref, "   \
  "'%s') }}`; or make the job wait on an environment with required reviewers"
  switch (c) {
  case AL_WF_C_SECRETS:
  case AL_WF_C_OIDC:
  case AL_WF_C_TOKEN:
  case AL_WF_C_RUNNER:
    snprintf(buf, n, KEEP_OUT, p, p);
    if (c == AL_WF_C_TOKEN) {
      size_t l = strlen(buf);
      snprintf(buf + l, n - l,
               "; or set `permissions: contents: read` on the job (or the "
               "repository's default workflow permissions to read)");
    }
    break;
  case AL_WF_C_PRIVATE: {
    int w = snprintf(buf, n, KEEP_OUT, p, p);
    if (w > 0 && (size_t)w < n)
      snprintf(buf + w, n - (size_t)w,
               " (in a private repository any runner on the internet can take the source out)");
    break;
  }
  case AL_WF_C_BASE:
  default:
    snprintf(buf, n,
             "do not check out or build the pull request's head (or use its title, body or "
             "branch in a script) in pull_request_target, workflow_run, check or ticket "
             "workflows; or guard the job with `if: ${{ !startsWith(github.head_ref, '%s') }}`, "
             "or make it wait on an environment with required reviewers",
             p);
    break;
  }
  if (st == AL_WF_UNKNOWN) {
    size_t l = strlen(buf);
    snprintf(buf + l, n - l,
             "; for what the audit could not read: give it a token with "
             "Contents: read and Administration: read, or fix the file");
  }
  return buf;
}

void al_wf_judge(const al_wf_repo *repo, al_wf_verdict out[AL_WF_C_N])
{
  struct acc a;
  memset(&a, 0, sizeof a);
  struct wf_buf pass = {0};
  struct wf_file *files = al_xcalloc(repo->n_files ? repo->n_files : 1, sizeof *files);
  if (repo->actions_disabled) {
    wf_buf_add(&pass, "GitHub Actions is disabled for the repository (GET "
                      ".../actions/permissions: enabled false): no workflow runs");
  } else if (!repo->files_known) {
    for (int c = 0; c < AL_WF_C_N; c++)
      note(&a, (al_wf_crit)c, AL_WF_UNKNOWN, "the workflows of %s could not be listed (%s)",
           repo->base_branch, repo->files_why ? repo->files_why : "?");
  } else {
    for (size_t i = 0; i < repo->n_files; i++) {
      files[i].f = &repo->files[i];
      read_file(repo, &files[i]);
    }
    resolve_chains(files, repo->n_files);
    for (size_t i = 0; i < repo->n_files; i++)
      judge_file(repo, &a, files, repo->n_files, &files[i], &pass);
    if (repo->n_files == 0)
      wf_buf_add(&pass, "no workflow file in .github/workflows of %s", repo->base_branch);
  }
  al_autofree char *pass_text = wf_buf_take(&pass);
  for (int c = 0; c < AL_WF_C_N; c++) {
    if (c == AL_WF_C_PRIVATE && a.st[c] == AL_WF_PASS && a.n_ev[c] == 0 &&
        repo->visibility == AL_WF_VIS_PUBLIC)
      wf_buf_add(&a.ev[c], "a public repository (GET /repos/{o}/{r}: visibility public); ");
    if (a.n_ev[c] == 0 || a.st[c] == AL_WF_WARN) {
      wf_buf_add(&a.ev[c],
                 "%s%zu workflow file(s) on %s, for a push to %s<ticket>-<run> or a pull "
                 "request from it%s%s",
                 a.ev[c].len && a.st[c] == AL_WF_WARN ? "; " : "", repo->n_files, repo->base_branch,
                 repo->run_prefix, pass_text[0] ? ": " : "", pass_text);
    }
    out[c].status = a.st[c];
    out[c].evidence = wf_buf_take(&a.ev[c]);
    char fix[900];
    out[c].fix =
        a.st[c] == AL_WF_PASS ? NULL : al_xstrdup(fix_text(repo, c, a.st[c], fix, sizeof fix));
  }
  for (size_t i = 0; i < repo->n_files; i++) {
    al_yw_close(&files[i].yw);
    free(wf_buf_take(&files[i].quiet));
  }
  free(files);
}

void al_wf_verdicts_free(al_wf_verdict v[AL_WF_C_N])
{
  for (int c = 0; c < AL_WF_C_N; c++) {
    free(v[c].evidence);
    free(v[c].fix);
    v[c].evidence = v[c].fix = NULL;
  }
}
