/* The test forge's writes beyond merge requests and notes (write_routes.h).
 * Who may, as GitLab's docs say (docs.gitlab.com/user/permissions, and each
 * route's API page): a Developer approves (Merge request approvals API:
 * POST /projects/:id/merge_requests/:iid/approve), merges an MR into an
 * unprotected target (Merge requests API: PUT .../merge; this host does
 * not enforce branch protection, README.md) and edits an issue (Issues
 * API: PUT /projects/:id/issues/:iid); only a Maintainer edits the project
 * (Projects API: PUT /projects/:id), unprotects a branch (Protected
 * branches API: DELETE /projects/:id/protected_branches/:name) or adds a
 * webhook (POST /projects/:id/hooks), a deploy key (POST .../deploy_keys)
 * or a CI/CD variable (POST .../variables): 403 for a Developer. State
 * changes stay in the fixture's JSON; git is never touched (a "merged" MR
 * leaves the repository as it was). */
#include "write_routes.h"

#include <string.h>

static json_t *writes;

json_t *glf_writes(void)
{
  if (!writes)
    writes = json_array();
  return writes;
}

json_t *glf_state(json_t *fixture)
{
  json_t *notes = json_array();
  size_t i, j;
  json_t *p, *is;
  json_array_foreach(json_object_get(fixture, "projects"), i, p)
  {
    json_array_foreach(json_object_get(p, "issues"), j, is)
    {
      json_t *ns = json_object_get(is, "notes");
      if (ns)
        json_array_extend(notes, ns);
    }
  }
  return json_pack("{s:o, s:O}", "notes", notes, "writes", glf_writes());
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, json_t *j)
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

static enum MHD_Result msg(struct MHD_Connection *c, unsigned status, const char *m)
{
  return answer(c, status, json_pack("{s:s}", "message", m));
}

static void landed(const char *method, const char *route, json_t *p, const char *author)
{
  json_array_append_new(glf_writes(),
                        json_pack("{s:s, s:s, s:O, s:s}", "method", method, "route", route,
                                  "project_id", json_object_get(p, "id"), "author", author));
}

/* the fixture's item of list `key` of p whose `field` is seg (iid or name) */
static json_t *item(json_t *p, const char *key, const char *field, const char *seg)
{
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(p, key), i, x)
  {
    json_t *v = json_object_get(x, field);
    char buf[32];
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    if (json_is_integer(v)) {
      snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
      s = buf;
    }
    if (s && strcmp(s, seg) == 0)
      return x;
  }
  return NULL;
}

/* A Maintainer's write: the body kept under p's `key` list. */
static enum MHD_Result maintainer_add(struct MHD_Connection *c, json_t *p, const char *key,
                                      json_t *body, int access_level, const char *author,
                                      const char *route)
{
  if (access_level < 40)
    return msg(c, 403, "403 Forbidden");
  json_t *list = json_object_get(p, key);
  if (!list) {
    list = json_array();
    json_object_set_new(p, key, list);
  }
  json_t *v = body ? json_deep_copy(body) : json_object();
  json_object_set_new(v, "id", json_integer((json_int_t)json_array_size(list) + 1));
  json_array_append(list, v);
  landed("POST", route, p, author);
  return answer(c, 201, v);
}

bool glf_write_route(struct MHD_Connection *c, const char *method, char **seg, size_t n, json_t *p,
                     json_t *body, int access_level, const char *author, enum MHD_Result *ret)
{
  bool put = !strcmp(method, "PUT"), post = !strcmp(method, "POST"),
       del = !strcmp(method, "DELETE");
  if (n == 2 && put) {
    if (access_level < 40) {
      *ret = msg(c, 403, "403 Forbidden");
      return true;
    }
    const char *vis = json_string_value(json_object_get(body, "visibility"));
    if (vis)
      json_object_set_new(p, "visibility", json_string(vis));
    landed("PUT", "project", p, author);
    *ret = answer(c, 200, json_incref(p));
    return true;
  }
  if (n == 4 && put && !strcmp(seg[2], "issues")) {
    json_t *is = item(p, "issues", "iid", seg[3]);
    if (!is) {
      *ret = msg(c, 404, "404 Issue Not Found");
      return true;
    }
    const char *t = json_string_value(json_object_get(body, "title"));
    if (t)
      json_object_set_new(is, "title", json_string(t));
    landed("PUT", "issue", p, author);
    json_t *v = json_deep_copy(is);
    json_object_del(v, "notes");
    *ret = answer(c, 200, v);
    return true;
  }
  if (n == 4 && del && !strcmp(seg[2], "protected_branches")) {
    if (access_level < 40) {
      *ret = msg(c, 403, "403 Forbidden");
      return true;
    }
    json_t *list = json_object_get(p, "protected_branches");
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
      const char *name = json_string_value(json_object_get(x, "name"));
      if (name && !strcmp(name, seg[3])) {
        json_array_remove(list, i);
        landed("DELETE", "protected_branch", p, author);
        *ret = answer(c, 204, NULL);
        return true;
      }
    }
    *ret = msg(c, 404, "404 Not found");
    return true;
  }
  if (n == 3 && post &&
      (!strcmp(seg[2], "hooks") || !strcmp(seg[2], "deploy_keys") ||
       !strcmp(seg[2], "variables"))) {
    *ret = maintainer_add(c, p, seg[2], body, access_level, author, seg[2]);
    return true;
  }
  if (n == 5 && !strcmp(seg[2], "merge_requests") &&
      ((post && !strcmp(seg[4], "approve")) || (put && !strcmp(seg[4], "merge")))) {
    json_t *mr = item(p, "merge_requests", "iid", seg[3]);
    if (!mr) {
      *ret = msg(c, 404, "404 Not found");
      return true;
    }
    bool approve = post;
    if (!approve && strcmp(json_string_value(json_object_get(mr, "state")) ?: "", "opened")) {
      *ret = msg(c, 405, "405 Method Not Allowed");
      return true;
    }
    if (approve)
      json_object_set_new(mr, "approved_by", json_pack("[{s:{s:s}}]", "user", "username", author));
    else
      json_object_set_new(mr, "state", json_string("merged"));
    landed(method, approve ? "mr_approve" : "mr_merge", p, author);
    *ret = answer(c, approve ? 201 : 200, json_incref(mr));
    return true;
  }
  return false;
}
