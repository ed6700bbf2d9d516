/* libFuzzer target: the docker backend's parsers of outside bytes
 * (run/dockerwire.c). The first byte picks the parser:
 *   0: the multiplexed output stream, fed in chunks whose sizes come from
 *      the next bytes; invariant: the payload written to the stdout and
 *      stderr pipes is exactly what a one-shot reference demuxer computes.
 *   1: the attach response head; invariant: a body offset within the input.
 *   2: the ustar archive; invariant: the file lies within the input. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/dockerwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The expected output of stream `which` (1 or 2), computed in one pass. */
static size_t reference(const uint8_t *p, size_t n, int which, uint8_t *out)
{
  size_t o = 0, i = 0;
  while (i + 8 <= n) {
    int st = p[i];
    size_t len =
        ((size_t)p[i + 4] << 24) | ((size_t)p[i + 5] << 16) | ((size_t)p[i + 6] << 8) | p[i + 7];
    i += 8;
    size_t k = len < n - i ? len : n - i;
    if (st == which) {
      memcpy(out + o, p + i, k);
      o += k;
    }
    i += k;
  }
  return o;
}

static size_t drain(int fd, uint8_t *buf, size_t cap)
{
  size_t n = 0;
  ssize_t k;
  while (n < cap && (k = read(fd, buf + n, cap - n)) > 0)
    n += (size_t)k;
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 2 || size > 32768)
    return 0;
  int mode = data[0] % 3;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  if (mode == 0) {
    /* chunk sizes from the first byte of the rest, then the stream */
    unsigned chunk = (unsigned)p[0] % 17 + 1;
    p++;
    n--;
    int po[2], pe[2];
    if (pipe2(po, O_NONBLOCK) < 0)
      return 0;
    if (pipe2(pe, O_NONBLOCK) < 0) {
      close(po[0]);
      close(po[1]);
      return 0;
    }
    fcntl(po[1], F_SETPIPE_SZ, 65536);
    fcntl(pe[1], F_SETPIPE_SZ, 65536);
    al_docker_demux m = {.fd_out = po[1], .fd_err = pe[1]};
    for (size_t i = 0; i < n; i += chunk)
      al_docker_demux_feed(&m, (const char *)p + i, n - i < chunk ? n - i : chunk);
    close(po[1]);
    close(pe[1]);
    uint8_t *got = malloc(n + 1), *want = malloc(n + 1);
    for (int which = 1; which <= 2; which++) {
      size_t g = drain(which == 1 ? po[0] : pe[0], got, n + 1);
      size_t w = reference(p, n, which, want);
      if (g != w || memcmp(got, want, g) != 0)
        __builtin_trap();
    }
    free(got);
    free(want);
    close(po[0]);
    close(pe[0]);
  } else if (mode == 1) {
    size_t body = 0;
    int r = al_docker_attach_head((const char *)p, n, &body);
    if (r != 1 && body > n)
      __builtin_trap();
  } else {
    size_t off = 0;
    uint64_t sz = 0;
    if (al_ustar_first_file((const char *)p, n, &off, &sz) == 0 && (off > n || sz > n - off))
      __builtin_trap();
  }
  return 0;
}
