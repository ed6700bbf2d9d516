/* The policy file (airlock.yaml): schema of docs/policy.md, DESIGN.md §5.
 *
 * Read with libfyaml, validated strictly: unknown keys, wrong types and bad
 * values are rejected with "FILE:LINE:COL: KEY: rule". Every field has a
 * safe default; the embedded default policy (al_policy_default) has no
 * network section at all, so nothing listens and nothing gets out.
 *
 * The canonical form is compact JSON with sorted keys and every default
 * filled in; its SHA-256 goes into every run record. */
#ifndef AL_POLICY_H
#define AL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "forge/names.h"

/* One allowlist entry: exactly host:port, or a *.suffix wildcard. */
typedef struct al_net_allow {
  char *host;    /* canonical (see net/host.h); for wildcards the suffix without "*." */
  bool wildcard; /* written as "*.suffix": matches one or more labels before suffix */
  bool is_ip;    /* host is an IP literal (canonical text form) */
  uint16_t port; /* 1..65535 */
  bool tls;      /* require a ClientHello whose SNI equals the host; default: port == 443 */
  int line;      /* source line, for messages */
} al_net_allow;

/* A test pin: resolve `host` to `address` without DNS and without the
 * private-range guard. The only way a loopback address is ever dialled. */
typedef struct al_net_pin {
  char *host;    /* canonical */
  char *address; /* numeric IPv4 or IPv6, as written */
  int line;      /* source line, for messages */
} al_net_pin;

typedef struct al_policy_network {
  bool present; /* false: no proxy, no listener, no way out at all */
  al_net_allow *allow;
  size_t n_allow;
  al_net_pin *pin;
  size_t n_pin;
  char *resolver;              /* "ADDR:PORT" or NULL for the host's resolv.conf */
  uint32_t max_conns;          /* per run; default 64 */
  uint64_t egress_budget;      /* bytes out of the sandbox per run; 0 = unlimited */
  uint64_t head_timeout_ms;    /* default 10s */
  uint64_t connect_timeout_ms; /* default 10s */
  uint64_t idle_timeout_ms;    /* default 5m */
  uint64_t max_tunnel_ms;      /* default 1h */
  bool transparent;            /* default true: the allowed names resolve in the sandbox to
                                  listeners that decide by SNI or Host (proxy.h) */
} al_policy_network;

typedef struct al_policy_filesystem {
  char *root;              /* NULL: curated host view; else a rootfs directory (absolute) */
  uint64_t workspace_size; /* bytes, default 2 GiB */
  uint64_t tmp_size;       /* bytes, default 512 MiB */
  char **ro_paths;         /* extra absolute host paths bound read-only at the same place */
  size_t n_ro_paths;
  /* filesystem.sensitive_ro_paths: bound like ro_paths, but accepted though
   * sensitive.h refuses them there (a socket, /run, a home...); warned on
   * every run (al_policy.loud). Every consumer of ro_paths binds these too. */
  char **sensitive_ro_paths;
  size_t n_sensitive_ro_paths;
  char *image; /* container image for the docker backend, or NULL */
} al_policy_filesystem;

typedef struct al_policy_limits {
  uint64_t memory;    /* bytes, default 4 GiB */
  uint32_t pids;      /* default 512 */
  uint32_t cpu_milli; /* CPU in thousandths of a core; 0 = unlimited (default) */
  uint64_t wall_ms;   /* default 60 minutes */
  uint32_t nofile;    /* default 4096 */
} al_policy_limits;

typedef struct al_policy_process {
  uint32_t user;   /* uid and gid inside the sandbox, default 1000; never 0 */
  char **env_pass; /* names of host variables passed through; none looks like a secret */
  size_t n_env_pass;
  char **secret_env; /* process.secret_env: passed through like env_pass though they look like
                        secrets (sensitive.h); warned on every run (al_policy.loud) */
  size_t n_secret_env;
  al_policy_limits limits;
} al_policy_process;

typedef struct al_policy_role {
  bool present;
  char *repo;    /* "OWNER/REPO", or with forge.kind gitlab GROUP[/SUB...]/PROJECT */
  int repo_line; /* where repo was written, "LINE:COL" as the walker says it, or 0 */
  int repo_col;
  al_perm *perms; /* forge/names.h, the one permission type */
  size_t n_perms;
} al_policy_role;

/* How the run's forge tokens reach the agent (issue #15, DESIGN.md §2
 * "secrets"): */
typedef enum al_cred_mode {
  /* the tokens never enter the sandbox: the agent holds a per-run
   * placeholder, the forge gateway swaps it for the token on the requests
   * its rules allow, and the supervisor opens the one pull request */
  AL_CRED_SEALED = 0,
  /* the seed's design: both tokens in the agent's environment; the escape
   * budget then rests on the forge's configuration (kept for agents that
   * must hold a token) */
  AL_CRED_ENV = 1,
} al_cred_mode;

typedef struct al_policy_credentials {
  bool present;
  char *broker; /* socket path */
  al_policy_role git;
  al_policy_role ticket;
  uint64_t ttl_ms;         /* default 15 min */
  al_cred_mode mode;       /* credentials.mode: `sealed` (default) or `env` */
  uint32_t agent_comments; /* credentials.agent_comments: comments the agent may post on its own
                              ticket through the gateway (sealed), 0..100, default 0 */
} al_policy_credentials;

/* "sealed" or "env". */
const char *al_cred_mode_name(al_cred_mode m);

/* Where the forge is: what the agent is told (AIRLOCK_API_URL,
 * AIRLOCK_GIT_URL) and what the supervisor uses after the run. */
typedef struct al_policy_forge {
  al_forge_kind kind; /* forge.kind: `github` (default); its driver is forge/forge.h's */
  char *api_url;      /* "https://api.github.com" (default) or https://HOST[:PORT][/PREFIX] */
  char *git_url;      /* "https://github.com" (default) */
  char *ca_file;      /* extra CA bundle (absolute path) trusted for both, or NULL */
  int line[3];        /* source lines of api_url, git_url, ca_file (0: the default) */
} al_policy_forge;

/* Where the run's ticket lives (issue #31, docs/tickets.md): `ticket:
 * {kind: jira|linear|github, url, project | team, user, token_file}`. Absent: a GitHub
 * issue of the run's repository (kind github, the other fields NULL). */
typedef struct al_policy_ticket {
  bool present;     /* the policy has a `ticket:` key */
  int kind;         /* al_tk_kind (tickets/tickets.h): 0 github, 1 jira, 2 linear */
  char *url;        /* jira: https://SITE.atlassian.net (required); linear: default
                       https://api.linear.app; github: none (the forge's API URL) */
  char *project;    /* jira: the one project's key (required), e.g. "PROJ" */
  char *team;       /* linear: the one team's key (required), e.g. "ENG" */
  char *user;       /* jira: the account e-mail of a (scoped) API token, or NULL (OAuth 2.0) */
  char *ca_file;    /* extra trust anchors for the ticket host (absolute path), or NULL */
  char *token_file; /* jira, linear (required): the vendor credential, a 0600 file of the
                       supervisor's user it reads (never the sandbox, argv or a log) */
} al_policy_ticket;

/* One route the model relay forwards: exactly METHOD and path (the query
 * string is passed through, not matched). */
typedef struct al_relay_route {
  char *method; /* upper-case token, e.g. "POST" */
  char *path;   /* "/v1/messages": [A-Za-z0-9/._-], no "..", no "//" */
} al_relay_route;

/* One model API the relay forwards to (relay.upstreams[i], or the
 * one-upstream shorthand at the top of `relay:`). */
typedef struct al_relay_upstream {
  char *vendor;           /* "anthropic" or "openai": the rule set (relay/rules.h), the auth and
                             route defaults; default: by host (api.openai.com, api.anthropic.com),
                             else "openai" for auth: bearer, else "anthropic" */
  char *upstream;         /* https://HOST[:PORT][/PREFIX], no trailing slash */
  char *host;             /* canonical HOST of upstream (for the proxy and SNI) */
  uint16_t port;          /* PORT of upstream, default 443 */
  char *prefix;           /* PREFIX of upstream ("" when none) */
  char *auth;             /* "x-api-key" (Anthropic's default) or "bearer" (OpenAI's) */
  char *key_file;         /* absolute path of the key, mode 0600, read by the supervisor, or NULL */
  bool key_broker;        /* `key: broker`: the `model_key` secret of the run's broker lease
                             (airlock ticket only); exactly one of key_file and key_broker; at
                             most one upstream per policy */
  char *ca_file;          /* the trust anchors (absolute path of a PEM bundle, a regular file),
                             in place of the system store, or NULL: the system store */
  char *pubkey_pin;       /* "sha256//BASE64[;sha256//BASE64...]": the upstream certificate's
                             public key (SPKI) must hash to one of them, checked in addition to
                             the chain (curl's --pinnedpubkey form), or NULL */
  char *pin;              /* test only: numeric address the upstream host resolves to, or NULL */
  al_relay_route *routes; /* default: anthropic POST /v1/messages, /v1/messages/count_tokens;
                             openai POST /v1/responses, /v1/chat/completions. Unique across
                             upstreams: the path picks the upstream */
  size_t n_routes;
  char **allow; /* relay.allow: server-side features allowed by name (docs/policy.md) */
  size_t n_allow;
  char **headers; /* relay.headers: extra request headers forwarded (lower case) */
  size_t n_headers;
  char **betas; /* relay.anthropic_beta: extra anthropic-beta values forwarded */
  size_t n_betas;
  char *organization; /* OpenAI-Organization sent upstream (never the agent's), or NULL */
  char *project;      /* OpenAI-Project sent upstream, or NULL */
} al_relay_upstream;

/* The model relay (issues #10, #17): a second sandbox per run that holds
 * the model API keys, serves plain HTTP at 127.0.0.1:8080 inside the
 * agent's network namespace, checks each request against its vendor's
 * rules and forwards the allowed routes over TLS, through the egress
 * proxy, to the route's upstream. See src/lib/relay/. */
typedef struct al_policy_relay {
  bool present;
  al_relay_upstream *upstreams; /* 1..16 */
  size_t n_upstreams;
  bool listed; /* written as relay.upstreams (else the one-upstream shorthand); messages only */
  uint64_t max_request;           /* bytes of one request body, default 8 MiB */
  uint64_t budget_requests;       /* per run, default 1000; 0 = unlimited */
  uint64_t budget_tokens;         /* input + output tokens per run, default 0 = unlimited */
  uint32_t max_conns;             /* concurrent calls, default 16 */
  uint64_t connect_timeout_ms;    /* proxy CONNECT + TLS handshake, default 10 s */
  uint64_t first_byte_timeout_ms; /* request sent until the response head, default 5 min */
  uint64_t idle_timeout_ms;       /* between two reads of a response, default 5 min */
  uint64_t total_timeout_ms;      /* one call end to end, default 30 min */
  int line;                       /* source line of the `relay:` key, for messages */
} al_policy_relay;

typedef struct al_policy {
  int version; /* 1 */
  al_policy_network network;
  al_policy_filesystem filesystem;
  al_policy_process process;
  al_policy_credentials credentials;
  al_policy_forge forge;
  al_policy_ticket ticket;
  al_policy_relay relay;
  char *branch_prefix; /* review.branch_prefix, default "airlock/" */
  char *base_branch;   /* review.base_branch, or NULL: the repository's default */
  char *source;        /* file name it came from, or "<default>" */
  char sha256[65];     /* of the canonical form; filled by al_policy_sha256() */
  /* Surprising but valid choices ("FILE:LINE:COL: PATH: why"), for `policy
   * check` to show: `tls: false` on port 443, a public IP literal in
   * network.allow. Owned by the policy. */
  char **warnings;
  size_t n_warnings;
  /* The overrides in use (sensitive_ro_paths, secret_env), one sentence
   * each ("FILE:LINE:COL: PATH: why"): every run prints them (also in
   * warnings). Owned by the policy. */
  char **loud;
  size_t n_loud;
} al_policy;

/* Parse and validate a policy from a file. On success *out is a new policy
 * the caller releases with al_policy_free(). Errors name FILE:LINE:COL, the
 * key and the rule broken; EINVAL for a policy that breaks a rule, the
 * errno of the failing call otherwise. */
int al_policy_load_file(const char *path, al_policy **out, al_error *err);

/* The same from a buffer; `name` is used in messages. */
int al_policy_load_buffer(const char *name, const char *buf, size_t len, al_policy **out,
                          al_error *err);

/* `path` when it is not NULL, else the embedded default: what every
 * command's `-p POLICY` means. Errors as al_policy_load_file. */
int al_policy_load_or_default(const char *path, al_policy **out, al_error *err);

/* The embedded default: no network, default filesystem/process limits. */
int al_policy_default(al_policy **out, al_error *err);

/* Canonical form: compact JSON, sorted keys, defaults filled. The caller
 * frees the string. */
char *al_policy_canonical(const al_policy *p);

/* SHA-256 (lower-case hex) of the canonical form, computed on first use
 * (OpenSSL's first digest costs about a millisecond: keep it off the
 * sandbox start path). The string lives as long as the policy. */
const char *al_policy_sha256(al_policy *p);

/* The relay section alone in canonical form (compact JSON, sorted keys;
 * the same object as "relay" in al_policy_canonical), or NULL when the
 * policy has none. What `airlock relay --config-json` reads (relay.h). The
 * caller frees the string. */
char *al_policy_relay_canonical(const al_policy *p);

/* True for variable names airlock sets itself in the sandbox (AIRLOCK_*,
 * PATH, HOME, USER, LOGNAME, TMPDIR, the proxy variables, GIT_CONFIG_*):
 * neither process.env_pass nor `airlock run --env` may override them. */
bool al_policy_env_reserved(const char *name);

/* Free the strings and routes of a relay section and zero it. */
void al_policy_relay_clear(al_policy_relay *r);

/* Is s a relay.pubkey_pin: `sha256//` and the base64 (RFC 4648 §4, padded)
 * of a 32-byte SHA-256, up to 8 of them joined by `;` (curl's
 * --pinnedpubkey form)? 0, or -1 with a static *why naming the rule. */
int al_policy_pubkey_pin_syntax(const char *s, const char **why);

/* The upstream with `key: broker`, or NULL (no relay, or key files only). */
const al_relay_upstream *al_policy_relay_key_broker(const al_policy *p);

void al_policy_free(al_policy *p);

/* What a policy is checked for (`airlock policy check --for`). */
typedef enum al_policy_purpose {
  AL_POLICY_FOR_RUN,    /* airlock run / probe: any valid policy; relay.key_file, not broker */
  AL_POLICY_FOR_TICKET, /* airlock ticket: network, credentials, forge reachable with TLS */
  AL_POLICY_FOR_RENDER, /* airlock render: a network section; relay is not rendered */
} al_policy_purpose;

/* "run" / "ticket" / "render" -> purpose. Returns 0 or -1. */
int al_policy_purpose_parse(const char *s, al_policy_purpose *out);
const char *al_policy_purpose_name(al_policy_purpose what);

/* What a purpose needs, one sentence (what `policy check --for` prints). */
const char *al_policy_purpose_needs(al_policy_purpose what);

/* Is p fit for `what`? The one check that both `airlock ticket` (its
 * policy phase) and `airlock policy check --for` call, so they can never
 * disagree. repo (may be NULL): the ticket's OWNER/REPO, which the
 * credentials must name. Returns 0, or -1 with err "FILE:LINE: rule" (the
 * line of the value at fault, when the policy has one) and EINVAL. Warnings
 * for the purpose (not failures) are appended to p->warnings. */
int al_policy_check_for(al_policy *p, al_policy_purpose what, const char *repo, al_error *err);

#endif
