/* libFuzzer target: the audit's workflow reader (src/lib/forge/workflow.c,
 * workflow_jobs.c) and its filter-pattern judge (wfglob.c). Workflow files
 * are repository content: whoever may push to the base branch writes them.
 * Input: one control byte (visibility, default permissions, whether the
 * environments were read), then up to three workflow files separated by
 * NUL bytes (ci.yml, reuse.yml, deploy.yml: local reusable calls resolve).
 * A control byte with bit 7 set fuzzes the pattern judge instead: the rest
 * is a list of patterns, one a line, judged against the run branches and
 * against "main". Invariants: every verdict has evidence and a non-PASS
 * one a fix; nothing leaks (LeakSanitizer); no pattern list makes the
 * judge run unbounded (libFuzzer's -timeout). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forge/wfglob.h"
#include "forge/workflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void globs(const char *text, size_t len)
{
  char *copy = malloc(len + 1);
  if (!copy)
    return;
  memcpy(copy, text, len);
  copy[len] = '\0';
  const char *pats[AL_WFG_MAX_PATTERNS + 2];
  size_t n = 0;
  char *save = NULL;
  for (char *l = strtok_r(copy, "\n", &save); l && n < AL_WFG_MAX_PATTERNS + 2;
       l = strtok_r(NULL, "\n", &save))
    pats[n++] = l;
  al_wfg_result r;
  char why[300];
  al_wfg_subject run = {.run_prefix = "airlock/"}, base = {.name = "main"};
  if (al_wfg_judge(pats, n, &run, &r, why, sizeof why) == 0 && !r.some_selected &&
      !r.some_unselected)
    abort(); /* the run branches are never an empty set */
  al_wfg_judge(pats, n, &base, &r, why, sizeof why);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  uint8_t ctl = data[0];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  if (ctl & 0x80) {
    globs(text, len);
    return 0;
  }
  static const char *const paths[3] = {".github/workflows/ci.yml", ".github/workflows/reuse.yml",
                                       ".github/workflows/deploy.yml"};
  al_wf_file files[3];
  size_t n = 0, off = 0;
  while (n < 3 && off <= len) {
    const char *nul = memchr(text + off, '\0', len - off);
    size_t flen = nul ? (size_t)(nul - (text + off)) : len - off;
    files[n] = (al_wf_file){.path = paths[n], .text = text + off, .len = flen};
    n++;
    if (!nul)
      break;
    off += flen + 1;
  }
  static const al_wf_env envs[] = {{"production", true}, {"staging", false}};
  al_wf_repo repo = {
      .run_prefix = "airlock/",
      .base_branch = "main",
      .visibility = (al_wf_visibility)(ctl % 3),
      .default_perms = (al_wf_level)((ctl >> 2) % 3),
      .perms_why = "fuzz",
      .can_approve = ctl & 0x10,
      .files_known = true,
      .files = files,
      .n_files = n,
      .envs_known = ctl & 0x20,
      .envs_why = "fuzz",
      .envs = envs,
      .n_envs = 2,
  };
  al_wf_verdict v[AL_WF_C_N];
  al_wf_judge(&repo, v);
  for (int c = 0; c < AL_WF_C_N; c++) {
    if (!v[c].evidence || (v[c].status != AL_WF_PASS && !v[c].fix))
      abort();
  }
  al_wf_verdicts_free(v);
  return 0;
}
