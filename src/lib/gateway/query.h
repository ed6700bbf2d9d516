/* The forge gateway's one query decoder (issue #26): the credential check,
 * every rule's filters and the decision record read a request's query
 * through it, the way the forge's own parser reads it, and the gateway
 * forwards the query it decoded (al_gw_query_canon), not the bytes the
 * agent sent. Pure functions over buffers, fuzzed (tests/fuzz/fuzz_gw_query.c).
 *
 * The reading follows the WHATWG URL standard's
 * application/x-www-form-urlencoded parser (`+` is a space, %XX a byte)
 * and Rack's parse_nested_query, which the forge's Rails side uses (`&`
 * and `;` separate parameters; a name's `[...]` suffix makes an array or
 * hash of the same name), made strict where readers differ: an invalid
 * escape is refused rather than kept literally, leading brackets are
 * dropped and the name cut at the first bracket, names compared without
 * case, a name given twice refused. */
#ifndef AL_GATEWAY_QUERY_H
#define AL_GATEWAY_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#define AL_GW_QUERY_MAX 4096    /* bytes of a raw query */
#define AL_GW_QUERY_PARAMS 32   /* parameters of a query */
#define AL_GW_QUERY_NAME_MAX 64 /* bytes of a decoded name */

typedef struct al_gw_qparam {
  const char *name;  /* decoded, brackets cut, lower-case ASCII 0x20-0x7e, NUL-terminated */
  const char *value; /* decoded, NUL-terminated, no control byte (bytes >= 0x80 kept) */
  size_t value_len;
  bool has_value; /* "name=value" (or "name="), not a bare "name" */
} al_gw_qparam;

/* A decoded query. Plain data (about 5 KiB; the strings point into buf):
 * not to be copied by value. */
typedef struct al_gw_qparams {
  size_t n; /* parameters decoded (those before a refusal, when why is set) */
  al_gw_qparam p[AL_GW_QUERY_PARAMS];
  const char *why;                    /* NULL, or why the query was refused (static) */
  char bad[AL_GW_QUERY_NAME_MAX + 1]; /* the name a refusal concerns, printable, or "" */
  char buf[AL_GW_QUERY_MAX + 2 * AL_GW_QUERY_PARAMS + 2];
} al_gw_qparams;

/* Decode q[0..len) (the query after '?', without it; q may be NULL when
 * len is 0) into *out. Empty parameters ("a=1&&b=2", a trailing '&') are
 * skipped, as every reader does. Returns 0, or -1 with out->why:
 * "query-too-long" (len > AL_GW_QUERY_MAX), "query-bad-escape" (a '%' not
 * followed by two hex digits), "query-control-byte" (a byte below 0x20 or
 * 0x7f, raw or decoded), "query-bad-name" (empty once decoded and cut, over
 * AL_GW_QUERY_NAME_MAX, or a byte outside ASCII), "query-too-many-params",
 * "query-param-duplicate" (two parameters read as one name: `head=` and
 * `h%65ad=`, `a=` and `a[]=`, `A=` and `a=`); out->bad names the
 * parameter where it can. */
int al_gw_query_decode(const char *q, size_t len, al_gw_qparams *out);

/* The index of parameter `name` (lower-case) in qp, or -1. */
int al_gw_query_find(const al_gw_qparams *qp, const char *name);

/* True when a parameter's decoded name is a credential to the forge or to
 * any reader on the way: `access_token` or `client_secret` once every byte
 * other than a-z and 0-9 is dropped (`access.token`, `access_token `,
 * `Access-Token`). */
bool al_gw_query_name_is_credential(const char *name);

/* Write qp as the query the forge gets: "name=value" joined by '&', each
 * name and value percent-encoded except RFC 3986 §2.3 unreserved bytes (a
 * bare name stays bare). Returns the length (0 for no parameter), or -1
 * when it does not fit in out[0..cap) (cap >= 3 * AL_GW_QUERY_MAX + 1
 * always fits). out is NUL-terminated. */
int al_gw_query_canon(const al_gw_qparams *qp, char *out, size_t cap);

/* Write qp for the decision record: the decoded names, each value
 * replaced by "*" except service= (gitprotocol-http(5)), and when the
 * query was refused the name concerned last; at most out_cap-1 bytes,
 * always NUL-terminated. */
void al_gw_query_log(const al_gw_qparams *qp, char *out, size_t out_cap);

/* Copy name into out[0..cap) for an answer or a header: bytes other than
 * A-Z a-z 0-9 and ". _ ~ - [ ] space" become '?'. */
void al_gw_query_printable(const char *name, char *out, size_t cap);

#endif
