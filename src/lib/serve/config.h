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
 *     webhook: 127.0.0.1:8680      # POST /webhook ("" : no webhook listener)
 *     status: 127.0.0.1:8681       # GET / /runs.json /metrics (may equal webhook)
 *   webhook:
 *     secret_file: /etc/airlock/webhook.secret   # the App's webhook secret
 *     label: airlock               # `issues` labeled with this name
 *     command: /airlock run        # `issue_comment` whose first line is this
 *     max_body: 1MiB
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
 *     agent: /usr/share/airlock/agents/patch-agent
 *     airlock: /usr/bin/airlock    # default: this binary
 *   election:                      # several replicas: only the Lease's holder dequeues
 *     lease: airlock-serve         # "" (default): no election, this process dequeues
 *     duration: 15s                # leaseDurationSeconds
 *     renew_deadline: 10s          # < duration: the leader stops when it could not renew
 *     retry: 2s
 *   repositories:
 *     - {repo: acme/tally, policy: /etc/airlock/tally.yaml}
 */
#ifndef AL_SERVE_CONFIG_H
#define AL_SERVE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define AL_SERVE_REPOS_MAX 256

typedef struct al_serve_repo {
  char *repo;   /* "owner/name" (forge/appconfig.h al_repo_name_check) */
  char *policy; /* absolute path of the run's policy file */
} al_serve_repo;

typedef struct al_serve_config {
  char *source;             /* the file name, for messages */
  char *listen_webhook;     /* "ADDR:PORT" or "" (none); default 127.0.0.1:8680 */
  char *listen_status;      /* "ADDR:PORT" or "" (none); default 127.0.0.1:8681 */
  char *secret_file;        /* required when listen_webhook is set; mode 0600/0400 */
  char *label;              /* default "airlock" */
  char *command;            /* default "/airlock run" */
  uint64_t max_body;        /* bytes, default 1 MiB, 1 KiB .. 25 MiB (GitHub's cap) */
  char *broker;             /* the broker's socket */
  char *state_dir;          /* absolute path */
  uint64_t max_concurrent;  /* 1..256, default 4 */
  uint64_t max_per_repo;    /* 1..256, default 2 */
  uint64_t timeout_ms;      /* the agent's wall clock per run; 0: the policy's */
  uint64_t retries;         /* 0..10, default 2 */
  uint64_t backoff_ms;      /* default 30 s */
  bool requeue_interrupted; /* on_interrupt: requeue (default) | fail */
  bool docker;              /* backend: native (default) | docker */
  char *agent;              /* NULL: ticket's default */
  char *airlock;            /* NULL: /proc/self/exe */
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
