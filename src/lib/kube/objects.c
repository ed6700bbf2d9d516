/* The per-run objects beside the Job (jobs.h): create (409 AlreadyExists:
 * adopted) and delete by apiVersion and kind, for the few kinds a run's
 * manifests hold. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/jobs.h"
#include "kube/kube_int.h"

/* apiVersion + kind -> the collection's path prefix and resource. */
static const struct {
  const char *api, *kind, *prefix, *plural;
} kinds[] = {
    {"v1", "ConfigMap", "/api/v1", "configmaps"},
    {"v1", "Service", "/api/v1", "services"},
    {"apps/v1", "Deployment", "/apis/apps/v1", "deployments"},
    {"networking.k8s.io/v1", "NetworkPolicy", "/apis/networking.k8s.io/v1", "networkpolicies"},
    {"batch/v1", "Job", "/apis/batch/v1", "jobs"},
};

static int kind_path(const char *api, const char *kind, const char *ns, const char *name, char *out,
                     size_t cap, al_error *err)
{
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(kinds[i].api, api) && !strcmp(kinds[i].kind, kind)) {
      snprintf(out, cap, "%s/namespaces/%s/%s%s%s", kinds[i].prefix, ns, kinds[i].plural,
               name ? "/" : "", name ? name : "");
      return 0;
    }
  return al_error_set(err, EINVAL, "kube: %s %s: not a kind a run's objects hold", api, kind);
}

int al_kube_object_create(const al_kube *k, const char *ns, const char *json, al_error *err)
{
  json_error_t je;
  json_t *o = json_loads(json, JSON_REJECT_DUPLICATES, &je);
  if (!o)
    return al_error_set(err, EINVAL, "kube: the object to create: not JSON (%s)", je.text);
  const char *api = json_string_value(json_object_get(o, "apiVersion"));
  const char *kind = json_string_value(json_object_get(o, "kind"));
  json_t *meta = json_object_get(o, "metadata");
  const char *name = json_string_value(json_object_get(meta, "name"));
  const char *ons = json_string_value(json_object_get(meta, "namespace"));
  char path[600], what[400];
  int r = 0;
  if (!api || !kind || !name || !al_kube_name_ok(name) || !al_kube_name_ok(ns))
    r = al_error_set(err, EINVAL,
                     "kube: the object to create needs apiVersion, kind and a DNS metadata.name");
  else if (ons && strcmp(ons, ns) != 0)
    r = al_error_set(err, EINVAL, "kube: %s `%s`: metadata.namespace is not `%s`", kind, name, ns);
  else
    r = kind_path(api, kind, ns, NULL, path, sizeof path, err);
  if (r == 0)
    snprintf(what, sizeof what, "create %s `%s`", kind, name);
  json_decref(o);
  if (r < 0)
    return -1;
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, "POST", path, json, &buf, &len, &status, err) < 0)
    return -1;
  if (status == 200 || status == 201)
    r = 0;
  else if (status == 409)
    r = 1;
  else {
    char msg[256];
    al_kube_status_message(buf ? buf : "", buf ? len : 0, msg, sizeof msg);
    r = al_error_set(err, status == 401 || status == 403 ? EACCES : EIO, "kube: %s: HTTP %ld%s%s%s",
                     what, status, msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
  }
  free(buf);
  return r;
}

int al_kube_object_delete(const al_kube *k, const char *ns, const char *api, const char *kind,
                          const char *name, al_error *err)
{
  char path[600];
  if (!al_kube_name_ok(ns) || !al_kube_name_ok(name))
    return al_error_set(err, EINVAL, "kube: delete %s `%s`: not a DNS name", kind, name);
  if (kind_path(api, kind, ns, name, path, sizeof path, err) < 0)
    return -1;
  static const char opts[] =
      "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}";
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, "DELETE", path, opts, &buf, &len, &status, err) < 0)
    return -1;
  int r = 0;
  if (status != 200 && status != 202 && status != 404) {
    char msg[256];
    al_kube_status_message(buf ? buf : "", buf ? len : 0, msg, sizeof msg);
    r = al_error_set(err, EIO, "kube: delete %s `%s`: HTTP %ld%s%s%s", kind, name, status,
                     msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
  }
  free(buf);
  return r;
}
