/* The GitLab driver of the forge seam (forge/forge.h): GitLab REST API v4
 * through the one forge client (forge/ghapi.h), on a project named by its
 * full path (the caller's `repo`, GROUP/PROJECT; sent URL-encoded, GitLab
 * docs "Namespaced paths"). Each operation names the docs.gitlab.com page
 * it follows; the answers are reduced to the fields forge.h promises, each
 * checked for its type. GitLab's merge request iid is the seam's `number`;
 * its states `opened` / `closed` / `merged` / `locked` become "open" and
 * "closed". */
#include "forge/forge.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "forge/driver.h"
#include "forge/gitlab.h"
#include "forge/gitlab_review.h"

/* A path segment or query value, everything but RFC 3986's unreserved
 * characters %XX-encoded ('/' too: GitLab takes a branch name in a path as
 * one encoded segment, "Branches API"). malloc'd. */
static char *seg_escape(const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(s);
  char *out = al_xcalloc(3 * n + 1, 1), *o = out;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        *p == '-' || *p == '_' || *p == '.' || *p == '~') {
      *o++ = (char)*p;
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  *o = '\0';
  return out;
}

/* "/projects/group%2Fproject" into out, or -1 with err. */
static int project_path(const char *repo, char *out, size_t n, al_error *err)
{
  char pe[600];
  if (al_gl_project_escape(repo, pe, sizeof pe, err) < 0)
    return -1;
  if ((size_t)snprintf(out, n, "/projects/%s", pe) >= n)
    return al_error_set(err, EINVAL, "GitLab project `%s` is too long", repo);
  return 0;
}

/* Projects API › "Get a single project": default_branch. */
static int gl_default_branch(al_ghapi *c, const char *tok, const char *repo, char *out, size_t n,
                             al_error *err)
{
  char path[700];
  if (project_path(repo, path, sizeof path, err) < 0)
    return -1;
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  const char *b = json_string_value(json_object_get(r.json, "default_branch"));
  int rc = 0;
  if (r.cls != AL_GHAPI_OK || !b || !*b || strlen(b) >= n)
    rc = al_forge_answer_error("GitLab", "GET", path, &r, EPROTO, "no default branch", err);
  else
    snprintf(out, n, "%s", b);
  al_ghapi_resp_free(&r);
  return rc;
}

/* Branches API › "Get single repository branch": 404 is a branch that
 * does not exist; the head is commit.id. */
static int gl_branch_head(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                          bool *exists, char *sha, size_t n, al_error *err)
{
  *exists = false;
  if (n)
    sha[0] = '\0';
  char pp[700];
  if (project_path(repo, pp, sizeof pp, err) < 0)
    return -1;
  al_autofree char *bq = seg_escape(branch);
  al_autofree char *path = al_strdup_printf("%s/repository/branches/%s", pp, bq);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  if (r.cls == AL_GHAPI_NOT_FOUND) {
    rc = 0;
  } else if (r.cls != AL_GHAPI_OK) {
    rc = al_forge_answer_error("GitLab", "GET", path, &r, EPROTO, NULL, err);
  } else {
    *exists = true;
    const char *s = json_string_value(json_object_get(json_object_get(r.json, "commit"), "id"));
    if (s && strlen(s) < n)
      snprintf(sha, n, "%s", s);
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* One merge request of a list, reduced to {number (iid), url, head,
 * state}; NULL when it lacks an iid or a source branch, or comes from
 * another project (a fork's MR may reuse the branch name: where GitLab
 * names both projects they must be one). */
static json_t *mr_item(json_t *v)
{
  json_t *iid = json_object_get(v, "iid");
  const char *ref = json_string_value(json_object_get(v, "source_branch"));
  if (!json_is_integer(iid) || !ref)
    return NULL;
  json_t *sp = json_object_get(v, "source_project_id"),
         *tp = json_object_get(v, "target_project_id");
  if (json_is_integer(sp) && json_is_integer(tp) &&
      json_integer_value(sp) != json_integer_value(tp))
    return NULL;
  const char *url = json_string_value(json_object_get(v, "web_url"));
  const char *st = json_string_value(json_object_get(v, "state"));
  const char *state = !st ? "" : strcmp(st, "opened") == 0 ? "open" : "closed";
  return json_pack("{s:O, s:s?, s:s, s:s}", "number", iid, "url", url, "head", ref, "state", state);
}

static int mr_list(al_ghapi *c, const char *tok, const char *repo, const char *query, size_t max,
                   const char *only_head, json_t **prs, al_error *err)
{
  *prs = json_array();
  char pp[700];
  if (project_path(repo, pp, sizeof pp, err) < 0)
    return -1;
  al_autofree char *path = al_strdup_printf("%s/merge_requests?%s", pp, query);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, max, &items, &st, err);
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *p = mr_item(v);
    if (p && (!only_head || strcmp(json_string_value(json_object_get(p, "head")), only_head) == 0))
      json_array_append_new(*prs, p);
    else
      json_decref(p);
  }
  json_decref(items);
  return r;
}

/* Merge requests API › "List project merge requests": state=all and
 * source_branch=BRANCH (the head is checked here too). */
static int gl_prs_from_branch(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                              json_t **prs, al_error *err)
{
  al_autofree char *bq = seg_escape(branch);
  al_autofree char *q = al_strdup_printf("state=all&source_branch=%s&per_page=100", bq);
  return mr_list(c, tok, repo, q, 1000, branch, prs, err);
}

/* The same list, state=opened. */
static int gl_prs_open(al_ghapi *c, const char *tok, const char *repo, size_t max, json_t **prs,
                       al_error *err)
{
  return mr_list(c, tok, repo, "state=opened&per_page=100", max, NULL, prs, err);
}

/* Merge requests API › "Create MR" (201): a Draft, remove_source_branch,
 * no auto-merge (forge/gitlab.c al_gl_mr_open). GitLab has no
 * maintainer_can_modify: the source branch is the run's own. */
static int gl_pr_open(al_ghapi *c, const char *tok, const char *repo, const al_forge_pr_req *req,
                      json_t **pr, al_error *err)
{
  *pr = NULL;
  long long iid = 0;
  char url[512] = "";
  if (al_gl_mr_open(c, tok, repo, req->head, req->base, req->title, req->body, true, &iid, url,
                    sizeof url, err) < 0)
    return al_error_wrap(err, "open the merge request from %s", req->head);
  *pr = json_pack("{s:I, s:s?}", "number", (json_int_t)iid, "url", url[0] ? url : NULL);
  return 0;
}

/* Issues API › "Single project issue": title, description, author, state
 * (opened: "open"). */
static int gl_issue_get(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                        json_t **issue, al_error *err)
{
  *issue = NULL;
  char pp[700];
  if (project_path(repo, pp, sizeof pp, err) < 0)
    return -1;
  al_autofree char *path = al_strdup_printf("%s/issues/%lu", pp, number);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  const char *title = json_string_value(json_object_get(r.json, "title"));
  if (r.cls == AL_GHAPI_NOT_FOUND) {
    rc = al_forge_answer_error("GitLab", "GET", path, &r, ENOENT, "no such issue", err);
  } else if (r.cls != AL_GHAPI_OK || !title) {
    rc = al_forge_answer_error("GitLab", "GET", path, &r, EPROTO, NULL, err);
  } else {
    const char *body = json_string_value(json_object_get(r.json, "description"));
    const char *author =
        json_string_value(json_object_get(json_object_get(r.json, "author"), "username"));
    const char *st = json_string_value(json_object_get(r.json, "state"));
    const char *state = !st ? "" : strcmp(st, "opened") == 0 ? "open" : "closed";
    *issue = json_pack("{s:s, s:s, s:s, s:s}", "title", title, "body", body ? body : "", "author",
                       author ? author : "", "state", state);
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* Notes API › "List project issue notes", oldest first; system notes
 * (GitLab's own "changed the label" lines) are not comments. */
static int gl_issue_comments(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                             size_t max, json_t **comments, al_error *err)
{
  *comments = json_array();
  char pp[700];
  if (project_path(repo, pp, sizeof pp, err) < 0)
    return -1;
  al_autofree char *path =
      al_strdup_printf("%s/issues/%lu/notes?sort=asc&order_by=created_at&per_page=100", pp, number);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, max, &items, &st, err);
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *id = json_object_get(v, "id");
    const char *body = json_string_value(json_object_get(v, "body"));
    if (!json_is_integer(id) || json_is_true(json_object_get(v, "system")))
      continue;
    const char *author =
        json_string_value(json_object_get(json_object_get(v, "author"), "username"));
    json_array_append_new(
        *comments, json_pack("{s:O, s:s, s:s, s:n, s:s?}", "id", id, "author", author ? author : "",
                             "body", body ? body : "", "url", "created_at",
                             json_string_value(json_object_get(v, "created_at"))));
  }
  json_decref(items);
  return r;
}

/* Notes API › "Create new issue note" (201). */
static int gl_issue_comment(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                            const char *body, json_t **comment, al_error *err)
{
  *comment = NULL;
  char pp[700];
  if (project_path(repo, pp, sizeof pp, err) < 0)
    return -1;
  al_autofree char *path = al_strdup_printf("%s/issues/%lu/notes", pp, number);
  json_t *b = json_pack("{s:s}", "body", body);
  al_ghapi_resp r;
  int rc = al_ghapi_request(c, "POST", path, tok, b, &r, err);
  json_decref(b);
  if (rc < 0)
    return -1;
  if (r.status != 201) {
    rc = al_forge_answer_error("GitLab", "POST", path, &r, EPROTO, NULL, err);
  } else {
    json_t *id = json_object_get(r.json, "id");
    *comment = json_pack("{s:O*, s:n}", "id", json_is_integer(id) ? id : NULL, "url");
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* Personal access tokens API › "Revoke a personal access token" using a
 * request header (DELETE /personal_access_tokens/self with the token
 * itself, 204; GitLab 15.0+, project access tokens included: 401 when it
 * is already dead), then "Get single personal access token" (GET
 * /personal_access_tokens/self) with it until that answers 401. */
static void gl_token_revoke(al_ghapi *c, const char *token, bool *revoked, bool *confirmed,
                            char *error, size_t n)
{
  *revoked = *confirmed = false;
  al_ghapi_resp r = {0};
  al_error e = {0};
  if (al_ghapi_request(c, "DELETE", "/personal_access_tokens/self", token, NULL, &r, &e) < 0)
    snprintf(error, n, "%s", e.msg);
  else if (r.status == 204 || r.status == 401)
    *revoked = true;
  else
    snprintf(error, n, "GitLab DELETE /personal_access_tokens/self: HTTP %ld %s", r.status,
             r.message);
  al_ghapi_resp_free(&r);
  for (int i = 0; *revoked && i < 3 && !*confirmed; i++) {
    if (i)
      usleep(250000);
    memset(&r, 0, sizeof r);
    if (al_ghapi_get(c, "/personal_access_tokens/self", token, &r, &e) < 0)
      snprintf(error, n, "%s", e.msg);
    else if (r.status == 401)
      *confirmed = true;
    else
      snprintf(error, n, "the token still answers HTTP %ld after its revocation", r.status);
    al_ghapi_resp_free(&r);
  }
}

/* GitLab's plain webhook check ("Webhooks" › "Validate payloads by using a
 * secret token"): X-Gitlab-Token is the secret itself, compared in
 * constant time. The signed form is serve/webhook_gitlab.c's. */
static int gl_webhook_verify(const void *secret, size_t secret_len, const char *header,
                             const void *body, size_t len, al_error *err)
{
  (void)body, (void)len;
  if (!header || !*header)
    return al_error_set(err, EACCES, "X-Gitlab-Token is missing");
  size_t hl = strlen(header);
  if (hl != secret_len || CRYPTO_memcmp(header, secret, hl) != 0)
    return al_error_set(err, EACCES, "X-Gitlab-Token does not match the webhook secret");
  return 0;
}

const al_forge_ops al_forge_gitlab = {
    .kind = "gitlab",
    .default_branch = gl_default_branch,
    .branch_head = gl_branch_head,
    .prs_from_branch = gl_prs_from_branch,
    .prs_open = gl_prs_open,
    .pr_open = gl_pr_open,
    .pr_for_review = al_gl_pr_for_review,
    .pr_files = al_gl_pr_files,
    .tree = al_gl_tree,
    .blob = al_gl_blob,
    .pr_commits = al_gl_pr_commits,
    .pr_texts = al_gl_pr_texts,
    .pr_comment = al_gl_pr_comment,
    .issue_get = gl_issue_get,
    .issue_comments = gl_issue_comments,
    .issue_comment = gl_issue_comment,
    .user_permission = al_gl_user_permission, /* gitlab_members.c */
    .token_revoke = gl_token_revoke,
    .webhook_signature_header = "X-Gitlab-Token",
    .webhook_verify = gl_webhook_verify,
};
