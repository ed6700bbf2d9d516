/* A connection's life: refusal with an HTTP answer, close, the per-state
 * pump, readiness from epoll, and the graveyard. */
#include "proxy/proxy_int.h"

bool px_sockaddr_from_text(const char *text, uint16_t port, struct sockaddr_storage *ss,
                           socklen_t *len)
{
  struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)ss;

  memset(ss, 0, sizeof *ss);
  if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    *len = sizeof *s4;
    return true;
  }
  if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    *len = sizeof *s6;
    return true;
  }
  return false;
}

void px_sockaddr_text(const struct sockaddr *sa, char *out, size_t n)
{
  char a[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const void *)sa;
    inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a);
    snprintf(out, n, "%s:%u", a, ntohs(s4->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const void *)sa;
    inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a);
    snprintf(out, n, "[%s]:%u", a, ntohs(s6->sin6_port));
  } else {
    snprintf(out, n, "?");
  }
}

/* Refuse: answer `status` with X-Airlock-Deny (never an address), log the
 * decision and drain. Usable in every state before SPLICE. */
void px_conn_deny(al_proxy_conn *c, int status, const char *reason, const char *detail)
{
  char resp[384];
  int n;

  c->reason = reason;
  c->detail = detail;
  px_stat_denial(c->run, c->px->sh, reason);
  px_decision_conn(c, "deny", "deny");
  if (c->ow.fd >= 0) {
    close(c->ow.fd);
    c->ow.fd = -1;
  }
  if (status == 0 || c->direct_tls || c->st == ST_SNI || c->st == ST_SPLICE) {
    /* inside a tunnel, or to a client that speaks TLS to us, there is no
     * HTTP to answer with */
    px_conn_close(c);
    return;
  }
  /* A one-line body so `curl -s` users see why; never an address. */
  char body[96];
  int bl = snprintf(body, sizeof body, "airlock: denied (%s)\n", reason);
  n = snprintf(resp, sizeof resp,
               "HTTP/1.1 %d %s\r\nX-Airlock-Deny: %s\r\nContent-Type: text/plain\r\n"
               "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
               status, al_http_reason(status), reason, bl, body);
  (void)send(c->cw.fd, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(c->cw.fd, SHUT_WR);
  free(c->buf);
  c->buf = NULL;
  c->buf_len = c->buf_cap = 0;
  al_proxy_shared *sh = c->px->sh;
  if (atomic_fetch_add(&sh->n_drain, 1) >= sh->max_conns) { /* too many refusals in flight */
    atomic_fetch_sub(&sh->n_drain, 1);
    px_conn_close(c);
    return;
  }
  /* a refused connection gives its slot back while it drains */
  c->st = ST_DRAIN;
  c->deadline = al_now_ms() + DRAIN_MS;
  atomic_fetch_sub(&c->run->n_conns, 1);
  atomic_fetch_sub(&sh->n_conns, 1);
  c->slot_released = true;
  px_conn_pump(c); /* may already see EOF */
}

static void dir_free(splice_dir *d)
{
  if (d->pipe[0] >= 0)
    close(d->pipe[0]);
  if (d->pipe[1] >= 0)
    close(d->pipe[1]);
  d->pipe[0] = d->pipe[1] = -1;
  free(d->pend);
  d->pend = NULL;
}

/* Close both sockets, log the end of an allowed tunnel, leave the live
 * list. Memory goes to the graveyard (or waits for c-ares as a zombie). */
void px_conn_close(al_proxy_conn *c)
{
  al_proxy *px = c->px;

  if (c->st == ST_CLOSED)
    return;
  if (c->st == ST_DRAIN)
    atomic_fetch_sub(&px->sh->n_drain, 1);
  if (c->opened) {
    px_decision_conn(c, "close", c->cut ? "deny" : "allow");
    if (c->cut)
      px_stat_denial(c->run, px->sh, c->reason);
  }
  if (c->up.bytes || c->down.bytes)
    px_stat_bytes(c->run, px->sh, c->up.bytes, c->down.bytes);
  c->st = ST_CLOSED;
  if (c->cw.fd >= 0)
    close(c->cw.fd);
  if (c->ow.fd >= 0)
    close(c->ow.fd);
  c->cw.fd = c->ow.fd = -1;
  dir_free(&c->up);
  dir_free(&c->down);
  free(c->rhead);
  c->rhead = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    px->live = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->prev = NULL;
  if (!c->slot_released) {
    atomic_fetch_sub(&c->run->n_conns, 1);
    atomic_fetch_sub(&px->sh->n_conns, 1);
  }
  if (!c->dns_pending) {
    c->next = px->graveyard;
    px->graveyard = c;
  } else {
    c->next = NULL;
  }
}

static void conn_free(al_proxy_conn *c)
{
  px_policy_unref(c->pol);
  free(c->buf);
  free(c->target);
  free(c);
}

/* Do whatever the state allows with the readiness we hold. */
void px_conn_pump(al_proxy_conn *c)
{
  switch (c->st) {
  case ST_HEAD:
    if (c->c_rd)
      px_conn_head(c);
    break;
  case ST_SNI: {
    /* flush the 200 first; the origin speaks only after the ClientHello */
    bool origin_rd = false; /* nothing is read from the origin yet */
    if (px_dir_pump(c, &c->down, c->ow.fd, c->cw.fd, &origin_rd, &c->c_wr, false) < 0) {
      px_conn_deny(c, 0, "client-error", NULL);
      return;
    }
    if (c->c_rd || c->buf_len)
      px_conn_sni(c);
    break;
  }
  case ST_SPLICE:
    px_splice(c);
    break;
  case ST_DRAIN: {
    char junk[4096];
    for (;;) {
      ssize_t n = recv(c->cw.fd, junk, sizeof junk, 0);
      if (n > 0)
        continue;
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      px_conn_close(c);
      break;
    }
    break;
  }
  case ST_RESOLVE:
  case ST_CONNECT:
  case ST_CLOSED:
  default:
    break;
  }
}

void px_client_ready(al_watch *w, uint32_t ev)
{
  al_proxy_conn *c = container_of(w, al_proxy_conn, cw);

  if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    c->c_rd = true;
  if (ev & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    c->c_hup = true;
  if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
    c->c_wr = true;
  px_conn_pump(c);
}

void px_bury(al_proxy *px)
{
  while (px->graveyard) {
    al_proxy_conn *c = px->graveyard;
    px->graveyard = c->next;
    conn_free(c);
  }
  while (px->dead_policies) {
    al_proxy_policy *pol = px->dead_policies;
    px->dead_policies = pol->next;
    px_policy_destroy(pol);
  }
  while (px->dead_watches) {
    ares_watch *aw = px->dead_watches;
    px->dead_watches = aw->next;
    free(aw);
  }
}
