/* The GitHub driver of the forge seam (forge/forge.h): GitHub REST API
 * 2022-11-28 through the one forge client (forge/ghapi.h). Each operation
 * names the docs.github.com/rest page it follows; the answers are reduced
 * to the fields forge.h promises, each checked for its type. */
#include "forge/forge.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/util.h"
#include "forge/driver.h"

/* "Get a repository": default_branch. */
static int gh_default_branch(al_ghapi *c, const char *tok, const char *repo, char *out, size_t n,
                             al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s", repo);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  const char *b = json_string_value(json_object_get(r.json, "default_branch"));
  int rc = 0;
  if (r.cls != AL_GHAPI_OK || !b || !*b || strlen(b) >= n)
    rc = al_forge_answer_error(NULL, "GET", path, &r, EPROTO, "no default branch", err);
  else
    snprintf(out, n, "%s", b);
  al_ghapi_resp_free(&r);
  return rc;
}

/* Branches › "Get a branch": 404 is a branch that does not exist. */
static int gh_branch_head(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                          bool *exists, char *sha, size_t n, al_error *err)
{
  al_autofree char *bq = al_ghapi_escape(branch);
  al_autofree char *path = al_strdup_printf("/repos/%s/branches/%s", repo, bq);
  al_ghapi_resp r;
  *exists = false;
  if (n)
    sha[0] = '\0';
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  if (r.cls == AL_GHAPI_NOT_FOUND) {
    rc = 0;
  } else if (r.cls != AL_GHAPI_OK) {
    rc = al_forge_answer_error(NULL, "GET", path, &r, EPROTO, NULL, err);
  } else {
    *exists = true;
    const char *s = json_string_value(json_object_get(json_object_get(r.json, "commit"), "sha"));
    if (s && strlen(s) < n)
      snprintf(sha, n, "%s", s);
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* One pull request of a list, reduced to {number, url, head}; NULL when
 * it lacks a number or a head ref. */
static json_t *pr_item(json_t *v)
{
  json_t *num = json_object_get(v, "number");
  const char *ref = json_string_value(json_object_get(json_object_get(v, "head"), "ref"));
  if (!json_is_integer(num) || !ref)
    return NULL;
  const char *url = json_string_value(json_object_get(v, "html_url"));
  const char *state = json_string_value(json_object_get(v, "state"));
  return json_pack("{s:O, s:s?, s:s, s:s}", "number", num, "url", url, "head", ref, "state",
                   state ? state : "");
}

/* Pulls › "List pull requests": state=all&head=OWNER:BRANCH (GitHub's
 * filter; the head is checked here too). */
static int gh_prs_from_branch(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                              json_t **prs, al_error *err)
{
  const char *slash = strchr(repo, '/');
  al_autofree char *bq = al_ghapi_escape(branch);
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls?state=all&head=%.*s:%s", repo,
                                            (int)(slash - repo), repo, bq);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, 1000, &items, &st, err);
  *prs = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *p = pr_item(v);
    if (p && strcmp(json_string_value(json_object_get(p, "head")), branch) == 0)
      json_array_append_new(*prs, p);
    else
      json_decref(p);
  }
  json_decref(items);
  return r;
}

/* Pulls › "List pull requests": state=open. */
static int gh_prs_open(al_ghapi *c, const char *tok, const char *repo, size_t max, json_t **prs,
                       al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls?state=open", repo);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, max, &items, &st, err);
  *prs = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *p = pr_item(v);
    if (p)
      json_array_append_new(*prs, p);
  }
  json_decref(items);
  return r;
}

/* Pulls › "Create a pull request" (201), maintainer_can_modify false. */
static int gh_pr_open(al_ghapi *c, const char *tok, const char *repo, const al_forge_pr_req *req,
                      json_t **pr, al_error *err)
{
  *pr = NULL;
  json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:b}", "title", req->title, "head", req->head,
                           "base", req->base, "body", req->body, "maintainer_can_modify", 0);
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls", repo);
  al_ghapi_resp r;
  int rc = al_ghapi_request(c, "POST", path, tok, body, &r, err);
  json_decref(body);
  if (rc < 0)
    return al_error_wrap(err, "open the pull request from %s", req->head);
  json_t *num = json_object_get(r.json, "number");
  if (r.status != 201 || !json_is_integer(num)) {
    char d[600];
    al_ghapi_describe(&r, d, sizeof d);
    al_ghapi_resp_free(&r);
    return al_error_set(err, EPROTO, "open the pull request from %s: %s", req->head, d);
  }
  *pr = json_pack("{s:O, s:s?}", "number", num, "url",
                  json_string_value(json_object_get(r.json, "html_url")));
  al_ghapi_resp_free(&r);
  return 0;
}

/* Issues › "Get an issue". */
static int gh_issue_get(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                        json_t **issue, al_error *err)
{
  *issue = NULL;
  al_autofree char *path = al_strdup_printf("/repos/%s/issues/%lu", repo, number);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  const char *title = json_string_value(json_object_get(r.json, "title"));
  if (r.cls == AL_GHAPI_NOT_FOUND)
    rc = al_forge_answer_error(NULL, "GET", path, &r, ENOENT, "no such issue", err);
  else if (r.cls != AL_GHAPI_OK || !title)
    rc = al_forge_answer_error(NULL, "GET", path, &r, EPROTO, NULL, err);
  else {
    const char *body = json_string_value(json_object_get(r.json, "body"));
    const char *author =
        json_string_value(json_object_get(json_object_get(r.json, "user"), "login"));
    const char *state = json_string_value(json_object_get(r.json, "state"));
    *issue = json_pack("{s:s, s:s, s:s, s:s}", "title", title, "body", body ? body : "", "author",
                       author ? author : "", "state", state ? state : "");
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* Issues › Comments › "List issue comments" (oldest first). */
static int gh_issue_comments(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                             size_t max, json_t **comments, al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/issues/%lu/comments", repo, number);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, max, &items, &st, err);
  *comments = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *id = json_object_get(v, "id");
    const char *body = json_string_value(json_object_get(v, "body"));
    if (!json_is_integer(id))
      continue;
    const char *author = json_string_value(json_object_get(json_object_get(v, "user"), "login"));
    json_array_append_new(*comments,
                          json_pack("{s:O, s:s, s:s, s:s?, s:s?}", "id", id, "author",
                                    author ? author : "", "body", body ? body : "", "url",
                                    json_string_value(json_object_get(v, "html_url")), "created_at",
                                    json_string_value(json_object_get(v, "created_at"))));
  }
  json_decref(items);
  return r;
}

/* Issues › Comments › "Create an issue comment" (201). */
static int gh_issue_comment(al_ghapi *c, const char *tok, const char *repo, unsigned long number,
                            const char *body, json_t **comment, al_error *err)
{
  *comment = NULL;
  al_autofree char *path = al_strdup_printf("/repos/%s/issues/%lu/comments", repo, number);
  json_t *b = json_pack("{s:s}", "body", body);
  if (!b)
    return al_error_set(err, EINVAL, "POST %s: the comment is not valid UTF-8", path);
  al_ghapi_resp r;
  int rc = al_ghapi_request(c, "POST", path, tok, b, &r, err);
  json_decref(b);
  if (rc < 0)
    return -1;
  if (r.status != 201) {
    rc = al_forge_answer_error(NULL, "POST", path, &r, EPROTO, NULL, err);
  } else {
    json_t *id = json_object_get(r.json, "id");
    *comment = json_pack("{s:O*, s:s?}", "id", json_is_integer(id) ? id : NULL, "url",
                         json_string_value(json_object_get(r.json, "html_url")));
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* ---- a pull request read back for the review notes ---- */

static json_t *int_or_null(json_t *v)
{
  return json_is_integer(v) ? v : NULL;
}

/* Pulls › "List pull requests" (state=all&head=OWNER:BRANCH), the one
 * whose head ref is exactly branch, whatever the server did with the
 * filter. */
static int gh_pr_for_review(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                            json_t **pr, al_error *err)
{
  const char *slash = strchr(repo, '/');
  al_autofree char *bq = al_ghapi_escape(branch);
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls?state=all&head=%.*s:%s", repo,
                                            (int)(slash - repo), repo, bq);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, 1000, &items, &st, err);
  *pr = NULL;
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *num = json_object_get(v, "number");
    json_t *head = json_object_get(v, "head"), *base = json_object_get(v, "base");
    const char *ref = json_string_value(json_object_get(head, "ref"));
    if (!json_is_integer(num) || !ref || strcmp(ref, branch) != 0)
      continue;
    *pr = json_pack("{s:O, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*}", "number", num, "url",
                    al_forge_str_or_null(json_object_get(v, "html_url")), "title",
                    al_forge_str_or_null(json_object_get(v, "title")), "body",
                    al_forge_str_or_null(json_object_get(v, "body")), "base",
                    al_forge_str_or_null(json_object_get(base, "ref")), "head_sha",
                    al_forge_str_or_null(json_object_get(head, "sha")), "base_sha",
                    al_forge_str_or_null(json_object_get(base, "sha")), "changed_files",
                    int_or_null(json_object_get(v, "changed_files")));
    break;
  }
  json_decref(items);
  return r;
}

static json_t *file_item(json_t *v)
{
  json_t *name = json_object_get(v, "filename");
  if (!json_is_string(name))
    return NULL;
  json_t *o = json_pack("{s:O, s:O*, s:O*, s:O*, s:O*}", "filename", name, "status",
                        al_forge_str_or_null(json_object_get(v, "status")), "sha",
                        al_forge_str_or_null(json_object_get(v, "sha")), "additions",
                        int_or_null(json_object_get(v, "additions")), "deletions",
                        int_or_null(json_object_get(v, "deletions")));
  static const char *const opt[] = {"previous_filename", "patch"};
  for (size_t i = 0; o && i < AL_ARRAY_SIZE(opt); i++)
    if (json_is_string(json_object_get(v, opt[i])))
      json_object_set(o, opt[i], json_object_get(v, opt[i]));
  return o;
}

/* Pulls › "List pull requests files" (GitHub lists at most 3000). */
static int gh_pr_files(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                       json_t **files, al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls/%lld/files", repo, number);
  return al_forge_list_reduced(c, tok, path, max, file_item, files, err);
}

/* Git database › Trees › "Get a tree" with recursive=1. */
static int gh_tree(al_ghapi *c, const char *tok, const char *repo, const char *sha, json_t **tree,
                   bool *truncated, al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/git/trees/%s?recursive=1", repo, sha);
  al_ghapi_resp r;
  *tree = NULL;
  *truncated = false;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  if (r.status != 200 || !json_is_object(r.json)) {
    int rc = al_forge_answer_error(NULL, "GET", path, &r, EPROTO, NULL, err);
    al_ghapi_resp_free(&r);
    return rc;
  }
  *truncated = json_is_true(json_object_get(r.json, "truncated"));
  *tree = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(r.json, "tree"), i, e)
  {
    const char *p = json_string_value(json_object_get(e, "path"));
    if (p)
      json_object_set_new(*tree, p,
                          json_pack("{s:O*, s:O*, s:O*}", "mode",
                                    al_forge_str_or_null(json_object_get(e, "mode")), "type",
                                    al_forge_str_or_null(json_object_get(e, "type")), "sha",
                                    al_forge_str_or_null(json_object_get(e, "sha"))));
  }
  al_ghapi_resp_free(&r);
  return 0;
}

/* Git database › Blobs › "Get a blob": base64 with line breaks (RFC 4648
 * §4), its decoded length checked against the answer's size. */
static int gh_blob(al_ghapi *c, const char *tok, const char *repo, const char *sha, size_t max,
                   char **out, size_t *len, al_error *err)
{
  *out = NULL;
  *len = 0;
  size_t sl = sha ? strlen(sha) : 0;
  if ((sl != 40 && sl != 64) || strspn(sha, "0123456789abcdef") != sl)
    return al_error_set(err, EINVAL, "the forge gave no blob id");
  al_autofree char *path = al_strdup_printf("/repos/%s/git/blobs/%s", repo, sha);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  const char *content = json_string_value(json_object_get(r.json, "content"));
  const char *enc = json_string_value(json_object_get(r.json, "encoding"));
  json_t *size = json_object_get(r.json, "size");
  json_int_t n = json_integer_value(size);
  if (r.status != 200 || !json_is_object(r.json)) {
    rc = al_forge_answer_error(NULL, "GET", path, &r, EPROTO, NULL, err);
  } else if (!content || !enc || !json_is_integer(size) || n < 0) {
    rc = al_error_set(err, EPROTO, "no content in the answer");
  } else if (strcmp(enc, "base64") != 0) {
    rc = al_error_set(err, EPROTO, "not base64");
  } else if ((uint64_t)n > max) {
    rc = al_error_set(err, EFBIG, "larger than %zu MiB", max >> 20);
  } else {
    *out = al_base64_decode_lines(content, strlen(content), len);
    if (!*out || *len != (size_t)n) {
      rc = al_error_set(err, EPROTO, "%zu bytes decoded, the forge said %lld", *len, (long long)n);
      free(*out);
      *out = NULL;
      *len = 0;
    }
  }
  al_ghapi_resp_free(&r);
  return rc;
}

static json_t *commit_item(json_t *v)
{
  json_t *c = json_object_get(v, "commit");
  json_t *a = json_object_get(c, "author"), *m = json_object_get(c, "committer");
  const char *an = json_string_value(json_object_get(a, "name"));
  const char *ae = json_string_value(json_object_get(a, "email"));
  const char *mn = json_string_value(json_object_get(m, "name"));
  const char *me = json_string_value(json_object_get(m, "email"));
  al_autofree char *author = al_strdup_printf("%s <%s>", an ? an : "", ae ? ae : "");
  al_autofree char *committer = al_strdup_printf("%s <%s>", mn ? mn : "", me ? me : "");
  return json_pack("{s:O*, s:O*, s:s, s:s}", "sha", al_forge_str_or_null(json_object_get(v, "sha")),
                   "message", al_forge_str_or_null(json_object_get(c, "message")), "author", author,
                   "committer", committer);
}

/* Pulls › "List commits on a pull request" (at most 250). */
static int gh_pr_commits(al_ghapi *c, const char *tok, const char *repo, long long number,
                         size_t max, json_t **commits, al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/pulls/%lld/commits", repo, number);
  return al_forge_list_reduced(c, tok, path, max, commit_item, commits, err);
}

static json_t *text_item(json_t *v)
{
  json_t *o = json_pack("{s:O*}", "body", al_forge_str_or_null(json_object_get(v, "body")));
  if (o && json_is_string(json_object_get(v, "path")))
    json_object_set(o, "path", json_object_get(v, "path"));
  return o;
}

/* Issues › Comments › "List issue comments" (a PR's conversation),
 * Pulls › Reviews › "List reviews for a pull request", Pulls › Review
 * comments › "List review comments on a pull request". */
static int gh_pr_texts(al_ghapi *c, const char *tok, const char *repo, long long number, int kind,
                       size_t max, json_t **items, al_error *err)
{
  const char *kind_s = kind == AL_FORGE_PR_COMMENTS ? "issues" : "pulls";
  const char *sub = kind == AL_FORGE_PR_REVIEWS ? "reviews" : "comments";
  al_autofree char *path = al_strdup_printf("/repos/%s/%s/%lld/%s", repo, kind_s, number, sub);
  return al_forge_list_reduced(c, tok, path, max, text_item, items, err);
}

/* A PR's conversation is its issue's: Issues › Comments › "Create an
 * issue comment". */
static int gh_pr_comment(al_ghapi *c, const char *tok, const char *repo, long long number,
                         const char *body, json_t **comment, al_error *err)
{
  if (number < 1)
    return al_error_set(err, EINVAL, "pull request %lld: not a number from 1", number);
  return gh_issue_comment(c, tok, repo, (unsigned long)number, body, comment, err);
}

/* Collaborators › "Get repository permissions for a user": 404 is a user
 * the repository does not know (none). */
static int gh_user_permission(al_ghapi *c, const char *tok, const char *repo, const char *user,
                              char *perm, size_t n, char *role, size_t rn, al_error *err)
{
  al_autofree char *path = al_strdup_printf("/repos/%s/collaborators/%s/permission", repo, user);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  const char *p = NULL, *ro = NULL;
  if (r.status == 200) {
    p = json_string_value(json_object_get(r.json, "permission"));
    ro = json_string_value(json_object_get(r.json, "role_name"));
    if (!p || (strcmp(p, "admin") && strcmp(p, "write") && strcmp(p, "read") && strcmp(p, "none")))
      rc = al_error_set(err, EPROTO, "GET %s: `permission` missing or unknown", path);
  } else if (r.status == 404) {
    p = "none";
  } else {
    rc = al_error_set(err, EIO, "GET %s: HTTP %ld %s", path, r.status, r.message);
  }
  if (rc == 0) {
    snprintf(perm, n, "%s", p);
    snprintf(role, rn, "%s", ro ? ro : "");
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* Apps › "Revoke an installation access token" with the token itself
 * (204, or 401 when it is already dead), then "List repositories
 * accessible to the app installation" with it until that answers 401. */
static void gh_token_revoke(al_ghapi *c, const char *token, bool *revoked, bool *confirmed,
                            char *error, size_t n)
{
  *revoked = *confirmed = false;
  al_ghapi_resp r = {0};
  al_error e = {0};
  if (al_ghapi_request(c, "DELETE", "/installation/token", token, NULL, &r, &e) < 0) {
    snprintf(error, n, "%s", e.msg);
  } else if (r.status == 204 || r.status == 401) {
    *revoked = true;
  } else {
    snprintf(error, n, "DELETE /installation/token: HTTP %ld %s", r.status, r.message);
  }
  al_ghapi_resp_free(&r);
  for (int i = 0; *revoked && i < 3 && !*confirmed; i++) {
    if (i)
      usleep(250000);
    memset(&r, 0, sizeof r);
    if (al_ghapi_get(c, "/installation/repositories?per_page=1", token, &r, &e) < 0) {
      snprintf(error, n, "%s", e.msg);
    } else if (r.status == 401) {
      *confirmed = true;
    } else {
      snprintf(error, n, "the token still answers HTTP %ld after DELETE /installation/token",
               r.status);
    }
    al_ghapi_resp_free(&r);
  }
}

const al_forge_ops al_forge_github = {
    .kind = "github",
    .default_branch = gh_default_branch,
    .branch_head = gh_branch_head,
    .prs_from_branch = gh_prs_from_branch,
    .prs_open = gh_prs_open,
    .pr_open = gh_pr_open,
    .pr_for_review = gh_pr_for_review,
    .pr_files = gh_pr_files,
    .tree = gh_tree,
    .blob = gh_blob,
    .pr_commits = gh_pr_commits,
    .pr_texts = gh_pr_texts,
    .pr_comment = gh_pr_comment,
    .issue_get = gh_issue_get,
    .issue_comments = gh_issue_comments,
    .issue_comment = gh_issue_comment,
    .user_permission = gh_user_permission,
    .token_revoke = gh_token_revoke,
    .webhook_signature_header = "X-Hub-Signature-256",
    .webhook_verify = al_github_webhook_verify,
};
