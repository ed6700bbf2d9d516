/* The test forge's merge request reads for airlock's review notes (forge
 * seam pr_for_review .. pr_comment, forge/gitlab_review.c), answered from
 * the real bare repository the forge serves (--repos DIR: DIR/<full
 * path>.git) with git's own commands, in GitLab's field names:
 *   GET  /projects/:id/merge_requests/:iid          + sha, diff_refs, changes_count (a string)
 *   GET  .../merge_requests/:iid/diffs               "List merge request diffs"
 *   GET  .../merge_requests/:iid/commits             newest first
 *   GET/POST .../merge_requests/:iid/notes           sort=asc|desc (desc by default), a
 *                                                    system note "added N commits" first
 *   GET/POST .../merge_requests/:iid/discussions     a note with `position` is a DiffNote
 *   GET  /projects/:id/repository/tree               recursive=true, ref=SHA|branch
 *   GET  /projects/:id/repository/blobs/:sha         {size, encoding base64, content, sha}
 * Lists are paginated as GitLab's offset pagination: page, per_page
 * (default 20, at most 100), `Link: <...>; rel="next"`, x-next-page,
 * x-total; the tree with pagination=keyset as its keyset pagination
 * (`Link` with a page_token, no page numbers).
 * Test faults (the Maintainer's token only): POST /projects/:id/test_faults
 * with {"per_page_max": N (pages cut to N items), "shape": {ROUTE:
 * "wrong"} (a list answered as an object, an object as a list), "override":
 * {ROUTE: {...}} (merged into the object answered, or into every item of a
 * list)}; ROUTE one of mr, diffs, commits, notes, discussions, tree, blob,
 * note_create, discussion_create. They replace the project's faults. */
#include "mr_routes.h"

#include <ctype.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static json_t *state; /* {PID: {"faults": {...}, "mrs": {IID: {"discussions": [...]}}}} */
static long long next_id = 9000;

static json_t *obj_at(json_t *o, const char *k)
{
  json_t *v = json_object_get(o, k);
  if (!json_is_object(v)) {
    v = json_object();
    json_object_set_new(o, k, v);
  }
  return v;
}

static json_t *project_state(json_t *p)
{
  if (!state)
    state = json_object();
  char k[32];
  snprintf(k, sizeof k, "%lld", (long long)json_integer_value(json_object_get(p, "id")));
  return obj_at(state, k);
}

static json_t *faults(json_t *p)
{
  return obj_at(project_state(p), "faults");
}

/* ---- answers ---- */

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *j,
                                 const char *const *hdr)
{
  char *b = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(j);
  struct MHD_Response *r = MHD_create_response_from_buffer(
      b ? strlen(b) : 0, b ? b : (void *)"", b ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "application/json");
  for (size_t i = 0; hdr && hdr[i]; i += 2)
    MHD_add_response_header(r, hdr[i], hdr[i + 1]);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result msg(struct MHD_Connection *c, unsigned status, const char *m)
{
  return send_json(c, status, json_pack("{s:s}", status == 400 ? "error" : "message", m), NULL);
}

/* One object answer, with the route's faults. */
static enum MHD_Result one(struct MHD_Connection *c, json_t *p, const char *route, unsigned status,
                           json_t *j)
{
  json_t *f = faults(p);
  json_t *ov = json_object_get(json_object_get(f, "override"), route);
  if (json_is_object(ov))
    json_object_update(j, ov);
  if (json_object_get(json_object_get(f, "shape"), route)) {
    json_decref(j);
    j = json_array();
  }
  return send_json(c, status, j, NULL);
}

static int hexv(char c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* A query argument percent-decoded into out, or NULL. */
static const char *qarg(struct MHD_Connection *c, const char *name, char *out, size_t cap)
{
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
  if (!v)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; v[i]; i++) {
    int ch = (unsigned char)v[i];
    if (ch == '%') {
      int h = hexv(v[i + 1]), l = h < 0 ? -1 : hexv(v[i + 2]);
      if (h < 0 || l < 0)
        return NULL;
      ch = h * 16 + l;
      i += 2;
    } else if (ch == '+') {
      ch = ' ';
    }
    if (ch == 0 || o + 1 >= cap)
      return NULL;
    out[o++] = (char)ch;
  }
  out[o] = '\0';
  return out;
}

struct qbuf {
  char s[2048];
  size_t n;
};

static enum MHD_Result keep_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
  (void)kind;
  struct qbuf *q = cls;
  if (!strcmp(k, "page") || !strcmp(k, "page_token"))
    return MHD_YES;
  int w = snprintf(q->s + q->n, sizeof q->s - q->n, "%s=%s&", k, v ? v : "");
  if (w > 0 && (size_t)w < sizeof q->s - q->n)
    q->n += (size_t)w;
  return MHD_YES;
}

/* The keyset token of the tree entry at path: its path in hex (GitLab's
 * is opaque too). */
static void path_token(const char *path, char *out, size_t cap)
{
  size_t o = 0;
  for (const unsigned char *q = (const unsigned char *)path; *q && o + 3 < cap; q++)
    o += (size_t)snprintf(out + o, cap - o, "%02x", *q);
  out[o] = '\0';
}

/* Where a keyset page starts: after the entry whose token is tok; 0
 * without a token; (size_t)-1 for a token no entry has. */
static size_t keyset_from(json_t *all, const char *tok)
{
  if (!tok)
    return 0;
  size_t i;
  json_t *v;
  json_array_foreach(all, i, v)
  {
    char t[2048];
    const char *vp = json_string_value(json_object_get(v, "path"));
    path_token(vp ? vp : "", t, sizeof t);
    if (!strcmp(t, tok))
      return i + 1;
  }
  return (size_t)-1;
}

/* A list answer: GitLab's offset pagination of all (page, x-next-page),
 * or with pagination=keyset on the tree its keyset pagination
 * (page_token, no page numbers); the route's faults. */
static enum MHD_Result page(struct MHD_Connection *c, json_t *p, const char *route, char **seg,
                            size_t n, bool tls, json_t *all)
{
  json_t *f = faults(p);
  json_t *ov = json_object_get(json_object_get(f, "override"), route);
  char b[32], tb[2048];
  long per = qarg(c, "per_page", b, sizeof b) ? strtol(b, NULL, 10) : 20;
  long pg = qarg(c, "page", b, sizeof b) ? strtol(b, NULL, 10) : 1;
  const char *pag = qarg(c, "pagination", b, sizeof b);
  bool keyset = !strcmp(route, "tree") && pag && !strcmp(pag, "keyset");
  if (per < 1 || per > 100)
    per = per < 1 ? 20 : 100;
  json_int_t cap = json_integer_value(json_object_get(f, "per_page_max"));
  if (cap > 0 && per > cap)
    per = (long)cap;
  if (pg < 1)
    pg = 1;
  size_t total = json_array_size(all), from = (size_t)(pg - 1) * (size_t)per;
  if (keyset && (from = keyset_from(all, qarg(c, "page_token", tb, sizeof tb))) == (size_t)-1) {
    json_decref(all);
    return msg(c, 400, "page_token is invalid");
  }
  json_t *out = json_array();
  for (size_t i = from; i < total && i < from + (size_t)per; i++) {
    json_t *v = json_deep_copy(json_array_get(all, i));
    if (json_is_object(ov) && json_is_object(v))
      json_object_update(v, ov);
    json_array_append_new(out, v);
  }
  if (json_object_get(json_object_get(f, "shape"), route)) {
    json_decref(out);
    out = json_pack("{s:s}", "message", "not a list");
  }
  char tot[32], next[32], link[4096] = "", last[2048] = "";
  snprintf(tot, sizeof tot, "%zu", total);
  bool more = from + (size_t)per < total;
  snprintf(next, sizeof next, "%ld", more ? pg + 1 : 0L);
  const char *lp =
      json_string_value(json_object_get(json_array_get(all, from + (size_t)per - 1), "path"));
  if (more && keyset)
    path_token(lp ? lp : "", last, sizeof last);
  json_decref(all);
  if (more) {
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    struct qbuf q = {.n = 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, keep_arg, &q);
    int o = snprintf(link, sizeof link, "<%s://%s/api/v4", tls ? "https" : "http",
                     host ? host : "127.0.0.1");
    for (size_t i = 0; i < n && o > 0 && (size_t)o < sizeof link; i++)
      o += snprintf(link + o, sizeof link - (size_t)o, "/%s", seg[i]);
    if (o > 0 && (size_t)o < sizeof link && keyset)
      snprintf(link + o, sizeof link - (size_t)o, "?%spage_token=%s>; rel=\"next\"", q.s, last);
    else if (o > 0 && (size_t)o < sizeof link)
      snprintf(link + o, sizeof link - (size_t)o, "?%spage=%ld>; rel=\"next\"", q.s, pg + 1);
  }
  const char *hdr[] = {"x-total", tot, "x-next-page", more ? next : "", more ? "Link" : NULL,
                       link,      NULL};
  const char *khdr[] = {more ? "Link" : NULL, link, NULL};
  return send_json(c, 200, out, keyset ? khdr : hdr);
}

/* ---- git ---- */

/* git --git-dir=DIR ARGS..., its stdout (malloc'd, NUL after *len bytes)
 * when it exits 0, else NULL. */
static char *git(const char *dir, const char *const *args, size_t *len)
{
  int out[2];
  if (pipe(out) < 0)
    return NULL;
  pid_t pid = fork();
  if (pid == 0) {
    int nul = open("/dev/null", O_RDWR);
    dup2(nul, 0);
    dup2(nul, 2);
    dup2(out[1], 1);
    char gd[4200];
    snprintf(gd, sizeof gd, "--git-dir=%s", dir);
    const char *argv[32] = {"git", gd};
    size_t a = 2;
    for (size_t i = 0; args[i] && a < 31; i++)
      argv[a++] = args[i];
    argv[a] = NULL;
    static char e0[] = "PATH=/usr/bin:/bin", e1[] = "GIT_CONFIG_NOSYSTEM=1", e2[] = "HOME=/";
    char *envp[] = {e0, e1, e2, NULL};
    execve("/usr/bin/git", (char *const *)argv, envp);
    _exit(127);
  }
  close(out[1]);
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap + 1);
  for (ssize_t k; buf && (k = read(out[0], buf + n, cap - n)) > 0;) {
    n += (size_t)k;
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  close(out[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!buf || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

/* A commit id of rev into out (65 bytes), or false. */
static bool rev(const char *dir, const char *r, char out[65])
{
  char spec[600];
  snprintf(spec, sizeof spec, "%s^{commit}", r);
  const char *a[] = {"rev-parse", "--verify", "--quiet", spec, NULL};
  char *s = r[0] == '-' ? NULL : git(dir, a, NULL);
  if (!s)
    return false;
  s[strcspn(s, "\n")] = '\0';
  bool ok = strlen(s) == 40 || strlen(s) == 64;
  if (ok)
    snprintf(out, 65, "%s", s);
  free(s);
  return ok;
}

static bool repo_dir(json_t *p, const char *repos, char *out, size_t n)
{
  const char *path = json_string_value(json_object_get(p, "path_with_namespace"));
  return repos && path && (size_t)snprintf(out, n, "%s/%s.git", repos, path) < n;
}

/* The MR's head, the target's head and their merge base. */
static bool mr_refs(const char *dir, json_t *mr, char head[65], char start[65], char base[65])
{
  const char *src = json_string_value(json_object_get(mr, "source_branch"));
  const char *dst = json_string_value(json_object_get(mr, "target_branch"));
  char a[300], b[300];
  if (!src || !dst)
    return false;
  snprintf(a, sizeof a, "refs/heads/%s", src);
  snprintf(b, sizeof b, "refs/heads/%s", dst);
  if (!rev(dir, a, head) || !rev(dir, b, start))
    return false;
  const char *args[] = {"merge-base", start, head, NULL};
  char *s = git(dir, args, NULL);
  if (!s)
    return false;
  s[strcspn(s, "\n")] = '\0';
  snprintf(base, 65, "%s", s);
  free(s);
  return strlen(base) >= 40;
}

/* ---- the routes ---- */

static json_t *mr_by(json_t *p, const char *iid)
{
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(p, "merge_requests"), i, m)
  {
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)json_integer_value(json_object_get(m, "iid")));
    if (!strcmp(v, iid))
      return m;
  }
  return NULL;
}

static void now_iso(char out[32])
{
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static json_t *note_new(json_t *mr, const char *body, const char *type, bool system,
                        const char *author, json_t *position)
{
  char at[32];
  now_iso(at);
  json_t *n =
      json_pack("{s:I, s:s, s:s, s:b, s:{s:s}, s:s, s:s, s:O, s:b}", "id", (json_int_t)next_id++,
                "body", body, "noteable_type", "MergeRequest", "system", system, "author",
                "username", author, "created_at", at, "updated_at", at, "noteable_iid",
                json_object_get(mr, "iid"), "resolvable", position != NULL);
  json_object_set_new(n, "type", type ? json_string(type) : json_null());
  if (position)
    json_object_set(n, "position", position);
  return n;
}

static json_t *discussion_new(json_t *note, bool individual)
{
  char id[41];
  snprintf(id, sizeof id, "%040llx",
           (unsigned long long)json_integer_value(json_object_get(note, "id")));
  return json_pack("{s:s, s:b, s:[o]}", "id", id, "individual_note", individual, "notes", note);
}

/* The MR's discussions; the first time, GitLab's system note of its push. */
static json_t *discussions(json_t *p, json_t *mr)
{
  char k[32];
  snprintf(k, sizeof k, "%lld", (long long)json_integer_value(json_object_get(mr, "iid")));
  json_t *ms = obj_at(obj_at(project_state(p), "mrs"), k);
  json_t *ds = json_object_get(ms, "discussions");
  if (!ds) {
    ds = json_array();
    json_array_append_new(
        ds, discussion_new(note_new(mr, "added 1 commit", NULL, true, "maintainer", NULL), true));
    json_object_set_new(ms, "discussions", ds);
  }
  return ds;
}

static json_t *diff_list(const char *dir, const char *base, const char *head)
{
  const char *ra[] = {"diff", "--raw", "-z", "-M", "--no-abbrev", base, head, NULL};
  size_t len = 0;
  char *raw = git(dir, ra, &len);
  json_t *out = json_array();
  for (size_t i = 0; raw && i < len && raw[i] == ':';) {
    char am[8] = "", bm[8] = "", st = 0;
    if (sscanf(raw + i + 1, "%7s %7s %*s %*s %c", am, bm, &st) != 3)
      break;
    i += strlen(raw + i) + 1;
    const char *op = raw + i, *np = op;
    i += strlen(op) + 1;
    if (st == 'R' || st == 'C') {
      np = raw + i;
      i += strlen(np) + 1;
    }
    const char *da[] = {"diff", "-M", base, head, "--", op, np, NULL};
    char *d = git(dir, da, NULL);
    const char *h = d ? (strncmp(d, "@@", 2) == 0 ? d : strstr(d, "\n@@")) : NULL;
    if (h && *h == '\n')
      h++;
    if (!h && d)
      h = strstr(d, "Binary files ");
    json_array_append_new(
        out, json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:b, s:b, s:b, s:s}", "old_path", op,
                       "new_path", np, "a_mode", strcmp(am, "000000") ? am : "0", "b_mode",
                       strcmp(bm, "000000") ? bm : "0", "new_file", st == 'A', "renamed_file",
                       st == 'R', "deleted_file", st == 'D', "generated_file", 0, "too_large", 0,
                       "collapsed", 0, "diff", h ? h : ""));
    free(d);
  }
  free(raw);
  return out;
}

static json_t *commit_list(const char *dir, const char *base, const char *head)
{
  char range[140];
  snprintf(range, sizeof range, "%s..%s", base, head);
  const char *a[] = {"log", "--no-decorate",
                     "--format=%H%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%cI%x1f%B%x1e", range, NULL};
  char *s = git(dir, a, NULL);
  json_t *out = json_array();
  for (char *save = NULL, *r = s ? strtok_r(s, "\x1e", &save) : NULL; r;
       r = strtok_r(NULL, "\x1e", &save)) {
    while (*r == '\n')
      r++;
    char *f[7];
    size_t k = 0;
    for (char *q = r; k < 7; k++) {
      f[k] = q;
      char *sep = k < 6 ? strchr(q, '\x1f') : NULL;
      if (k < 6 && !sep)
        break;
      if (sep) {
        *sep = '\0';
        q = sep + 1;
      }
    }
    if (k < 7)
      continue;
    size_t ml = strlen(f[6]);
    while (ml && f[6][ml - 1] == '\n')
      f[6][--ml] = '\0';
    char shortid[9], title[256];
    snprintf(shortid, sizeof shortid, "%.8s", f[0]);
    snprintf(title, sizeof title, "%.*s", (int)strcspn(f[6], "\n"), f[6]);
    json_array_append_new(out,
                          json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", f[0],
                                    "short_id", shortid, "title", title, "message", f[6],
                                    "author_name", f[1], "author_email", f[2], "committer_name",
                                    f[3], "committer_email", f[4], "created_at", f[5]));
  }
  free(s);
  return out;
}

static json_t *tree_list(const char *dir, const char *ref, bool recursive)
{
  const char *a[] = {"ls-tree", "-z", "--full-tree", ref, NULL, NULL, NULL};
  if (recursive) {
    a[3] = "-r";
    a[4] = "-t";
    a[5] = ref;
  }
  size_t len = 0;
  char *s = git(dir, a, &len);
  if (!s)
    return NULL;
  json_t *out = json_array();
  for (size_t i = 0; i < len;) {
    char *e = s + i;
    i += strlen(e) + 1;
    char *tab = strchr(e, '\t');
    char mode[8], type[8], id[65];
    if (!tab || sscanf(e, "%7s %7s %64s", mode, type, id) != 3)
      continue;
    const char *path = tab + 1, *slash = strrchr(path, '/');
    json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "name",
                                         slash ? slash + 1 : path, "type", type, "path", path,
                                         "mode", mode));
  }
  free(s);
  return out;
}

static enum MHD_Result blob(struct MHD_Connection *c, json_t *p, const char *dir, const char *sha)
{
  size_t sl = strlen(sha);
  if ((sl != 40 && sl != 64) || strspn(sha, "0123456789abcdef") != sl)
    return msg(c, 404, "404 Blob Not Found");
  const char *ta[] = {"cat-file", "-t", sha, NULL};
  char *t = git(dir, ta, NULL);
  bool is_blob = t && !strcmp(t, "blob\n");
  free(t);
  if (!is_blob)
    return msg(c, 404, "404 Blob Not Found");
  const char *ca[] = {"cat-file", "blob", sha, NULL};
  size_t len = 0;
  char *b = git(dir, ca, &len);
  if (!b)
    return msg(c, 500, "git cat-file failed");
  char *enc = malloc(4 * (len / 3 + 1) + 1);
  if (!enc) {
    free(b);
    return msg(c, 500, "out of memory");
  }
  EVP_EncodeBlock((unsigned char *)enc, (const unsigned char *)b, (int)len);
  json_t *j = json_pack("{s:I, s:s, s:s, s:s}", "size", (json_int_t)len, "encoding", "base64",
                        "content", enc, "sha", sha);
  free(enc);
  free(b);
  return one(c, p, "blob", 200, j);
}

bool gl_mr_route(struct MHD_Connection *c, const char *method, char **seg, size_t n, json_t *p,
                 json_t *body, const char *repos, bool tls, bool maintainer, const char *author,
                 enum MHD_Result *ret)
{
  bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
  char dir[4400];
  bool have_repo = repo_dir(p, repos, dir, sizeof dir);
  if (n == 3 && post && !strcmp(seg[2], "test_faults")) {
    if (!maintainer) {
      *ret = msg(c, 403, "403 Forbidden");
    } else {
      json_object_set(project_state(p), "faults", body ? body : json_object());
      *ret = send_json(c, 200, json_incref(faults(p)), NULL);
    }
    return true;
  }
  if (n == 5 && get && !strcmp(seg[2], "repository") && !strcmp(seg[3], "blobs")) {
    *ret = have_repo ? blob(c, p, dir, seg[4]) : msg(c, 404, "404 Repository Not Found");
    return true;
  }
  if (n == 4 && get && !strcmp(seg[2], "repository") && !strcmp(seg[3], "tree")) {
    char ref[256], rb[16], id[65];
    const char *r = qarg(c, "ref", ref, sizeof ref);
    const char *rec = qarg(c, "recursive", rb, sizeof rb);
    if (!r)
      r = json_string_value(json_object_get(p, "default_branch"));
    if (!have_repo || !r || !rev(dir, r, id)) {
      *ret = msg(c, 404, "404 Tree Not Found");
      return true;
    }
    json_t *all = tree_list(dir, id, rec && !strcmp(rec, "true"));
    *ret = all ? page(c, p, "tree", seg, n, tls, all) : msg(c, 404, "404 Tree Not Found");
    return true;
  }
  if (n < 4 || strcmp(seg[2], "merge_requests") != 0)
    return false;
  json_t *mr = mr_by(p, seg[3]);
  if (!mr) {
    *ret = msg(c, 404, "404 Not Found");
    return true;
  }
  char head[65] = "", start[65] = "", base[65] = "";
  bool refs = have_repo && mr_refs(dir, mr, head, start, base);
  if (n == 4 && get) {
    json_t *v = json_deep_copy(mr);
    json_t *pid = json_object_get(p, "id");
    json_object_set(v, "source_project_id", pid);
    json_object_set(v, "target_project_id", pid);
    json_object_set_new(v, "sha", refs ? json_string(head) : json_null());
    json_object_set_new(
        v, "diff_refs",
        refs ? json_pack("{s:s, s:s, s:s}", "base_sha", base, "head_sha", head, "start_sha", start)
             : json_null());
    if (refs) {
      json_t *d = diff_list(dir, base, head);
      char cnt[32];
      snprintf(cnt, sizeof cnt, "%zu", json_array_size(d));
      json_decref(d);
      json_object_set_new(v, "changes_count", json_string(cnt));
    } else {
      json_object_set_new(v, "changes_count", json_null());
    }
    *ret = one(c, p, "mr", 200, v);
    return true;
  }
  if (n != 5)
    return false;
  const char *sub = seg[4];
  if (get && (!strcmp(sub, "diffs") || !strcmp(sub, "commits"))) {
    if (!refs) {
      *ret = msg(c, 404, "404 Repository Not Found");
      return true;
    }
    json_t *all = !strcmp(sub, "diffs") ? diff_list(dir, base, head) : commit_list(dir, base, head);
    *ret = page(c, p, sub, seg, n, tls, all);
    return true;
  }
  json_t *ds = discussions(p, mr);
  if (get && !strcmp(sub, "notes")) {
    char sb[16];
    const char *sort = qarg(c, "sort", sb, sizeof sb);
    bool asc = sort && !strcmp(sort, "asc");
    json_t *all = json_array();
    size_t i, k;
    json_t *d, *nt;
    json_array_foreach(ds, i, d) json_array_foreach(json_object_get(d, "notes"), k, nt)
        json_array_append(all, nt);
    if (!asc) { /* GitLab's default: the newest first */
      json_t *rev_all = json_array();
      for (size_t j = json_array_size(all); j > 0; j--)
        json_array_append(rev_all, json_array_get(all, j - 1));
      json_decref(all);
      all = rev_all;
    }
    *ret = page(c, p, "notes", seg, n, tls, all);
    return true;
  }
  if (get && !strcmp(sub, "discussions")) {
    *ret = page(c, p, "discussions", seg, n, tls, json_incref(ds));
    return true;
  }
  if (post && (!strcmp(sub, "notes") || !strcmp(sub, "discussions"))) {
    const char *b = json_string_value(json_object_get(body, "body"));
    json_t *pos = json_object_get(body, "position");
    if (!b || !*b) {
      *ret = msg(c, 400, "body is missing");
      return true;
    }
    bool diff = !strcmp(sub, "discussions") && pos;
    if (diff && (!json_is_object(pos) || !json_is_string(json_object_get(pos, "position_type")) ||
                 (!json_is_string(json_object_get(pos, "new_path")) &&
                  !json_is_string(json_object_get(pos, "old_path"))))) {
      *ret = msg(c, 400, "position is invalid");
      return true;
    }
    bool note = !strcmp(sub, "notes");
    json_t *nt = note_new(mr, b,
                          note   ? NULL
                          : diff ? "DiffNote"
                                 : "DiscussionNote",
                          false, author, diff ? pos : NULL);
    json_t *d = discussion_new(json_incref(nt), note);
    json_array_append(ds, d);
    *ret =
        one(c, p, note ? "note_create" : "discussion_create", 201, json_deep_copy(note ? nt : d));
    json_decref(d);
    json_decref(nt);
    return true;
  }
  return false;
}
