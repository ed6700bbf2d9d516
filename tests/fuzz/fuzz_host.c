/* libFuzzer target: host / port / authority canonicalization (net/host.c).
 * Invariants: a canonical name canonicalizes to itself, and is lower-case
 * LDH or an IP literal. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "net/host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  al_host h, h2;
  uint16_t port;
  const char *why = NULL;

  if (al_host_canonicalize((const char *)data, size, &h, &why) == 0) {
    size_t n = strlen(h.name);
    if (n == 0 || n > 253)
      __builtin_trap();
    if (al_host_canonicalize(h.name, n, &h2, &why) != 0 || strcmp(h.name, h2.name) != 0 ||
        h.is_ip != h2.is_ip)
      __builtin_trap();
    for (size_t i = 0; i < n && !h.is_ip; i++)
      if (h.name[i] >= 'A' && h.name[i] <= 'Z')
        __builtin_trap();
    (void)al_host_matches(h.name, "allowed.test", true);
  }
  (void)al_authority_parse((const char *)data, size, &h, &port, &why);
  if (al_port_parse((const char *)data, size, &port, &why) == 0 && port == 0)
    __builtin_trap();
  return 0;
}
