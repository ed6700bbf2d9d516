/* Phase: the review notes for the human reviewer. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ticket_internal.h"
#include "broker/client.h"
#include "common/util.h"
#include "forge/ghapi.h"
#include "run/review.h"

/* Phase: what the human reviewer should look at. The run's tokens are dead
 * by now, so a second, read-only lease reads the pull request: which
 * changed files run later outside the sandbox, and whether the diff, the PR
 * body or the comments carry the run's tokens or token-shaped strings. */
void tk_do_review(struct ticket *t)
{
  uint64_t s = tk_phase_begin(t, "review");
  json_t *rv = json_object();
  json_object_set_new(t->rec, "review", rv);
  al_error e = {0};
  al_lease *l = NULL;
  al_ghapi *api = NULL;
  al_ghapi_resp r = {0};
  char **resolves = NULL;
  al_autofree char *branch_q = NULL; /* before the first goto: freed on every exit */
  al_autofree char *path = NULL;
  const char *fps[AL_ROLE_COUNT] = {NULL, NULL};
  json_t *toks = json_object_get(json_object_get(t->rec, "lease"), "tokens");
  for (size_t i = 0; i < json_array_size(toks) && i < AL_ROLE_COUNT; i++)
    fps[i] = json_string_value(json_object_get(json_array_get(toks, i), "fingerprint"));

  al_lease_request rq = {.git_repo = t->repo,
                         .ticket_repo = t->repo,
                         .git_permissions = "contents:read,pull_requests:read",
                         .ticket_permissions = "issues:read",
                         .ttl_ms = 60000};
  if (al_lease_open(t->policy->credentials.broker, &rq, &l, &e) < 0)
    goto fail;
  if (al_ghapi_new(t->policy->forge.api_url, t->policy->forge.ca_file, 20000, &api, &e) < 0)
    goto fail;
  resolves = tk_pin_resolves(t->policy);
  al_ghapi_set_resolve(api, (const char *const *)resolves);
  const char *git = al_lease_token(l, AL_ROLE_GIT);
  const char *tkt = al_lease_token(l, AL_ROLE_TICKET);
  const char *owner_end = strchr(t->repo, '/');
  branch_q = al_ghapi_escape(t->branch);
  path = al_strdup_printf("/repos/%s/pulls?state=all&head=%.*s:%s", t->repo,
                          (int)(owner_end - t->repo), t->repo, branch_q);
  if (al_ghapi_get_list(api, path, git, &r, &e) < 0)
    goto fail;
  if (r.status != 200 || !json_is_array(r.json)) {
    al_make_error(&e, 0, "list pull requests: HTTP %ld %s", r.status, r.message);
    goto fail;
  }
  /* GitHub filters by `head`; take only a PR whose head really is the
   * run's branch, whatever the server did with the filter. */
  json_t *pr = NULL;
  {
    size_t i;
    json_t *v;
    json_array_foreach(r.json, i, v)
    {
      const char *ref = json_string_value(json_object_get(json_object_get(v, "head"), "ref"));
      if (ref && strcmp(ref, t->branch) == 0) {
        pr = v;
        break;
      }
    }
  }
  json_t *secrets = json_array();
  json_object_set_new(rv, "secrets", secrets);
  json_t *outside = json_array();
  json_object_set_new(rv, "runs_outside_sandbox", outside);
  if (!pr) {
    json_object_set_new(rv, "pull_request", json_null());
  } else {
    json_int_t num = json_integer_value(json_object_get(pr, "number"));
    json_object_set_new(rv, "pull_request",
                        json_pack("{s:I, s:O, s:O}", "number", num, "url",
                                  json_object_get(pr, "html_url"), "base",
                                  json_object_get(json_object_get(pr, "base"), "ref")));
    al_review_scan_secrets(json_string_value(json_object_get(pr, "body")), "pull request body", fps,
                           AL_ROLE_COUNT, secrets);
    al_review_scan_secrets(json_string_value(json_object_get(pr, "title")), "pull request title",
                           fps, AL_ROLE_COUNT, secrets);
    al_ghapi_resp f = {0};
    al_autofree char *fpath =
        al_strdup_printf("/repos/%s/pulls/%lld/files", t->repo, (long long)num);
    if (al_ghapi_get_list(api, fpath, git, &f, &e) == 0 && f.status == 200) {
      json_t *files = json_array();
      size_t i;
      json_t *v;
      json_array_foreach(f.json, i, v)
      {
        const char *name = json_string_value(json_object_get(v, "filename"));
        if (!name)
          continue;
        json_array_append_new(files, json_pack("{s:s, s:O*, s:O*, s:O*}", "file", name, "status",
                                               json_object_get(v, "status"), "additions",
                                               json_object_get(v, "additions"), "deletions",
                                               json_object_get(v, "deletions")));
        const char *why = al_review_runs_outside(name);
        if (why)
          json_array_append_new(outside, json_pack("{s:s, s:s}", "file", name, "why", why));
        al_autofree char *where = al_strdup_printf("diff of %s", name);
        al_review_scan_secrets(json_string_value(json_object_get(v, "patch")), where, fps,
                               AL_ROLE_COUNT, secrets);
      }
      json_object_set_new(rv, "files", files);
    }
    al_ghapi_resp_free(&f);
    al_autofree char *cpath =
        al_strdup_printf("/repos/%s/issues/%lld/comments", t->repo, (long long)num);
    if (al_ghapi_get_list(api, cpath, tkt, &f, &e) == 0 && f.status == 200) {
      size_t i;
      json_t *v;
      json_array_foreach(f.json, i, v)
          al_review_scan_secrets(json_string_value(json_object_get(v, "body")),
                                 "pull request comment", fps, AL_ROLE_COUNT, secrets);
    }
    al_ghapi_resp_free(&f);
  }
  {
    al_ghapi_resp f = {0};
    al_autofree char *cpath = al_strdup_printf("/repos/%s/issues/%lu/comments", t->repo, t->number);
    if (al_ghapi_get_list(api, cpath, tkt, &f, &e) == 0 && f.status == 200) {
      size_t i;
      json_t *v;
      json_object_set_new(rv, "ticket_comments", json_integer((json_int_t)json_array_size(f.json)));
      json_array_foreach(f.json, i, v)
          al_review_scan_secrets(json_string_value(json_object_get(v, "body")), "ticket comment",
                                 fps, AL_ROLE_COUNT, secrets);
    }
    al_ghapi_resp_free(&f);
  }
  al_ghapi_resp_free(&r);
  al_ghapi_free(api);
  tk_free_strv(resolves);
  al_lease_release(l, false, NULL, NULL);
  size_t nrun = 0;
  for (size_t i = 0; i < json_array_size(secrets); i++)
    if (json_is_true(json_object_get(json_array_get(secrets, i), "run_token")))
      nrun++;
  tk_phase_end(t, s, json_array_size(secrets) || json_array_size(outside) ? "warn" : "ok",
               "%zu file(s) that run outside the sandbox, %zu token-shaped string(s) (%zu of this "
               "run's, already revoked)",
               json_array_size(outside), json_array_size(secrets), nrun);
  return;
fail:
  json_object_set_new(rv, "error", json_string(e.msg));
  al_ghapi_resp_free(&r);
  if (api)
    al_ghapi_free(api);
  tk_free_strv(resolves);
  if (l)
    al_lease_release(l, false, NULL, NULL);
  tk_phase_end(t, s, "failed", "%s", e.msg);
}
