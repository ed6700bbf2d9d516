/* Strict HTTP/1.1 head parsers (RFC 9112 §2-§7, RFC 9110 §5): the request
 * head (the egress proxy, the forge gateway, the model relay) and the
 * response head (the model relay's upstream). Zero-copy: every pointer in
 * al_http_request / al_http_response points into the caller's buffer, which
 * must outlive it.
 *
 * Refused (the reason code becomes X-Airlock-Deny): a head over
 * AL_HTTP_HEAD_MAX bytes or AL_HTTP_MAX_HEADERS fields; any line end but
 * CRLF; obs-fold; whitespace before a colon; NUL, control or non-ASCII bytes;
 * a second Host or Content-Length; Content-Length that is not plain digits;
 * Content-Length together with Transfer-Encoding; any Transfer-Encoding but
 * exactly "chunked"; Connection options naming framing headers; a
 * Proxy-Connection other than keep-alive/close. */
#ifndef AL_NET_HTTP_H
#define AL_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/host.h"

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

/* The same with a head of at most `max` bytes instead of AL_HTTP_HEAD_MAX
 * (the model relay takes 64 KiB). */
int al_http_parse_head_max(const char *buf, size_t len, size_t max, al_http_request *req,
                           const char **why);

#define AL_HTTP_RESP_HEAD_MAX 65536
#define AL_HTTP_RESP_MAX_HEADERS 96

typedef struct al_http_response {
  int version_minor;  /* HTTP/1.<minor>: 0 or 1 */
  int status;         /* 100..599 */
  const char *reason; /* reason-phrase, may be empty */
  size_t reason_len;
  al_http_header headers[AL_HTTP_RESP_MAX_HEADERS];
  size_t n_headers;
  int64_t content_length;  /* -1 when absent */
  bool chunked;            /* Transfer-Encoding present, chunked its last coding */
  size_t transfer_codings; /* codings listed in Transfer-Encoding (1: chunked alone) */
  size_t head_len;         /* bytes of the head including the final CRLFCRLF */
} al_http_response;

/* Parse one response head (RFC 9112 §4 status line, §5 fields, §6 framing)
 * at the start of buf[0..len). Returns head_len (> 0), 0 when more bytes
 * are needed, -1 with a static reason in *why. Refused as for requests
 * (line ends other than CRLF, obs-fold, space before a colon, bytes that
 * are NUL, control or non-ASCII, a head over AL_HTTP_RESP_HEAD_MAX or
 * AL_HTTP_RESP_MAX_HEADERS fields), and: a status line other than
 * "HTTP/1.0|1.1 SP 3DIGIT [SP reason]" with 100..599 ("bad-status-line");
 * a second Content-Length ("duplicate-content-length") or one that is not
 * 1-15 plain digits ("bad-content-length", so "+2", "2, 2" and 2^64 are
 * refused); Transfer-Encoding sent twice, with a coding that is not a bare
 * token, or without chunked as its last and only chunked coding
 * ("bad-transfer-encoding"); Content-Length with Transfer-Encoding
 * ("cl-and-te", RFC 9112 §6.3 item 3). A 1xx head is returned like any
 * other: the caller skips it (RFC 9110 §15.2). */
int al_http_parse_response_head(const char *buf, size_t len, al_http_response *rsp,
                                const char **why);

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

/* ---- a response head on the plain-HTTP path ---- */

/* Read one response head at buf[0..len) with al_http_parse_response_head
 * and write it to out without the fields named X-Airlock or X-Airlock-*
 * (any case): those are the proxy's own words (X-Airlock-Deny), which an
 * origin must not speak to the client (issue #26). The status line is
 * copied as sent, every other field as "name: value" CRLF; out must have
 * room for len + AL_HTTP_RESP_MAX_HEADERS bytes. Returns the head's length
 * (> 0) with *out_len and *status set, 0 when more bytes are needed, -1
 * with the parser's *why. */
int al_http_response_strip(const char *buf, size_t len, char *out, size_t *out_len, int *status,
                           const char **why);

/* The reason phrase of an HTTP status airlock answers with itself (RFC 9110
 * section 15: 400, 401, 403, 408, 411, 413, 415, 417, 431, 502, 503, 504);
 * "Error" for any other. Static string. */
const char *al_http_reason(int status);

#endif
