/* What the files of the model relay's server share (relay.c: the listener,
 * one call's thread, its log line and answers; relay_request.c: the agent's
 * request head and body; relay_head.c: both heads' parsing;
 * relay_upstream.c: the tunnel, TLS and the forwarded exchange): the
 * server, a call and a request. Not installed;
 * relay.h is the contract. */
#ifndef AL_RELAY_RELAY_INT_H
#define AL_RELAY_RELAY_INT_H

#include "relay/relay.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "relay/rules.h"
#include "relay/usage.h"

#define HEAD_MAX (64 * 1024)
#define HEAD_TIMEOUT_MS 30000
#define IOBUF 16384

/* ---- shared state ---- */

struct relay {
  const al_relay_serve_opts *o;
  const al_policy_relay *cfg;
  SSL_CTX *ssl[16]; /* one per upstream (each has its own ca_file) */
  pthread_mutex_t mu;
  uint32_t active;
  uint64_t requests; /* admitted calls */
  uint64_t tokens;   /* tokens charged (in + out) */
  uint64_t seq;
};

struct call {
  struct relay *rl;
  int fd; /* the agent's connection */
  uint64_t id;
  uint64_t t0_ms;
  const al_relay_upstream *up; /* the route's upstream, once known */
  size_t up_idx;
  const al_relay_ruleset *rs; /* its vendor's rules */
  /* what goes into the log line */
  char method[16];
  char path[260];
  char model[132];
  int status;
  bool stream;
  const char *decision;
  char reason[400];
  char feature[72];         /* a refused server-side feature, or "" */
  char dropped[400];        /* request headers (and anthropic-beta values) not forwarded */
  char set[96];             /* body members the relay added (rules.h defaults): "store=false" */
  const char *upstream_why; /* upstream_error: connect, tls, timeout, closed, malformed */
  uint64_t bytes_up, bytes_down, ttfb_ms;
  al_usage usage;
};
struct header {
  char *name, *value; /* pointers into the head buffer */
};

struct request {
  char *head; /* the head's bytes; each piece below NUL-terminated in place */
  size_t head_len;
  char *extra; /* bytes read past the head (start of the body) */
  size_t extra_len;
  char *method, *target;
  struct header h[128];
  size_t nh;
  const char *why; /* static: the rule a refused head broke (net/http.h) */
};

/* The upstream's response head, as the forwarding needs it. */
struct response {
  int status;
  bool chunked, has_len, sse;
  uint64_t len;
};

/* ---- src/lib/relay/relay.c ---- */
/* SO_RCVTIMEO or SO_SNDTIMEO (opt) of fd to ms. */
void rl_set_timeout(int fd, int opt, uint64_t ms);
/* Send all len bytes on fd (MSG_NOSIGNAL); 0, or -1 on error or timeout. */
int rl_send_all(int fd, const void *buf, size_t len);
/* An answer made by the relay itself (a refusal or an upstream failure):
 * status, the call's decision and reason (fmt), x-should-retry: false
 * when no_retry; logged with the call. */
void rl_answer(struct call *c, int status, const char *decision, bool no_retry, const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));

/* ---- src/lib/relay/relay_request.c ---- */
/* Read and parse the agent's request head into rq (buf: HEAD_MAX bytes,
 * the head's storage; RFC 9112 §2-§5). 0, or an HTTP status to answer. */
int rl_read_head(struct call *c, struct request *rq, char *buf);
/* The value of header name (case-insensitive), *count how many there are. */
const char *rl_hget(const struct request *rq, const char *name, int *count);
/* Is this request header never forwarded (hop-by-hop, framing, any
 * credential the agent could send)? */
bool rl_dropped_header(const char *name);
/* The body, Content-Length or chunked, at most max bytes, into *out
 * (malloc'd, *len). 0, an HTTP status to answer, or -1: connection gone. */
int rl_read_body(struct call *c, struct request *rq, uint64_t max, char **out, size_t *len);

/* ---- src/lib/relay/relay_head.c ---- */
/* Parse the agent's request head at buf[0..len) with the strict parser
 * (al_http_parse_head_max, RFC 9112 §2-§5, at most HEAD_MAX bytes and
 * AL_HTTP_MAX_HEADERS fields) and fill rq with pointers into buf, each
 * piece NUL-terminated in place (buf is modified only on success). Returns
 * the head's length (> 0), 0 when more bytes are needed, -1 with a static
 * *why. */
int rl_parse_request_head(char *buf, size_t len, struct request *rq, const char **why);
/* Parse the upstream's response head at buf[0..len)
 * (al_http_parse_response_head) and, for a final (2xx-5xx) answer, build
 * the head the agent gets: the status line as sent, every field but
 * Connection, Keep-Alive, Set-Cookie and Proxy-* as "name: value", then
 * "Connection: close"; into *rebuilt (malloc'd, exactly *rebuilt_len
 * bytes plus none; the caller frees). A 1xx answer other than 101 returns
 * its length with rs->status and nothing rebuilt (the caller skips it).
 * Refused beyond the parser's rules: 101, and a transfer coding other than
 * chunked (the relay sends no TE: RFC 9110 §10.1.4). Returns the head's
 * length (> 0), 0 when more bytes are needed, -1 with a static *why. */
int rl_parse_response_head(const char *buf, size_t len, struct response *rs, char **rebuilt,
                           size_t *rebuilt_len, const char **why);

/* ---- src/lib/relay/relay_upstream.c ---- */
/* Forward the checked request upstream and relay the response; the call's
 * log fields are filled on the way. */
void rl_forward(struct call *c, struct request *rq, const char *query, const char *body,
                size_t body_len);

#endif
