/* libFuzzer target: git pkt-lines and the receive-pack update request as
 * the forge gateway reads them (issue #15), then the push check, GitLab's
 * ci.skip rewrite and the advertisement's capability reading (issue #30). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/rules.h"
#include "gateway/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_gw_rules r;
  static int init;
  if (!init) {
    al_error e;
    if (al_gw_rules_init(&r, "acme/tally", 1, "airlock/1-ab12cd34", 0, "", "", &e) < 0)
      __builtin_trap();
    init = 1;
  }
  const char *buf = (const char *)data;
  /* pkt-lines, v0 and v2 */
  for (int v2 = 0; v2 < 2; v2++) {
    size_t pos = 0;
    al_pkt p;
    const char *why = NULL;
    int k;
    while ((k = al_pkt_next(buf + pos, size - pos, v2, &p, &why)) > 0) {
      if ((size_t)k > size - pos || k > AL_PKT_MAX ||
          (p.kind == AL_PKT_DATA && p.len + 4 != (size_t)k))
        __builtin_trap();
      pos += (size_t)k;
    }
  }
  al_rp_request *q = malloc(sizeof *q);
  const char *why = NULL;
  int n = al_rp_parse(buf, size, q, &why);
  if (n > 0) {
    if ((size_t)n > size || q->n_cmds == 0 || q->n_cmds > AL_RP_MAX_CMDS)
      __builtin_trap();
    for (size_t i = 0; i < q->n_cmds; i++)
      if (!al_refname_ok(q->cmd[i].ref, strlen(q->cmd[i].ref)) ||
          strlen(q->cmd[i].old_oid) != strlen(q->cmd[i].new_oid))
        __builtin_trap();
    /* GitLab's ci.skip rewrite: the result parses as the same commands
     * with one more push option, taken to its end */
    size_t cap = (size_t)n + 64, ol = 0;
    char *out = malloc(cap);
    al_rp_request *q2 = malloc(sizeof *q2);
    if (out && q2 && al_rp_add_push_option(buf, (size_t)n, "ci.skip", out, cap, &ol, &why) == 0) {
      const char *why2 = NULL;
      if (ol > cap || al_rp_parse(out, ol, q2, &why2) != (int)ol || !q2->push_options ||
          q2->n_push_options != q->n_push_options + 1 || q2->n_cmds != q->n_cmds)
        __builtin_trap();
      for (size_t i = 0; i < q->n_cmds; i++)
        if (strcmp(q->cmd[i].ref, q2->cmd[i].ref) != 0 ||
            strcmp(q->cmd[i].new_oid, q2->cmd[i].new_oid) != 0)
          __builtin_trap();
    }
    free(out);
    free(q2);
    const char *reason;
    size_t bad;
    if (al_gw_check_push(&r, q, &reason, &bad) == 0)
      for (size_t i = 0; i < q->n_cmds; i++)
        if (strcmp(q->cmd[i].ref, "refs/heads/airlock/1-ab12cd34") != 0)
          __builtin_trap();
  } else if (n < 0 && !why) {
    __builtin_trap();
  }
  free(q);
  (void)al_rp_advert_has_cap(buf, size, "push-options");
  return 0;
}
