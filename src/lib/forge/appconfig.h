/* The broker's configuration file (YAML, read with libfyaml).
 *
 *   app:
 *     id: 12345                 # or client_id: Iv23li...; the JWT's `iss`
 *     private_key: /etc/airlock/app.pem
 *   gitlab:                         # instead of app: a GitLab forge (issue #30)
 *     token_file: /etc/airlock/gitlab.token  # a Maintainer's token (scope api),
 *                                   # 0600; api.url then ends in /api/v4 and
 *                                   # repositories are GROUP/PROJECT paths
 *   api:
 *     url: https://api.github.com   # https, or http only for a loopback address
 *     ca_file: /path/ca.pem         # optional extra trust anchors (test forge)
 *     timeout: 30s                  # per HTTP request
 *     retries: 4                    # extra attempts on 5xx and network errors
 *     max_rate_limit_wait: 60s      # longest wait honoured for a rate limit
 *   repositories: [owner/repo, ...] # the only repositories a lease may name
 *   roles:                          # the most each role may ever grant
 *     git:    {contents: write, pull_requests: write}
 *     ticket: {issues: write}
 *   clients:
 *     uids: [1000, airlock]         # peers allowed on the socket (SO_PEERCRED)
 *   lease:
 *     ttl: 15m                      # default lease life
 *     max_ttl: 1h                   # most a client may ask for
 *     max_active: 64
 *   state_dir: /var/lib/airlock-broker   # optional: leases.jsonl, the lease log
 *   audit:                          # optional: how the broker reads branch
 *                                   # protection for `airlock audit` (one of):
 *     token_file: /etc/airlock/audit.token   # a read-only admin token (e.g. a
 *                                   # fine-grained token with Administration:
 *                                   # read, Contents: read), 0600, owned by the
 *                                   # broker's user; read per audit, never logged
 *     app: {id: 67890, private_key: /etc/airlock/audit-app.pem}
 *                                   # or a second App holding only
 *                                   # administration: read + contents: read;
 *                                   # never leased, only used to audit
 *   secrets:                        # optional: static secrets a lease may carry
 *     model_key:                    # name: [a-z0-9_], 1 to 63 characters
 *       file: /etc/airlock/model.key  # 0600, owned by the broker's user, one
 *                                   # value of printable ASCII (no spaces),
 *                                   # at most 1024 bytes; read at start-up
 *       repositories: [acme/tally]  # the only repositories whose leases may
 *                                   # carry it (each also in `repositories`)
 *
 * Strict: unknown keys, wrong types and bad values fail with
 * "FILE:LINE:COL: KEY: rule". Permissions named in AL_NEVER_GRANTED
 * (administration, workflows, actions, secrets, ...) are refused in the
 * config itself, and the broker never grants a permission a role does not
 * list. Permission names and levels follow the GitHub REST page "Create an
 * installation access token for an app" (body parameter `permissions`). */
#ifndef AL_BROKER_CONFIG_H
#define AL_BROKER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "forge/names.h"

typedef enum al_role { AL_ROLE_GIT = 0, AL_ROLE_TICKET = 1, AL_ROLE_COUNT = 2 } al_role;

/* "git" / "ticket". */
const char *al_role_name(al_role r);
/* Parse a role name; returns -1 when unknown. */
int al_role_parse(const char *name, al_role *out);

/* The roles' permissions when the config names none (`roles:`): git
 * {contents: write, pull_requests: write}, ticket {issues: write}; what
 * the broker mints by default (metadata: read comes with every token). */
void al_broker_default_roles(al_perm_set roles[AL_ROLE_COUNT]);

/* What a token of the read-only audit App holds (config `audit.app`;
 * forge/audit.c mints it): administration: read, contents: read (and
 * the implied metadata: read). */
void al_audit_app_perms(al_perm_set *out);

#define AL_SECRET_NAME_MAX 64
#define AL_SECRET_VALUE_MAX 1024

/* One static secret (config `secrets:`). */
typedef struct al_broker_secret {
  char *name;   /* [a-z0-9_]{1,63} */
  char *file;   /* where its value is read from */
  char **repos; /* the repositories whose leases may carry it */
  size_t n_repos;
  char *value; /* secret memory (secmem.h), or NULL before al_broker_secrets_load() */
  char fp[20]; /* al_secret_fingerprint() of the value, once loaded */
} al_broker_secret;

/* Check a secret's name: [a-z0-9_], 1 to 63 characters. 0 or -1 with *why. */
int al_secret_name_check(const char *name, const char **why);

typedef struct al_broker_config {
  char *source;            /* file name, for messages */
  char *app_id;            /* decimal app id, or NULL */
  char *client_id;         /* client id, or NULL; exactly one of the two is set */
  char *private_key_path;  /* absolute or relative path of the PEM key, or NULL (gitlab) */
  char *gitlab_token_file; /* gitlab.token_file: a GitLab forge (issue #30), or NULL; exactly
                              one of this and the App is set */
  char *api_url;           /* scheme://host[:port][/prefix], no trailing slash */
  char *ca_file;           /* or NULL */
  uint64_t http_timeout_ms;
  unsigned retries;
  uint64_t max_rate_wait_ms;
  char **repos; /* "owner/repo" as written; matched case-insensitively */
  size_t n_repos;
  al_perm_set roles[AL_ROLE_COUNT];
  uid_t *client_uids;
  size_t n_client_uids;
  uint64_t default_ttl_ms;
  uint64_t max_ttl_ms;
  size_t max_active;
  char *state_dir; /* or NULL */
  /* audit: (all NULL when absent; token_file xor an app) */
  char *audit_token_file;
  char *audit_app_id;        /* decimal id of the audit App, or NULL */
  char *audit_client_id;     /* or its client id */
  char *audit_key_path;      /* its private key (PEM) */
  al_broker_secret *secrets; /* secrets: (names unique) */
  size_t n_secrets;
} al_broker_config;

/* Parse and validate a config file. On success *out is a new config the
 * caller releases with al_broker_config_free(). EINVAL with
 * "FILE:LINE:COL: KEY: rule" for a config that breaks a rule; the errno of
 * the failing call otherwise. Does not read the private key (see
 * al_broker_load_key in github.h). */
int al_broker_config_load_file(const char *path, al_broker_config **out, al_error *err);
/* The same from a buffer; `name` is used in messages. */
int al_broker_config_load_buffer(const char *name, const char *buf, size_t len,
                                 al_broker_config **out, al_error *err);

/* True when `repo` ("owner/repo") is one of the configured repositories. */
bool al_broker_config_repo_allowed(const al_broker_config *c, const char *repo);
/* True when uid is in clients.uids. */
bool al_broker_config_uid_allowed(const al_broker_config *c, uid_t uid);

/* Read the audit token file (config `audit.token_file`). The file must be
 * a regular file (not a symlink), owned by the effective uid, with no group
 * or other access (mode & 077 == 0) — else EPERM before anything is read —
 * and hold one token of [A-Za-z0-9_] (at most 1024 bytes; surrounding
 * whitespace is ignored); else EINVAL. On success *out is the token in
 * secret memory (free it with al_secret_free() from secmem.h); the file's
 * bytes are wiped from the read buffer. Messages never carry the value. */
int al_broker_audit_token_load(const char *path, char **out, al_error *err);

/* Read gitlab.token_file: checked as the audit token file is, one token
 * of [A-Za-z0-9_.-] (GitLab's glpat-...). *out in secret memory. */
int al_broker_gitlab_token_load(const char *path, char **out, al_error *err);

/* Read every `secrets:` file into secret memory (value, fp). Each file
 * is checked like the audit token file (regular, not a symlink, owned by
 * the effective uid, mode & 077 == 0: else EPERM) and must hold one value
 * of printable ASCII without spaces (surrounding whitespace ignored), at
 * most AL_SECRET_VALUE_MAX bytes (else EINVAL). Messages never carry a
 * value. Freed by al_broker_config_free(). */
int al_broker_secrets_load(al_broker_config *c, al_error *err);

/* The secret called name, or NULL. */
const al_broker_secret *al_broker_config_secret(const al_broker_config *c, const char *name);
/* True when the secret may be carried by a lease for `repo`. */
bool al_broker_secret_repo_allowed(const al_broker_secret *s, const char *repo);

void al_broker_config_free(al_broker_config *c);

#endif
