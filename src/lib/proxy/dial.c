/* After the allow decision: DNS (c-ares) or a pin, the address check
 * (addr.h), the non-blocking connect, and the hand-off to the forge gateway
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
  if (c->buf_len > AL_HANDOFF_EARLY_MAX ||
      send(c->cw.fd, ok200, sizeof ok200 - 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
          (ssize_t)(sizeof ok200 - 1) ||
      al_handoff_send(c->run->handoff->fd, &m, c->buf, c->cw.fd, c->ow.fd, &e) < 0) {
    px_conn_deny(c, 0, "gateway-unavailable", e.msg[0] ? e.msg : NULL);
    return;
  }
  c->reason = "gateway";
  px_stat_allowed(c->run, c->px->sh);
  px_audit_conn(c, "handoff", "allow");
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
  if (c->plain) {
    c->st = ST_RELAY;
    c->opened = true;
    px_stat_allowed(c->run, c->px->sh);
    px_audit_conn(c, "open", "allow");
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
    c->st = ST_RELAY;
    c->opened = true;
    px_stat_allowed(c->run, c->px->sh);
    px_audit_conn(c, "open", "allow");
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

static void conn_connect_next(al_proxy_conn *c)
{
  for (; c->addr_i < c->n_addrs; c->addr_i++) {
    struct sockaddr *sa = (struct sockaddr *)&c->addrs[c->addr_i];
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
