/* The field readers of serve's webhook parsers (webhook.c for GitHub,
 * webhook_gitlab.c, webhook_jira.c, webhook_linear.c): one rule for a
 * field's type, its bound and an embedded NUL (a JSON string may hold
 * \u0000, which strcmp would stop at), and one reading of a comment
 * command. jansson (json_object_get(3), json_string_length); pure. */
#ifndef AL_SERVE_WEBHOOK_JSON_H
#define AL_SERVE_WEBHOOK_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* obj.key (obj may be NULL or not an object) as a string of at most max
 * bytes without a NUL. 0 with *out borrowed from obj (alive while obj
 * is), or -1 with err (EINVAL) naming path: "PATH: expected a string",
 * "PATH: longer than MAX bytes or holds a NUL"; *out is "" then. */
int al_wh_json_string(const json_t *obj, const char *key, const char *path, size_t max,
                      const char **out, al_error *err);

/* The same for a field that may be absent: absent or null is 0 with *out
 * NULL; any other non-string is -1 ("PATH: expected a string or null"). */
int al_wh_json_opt_string(const json_t *obj, const char *key, const char *path, size_t max,
                          const char **out, al_error *err);

/* obj.key as a JSON integer 1..max. 0 with *out, or -1 with err (EINVAL)
 * "PATH: expected a whole number 1 to MAX"; *out is 0 then. */
int al_wh_json_int(const json_t *obj, const char *key, const char *path, long long max,
                   long long *out, al_error *err);

/* Does the comment's first line, spaces and tabs before it skipped, equal
 * command or start with it and a space, tab or line end? An empty command
 * matches nothing. */
bool al_wh_command_matches(const char *body, const char *command);

#endif
