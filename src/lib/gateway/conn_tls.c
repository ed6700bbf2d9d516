/* One gateway connection's TLS (see conn.c for the states): a BIO that
 * first returns the bytes the proxy already read, the agent's side with
 * the run CA's leaf for the CONNECT host (SNI and ALPN checked), and the
 * verified TLS to the forge on the fd the proxy dialled. */
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
/* ---- a BIO over the socket that first returns the early bytes ---- */

static BIO_METHOD *early_meth;
static pthread_once_t early_once = PTHREAD_ONCE_INIT;

static int eb_read(BIO *b, char *out, int n)
{
  al_gw_conn *c = BIO_get_data(b);
  int fd = (int)BIO_get_fd(b, NULL);
  BIO_clear_retry_flags(b);
  if (fd == c->cfd && c->early_off < c->early_len) {
    size_t k = c->early_len - c->early_off;
    if (k > (size_t)n)
      k = (size_t)n;
    memcpy(out, c->early + c->early_off, k);
    c->early_off += k;
    return (int)k;
  }
  ssize_t r;
  do
    r = recv(fd, out, (size_t)n, 0);
  while (r < 0 && errno == EINTR);
  return r < 0 ? -1 : (int)r;
}

static int eb_write(BIO *b, const char *in, int n)
{
  int fd = (int)BIO_get_fd(b, NULL);
  BIO_clear_retry_flags(b);
  ssize_t r;
  do
    r = send(fd, in, (size_t)n, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  return r < 0 ? -1 : (int)r;
}

static long eb_ctrl(BIO *b, int cmd, long num, void *ptr)
{
  (void)num;
  switch (cmd) {
  case BIO_CTRL_FLUSH:
    return 1;
  case BIO_C_GET_FD:
    if (ptr)
      *(int *)ptr = BIO_get_init(b) ? (int)(intptr_t)BIO_get_app_data(b) : -1;
    return (long)(intptr_t)BIO_get_app_data(b);
  default:
    return 0;
  }
}

static void early_meth_init(void)
{
  early_meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "airlock-gw-socket");
  if (!early_meth)
    return;
  BIO_meth_set_read(early_meth, eb_read);
  BIO_meth_set_write(early_meth, eb_write);
  BIO_meth_set_ctrl(early_meth, eb_ctrl);
}

static BIO *conn_bio(al_gw_conn *c, int fd)
{
  pthread_once(&early_once, early_meth_init);
  if (!early_meth)
    return NULL;
  BIO *b = BIO_new(early_meth);
  if (!b)
    return NULL;
  BIO_set_data(b, c);
  BIO_set_app_data(b, (void *)(intptr_t)fd);
  BIO_set_init(b, 1);
  return b;
}

/* ---- TLS, both sides ---- */

static int servername_cb(SSL *ssl, int *alert, void *arg)
{
  (void)arg;
  al_gw_conn *c = SSL_get_app_data(ssl);
  const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  al_host h;
  const char *why;
  if (!name) {
    if (c->host_is_ip)
      return SSL_TLSEXT_ERR_OK; /* no SNI for an IP literal (RFC 6066 §3) */
    c->tls_reason = "sni-missing";
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  if (al_host_canonicalize(name, strlen(name), &h, &why) < 0 || strcmp(h.name, c->m.host) != 0) {
    c->tls_reason = "sni-mismatch";
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  return SSL_TLSEXT_ERR_OK;
}

static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
  (void)arg;
  al_gw_conn *c = SSL_get_app_data(ssl);
  for (unsigned i = 0; i < inlen;) {
    unsigned l = in[i];
    if (i + 1 + l > inlen)
      break;
    if (l == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *outlen = 8;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + l;
  }
  c->tls_reason = "alpn-no-http1"; /* h2 only: refused, never tunnelled raw */
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

int al_gw_tls_setup(al_gw_server *s, al_error *err)
{
  s->srv_ctx = SSL_CTX_new(TLS_server_method());
  if (!s->srv_ctx)
    return al_error_set(err, EIO, "gateway: SSL_CTX_new (server)");
  SSL_CTX_set_min_proto_version(s->srv_ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(s->srv_ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                      SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(s->srv_ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_tlsext_servername_callback(s->srv_ctx, servername_cb);
  SSL_CTX_set_alpn_select_cb(s->srv_ctx, alpn_cb, NULL);
  SSL_CTX_set_mode(s->srv_ctx, SSL_MODE_AUTO_RETRY);
  return 0;
}

bool gwc_tls_accept(al_gw_conn *c)
{
  X509 *leaf = al_gw_ca_leaf(&c->s->ca, c->m.host);
  if (!leaf) {
    gwc_log_conn(c, "not-a-forge-host", NULL);
    return false;
  }
  c->cs = SSL_new(c->s->srv_ctx);
  BIO *b = conn_bio(c, c->cfd);
  if (!c->cs || !b) {
    BIO_free(b);
    gwc_log_conn(c, "tls-setup", NULL);
    return false;
  }
  SSL_set_bio(c->cs, b, b);
  SSL_set_app_data(c->cs, c);
  if (SSL_use_certificate(c->cs, leaf) != 1 || SSL_use_PrivateKey(c->cs, c->s->ca.leaf_key) != 1) {
    gwc_log_conn(c, "tls-setup", NULL);
    return false;
  }
  if (SSL_accept(c->cs) != 1) {
    char e[200] = "";
    unsigned long code = ERR_get_error();
    if (code)
      ERR_error_string_n(code, e, sizeof e);
    ERR_clear_error();
    gwc_log_conn(c, c->tls_reason ? c->tls_reason : "tls-handshake", e[0] ? e : NULL);
    return false;
  }
  return true;
}

/* The verified TLS client to the forge, on the fd the proxy dialled. */
int gwc_upstream_open(al_gw_conn *c, const char **detail)
{
  char *e = c->up_err;
  size_t esz = sizeof c->up_err;
  if (c->up_ready)
    return 0;
  if (c->up_dead)
    return -1;
  c->us = SSL_new((c->sides & AL_GW_SIDE_TICKET) ? c->s->tk_up_ctx : c->s->up_ctx);
  BIO *b = conn_bio(c, c->ufd);
  if (!c->us || !b) {
    BIO_free(b);
    *detail = "tls setup";
    return -1;
  }
  SSL_set_bio(c->us, b, b);
  SSL_set_app_data(c->us, c);
  X509_VERIFY_PARAM *vp = SSL_get0_param(c->us);
  if (c->host_is_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(vp, c->m.host) != 1)
      return -1;
  } else if (SSL_set_tlsext_host_name(c->us, c->m.host) != 1 ||
             X509_VERIFY_PARAM_set1_host(vp, c->m.host, 0) != 1) {
    *detail = "tls setup";
    return -1;
  }
  SSL_set_verify(c->us, SSL_VERIFY_PEER, NULL);
  static const unsigned char alpn[] = "\x08http/1.1";
  SSL_set_alpn_protos(c->us, alpn, sizeof alpn - 1);
  if (SSL_connect(c->us) != 1 || SSL_get_verify_result(c->us) != X509_V_OK) {
    long v = SSL_get_verify_result(c->us);
    unsigned long code = ERR_get_error();
    if (v != X509_V_OK)
      snprintf(e, esz, "%s", X509_verify_cert_error_string(v));
    else if (code)
      ERR_error_string_n(code, e, esz);
    else
      snprintf(e, esz, "handshake failed");
    ERR_clear_error();
    *detail = e;
    c->up_dead = true;
    return -1;
  }
  c->up_ready = true;
  return 0;
}

/* An idle keep-alive upstream that the forge closed: readable before we
 * asked anything. */
bool gwc_upstream_gone(al_gw_conn *c)
{
  if (!c->up_ready)
    return c->up_dead;
  if (c->ub_len > c->ub_off)
    return true; /* bytes nobody asked for */
  struct pollfd p = {.fd = c->ufd, .events = POLLIN};
  if (SSL_pending(c->us) > 0 || poll(&p, 1, 0) > 0)
    return true;
  return false;
}
