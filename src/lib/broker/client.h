/* The broker's client library, for the supervisor (`airlock ticket`) and
 * `airlock token lease`.
 *
 * A lease is one connection to the broker's Unix socket (protocol: proto.h).
 * It lives exactly as long as that connection: when the process closes it,
 * exits, crashes or is killed, the broker revokes both tokens. The socket is
 * SOCK_CLOEXEC, so a child that execs (the sandbox) does not inherit it.
 *
 * Typical use:
 *
 *   al_lease_request rq = {.git_repo = "o/r", .ticket_repo = "o/r"};
 *   al_lease *l;
 *   if (al_lease_open(policy->credentials.broker, &rq, &l, err) < 0) ...
 *   setenv-in-the-child("GH_TOKEN", al_lease_token(l, AL_ROLE_GIT)) ...
 *   ... run ...
 *   al_lease_result res;
 *   al_lease_release(l, true, &res, err);   // revoked + confirmed: record res
 */
#ifndef AL_BROKER_CLIENT_H
#define AL_BROKER_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "forge/appconfig.h"
#include "forge/ghapi.h"
#include "common/error.h"

#include <jansson.h>

typedef struct al_lease al_lease;

typedef struct al_lease_request {
  const char *git_repo;           /* "owner/repo" for the git token, or NULL: none */
  const char *ticket_repo;        /* "owner/repo" for the ticket token, or NULL: none */
  const char *git_permissions;    /* NULL: the role's maximum; else "contents:write,..." */
  const char *ticket_permissions; /* likewise */
  const char *const *secrets;     /* names of static secrets (broker config `secrets:`) the
                                     lease must carry, or NULL */
  size_t n_secrets;               /* how many; at most AL_PROTO_SECRETS_MAX */
  uint64_t ttl_ms;                /* 0: the broker's default (15 min) */
  int timeout_ms;                 /* wait for the broker's answer; 0: 60 s */
} al_lease_request;

/* Open a lease. Connects to socket_path, sends the request and waits for the
 * tokens. On success *out is the lease (release it with al_lease_release()
 * or al_lease_free()). Errors: the connect errno; EACCES for a request the
 * broker refused (forbidden: a repository or permission not allowed, e.g.
 * `administration`); EPROTO for a malformed answer; EIO when the broker
 * could not mint (the message is the broker's, e.g. the API's 422 text);
 * ETIMEDOUT. No lease exists after a failure. */
/* Did err (from al_lease_open, al_broker_request) come from not reaching
 * the broker at all (no socket there, nobody listening, not a socket, not
 * ours to open, a path too long), rather than from its answer? Callers
 * exit 125 for it ("could not start the work"), 1 for a refusal. */
bool al_broker_unreachable(const al_error *err);

int al_lease_open(const char *socket_path, const al_lease_request *rq, al_lease **out,
                  al_error *err);

/* The token of a role, or NULL when the lease has none. Owned by the lease
 * (locked, non-dumpable memory), wiped by al_lease_release()/al_lease_free():
 * copy it into the child's environment, do not keep the pointer. */
const char *al_lease_token(const al_lease *l, al_role role);
/* The value of a static secret the request asked for (e.g. "model_key"),
 * or NULL when the lease has none of that name. Owned by the lease (locked,
 * non-dumpable memory that a fork(2) child sees as zeros), wiped by
 * al_lease_release()/al_lease_free(): copy it where it is needed, do not
 * keep the pointer. A request whose secret the broker refuses (unknown,
 * or not for the lease's repository) gets no lease at all (EACCES). */
const char *al_lease_secret(const al_lease *l, const char *name);
/* "sha256:" + 12 hex of that secret, or NULL. */
const char *al_lease_secret_fingerprint(const al_lease *l, const char *name);
/* Wipe and free the lease's copy of a secret now (once the caller handed
 * it on); al_lease_secret() then returns NULL, the fingerprint stays. */
void al_lease_secret_wipe(al_lease *l, const char *name);
/* "sha256:" + 12 hex of the token (for logs and the run record), or NULL. */
const char *al_lease_fingerprint(const al_lease *l, al_role role);
/* The repository, the granted permissions ("contents:write,...") and the
 * token's expiry (ISO 8601) of a role, or NULL. */
const char *al_lease_repo(const al_lease *l, al_role role);
const char *al_lease_permissions(const al_lease *l, al_role role);
const char *al_lease_token_expires_at(const al_lease *l, al_role role);
/* The broker's lease id, its TTL in ms and its end (ISO 8601). */
const char *al_lease_id(const al_lease *l);
uint64_t al_lease_ttl_ms(const al_lease *l);
/* When the TTL ends the lease, on al_now_ms()'s monotonic clock: the grant
 * was read at most a round trip after the broker started the TTL, so a
 * caller keeps a margin before it. UINT64_MAX when the grant named no TTL
 * (ttl_ms 0). */
uint64_t al_lease_end_ms(const al_lease *l);
const char *al_lease_expires_at(const al_lease *l);
/* The connection's fd, to poll for readability: the broker writes when the
 * TTL ends the lease (then call al_lease_poll()). */
int al_lease_fd(const al_lease *l);

/* The forge requests the broker sent to make this lease's grant (the
 * grant's "requests": the App's reads and token mints; zero when the broker
 * did not say). */
void al_lease_requests(const al_lease *l, al_ghapi_counts *out);

/* Non-blocking check for a message from the broker. Returns 1 when the
 * lease has ended (TTL or broker shutdown: the tokens are being revoked),
 * 0 when it is still live, -1 with err on a protocol error. */
int al_lease_poll(al_lease *l, al_error *err);

/* Outcome of a release, for the run record. */
typedef struct al_lease_result {
  bool answered;   /* the broker confirmed the end of the lease */
  char reason[32]; /* "released", "ttl", "shutdown" */
  size_t n;
  struct {
    al_role role;
    char fingerprint[20];
    bool revoked;
    bool confirmed; /* the token was seen getting 401 after the DELETE */
    char error[256];
    char expires_at[32]; /* the token's own expiry (ISO 8601): when it dies anyway */
    char revoked_by[16]; /* "broker", or "supervisor" (al_lease_fallback) */
  } tokens[AL_ROLE_COUNT];
  al_ghapi_counts requests; /* the broker's forge requests for the revocation (its
                               answer's "requests"; zero when it did not say) */
} al_lease_result;

/* Whoever still holds a token revokes it when the broker cannot: called by
 * al_lease_release_or() once per token the broker did not confirm dead (it
 * did not answer: killed, crashed, unreachable; or answered "not
 * confirmed"), with the token's value (borrowed; wiped after the call),
 * before the lease's copy is wiped. Fills *revoked and *confirmed (the 401
 * seen after the DELETE) and error (n bytes) when not. */
typedef void (*al_lease_fallback)(void *ctx, al_role role, const char *token, bool *revoked,
                                  bool *confirmed, char *error, size_t n);

/* End the lease and free it (always, even on error). With wait, sends
 * "release" and waits (up to 60 s) for the broker's "revoked" answer, which
 * fills *res (may be NULL); without, just closes the connection (the broker
 * revokes anyway). Returns 0 when every token was revoked and confirmed (or
 * !wait), -1 with err otherwise. */
int al_lease_release(al_lease *l, bool wait, al_lease_result *res, al_error *err);

/* al_lease_release(l, true, res, err), then, for every token the broker
 * did not confirm dead, fb(ctx, ...) (the supervisor revokes it itself:
 * broker/direct.h); res->tokens[i].revoked_by says who did. Returns 0 when
 * every token was confirmed dead by one or the other (err then still
 * carries the broker's failure, for the record; *broker_err is it, or ""),
 * -1 with err otherwise. Frees l always. */
int al_lease_release_or(al_lease *l, al_lease_fallback fb, void *ctx, al_lease_result *res,
                        char *broker_err, size_t broker_err_n, al_error *err);

/* Close without waiting and free (same as al_lease_release(l, false, ...)). */
void al_lease_free(al_lease *l);

/* The read credentials of an escape-budget audit the caller runs itself
 * (forge/audit.h, opts.grant): the broker, the only holder of the App's
 * key, reads with the App's JWT what it shows of the App and its
 * installation on `repo` ("owner/repo", one the broker may lease), and
 * leases the audit its read tokens on this connection, like a ticket's:
 * the audit credential's (the audit App's administration: read,
 * contents: read token; or audit.token_file's token, the operator's,
 * which is handed on and never revoked; or, without one, the run's App's
 * administration/contents: read token), and, unless that one is the run's
 * App's, the run's App's metadata: read token (its own
 * current_user_can_bypass). `branch` and `run_prefix` (NULL: the default
 * branch, "airlock/") are checked and sent for the broker's log.
 * Protocol: proto.h ("audit", "audit_grant").
 * On success (0) *out is the lease (end it with al_lease_release(): the
 * broker revokes the minted tokens and answers for each by fingerprint) and
 * *grant the broker's "audit" object (no secret in it; the caller
 * json_decref's it): api, ca_file, timeout_ms, max_rate_wait_ms, app {slug,
 * id, installation_id, permissions}, roles {git, ticket: [{name, write}]},
 * credentials, token_is_bot, read_fingerprint, bot_fingerprint (or null).
 * Errors (-1, nothing held): the connect errno; EACCES when the broker
 * refused (the repository may not be leased, or the uid is not a client);
 * EINVAL for a request it does not accept; EIO when it could not read the
 * App or mint (its message: API unreachable, App not installed, ...);
 * EPROTO for a malformed answer; ETIMEDOUT after 60 s. */
int al_audit_lease_open(const char *socket_path, const char *repo, const char *branch,
                        const char *run_prefix, al_lease **out, json_t **grant, al_error *err);
/* The audit lease's read token and the run's App's metadata: read token (or
 * NULL when the read token is the run's App's). Owned by the lease like
 * al_lease_token()'s. */
const char *al_audit_lease_read_token(const al_lease *l);
const char *al_audit_lease_bot_token(const al_lease *l);

/* Connect to the broker at socket_path and send msg (a request object,
 * whose reference this takes) as one line (proto.h): the one-shot
 * requests (audit here, check in check.h). Returns the connected stream
 * socket (SOCK_CLOEXEC; the caller reads the answer and closes it), or -1
 * with err: the connect errno, or the send's naming `what` ("sending the
 * check request"). */
int al_broker_request(const char *socket_path, json_t *msg, const char *what, al_error *err);
/* Turn the broker's {"type":"error","code","message"} answer into err
 * (EACCES forbidden, EINVAL bad_request, EBUSY busy, else EIO). Returns -1. */
int al_broker_error_answer(json_t *msg, const char *what, al_error *err);

#endif
