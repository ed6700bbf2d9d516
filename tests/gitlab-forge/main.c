/* airlock-gitlab-forge: a local GitLab-shaped TEST host (issue #30 item 6).
 * See README.md. Plain HTTP (HTTPS with --tls-dir) on 127.0.0.1 only; REST v4 routes for projects
 * (by numeric id or URL-encoded full path), issues, notes, merge requests,
 * protected branches, approval rules, push rules and project access tokens
 * (created with scopes and expires_at, revoked, then 401). One thread
 * (MHD's internal polling), state in memory from a fixture. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "mr_routes.h"
#include "write_routes.h"
#include "members.h"

#define MAX_TOKENS 256
#define BODY_MAX (1 << 20)

typedef struct token {
  long long id;
  char value[256]; /* the secret; only ever printed in the create answer */
  char name[128];
  long long project_id; /* 0: the bootstrap (a Maintainer's personal token) */
  json_t *scopes;       /* array of strings */
  int access_level;
  char expires_at[11]; /* YYYY-MM-DD, "" for none */
  bool revoked;
} token;

static json_t *fixture; /* {"projects": [...]} */
static token tokens[MAX_TOKENS];
static size_t n_tokens;
static long long next_token_id = 1000, next_note_id = 5000, next_mr_id = 7000;
static volatile sig_atomic_t stop;
static const char *repos_dir; /* --repos: bare repositories DIR/<full path>.git */
static bool tls_on;           /* --tls-dir: HTTPS */

static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

/* MHD hands us the URL as sent: GitLab's encoded full paths need it so. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
  (void)cls;
  (void)c;
  return strlen(s);
}

static int hexv(char c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Percent-decode s into out (cap bytes); -1 on a bad escape or a NUL. */
static int pdecode(const char *s, size_t n, char *out, size_t cap)
{
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= n)
        return -1;
      int h = hexv(s[i + 1]), l = hexv(s[i + 2]);
      if (h < 0 || l < 0)
        return -1;
      c = (char)(h * 16 + l);
      i += 2;
    }
    if (c == '\0' || o + 1 >= cap)
      return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return (int)o;
}

static void today(char out[11], int plus_days)
{
  time_t t = time(NULL) + (time_t)plus_days * 86400;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 11, "%Y-%m-%d", &tm);
}

/* ---- answers ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, json_t *j)
{
  char *b = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  struct MHD_Response *r = MHD_create_response_from_buffer(
      b ? strlen(b) : 0, b ? b : (void *)"", b ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (b)
    MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result message(struct MHD_Connection *c, unsigned status, const char *msg)
{
  return reply(c, status, json_pack("{s:s}", status == 400 ? "error" : "message", msg));
}

/* ---- auth ---- */

/* Whether t still authenticates on day now (YYYY-MM-DD): not revoked, and
 * GitLab's expiry (a token expires at the start of its expires_at day, UTC). */
static bool token_live(const token *t, const char *now)
{
  return !t->revoked && !(t->expires_at[0] && strcmp(t->expires_at, now) <= 0);
}

static token *authenticate(struct MHD_Connection *c)
{
  const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "PRIVATE-TOKEN");
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!v && a && strncasecmp(a, "Bearer ", 7) == 0)
    v = a + 7;
  if (!v)
    return NULL;
  char now[11];
  today(now, 0);
  for (size_t i = 0; i < n_tokens; i++) {
    token *t = &tokens[i];
    if (strlen(v) == strlen(t->value) && CRYPTO_memcmp(v, t->value, strlen(v)) == 0) {
      return token_live(t, now) ? t : NULL;
    }
  }
  return NULL;
}

static bool has_scope(const token *t, const char *want)
{
  size_t i;
  json_t *s;
  json_array_foreach(t->scopes, i, s)
  {
    const char *v = json_string_value(s);
    if (v && (!strcmp(v, want) || (!strcmp(v, "api") && !strcmp(want, "read_api"))))
      return true;
  }
  return false;
}

/* ---- projects ---- */

static json_t *project_by(const char *seg)
{
  char dec[512];
  if (pdecode(seg, strlen(seg), dec, sizeof dec) < 0)
    return NULL;
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(fixture, "projects"), i, p)
  {
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(p, "id")));
    const char *path = json_string_value(json_object_get(p, "path_with_namespace"));
    if (!strcmp(seg, id) || (path && strcasecmp(dec, path) == 0))
      return p;
  }
  return NULL;
}

static json_t *issue_by(json_t *p, const char *iid)
{
  size_t i;
  json_t *is;
  json_array_foreach(json_object_get(p, "issues"), i, is)
  {
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)json_integer_value(json_object_get(is, "iid")));
    if (!strcmp(v, iid))
      return is;
  }
  return NULL;
}

static json_t *project_view(json_t *p)
{
  json_t *v = json_deep_copy(p);
  json_object_del(v, "issues");
  json_object_del(v, "merge_requests");
  json_object_del(v, "protected_branches");
  json_object_del(v, "approval_rules");
  json_object_del(v, "push_rule");
  json_object_del(v, "branches");
  json_object_del(v, "audit");
  json_object_del(v, "members");
  return v;
}

/* ---- access tokens (GitLab docs "Project access tokens API") ---- */

static json_t *token_view(const token *t, bool with_secret)
{
  json_t *j = json_pack("{s:I, s:s, s:b, s:O, s:b, s:i, s:I, s:s}", "id", (json_int_t)t->id, "name",
                        t->name, "revoked", t->revoked, "scopes", t->scopes, "active", !t->revoked,
                        "access_level", t->access_level, "user_id", (json_int_t)(t->id + 100000),
                        "created_at", "2026-12-01T00:00:00.000Z");
  json_object_set_new(j, "expires_at", t->expires_at[0] ? json_string(t->expires_at) : json_null());
  if (with_secret)
    json_object_set_new(j, "token", json_string(t->value));
  return j;
}

static enum MHD_Result create_token(struct MHD_Connection *c, token *who, json_t *p, json_t *body)
{
  if (who->project_id != 0 || who->access_level < 40 || !has_scope(who, "api"))
    return message(c, 403, "403 Forbidden");
  const char *name = json_string_value(json_object_get(body, "name"));
  json_t *scopes = json_object_get(body, "scopes");
  const char *exp = json_string_value(json_object_get(body, "expires_at"));
  json_t *al = json_object_get(body, "access_level");
  if (!name || !*name || strlen(name) >= 128)
    return message(c, 400, "name is missing");
  if (!json_is_array(scopes) || json_array_size(scopes) == 0)
    return message(c, 400, "scopes is missing");
  static const char *const known[] = {
      "api",           "read_api",       "read_repository", "write_repository",
      "read_registry", "write_registry", "create_runner",   "ai_features",
      "k8s_proxy"};
  size_t i;
  json_t *s;
  json_array_foreach(scopes, i, s)
  {
    bool ok = false;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
      ok = ok || (json_is_string(s) && !strcmp(json_string_value(s), known[k]));
    if (!ok)
      return message(c, 400, "scopes does not have a valid value");
  }
  /* GitLab 16.0+: expires_at required, a date after today, at most a year */
  char now[11], max[11];
  today(now, 0);
  today(max, 365);
  if (!exp || strlen(exp) != 10 || exp[4] != '-' || exp[7] != '-')
    return message(c, 400, "expires_at is missing or not a date (YYYY-MM-DD)");
  if (strcmp(exp, now) <= 0 || strcmp(exp, max) > 0)
    return message(c, 400, "expires_at must be after today and within a year");
  int level = al ? (int)json_integer_value(al) : 40;
  if (al && !json_is_integer(al))
    return message(c, 400, "access_level is invalid");
  if (level != 10 && level != 20 && level != 30 && level != 40 && level != 50)
    return message(c, 400, "access_level does not have a valid value");
  if (n_tokens == MAX_TOKENS)
    return message(c, 400, "too many tokens");
  token *t = &tokens[n_tokens++];
  memset(t, 0, sizeof *t);
  t->id = next_token_id++;
  unsigned char rnd[16];
  if (RAND_bytes(rnd, sizeof rnd) != 1)
    return message(c, 500, "no randomness");
  int o = snprintf(t->value, sizeof t->value, "glpat-");
  for (size_t k = 0; k < sizeof rnd; k++)
    o += snprintf(t->value + o, sizeof t->value - (size_t)o, "%02x", rnd[k]);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->project_id = (long long)json_integer_value(json_object_get(p, "id"));
  t->scopes = json_deep_copy(scopes);
  t->access_level = level;
  snprintf(t->expires_at, sizeof t->expires_at, "%s", exp);
  /* a test's own check (tests/integration/demo.sh): with
   * AIRLOCK_GITLAB_FORGE_TOKENS set, each minted value is appended to that
   * file (0600), so the test can ask the forge itself whether it is dead
   * and look for it in what the run wrote. A test host only. */
  const char *tf = getenv("AIRLOCK_GITLAB_FORGE_TOKENS");
  if (tf && *tf) {
    int fd = open(tf, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dprintf(fd, "%s\n", t->value);
      close(fd);
    }
  }
  return reply(c, 201, token_view(t, true));
}

static enum MHD_Result revoke_token(struct MHD_Connection *c, token *who, json_t *p,
                                    const char *tid)
{
  if (who->project_id != 0 || who->access_level < 40 || !has_scope(who, "api"))
    return message(c, 403, "403 Forbidden");
  long long pid = (long long)json_integer_value(json_object_get(p, "id"));
  for (size_t i = 0; i < n_tokens; i++) {
    char v[32];
    snprintf(v, sizeof v, "%lld", tokens[i].id);
    if (!strcmp(v, tid) && tokens[i].project_id == pid) {
      if (tokens[i].revoked)
        return message(c, 400, "Token already revoked");
      tokens[i].revoked = true;
      return reply(c, 204, NULL);
    }
  }
  return message(c, 404, "404 Not Found");
}

/* "Get a single repository branch" from the bare repository (--repos): the
 * head of refs/heads/NAME by `git rev-parse`, or 404; without --repos the
 * fixture's branches list. NAME is [A-Za-z0-9._/-] only. */
static enum MHD_Result branch_one(struct MHD_Connection *c, json_t *p, const char *name)
{
  if (!name || !*name ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") !=
          strlen(name) ||
      strstr(name, ".."))
    return message(c, 404, "404 Branch Not Found");
  const char *path = json_string_value(json_object_get(p, "path_with_namespace"));
  char sha[64] = "";
  if (repos_dir && path) {
    char gd[4096], ref[400];
    snprintf(gd, sizeof gd, "--git-dir=%s/%s.git", repos_dir, path);
    snprintf(ref, sizeof ref, "refs/heads/%s^{commit}", name);
    int pp[2];
    if (pipe(pp) < 0)
      return message(c, 500, "pipe failed");
    pid_t k = fork();
    if (k == 0) {
      dup2(pp[1], 1);
      close(pp[0]);
      execlp("git", "git", gd, "rev-parse", "--verify", "--quiet", ref, (char *)NULL);
      _exit(127);
    }
    close(pp[1]);
    ssize_t got = k > 0 ? read(pp[0], sha, sizeof sha - 1) : -1;
    close(pp[0]);
    int ws = 0;
    if (k > 0)
      waitpid(k, &ws, 0);
    sha[got > 0 ? got : 0] = '\0';
    sha[strcspn(sha, "\n")] = '\0';
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || strlen(sha) != 40)
      return message(c, 404, "404 Branch Not Found");
  } else {
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(p, "branches"), i, b)
    {
      const char *bn = json_string_value(json_object_get(b, "name"));
      const char *id = json_string_value(json_object_get(json_object_get(b, "commit"), "id"));
      if (bn && !strcmp(bn, name) && id)
        snprintf(sha, sizeof sha, "%s", id);
    }
    if (!sha[0])
      return message(c, 404, "404 Branch Not Found");
  }
  return reply(
      c, 200,
      json_pack("{s:s, s:b, s:b, s:{s:s}}", "name", name, "merged", 0, "protected",
                !strcmp(name, json_string_value(json_object_get(p, "default_branch")) ?: ""),
                "commit", "id", sha));
}

/* "Delete repository branch": git update-ref -d in the bare repository
 * (--repos), 204; the default branch and the fixture's protected ones are
 * refused (403, as GitLab refuses them), an unknown one is 404. */
static enum MHD_Result branch_delete(struct MHD_Connection *c, json_t *p, const char *name)
{
  const char *path = json_string_value(json_object_get(p, "path_with_namespace"));
  const char *def = json_string_value(json_object_get(p, "default_branch"));
  if (!name || !*name || !repos_dir || !path ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") !=
          strlen(name) ||
      strstr(name, ".."))
    return message(c, 404, "404 Branch Not Found");
  size_t i;
  json_t *pb;
  bool prot = def && !strcmp(def, name);
  json_array_foreach(json_object_get(p, "protected_branches"), i, pb)
  {
    const char *pn = json_string_value(json_object_get(pb, "name"));
    prot = prot || (pn && !strcmp(pn, name));
  }
  if (prot)
    return message(c, 403, "403 Forbidden");
  char gd[4096], ref[400];
  snprintf(gd, sizeof gd, "--git-dir=%s/%s.git", repos_dir, path);
  snprintf(ref, sizeof ref, "refs/heads/%s", name);
  pid_t k = fork();
  if (k == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    execlp("git", "git", gd, "rev-parse", "--verify", "--quiet", ref, (char *)NULL);
    _exit(127);
  }
  int ws = 0;
  if (k < 0 || waitpid(k, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
    return message(c, 404, "404 Branch Not Found");
  k = fork();
  if (k == 0) {
    execlp("git", "git", gd, "update-ref", "-d", ref, (char *)NULL);
    _exit(127);
  }
  if (k < 0 || waitpid(k, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
    return message(c, 500, "500 git update-ref failed");
  return reply(c, 204, NULL);
}

/* ---- the router ---- */

struct req {
  char *body;
  size_t len;
  bool too_large;
};

static const char *arg(struct MHD_Connection *c, const char *name, char *out, size_t cap)
{
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
  if (!v || pdecode(v, strlen(v), out, cap) < 0)
    return NULL;
  return out;
}

static enum MHD_Result route(struct MHD_Connection *c, const char *method, const char *url,
                             json_t *body)
{
  static const char pre[] = "/api/v4/";
  if (strncmp(url, pre, sizeof pre - 1) != 0)
    return message(c, 404, "404 Not Found");
  char path[2048];
  snprintf(path, sizeof path, "%s", url + sizeof pre - 1);
  char *seg[16];
  size_t n = 0;
  char *save = NULL;
  for (char *s = strtok_r(path, "/", &save); s && n < 16; s = strtok_r(NULL, "/", &save))
    seg[n++] = s;
  token *who = authenticate(c);
  if (!who)
    return message(c, 401, "401 Unauthorized");
  bool get = !strcmp(method, "GET");
  if (n == 2 && !strcmp(seg[0], "personal_access_tokens") && !strcmp(seg[1], "self") && get)
    return reply(c, 200, token_view(who, false));
  /* "Revoke a personal access token" using a request header: the token
   * revokes itself (project access tokens too); needs scope api here */
  if (n == 2 && !strcmp(seg[0], "personal_access_tokens") && !strcmp(seg[1], "self") &&
      !strcmp(method, "DELETE")) {
    if (!has_scope(who, "api"))
      return message(c, 403, "403 Forbidden - insufficient_scope");
    who->revoked = true;
    return reply(c, 204, NULL);
  }
  if (n == 1 && !strcmp(seg[0], "users") && get) { /* members.c */
    if (!has_scope(who, "read_api") && !has_scope(who, "read_user"))
      return message(c, 403, "403 Forbidden - insufficient_scope");
    char un[256];
    json_t *out;
    unsigned st = glf_users(fixture, arg(c, "username", un, sizeof un), &out);
    return reply(c, st, out);
  }
  unsigned gst = 0; /* the audit's group reads (audit.c) */
  json_t *ga = glf_audit_group_answer(fixture, method, seg, n, &gst);
  if (ga)
    return reply(c, gst, ga);
  if (n < 2 || strcmp(seg[0], "projects") != 0)
    return message(c, 404, "404 Not Found");
  json_t *p = project_by(seg[1]);
  long long pid = p ? (long long)json_integer_value(json_object_get(p, "id")) : 0;
  /* a project token sees its one project; another is 404, as GitLab says */
  if (!p || (who->project_id != 0 && who->project_id != pid))
    return message(c, 404, "404 Project Not Found");
  if (!has_scope(who, get ? "read_api" : "api"))
    return message(c, 403, "403 Forbidden - insufficient_scope");
  /* the people (members.c): a project's own `members`; one with an
   * `audit` key is the audit's (audit.c, its audit.members) */
  if (n == 5 && get && !strcmp(seg[2], "members") && !strcmp(seg[3], "all") &&
      json_object_get(p, "members") && !json_object_get(p, "audit")) {
    json_t *out;
    unsigned st = glf_member(fixture, p, seg[4], &out);
    return reply(c, st, out);
  }
  unsigned ast = 0; /* the audit's routes (audit.c) */
  json_t *aa = glf_audit_answer(c, p, method, seg, n, &ast);
  if (aa)
    return reply(c, ast, json_is_null(aa) ? NULL : aa);
  if (n == 2 && get)
    return reply(c, 200, project_view(p));
  if (n == 3 && !strcmp(seg[2], "access_tokens") && !strcmp(method, "POST"))
    return create_token(c, who, p, body);
  if (n == 3 && !strcmp(seg[2], "access_tokens") && get) {
    /* "List project access tokens": the Maintainer's view, revoked ones too */
    if (who->project_id != 0 || who->access_level < 40)
      return message(c, 403, "403 Forbidden");
    json_t *out = json_array();
    for (size_t i = 0; i < n_tokens; i++)
      if (tokens[i].project_id == pid)
        json_array_append_new(out, token_view(&tokens[i], false));
    return reply(c, 200, out);
  }
  if (n == 4 && !strcmp(seg[2], "access_tokens") && !strcmp(method, "DELETE"))
    return revoke_token(c, who, p, seg[3]);
  if (n == 3 && get &&
      (!strcmp(seg[2], "protected_branches") || !strcmp(seg[2], "approval_rules"))) {
    json_t *v = json_object_get(p, seg[2]);
    return reply(c, 200, v ? json_incref(v) : json_array());
  }
  if (n == 3 && get && !strcmp(seg[2], "push_rule")) {
    json_t *v = json_object_get(p, "push_rule");
    return v ? reply(c, 200, json_incref(v)) : message(c, 404, "404 Push Rule Not Found");
  }
  if (n == 5 && !strcmp(method, "DELETE") && !strcmp(seg[2], "repository") &&
      !strcmp(seg[3], "branches")) {
    char bn[256];
    return branch_delete(c, p, pdecode(seg[4], strlen(seg[4]), bn, sizeof bn) < 0 ? NULL : bn);
  }
  if (n == 5 && get && !strcmp(seg[2], "repository") && !strcmp(seg[3], "branches")) {
    char bn[256];
    return branch_one(c, p, pdecode(seg[4], strlen(seg[4]), bn, sizeof bn) < 0 ? NULL : bn);
  }
  if (n == 4 && get && !strcmp(seg[2], "repository") && !strcmp(seg[3], "branches")) {
    json_t *v = json_object_get(p, "branches");
    return reply(c, 200, v ? json_incref(v) : json_array());
  }
  if (n >= 4 && !strcmp(seg[2], "issues")) {
    json_t *is = issue_by(p, seg[3]);
    if (!is)
      return message(c, 404, "404 Issue Not Found");
    if (n == 4 && get) {
      json_t *v = json_deep_copy(is);
      json_object_del(v, "notes");
      return reply(c, 200, v);
    }
    if (n == 5 && !strcmp(seg[4], "notes") && get) {
      json_t *v = json_object_get(is, "notes");
      return reply(c, 200, v ? json_incref(v) : json_array());
    }
    if (n == 5 && !strcmp(seg[4], "notes") && !strcmp(method, "POST")) {
      const char *b = json_string_value(json_object_get(body, "body"));
      if (!b || !*b)
        return message(c, 400, "body is missing");
      json_t *notes = json_object_get(is, "notes");
      if (!notes) {
        notes = json_array();
        json_object_set_new(is, "notes", notes);
      }
      json_t *note = json_pack(
          "{s:I, s:s, s:s, s:b, s:{s:s}, s:I, s:s}", "id", (json_int_t)next_note_id++, "body", b,
          "noteable_type", "Issue", "system", 0, "author", "username",
          who->project_id ? "project_bot" : "maintainer", "noteable_iid",
          json_integer_value(json_object_get(is, "iid")), "created_at", "2026-12-01T00:00:00.000Z");
      json_array_append(notes, note);
      return reply(c, 201, note);
    }
  }
  if (n == 3 && !strcmp(seg[2], "merge_requests")) {
    json_t *mrs = json_object_get(p, "merge_requests");
    if (!mrs) {
      mrs = json_array();
      json_object_set_new(p, "merge_requests", mrs);
    }
    if (get) {
      char sb[256];
      const char *want = arg(c, "source_branch", sb, sizeof sb);
      json_t *out = json_array();
      size_t i;
      json_t *m;
      json_array_foreach(mrs, i, m)
      {
        if (!want || !strcmp(json_string_value(json_object_get(m, "source_branch")), want))
          json_array_append(out, m);
      }
      return reply(c, 200, out);
    }
    if (!strcmp(method, "POST")) {
      /* a test's fault (tests/integration/demo-gitlab.sh): every MR
       * creation fails, so a run ends without its MR after its push */
      const char *fault = getenv("AIRLOCK_GITLAB_FORGE_FAIL_MR");
      if (fault && *fault)
        return message(c, 500, "500 Internal Server Error (AIRLOCK_GITLAB_FORGE_FAIL_MR)");
      const char *src = json_string_value(json_object_get(body, "source_branch"));
      const char *dst = json_string_value(json_object_get(body, "target_branch"));
      const char *title = json_string_value(json_object_get(body, "title"));
      json_t *desc = json_object_get(body, "description");
      json_t *rsb = json_object_get(body, "remove_source_branch");
      if (!src || !dst || !title || !*title)
        return message(c, 400, "source_branch, target_branch and title are required");
      if (!strcmp(src, dst))
        return message(c, 400, "source_branch and target_branch must differ");
      if (json_object_get(body, "merge_when_pipeline_succeeds") ||
          json_object_get(body, "auto_merge"))
        return message(c, 400, "this test host refuses auto-merge on creation");
      size_t i;
      json_t *m;
      json_array_foreach(mrs, i, m)
      {
        if (!strcmp(json_string_value(json_object_get(m, "source_branch")), src) &&
            !strcmp(json_string_value(json_object_get(m, "state")), "opened"))
          return reply(c, 409,
                       json_pack("{s:[s]}", "message",
                                 "Another open merge request already exists for this source "
                                 "branch"));
      }
      json_int_t iid = (json_int_t)json_array_size(mrs) + 1;
      bool draft = strncmp(title, "Draft:", 6) == 0 || strncmp(title, "[Draft]", 7) == 0 ||
                   strncmp(title, "(Draft)", 7) == 0;
      const char *ppath = json_string_value(json_object_get(p, "path_with_namespace"));
      char web[512];
      snprintf(web, sizeof web, "http://gitlab.test/%s/-/merge_requests/%lld", ppath,
               (long long)iid);
      json_t *mr = json_pack(
          "{s:I, s:I, s:I, s:s, s:O, s:s, s:s, s:s, s:b, s:b, s:b, s:s, s:{s:s}, s:s}", "id",
          (json_int_t)next_mr_id++, "iid", iid, "project_id", (json_int_t)pid, "title", title,
          "description", json_is_string(desc) ? desc : json_null(), "state", "opened",
          "source_branch", src, "target_branch", dst, "draft", draft, "work_in_progress", draft,
          "force_remove_source_branch", json_is_true(rsb), "merge_status", "can_be_merged",
          "author", "username", who->project_id ? "project_bot" : "maintainer", "web_url", web);
      json_array_append(mrs, mr);
      return reply(c, 201, mr);
    }
  }
  /* the other writes (write_routes.c); the merge request's reads for the
   * review, the tree and blobs (mr_routes.c) */
  enum MHD_Result mr_ret;
  if (glf_write_route(c, method, seg, n, p, body, who->access_level,
                      who->project_id ? "project_bot" : "maintainer", &mr_ret))
    return mr_ret;
  if (gl_mr_route(c, method, seg, n, p, body, repos_dir, tls_on, who->project_id == 0,
                  who->project_id ? "project_bot" : "maintainer", &mr_ret))
    return mr_ret;
  return message(c, 404, "404 Not Found");
}

/* ---- git smart HTTP (gitprotocol-http(5)), through git-http-backend(1) ---- */

static token *basic_token(struct MHD_Connection *c)
{
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!a || strncasecmp(a, "Basic ", 6) != 0)
    return NULL;
  const char *b = a + 6;
  size_t n = strlen(b);
  unsigned char dec[400];
  if (n == 0 || n % 4 || n > 512)
    return NULL;
  int dl = EVP_DecodeBlock(dec, (const unsigned char *)b, (int)n);
  if (dl < 0)
    return NULL;
  dl -= (b[n - 1] == '=') + (n > 1 && b[n - 2] == '=');
  dec[dl] = '\0';
  char *colon = strchr((char *)dec, ':');
  if (!colon)
    return NULL;
  char now[11];
  today(now, 0);
  for (size_t i = 0; i < n_tokens; i++) {
    token *t = &tokens[i];
    if (strcmp(colon + 1, t->value) == 0) {
      OPENSSL_cleanse(dec, sizeof dec);
      if (t->revoked || (t->expires_at[0] && strcmp(t->expires_at, now) <= 0))
        return NULL;
      return t;
    }
  }
  OPENSSL_cleanse(dec, sizeof dec);
  return NULL;
}

static enum MHD_Result git_denied(struct MHD_Connection *c, unsigned status, const char *msg)
{
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_MUST_COPY);
  if (status == 401)
    MHD_add_response_header(r, "WWW-Authenticate", "Basic realm=\"GitLab\"");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* /<full path>[.git]/{info/refs,git-upload-pack,git-receive-pack}: the
 * project and the rest, or NULL. */
static json_t *git_project(const char *url, const char **rest)
{
  static const char *const tails[] = {"/info/refs", "/git-upload-pack", "/git-receive-pack"};
  for (size_t i = 0; i < 3; i++) {
    size_t ul = strlen(url), tl = strlen(tails[i]);
    if (ul <= tl + 1 || strcmp(url + ul - tl, tails[i]) != 0)
      continue;
    char p[512];
    size_t pl = ul - tl - 1;
    if (pl >= sizeof p)
      return NULL;
    memcpy(p, url + 1, pl);
    p[pl] = '\0';
    if (pl > 4 && strcmp(p + pl - 4, ".git") == 0)
      p[pl - 4] = '\0';
    if (strchr(p, '%') || strstr(p, ".."))
      return NULL;
    *rest = tails[i];
    size_t k;
    json_t *pr;
    json_array_foreach(json_object_get(fixture, "projects"), k, pr)
    {
      const char *path = json_string_value(json_object_get(pr, "path_with_namespace"));
      if (path && strcasecmp(p, path) == 0)
        return pr;
    }
  }
  return NULL;
}

static enum MHD_Result git_route(struct MHD_Connection *c, const char *method, const char *url,
                                 const char *body, size_t len)
{
  const char *rest = NULL;
  json_t *p = git_project(url, &rest);
  if (!p || !repos_dir)
    return git_denied(c, 404, "The project you were looking for could not be found.\n");
  const char *svc = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "service");
  bool push = !strcmp(rest, "/git-receive-pack") || (svc && !strcmp(svc, "git-receive-pack"));
  if (push && svc) {
    /* for tests/integration/gitlab-gateway.sh: a GitLab may compress this
     * answer when asked, and the gateway reads its capabilities */
    const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
    fprintf(stderr, "airlock-gitlab-forge: receive-pack advertisement, Accept-Encoding: %s\n",
            ae ? ae : "(none)");
  }
  token *t = basic_token(c);
  if (!t)
    return git_denied(c, 401, "HTTP Basic: Access denied\n");
  long long pid = (long long)json_integer_value(json_object_get(p, "id"));
  if (t->project_id != 0 && t->project_id != pid)
    return git_denied(c, 404, "The project you were looking for could not be found.\n");
  if (t->project_id != 0 && !has_scope(t, push ? "write_repository" : "read_repository"))
    return git_denied(c, 403, "You are not allowed to do this with this token's scopes.\n");
  const char *path = json_string_value(json_object_get(p, "path_with_namespace"));
  char pinfo[600], root[4096], tmpl[] = "/tmp/airlock-gl-body.XXXXXX";
  snprintf(pinfo, sizeof pinfo, "/%s.git%s", path, rest);
  snprintf(root, sizeof root, "%s", repos_dir);
  int in = mkstemp(tmpl);
  if (in < 0)
    return git_denied(c, 500, "no temporary file\n");
  unlink(tmpl);
  if (len && write(in, body, len) != (ssize_t)len) {
    close(in);
    return git_denied(c, 500, "write failed\n");
  }
  lseek(in, 0, SEEK_SET);
  int out[2];
  if (pipe(out) < 0) {
    close(in);
    return git_denied(c, 500, "pipe failed\n");
  }
  const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
  const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
  const char *gp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Git-Protocol");
  pid_t child = fork();
  if (child == 0) {
    dup2(in, 0);
    dup2(out[1], 1);
    char e[9][700];
    snprintf(e[0], sizeof e[0], "GIT_PROJECT_ROOT=%s", root);
    snprintf(e[1], sizeof e[1], "PATH_INFO=%s", pinfo);
    snprintf(e[2], sizeof e[2], "REQUEST_METHOD=%s", method);
    snprintf(e[3], sizeof e[3], "QUERY_STRING=%s",
             svc ? (push ? "service=git-receive-pack" : "service=git-upload-pack") : "");
    snprintf(e[4], sizeof e[4], "CONTENT_TYPE=%s", ct ? ct : "");
    snprintf(e[5], sizeof e[5], "HTTP_CONTENT_ENCODING=%s", ce ? ce : "");
    snprintf(e[6], sizeof e[6], "GIT_PROTOCOL=%s", gp ? gp : "");
    snprintf(e[7], sizeof e[7], "REMOTE_USER=%s", t->project_id ? "project_bot" : "maintainer");
    snprintf(e[8], sizeof e[8], "CONTENT_LENGTH=%zu", len);
    static char exp_all[] = "GIT_HTTP_EXPORT_ALL=1", path_env[] = "PATH=/usr/bin:/bin";
    static char a0[] = "git", a1[] = "http-backend";
    char *envp[] = {e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7], e[8], exp_all, path_env, NULL};
    char *argv[] = {a0, a1, NULL};
    execve("/usr/bin/git", argv, envp);
    _exit(127);
  }
  close(in);
  close(out[1]);
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  for (ssize_t k; buf && (k = read(out[0], buf + n, cap - n)) > 0;) {
    n += (size_t)k;
    if (n == cap) {
      char *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
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
  int st;
  waitpid(child, &st, 0);
  if (!buf)
    return git_denied(c, 500, "git http-backend answered too much\n");
  /* the CGI head: Status: and fields up to the blank line */
  unsigned status = 200;
  size_t hs = 0;
  char *end = NULL;
  for (size_t i = 0; i + 1 < n; i++) {
    if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < n))) {
      end = buf + i;
      hs = i + (buf[i + 1] == '\n' ? 2 : 3);
      break;
    }
  }
  if (!end) {
    free(buf);
    return git_denied(c, 500, "git http-backend failed\n");
  }
  struct MHD_Response *r = MHD_create_response_from_buffer(n - hs, buf + hs, MHD_RESPMEM_MUST_COPY);
  *end = '\0';
  char *save = NULL;
  for (char *line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    *colon = '\0';
    const char *v = colon + 1;
    while (*v == ' ')
      v++;
    if (!strcasecmp(line, "Status"))
      status = (unsigned)strtoul(v, NULL, 10);
    else
      MHD_add_response_header(r, line, v);
  }
  free(buf);
  enum MHD_Result ret = MHD_queue_response(c, status ? status : 500, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **ctx)
{
  (void)cls;
  (void)version;
  struct req *rq = *ctx;
  if (!rq) {
    rq = calloc(1, sizeof *rq);
    if (!rq)
      return MHD_NO;
    *ctx = rq;
    return MHD_YES;
  }
  if (*upload_size) {
    if (rq->len + *upload_size > BODY_MAX) {
      rq->too_large = true;
    } else {
      char *nb = realloc(rq->body, rq->len + *upload_size + 1);
      if (!nb)
        return MHD_NO;
      rq->body = nb;
      memcpy(rq->body + rq->len, upload, *upload_size);
      rq->len += *upload_size;
      rq->body[rq->len] = '\0';
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (rq->too_large)
    return message(c, 413, "body too large");
  if (strncmp(url, "/api/", 5) != 0)
    return git_route(c, method, url, rq->body, rq->len);
  json_t *body = NULL;
  if (rq->len) {
    body = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(body)) {
      json_decref(body);
      return message(c, 400, "the body is not a JSON object");
    }
  }
  enum MHD_Result r = route(c, method, url, body);
  json_decref(body);
  return r;
}

static void completed(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  (void)c;
  (void)toe;
  struct req *rq = *ctx;
  if (rq) {
    free(rq->body);
    free(rq);
  }
  *ctx = NULL;
}

/* A whole small file, NUL-terminated, malloc'd; NULL when unreadable. */
static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *b = calloc(1, 65536);
  size_t n = b ? fread(b, 1, 65535, f) : 0;
  fclose(f);
  if (b && n == 0) {
    free(b);
    return NULL;
  }
  return b;
}

/* A test's own check (tests/integration/demo.sh), as the forge stops: with
 * AIRLOCK_GITLAB_FORGE_STATE set, that file (0600) gets {merge_requests:
 * [every project's], tokens: [{id, name, project_id, revoked, answers (401
 * or 200: what a request with it gets, by authenticate's rule),
 * value_sha256}], notes, writes: write_routes.h glf_state}. No token
 * value is written. A test host only. */
static void write_state(const char *path)
{
  if (!path || !*path)
    return;
  json_t *mrs = json_array(), *toks = json_array();
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(fixture, "projects"), i, p)
  {
    json_t *m = json_object_get(p, "merge_requests");
    if (m)
      json_array_extend(mrs, m);
  }
  char now[11];
  today(now, 0);
  for (size_t k = 0; k < n_tokens; k++) {
    unsigned char md[32];
    unsigned int ml = 0;
    char hex[65];
    EVP_Digest(tokens[k].value, strlen(tokens[k].value), md, &ml, EVP_sha256(), NULL);
    for (unsigned int b = 0; b < ml && b < 32; b++)
      snprintf(hex + 2 * b, 3, "%02x", md[b]);
    json_array_append_new(
        toks, json_pack("{s:I, s:s, s:I, s:b, s:i, s:s}", "id", (json_int_t)tokens[k].id, "name",
                        tokens[k].name, "project_id", (json_int_t)tokens[k].project_id, "revoked",
                        tokens[k].revoked, "answers", token_live(&tokens[k], now) ? 200 : 401,
                        "value_sha256", hex));
  }
  json_t *st = json_pack("{s:o, s:o}", "merge_requests", mrs, "tokens", toks);
  json_t *more = glf_state(fixture); /* notes, writes (write_routes.h) */
  json_object_update(st, more);
  json_decref(more);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    json_dumpfd(st, fd, JSON_INDENT(1));
    close(fd);
  }
  json_decref(st);
}

int main(int argc, char **argv)
{
  const char *fix = NULL, *token_file = NULL, *ports_file = NULL, *tls_dir = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--fixture"))
      fix = argv[i + 1];
    else if (!strcmp(argv[i], "--token-file"))
      token_file = argv[i + 1];
    else if (!strcmp(argv[i], "--ports-file"))
      ports_file = argv[i + 1];
    else if (!strcmp(argv[i], "--repos"))
      repos_dir = argv[i + 1];
    else if (!strcmp(argv[i], "--tls-dir"))
      tls_dir = argv[i + 1];
  }
  if (!fix || !token_file || !ports_file) {
    fprintf(stderr, "usage: airlock-gitlab-forge --fixture FILE --token-file FILE "
                    "--ports-file FILE\n");
    return 2;
  }
  json_error_t je;
  fixture = json_load_file(fix, JSON_REJECT_DUPLICATES, &je);
  if (!json_is_array(json_object_get(fixture, "projects"))) {
    fprintf(stderr, "airlock-gitlab-forge: fixture %s: %s\n", fix,
            fixture ? "no projects array" : je.text);
    return 2;
  }
  /* a test's knob (tests/integration/gitlab-ci-guard.sh): every project's
   * ci_config_path, for fixtures a test does not write itself (the demo's) */
  const char *ccp = getenv("AIRLOCK_GITLAB_FORGE_CI_CONFIG_PATH");
  if (ccp && *ccp) {
    size_t pi;
    json_t *pr;
    json_array_foreach(json_object_get(fixture, "projects"), pi, pr)
    {
      json_object_set_new(pr, "ci_config_path", json_string(ccp));
    }
  }
  /* the Maintainer's bootstrap token: read from a file, never argv */
  FILE *tf = fopen(token_file, "r");
  token *boot = &tokens[n_tokens++];
  memset(boot, 0, sizeof *boot);
  if (!tf || !fgets(boot->value, sizeof boot->value, tf)) {
    fprintf(stderr, "airlock-gitlab-forge: token file %s: unreadable\n", token_file);
    return 2;
  }
  /* a first line that does not fit is refused, never cut: a cut token
   * would be refused later with nothing saying why */
  bool whole = strchr(boot->value, '\n') != NULL || feof(tf);
  fclose(tf);
  if (!whole) {
    fprintf(stderr, "airlock-gitlab-forge: token file %s: its first line is over %zu bytes\n",
            token_file, sizeof boot->value - 2);
    return 2;
  }
  boot->value[strcspn(boot->value, "\r\n")] = '\0';
  if (strlen(boot->value) < 16) {
    fprintf(stderr, "airlock-gitlab-forge: token file %s: under 16 bytes\n", token_file);
    return 2;
  }
  boot->id = 1;
  snprintf(boot->name, sizeof boot->name, "maintainer");
  boot->scopes = json_pack("[s]", "api");
  boot->access_level = 40;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  /* --tls-dir DIR: HTTPS with DIR/server.key and DIR/server.crt
   * (scripts/make-test-ca.sh), as a GitLab behind its TLS would be */
  char *key = NULL, *cert = NULL;
  tls_on = tls_dir != NULL;
  if (tls_dir) {
    char kp[4096], cp[4096];
    snprintf(kp, sizeof kp, "%s/server.key", tls_dir);
    snprintf(cp, sizeof cp, "%s/server.crt", tls_dir);
    key = slurp(kp);
    cert = slurp(cp);
    if (!key || !cert || !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
      fprintf(stderr, "airlock-gitlab-forge: TLS: %s\n",
              key && cert ? "this libmicrohttpd has no TLS support"
                          : "server.key or server.crt unreadable");
      return 2;
    }
  }
  struct MHD_Daemon *d =
      tls_dir ? MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS, 0, NULL, NULL,
                                 handler, NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_HTTPS_MEM_KEY,
                                 key, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_NOTIFY_COMPLETED,
                                 completed, NULL, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END)
              : MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
                                 MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
                                 NULL, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "airlock-gitlab-forge: cannot listen on 127.0.0.1: %s\n", strerror(errno));
    return 1;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", ports_file);
  FILE *pf = fopen(tmp, "w");
  if (!pf || fprintf(pf, "{\"%s\":%u}\n", tls_dir ? "https" : "http", info ? info->port : 0) < 0 ||
      fclose(pf) != 0 || rename(tmp, ports_file) != 0) {
    fprintf(stderr, "airlock-gitlab-forge: ports file %s: %s\n", ports_file, strerror(errno));
    MHD_stop_daemon(d);
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  while (!stop)
    pause();
  MHD_stop_daemon(d);
  write_state(getenv("AIRLOCK_GITLAB_FORGE_STATE"));
  free(key);
  free(cert);
  for (size_t i = 0; i < n_tokens; i++) {
    OPENSSL_cleanse(tokens[i].value, sizeof tokens[i].value);
    json_decref(tokens[i].scopes);
  }
  json_decref(fixture);
  return 0;
}
