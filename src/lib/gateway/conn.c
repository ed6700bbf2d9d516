/* One handed-off connection of the forge gateway, on its own thread.
 *
 *   TLS ──► HEAD ──decide──► BODY ──► UPSTREAM ──► RESPONSE ──┐
 *    │        ▲      │                                         │
 *    │        └──────┼──────────── keep-alive ◄────────────────┘
 *    └─► refused     └─► 400/401/403 JSON ──► HEAD (no body) or closed
 *
 * TLS terminates the agent's TLS with the run CA's leaf for the CONNECT
 * host: SNI must be that host, ALPN http/1.1 or none. HEAD reads one
 * request head with the proxy's strict parser (net/http.h); decide()
 * checks the target (wire.h), the Host, the credential and the rule table
 * (rules.h). BODY reads the request body with the gateway's own framing
 * decoder (Content-Length or chunked) and, for a push, parses and checks
 * the update request before any byte goes upstream. UPSTREAM opens the
 * verified TLS connection to the forge on the fd the proxy dialled (once,
 * lazily, then reused) and sends the rebuilt request: origin-form, a
 * whitelist of fields, the gateway's own framing and the real token in
 * place of the placeholder. RESPONSE frames the forge's answer (length,
 * chunked or close-delimited; 1xx dropped) and relays it re-framed.
 *
 * Blocking I/O with SO_RCVTIMEO/SO_SNDTIMEO (AL_GW_IDLE_MS) on both
 * sockets: one thread per connection, nothing shared but the server's
 * mutex-guarded counters and decisions fd. Every request ends in exactly one
 * decision line. A token exists only in the rebuilt head (wiped after the
 * write) and in secret memory. */
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
#include "gateway/conn_int.h"
#include "gateway/server.h"
#include "gateway/wire.h"
#include "net/host.h"
#include "net/http.h"
/* ---- I/O helpers ---- */

int gwc_write_all(SSL *s, const void *buf, size_t n)
{
  const char *p = buf;
  while (n > 0) {
    int chunk = n > (1u << 30) ? 1 << 30 : (int)n;
    int w = SSL_write(s, p, chunk);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Read more client bytes into rb; 1 on data, 0 on EOF, -1 on error. */
int gwc_c_fill(al_gw_conn *c)
{
  if (c->rb_off == c->rb_len)
    c->rb_off = c->rb_len = 0;
  else if (c->rb_len == RB_CAP && c->rb_off > 0) {
    memmove(c->rb, c->rb + c->rb_off, c->rb_len - c->rb_off);
    c->rb_len -= c->rb_off;
    c->rb_off = 0;
  }
  if (c->rb_len == RB_CAP)
    return -1;
  int n = SSL_read(c->cs, c->rb + c->rb_len, (int)(RB_CAP - c->rb_len));
  if (n > 0) {
    c->rb_len += (size_t)n;
    return 1;
  }
  return SSL_get_error(c->cs, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

int gwc_u_fill(al_gw_conn *c)
{
  if (c->ub_off == c->ub_len)
    c->ub_off = c->ub_len = 0;
  else if (c->ub_len == RB_CAP && c->ub_off > 0) {
    memmove(c->ub, c->ub + c->ub_off, c->ub_len - c->ub_off);
    c->ub_len -= c->ub_off;
    c->ub_off = 0;
  }
  if (c->ub_len == RB_CAP)
    return -1;
  int n = SSL_read(c->us, c->ub + c->ub_len, (int)(RB_CAP - c->ub_len));
  if (n > 0) {
    c->ub_len += (size_t)n;
    return 1;
  }
  return SSL_get_error(c->us, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

/* ---- the worker ---- */

static void set_blocking_timeouts(int fd)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  struct timeval tv = {.tv_sec = AL_GW_IDLE_MS / 1000, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static void conn_free(al_gw_conn *c)
{
  al_gw_server *s = c->s;
  if (c->cs) {
    SSL_shutdown(c->cs);
    SSL_free(c->cs);
  }
  if (c->us)
    SSL_free(c->us);
  close(c->cfd);
  close(c->ufd);
  free(c->rb);
  free(c->ub);
  free(c->wb);
  pthread_mutex_lock(&s->mu);
  if (c->slot >= 0)
    s->live[c->slot] = NULL;
  s->n_conns--;
  pthread_cond_broadcast(&s->idle);
  pthread_mutex_unlock(&s->mu);
  OPENSSL_cleanse(c->early, sizeof c->early);
  free(c);
}

static void *conn_main(void *arg)
{
  al_gw_conn *c = arg;
  set_blocking_timeouts(c->cfd);
  set_blocking_timeouts(c->ufd);
  if (gwc_tls_accept(c)) {
    while (gwc_serve_request(c) == 0) {
      pthread_mutex_lock(&c->s->mu);
      bool stop = c->s->stop;
      pthread_mutex_unlock(&c->s->mu);
      if (stop)
        break;
    }
  }
  ERR_clear_error();
  conn_free(c);
  return NULL;
}

int al_gw_conn_spawn(al_gw_server *s, const al_handoff_msg *m, const char *early, int cfd, int ufd)
{
  al_gw_conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(cfd);
    close(ufd);
    return -1;
  }
  c->s = s;
  c->m = *m;
  c->cfd = cfd;
  c->ufd = ufd;
  c->slot = -1;
  memcpy(c->early, early, m->early_len);
  c->early_len = m->early_len;
  al_host h;
  const char *why;
  c->host_is_ip = al_host_canonicalize(m->host, strlen(m->host), &h, &why) == 0 && h.is_ip;
  if (strcmp(m->host, s->api_host) == 0 && m->port == s->api_port)
    c->sides |= AL_GW_SIDE_API;
  if (strcmp(m->host, s->git_host) == 0 && m->port == s->git_port)
    c->sides |= AL_GW_SIDE_GIT;
  if (s->has_tk && strcmp(m->host, s->tk_host) == 0 && m->port == s->tk_port)
    c->sides = AL_GW_SIDE_TICKET; /* never a forge host too (al_gateway_start) */
  pthread_mutex_lock(&s->mu);
  bool full = s->n_conns >= AL_GATEWAY_MAX_CONNS || s->stop;
  if (!full) {
    s->n_conns++;
    for (int i = 0; i < AL_GATEWAY_MAX_CONNS; i++)
      if (!s->live[i]) {
        s->live[i] = c;
        c->slot = i;
        break;
      }
  }
  pthread_mutex_unlock(&s->mu);
  if (full || !c->sides) {
    gwc_log_conn(c, full ? "conn-limit" : "not-a-forge-host", NULL);
    if (!full) {
      pthread_mutex_lock(&s->mu);
      s->live[c->slot] = NULL;
      s->n_conns--;
      pthread_mutex_unlock(&s->mu);
    }
    close(cfd);
    close(ufd);
    free(c);
    return -1;
  }
  c->rb = malloc(RB_CAP);
  c->ub = malloc(RB_CAP);
  c->wb = malloc(WB_CAP);
  pthread_attr_t a;
  pthread_t t;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 512 * 1024);
  int e = c->rb && c->ub && c->wb ? pthread_create(&t, &a, conn_main, c) : ENOMEM;
  pthread_attr_destroy(&a);
  if (e != 0) {
    gwc_log_conn(c, "thread", strerror(e));
    conn_free(c);
    return -1;
  }
  return 0;
}

void al_gw_conn_shutdown_all(al_gw_server *s, unsigned wait_ms)
{
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  for (int i = 0; i < AL_GATEWAY_MAX_CONNS; i++)
    if (s->live[i]) {
      shutdown(s->live[i]->cfd, SHUT_RDWR);
      shutdown(s->live[i]->ufd, SHUT_RDWR);
    }
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += wait_ms / 1000;
  dl.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  while (s->n_conns > 0)
    if (pthread_cond_timedwait(&s->idle, &s->mu, &dl) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&s->mu);
}
