/* The trigger check on the broker's side: see check.h. Runs on a worker
 * thread with the broker's al_gh (thread-safe) and its own al_ghapi. */
#include "broker/check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "forge/appconfig.h"
#include "forge/app.h"
#include "broker/keep.h"
#include "common/log.h"
#include "common/util.h"
#include "forge/ghapi.h"

int al_broker_run_check(al_gh *gh, const al_broker_config *cfg, al_keep *keep,
                        const al_proto_check_req *req, json_t **answer, al_error *err)
{
  *answer = NULL;
  al_perm_set perms = {.n = 1};
  snprintf(perms.items[0].name, AL_PERM_NAME_MAX, "pull_requests");
  perms.items[0].write = false;
  al_token tok;
  if (al_gh_mint(gh, AL_ROLE_GIT, req->repo, &perms, &tok, err) < 0)
    return al_error_wrap(err, "check %s: a read token for the check", req->repo);
  if (keep) {
    al_error kerr = {0};
    if (al_keep_put(keep, &tok, &kerr) < 0)
      al_warn("check %s: keeping the read token %s: %s", req->repo, tok.fp, kerr.msg);
  }
  int ret = -1;
  al_ghapi *api = NULL;
  al_ghapi_resp r = {0};
  json_t *a = json_pack("{s:s, s:s, s:I}", "type", "check", "repo", req->repo, "ticket",
                        (json_int_t)req->ticket);
  al_autofree char *pp =
      al_strdup_printf("/repos/%s/collaborators/%s/permission", req->repo, req->user);
  al_autofree char *lp = al_strdup_printf("/repos/%s/pulls?state=open&per_page=100", req->repo);
  if (al_ghapi_new(cfg->api_url, cfg->ca_file, cfg->http_timeout_ms, &api, err) < 0)
    goto out;
  if (req->user[0]) {
    const char *p = pp;
    if (al_ghapi_get(api, p, tok.value, &r, err) < 0)
      goto out;
    const char *perm = NULL, *role = NULL;
    if (r.status == 200) {
      perm = json_string_value(json_object_get(r.json, "permission"));
      role = json_string_value(json_object_get(r.json, "role_name"));
      if (!perm || (strcmp(perm, "admin") && strcmp(perm, "write") && strcmp(perm, "read") &&
                    strcmp(perm, "none"))) {
        al_error_set(err, EPROTO, "GET %s: `permission` missing or unknown", p);
        goto out;
      }
    } else if (r.status == 404) {
      perm = "none"; /* not a user the repository knows */
    } else {
      al_error_set(err, EIO, "GET %s: HTTP %ld %s", p, r.status, r.message);
      goto out;
    }
    json_object_set_new(a, "user", json_string(req->user));
    json_object_set_new(a, "permission", json_string(perm));
    json_object_set_new(a, "role_name", json_string(role ? role : ""));
    al_ghapi_resp_free(&r);
  }
  if (al_ghapi_get_list(api, lp, tok.value, &r, err) < 0)
    goto out;
  if (r.status != 200 || !json_is_array(r.json)) {
    al_error_set(err, EIO, "GET %s: HTTP %ld %s", lp, r.status, r.message);
    goto out;
  }
  char prefix[64];
  snprintf(prefix, sizeof prefix, "airlock/%lu-", req->ticket);
  json_t *prs = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(r.json, i, v)
  {
    const char *ref = json_string_value(json_object_get(json_object_get(v, "head"), "ref"));
    if (ref && !strncmp(ref, prefix, strlen(prefix)))
      json_array_append_new(
          prs, json_pack("{s:O, s:s, s:s}", "number", json_object_get(v, "number"), "head", ref,
                         "url", json_string_value(json_object_get(v, "html_url")) ?: ""));
  }
  json_object_set_new(a, "open_prs", prs);
  ret = 0;
out:
  al_ghapi_resp_free(&r);
  al_ghapi_free(api);
  bool confirmed = false;
  al_error rerr;
  al_error_clear(&rerr);
  if (al_gh_revoke(gh, &tok, &confirmed, &rerr) == 0 && keep) {
    al_keep_drop(keep, tok.fp);
  } else if (!confirmed) {
    al_warn("check %s: revoking the read token %s: %s", req->repo, tok.fp, rerr.msg);
    if (ret == 0) {
      ret = -1;
      al_error_set(err, EIO, "check %s: the read token %s could not be confirmed dead: %s",
                   req->repo, tok.fp, rerr.msg);
    }
  }
  al_token_clear(&tok);
  if (ret == 0)
    *answer = a;
  else
    json_decref(a);
  return ret;
}
