/* libFuzzer target: the readers of Job objects, watch events, PodLists and
 * Status messages from the Kubernetes API server (src/lib/kube/jobwire.c,
 * the Job runner of issue #32). Invariants: nothing crashes; an accepted
 * Job has a non-empty name of DNS characters and a resourceVersion; every
 * text field is NUL-terminated within its buffer and printable; counts are
 * within 0..INT32_MAX; an accepted ERROR event has an HTTP status code. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/jobs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const char *s, size_t cap, int allow_space)
{
  size_t n = strnlen(s, cap);
  if (n == cap)
    abort();
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < (allow_space ? 0x20 : 0x21) || (unsigned char)s[i] >= 0x7f)
      abort();
}

static void job_ok(const al_kube_job_state *j)
{
  printable(j->name, sizeof j->name, 0);
  printable(j->uid, sizeof j->uid, 0);
  printable(j->resource_version, sizeof j->resource_version, 0);
  printable(j->reason, sizeof j->reason, 0);
  printable(j->message, sizeof j->message, 1);
  if (j->active < 0 || j->active > INT32_MAX || j->succeeded < 0 || j->failed < 0 ||
      j->phase > AL_KJOB_FAILED)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *buf = (const char *)data;
  al_error err = {0};
  al_kube_job_state j;
  if (al_kube_job_parse(buf, size, &j, &err) == 0) {
    job_ok(&j);
    if (!j.name[0] || !j.resource_version[0] ||
        strspn(j.name, "abcdefghijklmnopqrstuvwxyz0123456789-.") != strlen(j.name))
      abort();
  }
  al_kube_watch_event ev;
  if (al_kube_watch_event_parse(buf, size, &ev, &err) == 0) {
    job_ok(&ev.job);
    if (ev.type == AL_KWATCH_ERROR && (ev.code < 100 || ev.code > 599))
      abort();
    if (ev.type == AL_KWATCH_BOOKMARK && !ev.job.resource_version[0])
      abort();
  }
  char pod[254], phase[16], reason[128];
  int r = al_kube_pod_list_newest(buf, size, pod, sizeof pod, phase, sizeof phase, reason,
                                  sizeof reason, &err);
  if (r == 1) {
    printable(pod, sizeof pod, 0);
    printable(phase, sizeof phase, 0);
    printable(reason, sizeof reason, 1);
    if (!pod[0])
      abort();
  }
  char msg[256];
  al_kube_status_message(buf, size, msg, sizeof msg);
  printable(msg, sizeof msg, 1);
  return 0;
}
