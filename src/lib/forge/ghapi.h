/* A small read-only GitHub REST client for the forge checks (libcurl).
 *
 * The broker's client (broker/github.h) mints and revokes tokens and keeps
 * its HTTP layer private; this one does plain GETs of repository settings
 * for `airlock audit`, with the same conventions:
 *   - Accept: application/vnd.github+json, X-GitHub-Api-Version: 2022-11-28
 *     ("Getting started with the REST API", "API Versions");
 *   - no redirects; https only, http only when the API URL is a loopback
 *     address (broker/config.h al_api_url_check);
 *   - a body cap of 4 MiB; network errors and 5xx retried (3 attempts,
 *     backoff 250 ms doubling); 403/429 with Retry-After or
 *     x-ratelimit-remaining: 0 waited for up to 60 s ("Rate limits for the
 *     REST API"), else returned to the caller as they are;
 *   - lists are followed through `Link: <...>; rel="next"` ("Using
 *     pagination in the REST API"), only to URLs under the same API base.
 * A bearer token is never logged or put in an error message.
 * Not thread-safe: one al_ghapi per thread. */
#ifndef AL_FORGE_GHAPI_H
#define AL_FORGE_GHAPI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct al_ghapi al_ghapi;

/* One response. `json` is the parsed body (NULL when not JSON); `message`
 * is the API's own `message` field, sanitised to printable ASCII ("" when
 * absent). Free with al_ghapi_resp_free(). */
typedef struct al_ghapi_resp {
  long status;
  json_t *json;
  char message[256];
} al_ghapi_resp;

/* api_url: "scheme://host[:port][/prefix]" without a trailing slash (one is
 * stripped); checked with al_api_url_check. ca_file: extra trust anchors
 * (PEM) used instead of the system store, or NULL. timeout_ms: per request,
 * 0 = 30 s. On success *out is a new client (al_ghapi_free). EINVAL for a
 * bad URL. */
int al_ghapi_new(const char *api_url, const char *ca_file, uint64_t timeout_ms, al_ghapi **out,
                 al_error *err);
void al_ghapi_free(al_ghapi *c);

/* Pin host names to addresses, as the egress proxy's `network.pin` does:
 * entries in curl's CURLOPT_RESOLVE form "HOST:PORT:ADDRESS" (copied).
 * NULL or an empty list clears them. Used by the ticket supervisor so a
 * pinned test forge is reached exactly where the proxy reaches it. */
void al_ghapi_set_resolve(al_ghapi *c, const char *const *entries);

/* The API base URL as configured (no trailing slash). */
const char *al_ghapi_base(const al_ghapi *c);

/* GET `path` (starting with '/', already percent-encoded, may carry a
 * query) with `Authorization: Bearer <bearer>` (NULL: anonymous). Any HTTP
 * status is a success here (r->status says which); -1 with err only when no
 * HTTP answer came (ECONNREFUSED / ETIMEDOUT after the retries) or the body
 * was over the cap (EFBIG). r is overwritten (free it afterwards). */
int al_ghapi_get(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r,
                 al_error *err);

/* GET a list endpoint and every following page (at most 20). On a 200 for
 * every page, r->json is one array holding all items; on the first non-200
 * page r is that page's response. Returns as al_ghapi_get. */
int al_ghapi_get_list(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r,
                      al_error *err);

void al_ghapi_resp_free(al_ghapi_resp *r);

/* Percent-encode a path part such as a branch name (RFC 3986 §3.3:
 * unreserved characters and '/' kept, everything else %XX; GitHub takes a
 * branch name with slashes as-is in these routes). malloc'd. */
char *al_ghapi_escape(const char *segment);

#endif
