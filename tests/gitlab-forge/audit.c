/* The test forge's routes for the GitLab audit (issue #30 item 4), from the
 * project's fixture key "audit" (each setting switchable per project):
 *
 *   "approvals":     GET /projects/:id/approvals ("Merge request approvals
 *                    API", project-level settings; GitLab's defaults when
 *                    absent: reset_approvals_on_push true, author approval
 *                    and overriding per MR allowed as GitLab ships them)
 *   "variables":     GET /projects/:id/variables (key, value, protected,
 *                    masked, raw, variable_type, environment_scope)
 *   "deploy_tokens": GET /projects/:id/deploy_tokens (id, name, username,
 *                    expires_at, scopes, revoked, expired)
 *   "members":       GET /projects/:id/members/all/:user_id (id, username,
 *                    access_level; 404 when not a member)
 *   "files":         GET /projects/:id/repository/files/:path?ref= (one
 *                    text per path; base64 as GitLab answers; 404 "404 File
 *                    Not Found")
 *   "no_push_rule":  true: GET /projects/:id/push_rule answers null (none)
 *   "hidden":        {route: status}: the route answers 403 "403 Forbidden"
 *                    or 404 "404 Not Found", as GitLab does where the tier
 *                    lacks the feature (approvals, approval_rules,
 *                    push_rule) or the token lacks the role (variables,
 *                    deploy_tokens, protected_branches, members, files)
 * The fixture's top-level "groups" answer GET /groups/:id and
 * /groups/:id/variables (glf_audit_group_answer).
 * The project's own "protected_branches", "approval_rules" and "push_rule"
 * stay where main.c serves them; "hidden" applies to them here. */
#include "audit.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static json_t *msg(unsigned *status, unsigned st, const char *m)
{
  *status = st;
  return json_pack("{s:s}", "message", m);
}

static int hexv(char c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

static int decode(const char *s, char *out, size_t cap)
{
  size_t o = 0;
  for (size_t i = 0; s[i]; i++) {
    char c = s[i];
    if (c == '%') {
      int h = s[i + 1] ? hexv(s[i + 1]) : -1, l = h >= 0 && s[i + 2] ? hexv(s[i + 2]) : -1;
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
  return 0;
}

static json_t *file_answer(struct MHD_Connection *c, json_t *files, const char *enc_path,
                           unsigned *status)
{
  char path[512], ref[256];
  const char *r = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ref");
  if (decode(enc_path, path, sizeof path) < 0 || !r || decode(r, ref, sizeof ref) < 0)
    return msg(status, 400, "400 Bad request - ref is missing");
  const char *text = json_string_value(json_object_get(files, path));
  if (!text)
    return msg(status, 404, "404 File Not Found");
  size_t n = strlen(text);
  char *b64 = malloc(4 * ((n + 2) / 3) + 1);
  if (!b64)
    return msg(status, 500, "500 Internal Server Error");
  EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)text, (int)n);
  const char *base = strrchr(path, '/');
  *status = 200;
  json_t *v = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "file_name", base ? base + 1 : path,
                        "file_path", path, "size", (json_int_t)n, "encoding", "base64", "content",
                        b64, "ref", ref, "blob_id", "0000000000000000000000000000000000000000");
  free(b64);
  return v;
}

json_t *glf_audit_answer(struct MHD_Connection *c, json_t *p, const char *method, char **seg,
                         size_t n, unsigned *status)
{
  if (strcmp(method, "GET") != 0 || n < 3)
    return NULL;
  json_t *a = json_object_get(p, "audit");
  const char *route = seg[2];
  if (n >= 4 && !strcmp(seg[2], "repository") && !strcmp(seg[3], "files"))
    route = "files";
  static const char *const mine[] = {"approvals", "approval_rules", "push_rule",
                                     "variables", "deploy_tokens",  "protected_branches",
                                     "members",   "files"};
  bool known = false;
  for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
    known = known || !strcmp(route, mine[i]);
  if (!known)
    return NULL;
  json_t *h = json_object_get(json_object_get(a, "hidden"), route);
  if (json_is_integer(h))
    return msg(status, (unsigned)json_integer_value(h),
               json_integer_value(h) == 403 ? "403 Forbidden" : "404 Not Found");
  if (n == 3 && !strcmp(route, "approvals")) {
    json_t *v = json_object_get(a, "approvals");
    *status = 200;
    return v ? json_incref(v)
             : json_pack("{s:i, s:b, s:b, s:b, s:b, s:b}", "approvals_before_merge", 0,
                         "reset_approvals_on_push", 1,
                         "disable_overriding_approvers_per_merge_request", 0,
                         "merge_requests_author_approval", 0,
                         "merge_requests_disable_committers_approval", 0,
                         "require_password_to_approve", 0);
  }
  if (n == 3 && !strcmp(route, "push_rule") && json_is_true(json_object_get(a, "no_push_rule"))) {
    *status = 200;
    return json_null();
  }
  if (n == 3 && (!strcmp(route, "variables") || !strcmp(route, "deploy_tokens"))) {
    json_t *v = json_object_get(a, route);
    *status = 200;
    return v ? json_incref(v) : json_array();
  }
  if (n == 5 && !strcmp(route, "members") && !strcmp(seg[3], "all")) {
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(a, "members"), i, m)
    {
      if (json_integer_value(json_object_get(m, "id")) == strtoll(seg[4], NULL, 10)) {
        *status = 200;
        return json_incref(m);
      }
    }
    return msg(status, 404, "404 Not found");
  }
  /* only where the fixture gives the audit its files: another route may
   * serve files from the repository */
  if (n == 5 && !strcmp(route, "files") && json_is_object(json_object_get(a, "files")))
    return file_answer(c, json_object_get(a, "files"), seg[4], status);
  return NULL; /* main.c's own (protected_branches, approval_rules, push_rule) */
}

json_t *glf_audit_group_answer(json_t *fixture, const char *method, char **seg, size_t n,
                               unsigned *status)
{
  if (strcmp(method, "GET") != 0 || n < 2 || n > 3 || strcmp(seg[0], "groups") != 0 ||
      (n == 3 && strcmp(seg[2], "variables") != 0))
    return NULL;
  size_t i;
  json_t *g;
  json_array_foreach(json_object_get(fixture, "groups"), i, g)
  {
    if (json_integer_value(json_object_get(g, "id")) != strtoll(seg[1], NULL, 10))
      continue;
    json_t *h = json_object_get(json_object_get(g, "hidden"), n == 2 ? "group" : "variables");
    if (json_is_integer(h))
      return msg(status, (unsigned)json_integer_value(h),
                 json_integer_value(h) == 403 ? "403 Forbidden" : "404 Group Not Found");
    *status = 200;
    if (n == 3) {
      json_t *v = json_object_get(g, "variables");
      return v ? json_incref(v) : json_array();
    }
    const char *fp = json_string_value(json_object_get(g, "full_path"));
    const char *base = fp ? strrchr(fp, '/') : NULL;
    return json_pack("{s:O, s:s, s:s, s:s, s:O}", "id", json_object_get(g, "id"), "name",
                     base ? base + 1
                     : fp ? fp
                          : "",
                     "path",
                     base ? base + 1
                     : fp ? fp
                          : "",
                     "full_path", fp ? fp : "", "parent_id",
                     json_object_get(g, "parent_id") ? json_object_get(g, "parent_id")
                                                     : json_null());
  }
  return msg(status, 404, "404 Group Not Found");
}
