/* The forge gateway's GitLab rule table and its matcher. See rules_gitlab.h. */
#include "gateway/rules_gitlab.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "forge/names.h"
#include "gateway/wire.h"

#define API AL_GW_SIDE_API
#define GIT AL_GW_SIDE_GIT

/* Default deny: what is not here is refused. Docs pages: gitprotocol-http(5)
 * for git, docs.gitlab.com/api for REST v4 (Projects, Issues, Notes,
 * Repository files, Repositories, Branches, Merge requests); each route's
 * parameter names are among the ones its page lists. The MR list is the
 * one read of merge requests: the run's own (source_branch=<run branch>). */
static const al_gw_rule table[] = {
    {"git-info-refs", GIT, "GET", "/{project.git}/info/refs", AL_GW_QUERY_SERVICE, "service",
     AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "ref advertisement before a fetch or a push (gitprotocol-http(5), Smart Clients)"},
    {"git-upload-pack", GIT, "POST", "/{project.git}/git-upload-pack", AL_GW_QUERY_NONE, NULL,
     AL_GW_TOKEN_GIT, AL_GW_BODY_PASS, false,
     "clone and fetch, protocol v0/v1/v2 (gitprotocol-http(5), gitprotocol-v2(5))"},
    {"git-receive-pack", GIT, "POST", "/{project.git}/git-receive-pack", AL_GW_QUERY_NONE, NULL,
     AL_GW_TOKEN_GIT, AL_GW_BODY_RECEIVE_PACK, false,
     "push, only when every command creates or updates refs/heads/<run branch> "
     "(gitprotocol-pack(5), Reference Update Request)"},
    {"gl-project", API, "GET", "/projects/{project}", AL_GW_QUERY_LISTED, "license statistics",
     AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false, "REST Projects: Get a single project"},
    {"gl-issue", API, "GET", "/projects/{project}/issues/{ticket}", AL_GW_QUERY_NONE, NULL,
     AL_GW_TOKEN_TICKET, AL_GW_BODY_NONE, false, "REST Issues: Single project issue (the ticket)"},
    {"gl-issue-notes", API, "GET", "/projects/{project}/issues/{ticket}/notes", AL_GW_QUERY_LISTED,
     "sort order_by per_page page", AL_GW_TOKEN_TICKET, AL_GW_BODY_NONE, false,
     "REST Notes: List project issue notes (the ticket only)"},
    {"gl-issue-note-create", API, "POST", "/projects/{project}/issues/{ticket}/notes",
     AL_GW_QUERY_NONE, NULL, AL_GW_TOKEN_TICKET, AL_GW_BODY_COMMENT, true,
     "REST Notes: Create new issue note, on the ticket, at most max_comments times"},
    {"gl-file", API, "GET", "/projects/{project}/repository/files/{file}", AL_GW_QUERY_LISTED,
     "ref", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Repository files: Get file from repository"},
    {"gl-file-raw", API, "GET", "/projects/{project}/repository/files/{file}/raw",
     AL_GW_QUERY_LISTED, "ref lfs", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Repository files: Get raw file from repository"},
    {"gl-tree", API, "GET", "/projects/{project}/repository/tree", AL_GW_QUERY_LISTED,
     "path ref recursive per_page page pagination page_token", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE,
     false, "REST Repositories: List repository tree"},
    {"gl-branches", API, "GET", "/projects/{project}/repository/branches", AL_GW_QUERY_LISTED,
     "search regex per_page page", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Branches: List repository branches"},
    {"gl-branch", API, "GET", "/projects/{project}/repository/branches/{branch}", AL_GW_QUERY_NONE,
     NULL, AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false, "REST Branches: Get single repository branch"},
    {"gl-run-mrs", API, "GET", "/projects/{project}/merge_requests", AL_GW_QUERY_MR_SOURCE,
     "source_branch state target_branch per_page page", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Merge requests: List project merge requests, only source_branch=<run branch>"},
};

const al_gw_rule *al_gw_gl_rule_table(size_t *n)
{
  *n = sizeof table / sizeof table[0];
  return table;
}

/* ---- the project ---- */

/* The pieces of a GitLab full path (forge/names.h, the one rule), or 0
 * when it is not one. */
static size_t project_pieces(const char *p)
{
  size_t segs;
  const char *why;
  return al_gitlab_path_check(p, &segs, &why) == 0 ? segs : 0;
}

int al_gw_gl_rules_init(al_gw_gl_rules *r, const char *project, unsigned long project_id,
                        unsigned long issue_iid, const char *branch, unsigned max_comments,
                        const char *api_prefix, const char *git_prefix, al_error *err)
{
  memset(r, 0, sizeof *r);
  size_t segs = project ? project_pieces(project) : 0;
  if (!segs)
    return al_error_set(err, EINVAL,
                        "gateway: GitLab project `%s` is not a full path GROUP[/SUB...]/PROJECT",
                        project ? project : "(null)");
  if (project_id == 0)
    return al_error_set(err, EINVAL, "gateway: GitLab project id must be >= 1");
  /* the generic half: OWNER/REPO is the project's last two pieces */
  const char *last = strrchr(project, '/');
  const char *owner = last - 1;
  while (owner > project && owner[-1] != '/')
    owner--;
  char repo[256];
  snprintf(repo, sizeof repo, "%s", owner);
  if (al_gw_rules_init(&r->base, repo, issue_iid, branch, max_comments, api_prefix, git_prefix,
                       err) < 0)
    return -1;
  snprintf(r->project, sizeof r->project, "%s", project);
  snprintf(r->project_id, sizeof r->project_id, "%lu", project_id);
  r->project_segs = segs;
  return 0;
}

/* ---- the path, segment by segment ---- */

#define MAX_SEGS 64

typedef struct seg {
  const char *raw; /* into the path */
  size_t raw_len;
  char dec[AL_GW_PATH_MAX]; /* decoded, NUL-terminated */
  size_t dec_len;
  bool escaped_sep; /* held %2F, %2E or %5C */
} seg;

typedef struct segs {
  size_t n;
  seg s[MAX_SEGS];
} segs;

/* Split and decode: each segment's escapes decoded once (printable ASCII
 * only, never %00 or a control byte); a raw '\', '#', an empty or a dot
 * segment refused. */
static int split(const char *p, size_t n, segs *out, const char **why)
{
  out->n = 0;
  if (n == 0 || p[0] != '/') {
    *why = "target-not-origin-form";
    return -1;
  }
  if (n >= AL_GW_PATH_MAX) {
    *why = "target-too-long";
    return -1;
  }
  if (n == 1)
    return 0;
  size_t i = 1;
  while (i <= n) {
    size_t e = i;
    while (e < n && p[e] != '/')
      e++;
    if (out->n == MAX_SEGS) {
      *why = "target-too-long";
      return -1;
    }
    seg *s = &out->s[out->n++];
    s->raw = p + i;
    s->raw_len = e - i;
    s->dec_len = 0;
    s->escaped_sep = false;
    if (e == i) {
      *why = "path-empty-segment";
      return -1;
    }
    for (size_t k = i; k < e; k++) {
      unsigned char c = (unsigned char)p[k];
      if (c == '\\') {
        *why = "path-backslash";
        return -1;
      }
      if (c == '#' || c == '?' || c <= 0x20 || c >= 0x7f) {
        *why = "target-not-origin-form";
        return -1;
      }
      if (c == '%') {
        int hi = k + 2 < e ? al_gw_hexval((unsigned char)p[k + 1]) : -1;
        int lo = k + 2 < e ? al_gw_hexval((unsigned char)p[k + 2]) : -1;
        if (hi < 0 || lo < 0) {
          *why = "path-bad-escape";
          return -1;
        }
        c = (unsigned char)(hi * 16 + lo);
        if (c < 0x20 || c > 0x7e) {
          *why = "path-bad-escape";
          return -1;
        }
        if (c == '/' || c == '.' || c == '\\')
          s->escaped_sep = true;
        k += 2;
      }
      s->dec[s->dec_len++] = (char)c;
    }
    s->dec[s->dec_len] = '\0';
    if ((s->raw_len == 1 && s->raw[0] == '.') ||
        (s->raw_len == 2 && s->raw[0] == '.' && s->raw[1] == '.')) {
      *why = "path-dot-segment";
      return -1;
    }
    i = e + 1;
  }
  return 0;
}

/* A relative file path: pieces not empty, ".", ".." and no '\'. */
static bool file_ok(const char *s, size_t n)
{
  if (n == 0 || s[0] == '/' || s[n - 1] == '/')
    return false;
  for (size_t a = 0; a < n;) {
    size_t b = a;
    while (b < n && s[b] != '/') {
      if (s[b] == '\\')
        return false;
      b++;
    }
    size_t l = b - a;
    if (l == 0 || (l == 1 && s[a] == '.') || (l == 2 && s[a] == '.' && s[a + 1] == '.'))
      return false;
    a = b + 1;
  }
  return true;
}

enum { LOOSE_PROJECT = 1, LOOSE_TICKET = 2, LOOSE_METHOD = 4 };

/* What a failed match found wrong first, for the reason. */
typedef struct mstate {
  const char *bad; /* "bad-file-path", "bad-branch-name", "path-encoded-separator" or NULL */
} mstate;

static bool digits(const char *s, size_t n)
{
  if (n == 0 || n >= 20)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

static bool plain(const seg *s)
{
  return s->raw_len == s->dec_len && memcmp(s->raw, s->dec, s->dec_len) == 0;
}

/* Match segments ps[from..] against template t. */
static bool tmpl_match(const al_gw_gl_rules *r, const char *t, const segs *ps, size_t from,
                       unsigned loose, mstate *ms)
{
  size_t k = from;
  while (*t) {
    if (*t != '/')
      return false;
    t++;
    const char *te = strchr(t, '/');
    size_t tl = te ? (size_t)(te - t) : strlen(t);
    if (tl == 13 && memcmp(t, "{project.git}", 13) == 0) {
      /* the full path as plain segments, the last with or without .git */
      size_t need = loose & LOOSE_PROJECT ? 0 : r->project_segs;
      if (loose & LOOSE_PROJECT) {
        /* any 2+ plain segments before the template's next literal */
        const char *next = t + tl;
        size_t rest = 0;
        for (const char *q = next; *q; q++)
          rest += *q == '/';
        if (ps->n < k + 2 + rest)
          return false;
        need = ps->n - k - rest;
      }
      if (k + need > ps->n)
        return false;
      char joined[AL_GW_PATH_MAX];
      size_t jl = 0;
      for (size_t q = 0; q < need; q++) {
        const seg *s = &ps->s[k + q];
        if (!plain(s) || jl + s->raw_len + 2 >= sizeof joined)
          return false;
        if (q)
          joined[jl++] = '/';
        memcpy(joined + jl, s->raw, s->raw_len);
        jl += s->raw_len;
      }
      joined[jl] = '\0';
      size_t pl = strlen(r->project);
      bool same = (jl == pl || (jl == pl + 4 && strncasecmp(joined + pl, ".git", 4) == 0)) &&
                  strncasecmp(joined, r->project, pl) == 0;
      if (!(loose & LOOSE_PROJECT) && !same)
        return false;
      k += need;
      t += tl;
      continue;
    }
    if (k >= ps->n)
      return false;
    const seg *s = &ps->s[k];
    if (tl == 9 && memcmp(t, "{project}", 9) == 0) {
      bool same = (plain(s) && strlen(r->project_id) == s->raw_len &&
                   memcmp(s->raw, r->project_id, s->raw_len) == 0) ||
                  (strlen(r->project) == s->dec_len && strcasecmp(s->dec, r->project) == 0);
      bool shaped = (plain(s) && digits(s->raw, s->raw_len)) || project_pieces(s->dec) > 0;
      if ((loose & LOOSE_PROJECT) ? !shaped : !same)
        return false;
    } else if (tl == 8 && memcmp(t, "{ticket}", 8) == 0) {
      if (!plain(s) || !digits(s->raw, s->raw_len) ||
          (!(loose & LOOSE_TICKET) && strcmp(s->dec, r->base.ticket) != 0))
        return false;
    } else if (tl == 6 && memcmp(t, "{file}", 6) == 0) {
      if (!file_ok(s->dec, s->dec_len)) {
        ms->bad = "bad-file-path";
        return false;
      }
    } else if (tl == 8 && memcmp(t, "{branch}", 8) == 0) {
      char ref[AL_GW_PATH_MAX + 16];
      int rl = snprintf(ref, sizeof ref, "refs/heads/%s", s->dec);
      if (rl <= 0 || (size_t)rl >= sizeof ref || !al_refname_ok(ref, (size_t)rl)) {
        ms->bad = "bad-branch-name";
        return false;
      }
    } else if (tl == 5 && memcmp(t, "{seg}", 5) == 0) {
      if (s->escaped_sep) {
        ms->bad = "path-encoded-separator";
        return false;
      }
    } else {
      /* an encoded separator here is no literal: said by the caller's
       * scan of the whole path (a git route's literal would otherwise
       * name the API's encoded project path a bad separator) */
      if (!plain(s) || tl != s->raw_len || memcmp(t, s->raw, tl) != 0)
        return false;
    }
    k++;
    t += tl;
  }
  return k == ps->n;
}

/* The index of the first segment after prefix, or -1 when the path does
 * not start with it (prefix "" or "/a/b", plain segments). */
static long after_prefix(const segs *ps, const char *prefix)
{
  size_t k = 0;
  for (const char *p = prefix; *p;) {
    p++;
    const char *e = strchr(p, '/');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (k >= ps->n || !plain(&ps->s[k]) || ps->s[k].raw_len != l || memcmp(ps->s[k].raw, p, l) != 0)
      return -1;
    k++;
    p += l;
  }
  return (long)k;
}

static const al_gw_rule *find(const al_gw_gl_rules *r, unsigned sides, const char *method,
                              size_t ml, const segs *ps, unsigned loose, mstate *ms)
{
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const al_gw_rule *rule = &table[i];
    if (!(rule->sides & sides))
      continue;
    if (rule->needs_comments && r->base.max_comments == 0)
      continue;
    if (!(loose & LOOSE_METHOD) &&
        !(strlen(rule->method) == ml && memcmp(rule->method, method, ml) == 0))
      continue;
    long from =
        after_prefix(ps, rule->sides & AL_GW_SIDE_API ? r->base.api_prefix : r->base.git_prefix);
    if (from >= 0 && tmpl_match(r, rule->path, ps, (size_t)from, loose, ms))
      return rule;
  }
  return NULL;
}

static bool query_ok(const al_gw_gl_rules *r, const al_gw_rule *rule, const al_gw_qparams *qp,
                     const char **reason, const char **param)
{
  if (!al_gw_query_names_ok(rule, qp, reason, param))
    return false;
  if (rule->query == AL_GW_QUERY_MR_SOURCE) {
    int k = al_gw_query_find(qp, "source_branch");
    const char *v = k >= 0 && qp ? qp->p[k].value : NULL;
    if (!v || strcmp(v, r->base.branch) != 0) {
      *reason = "mr-not-run-branch";
      *param = "source_branch";
      return false;
    }
  }
  return true;
}

const al_gw_rule *al_gw_gl_match(const al_gw_gl_rules *r, unsigned sides, const char *method,
                                 size_t method_len, const char *path, size_t path_len,
                                 const al_gw_qparams *qp, const char **reason, const char **param)
{
  *param = NULL;
  static __thread segs ps; /* ~130 KiB: not on a connection thread's stack */
  if (split(path, path_len, &ps, reason) < 0)
    return NULL;
  mstate ms = {0};
  const al_gw_rule *rule = find(r, sides, method, method_len, &ps, 0, &ms);
  if (rule) {
    if (!query_ok(r, rule, qp, reason, param))
      return NULL;
    *reason = rule->name;
    return rule;
  }
  /* GitLab's GraphQL endpoint is /api/graphql (GitLab docs "GraphQL API") */
  if ((sides & AL_GW_SIDE_API) && ps.n == 2 && plain(&ps.s[0]) && plain(&ps.s[1]) &&
      strcmp(ps.s[0].dec, "api") == 0 && strcmp(ps.s[1].dec, "graphql") == 0) {
    *reason = "graphql-refused";
    return NULL;
  }
  mstate lm = {0};
  if (ms.bad) {
    *reason = ms.bad;
  } else if (find(r, sides, method, method_len, &ps, LOOSE_PROJECT | LOOSE_METHOD | LOOSE_TICKET,
                  &lm) &&
             !find(r, sides, method, method_len, &ps, LOOSE_METHOD | LOOSE_TICKET, &lm)) {
    *reason = "other-project";
  } else if (find(r, sides, method, method_len, &ps, LOOSE_TICKET | LOOSE_METHOD, &lm) &&
             !find(r, sides, method, method_len, &ps, LOOSE_METHOD, &lm)) {
    *reason = "other-ticket";
  } else if (find(r, sides, method, method_len, &ps, LOOSE_METHOD, &lm)) {
    *reason = "write-refused";
  } else {
    /* the project's encoded full path where GitLab reads one
     * (/projects/group%2Fproj/...) is not a separator, whatever follows:
     * a write on a route not here is write-refused, not a bad path */
    long from = (sides & AL_GW_SIDE_API) ? after_prefix(&ps, r->base.api_prefix) : -1;
    size_t proj = from >= 0 && (size_t)from + 1 < ps.n && plain(&ps.s[from]) &&
                          strcmp(ps.s[from].dec, "projects") == 0 &&
                          project_pieces(ps.s[from + 1].dec) > 0
                      ? (size_t)from + 1
                      : SIZE_MAX;
    bool sep = false;
    for (size_t i = 0; i < ps.n; i++)
      sep = sep || (ps.s[i].escaped_sep && i != proj);
    /* an encoded '/' no route reads as one: refused as such, never guessed */
    if (lm.bad)
      *reason = lm.bad;
    else if (sep)
      *reason = "path-encoded-separator";
    else if (!(method_len == 3 && memcmp(method, "GET", 3) == 0))
      *reason = "write-refused";
    else
      *reason = "no-rule";
  }
  return NULL;
}

/* ---- credentials ---- */

static bool ph_eq(const char *s, size_t n, const char *ph)
{
  size_t pl = strlen(ph);
  return n == pl && pl > 0 && CRYPTO_memcmp(s, ph, pl) == 0;
}

/* "Basic base64(user:PH)": the password is the placeholder, any user. */
static bool basic_is_ph(const char *b64, size_t n, const char *ph)
{
  unsigned char dec[400];
  if (n == 0 || n % 4 != 0 || n > 512)
    return false;
  int dl = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)n);
  if (dl < 0)
    return false;
  if (b64[n - 1] == '=')
    dl--;
  if (n >= 2 && b64[n - 2] == '=')
    dl--;
  const char *s = (const char *)dec;
  const char *colon = memchr(s, ':', (size_t)dl);
  bool ok = false;
  if (colon) {
    size_t ul = (size_t)(colon - s);
    ok = ph_eq(colon + 1, (size_t)dl - ul - 1, ph);
  }
  OPENSSL_cleanse(dec, sizeof dec);
  return ok;
}

bool al_gw_gl_header_is_credential(const al_http_header *h)
{
  return al_http_header_is(h, "private-token") || al_http_header_is(h, "job-token") ||
         al_http_header_is(h, "authorization");
}

static bool query_name_is_gl_credential(const char *name)
{
  return strcmp(name, "private_token") == 0 || strcmp(name, "job_token") == 0 ||
         strcmp(name, "access_token") == 0 || al_gw_query_name_is_credential(name);
}

al_gw_cred al_gw_gl_credential(const al_http_request *req, const al_gw_qparams *qp,
                               const char *placeholder, const char **why)
{
  const al_http_header *cred = NULL;
  *why = "foreign-credential";
  for (size_t i = 0; i < req->n_headers; i++) {
    const al_http_header *h = &req->headers[i];
    if (al_http_header_is(h, "cookie") || al_http_header_is(h, "proxy-authorization"))
      return AL_GW_CRED_FOREIGN;
    if (al_gw_gl_header_is_credential(h)) {
      if (cred)
        return AL_GW_CRED_FOREIGN; /* two credentials: which would GitLab read? */
      cred = h;
    }
  }
  for (size_t i = 0; qp && i < qp->n; i++)
    if (query_name_is_gl_credential(qp->p[i].name))
      return AL_GW_CRED_FOREIGN;
  if (qp && qp->why && query_name_is_gl_credential(qp->bad))
    return AL_GW_CRED_FOREIGN;
  *why = NULL;
  if (!cred)
    return AL_GW_CRED_NONE;
  *why = "foreign-credential";
  const char *s = cred->value;
  size_t n = cred->value_len;
  if (!al_http_header_is(cred, "authorization"))
    return ph_eq(s, n, placeholder) ? AL_GW_CRED_PLACEHOLDER : AL_GW_CRED_FOREIGN;
  const char *sp = memchr(s, ' ', n);
  if (!sp)
    return AL_GW_CRED_FOREIGN;
  size_t schl = (size_t)(sp - s);
  const char *v = sp + 1;
  size_t vl = n - schl - 1;
  while (vl && *v == ' ') {
    v++;
    vl--;
  }
  bool ok = (schl == 6 && strncasecmp(s, "bearer", 6) == 0 && ph_eq(v, vl, placeholder)) ||
            (schl == 5 && strncasecmp(s, "basic", 5) == 0 && basic_is_ph(v, vl, placeholder));
  if (ok)
    *why = NULL;
  return ok ? AL_GW_CRED_PLACEHOLDER : AL_GW_CRED_FOREIGN;
}
