/* The policy as deployment manifests: a Docker Compose file that is the
 * seed's design (internal-only bridge, allowlist proxy, read-only agent with
 * two tmpfs mounts, no capabilities, the sandbox's seccomp profile), and
 * Kubernetes manifests with the same shape (docs/kubernetes.md).
 *
 * Renderers only format text: they read no files and hold no secrets. Token
 * variables appear by name only, never with a value. */
#ifndef AL_RENDER_H
#define AL_RENDER_H

#include <limits.h>
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

/* path made absolute against the current directory (getcwd(3)); a new
 * string the caller frees, or NULL with errno when getcwd fails. */
char *al_render_absolute(const char *path);

/* Where `airlock render compose|kubernetes` writes the seccomp profile
 * (al_seccomp_profile_json) and what the output refers to: --seccomp-out
 * when given; for compose without it airlock-seccomp.json beside out_path
 * (-o; NULL or "-": stdout), in the current directory without one; for
 * kubernetes without it, nowhere (*path NULL: the pod names a Localhost
 * profile on the node). *path: absolute, the caller frees. *write: whether
 * the profile is written there (--seccomp-out, or compose with -o FILE);
 * false with a *path means the Compose file refers to a file not written.
 * -1 with err (getcwd's errno). */
int al_render_seccomp_target(bool compose, const char *out_path, const char *seccomp_out,
                             char **path, bool *write, al_error *err);

/* `airlock render compose|kubernetes` after the options are parsed. */
typedef struct al_render_files_opts {
  bool compose;                /* compose, else kubernetes */
  const char *policy_path;     /* -p, or NULL: the embedded default policy */
  const char *out_path;        /* -o, or NULL / "-": stdout (where the seccomp file goes) */
  const char *seccomp_out;     /* --seccomp-out, or NULL (al_render_seccomp_target) */
  const char *seccomp_profile; /* kubernetes: the Localhost profile, NULL: RuntimeDefault */
} al_render_files_opts;

/* What al_render_files did, for the caller to say. */
typedef struct al_render_notes {
  int status;                         /* on -1, the exit status: 2 the policy, its file or its
                                         credentials refused; 1 a write or getcwd failed */
  bool usage;                         /* on -1: show the usage lines too (the policy or the
                                         rendering refused it) */
  char seccomp_written[PATH_MAX];     /* the profile was written here, or "" */
  char seccomp_not_written[PATH_MAX]; /* the output refers to this, not written, or "" */
  bool sealed_as_env;                 /* credentials.mode sealed rendered as env
                                         (--env-credentials) */
  bool relay_not_rendered;            /* kubernetes: the policy's relay section is not */
} al_render_notes;

/* Load the policy (policy/policy.h al_policy_load_or_default), read its
 * bytes (up to 1 MiB), refuse sealed credentials without
 * ro->env_credentials (al_render_check_credentials) before anything is
 * written, write the seccomp profile where al_render_seccomp_target says
 * (0644), and render compose or kubernetes with ro (its policy_path,
 * policy_text and seccomp_path are set for the call and cleared after).
 * *text: the manifests, the caller frees; *notes: what to tell the user.
 * -1 with err, notes->status and notes->usage saying which kind of failure. */
int al_render_files(const al_render_files_opts *f, al_render_opts *ro, char **text,
                    al_render_notes *notes, al_error *err);

#endif
