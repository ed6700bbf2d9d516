/* The GitLab driver's reads of a merge request for the review notes
 * (gitlab_review.h; forge.h's contracts): GitLab REST v4 through the one
 * forge client (forge/ghapi.h), whose al_ghapi_list follows GitLab's
 * `Link: <...>; rel="next"` (offset or keyset pagination, "REST API" ›
 * Pagination) under the API base only. Every field is checked for its type; a commit
 * or blob id must be 40 or 64 lower-case hex, else it is null. Pages:
 *   Merge requests API › "List project merge requests", "Get single MR"
 *     (diff_refs.base_sha/head_sha, changes_count), "List merge request
 *     diffs" (GitLab 15.7+), "Get single merge request commits";
 *   Repositories API › "List repository tree" (recursive, ref=SHA),
 *     "Get a blob from repository" (base64 JSON, the shape the client
 *     reads; /raw gives bytes the JSON client does not keep);
 *   Notes API › "List all merge request notes", "Create new merge request
 *     note"; Discussions API › "List project merge request discussion
 *     items" (DiffNote, position.new_path).
 * GitLab approvals carry no text: AL_FORGE_PR_REVIEWS is an empty list. */
#include "forge/gitlab_review.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/util.h"
#include "forge/driver.h"
#include "forge/forge.h"
#include "forge/gitlab.h"

#define MRS_MAX 1000     /* merge requests of one source branch read */
#define TREE_MAX 100000u /* entries of a tree read (GitHub cuts its trees there too) */

/* "/projects/group%2Fproject" (malloc'd), or NULL with err. */
static char *project_path(const char *repo, al_error *err)
{
  char pe[600];
  if (al_gl_project_escape(repo, pe, sizeof pe, err) < 0)
    return NULL;
  return al_strdup_printf("/projects/%s", pe);
}

static bool is_sha(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  return (n == 40 || n == 64) && strspn(s, "0123456789abcdef") == n;
}

static json_t *sha_or_null(json_t *v)
{
  return is_sha(json_string_value(v)) ? v : NULL;
}

/* changes_count: GitLab gives a string ("3"; "1000+" past its diff
 * limits: not a count, null); an integer is taken too. */
static json_t *count_of(json_t *v)
{
  if (json_is_integer(v) && json_integer_value(v) >= 0)
    return json_integer(json_integer_value(v));
  const char *s = json_string_value(v);
  if (!s || !*s || strlen(s) > 9 || strspn(s, "0123456789") != strlen(s))
    return json_null();
  return json_integer(strtoll(s, NULL, 10));
}

/* A merge request of the list or the single answer: its iid when it is
 * from `branch` of this project (a fork's MR may reuse the branch name:
 * where GitLab names both projects they must be one), else 0. */
static json_int_t mr_of_branch(json_t *v, const char *branch)
{
  json_t *iid = json_object_get(v, "iid");
  const char *ref = json_string_value(json_object_get(v, "source_branch"));
  json_t *sp = json_object_get(v, "source_project_id"),
         *tp = json_object_get(v, "target_project_id");
  if (!json_is_integer(iid) || json_integer_value(iid) < 1 || !ref || strcmp(ref, branch) != 0)
    return 0;
  if (json_is_integer(sp) && json_is_integer(tp) &&
      json_integer_value(sp) != json_integer_value(tp))
    return 0;
  return json_integer_value(iid);
}

/* The seam's review shape of one merge request answer. */
static json_t *mr_review(json_t *v, json_int_t iid)
{
  json_t *refs = json_object_get(v, "diff_refs");
  json_t *head = sha_or_null(json_object_get(refs, "head_sha"));
  if (!head)
    head = sha_or_null(json_object_get(v, "sha"));
  return json_pack("{s:I, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, s:o}", "number", iid, "url",
                   al_forge_str_or_null(json_object_get(v, "web_url")), "title",
                   al_forge_str_or_null(json_object_get(v, "title")), "body",
                   al_forge_str_or_null(json_object_get(v, "description")), "base",
                   al_forge_str_or_null(json_object_get(v, "target_branch")), "head_sha", head,
                   "base_sha", sha_or_null(json_object_get(refs, "base_sha")), "changed_files",
                   count_of(json_object_get(v, "changes_count")));
}

/* Merge requests API › "List project merge requests" (state=all,
 * source_branch=BRANCH, the newest first; the branch is checked here too),
 * then "Get single MR" for diff_refs and changes_count (the list has
 * neither). When the single MR cannot be read, -1 and *pr is what the list
 * gave (no base_sha, no changed_files). */
int al_gl_pr_for_review(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                        json_t **pr, al_error *err)
{
  *pr = NULL;
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  al_autofree char *bq = al_ghapi_escape(branch);
  /* al_ghapi_escape keeps '/', GitLab's query takes it as is */
  al_autofree char *path =
      al_strdup_printf("%s/merge_requests?state=all&source_branch=%s&per_page=100", pp, bq);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int rc = al_ghapi_list(c, path, tok, MRS_MAX, &items, &st, err);
  json_int_t iid = 0;
  json_t *found = NULL;
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    if ((iid = mr_of_branch(v, branch)) != 0) {
      found = v;
      break;
    }
  }
  if (!found) {
    json_decref(items);
    return rc;
  }
  *pr = mr_review(found, iid);
  al_autofree char *one = al_strdup_printf("%s/merge_requests/%lld", pp, (long long)iid);
  al_ghapi_resp r;
  al_error e = {0};
  if (al_ghapi_get(c, one, tok, &r, &e) < 0) {
    json_decref(items);
    if (rc == 0)
      *err = e;
    return -1;
  }
  if (r.status != 200 || !json_is_object(r.json)) {
    if (rc == 0)
      al_forge_answer_error("GitLab", "GET", one, &r, EPROTO, NULL, err);
    rc = -1;
  } else if (mr_of_branch(r.json, branch) != iid) {
    if (rc == 0)
      al_error_set(err, EPROTO, "GitLab GET %s: the answer is not merge request !%lld from %s", one,
                   (long long)iid, branch);
    rc = -1;
  } else {
    json_decref(*pr);
    *pr = mr_review(r.json, iid);
  }
  al_ghapi_resp_free(&r);
  json_decref(items);
  return rc;
}

/* Lines added and removed in a GitLab diff (hunks only: GitLab strips the
 * `diff --git`, `---` and `+++` lines). */
static void diff_counts(const char *d, json_int_t *add, json_int_t *del)
{
  *add = *del = 0;
  for (const char *p = d; *p;) {
    if (*p == '+')
      (*add)++;
    else if (*p == '-')
      (*del)++;
    const char *nl = strchr(p, '\n');
    if (!nl)
      break;
    p = nl + 1;
  }
}

/* One entry of "List merge request diffs" in the seam's file shape:
 * new_file "added", deleted_file "removed", renamed_file "renamed"
 * (previous_filename old_path), a_mode and b_mode of another kind
 * ("100644" to "120000", a file become a symlink) "changed", else
 * "modified"; the diff as patch unless GitLab cut it (too_large,
 * collapsed) or it is binary ("Binary files ... differ"); no blob id (the
 * head tree has it). */
static json_t *diff_item(json_t *v)
{
  const char *np = json_string_value(json_object_get(v, "new_path"));
  const char *op = json_string_value(json_object_get(v, "old_path"));
  if (!np || !*np)
    return NULL;
  bool added = json_is_true(json_object_get(v, "new_file"));
  bool removed = json_is_true(json_object_get(v, "deleted_file"));
  bool renamed = json_is_true(json_object_get(v, "renamed_file"));
  const char *am = json_string_value(json_object_get(v, "a_mode"));
  const char *bm = json_string_value(json_object_get(v, "b_mode"));
  bool kind_changed = am && bm && strlen(am) == 6 && strlen(bm) == 6 && strcmp(am, "000000") &&
                      strcmp(bm, "000000") && strncmp(am, bm, 2) != 0;
  const char *status = removed        ? "removed"
                       : added        ? "added"
                       : renamed      ? "renamed"
                       : kind_changed ? "changed"
                                      : "modified";
  json_t *o = json_pack("{s:s, s:s, s:n, s:n, s:n}", "filename", np, "status", status, "sha",
                        "additions", "deletions");
  if (!o)
    return NULL; /* a name that is not UTF-8 */
  if (renamed && op && strcmp(op, np) != 0)
    json_object_set_new(o, "previous_filename", json_string(op));
  const char *d = json_string_value(json_object_get(v, "diff"));
  bool cut = json_is_true(json_object_get(v, "too_large")) ||
             json_is_true(json_object_get(v, "collapsed"));
  if (d && *d && !cut && strncmp(d, "Binary files ", 13) != 0) {
    json_object_set(o, "patch", json_object_get(v, "diff"));
    json_int_t a, r;
    diff_counts(d, &a, &r);
    json_object_set_new(o, "additions", json_integer(a));
    json_object_set_new(o, "deletions", json_integer(r));
  }
  return o;
}

/* Merge requests API › "List merge request diffs" (paginated). */
int al_gl_pr_files(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                   json_t **files, al_error *err)
{
  *files = json_array();
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  json_decref(*files);
  al_autofree char *path =
      al_strdup_printf("%s/merge_requests/%lld/diffs?per_page=100", pp, number);
  return al_forge_list_reduced(c, tok, path, max, diff_item, files, err);
}

/* Repositories API › "List repository tree" with recursive=true and
 * ref=SHA, every page, pagination=keyset (GitLab 17.1+ pages the tree by
 * page_token; an older one ignores it and pages by number: the client
 * follows whichever `Link` comes): {path: {mode, type, sha}}; GitLab's modes are git's
 * ("100644", "100755", "120000", "160000", "040000") and its types blob,
 * tree, commit. GitLab does not cut a tree; the client stops at TREE_MAX
 * entries, which is *truncated. */
int al_gl_tree(al_ghapi *c, const char *tok, const char *repo, const char *sha, json_t **tree,
               bool *truncated, al_error *err)
{
  *tree = NULL;
  *truncated = false;
  if (!is_sha(sha))
    return al_error_set(err, EINVAL, "the forge gave no commit id for the tree");
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  al_autofree char *path = al_strdup_printf(
      "%s/repository/tree?recursive=true&ref=%s&pagination=keyset&per_page=100", pp, sha);
  json_t *items = NULL;
  al_ghapi_list_info st;
  int rc = al_ghapi_list(c, path, tok, TREE_MAX, &items, &st, err);
  if (rc < 0 && st.status != AL_GHAPI_LIST_CAPPED) {
    json_decref(items);
    return -1;
  }
  *truncated = rc < 0;
  *tree = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(items, i, e)
  {
    const char *p = json_string_value(json_object_get(e, "path"));
    if (p && *p)
      json_object_set_new(*tree, p,
                          json_pack("{s:O*, s:O*, s:O*}", "mode",
                                    al_forge_str_or_null(json_object_get(e, "mode")), "type",
                                    al_forge_str_or_null(json_object_get(e, "type")), "sha",
                                    sha_or_null(json_object_get(e, "id"))));
  }
  json_decref(items);
  return 0;
}

/* Repositories API › "Get a blob from repository": {size, encoding
 * "base64", content, sha}; the id answered must be the one asked, the
 * decoded length the size. */
int al_gl_blob(al_ghapi *c, const char *tok, const char *repo, const char *sha, size_t max,
               char **out, size_t *len, al_error *err)
{
  *out = NULL;
  *len = 0;
  if (!is_sha(sha))
    return al_error_set(err, EINVAL, "the forge gave no blob id");
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  al_autofree char *path = al_strdup_printf("%s/repository/blobs/%s", pp, sha);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  const char *content = json_string_value(json_object_get(r.json, "content"));
  const char *enc = json_string_value(json_object_get(r.json, "encoding"));
  const char *got = json_string_value(json_object_get(r.json, "sha"));
  json_t *size = json_object_get(r.json, "size");
  json_int_t n = json_integer_value(size);
  if (r.status != 200 || !json_is_object(r.json)) {
    rc = al_forge_answer_error("GitLab", "GET", path, &r, EPROTO, NULL, err);
  } else if (!content || !enc || !json_is_integer(size) || n < 0) {
    rc = al_error_set(err, EPROTO, "GitLab GET %s: no content, encoding or size in the answer",
                      path);
  } else if (got && strcmp(got, sha) != 0) {
    rc = al_error_set(err, EPROTO, "GitLab GET %s: the answer is another blob", path);
  } else if (strcmp(enc, "base64") != 0) {
    rc = al_error_set(err, EPROTO, "GitLab GET %s: encoding `%.20s`, not base64", path, enc);
  } else if ((uint64_t)n > max) {
    rc = al_error_set(err, EFBIG, "GitLab GET %s: %lld bytes, larger than %zu", path, (long long)n,
                      max);
  } else {
    *out = al_base64_decode_lines(content, strlen(content), len);
    if (*len != (size_t)n) {
      rc = al_error_set(err, EPROTO, "GitLab GET %s: %zu bytes decoded, the forge said %lld", path,
                        *len, (long long)n);
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
  const char *an = json_string_value(json_object_get(v, "author_name"));
  const char *ae = json_string_value(json_object_get(v, "author_email"));
  const char *mn = json_string_value(json_object_get(v, "committer_name"));
  const char *me = json_string_value(json_object_get(v, "committer_email"));
  al_autofree char *author = al_strdup_printf("%s <%s>", an ? an : "", ae ? ae : "");
  al_autofree char *committer = al_strdup_printf("%s <%s>", mn ? mn : "", me ? me : "");
  return json_pack("{s:O*, s:O*, s:s, s:s}", "sha", sha_or_null(json_object_get(v, "id")),
                   "message", al_forge_str_or_null(json_object_get(v, "message")), "author", author,
                   "committer", committer);
}

/* Merge requests API › "Get single merge request commits": GitLab lists
 * the newest first; the seam's order is the oldest first (of what was
 * read: a cut list holds the newest max). */
int al_gl_pr_commits(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                     json_t **commits, al_error *err)
{
  *commits = json_array();
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  al_autofree char *path =
      al_strdup_printf("%s/merge_requests/%lld/commits?per_page=100", pp, number);
  json_t *newest = NULL;
  int rc = al_forge_list_reduced(c, tok, path, max, commit_item, &newest, err);
  for (size_t i = json_array_size(newest); i > 0; i--)
    json_array_append(*commits, json_array_get(newest, i - 1));
  json_decref(newest);
  return rc;
}

/* A note of the MR's conversation: not GitLab's own ("system": changed
 * the label, added a commit) and not on a line of the diff (a DiffNote is
 * a review comment). */
static json_t *comment_item(json_t *v)
{
  const char *type = json_string_value(json_object_get(v, "type"));
  if (!json_is_object(v) || json_is_true(json_object_get(v, "system")) ||
      (type && strcmp(type, "DiffNote") == 0))
    return NULL;
  return json_pack("{s:O*}", "body", al_forge_str_or_null(json_object_get(v, "body")));
}

/* Discussions API: each discussion's DiffNotes (not system notes), with
 * position.new_path (old_path for a line of a removed file) as the path.
 * Cut at max notes, -1 saying so. */
static int review_comments(al_ghapi *c, const char *tok, const char *pp, long long number,
                           size_t max, json_t **items, al_error *err)
{
  al_autofree char *path =
      al_strdup_printf("%s/merge_requests/%lld/discussions?per_page=100", pp, number);
  json_t *ds = NULL;
  al_ghapi_list_info st;
  int rc = al_ghapi_list(c, path, tok, max, &ds, &st, err);
  size_t i, k;
  json_t *d, *n;
  json_array_foreach(ds, i, d)
  {
    json_array_foreach(json_object_get(d, "notes"), k, n)
    {
      const char *type = json_string_value(json_object_get(n, "type"));
      if (!type || strcmp(type, "DiffNote") != 0 || json_is_true(json_object_get(n, "system")))
        continue;
      if (max && json_array_size(*items) >= max) {
        json_decref(ds);
        return al_error_set(err, EPROTO,
                            "GitLab GET %s: stopped at the cap of %zu review comment(s); the list "
                            "is incomplete",
                            path, max);
      }
      json_t *pos = json_object_get(n, "position");
      json_t *p = al_forge_str_or_null(json_object_get(pos, "new_path"));
      if (!p)
        p = al_forge_str_or_null(json_object_get(pos, "old_path"));
      json_t *o = json_pack("{s:O*}", "body", al_forge_str_or_null(json_object_get(n, "body")));
      if (p)
        json_object_set(o, "path", p);
      json_array_append_new(*items, o);
    }
  }
  json_decref(ds);
  return rc;
}

/* AL_FORGE_PR_COMMENTS: Notes API › "List all merge request notes"
 * (sort=asc, order_by=created_at); AL_FORGE_PR_REVIEW_COMMENTS: the
 * Discussions API's diff notes; AL_FORGE_PR_REVIEWS: none (GitLab's
 * approvals have no body), an empty array. */
int al_gl_pr_texts(al_ghapi *c, const char *tok, const char *repo, long long number, int kind,
                   size_t max, json_t **items, al_error *err)
{
  *items = json_array();
  if (kind != AL_FORGE_PR_COMMENTS && kind != AL_FORGE_PR_REVIEWS &&
      kind != AL_FORGE_PR_REVIEW_COMMENTS)
    return al_error_set(err, EINVAL, "GitLab: no kind %d of merge request text", kind);
  if (kind == AL_FORGE_PR_REVIEWS)
    return 0;
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  if (kind == AL_FORGE_PR_REVIEW_COMMENTS)
    return review_comments(c, tok, pp, number, max, items, err);
  json_decref(*items);
  al_autofree char *path = al_strdup_printf(
      "%s/merge_requests/%lld/notes?sort=asc&order_by=created_at&per_page=100", pp, number);
  return al_forge_list_reduced(c, tok, path, max, comment_item, items, err);
}

/* The note's web address: GitLab's answer has none, its web UI anchors a
 * note at the MR's web_url + "#note_ID" ("Get single MR"); NULL when that
 * read fails or gives no web_url (not an error: the note is posted). */
static char *note_url(al_ghapi *c, const char *tok, const char *pp, long long number, json_int_t id)
{
  al_autofree char *path = al_strdup_printf("%s/merge_requests/%lld", pp, number);
  al_ghapi_resp r;
  al_error e = {0};
  if (al_ghapi_get(c, path, tok, &r, &e) < 0)
    return NULL;
  const char *web = json_string_value(json_object_get(r.json, "web_url"));
  char *url = r.status == 200 && web && strncmp(web, "http", 4) == 0 && !strchr(web, '#')
                  ? al_strdup_printf("%s#note_%lld", web, (long long)id)
                  : NULL;
  al_ghapi_resp_free(&r);
  return url;
}

/* Notes API › "Create new merge request note" (201): {id, url} (url the
 * MR's web_url + "#note_ID", null when it cannot be read). */
int al_gl_pr_comment(al_ghapi *c, const char *tok, const char *repo, long long number,
                     const char *body, json_t **comment, al_error *err)
{
  *comment = NULL;
  if (number < 1)
    return al_error_set(err, EINVAL, "merge request %lld: not an iid from 1", number);
  al_autofree char *pp = project_path(repo, err);
  if (!pp)
    return -1;
  al_autofree char *path = al_strdup_printf("%s/merge_requests/%lld/notes", pp, number);
  json_t *b = json_pack("{s:s}", "body", body);
  if (!b)
    return al_error_set(err, EINVAL, "POST %s: the note is not valid UTF-8", path);
  al_ghapi_resp r;
  int rc = al_ghapi_request(c, "POST", path, tok, b, &r, err);
  json_decref(b);
  if (rc < 0)
    return -1;
  if (r.status != 201 || !json_is_object(r.json)) {
    rc = al_forge_answer_error("GitLab", "POST", path, &r, EPROTO, NULL, err);
  } else {
    json_t *id = json_object_get(r.json, "id");
    al_autofree char *url =
        json_is_integer(id) ? note_url(c, tok, pp, number, json_integer_value(id)) : NULL;
    *comment = json_pack("{s:O*, s:s?}", "id", json_is_integer(id) ? id : NULL, "url", url);
  }
  al_ghapi_resp_free(&r);
  return rc;
}
