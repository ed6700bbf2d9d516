/* libFuzzer target: the model relay's two heads (relay/relay_head.c), the
 * upstream's response head, parsed and rebuilt for the agent (issue #28:
 * the rewrite that overflowed), and the agent's request head, parsed and
 * NUL-terminated in place. The first byte picks which. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/relay_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > HEAD_MAX)
    return 0;
  const char *why = NULL;
  /* an exact-size copy, so any read or write past the input is caught */
  char *buf = malloc(size - 1 + 1);
  memcpy(buf, data + 1, size - 1);
  size_t len = size - 1;
  if (data[0] & 1) {
    struct response rs;
    char *out = NULL;
    size_t out_len = 0;
    int r = rl_parse_response_head(buf, len, &rs, &out, &out_len, &why);
    if (r > 0 && (size_t)r > len)
      __builtin_trap();
    if (r < 0 && (!why || out))
      __builtin_trap();
    if (out) {
      /* the rebuilt head: one head, CRLF only, ending in the relay's own close */
      if (out_len < 4 || memcmp(out + out_len - 4, "\r\n\r\n", 4) != 0 ||
          memmem(out, out_len, "\r\n\r\n", 4) != out + out_len - 4)
        __builtin_trap();
      for (size_t i = 0; i < out_len; i++)
        if (out[i] == '\n' && (i == 0 || out[i - 1] != '\r'))
          __builtin_trap();
      free(out);
    }
  } else {
    struct request rq;
    memset(&rq, 0, sizeof rq);
    int r = rl_parse_request_head(buf, len, &rq, &why);
    if (r > 0) {
      if ((size_t)r > len || !rq.method || !rq.target || rq.extra_len != len - (size_t)r)
        __builtin_trap();
      for (size_t i = 0; i < rq.nh; i++)
        if (!rq.h[i].name[0] || strchr(rq.h[i].name, ':') || strpbrk(rq.h[i].value, "\r\n"))
          __builtin_trap();
    } else if (r < 0 && !why) {
      __builtin_trap();
    }
  }
  free(buf);
  return 0;
}
