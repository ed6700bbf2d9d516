/* Phase: safe outputs (issue #15). After the agent exits, the supervisor —
 * not the agent — makes the run's one pull request and tells the ticket.
 *
 *   1. the run branch exists on the forge (the agent pushed it), else no
 *      PR (the run exits 3, "no changes");
 *   2. a PR from it already? (env mode: the agent may open its own; the
 *      supervisor verifies it and opens no other);
 *   3. else POST /repos/{o}/{r}/pulls from the run branch to the base, with
 *      the title and body the agent declared (AIRLOCK_RESULT) or defaults
 *      from the ticket — attacker-controlled text, sent as JSON data and
 *      made inert first (common/safetext.h, issue #26: no mention, closing
 *      keyword, HTML, outside image or link; airlock's header first, the
 *      agent's text quoted, the supervisor's footer after it);
 *   4. a comment on the ticket with the PR's link.
 * Every write goes through the one forge client (forge/ghapi.h) with the
 * lease's tokens, which are alive until the release phase.
 *
 * Cleanup (tk_do_cleanup, issue #29 item 6): an attempt that ends without
 * its PR (the agent failed after pushing, the outputs failed, the fence
 * stopped it, a signal interrupted it) deletes its run branch, unless a
 * pull request from it is open: "Delete a reference"
 * (DELETE /repos/{o}/{r}/git/refs/heads/{branch}, 204), recorded in
 * the record's `branch_cleanup`.
 * GitHub REST: "Get a branch", "List pull requests", "Create a pull
 * request", "Create an issue comment", "Get a repository", "Get an issue". */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "review/catalogue.h"
#include "broker/client.h"
#include "common/log.h"
#include "common/safetext.h"
#include "common/util.h"
#include "forge/forge.h"
#include "forge/ghapi.h"
#include "forge/gitlab.h"

#define TITLE_MAX 256  /* GitHub's limit for a title, in characters */
#define BODY_MAX 65536 /* GitHub's limit for a body or a comment */

struct out_ctx {
  struct ticket *t;
  const al_forge_ops *forge; /* the policy's forge.kind */
  al_ghapi *api;
  const char *git, *tkt;
  json_t *rec; /* t->rec.outputs */
};

/* The base branch: the policy's, else the one the audit proved the escape
 * budget of (the repository's default when it read it: the same answer,
 * not asked twice in one run, issue #33), else the repository's default. */
static int base_branch(struct out_ctx *c, char *out, size_t n, al_error *err)
{
  if (c->t->policy->base_branch) {
    snprintf(out, n, "%s", c->t->policy->base_branch);
    return 0;
  }
  json_t *au = json_object_get(c->t->rec, "audit");
  const char *ab = json_string_value(json_object_get(json_object_get(au, "report"), "branch"));
  if (json_is_true(json_object_get(au, "holds")) && ab && *ab && strlen(ab) < n) {
    snprintf(out, n, "%s", ab);
    return 0;
  }
  return c->forge->default_branch(c->api, c->git, c->t->repo, out, n, err);
}

static void set_pr(al_ticket_outcome *res, json_t *pr)
{
  const char *url = json_string_value(json_object_get(pr, "url"));
  if (url && strlen(url) < sizeof res->pr_url)
    snprintf(res->pr_url, sizeof res->pr_url, "%s", url);
}

/* The host of an http(s) URL from the policy ("https://HOST[:PORT]/..."),
 * or "" (then no link to it stays). */
static void url_host(const char *url, char *out, size_t n)
{
  out[0] = '\0';
  const char *h = url ? strstr(url, "://") : NULL;
  if (!h)
    return;
  h += 3;
  size_t l = strcspn(h, ":/?#");
  if (l && l < n) {
    memcpy(out, h, l);
    out[l] = '\0';
  }
}

/* What the rewriter changed, for the record (the reviewer's evidence). */
static json_t *counts_json(const struct al_safetext_counts *k)
{
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I}", "html",
                   (json_int_t)k->html, "entities", (json_int_t)k->entities, "links",
                   (json_int_t)k->links, "images", (json_int_t)k->images, "mentions",
                   (json_int_t)k->mentions, "keywords", (json_int_t)k->keywords, "controls",
                   (json_int_t)k->controls, "quick_actions", (json_int_t)k->quick_actions,
                   "truncated", k->truncated, "in_bytes", (json_int_t)k->in_len, "shown_bytes",
                   (json_int_t)k->shown_len);
}

/* The ticket as the PR's footer names it: "#N" (an issue of the
 * repository); "PROJ-7 (jira, https://SITE/browse/PROJ-7)" with the
 * link built from the policy's ticket.url (the operator's, not the
 * vendor's answer) for a Jira site; "ENG-42 (linear)". malloc'd. */
static char *tk_ticket_name(const struct ticket *t)
{
  if (!tk_vendor(t))
    return al_strdup_printf("#%lu", t->number);
  const char *u = t->policy->ticket.url;
  if (t->policy->ticket.kind == AL_TK_JIRA && u && !strstr(u, "/ex/jira/"))
    return al_strdup_printf("%s (jira, %s/browse/%s)", t->tk.key, u, t->tk.key);
  return al_strdup_printf("%s (%s)", t->tk.key, al_tk_kind_name(t->tk.kind));
}

/* Title and body for the PR: the agent's declaration (else the ticket's
 * title), each through the safe-text rewriter (common/safetext.h) with the
 * forge's own hosts: airlock's header first, the agent's text quoted,
 * the supervisor's footer after it. *rewritten: what was changed. */
static int pr_text(struct out_ctx *c, char **title, char **body, json_t **rewritten, al_error *err)
{
  struct ticket *t = c->t;
  json_t *decl = json_object_get(json_object_get(t->rec, "agent"), "declared");
  const char *dt = json_string_value(json_object_get(decl, "title"));
  const char *db = json_string_value(json_object_get(decl, "body"));
  char api_host[256], git_host[256];
  url_host(t->policy->forge.api_url, api_host, sizeof api_host);
  url_host(t->policy->forge.git_url, git_host, sizeof git_host);
  const char *hosts[] = {api_host, git_host, NULL};
  struct al_safetext_counts kt = {0}, kb = {0};
  struct al_safetext_opts to = {
      .forge_hosts = hosts, .max_len = TITLE_MAX, .one_line = true, .counts = &kt};
  *title = *body = NULL;
  if (dt && *dt) {
    if (al_safetext_render(dt, strlen(dt), &to, title, err) < 0)
      return -1;
  } else {
    /* the ticket's title: written by whoever filed it, made inert the same way */
    json_t *issue = NULL;
    al_error e = {0};
    const char *it = NULL;
    if (tk_vendor(t))
      it = tk_vendor_title(t); /* Jira's or Linear's, read in phase "ticket" */
    else if (c->forge->issue_get(c->api, c->tkt, t->repo, t->number, &issue, &e) == 0)
      it = json_string_value(json_object_get(issue, "title"));
    al_autofree char *suffix = tk_vendor(t) ? al_strdup_printf(" (%s)", t->tk.key)
                                            : al_strdup_printf(" (#%lu)", t->number);
    to.max_len = TITLE_MAX - strlen(suffix);
    al_autofree char *cut = NULL;
    int rr =
        al_safetext_render(it && *it ? it : "airlock", it && *it ? strlen(it) : 7, &to, &cut, err);
    json_decref(issue);
    if (rr < 0)
      return -1;
    *title = al_strdup_printf("%s%s", cut, suffix);
  }
  al_autofree char *tname = tk_ticket_name(t);
  al_autofree char *footer = al_strdup_printf(
      "---\nTicket: %s. Opened by airlock (run %s, credentials %s) from the branch `%s` the "
      "agent pushed. The title and the quoted text above are the agent's: untrusted. A human "
      "must review this change.",
      tname, t->run_id, al_cred_mode_name(t->policy->credentials.mode), t->branch);
  struct al_safetext_opts bo = {
      .forge_hosts = hosts, .max_len = BODY_MAX, .footer = footer, .counts = &kb};
  if (al_safetext_render(db ? db : "", db ? strlen(db) : 0, &bo, body, err) < 0) {
    free(*title);
    *title = NULL;
    return -1;
  }
  *rewritten = json_pack("{s:o, s:o}", "title", counts_json(&kt), "body", counts_json(&kb));
  return 0;
}

/* A driver without the review's reads (forge/forge.h pr_for_review: NULL)
 * leaves the run's verification (tk_verify_pr) nothing to read the PR
 * back with after the release: read it back here, while the tokens live,
 * from the run branch's list. pr gets read_back {number, url, state} when
 * the forge lists the one just opened, else read_back_error. */
static void read_back(struct out_ctx *c, json_t *pr)
{
  json_t *prs = NULL;
  al_error e = {0};
  json_int_t want = json_integer_value(json_object_get(pr, "number"));
  if (c->forge->prs_from_branch(c->api, c->git, c->t->repo, c->t->branch, &prs, &e) < 0) {
    json_object_set_new(pr, "read_back_error", json_string(e.msg));
    json_decref(prs);
    return;
  }
  size_t i;
  json_t *v;
  json_array_foreach(prs, i, v)
  {
    if (json_integer_value(json_object_get(v, "number")) != want)
      continue;
    json_object_set_new(pr, "read_back",
                        json_pack("{s:I, s:O, s:O*}", "number", want, "url",
                                  json_object_get(v, "url") ?: json_null(), "state",
                                  json_object_get(v, "state")));
    json_decref(prs);
    return;
  }
  json_object_set_new(pr, "read_back_error",
                      json_string("the forge does not list it among the run branch's"));
  json_decref(prs);
}

/* GitLab runs a merge request's pipeline from its source branch's own CI
 * definition (issue #30; ci.skip covers only the push's branch pipeline):
 * when the run's head changes it against the base, no MR is opened. 0, or
 * -1 with err (the run then ends without one, its branch deleted by
 * tk_do_cleanup); record: outputs.ci_definition. Fails closed when a tree
 * cannot be read whole. Compared: the default places and the project's
 * ci_config_path (t->gl_ci_config_path, read with the project's id in
 * sealed mode; an external one names no file here). */
static int gl_ci_guard(struct out_ctx *c, const char *base, const char *head_sha, al_error *err)
{
  struct ticket *t = c->t;
  bool exists = false, tb = false, th = false;
  char bsha[128];
  json_t *bt = NULL, *ht = NULL;
  int rc = -1;
  if (c->forge->branch_head(c->api, c->git, t->repo, base, &exists, bsha, sizeof bsha, err) < 0)
    goto out;
  if (!exists || !bsha[0] || !head_sha[0]) {
    al_error_set(err, ENOENT, "the base branch %s or the run branch's head could not be read",
                 base);
    goto out;
  }
  if (c->forge->tree(c->api, c->git, t->repo, bsha, &bt, &tb, err) < 0 ||
      c->forge->tree(c->api, c->git, t->repo, head_sha, &ht, &th, err) < 0)
    goto out;
  char path[512];
  const char *ccp = t->gl_ci_config_path[0] ? t->gl_ci_config_path : NULL;
  int ch = tb || th ? -1 : al_review_gitlab_ci_changed(bt, ht, ccp, path, sizeof path);
  if (ch < 0) {
    al_error_set(err, EIO,
                 "the trees of %s and the run branch could not be read whole: "
                 "no merge request (its pipeline could run the agent's CI definition)",
                 base);
    goto out;
  }
  if (ch == 1) {
    json_object_set_new(c->rec, "ci_definition",
                        json_pack("{s:b, s:s}", "changed", 1, "path", path));
    al_error_set(err, EPERM,
                 "the run's commits change GitLab's CI definition (%s): GitLab would run it in "
                 "the merge request's pipeline, so no merge request is opened (docs/gitlab.md)",
                 path);
    goto out;
  }
  json_object_set_new(c->rec, "ci_definition", json_pack("{s:b}", "changed", 0));
  rc = 0;
out:
  json_decref(bt);
  json_decref(ht);
  return rc;
}

static int outputs(struct out_ctx *c, al_ticket_outcome *res, al_error *err)
{
  struct ticket *t = c->t;
  /* 1. the branch */
  bool exists = false;
  char sha[128];
  if (c->forge->branch_head(c->api, c->git, t->repo, t->branch, &exists, sha, sizeof sha, err) < 0)
    return -1;
  if (!exists) {
    /* no changes: no PR; the run ends with AL_EXIT_NO_CHANGES (3) */
    json_object_set_new(c->rec, "branch", json_pack("{s:s, s:b}", "name", t->branch, "exists", 0));
    return 1;
  }
  json_object_set_new(
      c->rec, "branch",
      json_pack("{s:s, s:b, s:s?}", "name", t->branch, "exists", 1, "sha", sha[0] ? sha : NULL));

  /* 2. a PR from it already (env mode: the agent's own) */
  json_t *prs = NULL;
  if (c->forge->prs_from_branch(c->api, c->git, t->repo, t->branch, &prs, err) < 0) {
    json_decref(prs);
    return -1;
  }
  if (json_array_size(prs) > 0) {
    json_t *pr = json_array_get(prs, 0);
    set_pr(res, pr);
    json_object_set_new(c->rec, "pull_request",
                        json_pack("{s:O, s:O, s:s}", "number", json_object_get(pr, "number"), "url",
                                  json_object_get(pr, "url"), "opened_by", "agent"));
    json_decref(prs);
    if (t->policy->credentials.mode == AL_CRED_SEALED)
      /* the gateway lets no agent open a PR: someone else did */
      return al_error_set(
          err, EEXIST, "a pull request from %s exists that the supervisor did not open", t->branch);
    return 0;
  }
  json_decref(prs);

  /* 3. the one PR */
  char base[256];
  if (base_branch(c, base, sizeof base, err) < 0)
    return -1;
  if (t->policy->forge.kind == AL_FORGE_GITLAB && gl_ci_guard(c, base, sha, err) < 0)
    return -1;
  al_autofree char *title = NULL;
  al_autofree char *body = NULL;
  json_t *rewritten = NULL;
  if (pr_text(c, &title, &body, &rewritten, err) < 0)
    return -1;
  json_object_set_new(c->rec, "rewritten", rewritten);
  al_forge_pr_req req = {.title = title, .body = body, .head = t->branch, .base = base};
  json_t *pr = NULL;
  if (c->forge->pr_open(c->api, c->git, t->repo, &req, &pr, err) < 0)
    return -1;
  set_pr(res, pr);
  res->pr_by_supervisor = true;
  json_object_set_new(c->rec, "pull_request",
                      json_pack("{s:O, s:O, s:s, s:s, s:s}", "number",
                                json_object_get(pr, "number"), "url",
                                json_object_get(pr, "url") ?: json_null(), "opened_by",
                                "supervisor", "base", base, "title", title));
  json_decref(pr);
  if (!c->forge->pr_for_review)
    read_back(c, json_object_get(c->rec, "pull_request"));

  /* 4. the ticket hears of it */
  /* the PR's link as the forge gave it, made inert like the agent's text
   * (a forge's answer is input too): a forge link stays */
  al_autofree char *link = NULL;
  {
    char api_host[256], git_host[256];
    url_host(t->policy->forge.api_url, api_host, sizeof api_host);
    url_host(t->policy->forge.git_url, git_host, sizeof git_host);
    const char *hosts[] = {api_host, git_host, NULL};
    struct al_safetext_opts lo = {.forge_hosts = hosts, .max_len = 1024, .one_line = true};
    if (al_safetext_render(res->pr_url, strlen(res->pr_url), &lo, &link, err) < 0)
      return -1;
  }
  al_autofree char *text = al_strdup_printf("Opened %s for review.", link);
  if (tk_vendor(t)) { /* Jira or Linear: through the ticket seam */
    tk_vendor_comment(t, text, c->rec);
    return 0;
  }
  json_t *cm = NULL;
  al_error ce = {0};
  if (c->forge->issue_comment(c->api, c->tkt, t->repo, t->number, text, &cm, &ce) == 0)
    json_object_set_new(c->rec, "ticket_comment",
                        json_pack("{s:O*, s:O*, s:s}", "id", json_object_get(cm, "id"), "url",
                                  json_object_get(cm, "url"), "body", text));
  else
    json_object_set_new(c->rec, "ticket_comment", json_pack("{s:s}", "error", ce.msg));
  json_decref(cm);
  return 0;
}

/* One request; 0 with *r filled when the forge answered (any status).
 * The branch deletion is not behind the forge seam yet (forge/forge.h). */
static int call(struct out_ctx *c, const char *method, const char *path, const char *tok,
                json_t *body, al_ghapi_resp *r, al_error *err)
{
  return al_ghapi_request(c->api, method, path, tok, body, r, err);
}

/* The cleanup's entry when a pull (merge) request from the run branch is
 * still open (the branch is kept), or when they cannot be listed; NULL
 * when none is open and the branch may go. `what` names it in the entry. */
static json_t *cleanup_keep(struct out_ctx *c, const char *what)
{
  struct ticket *t = c->t;
  al_error err = {0};
  json_t *prs = NULL, *o = NULL;
  if (c->forge->prs_from_branch(c->api, c->git, t->repo, t->branch, &prs, &err) < 0) {
    json_decref(prs);
    return json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", err.msg);
  }
  size_t i;
  json_t *v;
  json_array_foreach(prs, i, v)
  {
    const char *state = json_string_value(json_object_get(v, "state"));
    if (state && !strcmp(state, "open")) {
      al_autofree char *d = al_strdup_printf("a %s from it is open", what);
      o = json_pack("{s:s, s:s, s:s, s:O*}", "branch", t->branch, "status", "kept", "detail", d,
                    "pull_request", json_object_get(v, "url"));
      break;
    }
  }
  json_decref(prs);
  return o;
}

/* GitLab (issue #30): the branch's head through the seam, the MRs from it,
 * then "Delete repository branch" (DELETE /projects/:id/repository/
 * branches/:branch, 204), the branch one path segment ('/' as %2F, as
 * GitLab wants a namespaced name). */
static json_t *cleanup_gitlab(struct out_ctx *c)
{
  struct ticket *t = c->t;
  char bq[512];
  size_t bl = 0;
  for (const char *s = t->branch; *s && bl + 4 < sizeof bq; s++)
    bl += (size_t)(*s == '/' ? snprintf(bq + bl, sizeof bq - bl, "%%2F")
                             : snprintf(bq + bl, sizeof bq - bl, "%c", *s));
  al_error err = {0};
  bool exists = false;
  char sha[128], pe[800], d[600];
  if (c->forge->branch_head(c->api, c->git, t->repo, t->branch, &exists, sha, sizeof sha, &err) <
          0 ||
      al_gl_project_escape(t->repo, pe, sizeof pe, &err) < 0)
    return json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", err.msg);
  if (!exists)
    return json_pack("{s:s, s:s}", "branch", t->branch, "status", "absent");
  json_t *keep = cleanup_keep(c, "merge request");
  if (keep)
    return keep;
  al_autofree char *path = al_strdup_printf("/projects/%s/repository/branches/%s", pe, bq);
  al_ghapi_resp r;
  if (call(c, "DELETE", path, c->git, NULL, &r, &err) < 0)
    return json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", err.msg);
  json_t *o;
  if (r.status == 204) {
    o = json_pack("{s:s, s:s}", "branch", t->branch, "status", "deleted");
  } else {
    al_ghapi_describe(&r, d, sizeof d);
    o = json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", d);
  }
  al_ghapi_resp_free(&r);
  return o;
}

/* The cleanup's forge calls, with ctx's client; the record's entry. */
static json_t *cleanup(struct out_ctx *c)
{
  struct ticket *t = c->t;
  al_error err = {0};
  if (t->policy->forge.kind == AL_FORGE_GITLAB)
    return cleanup_gitlab(c);
  al_autofree char *bq = al_ghapi_escape(t->branch);
  al_autofree char *bpath = al_strdup_printf("/repos/%s/branches/%s", t->repo, bq);
  al_ghapi_resp r;
  char d[600];
  if (call(c, "GET", bpath, c->git, NULL, &r, &err) < 0)
    return json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", err.msg);
  if (r.cls == AL_GHAPI_NOT_FOUND) {
    al_ghapi_resp_free(&r);
    return json_pack("{s:s, s:s}", "branch", t->branch, "status", "absent");
  }
  if (r.cls != AL_GHAPI_OK) {
    al_ghapi_describe(&r, d, sizeof d);
    al_ghapi_resp_free(&r);
    return json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", d);
  }
  al_ghapi_resp_free(&r);
  json_t *keep = cleanup_keep(c, "pull request");
  if (keep)
    return keep;
  al_autofree char *rpath = al_strdup_printf("/repos/%s/git/refs/heads/%s", t->repo, bq);
  if (call(c, "DELETE", rpath, c->git, NULL, &r, &err) < 0)
    return json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", err.msg);
  json_t *o;
  if (r.status == 204) {
    o = json_pack("{s:s, s:s}", "branch", t->branch, "status", "deleted");
  } else {
    al_ghapi_describe(&r, d, sizeof d);
    o = json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", d);
  }
  al_ghapi_resp_free(&r);
  return o;
}

void tk_do_cleanup(struct ticket *t, const al_ticket_outcome *res)
{
  const char *git = t->lease ? al_lease_token(t->lease, AL_ROLE_GIT) : NULL;
  if (!git || res->pr_url[0] || !t->policy || !t->branch[0])
    return; /* a PR, or no lease (no push was possible): nothing to clean */
  struct out_ctx c = {.t = t, .forge = al_forge_ops_of(t->policy->forge.kind), .git = git};
  al_ghapi_opts go = {.ca_file = t->policy->forge.ca_file, .timeout_ms = 20000};
  al_error err = {0};
  json_t *entry;
  if (al_ghapi_open(t->policy->forge.api_url, &go, &c.api, &err) < 0) {
    entry =
        json_pack("{s:s, s:s, s:s}", "branch", t->branch, "status", "failed", "detail", err.msg);
  } else {
    char **resolves = tk_pin_resolves(t->policy);
    al_ghapi_set_resolve(c.api, (const char *const *)resolves);
    /* a stopping run's release waits; never past the lease */
    al_ghapi_set_deadline(c.api, tk_deadline_in_lease(t->lease, 20000));
    entry = cleanup(&c);
    al_ghapi_free(c.api);
    tk_free_strv(resolves);
  }
  const char *st = json_string_value(json_object_get(entry, "status"));
  if (st && !strcmp(st, "failed"))
    al_warn("the run branch %s was not deleted: %s", t->branch,
            json_string_value(json_object_get(entry, "detail")));
  else if (st && !strcmp(st, "deleted"))
    al_info("no pull request: the run branch %s was deleted", t->branch);
  json_object_set_new(t->rec, "branch_cleanup", entry);
}

int tk_do_outputs(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "outputs");
  json_t *rec = json_object();
  json_object_set_new(t->rec, "outputs", rec);
  struct out_ctx c = {.t = t,
                      .forge = al_forge_ops_of(t->policy->forge.kind),
                      .git = al_lease_token(t->lease, AL_ROLE_GIT),
                      .tkt = al_lease_token(t->lease, AL_ROLE_TICKET),
                      .rec = rec};
  al_ghapi_opts go = {.ca_file = t->policy->forge.ca_file, .timeout_ms = 20000};
  if (!c.git || !c.tkt) {
    al_error_set(err, EINVAL, "no lease: the supervisor cannot open the pull request");
    goto fail;
  }
  if (al_ghapi_open(t->policy->forge.api_url, &go, &c.api, err) < 0)
    goto fail;
  char **resolves = tk_pin_resolves(t->policy);
  al_ghapi_set_resolve(c.api, (const char *const *)resolves);
  al_ghapi_set_deadline(c.api, tk_deadline_in_lease(t->lease, 120000));
  /* `airlock serve`: a stale attempt stops here, before any write */
  int r = tk_fence_check(t, c.api, c.git, err) < 0 ? -1 : outputs(&c, res, err);
  al_ghapi_free(c.api);
  tk_free_strv(resolves);
  if (r < 0)
    goto fail;
  if (r == 1) {
    json_object_set_new(rec, "status", json_string("no-branch"));
    tk_phase_end(t, s, "skipped",
                 "the agent pushed nothing to %s: no pull request (an agent pushes its work to "
                 "$AIRLOCK_BRANCH; docs/agents.md)",
                 t->branch);
    return 0;
  }
  json_object_set_new(rec, "status", json_string("ok"));
  tk_phase_end(t, s, "ok", "%s %s", res->pr_by_supervisor ? "opened" : "verified the agent's",
               res->pr_url);
  return 0;
fail:
  json_object_set_new(rec, "status", json_string("failed"));
  json_object_set_new(rec, "error", json_string(err->msg));
  tk_phase_end(t, s, "failed", "%s", err->msg);
  return -1;
}
