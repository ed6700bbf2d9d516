/* What the forge drivers (forge/github.c, gitlab_ops.c, gitlab_review.c,
 * gitlab_members.c) share: the error for an answer they cannot use, a
 * list read item by item through a reducer, and a string or null. Private
 * to forge/: callers use the seam (forge/forge.h). */
#ifndef AL_FORGE_DRIVER_H
#define AL_FORGE_DRIVER_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"
#include "forge/ghapi.h"

/* Fill err (errno e) with "[FORGE ]METHOD PATH: [WHAT: ]ANSWER", ANSWER
 * being al_ghapi_describe(r) (the status and the forge's message, never a
 * header). forge: "GitLab", or NULL for GitHub (whose messages predate the
 * second driver and carry no prefix). what may be NULL. Returns -1. */
int al_forge_answer_error(const char *forge, const char *method, const char *path,
                          const al_ghapi_resp *r, int e, const char *what, al_error *err);

/* GET path as a paginated list (al_ghapi_list: at most max items, the
 * Link header followed under the API base) and reduce each item with fn:
 * fn returns a new reference to keep, or NULL to skip the item. *out is
 * always a new array the caller owns (json_decref), holding what was read
 * even when the list failed part way or was cut at max (then -1 with err,
 * as al_ghapi_list). */
int al_forge_list_reduced(al_ghapi *c, const char *tok, const char *path, size_t max,
                          json_t *(*fn)(json_t *v), json_t **out, al_error *err);

/* v when it is a JSON string, else NULL (a borrowed reference, for
 * json_pack's "O*"). */
json_t *al_forge_str_or_null(json_t *v);

#endif
