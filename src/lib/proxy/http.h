/* Strict HTTP/1.1 request-head parser for the egress proxy (RFC 9112 §2-§7,
 * RFC 9110 §5). Zero-copy: every pointer in al_http_request points into the
 * caller's buffer, which must outlive the request.
 *
 * Refused (the reason code becomes X-Airlock-Deny): a head over
 * AL_HTTP_HEAD_MAX bytes or AL_HTTP_MAX_HEADERS fields; any line end but
 * CRLF; obs-fold; whitespace before a colon; NUL, control or non-ASCII bytes;
 * a second Host or Content-Length; Content-Length that is not plain digits;
 * Content-Length together with Transfer-Encoding; any Transfer-Encoding but
 * exactly "chunked"; Connection options naming framing headers; a
 * Proxy-Connection other than keep-alive/close. */
#ifndef AL_PROXY_HTTP_H
#define AL_PROXY_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/host.h"

#define AL_HTTP_HEAD_MAX 8192
#define AL_HTTP_MAX_HEADERS 64

typedef struct al_http_header {
  const char *name; /* as sent (case preserved) */
  size_t name_len;
  const char *value; /* OWS trimmed */
  size_t value_len;
} al_http_header;

typedef struct al_http_request {
  const char *method;
  size_t method_len;
  const char *target; /* request-target, raw */
  size_t target_len;
  int version_minor; /* HTTP/1.<minor>: 0 or 1 */
  al_http_header headers[AL_HTTP_MAX_HEADERS];
  size_t n_headers;
  const al_http_header *host; /* the Host field, or NULL */
  int64_t content_length;     /* -1 when absent */
  bool chunked;               /* Transfer-Encoding: chunked */
  size_t head_len;            /* bytes of the head including the final CRLFCRLF */
} al_http_request;

/* Parse the request head at the start of buf[0..len). Returns head_len (> 0)
 * when a complete valid head is present, 0 when more bytes are needed (and
 * nothing seen so far is invalid), -1 with a static reason code in *why
 * ("bare-lf", "obs-fold", "duplicate-host", "cl-and-te", ...). */
int al_http_parse_head(const char *buf, size_t len, al_http_request *req, const char **why);

/* Case-insensitive compare of a header's name with a lower-case name. */
bool al_http_header_is(const al_http_header *h, const char *lname);

/* True when header `h` is hop-by-hop for a forward proxy: Connection,
 * Keep-Alive, TE, Trailer, Upgrade, Transfer-Encoding, Host, any Proxy-*,
 * or named in one of the request's Connection fields (RFC 9110 §7.6.1). */
bool al_http_header_is_hop(const al_http_request *req, const al_http_header *h);

/* Parse an absolute-form target "http://host[:port][/path][?query]"
 * (RFC 9112 §3.2.2). Only the http scheme; no userinfo, no fragment; an
 * empty path becomes "/". *path points into target (or at a static "/").
 * Returns 0 or -1 with *why. */
int al_http_absolute_target(const char *target, size_t len, al_host *host, uint16_t *port,
                            const char **path, size_t *path_len, const char **why);

/* Parse a Host field value "host[:port]" (RFC 9110 §7.2); port defaults to
 * `default_port`. Returns 0 or -1 with *why. */
int al_http_host_value(const char *value, size_t len, uint16_t default_port, al_host *host,
                       uint16_t *port, const char **why);

/* The reason phrase of an HTTP status airlock answers with itself (RFC 9110
 * section 15: 400, 401, 403, 408, 411, 413, 415, 417, 431, 502, 503, 504);
 * "Error" for any other. Static string. */
const char *al_http_reason(int status);

#endif
