/* A small client of the Kubernetes API for `airlock serve`'s leader
 * election: a coordination.k8s.io/v1 Lease, read, created and updated
 * with the API's optimistic concurrency (an update carries the
 * metadata.resourceVersion it read; the API server answers 409 Conflict
 * when the object changed since). Spec: Kubernetes API reference, "Lease
 * v1 coordination.k8s.io" and "API Concepts: resource versions";
 * in-cluster access: "Accessing the Kubernetes API from a Pod" (the
 * service account's token, ca.crt and namespace files).
 *
 * Nothing here keeps the token: each request reads the token file afresh
 * (the kubelet rotates projected tokens), hands it to libcurl as a bearer
 * token and wipes its copy. */
#ifndef AL_KUBE_H
#define AL_KUBE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define AL_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* A Lease as the election needs it (the fields of LeaseSpec it uses).
 * Times are MicroTime text, RFC 3339 with microseconds in UTC
 * ("2026-12-01T11:00:00.000000Z"), "" when absent. */
typedef struct al_kube_lease {
  char resource_version[64]; /* metadata.resourceVersion ("" for a create) */
  char holder[254];          /* spec.holderIdentity, "" when none */
  int64_t duration_s;        /* spec.leaseDurationSeconds, 0 when absent */
  char acquire_time[40];     /* spec.acquireTime */
  char renew_time[40];       /* spec.renewTime */
  int64_t transitions;       /* spec.leaseTransitions */
} al_kube_lease;

/* Read a Lease object (JSON from the API server: hostile bytes). Strict:
 * kind Lease, metadata.resourceVersion a string, every spec field it uses
 * of its type and within its bounds. -1 with EINVAL and the rule broken. */
int al_kube_lease_parse(const char *buf, size_t len, al_kube_lease *out, al_error *err);

/* The Lease object for a create or an update, as a malloc'd JSON string
 * (metadata.resourceVersion only when set). */
char *al_kube_lease_json(const char *ns, const char *name, const al_kube_lease *l);

/* now (ms since the epoch) as MicroTime text (out: >= 40 bytes). */
void al_kube_micro_time(uint64_t now_ms, char *out, size_t outsz);

typedef struct al_kube {
  char api[256];        /* "https://HOST:PORT" (no trailing '/') */
  char token_file[512]; /* the bearer token, re-read per request */
  char ca_file[512];    /* the CA bundle the API server's certificate must chain to */
  long timeout_ms;      /* per request, connect included */
} al_kube;

/* Fill k for in-cluster use: api from KUBERNETES_SERVICE_HOST/PORT when
 * `api` is NULL or "", token and CA in `sa_dir` (NULL: AL_KUBE_SA_DIR)
 * unless token_file/ca_file are given. -1 with EINVAL when no API address
 * is known or it is not https. */
int al_kube_init(al_kube *k, const char *api, const char *token_file, const char *ca_file,
                 long timeout_ms, al_error *err);

/* GET, POST (create) and PUT (update) of the Lease NAME in namespace NS
 * (/apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]). Return the
 * HTTP status (200, 201, 404 Not Found, 409 Conflict/AlreadyExists, ...)
 * with *out filled from the body on 200/201; -1 with err when the request
 * could not be made (network, TLS, token file) or a 2xx body does not
 * parse. */
int al_kube_lease_get(const al_kube *k, const char *ns, const char *name, al_kube_lease *out,
                      al_error *err);
int al_kube_lease_create(const al_kube *k, const char *ns, const char *name,
                         const al_kube_lease *in, al_kube_lease *out, al_error *err);
int al_kube_lease_update(const al_kube *k, const char *ns, const char *name,
                         const al_kube_lease *in, al_kube_lease *out, al_error *err);

#endif
