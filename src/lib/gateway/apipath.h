/* GitHub Enterprise-style API paths on the gateway's API host (issue #27):
 * gh, given a GH_HOST other than github.com, asks https://HOST/api/v3/...
 * for REST and https://HOST/api/graphql for GraphQL ("gh help
 * environment"; GitHub Enterprise Server's REST and GraphQL endpoints).
 * One normalisation step maps them onto the paths the rules (rules.h)
 * match, so both spellings meet the same rule: exact, case-sensitive
 * prefixes on the canonical path (al_gw_target_parse already refused
 * escaped separators and dot segments; nothing is decoded here, so no
 * spelling is decoded twice). */
#ifndef AL_GATEWAY_APIPATH_H
#define AL_GATEWAY_APIPATH_H

#include <stdbool.h>

#include "gateway/wire.h"

/* Rewrite path (canonical, NUL-terminated, < AL_GW_PATH_MAX) in place for
 * a connection to a host that serves only the API, whose API URL prefix
 * is api_prefix ("" for api.github.com-style hosts, "/api/v3" for GHE):
 *   - prefix "": "/api/v3/REST" becomes "/REST"; "/api/graphql" becomes
 *     "/graphql";
 *   - prefix non-empty: "/graphql" (the api.github.com spelling) and
 *     "/api/graphql" both become "/api/graphql";
 *   - anything else is left alone ("/api/v3" alone, "/api/v3x/…",
 *     "/API/v3/…" included: they meet no rule).
 * Returns true when the path is the GraphQL endpoint (after the rewrite). */
bool al_gw_api_path_normalize(const char *api_prefix, char path[AL_GW_PATH_MAX]);

/* The sides (rules.h AL_GW_SIDE_*) a request on a connection serving
 * `sides` is matched as, and its path for the matcher in out: on an
 * API-only host, al_gw_api_path_normalize; on a git-only host, a GHE-style
 * path ("/api/v3/…", "/api/graphql": gh with GH_HOST = the git host, as
 * for GitHub Enterprise, where one host serves both) is matched as an API
 * request, normalised the same way (an owner named "api" with a
 * repository "v3" cannot be reached over git there; GitHub reserves the
 * name); otherwise out is path and sides are unchanged. The forwarded path
 * is always the one the client sent. */
unsigned al_gw_api_path_map(unsigned sides, const char *api_prefix, const char *path,
                            char out[AL_GW_PATH_MAX]);

/* True when path (after al_gw_api_path_normalize) is the GraphQL endpoint
 * for api_prefix. */
bool al_gw_api_path_is_graphql(const char *api_prefix, const char *path);

#endif
