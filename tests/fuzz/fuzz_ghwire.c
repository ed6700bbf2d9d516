/* libFuzzer target: the forge client's readers of server bytes
 * (src/lib/forge/ghwire.c): a `Link` header value, and a URL a server hands
 * back (Link target, Location) checked against the API base. Invariants: a
 * `next` target has no byte <= 0x20 or >= 0x7f; a malformed value yields no
 * target; a URL judged under the base starts with the base. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "forge/ghwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  bool bad = false;
  char *next = al_link_next((const char *)data, size, &bad);
  if (next) {
    if (bad)
      abort();
    for (const char *p = next; *p; p++)
      if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
        abort();
    static const char *const bases[] = {"https://api.github.com", "https://ghe.example/api/v3"};
    for (size_t i = 0; i < 2; i++)
      if (al_ghapi_url_under(bases[i], next) && strncasecmp(next, bases[i], strlen(bases[i])) != 0)
        abort();
    free(next);
  }
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  if (al_ghapi_url_under("https://api.github.com", s)) {
    if (strncasecmp(s, "https://api.github.com", 22) != 0)
      abort();
    /* no dot segment in the path (the query is not normalised by clients) */
    char *q = strchr(s, '?');
    if (q)
      *q = '\0';
    size_t pl = strlen(s);
    if (strstr(s, "/../") || strstr(s, "/./") || (pl >= 3 && !strcmp(s + pl - 3, "/..")) ||
        (pl >= 2 && !strcmp(s + pl - 2, "/.")))
      abort();
  }
  char out[64];
  al_ghapi_sanitise(s, out, sizeof out);
  free(s);
  return 0;
}
