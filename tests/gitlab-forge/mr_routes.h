/* The test forge's merge request reads for the review (mr_routes.c). */
#ifndef GL_FORGE_MR_ROUTES_H
#define GL_FORGE_MR_ROUTES_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* Answer seg[0..n) (seg[0] "projects", seg[1] the project's id or path,
 * already resolved to p) when it is one of these routes: *ret set and
 * true; false when it is not (the caller answers 404). repos is the
 * --repos directory (NULL: none), tls whether the forge speaks HTTPS (for
 * the Link header's URLs), maintainer whether the caller holds the
 * Maintainer's token, author the username of the caller, body the
 * request's JSON object or NULL. */
bool gl_mr_route(struct MHD_Connection *c, const char *method, char **seg, size_t n, json_t *p,
                 json_t *body, const char *repos, bool tls, bool maintainer, const char *author,
                 enum MHD_Result *ret);

#endif
