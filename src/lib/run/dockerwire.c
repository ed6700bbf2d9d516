/* Parsers of the docker backend's untrusted bytes (dockerwire.h). */
#include "run/dockerwire.h"

#include <string.h>

#include "common/util.h"
#include "net/http.h"

void al_docker_demux_feed(al_docker_demux *m, const char *p, size_t n)
{
  while (n > 0) {
    if (m->left == 0) {
      size_t k = 8 - m->hd_n < n ? 8 - m->hd_n : n;
      memcpy(m->hd + m->hd_n, p, k);
      m->hd_n += k;
      p += k;
      n -= k;
      if (m->hd_n < 8)
        return;
      m->hd_n = 0;
      m->stream = m->hd[0];
      m->left =
          ((size_t)m->hd[4] << 24) | ((size_t)m->hd[5] << 16) | ((size_t)m->hd[6] << 8) | m->hd[7];
      continue;
    }
    size_t k = m->left < n ? m->left : n;
    int *fd = m->stream == 1 ? &m->fd_out : m->stream == 2 ? &m->fd_err : NULL;
    if (fd && *fd >= 0 && al_write_all(*fd, p, k) < 0)
      *fd = -1; /* a closed reader must not stop the run: drop the rest */
    p += k;
    n -= k;
    m->left -= k;
  }
}

int al_docker_attach_head(const char *buf, size_t n, size_t *body_off)
{
  *body_off = 0;
  al_http_response rsp;
  const char *why = NULL;
  int h = al_http_parse_response_head(buf, n, &rsp, &why);
  if (h == 0)
    return 1;
  if (h > 0 && rsp.version_minor == 1 && (rsp.status == 101 || rsp.status == 200)) {
    *body_off = (size_t)h;
    return 0;
  }
  /* anything else, or a head the one parser refuses: the status line (up
   * to its CR, or what came) names it in the caller's message */
  const char *eol = memchr(buf, '\r', n);
  *body_off = eol ? (size_t)(eol - buf) : n;
  return -1;
}

int al_ustar_first_file(const char *buf, size_t n, size_t *data_off, uint64_t *size)
{
  size_t off = 0;
  for (int member = 0; member < 4 && off + 512 <= n; member++) {
    const unsigned char *h = (const unsigned char *)buf + off;
    uint64_t sz = 0;
    size_t k = 124;
    while (k < 136 && (h[k] == ' ' || h[k] == '0'))
      k++;
    for (; k < 136 && h[k] && h[k] != ' '; k++) {
      if (h[k] < '0' || h[k] > '7' || sz >= (UINT64_C(1) << 40))
        return -1;
      sz = sz * 8 + (uint64_t)(h[k] - '0');
    }
    if (sz > n - off - 512)
      return -1;
    if (h[156] == 'x' || h[156] == 'g') {
      uint64_t pad = (sz + 511) / 512 * 512;
      if (pad > n - off - 512)
        return -1;
      off += 512 + (size_t)pad;
      continue;
    }
    if (h[156] != '0' && h[156] != '\0')
      return -1;
    *data_off = off + 512;
    *size = sz;
    return 0;
  }
  return -1;
}
