/* The forge gateway's inside: what the serving process holds and the
 * per-connection worker (conn.c). Not a public interface: gateway.c and
 * conn.c only. */
#ifndef AL_GATEWAY_SERVER_H
#define AL_GATEWAY_SERVER_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/ca.h"
#include "gateway/gateway.h"
#include "gateway/rules.h"
#include "gateway/rules_gitlab.h"
#include "gateway/rules_tickets.h"
#include "common/error.h"
#include "proxy/handoff.h"

#define AL_GW_IDLE_MS 60000 /* a socket read or write blocked this long ends the connection */

typedef struct al_gw_conn al_gw_conn;

typedef struct al_gw_server {
  al_gw_rules rules; /* GitHub's, or gl.base for GitLab (refusal texts, push checks) */
  al_gw_gl_rules gl; /* GitLab's table bound to the run (when gitlab) */
  bool gitlab;       /* forge_kind AL_FORGE_GITLAB */
  al_gw_ca ca;
  SSL_CTX *srv_ctx, *up_ctx;
  char *git_token, *ticket_token, *placeholder; /* secret memory (secmem.h) */
  char api_host[256], git_host[256];
  uint16_t api_port, git_port;
  /* the ticket host (Jira, Linear; issue #31), when has_tk */
  bool has_tk;
  al_gw_tk_rules tk;
  char tk_host[256];
  uint16_t tk_port;
  char *tk_auth;       /* the Authorization value upstream (secret memory) */
  char *tk_credential; /* the vendor credential itself, for redaction (secret memory) */
  SSL_CTX *tk_up_ctx;  /* upstream trust: ticket.ca_file or the system store */
  char run_id[128];
  int decisions_fd;
  uint64_t egress_budget; /* network.egress_budget; 0: none */
  uint64_t *egress_used;  /* shared with the proxy (MAP_SHARED), atomic */

  pthread_mutex_t mu; /* everything below, and decision writes */
  pthread_cond_t idle;
  unsigned comments_used;     /* agent comments the forge accepted (2xx) */
  unsigned comments_inflight; /* held by comments on their way (conn_whole.c) */
  unsigned n_conns;
  bool gl_push_options; /* GitLab: the last receive-pack advertisement listed push-options */
  al_gw_conn *live[AL_GATEWAY_MAX_CONNS];
  bool stop;
} al_gw_server;

/* The TLS server context: TLS >= 1.2, SNI checked against the CONNECT
 * host, ALPN http/1.1 only (conn.c). */
int al_gw_tls_setup(al_gw_server *s, al_error *err);

/* Serve one handed-off connection on its own detached thread. Takes the
 * fds and early bytes (copied). Returns 0, or -1 when the connection was
 * refused at once (the cap, a thread that could not start); the fds are
 * closed either way by the callee. */
int al_gw_conn_spawn(al_gw_server *s, const al_handoff_msg *m, const char *early, int cfd, int ufd);

/* Shut every live connection's sockets (SIGTERM) and wait up to wait_ms
 * for the workers to log and exit. */
void al_gw_conn_shutdown_all(al_gw_server *s, unsigned wait_ms);

/* Write one decision line (adds "time" and "run"; redacts registered
 * secrets). Takes ownership of j. Thread-safe. */
void al_gw_decision(al_gw_server *s, void *line_object);

#endif
