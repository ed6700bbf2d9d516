/* libFuzzer target: the run-record reader's summary and its human view
 * (src/lib/runs/summary.c). A record file is untrusted (docs/run-record.md,
 * "Reading records"): any JSON jansson accepts reaches al_run_summarize(),
 * al_run_summary_json() and al_run_show(). Invariants: nothing crashes
 * whatever the types; the shown text holds no control byte but '\n' (no
 * ESC, CR, BEL, DEL) and no raw C1 or bidi override (U+009B as C2 9B,
 * U+202E as E2 80 AE): every line went through the escaper. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runs/runs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > (1u << 20))
    return 0;
  json_t *rec = json_loadb((const char *)data, size, 0, NULL);
  if (!rec)
    return 0;
  al_run_summary s;
  al_run_summarize(rec, &s);
  if (strlen(s.id) > AL_RUN_ID_LEN || strlen(s.result) == 0)
    __builtin_trap();
  json_t *j = al_run_summary_json(&s);
  if (!json_is_object(j))
    __builtin_trap();
  json_decref(j);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m)
    abort();
  al_run_show(rec, "/path", m);
  fclose(m);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if ((c < 0x20 && c != '\n') || c == 0x7f)
      __builtin_trap();
    if (c == 0xc2 && i + 1 < len && (unsigned char)buf[i + 1] >= 0x80 &&
        (unsigned char)buf[i + 1] <= 0x9f)
      __builtin_trap();
    if (c == 0xe2 && i + 2 < len && (unsigned char)buf[i + 1] == 0x80 &&
        (unsigned char)buf[i + 2] >= 0xaa && (unsigned char)buf[i + 2] <= 0xae)
      __builtin_trap();
  }
  free(buf);
  json_decref(rec);
  return 0;
}
