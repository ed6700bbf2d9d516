/* What the files of the broker daemon share (broker.c: the event loop, setup
 * and the sockets; broker_conn.c: one client connection and the request
 * table; broker_jobs.c: the worker threads and their completion on the main
 * thread): the state of the daemon, a connection and a job. Not installed;
 * see broker.h for the public contract. */
#ifndef AL_BROKER_INTERNAL_H
#define AL_BROKER_INTERNAL_H

#include "broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "broker/check.h"
#include "forge/app.h"
#include "forge/ghapi.h"
#include "forge/jwt.h"
#include "broker/keep.h"
#include "broker/proto.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"

#define HANDSHAKE_MS 30000
#define RETRY_MS 10000
#define TTL_MARGIN_S 60

enum ev_kind { EV_LISTEN, EV_SIGNAL, EV_WAKE, EV_CONN, EV_TIMER, EV_RETRY };
struct ev {
  enum ev_kind kind;
  struct conn *c;
};

enum conn_state { ST_NEW, ST_MINTING, ST_ACTIVE, ST_REVOKING, ST_CLOSING, ST_AUDITING };

struct broker;

struct conn {
  struct broker *b;
  al_ghapi_counts grant_rq; /* the forge requests the grant took (sent with it) */
  int fd, tfd;
  struct ev ev_sock, ev_timer;
  pid_t pid;
  uid_t uid;
  gid_t gid;
  enum conn_state st;
  char id[17];
  char in[AL_PROTO_LINE_MAX];
  size_t in_len;
  char *out;
  size_t out_len, out_off;
  bool peer_gone;
  bool in_epoll;
  bool counted;         /* counts against max_active */
  bool reply_on_revoke; /* send "revoked" when done */
  char *pending_error;  /* send this error (code:message) instead of "revoked" */
  const char *reason;
  al_proto_lease_req req;
  al_perm_set perms[AL_ROLE_COUNT];
  al_token tokens[AL_ROLE_COUNT];
  size_t n_tokens;
  uint64_t ttl_ms;
  bool dead; /* closed; freed at the end of the event batch */
  struct conn *prev, *next, *next_dead;
};

enum job_kind { JOB_MINT, JOB_REVOKE, JOB_AUDIT, JOB_CHECK };

struct job {
  enum job_kind kind;
  struct broker *b;
  struct conn *c; /* NULL for a retry of pending revocations */
  pthread_t th;
  al_proto_lease_req req;
  al_perm_set perms[AL_ROLE_COUNT];
  al_token *tokens;
  size_t n_tokens;
  bool *ok, *confirmed;
  char (*errmsg)[AL_ERROR_MSG_MAX];
  int rc;
  al_error err;
  /* JOB_AUDIT */
  al_proto_audit_req areq;
  char *file_tok;        /* audit.token_file's token (secret memory), or NULL */
  char credentials[256]; /* how the audit's read token was made (no secret) */
  /* JOB_CHECK (check.h) */
  al_proto_check_req creq;
  json_t *answer;     /* the check's answer; the audit's grant (no secret in it) */
  al_ghapi_counts rq; /* the forge requests this job sent (its thread's) */
  struct job *next;
};

struct broker {
  al_broker_config *cfg;
  EVP_PKEY *key;
  al_gh *gh;
  int ep, lfd, sfd, wakefd, retry_tfd, lease_fd;
  char *socket_path; /* unlinked at exit when we created it and it is still ours */
  dev_t sock_dev;    /* the inode we bound: a newer broker's socket at the same path is
                        never unlinked (issue #14) */
  ino_t sock_ino;
  al_keep *keep; /* outstanding tokens in the kernel keyring (keep.h), or NULL */
  struct ev ev_listen, ev_sig, ev_wake, ev_retry;
  struct conn *conns;
  struct conn *dead; /* closed connections, freed after the event batch */
  size_t n_active;
  pthread_mutex_t done_lock;
  struct job *done;
  size_t jobs_running;
  bool stopping;
  bool retry_running;
  bool shutdown_retry_done;
  al_token *pending;
  size_t n_pending;
  bool unconfirmed_at_exit;
  size_t recovered; /* tokens an earlier run left in the keyring */
  /* audit.app: the audit App (borrows cfg's strings), or audit_key NULL */
  al_broker_config audit_view;
  EVP_PKEY *audit_key;
  al_gh *audit_gh; /* its forge client: mints the audit's read tokens */
};

/* ---- src/lib/broker/broker.c ---- */
void bk_format_iso(time_t t, char out[32]);
json_t *bk_token_public_json(const al_token *t);
void bk_lease_log(struct broker *b, json_t *rec);

/* ---- src/lib/broker/broker_conn.c ---- */
void bk_reap_dead(struct broker *b);
void bk_conn_stop_reading(struct conn *c);
void bk_conn_update_events(struct conn *c);
/* Append one serialised line (len bytes, ours: wiped and freed here) to the
 * peer's output, wiping the old buffer, and try to send. */
void bk_conn_queue_line(struct conn *c, char *line, size_t len);
void bk_conn_send(struct conn *c, json_t *msg);
void bk_conn_send_error(struct conn *c, const char *code, const char *msg);
void bk_conn_maybe_close(struct conn *c);
void bk_conn_flush(struct conn *c);
void bk_arm_timer(struct conn *c, uint64_t ms);
void bk_start_revoke(struct conn *c, const char *reason);
void bk_conn_fail(struct conn *c, const char *code, const char *msg);
void bk_conn_readable(struct conn *c);

/* ---- src/lib/broker/broker_jobs.c ---- */
struct job *bk_job_new(struct broker *b, enum job_kind kind, struct conn *c, size_t ntok);
void bk_job_start(struct broker *b, struct job *j);
json_t *bk_secrets_public_json(const struct broker *b, const al_proto_lease_req *req);
void bk_drain_jobs(struct broker *b);
void bk_start_retry(struct broker *b);

#endif
