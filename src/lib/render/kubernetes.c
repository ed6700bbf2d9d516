/* airlock render kubernetes: the same policy as cluster manifests.
 * API reference: https://kubernetes.io/docs/reference/kubernetes-api/
 * (Pod securityContext, Job activeDeadlineSeconds, NetworkPolicy,
 * emptyDir medium/sizeLimit); docs/kubernetes.md explains the choices. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include "common/util.h"
#include "net/addr.h"
#include "render/internal.h"
#include "render/render.h"

#define LABEL_APP "app.kubernetes.io/name: airlock"

/* Per-run names: every run-scoped object is NAME-<run> and carries the
 * label airlock.dev/run: <run>, and every selector matches it, so two runs
 * in one namespace share neither a proxy nor a policy. */
static const char *g_run = "manual";
static char g_names[6][96];
enum { N_POLICY, N_PROXY, N_DENY, N_AGENTPOL, N_PROXYPOL, N_JOB };
static const char *name_of(int which)
{
  return g_names[which];
}
static void set_names(const char *run)
{
  static const char *const base[] = {"airlock-policy",       "airlock-proxy",
                                     "airlock-default-deny", "airlock-agent-policy",
                                     "airlock-proxy-policy", "airlock-agent"};
  g_run = run;
  for (size_t i = 0; i < AL_ARRAY_SIZE(base); i++)
    snprintf(g_names[i], sizeof g_names[i], "%s-%s", base[i], run);
}
/* The selector labels of a component of this run (indent ind). */
static void sel(FILE *f, const char *ind, const char *component)
{
  fprintf(f, "%s" LABEL_APP "\n%sapp.kubernetes.io/component: %s\n%sairlock.dev/run: \"%s\"\n", ind,
          ind, component, ind, g_run);
}

/* A byte count as a Kubernetes quantity: "2Gi" when exact, else bytes. */
static void quantity(FILE *f, uint64_t bytes)
{
  static const struct {
    uint64_t unit;
    const char *suffix;
  } units[] = {{1ULL << 40, "Ti"}, {1ULL << 30, "Gi"}, {1ULL << 20, "Mi"}, {1ULL << 10, "Ki"}};
  for (size_t i = 0; i < AL_ARRAY_SIZE(units); i++)
    if (bytes >= units[i].unit && bytes % units[i].unit == 0) {
      fprintf(f, "%llu%s", (unsigned long long)(bytes / units[i].unit), units[i].suffix);
      return;
    }
  fprintf(f, "%llu", (unsigned long long)bytes);
}

static void container_security(FILE *f, const char *ind, uint32_t uid)
{
  fprintf(f,
          "%ssecurityContext:\n"
          "%s  runAsNonRoot: true\n"
          "%s  runAsUser: %u\n"
          "%s  runAsGroup: %u\n"
          "%s  readOnlyRootFilesystem: true\n"
          "%s  allowPrivilegeEscalation: false\n"
          "%s  privileged: false\n"
          "%s  capabilities:\n"
          "%s    drop: [ALL]\n",
          ind, ind, ind, uid, ind, uid, ind, ind, ind, ind, ind);
}

/* Pod-level isolation both pods share: a user namespace (hostUsers: false,
 * KEP-127: root in the pod is not root on the node) and an optional
 * RuntimeClass (gVisor, Kata: a kernel of its own). */
static void pod_isolation(FILE *f, const al_render_opts *o)
{
  if (!o->host_users)
    fputs("      hostUsers: false\n", f);
  if (o->runtime_class) {
    fputs("      runtimeClassName: ", f);
    rd_quote(f, o->runtime_class);
    fputs("\n", f);
  }
}

static void ns_meta(FILE *f, const char *ns, const char *name, const char *component)
{
  fputs("metadata:\n  name: ", f);
  rd_quote(f, name);
  fputs("\n  namespace: ", f);
  rd_quote(f, ns);
  fputs("\n  labels:\n", f);
  sel(f, "    ", component);
}

static void k8s_policy_objects(FILE *f, const al_policy *p, const al_render_opts *o, const char *ns)
{
  fputs("---\napiVersion: v1\nkind: ConfigMap\n", f);
  ns_meta(f, ns, name_of(N_POLICY), "proxy");
  fputs("data:\n  policy.yaml: ", f);
  rd_quote(f, o->policy_text ? o->policy_text : "");
  fputs("\n", f);
}

static void k8s_proxy(FILE *f, const al_policy *p, const al_render_opts *o, const char *ns)
{
  fputs("---\napiVersion: v1\nkind: Service\n", f);
  ns_meta(f, ns, name_of(N_PROXY), "proxy");
  fputs("spec:\n  type: ClusterIP\n  selector:\n", f);
  sel(f, "    ", "proxy");
  fprintf(f,
          "  ports:\n"
          "    - {name: proxy, protocol: TCP, port: %d, targetPort: %d}\n",
          AL_RENDER_PROXY_PORT, AL_RENDER_PROXY_PORT);

  fputs("---\napiVersion: apps/v1\nkind: Deployment\n", f);
  ns_meta(f, ns, name_of(N_PROXY), "proxy");
  fputs("spec:\n"
        "  replicas: 1\n"
        "  selector:\n"
        "    matchLabels:\n",
        f);
  sel(f, "      ", "proxy");
  fputs("  template:\n"
        "    metadata:\n"
        "      labels:\n",
        f);
  sel(f, "        ", "proxy");
  fputs("    spec:\n"
        "      automountServiceAccountToken: false\n"
        "      enableServiceLinks: false\n",
        f);
  pod_isolation(f, o);
  fputs("      securityContext:\n"
        "        runAsNonRoot: true\n"
        "        runAsUser: 65534\n"
        "        runAsGroup: 65534\n"
        "        seccompProfile: {type: RuntimeDefault}\n"
        "      containers:\n"
        "        - name: proxy\n"
        "          image: ",
        f);
  rd_quote(f, o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE);
  fprintf(f,
          "\n"
          "          args: [\"proxy\", \"-p\", \"%s\", \"--listen\", \"0.0.0.0:%d\"]\n"
          "          ports:\n"
          "            - {name: proxy, containerPort: %d, protocol: TCP}\n",
          AL_RENDER_POLICY_TARGET, AL_RENDER_PROXY_PORT, AL_RENDER_PROXY_PORT);
  container_security(f, "          ", 65534);
  fprintf(f,
          "          resources:\n"
          "            limits: {memory: 256Mi, cpu: \"1\"}\n"
          "            requests: {memory: 64Mi, cpu: 100m}\n"
          "          volumeMounts:\n"
          "            - {name: policy, mountPath: /etc/airlock, readOnly: true}\n"
          "      volumes:\n"
          "        - name: policy\n"
          "          configMap: {name: %s}\n",
          name_of(N_POLICY));
  (void)p;
}

static void k8s_netpol(FILE *f, const al_policy *p, const char *ns)
{
  /* 1. Nothing in the namespace talks to anything unless allowed below. */
  fputs("---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n", f);
  ns_meta(f, ns, name_of(N_DENY), "policy");
  fputs("spec:\n  podSelector: {}\n  policyTypes: [Ingress, Egress]\n", f);

  /* 2. The agent: egress to the proxy pods on 3128 only; no DNS. */
  fputs("---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n", f);
  ns_meta(f, ns, name_of(N_AGENTPOL), "policy");
  fputs("spec:\n  podSelector:\n    matchLabels:\n", f);
  sel(f, "      ", "agent");
  fputs("  policyTypes: [Ingress, Egress]\n"
        "  ingress: []\n"
        "  egress:\n"
        "    - to:\n"
        "        - podSelector:\n"
        "            matchLabels:\n",
        f);
  sel(f, "              ", "proxy");
  fprintf(f,
          "      ports:\n"
          "        - {protocol: TCP, port: %d}\n",
          AL_RENDER_PROXY_PORT);

  /* 3. The proxy: ingress from the agent only; egress to the allowlist's
   *    ports outside private ranges (the proxy checks names and addresses
   *    itself; this is the second layer), and to the cluster DNS. */
  fputs("---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n", f);
  ns_meta(f, ns, name_of(N_PROXYPOL), "policy");
  fputs("spec:\n  podSelector:\n    matchLabels:\n", f);
  sel(f, "      ", "proxy");
  fputs("  policyTypes: [Ingress, Egress]\n"
        "  ingress:\n"
        "    - from:\n"
        "        - podSelector:\n"
        "            matchLabels:\n",
        f);
  sel(f, "              ", "agent");
  fprintf(f,
          "      ports:\n"
          "        - {protocol: TCP, port: %d}\n"
          "  egress:\n",
          AL_RENDER_PROXY_PORT);
  uint16_t ports[64];
  size_t n = rd_ports(p, ports, AL_ARRAY_SIZE(ports));
  if (n > 0) {
    /* The except lists are the proxy's own address guard (net/addr.c),
     * so the two layers refuse the same ranges. IPv6: only global
     * unicast, which leaves out NAT64, IPv4-mapped and the rest. */
    fputs("    - to:\n"
          "        - ipBlock:\n"
          "            cidr: 0.0.0.0/0\n"
          "            except:\n",
          f);
    char cidr[64];
    for (size_t i = 0; al_addr_special_cidr(AF_INET, i, cidr, sizeof cidr) == 0; i++)
      fprintf(f, "              - %s\n", cidr);
    fputs("        - ipBlock:\n"
          "            cidr: \"2000::/3\"\n"
          "            except:\n",
          f);
    for (size_t i = 0; al_addr_special_cidr(AF_INET6, i, cidr, sizeof cidr) == 0; i++)
      fprintf(f, "              - \"%s\"\n", cidr);
    fputs("      ports:\n", f);
    for (size_t i = 0; i < n; i++)
      fprintf(f, "        - {protocol: TCP, port: %u}\n", ports[i]);
  }
  if (p->network.n_pin > 0)
    fputs("    # network.pin entries (test hosts) are not rendered: pinned addresses are\n"
          "    # private by design; allow them with an extra NetworkPolicy if you must.\n",
          f);
  fputs("    - to:\n"
        "        - namespaceSelector:\n"
        "            matchLabels: {kubernetes.io/metadata.name: kube-system}\n"
        "          podSelector:\n"
        "            matchLabels: {k8s-app: kube-dns}\n"
        "      ports:\n"
        "        - {protocol: UDP, port: 53}\n"
        "        - {protocol: TCP, port: 53}\n",
        f);
}

/* The fail-closed probe: an init container of the agent's own pod, so it
 * is subject to exactly the agent's NetworkPolicy. On a CNI that does not
 * enforce NetworkPolicy (kubenet, flannel, ...) it reaches what the
 * policy forbids, exits 1, and the Job (backoffLimit 0) fails before the
 * agent starts. It also needs the run's proxy (60 s to come up). */
static const char probe_py[] =
    "import os, socket, sys, time\n"
    "def reach(h, p, t=3):\n"
    "    try:\n"
    "        socket.create_connection((h, int(p)), t).close()\n"
    "        return True\n"
    "    except (OSError, ValueError):\n"
    "        return False\n"
    "forbidden = [(os.environ.get('KUBERNETES_SERVICE_HOST'), os.environ.get("
    "'KUBERNETES_SERVICE_PORT', '443'), 'the Kubernetes API'),\n"
    "             ('169.254.169.254', 80, 'the cloud metadata service'),\n"
    "             (os.environ.get('AIRLOCK_NODE_IP'), 10250, 'the kubelet'),\n"
    "             ('1.1.1.1', 443, 'the internet'), ('8.8.8.8', 53, 'a public DNS server')]\n"
    "bad = [w for h, p, w in forbidden if h and reach(h, p)]\n"
    "if bad:\n"
    "    print('airlock probe: NetworkPolicy is NOT enforced: the agent pod reached ' + "
    "', '.join(bad) + '; refusing to run', file=sys.stderr)\n"
    "    sys.exit(1)\n"
    "proxy = os.environ.get('AIRLOCK_PROXY_HOST')\n"
    "for _ in range(30):\n"
    "    if proxy and reach(proxy, os.environ.get('AIRLOCK_PROXY_PORT', '3128')):\n"
    "        print('airlock probe: only the proxy answers; the agent may start')\n"
    "        sys.exit(0)\n"
    "    time.sleep(2)\n"
    "print('airlock probe: the run\\'s proxy does not answer; refusing to run', file=sys.stderr)\n"
    "sys.exit(1)\n";

static void probe_init(FILE *f, const al_policy *p, const al_render_opts *o, uint32_t uid,
                       const char *svc_env)
{
  fputs("      initContainers:\n        - name: netpol-probe\n          image: ", f);
  rd_quote(f, o->agent_image ? o->agent_image
                             : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE));
  fputs("\n          command: [\"python3\", \"-c\", ", f);
  rd_quote(f, probe_py);
  fprintf(f,
          "]\n"
          "          env:\n"
          "            - {name: AIRLOCK_PROXY_HOST, value: \"$(%s)\"}\n"
          "            - {name: AIRLOCK_PROXY_PORT, value: \"%d\"}\n"
          "            - name: AIRLOCK_NODE_IP\n"
          "              valueFrom: {fieldRef: {fieldPath: status.hostIP}}\n",
          svc_env, AL_RENDER_PROXY_PORT);
  container_security(f, "          ", uid);
  fputs("          resources:\n"
        "            limits: {memory: 64Mi, cpu: 200m}\n"
        "            requests: {memory: 32Mi, cpu: 50m}\n",
        f);
}

static void k8s_job(FILE *f, const al_policy *p, const al_render_opts *o, const char *ns)
{
  const al_policy_limits *l = &p->process.limits;
  uint32_t uid = p->process.user;
  bool net = p->network.present;
  char secret_name[96];
  snprintf(secret_name, sizeof secret_name, "airlock-run-tokens-%s", g_run);
  const char *secret = o->token_secret ? o->token_secret : secret_name;
  /* The service's host variable the kubelet injects for the run's proxy
   * (service links: NAME upper-cased, '-' as '_'). */
  char svc_env[128];
  snprintf(svc_env, sizeof svc_env, "%s_SERVICE_HOST", name_of(N_PROXY));
  for (char *c = svc_env; *c; c++) {
    if (*c == '-')
      *c = '_';
    else if (*c >= 'a' && *c <= 'z')
      *c = (char)(*c - 'a' + 'A');
  }
  unsigned long long deadline =
      (unsigned long long)((l->wall_ms + 999) / 1000) + (o->no_probe ? 0ULL : 60ULL);
  if (o->agent_sandbox) {
    rd_sandbox_template_head(f, ns, name_of(N_JOB), g_run, deadline);
  } else {
    fputs("---\napiVersion: batch/v1\nkind: Job\n", f);
    ns_meta(f, ns, name_of(N_JOB), "agent");
    fprintf(f,
            "spec:\n"
            "  # one attempt; the deadline is the policy's wall-clock limit plus the\n"
            "  # probe's minute; the finished Job is deleted after 10 minutes\n"
            "  backoffLimit: 0\n"
            "  activeDeadlineSeconds: %llu\n"
            "  ttlSecondsAfterFinished: 600\n"
            "  template:\n"
            "    metadata:\n"
            "      labels:\n",
            deadline);
  }
  sel(f, "        ", "agent");
  if (o->agent_sandbox)
    fprintf(f, "    spec:\n      activeDeadlineSeconds: %llu\n", deadline);
  fprintf(f,
          "%s"
          "      restartPolicy: Never\n"
          "      automountServiceAccountToken: false\n"
          "      hostNetwork: false\n"
          "      hostPID: false\n"
          "      hostIPC: false\n"
          "      # No DNS: the only nameserver is the pod's own loopback, where nothing\n"
          "      # answers. The proxy is reached by the Service's address, which the\n"
          "      # kubelet puts into AIRLOCK_PROXY_<RUN>_SERVICE_HOST (service links).\n"
          "      enableServiceLinks: true\n"
          "      dnsPolicy: None\n"
          "      dnsConfig:\n"
          "        nameservers: [\"127.0.0.1\"]\n"
          "        searches: []\n"
          "      terminationGracePeriodSeconds: 5\n"
          "      securityContext:\n"
          "        runAsNonRoot: true\n"
          "        runAsUser: %u\n"
          "        runAsGroup: %u\n"
          "        fsGroup: %u\n",
          o->agent_sandbox ? "" : "    spec:\n", uid, uid, uid);
  if (o->seccomp_path) {
    fputs("        seccompProfile:\n          type: Localhost\n          localhostProfile: ", f);
    rd_quote(f, o->seccomp_path);
    fputs("\n", f);
  } else {
    fputs("        # RuntimeDefault: install the generated profile on every node and\n"
          "        # render with --seccomp-profile PATH to get the sandbox's exact filter.\n"
          "        seccompProfile: {type: RuntimeDefault}\n",
          f);
  }
  pod_isolation(f, o);
  if (net && !o->no_probe)
    probe_init(f, p, o, uid, svc_env);
  fputs("      containers:\n        - name: agent\n          image: ", f);
  rd_quote(f, o->agent_image ? o->agent_image
                             : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE));
  fputs("\n          workingDir: /workspace\n", f);
  container_security(f, "          ", uid);
  fputs("          resources:\n            limits:\n              memory: ", f);
  quantity(f, l->memory);
  fputs("\n", f);
  if (l->cpu_milli)
    fprintf(f, "              cpu: %um\n", l->cpu_milli);
  fputs("              ephemeral-storage: 64Mi\n            requests:\n              memory: ", f);
  quantity(f, l->memory);
  fputs("\n", f);
  if (l->cpu_milli)
    fprintf(f, "              cpu: %um\n", l->cpu_milli);
  fputs("          env:\n", f);
  if (net) {
    static const char *const pv[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(pv); i++)
      fprintf(f,
              "            - name: %s\n"
              "              value: \"http://$(%s):%d\"\n",
              pv[i], svc_env, AL_RENDER_PROXY_PORT);
    fputs("            - {name: NO_PROXY, value: \"\"}\n"
          "            - {name: no_proxy, value: \"\"}\n",
          f);
  }
  fputs("            - name: AIRLOCK_API_URL\n              value: ", f);
  rd_quote(f, p->forge.api_url);
  fputs("\n", f);
  /* Tokens and per-run facts: from the per-run Secret, by key; the Secret
   * is created by the supervisor just before the Job and deleted after. */
  for (size_t i = 0; al_render_agent_env_names[i]; i++) {
    fprintf(f,
            "            - name: %s\n"
            "              valueFrom:\n"
            "                secretKeyRef: {name: ",
            al_render_agent_env_names[i]);
    rd_quote(f, secret);
    fprintf(f, ", key: %s, optional: %s}\n", al_render_agent_env_names[i],
            strstr(al_render_agent_env_names[i], "TOKEN") ? "false" : "true");
  }
  fputs("          volumeMounts:\n"
        "            - {name: workspace, mountPath: /workspace}\n"
        "            - {name: tmp, mountPath: /tmp}\n"
        "      volumes:\n"
        "        - name: workspace\n"
        "          emptyDir:\n"
        "            medium: Memory\n"
        "            sizeLimit: ",
        f);
  quantity(f, p->filesystem.workspace_size);
  fputs("\n        - name: tmp\n          emptyDir:\n            medium: Memory\n"
        "            sizeLimit: ",
        f);
  quantity(f, p->filesystem.tmp_size);
  fputs("\n", f);
  if (o->agent_sandbox)
    rd_sandbox_claim(f, ns, name_of(N_JOB), g_run, o->now, deadline);
}

int al_render_kubernetes(const al_policy *p, const al_render_opts *o, char **out, al_error *err)
{
  *out = NULL;
  if (al_render_check_credentials(p, o, "render kubernetes", err) < 0)
    return -1;
  if (o->seccomp_path && (o->seccomp_path[0] == '/' || strstr(o->seccomp_path, "..")))
    return al_make_error(err, EINVAL,
                         "render kubernetes: the seccomp profile path is relative to the "
                         "kubelet's seccomp root (e.g. airlock/seccomp.json)");
  const char *ns = o->k8s_namespace ? o->k8s_namespace : "airlock";
  const char *run = o->run_id ? o->run_id : "manual";
  if (strlen(run) > 40 || strspn(run, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(run) ||
      run[0] == '-' || run[strlen(run) - 1] == '-' || !run[0])
    return al_error_set(err, EINVAL,
                        "render kubernetes: run id `%s`: 1 to 40 of [a-z0-9-], not starting or "
                        "ending with '-' (it ends every object's name)",
                        run);
  set_names(run);
  size_t len = 0;
  FILE *f = open_memstream(out, &len);
  if (!f)
    return al_make_error(err, errno, "open_memstream");
  fputs("# Generated by `airlock render kubernetes` from ", f);
  rd_quote(f, p->source ? p->source : "<default>");
  fprintf(f, " (policy sha256 %s).\n", al_policy_sha256((al_policy *)p));
  fputs("# See docs/kubernetes.md: the tokens Secret is created per run and deleted\n"
        "# after it; it is never part of these manifests.\n",
        f);
  rd_sealed_note(f, p, "These manifests carry");
  if (p->relay.present)
    fputs("# NOT RENDERED: the policy's `relay` section (the model relay needs an egress\n"
          "# listener of its own; use the native backend for runs with a relay).\n",
          f);
  fputs("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ", f);
  rd_quote(f, ns);
  fputs("\n  labels:\n    " LABEL_APP "\n"
        "    pod-security.kubernetes.io/enforce: restricted\n",
        f);
  if (p->network.present) {
    k8s_policy_objects(f, p, o, ns);
    k8s_proxy(f, p, o, ns);
  }
  k8s_netpol(f, p, ns);
  k8s_job(f, p, o, ns);
  if (fclose(f) != 0) {
    free(*out);
    *out = NULL;
    return al_make_error(err, ENOMEM, "render kubernetes: out of memory");
  }
  return 0;
}
