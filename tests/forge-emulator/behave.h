/* GitHub behaviours of the test forge that cut across routes (behave.c):
 *
 *   - pagination of every list route: `per_page` (default 30, max 100),
 *     `page` (from 1), a `Link` header with first/prev/next/last when there
 *     is more than one page ("Using pagination in the REST API");
 *   - x-ratelimit-* headers on every REST answer, and switchable rate limits
 *     ("Rate limits for the REST API"): a primary limit (403/429 with
 *     x-ratelimit-remaining 0 and x-ratelimit-reset), a secondary limit with
 *     or without Retry-After;
 *   - faults for tests: a chosen status on a chosen page of a route, or a
 *     page padded past a client's size cap;
 *   - renamed repositories: /repos/{old}/... answers 301 with a Location on
 *     /repositories/{id}/..., which is served ("Best practices for using the
 *     REST API" § Follow redirects);
 *   - JWT-shaped `ghs_` installation tokens and a revocation that takes
 *     effect only after a delay.
 * Switched through the admin listener (see README.md "Admin listener"). */
#ifndef FORGE_BEHAVE_H
#define FORGE_BEHAVE_H

#include <stdbool.h>

#include "forge.h"

/* Before routing (lock held). Returns true when the request was answered
 * here (a fault, a rate limit, a rename's 301). Otherwise *path_out may be
 * set to a rewritten path (malloc'd: /repositories/{id}/x → /repos/o/r/x)
 * that the router must use instead of rq->path. */
bool forge_behave_pre(struct forge_req *rq, struct forge_resp *resp, char **path_out);

/* After routing (lock held): paginate a GET list answer, add rate-limit
 * headers, pad a page when a fault says so. */
void forge_behave_post(struct forge_req *rq, struct forge_resp *resp);

/* Admin routes (lock held): POST /faults, GET /faults, POST /settings,
 * POST /renames, POST /installations/{id}/suspend. True when handled. */
bool forge_behave_admin(struct forge_req *rq, struct forge_resp *resp);

/* A new installation token value into out (>= 1024 bytes): "ghs_" + 36..76
 * base62, or with settings.token_format "jwt" a JWT-shaped
 * "ghs_<b64url header>.<b64url claims>.<b64url signature>" (the new
 * stateless tokens). */
int forge_behave_token_value(char *out, size_t out_size);

/* Milliseconds a revocation waits before it takes effect (settings
 * revoke_delay_ms; 0 = at once). */
long long forge_behave_revoke_delay_ms(void);

/* Monotonic milliseconds (CLOCK_MONOTONIC). */
long long forge_mono_ms(void);

#endif
