/* The test forge's writes a run's token could try beyond the merge request
 * and the notes (write_routes.c): what the hostile agent's env-mode control
 * needs to land where GitLab lets it (tests/integration/gitlab-hostile.sh). */
#ifndef GL_FORGE_WRITE_ROUTES_H
#define GL_FORGE_WRITE_ROUTES_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* Answer seg[0..n) (seg[0] "projects", seg[1] the project, resolved to p)
 * when it is one of these writes: *ret set and true; false when it is not.
 * access_level: the caller's role (30 Developer, 40 Maintainer), as GitLab
 * decides who may; author the caller's username; body the request's JSON
 * object or NULL. Each write that lands is appended to glf_writes(). */
bool glf_write_route(struct MHD_Connection *c, const char *method, char **seg, size_t n, json_t *p,
                     json_t *body, int access_level, const char *author, enum MHD_Result *ret);

/* The writes that landed, in order: [{method, route, project_id, author}]
 * (borrowed). */
json_t *glf_writes(void);

/* What the forge's state file adds (a new reference): {notes: every issue
 * note of fixture's projects, writes: glf_writes()}. */
json_t *glf_state(json_t *fixture);

#endif
