/* libFuzzer target: the forge gateway's one query decoder (issue #26),
 * with the re-encoding the forge gets and the record's redaction. Checks
 * what the rules rely on: names decoded, cut, lower-case, printable and
 * unique; values without control bytes; and the forwarded query read
 * back gives the very same parameters. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const al_gw_qparams *qp)
{
  for (size_t i = 0; i < qp->n; i++) {
    const al_gw_qparam *p = &qp->p[i];
    size_t nl = strlen(p->name);
    if (nl == 0 || nl > AL_GW_QUERY_NAME_MAX || strlen(p->value) != p->value_len)
      __builtin_trap();
    for (size_t k = 0; k < nl; k++) {
      unsigned char c = (unsigned char)p->name[k];
      if (c < 0x20 || c > 0x7e || (c >= 'A' && c <= 'Z') || c == '[' || c == ']')
        __builtin_trap();
    }
    for (size_t k = 0; k < p->value_len; k++) {
      unsigned char c = (unsigned char)p->value[k];
      if (c < 0x20 || c == 0x7f)
        __builtin_trap();
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(qp->p[j].name, p->name) == 0)
        __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_gw_qparams a, b;
  static char canon[3 * AL_GW_QUERY_MAX + 1];
  char log[256];
  int r = al_gw_query_decode((const char *)data, size, &a);
  if ((r == 0) != (a.why == NULL) || a.n > AL_GW_QUERY_PARAMS)
    __builtin_trap();
  check(&a);
  al_gw_query_log(&a, log, sizeof log);
  if (strlen(log) >= sizeof log)
    __builtin_trap();
  if (r < 0)
    return 0;
  int cl = al_gw_query_canon(&a, canon, sizeof canon);
  if (cl < 0 || (size_t)cl != strlen(canon))
    __builtin_trap();
  /* the forge reads what the gateway read */
  if (al_gw_query_decode(canon, (size_t)cl, &b) != 0 || b.n != a.n)
    __builtin_trap();
  for (size_t i = 0; i < a.n; i++)
    if (strcmp(a.p[i].name, b.p[i].name) != 0 || a.p[i].value_len != b.p[i].value_len ||
        memcmp(a.p[i].value, b.p[i].value, a.p[i].value_len) != 0 ||
        a.p[i].has_value != b.p[i].has_value)
      __builtin_trap();
  return 0;
}
