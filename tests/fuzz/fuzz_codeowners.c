/* libFuzzer target: CODEOWNERS scanning (src/lib/forge/codeowners.c) reads
 * a repository file the audited repository's writers control. */
#include <stddef.h>
#include <stdint.h>

#include "forge/codeowners.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const names[] = {"@airlock-bot[bot]", "@airlock-bot"};
  unsigned lines[4];
  al_codeowners_lines_owned_by((const char *)data, size, names, 2, lines, 4);
  return 0;
}
