/* libFuzzer target: the TLS ClientHello parser of the SNI gate
 * (proxy/tls.c). Invariant: a reported SNI is NUL-terminated printable
 * ASCII of the reported length. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  al_tls_hello h;
  const char *why = NULL;
  int r = al_tls_parse_client_hello(data, size, &h, &why);
  if (r == 1) {
    if (h.hello_bytes > size)
      __builtin_trap();
    if (h.has_sni && (strlen(h.sni) != h.sni_len || h.sni_len == 0))
      __builtin_trap();
  }
  if (r < 0 && !why)
    __builtin_trap();
  return 0;
}
