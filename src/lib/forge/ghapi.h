/* The one forge client: every GitHub REST call airlock makes goes through
 * it (the broker's mint and revoke, `airlock audit`, the supervisor's pull
 * request and comments, the review, `airlock serve`). One libcurl setup,
 * one retry and rate-limit policy, one pagination rule. GitHub specifics
 * live here and in ghwire.[ch]; another forge would plug in behind these
 * same calls.
 *
 * Every request (docs.github.com, REST API version 2022-11-28):
 *   - Accept: application/vnd.github+json, X-GitHub-Api-Version, a
 *     User-Agent ("Getting started with the REST API", "API Versions");
 *     Authorization: Bearer <token> when a bearer is given; a JSON body
 *     with Content-Type: application/json;
 *   - https only; http only when the API URL is a loopback address
 *     (forge/appconfig.h al_api_url_check);
 *   - redirects 301/302/307/308 followed by the client itself, with the
 *     same method and body, only to URLs under the API base (same scheme,
 *     host, port and path prefix: al_ghapi_url_under), at most 5; reported
 *     in the response (moved_status, moved_to) so a caller can say "the
 *     repository was renamed" ("Best practices for using the REST API" §
 *     Follow redirects). Anything else is REDIRECTED, not followed;
 *   - rate limits ("Rate limits for the REST API" § Exceeding the rate
 *     limit; "Best practices..." § Handle rate limit errors appropriately):
 *     Retry-After seconds; else x-ratelimit-remaining 0 until
 *     x-ratelimit-reset; else (a secondary limit) at least one minute,
 *     doubling for each further secondary limit. A wait that does not fit
 *     in the call's budget (the client's deadline, and opts.max_wait_ms per
 *     call) is not started: the response is returned as RATE_LIMITED with
 *     `note` saying how long GitHub asked for and how long was left. The
 *     client never retries a rate-limited request early;
 *   - transport errors and 5xx retried (opts.retries times, 250 ms backoff
 *     doubling to 8 s, within the same budget) for GET/HEAD/PUT/DELETE;
 *     for POST/PATCH only when the connection was never made, unless
 *     opts.retry_unsafe (token minting: a retry cannot do harm);
 *   - a body cap (opts.body_max, default 4 MiB): a larger answer is an
 *     error (EFBIG), never a truncated document.
 * A bearer token is never logged or put in an error message (messages name
 * the method and path only; a token never appears in a path).
 *
 * Thread-safe once configured: the setters (al_ghapi_set_*) must not run
 * concurrently with requests; requests may run concurrently (each makes
 * its own curl handle). */
#ifndef AL_FORGE_GHAPI_H
#define AL_FORGE_GHAPI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "forge/ghwire.h"

typedef struct al_ghapi al_ghapi;

/* Construction options. All zero = the defaults named per field. */
typedef struct al_ghapi_opts {
  const char *ca_file;        /* PEM trust anchors instead of the system store, or NULL (copied) */
  uint64_t timeout_ms;        /* one HTTP exchange; 0 = 30 s */
  unsigned retries;           /* extra attempts on transport errors/5xx; 0 = 2; AL_GHAPI_NO_RETRY */
  uint64_t max_wait_ms;       /* per call: total rate-limit waits + backoff; 0 = 10 min */
  uint64_t secondary_wait_ms; /* first wait on a secondary limit without Retry-After; 0 = 60 s
                                 (GitHub's minimum: lower it only against a test forge) */
  size_t body_max;            /* response body cap in bytes; 0 = 4 MiB */
  const char *user_agent;     /* NULL = "airlock/0.1" (copied) */
  bool retry_unsafe;          /* also retry POST/PATCH on 5xx and mid-transfer errors */
  bool wipe_bodies;           /* bodies may hold secrets: cleanse every copy we free */
} al_ghapi_opts;

#define AL_GHAPI_NO_RETRY ((unsigned)-1)

/* One answer. Free with al_ghapi_resp_free() (safe on a zeroed struct).
 *   status      the final HTTP status (after redirects followed);
 *   cls         what it means (ghwire.h); for RATE_LIMITED the waits the
 *               budget allowed were already made;
 *   json        the parsed body (NULL when empty or not JSON), owned;
 *   message     GitHub's `message` field, sanitised (printable ASCII), "" if absent;
 *   note        the client's own explanation when it did something or gave
 *               up: "followed 301 to /repos/o/new", "secondary rate limit
 *               without Retry-After: GitHub asks to wait 60s, which does
 *               not fit in the 4s left before the deadline; not retried", "redirect to https://x/
 * not followed: outside the API base"; "" otherwise; moved_status the first redirect followed
 * (301/302/307/308), 0 if none; moved_to    the final URL's path and query relative to the API base
 *               when a redirect was followed, "" otherwise;
 *   rate        which rate limit a RATE_LIMITED answer reports;
 *   retry_after_s, rl_remaining, rl_reset: the headers of the final answer
 *               (-1 when absent); rate_waits: how many rate-limit waits
 *               the client made for this call. */
typedef struct al_ghapi_resp {
  long status;
  al_ghapi_class cls;
  json_t *json;
  char message[256];
  char note[384];
  long moved_status;
  char moved_to[512];
  al_ghapi_rate rate;
  long long retry_after_s;
  long long rl_remaining;
  long long rl_reset;
  unsigned rate_waits;
  bool not_modified; /* answered 304 to the ETags kept (al_ghapi_set_etags): the body
                        is the kept one, status 200 */
} al_ghapi_resp;

/* api_url: "scheme://host[:port][/prefix]" (trailing slashes stripped),
 * checked with al_api_url_check. o may be NULL (defaults). On success *out
 * is a new client (al_ghapi_free). EINVAL for a bad URL. */
int al_ghapi_open(const char *api_url, const al_ghapi_opts *o, al_ghapi **out, al_error *err);

/* Shorthand for al_ghapi_open with only ca_file and timeout_ms set. */
int al_ghapi_new(const char *api_url, const char *ca_file, uint64_t timeout_ms, al_ghapi **out,
                 al_error *err);
void al_ghapi_free(al_ghapi *c);

/* Pin host names to addresses, as the egress proxy's `network.pin` does:
 * entries in curl's CURLOPT_RESOLVE form "HOST:PORT:ADDRESS" (copied).
 * NULL or an empty list clears them. */
void al_ghapi_set_resolve(al_ghapi *c, const char *const *entries);

/* An absolute deadline on al_now_ms()'s monotonic clock (ms); 0 = none.
 * No request starts after it, an exchange's timeout is cut to it, and no
 * wait (rate limit, backoff) is begun that would end after it. A run
 * passes its own deadline so the forge never outlives it. */
void al_ghapi_set_deadline(al_ghapi *c, uint64_t deadline_ms);

/* Conditional GETs (forge/etags.h): every GET without a body sends
 * If-None-Match with the ETags e keeps for its path; a 304 naming one is
 * answered with the kept body as a 200 (r->not_modified set); a 304 naming
 * none is asked again unconditionally; a 200 with an ETag is kept. e is
 * borrowed (NULL: none). Set before requests run. */
typedef struct al_etags al_etags;
void al_ghapi_set_etags(al_ghapi *c, al_etags *e);

/* The API base URL as configured (no trailing slash). */
const char *al_ghapi_base(const al_ghapi *c);

/* One request. method: "GET", "POST", "PATCH", "PUT", "DELETE", ...;
 * path: starts with '/', already percent-encoded (al_ghapi_escape), may
 * carry a query; bearer: the token for `Authorization: Bearer`, or NULL
 * (anonymous); body: borrowed, sent as compact JSON, or NULL. r is
 * overwritten (free it afterwards, whatever the return).
 * Returns 0 when an HTTP answer came — any status: read r->cls —
 * and -1 with err when none did: ECONNREFUSED/ETIMEDOUT (transport, after
 * the retries), ETIMEDOUT (the deadline passed), EFBIG (body over the
 * cap), EINVAL (a bad path). err->msg names the method and path. */
int al_ghapi_request(al_ghapi *c, const char *method, const char *path, const char *bearer,
                     json_t *body, al_ghapi_resp *r, al_error *err);

/* How many HTTP requests this process has sent to a forge through any
 * al_ghapi client so far (each attempt counts, retries and 304s too; a
 * request that never left because curl could not start does not). Thread-
 * safe; never resets. The run record's per-phase request counts are
 * differences of this (docs/run-record.md "requests"). */
uint64_t al_ghapi_requests_sent(void);

/* The same count split by what the forge's rate limit makes of it:
 *   sent          every HTTP attempt (as al_ghapi_requests_sent);
 *   not_modified  those answered 304 Not Modified (a conditional request
 *                 GitHub does not count against the primary rate limit:
 *                 "Best practices for using the REST API" § Use
 *                 conditional requests if appropriate);
 *   app           those sent with an App JWT as the bearer (the broker's
 *                 App reads and token mints: the App's own budget, not
 *                 the installation's);
 *   rejected      those answered 401 (the credential refused: the broker's
 *                 check that a revoked token is dead).
 * _process: this process so far (thread-safe, never resets); _thread: the
 * calling thread's own requests so far (a broker job runs on its own
 * thread, so its counts are the thread's at the job's end). */
typedef struct al_ghapi_counts {
  uint64_t sent;
  uint64_t not_modified;
  uint64_t app;
  uint64_t rejected; /* answered 401: the credential was refused (a dead
                        token's check after its revocation) */
} al_ghapi_counts;
void al_ghapi_counts_process(al_ghapi_counts *out);

/* The lowest x-ratelimit-remaining this process has been answered so far
 * (any token's budget) and the x-ratelimit-reset (epoch seconds) of that
 * answer; -1 and -1 when no answer carried one. Thread-safe. What a
 * scheduler needs to slow down before the budget is spent ("Rate limits
 * for the REST API" § Checking the status of your rate limit). */
void al_ghapi_rate_seen(long long *remaining, long long *reset);
void al_ghapi_counts_thread(al_ghapi_counts *out);

/* GET, as al_ghapi_request with no body. */
int al_ghapi_get(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r,
                 al_error *err);

/* How a list call ended. Anything but COMPLETE means *items is NOT the
 * whole list; the caller must say so (and fail closed where it judges). */
typedef enum al_ghapi_list_status {
  AL_GHAPI_LIST_COMPLETE = 0, /* every page read, no `next` left */
  AL_GHAPI_LIST_CAPPED,       /* max_items reached while the server had more */
  AL_GHAPI_LIST_HTTP,         /* a page answered other than 200 (see http_status, cls) */
  AL_GHAPI_LIST_TRANSPORT,    /* no HTTP answer for a page (network, deadline) */
  AL_GHAPI_LIST_TOO_BIG,      /* a page over the body cap */
  AL_GHAPI_LIST_BAD_PAGE,     /* a page that is not a JSON array (or lacks `field`), a
                                 malformed Link, or a `next` link outside the API base */
} al_ghapi_list_status;

/* "complete", "capped", "HTTP error", "transport error", "page too big",
 * "malformed page". */
const char *al_ghapi_list_status_name(al_ghapi_list_status s);

typedef struct al_ghapi_list_info {
  al_ghapi_list_status status;
  size_t pages;               /* pages read and kept */
  size_t items;               /* json_array_size(*items) */
  long http_status;           /* the page that stopped the list (LIST_HTTP), else 0 */
  al_ghapi_class cls;         /* its class (LIST_HTTP) */
  char message[256];          /* its GitHub `message` (LIST_HTTP), sanitised */
  char why[AL_ERROR_MSG_MAX]; /* one sentence: what stopped the list, on which page;
                                 "" when COMPLETE */
  long moved_status;          /* a redirect followed on the first page (a renamed repo) */
  char moved_to[512];
} al_ghapi_list_info;

/* GET a list endpoint and every following page ("Using pagination in the
 * REST API"): adds per_page=100 to path unless it already has a per_page,
 * then follows `Link: <...>; rel="next"` (al_link_next) only to URLs
 * under the API base, until a page has no `next`.
 * max_items: stop once this many items are held (0 = 100000); reaching it
 * while the server has more is LIST_CAPPED, never a silent end.
 * On return *items is ALWAYS a new array (owned by the caller) holding
 * every item read so far, and *st says how it ended (st must not be NULL).
 * Returns 0 only when st->status is COMPLETE; otherwise -1 with err (the
 * message is st->why), so a caller that only checks the return fails
 * closed. */
int al_ghapi_list(al_ghapi *c, const char *path, const char *bearer, size_t max_items,
                  json_t **items, al_ghapi_list_info *st, al_error *err);

/* As al_ghapi_list, for list endpoints that wrap the array in an object
 * (e.g. GET /installation/repositories: {"total_count", "repositories"}):
 * each page must be an object whose member `field` is an array. */
int al_ghapi_list_field(al_ghapi *c, const char *path, const char *field, const char *bearer,
                        size_t max_items, json_t **items, al_ghapi_list_info *st, al_error *err);

/* Old shape, kept while callers move: a GET of every page into r->json
 * (one array) when the list is COMPLETE; on an HTTP error page, r is that
 * page's answer (status, cls, message); any other incomplete end
 * (capped, too big, bad page, transport) is -1 with err. New code: use
 * al_ghapi_list. */
int al_ghapi_get_list(al_ghapi *c, const char *path, const char *bearer, al_ghapi_resp *r,
                      al_error *err);

void al_ghapi_resp_free(al_ghapi_resp *r);

/* One line for a message: "not found (HTTP 404: Not Found)",
 * "rate limited (HTTP 429; secondary rate limit without Retry-After: ...)",
 * "ok (HTTP 200; followed 301 to /repos/o/new)". Into out (outsz bytes). */
void al_ghapi_describe(const al_ghapi_resp *r, char *out, size_t outsz);

/* Percent-encode a path part such as a branch name (RFC 3986 §3.3:
 * unreserved characters and '/' kept, everything else %XX; GitHub takes a
 * branch name with slashes as-is in these routes). malloc'd. */
char *al_ghapi_escape(const char *segment);

#endif
