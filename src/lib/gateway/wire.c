/* The forge gateway's parsers of untrusted bytes. See wire.h. */
#include "gateway/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int al_gw_hexval(unsigned char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static bool ieq_n(const char *a, size_t alen, const char *lb)
{
  size_t n = strlen(lb);
  if (alen != n)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)a[i];
    if (c >= 'A' && c <= 'Z')
      c = (unsigned char)(c + 32);
    if (c != (unsigned char)lb[i])
      return false;
  }
  return true;
}

/* ---- request target ---- */

int al_gw_target_parse(const char *t, size_t len, char path[AL_GW_PATH_MAX], const char **query,
                       size_t *query_len, const char **why)
{
  size_t plen = 0;

  *query = NULL;
  *query_len = 0;
  path[0] = '\0';
  if (len == 0 || t[0] != '/') {
    *why = "target-not-origin-form";
    return -1;
  }
  while (plen < len && t[plen] != '?')
    plen++;
  if (plen >= AL_GW_PATH_MAX) {
    *why = "target-too-long";
    return -1;
  }
  for (size_t i = 0; i < len; i++)
    if (t[i] == '#') {
      *why = "target-not-origin-form";
      return -1;
    }
  /* segment by segment: seg starts after each '/' */
  size_t seg = 1;
  for (size_t i = 1; i <= plen; i++) {
    if (i < plen && t[i] != '/') {
      unsigned char c = (unsigned char)t[i];
      if (c == '\\') {
        *why = "path-backslash";
        return -1;
      }
      if (c == '%') {
        int hi = i + 2 < plen ? al_gw_hexval((unsigned char)t[i + 1]) : -1;
        int lo = i + 2 < plen ? al_gw_hexval((unsigned char)t[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
          *why = "path-bad-escape";
          return -1;
        }
        int v = hi * 16 + lo;
        if (v == '/' || v == '.' || v == '\\') {
          *why = "path-encoded-separator";
          return -1;
        }
        if (v < 0x20 || v > 0x7e) {
          *why = "path-bad-escape";
          return -1;
        }
      }
      continue;
    }
    /* t[seg..i) is one segment */
    size_t sl = i - seg;
    if (sl == 0 && plen != 1) { /* "/" alone is the one empty segment allowed */
      *why = "path-empty-segment";
      return -1;
    }
    if ((sl == 1 && t[seg] == '.') || (sl == 2 && t[seg] == '.' && t[seg + 1] == '.')) {
      *why = "path-dot-segment";
      return -1;
    }
    seg = i + 1;
  }
  memcpy(path, t, plen);
  path[plen] = '\0';
  if (plen < len) {
    *query = t + plen + 1;
    *query_len = len - plen - 1;
    for (size_t i = 0; i + 2 < *query_len; i++)
      if ((*query)[i] == '%' && (*query)[i + 1] == '0' && (*query)[i + 2] == '0') {
        *why = "query-nul";
        return -1;
      }
  }
  return 0;
}

void al_gw_query_redact(const char *q, size_t len, char *out, size_t out_cap)
{
  size_t o = 0, i = 0;

  if (out_cap == 0)
    return;
  out[0] = '\0';
  while (i < len) {
    size_t s = i;
    while (i < len && q[i] != '&')
      i++;
    size_t e = i, eq = s;
    while (eq < e && q[eq] != '=')
      eq++;
    bool service = eq - s == 7 && memcmp(q + s, "service", 7) == 0;
    size_t keep = service ? e - s : eq - s;
    if (keep > 64)
      keep = 64;
    if (o + keep + 4 >= out_cap)
      break;
    if (o > 0)
      out[o++] = '&';
    memcpy(out + o, q + s, keep);
    o += keep;
    if (!service && eq < e) {
      out[o++] = '=';
      out[o++] = '*';
    }
    i++;
  }
  out[o] = '\0';
}

int al_gw_query_param(const char *q, size_t len, const char *name, const char **val,
                      size_t *val_len)
{
  size_t nl = strlen(name), i = 0;
  int n = 0;

  while (q && i < len) {
    size_t s = i;
    while (i < len && q[i] != '&')
      i++;
    if (i - s >= nl && memcmp(q + s, name, nl) == 0 && (i - s == nl || q[s + nl] == '=')) {
      if (n++ == 0) {
        *val = i - s == nl ? q + i : q + s + nl + 1;
        *val_len = i - s == nl ? 0 : i - s - nl - 1;
      }
    }
    i++;
  }
  return n;
}

/* ---- pkt-line ---- */

int al_pkt_next(const char *buf, size_t len, bool v2, al_pkt *p, const char **why)
{
  if (len < 4)
    return 0;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = al_gw_hexval((unsigned char)buf[i]);
    if (h < 0) {
      *why = "pkt-len-bad";
      return -1;
    }
    v = (v << 4) | (unsigned)h;
  }
  p->data = NULL;
  p->len = 0;
  if (v == 0) {
    p->kind = AL_PKT_FLUSH;
    return 4;
  }
  if (v < 4) {
    if (v2 && v == 1) {
      p->kind = AL_PKT_DELIM;
      return 4;
    }
    if (v2 && v == 2) {
      p->kind = AL_PKT_END;
      return 4;
    }
    *why = "pkt-len-reserved";
    return -1;
  }
  if (v > AL_PKT_MAX) {
    *why = "pkt-too-long";
    return -1;
  }
  if (len < v)
    return 0;
  p->kind = AL_PKT_DATA;
  p->data = buf + 4;
  p->len = v - 4;
  return (int)v;
}

/* ---- receive-pack ---- */

bool al_refname_ok(const char *ref, size_t len)
{
  if (len < 6 || len >= 256 || memcmp(ref, "refs/", 5) != 0)
    return false;
  if (ref[len - 1] == '/' || ref[len - 1] == '.')
    return false;
  size_t comp = 0; /* start of the current component */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)ref[i];
    if (c < 0x20 || c == 0x7f || c >= 0x80 || strchr(" ~^:?*[\\", c))
      return false;
    if (c == '.' && i + 1 < len && ref[i + 1] == '.')
      return false;
    if (c == '@' && i + 1 < len && ref[i + 1] == '{')
      return false;
    if (c == '/' || i + 1 == len) {
      size_t end = c == '/' ? i : i + 1;
      if (end == comp || ref[comp] == '.')
        return false;
      if (end - comp >= 5 && memcmp(ref + end - 5, ".lock", 5) == 0)
        return false;
      comp = i + 1;
    }
  }
  return true;
}

static bool oid_ok(const char *s, size_t len)
{
  if (len != 40 && len != 64)
    return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* "old SP new SP ref" in d[0..n) */
static int parse_command(const char *d, size_t n, al_rp_cmd *c, const char **why)
{
  const char *sp1 = memchr(d, ' ', n);
  if (!sp1) {
    *why = "rp-bad-command";
    return -1;
  }
  size_t ol = (size_t)(sp1 - d);
  const char *rest = sp1 + 1;
  size_t rn = n - ol - 1;
  const char *sp2 = memchr(rest, ' ', rn);
  if (!sp2) {
    *why = "rp-bad-command";
    return -1;
  }
  size_t nl = (size_t)(sp2 - rest);
  const char *ref = sp2 + 1;
  size_t refl = rn - nl - 1;
  if (!oid_ok(d, ol) || !oid_ok(rest, nl) || ol != nl) {
    *why = "rp-bad-oid";
    return -1;
  }
  if (!al_refname_ok(ref, refl)) {
    *why = "rp-bad-ref";
    return -1;
  }
  memcpy(c->old_oid, d, ol);
  c->old_oid[ol] = '\0';
  memcpy(c->new_oid, rest, nl);
  c->new_oid[nl] = '\0';
  memcpy(c->ref, ref, refl);
  c->ref[refl] = '\0';
  return 0;
}

static bool has_cap(const char *caps, size_t n, const char *cap)
{
  size_t cl = strlen(cap), i = 0;
  while (i < n) {
    size_t s = i;
    while (i < n && caps[i] != ' ')
      i++;
    /* git's parse_feature_request (connect.c): the word, or the word
     * with a value (`push-options=x` turns push options on as well) */
    if (i - s >= cl && memcmp(caps + s, cap, cl) == 0 && (i - s == cl || caps[s + cl] == '='))
      return true;
    i++;
  }
  return false;
}

int al_rp_parse(const char *buf, size_t len, al_rp_request *out, const char **why)
{
  size_t pos = 0;
  al_pkt p;
  enum { SHALLOW, CMDS, OPTIONS } phase = SHALLOW;

  memset(out, 0, sizeof *out);
  for (;;) {
    int r = al_pkt_next(buf + pos, len - pos, false, &p, why);
    if (r <= 0)
      return r;
    pos += (size_t)r;
    if (p.kind == AL_PKT_FLUSH) {
      if (phase == OPTIONS)
        return (int)pos;
      if (out->n_cmds == 0) {
        *why = "rp-no-commands";
        return -1;
      }
      if (!out->push_options)
        return (int)pos;
      phase = OPTIONS;
      continue;
    }
    const char *d = p.data;
    size_t n = p.len;
    if (n > 0 && d[n - 1] == '\n')
      n--;
    if (phase == OPTIONS) {
      for (size_t i = 0; i < n; i++)
        if ((unsigned char)d[i] < 0x20 || (unsigned char)d[i] >= 0x7f) {
          *why = "rp-bad-push-option";
          return -1;
        }
      if (++out->n_push_options > AL_RP_MAX_PUSH_OPTIONS) {
        *why = "rp-too-many-push-options";
        return -1;
      }
      continue;
    }
    if (phase == SHALLOW && n >= 8 && memcmp(d, "shallow ", 8) == 0) {
      if (!oid_ok(d + 8, n - 8)) {
        *why = "rp-bad-oid";
        return -1;
      }
      out->n_shallow++;
      continue;
    }
    if (n >= 9 && memcmp(d, "push-cert", 9) == 0) {
      *why = "rp-push-cert";
      return -1;
    }
    size_t cmd_len = n;
    if (out->n_cmds == 0) {
      const char *nul = memchr(d, '\0', n);
      if (!nul) {
        *why = "rp-no-capabilities";
        return -1;
      }
      cmd_len = (size_t)(nul - d);
      out->push_options = has_cap(nul + 1, n - cmd_len - 1, "push-options");
      out->report_status = has_cap(nul + 1, n - cmd_len - 1, "report-status") ||
                           has_cap(nul + 1, n - cmd_len - 1, "report-status-v2");
      out->side_band = has_cap(nul + 1, n - cmd_len - 1, "side-band-64k") ? AL_PKT_MAX
                       : has_cap(nul + 1, n - cmd_len - 1, "side-band")   ? 1000
                                                                          : 0;
    } else if (memchr(d, '\0', n)) {
      *why = "rp-bad-command";
      return -1;
    }
    phase = CMDS;
    if (out->n_cmds == AL_RP_MAX_CMDS) {
      *why = "rp-too-many-commands";
      return -1;
    }
    if (parse_command(d, cmd_len, &out->cmd[out->n_cmds], why) < 0)
      return -1;
    out->n_cmds++;
  }
}

/* wire bytes, not C strings */
static size_t put(char *o, const void *src, size_t n)
{
  memcpy(o, src, n);
  return n;
}

static size_t put_pkt_hdr(char *o, size_t len)
{
  static const char hx[] = "0123456789abcdef";
  o[0] = hx[(len >> 12) & 15];
  o[1] = hx[(len >> 8) & 15];
  o[2] = hx[(len >> 4) & 15];
  o[3] = hx[len & 15];
  return 4;
}

int al_rp_add_push_option(const char *buf, size_t req_len, const char *opt, char *out,
                          size_t out_cap, size_t *out_len, const char **why)
{
  static const char cap[] = " push-options";
  al_rp_request *rq = malloc(sizeof *rq);
  if (!rq) {
    *why = "out-of-memory";
    return -1;
  }
  int pr = al_rp_parse(buf, req_len, rq, why);
  bool had = rq->push_options;
  free(rq);
  if (pr <= 0 || (size_t)pr != req_len) {
    if (pr >= 0)
      *why = "rp-partial";
    return -1;
  }
  size_t ol = strlen(opt);
  if (ol == 0 || ol + 4 > AL_PKT_MAX) {
    *why = "rp-option-bad";
    return -1;
  }
  for (size_t i = 0; i < ol; i++)
    if ((unsigned char)opt[i] <= 0x20 || (unsigned char)opt[i] >= 0x7f) {
      *why = "rp-option-bad";
      return -1;
    }
  size_t need = req_len + ol + 4 + (had ? 0 : sizeof cap - 1 + 4);
  if (need > out_cap) {
    *why = "rp-rewrite-no-room";
    return -1;
  }
  size_t o = 0;
  if (had) {
    /* the options' flush is the request's last 4 bytes */
    o = put(out, buf, req_len - 4);
    o += put_pkt_hdr(out + o, ol + 4);
    o += put(out + o, opt, ol);
    o += put(out + o, "0000", 4);
    *out_len = o;
    return 0;
  }
  /* skip the shallows to the first command (al_rp_parse checked them all) */
  size_t pos = 0;
  al_pkt p;
  for (;;) {
    int r = al_pkt_next(buf + pos, req_len - pos, false, &p, why);
    if (r <= 0 || p.kind != AL_PKT_DATA) {
      *why = "rp-bad-command";
      return -1;
    }
    if (p.len >= 8 && memcmp(p.data, "shallow ", 8) == 0) {
      pos += (size_t)r;
      continue;
    }
    size_t dl = p.len, at = dl > 0 && p.data[dl - 1] == '\n' ? dl - 1 : dl;
    if (dl + 4 + sizeof cap - 1 > AL_PKT_MAX) {
      *why = "rp-command-too-long";
      return -1;
    }
    o = put(out, buf, pos);
    o += put_pkt_hdr(out + o, dl + 4 + sizeof cap - 1);
    o += put(out + o, p.data, at);
    o += put(out + o, cap, sizeof cap - 1);
    o += put(out + o, p.data + at, dl - at);
    pos += (size_t)r;
    break;
  }
  /* the rest of the commands and their flush, then the options section */
  o += put(out + o, buf + pos, req_len - pos);
  o += put_pkt_hdr(out + o, ol + 4);
  o += put(out + o, opt, ol);
  o += put(out + o, "0000", 4);
  *out_len = o;
  return 0;
}

bool al_rp_advert_has_cap(const char *buf, size_t len, const char *cap)
{
  size_t pos = 0;
  al_pkt p;
  const char *why = NULL;
  bool service = false, version = false;
  for (;;) {
    int r = al_pkt_next(buf + pos, len - pos, false, &p, &why);
    if (r <= 0)
      return false;
    pos += (size_t)r;
    if (p.kind == AL_PKT_FLUSH) {
      if (!service || version)
        return false;
      continue; /* the flush after "# service=" */
    }
    if (!service && pos == (size_t)r && p.len >= 10 && memcmp(p.data, "# service=", 10) == 0) {
      service = true;
      continue;
    }
    if (!version && p.len >= 9 && memcmp(p.data, "version 1", 9) == 0 &&
        (p.len == 9 || (p.len == 10 && p.data[9] == '\n'))) {
      version = true;
      continue;
    }
    const char *nul = memchr(p.data, '\0', p.len);
    if (!nul)
      return false;
    size_t cl = p.len - (size_t)(nul - p.data) - 1;
    if (cl > 0 && nul[cl] == '\n')
      cl--;
    return has_cap(nul + 1, cl, cap);
  }
}

/* ---- response head ---- */

static bool value_has_token(const char *v, size_t len, const char *tok)
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
    if (ieq_n(v + s, e - s, tok))
      return true;
    i++;
  }
  return false;
}

int al_gw_parse_response(const char *buf, size_t len, al_gw_response *r, const char **why)
{
  al_http_response h;

  memset(r, 0, sizeof *r);
  r->content_length = -1;
  int n = al_http_parse_response_head(buf, len, &h, why);
  if (n < 0)
    return -1;
  if ((n == 0 && len >= AL_GW_RESP_HEAD_MAX) || (size_t)n > AL_GW_RESP_HEAD_MAX) {
    *why = "resp-head-too-large";
    return -1;
  }
  if (n == 0)
    return 0;
  /* the gateway re-frames the body itself: it decodes chunked alone, so
   * any other coding (even before chunked) would reach the agent garbled */
  if (h.chunked && h.transfer_codings != 1) {
    *why = "resp-bad-transfer-encoding";
    return -1;
  }
  _Static_assert(AL_GW_RESP_MAX_HEADERS >= AL_HTTP_RESP_MAX_HEADERS, "room for every field");
  r->status = h.status;
  r->version_minor = h.version_minor;
  r->reason = h.reason;
  r->reason_len = h.reason_len;
  memcpy(r->headers, h.headers, h.n_headers * sizeof h.headers[0]);
  r->n_headers = h.n_headers;
  r->content_length = h.content_length;
  r->chunked = h.chunked;
  r->head_len = h.head_len;
  bool keep_alive = false;
  for (size_t i = 0; i < h.n_headers; i++) {
    const al_http_header *f = &h.headers[i];
    if (!al_http_header_is(f, "connection"))
      continue;
    if (value_has_token(f->value, f->value_len, "close"))
      r->close = true;
    if (value_has_token(f->value, f->value_len, "keep-alive"))
      keep_alive = true;
  }
  if (r->version_minor == 0 && !keep_alive)
    r->close = true;
  return n;
}

bool al_gw_response_header_is_hop(const al_http_header *h)
{
  static const char *const hop[] = {
      "connection", "keep-alive", "transfer-encoding", "content-length", "trailer", "upgrade",
      "te",         NULL};
  for (size_t i = 0; hop[i]; i++)
    if (ieq_n(h->name, h->name_len, hop[i]))
      return true;
  return h->name_len >= 6 && ieq_n(h->name, 6, "proxy-");
}
