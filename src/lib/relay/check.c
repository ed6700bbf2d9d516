/* The model relay's upstream trust (the TLS context, the public-key pin)
 * and the one-shot check of an upstream the supervisor makes before the
 * agent starts. See check.h for the contract. */
#include "relay/check.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"

const char *al_relay_up_failure_name(al_relay_up_failure f)
{
  static const char *const names[] = {"ok",         "dns",          "connect", "tls",
                                      "tls-verify", "pin-mismatch", "timeout"};
  return (unsigned)f < AL_ARRAY_SIZE(names) ? names[f] : "?";
}

void *al_relay_tls_ctx(const al_relay_upstream *u, al_error *err)
{
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    al_make_error(err, ENOMEM, "TLS context");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  /* relay.ca_file replaces the system store: a test or private API's CA
   * is then the only anchor (like curl --cacert) */
  if (u->ca_file) {
    if (SSL_CTX_load_verify_locations(ctx, u->ca_file, NULL) != 1) {
      unsigned long e = ERR_get_error();
      ERR_clear_error();
      SSL_CTX_free(ctx);
      al_error_set(err, EINVAL, "relay ca_file `%s`: cannot load it as PEM certificates (%s)",
                   u->ca_file, e ? ERR_reason_error_string(e) : "no certificate");
      return NULL;
    }
  } else {
    SSL_CTX_set_default_verify_paths(ctx);
  }
  static const unsigned char alpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
  return ctx;
}

int al_relay_pin_match(void *sslp, const char *pins, char *got, size_t n)
{
  SSL *ssl = sslp;
  if (n)
    got[0] = '\0';
  X509 *cert = SSL_get1_peer_certificate(ssl);
  if (!cert)
    return -1;
  unsigned char *der = NULL;
  int len = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
  X509_free(cert);
  if (len <= 0)
    return -1;
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(der, (size_t)len, md);
  OPENSSL_free(der);
  char b64[64];
  EVP_EncodeBlock((unsigned char *)b64, md, (int)sizeof md);
  snprintf(got, n, "sha256//%s", b64);
  /* pins: "sha256//X[;sha256//Y...]", checked by the policy's schema */
  for (const char *p = pins; p && *p;) {
    size_t l = strcspn(p, ";");
    if (l == 8 + strlen(b64) && strncmp(p, "sha256//", 8) == 0 && memcmp(p + 8, b64, l - 8) == 0)
      return 0;
    p += l;
    if (*p == ';')
      p++;
  }
  return -1;
}

static uint64_t left_ms(uint64_t deadline)
{
  uint64_t now = al_now_ms();
  return now >= deadline ? 0 : deadline - now;
}

/* Wait for fd to be ready for events until deadline: 1 ready, 0 timeout,
 * -1 error. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
  for (;;) {
    uint64_t left = left_ms(deadline);
    if (left == 0)
      return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r > 0)
      return 1;
  }
}

/* A non-blocking TCP connection to one of the addresses of host:port
 * (numeric when pinned), before deadline. fd, or -1 with *f and why. */
static int connect_any(const al_relay_upstream *u, uint64_t deadline, al_relay_up_failure *f,
                       char *why, size_t n)
{
  char port[8];
  snprintf(port, sizeof port, "%u", (unsigned)u->port);
  const char *name = u->pin ? u->pin : u->host;
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV | (u->pin ? AI_NUMERICHOST : 0)};
  struct addrinfo *ai = NULL;
  int gr = getaddrinfo(name, port, &hints, &ai);
  if (gr != 0) {
    *f = AL_RELAY_UP_DNS;
    snprintf(why, n, "%s does not resolve from this host (%s)", u->host,
             gr == EAI_SYSTEM ? strerror(errno) : gai_strerror(gr));
    return -1;
  }
  int fd = -1, last = ECONNREFUSED;
  bool timed_out = false;
  char addr[NI_MAXHOST] = "";
  for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
    getnameinfo(a->ai_addr, a->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
    int s = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
      last = errno;
      continue;
    }
    int r = connect(s, a->ai_addr, a->ai_addrlen);
    if (r < 0 && errno == EINPROGRESS) {
      int w = wait_fd(s, POLLOUT, deadline);
      int soerr = 0;
      socklen_t sl = sizeof soerr;
      if (w == 0) {
        timed_out = true;
        last = ETIMEDOUT;
      } else if (w < 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
        last = errno;
      } else if (soerr) {
        last = soerr;
      } else {
        r = 0;
      }
    } else if (r < 0) {
      last = errno;
    }
    if (r == 0)
      fd = s;
    else
      close(s);
    if (timed_out)
      break;
  }
  freeaddrinfo(ai);
  if (fd < 0) {
    *f = timed_out ? AL_RELAY_UP_TIMEOUT : AL_RELAY_UP_CONNECT;
    snprintf(why, n, "TCP connect to %s:%s (%s) failed: %s", u->host, port, addr,
             timed_out ? "no answer before the deadline" : strerror(last));
  }
  return fd;
}

al_relay_up_failure al_relay_check_upstream(const al_relay_upstream *u, uint64_t timeout_ms,
                                            char *why, size_t n)
{
  uint64_t deadline = al_now_ms() + timeout_ms;
  al_relay_up_failure f = AL_RELAY_UP_OK;
  why[0] = '\0';
  al_error err = {0};
  SSL_CTX *ctx = al_relay_tls_ctx(u, &err);
  if (!ctx) {
    snprintf(why, n, "%s", err.msg);
    return AL_RELAY_UP_TLS_VERIFY;
  }
  int fd = connect_any(u, deadline, &f, why, n);
  SSL *ssl = NULL;
  if (fd < 0)
    goto out;
  ssl = SSL_new(ctx);
  if (!ssl || !SSL_set_fd(ssl, fd) || !SSL_set_tlsext_host_name(ssl, u->host) ||
      !SSL_set1_host(ssl, u->host)) {
    f = AL_RELAY_UP_TLS;
    snprintf(why, n, "TLS setup for %s failed", u->host);
    goto out;
  }
  for (;;) {
    ERR_clear_error();
    int r = SSL_connect(ssl);
    if (r == 1)
      break;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      int w = wait_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
      if (w > 0)
        continue;
      f = AL_RELAY_UP_TIMEOUT;
      snprintf(why, n, "the TLS handshake with %s:%u did not finish before the deadline", u->host,
               (unsigned)u->port);
      goto out;
    }
    long vr = SSL_get_verify_result(ssl);
    unsigned long ee = ERR_get_error();
    if (vr != X509_V_OK) {
      f = AL_RELAY_UP_TLS_VERIFY;
      snprintf(why, n, "the certificate of %s:%u did not verify against %s%s: %s", u->host,
               (unsigned)u->port, u->ca_file ? "relay.ca_file " : "the system's CA store",
               u->ca_file ? u->ca_file : "", X509_verify_cert_error_string(vr));
    } else {
      f = AL_RELAY_UP_TLS;
      snprintf(why, n, "the TLS handshake with %s:%u failed: %s", u->host, (unsigned)u->port,
               ee ? ERR_reason_error_string(ee) : "the connection closed");
    }
    goto out;
  }
  if (u->pubkey_pin) {
    char got[80];
    if (al_relay_pin_match(ssl, u->pubkey_pin, got, sizeof got) < 0) {
      f = AL_RELAY_UP_PIN;
      snprintf(why, n,
               "the certificate of %s:%u verified, but its public key %s matches no "
               "relay.pubkey_pin",
               u->host, (unsigned)u->port, got);
      goto out;
    }
  }
  /* a clean close: nothing was sent but the handshake */
  (void)SSL_shutdown(ssl);
out:
  ERR_clear_error();
  if (ssl)
    SSL_free(ssl);
  if (fd >= 0)
    close(fd);
  SSL_CTX_free(ctx);
  return f;
}
