/* The service's configuration (`airlock serve -c serve.yaml`).
 *
 * One YAML file, read by the one table-driven walker (common/yamlwalk.h;
 * config.c holds a table per mapping: each key with its
 * type, validator, default and doc line; docs/serve.md is written from the
 * same table). Errors name the file, line, column, key and the rule:
 *   serve.yaml:7:18: runs.max_concurrent: must be between 1 and 256
 *
 *   version: 1
 *   listen:
 *     webhook: 127.0.0.1:8680      # POST /webhook[/jira|/linear|/gitlab] ("": none)
 *     status: 127.0.0.1:8681       # GET / /runs.json /metrics (may equal webhook)
 *     timeout: 15s                 # a connection idle this long is closed (MHD)
 *     request_deadline: 30s        # a request's head and body must arrive within this
 *     max_connections: 128         # open connections at once, per listener
 *     max_per_ip: 16               # per client address (a trusted proxy: per X-Forwarded-For)
 *     trusted_proxies: [127.0.0.1] # the reverse proxies whose X-Forwarded-For is believed
 *   webhook:
 *     secret_file: /etc/airlock/webhook.secret   # the App's webhook secret
 *     label: airlock               # `issues` labeled with this name
 *     command: /airlock run        # `issue_comment` whose first line is this
 *     max_body: 1MiB
 *     jira:                        # POST /webhook/jira (absent: 404)
 *       secret_file: /etc/airlock/jira-webhook.secret  # X-Hub-Signature's HMAC key
 *       label: airlock             # an issue labeled so
 *       assignee: 5b10ac8d82e05b22cc7d4ef5             # or assigned to this accountId
 *     linear:                      # POST /webhook/linear (absent: 404)
 *       secret_file: /etc/airlock/linear-webhook.secret  # Linear-Signature's HMAC key
 *       label: airlock
 *       app: 2c5e7d52-3f0a-4c1e-9d7b-6a0f1e8b9c21        # assigned or delegated to the app
 *     gitlab:                      # POST /webhook/gitlab (absent: 404)
 *       secret_file: /etc/airlock/gitlab-webhook.secret  # X-Gitlab-Token
 *       signing_token_file: /etc/airlock/gitlab-webhook.whsec  # webhook-signature (optional)
 *       label: airlock             # an Issue Hook adding this label
 *       command: /airlock run      # a Note Hook on an issue
 *   intake:                        # admission, before a row or a token exists
 *     max_queued: 200              # a full queue answers 503 (recorded)
 *     per_sender: 5                # rows one forge user may make per window (429 after)
 *     per_repo: 50                 # rows per repository per window (429 after)
 *     window: 1h
 *     check_cache: 10m             # a sender's answer without write is reused this long
 *   retention:                     # finished rows (and their events); `airlock serve --gc`
 *     max_age: 30d                 # 0: kept
 *     max_rows: 10000              # 0: no cap
 *   broker: /run/airlock/broker.sock             # the trigger check
 *   state_dir: /var/lib/airlock/serve            # queue.db, records/, logs/
 *   runs:
 *     max_concurrent: 4
 *     max_per_repo: 2
 *     timeout: 30m
 *     retries: 2                   # transient failures only
 *     backoff: 30s                 # doubled per attempt
 *     on_interrupt: requeue        # or fail
 *     backend: native              # or docker
 *     runner: local                # or kubernetes: each run as a Job (runner_kube.h)
 *     agent: /usr/share/airlock/agents/patch-agent
 *     airlock: /usr/bin/airlock    # default: this binary
 *   election:                      # several replicas: only the Lease's holder dequeues
 *     lease: airlock-serve         # "" (default): no election, this process dequeues
 *     duration: 15s                # leaseDurationSeconds
 *     renew_deadline: 10s          # < duration: the leader stops when it could not renew
 *     retry: 2s
 *   repositories:
 *     - {repo: acme/tally, policy: /etc/airlock/tally.yaml}
 *     - {repo: acme/tools/tally, policy: /etc/airlock/gl.yaml}   # a GitLab project's full path
 */
#ifndef AL_SERVE_CONFIG_H
#define AL_SERVE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define AL_SERVE_REPOS_MAX 256
#define AL_SERVE_PROXIES_MAX 16

typedef struct al_serve_repo {
  char *repo;   /* "owner/name" (forge/appconfig.h al_repo_name_check) */
  char *policy; /* absolute path of the run's policy file */
} al_serve_repo;

typedef struct al_serve_config {
  char *source;             /* the file name, for messages */
  char *listen_webhook;     /* "ADDR:PORT" or "" (none); default 127.0.0.1:8680 */
  char *listen_status;      /* "ADDR:PORT" or "" (none); default 127.0.0.1:8681 */
  uint64_t conn_timeout_ms; /* listen.timeout: idle connection (MHD_OPTION_CONNECTION_TIMEOUT) */
  uint64_t request_deadline_ms; /* listen.request_deadline: a whole request's arrival */
  uint64_t max_connections;     /* listen.max_connections (MHD_OPTION_CONNECTION_LIMIT) */
  uint64_t max_per_ip;          /* listen.max_per_ip: connections, or a proxy's clients' requests */
  char *trusted_proxies[AL_SERVE_PROXIES_MAX]; /* numeric IPv4/IPv6 addresses */
  size_t n_trusted_proxies;
  uint64_t max_queued;     /* intake.max_queued: queued rows at most */
  uint64_t per_sender;     /* intake.per_sender: rows per forge sender per window */
  uint64_t per_repo;       /* intake.per_repo: rows per repository per window */
  uint64_t window_ms;      /* intake.window */
  uint64_t check_cache_ms; /* intake.check_cache: a refusing permission answer reused; 0: never */
  uint64_t retain_age_ms;  /* retention.max_age: finished rows older are deleted; 0: kept */
  uint64_t retain_rows;    /* retention.max_rows: finished rows kept at most; 0: no cap */
  char *secret_file;       /* required when listen_webhook is set; mode 0600/0400 */
  char *label;             /* default "airlock" */
  char *command;           /* default "/airlock run" */
  uint64_t max_body;       /* bytes, default 1 MiB, 1 KiB .. 25 MiB (GitHub's cap) */
  /* webhook.jira / webhook.linear (issue #31): NULL secret file: no such
   * route (404). When set, label or the id (or both) is set. */
  char *jira_secret_file;   /* mode 0600/0400, as secret_file */
  char *jira_label;         /* a label added: a trigger; NULL: none */
  char *jira_assignee;      /* the bot's accountId: assigned to it, a trigger; NULL: none */
  char *linear_secret_file; /* the webhook's signing secret */
  char *linear_label;       /* a label (by name) added: a trigger; NULL: none */
  char *linear_app;         /* the app user's id: assigned or delegated to it; NULL: none */
  /* webhook.gitlab (issue #30): neither file set: no such route (404) */
  char *gitlab_secret_file;  /* X-Gitlab-Token's value; NULL: not asked for */
  char *gitlab_signing_file; /* whsec_<base64>: webhook-signature required; NULL: not asked for */
  char *gitlab_label;        /* default "airlock" */
  char *gitlab_command;      /* default "/airlock run" */
  char *broker;              /* the broker's socket */
  char *state_dir;           /* absolute path */
  uint64_t max_concurrent;   /* 1..256, default 4 */
  uint64_t max_per_repo;     /* 1..256, default 2 */
  uint64_t timeout_ms;       /* the agent's wall clock per run; 0: the policy's */
  uint64_t retries;          /* 0..10, default 2 */
  uint64_t backoff_ms;       /* default 30 s */
  bool requeue_interrupted;  /* on_interrupt: requeue (default) | fail */
  bool docker;               /* backend: native (default) | docker */
  bool kube_runner;          /* runner: local (default) | kubernetes (runner_kube.h; the API
                                connection and namespace are election.*'s) */
  char *agent;               /* NULL: ticket's default */
  char *airlock;             /* NULL: /proc/self/exe */
  /* Leader election (several replicas; docs/scale.md): only the holder of
   * the coordination.k8s.io/v1 Lease dequeues. */
  char *election_lease;          /* the Lease's name; "" (default): no election */
  char *election_namespace;      /* "": the service account's namespace file */
  char *election_identity;       /* "": the host name (the pod's name) */
  char *election_api;            /* "": https://$KUBERNETES_SERVICE_HOST:$..._PORT */
  char *election_token_file;     /* the service account's token */
  char *election_ca_file;        /* the API server's CA */
  uint64_t election_duration_ms; /* leaseDurationSeconds; default 15 s */
  uint64_t election_renew_ms;    /* the leader stops this long after its last renewal: 10 s */
  uint64_t election_retry_ms;    /* between attempts: 2 s */
  al_serve_repo repos[AL_SERVE_REPOS_MAX];
  size_t n_repos;
} al_serve_config;

/* Load and validate path. On success *out is a new config (free with
 * al_serve_config_free). EINVAL with "file:line:col: key: rule" on bad
 * input; the errno of open/read otherwise. */
int al_serve_config_load(const char *path, al_serve_config **out, al_error *err);
/* The same from a buffer (name is used in messages). */
int al_serve_config_load_buffer(const char *name, const char *buf, size_t len,
                                al_serve_config **out, al_error *err);
void al_serve_config_free(al_serve_config *c);

/* The repository entry for "owner/name" (case-insensitive, as GitHub), or
 * NULL when the service does not serve it. */
const al_serve_repo *al_serve_config_repo(const al_serve_config *c, const char *repo);

/* Print the keys table (key, type, default, doc) as Markdown to f
 * (`airlock serve --config-doc`). */
#include <stdio.h>
void al_serve_config_doc(FILE *f);

#endif
