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
#include "relay/relay_int.h"
#include "relay/rules.h"
#include "relay/usage.h"
/* ---- the agent's request ---- */

static bool token_char(char ch)
{
  return isalnum((unsigned char)ch) || strchr("!#$%&'*+-.^_`|~", ch);
}

/* Read and parse the request head (RFC 9112 §2-§5). 0, or an HTTP status. */
int rl_read_head(struct call *c, struct request *rq, char *buf)
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
