/* A Job's life as the runner drives it (jobs.h): create or adopt, watch
 * with relist on 410 Gone, read the supervisor's log, delete. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "kube/jobs.h"
#include "kube/kube_int.h"

#define WATCH_LINE_MAX (1u << 20)
#define WATCH_WINDOW_S 60 /* one watch request at most; then watch again */

/* "METHOD PATH: HTTP N (the Status's message)" */
static int api_error(al_error *err, const char *what, long status, const char *buf, size_t len)
{
  char msg[256];
  al_kube_status_message(buf ? buf : "", buf ? len : 0, msg, sizeof msg);
  return al_error_set(err, status == 401 || status == 403 ? EACCES : EIO,
                      "kube: %s: HTTP %ld%s%s%s", what, status, msg[0] ? " (" : "", msg,
                      msg[0] ? ")" : "");
}

static int job_get(const al_kube *k, const char *ns, const char *name, al_kube_job_state *st,
                   al_error *err)
{
  char path[600];
  snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, "GET", path, NULL, &buf, &len, &status, err) < 0)
    return -1;
  int r = status == 200 ? al_kube_job_parse(buf, len, st, err)
                        : api_error(err, "GET the Job", status, buf, len);
  free(buf);
  return r;
}

/* POST the Job: 0 created, 1 adopted (it existed: 409), -1 error. */
static int job_create(const al_kube *k, const char *ns, const char *name, const char *json,
                      al_kube_job_state *st, al_error *err)
{
  char path[600];
  snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs", ns);
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, "POST", path, json, &buf, &len, &status, err) < 0)
    return -1;
  int r;
  if (status == 201 || status == 200)
    r = al_kube_job_parse(buf, len, st, err);
  else if (status == 409)
    r = job_get(k, ns, name, st, err) < 0 ? -1 : 1;
  else
    r = api_error(err, "create the Job", status, buf, len);
  free(buf);
  return r;
}

/* DELETE with propagationPolicy Background (its pods go with it). 0 when
 * accepted or already gone. */
static int job_delete(const al_kube *k, const char *ns, const char *name, al_error *err)
{
  char path[600];
  snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
  static const char opts[] =
      "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}";
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, "DELETE", path, opts, &buf, &len, &status, err) < 0)
    return -1;
  int r = status == 200 || status == 202 || status == 404
              ? 0
              : api_error(err, "delete the Job", status, buf, len);
  free(buf);
  return r;
}

struct watch {
  char *line;
  size_t n;
  int end; /* 0 going, 1 the Job ended, 2 410 Gone, -1 a bad or unexpected event */
  const char *name;
  al_kube_job_state *st;
  al_error *err;
};

static int on_event(struct watch *w, const char *line, size_t n)
{
  al_kube_watch_event ev;
  if (al_kube_watch_event_parse(line, n, &ev, w->err) < 0)
    return -1;
  switch (ev.type) {
  case AL_KWATCH_ERROR:
    if (ev.code == 410)
      return 2;
    return al_error_set(w->err, EIO, "kube: the watch ended with HTTP %d (%s)", ev.code,
                        ev.job.message);
  case AL_KWATCH_BOOKMARK:
    snprintf(w->st->resource_version, sizeof w->st->resource_version, "%s",
             ev.job.resource_version);
    return 0;
  case AL_KWATCH_DELETED:
    return al_error_set(w->err, ECANCELED, "kube: the Job `%s` was deleted before it ended",
                        w->name);
  case AL_KWATCH_ADDED:
  case AL_KWATCH_MODIFIED:
  default:
    if (strcmp(ev.job.name, w->name) != 0)
      return al_error_set(w->err, EINVAL,
                          "kube: the watch of Job `%s` sent an event for `%s` (the field "
                          "selector names one Job)",
                          w->name, ev.job.name);
    *w->st = ev.job;
    return w->st->phase == AL_KJOB_SUCCEEDED || w->st->phase == AL_KJOB_FAILED ? 1 : 0;
  }
}

// NOLINTNEXTLINE(readability-non-const-parameter): libcurl's write callback type
static size_t on_watch_bytes(char *p, size_t sz, size_t nmemb, void *ud)
{
  struct watch *w = ud;
  size_t add = sz * nmemb;
  for (size_t i = 0; i < add; i++) {
    if (p[i] != '\n') {
      if (w->n + 1 >= WATCH_LINE_MAX) {
        w->end = al_error_set(w->err, EINVAL, "kube: a watch event longer than %u bytes",
                              WATCH_LINE_MAX);
        return 0;
      }
      w->line[w->n++] = p[i];
      continue;
    }
    int r = w->n ? on_event(w, w->line, w->n) : 0;
    w->n = 0;
    if (r != 0) {
      w->end = r;
      return 0; /* stop the stream */
    }
  }
  return add;
}

/* One watch request from st->resource_version for at most window_s:
 * 1 the Job ended (st updated), 2 410 Gone, 0 the window closed quietly,
 * -1 with err. */
static int job_watch(const al_kube *k, const char *ns, const char *name, al_kube_job_state *st,
                     long window_s, al_error *err)
{
  char path[900];
  snprintf(path, sizeof path,
           "/apis/batch/v1/namespaces/%s/jobs?watch=1&fieldSelector=metadata.name%%3D%s"
           "&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%ld",
           ns, name, st->resource_version, window_s);
  struct watch w = {.name = name, .st = st, .err = err};
  w.line = malloc(WATCH_LINE_MAX);
  if (!w.line)
    return al_error_set(err, ENOMEM, "kube: the watch buffer");
  long status = 0;
  /* the transfer's own bound: the server's timeoutSeconds and a margin */
  int r =
      al_kube_http(k, "GET", path, NULL, (window_s + 5) * 1000, on_watch_bytes, &w, &status, err);
  if (r >= 0 && status == 410)
    r = 2;
  else if (r >= 0 && (status < 200 || status >= 300))
    r = al_error_set(err, EIO, "kube: watch the Job: HTTP %ld", status);
  else if (r == 2 || (r == 0 && w.end))
    r = w.end; /* the sink's verdict */
  else if (r >= 0)
    r = 0; /* the window closed (timeoutSeconds, or our margin) */
  free(w.line);
  return r;
}

/* The newest pod of the Job, and its `container`'s log (limitBytes). */
static int read_log(const al_kube *k, const char *ns, const char *name, const char *container,
                    al_kube_job_result *res, al_error *err)
{
  char path[900];
  snprintf(path, sizeof path,
           "/api/v1/namespaces/%s/pods?labelSelector=batch.kubernetes.io%%2Fjob-name%%3D%s", ns,
           name);
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, "GET", path, NULL, &buf, &len, &status, err) < 0)
    return -1;
  int r = status == 200 ? al_kube_pod_list_newest(buf, len, res->pod, sizeof res->pod,
                                                  res->pod_phase, sizeof res->pod_phase,
                                                  res->pod_reason, sizeof res->pod_reason, err)
                        : api_error(err, "list the Job's pods", status, buf, len);
  free(buf);
  if (!container)
    return 0; /* no log wanted: the pod's state is a best effort */
  if (r <= 0)
    return r < 0 ? -1 : al_error_set(err, ENOENT, "kube: the Job `%s` has no pod", name);
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/log?container=%s&limitBytes=%u", ns,
           res->pod, container, AL_KUBE_LOG_MAX);
  /* limitBytes keeps the log within the collector's 1 MiB */
  char *log = NULL;
  size_t log_len = 0;
  if (al_kube_get_body(k, "GET", path, NULL, &log, &log_len, &status, err) < 0)
    return -1;
  if (status != 200) {
    free(log);
    return al_error_set(err, EIO, "kube: the log of `%s`: HTTP %ld", res->pod, status);
  }
  res->log = log ? log : strdup("");
  res->log_len = log_len;
  return res->log ? 0 : al_error_set(err, ENOMEM, "kube: the log");
}

/* The Job object the caller gives: batch/v1 Job, its name a DNS name, its
 * namespace (when set) ns. */
static int job_input(const char *ns, const char *job_json, char *name, size_t cap, al_error *err)
{
  json_error_t je;
  json_t *o = json_loads(job_json, JSON_REJECT_DUPLICATES, &je);
  if (!o)
    return al_error_set(err, EINVAL, "kube: the Job to run: not JSON (%s)", je.text);
  json_t *meta = json_object_get(o, "metadata");
  const char *api = json_string_value(json_object_get(o, "apiVersion"));
  const char *kind = json_string_value(json_object_get(o, "kind"));
  const char *n = json_string_value(json_object_get(meta, "name"));
  const char *ons = json_string_value(json_object_get(meta, "namespace"));
  int r = 0;
  if (!api || strcmp(api, "batch/v1") != 0 || !kind || strcmp(kind, "Job") != 0)
    r = al_error_set(err, EINVAL, "kube: the Job to run: apiVersion batch/v1, kind Job expected");
  else if (!n || !al_kube_name_ok(n) || strlen(n) > 63)
    r = al_error_set(err, EINVAL, "kube: the Job to run: metadata.name must be a DNS label");
  else if (json_object_get(meta, "namespace") && (!ons || strcmp(ons, ns) != 0))
    r = al_error_set(err, EINVAL, "kube: the Job to run: metadata.namespace is not `%s`", ns);
  else
    snprintf(name, cap, "%s", n);
  json_decref(o);
  return r;
}

int al_kube_job_run(const al_kube *k, const char *ns, const char *job_json, const char *container,
                    uint64_t timeout_ms, al_kube_job_result *res, al_error *err)
{
  memset(res, 0, sizeof *res);
  char name[64];
  if (!al_kube_name_ok(ns) || (container && !al_kube_name_ok(container)))
    return al_error_set(err, EINVAL, "kube: namespace `%s` / container `%s`: not DNS names", ns,
                        container ? container : "");
  if (job_input(ns, job_json, name, sizeof name, err) < 0)
    return -1;
  uint64_t end = al_now_ms() + timeout_ms;
  al_kube_job_state *st = &res->job;
  int c = job_create(k, ns, name, job_json, st, err);
  if (c < 0)
    return -1;
  res->adopted = c == 1;
  int r = 0;
  while (st->phase != AL_KJOB_SUCCEEDED && st->phase != AL_KJOB_FAILED) {
    uint64_t now = al_now_ms();
    if (now >= end) {
      res->timed_out = 1;
      r = al_error_set(err, ETIMEDOUT, "kube: the Job `%s` did not end within %llu ms", name,
                       (unsigned long long)timeout_ms);
      break;
    }
    long left_s = (long)((end - now + 999) / 1000);
    res->watches++;
    int w = job_watch(k, ns, name, st, left_s < WATCH_WINDOW_S ? left_s : WATCH_WINDOW_S, err);
    if (w < 0) {
      r = -1;
      break;
    }
    if (w == 2) { /* 410 Gone: the version is too old; read the Job afresh */
      res->relists++;
      if (job_get(k, ns, name, st, err) < 0) {
        r = -1;
        break;
      }
    }
  }
  al_error lerr = {0}; /* without a container the pod's state is a best effort */
  if (r == 0 && read_log(k, ns, name, container, res, container ? err : &lerr) < 0 && container)
    r = -1;
  al_error derr = {0};
  if (job_delete(k, ns, name, &derr) == 0)
    res->deleted = 1;
  else if (r == 0)
    r = al_error_set(err, derr.code, "%s (the Job ended; ttlSecondsAfterFinished removes it)",
                     derr.msg);
  return r;
}

void al_kube_job_result_free(al_kube_job_result *res)
{
  free(res->log);
  res->log = NULL;
  res->log_len = 0;
}
