/* The tunnel splice: each direction copies its first bytes, then splices
 * through a pipe (splice(2)); half-close; the egress budget's cut. */
#include "proxy/proxy_int.h"

static int dir_make_pipe(splice_dir *d)
{
  if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
    d->copy = true; /* out of pipes: fall back to read/write */
    return 0;
  }
  (void)fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_WANT);
  return 0;
}

/* One read src -> pipe (or the userspace queue). `up`: the client -> origin
 * direction, whose reads are capped by the run's egress budget and the
 * plain request's body; while the run has a budget the cap is taken, the
 * read made and the bytes added under the run's budget lock, so workers
 * reading for the same run never spend more than the budget between them.
 * Returns the bytes read, 0 at EOF, -errno, or -EAGAIN also when the cap
 * is 0 (nothing may be read now); *dry: a copied read came back short, so
 * src has nothing more now (px_read_dry). */
static ssize_t dir_fill(al_proxy_conn *c, splice_dir *d, int src, bool up, bool *dry)
{
  bool locked = up && px_budget_begin(c);
  ssize_t n;

  uint64_t limit = up ? px_up_limit(c) : UINT64_MAX;
  if (limit == 0) {
    n = -EAGAIN;
    goto out;
  }
  size_t want = limit < PIPE_WANT ? (size_t)limit : PIPE_WANT;
  if (d->bulk && !d->copy && d->pipe[0] < 0)
    dir_make_pipe(d);
  if (!d->copy && d->bulk) {
    n = splice(src, NULL, d->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0 && errno == EINVAL) {
      d->copy = true; /* splice cannot serve this pair: copy from now on */
      n = -EINTR;     /* and try again */
    } else if (n < 0) {
      n = -errno;
    }
    if (n > 0)
      d->in_pipe += (size_t)n;
  } else {
    size_t cap = d->copy ? COPY_BUF : FIRST_BUF;
    if (want > cap)
      want = cap;
    d->pend = al_xmalloc(want);
    n = recv(src, d->pend, want, 0);
    if (n < 0)
      n = -errno;
    if (n <= 0) {
      free(d->pend);
      d->pend = NULL;
    } else {
      d->pend_len = (size_t)n;
      if ((size_t)n == want && !d->copy)
        d->bulk = true; /* more is coming fast: splice from now on */
      bool hup = up ? c->c_hup : c->o_hup;
      *dry = px_read_dry(want, n, hup);
      /* A short read after the side's FIN: nothing but the EOF can be
       * left. Take it now, before these bytes go out, so that they leave
       * with MSG_MORE and the FIN that px_splice's shutdown(2) or close(2)
       * sends rides on their segment (tcp(7); one segment and one ACK
       * fewer). MSG_PEEK: if bytes were there after all, they stay. */
      char b;
      if ((size_t)n < want && hup && recv(src, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
        d->src_eof = true;
    }
  }
  if (n > 0 && up && c->plain)
    c->body_left -= (uint64_t)n;
out:
  if (up)
    px_budget_end(c, locked, n > 0 ? (uint64_t)n : 0);
  return n;
}

/* Move bytes src -> dst as far as readiness allows. Returns 0, or -1 when
 * the connection must close (c->reason set for a policy cut). `up`: the
 * client -> origin direction (capped, dir_fill). */
int px_dir_pump(al_proxy_conn *c, splice_dir *d, int src, int dst, bool *src_rd, bool *dst_wr,
                bool up)
{
  bool progress = true;

  while (progress) {
    progress = false;
    /* 1. the userspace queue */
    while (d->pend && d->pend_off < d->pend_len && *dst_wr) {
      /* the last bytes before an EOF already read: held for the FIN */
      int more = d->src_eof ? MSG_MORE : 0;
      ssize_t n = send(dst, d->pend + d->pend_off, d->pend_len - d->pend_off, MSG_NOSIGNAL | more);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN) {
          *dst_wr = false;
          break;
        }
        return -1;
      }
      d->pend_off += (size_t)n;
      d->bytes += (uint64_t)n;
      c->last_io = al_now_ms();
      progress = true;
    }
    if (d->pend && d->pend_off < d->pend_len)
      break;
    if (d->pend) {
      free(d->pend);
      d->pend = NULL;
      d->pend_off = d->pend_len = 0;
    }
    /* 2. pipe -> dst */
    if (d->in_pipe > 0 && *dst_wr) {
      ssize_t n =
          splice(d->pipe[0], NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n < 0) {
        if (errno == EAGAIN)
          *dst_wr = false;
        else if (errno != EINTR)
          return -1;
      } else {
        d->in_pipe -= (size_t)n;
        d->bytes += (uint64_t)n;
        c->last_io = al_now_ms();
        progress = true;
      }
    }
    /* 3. src -> pipe, only into an empty pipe: then EAGAIN means src is dry */
    if (d->in_pipe == 0 && !d->pend && !d->src_eof && *src_rd) {
      bool dry = false;
      ssize_t n = dir_fill(c, d, src, up, &dry);
      if (dry)
        *src_rd = false; /* the next byte brings an event */
      if (n == 0) {
        d->src_eof = true;
      } else if (n == -EAGAIN) {
        if (!up || px_up_limit(c) > 0)
          *src_rd = false; /* dry; a zero cap keeps the readiness for later */
      } else if (n < 0 && n != -EINTR) {
        return -1;
      } else {
        progress = true; /* bytes, or try again (EINTR, splice -> copy) */
      }
    }
  }
  return 0;
}

/* Queue n bytes after what the down direction still has to send. */
static void down_queue(al_proxy_conn *c, const char *p, size_t n)
{
  splice_dir *d = &c->down;
  size_t have = d->pend ? d->pend_len - d->pend_off : 0;
  char *q = al_xmalloc(have + n + 1);
  if (have)
    memcpy(q, d->pend + d->pend_off, have);
  memcpy(q + have, p, n);
  free(d->pend);
  d->pend = q;
  d->pend_off = 0;
  d->pend_len = have + n;
}

/* An origin whose head the proxy cannot read (or which closed first): a
 * 502 when the client has had nothing yet, and the connection is cut. */
static void plain_bad_head(al_proxy_conn *c, const char *why)
{
  if (c->down.bytes == 0 && !c->down.pend) {
    char resp[256];
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 502 Bad Gateway\r\nX-Airlock-Deny: origin-bad-head\r\n"
                     "Content-Type: text/plain\r\nContent-Length: 32\r\nConnection: close\r\n"
                     "\r\nairlock: denied (origin-bad-head)");
    (void)send(c->cw.fd, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  c->reason = "origin-bad-head";
  c->detail = why;
  c->cut = true;
  px_conn_close(c);
}

/* Plain HTTP (`tls: false`, absolute-form): read the origin's response
 * heads (1xx ones, then the final one) and queue each for the client
 * without its X-Airlock-* fields (http.h al_http_response_strip), so an
 * origin cannot answer in the proxy's name; after the final head the
 * bytes go as they come. Returns 0, or -1 when the connection is gone. */
static int plain_response_head(al_proxy_conn *c)
{
  while (!c->resp_done && c->o_rd) {
    if (!c->rhead)
      c->rhead = al_xmalloc(AL_HTTP_RESP_HEAD_MAX);
    size_t asked = AL_HTTP_RESP_HEAD_MAX - c->rhead_len;
    ssize_t n = recv(c->ow.fd, c->rhead + c->rhead_len, asked, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      c->o_rd = false;
      return 0;
    }
    if (n <= 0) {
      plain_bad_head(c, n == 0 ? "closed before its head" : "read error");
      return -1;
    }
    c->rhead_len += (size_t)n;
    if (px_read_dry(asked, n, c->o_hup))
      c->o_rd = false;
    c->last_io = al_now_ms();
    for (;;) {
      char *out = al_xmalloc(c->rhead_len + AL_HTTP_RESP_MAX_HEADERS);
      size_t ol = 0;
      int status = 0;
      const char *why = NULL;
      int h = al_http_response_strip(c->rhead, c->rhead_len, out, &ol, &status, &why);
      if (h > 0)
        down_queue(c, out, ol);
      free(out);
      if (h < 0) {
        plain_bad_head(c, why);
        return -1;
      }
      if (h == 0)
        break;
      memmove(c->rhead, c->rhead + h, c->rhead_len - (size_t)h);
      c->rhead_len -= (size_t)h;
      if (status >= 200 || status == 101) {
        c->resp_done = true; /* the body, and anything after it, as it comes */
        if (c->rhead_len)
          down_queue(c, c->rhead, c->rhead_len);
        free(c->rhead);
        c->rhead = NULL;
        c->rhead_len = 0;
        break;
      }
    }
  }
  return 0;
}

void px_splice(al_proxy_conn *c)
{
  bool heads = c->plain && !c->resp_done;
  if (heads && plain_response_head(c) < 0)
    return;
  /* while the heads are read, the down pump only sends what is queued */
  bool no_rd = false;
  if (px_dir_pump(c, &c->up, c->cw.fd, c->ow.fd, &c->c_rd, &c->o_wr, true) < 0 ||
      px_dir_pump(c, &c->down, c->ow.fd, c->cw.fd, heads ? &no_rd : &c->o_rd, &c->c_wr, false) <
          0) {
    px_conn_close(c);
    return;
  }
  if (heads && c->resp_done && c->o_rd) {
    px_splice(c); /* the final head is out of the way: the body's bytes now */
    return;
  }
  /* a side is through once it said EOF and its bytes are out */
  bool up_end = c->up.done || (c->up.src_eof && c->up.in_pipe == 0 && !c->up.pend);
  bool down_end = c->down.done || (c->down.src_eof && c->down.in_pipe == 0 && !c->down.pend);
  /* plain HTTP is one request per connection: the origin's answer ends it;
   * a tunnel ends when both sides are through. close(2) sends the FINs,
   * so the last side needs no shutdown(2) of its own. */
  if ((c->plain && down_end) || (up_end && down_end)) {
    px_conn_close(c);
    return;
  }
  /* half-close: pass one side's EOF on while the other still talks */
  if (up_end && !c->up.done) {
    shutdown(c->ow.fd, SHUT_WR);
    c->up.done = true;
  }
  if (down_end && !c->down.done) {
    shutdown(c->cw.fd, SHUT_WR);
    c->down.done = true;
  }
  if (c->plain)
    return;
  if (px_budget_spent(c) && !c->up.src_eof && (!c->plain || c->body_left > 0)) {
    c->reason = "egress-budget";
    c->cut = true;
    px_conn_close(c);
  }
}
