/* libFuzzer target: the reader of Lease objects from the Kubernetes API
 * server (src/lib/kube/leasewire.c, `airlock serve`'s election). Invariants:
 * an accepted Lease has a non-empty resourceVersion, every text field is
 * NUL-terminated within its buffer with no byte <= 0x20 or >= 0x7f (the
 * holder may not be empty-but-garbage), the integers are within bounds, and
 * the Lease written back from it parses to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const char *s, size_t cap)
{
  size_t n = strnlen(s, cap);
  if (n == cap)
    abort();
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  al_kube_lease l;
  al_error err = {0};
  if (al_kube_lease_parse((const char *)data, size, &l, &err) < 0)
    return 0;
  if (!l.resource_version[0] || l.duration_s < 0 || l.transitions < 0)
    abort();
  printable(l.resource_version, sizeof l.resource_version);
  printable(l.holder, sizeof l.holder);
  printable(l.acquire_time, sizeof l.acquire_time);
  printable(l.renew_time, sizeof l.renew_time);
  char *json = al_kube_lease_json("ns", "name", &l);
  if (!json)
    abort();
  al_kube_lease back;
  if (al_kube_lease_parse(json, strlen(json), &back, &err) < 0 || strcmp(back.holder, l.holder) ||
      strcmp(back.resource_version, l.resource_version) || strcmp(back.renew_time, l.renew_time) ||
      back.duration_s != l.duration_s || back.transitions != l.transitions)
    abort();
  free(json);
  return 0;
}
