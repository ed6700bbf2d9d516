/* Listeners: accept in batches, the per-run and process connection caps.
 * Every worker waits on every listener (EPOLLEXCLUSIVE). */
#include "proxy/proxy_int.h"

static void accept_one(al_proxy_wrun *wr, int fd, const struct sockaddr_storage *ss)
{
  al_proxy *px = wr->px;
  al_proxy_shared *sh = px->sh;
  al_proxy_run *run = wr->run;
  al_proxy_conn *c = al_xcalloc(1, sizeof *c);
  const al_policy *p = wr->pol->p;

  c->px = px;
  c->run = run;
  c->pol = px_policy_ref(wr->pol);
  c->cw.fd = fd;
  c->cw.fn = px_client_ready;
  c->ow.fd = -1;
  c->ow.fn = px_origin_ready;
  c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
  c->t_start = c->last_io = al_now_ms();
  c->st = ST_HEAD;
  c->tport = wr->tport;
  c->deadline = c->t_start + p->network.head_timeout_ms;
  px_sockaddr_text((const struct sockaddr *)ss, c->client, sizeof c->client);
  c->next = px->live;
  if (px->live)
    px->live->prev = c;
  px->live = c;
  /* caps: per run (policy max_connections) and for the process, counted
   * across the workers. Refused connections do not hold a run slot while
   * they drain. */
  uint32_t n_run = atomic_fetch_add(&run->n_conns, 1) + 1;
  uint32_t n_all = atomic_fetch_add(&sh->n_conns, 1) + 1;
  px_stat_total(run, sh);
  if (al_loop_add(&px->loop, &c->cw, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
    px_conn_close(c);
    return;
  }
  uint32_t cap = p->network.max_conns ? p->network.max_conns : 256;
  if (n_run > cap || n_all > sh->max_conns) {
    px_conn_deny(c, 503, n_run > cap ? "conn-limit" : "global-conn-limit", NULL);
    return;
  }
  c->buf_cap = AL_HTTP_HEAD_MAX;
  c->buf = al_xmalloc(c->buf_cap);
  /* the request usually came with the handshake: read it now rather than
   * after another round through epoll (EAGAIN otherwise: edge-triggered,
   * the next byte brings an event) */
  c->c_rd = c->c_wr = true;
  px_conn_pump(c);
}

/* Accept at most this many connections per wakeup: the listener is
 * level-triggered and shared (EPOLLEXCLUSIVE), so what is left wakes this
 * worker again or another one. */
#define ACCEPT_BATCH 32

void px_listener_ready(al_watch *w, uint32_t ev)
{
  al_proxy_wrun *wr = container_of(w, al_proxy_wrun, w);
  (void)ev;

  for (int i = 0; i < ACCEPT_BATCH; i++) {
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) &&
          !wr->paused) {
        /* level-triggered: leave epoll until the next tick, or it spins */
        al_loop_del(&wr->px->loop, &wr->w);
        wr->paused = true;
      }
      return;
    }
    int one = 1;
    if (!wr->nodelay)
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    accept_one(wr, fd, &ss);
  }
}

/* Put a listener into this worker's loop: level-triggered, and with
 * EPOLLEXCLUSIVE (epoll_ctl(2), Linux 4.5) so that a new connection wakes
 * one waiting worker, not all of them. */
int px_listener_watch(al_proxy *px, al_proxy_wrun *wr)
{
  int r = al_loop_add(&px->loop, &wr->w, EPOLLIN | EPOLLEXCLUSIVE);
  if (r == -EINVAL)
    r = al_loop_add(&px->loop, &wr->w, EPOLLIN);
  return r;
}
