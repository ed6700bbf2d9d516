/* The model relay's two HTTP heads (see relay_int.h): the agent's request
 * head and the upstream's response head, both parsed by the one strict
 * parser (net/http.h), and the response head rebuilt for the agent. Pure
 * functions over buffers, no I/O (fuzzed: tests/fuzz/fuzz_relay_head.c). */
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "net/http.h"
#include "relay/relay_int.h"

static const char *const resp_dropped[] = {"connection", "keep-alive", "set-cookie", NULL};

int rl_parse_request_head(char *buf, size_t len, struct request *rq, const char **why)
{
  al_http_request hr;
  int r = al_http_parse_head_max(buf, len, HEAD_MAX, &hr, why);
  if (r <= 0)
    return r;
  if (hr.n_headers > AL_ARRAY_SIZE(rq->h)) {
    *why = "too-many-headers";
    return -1;
  }
  /* NUL-terminate every piece in place: each one ends at a byte of the
   * head's syntax (SP, ':', OWS or CR) that nothing else points at. */
  rq->head = buf;
  rq->head_len = (size_t)r;
  rq->extra = buf + r;
  rq->extra_len = len - (size_t)r;
  rq->method = buf + (hr.method - buf);
  rq->method[hr.method_len] = '\0';
  rq->target = buf + (hr.target - buf);
  rq->target[hr.target_len] = '\0';
  rq->nh = 0;
  for (size_t i = 0; i < hr.n_headers; i++) {
    const al_http_header *h = &hr.headers[i];
    char *name = buf + (h->name - buf), *value = buf + (h->value - buf);
    name[h->name_len] = '\0';
    value[h->value_len] = '\0';
    rq->h[rq->nh].name = name;
    rq->h[rq->nh].value = value;
    rq->nh++;
  }
  return r;
}

static bool resp_header_dropped(const al_http_header *h)
{
  for (size_t i = 0; resp_dropped[i]; i++)
    if (al_http_header_is(h, resp_dropped[i]))
      return true;
  return h->name_len >= 6 && strncasecmp(h->name, "proxy-", 6) == 0;
}

int rl_parse_response_head(const char *buf, size_t len, struct response *rs, char **rebuilt,
                           size_t *rebuilt_len, const char **why)
{
  static const char tail[] = "Connection: close\r\n\r\n";
  al_http_response hr;

  memset(rs, 0, sizeof *rs);
  *rebuilt = NULL;
  *rebuilt_len = 0;
  int r = al_http_parse_response_head(buf, len, &hr, why);
  if (r <= 0)
    return r;
  rs->status = hr.status;
  if (hr.status == 101) {
    *why = "101 Switching Protocols, but the relay asked for no upgrade";
    return -1;
  }
  if (hr.status < 200)
    return r; /* interim (RFC 9110 §15.2): the caller skips it */
  if (hr.transfer_codings > 1) {
    *why = "transfer coding other than chunked, but the relay sent no TE (RFC 9110 §10.1.4)";
    return -1;
  }
  rs->chunked = hr.chunked;
  rs->has_len = hr.content_length >= 0;
  rs->len = rs->has_len ? (uint64_t)hr.content_length : 0;
  /* the status line as sent, then the fields kept, each "name: value" */
  const char *eol = memchr(buf, '\n', (size_t)r);
  size_t first = (size_t)(eol - buf) + 1;
  size_t cap = first + sizeof tail;
  for (size_t i = 0; i < hr.n_headers; i++)
    if (!resp_header_dropped(&hr.headers[i]))
      cap += hr.headers[i].name_len + hr.headers[i].value_len + 4;
  char *out = al_xmalloc(cap);
  size_t n = first;
  memcpy(out, buf, first);
  for (size_t i = 0; i < hr.n_headers; i++) {
    const al_http_header *h = &hr.headers[i];
    if (al_http_header_is(h, "content-type") && h->value_len >= 17 &&
        strncasecmp(h->value, "text/event-stream", 17) == 0)
      rs->sse = true;
    if (resp_header_dropped(h))
      continue;
    memcpy(out + n, h->name, h->name_len);
    n += h->name_len;
    out[n++] = ':';
    out[n++] = ' ';
    memcpy(out + n, h->value, h->value_len);
    n += h->value_len;
    out[n++] = '\r';
    out[n++] = '\n';
  }
  memcpy(out + n, tail, sizeof tail - 1);
  n += sizeof tail - 1;
  *rebuilt = out;
  *rebuilt_len = n;
  return r;
}
