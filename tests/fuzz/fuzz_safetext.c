/* libFuzzer target: the safe-text rewriter (common/safetext.c, issue #26)
 * over any bytes, as a body and as a title, with a cap from the input's
 * first two bytes. Invariants, read by the independent checker
 * (safetext_check.h): nothing live (no `<`, no entity, no mention, no
 * outside link or image, no closing keyword with a reference), never over
 * the cap, the header first and the footer last, never a crash. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetext.h"
#include "safetext_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const char *in, size_t n, bool one_line, size_t cap)
{
  static const char *const hosts[] = {ST_FORGE, NULL};
  static const char footer[] = "---\nOpened by airlock (run 0).";
  struct al_safetext_counts c = {0};
  struct al_safetext_opts o = {.forge_hosts = hosts,
                               .one_line = one_line,
                               .max_len = cap,
                               .footer = one_line ? NULL : footer,
                               .counts = &c};
  char *out = NULL;
  al_error e;
  if (al_safetext_render(in, n, &o, &out, &e) < 0) {
    if (out || cap >= 1024)
      abort(); /* only a cap too small for header and footer is refused */
    return;
  }
  size_t l = strlen(out);
  if (l > (cap ? cap : AL_SAFETEXT_MAX) || c.shown_len > n || c.truncated != (c.shown_len < n))
    abort();
  if (st_live(out, l))
    abort();
  if (!one_line && (strncmp(out, AL_SAFETEXT_HEADER, strlen(AL_SAFETEXT_HEADER)) != 0 ||
                    l < strlen(footer) || strcmp(out + l - strlen(footer), footer) != 0))
    abort();
  if (one_line && strchr(out, '\n'))
    abort();
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 2)
    return 0;
  size_t cap = (size_t)data[0] << 4 | data[1]; /* 0 (the default) to 4095 */
  one((const char *)data + 2, size - 2, false, cap);
  one((const char *)data + 2, size - 2, true, cap);
  return 0;
}
