/* libFuzzer target: the review's readers of what the agent wrote
 * (issue #16): the secret scanner over every view and decoding, and the
 * catalogue's path folding and matching. The first line of the input is a
 * path, the rest its contents. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "run/review_catalogue.h"
#include "run/review_secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(const al_secret_hit *h, void *ctx)
{
  size_t *n = ctx;
  if (!h->kind || !h->encoding || strncmp(h->fp, "sha256:", 7) != 0)
    abort();
  (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_secret_known k = {.len = 40, .prefix = "ghs_", .name = "git token"};
  if (!k.fp[0])
    al_secret_fingerprint("ghs_0123456789012345678901234567890123456", k.fp);
  size_t n = 0;
  bool trunc;
  size_t r = al_secret_scan((const char *)data, size, &k, 1, count, &n, &trunc);
  if (r != n)
    abort();
  const uint8_t *nl = memchr(data, '\n', size);
  size_t pl = nl ? (size_t)(nl - data) : size;
  char *path = malloc(pl + 1);
  memcpy(path, data, pl);
  path[pl] = '\0';
  al_review_catalogue_match(path);
  if (nl)
    al_review_content_match(path, (const char *)nl + 1, size - pl - 1);
  char out[64];
  al_review_fold_path(path, out, sizeof out);
  free(path);
  return 0;
}
