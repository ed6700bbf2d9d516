/* The policy as deployment manifests: a Docker Compose file that is the
 * seed's design (internal-only bridge, allowlist proxy, read-only agent with
 * two tmpfs mounts, no capabilities, the sandbox's seccomp profile), and
 * Kubernetes manifests with the same shape (docs/kubernetes.md).
 *
 * Renderers only format text: they read no files and hold no secrets. Token
 * variables appear by name only, never with a value. */
#ifndef AL_RENDER_H
#define AL_RENDER_H

#include <stdbool.h>

#include "common/error.h"
#include "policy/policy.h"

#define AL_RENDER_PROXY_IMAGE "airlock-proxy:local"
#define AL_RENDER_AGENT_IMAGE "airlock-agent:local"
#define AL_RENDER_PROXY_PORT 3128
#define AL_RENDER_RELAY_PORT 8080
#define AL_RENDER_POLICY_TARGET "/etc/airlock/policy.yaml"

/* Names of the variables the agent receives from its invoker (tokens and
 * per-run facts); values are supplied at container start, never rendered.
 * NULL-terminated. */
extern const char *const al_render_agent_env_names[];

typedef struct al_render_opts {
  const char *policy_path;   /* absolute path of the policy file on the host (Compose config) */
  const char *policy_text;   /* the policy file's bytes, NUL-terminated (Kubernetes ConfigMap) */
  const char *seccomp_path;  /* Compose: absolute path of the generated profile on the host;
                                Kubernetes: localhostProfile relative to the kubelet's seccomp
                                root, or NULL for RuntimeDefault */
  const char *proxy_image;   /* NULL: AL_RENDER_PROXY_IMAGE */
  const char *agent_image;   /* NULL: policy filesystem.image, else AL_RENDER_AGENT_IMAGE */
  const char *k8s_namespace; /* NULL: "airlock" */
  const char *token_secret;  /* Kubernetes Secret holding the tokens; NULL: "airlock-run-tokens" */
  bool egress_internal;      /* Compose, tests: airlock-egress internal too (nothing leaves) */
  bool env_credentials;      /* the operator accepts env mode for a policy whose
                                credentials.mode is sealed (the real tokens in the agent's
                                container; a NOT RENDERED note in the header); false: such a
                                policy is refused (rd_credentials_check) */
  /* Kubernetes, per run (issue #20): */
  const char *run_id;        /* DNS-1123 label suffix of every run-scoped object (Job, proxy,
                                policies, ConfigMap) and their `airlock.dev/run` label, so runs
                                share neither names nor a proxy; NULL: "manual" */
  const char *runtime_class; /* runtimeClassName of both pods (gVisor, Kata), or NULL */
  bool host_users;           /* true: no user namespace (hostUsers omitted); default false
                                renders hostUsers: false */
  bool no_probe;             /* true: no fail-closed network probe init container */
  bool agent_sandbox;        /* the agent's pod as a kubernetes-sigs/agent-sandbox
                                SandboxTemplate + SandboxClaim instead of a Job */
  long long now;             /* agent_sandbox: the render time (Unix s) for the claim's
                                shutdownTime; 0: time(NULL) */
} al_render_opts;

/* Fail closed on sealed credentials: 0, or -1 with err (EPERM, naming
 * credentials.mode and why) when the policy has a credentials section in
 * sealed mode (docs/policy.md; the default) and o->env_credentials is not
 * set. The renderings cannot run the forge gateway that keeps the tokens
 * outside the agent (docs/kubernetes.md, "Sealed credentials"), so they
 * would carry env mode. `what` prefixes the message ("render compose").
 * al_render_compose and al_render_kubernetes call it first. */
int al_render_check_credentials(const al_policy *policy, const al_render_opts *o, const char *what,
                                al_error *err);

/* A Compose file (Compose Specification, https://docs.docker.com/reference/compose-file/)
 * for `policy`: networks airlock-internal (internal: true) and airlock-egress;
 * service `proxy` (`airlock proxy`) on both; service `agent` on the internal
 * one only. With a `relay` section also: `relay` (internal + airlock-relay,
 * the key by name) and `relay-proxy` (`airlock proxy --relay-egress`,
 * airlock-relay + egress), airlock-relay internal. Without a network section the agent gets
 * `network_mode: none` and there is no proxy. On success *out is a new NUL-terminated string the
 * caller frees; -1 with err (EINVAL for missing options, EPERM for sealed credentials without
 * o->env_credentials: al_render_check_credentials, ENOMEM). */
int al_render_compose(const al_policy *policy, const al_render_opts *o, char **out, al_error *err);

/* Kubernetes manifests (one multi-document YAML stream; API groups v1,
 * apps/v1, batch/v1, networking.k8s.io/v1): Namespace, ConfigMap with the
 * policy, proxy Deployment + Service, NetworkPolicies (default deny; agent
 * egress only to the proxy on 3128, no DNS; proxy egress to the policy's
 * ports outside private ranges plus cluster DNS), the agent Job. Same
 * ownership and errors as al_render_compose. */
int al_render_kubernetes(const al_policy *policy, const al_render_opts *o, char **out,
                         al_error *err);

/* The service side of a cluster deployment (`airlock render cluster`,
 * docs/scale.md): ServiceAccount, Role (the Lease by name; with jobs also
 * what launching runs as Jobs needs), RoleBinding, the serve Deployment
 * (containers serve and broker in one pod: the lease socket on a shared
 * emptyDir, the App key Secret mounted into the broker alone, the API token
 * projected into serve alone), its state PVC, Services and NetworkPolicy.
 * Secrets and the config are referenced by name, never rendered. */
#define AL_RENDER_SERVE_IMAGE "airlock:local"
#define AL_RENDER_SERVE_NAME "airlock-serve"
#define AL_RENDER_SERVE_LEASE "airlock-serve"
#define AL_RENDER_SERVE_CONFIG "airlock-serve-config"
#define AL_RENDER_SERVE_APP_KEY "airlock-app-key"
#define AL_RENDER_SERVE_WEBHOOK_SECRET "airlock-webhook-secret"
#define AL_RENDER_SERVE_WEBHOOK_PORT 8680
#define AL_RENDER_SERVE_STATUS_PORT 8681
#define AL_RENDER_SERVE_UID 10001u  /* the serve container; the broker's clients.uids */
#define AL_RENDER_BROKER_UID 10002u /* the broker container */
#define AL_RENDER_SERVE_GID 10001u

typedef struct al_render_cluster_opts {
  const char *k8s_namespace; /* NULL: "airlock" */
  const char *image;         /* NULL: AL_RENDER_SERVE_IMAGE */
  unsigned replicas;         /* 1..5; > 1 needs election.lease in serve.yaml */
  bool jobs;                 /* RBAC for runs launched as Jobs */
} al_render_cluster_opts;

/* On success *out is a new NUL-terminated string the caller frees; -1 with
 * err (EINVAL: replicas out of range; ENOMEM). */
int al_render_cluster(const al_render_cluster_opts *o, char **out, al_error *err);

#endif
