/* libFuzzer target: airlock's one chunked decoder (net/chunked.c, the
 * gateway's and the model relay's bodies) and the gateway's response head
 * (the one strict parser, net/http.c, under wire.c's limits) (issues #15,
 * #28). The first byte's low 7 bits pick how the input is split into
 * reads, so state carried across calls is exercised too; its high bit sets
 * skip_trailers (the relay's answers). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/wire.h"
#include "net/chunked.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  size_t step = (size_t)(data[0] & 0x7f) + 1;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  char *out = malloc(n + 1);
  al_chunked c;
  al_chunked_init(&c);
  c.skip_trailers = (data[0] & 0x80) != 0;
  size_t pos = 0;
  uint64_t total = 0;
  int last = 0;
  while (pos < n) {
    size_t len = n - pos < step ? n - pos : step, got = 0, want = len;
    const char *why = NULL;
    int r = al_chunked_decode(&c, in + pos, &len, out, &got, &why);
    if (len > want || got > len || (r < 0 && !why))
      __builtin_trap();
    total += got;
    last = r;
    if (r != 0)
      break;
    pos += len;
  }
  /* on an error the call's partial output is dropped, so totals match only otherwise */
  if (total > n || (last >= 0 && c.total != total) || c.trailer > AL_CHUNK_TRAILER_MAX)
    __builtin_trap();
  free(out);
  al_gw_response resp;
  const char *why = NULL;
  int h = al_gw_parse_response(in, n, &resp, &why);
  if (h > 0 && ((size_t)h > n || resp.head_len != (size_t)h || resp.status < 100 ||
                resp.status > 599 || (resp.chunked && resp.content_length >= 0)))
    __builtin_trap();
  if (h > 0)
    for (size_t i = 0; i < resp.n_headers; i++)
      (void)al_gw_response_header_is_hop(&resp.headers[i]);
  return 0;
}
