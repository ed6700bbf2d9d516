/* The proxy -> forge gateway hand-off (issue #15, DESIGN.md §2 "secrets").
 *
 *   egress proxy (no secrets)                 forge gateway (tokens, CA key)
 *   ─────────────────────────                 ──────────────────────────────
 *   CONNECT forge.test:443, allowlist,
 *   resolve + guard + pin, dial upstream
 *   "200 Connection established" -> client
 *   one SOCK_SEQPACKET packet:  ───────────►  recvmsg: header + early bytes,
 *     al_handoff_msg + early client bytes      exactly two fds (client, upstream)
 *     SCM_RIGHTS {client fd, upstream fd}      TLS server on the client fd,
 *   log event "handoff", forget the conn       verified TLS client upstream
 *
 * One packet per connection; the header is fixed-size and versioned, the
 * early bytes (anything the client sent past the CONNECT head, e.g. an
 * eager ClientHello) follow it in the same packet. The receiver trusts the
 * sender only as far as "this TCP connection was allowed by the proxy": it
 * checks the packet's shape and still checks SNI itself. */
#ifndef AL_PROXY_HANDOFF_H
#define AL_PROXY_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define AL_HANDOFF_MAGIC 0x414c4857u /* "ALHW" */
#define AL_HANDOFF_COUNTER_SIZE 4096 /* the egress counter page (gateway.c) */
#define AL_HANDOFF_VERSION 1
#define AL_HANDOFF_EARLY_MAX 16384
#define AL_HANDOFF_MAX_HOSTS 4

typedef struct al_handoff_msg {
  uint32_t magic;     /* AL_HANDOFF_MAGIC */
  uint16_t version;   /* AL_HANDOFF_VERSION */
  uint16_t port;      /* the CONNECT port */
  uint64_t conn_id;   /* the proxy's connection number, for the logs */
  char host[256];     /* the CONNECT host, canonical (al_host_canonicalize), NUL-terminated */
  char client[64];    /* the client's address as the proxy logged it, NUL-terminated */
  uint32_t early_len; /* bytes following this header in the packet, <= AL_HANDOFF_EARLY_MAX */
  uint32_t reserved;
} al_handoff_msg;

/* What a proxy listener hands off: the proxy's end of the socketpair and
 * the host:port pairs (canonical host names) that go to the gateway. */
typedef struct al_proxy_handoff {
  int fd; /* SOCK_SEQPACKET; borrowed by the proxy */
  /* The run's egress counter (bytes client -> origin, network.egress_budget)
   * in a page shared with the gateway (MAP_SHARED), which adds the request
   * bytes it forwards to the forge; updated atomically by both. NULL: the
   * proxy counts alone. Borrowed. */
  uint64_t *egress_used;
  size_t n_hosts;
  struct {
    char host[256];
    uint16_t port;
  } hosts[AL_HANDOFF_MAX_HOSTS];
} al_proxy_handoff;

/* True when host (canonical) and port are one of h's pairs. */
bool al_handoff_matches(const al_proxy_handoff *h, const char *host, uint16_t port);

/* Send one hand-off packet on `sock` (non-blocking send: MSG_DONTWAIT), the
 * two fds by SCM_RIGHTS (unix(7)). The caller keeps its own fds and closes
 * them afterwards. early_len must be <= AL_HANDOFF_EARLY_MAX. Returns 0 or
 * -1 with err (EAGAIN when the gateway's queue is full). */
int al_handoff_send(int sock, const al_handoff_msg *m, const void *early, int client_fd,
                    int upstream_fd, al_error *err);

/* Receive one packet (blocking unless sock is non-blocking). On success
 * *m is filled, early[0..m->early_len) holds the early bytes (early must
 * have AL_HANDOFF_EARLY_MAX bytes), *client_fd and *upstream_fd are new
 * fds the caller owns (O_CLOEXEC). Returns 1, 0 on EOF (the proxy closed
 * its end), -1 with err for a malformed packet (any fds it carried are
 * closed) or a socket error. */
int al_handoff_recv(int sock, al_handoff_msg *m, void *early, int *client_fd, int *upstream_fd,
                    al_error *err);

#endif
