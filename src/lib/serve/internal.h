/* Shared between serve.c (scheduler), outcome.c (a finished run),
 * recover.c (fences, start-up recovery), http.c (listeners) and status.c
 * (pages): the daemon's state. */
#ifndef AL_SERVE_INTERNAL_H
#define AL_SERVE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "serve/config.h"
#include "serve/queue.h"

struct MHD_Daemon;

struct serve_child {
  int64_t id; /* queue row */
  pid_t pid;  /* also its process group */
  char record[PATH_MAX];
  int attempts;
  bool stopping; /* we sent SIGTERM (shutdown): the run is interrupted */
  uint64_t stop_sent_ms;
  char fence[300]; /* the attempt's fencing token */
};

/* A running row whose process this replica cannot see (another PID
 * namespace, or another host): recovered only once its heartbeat has not
 * changed for hb_stale_ms by our clock (serve.c). */
struct serve_pending {
  int64_t id;
  int attempts;
  pid_t pid;
  char fence[300];
  char hb[200]; /* the heartbeat's content as last read */
  uint64_t seen_ms;
  uint64_t since_ms;
};

struct serve_election;

/* A webhook secret (secret.c): an mlocked page, or b NULL. */
struct serve_secret {
  unsigned char *b;
  size_t len;
};

/* A served repository's ticket system, from its policy (serve.c preflight). */
struct serve_tk_route {
  int kind;         /* al_tk_kind: 0 github, 1 jira, 2 linear */
  int forge;        /* al_forge_kind of its policy: 0 github, 1 gitlab */
  char project[16]; /* the Jira project / Linear team key; "" for github */
};

struct serve {
  const al_serve_config *cfg;
  al_queue *q;
  struct serve_secret gh, jira, linear;     /* webhook.secret_file, webhook.jira/linear */
  struct serve_secret gl_token, gl_signing; /* webhook.gitlab: secret_file, signing_token_file */
  struct serve_tk_route *tk;                /* per cfg->repos[i]; NULL before preflight */
  struct MHD_Daemon *d_webhook, *d_status;  /* d_status NULL when shared with d_webhook */
  bool shared_listener;
  char airlock[PATH_MAX]; /* the binary each run execs */
  char records_dir[PATH_MAX], logs_dir[PATH_MAX];
  struct serve_child *children;
  size_t n_children;
  uint64_t started_ms;
  uint64_t gc_ms;    /* the last retention pass (CLOCK_MONOTONIC ms) */
  int leader;        /* the election: -1 none (this process dequeues), 0 standby, 1 leader;
                        written by the scheduler, read by the status threads (atomic) */
  int stop_signal;   /* SIGTERM/SIGINT read while stopping runs, for the main loop */
  int lock_fd;       /* state_dir/serve.lock (instance.c) */
  char instance[40]; /* the queue file's instance id (al_queue_claim) */
  char pid_ns[64];   /* our PID namespace, "pid:[N]" */
  char fence_dir[PATH_MAX];
  char stamp[PATH_MAX];      /* our leader stamp (election), "" without */
  struct serve_election *el; /* NULL without an election */
  uint64_t hb_stale_ms;
  struct serve_pending *pending;
  size_t n_pending;
  /* the watchdog (a thread of its own): a leader past renew_deadline
   * stops its runs even when the main loop does not run */
  pthread_mutex_t children_lock; /* children[] between the main loop and the watchdog */
  pthread_t watchdog;
  bool watchdog_running;
  uint64_t lead_until_ms; /* atomic: CLOCK_MONOTONIC ms the Lease is ours until, 0: not leading */
  int watchdog_stop;      /* atomic */
};

/* JSON-lines log on stderr: {"time","level","event","msg",...extra}.
 * extra (may be NULL) is stolen. Text goes through al_redact(). */
#include <jansson.h>
void serve_log(const char *level, const char *event, json_t *extra, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Lock state_dir for this process's life (instance.c): exclusively, or
 * shared by the replicas of an election. The fd stays open (O_CLOEXEC: no
 * run inherits it). *fd_out: the lock file. EBUSY naming the holder's pid when another holds it. */
int serve_lock_state_dir(const char *state_dir, bool shared, int *fd_out, al_error *err);

/* Read the secret file at path (key: its config key, for messages): a
 * regular file of this user, mode 0600 or 0400, 1..4096 bytes, one
 * trailing newline dropped (secret.c). -1 with err (EPERM, EINVAL, or
 * open's errno) naming the key and the file. */
int serve_secret_load(const char *key, const char *path, struct serve_secret *out, al_error *err);
/* Wipe and unmap (NULL b: nothing). */
void serve_secret_wipe(struct serve_secret *sec);

/* One Jira or Linear delivery, as the listener read it (intake_tickets.c). */
typedef enum serve_vendor { SERVE_JIRA, SERVE_LINEAR } serve_vendor;
struct serve_hook_req {
  serve_vendor vendor;
  const char *signature; /* X-Hub-Signature / Linear-Signature, or NULL */
  const char *delivery;  /* X-Atlassian-Webhook-Identifier / Linear-Delivery, or NULL */
  const char *peer;      /* the client's address, for the log */
  const char *body;      /* the raw body (NUL-terminated), len bytes */
  size_t len;
};
/* Authenticate, de-duplicate, parse and route one delivery, then queue
 * its run (the order is http.c's for GitHub's; docs/serve.md). Returns
 * the HTTP status; *answer (new reference) the JSON body {outcome,
 * detail | run}, *retry_after seconds (0: none). Every refusal is logged
 * (webhook_refused with its rule) and, once the delivery id is known and
 * its signature holds, recorded as the delivery's outcome. */
unsigned serve_ticket_hook(struct serve *s, const struct serve_hook_req *rq, json_t **answer,
                           unsigned *retry_after);

/* One GitLab delivery, as the listener read it (intake_gitlab.c); each
 * header NULL when absent. */
struct serve_gl_req {
  const char *token; /* X-Gitlab-Token */
  const char *uuid;  /* X-Gitlab-Event-UUID: the replay key */
  const char *event; /* X-Gitlab-Event */
  const char *wh_id; /* webhook-id, webhook-timestamp, webhook-signature (the signed form) */
  const char *wh_ts;
  const char *wh_sig;
  const char *peer;
  const char *body; /* NUL-terminated, len bytes */
  size_t len;
};
/* webhook.gitlab's files into s->gl_token and s->gl_signing (either may
 * be absent; the signing token must be whsec_<base64 of 16..64 bytes>).
 * 0, or -1 with err naming the key. */
int serve_gitlab_secrets_load(struct serve *s, al_error *err);
/* Authenticate, de-duplicate, parse and route one GitLab delivery, then
 * queue its run, as serve_ticket_hook does (docs/serve.md): the row's
 * target is the project's full path and the iid, its sender the
 * GitLab username, whose access level the trigger check asks GitLab. */
unsigned serve_gitlab_hook(struct serve *s, const struct serve_gl_req *rq, json_t **answer,
                           unsigned *retry_after);

/* Start the listeners of s->cfg (http.c). */
int serve_http_start(struct serve *s, al_error *err);
void serve_http_stop(struct serve *s);

/* Pages (status.c): each returns a malloc'd body and sets *type. */
char *serve_page_index(struct serve *s, const char **type);
char *serve_page_run(struct serve *s, int64_t id, const char **type, int *status);
char *serve_page_runs_json(struct serve *s, const char **type);
char *serve_page_metrics(struct serve *s, const char **type);

/* How long a stopped run may take to exit after SIGTERM before SIGKILL
 * (shutdown, recovery). */
#define STOP_GRACE_MS 60000

/* A reaped child (outcome.c): its record classified, its row finished
 * (ended, re-queued or retried), its slot in s->children freed. Called
 * with children_lock held. */
void serve_child_done(struct serve *s, struct serve_child *c, int wstatus);
/* Finished rows without denials (a database migrated from schema 0): read
 * again from their run records (outcome.c). */
void serve_refill_denials(struct serve *s);

/* Fences and recovery (recover.c). */
/* Field 22 of /proc/PID/stat (start time in clock ticks), "" when gone. */
void serve_proc_start_time(pid_t pid, char out[32]);
/* Write a small file whole or not at all (a temporary, then rename). */
int serve_write_atomic(const char *path, const char *text, al_error *err);
/* The fence file of row id: fence_dir/ID. */
void serve_fence_path(const struct serve *s, int64_t id, char *out, size_t n);
/* The fencing token of attempt `attempt` of row `id` under this replica. */
void serve_make_token(const struct serve *s, int64_t id, int attempt, const char *tag, char *out,
                      size_t n);
/* Make `token` the row's current one in its fence file. */
int serve_set_fence(const struct serve *s, int64_t id, const char *token, al_error *err);
/* Rows left `running` by a service that died or by another replica:
 * stopped, fenced and finished, or pending on their heartbeat. */
void serve_recover(struct serve *s);
/* The pending rows whose heartbeat has stopped: fenced and finished. */
void serve_pending_step(struct serve *s);

#endif
