/* airlock render cluster: the service side of a cluster deployment
 * (docs/scale.md): the `airlock serve` Deployment with the broker as a
 * container of its own in the same pod, the ServiceAccount and the Role
 * its leader election needs, the state volume, the Services and the
 * pod's NetworkPolicy. The per-run objects are `render kubernetes`.
 * API reference: https://kubernetes.io/docs/reference/kubernetes-api/
 * (Deployment, ServiceAccount, Role/RoleBinding in rbac.authorization.k8s.io/v1,
 * projected volumes with serviceAccountToken, PersistentVolumeClaim). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/internal.h"
#include "render/render.h"

#define C_LABELS                                                                                   \
  "    app.kubernetes.io/name: airlock\n"                                                          \
  "    app.kubernetes.io/component: serve\n"

static void meta(FILE *f, const char *ns, const char *name)
{
  fprintf(f, "metadata:\n  name: %s\n  namespace: ", name);
  rd_quote(f, ns);
  fputs("\n  labels:\n" C_LABELS, f);
}

/* The identity, its Role (the Lease by name; Jobs only when the service
 * launches runs as Jobs) and the binding. */
static void rbac(FILE *f, const char *ns, const al_render_cluster_opts *o)
{
  fputs("---\napiVersion: v1\nkind: ServiceAccount\n", f);
  meta(f, ns, AL_RENDER_SERVE_NAME);
  fputs("# No token in every container: the serve container mounts a projected,\n"
        "# expiring token itself; the broker container gets none.\n"
        "automountServiceAccountToken: false\n",
        f);

  fputs("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n", f);
  meta(f, ns, AL_RENDER_SERVE_NAME);
  fprintf(f,
          "rules:\n"
          "  # Leader election (coordination.k8s.io/v1 Lease): create cannot be\n"
          "  # limited by name (the name is not known before the object exists);\n"
          "  # reading and renewing are limited to the one Lease.\n"
          "  - apiGroups: [coordination.k8s.io]\n"
          "    resources: [leases]\n"
          "    verbs: [create]\n"
          "  - apiGroups: [coordination.k8s.io]\n"
          "    resources: [leases]\n"
          "    resourceNames: [%s]\n"
          "    verbs: [get, update]\n",
          AL_RENDER_SERVE_LEASE);
  if (o->jobs)
    fputs("  # Runs as Jobs (runner: kubernetes): the run's objects of `render\n"
          "  # kubernetes --run-id`, created and deleted per run; pods/attach is\n"
          "  # how the run's tokens reach its sealed gateway's stdin (no Secret).\n"
          "  - apiGroups: [batch]\n"
          "    resources: [jobs]\n"
          "    verbs: [create, get, list, watch, delete]\n"
          "  - apiGroups: [apps]\n"
          "    resources: [deployments]\n"
          "    verbs: [create, get, delete]\n"
          "  - apiGroups: [\"\"]\n"
          "    resources: [services, configmaps]\n"
          "    verbs: [create, get, delete]\n"
          "  - apiGroups: [networking.k8s.io]\n"
          "    resources: [networkpolicies]\n"
          "    verbs: [create, get, delete]\n"
          "  - apiGroups: [\"\"]\n"
          "    resources: [pods]\n"
          "    verbs: [get, list, watch]\n"
          "  - apiGroups: [\"\"]\n"
          "    resources: [pods/attach]\n"
          "    verbs: [create]\n",
          f);

  fputs("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n", f);
  meta(f, ns, AL_RENDER_SERVE_NAME);
  fprintf(f,
          "roleRef:\n"
          "  apiGroup: rbac.authorization.k8s.io\n"
          "  kind: Role\n"
          "  name: %s\n"
          "subjects:\n"
          "  - kind: ServiceAccount\n"
          "    name: %s\n"
          "    namespace: ",
          AL_RENDER_SERVE_NAME, AL_RENDER_SERVE_NAME);
  rd_quote(f, ns);
  fputs("\n", f);
}

static void container_security(FILE *f, unsigned uid)
{
  fprintf(f,
          "          securityContext:\n"
          "            runAsNonRoot: true\n"
          "            runAsUser: %u\n"
          "            runAsGroup: %u\n"
          "            readOnlyRootFilesystem: true\n"
          "            allowPrivilegeEscalation: false\n"
          "            privileged: false\n"
          "            capabilities:\n"
          "              drop: [ALL]\n",
          uid, AL_RENDER_SERVE_GID);
}

static void deployment(FILE *f, const char *ns, const al_render_cluster_opts *o)
{
  const char *image = o->image ? o->image : AL_RENDER_SERVE_IMAGE;
  fputs("---\napiVersion: apps/v1\nkind: Deployment\n", f);
  meta(f, ns, AL_RENDER_SERVE_NAME);
  fprintf(f, "spec:\n  replicas: %u\n", o->replicas);
  if (o->replicas == 1)
    fputs("  # One replica: the old pod is gone before the new one starts.\n"
          "  strategy: {type: Recreate}\n",
          f);
  else
    fputs("  # Several replicas: every one takes webhooks and enqueues; only the\n"
          "  # holder of the Lease dequeues (election.lease in serve.yaml).\n"
          "  strategy:\n"
          "    type: RollingUpdate\n"
          "    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}\n",
          f);
  fputs("  selector:\n"
        "    matchLabels:\n"
        "      app.kubernetes.io/name: airlock\n"
        "      app.kubernetes.io/component: serve\n"
        "  template:\n"
        "    metadata:\n"
        "      labels:\n"
        "        app.kubernetes.io/name: airlock\n"
        "        app.kubernetes.io/component: serve\n"
        "    spec:\n",
        f);
  fprintf(f,
          "      serviceAccountName: %s\n"
          "      automountServiceAccountToken: false\n"
          "      enableServiceLinks: false\n"
          "      hostUsers: false\n"
          "      terminationGracePeriodSeconds: 75\n"
          "      securityContext:\n"
          "        runAsNonRoot: true\n"
          "        fsGroup: %u\n"
          "        seccompProfile: {type: RuntimeDefault}\n",
          AL_RENDER_SERVE_NAME, AL_RENDER_SERVE_GID);
  if (o->replicas > 1)
    fputs("      # The queue is SQLite (WAL) on a ReadWriteOnce volume: every replica\n"
          "      # on the node that holds it (WAL's shared memory is per host).\n"
          "      affinity:\n"
          "        podAffinity:\n"
          "          requiredDuringSchedulingIgnoredDuringExecution:\n"
          "            - topologyKey: kubernetes.io/hostname\n"
          "              labelSelector:\n"
          "                matchLabels:\n"
          "                  app.kubernetes.io/name: airlock\n"
          "                  app.kubernetes.io/component: serve\n",
          f);
  /* The service: the queue, webhooks, status, election, the supervisors
   * of the runs. Holds no App key: it is not mounted here. */
  fputs("      containers:\n        - name: serve\n          image: ", f);
  rd_quote(f, image);
  fprintf(f,
          "\n"
          "          args: [\"serve\", \"-c\", \"/etc/airlock/serve.yaml\"]\n"
          "          ports:\n"
          "            - {name: webhook, containerPort: %d, protocol: TCP}\n"
          "            - {name: status, containerPort: %d, protocol: TCP}\n",
          AL_RENDER_SERVE_WEBHOOK_PORT, AL_RENDER_SERVE_STATUS_PORT);
  container_security(f, AL_RENDER_SERVE_UID);
  fputs("          resources:\n"
        "            limits: {memory: 512Mi, cpu: \"2\"}\n"
        "            requests: {memory: 128Mi, cpu: 200m}\n"
        "          volumeMounts:\n"
        "            - {name: config, mountPath: /etc/airlock, readOnly: true}\n"
        "            - {name: state, mountPath: /var/lib/airlock-serve}\n"
        "            - {name: broker-socket, mountPath: /run/airlock}\n"
        "            - {name: webhook-secret, mountPath: /run/secrets/airlock, readOnly: true}\n"
        "            - name: api-token\n"
        "              mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n"
        "              readOnly: true\n"
        "            - {name: tmp, mountPath: /tmp}\n",
        f);
  /* The broker: the only holder of the App key; its lease socket is on an
   * emptyDir shared with the serve container and nothing else. */
  fputs("        - name: broker\n          image: ", f);
  rd_quote(f, image);
  fputs("\n"
        "          args: [\"broker\", \"-c\", \"/etc/airlock/broker.yaml\",\n"
        "                 \"--socket\", \"/run/airlock/broker.sock\"]\n",
        f);
  container_security(f, AL_RENDER_BROKER_UID);
  fputs("          resources:\n"
        "            limits: {memory: 128Mi, cpu: \"1\"}\n"
        "            requests: {memory: 32Mi, cpu: 50m}\n"
        "          volumeMounts:\n"
        "            - {name: config, mountPath: /etc/airlock, readOnly: true}\n"
        "            - {name: broker-socket, mountPath: /run/airlock}\n"
        "            - {name: broker-state, mountPath: /var/lib/airlock-broker}\n"
        "            - {name: app-key, mountPath: /run/secrets/airlock-app, readOnly: true}\n",
        f);
  fprintf(f,
          "      volumes:\n"
          "        - name: config\n"
          "          configMap: {name: %s}\n"
          "        - name: state\n"
          "          persistentVolumeClaim: {claimName: %s-state}\n"
          "        - name: broker-socket\n"
          "          emptyDir: {medium: Memory, sizeLimit: 1Mi}\n"
          "        - name: broker-state\n"
          "          emptyDir: {sizeLimit: 64Mi}\n"
          "        - name: tmp\n"
          "          emptyDir: {sizeLimit: 256Mi}\n"
          "        - name: webhook-secret\n"
          "          secret:\n"
          "            secretName: %s\n"
          "            defaultMode: 256  # 0400\n"
          "            items: [{key: webhook-secret, path: webhook-secret}]\n"
          "        - name: app-key\n"
          "          secret:\n"
          "            secretName: %s\n"
          "            defaultMode: 256  # 0400\n"
          "            items: [{key: app-key, path: app-key}]\n"
          "        # The API token for the election: bound to this pod, expiring,\n"
          "        # refreshed by the kubelet; airlock serve re-reads it per request.\n"
          "        - name: api-token\n"
          "          projected:\n"
          "            defaultMode: 288  # 0440\n"
          "            sources:\n"
          "              - serviceAccountToken: {path: token, expirationSeconds: 3600}\n"
          "              - configMap:\n"
          "                  name: kube-root-ca.crt\n"
          "                  items: [{key: ca.crt, path: ca.crt}]\n"
          "              - downwardAPI:\n"
          "                  items:\n"
          "                    - path: namespace\n"
          "                      fieldRef: {fieldPath: metadata.namespace}\n",
          AL_RENDER_SERVE_CONFIG, AL_RENDER_SERVE_NAME, AL_RENDER_SERVE_WEBHOOK_SECRET,
          AL_RENDER_SERVE_APP_KEY);
}

static void storage_and_network(FILE *f, const char *ns)
{
  fputs("---\napiVersion: v1\nkind: PersistentVolumeClaim\n", f);
  meta(f, ns, AL_RENDER_SERVE_NAME "-state");
  fputs("spec:\n"
        "  accessModes: [ReadWriteOnce]\n"
        "  resources:\n"
        "    requests: {storage: 1Gi}\n",
        f);

  static const struct {
    const char *name, *port_name;
    int port;
  } svcs[] = {{AL_RENDER_SERVE_NAME "-webhook", "webhook", AL_RENDER_SERVE_WEBHOOK_PORT},
              {AL_RENDER_SERVE_NAME "-status", "status", AL_RENDER_SERVE_STATUS_PORT}};
  for (size_t i = 0; i < sizeof svcs / sizeof svcs[0]; i++) {
    fputs("---\napiVersion: v1\nkind: Service\n", f);
    meta(f, ns, svcs[i].name);
    fprintf(f,
            "spec:\n"
            "  type: ClusterIP\n"
            "  selector:\n"
            "    app.kubernetes.io/name: airlock\n"
            "    app.kubernetes.io/component: serve\n"
            "  ports:\n"
            "    - {name: %s, protocol: TCP, port: %d, targetPort: %d}\n",
            svcs[i].port_name, svcs[i].port, svcs[i].port);
  }

  /* The service pod: webhooks and status in; out only HTTPS (the forge for
   * the broker, the Kubernetes API for the election) and cluster DNS. */
  fputs("---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n", f);
  meta(f, ns, AL_RENDER_SERVE_NAME);
  fprintf(f,
          "spec:\n"
          "  podSelector:\n"
          "    matchLabels:\n"
          "      app.kubernetes.io/name: airlock\n"
          "      app.kubernetes.io/component: serve\n"
          "  policyTypes: [Ingress, Egress]\n"
          "  ingress:\n"
          "    - ports:\n"
          "        - {protocol: TCP, port: %d}\n"
          "    - from:\n"
          "        - podSelector: {}\n"
          "      ports:\n"
          "        - {protocol: TCP, port: %d}\n"
          "  egress:\n"
          "    - ports:\n"
          "        - {protocol: TCP, port: 443}\n"
          "        - {protocol: TCP, port: 6443}\n"
          "    - to:\n"
          "        - namespaceSelector:\n"
          "            matchLabels: {kubernetes.io/metadata.name: kube-system}\n"
          "          podSelector:\n"
          "            matchLabels: {k8s-app: kube-dns}\n"
          "      ports:\n"
          "        - {protocol: UDP, port: 53}\n"
          "        - {protocol: TCP, port: 53}\n",
          AL_RENDER_SERVE_WEBHOOK_PORT, AL_RENDER_SERVE_STATUS_PORT);
}

int al_render_cluster(const al_render_cluster_opts *o, char **out, al_error *err)
{
  *out = NULL;
  if (o->replicas < 1 || o->replicas > 5)
    return al_error_set(err, EINVAL,
                        "render cluster: replicas %u: must be 1 to 5 (one is active; the others "
                        "stand by for the Lease)",
                        o->replicas);
  const char *ns = o->k8s_namespace ? o->k8s_namespace : "airlock";
  size_t len = 0;
  FILE *f = open_memstream(out, &len);
  if (!f)
    return al_make_error(err, errno, "open_memstream");
  fprintf(f,
          "# Generated by `airlock render cluster` (docs/scale.md): the service side.\n"
          "# Not rendered (values; create them yourself):\n"
          "#   kubectl -n NS create secret generic %s --from-file=app-key=APP.pem\n"
          "#   kubectl -n NS create secret generic %s --from-file=webhook-secret=FILE\n"
          "#   kubectl -n NS create configmap %s --from-file=serve.yaml \\\n"
          "#     --from-file=broker.yaml --from-file=POLICY.yaml ...\n"
          "# serve.yaml: broker: /run/airlock/broker.sock, state_dir:\n"
          "# /var/lib/airlock-serve, webhook.secret_file: /run/secrets/airlock/webhook-secret,\n"
          "# election.lease: %s%s. broker.yaml: app.private_key:\n"
          "# /run/secrets/airlock-app/app-key, clients.uids: [%u], state_dir:\n"
          "# /var/lib/airlock-broker.\n",
          AL_RENDER_SERVE_APP_KEY, AL_RENDER_SERVE_WEBHOOK_SECRET, AL_RENDER_SERVE_CONFIG,
          AL_RENDER_SERVE_LEASE, o->replicas > 1 ? " (required: replicas > 1)" : "",
          AL_RENDER_SERVE_UID);
  rbac(f, ns, o);
  deployment(f, ns, o);
  storage_and_network(f, ns);
  if (fclose(f) != 0) {
    free(*out);
    *out = NULL;
    return al_make_error(err, ENOMEM, "render cluster: out of memory");
  }
  return 0;
}
