/* The GitHub REST rules the forge client applies, as pure functions over
 * bytes a server sent (no I/O, no libcurl: core library, unit-tested and
 * fuzzed in tests/fuzz/fuzz_ghwire.c).
 *
 *   - al_link_next: the `next` target of a `Link` header (RFC 8288 §3;
 *     "Using pagination in the REST API");
 *   - al_ghapi_classify: what an HTTP status means for a caller (not found,
 *     forbidden, rate limited, redirected, ...) ("Troubleshooting the REST
 *     API", "Rate limits for the REST API" § Exceeding the rate limit);
 *   - al_ghapi_rate_wait_ms: how long GitHub says to wait before a retry
 *     ("Best practices for using the REST API" § Handle rate limit errors
 *     appropriately);
 *   - al_ghapi_url_under: whether a URL a server handed us (Link, Location)
 *     stays under the configured API base, so a response can never send
 *     the caller's token to another host or path. */
#ifndef AL_FORGE_GHWIRE_H
#define AL_FORGE_GHWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an answer means for the caller. Every response of the forge client
 * carries one (al_ghapi_resp.cls); al_ghapi_class_name() names it. */
typedef enum al_ghapi_class {
  AL_GHAPI_OK = 0,       /* 2xx */
  AL_GHAPI_UNAUTHORIZED, /* 401: the credential is bad, expired or revoked */
  AL_GHAPI_FORBIDDEN,    /* 403 that is not a rate limit: the credential lacks a permission */
  AL_GHAPI_NOT_FOUND,    /* 404/410: absent, or hidden from this credential (GitHub answers
                            404 rather than 403 for private resources) */
  AL_GHAPI_RATE_LIMITED, /* 403/429 for a primary or secondary rate limit */
  AL_GHAPI_REDIRECTED,   /* 3xx the client did not follow (off the API base, a loop, no
                            Location, or 303/other) */
  AL_GHAPI_INVALID,      /* 400/409/422 and any other 4xx: the request was refused */
  AL_GHAPI_SERVER_ERROR, /* 5xx */
  AL_GHAPI_OTHER,        /* 1xx, 304 and anything else */
} al_ghapi_class;

/* Which rate limit a 403/429 reports. */
typedef enum al_ghapi_rate {
  AL_GHAPI_RATE_NONE = 0,
  AL_GHAPI_RATE_PRIMARY,   /* x-ratelimit-remaining: 0 */
  AL_GHAPI_RATE_SECONDARY, /* 429, or 403 with Retry-After or a "secondary rate limit" message */
} al_ghapi_rate;

/* "ok", "unauthorized", "forbidden", "not found", "rate limited",
 * "redirected", "invalid request", "server error", "unexpected answer". */
const char *al_ghapi_class_name(al_ghapi_class c);

/* Classify an answer. status: the HTTP status; message: GitHub's `message`
 * field (may be NULL); retry_after: the Retry-After header in seconds, -1
 * when absent; rl_remaining: x-ratelimit-remaining, -1 when absent. *rate
 * (may be NULL) says which rate limit it was. Per "Rate limits for the
 * REST API" § Exceeding the rate limit: a primary limit is a 403/429 with
 * x-ratelimit-remaining 0; a secondary limit is a 403/429 "with an error
 * message that indicates" it (we take any 429, a Retry-After, or a message
 * mentioning "rate limit" or "abuse"). Any other 403 is FORBIDDEN. */
al_ghapi_class al_ghapi_classify(long status, const char *message, long long retry_after,
                                 long long rl_remaining, al_ghapi_rate *rate);

/* Milliseconds to wait before retrying a rate-limited request, per "Best
 * practices for using the REST API": Retry-After seconds when present;
 * else, with x-ratelimit-remaining 0, until x-ratelimit-reset (UTC epoch
 * seconds; now_epoch is the caller's clock) plus one second; else
 * secondary_min_ms (GitHub: "at least one minute") doubled for each
 * earlier secondary wait of this request (`nth`, from 0), capped at 15
 * minutes. Never less than 1000 ms. */
uint64_t al_ghapi_rate_wait_ms(long long retry_after, long long rl_remaining, long long rl_reset,
                               long long now_epoch, unsigned nth, uint64_t secondary_min_ms);

/* Parse one `Link` header value (the bytes after "Link:", n of them, not
 * NUL-terminated; CR/LF allowed at the end) and return the target of the
 * link whose `rel` includes the type "next" (case-insensitive, RFC 8288
 * §3.3: a space-separated list, quoted or not), malloc'd, or NULL when
 * there is none. Sets *bad (may be NULL) when the value is malformed (an
 * unterminated <...> or quoted string, a target with control characters
 * or spaces, over 8 KiB) — a caller should then treat the page as
 * unreadable rather than the list as ended. */
char *al_link_next(const char *value, size_t n, bool *bad);

/* True when `url` is `base` itself or under it: same scheme, host and port
 * (compared case-insensitively as RFC 3986 §6.2.2.1 says for those) and
 * a path starting with base's path followed by '/' or '?' (so
 * https://api.github.com.evil/ and /api/v3x are refused). Refuses a URL
 * with userinfo, a fragment, a backslash, bytes outside printable ASCII,
 * or a dot segment ("/./", "/../", percent-encoded too) anywhere in the
 * path, since those could leave the base after normalisation. `base` is
 * "scheme://host[:port][/path]" without a trailing slash. */
bool al_ghapi_url_under(const char *base, const char *url);

/* Copy s into out (outsz bytes, NUL-terminated), printable ASCII only
 * (anything else becomes '?'), at most outsz-1 bytes. For GitHub's
 * `message` and for Location values quoted in errors. */
void al_ghapi_sanitise(const char *s, char *out, size_t outsz);

#endif
