/* The test forge's people (members.c): GitLab's Users API "List users"
 * by username and Project members API "Get a member of a project,
 * including inherited and invited members", from the fixture's top-level
 * `users` ([{id, username, name, state}]) and a project's `members`
 * ([{id, access_level, state?}]: the user's id and its level there,
 * direct or inherited alike). A project with an `audit` key has its
 * members answered by audit.c instead (its audit.members). */
#ifndef GLF_MEMBERS_H
#define GLF_MEMBERS_H

#include <jansson.h>

/* GET /users?username=NAME: *out (new reference) an array of the one user
 * whose username is NAME in any case, or empty; the status (200, or 400
 * without a username). */
unsigned glf_users(json_t *fixture, const char *username, json_t **out);

/* GET /projects/:id/members/all/:user_id on project p: *out the member
 * {id, username, name, state, access_level, expires_at, web_url} and 200,
 * or {"message": "404 Not found"} and 404 (not a member, no such user, an
 * id that is not a number). */
unsigned glf_member(json_t *fixture, json_t *p, const char *user_id, json_t **out);

#endif
