/* The request head: read it, parse it (http.c), decide against the run's
 * allowlist (CONNECT, or absolute-form plain HTTP rebuilt into origin-form),
 * and the SNI gate on the first TLS flight (tls.c). */
#include "proxy/proxy_int.h"

char *px_rebuild_origin_form(al_proxy_conn *c, const al_http_request *req, const char *path,
                             size_t path_len, size_t *out_len)
{
  size_t cap = req->head_len + 1024, n = 0; /* the new Host line is at most ~270 */
  char *o = al_xmalloc(cap);
  char hostport[AL_HOST_MAX + 16];

  if (c->host.family == AF_INET6)
    snprintf(hostport, sizeof hostport, "[%s]", c->host.name);
  else
    snprintf(hostport, sizeof hostport, "%s", c->host.name);
  if (c->port != 80)
    snprintf(hostport + strlen(hostport), sizeof hostport - strlen(hostport), ":%u", c->port);
  n += (size_t)snprintf(o + n, cap - n, "%.*s %.*s HTTP/1.1\r\nHost: %s\r\n", (int)req->method_len,
                        req->method, (int)path_len, path, hostport);
  for (size_t i = 0; i < req->n_headers; i++) {
    const al_http_header *h = &req->headers[i];
    if (al_http_header_is_hop(req, h))
      continue;
    n += (size_t)snprintf(o + n, cap - n, "%.*s: %.*s\r\n", (int)h->name_len, h->name,
                          (int)h->value_len, h->value);
  }
  n += (size_t)snprintf(o + n, cap - n, "Connection: close\r\n\r\n");
  *out_len = n;
  return o;
}

static void conn_decide(al_proxy_conn *c, const al_http_request *req)
{
  const al_policy *p = c->pol->p;
  const char *why = NULL;
  const char *path = NULL;
  size_t path_len = 0;
  bool connect = req->method_len == 7 && memcmp(req->method, "CONNECT", 7) == 0;

  c->target = px_escape_raw(req->target, req->target_len);
  if (!p->network.present) {
    px_conn_deny(c, 403, "no-network", NULL);
    return;
  }
  if (connect) {
    if (req->content_length > 0 || req->chunked) {
      px_conn_deny(c, 400, "connect-with-body", NULL);
      return;
    }
    if (al_authority_parse(req->target, req->target_len, &c->host, &c->port, &why) < 0) {
      px_conn_deny(c, 403, "bad-target", why);
      return;
    }
  } else {
    if (req->target[0] == '/' || (req->target_len == 1 && req->target[0] == '*')) {
      px_conn_deny(c, 403, "origin-form", NULL);
      return;
    }
    if (al_http_absolute_target(req->target, req->target_len, &c->host, &c->port, &path, &path_len,
                                &why) < 0) {
      px_conn_deny(c, 403, strcmp(why, "bad-scheme") == 0 ? "bad-scheme" : "bad-target", why);
      return;
    }
    al_host hh;
    uint16_t hp = 0;
    if (!req->host) {
      px_conn_deny(c, 403, "host-mismatch", "no Host field");
      return;
    }
    if (al_http_host_value(req->host->value, req->host->value_len, 80, &hh, &hp, &why) < 0 ||
        strcmp(hh.name, c->host.name) != 0 || hp != c->port) {
      px_conn_deny(c, 403, "host-mismatch", why);
      return;
    }
  }
  const al_net_allow *a = px_conn_match(c);
  if (!a)
    return;
  c->tls = a->tls;
  if (!connect) {
    if (a->tls) {
      px_conn_deny(c, 403, "tls-required", NULL);
      return;
    }
    if (req->chunked) {
      px_conn_deny(c, 411, "chunked-unsupported", NULL);
      return;
    }
    px_conn_plain_start(c, req, path, path_len);
  } else if (c->buf_len == req->head_len) {
    /* nothing after the head: give the head buffer back now, so that an
     * open tunnel holds none (px_conn_sni allocates its own) */
    free(c->buf);
    c->buf = NULL;
    c->buf_len = c->buf_cap = 0;
  } else {
    /* keep bytes sent after the CONNECT head (an eager ClientHello) */
    memmove(c->buf, c->buf + req->head_len, c->buf_len - req->head_len);
    c->buf_len -= req->head_len;
  }
  px_conn_resolve(c);
}

const al_net_allow *px_conn_match(al_proxy_conn *c)
{
  const al_net_allow *a = px_policy_match(c->pol->p, &c->host, c->port);
  if (!a) {
    px_conn_deny(c, 403, c->host.is_ip ? "ip-literal" : "not-allowed", NULL);
    return NULL;
  }
  if (px_budget_spent(c)) {
    px_conn_deny(c, 403, "egress-budget", NULL);
    return NULL;
  }
  return a;
}

void px_conn_plain_start(al_proxy_conn *c, const al_http_request *req, const char *path,
                         size_t path_len)
{
  /* rebuilt into origin-form; the original head is never forwarded */
  c->plain = true;
  c->body_left = req->content_length > 0 ? (uint64_t)req->content_length : 0;
  size_t extra = c->buf_len - req->head_len;
  if (extra > c->body_left)
    extra = (size_t)c->body_left; /* pipelined requests are dropped */
  size_t hl;
  char *head = px_rebuild_origin_form(c, req, path, path_len, &hl);
  c->up.pend = al_xrealloc(head, hl + extra);
  memcpy(c->up.pend + hl, c->buf + req->head_len, extra);
  c->up.pend_len = hl + extra;
  c->body_left -= extra;
  px_budget_charge(c->run, hl + extra);
  free(c->buf);
  c->buf = NULL;
  c->buf_len = c->buf_cap = 0;
}

/* ---- client side ---- */

int px_read_client(al_proxy_conn *c, bool head)
{
  while (c->buf_len < c->buf_cap) {
    size_t asked = c->buf_cap - c->buf_len;
    ssize_t n = recv(c->cw.fd, c->buf + c->buf_len, asked, 0);
    if (n > 0) {
      c->buf_len += (size_t)n;
      if (px_read_dry(asked, n, c->c_hup)) {
        c->c_rd = false; /* the next byte brings an event */
        return 1;
      }
      /* a whole head: decide now; c_rd stays set, so whatever follows is
       * read later (SNI, splice) without waiting for another edge */
      if (head && memmem(c->buf, c->buf_len, "\r\n\r\n", 4))
        return 1;
      continue;
    }
    if (n == 0)
      return 0;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN) {
      c->c_rd = false;
      return 1;
    }
    return -1;
  }
  return 1;
}

void px_conn_head(al_proxy_conn *c)
{
  al_http_request req;
  const char *why = NULL;
  if (c->tport) {
    px_conn_transparent(c);
    return;
  }
  int r = px_read_client(c, true);

  int h = al_http_parse_head(c->buf, c->buf_len, &req, &why);
  if (h < 0) {
    px_conn_deny(c, why && strcmp(why, "head-too-large") == 0 ? 431 : 400, why, NULL);
    return;
  }
  if (h == 0) {
    if (r <= 0) {
      c->reason = r == 0 ? "client-closed" : "client-error";
      px_conn_close(c);
    }
    return;
  }
  conn_decide(c, &req);
}

void px_conn_sni(al_proxy_conn *c)
{
  al_tls_hello hello;
  const char *why = NULL;
  al_host sni;

  if (c->buf_cap < AL_TLS_HELLO_MAX) {
    c->buf = al_xrealloc(c->buf, AL_TLS_HELLO_MAX);
    c->buf_cap = AL_TLS_HELLO_MAX;
  }
  int r = px_read_client(c, false);
  int t = al_tls_parse_client_hello((const uint8_t *)c->buf, c->buf_len, &hello, &why);
  if (t == 0) {
    if (r <= 0)
      px_conn_deny(c, 0, r == 0 ? "client-closed" : "client-error", "before ClientHello");
    return;
  }
  if (t < 0) {
    px_conn_deny(c, 0, why, NULL);
    return;
  }
  if (hello.has_sni)
    snprintf(c->sni, sizeof c->sni, "%s", hello.sni);
  if (hello.ech) {
    px_conn_deny(c, 0, "ech", NULL);
    return;
  }
  if (!hello.has_sni) {
    px_conn_deny(c, 0, "sni-missing", NULL);
    return;
  }
  if (al_host_canonicalize(hello.sni, hello.sni_len, &sni, &why) < 0 || sni.is_ip) {
    px_conn_deny(c, 0, "sni-malformed", why);
    return;
  }
  if (strcmp(sni.name, c->host.name) != 0) {
    px_conn_deny(c, 0, "sni-mismatch", NULL);
    return;
  }
  /* allowed: the buffered first flight goes to the origin unchanged */
  c->st = ST_SPLICE;
  c->opened = true;
  px_stat_allowed(c->run, c->px->sh);
  px_decision_conn(c, "open", "allow");
  c->up.pend = c->buf;
  c->up.pend_len = c->buf_len;
  px_budget_charge(c->run, c->buf_len);
  c->buf = NULL;
  c->buf_len = c->buf_cap = 0;
  px_conn_pump(c);
}
