/* Strict HTTP/1.1 request-head parser (RFC 9112). See http.h. */
#include "net/http.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* tchar (RFC 9110 §5.6.2) */
static bool is_tchar(unsigned char c)
{
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
    return true;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool ieq(const char *a, size_t alen, const char *lb)
{
  size_t blen = strlen(lb);
  if (alen != blen)
    return false;
  for (size_t i = 0; i < alen; i++) {
    unsigned char c = (unsigned char)a[i];
    if (c >= 'A' && c <= 'Z')
      c = (unsigned char)(c + ('a' - 'A'));
    if (c != (unsigned char)lb[i])
      return false;
  }
  return true;
}

bool al_http_header_is(const al_http_header *h, const char *lname)
{
  return ieq(h->name, h->name_len, lname);
}

/* Call fn on every comma-separated element of a list value (RFC 9110 §5.6.1),
 * OWS trimmed, empty elements skipped. Stops at the first fn returning false. */
static bool for_each_element(const char *v, size_t len, bool (*fn)(const char *, size_t, void *),
                             void *arg)
{
  size_t i = 0;
  while (i < len) {
    size_t s = i;
    while (i < len && v[i] != ',')
      i++;
    size_t e = i;
    while (s < e && (v[s] == ' ' || v[s] == '\t'))
      s++;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
      e--;
    if (e > s && !fn(v + s, e - s, arg))
      return false;
    i++;
  }
  return true;
}

static bool connection_option_ok(const char *t, size_t len, void *arg)
{
  (void)arg;
  for (size_t i = 0; i < len; i++)
    if (!is_tchar((unsigned char)t[i]))
      return false;
  /* An option naming a framing or routing field would make a hop strip it. */
  static const char *const banned[] = {"connection",     "proxy-connection",  "host",
                                       "content-length", "transfer-encoding", "te"};
  for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
    if (ieq(t, len, banned[i]))
      return false;
  return true;
}

static bool proxy_connection_ok(const char *t, size_t len, void *arg)
{
  (void)arg;
  return ieq(t, len, "keep-alive") || ieq(t, len, "close");
}

struct named {
  const al_http_header *h;
  bool found;
};

static bool option_names(const char *t, size_t len, void *arg)
{
  struct named *n = arg;
  if (len != n->h->name_len)
    return true;
  for (size_t i = 0; i < len; i++) {
    unsigned char a = (unsigned char)t[i], b = (unsigned char)n->h->name[i];
    if ((a | 0x20) != (b | 0x20) || ((a | 0x20) < 'a' && a != b) || ((a | 0x20) > 'z' && a != b))
      return true;
  }
  n->found = true;
  return false;
}

bool al_http_header_is_hop(const al_http_request *req, const al_http_header *h)
{
  static const char *const hop[] = {"connection", "keep-alive",        "te",   "trailer",
                                    "upgrade",    "transfer-encoding", "host", NULL};
  for (size_t i = 0; hop[i]; i++)
    if (al_http_header_is(h, hop[i]))
      return true;
  if (h->name_len >= 6 && ieq(h->name, 6, "proxy-"))
    return true;
  for (size_t i = 0; i < req->n_headers; i++) {
    if (!al_http_header_is(&req->headers[i], "connection"))
      continue;
    struct named n = {h, false};
    for_each_element(req->headers[i].value, req->headers[i].value_len, option_names, &n);
    if (n.found)
      return true;
  }
  return false;
}

/* Find the end of the head (CRLFCRLF), checking line ends and bytes on the
 * way so a bad head fails before it is complete. */
static int find_head_end(const char *buf, size_t len, size_t max, size_t *end, const char **why)
{
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == '\n') {
      if (i == 0 || buf[i - 1] != '\r') {
        *why = "bare-lf";
        return -1;
      }
      if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
        *end = i + 1;
        return *end > max ? (*why = "head-too-large", -1) : 1;
      }
    } else if (c == '\r') {
      if (i + 1 < len && buf[i + 1] != '\n') {
        *why = "bare-cr";
        return -1;
      }
    } else if (c == 0) {
      *why = "nul-in-head";
      return -1;
    } else if (c >= 0x80) {
      *why = "non-ascii-in-head";
      return -1;
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      *why = "ctl-in-head";
      return -1;
    }
  }
  if (len >= max) {
    *why = "head-too-large";
    return -1;
  }
  return 0;
}

static int parse_request_line(const char *p, size_t len, al_http_request *req, const char **why)
{
  size_t i = 0;

  while (i < len && is_tchar((unsigned char)p[i]))
    i++;
  if (i == 0) {
    *why = "bad-method";
    return -1;
  }
  if (i >= len || p[i] != ' ') {
    *why = "bad-request-line";
    return -1;
  }
  req->method = p;
  req->method_len = i;
  size_t t = ++i;
  while (i < len && (unsigned char)p[i] > 0x20 && (unsigned char)p[i] < 0x7f)
    i++;
  if (i == t || i >= len || p[i] != ' ') {
    *why = "bad-request-line";
    return -1;
  }
  req->target = p + t;
  req->target_len = i - t;
  i++;
  if (len - i == 8 && memcmp(p + i, "HTTP/1.1", 8) == 0)
    req->version_minor = 1;
  else if (len - i == 8 && memcmp(p + i, "HTTP/1.0", 8) == 0)
    req->version_minor = 0;
  else {
    *why = "bad-version";
    return -1;
  }
  return 0;
}

/* One field line (RFC 9112 §5.1, RFC 9110 §5.5) into hs[*n]: a token name,
 * no whitespace before the colon, no obs-fold, OWS trimmed from the value;
 * at most max fields. */
static int parse_field(const char *p, size_t len, al_http_header *hs, size_t *n, size_t max,
                       const char **why)
{
  size_t i = 0;

  if (p[0] == ' ' || p[0] == '\t') {
    *why = "obs-fold";
    return -1;
  }
  while (i < len && is_tchar((unsigned char)p[i]))
    i++;
  if (i < len && (p[i] == ' ' || p[i] == '\t')) {
    *why = "space-before-colon";
    return -1;
  }
  if (i == 0 || i >= len || p[i] != ':') {
    *why = "bad-header-name";
    return -1;
  }
  if (*n == max) {
    *why = "too-many-headers";
    return -1;
  }
  al_http_header *h = &hs[(*n)++];
  h->name = p;
  h->name_len = i;
  size_t s = i + 1, e = len;
  while (s < e && (p[s] == ' ' || p[s] == '\t'))
    s++;
  while (e > s && (p[e - 1] == ' ' || p[e - 1] == '\t'))
    e--;
  h->value = p + s;
  h->value_len = e - s;
  return 0;
}

/* Content-Length (RFC 9110 §8.6): 1 to 15 digits, nothing else (no sign,
 * no list, no whitespace inside). -1 when bad. */
static int64_t content_length_value(const al_http_header *h)
{
  if (h->value_len == 0 || h->value_len > 15)
    return -1;
  int64_t v = 0;
  for (size_t k = 0; k < h->value_len; k++) {
    if (h->value[k] < '0' || h->value[k] > '9')
      return -1;
    v = v * 10 + (h->value[k] - '0');
  }
  return v;
}

/* Framing and routing rules over the parsed fields (RFC 9112 §6.3). */
static int check_fields(al_http_request *req, const char **why)
{
  bool have_te = false;

  for (size_t i = 0; i < req->n_headers; i++) {
    const al_http_header *h = &req->headers[i];
    if (al_http_header_is(h, "host")) {
      if (req->host) {
        *why = "duplicate-host";
        return -1;
      }
      req->host = h;
    } else if (al_http_header_is(h, "content-length")) {
      if (req->content_length >= 0) {
        *why = "duplicate-content-length";
        return -1;
      }
      req->content_length = content_length_value(h);
      if (req->content_length < 0) {
        *why = "bad-content-length";
        return -1;
      }
    } else if (al_http_header_is(h, "transfer-encoding")) {
      if (have_te || !ieq(h->value, h->value_len, "chunked")) {
        *why = "bad-transfer-encoding";
        return -1;
      }
      have_te = true;
    } else if (al_http_header_is(h, "connection")) {
      if (!for_each_element(h->value, h->value_len, connection_option_ok, NULL)) {
        *why = "bad-connection-header";
        return -1;
      }
    } else if (al_http_header_is(h, "proxy-connection")) {
      if (!for_each_element(h->value, h->value_len, proxy_connection_ok, NULL)) {
        *why = "bad-connection-header";
        return -1;
      }
    }
  }
  if (have_te && req->content_length >= 0) {
    *why = "cl-and-te";
    return -1;
  }
  req->chunked = have_te;
  return 0;
}

int al_http_parse_head(const char *buf, size_t len, al_http_request *req, const char **why)
{
  return al_http_parse_head_max(buf, len, AL_HTTP_HEAD_MAX, req, why);
}

int al_http_parse_head_max(const char *buf, size_t len, size_t max, al_http_request *req,
                           const char **why)
{
  const char *dummy;
  size_t end = 0;
  int r;

  if (!why)
    why = &dummy;
  memset(req, 0, sizeof *req);
  req->content_length = -1;
  r = find_head_end(buf, len, max, &end, why);
  if (r <= 0)
    return r;

  /* Lines are CRLF-terminated; the last one (before end) is empty. */
  size_t pos = 0;
  bool first = true;
  while (pos < end) {
    const char *nl = memchr(buf + pos, '\n', end - pos);
    size_t line_len = (size_t)(nl - (buf + pos)) - 1; /* without CR */
    if (line_len == 0) {
      if (first) {
        *why = "bad-request-line";
        return -1;
      }
      break;
    }
    if (first) {
      if (parse_request_line(buf + pos, line_len, req, why) < 0)
        return -1;
      first = false;
    } else if (parse_field(buf + pos, line_len, req->headers, &req->n_headers, AL_HTTP_MAX_HEADERS,
                           why) < 0) {
      return -1;
    }
    pos += line_len + 2;
  }
  if (check_fields(req, why) < 0)
    return -1;
  req->head_len = end;
  return (int)end;
}

/* ---- response heads ---- */

/* status-line = HTTP-version SP 3DIGIT SP [reason-phrase] (RFC 9112 §4);
 * the status 100..599 (RFC 9110 §15). A status line that ends right after
 * the code is accepted (§4: a client SHOULD accept it). */
static int parse_status_line(const char *p, size_t len, al_http_response *rsp, const char **why)
{
  if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
      p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
      (len > 12 && p[12] != ' ')) {
    *why = "bad-status-line";
    return -1;
  }
  rsp->version_minor = p[7] - '0';
  rsp->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  rsp->reason = len > 13 ? p + 13 : p + len;
  rsp->reason_len = len > 13 ? len - 13 : 0;
  return 0;
}

struct codings {
  size_t n;
  bool bad, chunked_last;
};

/* One element of Transfer-Encoding (RFC 9112 §6.1): a bare token; chunked
 * only as the last one and only once. */
static bool coding_ok(const char *t, size_t len, void *arg)
{
  struct codings *c = arg;
  for (size_t i = 0; i < len; i++)
    if (!is_tchar((unsigned char)t[i])) {
      c->bad = true;
      return false;
    }
  if (c->chunked_last) { /* something after chunked, or chunked twice */
    c->bad = true;
    return false;
  }
  c->chunked_last = ieq(t, len, "chunked");
  c->n++;
  return true;
}

static int check_response_fields(al_http_response *rsp, const char **why)
{
  bool have_te = false;

  for (size_t i = 0; i < rsp->n_headers; i++) {
    const al_http_header *h = &rsp->headers[i];
    if (al_http_header_is(h, "content-length")) {
      if (rsp->content_length >= 0) {
        *why = "duplicate-content-length";
        return -1;
      }
      rsp->content_length = content_length_value(h);
      if (rsp->content_length < 0) {
        *why = "bad-content-length";
        return -1;
      }
    } else if (al_http_header_is(h, "transfer-encoding")) {
      struct codings c = {0};
      if (have_te || !for_each_element(h->value, h->value_len, coding_ok, &c) || c.bad ||
          !c.chunked_last) {
        *why = "bad-transfer-encoding";
        return -1;
      }
      have_te = true;
      rsp->transfer_codings = c.n;
    }
  }
  if (have_te && rsp->content_length >= 0) {
    *why = "cl-and-te";
    return -1;
  }
  rsp->chunked = have_te;
  return 0;
}

int al_http_parse_response_head(const char *buf, size_t len, al_http_response *rsp,
                                const char **why)
{
  const char *dummy;
  size_t end = 0;

  if (!why)
    why = &dummy;
  memset(rsp, 0, sizeof *rsp);
  rsp->content_length = -1;
  int r = find_head_end(buf, len, AL_HTTP_RESP_HEAD_MAX, &end, why);
  if (r <= 0)
    return r;
  size_t pos = 0;
  bool first = true;
  while (pos < end) {
    const char *nl = memchr(buf + pos, '\n', end - pos);
    size_t line_len = (size_t)(nl - (buf + pos)) - 1; /* without CR */
    if (line_len == 0) {
      if (first) {
        *why = "bad-status-line";
        return -1;
      }
      break;
    }
    if (first) {
      if (parse_status_line(buf + pos, line_len, rsp, why) < 0)
        return -1;
      first = false;
    } else if (parse_field(buf + pos, line_len, rsp->headers, &rsp->n_headers,
                           AL_HTTP_RESP_MAX_HEADERS, why) < 0) {
      return -1;
    }
    pos += line_len + 2;
  }
  if (check_response_fields(rsp, why) < 0)
    return -1;
  rsp->head_len = end;
  return (int)end;
}

/* Split host[:port] (IPv6 in brackets) and canonicalize. */
static int host_port(const char *a, size_t len, bool need_port, uint16_t default_port,
                     al_host *host, uint16_t *port, const char **why)
{
  const char *colon = NULL;

  if (len > 0 && a[0] == '[') {
    const char *rb = memchr(a, ']', len);
    if (rb && rb + 1 < a + len)
      colon = rb + 1;
    else if (rb && rb + 1 == a + len) {
      if (need_port) {
        *why = "missing port";
        return -1;
      }
      *port = default_port;
      if (rb - a < 2 || al_host_canonicalize(a + 1, (size_t)(rb - a) - 1, host, why) < 0)
        return -1;
      if (!host->is_ip || host->family != AF_INET6) {
        *why = "bad ipv6 literal";
        return -1;
      }
      return 0;
    }
  } else {
    colon = memchr(a, ':', len);
  }
  if (colon)
    return al_authority_parse(a, len, host, port, why);
  if (need_port) {
    *why = "missing port";
    return -1;
  }
  *port = default_port;
  return al_host_canonicalize(a, len, host, why);
}

int al_http_absolute_target(const char *t, size_t len, al_host *host, uint16_t *port,
                            const char **path, size_t *path_len, const char **why)
{
  const char *dummy;

  if (!why)
    why = &dummy;
  if (len < 7 || !ieq(t, 7, "http://")) {
    *why = "bad-scheme";
    return -1;
  }
  if (memchr(t, '#', len)) {
    *why = "fragment in target";
    return -1;
  }
  const char *a = t + 7, *e = t + len;
  const char *p = a;
  while (p < e && *p != '/' && *p != '?')
    p++;
  if (p == a) {
    *why = "empty authority";
    return -1;
  }
  if (memchr(a, '@', (size_t)(p - a))) {
    *why = "userinfo in authority";
    return -1;
  }
  if (host_port(a, (size_t)(p - a), false, 80, host, port, why) < 0)
    return -1;
  if (p == e) {
    *path = "/";
    *path_len = 1;
  } else if (*p == '?') {
    /* "http://h?q" has an empty path: origin-form needs "/?q"; refuse rather
     * than invent bytes. */
    *why = "empty path with query";
    return -1;
  } else {
    *path = p;
    *path_len = (size_t)(e - p);
  }
  return 0;
}

int al_http_host_value(const char *value, size_t len, uint16_t default_port, al_host *host,
                       uint16_t *port, const char **why)
{
  const char *dummy;

  if (!why)
    why = &dummy;
  if (len == 0) {
    *why = "empty host";
    return -1;
  }
  return host_port(value, len, false, default_port, host, port, why);
}

const char *al_http_reason(int status)
{
  static const struct {
    int status;
    const char *phrase;
  } reasons[] = {
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {408, "Request Timeout"},
      {411, "Length Required"},
      {413, "Content Too Large"},
      {415, "Unsupported Media Type"},
      {417, "Expectation Failed"},
      {431, "Request Header Fields Too Large"},
      {502, "Bad Gateway"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
  };
  for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
    if (reasons[i].status == status)
      return reasons[i].phrase;
  return "Error";
}

/* ---- a response head, for the plain-HTTP path ---- */

static bool is_airlock_field(const char *n, size_t nl)
{
  static const char pfx[] = "x-airlock";
  if (nl < sizeof pfx - 1)
    return false;
  for (size_t i = 0; i < sizeof pfx - 1; i++) {
    char c = n[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c + 32);
    if (c != pfx[i])
      return false;
  }
  return nl == sizeof pfx - 1 || n[sizeof pfx - 1] == '-';
}

int al_http_response_strip(const char *buf, size_t len, char *out, size_t *out_len, int *status,
                           const char **why)
{
  al_http_response *rsp = malloc(sizeof *rsp);
  if (!rsp) {
    *why = "out-of-memory";
    return -1;
  }
  int h = al_http_parse_response_head(buf, len, rsp, why);
  if (h <= 0) {
    free(rsp);
    return h;
  }
  const char *crlf = memchr(buf, '\r', (size_t)h); /* the status line's end: checked CRLF */
  size_t o = (size_t)(crlf - buf) + 2;
  memcpy(out, buf, o);
  for (size_t i = 0; i < rsp->n_headers; i++) {
    const al_http_header *f = &rsp->headers[i];
    if (is_airlock_field(f->name, f->name_len))
      continue;
    memcpy(out + o, f->name, f->name_len);
    o += f->name_len;
    out[o++] = ':';
    out[o++] = ' ';
    memcpy(out + o, f->value, f->value_len);
    o += f->value_len;
    out[o++] = '\r';
    out[o++] = '\n';
  }
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result): wire bytes, not a C string
  memcpy(out + o, "\r\n", 2);
  *out_len = o + 2;
  *status = rsp->status;
  free(rsp);
  return h;
}
