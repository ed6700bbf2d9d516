/* After the allow decision: DNS (c-ares) or a pin, the address check
 * (addr.h), the self-connect guard (never one of the proxy's own
 * listeners), the non-blocking connect, and the hand-off to the forge gateway
 * (handoff.h). */
#include "proxy/proxy_int.h"

static void conn_connect_next(al_proxy_conn *c);

/* A CONNECT to a forge host: answer 200, pass both fds and the early
 * bytes to the gateway (handoff.h), log "handoff" and forget the
 * connection. The watches leave epoll first: the gateway's dups keep the
 * sockets open, so close(2) alone would not remove them. */
static void conn_handoff(al_proxy_conn *c)
{
  static const char ok200[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  static _Atomic uint64_t next_id;
  al_handoff_msg m = {.magic = AL_HANDOFF_MAGIC, .version = AL_HANDOFF_VERSION, .port = c->port};
  al_error e = {0};

  m.conn_id = atomic_fetch_add(&next_id, 1) + 1;
  m.early_len = (uint32_t)c->buf_len;
  snprintf(m.host, sizeof m.host, "%s", c->host.name);
  snprintf(m.client, sizeof m.client, "%s", c->client);
  al_loop_del(&c->px->loop, &c->cw);
  al_loop_del(&c->px->loop, &c->ow);
  /* a transparent TLS client sent no CONNECT: it gets no 200 */
  if (c->buf_len > AL_HANDOFF_EARLY_MAX ||
      (!c->direct_tls && send(c->cw.fd, ok200, sizeof ok200 - 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
                             (ssize_t)(sizeof ok200 - 1)) ||
      al_handoff_send(c->run->handoff->fd, &m, c->buf, c->cw.fd, c->ow.fd, &e) < 0) {
    px_conn_deny(c, 0, "gateway-unavailable", e.msg[0] ? e.msg : NULL);
    return;
  }
  c->reason = "gateway";
  px_stat_allowed(c->run, c->px->sh);
  px_decision_conn(c, "handoff", "allow");
  px_conn_close(c);
}

static void conn_established(al_proxy_conn *c)
{
  static const char ok200[] = "HTTP/1.1 200 Connection established\r\n\r\n";

  px_sockaddr_text((struct sockaddr *)&c->addrs[c->addr_i], c->dialled, sizeof c->dialled);
  c->last_io = al_now_ms();
  if (al_handoff_matches(c->run->handoff, c->host.name, c->port)) {
    if (c->plain)
      px_conn_deny(c, 403, "gateway-plain-http", NULL);
    else
      conn_handoff(c);
    return;
  }
  if (c->plain || c->direct_tls) {
    c->st = ST_SPLICE;
    c->opened = true;
    px_stat_allowed(c->run, c->px->sh);
    px_decision_conn(c, "open", "allow");
    if (c->direct_tls) { /* the ClientHello, checked (transparent.c), goes first */
      c->up.pend = c->buf;
      c->up.pend_len = c->buf_len;
      px_budget_charge(c->run, c->buf_len);
      c->buf = NULL;
      c->buf_len = c->buf_cap = 0;
    }
    px_conn_pump(c);
    return;
  }
  c->down.pend = al_xmalloc(sizeof ok200 - 1);
  memcpy(c->down.pend, ok200, sizeof ok200 - 1);
  c->down.pend_len = sizeof ok200 - 1;
  c->down.bytes = 0;
  if (c->tls) {
    c->st = ST_SNI;
    c->deadline = al_now_ms() + c->pol->p->network.head_timeout_ms;
  } else {
    c->st = ST_SPLICE;
    c->opened = true;
    px_stat_allowed(c->run, c->px->sh);
    px_decision_conn(c, "open", "allow");
    if (c->buf_len) { /* early bytes sent with the CONNECT */
      c->up.pend = c->buf;
      c->up.pend_len = c->buf_len;
      c->buf = NULL;
      c->buf_len = c->buf_cap = 0;
    }
  }
  px_conn_pump(c);
}

void px_origin_ready(al_watch *w, uint32_t ev)
{
  al_proxy_conn *c = container_of(w, al_proxy_conn, ow);

  if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    c->o_rd = true;
  if (ev & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    c->o_hup = true;
  if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
    c->o_wr = true;
  if (c->st == ST_CONNECT) {
    if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
      return;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(c->ow.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
      close(c->ow.fd);
      c->ow.fd = -1;
      c->o_rd = c->o_wr = c->o_hup = false;
      c->addr_i++;
      conn_connect_next(c);
      return;
    }
    conn_established(c);
    return;
  }
  px_conn_pump(c);
}

/* An address and port as 16 bytes (IPv4 as ::ffff:a.b.c.d) and a port. */
static bool sa_key(const struct sockaddr *sa, unsigned char a[16], uint16_t *port)
{
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
    memset(a, 0, 10);
    a[10] = a[11] = 0xff;
    memcpy(a + 12, &s4->sin_addr, 4);
    *port = ntohs(s4->sin_port);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
    memcpy(a, &s6->sin6_addr, 16);
    *port = ntohs(s6->sin6_port);
    return true;
  }
  return false;
}

static bool key_unspecified(const unsigned char a[16])
{
  static const unsigned char any6[16], any4[16] = {[10] = 0xff, [11] = 0xff};
  return memcmp(a, any6, 16) == 0 || memcmp(a, any4, 16) == 0;
}

/* Does a connect(2) to `a` reach this host itself: the unspecified
 * address (Linux connects it to the host), loopback (127/8, ::1), or one
 * of the host's interface addresses? */
static bool key_is_host(al_proxy_shared *sh, const unsigned char a[16])
{
  static const unsigned char lo6[16] = {[15] = 1};
  if (key_unspecified(a) || memcmp(a, lo6, 16) == 0)
    return true;
  bool v4 = a[10] == 0xff && a[11] == 0xff && memcmp(a, lo6, 10) == 0;
  if (v4 && a[12] == 127)
    return true;
  const al_addr_set *local = px_local_addrs(sh);
  for (size_t i = 0; v4 && i < local->n_v4; i++)
    if (memcmp(&local->v4[i], a + 12, 4) == 0)
      return true;
  for (size_t i = 0; !v4 && i < local->n_v6; i++)
    if (memcmp(&local->v6[i], a, 16) == 0)
      return true;
  return false;
}

/* Is sa one of the proxy's own listeners (any run's: the sandbox's, a
 * standalone --listen's)? The same port, and the listener's address, or
 * any address of this host when the listener is bound to the wildcard.
 * smokescreen refuses such a dial too: a request that loops back in would
 * be decided again, by another run's policy when it is that run's
 * listener, and would count twice. */
static bool dial_is_self(al_proxy_conn *c, const struct sockaddr *sa)
{
  al_proxy_shared *sh = c->px->sh;
  unsigned char a[16], l[16];
  uint16_t port, lport;
  if (!sa_key(sa, a, &port))
    return false;
  for (size_t i = 0; i < sh->n_runs; i++) {
    const al_proxy_run *run = &sh->runs[i];
    if (!run->self_len || !sa_key((const struct sockaddr *)&run->self, l, &lport) || lport != port)
      continue;
    if (memcmp(a, l, 16) == 0 || (key_unspecified(a) && key_is_host(sh, l)) ||
        (key_unspecified(l) && key_is_host(sh, a)))
      return true;
  }
  return false;
}

static void conn_connect_next(al_proxy_conn *c)
{
  for (; c->addr_i < c->n_addrs; c->addr_i++) {
    struct sockaddr *sa = (struct sockaddr *)&c->addrs[c->addr_i];
    if (dial_is_self(c, sa)) {
      px_sockaddr_text(sa, c->dialled, sizeof c->dialled); /* logged, never dialled */
      px_conn_deny(c, 403, "self-connect", NULL);
      return;
    }
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rcv = ORIGIN_RCVBUF;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    if (connect(fd, sa, c->addr_lens[c->addr_i]) < 0 && errno != EINPROGRESS) {
      close(fd);
      continue;
    }
    c->ow.fd = fd;
    c->ow.fn = px_origin_ready;
    c->st = ST_CONNECT;
    if (al_loop_add(&c->px->loop, &c->ow, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
      px_conn_deny(c, 502, "connect-failed", "epoll");
      return;
    }
    return;
  }
  px_conn_deny(c, 502, "connect-failed", NULL);
}

static void dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
  al_proxy_conn *c = arg;
  (void)timeouts;

  c->dns_pending = false;
  if (c->st != ST_RESOLVE) {
    if (res)
      ares_freeaddrinfo(res);
    if (c->st == ST_CLOSED) { /* a zombie: the client left while we asked */
      c->next = c->px->graveyard;
      c->px->graveyard = c;
    }
    return; /* else timed out and already answered */
  }
  if (status != ARES_SUCCESS || !res) {
    if (res)
      ares_freeaddrinfo(res);
    px_conn_deny(c, 502, "dns-failed", status == ARES_ENOTFOUND ? "no such name" : "lookup failed");
    return;
  }
  /* Every answer must be globally reachable: one bad answer refuses the
   * name (a rebinding resolver mixes them). */
  const char *bad = NULL;
  c->n_addrs = 0;
  for (struct ares_addrinfo_node *n = res->nodes; n; n = n->ai_next) {
    const char *w = al_addr_classify(n->ai_addr, px_local_addrs(c->px->sh));
    if (w) {
      bad = w;
      px_sockaddr_text(n->ai_addr, c->dialled, sizeof c->dialled); /* logged, never sent */
      break;
    }
    if (c->n_addrs < MAX_ADDRS && (size_t)n->ai_addrlen <= sizeof c->addrs[0]) {
      memcpy(&c->addrs[c->n_addrs], n->ai_addr, (size_t)n->ai_addrlen);
      c->addr_lens[c->n_addrs++] = (socklen_t)n->ai_addrlen;
    }
  }
  ares_freeaddrinfo(res);
  if (bad) {
    px_conn_deny(c, 403, "private-address", bad);
    return;
  }
  if (c->n_addrs == 0) {
    px_conn_deny(c, 502, "dns-failed", "no addresses");
    return;
  }
  c->dialled[0] = '\0';
  c->addr_i = 0;
  conn_connect_next(c);
}

/* After the allow decision: a pin, a literal, or a DNS query. */
void px_conn_resolve(al_proxy_conn *c)
{
  const al_policy *p = c->pol->p;
  const char *pin = c->host.is_ip ? NULL : px_policy_pin(p, c->host.name);

  c->st = ST_RESOLVE;
  c->deadline = al_now_ms() + p->network.connect_timeout_ms;
  if (pin || c->host.is_ip) {
    const char *text = pin ? pin : c->host.name;
    if (!px_sockaddr_from_text(text, c->port, &c->addrs[0], &c->addr_lens[0])) {
      px_conn_deny(c, 502, "bad-pin", NULL);
      return;
    }
    if (!pin) { /* a listed literal is still checked; only pins skip the guard */
      const char *w = al_addr_classify((struct sockaddr *)&c->addrs[0], px_local_addrs(c->px->sh));
      if (w) {
        px_conn_deny(c, 403, "private-address", w);
        return;
      }
    }
    c->n_addrs = 1;
    c->addr_i = 0;
    conn_connect_next(c);
    return;
  }
  struct ares_addrinfo_hints hints;
  char port[8];
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NUMERICSERV;
  snprintf(port, sizeof port, "%u", c->port);
  c->dns_pending = true;
  /* may call dns_done before returning; nothing below may touch c */
  ares_getaddrinfo(c->pol->ch, c->host.name, port, &hints, dns_done, c);
}
