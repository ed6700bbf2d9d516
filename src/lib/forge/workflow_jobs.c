/* The workflow reader, one job: the guards its `if:` may carry (a small,
 * exact list; anything else is no guard) and what it reaches when it runs
 * for a trigger: secrets, the GITHUB_TOKEN's permissions, its runner, its
 * environment, and whether the run's code or text gets into it. See
 * workflow.h and docs/audit.md. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "forge/workflow_internal.h"

/* ---- guards ----------------------------------------------------------- */

/* The expression without `${{ }}` and without white space outside quotes,
 * identifiers folded to lower case (GitHub's expressions are
 * case-insensitive); NULL when it has `||` (no conjunct alone decides). */
static char *normalise(const char *s)
{
  size_t n = strlen(s);
  const char *b = s, *e = s + n;
  while (b < e && isspace((unsigned char)*b))
    b++;
  while (e > b && isspace((unsigned char)e[-1]))
    e--;
  if (e - b >= 5 && !strncmp(b, "${{", 3) && !strncmp(e - 2, "}}", 2)) {
    b += 3;
    e -= 2;
  }
  char *out = al_xmalloc((size_t)(e - b) + 1);
  size_t o = 0;
  bool q = false;
  for (const char *p = b; p < e; p++) {
    if (*p == '\'')
      q = !q;
    if (!q && isspace((unsigned char)*p))
      continue;
    if (!q && p + 1 < e && p[0] == '$' && p[1] == '{') {
      free(out);
      return NULL; /* a nested ${{ }}: not an expression we read */
    }
    char ch = *p;
    if (!q)
      ch = (char)tolower((unsigned char)ch);
    out[o++] = ch;
  }
  out[o] = '\0';
  if (q || strstr(out, "||")) {
    free(out);
    return NULL;
  }
  return out;
}

/* Does conjunct c (normalised) start with head and end with "')" and hold
 * a quoted literal, copied to lit? */
static bool call_lit(const char *c, const char *head, char *lit, size_t n)
{
  size_t h = strlen(head), l = strlen(c);
  if (strncmp(c, head, h) != 0 || l < h + 2 || strcmp(c + l - 2, "')") != 0)
    return false;
  size_t len = l - h - 2;
  if (len == 0 || len >= n || memchr(c + h, '\'', len))
    return false;
  memcpy(lit, c + h, len);
  lit[len] = '\0';
  return true;
}

static bool eq_lit(const char *c, const char *head, char *lit, size_t n)
{
  size_t h = strlen(head), l = strlen(c);
  if (strncmp(c, head, h) != 0 || l < h + 2 || c[l - 1] != '\'')
    return false;
  size_t len = l - h - 1;
  if (len == 0 || len >= n || memchr(c + h, '\'', len))
    return false;
  memcpy(lit, c + h, len);
  lit[len] = '\0';
  return true;
}

/* Every run branch starts with lit (startsWith is case-insensitive). */
static bool covers_prefix(const al_wf_repo *repo, const char *lit)
{
  size_t l = strlen(lit);
  return l > 0 && l <= strlen(repo->run_prefix) && strncasecmp(repo->run_prefix, lit, l) == 0;
}

/* No run branch equals branch b (== is case-insensitive). */
static bool not_a_run_branch(const al_wf_repo *repo, const char *b)
{
  return strncasecmp(b, repo->run_prefix, strlen(repo->run_prefix)) != 0;
}

static bool is_pr(enum wf_tclass cls)
{
  return cls == WF_T_PR || cls == WF_T_PRT;
}

/* One conjunct: does it keep the job from running for this trigger? */
static bool conjunct_guards(const al_wf_repo *repo, const char *c, enum wf_tclass cls,
                            const char *event)
{
  char lit[300];
  if (call_lit(c, "!startswith(github.head_ref,'", lit, sizeof lit))
    return is_pr(cls) && covers_prefix(repo, lit);
  if (call_lit(c, "!startswith(github.ref,'", lit, sizeof lit))
    return cls == WF_T_PUSH && !strncmp(lit, "refs/heads/", 11) && covers_prefix(repo, lit + 11);
  if (call_lit(c, "!startswith(github.ref_name,'", lit, sizeof lit))
    return cls == WF_T_PUSH && covers_prefix(repo, lit);
  if (call_lit(c, "!startswith(github.event.workflow_run.head_branch,'", lit, sizeof lit))
    return cls == WF_T_WFRUN && covers_prefix(repo, lit);
  if (eq_lit(c, "github.ref=='refs/heads/", lit, sizeof lit))
    return (cls == WF_T_PUSH && not_a_run_branch(repo, lit)) || cls == WF_T_PR ||
           (cls == WF_T_PRT && strcasecmp(lit, repo->base_branch) != 0 &&
            not_a_run_branch(repo, lit));
  if (eq_lit(c, "github.event_name=='", lit, sizeof lit))
    return strcasecmp(lit, event) != 0;
  /* merged: true only after a merge (after approval); a head repository
   * other than this one: airlock's pull requests come from this one. Not
   * `head.repo.fork`: in a repository that is itself a fork it is true for
   * airlock's pull requests too. */
  if (!strcmp(c, "github.event.pull_request.merged==true") ||
      !strcmp(c, "github.event.pull_request.head.repo.full_name!=github.repository"))
    return is_pr(cls);
  return false;
}

bool wf_job_guarded(const al_wf_repo *repo, struct fy_node *job, enum wf_tclass cls,
                    const char *event, char *what, size_t n)
{
  struct fy_node *v;
  if (!wf_get(job, "if", &v) || !wf_is_scalar(v))
    return false;
  al_autofree char *raw = wf_scalar(v);
  al_autofree char *e = normalise(raw);
  if (!e)
    return false;
  char *save = NULL;
  for (char *c = strtok_r(e, "&", &save); c; c = strtok_r(NULL, "&", &save)) {
    if (conjunct_guards(repo, c, cls, event)) {
      snprintf(what, n, "%s", c);
      return true;
    }
  }
  return false;
}

/* ---- scans ------------------------------------------------------------ */

/* In expression text e[0..n): the word `secrets` (any case) not followed
 * by `.github_token`. */
static bool expr_has_secret(const char *e, size_t n, char *name, size_t nn)
{
  for (size_t i = 0; i + 7 <= n; i++) {
    if (strncasecmp(e + i, "secrets", 7) != 0)
      continue;
    if (i > 0 && (isalnum((unsigned char)e[i - 1]) || e[i - 1] == '_' || e[i - 1] == '.'))
      continue;
    size_t j = i + 7;
    if (j < n && (isalnum((unsigned char)e[j]) || e[j] == '_' || e[j] == '-'))
      continue;
    if (j + 13 <= n && strncasecmp(e + j, ".github_token", 13) == 0 &&
        (j + 13 == n || !(isalnum((unsigned char)e[j + 13]) || e[j + 13] == '_')))
      continue;
    size_t k = j;
    while (k < n && k - i < 60 && (isalnum((unsigned char)e[k]) || strchr("._-[]'\"", e[k])))
      k++;
    snprintf(name, nn, "%.*s", (int)(k - i), e + i);
    return true;
  }
  return false;
}

/* A scalar's secret references: inside ${{ }}, or anywhere in an `if:`
 * (an expression without the braces). */
static bool scalar_has_secret(const char *s, bool is_if, char *name, size_t nn)
{
  size_t n = strlen(s);
  if (is_if)
    return expr_has_secret(s, n, name, nn);
  for (const char *p = strstr(s, "${{"); p; p = strstr(p + 3, "${{")) {
    /* the expression ends at the first `}}` outside a '...' string
     * literal (GitHub's template reader: `format('}}', secrets.X)`) */
    const char *e = p + 3;
    for (bool inq = false; *e && (inq || e[0] != '}' || e[1] != '}'); e++)
      if (*e == '\'')
        inq = !inq;
    size_t len = (size_t)(e - p - 3);
    if (expr_has_secret(p + 3, len, name, nn))
      return true;
  }
  return false;
}

static bool tree_has_secret(struct fy_node *n, bool is_if, int depth, char *name, size_t nn)
{
  if (!n || depth > 64)
    return false;
  if (wf_is_scalar(n)) {
    al_autofree char *s = wf_scalar(n);
    return s && scalar_has_secret(s, is_if, name, nn);
  }
  void *it = NULL;
  if (fy_node_is_mapping(n)) {
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it)) != NULL) {
      struct fy_node *k = fy_node_pair_key(p);
      al_autofree char *ks = wf_scalar(k);
      if (ks && scalar_has_secret(ks, false, name, nn))
        return true;
      if (tree_has_secret(fy_node_pair_value(p), ks && !strcmp(ks, "if"), depth + 1, name, nn))
        return true;
    }
  } else if (fy_node_is_sequence(n)) {
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(n, &it)) != NULL)
      if (tree_has_secret(e, false, depth + 1, name, nn))
        return true;
  }
  return false;
}

/* What brings the run's code or text into a job that runs the base's
 * workflow (case-insensitive substrings anywhere in the job). */
static const char *const run_code_marks[] = {
    "github.event.pull_request.head", /* .sha, .ref, .repo: checking out the head */
    "github.head_ref",
    "github.event.workflow_run.head", /* head_sha, head_branch, head_commit */
    "github.event.workflow_run.pull_requests",
    "github.event.check_suite.head",
    "github.event.check_run.head_sha",
    "github.event.check_suite.pull_requests",
    "github.event.check_run.check_suite",
    "github.event.sha", /* status */
    "github.event.commit",
    "refs/pull/",
    "pull/${{",
    "gh pr checkout",
    "github.event.pull_request.title",
    "github.event.pull_request.body",
    "github.event.comment.body",
    "github.event.issue.title",
    "github.event.issue.body",
    "github.event.head_commit",
    "github.event.commits",
    "download-artifact", /* artifacts of the triggering run (workflow_run) */
};

static bool tree_has_mark(struct fy_node *n, int depth, char *what, size_t wn)
{
  if (!n || depth > 64)
    return false;
  if (wf_is_scalar(n)) {
    al_autofree char *s = wf_scalar(n);
    if (!s)
      return false;
    for (char *p = s; *p; p++)
      *p = (char)tolower((unsigned char)*p);
    for (size_t i = 0; i < AL_ARRAY_SIZE(run_code_marks); i++)
      if (strstr(s, run_code_marks[i])) {
        snprintf(what, wn, "`%s`", run_code_marks[i]);
        return true;
      }
    return false;
  }
  void *it = NULL;
  if (fy_node_is_mapping(n)) {
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it)) != NULL)
      if (tree_has_mark(fy_node_pair_key(p), depth + 1, what, wn) ||
          tree_has_mark(fy_node_pair_value(p), depth + 1, what, wn))
        return true;
  } else if (fy_node_is_sequence(n)) {
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(n, &it)) != NULL)
      if (tree_has_mark(e, depth + 1, what, wn))
        return true;
  }
  return false;
}

/* ---- permissions ------------------------------------------------------ */

/* A `permissions:` value: 0 with *write / *oidc, or -1 (not a form GitHub
 * documents). "Controlling permissions for GITHUB_TOKEN": read-all,
 * write-all, {} or scope: read|write|none. */
static int read_perms(struct fy_node *v, int *write, int *oidc, char *what, size_t n)
{
  *write = *oidc = WF_NO;
  if (wf_scalar_is(v, "read-all")) {
    snprintf(what, n, "permissions: read-all");
    return 0;
  }
  if (wf_scalar_is(v, "write-all")) {
    *write = *oidc = WF_YES;
    snprintf(what, n, "permissions: write-all");
    return 0;
  }
  if (!v || !fy_node_is_mapping(v))
    return -1;
  void *it = NULL;
  struct fy_node_pair *p;
  size_t o = 0;
  what[0] = '\0';
  while ((p = fy_node_mapping_iterate(v, &it)) != NULL) {
    al_autofree char *k = wf_scalar(fy_node_pair_key(p));
    al_autofree char *l = wf_scalar(fy_node_pair_value(p));
    if (!k || !l || (strcmp(l, "read") && strcmp(l, "write") && strcmp(l, "none")))
      return -1;
    if (!strcmp(l, "write")) {
      if (!strcmp(k, "id-token"))
        *oidc = WF_YES;
      else
        *write = WF_YES;
      if (o < n)
        o += (size_t)snprintf(what + o, n - o, "%s%s: write", o ? ", " : "permissions: ", k);
    }
  }
  if (!o)
    snprintf(what, n, "permissions: read only");
  return 0;
}

static void job_perms(const al_wf_repo *repo, struct wf_file *w, struct fy_node *job,
                      const struct wf_fire *fire, struct wf_reach *r)
{
  struct fy_node *v;
  char what[160];
  const char *where = "the job's";
  bool have = wf_get(job, "permissions", &v);
  if (!have) {
    have = wf_get(w->root, "permissions", &v);
    where = "the workflow's";
  }
  if (have) {
    if (read_perms(v, &r->write, &r->oidc, what, sizeof what) < 0) {
      r->write = r->oidc = WF_MAYBE;
      snprintf(r->perms_what, sizeof r->perms_what,
               "%s `permissions:` is not a form the audit "
               "reads",
               where);
    } else {
      snprintf(r->perms_what, sizeof r->perms_what, "%s %s", where, what);
    }
    return;
  }
  if (fire->cls == WF_T_PRT) {
    r->write = WF_YES;
    snprintf(r->perms_what, sizeof r->perms_what,
             "no `permissions:`: pull_request_target gets a read/write GITHUB_TOKEN");
    return;
  }
  if (repo->default_perms == AL_WF_LEVEL_READ) {
    snprintf(r->perms_what, sizeof r->perms_what,
             "no `permissions:`: the repository's default (read)");
  } else if (repo->default_perms == AL_WF_LEVEL_WRITE) {
    r->write = WF_YES;
    snprintf(r->perms_what, sizeof r->perms_what,
             "no `permissions:`: the repository's default workflow permissions are read and "
             "write");
  } else {
    r->write = WF_MAYBE;
    snprintf(r->perms_what, sizeof r->perms_what,
             "no `permissions:`, and the repository's default workflow permissions could not be "
             "read (%s)",
             repo->perms_why ? repo->perms_why : "?");
  }
}

/* ---- runners ---------------------------------------------------------- */

/* GitHub-hosted runner labels ("About GitHub-hosted runners", standard
 * and larger macOS runners; the ubuntu-slim preview). Anything else is a
 * self-hosted runner or an organisation's larger runner. */
static const char *const hosted[] = {
    "ubuntu-latest",
    "ubuntu-24.04",
    "ubuntu-22.04",
    "ubuntu-20.04",
    "ubuntu-24.04-arm",
    "ubuntu-22.04-arm",
    "ubuntu-slim",
    "windows-latest",
    "windows-2025",
    "windows-2022",
    "windows-2019",
    "windows-11-arm",
    "macos-latest",
    "macos-26",
    "macos-15",
    "macos-14",
    "macos-13",
    "macos-15-intel",
    "macos-latest-large",
    "macos-15-large",
    "macos-14-large",
    "macos-13-large",
    "macos-latest-xlarge",
    "macos-15-xlarge",
    "macos-14-xlarge",
    "macos-13-xlarge",
};

static bool is_hosted(const char *l)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(hosted); i++)
    if (strcasecmp(l, hosted[i]) == 0)
      return true;
  return false;
}

/* `${{ matrix.KEY }}` exactly: KEY into key. */
static bool matrix_ref(const char *s, char *key, size_t n)
{
  al_autofree char *e = normalise(s);
  if (!e || strncmp(e, "matrix.", 7) != 0)
    return false;
  const char *k = e + 7;
  for (const char *p = k; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-'))
      return false;
  snprintf(key, n, "%s", k);
  return *k != '\0';
}

static void runner_label(const char *l, struct wf_reach *r, const char *via);

/* The values a matrix key takes (strategy.matrix.KEY and include[].KEY). */
static void runner_matrix(struct fy_node *job, const char *key, struct wf_reach *r)
{
  struct fy_node *st, *m, *vals, *inc;
  bool any = false;
  if (!wf_get(job, "strategy", &st) || !wf_get(st, "matrix", &m) || !m || !fy_node_is_mapping(m)) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what, "runs-on `matrix.%s` with no matrix to read",
             key);
    return;
  }
  /* a matrix key is matched case-insensitively, as expressions are */
  void *it = NULL;
  struct fy_node_pair *p;
  vals = NULL;
  while ((p = fy_node_mapping_iterate(m, &it)) != NULL) {
    al_autofree char *k = wf_scalar(fy_node_pair_key(p));
    if (k && !strcasecmp(k, key))
      vals = fy_node_pair_value(p);
  }
  if (vals && fy_node_is_sequence(vals)) {
    void *it2 = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(vals, &it2)) != NULL) {
      al_autofree char *s = wf_scalar(e);
      runner_label(s ? s : "(not a label)", r, "matrix");
      any = true;
    }
  } else if (vals) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what, "runs-on `matrix.%s`, which is not a list",
             key);
    return;
  }
  if (wf_get(m, "include", &inc) && inc && fy_node_is_sequence(inc)) {
    void *it3 = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(inc, &it3)) != NULL) {
      void *it4 = NULL;
      while (fy_node_is_mapping(e) && (p = fy_node_mapping_iterate(e, &it4)) != NULL) {
        al_autofree char *k = wf_scalar(fy_node_pair_key(p));
        if (!k || strcasecmp(k, key) != 0)
          continue;
        al_autofree char *s = wf_scalar(fy_node_pair_value(p));
        runner_label(s ? s : "(not a label)", r, "matrix include");
        any = true;
      }
    }
  }
  if (!any) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what, "runs-on `matrix.%s`: the matrix names none",
             key);
  }
}

static void runner_label(const char *l, struct wf_reach *r, const char *via)
{
  if (r->runner == WF_YES)
    return;
  if (is_hosted(l))
    return;
  if (strstr(l, "${{")) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what, "runs-on `%.80s` (an expression)", l);
    return;
  }
  r->runner = WF_YES;
  snprintf(r->runner_what, sizeof r->runner_what, "runs-on `%.80s`%s%s%s (%s)", l,
           via ? " (from the " : "", via ? via : "", via ? ")" : "",
           strcasecmp(l, "self-hosted") == 0
               ? "a self-hosted runner"
               : "not a GitHub-hosted label: a self-hosted or larger runner");
}

static void job_runner(struct fy_node *job, struct wf_reach *r)
{
  struct fy_node *v;
  if (!wf_get(job, "runs-on", &v) || !v) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what, "no `runs-on:`");
    return;
  }
  if (wf_is_scalar(v)) {
    al_autofree char *s = wf_scalar(v);
    char key[64];
    if (matrix_ref(s, key, sizeof key))
      runner_matrix(job, key, r);
    else
      runner_label(s, r, NULL);
    return;
  }
  struct fy_node *labels = v;
  if (fy_node_is_mapping(v)) {
    struct fy_node *g;
    if (wf_get(v, "group", &g)) {
      al_autofree char *s = wf_scalar(g);
      r->runner = WF_YES;
      snprintf(r->runner_what, sizeof r->runner_what,
               "runs-on group `%.80s` (a runner group: self-hosted or larger runners)",
               s ? s : "?");
      return;
    }
    if (!wf_get(v, "labels", &labels) || !labels) {
      r->runner = WF_MAYBE;
      snprintf(r->runner_what, sizeof r->runner_what, "runs-on: a mapping without labels");
      return;
    }
    if (wf_is_scalar(labels)) {
      al_autofree char *s = wf_scalar(labels);
      runner_label(s, r, NULL);
      return;
    }
  }
  if (!fy_node_is_sequence(labels)) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what, "runs-on: not a label or a list of labels");
    return;
  }
  /* a list: a runner with every label; a GitHub-hosted one has just one */
  void *it = NULL;
  struct fy_node *e;
  size_t cnt = 0;
  while ((e = fy_node_sequence_iterate(labels, &it)) != NULL) {
    al_autofree char *s = wf_scalar(e);
    runner_label(s ? s : "(not a label)", r, NULL);
    cnt++;
  }
  if (cnt > 1 && r->runner == WF_NO) {
    r->runner = WF_YES;
    snprintf(r->runner_what, sizeof r->runner_what,
             "runs-on several labels (only self-hosted runners carry several)");
  }
}

/* ---- environments ----------------------------------------------------- */

static void job_env(const al_wf_repo *repo, struct fy_node *job, struct wf_reach *r)
{
  struct fy_node *v;
  if (!wf_get(job, "environment", &v) || !v)
    return;
  struct fy_node *nm = v;
  if (fy_node_is_mapping(v) && !wf_get(v, "name", &nm))
    nm = NULL;
  al_autofree char *name = wf_scalar(nm);
  if (!name || strstr(name, "${{")) {
    r->gate = WF_MAYBE;
    snprintf(r->gate_what, sizeof r->gate_what, "its environment is an expression (`%.60s`)",
             name ? name : "?");
    return;
  }
  if (!repo->envs_known) {
    r->gate = WF_MAYBE;
    snprintf(r->gate_what, sizeof r->gate_what,
             "environment `%.60s`: the environments could not be read (%s)", name,
             repo->envs_why ? repo->envs_why : "?");
    return;
  }
  for (size_t i = 0; i < repo->n_envs; i++) {
    /* environment names are case-insensitive on GitHub */
    if (strcasecmp(repo->envs[i].name, name) != 0)
      continue;
    if (repo->envs[i].reviewers) {
      r->gate = WF_YES;
      snprintf(r->gate_what, sizeof r->gate_what,
               "waits for the required reviewers of environment `%.60s`", name);
      return;
    }
    break;
  }
  r->secrets = WF_YES;
  snprintf(r->secrets_what, sizeof r->secrets_what,
           "environment `%.60s` (no required reviewers): its secrets", name);
}

/* ---- one job ---------------------------------------------------------- */

static struct wf_file *local_workflow(struct wf_file *files, size_t n, const char *uses)
{
  if (strncmp(uses, "./", 2) != 0)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(files[i].f->path, uses + 2))
      return &files[i];
  return NULL;
}

/* A reusable workflow's call: its jobs decide the runner and the
 * environments; the caller's permissions bound the token (the called
 * workflow can only lower them) and `secrets:` says what it gets. */
static void called(const al_wf_repo *repo, struct wf_file *files, size_t n, struct fy_node *job,
                   const char *uses, struct wf_reach *r)
{
  struct fy_node *sec;
  if (wf_get(job, "secrets", &sec) && wf_scalar_is(sec, "inherit")) {
    r->secrets = WF_YES;
    snprintf(r->secrets_what, sizeof r->secrets_what,
             "`secrets: inherit` to `%.80s`: every secret of the caller", uses);
  }
  struct wf_file *callee = local_workflow(files, n, uses);
  if (!callee) {
    r->runner = WF_MAYBE;
    snprintf(r->runner_what, sizeof r->runner_what,
             "calls `%.100s`, a workflow the audit does not read (another repository, or not "
             "in .github/workflows)",
             uses);
    return;
  }
  if (callee->broken) {
    r->broken = true;
    snprintf(r->broken_why, sizeof r->broken_why, "calls %s, which %s", callee->f->path,
             callee->why);
    return;
  }
  struct fy_node *jobs;
  if (!wf_get(callee->root, "jobs", &jobs) || !jobs || !fy_node_is_mapping(jobs)) {
    r->broken = true;
    snprintf(r->broken_why, sizeof r->broken_why, "calls %s, whose jobs cannot be read",
             callee->f->path);
    return;
  }
  void *it = NULL;
  struct fy_node_pair *p;
  bool all_gated = true;
  while ((p = fy_node_mapping_iterate(jobs, &it)) != NULL) {
    struct fy_node *cj = fy_node_pair_value(p), *u;
    if (wf_get(cj, "uses", &u)) {
      r->runner = WF_MAYBE;
      snprintf(r->runner_what, sizeof r->runner_what, "calls %s, which calls another workflow",
               callee->f->path);
      all_gated = false;
      continue;
    }
    struct wf_reach sub = {0};
    job_env(repo, cj, &sub);
    if (sub.gate != WF_YES) {
      all_gated = false;
      job_runner(cj, r);
      if (sub.secrets && !r->secrets) {
        r->secrets = sub.secrets;
        snprintf(r->secrets_what, sizeof r->secrets_what, "via %s: %s", callee->f->path,
                 sub.secrets_what);
      }
      if (sub.gate == WF_MAYBE && r->gate != WF_MAYBE) {
        r->gate = WF_MAYBE;
        snprintf(r->gate_what, sizeof r->gate_what, "via %s: %s", callee->f->path, sub.gate_what);
      }
    }
  }
  if (all_gated && r->gate == WF_NO) {
    r->gate = WF_YES;
    snprintf(r->gate_what, sizeof r->gate_what,
             "every job of %s waits on an environment with required reviewers", callee->f->path);
  }
}

void wf_job_reach(const al_wf_repo *repo, struct wf_file *files, size_t n_files, struct wf_file *w,
                  struct fy_node *job, const struct wf_fire *fire, struct wf_reach *r)
{
  memset(r, 0, sizeof *r);
  if (!job || !fy_node_is_mapping(job)) {
    r->broken = true;
    snprintf(r->broken_why, sizeof r->broken_why, "the job is not a mapping");
    return;
  }
  if (fire->cls == WF_T_PUSH || fire->cls == WF_T_PR) {
    r->runs_run_code = true;
    snprintf(r->code_how, sizeof r->code_how, "code (the run's commit is what it checks out)");
  } else if (tree_has_mark(job, 0, r->code_how, sizeof r->code_how)) {
    r->runs_run_code = true;
    size_t l = strlen(r->code_how);
    snprintf(r->code_how + l, sizeof r->code_how - l, " (its head, artifacts or text)");
  }
  job_env(repo, job, r);
  char name[80];
  struct fy_node *env;
  if (!r->secrets && tree_has_secret(job, false, 0, name, sizeof name)) {
    r->secrets = WF_YES;
    snprintf(r->secrets_what, sizeof r->secrets_what, "`%s`", name);
  } else if (!r->secrets && wf_get(w->root, "env", &env) &&
             tree_has_secret(env, false, 0, name, sizeof name)) {
    r->secrets = WF_YES;
    snprintf(r->secrets_what, sizeof r->secrets_what, "`%s` in the workflow's `env:`", name);
  }
  job_perms(repo, w, job, fire, r);
  struct fy_node *uses;
  if (wf_get(job, "uses", &uses)) {
    al_autofree char *u = wf_scalar(uses);
    if (!u) {
      r->broken = true;
      snprintf(r->broken_why, sizeof r->broken_why, "`uses:` is not a string");
      return;
    }
    called(repo, files, n_files, job, u, r);
  } else {
    job_runner(job, r);
  }
}
