/* The model relay, upstream (see relay.c): a CONNECT tunnel through the
 * egress proxy, verified TLS to the route's upstream with the key injected
 * into the rebuilt head, and the response relayed back (framed, streamed,
 * usage counted). */
#include "relay/relay.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "net/http.h"
#include "relay/check.h"
#include "relay/relay_int.h"
#include "relay/rules.h"
#include "relay/usage.h"
/* ---- upstream ---- */

static int dial(const char *host, const char *port, uint64_t timeout_ms)
{
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  if (getaddrinfo(host, port, &hints, &ai) != 0)
    return -1;
  int fd = -1;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    rl_set_timeout(fd, SO_SNDTIMEO, timeout_ms); /* bounds connect(2) too */
    rl_set_timeout(fd, SO_RCVTIMEO, timeout_ms);
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
      break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

/* A TCP connection to the upstream host: through the proxy's CONNECT, or
 * directly. Returns the fd or -1 with c->reason filled. */
static int open_tunnel(struct call *c)
{
  const al_policy_relay *cfg = c->rl->cfg;
  const al_relay_upstream *up = c->up;
  const char *proxy = c->rl->o->proxy_addr;
  char port[8];
  snprintf(port, sizeof port, "%u", (unsigned)up->port);
  c->upstream_why = "connect";
  if (!proxy) {
    int fd = dial(up->pin ? up->pin : up->host, port, cfg->connect_timeout_ms);
    if (fd < 0)
      snprintf(c->reason, sizeof c->reason, "connect to %s:%s failed: %s", up->host, port,
               strerror(errno));
    return fd;
  }
  char ph[64];
  snprintf(ph, sizeof ph, "%s", proxy);
  char *colon = strrchr(ph, ':');
  if (!colon) {
    snprintf(c->reason, sizeof c->reason, "bad proxy address");
    return -1;
  }
  *colon = '\0';
  int fd = dial(ph, colon + 1, cfg->connect_timeout_ms);
  if (fd < 0) {
    snprintf(c->reason, sizeof c->reason, "egress proxy unreachable");
    return -1;
  }
  char req[600];
  int n = snprintf(req, sizeof req, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", up->host, port,
                   up->host, port);
  char resp[4096];
  size_t rn = 0;
  if (rl_send_all(fd, req, (size_t)n) < 0)
    goto fail;
  /* read the proxy's answer byte-exactly up to the blank line, so no TLS
   * byte is consumed here */
  while (rn < sizeof resp - 1) {
    ssize_t r = recv(fd, resp + rn, 1, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      goto fail;
    rn++;
    if (rn >= 4 && memcmp(resp + rn - 4, "\r\n\r\n", 4) == 0)
      break;
  }
  resp[rn] = '\0';
  /* the proxy's answer, read by the one strict parser (net/http.h) */
  al_http_response pr;
  const char *pwhy = NULL;
  if (al_http_parse_response_head(resp, rn, &pr, &pwhy) <= 0 || pr.status != 200) {
    char *eol = strpbrk(resp, "\r\n");
    if (eol)
      *eol = '\0';
    snprintf(c->reason, sizeof c->reason, "egress proxy refused the tunnel to %s:%s: %.120s",
             up->host, port, resp);
    close(fd);
    return -1;
  }
  return fd;
fail:
  snprintf(c->reason, sizeof c->reason, "egress proxy: no answer to CONNECT %s:%s (%s)", up->host,
           port, errno == EAGAIN ? "timeout" : "closed");
  close(fd);
  return -1;
}

static void ssl_reason(struct call *c, const char *what, SSL *ssl)
{
  unsigned long e = ERR_get_error();
  long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (vr != X509_V_OK)
    snprintf(c->reason, sizeof c->reason, "%s: certificate: %s", what,
             X509_verify_cert_error_string(vr));
  else if (e)
    snprintf(c->reason, sizeof c->reason, "%s: %s", what, ERR_reason_error_string(e));
  else
    snprintf(c->reason, sizeof c->reason, "%s failed (%s)", what,
             errno == EAGAIN ? "timeout" : "connection closed");
  ERR_clear_error();
}

static int ssl_write_all(SSL *ssl, const char *p, size_t n)
{
  while (n) {
    int w = SSL_write(ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Build the upstream request head: the agent's headers that the vendor's
 * allowlist names (rules.h), anthropic-beta filtered, then Host, the
 * policy's organization/project, the key, identity encoding, the length,
 * close. NULL with c answered-for (c->reason, *status) when a header is
 * refused. The caller wipes and frees it (it holds the key). */
static char *upstream_head(struct call *c, struct request *rq, const char *query, size_t body_len,
                           size_t *out_len, int *status)
{
  const al_relay_upstream *up = c->up;
  const char *key = c->rl->o->keys[c->up_idx];
  const char *const *allowed = (const char *const *)up->allow;
  size_t cap = 1024 + strlen(key) + strlen(rq->target) + strlen(up->prefix) +
               (up->organization ? strlen(up->organization) : 0) +
               (up->project ? strlen(up->project) : 0);
  for (size_t i = 0; i < rq->nh; i++)
    cap += strlen(rq->h[i].name) + strlen(rq->h[i].value) + 4;
  char *h = al_xmalloc(cap);
  size_t n = 0;
#define PUT(...) n += (size_t)snprintf(h + n, cap - n, __VA_ARGS__)
  PUT("%s %s%s%s HTTP/1.1\r\n", rq->method, up->prefix, c->path, query ? query : "");
  if (up->port == 443)
    PUT("Host: %s\r\n", up->host);
  else
    PUT("Host: %s:%u\r\n", up->host, (unsigned)up->port);
  for (size_t i = 0; i < rq->nh; i++) {
    const char *name = rq->h[i].name;
    if (rl_dropped_header(name))
      continue;
    if (!al_relay_header_allowed(c->rs, (const char *const *)up->headers, name)) {
      size_t dl = strlen(c->dropped);
      if (dl + strlen(name) + 2 < sizeof c->dropped) {
        snprintf(c->dropped + dl, sizeof c->dropped - dl, "%s%s", dl ? "," : "", name);
        for (char *q = c->dropped + dl; *q; q++)
          *q = (char)tolower((unsigned char)*q);
      }
      continue;
    }
    if (strcasecmp(name, "anthropic-beta") == 0 && c->rs->n_betas) {
      char kept[1024], gone[400], why[300];
      int st = al_relay_filter_betas(c->rs, allowed, (const char *const *)up->betas, rq->h[i].value,
                                     kept, sizeof kept, gone, sizeof gone, why, sizeof why);
      if (st) {
        *status = st;
        snprintf(c->reason, sizeof c->reason, "%s", why);
        explicit_bzero(h, cap);
        free(h);
        return NULL;
      }
      if (gone[0]) {
        size_t dl = strlen(c->dropped);
        snprintf(c->dropped + dl, sizeof c->dropped - dl, "%santhropic-beta=%s", dl ? "," : "",
                 gone);
      }
      if (kept[0])
        PUT("anthropic-beta: %s\r\n", kept);
      continue;
    }
    PUT("%s: %s\r\n", name, rq->h[i].value);
  }
  if (up->organization)
    PUT("OpenAI-Organization: %s\r\n", up->organization);
  if (up->project)
    PUT("OpenAI-Project: %s\r\n", up->project);
  if (strcmp(up->auth, "bearer") == 0)
    PUT("Authorization: Bearer %s\r\n", key);
  else
    PUT("x-api-key: %s\r\n", key);
  PUT("Accept-Encoding: identity\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
#undef PUT
  *out_len = n;
  return h;
}

/* Forward one admitted call. Answers the agent itself on failure. */
void rl_forward(struct call *c, struct request *rq, const char *query, const char *body,
                size_t body_len)
{
  char *head = NULL;
  size_t head_len = 0;
  const al_policy_relay *cfg = c->rl->cfg;
  uint64_t deadline = c->t0_ms + cfg->total_timeout_ms;
  int st = 0;
  head = upstream_head(c, rq, query, body_len, &head_len, &st);
  if (!head) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    rl_answer(c, st, "refused", true, "airlock relay: %s", why);
    return;
  }
  int fd = open_tunnel(c);
  if (fd < 0) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    rl_answer(c, 502, "upstream_error", false, "airlock relay: upstream %s unreachable: %s",
              c->up->upstream, why);
    explicit_bzero(head, head_len);
    free(head);
    return;
  }
  SSL *ssl = SSL_new(c->rl->ssl[c->up_idx]);
  char *rhead = NULL;
  c->upstream_why = "tls";
  if (!ssl || !SSL_set_fd(ssl, fd) || !SSL_set_tlsext_host_name(ssl, c->up->host) ||
      !SSL_set1_host(ssl, c->up->host)) {
    rl_answer(c, 502, "upstream_error", false, "airlock relay: TLS setup failed");
    goto out;
  }
  if (SSL_connect(ssl) != 1) {
    ssl_reason(c, "TLS handshake", ssl);
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    rl_answer(c, 502, "upstream_error", false, "airlock relay: upstream %s: %s", c->up->upstream,
              why);
    goto out;
  }
  if (c->up->pubkey_pin) {
    char got[80];
    if (al_relay_pin_match(ssl, c->up->pubkey_pin, got, sizeof got) < 0) {
      c->upstream_why = "pin";
      rl_answer(c, 502, "upstream_error", false,
                "airlock relay: upstream %s: its public key %s matches no relay.pubkey_pin",
                c->up->upstream, got);
      goto out;
    }
  }
  c->upstream_why = "send";
  int w = ssl_write_all(ssl, head, head_len);
  explicit_bzero(head, head_len);
  if (w < 0 || (body_len && ssl_write_all(ssl, body, body_len) < 0)) {
    rl_answer(c, 502, "upstream_error", false, "airlock relay: sending the request to %s failed",
              c->up->upstream);
    goto out;
  }
  c->bytes_up = body_len;

  /* the response head, within the first-byte timeout */
  rl_set_timeout(fd, SO_RCVTIMEO, cfg->first_byte_timeout_ms);
  c->upstream_why = "response";
  static __thread char buf[HEAD_MAX + IOBUF];
  size_t n = 0;
  struct response rs;
  size_t rhl = 0;
  int hl = 0;
  unsigned interim = 0;
  for (;;) {
    const char *why = NULL;
    hl = rl_parse_response_head(buf, n, &rs, &rhead, &rhl, &why);
    if (hl < 0) {
      c->upstream_why = "malformed";
      rl_answer(c, 502, "upstream_error", false,
                "airlock relay: malformed response head from %s (%s)", c->up->upstream, why);
      goto out;
    }
    if (hl > 0 && rs.status >= 200)
      break;
    if (hl > 0) { /* 1xx interim: skip it, the final answer follows */
      if (++interim > 8) {
        c->upstream_why = "malformed";
        rl_answer(c, 502, "upstream_error", false,
                  "airlock relay: more than 8 interim responses from %s", c->up->upstream);
        goto out;
      }
      memmove(buf, buf + hl, n - (size_t)hl);
      n -= (size_t)hl;
      continue;
    }
    if (n >= HEAD_MAX) {
      rl_answer(c, 502, "upstream_error", false, "airlock relay: upstream response head too large");
      goto out;
    }
    int r = SSL_read(ssl, buf + n, (int)(HEAD_MAX - n));
    if (r <= 0) {
      bool timeout = errno == EAGAIN || errno == EWOULDBLOCK;
      ERR_clear_error();
      c->upstream_why = timeout ? "timeout" : "closed";
      rl_answer(c, timeout ? 504 : 502, "upstream_error", false, "airlock relay: %s: %s",
                c->up->upstream,
                timeout ? "no response within the first-byte timeout (relay.timeouts.first_byte)"
                        : "upstream closed the connection before answering");
      goto out;
    }
    if (n == 0 && !interim)
      c->ttfb_ms = al_now_ms() - c->t0_ms;
    n += (size_t)r;
  }
  size_t rest = n - (size_t)hl;
  char *restp = buf + hl;
  c->status = rs.status;
  c->decision = "forwarded";
  c->upstream_why = NULL;
  c->stream = rs.sse;
  if (rl_send_all(c->fd, rhead, rhl) < 0) {
    snprintf(c->reason, sizeof c->reason, "agent went away");
    goto out;
  }
  c->bytes_down += rhl;
  al_usage_init(&c->usage, rs.sse, rs.chunked);
  bool no_body = rs.status == 204 || rs.status == 304 || strcmp(rq->method, "HEAD") == 0 ||
                 (rs.has_len && rs.len == 0);
  uint64_t body_seen = 0;
  rl_set_timeout(fd, SO_RCVTIMEO, cfg->idle_timeout_ms);
  while (!no_body) {
    if (rest) {
      size_t take = rest;
      if (rs.has_len && body_seen + take > rs.len)
        take = (size_t)(rs.len - body_seen);
      if (rl_send_all(c->fd, restp, take) < 0) {
        snprintf(c->reason, sizeof c->reason, "agent went away");
        break;
      }
      al_usage_feed(&c->usage, restp, take);
      c->bytes_down += take;
      body_seen += take;
    }
    if ((rs.has_len && body_seen >= rs.len) || (rs.chunked && (c->usage.done || c->usage.bad)))
      break;
    uint64_t now = al_now_ms();
    if (now >= deadline) {
      snprintf(c->reason, sizeof c->reason, "total timeout: stream cut");
      break;
    }
    if (deadline - now < cfg->idle_timeout_ms)
      rl_set_timeout(fd, SO_RCVTIMEO, deadline - now);
    int r = SSL_read(ssl, buf, IOBUF);
    if (r <= 0) {
      int e = SSL_get_error(ssl, r);
      if (e != SSL_ERROR_ZERO_RETURN && (rs.has_len || rs.chunked))
        snprintf(c->reason, sizeof c->reason, "%s",
                 errno == EAGAIN ? "idle timeout: stream cut" : "upstream ended early");
      ERR_clear_error();
      break;
    }
    restp = buf;
    rest = (size_t)r;
  }
  al_usage_finish(&c->usage);
  SSL_shutdown(ssl);
out:
  if (head) {
    explicit_bzero(head, head_len);
    free(head);
  }
  free(rhead);
  if (ssl)
    SSL_free(ssl);
  close(fd);
}
