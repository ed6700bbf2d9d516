/* The webhook parsers' field readers: see webhook_json.h. */
#include "serve/webhook_json.h"

#include <errno.h>
#include <string.h>

static int bounded(const json_t *v, const char *path, size_t max, const char **out, al_error *err)
{
  if (json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
    return al_error_set(err, EINVAL, "%s: longer than %zu bytes or holds a NUL", path, max);
  *out = json_string_value(v);
  return 0;
}

int al_wh_json_string(const json_t *obj, const char *key, const char *path, size_t max,
                      const char **out, al_error *err)
{
  *out = ""; /* set on every path, the refusals' included */
  const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  if (!json_is_string(v))
    return al_error_set(err, EINVAL, "%s: expected a string", path);
  return bounded(v, path, max, out, err);
}

int al_wh_json_opt_string(const json_t *obj, const char *key, const char *path, size_t max,
                          const char **out, al_error *err)
{
  *out = NULL;
  const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return al_error_set(err, EINVAL, "%s: expected a string or null", path);
  return bounded(v, path, max, out, err); /* *out stays NULL on a refusal */
}

int al_wh_json_int(const json_t *obj, const char *key, const char *path, long long max,
                   long long *out, al_error *err)
{
  *out = 0;
  const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
    return al_error_set(err, EINVAL, "%s: expected a whole number 1 to %lld", path, max);
  *out = (long long)json_integer_value(v);
  return 0;
}

bool al_wh_command_matches(const char *body, const char *command)
{
  while (*body == ' ' || *body == '\t')
    body++;
  size_t cl = strlen(command);
  if (cl == 0 || strncmp(body, command, cl) != 0)
    return false;
  char c = body[cl];
  return c == '\0' || c == '\n' || c == '\r' || c == ' ' || c == '\t';
}
