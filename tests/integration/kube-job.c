/* kube-job: drive the Job runner (src/lib/kube/jobs.h) from a test script,
 * against kubestub.py. Test-only; never installed.
 *
 * usage: kube-job API TOKEN_FILE CA_FILE NAMESPACE JOB_JSON_FILE CONTAINER TIMEOUT_MS
 * Prints one JSON object: {"rc", "error", "phase", "reason", "adopted",
 * "relists", "watches", "timed_out", "deleted", "pod", "log"}; exit 0
 * when it ran (rc says how the run went). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "kube/jobs.h"

int main(int argc, char **argv)
{
  if (argc != 8) {
    fprintf(stderr,
            "usage: kube-job API TOKEN_FILE CA_FILE NS JOB_JSON_FILE CONTAINER TIMEOUT_MS\n");
    return 2;
  }
  al_error err = {0};
  al_kube k;
  if (al_kube_init(&k, argv[1], argv[2], argv[3], 5000, &err) < 0) {
    fprintf(stderr, "kube-job: %s\n", err.msg);
    return 2;
  }
  json_error_t je;
  json_t *job = json_load_file(argv[5], 0, &je);
  if (!job) {
    fprintf(stderr, "kube-job: %s: %s\n", argv[5], je.text);
    return 2;
  }
  char *text = json_dumps(job, JSON_COMPACT);
  json_decref(job);
  al_kube_job_result res;
  int rc = al_kube_job_run(&k, argv[4], text, argv[6], strtoull(argv[7], NULL, 10), &res, &err);
  free(text);
  static const char *const phases[] = {"pending", "running", "succeeded", "failed"};
  json_t *o =
      json_pack("{s:i, s:s, s:s, s:s, s:b, s:i, s:i, s:b, s:b, s:s}", "rc", rc, "error",
                rc < 0 ? err.msg : "", "phase", phases[res.job.phase], "reason", res.job.reason,
                "adopted", res.adopted, "relists", res.relists, "watches", res.watches, "timed_out",
                res.timed_out, "deleted", res.deleted, "pod", res.pod);
  json_object_set_new(o, "log", res.log ? json_stringn(res.log, res.log_len) : json_null());
  char *out = json_dumps(o, JSON_COMPACT);
  puts(out ? out : "{}");
  free(out);
  json_decref(o);
  al_kube_job_result_free(&res);
  return 0;
}
