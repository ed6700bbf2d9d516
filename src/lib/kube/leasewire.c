/* The Lease object's wire form (Kubernetes API reference, "Lease v1
 * coordination.k8s.io"; MicroTime is RFC 3339 with microseconds). Pure:
 * no I/O, fuzzed by tests/fuzz/fuzz_lease.c. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"

#define MAX_BODY (1u << 20)

/* A string field: printable ASCII, at most cap-1 bytes, `allow` extra
 * characters beyond [A-Za-z0-9] (NULL: any printable but space). */
static int text_field(json_t *v, const char *name, const char *allow, char *out, size_t cap,
                      al_error *err)
{
  if (!v || json_is_null(v)) {
    out[0] = '\0';
    return 0;
  }
  if (!json_is_string(v))
    return al_error_set(err, EINVAL, "Lease: %s: not a string", name);
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if (n >= cap)
    return al_error_set(err, EINVAL, "Lease: %s: longer than %zu bytes", name, cap - 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum)
      continue;
    if (allow ? (c == '\0' || !strchr(allow, c)) : (c <= 0x20 || c >= 0x7f))
      return al_error_set(err, EINVAL, "Lease: %s: character 0x%02x not allowed", name, c);
  }
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

static int int_field(json_t *v, const char *name, int64_t min, int64_t max, int64_t *out,
                     al_error *err)
{
  if (!v || json_is_null(v)) {
    *out = 0;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
    return al_error_set(err, EINVAL, "Lease: %s: not an integer from %lld to %lld", name,
                        (long long)min, (long long)max);
  *out = (int64_t)json_integer_value(v);
  return 0;
}

int al_kube_lease_parse(const char *buf, size_t len, al_kube_lease *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  if (len > MAX_BODY)
    return al_error_set(err, EINVAL, "Lease: body larger than %u bytes", MAX_BODY);
  json_error_t je;
  json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return al_error_set(err, EINVAL, "Lease: not JSON (%s at line %d)", je.text, je.line);
  int r = -1;
  json_t *kind = json_object_get(root, "kind");
  json_t *meta = json_object_get(root, "metadata");
  json_t *spec = json_object_get(root, "spec");
  if (!json_is_object(root) || !json_is_string(kind) || strcmp(json_string_value(kind), "Lease")) {
    al_error_set(err, EINVAL, "Lease: not an object of kind Lease");
    goto out;
  }
  if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "resourceVersion"))) {
    al_error_set(err, EINVAL, "Lease: metadata.resourceVersion missing");
    goto out;
  }
  if (spec && !json_is_object(spec) && !json_is_null(spec)) {
    al_error_set(err, EINVAL, "Lease: spec: not an object");
    goto out;
  }
  if (!json_is_object(spec))
    spec = NULL;
  if (text_field(json_object_get(meta, "resourceVersion"), "metadata.resourceVersion", NULL,
                 out->resource_version, sizeof out->resource_version, err) < 0)
    goto out;
  if (!out->resource_version[0]) {
    al_error_set(err, EINVAL, "Lease: metadata.resourceVersion: empty");
    goto out;
  }
  if (spec && (text_field(json_object_get(spec, "holderIdentity"), "spec.holderIdentity", "-._:@/",
                          out->holder, sizeof out->holder, err) < 0 ||
               text_field(json_object_get(spec, "acquireTime"), "spec.acquireTime", "-:.TZ+",
                          out->acquire_time, sizeof out->acquire_time, err) < 0 ||
               text_field(json_object_get(spec, "renewTime"), "spec.renewTime", "-:.TZ+",
                          out->renew_time, sizeof out->renew_time, err) < 0 ||
               int_field(json_object_get(spec, "leaseDurationSeconds"), "spec.leaseDurationSeconds",
                         0, INT32_MAX, &out->duration_s, err) < 0 ||
               int_field(json_object_get(spec, "leaseTransitions"), "spec.leaseTransitions", 0,
                         INT32_MAX, &out->transitions, err) < 0))
    goto out;
  r = 0;
out:
  json_decref(root);
  return r;
}

char *al_kube_lease_json(const char *ns, const char *name, const al_kube_lease *l)
{
  json_t *meta = json_pack("{s:s, s:s}", "name", name, "namespace", ns);
  if (l->resource_version[0])
    json_object_set_new(meta, "resourceVersion", json_string(l->resource_version));
  json_t *spec =
      json_pack("{s:s, s:I, s:I}", "holderIdentity", l->holder, "leaseDurationSeconds",
                (json_int_t)l->duration_s, "leaseTransitions", (json_int_t)l->transitions);
  if (l->acquire_time[0])
    json_object_set_new(spec, "acquireTime", json_string(l->acquire_time));
  if (l->renew_time[0])
    json_object_set_new(spec, "renewTime", json_string(l->renew_time));
  json_t *o = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                        "Lease", "metadata", meta, "spec", spec);
  char *s = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return s;
}

void al_kube_micro_time(uint64_t now_ms, char *out, size_t outsz)
{
  time_t t = (time_t)(now_ms / 1000);
  struct tm tm;
  char base[32] = "1970-01-01T00:00:00";
  if (gmtime_r(&t, &tm))
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, outsz, "%s.%06uZ", base, (unsigned)(now_ms % 1000) * 1000u);
}
