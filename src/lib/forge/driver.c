/* What the forge drivers share: see forge/driver.h. */
#include "forge/driver.h"

int al_forge_answer_error(const char *forge, const char *method, const char *path,
                          const al_ghapi_resp *r, int e, const char *what, al_error *err)
{
  char d[600];
  al_ghapi_describe(r, d, sizeof d);
  return al_error_set(err, e, "%s%s%s %s: %s%s%s", forge ? forge : "", forge ? " " : "", method,
                      path, what ? what : "", what ? ": " : "", d);
}

int al_forge_list_reduced(al_ghapi *c, const char *tok, const char *path, size_t max,
                          json_t *(*fn)(json_t *v), json_t **out, al_error *err)
{
  json_t *items = NULL;
  al_ghapi_list_info st;
  int r = al_ghapi_list(c, path, tok, max, &items, &st, err);
  *out = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *o = fn(v);
    if (o)
      json_array_append_new(*out, o);
  }
  json_decref(items);
  return r;
}

json_t *al_forge_str_or_null(json_t *v)
{
  return json_is_string(v) ? v : NULL;
}
