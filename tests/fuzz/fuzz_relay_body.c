/* libFuzzer target: the model relay's request checker (relay/rules.c):
 * request bodies (untrusted bytes from the agent) against both vendor
 * tables, and the anthropic-beta filter. Checks the contract too: the
 * status is 0, 400 or 403; a 403 names a feature; allowing the named
 * feature never makes it the reason again; a body with `store: false`
 * added is one the checker still passes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const al_relay_ruleset *sets[] = {&al_relay_rules_anthropic, &al_relay_rules_openai};
  for (size_t k = 0; k < 2; k++) {
    char why[400], feat[72];
    int st = al_relay_check_body(sets[k], NULL, (const char *)data, size, why, sizeof why, feat,
                                 sizeof feat);
    if (st != 0 && st != 400 && st != 403)
      __builtin_trap();
    if (memchr(why, '\0', sizeof why) == NULL || memchr(feat, '\0', sizeof feat) == NULL)
      __builtin_trap();
    if (st == 403) {
      if (!feat[0])
        __builtin_trap();
      char f2[72];
      memcpy(f2, feat, sizeof f2);
      const char *allowed[] = {f2, NULL};
      int st2 = al_relay_check_body(sets[k], allowed, (const char *)data, size, why, sizeof why,
                                    feat, sizeof feat);
      if (st2 != 0 && st2 != 400 && st2 != 403)
        __builtin_trap();
      if (st2 == 403 && strcmp(feat, f2) == 0 && strlen(f2) < 64 &&
          strspn(f2, "abcdefghijklmnopqrstuvwxyz0123456789_-.") == strlen(f2))
        __builtin_trap(); /* an allowed feature is never the reason again */
    }
  }
  /* the defaults (store: false) on a body the checker passed: the result
   * is again a body the checker passes, with the member false */
  {
    char why[400], feat[72], set[96];
    if (al_relay_check_body(&al_relay_rules_openai, NULL, (const char *)data, size, why, sizeof why,
                            feat, sizeof feat) == 0) {
      char *out = NULL;
      size_t n = 0;
      int st = al_relay_apply_defaults(&al_relay_rules_openai, NULL, "/v1/responses",
                                       (const char *)data, size, &out, &n, set, sizeof set, why,
                                       sizeof why, feat, sizeof feat);
      if (st != 0 && st != 403)
        __builtin_trap();
      if (out) {
        if (n <= size || al_relay_check_body(&al_relay_rules_openai, NULL, out, n, why, sizeof why,
                                             feat, sizeof feat) != 0)
          __builtin_trap();
        free(out);
      }
    }
  }
  /* the beta filter takes a NUL-terminated header value */
  if (size < 2048) {
    char *v = malloc(size + 1);
    if (!v)
      return 0;
    memcpy(v, data, size);
    v[size] = '\0';
    char out[512], gone[512], why[300];
    int st = al_relay_filter_betas(&al_relay_rules_anthropic, NULL, NULL, v, out, sizeof out, gone,
                                   sizeof gone, why, sizeof why);
    if (st != 0 && st != 400 && st != 403)
      __builtin_trap();
    free(v);
  }
  return 0;
}
