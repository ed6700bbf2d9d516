/* The agent's pod as kubernetes-sigs/agent-sandbox objects (opt-in,
 * `render kubernetes --agent-sandbox`): a SandboxTemplate holding the same
 * pod spec as the Job, and a SandboxClaim of it that the controller turns
 * into the run's Sandbox. Schema: the CRDs extensions.agents.x-k8s.io
 * v1alpha1 (vendored in tests/integration/agent-sandbox/, source and commit
 * in its README). */
#include <stdio.h>
#include <time.h>

#include "render/internal.h"
#include "render/render.h"

static void labels(FILE *f, const char *ind, const char *component, const char *run)
{
  fprintf(f,
          "%sapp.kubernetes.io/name: airlock\n%sapp.kubernetes.io/component: %s\n"
          "%sairlock.dev/run: \"%s\"\n",
          ind, ind, component, ind, run);
}

static void meta(FILE *f, const char *ns, const char *name, const char *run)
{
  fputs("metadata:\n  name: ", f);
  rd_quote(f, name);
  fputs("\n  namespace: ", f);
  rd_quote(f, ns);
  fputs("\n  labels:\n", f);
  labels(f, "    ", "agent", run);
}

void rd_sandbox_template_head(FILE *f, const char *ns, const char *name, const char *run,
                              unsigned long long deadline)
{
  fputs("---\napiVersion: extensions.agents.x-k8s.io/v1alpha1\nkind: SandboxTemplate\n", f);
  meta(f, ns, name, run);
  fprintf(f,
          "spec:\n"
          "  # The controller's own NetworkPolicy for the sandbox, the same rule as\n"
          "  # the run's agent policy (which also applies: it selects these labels):\n"
          "  # no ingress, egress only to the run's proxy on %d, no DNS.\n"
          "  networkPolicy:\n"
          "    ingress: []\n"
          "    egress:\n"
          "      - to:\n"
          "          - podSelector:\n"
          "              matchLabels:\n",
          AL_RENDER_PROXY_PORT);
  labels(f, "                ", "proxy", run);
  fprintf(f,
          "        ports:\n"
          "          - {protocol: TCP, port: %d}\n"
          "  # The pod's own deadline (%llu s) stands in for the Job's\n"
          "  # activeDeadlineSeconds; the claim's shutdownTime deletes the sandbox.\n"
          "  podTemplate:\n"
          "    metadata:\n"
          "      labels:\n",
          AL_RENDER_PROXY_PORT, deadline);
}

void rd_sandbox_claim(FILE *f, const char *ns, const char *name, const char *run, long long now,
                      unsigned long long deadline)
{
  time_t end = (time_t)((now > 0 ? now : (long long)time(NULL)) + (long long)deadline + 60);
  struct tm tm;
  char when[32] = "1970-01-01T00:00:00Z";
  if (gmtime_r(&end, &tm))
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fputs("---\napiVersion: extensions.agents.x-k8s.io/v1alpha1\nkind: SandboxClaim\n", f);
  meta(f, ns, name, run);
  fputs("spec:\n  sandboxTemplateRef:\n    name: ", f);
  rd_quote(f, name);
  fprintf(f,
          "\n"
          "  skipWarmPool: true\n"
          "  lifecycle:\n"
          "    # deleted a minute after the pod's deadline, whatever it did\n"
          "    shutdownPolicy: Delete\n"
          "    shutdownTime: \"%s\"\n",
          when);
}
