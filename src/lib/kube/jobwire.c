/* The Job, watch event and PodList wire forms (jobs.h). Pure: no I/O,
 * fuzzed by tests/fuzz/fuzz_kube_job.c. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kube/jobs.h"

#define MAX_BODY (4u << 20)
#define NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-."

/* A string member: printable ASCII without space, at most cap-1 bytes,
 * only `allow` besides [A-Za-z0-9] when allow is not NULL. Absent or null
 * is "". */
static int text(const json_t *o, const char *key, const char *what, const char *allow, char *out,
                size_t cap, al_error *err)
{
  out[0] = '\0';
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return al_error_set(err, EINVAL, "%s.%s: not a string", what, key);
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if (n >= cap)
    return al_error_set(err, EINVAL, "%s.%s: longer than %zu bytes", what, key, cap - 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum)
      continue;
    if (allow ? (c == '\0' || !strchr(allow, c)) : (c <= 0x20 || c >= 0x7f))
      return al_error_set(err, EINVAL, "%s.%s: character 0x%02x not allowed", what, key, c);
  }
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

/* A DNS subdomain as object names are (RFC 1123, lower case): text()
 * lets any letter through, so the case is checked here. */
static bool dns_name(const char *s)
{
  return s[0] && strspn(s, NAME_CHARS) == strlen(s);
}

/* A human message: kept, each byte outside printable ASCII replaced by '?'
 * and cut to cap-1 bytes (it is shown, never parsed). */
static void message(const json_t *o, const char *key, char *out, size_t cap)
{
  out[0] = '\0';
  const char *s = json_string_value(json_object_get(o, key));
  if (!s)
    return;
  size_t n = 0;
  for (; s[n] && n + 1 < cap; n++) {
    unsigned char c = (unsigned char)s[n];
    if (c < 0x20 || c >= 0x7f)
      out[n] = '?';
    else
      out[n] = s[n];
  }
  out[n] = '\0';
}

static int count(const json_t *o, const char *key, int64_t *out, al_error *err)
{
  *out = 0;
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
    return al_error_set(err, EINVAL, "Job: status.%s: not an integer from 0 to %d", key, INT32_MAX);
  *out = (int64_t)json_integer_value(v);
  return 0;
}

static json_t *load(const char *buf, size_t len, const char *what, al_error *err)
{
  if (len > MAX_BODY) {
    al_error_set(err, EINVAL, "%s: larger than %u bytes", what, MAX_BODY);
    return NULL;
  }
  json_error_t je;
  json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    al_error_set(err, EINVAL, "%s: not JSON (%s at line %d)", what, je.text, je.line);
    return NULL;
  }
  if (!json_is_object(root)) {
    json_decref(root);
    al_error_set(err, EINVAL, "%s: not a JSON object", what);
    return NULL;
  }
  return root;
}

/* The end condition: the first of Complete/Failed whose status is "True". */
static int conditions(const json_t *status, al_kube_job_state *out, al_error *err)
{
  json_t *cs = json_object_get(status, "conditions");
  if (!cs || json_is_null(cs))
    return 0;
  if (!json_is_array(cs))
    return al_error_set(err, EINVAL, "Job: status.conditions: not an array");
  size_t i;
  json_t *c;
  json_array_foreach(cs, i, c)
  {
    if (!json_is_object(c))
      return al_error_set(err, EINVAL, "Job: status.conditions[%zu]: not an object", i);
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *st = json_string_value(json_object_get(c, "status"));
    if (!type || !st)
      return al_error_set(err, EINVAL,
                          "Job: status.conditions[%zu]: type and status must be strings", i);
    if (strcmp(st, "True") != 0)
      continue;
    bool done = strcmp(type, "Complete") == 0, failed = strcmp(type, "Failed") == 0;
    if (!done && !failed)
      continue;
    out->phase = done ? AL_KJOB_SUCCEEDED : AL_KJOB_FAILED;
    if (text(c, "reason", "Job: status.conditions[].reason", NULL, out->reason, sizeof out->reason,
             err) < 0)
      return -1;
    message(c, "message", out->message, sizeof out->message);
    return 0;
  }
  return 0;
}

static int job_of(const json_t *o, bool need_kind, al_kube_job_state *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  const char *kind = json_string_value(json_object_get(o, "kind"));
  if ((need_kind || kind) && (!kind || strcmp(kind, "Job") != 0))
    return al_error_set(err, EINVAL, "Job: kind is `%.32s`, not Job", kind ? kind : "(none)");
  json_t *meta = json_object_get(o, "metadata");
  if (!json_is_object(meta))
    return al_error_set(err, EINVAL, "Job: metadata: not an object");
  if (text(meta, "name", "Job: metadata", NAME_CHARS, out->name, sizeof out->name, err) < 0 ||
      text(meta, "uid", "Job: metadata", "-", out->uid, sizeof out->uid, err) < 0 ||
      text(meta, "resourceVersion", "Job: metadata", NULL, out->resource_version,
           sizeof out->resource_version, err) < 0)
    return -1;
  if (!out->name[0] || !out->resource_version[0])
    return al_error_set(err, EINVAL,
                        "Job: metadata.name and metadata.resourceVersion are required");
  if (!dns_name(out->name))
    return al_error_set(err, EINVAL, "Job: metadata.name: not a DNS subdomain (lower case)");
  json_t *st = json_object_get(o, "status");
  if (st && !json_is_null(st) && !json_is_object(st))
    return al_error_set(err, EINVAL, "Job: status: not an object");
  if (!json_is_object(st))
    return 0;
  if (count(st, "active", &out->active, err) < 0 ||
      count(st, "succeeded", &out->succeeded, err) < 0 ||
      count(st, "failed", &out->failed, err) < 0 || conditions(st, out, err) < 0)
    return -1;
  if (out->phase == AL_KJOB_PENDING && out->active > 0)
    out->phase = AL_KJOB_RUNNING;
  return 0;
}

int al_kube_job_parse(const char *buf, size_t len, al_kube_job_state *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  json_t *root = load(buf, len, "Job", err);
  if (!root)
    return -1;
  int r = job_of(root, true, out, err);
  json_decref(root);
  return r;
}

int al_kube_watch_event_parse(const char *line, size_t len, al_kube_watch_event *ev, al_error *err)
{
  memset(ev, 0, sizeof *ev);
  json_t *root = load(line, len, "watch event", err);
  if (!root)
    return -1;
  int r = -1;
  static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
  const char *type = json_string_value(json_object_get(root, "type"));
  json_t *obj = json_object_get(root, "object");
  size_t t = 0;
  while (type && t < sizeof types / sizeof types[0] && strcmp(type, types[t]) != 0)
    t++;
  if (!type || t == sizeof types / sizeof types[0]) {
    al_error_set(err, EINVAL,
                 "watch event: type `%.32s` is not one of ADDED, MODIFIED, DELETED, "
                 "BOOKMARK, ERROR",
                 type ? type : "(none)");
    goto out;
  }
  if (!json_is_object(obj)) {
    al_error_set(err, EINVAL, "watch event: object: not an object");
    goto out;
  }
  ev->type = (al_kube_watch_type)t;
  if (ev->type == AL_KWATCH_ERROR) {
    json_t *code = json_object_get(obj, "code");
    if (!json_is_integer(code) || json_integer_value(code) < 100 ||
        json_integer_value(code) > 599) {
      al_error_set(err, EINVAL, "watch event: an ERROR's Status.code must be an HTTP status");
      goto out;
    }
    ev->code = (int)json_integer_value(code);
    message(obj, "message", ev->job.message, sizeof ev->job.message);
    r = 0;
  } else if (ev->type == AL_KWATCH_BOOKMARK) {
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
      al_error_set(err, EINVAL, "watch event: a BOOKMARK needs metadata");
      goto out;
    }
    r = text(meta, "resourceVersion", "watch event: BOOKMARK metadata", NULL,
             ev->job.resource_version, sizeof ev->job.resource_version, err);
    if (r == 0 && !ev->job.resource_version[0])
      r = al_error_set(err, EINVAL, "watch event: a BOOKMARK without a resourceVersion");
  } else {
    r = job_of(obj, false, &ev->job, err);
  }
out:
  json_decref(root);
  return r;
}

int al_kube_pod_list_newest(const char *buf, size_t len, char *pod, size_t podsz, char *phase,
                            size_t phasesz, char *reason, size_t reasonsz, al_error *err)
{
  pod[0] = phase[0] = reason[0] = '\0';
  json_t *root = load(buf, len, "PodList", err);
  if (!root)
    return -1;
  int r = -1;
  const char *kind = json_string_value(json_object_get(root, "kind"));
  json_t *items = json_object_get(root, "items");
  if (!kind || strcmp(kind, "PodList") != 0 || !json_is_array(items)) {
    al_error_set(err, EINVAL, "PodList: kind PodList with an items array expected");
    goto out;
  }
  char best_ts[40] = "";
  size_t i;
  json_t *p;
  json_array_foreach(items, i, p)
  {
    json_t *meta = json_object_get(p, "metadata");
    json_t *st = json_object_get(p, "status");
    char name[254], ts[40], ph[16], why[256] = "";
    if (!json_is_object(p) || !json_is_object(meta)) {
      al_error_set(err, EINVAL, "PodList: items[%zu]: an object with metadata expected", i);
      goto out;
    }
    if (text(meta, "name", "Pod: metadata", NAME_CHARS, name, sizeof name, err) < 0 ||
        text(meta, "creationTimestamp", "Pod: metadata", "-:.TZ+", ts, sizeof ts, err) < 0 ||
        (json_is_object(st) && text(st, "phase", "Pod: status", NULL, ph, sizeof ph, err) < 0))
      goto out;
    if (!json_is_object(st))
      ph[0] = '\0';
    else /* status.reason (NodeLost, Evicted...) and message: free text */
      message(st, "reason", why, sizeof why);
    if (!dns_name(name)) {
      al_error_set(err, EINVAL, "PodList: items[%zu]: metadata.name: not a DNS subdomain", i);
      goto out;
    }
    if (!pod[0] || strcmp(ts, best_ts) >= 0) {
      snprintf(best_ts, sizeof best_ts, "%s", ts);
      snprintf(pod, podsz, "%s", name);
      snprintf(phase, phasesz, "%s", ph);
      snprintf(reason, reasonsz, "%s", why);
    }
  }
  r = pod[0] ? 1 : 0;
out:
  json_decref(root);
  return r;
}

void al_kube_status_message(const char *buf, size_t len, char *out, size_t cap)
{
  out[0] = '\0';
  al_error e = {0};
  json_t *root = load(buf, len, "Status", &e);
  if (!root)
    return;
  const char *kind = json_string_value(json_object_get(root, "kind"));
  if (kind && strcmp(kind, "Status") == 0)
    message(root, "message", out, cap);
  json_decref(root);
}
