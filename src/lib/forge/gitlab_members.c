/* The GitLab driver's user_permission (forge/forge.h; issue #30 item 5:
 * the sender's access level asked of GitLab, not taken from the webhook's
 * payload). See al_gl_user_permission in forge/gitlab.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "forge/gitlab.h"
#include "forge/names.h"

static int bad_answer(const char *path, const al_ghapi_resp *r, int e, const char *what,
                      al_error *err)
{
  char d[600];
  al_ghapi_describe(r, d, sizeof d);
  return al_error_set(err, e, "GitLab GET %s: %s: %s", path, what, d);
}

/* Users API › "List users" with `username` (GET /users?username=NAME, one
 * user or none; GitLab matches the username without regard to case): the
 * user's numeric id into *id, 0 when GitLab knows no such user. */
static int user_id(al_ghapi *c, const char *tok, const char *user, long long *id, al_error *err)
{
  *id = 0;
  /* a username is [A-Za-z0-9._-] (checked by the caller): no escaping */
  al_autofree char *path = al_strdup_printf("/users?username=%s", user);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  if (r.cls != AL_GHAPI_OK || !json_is_array(r.json) || json_array_size(r.json) > 1) {
    rc = bad_answer(path, &r, EPROTO, "expected an array of at most one user", err);
  } else if (json_array_size(r.json) == 1) {
    json_t *u = json_array_get(r.json, 0);
    const char *name = json_string_value(json_object_get(u, "username"));
    json_t *jid = json_object_get(u, "id");
    if (!name || strcasecmp(name, user) != 0 || !json_is_integer(jid) ||
        json_integer_value(jid) < 1)
      rc = bad_answer(path, &r, EPROTO, "the user's `id` and `username` (the one asked for)", err);
    else
      *id = (long long)json_integer_value(jid);
  }
  al_ghapi_resp_free(&r);
  return rc;
}

/* GitLab's access levels (Project members API, "Roles") onto the seam's
 * four: Owner and Maintainer admin (they change the project's settings,
 * its protected branches included), Developer write (pushes to
 * unprotected branches, opens merge requests), Planner, Reporter and Guest
 * read, Minimal Access and anything else none. */
static void level_map(long long level, char *perm, size_t n, char *role, size_t rn)
{
  const char *p = "none", *r = "";
  if (level >= 50)
    p = "admin", r = "owner";
  else if (level >= 40)
    p = "admin", r = "maintainer";
  else if (level >= 30)
    p = "write", r = "developer";
  else if (level >= 20)
    p = "read", r = "reporter";
  else if (level >= 15)
    p = "read", r = "planner";
  else if (level >= 10)
    p = "read", r = "guest";
  else if (level >= 5)
    r = "minimal_access";
  snprintf(perm, n, "%s", p);
  snprintf(role, rn, "%s", r);
}

int al_gl_user_permission(al_ghapi *c, const char *tok, const char *repo, const char *user,
                          char *perm, size_t n, char *role, size_t rn, al_error *err)
{
  snprintf(perm, n, "none");
  if (rn)
    role[0] = '\0';
  const char *why = "missing";
  if (!user || al_gitlab_username_check(user, &why) < 0)
    return al_error_set(err, EINVAL, "GitLab user `%s`: %s", user ? user : "", why);
  char pe[600];
  if (al_gl_project_escape(repo, pe, sizeof pe, err) < 0)
    return -1;
  long long id;
  if (user_id(c, tok, user, &id, err) < 0)
    return -1;
  if (id == 0)
    return 0; /* no such user: none */
  al_autofree char *path = al_strdup_printf("/projects/%s/members/all/%lld", pe, id);
  al_ghapi_resp r;
  if (al_ghapi_get(c, path, tok, &r, err) < 0)
    return -1;
  int rc = 0;
  json_t *lv = json_object_get(r.json, "access_level");
  json_t *mid = json_object_get(r.json, "id");
  const char *state = json_string_value(json_object_get(r.json, "state"));
  if (r.cls == AL_GHAPI_NOT_FOUND) {
    /* not a member, directly or through a group: none */
  } else if (r.cls != AL_GHAPI_OK || !json_is_integer(lv) || !json_is_integer(mid) ||
             json_integer_value(mid) != id) {
    rc = bad_answer(path, &r, EPROTO,
                    "expected the member's `id` (the one asked for) and "
                    "`access_level`",
                    err);
  } else if (state && strcmp(state, "active") != 0) {
    /* a blocked, banned or awaiting member acts as nobody */
    snprintf(role, rn, "inactive");
  } else {
    level_map((long long)json_integer_value(lv), perm, n, role, rn);
  }
  al_ghapi_resp_free(&r);
  return rc;
}
