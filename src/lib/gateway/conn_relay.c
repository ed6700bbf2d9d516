/* The forge's response to one gateway request relayed to the agent (split
 * from conn_request.c): interim 1xx dropped, the head re-framed without
 * hop-by-hop fields, the body decoded and re-chunked for HTTP/1.1 or sent
 * as it came. */
#include <stdio.h>
#include <string.h>

#include "gateway/conn_int.h"
#include "gateway/wire.h"
#include "net/chunked.h"

/* Relay the forge's response. Returns 0 (keep going), 1 (close after),
 * -1 (failed; nothing sensible can follow). */
int gwc_relay_response(al_gw_conn *c, req_ctx *r)
{
  al_gw_response resp;
  const char *why = "resp-incomplete";
  int h;

  for (;;) {
    while ((h = al_gw_parse_response(c->ub + c->ub_off, c->ub_len - c->ub_off, &resp, &why)) == 0) {
      int f = gwc_u_fill(c);
      if (f <= 0) {
        why = f == 0 ? "upstream-closed" : "upstream-error";
        h = -1;
        break;
      }
    }
    if (h < 0) {
      c->up_dead = true;
      r->detail = why;
      gwc_refuse(c, r, 502, "upstream-bad-response", true);
      return -1;
    }
    if (resp.status >= 100 && resp.status < 200) {
      if (resp.status == 101) {
        c->up_dead = true;
        gwc_refuse(c, r, 502, "upstream-upgrade-refused", true);
        return -1;
      }
      c->ub_off += resp.head_len; /* 1xx: dropped (100 Continue was ours) */
      continue;
    }
    break;
  }
  r->status = resp.status;
  gwc_gl_advert_head(c, r, &resp);
  bool no_body = resp.status == 204 || resp.status == 304;
  bool close_delim = !no_body && !resp.chunked && resp.content_length < 0;
  bool to_chunked = !no_body && (resp.chunked || close_delim) && r->version_minor == 1;
  bool closing = r->client_close || resp.close || close_delim ||
                 (!no_body && !to_chunked && resp.content_length < 0);
  /* the head, re-framed */
  size_t n = (size_t)snprintf(c->wb, WB_CAP, "HTTP/1.1 %d %.*s\r\n", resp.status,
                              (int)(resp.reason_len > 128 ? 128 : resp.reason_len), resp.reason);
  for (size_t i = 0; i < resp.n_headers; i++) {
    const al_http_header *f = &resp.headers[i];
    if (al_gw_response_header_is_hop(f))
      continue;
    if (n + f->name_len + f->value_len + 8 >= WB_CAP - 128)
      break;
    n += (size_t)snprintf(c->wb + n, WB_CAP - n, "%.*s: %.*s\r\n", (int)f->name_len, f->name,
                          (int)f->value_len, f->value);
  }
  if (!no_body && to_chunked)
    n += (size_t)snprintf(c->wb + n, WB_CAP - n, "Transfer-Encoding: chunked\r\n");
  else if (!no_body && resp.content_length >= 0)
    n += (size_t)snprintf(c->wb + n, WB_CAP - n, "Content-Length: %lld\r\n",
                          (long long)resp.content_length);
  if (closing)
    n += (size_t)snprintf(c->wb + n, WB_CAP - n, "Connection: close\r\n");
  n += (size_t)snprintf(c->wb + n, WB_CAP - n, "\r\n");
  c->ub_off += resp.head_len;
  if (gwc_write_all(c->cs, c->wb, n) < 0) {
    r->detail = "client-gone";
    return -1;
  }
  if (no_body)
    return closing ? 1 : 0;
  /* the body */
  uint64_t left = resp.content_length >= 0 ? (uint64_t)resp.content_length : 0;
  al_chunked ch;
  al_chunked_init(&ch);
  for (;;) {
    if (!resp.chunked && !close_delim && left == 0)
      break;
    if (c->ub_off == c->ub_len) {
      int f = gwc_u_fill(c);
      if (f == 0 && close_delim)
        break;
      if (f <= 0) {
        c->up_dead = true;
        r->detail = "upstream-closed-in-body";
        return -1;
      }
    }
    size_t avail = c->ub_len - c->ub_off;
    if (avail > STREAM_CHUNK)
      avail = STREAM_CHUNK;
    char *data = c->wb + 32;
    size_t got;
    if (resp.chunked) {
      size_t in = avail;
      int d = al_chunked_decode(&ch, c->ub + c->ub_off, &in, data, &got, &why);
      if (d < 0) {
        c->up_dead = true;
        r->detail = why;
        return -1;
      }
      c->ub_off += in;
      if (got == 0 && d == 1)
        break;
      if (got == 0)
        continue;
      if (d == 1)
        resp.chunked = false, left = 0, close_delim = false; /* write this, then stop */
    } else {
      if (!close_delim && (uint64_t)avail > left)
        avail = (size_t)left;
      memcpy(data, c->ub + c->ub_off, avail);
      c->ub_off += avail;
      left -= close_delim ? 0 : avail;
      got = avail;
    }
    r->down += got;
    gwc_gl_advert_keep(r, data, got);
    int w;
    if (to_chunked) {
      char hdr[20];
      size_t hl = al_chunk_header(got, hdr);
      memcpy(data - hl, hdr, hl);
      // NOLINTNEXTLINE(bugprone-not-null-terminated-result): wire bytes, not a C string
      memcpy(data + got, "\r\n", 2);
      w = gwc_write_all(c->cs, data - hl, hl + got + 2);
    } else {
      w = gwc_write_all(c->cs, data, got);
    }
    if (w < 0) {
      r->detail = "client-gone";
      return -1;
    }
  }
  gwc_gl_advert_done(c, r);
  if (to_chunked && gwc_write_all(c->cs, "0\r\n\r\n", 5) < 0)
    return -1;
  if (close_delim)
    c->up_dead = true;
  return closing ? 1 : 0;
}
