/* The forge gateway's rule table and its matcher. See rules.h. */
#include "gateway/rules.h"

#include "gateway/apipath.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define API AL_GW_SIDE_API
#define GIT AL_GW_SIDE_GIT

/* Default deny: what is not here is refused. Docs pages: gitprotocol-http(5)
 * for git, docs.github.com/rest for the API; each route's parameter names
 * are the query parameters its REST page lists (a route may need fewer,
 * never more), and a parameter not listed is refused by name. */
static const al_gw_rule table[] = {
    {"git-info-refs", GIT, "GET", "/{owner}/{repo.git}/info/refs", AL_GW_QUERY_SERVICE, "service",
     AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "ref advertisement before a fetch or a push (gitprotocol-http(5), Smart Clients)"},
    {"git-upload-pack", GIT, "POST", "/{owner}/{repo.git}/git-upload-pack", AL_GW_QUERY_NONE, NULL,
     AL_GW_TOKEN_GIT, AL_GW_BODY_PASS, false,
     "clone and fetch, protocol v0/v1/v2 (gitprotocol-http(5), gitprotocol-v2(5))"},
    {"git-receive-pack", GIT, "POST", "/{owner}/{repo.git}/git-receive-pack", AL_GW_QUERY_NONE,
     NULL, AL_GW_TOKEN_GIT, AL_GW_BODY_RECEIVE_PACK, false,
     "push, only when every command creates or updates refs/heads/<run branch> "
     "(gitprotocol-pack(5), Reference Update Request)"},
    {"api-repo", API, "GET", "/repos/{owner}/{repo}", AL_GW_QUERY_NONE, NULL, AL_GW_TOKEN_GIT,
     AL_GW_BODY_NONE, false, "REST Repos: Get a repository"},
    {"api-issue", API, "GET", "/repos/{owner}/{repo}/issues/{ticket}", AL_GW_QUERY_NONE, NULL,
     AL_GW_TOKEN_TICKET, AL_GW_BODY_NONE, false, "REST Issues: Get an issue (the ticket only)"},
    {"api-issue-comments", API, "GET", "/repos/{owner}/{repo}/issues/{ticket}/comments",
     AL_GW_QUERY_LISTED, "since per_page page", AL_GW_TOKEN_TICKET, AL_GW_BODY_NONE, false,
     "REST Issues: List issue comments (the ticket only)"},
    {"api-issue-comment-create", API, "POST", "/repos/{owner}/{repo}/issues/{ticket}/comments",
     AL_GW_QUERY_NONE, NULL, AL_GW_TOKEN_TICKET, AL_GW_BODY_COMMENT, true,
     "REST Issues: Create an issue comment, on the ticket, at most max_comments times"},
    {"api-contents-root", API, "GET", "/repos/{owner}/{repo}/contents", AL_GW_QUERY_LISTED, "ref",
     AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false, "REST Repos: Get repository content (root)"},
    {"api-contents", API, "GET", "/repos/{owner}/{repo}/contents/{rest}", AL_GW_QUERY_LISTED, "ref",
     AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false, "REST Repos: Get repository content"},
    {"api-commits", API, "GET", "/repos/{owner}/{repo}/commits", AL_GW_QUERY_LISTED,
     "sha path author committer since until per_page page", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Commits: List commits"},
    {"api-commit", API, "GET", "/repos/{owner}/{repo}/commits/{seg}", AL_GW_QUERY_LISTED,
     "per_page page", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false, "REST Commits: Get a commit"},
    {"api-branches", API, "GET", "/repos/{owner}/{repo}/branches", AL_GW_QUERY_LISTED,
     "protected per_page page", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Branches: List branches"},
    {"api-branch", API, "GET", "/repos/{owner}/{repo}/branches/{rest}", AL_GW_QUERY_NONE, NULL,
     AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Branches: Get a branch (any branch, the run branch included)"},
    {"api-run-pulls", API, "GET", "/repos/{owner}/{repo}/pulls", AL_GW_QUERY_PULLS_HEAD,
     "head state base sort direction per_page page", AL_GW_TOKEN_GIT, AL_GW_BODY_NONE, false,
     "REST Pulls: List pull requests, only head=OWNER:<run branch> (the run's own PR)"},
};

const al_gw_rule *al_gw_rule_table(size_t *n)
{
  *n = sizeof table / sizeof table[0];
  return table;
}

static bool name_ok(const char *s, size_t n)
{
  if (n == 0 || n >= 128 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

static bool prefix_ok(const char *p)
{
  size_t n = strlen(p);
  if (n == 0)
    return true;
  char path[AL_GW_PATH_MAX];
  const char *q, *why;
  size_t ql;
  return n < 128 && p[0] == '/' && p[n - 1] != '/' &&
         al_gw_target_parse(p, n, path, &q, &ql, &why) == 0 && !q;
}

int al_gw_rules_init(al_gw_rules *r, const char *repo, unsigned long ticket, const char *branch,
                     unsigned max_comments, const char *api_prefix, const char *git_prefix,
                     al_error *err)
{
  memset(r, 0, sizeof *r);
  const char *slash = repo ? strchr(repo, '/') : NULL;
  if (!slash || !name_ok(repo, (size_t)(slash - repo)) || !name_ok(slash + 1, strlen(slash + 1)))
    return al_error_set(err, EINVAL, "gateway: repository `%s` is not OWNER/REPO",
                        repo ? repo : "(null)");
  memcpy(r->owner, repo, (size_t)(slash - repo));
  snprintf(r->name, sizeof r->name, "%s", slash + 1);
  /* 0: the ticket is not an issue of this forge (Jira, Linear): r->ticket
   * stays "", which no {ticket} segment and no GraphQL number equals */
  if (ticket)
    snprintf(r->ticket, sizeof r->ticket, "%lu", ticket);
  size_t bl = branch ? strlen(branch) : 0;
  if (bl == 0 || bl >= sizeof r->branch ||
      snprintf(r->branch_ref, sizeof r->branch_ref, "refs/heads/%s", branch) >=
          (int)sizeof r->branch_ref ||
      !al_refname_ok(r->branch_ref, strlen(r->branch_ref)))
    return al_error_set(err, EINVAL, "gateway: run branch `%s` is not a valid branch name",
                        branch ? branch : "(null)");
  snprintf(r->branch, sizeof r->branch, "%s", branch);
  if (!prefix_ok(api_prefix ? api_prefix : "") || !prefix_ok(git_prefix ? git_prefix : ""))
    return al_error_set(err, EINVAL, "gateway: URL prefix `%s` is not canonical",
                        !prefix_ok(api_prefix ? api_prefix : "") ? api_prefix : git_prefix);
  snprintf(r->api_prefix, sizeof r->api_prefix, "%s", api_prefix ? api_prefix : "");
  snprintf(r->git_prefix, sizeof r->git_prefix, "%s", git_prefix ? git_prefix : "");
  r->max_comments = max_comments;
  return 0;
}

/* ---- the matcher ---- */

enum { LOOSE_REPO = 1, LOOSE_TICKET = 2, LOOSE_METHOD = 4 };

static bool seg_ieq(const char *s, size_t n, const char *v)
{
  return strlen(v) == n && strncasecmp(s, v, n) == 0;
}

/* Match path (starting at '/') against template t. */
static bool tmpl_match(const al_gw_rules *r, const char *t, const char *path, unsigned loose)
{
  const char *p = path;

  while (*t) {
    if (*t != '/' || *p != '/')
      return false;
    t++;
    p++;
    const char *te = strchr(t, '/');
    size_t tl = te ? (size_t)(te - t) : strlen(t);
    const char *pe = strchr(p, '/');
    size_t pl = pe ? (size_t)(pe - p) : strlen(p);
    if (pl == 0)
      return false;
    if (tl == 6 && memcmp(t, "{rest}", 6) == 0)
      return true; /* one or more segments, all canonical already */
    if (tl == 7 && memcmp(t, "{owner}", 7) == 0) {
      if (!(loose & LOOSE_REPO) && !seg_ieq(p, pl, r->owner))
        return false;
      if ((loose & LOOSE_REPO) && !name_ok(p, pl))
        return false;
    } else if (tl == 6 && memcmp(t, "{repo}", 6) == 0) {
      if (!(loose & LOOSE_REPO) && !seg_ieq(p, pl, r->name))
        return false;
      if ((loose & LOOSE_REPO) && !name_ok(p, pl))
        return false;
    } else if (tl == 10 && memcmp(t, "{repo.git}", 10) == 0) {
      size_t nl = pl >= 4 && strncasecmp(p + pl - 4, ".git", 4) == 0 ? pl - 4 : pl;
      bool same = seg_ieq(p, nl, r->name) || seg_ieq(p, pl, r->name);
      if (!(loose & LOOSE_REPO) && !same)
        return false;
      if ((loose & LOOSE_REPO) && !name_ok(p, pl))
        return false;
    } else if (tl == 8 && memcmp(t, "{ticket}", 8) == 0) {
      bool digits = pl > 0 && pl < 20;
      for (size_t i = 0; i < pl && digits; i++)
        digits = p[i] >= '0' && p[i] <= '9';
      if (!digits ||
          (!(loose & LOOSE_TICKET) && !(strlen(r->ticket) == pl && memcmp(p, r->ticket, pl) == 0)))
        return false;
    } else if (tl == 5 && memcmp(t, "{seg}", 5) == 0) {
      /* any one segment */
    } else if (tl != pl || memcmp(t, p, pl) != 0) {
      return false;
    }
    t += tl;
    p += pl;
  }
  return *p == '\0';
}

bool al_gw_word_listed(const char *list, const char *name)
{
  size_t nl = strlen(name);
  for (const char *w = list; w && *w;) {
    const char *e = strchr(w, ' ');
    size_t wl = e ? (size_t)(e - w) : strlen(w);
    if (wl == nl && memcmp(w, name, nl) == 0)
      return true;
    w += wl + (e ? 1 : 0);
  }
  return false;
}

bool al_gw_query_names_ok(const al_gw_rule *rule, const al_gw_qparams *qp, const char **reason,
                          const char **param)
{
  if (qp && qp->why) {
    *reason = qp->why;
    *param = qp->bad[0] ? qp->bad : NULL;
    return false;
  }
  for (size_t i = 0; qp && i < qp->n; i++)
    if (rule->query == AL_GW_QUERY_NONE || !al_gw_word_listed(rule->params, qp->p[i].name)) {
      *reason = "query-param-refused";
      *param = qp->p[i].name;
      return false;
    }
  if (rule->query == AL_GW_QUERY_SERVICE) { /* git's info/refs: exactly ?service=git-… */
    int k = qp ? al_gw_query_find(qp, "service") : -1;
    const char *v = qp && k >= 0 && qp->n == 1 ? qp->p[k].value : "";
    if (!(strcmp(v, "git-upload-pack") == 0 || strcmp(v, "git-receive-pack") == 0)) {
      *reason = "bad-service-query";
      return false;
    }
  }
  return true;
}

static bool query_ok(const al_gw_rules *r, const al_gw_rule *rule, const al_gw_qparams *qp,
                     const char **reason, const char **param)
{
  if (!al_gw_query_names_ok(rule, qp, reason, param))
    return false;
  if (rule->query == AL_GW_QUERY_PULLS_HEAD) {
    /* OWNER:BRANCH, the owner without case (as GitHub reads it), the
     * branch exactly */
    int k = al_gw_query_find(qp, "head");
    const char *v = k >= 0 && qp ? qp->p[k].value : NULL;
    size_t ol = strlen(r->owner);
    if (!v || strlen(v) != ol + 1 + strlen(r->branch) || strncasecmp(v, r->owner, ol) != 0 ||
        v[ol] != ':' || strcmp(v + ol + 1, r->branch) != 0) {
      *reason = "pulls-not-run-branch";
      *param = "head";
      return false;
    }
  }
  return true;
}

/* The path after the side's prefix, or NULL when it does not start with it. */
static const char *strip_prefix(const char *path, const char *prefix)
{
  size_t n = strlen(prefix);
  if (!path || n == 0)
    return path;
  if (strncmp(path, prefix, n) != 0 || path[n] != '/')
    return NULL;
  return path + n;
}

static const al_gw_rule *find(const al_gw_rules *r, unsigned sides, const char *method, size_t ml,
                              const char *path, unsigned loose)
{
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const al_gw_rule *rule = &table[i];
    if (!(rule->sides & sides))
      continue;
    if (rule->needs_comments && r->max_comments == 0)
      continue;
    if (!(loose & LOOSE_METHOD) &&
        !(strlen(rule->method) == ml && memcmp(rule->method, method, ml) == 0))
      continue;
    const char *p =
        strip_prefix(path, rule->sides & AL_GW_SIDE_API ? r->api_prefix : r->git_prefix);
    if (p && tmpl_match(r, rule->path, p, loose))
      return rule;
  }
  return NULL;
}

const al_gw_rule *al_gw_match_q(const al_gw_rules *r, unsigned sides, const char *method,
                                size_t method_len, const char *path, const al_gw_qparams *qp,
                                const char **reason, const char **param)
{
  *param = NULL;
  const al_gw_rule *rule = find(r, sides, method, method_len, path, 0);
  if (rule) {
    if (!query_ok(r, rule, qp, reason, param))
      return NULL;
    *reason = rule->name;
    return rule;
  }
  const char *ap = (sides & AL_GW_SIDE_API) ? strip_prefix(path, r->api_prefix) : NULL;
  if ((ap && (strcmp(ap, "/graphql") == 0 || strncmp(ap, "/graphql/", 9) == 0)) ||
      ((sides & AL_GW_SIDE_API) && al_gw_api_path_is_graphql(r->api_prefix, path)))
    *reason = "graphql-refused";
  else if (find(r, sides, method, method_len, path, LOOSE_REPO | LOOSE_METHOD | LOOSE_TICKET) &&
           !find(r, sides, method, method_len, path, LOOSE_METHOD | LOOSE_TICKET))
    *reason = "other-repository";
  else if (find(r, sides, method, method_len, path, LOOSE_TICKET | LOOSE_METHOD) &&
           !find(r, sides, method, method_len, path, LOOSE_METHOD))
    *reason = "other-ticket";
  else if (find(r, sides, method, method_len, path, LOOSE_METHOD) ||
           !(method_len == 3 && memcmp(method, "GET", 3) == 0))
    *reason = "write-refused";
  else
    *reason = "no-rule";
  return NULL;
}

const al_gw_rule *al_gw_match(const al_gw_rules *r, unsigned sides, const char *method,
                              size_t method_len, const char *path, const char *query,
                              size_t query_len, const char **reason)
{
  al_gw_qparams qp;
  const char *param;
  if (query)
    (void)al_gw_query_decode(query, query_len, &qp);
  return al_gw_match_q(r, sides, method, method_len, path, query ? &qp : NULL, reason, &param);
}

static bool all_zero(const char *oid)
{
  for (; *oid; oid++)
    if (*oid != '0')
      return false;
  return true;
}

int al_gw_check_push(const al_gw_rules *r, const al_rp_request *rq, const char **reason,
                     size_t *bad)
{
  for (size_t i = 0; i < rq->n_cmds; i++) {
    const al_rp_cmd *c = &rq->cmd[i];
    const char *why = NULL;
    if (strncmp(c->ref, "refs/tags/", 10) == 0)
      why = "push-tag";
    else if (strcmp(c->ref, r->branch_ref) != 0)
      why = strncmp(c->ref, "refs/heads/", 11) == 0 ? "push-other-branch" : "push-other-ref";
    else if (all_zero(c->new_oid))
      why = "push-delete";
    if (why) {
      *reason = why;
      *bad = i;
      return -1;
    }
  }
  if (rq->n_cmds == 0) {
    *reason = "rp-no-commands";
    *bad = 0;
    return -1;
  }
  /* git push -o: GitLab acts on them before any human looks
   * (merge_request.create, .merge_when_pipeline_succeeds, ci.variable,
   * ci.skip: "Push options", GitLab's docs); the agent's push is its
   * commits, nothing more */
  if (rq->n_push_options > 0) {
    *reason = "push-option-refused";
    *bad = 0;
    return -1;
  }
  return 0;
}

/* ---- credentials ---- */

static bool ph_eq(const char *s, size_t n, const char *ph)
{
  size_t pl = strlen(ph);
  return n == pl && pl > 0 && CRYPTO_memcmp(s, ph, pl) == 0;
}

static al_gw_cred basic(const char *b64, size_t n, const char *ph, const char **why)
{
  unsigned char dec[400];
  if (n == 0 || n % 4 != 0 || n > 512) {
    *why = "foreign-credential";
    return AL_GW_CRED_FOREIGN;
  }
  int dl = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)n);
  if (dl < 0) {
    *why = "foreign-credential";
    return AL_GW_CRED_FOREIGN;
  }
  /* EVP_DecodeBlock counts the padding's zero bytes */
  if (n >= 1 && b64[n - 1] == '=')
    dl--;
  if (n >= 2 && b64[n - 2] == '=')
    dl--;
  const char *s = (const char *)dec;
  const char *colon = memchr(s, ':', (size_t)dl);
  al_gw_cred c = AL_GW_CRED_FOREIGN;
  if (colon) {
    size_t ul = (size_t)(colon - s), pl = (size_t)dl - ul - 1;
    if (ph_eq(colon + 1, pl, ph) || (pl == 0 && ph_eq(s, ul, ph)))
      c = AL_GW_CRED_PLACEHOLDER;
  }
  OPENSSL_cleanse(dec, sizeof dec);
  if (c == AL_GW_CRED_FOREIGN)
    *why = "foreign-credential";
  return c;
}

al_gw_cred al_gw_credential_q(const al_http_request *req, const al_gw_qparams *qp,
                              const char *placeholder, const char **why)
{
  const al_http_header *auth = NULL;

  for (size_t i = 0; i < req->n_headers; i++) {
    const al_http_header *h = &req->headers[i];
    if (al_http_header_is(h, "cookie") || al_http_header_is(h, "proxy-authorization")) {
      *why = "foreign-credential";
      return AL_GW_CRED_FOREIGN;
    }
    if (al_http_header_is(h, "authorization")) {
      if (auth) {
        *why = "foreign-credential";
        return AL_GW_CRED_FOREIGN;
      }
      auth = h;
    }
  }
  for (size_t i = 0; qp && i < qp->n; i++)
    if (al_gw_query_name_is_credential(qp->p[i].name)) {
      *why = "foreign-credential";
      return AL_GW_CRED_FOREIGN;
    }
  if (qp && qp->why && al_gw_query_name_is_credential(qp->bad)) {
    *why = "foreign-credential";
    return AL_GW_CRED_FOREIGN;
  }
  if (!auth)
    return AL_GW_CRED_NONE;
  const char *s = auth->value;
  size_t n = auth->value_len;
  const char *sp = memchr(s, ' ', n);
  if (!sp) {
    *why = "foreign-credential";
    return AL_GW_CRED_FOREIGN;
  }
  size_t schl = (size_t)(sp - s);
  const char *cred = sp + 1;
  size_t cl = n - schl - 1;
  while (cl && *cred == ' ') {
    cred++;
    cl--;
  }
  if (schl == 5 && strncasecmp(s, "basic", 5) == 0)
    return basic(cred, cl, placeholder, why);
  if ((schl == 5 && strncasecmp(s, "token", 5) == 0) ||
      (schl == 6 && strncasecmp(s, "bearer", 6) == 0)) {
    if (ph_eq(cred, cl, placeholder))
      return AL_GW_CRED_PLACEHOLDER;
  }
  *why = "foreign-credential";
  return AL_GW_CRED_FOREIGN;
}

al_gw_cred al_gw_credential(const al_http_request *req, const char *query, size_t query_len,
                            const char *placeholder, const char **why)
{
  al_gw_qparams qp;
  if (query)
    (void)al_gw_query_decode(query, query_len, &qp);
  return al_gw_credential_q(req, query ? &qp : NULL, placeholder, why);
}
