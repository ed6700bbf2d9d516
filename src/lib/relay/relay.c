/* The model relay's server: one thread per call, blocking sockets with
 * timeouts, OpenSSL for the upstream TLS. See relay.h for the contract. */
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
#include "relay/rules.h"
#include "relay/usage.h"

#define HEAD_MAX (64 * 1024)
#define HEAD_TIMEOUT_MS 30000
#define IOBUF 16384

/* ---- shared state ---- */

struct relay {
  const al_relay_serve_opts *o;
  const al_policy_relay *cfg;
  SSL_CTX *ssl[16]; /* one per upstream (each has its own ca_file) */
  pthread_mutex_t mu;
  uint32_t active;
  uint64_t requests; /* admitted calls */
  uint64_t tokens;   /* tokens charged (in + out) */
  uint64_t seq;
};

struct call {
  struct relay *rl;
  int fd; /* the agent's connection */
  uint64_t id;
  uint64_t t0_ms;
  const al_relay_upstream *up; /* the route's upstream, once known */
  size_t up_idx;
  const al_relay_ruleset *rs; /* its vendor's rules */
  /* what goes into the log line */
  char method[16];
  char path[260];
  char model[132];
  int status;
  bool stream;
  const char *decision;
  char reason[400];
  char feature[72];         /* a refused server-side feature, or "" */
  char dropped[400];        /* request headers (and anthropic-beta values) not forwarded */
  const char *upstream_why; /* upstream_error: connect, tls, timeout, closed, malformed */
  uint64_t bytes_up, bytes_down, ttfb_ms;
  al_usage usage;
};

static void log_call(struct call *c)
{
  struct relay *rl = c->rl;
  if (rl->o->log_fd < 0)
    return;
  char when[32];
  al_time_iso_ms(when);
  json_t *j = json_pack(
      "{s:s, s:s, s:s?, s:I, s:s, s:s, s:s?, s:i, s:b, s:I, s:I, s:I, s:I, "
      "s:I, s:I, s:b}",
      "time", when, "type", "model_call", "run", rl->o->run_id, "call", (json_int_t)c->id, "method",
      c->method, "path", c->path, "model", c->model[0] ? c->model : NULL, "status", c->status,
      "stream", c->stream, "tokens_in", (json_int_t)c->usage.tokens_in, "tokens_out",
      (json_int_t)c->usage.tokens_out, "bytes_up", (json_int_t)c->bytes_up, "bytes_down",
      (json_int_t)c->bytes_down, "latency_ms", (json_int_t)(al_now_ms() - c->t0_ms), "ttfb_ms",
      (json_int_t)c->ttfb_ms, "usage_seen", c->usage.seen);
  if (!j)
    return;
  json_object_set_new(j, "decision", json_string(c->decision ? c->decision : "error"));
  if (c->reason[0])
    json_object_set_new(j, "reason", json_string(c->reason));
  if (c->up) {
    json_object_set_new(j, "vendor", json_string(c->up->vendor));
    json_object_set_new(j, "upstream", json_string(c->up->upstream));
  }
  if (c->feature[0])
    json_object_set_new(j, "feature", json_string(c->feature));
  if (c->dropped[0])
    json_object_set_new(j, "dropped", json_string(c->dropped));
  if (c->upstream_why)
    json_object_set_new(j, "upstream_failure", json_string(c->upstream_why));
  char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(j);
  if (!s)
    return;
  char *line = al_strdup_printf("%s\n", s);
  free(s);
  pthread_mutex_lock(&rl->mu);
  (void)al_write_all(rl->o->log_fd, line, strlen(line));
  pthread_mutex_unlock(&rl->mu);
  free(line);
}

static void set_timeout(int fd, int opt, uint64_t ms)
{
  struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)((ms % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static int send_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len) {
    ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* An answer made by the relay itself (a refusal or an upstream failure). */
static void answer(struct call *c, int status, const char *decision, bool no_retry, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
static void answer(struct call *c, int status, const char *decision, bool no_retry, const char *fmt,
                   ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof c->reason, fmt, ap);
  va_end(ap);
  c->status = status;
  c->decision = decision;
  static const struct {
    int code;
    const char *text, *type;
  } texts[] = {{400, "Bad Request", "invalid_request_error"},
               {403, "Forbidden", "permission_error"},
               {405, "Method Not Allowed", "permission_error"},
               {411, "Length Required", "invalid_request_error"},
               {413, "Content Too Large", "request_too_large"},
               {426, "Upgrade Required", "invalid_request_error"},
               {429, "Too Many Requests", "rate_limit_error"},
               {431, "Request Header Fields Too Large", "invalid_request_error"},
               {501, "Not Implemented", "invalid_request_error"},
               {502, "Bad Gateway", "api_error"},
               {503, "Service Unavailable", "overloaded_error"},
               {504, "Gateway Timeout", "api_error"}};
  const char *text = "Error", *type = "api_error";
  for (size_t i = 0; i < AL_ARRAY_SIZE(texts); i++)
    if (texts[i].code == status) {
      text = texts[i].text;
      type = texts[i].type;
    }
  /* The error in the shape the agent's SDK reads, so the agent shows it:
   * Anthropic {"type":"error","error":{"type","message"}} (Messages API
   * "Errors" page); OpenAI {"error":{"message","type","param","code"}}
   * (API reference "Error codes"). */
  bool openai = c->rs ? c->rs == &al_relay_rules_openai
                      : (strstr(c->path, "/responses") || strstr(c->path, "/chat/"));
  json_t *j = openai ? json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", c->reason, "type",
                                 status == 429   ? "rate_limit_exceeded"
                                 : status >= 500 ? "server_error"
                                                 : "invalid_request_error",
                                 "param", "code", decision)
                     : json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type,
                                 "message", c->reason);
  char *b = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  char *head = al_strdup_printf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                                "Content-Length: %zu\r\n%sx-airlock-relay: refused\r\n"
                                "Connection: close\r\n\r\n",
                                status, text, b ? strlen(b) : 0,
                                no_retry ? "x-should-retry: false\r\n" : "");
  bool head_only = strcmp(c->method, "HEAD") == 0; /* RFC 9110 §9.3.2: no content */
  if (send_all(c->fd, head, strlen(head)) == 0) {
    c->bytes_down += strlen(head);
    if (b && !head_only && send_all(c->fd, b, strlen(b)) == 0)
      c->bytes_down += strlen(b);
  }
  free(head);
  free(b);
}

/* ---- the agent's request ---- */

struct header {
  char *name, *value; /* pointers into the head buffer */
};

struct request {
  char *head; /* NUL-terminated, CR/LF replaced by NULs while parsing */
  size_t head_len;
  char *extra; /* bytes read past the head (start of the body) */
  size_t extra_len;
  char *method, *target;
  struct header h[128];
  size_t nh;
};

static bool token_char(char ch)
{
  return isalnum((unsigned char)ch) || strchr("!#$%&'*+-.^_`|~", ch);
}

/* Read and parse the request head (RFC 9112 §2-§5). 0, or an HTTP status. */
static int read_head(struct call *c, struct request *rq, char *buf)
{
  size_t len = 0;
  char *end = NULL;
  while (!end) {
    if (len == HEAD_MAX)
      return 431;
    ssize_t r = recv(c->fd, buf + len, HEAD_MAX - len, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1; /* gone or timed out: nothing to answer */
    len += (size_t)r;
    buf[len] = '\0';
    end = memmem(buf, len, "\r\n\r\n", 4);
  }
  rq->head = buf;
  rq->head_len = (size_t)(end - buf) + 4;
  rq->extra = buf + rq->head_len;
  rq->extra_len = len - rq->head_len;
  if (memchr(buf, '\0', rq->head_len))
    return 400;
  *end = '\0';
  char *save = NULL;
  char *line = strtok_r(buf, "\n", &save);
  if (!line)
    return 400;
  size_t ll = strlen(line);
  if (ll && line[ll - 1] == '\r')
    line[--ll] = '\0';
  char *sp1 = strchr(line, ' ');
  char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
  if (!sp1 || !sp2 || strchr(sp2 + 1, ' ') ||
      (strcmp(sp2 + 1, "HTTP/1.1") != 0 && strcmp(sp2 + 1, "HTTP/1.0") != 0))
    return 400;
  *sp1 = *sp2 = '\0';
  rq->method = line;
  rq->target = sp1 + 1;
  for (char *m = rq->method; *m; m++)
    if (!token_char(*m))
      return 400;
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    ll = strlen(line);
    if (ll && line[ll - 1] == '\r')
      line[--ll] = '\0';
    if (line[0] == ' ' || line[0] == '\t')
      return 400; /* obs-fold (RFC 9112 §5.2): refused */
    char *colon = strchr(line, ':');
    if (!colon || colon == line)
      return 400;
    for (char *p = line; p < colon; p++)
      if (!token_char(*p))
        return 400;
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    size_t vl = strlen(v);
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
      v[--vl] = '\0';
    for (char *p = v; *p; p++)
      if ((unsigned char)*p < 0x20 && *p != '\t')
        return 400;
    if (rq->nh == AL_ARRAY_SIZE(rq->h))
      return 431;
    rq->h[rq->nh].name = line;
    rq->h[rq->nh].value = v;
    rq->nh++;
  }
  return 0;
}

static const char *hget(const struct request *rq, const char *name, int *count)
{
  const char *v = NULL;
  int n = 0;
  for (size_t i = 0; i < rq->nh; i++)
    if (strcasecmp(rq->h[i].name, name) == 0) {
      v = rq->h[i].value;
      n++;
    }
  if (count)
    *count = n;
  return v;
}

/* Headers never forwarded: hop-by-hop (RFC 9110 §7.6.1), framing the relay
 * redoes, and every credential the agent could send. */
static bool dropped_header(const char *name)
{
  static const char *const drop[] = {"host",
                                     "connection",
                                     "keep-alive",
                                     "proxy-connection",
                                     "proxy-authorization",
                                     "proxy-authenticate",
                                     "te",
                                     "trailer",
                                     "upgrade",
                                     "transfer-encoding",
                                     "content-length",
                                     "expect",
                                     "accept-encoding",
                                     "authorization",
                                     "x-api-key",
                                     "api-key",
                                     "cookie",
                                     "cookie2",
                                     "x-goog-api-key",
                                     "anthropic-api-key",
                                     "openai-api-key",
                                     "forwarded",
                                     "x-forwarded-for",
                                     "x-real-ip",
                                     "http2-settings",
                                     "openai-organization",
                                     "openai-project"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(drop); i++)
    if (strcasecmp(name, drop[i]) == 0)
      return true;
  return false;
}

/* Read the body into *out (malloc'd, *len), Content-Length or chunked,
 * at most max bytes. 0 or an HTTP status (-1: connection gone). */
static int read_body(struct call *c, struct request *rq, uint64_t max, char **out, size_t *len)
{
  int ncl = 0;
  const char *cl = hget(rq, "content-length", &ncl);
  const char *te = hget(rq, "transfer-encoding", NULL);
  if (cl && te)
    return 400; /* RFC 9112 §6.1: a request smuggling shape */
  const char *expect = hget(rq, "expect", NULL);
  if (te) {
    if (strcasecmp(te, "chunked") != 0)
      return 501;
  } else if (cl) {
    if (ncl != 1 || !cl[0] || strspn(cl, "0123456789") != strlen(cl) || strlen(cl) > 15)
      return 400;
    if (strtoull(cl, NULL, 10) > max)
      return 413;
  } else if (strcmp(rq->method, "POST") == 0 || strcmp(rq->method, "PUT") == 0) {
    return 411;
  }
  if (expect && strcasecmp(expect, "100-continue") == 0 &&
      send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
    return -1;
  size_t want = cl ? (size_t)strtoull(cl, NULL, 10) : 0;
  size_t cap = te ? 65536 : want + 1;
  char *b = al_xmalloc(cap);
  size_t n = 0;
  if (!te) {
    size_t take = rq->extra_len < want ? rq->extra_len : want;
    memcpy(b, rq->extra, take);
    n = take;
    while (n < want) {
      ssize_t r = recv(c->fd, b + n, want - n, 0);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0) {
        free(b);
        return -1;
      }
      n += (size_t)r;
    }
    *out = b;
    *len = n;
    return 0;
  }
  /* chunked: gather the framed bytes, then decode in place (simple and
   * bounded: framed size is capped at 2 * max + 64 KiB). */
  char *raw = al_xmalloc(65536);
  size_t rawcap = 65536, rawn = 0;
  memcpy(raw, rq->extra, rq->extra_len < rawcap ? rq->extra_len : rawcap);
  rawn = rq->extra_len < rawcap ? rq->extra_len : rawcap;
  free(b);
  for (;;) {
    /* decode what we have */
    size_t i = 0, dn = 0;
    bool done = false, bad = false;
    char *dec = al_xmalloc(rawn + 1);
    while (i < rawn) {
      char *crlf = memmem(raw + i, rawn - i, "\r\n", 2);
      if (!crlf)
        break;
      char *endp;
      unsigned long long sz = strtoull(raw + i, &endp, 16);
      if (endp == raw + i || (*endp != '\r' && *endp != ';')) {
        bad = true;
        break;
      }
      size_t data = (size_t)(crlf - raw) + 2;
      if (sz == 0) {
        if (memmem(raw + data - 2, rawn - data + 2, "\r\n\r\n", 4))
          done = true;
        break;
      }
      if (sz > max || data + sz + 2 > rawn)
        break;
      memcpy(dec + dn, raw + data, sz);
      dn += sz;
      i = data + sz + 2;
    }
    if (bad || dn > max) {
      free(dec);
      free(raw);
      return bad ? 400 : 413;
    }
    if (done) {
      free(raw);
      *out = dec;
      *len = dn;
      return 0;
    }
    free(dec);
    if (rawn > 2 * max + 65536) {
      free(raw);
      return 413;
    }
    if (rawn == rawcap) {
      rawcap *= 2;
      raw = al_xrealloc(raw, rawcap);
    }
    ssize_t r = recv(c->fd, raw + rawn, rawcap - rawn, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      free(raw);
      return -1;
    }
    rawn += (size_t)r;
  }
}

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
    set_timeout(fd, SO_SNDTIMEO, timeout_ms); /* bounds connect(2) too */
    set_timeout(fd, SO_RCVTIMEO, timeout_ms);
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
  if (send_all(fd, req, (size_t)n) < 0)
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
  if (strncmp(resp, "HTTP/1.1 200", 12) != 0 && strncmp(resp, "HTTP/1.0 200", 12) != 0) {
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
    if (dropped_header(name))
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

/* Response head from upstream: status, framing, content type. */
struct response {
  int status;
  bool chunked, has_len, sse;
  uint64_t len;
};

static int parse_response_head(char *head, size_t hl, struct response *rs, char **rebuilt,
                               size_t *rebuilt_len)
{
  memset(rs, 0, sizeof *rs);
  if (hl < 12 || strncmp(head, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)head[9]))
    return -1;
  if (!isdigit((unsigned char)head[10]) || !isdigit((unsigned char)head[11]))
    return -1;
  rs->status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
  if (rs->status < 100 || rs->status > 599)
    return -1;
  char *out = al_xmalloc(hl + 64);
  size_t n = 0;
  char *save = NULL;
  head[hl - 4] = '\0';
  char *line = strtok_r(head, "\n", &save);
  size_t ll = strlen(line);
  if (ll && line[ll - 1] == '\r')
    line[--ll] = '\0';
  n += (size_t)sprintf(out + n, "%s\r\n", line);
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    ll = strlen(line);
    if (ll && line[ll - 1] == '\r')
      line[--ll] = '\0';
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    if (strcasecmp(line, "transfer-encoding") == 0 && strcasestr(v, "chunked"))
      rs->chunked = true;
    if (strcasecmp(line, "content-length") == 0) {
      rs->has_len = true;
      rs->len = strtoull(v, NULL, 10);
    }
    if (strcasecmp(line, "content-type") == 0 && strncasecmp(v, "text/event-stream", 17) == 0)
      rs->sse = true;
    if (strcasecmp(line, "connection") == 0 || strcasecmp(line, "keep-alive") == 0 ||
        strcasecmp(line, "set-cookie") == 0 || strncasecmp(line, "proxy-", 6) == 0)
      continue;
    n += (size_t)sprintf(out + n, "%s: %s\r\n", line, v);
  }
  if (rs->chunked)
    rs->has_len = false;
  n += (size_t)sprintf(out + n, "Connection: close\r\n\r\n");
  *rebuilt = out;
  *rebuilt_len = n;
  return 0;
}

/* Forward one admitted call. Answers the agent itself on failure. */
static void forward(struct call *c, struct request *rq, const char *query, const char *body,
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
    answer(c, st, "refused", true, "airlock relay: %s", why);
    return;
  }
  int fd = open_tunnel(c);
  if (fd < 0) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    answer(c, 502, "upstream_error", false, "airlock relay: upstream %s unreachable: %s",
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
    answer(c, 502, "upstream_error", false, "airlock relay: TLS setup failed");
    goto out;
  }
  if (SSL_connect(ssl) != 1) {
    ssl_reason(c, "TLS handshake", ssl);
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    answer(c, 502, "upstream_error", false, "airlock relay: upstream %s: %s", c->up->upstream, why);
    goto out;
  }
  c->upstream_why = "send";
  int w = ssl_write_all(ssl, head, head_len);
  explicit_bzero(head, head_len);
  if (w < 0 || (body_len && ssl_write_all(ssl, body, body_len) < 0)) {
    answer(c, 502, "upstream_error", false, "airlock relay: sending the request to %s failed",
           c->up->upstream);
    goto out;
  }
  c->bytes_up = body_len;

  /* the response head, within the first-byte timeout */
  set_timeout(fd, SO_RCVTIMEO, cfg->first_byte_timeout_ms);
  c->upstream_why = "response";
  static __thread char buf[HEAD_MAX + IOBUF];
  size_t n = 0;
  char *end = NULL;
  while (!end) {
    if (n >= HEAD_MAX) {
      answer(c, 502, "upstream_error", false, "airlock relay: upstream response head too large");
      goto out;
    }
    int r = SSL_read(ssl, buf + n, (int)(HEAD_MAX - n));
    if (r <= 0) {
      bool timeout = errno == EAGAIN || errno == EWOULDBLOCK;
      ERR_clear_error();
      c->upstream_why = timeout ? "timeout" : "closed";
      answer(c, timeout ? 504 : 502, "upstream_error", false, "airlock relay: %s: %s",
             c->up->upstream,
             timeout ? "no response within the first-byte timeout (relay.timeouts.first_byte)"
                     : "upstream closed the connection before answering");
      goto out;
    }
    if (n == 0)
      c->ttfb_ms = al_now_ms() - c->t0_ms;
    n += (size_t)r;
    end = memmem(buf, n, "\r\n\r\n", 4);
  }
  size_t hl = (size_t)(end - buf) + 4;
  size_t rest = n - hl;
  char *restp = buf + hl;
  struct response rs;
  size_t rhl = 0;
  if (parse_response_head(buf, hl, &rs, &rhead, &rhl) < 0) {
    c->upstream_why = "malformed";
    answer(c, 502, "upstream_error", false, "airlock relay: malformed response head from %s",
           c->up->upstream);
    goto out;
  }
  c->status = rs.status;
  c->decision = "forwarded";
  c->upstream_why = NULL;
  c->stream = rs.sse;
  if (send_all(c->fd, rhead, rhl) < 0) {
    snprintf(c->reason, sizeof c->reason, "agent went away");
    goto out;
  }
  c->bytes_down += rhl;
  al_usage_init(&c->usage, rs.sse, rs.chunked);
  bool no_body = rs.status == 204 || rs.status == 304 || strcmp(rq->method, "HEAD") == 0 ||
                 (rs.has_len && rs.len == 0);
  uint64_t body_seen = 0;
  set_timeout(fd, SO_RCVTIMEO, cfg->idle_timeout_ms);
  while (!no_body) {
    if (rest) {
      size_t take = rest;
      if (rs.has_len && body_seen + take > rs.len)
        take = (size_t)(rs.len - body_seen);
      if (send_all(c->fd, restp, take) < 0) {
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
      set_timeout(fd, SO_RCVTIMEO, deadline - now);
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

/* ---- one connection ---- */

/* The route (and so the upstream) of METHOD path: paths are unique
 * across upstreams (policy.c checks). */
static const al_relay_route *find_route(const al_policy_relay *cfg, const char *method,
                                        const char *path, bool *path_known, size_t *up)
{
  *path_known = false;
  for (size_t u = 0; u < cfg->n_upstreams; u++)
    for (size_t i = 0; i < cfg->upstreams[u].n_routes; i++) {
      const al_relay_route *r = &cfg->upstreams[u].routes[i];
      if (strcmp(r->path, path) == 0) {
        *path_known = true;
        *up = u;
        if (strcmp(r->method, method) == 0)
          return r;
      }
    }
  return NULL;
}

static void handle(struct call *c)
{
  struct relay *rl = c->rl;
  const al_policy_relay *cfg = rl->cfg;
  snprintf(c->method, sizeof c->method, "-");
  snprintf(c->path, sizeof c->path, "-");
  set_timeout(c->fd, SO_RCVTIMEO, HEAD_TIMEOUT_MS);
  set_timeout(c->fd, SO_SNDTIMEO, cfg->idle_timeout_ms);
  char *hbuf = al_xmalloc(HEAD_MAX + 1);
  struct request rq = {0};
  char *body = NULL;
  size_t body_len = 0;
  int st = read_head(c, &rq, hbuf);
  if (st < 0)
    goto out_silent;
  if (rq.method) {
    snprintf(c->method, sizeof c->method, "%.15s", rq.method);
    if (rq.target) {
      size_t pl = strcspn(rq.target, "?");
      snprintf(c->path, sizeof c->path, "%.*s", (int)(pl > 256 ? 256 : pl), rq.target);
      for (char *p = c->path; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e || *p == '"' || *p == '\\')
          *p = '?';
    }
  }
  if (st > 0) {
    answer(c, st, "refused", true, "malformed request head");
    goto out;
  }
  if (!rq.target || rq.target[0] != '/') {
    answer(c, 400, "refused", true, "only origin-form targets (/path) are relayed");
    goto out;
  }
  const char *query = strchr(rq.target, '?');
  if (query)
    for (const char *p = query; *p; p++)
      if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '#') {
        answer(c, 400, "refused", true, "bad query string");
        goto out;
      }
  /* WebSocket (RFC 6455 §4.1) is not relayed: refuse the upgrade at once,
   * with a body, so a client that tries it first (Codex) falls back to
   * HTTP without retrying. */
  const char *upg = hget(&rq, "upgrade", NULL);
  if (upg && strcasestr(upg, "websocket")) {
    answer(c, 426, "refused", true,
           "airlock relay: WebSocket is not relayed; use HTTP (streaming with SSE works)");
    goto out;
  }
  bool known = false;
  size_t up = 0;
  const al_relay_route *route = find_route(cfg, rq.method, c->path, &known, &up);
  if (known) {
    c->up = &cfg->upstreams[up];
    c->up_idx = up;
    c->rs = al_relay_ruleset_for(c->up->vendor, c->path);
  }
  if (!route) {
    if (known)
      answer(c, 405, "refused", true, "method %s not allowed on %s", c->method, c->path);
    else
      answer(c, 403, "refused", true, "route not allowed by the relay policy");
    goto out;
  }
  /* budgets: admit (and count) the call, or refuse it */
  pthread_mutex_lock(&rl->mu);
  bool over_req = cfg->budget_requests && rl->requests >= cfg->budget_requests;
  bool over_tok = cfg->budget_tokens && rl->tokens >= cfg->budget_tokens;
  if (!over_req && !over_tok)
    rl->requests++;
  uint64_t used_req = rl->requests, used_tok = rl->tokens;
  pthread_mutex_unlock(&rl->mu);
  if (over_req || over_tok) {
    answer(c, 429, "budget", true, "airlock relay: %s budget of this run exhausted (%llu used)",
           over_req ? "request" : "token", (unsigned long long)(over_req ? used_req : used_tok));
    goto out;
  }
  st = read_body(c, &rq, cfg->max_request, &body, &body_len);
  if (st < 0)
    goto out_silent;
  if (st > 0) {
    answer(c, st, "refused", true, "%s",
           st == 413 ? "request body larger than relay.max_request"
                     : (st == 411 ? "a body length is required" : "malformed request body"));
    goto out;
  }
  c->bytes_up = body_len;
  al_usage_request_model(body, body_len, c->model, sizeof c->model);
  /* the body: no server-side tool, connector or fetch the policy does not
   * allow (rules.h) */
  st = al_relay_check_body(c->rs, (const char *const *)c->up->allow, body, body_len, c->reason,
                           sizeof c->reason, c->feature, sizeof c->feature);
  if (st) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    answer(c, st, "refused", true, "airlock relay: %s", why);
    goto out;
  }
  forward(c, &rq, query, body, body_len);
  pthread_mutex_lock(&rl->mu);
  rl->tokens += c->usage.tokens_in + c->usage.tokens_out;
  pthread_mutex_unlock(&rl->mu);
out:
  log_call(c);
out_silent:
  al_usage_free(&c->usage);
  free(body);
  free(hbuf);
}

static void *conn_thread(void *arg)
{
  struct call *c = arg;
  handle(c);
  shutdown(c->fd, SHUT_WR);
  close(c->fd);
  struct relay *rl = c->rl;
  pthread_mutex_lock(&rl->mu);
  rl->active--;
  pthread_mutex_unlock(&rl->mu);
  free(c);
  return NULL;
}

static void free_ssl(struct relay *rl)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(rl->ssl); i++)
    if (rl->ssl[i])
      SSL_CTX_free(rl->ssl[i]);
}

int al_relay_serve(const al_relay_serve_opts *o, al_error *err)
{
  if (o->cfg->n_upstreams == 0 || o->cfg->n_upstreams > AL_ARRAY_SIZE(((struct relay *)0)->ssl))
    return al_error_set(err, EINVAL, "relay: 1 to 16 upstreams");
  struct relay rl = {.o = o, .cfg = o->cfg};
  pthread_mutex_init(&rl.mu, NULL);
  signal(SIGPIPE, SIG_IGN);
  for (size_t i = 0; i < o->cfg->n_upstreams && i < AL_ARRAY_SIZE(rl.ssl); i++) {
    const al_relay_upstream *u = &o->cfg->upstreams[i];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
      free_ssl(&rl);
      return al_make_error(err, ENOMEM, "TLS context");
    }
    rl.ssl[i] = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_default_verify_paths(ctx);
    if (u->ca_file && SSL_CTX_load_verify_locations(ctx, u->ca_file, NULL) != 1) {
      free_ssl(&rl);
      ERR_clear_error();
      return al_error_set(err, EINVAL, "relay ca_file `%s`: cannot load", u->ca_file);
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    free_ssl(&rl);
    return al_make_error(err, errno, "signalfd");
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (;;) {
    struct pollfd p[2] = {{.fd = o->listen_fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents)
      break;
    if (!(p[0].revents & POLLIN))
      continue;
    int fd = accept4(o->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct call *c = al_xcalloc(1, sizeof *c);
    c->rl = &rl;
    c->fd = fd;
    c->t0_ms = al_now_ms();
    pthread_mutex_lock(&rl.mu);
    bool full = rl.active >= o->cfg->max_conns;
    if (!full)
      rl.active++;
    c->id = ++rl.seq;
    pthread_mutex_unlock(&rl.mu);
    if (full) {
      set_timeout(fd, SO_SNDTIMEO, 1000);
      snprintf(c->method, sizeof c->method, "-");
      snprintf(c->path, sizeof c->path, "-");
      answer(c, 503, "refused", false, "too many concurrent calls (relay.max_connections)");
      log_call(c);
      close(fd);
      free(c);
      continue;
    }
    pthread_t th;
    if (pthread_create(&th, &attr, conn_thread, c) != 0) {
      close(fd);
      free(c);
      pthread_mutex_lock(&rl.mu);
      rl.active--;
      pthread_mutex_unlock(&rl.mu);
    }
  }
  pthread_attr_destroy(&attr);
  close(sfd);
  free_ssl(&rl);
  return 0;
}
