/* The lease protocol between the broker and its clients: one JSON object
 * per line ('\n'-terminated, at most AL_PROTO_LINE_MAX bytes) over a Unix
 * stream socket. A small typed request table, in the spirit of OpenSSH's
 * monitor: each request type is accepted only in the states listed for it,
 * anything else ends the connection (and so the lease).
 *
 * client -> broker
 *   {"type":"lease","version":1,"ttl_ms":N,            (ttl_ms optional)
 *    "tokens":[{"role":"git","repo":"o/r","permissions":{"contents":"write"}}, ...],
 *    "secrets":["model_key", ...]}                      (permissions optional:
 *                                                        the role's maximum;
 *                                                        secrets optional: static
 *                                                        secrets of the broker's
 *                                                        config `secrets:`, each
 *                                                        granted only when it lists
 *                                                        every repository of the
 *                                                        lease, else no lease)
 *   {"type":"release"}          end the lease now; answer "revoked", then close
 *   {"type":"ping"}             answer "pong"
 *   {"type":"audit","version":1,"repo":"o/r","branch":"b","run_prefix":"airlock/"}
 *                               (branch optional: the default branch; run_prefix
 *                               optional: "airlock/", the policy's
 *                               review.branch_prefix) lease the read tokens
 *                               for the client's own `airlock audit`
 *                               (forge/audit.h opts.grant) of a repository the
 *                               broker may lease; only as the first request;
 *                               answer "audit_grant" (then as a lease: "release",
 *                               "revoked", and revoked when the connection ends)
 *                               or "error", then close.
 *   {"type":"check",...}       `airlock serve`'s trigger check: see check.h
 * broker -> client
 *   {"type":"lease","lease":ID,"ttl_ms":N,"expires_at":ISO8601,
 *    "tokens":[{"role","repo","token","fingerprint","permissions":{},"expires_at"}],
 *    "secrets":{"model_key":{"value":V,"fingerprint":F}, ...}}   (only when asked)
 *   {"type":"error","code":CODE,"message":TEXT}   then close; CODE is one of
 *       bad_request, forbidden, busy, upstream, internal
 *   {"type":"expired","lease":ID}                 the TTL ended the lease
 *   {"type":"revoked","lease":ID,"reason":R,"tokens":[{"role","fingerprint",
 *    "revoked":bool,"confirmed":bool,"error":TEXT?}]}  then close
 *   {"type":"pong"}
 *   {"type":"audit_grant","lease":ID,"ttl_ms":N,"expires_at":ISO8601,
 *    "tokens":[as in "lease": the read token unless it is the token file's,
 *              the run's App's metadata: read token unless the read token is its],
 *    "read_token":T,                 (only with audit.token_file: its token,
 *                                     the operator's, not revoked by the lease)
 *    "audit":{"api","ca_file","timeout_ms","max_rate_wait_ms",
 *             "app":{"slug","id","installation_id","permissions":{}},
 *             "roles":{"git":[{"name","write"}],"ticket":[...]},
 *             "credentials":TEXT,"token_is_bot":bool,"read_fingerprint":F,
 *             "read_token_leased":bool (false: read_token),"bot_fingerprint":F|null}} */
#ifndef AL_BROKER_PROTO_H
#define AL_BROKER_PROTO_H

#include <jansson.h>
#include <stdint.h>

#include "forge/appconfig.h"
#include "common/error.h"

#define AL_PROTO_VERSION 1
#define AL_PROTO_LINE_MAX 16384

/* One token asked for in a lease request. */
typedef struct al_proto_token_req {
  al_role role;
  char repo[201];
  bool has_perms; /* false: the role's maximum */
  al_perm_set perms;
} al_proto_token_req;

/* The most secrets one lease may ask for. */
#define AL_PROTO_SECRETS_MAX 8

typedef struct al_proto_lease_req {
  al_proto_token_req tokens[AL_ROLE_COUNT];
  size_t n_tokens;
  char secrets[AL_PROTO_SECRETS_MAX][AL_SECRET_NAME_MAX]; /* names, al_secret_name_check() */
  size_t n_secrets;
  uint64_t ttl_ms; /* 0: the broker's default */
} al_proto_lease_req;

/* The longest answer line a client accepts (the audit report). */
#define AL_PROTO_ANSWER_MAX (1u << 20)

/* An audit request. */
typedef struct al_proto_audit_req {
  char repo[201];
  char branch[256];    /* "" : the repository's default branch */
  char run_prefix[72]; /* "" : "airlock/" (the ci.* criteria's run branches) */
} al_proto_audit_req;

/* Encode an audit request (new reference). */
json_t *al_proto_audit_req_to_json(const al_proto_audit_req *req);

/* Decode and validate an audit request strictly: unknown fields, a wrong
 * version, a malformed repository, a branch that is not a plausible git
 * branch name (empty, over 255 bytes, control characters, space, ~^:?*[\,
 * "..", "@{", a leading '-' or '/', a trailing '/' or ".lock"), a run_prefix
 * that is not 2..64 bytes of [A-Za-z0-9/._-] ending in '/' (no leading '/',
 * no ".." or "//") are errors (EINVAL). Does not check the broker's config. */
int al_proto_audit_req_from_json(json_t *msg, al_proto_audit_req *out, al_error *err);

/* Parse "contents:write,pull_requests:read" (also '=' instead of ':')
 * into set. Names are checked with al_perm_check(), so a permission that is
 * never granted is an error here already. Returns 0 or -1 with err. */
int al_perm_set_parse(const char *s, al_perm_set *set, al_error *err);

/* Encode a lease request (new reference). */
json_t *al_proto_lease_req_to_json(const al_proto_lease_req *req);

/* Decode and validate a lease request strictly: unknown fields, a repeated
 * role, a malformed repository or permission, a `secrets` that is not a
 * list of 1 to AL_PROTO_SECRETS_MAX distinct names of [a-z0-9_]{1,63} are
 * errors (EINVAL). Does not
 * check the broker's config (that is the broker's job). */
int al_proto_lease_req_from_json(json_t *msg, al_proto_lease_req *out, al_error *err);

/* Serialise msg as one line (with the '\n'), malloc'd; *len gets its
 * length. The caller wipes it when it held a token. */
char *al_proto_line(json_t *msg, size_t *len);

#endif
