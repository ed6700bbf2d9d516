/* libFuzzer target: the GitLab audit's .gitlab-ci.yml reader
 * (src/lib/forge/gitlab_ci.c). The CI file is repository content: whoever
 * may push to the target branch writes it. Input: one control byte (bit 0:
 * the run branches protected; bit 1: another run prefix), then the file.
 * With bit 7 set the rest is a GitLab regular expression judged against a
 * run branch instead. Invariants: a readable file names each job and says
 * how it runs; an unreadable one says why; the answers are one of the three;
 * nothing leaks (LeakSanitizer); nothing runs unbounded (libFuzzer's
 * -timeout: deep parentheses, extends chains, repeats of repeats). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forge/gitlab_ci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > (1u << 16))
    return 0;
  uint8_t ctl = data[0];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  if (ctl & 0x80) {
    char *re = malloc(len + 1);
    if (!re)
      return 0;
    memcpy(re, text, len);
    re[len] = '\0';
    int m = al_glci_regex_match(re, "airlock/7-0123abcd");
    if (m != AL_GLCI_NO && m != AL_GLCI_YES && m != AL_GLCI_MAYBE)
      abort();
    free(re);
    return 0;
  }
  al_glci_ctx ctx = {.run_prefix = (ctl & 2) ? "bots/air/" : "airlock/",
                     .target_branch = "main",
                     .default_branch = "main",
                     .run_protected = (ctl & 1) != 0};
  al_glci g;
  al_glci_read(&ctx, ".gitlab-ci.yml", text, len, &g);
  if (g.broken && (!g.why[0] || g.n_jobs))
    abort();
  for (size_t i = 0; i < g.n_jobs; i++) {
    const al_glci_job *j = &g.jobs[i];
    if (!j->name || !j->how[0] || j->push < 0 || j->push > 2 || j->mr < 0 || j->mr > 2)
      abort();
  }
  al_glci_free(&g);
  return 0;
}
