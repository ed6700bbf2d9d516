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
 *      never interpreted; the supervisor's own footer says so;
 *   4. a comment on the ticket with the PR's link.
 * Every write goes through the one forge client (forge/ghapi.h) with the
 * lease's tokens, which are alive until the release phase.
 * GitHub REST: "Get a branch", "List pull requests", "Create a pull
 * request", "Create an issue comment", "Get a repository", "Get an issue". */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ticket_internal.h"
#include "broker/client.h"
#include "common/util.h"
#include "forge/ghapi.h"

#define TITLE_MAX 200
#define BODY_MAX 60000

/* A copy of s, at most max bytes (cut at a UTF-8 boundary), with control
 * characters replaced by a space (one_line: newlines too). malloc'd. */
static char *clean_text(const char *s, size_t max, bool one_line)
{
  size_t n = strlen(s);
  if (n > max) {
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
      n--;
  }
  char *o = al_xmalloc(n + 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    bool ctl = c < 0x20 || c == 0x7f;
    if (!one_line && (c == '\n' || c == '\t'))
      ctl = false;
    o[i] = s[i];
    if (ctl)
      o[i] = ' ';
  }
  o[n] = '\0';
  return o;
}

struct out_ctx {
  struct ticket *t;
  al_ghapi *api;
  const char *git, *tkt;
  json_t *rec; /* t->rec.outputs */
};

/* One request; 0 with *r filled when the forge answered (any status). */
static int call(struct out_ctx *c, const char *method, const char *path, const char *tok,
                json_t *body, al_ghapi_resp *r, al_error *err)
{
  return al_ghapi_request(c->api, method, path, tok, body, r, err);
}

/* The base branch: the policy's, or the repository's default. */
static int base_branch(struct out_ctx *c, char *out, size_t n, al_error *err)
{
  if (c->t->policy->base_branch) {
    snprintf(out, n, "%s", c->t->policy->base_branch);
    return 0;
  }
  al_autofree char *path = al_strdup_printf("/repos/%s", c->t->repo);
  al_ghapi_resp r;
  if (call(c, "GET", path, c->git, NULL, &r, err) < 0)
    return -1;
  const char *b = json_string_value(json_object_get(r.json, "default_branch"));
  if (r.cls != AL_GHAPI_OK || !b || !*b || strlen(b) >= n) {
    char d[600];
    al_ghapi_describe(&r, d, sizeof d);
    al_ghapi_resp_free(&r);
    return al_error_set(err, EPROTO, "GET %s: no default branch: %s", path, d);
  }
  snprintf(out, n, "%s", b);
  al_ghapi_resp_free(&r);
  return 0;
}

/* The open or closed PRs whose head is exactly the run branch (the list
 * filter is GitHub's; we check the head ourselves). */
static int run_branch_prs(struct out_ctx *c, json_t **prs, al_error *err)
{
  const char *slash = strchr(c->t->repo, '/');
  al_autofree char *bq = al_ghapi_escape(c->t->branch);
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls?state=all&head=%.*s:%s", c->t->repo,
                                            (int)(slash - c->t->repo), c->t->repo, bq);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c->api, path, c->git, 1000, &items, &st, err);
  *prs = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    const char *ref = json_string_value(json_object_get(json_object_get(v, "head"), "ref"));
    if (ref && strcmp(ref, c->t->branch) == 0)
      json_array_append(*prs, v);
  }
  json_decref(items);
  return r;
}

static void set_pr(al_ticket_outcome *res, json_t *pr)
{
  const char *url = json_string_value(json_object_get(pr, "html_url"));
  if (url && strlen(url) < sizeof res->pr_url)
    snprintf(res->pr_url, sizeof res->pr_url, "%s", url);
}

/* Title and body for the PR: the agent's declaration, else the ticket's
 * title. The body ends with the supervisor's footer. */
static void pr_text(struct out_ctx *c, char **title, char **body)
{
  struct ticket *t = c->t;
  json_t *decl = json_object_get(json_object_get(t->rec, "agent"), "declared");
  const char *dt = json_string_value(json_object_get(decl, "title"));
  const char *db = json_string_value(json_object_get(decl, "body"));
  char *tt = NULL;
  if (dt && *dt) {
    tt = clean_text(dt, TITLE_MAX, true);
  } else {
    al_autofree char *ip = al_strdup_printf("/repos/%s/issues/%lu", t->repo, t->number);
    al_ghapi_resp r;
    al_error e = {0};
    const char *it = NULL;
    if (call(c, "GET", ip, c->tkt, NULL, &r, &e) == 0 && r.cls == AL_GHAPI_OK)
      it = json_string_value(json_object_get(r.json, "title"));
    al_autofree char *cut = it ? clean_text(it, TITLE_MAX - 16, true) : NULL;
    tt = al_strdup_printf("%s (#%lu)", cut && *cut ? cut : "airlock", t->number);
    al_ghapi_resp_free(&r);
  }
  al_autofree char *bb = clean_text(db ? db : "", BODY_MAX, false);
  *title = tt;
  *body = al_strdup_printf("%s%sTicket: #%lu\n\n---\nOpened by airlock (run %s, credentials %s) "
                           "from the branch `%s` the agent pushed. The title and the text above "
                           "are the agent's: untrusted. A human must review this change.",
                           bb, *bb ? "\n\n" : "", t->number, t->run_id,
                           al_cred_mode_name(t->policy->credentials.mode), t->branch);
}

static int outputs(struct out_ctx *c, al_ticket_outcome *res, al_error *err)
{
  struct ticket *t = c->t;
  /* 1. the branch */
  al_autofree char *bq = al_ghapi_escape(t->branch);
  al_autofree char *bpath = al_strdup_printf("/repos/%s/branches/%s", t->repo, bq);
  al_ghapi_resp r;
  if (call(c, "GET", bpath, c->git, NULL, &r, err) < 0)
    return -1;
  if (r.cls == AL_GHAPI_NOT_FOUND) {
    /* no changes: no PR; the run ends with AL_EXIT_NO_CHANGES (3) */
    al_ghapi_resp_free(&r);
    json_object_set_new(c->rec, "branch", json_pack("{s:s, s:b}", "name", t->branch, "exists", 0));
    return 1;
  }
  if (r.cls != AL_GHAPI_OK) {
    char d[600];
    al_ghapi_describe(&r, d, sizeof d);
    al_ghapi_resp_free(&r);
    return al_error_set(err, EPROTO, "GET %s: %s", bpath, d);
  }
  const char *sha = json_string_value(json_object_get(json_object_get(r.json, "commit"), "sha"));
  json_object_set_new(c->rec, "branch",
                      json_pack("{s:s, s:b, s:s?}", "name", t->branch, "exists", 1, "sha", sha));
  al_ghapi_resp_free(&r);

  /* 2. a PR from it already (env mode: the agent's own) */
  json_t *prs = NULL;
  if (run_branch_prs(c, &prs, err) < 0) {
    json_decref(prs);
    return -1;
  }
  if (json_array_size(prs) > 0) {
    json_t *pr = json_array_get(prs, 0);
    set_pr(res, pr);
    json_object_set_new(c->rec, "pull_request",
                        json_pack("{s:O, s:O, s:s}", "number", json_object_get(pr, "number"), "url",
                                  json_object_get(pr, "html_url"), "opened_by", "agent"));
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
  al_autofree char *title = NULL;
  al_autofree char *body = NULL;
  pr_text(c, &title, &body);
  json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:b}", "title", title, "head", t->branch, "base",
                          base, "body", body, "maintainer_can_modify", 0);
  al_autofree char *ppath = al_strdup_printf("/repos/%s/pulls", t->repo);
  int rc = call(c, "POST", ppath, c->git, req, &r, err);
  json_decref(req);
  if (rc < 0)
    return -1;
  if (r.status != 201 || !json_is_object(r.json)) {
    char d[600];
    al_ghapi_describe(&r, d, sizeof d);
    al_ghapi_resp_free(&r);
    return al_error_set(err, EPROTO, "open the pull request from %s: %s", t->branch, d);
  }
  set_pr(res, r.json);
  res->pr_by_supervisor = true;
  json_object_set_new(c->rec, "pull_request",
                      json_pack("{s:O, s:O, s:s, s:s, s:s}", "number",
                                json_object_get(r.json, "number"), "url",
                                json_object_get(r.json, "html_url"), "opened_by", "supervisor",
                                "base", base, "title", title));
  al_ghapi_resp_free(&r);

  /* 4. the ticket hears of it */
  al_autofree char *cpath = al_strdup_printf("/repos/%s/issues/%lu/comments", t->repo, t->number);
  al_autofree char *text = al_strdup_printf("Opened %s for review.", res->pr_url);
  json_t *cb = json_pack("{s:s}", "body", text);
  al_error ce = {0};
  rc = call(c, "POST", cpath, c->tkt, cb, &r, &ce);
  json_decref(cb);
  if (rc == 0 && r.status == 201)
    json_object_set_new(c->rec, "ticket_comment",
                        json_pack("{s:O*, s:O*, s:s}", "id", json_object_get(r.json, "id"), "url",
                                  json_object_get(r.json, "html_url"), "body", text));
  else {
    char d[600];
    if (rc < 0)
      snprintf(d, sizeof d, "%s", ce.msg);
    else
      al_ghapi_describe(&r, d, sizeof d);
    json_object_set_new(c->rec, "ticket_comment", json_pack("{s:s}", "error", d));
  }
  al_ghapi_resp_free(&r);
  return 0;
}

int tk_do_outputs(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "outputs");
  json_t *rec = json_object();
  json_object_set_new(t->rec, "outputs", rec);
  struct out_ctx c = {.t = t,
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
  al_ghapi_set_deadline(c.api, al_now_ms() + 120000);
  int r = outputs(&c, res, err);
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
