/* What the files of one gateway connection share (conn.c: the thread, its
 * buffers and I/O; conn_tls.c: TLS on both sides; conn_request.c: one
 * request from head to decision line; conn_whole.c: the requests decided
 * on their whole body, a comment and GraphQL; conn_relay.c: the forge's
 * response relayed; conn_ticket.c: the ticket host's requests;
 * conn_glpush.c: GitLab's ci.skip on the run's push): the
 * connection and a request's context. Not installed; server.h is the
 * gateway's internal contract. */
#ifndef AL_GATEWAY_CONN_INT_H
#define AL_GATEWAY_CONN_INT_H

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/query.h"
#include "gateway/server.h"
#include "gateway/wire.h"
#include "net/chunked.h"
#include "net/host.h"
#include "net/http.h"

#define RB_CAP (128 * 1024)
#define WB_CAP (128 * 1024 + 64)
#define STREAM_CHUNK (64 * 1024)

struct al_gw_conn {
  al_gw_server *s;
  al_handoff_msg m;
  char early[AL_HANDOFF_EARLY_MAX];
  size_t early_len, early_off;
  int cfd, ufd;
  SSL *cs, *us;
  unsigned sides;
  bool host_is_ip;
  bool up_ready, up_dead;
  const char *tls_reason;
  char *rb; /* client bytes: the head, then body bytes */
  size_t rb_off, rb_len;
  char *ub; /* upstream bytes */
  size_t ub_off, ub_len;
  char *wb; /* staging for writes */
  int slot;
  uint64_t n_requests;
  char up_err[200]; /* why the upstream TLS failed, for the line */
};

/* One request's decision and counters, for its line. */
typedef struct req_ctx {
  char method[24];
  char path[AL_GW_PATH_MAX];
  const char *query; /* raw, as sent (NULL: none) */
  size_t qlen;
  al_gw_qparams qp;                   /* decoded (gateway/query.h): what the rules read */
  char fwdq[3 * AL_GW_QUERY_MAX + 1]; /* what goes upstream: qp re-encoded */
  int fwdq_len;
  char qlog[256];
  char reason_buf[AL_GW_QUERY_NAME_MAX + 40]; /* "query-param-refused: NAME" */
  char detail_buf[200];                       /* a comment's "rewritten: ..." */
  const al_gw_rule *rule;
  const char *reason;
  const char *detail;
  int status;
  uint64_t up, down, t0;
  al_rp_request *rp;
  bool client_close, logged;
  bool denied;    /* refused, though answered 2xx (a push's report-status) */
  bool rp_advert; /* GitLab's info/refs?service=git-receive-pack: its start kept in adv */
  char adv[2048];
  size_t adv_len;
  int version_minor;
} req_ctx;

/* ---- src/lib/gateway/conn.c ---- */
/* Write all n bytes on s; 0, or -1 when the peer is gone or timed out. */
int gwc_write_all(SSL *s, const void *buf, size_t n);
/* Read more of the agent's bytes into c->rb (gwc_u_fill: the forge's into
 * c->ub); 1 on data, 0 at EOF, -1 on error, timeout or a full buffer. */
int gwc_c_fill(al_gw_conn *c);
int gwc_u_fill(al_gw_conn *c);

/* ---- src/lib/gateway/conn_tls.c ---- */
/* The agent's TLS handshake; false with c->tls_reason set when refused. */
bool gwc_tls_accept(al_gw_conn *c);
/* The verified TLS to the forge, opened once and reused; 0, or -1 with
 * *detail (and c->up_err) saying why. */
int gwc_upstream_open(al_gw_conn *c, const char **detail);
/* Has the forge closed the kept-alive connection? */
bool gwc_upstream_gone(al_gw_conn *c);

/* ---- src/lib/gateway/conn_request.c ---- */
/* The decision line of a connection that ended before a request. */
void gwc_log_conn(al_gw_conn *c, const char *reason, const char *detail);
/* One request, head to decision line; 0 to read the next one on the
 * connection, 1 to close it. */
int gwc_serve_request(al_gw_conn *c);
/* The request's decision line, once (later calls do nothing). */
void gwc_log_request(al_gw_conn *c, req_ctx *r);
/* Answer status with X-Airlock-Deny: reason and a body saying why
 * (refusal.h), then log; close: say Connection: close. */
void gwc_refuse(al_gw_conn *c, req_ctx *r, int status, const char *reason, bool close);
/* The first header named lname (lower case), or NULL. */
const al_http_header *gwc_find_header(const al_http_request *q, const char *lname);
/* Expect: 100-continue (RFC 9110 section 10.1.1): when expect, send the
 * interim 100 before the body is read. 0, or -1 when the client is gone
 * (r->reason "client-gone", the decision line written): the caller frees
 * what it holds and ends the request. */
int gwc_send_continue(al_gw_conn *c, req_ctx *r, bool expect);
/* The upstream head of r under r->rule, its credential injected: framed
 * by chunked or cl (-1: no framing, the head ends in CRLF CRLF). malloc'd,
 * *len bytes; it holds a secret: free with gwc_free_head. NULL when it
 * would not fit. */
char *gwc_build_head(al_gw_conn *c, const al_http_request *q, req_ctx *r, bool chunked, int64_t cl,
                     size_t *len);
void gwc_free_head(char *h, size_t n);
/* network.egress_budget: count n more bytes (false: over the budget), or
 * is it spent already. */
bool gwc_egress_take(al_gw_server *s, uint64_t n);
bool gwc_egress_spent(const al_gw_server *s);
/* The request body as the client framed it. */
typedef struct body_src {
  bool chunked;
  uint64_t left; /* Content-Length bytes still to read */
  al_chunked ch;
  bool done;
} body_src;
/* Up to cap decoded body bytes of b into out: > 0 bytes, 0 at the end of
 * the body, -1 on a framing error (*why) or a dead client. */
ssize_t gwc_body_read(al_gw_conn *c, body_src *b, char *out, size_t cap, const char **why);
/* Send the n decoded body bytes at c->wb + 32 upstream, chunk-framed when
 * chunked; 0, or -1 as gwc_write_all. */
int gwc_send_up(al_gw_conn *c, bool chunked, size_t n);

/* ---- src/lib/gateway/conn_whole.c ---- */
/* Hold one of max_comments for a comment in flight (false: none left);
 * release it, spent when accepted. */
bool gwc_comment_hold(al_gw_server *s);
void gwc_comment_release(al_gw_server *s, bool accepted);
/* The whole request body (at most AL_GW_COMMENT_BODY_MAX), malloc'd, or
 * NULL with *why (a framing reason, "body-too-large", "out-of-memory"). */
char *gwc_read_whole_body(al_gw_conn *c, const al_http_request *q, size_t *len, const char **why);
/* A comment (AL_GW_BODY_COMMENT, AL_GW_BODY_JIRA_COMMENT): held against
 * the budget, read whole, rewritten (comment.h), forwarded with a
 * Content-Length. close_on_refuse: close after a budget refusal. Returns
 * as gwc_serve_request. */
int gwc_serve_comment(al_gw_conn *c, req_ctx *r, const al_http_request *q, bool expect,
                      bool close_on_refuse);
/* A POST to the API's GraphQL endpoint: read whole (AL_GQL_BODY_MAX),
 * decided by al_gql_check, forwarded with the credential the query needs
 * (cred: the one the client showed). Returns as gwc_serve_request. */
int gwc_serve_graphql(al_gw_conn *c, req_ctx *r, const al_http_request *q, al_gw_cred cred,
                      bool close_on_refuse, bool expect);

/* ---- src/lib/gateway/conn_glpush.c (GitLab's ci.skip, issue #30) ---- */
/* The relayed info/refs?service=git-receive-pack answer (r->rp_advert): its
 * head (a non-200 or Content-Encoded one clears the server's "push-options
 * advertised" flag), the first sizeof r->adv bytes of its decoded body, and
 * its end (the flag set from al_rp_advert_has_cap). No-ops otherwise. */
void gwc_gl_advert_head(al_gw_conn *c, req_ctx *r, const al_gw_response *resp);
void gwc_gl_advert_keep(req_ctx *r, const char *data, size_t got);
void gwc_gl_advert_done(al_gw_conn *c, req_ctx *r);
/* Rewrite the checked update request at the start of *buf (req_len of its
 * *len bytes; the pack's first bytes follow) to carry the push option
 * ci.skip (al_rp_add_push_option); *buf is replaced (malloc'd, the old one
 * freed). 0, or -1 with *why ("push-options-not-advertised" when the last
 * advertisement did not list push-options, or the rewrite's reason). */
int gwc_gl_add_ci_skip(al_gw_server *s, char **buf, size_t *len, size_t req_len, const char **why);

/* ---- src/lib/gateway/conn_relay.c ---- */
/* Relay the origin's response; 0 keep going, 1 close after, -1 failed. */
int gwc_relay_response(al_gw_conn *c, req_ctx *r);

/* ---- src/lib/gateway/conn_ticket.c ---- */
/* The ticket host's rule for r (method, path) and qp: Jira's or Linear's
 * (rules_tickets.h), or NULL with r->reason and *param. */
const al_gw_rule *gwc_ticket_match(al_gw_conn *c, req_ctx *r, const al_gw_qparams *qp,
                                   const char **param);
/* A Linear GraphQL POST (AL_GW_BODY_LINEAR_GRAPHQL): read whole, decided
 * by al_gw_linear_check, its commentCreate held against the budget and
 * rewritten; forwarded with a Content-Length. Returns as gwc_serve_request. */
int gwc_serve_linear(al_gw_conn *c, req_ctx *r, const al_http_request *q, bool expect);

#endif
