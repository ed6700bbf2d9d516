/* Phase: the review notes for the human reviewer (issue #16; what they
 * cover: docs/review.md).
 *
 * After the run's tokens are revoked, a second lease (contents: read,
 * pull_requests: write for the one notes comment, issues: read) reads the
 * pull request from the run's branch back from the forge, through the
 * forge seam (forge/forge.h; GitHub's routes in brackets):
 *
 *   pr_for_review   the PR (only one whose head is the branch) [pulls?head=]
 *   pr_files        names, status, renames, patch, blob sha [pulls/{n}/files]
 *   tree (head)     modes: 120000 symlink, 160000 gitlink, 100755 [git/trees/{sha}]
 *   tree (base)     what the modes were before
 *   blob            symlink targets; contents where no patch [git/blobs/{sha}]
 *   pr_commits      commit messages and identities [pulls/{n}/commits]
 *   pr_texts        the PR's conversation, review bodies and review comments
 *   issue_comments  ticket comments made during the run [issues/{ticket}/comments]
 *
 * and fills record.review: files, runs_outside_sandbox (the catalogue,
 * review/catalogue.c), kinds (symlinks, gitlinks, executables, binaries,
 * renames, names), secrets (review/secrets.c: the run's tokens from their
 * fingerprints), links, closing_keywords (commits whose messages would
 * close issues on merge: common/safetext.h), blocked (the proxy's and gateway's refusals from
 * the record), read (counts) and could_not_read. A list that is
 * incomplete or an answer that is not 200 is a could_not_read line and
 * the phase ends `warn` (or `failed` when the PR or its files could not be
 * read): the notes never say less than they read.
 * The notes are posted on the PR as one comment after the record is
 * written (tk_post_review_notes), carrying the record's SHA-256. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "broker/client.h"
#include "common/redact.h"
#include "common/safetext.h"
#include "common/util.h"
#include "forge/forge.h"
#include "forge/ghapi.h"
#include "review/catalogue.h"
#include "review/notes.h"
#include "review/secrets.h"

#define REVIEW_LEASE_MS 120000u /* the review lease: its reads and the notes fit in it */
#define BLOB_MAX (8u << 20)     /* blobs read for contents: larger ones are a could-not-read */
#define BLOBS_MAX 500           /* at most this many blobs per review */
#define FILES_MAX 3000          /* GitHub lists at most 3000 files of a PR */
#define COMMITS_MAX 250         /* ... and at most 250 commits */
#define TEXT_MAX (16u << 20)    /* per text scanned (the scanner's own cap) */

struct rd {
  struct ticket *t;
  const al_forge_ops *forge; /* the policy's forge.kind */
  al_ghapi *api;
  const char *git, *tkt; /* the review lease's tokens */
  json_t *rv, *nr, *secrets, *links, *kinds, *outside, *read;
  json_t *keywords; /* commits whose messages close issues on merge */
  size_t blobs;
  al_ghapi *base_api; /* the base tree's client: conditional reads (etags), or NULL */
  al_etags *etags;
};

static const char *sv(json_t *v)
{
  const char *s = json_string_value(v);
  return s ? s : "";
}

static const char *sv2(json_t *v, const char *dflt)
{
  const char *s = json_string_value(v);
  return s ? s : dflt;
}

static void not_read(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void not_read(struct rd *r, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  va_end(ap);
  json_array_append_new(r->nr, json_string(s));
  free(s);
}

static void count(struct rd *r, const char *what, size_t n)
{
  json_object_set_new(
      r->read, what,
      json_integer(json_integer_value(json_object_get(r->read, what)) + (json_int_t)n));
}

/* A list the seam read (rc its answer, items what it holds), whole or
 * with a could-not-read line naming what is missing. Returns the items (a
 * new array, never NULL). */
static json_t *seam_list(struct rd *r, const char *what, int rc, json_t *items, const al_error *e,
                         bool *complete)
{
  if (rc < 0)
    not_read(r, "could not read %s: %s", what, e->msg);
  if (complete)
    *complete = rc == 0;
  return items ? items : json_array();
}

/* The bytes of blob sha (the driver's blob: at most BLOB_MAX), malloc'd
 * with *len, or NULL with a could-not-read line. */
static char *blob(struct rd *r, const char *sha, const char *file, size_t *len)
{
  if (!sha) {
    not_read(r, "could not read the contents of %s: the forge gave no blob id", file);
    return NULL;
  }
  if (r->blobs++ >= BLOBS_MAX) {
    not_read(r, "did not read the contents of %s: more than %d blobs in one pull request", file,
             BLOBS_MAX);
    return NULL;
  }
  char *out = NULL;
  al_error e = {0};
  if (r->forge->blob(r->api, r->git, r->t->repo, sha, BLOB_MAX, &out, len, &e) < 0) {
    not_read(r, "could not read the contents of %s: %s", file, e.msg);
    return NULL;
  }
  return out;
}

/* ---- secrets and links ---- */

struct hitctx {
  struct rd *r;
  const char *where;
  const char *file;
};

static void on_hit(const al_secret_hit *h, void *ctx)
{
  struct hitctx *hc = ctx;
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b}", "where", hc->where, "kind", h->kind,
                        "encoding", h->encoding, "fingerprint", h->fp, "run_token", h->known >= 0);
  if (hc->file)
    json_object_set_new(o, "file", json_string(hc->file));
  if (h->known >= 0)
    json_object_set_new(o, "token", json_string(hc->r->t->run_tokens[h->known].name));
  json_array_append_new(hc->r->secrets, o);
}

static void scan(struct rd *r, const char *where, const char *file, const char *text, size_t len)
{
  if (!text || !len)
    return;
  struct hitctx hc = {r, where, file};
  bool trunc = false;
  al_secret_scan(text, len, r->t->run_tokens, r->t->n_run_tokens, on_hit, &hc, &trunc);
  if (trunc)
    not_read(r, "scanned only the first 16 MiB of %s%s%s", where, file ? " " : "",
             file ? file : "");
}

/* Scan and look for links in a comment-like text (title, body, comment). */
static void scan_text(struct rd *r, const char *where, const char *text)
{
  if (!text)
    return;
  scan(r, where, NULL, text, strlen(text));
  al_review_find_links(text, where, r->links);
}

/* The `+` lines of a unified diff, without the `+` (what the agent added). */
static char *added_lines(const char *patch, size_t *len)
{
  size_t n = strlen(patch);
  char *out = al_xmalloc(n + 1);
  size_t o = 0;
  for (const char *l = patch; *l;) {
    const char *e = strchr(l, '\n');
    size_t ll = e ? (size_t)(e - l) : strlen(l);
    if (ll && l[0] == '+') {
      memcpy(out + o, l + 1, ll - 1);
      o += ll - 1;
      out[o++] = '\n';
    }
    l += ll + (e ? 1 : 0);
  }
  out[o] = '\0';
  *len = o;
  return out;
}

/* ---- one changed file ---- */

static void flag(struct rd *r, const char *file, const char *family, const char *why,
                 const char *match)
{
  json_array_append_new(r->outside, json_pack("{s:s, s:s, s:s, s:s}", "file", file, "family",
                                              family, "why", why, "match", match));
}

static void kind(struct rd *r, const char *file, const char *k, const char *detail,
                 const char *target)
{
  json_t *o = json_pack("{s:s, s:s}", "file", file, "kind", k);
  if (detail)
    json_object_set_new(o, "detail", json_string(detail));
  if (target)
    json_object_set_new(o, "target", json_string(target));
  json_array_append_new(r->kinds, o);
}

/* Where a symlink at `file` pointing to `target` leads, for the note. */
static const char *symlink_risk(const char *file, const char *target)
{
  if (target[0] == '/')
    return "symlink to an absolute path, outside the repository";
  if (target[0] == '~')
    return "symlink into a home directory, outside the repository";
  /* resolve against the link's directory, lexically */
  char joined[4096];
  const char *slash = strrchr(file, '/');
  snprintf(joined, sizeof joined, "%.*s%s%s", slash ? (int)(slash - file) : 0, file,
           slash ? "/" : "", target);
  int d = 0;
  for (const char *c = joined; *c;) {
    const char *e = strchr(c, '/');
    size_t cl = e ? (size_t)(e - c) : strlen(c);
    if (cl == 2 && c[0] == '.' && c[1] == '.')
      d--;
    else if (!(cl == 1 && c[0] == '.') && cl)
      d++;
    if (d < 0)
      return "symlink that leads out of the repository";
    c += cl + (e ? 1 : 0);
  }
  const al_review_rule *rule = al_review_catalogue_match(joined);
  if (rule)
    return "symlink into a file that runs outside the sandbox later";
  return "symlink";
}

static void review_file(struct rd *r, json_t *f, json_t *head_tree, json_t *base_tree,
                        bool have_modules, const char *modules)
{
  const char *name = json_string_value(json_object_get(f, "filename"));
  const char *status = json_string_value(json_object_get(f, "status"));
  const char *prev = json_string_value(json_object_get(f, "previous_filename"));
  const char *patch = json_string_value(json_object_get(f, "patch"));
  if (!name)
    return;
  if (!status)
    status = "modified";
  bool removed = strcmp(status, "removed") == 0;
  const al_review_rule *rule = al_review_catalogue_match(name);
  if (rule)
    flag(r, name, rule->family, rule->why, removed ? "path (removed)" : "path");
  if (prev) {
    const al_review_rule *pr = al_review_catalogue_match(prev);
    if (pr && pr != rule)
      flag(r, name, pr->family, pr->why, "previous name");
    kind(r, name, "renamed", "renamed from", prev);
    const char *pi = al_review_name_issue(prev);
    if (pi)
      kind(r, prev, "name", pi, NULL);
  }
  const char *issue = al_review_name_issue(name);
  if (issue)
    kind(r, name, "name", issue, NULL);
  json_t *he = json_object_get(head_tree, name);
  json_t *be = json_object_get(base_tree, prev ? prev : name);
  const char *mode = json_string_value(json_object_get(he, "mode"));
  const char *bmode = json_string_value(json_object_get(be, "mode"));
  /* a file that became a symlink or a gitlink (GitHub: status "changed";
   * the modes say it whatever the status) */
  if (!strcmp(status, "changed") || (mode && bmode && strncmp(mode, bmode, 2) != 0))
    kind(r, name, "type-changed", "its type changed (a file became a symlink, a gitlink...)", NULL);
  if (!removed && head_tree && !he)
    not_read(r, "could not find %s in the head commit's tree: its mode is unknown", name);
  if (mode)
    json_object_set_new(f, "mode", json_string(mode));
  const char *sha = json_string_value(json_object_get(he, "sha"));
  if (!sha)
    sha = json_string_value(json_object_get(f, "sha"));
  if (mode && !strcmp(mode, "160000")) {
    char detail[200];
    bool listed = false;
    if (modules) { /* `path = NAME` in .gitmodules */
      const char *p = modules;
      size_t nl = strlen(name);
      while ((p = strstr(p, name)) != NULL) {
        const char *ls = p;
        while (ls > modules && ls[-1] != '\n')
          ls--;
        if (strstr(ls, "path") && strstr(ls, "path") < p &&
            (p[nl] == '\n' || !p[nl] || p[nl] == ' ' || p[nl] == '\r'))
          listed = true;
        p += nl;
      }
    }
    snprintf(detail, sizeof detail, "gitlink (a submodule commit)%s",
             listed         ? ""
             : have_modules ? ": no .gitmodules entry names it"
                            : ": and the repository has no .gitmodules");
    kind(r, name, "gitlink", detail, sha);
    return;
  }
  if (mode && !strcmp(mode, "120000")) {
    size_t len = 0;
    al_autofree char *target = blob(r, sha, name, &len);
    if (target) {
      if (memchr(target, '\0', len))
        kind(r, name, "symlink", "symlink whose target holds a NUL byte", NULL);
      else
        kind(r, name, "symlink", symlink_risk(name, target), target);
      scan(r, "the target of the symlink", name, target, len);
    } else {
      kind(r, name, "symlink", "symlink (target not read)", NULL);
    }
    return;
  }
  if (mode && !strcmp(mode, "100755") && (!bmode || strcmp(bmode, "100755") != 0)) {
    char detail[80];
    snprintf(detail, sizeof detail,
             bmode ? "executable bit added (mode 100755, was %.8s)"
                   : "new executable file (mode 100755)",
             bmode ? bmode : "");
    kind(r, name, "executable", detail, NULL);
  }
  if (removed)
    return; /* what was removed is not what the agent wrote */
  /* the text the agent wrote: the patch, else the blob (GitHub omits
   * `patch` for binary and very large diffs) */
  al_autofree char *content = NULL;
  size_t clen = 0;
  bool binary = false;
  if (patch) {
    scan(r, "the diff of", name, patch, strlen(patch));
    content = added_lines(patch, &clen);
  } else if (!json_equal(json_object_get(he, "sha"), json_object_get(be, "sha"))) {
    /* no patch but other contents: binary, or a diff too large to show */
    content = blob(r, sha, name, &clen);
    if (content) {
      binary = memchr(content, '\0', clen < 8000 ? clen : 8000) != NULL;
      scan(r, "the contents of", name, content, clen);
    }
  }
  if (binary)
    kind(r, name, "binary", "binary file: the forge shows no diff (its bytes were scanned)", NULL);
  else if (!patch && content && clen)
    kind(r, name, "no-diff", "the forge shows no diff for it (its contents were scanned)", NULL);
  if (content) {
    const al_review_content_rule *cr = al_review_content_match(name, content, clen);
    if (cr && (!rule || strcmp(cr->family, rule->family) != 0 || strcmp(cr->why, rule->why)))
      flag(r, name, cr->family, cr->why, "content");
  }
}

/* path -> {mode, type, sha} of a recursive tree, or NULL (could-not-read). */
static json_t *tree(struct rd *r, const char *which, const char *sha)
{
  if (!sha)
    return NULL;
  json_t *map = NULL;
  bool truncated = false;
  al_error e = {0};
  /* only the base's tree is read conditionally, and kept between runs: the
   * base is the forge's (main's commit), never the agent's, and the same
   * from run to run (issue #33) */
  al_ghapi *api = r->base_api && strcmp(which, "base") == 0 ? r->base_api : r->api;
  if (r->forge->tree(api, r->git, r->t->repo, sha, &map, &truncated, &e) < 0) {
    not_read(r, "could not read the %s commit's tree: %s", which, e.msg);
    return NULL;
  }
  if (truncated)
    not_read(r, "the %s commit's tree is truncated by the forge: modes of some files unknown",
             which);
  return map;
}

/* The PR's files, kinds and contents. Returns false when the file list
 * could not be read at all. */
static bool review_files(struct rd *r, json_int_t num, json_t *pr)
{
  const char *head = json_string_value(json_object_get(pr, "head_sha"));
  const char *base = json_string_value(json_object_get(pr, "base_sha"));
  bool complete;
  json_t *files = NULL;
  al_error fe = {0};
  int rc = r->forge->pr_files(r->api, r->git, r->t->repo, (long long)num, FILES_MAX, &files, &fe);
  files = seam_list(r, "the pull request's files", rc, files, &fe, &complete);
  count(r, "files", json_array_size(files));
  json_int_t changed = json_integer_value(json_object_get(pr, "changed_files"));
  if (complete && changed > (json_int_t)json_array_size(files))
    not_read(r, "the forge lists %zu of the pull request's %lld changed files",
             json_array_size(files), (long long)changed);
  json_t *ht = tree(r, "head", head);
  json_t *bt = tree(r, "base", base);
  /* .gitmodules of the head, to tell a declared submodule from a bare gitlink */
  al_autofree char *modules = NULL;
  json_t *gm = json_object_get(ht, ".gitmodules");
  if (gm) {
    size_t ml = 0;
    modules = blob(r, json_string_value(json_object_get(gm, "sha")), ".gitmodules", &ml);
  }
  json_t *out = json_array();
  size_t i;
  json_t *f;
  json_array_foreach(files, i, f)
  {
    review_file(r, f, ht, bt, gm != NULL, modules);
    json_t *o =
        json_pack("{s:O*, s:O*, s:O*, s:O*}", "file", json_object_get(f, "filename"), "status",
                  json_object_get(f, "status"), "additions", json_object_get(f, "additions"),
                  "deletions", json_object_get(f, "deletions"));
    if (json_object_get(f, "previous_filename"))
      json_object_set(o, "previous_filename", json_object_get(f, "previous_filename"));
    if (json_object_get(f, "mode"))
      json_object_set(o, "mode", json_object_get(f, "mode"));
    json_array_append_new(out, o);
  }
  /* what the head tree changed that the file list does not name */
  if (ht && complete) {
    json_t *listed = json_object();
    json_array_foreach(files, i, f)
    {
      const char *n = json_string_value(json_object_get(f, "filename"));
      if (n)
        json_object_set_new(listed, n, json_true());
    }
    const char *p;
    json_t *e;
    json_object_foreach(ht, p, e)
    {
      const char *type = json_string_value(json_object_get(e, "type"));
      if (!type || !strcmp(type, "tree") || json_object_get(listed, p))
        continue;
      json_t *b = json_object_get(bt, p);
      if (b && json_equal(json_object_get(b, "sha"), json_object_get(e, "sha")) &&
          json_equal(json_object_get(b, "mode"), json_object_get(e, "mode")))
        continue;
      if (!bt)
        continue;
      json_t *fake = json_pack("{s:s, s:s, s:O}", "filename", p, "status", b ? "modified" : "added",
                               "sha", json_object_get(e, "sha"));
      review_file(r, fake, ht, bt, gm != NULL, modules);
      json_decref(fake);
      kind(r, p, "unlisted", "in the head commit but not in the forge's list of changed files",
           NULL);
    }
    json_decref(listed);
  }
  json_object_set_new(r->rv, "files", out);
  json_decref(ht);
  json_decref(bt);
  json_decref(files);
  return complete || json_array_size(out) > 0;
}

static void review_conversation(struct rd *r, json_int_t num)
{
  json_t *commits = NULL;
  al_error e = {0};
  int rc =
      r->forge->pr_commits(r->api, r->git, r->t->repo, (long long)num, COMMITS_MAX, &commits, &e);
  commits = seam_list(r, "the pull request's commits", rc, commits, &e, NULL);
  if (json_array_size(commits) >= COMMITS_MAX)
    not_read(r, "the forge lists at most %d commits of a pull request: later ones not read",
             COMMITS_MAX);
  size_t i;
  json_t *v;
  json_array_foreach(commits, i, v)
  {
    const char *msg = json_string_value(json_object_get(v, "message"));
    al_autofree char *who = al_strdup_printf("%s / %s", sv(json_object_get(v, "author")),
                                             sv(json_object_get(v, "committer")));
    scan_text(r, "a commit message", msg);
    scan_text(r, "a commit's author or committer", who);
    /* GitHub reads closing keywords in the commit messages of a PR merged
     * into the default branch: no rewriting reaches them, so they are named */
    size_t kw = msg ? al_safetext_closing_keywords(msg, strlen(msg)) : 0;
    if (kw) {
      const char *sha = json_string_value(json_object_get(v, "sha"));
      size_t sl = msg ? strcspn(msg, "\n") : 0;
      al_autofree char *subject = al_xmalloc(sl + 1);
      memcpy(subject, msg, sl);
      subject[sl] = '\0';
      al_autofree char *esc = al_review_escape(subject, 120);
      json_array_append_new(r->keywords, json_pack("{s:s, s:I, s:s}", "commit", sha ? sha : "",
                                                   "keywords", (json_int_t)kw, "subject", esc));
    }
  }
  count(r, "commits", json_array_size(commits));
  json_decref(commits);
  static const struct {
    int kind;
    const char *what, *where, *key;
  } lists[] = {
      {AL_FORGE_PR_COMMENTS, "the pull request's comments", "a pull request comment",
       "pull_request_comments"},
      {AL_FORGE_PR_REVIEWS, "the pull request's reviews", "a review body", "reviews"},
      {AL_FORGE_PR_REVIEW_COMMENTS, "the pull request's review comments", "a review comment",
       "review_comments"},
  };
  for (size_t l = 0; l < AL_ARRAY_SIZE(lists); l++) {
    json_t *items = NULL;
    al_error le = {0};
    int lrc = r->forge->pr_texts(r->api, r->git, r->t->repo, (long long)num, lists[l].kind, 10000,
                                 &items, &le);
    items = seam_list(r, lists[l].what, lrc, items, &le, NULL);
    json_array_foreach(items, i, v)
    {
      scan_text(r, lists[l].where, json_string_value(json_object_get(v, "body")));
      const char *p = json_string_value(json_object_get(v, "path"));
      if (p)
        scan_text(r, lists[l].where, p);
    }
    count(r, lists[l].key, json_array_size(items));
    json_decref(items);
  }
}

/* The comment the supervisor itself posted (ticket_outputs.c): same id and,
 * still, exactly the text it wrote. Anything else, an edited one included,
 * is read like every other comment. */
static bool is_supervisors_comment(const struct rd *r, json_t *c)
{
  json_t *mine = json_object_get(json_object_get(r->t->rec, "outputs"), "ticket_comment");
  json_t *id = json_object_get(mine, "id");
  const char *text = json_string_value(json_object_get(mine, "body"));
  const char *body = json_string_value(json_object_get(c, "body"));
  return json_is_integer(id) && json_equal(id, json_object_get(c, "id")) && text && body &&
         strcmp(text, body) == 0;
}

static void review_ticket(struct rd *r)
{
  if (tk_vendor(r->t))
    return; /* a Jira or Linear ticket: not the repository's issue of that number */
  json_t *items = NULL;
  al_error e = {0};
  int rc = r->forge->issue_comments(r->api, r->tkt, r->t->repo, r->t->number, 10000, &items, &e);
  items = seam_list(r, "the ticket's comments", rc, items, &e, NULL);
  const char *since = json_string_value(json_object_get(r->t->rec, "started_at"));
  size_t during = 0, i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    const char *at = json_string_value(json_object_get(v, "created_at"));
    if (since && at && strcmp(at, since) < 0)
      continue; /* a human's, from before the run */
    during++;
    if (is_supervisors_comment(r, v))
      continue; /* the supervisor's own "Opened <PR> for review." */
    scan_text(r, "a ticket comment", json_string_value(json_object_get(v, "body")));
  }
  json_object_set_new(r->rv, "ticket_comments", json_integer((json_int_t)json_array_size(items)));
  count(r, "ticket_comments_during_run", during);
  json_decref(items);
}

/* One refusal into its (by, target, reason) group; a new group keeps the
 * order of first sight. */
static void add_blocked(json_t *groups, json_t *order, const char *by, const char *target,
                        const char *reason)
{
  al_autofree char *key = al_strdup_printf("%s\x1f%s\x1f%s", by, target, reason);
  al_autofree char *kclean = al_review_escape(key, 0); /* a valid UTF-8 key */
  json_t *g = json_object_get(groups, kclean);
  if (!g) {
    g = json_pack("{s:s, s:s, s:s, s:I}", "by", by, "target", target, "reason", reason, "count",
                  (json_int_t)0);
    if (!g)
      return;
    json_object_set_new(groups, kclean, g);
    json_array_append(order, g);
  }
  json_object_set_new(g, "count",
                      json_integer(json_integer_value(json_object_get(g, "count")) + 1));
}

/* The refusals the record holds: proxy decisions that denied, gateway
 * decisions that blocked; one entry per (by, target, reason) with a count.
 * A gateway `credential-missing` answer is not a refusal: it is the 401
 * challenge git expects before it sends credentials (gitcredentials(7));
 * those are counted apart, as `challenged`. */
static void review_blocked(struct rd *r)
{
  json_t *groups = json_object();
  json_t *order = json_array();
  size_t i, challenged = 0;
  json_t *d;
  json_array_foreach(json_object_get(r->t->rec, "proxy_decisions"), i, d)
  {
    const char *dec = json_string_value(json_object_get(d, "decision"));
    if (!dec || (strcmp(dec, "deny") && strcmp(dec, "block") && strcmp(dec, "blocked") &&
                 strcmp(dec, "refuse")))
      continue;
    /* the gateway's lines (gateway/conn.c: event "request" or "tls") and
     * the proxy's share the record's decision list */
    const char *ev = sv(json_object_get(d, "event"));
    bool gw = !strcmp(ev, "request") || !strcmp(ev, "tls") || json_object_get(d, "method") != NULL;
    const char *host = json_string_value(json_object_get(d, "host"));
    if (!host)
      host = json_string_value(json_object_get(d, "target"));
    json_int_t port = json_integer_value(json_object_get(d, "port"));
    const char *reason = json_string_value(json_object_get(d, "reason"));
    if (gw && reason && !strcmp(reason, "credential-missing")) {
      challenged++;
      continue;
    }
    bool req = json_string_value(json_object_get(d, "method")) != NULL;
    al_autofree char *target =
        req    ? al_strdup_printf("%s %s%s", sv(json_object_get(d, "method")), host ? host : "",
                                  sv(json_object_get(d, "path")))
        : port ? al_strdup_printf("%s:%lld", host ? host : "?", (long long)port)
               : al_xstrdup(host ? host : "?");
    add_blocked(groups, order, gw ? "gateway" : "proxy", target, reason ? reason : "");
  }
  json_array_foreach(json_object_get(r->t->rec, "gateway_decisions"), i, d)
  {
    const char *dec = json_string_value(json_object_get(d, "decision"));
    if (!dec || !strcmp(dec, "allow"))
      continue;
    const char *reason = sv2(json_object_get(d, "reason"), dec);
    if (!strcmp(reason, "credential-missing")) {
      challenged++;
      continue;
    }
    al_autofree char *target =
        al_strdup_printf("%s %s", sv(json_object_get(d, "method")), sv(json_object_get(d, "path")));
    add_blocked(groups, order, "gateway", target, reason);
  }
  if (json_is_true(json_object_get(r->t->rec, "proxy_decisions_truncated")))
    not_read(r, "the proxy's decisions are incomplete (cut at their cap or lost): refusals "
                "past that point are not counted");
  json_object_set_new(r->rv, "blocked", order);
  json_object_set_new(r->rv, "challenged", json_integer((json_int_t)challenged));
  json_decref(groups);
}

void tk_do_review(struct ticket *t)
{
  uint64_t s = tk_phase_begin(t, "review");
  json_t *rv = json_object();
  json_object_set_new(t->rec, "review", rv);
  struct rd r = {.t = t, .forge = al_forge_ops_of(t->policy->forge.kind), .rv = rv};
  r.nr = json_array();
  r.secrets = json_array();
  r.links = json_array();
  r.kinds = json_array();
  r.outside = json_array();
  r.read = json_object();
  r.keywords = json_array();
  json_object_set_new(rv, "closing_keywords", r.keywords);
  json_object_set_new(rv, "runs_outside_sandbox", r.outside);
  json_object_set_new(rv, "kinds", r.kinds);
  json_object_set_new(rv, "secrets", r.secrets);
  json_object_set_new(rv, "links", r.links);
  json_object_set_new(rv, "read", r.read);
  json_object_set_new(rv, "could_not_read", r.nr);
  review_blocked(&r);
  al_error e = {0};
  char **resolves = NULL;
  json_t *pr = NULL;
  const char *status = "ok";
  al_lease_request rq = {.git_repo = t->repo,
                         .ticket_repo = t->repo,
                         .git_permissions = "contents:read,pull_requests:write",
                         .ticket_permissions = "issues:read",
                         .ttl_ms = REVIEW_LEASE_MS};
  if (!r.forge->pr_for_review || !r.forge->pr_files || !r.forge->tree || !r.forge->blob ||
      !r.forge->pr_commits || !r.forge->pr_texts || !r.forge->pr_comment) {
    /* a driver that cannot read a pull request back (forge/forge.h): the
     * notes say so, never "0 files" */
    al_make_error(&e, ENOTSUP,
                  "no review notes for this run: the %s driver does not read a pull request "
                  "back for them yet (forge/forge.h pr_for_review .. pr_comment)",
                  r.forge->kind);
    goto fail;
  }
  if (al_lease_open(t->policy->credentials.broker, &rq, &t->review_lease, &e) < 0) {
    /* a broker whose git role cannot write pull requests can still let us
     * read: review, and say the notes cannot be posted */
    al_error e2 = {0};
    rq.git_permissions = "contents:read,pull_requests:read";
    if (al_lease_open(t->policy->credentials.broker, &rq, &t->review_lease, &e2) < 0)
      goto fail;
    not_read(&r, "the notes cannot be posted on the pull request: %s", e.msg);
    t->review_read_only = true;
  }
  {
    al_ghapi_counts bq;
    al_lease_requests(t->review_lease, &bq);
    tk_phase_add_broker(t, &bq);
  }
  al_ghapi_opts go = {.ca_file = t->policy->forge.ca_file,
                      .timeout_ms = 20000,
                      .body_max = 16u << 20,
                      .wipe_bodies = true};
  if (al_ghapi_open(t->policy->forge.api_url, &go, &t->review_api, &e) < 0)
    goto fail;
  r.api = t->review_api;
  /* every read and the notes' post inside the review lease's life: a 429
   * without Retry-After (GitHub: wait a minute, then longer) fails fast
   * instead of outliving the tokens (issue #27 item 5) */
  al_ghapi_set_deadline(r.api, tk_deadline_in_lease(t->review_lease, REVIEW_LEASE_MS));
  resolves = tk_pin_resolves(t->policy);
  al_ghapi_set_resolve(r.api, (const char *const *)resolves);
  if (strcmp(r.forge->kind, "github") == 0)
    r.base_api =
        tk_conditional_client(t, &go, tk_deadline_in_lease(t->review_lease, REVIEW_LEASE_MS),
                              (const char *const *)resolves, &r.etags);
  r.git = al_lease_token(t->review_lease, AL_ROLE_GIT);
  r.tkt = al_lease_token(t->review_lease, AL_ROLE_TICKET);
  /* the driver takes only a PR whose head really is the run's branch,
   * whatever the server did with its filter */
  al_error pe = {0};
  int prc = r.forge->pr_for_review(r.api, r.git, t->repo, t->branch, &pr, &pe);
  if (prc < 0)
    not_read(&r, "could not read the pull requests from the run's branch: %s", pe.msg);
  size_t i;
  json_t *v;
  if (!pr) {
    json_object_set_new(rv, "pull_request", json_null());
    if (prc < 0) {
      al_make_error(&e, 0, "could not read the pull requests from the run's branch");
      goto fail;
    }
  } else {
    json_int_t num = json_integer_value(json_object_get(pr, "number"));
    t->review_pr = num;
    json_object_set_new(rv, "pull_request",
                        json_pack("{s:I, s:O, s:O, s:O*, s:O*}", "number", num, "url",
                                  json_object_get(pr, "url"), "base", json_object_get(pr, "base"),
                                  "head_sha", json_object_get(pr, "head_sha"), "base_sha",
                                  json_object_get(pr, "base_sha")));
    scan_text(&r, "the pull request title", json_string_value(json_object_get(pr, "title")));
    scan_text(&r, "the pull request body", json_string_value(json_object_get(pr, "body")));
    if (!review_files(&r, num, pr))
      status = "failed";
    review_conversation(&r, num);
  }
  review_ticket(&r);
  size_t nrun = 0;
  json_array_foreach(r.secrets, i, v) nrun += json_object_get(v, "token") != NULL;
  if (strcmp(status, "failed") &&
      (json_array_size(r.secrets) || json_array_size(r.outside) || json_array_size(r.kinds) ||
       json_array_size(r.links) || json_array_size(r.nr)))
    status = "warn";
  size_t nblocked = 0;
  json_array_foreach(json_object_get(rv, "blocked"), i, v) nblocked +=
      (size_t)json_integer_value(json_object_get(v, "count"));
  tk_phase_end(t, s, status,
               "%s%zu file(s) run outside the sandbox later, %zu file kind note(s), %zu "
               "secret(s) (%zu of this run's tokens), %zu link(s), %zu refused request(s)%s%s",
               pr ? "" : "no pull request from the run's branch; ",
               al_review_outside_files(r.outside), json_array_size(r.kinds),
               json_array_size(r.secrets), nrun, json_array_size(r.links), nblocked,
               json_array_size(r.nr) ? "; COULD NOT READ " : "",
               json_array_size(r.nr) ? "everything (see below)" : "");
  if (!t->o->quiet)
    al_review_print_summary(
        rv, stderr, "airlock ticket:   ", t->unprotected ? " " AL_TICKET_UNPROTECTED_MARK : "", 50);
  json_decref(pr);
  tk_free_strv(resolves);
  tk_conditional_close(r.base_api, r.etags);
  return;
fail:
  json_object_set_new(rv, "error", json_string(e.msg));
  json_decref(pr);
  tk_free_strv(resolves);
  tk_conditional_close(r.base_api, r.etags);
  tk_phase_end(t, s, "failed", "%s", e.msg);
  if (!t->o->quiet)
    al_review_print_summary(
        rv, stderr, "airlock ticket:   ", t->unprotected ? " " AL_TICKET_UNPROTECTED_MARK : "", 50);
}

void tk_post_review_notes(struct ticket *t)
{
  if (!t->review_api || !t->review_lease || !t->review_pr || t->review_read_only)
    return; /* no PR, no review, or a lease that cannot write (in could_not_read) */
  uint64_t t0 = al_now_ms();
  al_autofree char *md =
      al_review_notes_markdown(t->rec, t->record_sha256[0] ? t->record_sha256 : NULL);
  json_t *posted = NULL;
  al_error e = {0};
  const char *url = NULL;
  if (al_forge_ops_of(t->policy->forge.kind)
          ->pr_comment(t->review_api, al_lease_token(t->review_lease, AL_ROLE_GIT), t->repo,
                       (long long)t->review_pr, md, &posted, &e) == 0)
    url = json_string_value(json_object_get(posted, "url"));
  const char *d = url ? "" : e.msg[0] ? e.msg : "the forge gave no URL for the comment";
  if (!t->o->quiet) {
    al_autofree char *clean = url ? al_review_escape(url, 300) : al_review_escape(d, 500);
    fprintf(stderr, "airlock ticket: %-9s %-7s %5llu ms  %s%s%s\n", "notes", url ? "ok" : "failed",
            (unsigned long long)(al_now_ms() - t0),
            url ? "review notes posted on the pull request: "
                : "could not post the review notes "
                  "on the pull request (they are in "
                  "the run record): ",
            clean, t->unprotected ? " " AL_TICKET_UNPROTECTED_MARK : "");
  }
  json_decref(posted);
}

void tk_review_close(struct ticket *t)
{
  if (t->review_api)
    al_ghapi_free(t->review_api);
  t->review_api = NULL;
  if (t->review_lease)
    al_lease_release(t->review_lease, false, NULL, NULL);
  t->review_lease = NULL;
}
