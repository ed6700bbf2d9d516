/* libFuzzer target: the strict HTTP/1.1 request-head parser (proxy/http.c)
 * and the target parsers it feeds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
