/* The test forge's routes for the GitLab audit (audit.c): the settings a
 * project's fixture holds under "audit", in GitLab's documented shapes. */
#ifndef GLF_AUDIT_H
#define GLF_AUDIT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

/* The answer to GET /api/v4/projects/:id/<seg[2]...> for project p when it
 * is one of the audit's routes (*status set; the caller owns the value, a
 * JSON null for an empty body), else NULL (main.c goes on). */
json_t *glf_audit_answer(struct MHD_Connection *c, json_t *p, const char *method, char **seg,
                         size_t n, unsigned *status);

/* GET /api/v4/groups/:id and /groups/:id/variables from the fixture's
 * top-level "groups" ({id, full_path, parent_id, variables, hidden:
 * {group|variables: status}}), or NULL when seg is not one of them. */
json_t *glf_audit_group_answer(json_t *fixture, const char *method, char **seg, size_t n,
                               unsigned *status);

#endif
