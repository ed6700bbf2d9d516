/* The fields GitHub's schemas require that the test forge's renderers leave
 * out (shapes.c): the hypermedia URLs and the counters of `simple-user`,
 * `repository`/`full-repository`, `integration`, `installation`, `issue`
 * and `issue-comment` in GitHub's OpenAPI description (@octokit/openapi),
 * checked by tests/integration/forge-schema.sh. Each adds what is missing
 * to o (never overwrites) and returns o. Lock held. */
#ifndef FORGE_SHAPES_H
#define FORGE_SHAPES_H

#include "forge.h"

json_t *forge_shape_user(json_t *o);
json_t *forge_shape_repo(json_t *o);
json_t *forge_shape_app(json_t *o);
json_t *forge_shape_installation(json_t *o);
json_t *forge_shape_issue(json_t *o, const char *full);
json_t *forge_shape_comment(json_t *o, const char *full);
json_t *forge_shape_pull(json_t *o, const char *full);
json_t *forge_shape_review(json_t *o, const char *full, long long pull);

#endif
