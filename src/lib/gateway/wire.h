/* The forge gateway's parsers of untrusted bytes: the origin-form request
 * target, git pkt-lines and the receive-pack command list,
 * and the forge's response head. Pure functions over buffers (no I/O), each
 * fuzzed (tests/fuzz/fuzz_gw_*.c). Both heads themselves are parsed by
 * airlock's one strict parser (net/http.h), chunked bodies by its one
 * decoder (net/chunked.h). */
#ifndef AL_GATEWAY_WIRE_H
#define AL_GATEWAY_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http.h"

/* ---- request target (RFC 9112 §3.2.1 origin-form, RFC 3986 §3.3) ---- */

#define AL_GW_PATH_MAX 2048

/* Check an origin-form target "/path[?query]" and split it. The path is
 * kept as sent when it is canonical, and refused otherwise, so that the
 * gateway and the forge cannot read it two ways: an empty segment ("//",
 * a trailing "/"), a "." or ".." segment, a backslash, a '#', a '%' not
 * followed by two hex digits, and the encodings %2F %2E %5C %00 and any
 * %XX below 0x20 or above 0x7e (any case). The query (after the first '?',
 * without it) must hold no "%00" and no '#'. path is NUL-terminated into
 * path[0..AL_GW_PATH_MAX). Returns 0, or -1 with a static reason in *why
 * ("target-not-origin-form", "path-empty-segment", "path-dot-segment",
 * "path-encoded-separator", "path-bad-escape", "path-backslash",
 * "target-too-long", "query-nul"). */
int al_gw_target_parse(const char *t, size_t len, char path[AL_GW_PATH_MAX], const char **query,
                       size_t *query_len, const char **why);

/* Write a query for the log: every parameter's value replaced by "*"
 * except service= (gitprotocol-http(5)); at most out_cap-1 bytes, always
 * NUL-terminated; an empty query gives "". */
void al_gw_query_redact(const char *q, size_t len, char *out, size_t out_cap);

/* The value of one hex digit c (0-9, a-f, A-F), or -1. */
int al_gw_hexval(unsigned char c);

/* Find parameter `name` in query q (name=value&...). Returns the number of
 * times it occurs; the first occurrence's value in *val and *val_len. */
int al_gw_query_param(const char *q, size_t len, const char *name, const char **val,
                      size_t *val_len);

/* ---- git pkt-line (gitprotocol-common(5), gitprotocol-v2(5)) ---- */

#define AL_PKT_MAX 65520 /* largest pkt-len, header included (LARGE_PACKET_MAX) */

typedef enum { AL_PKT_DATA, AL_PKT_FLUSH, AL_PKT_DELIM, AL_PKT_END } al_pkt_kind;

typedef struct al_pkt {
  al_pkt_kind kind;
  const char *data; /* DATA: points into the buffer, len bytes (may be 0) */
  size_t len;
} al_pkt;

/* Read one pkt-line at buf[0..len): 4 hex digits of length (header
 * included), "0000" flush, and in protocol v2 (`v2`) "0001" delim and
 * "0002" response-end. Returns the bytes it takes (> 0), 0 when more bytes
 * are needed, -1 with *why: "pkt-len-bad" (not hex), "pkt-len-reserved"
 * (0001-0003 outside v2, 0003 always), "pkt-too-long" (> 65520). */
int al_pkt_next(const char *buf, size_t len, bool v2, al_pkt *p, const char **why);

/* ---- receive-pack update request (gitprotocol-pack(5)) ---- */

#define AL_RP_MAX_CMDS 32
#define AL_RP_MAX_PUSH_OPTIONS 32
#define AL_RP_REQUEST_MAX (256 * 1024) /* bytes before the pack, commands + options */

typedef struct al_rp_cmd {
  char old_oid[65], new_oid[65]; /* lower-case hex, 40 (SHA-1) or 64 (SHA-256) digits */
  char ref[256];                 /* refname, validated (git-check-ref-format(1) rules) */
} al_rp_cmd;

typedef struct al_rp_request {
  al_rp_cmd cmd[AL_RP_MAX_CMDS];
  size_t n_cmds;
  size_t n_shallow;
  size_t n_push_options;
  bool push_options;  /* the client asked for the push-options capability */
  bool report_status; /* report-status or report-status-v2 (gitprotocol-pack(5)) */
  unsigned side_band; /* 0, or the largest pkt-len of the side band asked for:
                         1000 (side-band) or 65520 (side-band-64k) */
} al_rp_request;

/* Parse the update request at the start of the (decoded) receive-pack
 * body: *("shallow" SP oid) then the command list (old SP new SP ref, the
 * first with NUL + capabilities), a flush, and when push-options was asked
 * for the options and a second flush. A push certificate is refused.
 * Returns the bytes taken through the last flush (> 0; the pack follows),
 * 0 when more bytes are needed (refused by the caller past
 * AL_RP_REQUEST_MAX), -1 with *why: a pkt-line reason, "rp-no-commands",
 * "rp-no-capabilities", "rp-bad-command", "rp-bad-oid", "rp-bad-ref",
 * "rp-too-many-commands", "rp-push-cert", "rp-bad-push-option",
 * "rp-too-many-push-options". */
int al_rp_parse(const char *buf, size_t len, al_rp_request *out, const char **why);

/* Add one push option to a parsed update request (GitLab's `ci.skip`:
 * docs.gitlab.com user/project/push_options; gitprotocol-pack(5)). buf[0..
 * req_len) is exactly what al_rp_parse took (shallows, commands, flush, and
 * when push-options was asked for the options and their flush). When the
 * client did not ask for push-options, " push-options" is added to the
 * first command's capability list (before a trailing LF) with its pkt-len
 * recomputed, and an options section (opt, then a flush) follows the
 * command list's flush; when it did, opt goes before the options' flush.
 * opt: printable ASCII, sent as one pkt-line without LF as git does
 * (send-pack.c). Writes at most out_cap bytes to out, *out_len the length.
 * Returns 0, or -1 with *why: al_rp_parse's reasons ("rp-partial" when
 * req_len is not the whole request), "rp-option-bad", "rp-command-too-long"
 * (the first pkt-line would pass AL_PKT_MAX), "rp-rewrite-no-room". */
int al_rp_add_push_option(const char *buf, size_t req_len, const char *opt, char *out,
                          size_t out_cap, size_t *out_len, const char **why);

/* True when a receive-pack ref advertisement (the decoded body of
 * info/refs?service=git-receive-pack, gitprotocol-http(5)) lists
 * capability cap on its first ref line: an optional "# service=" pkt-line
 * and its flush, an optional "version 1" pkt-line, then "oid SP ref NUL
 * caps". False for anything else (a fragment, protocol v2, no NUL): the
 * caller fails closed. */
bool al_rp_advert_has_cap(const char *buf, size_t len, const char *cap);

/* True when refname is well formed by git-check-ref-format(1): starts with
 * "refs/", no "..", "@{", "//", control bytes, space, ~ ^ : ? * [ \, no
 * component starting with '.' or ending in ".lock", not ending in '/' or
 * '.'. */
bool al_refname_ok(const char *ref, size_t len);

/* ---- the forge's response head (RFC 9112 §4, §6.3) ---- */

#define AL_GW_RESP_HEAD_MAX 32768
#define AL_GW_RESP_MAX_HEADERS 96

typedef struct al_gw_response {
  int status;        /* 100..599 */
  int version_minor; /* HTTP/1.<minor> */
  const char *reason;
  size_t reason_len;
  al_http_header headers[AL_GW_RESP_MAX_HEADERS];
  size_t n_headers;
  int64_t content_length; /* -1 when absent */
  bool chunked;           /* Transfer-Encoding ends in chunked */
  bool close;             /* Connection: close, or HTTP/1.0 without keep-alive */
  size_t head_len;
} al_gw_response;

/* Parse a response head at buf[0..len) with airlock's one strict parser
 * (al_http_parse_response_head, net/http.h: RFC 9112 §4, §5, §6.3) and
 * the gateway's own limits on top. Returns head_len (> 0), 0 when more
 * bytes are needed, -1 with *why: the parser's reason ("bad-status-line",
 * "bare-lf", "cl-and-te", ...), "resp-head-too-large" (over
 * AL_GW_RESP_HEAD_MAX), "resp-bad-transfer-encoding" (a coding besides
 * chunked: the gateway decodes chunked alone). close is computed from the
 * Connection field and the version (RFC 9112 §9.3). */
int al_gw_parse_response(const char *buf, size_t len, al_gw_response *r, const char **why);

/* True for hop-by-hop response fields the gateway drops and replaces with
 * its own framing: Connection, Keep-Alive, Transfer-Encoding,
 * Content-Length, Trailer, Upgrade, TE, Proxy-*. */
bool al_gw_response_header_is_hop(const al_http_header *h);

#endif
