/* ClientHello parser (RFC 8446 §4.1.2, RFC 6066 §3). See tls.h.
 *
 * Two steps: gather the handshake bytes out of consecutive handshake
 * records into a scratch buffer until the ClientHello's declared length is
 * there, then walk the ClientHello with a bounds-checked cursor. */
#include "proxy/tls.h"

#include <string.h>

typedef struct cursor {
  const uint8_t *p;
  size_t left;
  bool bad;
} cursor;

static uint32_t take(cursor *c, size_t n)
{
  uint32_t v = 0;
  if (c->bad || c->left < n) {
    c->bad = true;
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    v = (v << 8) | c->p[i];
  c->p += n;
  c->left -= n;
  return v;
}

/* A sub-cursor over the next n bytes (a length-prefixed vector's body). */
static cursor sub(cursor *c, size_t n)
{
  cursor s = {c->p, n, false};
  if (c->bad || c->left < n) {
    c->bad = true;
    s.bad = true;
    s.left = 0;
    return s;
  }
  c->p += n;
  c->left -= n;
  return s;
}

/* ServerNameList (RFC 6066 §3): exactly one entry, of type host_name. */
static int parse_server_name(cursor ext, al_tls_hello *out, const char **why)
{
  size_t list_len = take(&ext, 2);
  cursor list = sub(&ext, list_len);
  if (ext.bad || ext.left != 0 || list_len == 0) {
    *why = "sni-malformed";
    return -1;
  }
  unsigned type = take(&list, 1);
  size_t name_len = take(&list, 2);
  cursor name = sub(&list, name_len);
  if (list.bad || type != 0 || name_len == 0 || name_len >= sizeof out->sni) {
    *why = "sni-malformed";
    return -1;
  }
  if (list.left != 0) { /* a second entry: several names or another type */
    *why = "sni-malformed";
    return -1;
  }
  for (size_t i = 0; i < name_len; i++) {
    if (name.p[i] <= 0x20 || name.p[i] >= 0x7f) {
      *why = "sni-malformed";
      return -1;
    }
  }
  memcpy(out->sni, name.p, name_len);
  out->sni[name_len] = '\0';
  out->sni_len = name_len;
  out->has_sni = true;
  return 0;
}

static int parse_hello_body(cursor c, al_tls_hello *out, const char **why)
{
  take(&c, 2);  /* legacy_version */
  take(&c, 32); /* random */
  size_t sid = take(&c, 1);
  if (sid > 32) {
    *why = "tls-malformed";
    return -1;
  }
  sub(&c, sid);
  size_t cs = take(&c, 2);
  if (cs < 2 || cs % 2) {
    *why = "tls-malformed";
    return -1;
  }
  sub(&c, cs);
  size_t comp = take(&c, 1);
  if (comp < 1) {
    *why = "tls-malformed";
    return -1;
  }
  sub(&c, comp);
  if (c.bad) {
    *why = "tls-malformed";
    return -1;
  }
  if (c.left == 0)
    return 0; /* no extensions at all (pre-TLS 1.2 style): no SNI */

  size_t ext_len = take(&c, 2);
  cursor exts = sub(&c, ext_len);
  if (c.bad || c.left != 0) {
    *why = "tls-malformed";
    return -1;
  }
  /* RFC 8446 §4.2: no extension type twice. Remember the few we check. */
  uint16_t seen[128];
  size_t n_seen = 0;
  while (exts.left > 0) {
    uint16_t type = (uint16_t)take(&exts, 2);
    size_t len = take(&exts, 2);
    cursor body = sub(&exts, len);
    if (exts.bad) {
      *why = "tls-malformed";
      return -1;
    }
    for (size_t i = 0; i < n_seen; i++) {
      if (seen[i] == type) {
        *why = type == AL_TLS_EXT_SERVER_NAME ? "sni-malformed" : "tls-malformed";
        return -1;
      }
    }
    if (n_seen == sizeof seen / sizeof seen[0]) {
      *why = "tls-malformed";
      return -1;
    }
    seen[n_seen++] = type;
    if (type == AL_TLS_EXT_SERVER_NAME) {
      if (parse_server_name(body, out, why) < 0)
        return -1;
    } else if (type == AL_TLS_EXT_ECH) {
      out->ech = true;
    }
  }
  return 0;
}

int al_tls_parse_client_hello(const uint8_t *buf, size_t len, al_tls_hello *out, const char **why)
{
  static const char *dummy;
  uint8_t hs[AL_TLS_HELLO_MAX];
  size_t hs_len = 0, pos = 0;

  if (!why)
    why = &dummy;
  memset(out, 0, sizeof *out);
  if (len > AL_TLS_HELLO_MAX)
    len = AL_TLS_HELLO_MAX;

  /* Gather handshake bytes from records until the message is complete. */
  for (;;) {
    if (hs_len >= 4) {
      // cppcheck-suppress uninitvar ; hs[0..hs_len) is copied from records before use
      if (hs[0] != 1) { /* msg_type client_hello */
        *why = "not-tls";
        return -1;
      }
      size_t need = ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]) + 4;
      if (need > AL_TLS_HELLO_MAX) {
        *why = "tls-too-large";
        return -1;
      }
      if (hs_len >= need) {
        if (hs_len != need) { /* the ClientHello must end its record */
          *why = "tls-malformed";
          return -1;
        }
        out->hello_bytes = pos;
        cursor c = {hs + 4, need - 4, false};
        return parse_hello_body(c, out, why) < 0 ? -1 : 1;
      }
    }
    /* Next record header (RFC 8446 §5.1): type 22, version 3.x, length. */
    if (pos < len && buf[pos] != 22) {
      *why = "not-tls";
      return -1;
    }
    if (pos + 1 < len && buf[pos + 1] != 3) {
      *why = "not-tls";
      return -1;
    }
    if (len - pos < 5)
      break;
    size_t rlen = (size_t)buf[pos + 3] << 8 | buf[pos + 4];
    if (rlen == 0 || rlen > 16384) {
      *why = "tls-malformed";
      return -1;
    }
    if (len - pos - 5 < rlen)
      break;
    if (hs_len + rlen > sizeof hs) {
      *why = "tls-too-large";
      return -1;
    }
    memcpy(hs + hs_len, buf + pos + 5, rlen);
    hs_len += rlen;
    pos += 5 + rlen;
  }
  if (len >= AL_TLS_HELLO_MAX) {
    *why = "tls-too-large";
    return -1;
  }
  return 0;
}
