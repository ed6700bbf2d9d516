/* The routes a reviewer's tools read beyond the files (pullfiles.c): a
 * pull request's commits, its review comments, and the git database's
 * trees and blobs (modes: symlinks 120000, gitlinks 160000, executables
 * 100755). Names come from git with -z, so a file name with a newline, an
 * escape or U+202E is the real name, never git's quoted form; bytes that
 * are not UTF-8 become U+FFFD. Lists are paginated by behave.c.
 * Follows docs.github.com: REST › Pulls › "List commits on a pull
 * request"; REST › Pulls › Review comments;
 * REST › Git database › Trees "Get a tree", Blobs "Get a blob". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "common/util.h"

#define DOC_PULLS "https://docs.github.com/rest/pulls/pulls"
#define DOC_RCOMMENTS "https://docs.github.com/rest/pulls/comments"
#define DOC_TREES "https://docs.github.com/rest/git/trees#get-a-tree"
#define DOC_BLOBS "https://docs.github.com/rest/git/blobs#get-a-blob"

static const char *full(json_t *repo)
{
  return json_string_value(json_object_get(repo, "full_name"));
}

/* s as valid UTF-8: each byte of an invalid sequence becomes U+FFFD (what
 * a forge shows for a name or message git stores as raw bytes). malloc'd. */
static char *lossy(const char *s, size_t n)
{
  char *out = al_xmalloc(3 * n + 1);
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t k = p[i] < 0x80         ? 1
               : (p[i] >> 5) == 6  ? 2
               : (p[i] >> 4) == 14 ? 3
               : (p[i] >> 3) == 30 ? 4
                                   : 0;
    bool ok = k > 0 && i + k <= n && !(k == 2 && p[i] < 0xc2);
    for (size_t j = 1; ok && j < k; j++)
      ok = (p[i + j] & 0xc0) == 0x80;
    if (ok && k == 3 && ((p[i] == 0xe0 && p[i + 1] < 0xa0) || (p[i] == 0xed && p[i + 1] >= 0xa0)))
      ok = false;
    if (ok && k == 4 &&
        ((p[i] == 0xf0 && p[i + 1] < 0x90) || p[i] > 0xf4 || (p[i] == 0xf4 && p[i + 1] >= 0x90)))
      ok = false;
    if (ok && p[i] == 0)
      ok = false;
    if (!ok) {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
      continue;
    }
    memcpy(out + o, p + i, k);
    o += k;
    i += k;
  }
  out[o] = '\0';
  return out;
}

/* The PR's base and head commits (malloc'd), or false with a 500. */
static bool pr_range(struct ctx *c, json_t *repo, json_t *pr, char **base, char **head,
                     const char *doc)
{
  char *hs = forge_api_branch_sha(repo, json_string_value(json_object_get(pr, "head")));
  if (!hs && json_string_value(json_object_get(pr, "head_sha")))
    hs = al_xstrdup(json_string_value(json_object_get(pr, "head_sha")));
  const char *bs = json_string_value(json_object_get(pr, "base_sha"));
  if (!hs || !bs) {
    free(hs);
    forge_resp_error(c->resp, 500, "Server Error", doc);
    return false;
  }
  *head = hs;
  *base = al_xstrdup(bs);
  return true;
}

/* "%an%x00%ae%x00..." fields of one commit. */
static json_t *commit_obj(json_t *repo, const char *sha)
{
  const char *argv[] = {"git", "log",
                        "-1",  "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%T%x00%P%x00%B",
                        sha,   NULL};
  al_autofree char *out = NULL;
  size_t len = 0;
  if (forge_git_run(full(repo), argv, &out, &len) != 0 || !out)
    return NULL;
  const char *f[9] = {0};
  size_t k = 0, i = 0;
  while (k < 9 && i <= len) {
    f[k++] = out + i;
    if (k == 9)
      break;
    i += strlen(out + i) + 1;
  }
  if (k < 9)
    return NULL;
  al_autofree char *msg = lossy(f[8], strlen(f[8]));
  size_t ml = strlen(msg);
  while (ml > 0 && msg[ml - 1] == '\n')
    ml--;
  json_t *parents = json_array();
  al_autofree char *ps = al_xstrdup(f[7]);
  char *save = NULL;
  for (char *p = strtok_r(ps, " ", &save); p; p = strtok_r(NULL, " ", &save))
    json_array_append_new(parents, json_pack("{s:s}", "sha", p));
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/commits/%s", g_forge.base_url, full(repo), sha);
  return json_pack("{s:s, s:s, s:s, s:{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s%, s:{s:s}}, "
                   "s:n, s:n, s:o}",
                   "sha", sha, "node_id", "C_forge", "url", url, "commit", "author", "name", f[0],
                   "email", f[1], "date", f[2], "committer", "name", f[3], "email", f[4], "date",
                   f[5], "message", msg, ml, "tree", "sha", f[6], "author", "committer", "parents",
                   parents);
}

void forge_h_pull_commits(struct ctx *c, json_t *repo, long long num)
{
  const char *doc = DOC_PULLS "#list-commits-on-a-pull-request";
  if (!forge_api_authorize(c, repo, "pull_requests", 1, doc))
    return;
  json_t *pr = forge_api_find_pull(c, repo, num, doc);
  al_autofree char *base = NULL;
  al_autofree char *head = NULL;
  if (!pr || !pr_range(c, repo, pr, &base, &head, doc))
    return;
  al_autofree char *range = al_strdup_printf("%s..%s", base, head);
  const char *rl[] = {"git", "rev-list", "--reverse", "--max-count=250", range, NULL};
  al_autofree char *out = NULL;
  if (forge_git_run(full(repo), rl, &out, NULL) != 0 || !out)
    return forge_resp_error(c->resp, 500, "Server Error", doc);
  json_t *arr = json_array();
  char *save = NULL;
  for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    json_t *o = commit_obj(repo, l);
    if (o)
      json_array_append_new(arr, o);
  }
  forge_resp_json(c->resp, 200, arr);
}

static json_t *rcomment_obj(json_t *repo, json_t *cm)
{
  long long id = json_integer_value(json_object_get(cm, "id"));
  long long num = json_integer_value(json_object_get(cm, "pull_number"));
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/pulls/comments/%lld", g_forge.base_url, full(repo), id);
  al_autofree char *html = al_strdup_printf("%s/%s/pull/%lld#discussion_r%lld",
                                            g_forge.git_base_url, full(repo), num, id);
  return json_pack(
      "{s:I, s:s, s:s, s:s, s:n, s:s, s:O, s:O, s:O, s:o, s:O, s:O, s:O, s:O, "
      "s:s, s:s}",
      "id", (json_int_t)id, "node_id", "PRRC_forge", "url", url, "html_url", html,
      "pull_request_review_id", "diff_hunk", "", "path", json_object_get(cm, "path"), "commit_id",
      json_object_get(cm, "commit_id"), "original_commit_id", json_object_get(cm, "commit_id"),
      "user", forge_api_user(json_string_value(json_object_get(cm, "user"))), "body",
      json_object_get(cm, "body"), "line", json_object_get(cm, "line"), "created_at",
      json_object_get(cm, "created_at"), "updated_at", json_object_get(cm, "created_at"), "side",
      "RIGHT", "author_association", "NONE");
}

/* Review comments are kept with the issue comments (issue_number 0, kind
 * "review", so no issue's list shows them). */
void forge_h_pull_review_comments(struct ctx *c, json_t *repo, long long num)
{
  bool post = !strcmp(c->rq->method, "POST");
  const char *doc = post ? DOC_RCOMMENTS "#create-a-review-comment-for-a-pull-request"
                         : DOC_RCOMMENTS "#list-review-comments-on-a-pull-request";
  if (!forge_api_authorize(c, repo, "pull_requests", post ? 2 : 1, doc))
    return;
  json_t *pr = forge_api_find_pull(c, repo, num, doc);
  if (!pr)
    return;
  if (!post) {
    json_t *arr = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(g_forge.comments, i, v)
    {
      const char *kind = json_string_value(json_object_get(v, "kind"));
      if (kind && !strcmp(kind, "review") &&
          !strcmp(json_string_value(json_object_get(v, "repo")), full(repo)) &&
          json_integer_value(json_object_get(v, "pull_number")) == num)
        json_array_append_new(arr, rcomment_obj(repo, v));
    }
    return forge_resp_json(c->resp, 200, arr);
  }
  if (!forge_api_parse_body(c, false, doc))
    return;
  json_t *body = json_object_get(c->body, "body");
  json_t *path = json_object_get(c->body, "path");
  json_t *line = json_object_get(c->body, "line");
  if (!json_is_string(body) || !json_is_string(path) || (line && !json_is_integer(line)))
    return forge_resp_error(c->resp, 422,
                            "Invalid request.\n\n\"body\" and \"path\" must be strings.", doc);
  al_autofree char *head =
      forge_api_branch_sha(repo, json_string_value(json_object_get(pr, "head")));
  char who[160];
  json_t *cm =
      json_pack("{s:I, s:s, s:I, s:I, s:s, s:O, s:O, s:s?, s:O?, s:s, s:o}", "id",
                (json_int_t)g_forge.next_id++, "repo", full(repo), "issue_number", (json_int_t)0,
                "pull_number", (json_int_t)num, "kind", "review", "body", body, "path", path,
                "commit_id", head, "line", line, "user", forge_api_actor(c, who, sizeof who),
                "created_at", forge_api_iso(forge_now()));
  json_array_append_new(g_forge.comments, cm);
  forge_resp_json(c->resp, 201, rcomment_obj(repo, cm));
}

static bool safe_rev(const char *s)
{
  if (!*s || *s == '-' || strlen(s) > 255 || strstr(s, ".."))
    return false;
  for (const char *p = s; *p; p++)
    if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-' || *p == '/'))
      return false;
  return true;
}

static bool is_oid(const char *s)
{
  size_t n = strlen(s);
  if (n != 40 && n != 64)
    return false;
  for (const char *p = s; *p; p++)
    if (!(('a' <= *p && *p <= 'f') || ('0' <= *p && *p <= '9')))
      return false;
  return true;
}

void forge_h_git_tree(struct ctx *c, json_t *repo, const char *sha)
{
  if (!forge_api_authorize(c, repo, "contents", 1, DOC_TREES))
    return;
  if (!safe_rev(sha))
    return forge_resp_error(c->resp, 404, "Not Found", DOC_TREES);
  al_autofree char *spec = al_strdup_printf("%s^{tree}", sha);
  const char *rp[] = {"git", "rev-parse", "--verify", "-q", spec, NULL};
  al_autofree char *tree = NULL;
  if (forge_git_run(full(repo), rp, &tree, NULL) != 0 || !tree)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_TREES);
  al_autofree char *rec = forge_query_param(c->rq->query, "recursive");
  const char *ls[] = {"git", "ls-tree", "-z", "-l", "--full-tree", tree, NULL, NULL, NULL};
  if (rec) {
    ls[5] = "-r";
    ls[6] = "-t";
    ls[7] = tree;
  }
  al_autofree char *out = NULL;
  size_t len = 0;
  if (forge_git_run(full(repo), ls, &out, &len) != 0 || !out)
    return forge_resp_error(c->resp, 500, "Server Error", DOC_TREES);
  json_t *arr = json_array();
  for (size_t i = 0; i < len;) {
    const char *ent = out + i;
    i += strlen(ent) + 1;
    const char *tab = strchr(ent, '\t');
    char mode[16], type[16], oid[80], size[32];
    if (!tab || sscanf(ent, "%15s %15s %79s %31s", mode, type, oid, size) != 4)
      continue;
    al_autofree char *url =
        al_strdup_printf("%s/repos/%s/git/%ss/%s", g_forge.base_url, full(repo), type, oid);
    al_autofree char *name = lossy(tab + 1, strlen(tab + 1));
    json_t *e =
        json_pack("{s:s, s:s, s:s, s:s}", "path", name, "mode", mode, "type", type, "sha", oid);
    if (!strcmp(type, "blob"))
      json_object_set_new(e, "size", json_integer(strtoll(size, NULL, 10)));
    if (strcmp(type, "commit") != 0)
      json_object_set_new(e, "url", json_string(url));
    json_array_append_new(arr, e);
  }
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/git/trees/%s", g_forge.base_url, full(repo), tree);
  forge_resp_json(
      c->resp, 200,
      json_pack("{s:s, s:s, s:o, s:b}", "sha", tree, "url", url, "tree", arr, "truncated", 0));
}

void forge_h_git_blob(struct ctx *c, json_t *repo, const char *sha)
{
  if (!forge_api_authorize(c, repo, "contents", 1, DOC_BLOBS))
    return;
  if (!is_oid(sha))
    return forge_resp_error(c->resp, 404, "Not Found", DOC_BLOBS);
  const char *ty[] = {"git", "cat-file", "-t", sha, NULL};
  al_autofree char *type = NULL;
  if (forge_git_run(full(repo), ty, &type, NULL) != 0 || !type || strcmp(type, "blob") != 0)
    return forge_resp_error(c->resp, 404, "Not Found", DOC_BLOBS);
  const char *cat[] = {"git", "cat-file", "blob", sha, NULL};
  al_autofree char *data = NULL;
  size_t len = 0;
  if (forge_git_run(full(repo), cat, &data, &len) != 0 || !data)
    return forge_resp_error(c->resp, 500, "Server Error", DOC_BLOBS);
  al_autofree char *b64 = forge_api_b64_lines((const unsigned char *)data, len);
  al_autofree char *url =
      al_strdup_printf("%s/repos/%s/git/blobs/%s", g_forge.base_url, full(repo), sha);
  forge_resp_json(c->resp, 200,
                  json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "sha", sha, "node_id", "B_forge",
                            "size", (json_int_t)len, "url", url, "content", b64, "encoding",
                            "base64"));
}
