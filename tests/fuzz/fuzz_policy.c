/* libFuzzer target: the policy loader (src/lib/policy/policy.c). The policy
 * file is YAML written by the user, and may come from the repository a
 * ticket runs on. Invariants: a rejected policy says why; an accepted one
 * has a canonical form. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/error.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  al_policy *p = NULL;
  al_error err = {0};
  if (al_policy_load_buffer("fuzz.yaml", (const char *)data, size, &p, &err) < 0) {
    if (p || err.msg[0] == '\0')
      __builtin_trap();
    return 0;
  }
  if (!p)
    __builtin_trap();
  char *canon = al_policy_canonical(p);
  if (!canon || canon[0] != '{')
    __builtin_trap();
  free(canon);
  free(al_policy_relay_canonical(p));
  al_policy_free(p);
  return 0;
}
