/* The transparent path (issue #27 item 3): listeners in the sandbox on
 * AL_PROXY_TRANSPARENT_ADDR, where the sandbox's /etc/hosts sends every
 * allowed name, for clients that ignore HTTPS_PROXY (Node's fetch, curl
 * --noproxy). Nothing says where such a client meant to go but what it
 * sends first, so the decision is the one a CONNECT would get, taken from
 * that:
 *
 *   first byte 0x16 (a TLS handshake record, RFC 8446 §5.1): the
 *     ClientHello's SNI (RFC 6066 §3) is the host, the listener's port the
 *     port; no SNI, ECH, an IP literal or a malformed name are refused as
 *     the SNI gate refuses them; the ClientHello then goes to the origin
 *     (or the forge gateway) unchanged, with no "200" in front of it.
 *   anything else: a plain HTTP/1.1 request in origin-form (RFC 9112
 *     §3.2.1), its Host field (RFC 9110 §7.2) the host and port (the
 *     listener's port must be the one it names); decided and rebuilt as
 *     absolute-form plain HTTP is (only `tls: false` entries).
 *
 * From there the connection walks the proxy's usual states (RESOLVE,
 * CONNECT, SPLICE), with the same caps, budget and log. */
#include "proxy/proxy_int.h"

/* TLS: the ClientHello is the request. */
static void transparent_tls(al_proxy_conn *c, int r)
{
  al_tls_hello hello;
  const char *why = NULL;

  c->direct_tls = true;
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
  c->port = c->tport;
  if (hello.has_sni) {
    snprintf(c->sni, sizeof c->sni, "%s", hello.sni);
    c->target = px_escape_raw(hello.sni, hello.sni_len);
  }
  if (hello.ech) {
    px_conn_deny(c, 0, "ech", NULL);
    return;
  }
  if (!hello.has_sni) {
    px_conn_deny(c, 0, "sni-missing", NULL);
    return;
  }
  if (al_host_canonicalize(hello.sni, hello.sni_len, &c->host, &why) < 0 || c->host.is_ip) {
    memset(&c->host, 0, sizeof c->host);
    px_conn_deny(c, 0, "sni-malformed", why);
    return;
  }
  if (!c->pol->p->network.present) {
    px_conn_deny(c, 0, "no-network", NULL);
    return;
  }
  const al_net_allow *a = px_conn_match(c);
  if (!a)
    return;
  c->tls = true; /* the SNI is checked already: the origin gets the hello as it came */
  px_conn_resolve(c);
}

/* Plain HTTP in origin-form: the Host field is the target. */
static void transparent_http(al_proxy_conn *c, int r)
{
  al_http_request req;
  const char *why = NULL;

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
  c->target = px_escape_raw(req.target, req.target_len);
  if (!c->pol->p->network.present) {
    px_conn_deny(c, 403, "no-network", NULL);
    return;
  }
  if (req.target_len == 0 || req.target[0] != '/') {
    /* CONNECT, absolute-form or '*': the proxy's own listener takes those */
    px_conn_deny(c, 403, "transparent-origin-form-only", NULL);
    return;
  }
  if (!req.host) {
    px_conn_deny(c, 403, "host-mismatch", "no Host field");
    return;
  }
  if (al_http_host_value(req.host->value, req.host->value_len, 80, &c->host, &c->port, &why) < 0) {
    memset(&c->host, 0, sizeof c->host);
    px_conn_deny(c, 403, "host-mismatch", why);
    return;
  }
  if (c->port != c->tport) {
    px_conn_deny(c, 403, "host-mismatch", "the Host field's port is not the one dialled");
    return;
  }
  const al_net_allow *a = px_conn_match(c);
  if (!a)
    return;
  if (a->tls) {
    px_conn_deny(c, 403, "tls-required", NULL);
    return;
  }
  if (req.chunked) {
    px_conn_deny(c, 411, "chunked-unsupported", NULL);
    return;
  }
  c->tls = false;
  px_conn_plain_start(c, &req, req.target, req.target_len);
  px_conn_resolve(c);
}

void px_conn_transparent(al_proxy_conn *c)
{
  if (c->buf_cap < AL_TLS_HELLO_MAX) {
    c->buf = al_xrealloc(c->buf, AL_TLS_HELLO_MAX);
    c->buf_cap = AL_TLS_HELLO_MAX;
  }
  /* a TLS hello has no "\r\n\r\n" to stop at: read what there is */
  bool tls = c->buf_len > 0 && (uint8_t)c->buf[0] == 0x16;
  int r = px_read_client(c, c->buf_len > 0 && !tls);
  if (c->buf_len == 0) {
    if (r <= 0) {
      c->reason = r == 0 ? "client-closed" : "client-error";
      px_conn_close(c);
    }
    return;
  }
  if ((uint8_t)c->buf[0] == 0x16)
    transparent_tls(c, r);
  else {
    if (c->buf_len > AL_HTTP_HEAD_MAX && !memmem(c->buf, AL_HTTP_HEAD_MAX, "\r\n\r\n", 4)) {
      px_conn_deny(c, 431, "head-too-large", NULL);
      return;
    }
    transparent_http(c, r);
  }
}

void al_proxy_transparent_plan_make(const al_policy *p, al_proxy_transparent_plan *out)
{
  memset(out, 0, sizeof *out);
  size_t cap = 1, len = 0;
  const al_policy_network *n = &p->network;
  for (size_t i = 0; n->present && i < n->n_allow; i++)
    if (!n->allow[i].wildcard && !n->allow[i].is_ip)
      cap += strlen(AL_PROXY_TRANSPARENT_ADDR_TEXT) + strlen(n->allow[i].host) + 2;
  out->hosts = al_xmalloc(cap);
  out->hosts[0] = '\0';
  for (size_t i = 0; n->present && i < n->n_allow; i++) {
    const al_net_allow *a = &n->allow[i];
    bool seen = false;
    for (size_t j = 0; j < out->n_ports; j++)
      seen = seen || out->ports[j] == a->port;
    if (!seen) {
      if (out->n_ports < AL_PROXY_TRANSPARENT_MAX)
        out->ports[out->n_ports++] = a->port;
      else
        out->n_ports_dropped++;
    }
    if (a->wildcard || a->is_ip)
      continue;
    bool named = false; /* the same host on two ports: one line */
    for (size_t j = 0; j < i; j++)
      named = named || (!n->allow[j].wildcard && strcmp(n->allow[j].host, a->host) == 0);
    if (!named)
      len += (size_t)snprintf(out->hosts + len, cap - len, "%s\t%s\n",
                              AL_PROXY_TRANSPARENT_ADDR_TEXT, a->host);
  }
}
