/* The model relay, the agent's request (see relay.c): the head with a
 * strict parser and a deadline, the headers it keeps or drops, and the
 * body, length-delimited or chunked, within the route's cap. */
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
#include "net/chunked.h"
#include "relay/relay_int.h"
#include "relay/rules.h"
#include "relay/usage.h"
/* ---- the agent's request ---- */

/* Read and parse the request head (RFC 9112 §2-§5) with the strict parser
 * (relay_head.c). 0, or an HTTP status with rq->why (-1: gone or timed
 * out, nothing to answer). Only a read that ends a line, or holds a bare
 * LF, is parsed again: linear in the head's size. */
int rl_read_head(struct call *c, struct request *rq, char *buf)
{
  size_t len = 0;
  for (;;) {
    if (len == HEAD_MAX) {
      rq->why = "head-too-large";
      return 431;
    }
    ssize_t r = recv(c->fd, buf + len, HEAD_MAX - len, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    size_t from = len > 3 ? len - 3 : 0;
    len += (size_t)r;
    buf[len] = '\0';
    if (!memchr(buf + from, '\n', len - from))
      continue;
    const char *why = NULL;
    int h = rl_parse_request_head(buf, len, rq, &why);
    if (h > 0)
      return 0;
    if (h < 0) {
      rq->why = why;
      return strcmp(why, "head-too-large") == 0 || strcmp(why, "too-many-headers") == 0 ? 431 : 400;
    }
  }
}

const char *rl_hget(const struct request *rq, const char *name, int *count)
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
bool rl_dropped_header(const char *name)
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

/* A chunked body (RFC 9112 §7.1) through airlock's one decoder
 * (net/chunked.h), decoded as it arrives: at most max data bytes (413),
 * at most 2 * max + 64 KiB framed bytes (413: extensions and tiny chunks
 * cannot make the relay read forever), a framing error or a trailer 400. */
static int read_chunked(struct call *c, const struct request *rq, uint64_t max, char **out,
                        size_t *len)
{
  al_chunked ch;
  char rbuf[16384];
  const char *in = rq->extra;
  size_t in_n = rq->extra_len, cap = 65536, n = 0;
  uint64_t framed = 0;
  char *b = al_xmalloc(cap);

  al_chunked_init(&ch);
  for (;;) {
    while (in_n > 0) {
      size_t used = in_n, got = 0;
      const char *why = NULL;
      if (cap - n < used) { /* the decoder writes at most what it reads */
        cap = n + used > 2 * cap ? n + used : 2 * cap;
        b = al_xrealloc(b, cap);
      }
      int d = al_chunked_decode(&ch, in, &used, b + n, &got, &why);
      if (d < 0) {
        free(b);
        return 400;
      }
      n += got;
      framed += used;
      in += used;
      in_n -= used;
      if (n > max) {
        free(b);
        return 413;
      }
      if (d == 1) {
        *out = b;
        *len = n;
        return 0;
      }
    }
    if (framed > 2 * max + 65536) {
      free(b);
      return 413;
    }
    ssize_t r = recv(c->fd, rbuf, sizeof rbuf, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      free(b);
      return -1;
    }
    in = rbuf;
    in_n = (size_t)r;
  }
}

/* Read the body into *out (malloc'd, *len), Content-Length or chunked,
 * at most max bytes. 0 or an HTTP status (-1: connection gone). */
int rl_read_body(struct call *c, struct request *rq, uint64_t max, char **out, size_t *len)
{
  int ncl = 0;
  const char *cl = rl_hget(rq, "content-length", &ncl);
  const char *te = rl_hget(rq, "transfer-encoding", NULL);
  if (cl && te)
    return 400; /* RFC 9112 §6.1: a request smuggling shape */
  const char *expect = rl_hget(rq, "expect", NULL);
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
      rl_send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
    return -1;
  if (te)
    return read_chunked(c, rq, max, out, len);
  size_t want = cl ? (size_t)strtoull(cl, NULL, 10) : 0;
  char *b = al_xmalloc(want + 1);
  size_t n = rq->extra_len < want ? rq->extra_len : want;
  memcpy(b, rq->extra, n);
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
