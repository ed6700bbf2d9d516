/* What the files of one gateway connection share (conn.c: the thread, its
 * buffers and I/O; conn_tls.c: TLS on both sides; conn_request.c: one
 * request from head to decision line): the connection and a request's
 * context. Not installed; server.h is the gateway's internal contract. */
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
  bool denied; /* refused, though answered 2xx (a push's report-status) */
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

#endif
