/* libFuzzer target: the strict HTTP/1.1 request-head parser (net/http.c)
 * and the target parsers it feeds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The plain-HTTP response head filter (issue #26): what it passes on has
 * no X-Airlock field and ends its head. */
static void response_strip(const char *in, size_t n)
{
  static char out[AL_HTTP_RESP_HEAD_MAX + 64 + AL_HTTP_RESP_MAX_HEADERS];
  size_t ol = 0;
  int status = 0;
  const char *why = NULL;
  if (n > AL_HTTP_RESP_HEAD_MAX + 64)
    n = AL_HTTP_RESP_HEAD_MAX + 64;
  int h = al_http_response_strip(in, n, out, &ol, &status, &why);
  if (h < 0 && !why)
    __builtin_trap();
  if (h <= 0)
    return;
  /* each field may gain the one space of "name: value" */
  if (ol > (size_t)h + AL_HTTP_RESP_MAX_HEADERS || ol < 4 ||
      memcmp(out + ol - 4, "\r\n\r\n", 4) != 0 || status < 100 || status > 599)
    __builtin_trap();
  for (size_t i = 0; i + 11 < ol; i++)
    if (out[i] == '\n' && strncasecmp(out + i + 1, "x-airlock", 9) == 0 &&
        (out[i + 10] == ':' || out[i + 10] == '-'))
      __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  response_strip((const char *)data, size);
  al_http_request req;
  const char *why = NULL;
  int r = al_http_parse_head((const char *)data, size, &req, &why);
  if (r > 0) {
    al_host h;
    uint16_t port;
    const char *path;
    size_t path_len;
    (void)al_authority_parse(req.target, req.target_len, &h, &port, &why);
    if (al_http_absolute_target(req.target, req.target_len, &h, &port, &path, &path_len, &why) == 0)
      if (path_len == 0 || path[0] != '/')
        __builtin_trap();
    if (req.host)
      (void)al_http_host_value(req.host->value, req.host->value_len, 80, &h, &port, &why);
    for (size_t i = 0; i < req.n_headers; i++)
      (void)al_http_header_is_hop(&req, &req.headers[i]);
    if ((size_t)r > size || req.head_len != (size_t)r)
      __builtin_trap();
  }
  return 0;
}
