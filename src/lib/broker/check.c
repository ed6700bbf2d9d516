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
#include "forge/forge.h"
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
  json_t *a = json_pack("{s:s, s:s, s:I}", "type", "check", "repo", req->repo, "ticket",
                        (json_int_t)req->ticket);
  const al_forge_ops *forge = al_forge_ops_of(
      cfg->gitlab_token_file ? AL_FORGE_GITLAB : AL_FORGE_GITHUB); /* the broker's */
  json_t *prs = NULL;
  if (al_ghapi_new(cfg->api_url, cfg->ca_file, cfg->http_timeout_ms, &api, err) < 0)
    goto out;
  if (req->user[0]) {
    char perm[16], role[64];
    if (forge->user_permission(api, tok.value, req->repo, req->user, perm, sizeof perm, role,
                               sizeof role, err) < 0)
      goto out;
    json_object_set_new(a, "user", json_string(req->user));
    json_object_set_new(a, "permission", json_string(perm));
    json_object_set_new(a, "role_name", json_string(role));
  }
  if (forge->prs_open(api, tok.value, req->repo, 100000, &prs, err) < 0)
    goto out;
  char prefix[64];
  snprintf(prefix, sizeof prefix, "airlock/%lu-", req->ticket);
  json_t *mine = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(prs, i, v)
  {
    const char *ref = json_string_value(json_object_get(v, "head"));
    if (ref && !strncmp(ref, prefix, strlen(prefix)))
      json_array_append_new(mine, json_pack("{s:O, s:s, s:s}", "number",
                                            json_object_get(v, "number"), "head", ref, "url",
                                            json_string_value(json_object_get(v, "url")) ?: ""));
  }
  json_object_set_new(a, "open_prs", mine);
  ret = 0;
out:
  json_decref(prs);
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
