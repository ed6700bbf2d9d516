/* GitLab tokens and merge requests. See gitlab.h. */
#include "forge/gitlab.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void al_gl_token_wipe(al_gl_token *t)
{
  OPENSSL_cleanse(t, sizeof *t);
}

int al_gl_project_escape(const char *project, char *out, size_t cap, al_error *err)
{
  size_t o = 0, n = project ? strlen(project) : 0;
  if (n == 0 || project[0] == '/' || project[n - 1] == '/' || !strchr(project, '/'))
    return al_error_set(err, EINVAL, "GitLab project `%s` is not GROUP[/SUB]/PROJECT",
                        project ? project : "(null)");
  for (size_t i = 0; i < n; i++) {
    char c = project[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '/';
    if (!ok || (c == '/' && project[i + 1] == '/'))
      return al_error_set(err, EINVAL, "GitLab project `%s`: byte %zu is not allowed", project, i);
    const char *rep = c == '/' ? "%2F" : NULL;
    size_t l = rep ? 3 : 1;
    if (o + l + 1 > cap)
      return al_error_set(err, EINVAL, "GitLab project `%s` is too long", project);
    memcpy(out + o, rep ? rep : &c, l);
    o += l;
  }
  out[o] = '\0';
  return 0;
}

void al_gl_expiry_tomorrow(time_t now, char out[11])
{
  time_t t = now + 86400;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 11, "%Y-%m-%d", &tm);
}

static int fail(al_error *err, const char *what, const al_ghapi_resp *r)
{
  return al_error_set(err, EIO, "GitLab %s: HTTP %ld%s%s", what, r->status,
                      r->message[0] ? ": " : "", r->message);
}

int al_gl_token_mint(al_ghapi *c, const char *admin, const char *project, const char *name,
                     const char *const *scopes, int access_level, const char *expires_at,
                     al_gl_token *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  char pe[800], path[900];
  if (al_gl_project_escape(project, pe, sizeof pe, err) < 0)
    return -1;
  if (!scopes || !scopes[0])
    return al_error_set(err, EINVAL, "GitLab token: no scope asked");
  snprintf(path, sizeof path, "/projects/%s/access_tokens", pe);
  json_t *sc = json_array();
  for (size_t i = 0; scopes[i]; i++)
    json_array_append_new(sc, json_string(scopes[i]));
  json_t *body = json_pack("{s:s, s:o, s:i, s:s}", "name", name, "scopes", sc, "access_level",
                           access_level, "expires_at", expires_at);
  al_ghapi_resp r = {0};
  int rc = al_ghapi_request(c, "POST", path, admin, body, &r, err);
  json_decref(body);
  if (rc < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  const char *tok = json_string_value(json_object_get(r.json, "token"));
  json_t *id = json_object_get(r.json, "id");
  const char *exp = json_string_value(json_object_get(r.json, "expires_at"));
  if (r.status != 201 || !tok || !json_is_integer(id) || json_integer_value(id) < 1) {
    rc = r.status == 201 ? al_error_set(err, EIO, "GitLab token: the answer has no token or id")
                         : fail(err, "token mint", &r);
    al_ghapi_resp_free(&r);
    return rc;
  }
  if (strlen(tok) >= sizeof out->value) {
    al_ghapi_resp_free(&r);
    return al_error_set(err, EIO, "GitLab token: longer than %zu bytes", sizeof out->value - 1);
  }
  out->id = (long long)json_integer_value(id);
  snprintf(out->value, sizeof out->value, "%s", tok);
  snprintf(out->expires_at, sizeof out->expires_at, "%s", exp ? exp : "");
  out->access_level = (int)json_integer_value(json_object_get(r.json, "access_level"));
  /* wipe jansson's copy of the secret before it is freed */
  OPENSSL_cleanse((char *)tok, strlen(tok));
  al_ghapi_resp_free(&r);
  return 0;
}

int al_gl_token_revoke(al_ghapi *c, const char *admin, const char *project, const al_gl_token *t,
                       bool *confirmed_401, al_error *err)
{
  *confirmed_401 = false;
  char pe[800], path[900];
  if (al_gl_project_escape(project, pe, sizeof pe, err) < 0)
    return -1;
  snprintf(path, sizeof path, "/projects/%s/access_tokens/%lld", pe, t->id);
  al_ghapi_resp r = {0};
  int rc = al_ghapi_request(c, "DELETE", path, admin, NULL, &r, err);
  long del = r.status;
  char msg[256];
  snprintf(msg, sizeof msg, "%s", r.message);
  al_ghapi_resp_free(&r);
  /* whatever the DELETE said, the token's own answer decides */
  al_ghapi_resp s = {0};
  al_error e2 = {0};
  int sc = al_ghapi_get(c, "/personal_access_tokens/self", t->value, &s, &e2);
  long self = s.status;
  al_ghapi_resp_free(&s);
  if (sc == 0 && self == 401) {
    *confirmed_401 = true;
    return 0;
  }
  if (rc < 0)
    return -1;
  if (sc < 0)
    return al_error_set(err, EIO,
                        "GitLab token %lld: revoked (HTTP %ld) but the 401 could not be "
                        "confirmed: %s",
                        t->id, del, e2.msg);
  return al_error_set(err, EIO,
                      "GitLab token %lld: still answers HTTP %ld after DELETE (HTTP %ld%s%s)",
                      t->id, self, del, msg[0] ? ": " : "", msg);
}

int al_gl_mr_open(al_ghapi *c, const char *bearer, const char *project, const char *source,
                  const char *target, const char *title, const char *description, bool draft,
                  long long *iid, char *web_url, size_t web_cap, al_error *err)
{
  *iid = 0;
  char pe[800], path[900], t[1200];
  if (al_gl_project_escape(project, pe, sizeof pe, err) < 0)
    return -1;
  snprintf(path, sizeof path, "/projects/%s/merge_requests", pe);
  bool has = strncmp(title, "Draft:", 6) == 0;
  snprintf(t, sizeof t, "%s%s", draft && !has ? "Draft: " : "", title);
  json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:b}", "source_branch", source, "target_branch",
                           target, "title", t, "description", description ? description : "",
                           "remove_source_branch", 1);
  al_ghapi_resp r = {0};
  int rc = al_ghapi_request(c, "POST", path, bearer, body, &r, err);
  json_decref(body);
  if (rc < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  json_t *n = json_object_get(r.json, "iid");
  if (r.status != 201 || !json_is_integer(n)) {
    rc = fail(err, "merge request", &r);
    al_ghapi_resp_free(&r);
    return rc;
  }
  *iid = (long long)json_integer_value(n);
  if (web_url && web_cap)
    snprintf(web_url, web_cap, "%s",
             json_string_value(json_object_get(r.json, "web_url"))
                 ? json_string_value(json_object_get(r.json, "web_url"))
                 : "");
  al_ghapi_resp_free(&r);
  return 0;
}

int al_gl_project_id(al_ghapi *c, const char *tok, const char *project, unsigned long *id,
                     char *ci_path, size_t ci_cap, al_error *err)
{
  char pe[800], path[820];
  *id = 0;
  if (ci_path && ci_cap)
    ci_path[0] = '\0';
  if (al_gl_project_escape(project, pe, sizeof pe, err) < 0)
    return -1;
  snprintf(path, sizeof path, "/projects/%s", pe);
  al_ghapi_resp r = {0};
  if (al_ghapi_get(c, path, tok, &r, err) < 0) {
    al_ghapi_resp_free(&r);
    return -1;
  }
  if (r.status != 200) {
    char what[840];
    snprintf(what, sizeof what, "GET %s", path);
    fail(err, what, &r);
    al_ghapi_resp_free(&r);
    return -1;
  }
  json_t *jid = json_object_get(r.json, "id");
  const char *pwn = json_string_value(json_object_get(r.json, "path_with_namespace"));
  int rc = 0;
  if (!json_is_integer(jid) || json_integer_value(jid) < 1 ||
      (unsigned long long)json_integer_value(jid) > 0xffffffffULL)
    rc = al_error_set(err, EPROTO, "GET %s: the answer has no project id (a positive integer)",
                      path);
  else if (!pwn || strcasecmp(pwn, project) != 0)
    rc = al_error_set(err, EPROTO, "GET %s: the answer is project `%.200s`, not `%s`", path,
                      pwn ? pwn : "(none)", project);
  else
    *id = (unsigned long)json_integer_value(jid);
  json_t *jcp = json_object_get(r.json, "ci_config_path");
  const char *cp = json_string_value(jcp);
  size_t cn = cp ? strlen(cp) : 0;
  bool printable = true;
  for (size_t i = 0; i < cn; i++)
    printable &= cp[i] >= 0x20 && cp[i] < 0x7f;
  if (rc == 0 && jcp && !json_is_null(jcp) && !cp)
    rc = al_error_set(err, EPROTO, "GET %s: the answer's ci_config_path is not a string", path);
  else if (rc == 0 && cp && (!printable || cn >= 256 || (ci_path && cn >= ci_cap)))
    rc = al_error_set(err, EPROTO,
                      "GET %s: the answer's ci_config_path is not printable ASCII shorter than "
                      "256 bytes",
                      path);
  else if (rc == 0 && cp && ci_path && ci_cap)
    memcpy(ci_path, cp, cn + 1);
  if (rc < 0)
    *id = 0;
  al_ghapi_resp_free(&r);
  return rc;
}
