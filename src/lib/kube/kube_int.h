/* Inside kube/: the one HTTPS request of the API client (client.c), shared
 * by the Lease calls and the Job runner (jobs.c). */
#ifndef AL_KUBE_INT_H
#define AL_KUBE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "kube/kube.h"

/* Is s a DNS subdomain name as the API's object and namespace names are
 * (lower-case letters, digits, '-', '.', 1 to 253 bytes)? */
bool al_kube_name_ok(const char *s);

/* One request to k->api + path (path begins with '/', query included),
 * with the bearer token read afresh, https only, the CA checked, no
 * proxy, no redirect; the body `json` (NULL: none) as application/json.
 * The response body goes to sink(ptr, 1, n, ud) (libcurl's write
 * callback; returning less than n stops the transfer). timeout_ms (0:
 * k->timeout_ms) bounds the whole transfer. Returns 0 with *status, 1
 * when a 2xx stream was ended by the timeout, 2 when the sink stopped a
 * 2xx stream, -1 with err (EIO) for the network or TLS. */
int al_kube_http(const al_kube *k, const char *method, const char *path, const char *json,
                 long timeout_ms, size_t (*sink)(char *, size_t, size_t, void *), void *ud,
                 long *status, al_error *err);

/* al_kube_http with the body collected (at most 1 MiB) into a malloc'd,
 * NUL-terminated *buf the caller frees. -1 with err, the transfer cut short
 * or the body too long included. */
int al_kube_get_body(const al_kube *k, const char *method, const char *path, const char *json,
                     char **buf, size_t *len, long *status, al_error *err);

#endif
