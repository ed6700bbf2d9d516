/* A run as a Kubernetes Job (issue #32): the objects' wire form read from
 * the API server (pure, fuzzed: jobwire.c) and the Job's life as the
 * runner drives it (jobs.c): create, watch to its end, read the
 * supervisor container's log, delete.
 *
 * Sources: Kubernetes API reference, "Job v1 batch" (status.conditions:
 * Complete / Failed with status "True"; active, succeeded, failed),
 * "Pod v1 core" (status.phase), "WatchEvent v1 meta" (type ADDED,
 * MODIFIED, DELETED, BOOKMARK, ERROR; an ERROR's object is a Status);
 * "API Concepts": efficient detection of changes (watch from the
 * resourceVersion a GET or list returned; 410 Gone when that version is
 * too old: relist, then watch again), "Watch bookmarks"; "DeleteOptions
 * v1 meta" (propagationPolicy Background). Everything the API server
 * sends is untrusted: bounded, typed, and refused with the rule it broke. */
#ifndef AL_KUBE_JOBS_H
#define AL_KUBE_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "kube/kube.h"

typedef enum {
  AL_KJOB_PENDING = 0, /* no pod active yet, no end condition */
  AL_KJOB_RUNNING,     /* status.active > 0 */
  AL_KJOB_SUCCEEDED,   /* condition Complete: True */
  AL_KJOB_FAILED, /* condition Failed: True (reason: BackoffLimitExceeded, DeadlineExceeded…) */
} al_kube_job_phase;

/* What the runner reads of a Job. Text fields are printable ASCII. */
typedef struct al_kube_job_state {
  char name[254];            /* metadata.name (a DNS subdomain) */
  char uid[64];              /* metadata.uid, "" when absent */
  char resource_version[64]; /* metadata.resourceVersion */
  al_kube_job_phase phase;
  char reason[128];  /* the end condition's reason, "" otherwise */
  char message[256]; /* its message, control bytes replaced by '?' */
  int64_t active, succeeded, failed;
} al_kube_job_state;

/* Read a Job object (JSON). Strict: kind Job (or absent inside a watch
 * event whose caller checked it), metadata.name and resourceVersion
 * strings of their charset and size, the counts integers from 0 to
 * INT32_MAX, conditions an array of objects. 0, or -1 with EINVAL and the
 * rule broken. */
int al_kube_job_parse(const char *buf, size_t len, al_kube_job_state *out, al_error *err);

typedef enum {
  AL_KWATCH_ADDED = 0,
  AL_KWATCH_MODIFIED,
  AL_KWATCH_DELETED,
  AL_KWATCH_BOOKMARK,
  AL_KWATCH_ERROR,
} al_kube_watch_type;

/* One watch event: one line of the watch stream (the API server writes
 * one JSON object per line). For ADDED/MODIFIED/DELETED, job is the Job;
 * for BOOKMARK only job.resource_version is set; for ERROR, code is the
 * Status's code (410 when the resourceVersion is too old) and
 * job.message its message. 0, or -1 with EINVAL. */
typedef struct al_kube_watch_event {
  al_kube_watch_type type;
  int code;
  al_kube_job_state job;
} al_kube_watch_event;

int al_kube_watch_event_parse(const char *line, size_t len, al_kube_watch_event *ev, al_error *err);

/* From a PodList (GET pods?labelSelector=…): the newest pod's name (by
 * metadata.creationTimestamp, RFC 3339 text compared as text), its
 * status.phase ("Pending", "Running", "Succeeded", "Failed", "Unknown")
 * and status.reason (NodeLost, Evicted…; "" when absent; control bytes
 * replaced by '?', cut to reasonsz-1). 1 with a pod, 0 when the list is
 * empty, -1 with EINVAL. */
int al_kube_pod_list_newest(const char *buf, size_t len, char *pod, size_t podsz, char *phase,
                            size_t phasesz, char *reason, size_t reasonsz, al_error *err);

/* ---- the Job's life (jobs.c; libcurl) ---- */

typedef struct al_kube_job_result {
  al_kube_job_state job; /* the last state seen */
  int adopted;           /* 1 when the Job existed already (409) and was adopted */
  int relists;           /* how many times a watch met 410 Gone and the runner relisted */
  int watches;           /* watch requests made */
  int timed_out;         /* 1 when the deadline passed before the Job ended */
  int deleted;           /* 1 when the delete was accepted (200/202) or the Job was gone (404) */
  char pod[254];         /* the Job's newest pod (whose log was read), "" when none */
  char pod_phase[16];    /* its status.phase, "" when none */
  char pod_reason[128];  /* its status.reason (NodeLost, Evicted…), "" when none */
  char *log; /* malloc'd: the `container`'s log (at most AL_KUBE_LOG_MAX bytes), or NULL */
  size_t log_len;
} al_kube_job_result;

#define AL_KUBE_LOG_MAX (1u << 20) /* the collector's bound (kube_int.h: 1 MiB) */

/* Run the Job `job_json` (a batch/v1 Job object; its metadata.name and
 * metadata.namespace name it, and the namespace must equal `ns`) to its
 * end: POST it (409 AlreadyExists: adopt the Job of that name, as a
 * standby leader after a leader's death must), GET it for a
 * resourceVersion, watch it from there (a 410 Gone or an ERROR event:
 * GET again and watch again; a watch that ends quietly: watch again),
 * until its Complete or Failed condition or until timeout_ms (measured
 * with al_now_ms) has passed. Then read the log of `container` in the
 * Job's newest pod (the supervisor's own output, never the agent's;
 * container NULL: no log is read, and a pod list that fails is not an
 * error), res->pod_phase and pod_reason from that list, and
 * DELETE the Job with propagationPolicy Background, on every path that
 * created or adopted it, the deadline's included.
 * Returns 0 with *res filled (res->job.phase SUCCEEDED or FAILED), or -1
 * with err: ETIMEDOUT at the deadline (res->timed_out), EINVAL for a
 * malformed object from the server or a bad job_json, EIO for the network.
 * The caller frees res->log with al_kube_job_result_free. */
int al_kube_job_run(const al_kube *k, const char *ns, const char *job_json, const char *container,
                    uint64_t timeout_ms, al_kube_job_result *res, al_error *err);

void al_kube_job_result_free(al_kube_job_result *res);

/* The run's other objects (objects.c): a ConfigMap, Service (v1),
 * Deployment (apps/v1), NetworkPolicy (networking.k8s.io/v1) or Job
 * (batch/v1) as JSON, created in namespace ns (its metadata.namespace,
 * when set, must be ns): 0 created, 1 it existed (409 AlreadyExists: a
 * leader that died made it; adopted as it is), -1 with err (EINVAL for an
 * object of another kind or without a DNS name, EACCES for 401/403, EIO
 * otherwise, the Status's message named). */
int al_kube_object_create(const al_kube *k, const char *ns, const char *json, al_error *err);

/* DELETE the object with propagationPolicy Background: 0 when accepted or
 * already gone (404), -1 with err. */
int al_kube_object_delete(const al_kube *k, const char *ns, const char *api, const char *kind,
                          const char *name, al_error *err);

/* The message of a Status object (the API server's error body), printable
 * ASCII, cut to cap-1 bytes; "" when buf is not a Status. */
void al_kube_status_message(const char *buf, size_t len, char *out, size_t cap);

#endif
