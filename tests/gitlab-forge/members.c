/* The test forge's people: see members.h. */
#include "members.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static json_t *user_by_id(json_t *fixture, long long id)
{
  size_t i;
  json_t *u;
  json_array_foreach(json_object_get(fixture, "users"), i, u)
  {
    if (json_integer_value(json_object_get(u, "id")) == id)
      return u;
  }
  return NULL;
}

unsigned glf_users(json_t *fixture, const char *username, json_t **out)
{
  if (!username || !*username) {
    *out = json_pack("{s:s}", "error", "username is missing (this test host lists no more)");
    return 400;
  }
  *out = json_array();
  size_t i;
  json_t *u;
  json_array_foreach(json_object_get(fixture, "users"), i, u)
  {
    const char *n = json_string_value(json_object_get(u, "username"));
    if (n && !strcasecmp(n, username))
      json_array_append_new(*out, json_deep_copy(u));
  }
  return 200;
}

unsigned glf_member(json_t *fixture, json_t *p, const char *user_id, json_t **out)
{
  char *end;
  long long id = strtoll(user_id, &end, 10);
  json_t *u = *end || id < 1 ? NULL : user_by_id(fixture, id);
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(p, "members"), i, m)
  {
    if (!u || json_integer_value(json_object_get(m, "id")) != id)
      continue;
    const char *state = json_string_value(json_object_get(m, "state"));
    char web[300];
    snprintf(web, sizeof web, "http://gitlab.test/%s",
             json_string_value(json_object_get(u, "username")));
    *out = json_pack("{s:I, s:O, s:O, s:s, s:O, s:n, s:s}", "id", (json_int_t)id, "username",
                     json_object_get(u, "username"), "name",
                     json_object_get(u, "name") ? json_object_get(u, "name") : json_null(), "state",
                     state ? state : "active", "access_level", json_object_get(m, "access_level"),
                     "expires_at", "web_url", web);
    return 200;
  }
  *out = json_pack("{s:s}", "message", "404 Not found");
  return 404;
}
