/* The broker daemon: see broker.h. The whole lifecycle of a lease:
 *
 *   accept ─ SO_PEERCRED check ─ NEW ──"lease"──► MINTING (worker thread)
 *        ─► ACTIVE (tokens sent, TTL timer armed)
 *        ─► REVOKING (worker thread: DELETE + confirm 401 per token)
 *        ─► CLOSING (last message flushed) ─► freed
 *
 * Every way out of ACTIVE (release, EOF, reset, TTL, protocol error,
 * shutdown) goes through start_revoke(), the one revoke path.
 *
 * An audit connection takes the other branch from NEW:
 *
 *   NEW ──"audit"──► AUDITING (worker thread: al_audit_run with the App's
 *        JWT and the optional audit credential) ─► CLOSING (report sent)
 *
 * It never holds a lease; a token the audit mints for its reads is revoked
 * inside al_audit_run before the worker returns. Tokens whose
 * revocation could not be confirmed stay in `pending` and are retried on a
 * timer until they are confirmed dead or their expiry has passed. */
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
#include "broker/github.h"
#include "broker/jwt.h"
#include "broker/keep.h"
#include "broker/proto.h"
#include "broker/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
#include "forge/audit.h"

#define HANDSHAKE_MS 30000
#define RETRY_MS 10000
#define TTL_MARGIN_S 60

enum ev_kind { EV_LISTEN, EV_SIGNAL, EV_WAKE, EV_CONN, EV_TIMER, EV_RETRY };
struct ev {
  enum ev_kind kind;
  struct conn *c;
};

enum conn_state { ST_NEW, ST_MINTING, ST_ACTIVE, ST_REVOKING, ST_CLOSING, ST_AUDITING };
static const char *const state_names[] = {"new",      "minting", "active",
                                          "revoking", "closing", "auditing"};

struct broker;

struct conn {
  struct broker *b;
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
  char *report; /* al_audit_format_json(), no secret in it */
  bool holds;
  char failed[512]; /* "id=STATUS ..." of the required criteria that do not hold */
  char credentials[256];
  /* JOB_CHECK (check.h) */
  al_proto_check_req creq;
  json_t *answer;
  struct job *next;
};

struct broker {
  al_broker_config *cfg;
  EVP_PKEY *key;
  al_gh *gh;
  int ep, lfd, sfd, wakefd, retry_tfd, audit_fd;
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
};

/* ---- small helpers ---------------------------------------------------- */

static void format_iso(time_t t, char out[32])
{
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *perms_json(const al_perm_set *s)
{
  json_t *p = json_object();
  for (size_t i = 0; i < s->n; i++)
    json_object_set_new(p, s->items[i].name, json_string(s->items[i].write ? "write" : "read"));
  return p;
}

/* Public description of a token: never its value. */
static json_t *token_public_json(const al_token *t)
{
  return json_pack("{s:s, s:s, s:s, s:o, s:s, s:I}", "role", al_role_name(t->role), "repo", t->repo,
                   "fingerprint", t->fp, "permissions", perms_json(&t->perms), "expires_at",
                   t->expires_at_str, "installation_id", (json_int_t)t->installation_id);
}

/* Public description of the secrets a lease carries: names and
 * fingerprints, never a value. */
static json_t *secrets_public_json(const struct broker *b, const al_proto_lease_req *req);

/* Append one JSON line to the audit log (state_dir/leases.jsonl). */
static void audit(struct broker *b, json_t *rec)
{
  char ts[32];
  format_iso(time(NULL), ts);
  json_object_set_new(rec, "time", json_string(ts));
  if (b->audit_fd < 0) {
    json_decref(rec);
    return;
  }
  size_t len;
  char *line = al_proto_line(rec, &len);
  json_decref(rec);
  if (al_redact_contains_secret(line)) {
    /* Never expected: the record carries fingerprints only. */
    al_error_log("audit record held a secret; not written");
  } else if (al_write_all(b->audit_fd, line, len) < 0) {
    al_warn("audit log: write: %s", strerror(errno));
  }
  free(line);
}

/* ---- worker jobs ------------------------------------------------------ */

/* The audit, on a worker thread: the App's own config and key (already
 * loaded), and the audit credential when configured. */
static void job_audit(struct broker *b, struct job *j)
{
  al_audit_opts ao = {
      .repo = j->areq.repo,
      .branch = j->areq.branch[0] ? j->areq.branch : NULL,
      .timeout_ms = b->cfg->http_timeout_ms,
      .app_config = b->cfg,
      .app_key = b->key,
      .reader_config = b->audit_key ? &b->audit_view : NULL,
      .reader_key = b->audit_key,
  };
  al_audit_report rep;
  if (al_audit_run(&ao, &rep, &j->err) < 0) {
    j->rc = -1;
    return;
  }
  j->rc = 0;
  j->holds = rep.holds;
  j->report = al_audit_format_json(&rep);
  snprintf(j->credentials, sizeof j->credentials, "%s", rep.credentials);
  size_t off = 0;
  for (int i = 0; i < AL_AUDIT_N; i++) {
    const al_audit_criterion *k = &rep.c[i];
    if (!k->required || k->status == AL_AUDIT_PASS || k->status == AL_AUDIT_WARN)
      continue;
    int n = snprintf(j->failed + off, sizeof j->failed - off, "%s%s=%s", off ? " " : "", k->id,
                     al_audit_status_name(k->status));
    if (n < 0 || (size_t)n >= sizeof j->failed - off)
      break;
    off += (size_t)n;
  }
  al_audit_report_free(&rep);
  if (!j->report) {
    j->rc = -1;
    al_make_error(&j->err, ENOMEM, "audit report");
  }
}

/* Keep a token where a restarted broker finds it (keep.h) until it is
 * confirmed dead. Without a keyring the lease still works; a crash of this
 * broker then leaves the token alive until it expires (said at start). */
static void keep_token(struct broker *b, const al_token *t)
{
  if (!b->keep)
    return;
  al_error e = {0};
  if (al_keep_put(b->keep, t, &e) < 0)
    al_error_log("token %s: not kept in the keyring (%s): a broker crash would leave it alive "
                 "until %s",
                 t->fp, e.msg, t->expires_at_str);
}

static void *job_main(void *arg)
{
  struct job *j = arg;
  struct broker *b = j->b;
  if (j->kind == JOB_AUDIT) {
    job_audit(b, j);
  } else if (j->kind == JOB_CHECK) {
    j->rc = al_broker_run_check(b->gh, b->cfg, b->keep, &j->creq, &j->answer, &j->err);
  } else if (j->kind == JOB_MINT) {
    j->rc = 0;
    for (size_t i = 0; i < j->req.n_tokens; i++) {
      const al_proto_token_req *t = &j->req.tokens[i];
      if (al_gh_mint(b->gh, t->role, t->repo, &j->perms[i], &j->tokens[i], &j->err) < 0) {
        al_error_wrap(&j->err, "minting the %s token for %s", al_role_name(t->role), t->repo);
        j->rc = -1;
        break;
      }
      keep_token(b, &j->tokens[i]);
      j->n_tokens++;
    }
  } else {
    for (size_t i = 0; i < j->n_tokens; i++) {
      al_error e;
      al_error_clear(&e);
      j->ok[i] = al_gh_revoke(b->gh, &j->tokens[i], &j->confirmed[i], &e) == 0;
      snprintf(j->errmsg[i], AL_ERROR_MSG_MAX, "%s", j->ok[i] ? "" : e.msg);
    }
  }
  pthread_mutex_lock(&b->done_lock);
  j->next = b->done;
  b->done = j;
  pthread_mutex_unlock(&b->done_lock);
  uint64_t one = 1;
  (void)!write(b->wakefd, &one, sizeof one);
  return NULL;
}

static struct job *job_new(struct broker *b, enum job_kind kind, struct conn *c, size_t ntok)
{
  struct job *j = al_xcalloc(1, sizeof *j);
  j->kind = kind;
  j->b = b;
  j->c = c;
  size_t n = ntok ? ntok : 1;
  j->tokens = al_xcalloc(n, sizeof *j->tokens);
  j->ok = al_xcalloc(n, sizeof *j->ok);
  j->confirmed = al_xcalloc(n, sizeof *j->confirmed);
  j->errmsg = al_xcalloc(n, sizeof *j->errmsg);
  al_error_clear(&j->err);
  return j;
}

static void job_free(struct job *j)
{
  for (size_t i = 0; i < j->n_tokens; i++)
    al_token_clear(&j->tokens[i]);
  free(j->tokens);
  free(j->ok);
  free(j->confirmed);
  free(j->errmsg);
  free(j->report);
  json_decref(j->answer);
  free(j);
}

/* Start j on its own thread. On failure the job runs inline (slow, but the
 * revocation still happens). */
static void job_start(struct broker *b, struct job *j)
{
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  b->jobs_running++;
  if (pthread_create(&j->th, &attr, job_main, j) != 0) {
    al_warn("pthread_create failed; running the job inline");
    job_main(j);
    j->th = pthread_self();
  }
  pthread_attr_destroy(&attr);
}

/* ---- connections ------------------------------------------------------ */

static void conn_flush(struct conn *c);

/* Close c now; the memory is freed by reap_dead() once no event of the
 * current epoll batch can still point at it. */
static void conn_free(struct conn *c)
{
  struct broker *b = c->b;
  if (c->dead)
    return;
  c->dead = true;
  if (c->in_epoll)
    epoll_ctl(b->ep, EPOLL_CTL_DEL, c->fd, NULL);
  c->in_epoll = false;
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  if (c->tfd >= 0) {
    epoll_ctl(b->ep, EPOLL_CTL_DEL, c->tfd, NULL);
    close(c->tfd);
  }
  c->tfd = -1;
  if (c->out) {
    OPENSSL_cleanse(c->out, c->out_len);
    free(c->out);
    c->out = NULL;
  }
  OPENSSL_cleanse(c->in, sizeof c->in);
  for (size_t i = 0; i < c->n_tokens; i++)
    al_token_clear(&c->tokens[i]); /* only reached with no live tokens */
  if (c->counted)
    b->n_active--;
  c->counted = false;
  if (c->prev)
    c->prev->next = c->next;
  else
    b->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->next_dead = b->dead;
  b->dead = c;
  al_debug("connection %s closed", c->id[0] ? c->id : "-");
}

static void reap_dead(struct broker *b)
{
  while (b->dead) {
    struct conn *c = b->dead;
    b->dead = c->next_dead;
    free(c->pending_error);
    free(c);
  }
}

/* Stop reading from the peer (it is gone, or we are done with it). */
static void conn_stop_reading(struct conn *c)
{
  if (c->in_epoll) {
    epoll_ctl(c->b->ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->in_epoll = false;
  }
}

static void conn_update_events(struct conn *c)
{
  if (c->peer_gone)
    return;
  struct epoll_event ev = {.events =
                               EPOLLIN | EPOLLRDHUP | (c->out_off < c->out_len ? EPOLLOUT : 0),
                           .data.ptr = &c->ev_sock};
  epoll_ctl(c->b->ep, c->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
  c->in_epoll = true;
}

/* Queue msg (steals it) for the peer. `secret` lines are wiped once sent. */
static void conn_send(struct conn *c, json_t *msg)
{
  if (c->peer_gone) {
    json_decref(msg);
    return;
  }
  size_t len;
  char *line = al_proto_line(msg, &len);
  json_decref(msg);
  size_t pending = c->out_len - c->out_off;
  char *nb = al_xmalloc(pending + len);
  if (pending)
    memcpy(nb, c->out + c->out_off, pending);
  memcpy(nb + pending, line, len);
  OPENSSL_cleanse(line, len);
  free(line);
  if (c->out) {
    OPENSSL_cleanse(c->out, c->out_len);
    free(c->out);
  }
  c->out = nb;
  c->out_len = pending + len;
  c->out_off = 0;
  conn_flush(c);
}

static void conn_send_error(struct conn *c, const char *code, const char *msg)
{
  conn_send(c, json_pack("{s:s, s:s, s:s}", "type", "error", "code", code, "message", msg));
}

static void conn_maybe_close(struct conn *c)
{
  if (c->st == ST_CLOSING && (c->peer_gone || c->out_off >= c->out_len))
    conn_free(c);
}

static void conn_flush(struct conn *c)
{
  while (!c->peer_gone && c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      c->peer_gone = true; /* EPIPE, ECONNRESET */
      conn_stop_reading(c);
      break;
    }
    c->out_off += (size_t)n;
  }
  if (c->out_off >= c->out_len && c->out) {
    OPENSSL_cleanse(c->out, c->out_len);
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
  }
  conn_update_events(c);
}

static void arm_timer(struct conn *c, uint64_t ms)
{
  struct itimerspec its = {
      .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L}};
  if (ms == 0)
    its.it_value.tv_nsec = 1;
  timerfd_settime(c->tfd, 0, &its, NULL);
}

static void disarm_timer(struct conn *c)
{
  struct itimerspec its = {0};
  timerfd_settime(c->tfd, 0, &its, NULL);
}

/* The one revoke path: hand every live token of c to a worker. */
static void start_revoke(struct conn *c, const char *reason)
{
  struct broker *b = c->b;
  disarm_timer(c);
  c->reason = reason;
  c->st = ST_REVOKING;
  struct job *j = job_new(b, JOB_REVOKE, c, c->n_tokens);
  for (size_t i = 0; i < c->n_tokens; i++) {
    j->tokens[i] = c->tokens[i]; /* moves the secret */
    memset(&c->tokens[i], 0, sizeof c->tokens[i]);
  }
  j->n_tokens = c->n_tokens;
  c->n_tokens = 0;
  al_info("lease %s: ending (%s); revoking %zu token(s)", c->id, reason, j->n_tokens);
  job_start(b, j);
}

/* End a connection because of an error: revoke if it holds tokens. */
static void conn_fail(struct conn *c, const char *code, const char *msg)
{
  al_warn("lease %s (uid %u pid %d): %s: %s", c->id[0] ? c->id : "-", (unsigned)c->uid, (int)c->pid,
          code, msg);
  switch (c->st) {
  case ST_ACTIVE:
    c->pending_error = al_strdup_printf("%s:%s", code, msg);
    start_revoke(c, "protocol error");
    break;
  case ST_NEW:
    conn_send_error(c, code, msg);
    c->st = ST_CLOSING;
    conn_stop_reading(c);
    conn_maybe_close(c);
    break;
  case ST_MINTING:
  case ST_REVOKING:
  case ST_CLOSING:
  default:
    break;
  }
}

/* ---- the request table ------------------------------------------------ */

static int handle_lease(struct conn *c, json_t *msg);
static int handle_release(struct conn *c, json_t *msg);
static int handle_ping(struct conn *c, json_t *msg);
static int handle_audit(struct conn *c, json_t *msg);
static int handle_check(struct conn *c, json_t *msg);

static const struct request_handler {
  const char *type;
  unsigned states; /* bit per enum conn_state */
  int (*fn)(struct conn *c, json_t *msg);
} handlers[] = {
    {"lease", 1u << ST_NEW, handle_lease},
    {"release", 1u << ST_ACTIVE, handle_release},
    {"ping", (1u << ST_NEW) | (1u << ST_MINTING) | (1u << ST_ACTIVE), handle_ping},
    {"audit", 1u << ST_NEW, handle_audit},
    {"check", 1u << ST_NEW, handle_check},
};

/* The admission an "audit" and a "check" share: the repository must be one
 * the client could lease, and the request counts against lease.max_active
 * while its job runs (no lease; the connection closes after the answer).
 * 0, or -1 after answering the client with the refusal. */
static int admit_oneshot(struct conn *c, const char *repo, const char *done_here)
{
  struct broker *b = c->b;
  al_error err;
  al_error_clear(&err);
  if (!al_broker_config_repo_allowed(b->cfg, repo)) {
    char m[300];
    snprintf(m, sizeof m, "repository `%s` may not be leased, so it is not %s here", repo,
             done_here);
    conn_fail(c, "forbidden", m);
    return -1;
  }
  if (b->n_active >= b->cfg->max_active) {
    conn_fail(c, "busy", "too many active leases");
    return -1;
  }
  if (al_random_hex(c->id, 8, &err) < 0) {
    conn_fail(c, "internal", err.msg);
    return -1;
  }
  c->counted = true;
  b->n_active++;
  c->st = ST_AUDITING;
  disarm_timer(c);
  return 0;
}

/* "audit": run `airlock audit` for the client on a repository it could
 * lease. Counts against lease.max_active while it runs. */
static int handle_audit(struct conn *c, json_t *msg)
{
  struct broker *b = c->b;
  al_error err;
  al_error_clear(&err);
  al_proto_audit_req req;
  if (al_proto_audit_req_from_json(msg, &req, &err) < 0) {
    conn_fail(c, "bad_request", err.msg);
    return -1;
  }
  if (admit_oneshot(c, req.repo, "audited") < 0)
    return -1;
  al_info("audit %s: uid %u pid %d asks to audit %s%s%s", c->id, (unsigned)c->uid, (int)c->pid,
          req.repo, req.branch[0] ? " branch " : "", req.branch);
  struct job *j = job_new(b, JOB_AUDIT, c, 0);
  j->areq = req;
  job_start(b, j);
  return 0;
}

/* "check" (check.h): the service's trigger check, with the broker's own
 * short-lived read token. Like an audit: no lease, counted while it runs,
 * then the connection closes. */
static int handle_check(struct conn *c, json_t *msg)
{
  struct broker *b = c->b;
  al_error err;
  al_error_clear(&err);
  al_proto_check_req req;
  if (al_proto_check_req_from_json(msg, &req, &err) < 0) {
    conn_fail(c, "bad_request", err.msg);
    return -1;
  }
  if (admit_oneshot(c, req.repo, "checked") < 0)
    return -1;
  struct job *j = job_new(b, JOB_CHECK, c, 0);
  j->creq = req;
  job_start(b, j);
  return 0;
}

static int handle_ping(struct conn *c, json_t *msg)
{
  (void)msg;
  conn_send(c, json_pack("{s:s}", "type", "pong"));
  return 0;
}

static int handle_release(struct conn *c, json_t *msg)
{
  (void)msg;
  c->reply_on_revoke = true;
  start_revoke(c, "released");
  return 0;
}

static int handle_lease(struct conn *c, json_t *msg)
{
  struct broker *b = c->b;
  al_error err;
  al_error_clear(&err);
  if (al_proto_lease_req_from_json(msg, &c->req, &err) < 0) {
    conn_fail(c, err.code == EPERM ? "forbidden" : "bad_request", err.msg);
    return -1;
  }
  if (b->n_active >= b->cfg->max_active) {
    conn_fail(c, "busy", "too many active leases");
    return -1;
  }
  char desc[512] = "";
  size_t off = 0;
  for (size_t i = 0; i < c->req.n_tokens; i++) {
    al_proto_token_req *t = &c->req.tokens[i];
    const al_perm_set *max = &b->cfg->roles[t->role];
    if (!al_broker_config_repo_allowed(b->cfg, t->repo)) {
      char m[300];
      snprintf(m, sizeof m, "repository `%s` may not be leased", t->repo);
      conn_fail(c, "forbidden", m);
      return -1;
    }
    if (!t->has_perms) {
      c->perms[i] = *max;
    } else {
      for (size_t k = 0; k < t->perms.n; k++) {
        const al_perm *want = &t->perms.items[k];
        const al_perm *cap = al_perm_find(max, want->name);
        if (!cap || (want->write && !cap->write)) {
          char m[300];
          snprintf(m, sizeof m, "role `%s` may not be granted `%s: %s`", al_role_name(t->role),
                   want->name, want->write ? "write" : "read");
          conn_fail(c, "forbidden", m);
          return -1;
        }
      }
      c->perms[i] = t->perms;
    }
    char ps[200];
    al_perm_set_format(&c->perms[i], ps, sizeof ps);
    int n = snprintf(desc + off, sizeof desc - off, "%s%s %s {%s}", i ? ", " : "",
                     al_role_name(t->role), t->repo, ps);
    if (n > 0 && (size_t)n < sizeof desc - off)
      off += (size_t)n;
  }
  /* Static secrets: each must exist and list every repository of the
   * lease; else no lease at all (nothing is minted). */
  for (size_t i = 0; i < c->req.n_secrets; i++) {
    const al_broker_secret *sec = al_broker_config_secret(b->cfg, c->req.secrets[i]);
    char m[400];
    if (!sec) {
      snprintf(m, sizeof m, "no secret `%s` in the broker's config", c->req.secrets[i]);
      conn_fail(c, "forbidden", m);
      return -1;
    }
    for (size_t k = 0; k < c->req.n_tokens; k++)
      if (!al_broker_secret_repo_allowed(sec, c->req.tokens[k].repo)) {
        snprintf(m, sizeof m, "secret `%s` may not be leased for repository `%s`", sec->name,
                 c->req.tokens[k].repo);
        conn_fail(c, "forbidden", m);
        return -1;
      }
    int n = snprintf(desc + off, sizeof desc - off, ", secret %s", sec->name);
    if (n > 0 && (size_t)n < sizeof desc - off)
      off += (size_t)n;
  }
  c->ttl_ms = c->req.ttl_ms ? c->req.ttl_ms : b->cfg->default_ttl_ms;
  if (c->ttl_ms > b->cfg->max_ttl_ms) {
    conn_fail(c, "forbidden", "ttl exceeds lease.max_ttl");
    return -1;
  }
  if (al_random_hex(c->id, 8, &err) < 0) {
    conn_fail(c, "internal", err.msg);
    return -1;
  }
  c->counted = true;
  b->n_active++;
  c->st = ST_MINTING;
  disarm_timer(c);
  al_info("lease %s: uid %u pid %d asks for %s, ttl %llums", c->id, (unsigned)c->uid, (int)c->pid,
          desc, (unsigned long long)c->ttl_ms);
  struct job *j = job_new(b, JOB_MINT, c, c->req.n_tokens);
  j->req = c->req;
  memcpy(j->perms, c->perms, sizeof j->perms);
  job_start(b, j);
  return 0;
}

static void conn_process_line(struct conn *c, char *line, size_t len)
{
  json_error_t je;
  json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  const char *type = json_string_value(json_object_get(msg, "type"));
  if (!msg || !json_is_object(msg) || !type) {
    json_decref(msg);
    conn_fail(c, "bad_request", "expected a JSON object with a string `type`");
    return;
  }
  if (c->st == ST_REVOKING || c->st == ST_CLOSING) {
    json_decref(msg); /* the lease is already ending */
    return;
  }
  for (size_t i = 0; i < AL_ARRAY_SIZE(handlers); i++) {
    if (strcmp(handlers[i].type, type) != 0)
      continue;
    if (!(handlers[i].states & (1u << c->st))) {
      char m[128];
      snprintf(m, sizeof m, "`%s` is not accepted while the lease is %s", type, state_names[c->st]);
      json_decref(msg);
      conn_fail(c, "bad_request", m);
      return;
    }
    handlers[i].fn(c, msg);
    json_decref(msg);
    return;
  }
  char m[128];
  snprintf(m, sizeof m, "unknown request type `%.40s`", type);
  json_decref(msg);
  conn_fail(c, "bad_request", m);
}

static void conn_peer_gone(struct conn *c)
{
  if (c->peer_gone)
    return;
  c->peer_gone = true;
  conn_stop_reading(c);
  al_debug("connection %s: peer closed (state %s)", c->id[0] ? c->id : "-", state_names[c->st]);
  switch (c->st) {
  case ST_NEW:
  case ST_CLOSING:
    c->st = ST_CLOSING;
    conn_maybe_close(c);
    break;
  case ST_ACTIVE:
    start_revoke(c, "connection closed");
    break;
  case ST_MINTING:
  case ST_REVOKING:
  case ST_AUDITING:
  default:
    break; /* the job's completion sees peer_gone */
  }
}

static void conn_readable(struct conn *c)
{
  for (;;) {
    if (c->dead || c->peer_gone)
      return;
    if (c->in_len == sizeof c->in) {
      conn_fail(c, "bad_request", "message too long");
      return;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return;
      conn_peer_gone(c);
      return;
    }
    if (n == 0) {
      conn_peer_gone(c);
      return;
    }
    c->in_len += (size_t)n;
    char *nl;
    while (c->st != ST_CLOSING && (nl = memchr(c->in, '\n', c->in_len))) {
      size_t l = (size_t)(nl - c->in);
      conn_process_line(c, c->in, l);
      size_t rest = c->in_len - l - 1;
      memmove(c->in, nl + 1, rest);
      OPENSSL_cleanse(c->in + rest, c->in_len - rest);
      c->in_len = rest;
    }
    if (c->st == ST_CLOSING)
      return;
  }
}

/* ---- job completion (main thread) ------------------------------------- */

static json_t *secrets_public_json(const struct broker *b, const al_proto_lease_req *req)
{
  json_t *a = json_array();
  for (size_t i = 0; i < req->n_secrets; i++) {
    const al_broker_secret *sec = al_broker_config_secret(b->cfg, req->secrets[i]);
    if (sec)
      json_array_append_new(a, json_pack("{s:s, s:s}", "name", sec->name, "fingerprint", sec->fp));
  }
  return a;
}

static void send_lease(struct conn *c)
{
  json_t *toks = json_array();
  time_t min_exp = 0;
  for (size_t i = 0; i < c->n_tokens; i++) {
    al_token *t = &c->tokens[i];
    json_t *o = token_public_json(t);
    json_object_set_new(o, "token", json_string(t->value));
    json_array_append_new(toks, o);
    if (!min_exp || t->expires_at < min_exp)
      min_exp = t->expires_at;
  }
  /* A lease never outlives its tokens (minus a margin for clock skew). */
  time_t now = time(NULL);
  long long life_ms = ((long long)min_exp - now - TTL_MARGIN_S) * 1000;
  if (life_ms < 1000)
    life_ms = 1000;
  if ((uint64_t)life_ms < c->ttl_ms)
    c->ttl_ms = (uint64_t)life_ms;
  char exp[32];
  format_iso(now + (time_t)(c->ttl_ms / 1000), exp);
  json_t *msg = json_pack("{s:s, s:s, s:I, s:s, s:o}", "type", "lease", "lease", c->id, "ttl_ms",
                          (json_int_t)c->ttl_ms, "expires_at", exp, "tokens", toks);
  json_t *secs = NULL;
  if (c->req.n_secrets) {
    secs = json_object();
    for (size_t k = 0; k < c->req.n_secrets; k++) {
      const al_broker_secret *sec = al_broker_config_secret(c->b->cfg, c->req.secrets[k]);
      if (sec)
        json_object_set_new(secs, sec->name,
                            json_pack("{s:s, s:s}", "value", sec->value, "fingerprint", sec->fp));
    }
    json_object_set_new(msg, "secrets", secs);
  }
  /* Wipe jansson's copies of the values once serialised. */
  size_t len;
  char *line = al_proto_line(msg, &len);
  size_t i;
  json_t *o;
  json_array_foreach(toks, i, o)
  {
    json_t *s = json_object_get(o, "token");
    OPENSSL_cleanse((char *)json_string_value(s), json_string_length(s));
  }
  const char *sk;
  json_object_foreach(secs, sk, o)
  {
    json_t *s = json_object_get(o, "value");
    OPENSSL_cleanse((char *)json_string_value(s), json_string_length(s));
  }
  json_decref(msg);
  size_t pending = c->out_len - c->out_off;
  char *nb = al_xmalloc(pending + len);
  if (pending)
    memcpy(nb, c->out + c->out_off, pending);
  memcpy(nb + pending, line, len);
  OPENSSL_cleanse(line, len);
  free(line);
  if (c->out) {
    OPENSSL_cleanse(c->out, c->out_len);
    free(c->out);
  }
  c->out = nb;
  c->out_len = pending + len;
  c->out_off = 0;
  conn_flush(c);
  arm_timer(c, c->ttl_ms);
}

static void mint_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  for (size_t i = 0; i < j->n_tokens; i++) {
    c->tokens[i] = j->tokens[i];
    memset(&j->tokens[i], 0, sizeof j->tokens[i]);
    al_redact_register(c->tokens[i].value);
  }
  c->n_tokens = j->n_tokens;
  j->n_tokens = 0;
  if (j->rc < 0) {
    al_warn("lease %s: %s", c->id, j->err.msg);
    audit(b, json_pack("{s:s, s:s, s:i, s:i, s:s}", "event", "refused", "lease", c->id, "uid",
                       (int)c->uid, "pid", (int)c->pid, "error", j->err.msg));
    if (c->n_tokens > 0) { /* no half-made lease: kill what was minted */
      c->pending_error = al_strdup_printf("upstream:%s", j->err.msg);
      start_revoke(c, "minting failed");
    } else {
      if (!c->peer_gone)
        conn_send_error(c, "upstream", j->err.msg);
      c->st = ST_CLOSING;
      conn_stop_reading(c);
      conn_maybe_close(c);
    }
    return;
  }
  json_t *pub = json_array();
  for (size_t i = 0; i < c->n_tokens; i++) {
    json_array_append_new(pub, token_public_json(&c->tokens[i]));
    char ps[200];
    al_perm_set_format(&c->tokens[i].perms, ps, sizeof ps);
    al_info("lease %s: %s token %s for %s {%s} expires %s", c->id, al_role_name(c->tokens[i].role),
            c->tokens[i].fp, c->tokens[i].repo, ps, c->tokens[i].expires_at_str);
  }
  for (size_t i = 0; i < c->req.n_secrets; i++) {
    const al_broker_secret *sec = al_broker_config_secret(b->cfg, c->req.secrets[i]);
    if (sec)
      al_info("lease %s: secret %s %s", c->id, sec->name, sec->fp);
  }
  json_t *rec =
      json_pack("{s:s, s:s, s:i, s:i, s:i, s:o}", "event", "granted", "lease", c->id, "uid",
                (int)c->uid, "gid", (int)c->gid, "pid", (int)c->pid, "tokens", pub);
  if (c->req.n_secrets)
    json_object_set_new(rec, "secrets", secrets_public_json(b, &c->req));
  audit(b, rec);
  if (c->peer_gone || b->stopping) {
    c->st = ST_ACTIVE;
    start_revoke(c, c->peer_gone ? "client left before the grant" : "shutdown");
    return;
  }
  c->st = ST_ACTIVE;
  send_lease(c);
}

static void revoke_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  json_t *res = json_array();
  bool all_ok = true;
  for (size_t i = 0; i < j->n_tokens; i++) {
    al_token *t = &j->tokens[i];
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:b, s:b}", "role", al_role_name(t->role), "repo", t->repo,
                  "fingerprint", t->fp, "revoked", j->ok[i], "confirmed", j->confirmed[i]);
    if (j->ok[i]) {
      al_info("lease %s: token %s revoked, 401 confirmed", c ? c->id : "(retry)", t->fp);
      if (b->keep)
        al_keep_drop(b->keep, t->fp);
      al_redact_unregister(t->value);
      al_token_clear(t);
    } else {
      all_ok = false;
      json_object_set_new(o, "error", json_string(j->errmsg[i]));
      if (t->expires_at <= time(NULL)) {
        al_warn("token %s: revocation not confirmed (%s), but it has expired", t->fp, j->errmsg[i]);
        if (b->keep)
          al_keep_drop(b->keep, t->fp);
        al_redact_unregister(t->value);
        al_token_clear(t);
      } else {
        al_error_log("token %s: revocation NOT confirmed: %s; will retry until it expires at %s",
                     t->fp, j->errmsg[i], t->expires_at_str);
        b->pending = al_xrealloc(b->pending, (b->n_pending + 1) * sizeof *b->pending);
        b->pending[b->n_pending++] = *t;
        memset(t, 0, sizeof *t);
      }
    }
    json_array_append_new(res, o);
  }
  audit(b, json_pack("{s:s, s:s, s:s, s:b, s:O}", "event", "revoked", "lease", c ? c->id : "-",
                     "reason", c ? c->reason : "retry", "confirmed", all_ok, "tokens", res));
  if (!c) {
    b->retry_running = false;
    json_decref(res);
    return;
  }
  if (!c->peer_gone) {
    if (c->pending_error) {
      char *sep = strchr(c->pending_error, ':');
      *sep = '\0';
      conn_send_error(c, c->pending_error, sep + 1);
    } else if (c->reply_on_revoke) {
      conn_send(c, json_pack("{s:s, s:s, s:s, s:O}", "type", "revoked", "lease", c->id, "reason",
                             c->reason, "tokens", res));
    }
  }
  json_decref(res);
  c->st = ST_CLOSING;
  conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  conn_maybe_close(c);
}

static void audit_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  if (j->rc < 0) {
    al_warn("audit %s of %s: %s", c->id, j->areq.repo, j->err.msg);
    audit(b, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s}", "event", "audit", "id", c->id, "uid",
                       (int)c->uid, "pid", (int)c->pid, "repo", j->areq.repo, "branch",
                       j->areq.branch, "error", j->err.msg));
    if (!c->peer_gone)
      conn_send_error(c, "upstream", j->err.msg);
  } else {
    json_t *rep = json_loads(j->report, 0, NULL);
    al_info("audit %s of %s: the escape budget %s%s%s", c->id, j->areq.repo,
            j->holds ? "holds" : "DOES NOT hold", j->failed[0] ? ": " : "", j->failed);
    audit(b, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:b, s:s, s:s}", "event", "audit", "id",
                       c->id, "uid", (int)c->uid, "pid", (int)c->pid, "repo", j->areq.repo,
                       "branch", json_string_value(json_object_get(rep, "branch")) ?: "", "holds",
                       j->holds, "not_holding", j->failed, "credentials", j->credentials));
    if (!rep || al_redact_contains_secret(j->report)) {
      /* Never expected: the report names fingerprints only. */
      al_error_log("audit %s: the report is malformed or holds a secret; not sent", c->id);
      if (!c->peer_gone)
        conn_send_error(c, "internal", "the audit report could not be sent");
      json_decref(rep);
    } else if (!c->peer_gone) {
      conn_send(c, json_pack("{s:s, s:s, s:b, s:o}", "type", "audit", "repo", j->areq.repo, "holds",
                             j->holds, "report", rep));
    } else {
      json_decref(rep);
    }
  }
  c->st = ST_CLOSING;
  conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  conn_maybe_close(c);
}

static void check_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  const char *perm = j->answer ? json_string_value(json_object_get(j->answer, "permission")) : NULL;
  al_info("check %s: uid %u asks about %s#%lu%s%s: %s%s", c->id, (unsigned)c->uid, j->creq.repo,
          j->creq.ticket, j->creq.user[0] ? " for " : "", j->creq.user,
          j->rc < 0 ? "failed: " : "permission ", j->rc < 0 ? j->err.msg : (perm ? perm : "-"));
  audit(b, json_pack("{s:s, s:s, s:i, s:i, s:s, s:I, s:s, s:s?, s:s?}", "event", "check", "id",
                     c->id, "uid", (int)c->uid, "pid", (int)c->pid, "repo", j->creq.repo, "ticket",
                     (json_int_t)j->creq.ticket, "user", j->creq.user, "permission", perm, "error",
                     j->rc < 0 ? j->err.msg : NULL));
  if (!c->peer_gone) {
    if (j->rc < 0)
      conn_send_error(c, "upstream", j->err.msg);
    else
      conn_send(c, json_incref(j->answer));
  }
  c->st = ST_CLOSING;
  conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  conn_maybe_close(c);
}

static void drain_jobs(struct broker *b)
{
  uint64_t v;
  (void)!read(b->wakefd, &v, sizeof v);
  pthread_mutex_lock(&b->done_lock);
  struct job *list = b->done;
  b->done = NULL;
  pthread_mutex_unlock(&b->done_lock);
  while (list) {
    struct job *j = list;
    list = j->next;
    if (!pthread_equal(j->th, pthread_self()))
      pthread_join(j->th, NULL);
    b->jobs_running--;
    if (j->kind == JOB_MINT)
      mint_done(b, j);
    else if (j->kind == JOB_AUDIT)
      audit_done(b, j);
    else if (j->kind == JOB_CHECK)
      check_done(b, j);
    else
      revoke_done(b, j);
    job_free(j);
  }
}

static void start_retry(struct broker *b)
{
  if (b->retry_running || b->n_pending == 0)
    return;
  struct job *j = job_new(b, JOB_REVOKE, NULL, b->n_pending);
  for (size_t i = 0; i < b->n_pending; i++)
    j->tokens[i] = b->pending[i];
  j->n_tokens = b->n_pending;
  free(b->pending);
  b->pending = NULL;
  b->n_pending = 0;
  b->retry_running = true;
  al_info("retrying %zu unconfirmed revocation(s)", j->n_tokens);
  job_start(b, j);
}

/* ---- accept, signals, loop -------------------------------------------- */

static void on_accept(struct broker *b)
{
  for (;;) {
    int fd = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        al_warn("accept: %s", strerror(errno));
      return;
    }
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
      al_warn("SO_PEERCRED: %s; connection dropped", strerror(errno));
      close(fd);
      continue;
    }
    if (!al_broker_config_uid_allowed(b->cfg, cred.uid)) {
      al_warn("connection refused: uid %u (pid %d) is not in clients.uids", (unsigned)cred.uid,
              (int)cred.pid);
      static const char m[] = "{\"type\":\"error\",\"code\":\"forbidden\",\"message\":\"uid not "
                              "allowed\"}\n";
      (void)!send(fd, m, sizeof m - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    struct conn *c = al_xcalloc(1, sizeof *c);
    c->b = b;
    c->fd = fd;
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->pid = cred.pid;
    c->ev_sock = (struct ev){EV_CONN, c};
    c->ev_timer = (struct ev){EV_TIMER, c};
    c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (c->tfd < 0) {
      al_warn("timerfd_create: %s; connection dropped", strerror(errno));
      close(fd);
      free(c);
      continue;
    }
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &c->ev_timer};
    epoll_ctl(b->ep, EPOLL_CTL_ADD, c->tfd, &tev);
    c->next = b->conns;
    if (b->conns)
      b->conns->prev = c;
    b->conns = c;
    al_info("connection from uid %u gid %u pid %d", (unsigned)cred.uid, (unsigned)cred.gid,
            (int)cred.pid);
    arm_timer(c, HANDSHAKE_MS);
    conn_update_events(c);
  }
}

static void on_timer(struct conn *c)
{
  uint64_t v;
  if (read(c->tfd, &v, sizeof v) != sizeof v)
    return;
  if (c->st == ST_NEW) {
    conn_fail(c, "bad_request", "no lease request within 30s");
  } else if (c->st == ST_ACTIVE) {
    al_info("lease %s: TTL reached", c->id);
    conn_send(c, json_pack("{s:s, s:s}", "type", "expired", "lease", c->id));
    c->reply_on_revoke = true;
    start_revoke(c, "ttl");
  }
}

/* Unlink the socket path only while it is the inode we bound: a broker
 * started after we stopped listening may own that path now. */
static void unlink_own_socket(struct broker *b)
{
  if (!b->socket_path)
    return;
  struct stat st;
  if (lstat(b->socket_path, &st) == 0) {
    if (st.st_dev == b->sock_dev && st.st_ino == b->sock_ino)
      unlink(b->socket_path);
    else
      al_info("%s is another broker's socket now; left in place", b->socket_path);
  }
  free(b->socket_path);
  b->socket_path = NULL;
}

static void begin_shutdown(struct broker *b)
{
  if (b->stopping)
    return;
  b->stopping = true;
  al_info("shutting down: revoking every live lease");
  if (b->lfd >= 0) {
    epoll_ctl(b->ep, EPOLL_CTL_DEL, b->lfd, NULL);
    close(b->lfd);
    b->lfd = -1;
  }
  /* Nobody can connect any more: the path is free for a new broker now,
   * not after the revocations. */
  unlink_own_socket(b);
  for (struct conn *c = b->conns, *next; c; c = next) {
    next = c->next;
    if (c->st == ST_NEW) {
      c->st = ST_CLOSING;
      conn_stop_reading(c);
      conn_maybe_close(c);
    } else if (c->st == ST_ACTIVE) {
      c->reply_on_revoke = true;
      start_revoke(c, "shutdown");
    }
  }
}

/* The keyring store of this broker's identity (its config file and its
 * socket: a restart with the same command line finds it), and what an
 * earlier run left there: every token it minted and never saw die goes to
 * `pending`, revoked as soon as the loop starts. */
static void open_keep(struct broker *b, const al_broker_opts *opts)
{
  char cfg[PATH_MAX];
  if (!realpath(opts->config_path, cfg))
    snprintf(cfg, sizeof cfg, "%s", opts->config_path);
  al_autofree char *id =
      al_strdup_printf("%s\n%s", cfg, opts->socket_path ? opts->socket_path : "(systemd socket)");
  al_error e = {0};
  if (al_keep_open(id, &b->keep, &e) < 0) {
    al_error_log("no kernel keyring (%s): a crash of this broker would leave its live tokens "
                 "alive until they expire; the supervisor still revokes what it holds",
                 e.msg);
    return;
  }
  al_token *old = NULL;
  int n = al_keep_load(b->keep, &old, &e);
  if (n < 0) {
    al_error_log("%s: %s", al_keep_where(b->keep), e.msg);
  } else if (n > 0) {
    al_warn("%d token(s) minted by an earlier run of this broker were never confirmed dead "
            "(found in the %s); revoking them now",
            n, al_keep_where(b->keep));
    b->pending = al_xrealloc(b->pending, (b->n_pending + (size_t)n) * sizeof *b->pending);
    for (int i = 0; i < n; i++) {
      al_info("token %s (%s %s, expires %s): left by an earlier run", old[i].fp,
              al_role_name(old[i].role), old[i].repo, old[i].expires_at_str);
      al_redact_register(old[i].value);
      b->pending[b->n_pending++] = old[i];
    }
    b->recovered = (size_t)n;
  }
  free(old);
  al_info("outstanding tokens are kept in the %s", al_keep_where(b->keep));
}

static int setup(struct broker *b, const al_broker_opts *opts, al_error *err)
{
  if (al_broker_config_load_file(opts->config_path, &b->cfg, err) < 0)
    return -1;
  if (al_app_key_load(b->cfg->private_key_path, &b->key, err) < 0)
    return -1;
  if (al_gh_new(b->cfg, b->key, &b->gh, err) < 0)
    return -1;
  if (b->cfg->audit_key_path) {
    /* The audit App: loaded once, used only by audits, never leased. */
    b->audit_view = *b->cfg;
    b->audit_view.app_id = b->cfg->audit_app_id;
    b->audit_view.client_id = b->cfg->audit_client_id;
    b->audit_view.private_key_path = b->cfg->audit_key_path;
    if (al_app_key_load(b->cfg->audit_key_path, &b->audit_key, err) < 0)
      return al_error_wrap(err, "audit.app.private_key");
  } else if (b->cfg->audit_token_file) {
    /* Checked now (owner, mode, shape) so a bad file stops the start;
     * read again for each audit, so it can be rotated in place. */
    char *tok = NULL;
    if (al_broker_audit_token_load(b->cfg->audit_token_file, &tok, err) < 0)
      return -1;
    al_secret_free(tok);
  }
  if (al_broker_secrets_load(b->cfg, err) < 0)
    return -1;
  for (size_t i = 0; i < b->cfg->n_secrets; i++) {
    const al_broker_secret *sec = &b->cfg->secrets[i];
    al_redact_register(sec->value);
    al_info("secret %s: %s, for %zu repositories", sec->name, sec->fp, sec->n_repos);
  }
  if (b->cfg->state_dir) {
    if (mkdir(b->cfg->state_dir, 0700) < 0 && errno != EEXIST)
      return al_make_error(err, errno, "state_dir `%s`", b->cfg->state_dir);
    al_autofree char *p = al_strdup_printf("%s/leases.jsonl", b->cfg->state_dir);
    b->audit_fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (b->audit_fd < 0)
      return al_make_error(err, errno, "audit log `%s`", p);
  }
  int lfd = al_broker_inherited_listener(err);
  if (lfd < 0)
    return -1;
  if (lfd == 0) {
    if (!opts->socket_path)
      return al_make_error(err, EINVAL, "no --socket PATH and no socket passed by systemd");
    lfd = al_broker_listen_unix(opts->socket_path, err);
    if (lfd < 0)
      return -1;
    struct stat sst;
    if (lstat(opts->socket_path, &sst) < 0) {
      close(lfd);
      return al_make_error(err, errno, "stat `%s`", opts->socket_path);
    }
    b->socket_path = al_xstrdup(opts->socket_path);
    b->sock_dev = sst.st_dev;
    b->sock_ino = sst.st_ino;
    al_info("listening on %s (mode 0600)", opts->socket_path);
  } else {
    al_info("listening on the socket passed by systemd (fd %d)", lfd);
  }
  b->lfd = lfd;
  if (al_set_nonblock(lfd, true) < 0)
    return al_make_error(err, errno, "O_NONBLOCK on the listener");
  /* Only now, holding the socket (one live broker per path): the keyring
   * of this identity is ours, and what it holds an earlier run left. */
  open_keep(b, opts);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
    return al_make_error(err, errno, "sigprocmask");
  signal(SIGPIPE, SIG_IGN);
  b->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  b->ep = epoll_create1(EPOLL_CLOEXEC);
  b->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  b->retry_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (b->sfd < 0 || b->ep < 0 || b->wakefd < 0 || b->retry_tfd < 0)
    return al_make_error(err, errno, "event loop setup");
  struct itimerspec its = {.it_interval = {.tv_sec = RETRY_MS / 1000},
                           .it_value = {.tv_sec = RETRY_MS / 1000}};
  timerfd_settime(b->retry_tfd, 0, &its, NULL);
  b->ev_listen = (struct ev){EV_LISTEN, NULL};
  b->ev_sig = (struct ev){EV_SIGNAL, NULL};
  b->ev_wake = (struct ev){EV_WAKE, NULL};
  b->ev_retry = (struct ev){EV_RETRY, NULL};
  struct epoll_event e1 = {.events = EPOLLIN, .data.ptr = &b->ev_listen};
  struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = &b->ev_sig};
  struct epoll_event e3 = {.events = EPOLLIN, .data.ptr = &b->ev_wake};
  struct epoll_event e4 = {.events = EPOLLIN, .data.ptr = &b->ev_retry};
  if (epoll_ctl(b->ep, EPOLL_CTL_ADD, b->lfd, &e1) < 0 ||
      epoll_ctl(b->ep, EPOLL_CTL_ADD, b->sfd, &e2) < 0 ||
      epoll_ctl(b->ep, EPOLL_CTL_ADD, b->wakefd, &e3) < 0 ||
      epoll_ctl(b->ep, EPOLL_CTL_ADD, b->retry_tfd, &e4) < 0)
    return al_make_error(err, errno, "epoll_ctl");
  return 0;
}

int al_broker_run(const al_broker_opts *opts, al_error *err)
{
  struct broker b = {.ep = -1, .lfd = -1, .sfd = -1, .wakefd = -1, .retry_tfd = -1, .audit_fd = -1};
  pthread_mutex_init(&b.done_lock, NULL);
  int ret = -1;
  if (setup(&b, opts, err) < 0)
    goto out;
  al_info("broker ready: app %s, API %s, %zu repositories, audit reads with %s",
          b.cfg->app_id ? b.cfg->app_id : b.cfg->client_id, b.cfg->api_url, b.cfg->n_repos,
          b.audit_key               ? "the audit App"
          : b.cfg->audit_token_file ? "audit.token_file"
                                    : "the App's own token");
  start_retry(&b); /* what an earlier run left (open_keep) */
  for (;;) {
    if (b.stopping && !b.conns && b.jobs_running == 0) {
      if (b.n_pending > 0 && !b.shutdown_retry_done) {
        b.shutdown_retry_done = true;
        start_retry(&b);
        continue;
      }
      break;
    }
    struct epoll_event evs[32];
    int n = epoll_wait(b.ep, evs, 32, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      al_error_log("epoll_wait: %s", strerror(errno));
      begin_shutdown(&b);
      continue;
    }
    for (int i = 0; i < n; i++) {
      struct ev *ev = evs[i].data.ptr;
      switch (ev->kind) {
      case EV_LISTEN:
        if (!b.stopping)
          on_accept(&b);
        break;
      case EV_SIGNAL: {
        struct signalfd_siginfo si;
        while (read(b.sfd, &si, sizeof si) == sizeof si) {
          if (si.ssi_signo == SIGHUP)
            al_info("SIGHUP ignored (restart to reload the config)");
          else
            begin_shutdown(&b);
        }
        break;
      }
      case EV_WAKE:
        drain_jobs(&b);
        break;
      case EV_RETRY: {
        uint64_t v;
        (void)!read(b.retry_tfd, &v, sizeof v);
        start_retry(&b);
        break;
      }
      case EV_CONN: {
        struct conn *c = ev->c;
        if (c->dead)
          break;
        uint32_t e = evs[i].events;
        if (e & EPOLLOUT)
          conn_flush(c);
        if (!c->dead && e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
          conn_readable(c); /* reads to EOF; EOF ends the lease */
        break;
      }
      case EV_TIMER:
        if (!ev->c->dead)
          on_timer(ev->c);
        break;
      default:
        break;
      }
    }
    reap_dead(&b);
  }
  ret = 0;
  if (b.n_pending > 0) {
    for (size_t i = 0; i < b.n_pending; i++) {
      al_error_log("token %s: revocation could not be confirmed before exit; it expires at %s%s",
                   b.pending[i].fp, b.pending[i].expires_at_str,
                   b.keep ? "; kept in the keyring: the next start revokes it" : "");
      al_token_clear(&b.pending[i]);
    }
    ret = al_make_error(err, EPROTO, "%zu token(s) could not be confirmed revoked", b.n_pending);
  }
  al_info("broker stopped");
out:
  free(b.pending);
  al_redact_clear();
  unlink_own_socket(&b);
  al_keep_close(b.keep);
  reap_dead(&b);
  int *fds[] = {&b.lfd, &b.sfd, &b.ep, &b.wakefd, &b.retry_tfd, &b.audit_fd};
  for (size_t i = 0; i < AL_ARRAY_SIZE(fds); i++)
    if (*fds[i] >= 0)
      close(*fds[i]);
  al_gh_free(b.gh);
  EVP_PKEY_free(b.key);
  EVP_PKEY_free(b.audit_key);
  al_broker_config_free(b.cfg);
  pthread_mutex_destroy(&b.done_lock);
  return ret;
}

/* ---- sockets ---------------------------------------------------------- */

int al_broker_inherited_listener(al_error *err)
{
  const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
  if (!pid || !fds)
    return 0;
  bool mine = strtol(pid, NULL, 10) == (long)getpid();
  long n = strtol(fds, NULL, 10);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!mine || n < 1)
    return 0;
  int fd = 3; /* SD_LISTEN_FDS_START */
  int v = 0;
  socklen_t l = sizeof v;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0 || !v)
    return al_make_error(err, EINVAL, "fd 3 from systemd is not a listening socket");
  int dom = 0;
  l = sizeof dom;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) < 0 || dom != AF_UNIX)
    return al_make_error(err, EINVAL, "fd 3 from systemd is not an AF_UNIX socket");
  al_set_cloexec(fd, true);
  for (long i = 1; i < n; i++)
    close(3 + (int)i); /* only one socket is used */
  return fd;
}

int al_broker_listen_unix(const char *path, al_error *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return al_make_error(err, ENAMETOOLONG, "socket path `%s`", path);
  strcpy(sa.sun_path, path);
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return al_make_error(err, EEXIST, "`%s` exists and is not a socket", path);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int r = probe >= 0 ? connect(probe, (struct sockaddr *)&sa, sizeof sa) : -1;
    int e = errno;
    if (probe >= 0)
      close(probe);
    if (r == 0)
      return al_make_error(err, EADDRINUSE, "another broker is listening on `%s`", path);
    if (e != ECONNREFUSED)
      return al_make_error(err, e, "probing `%s`", path);
    if (unlink(path) < 0)
      return al_make_error(err, errno, "removing the stale socket `%s`", path);
  }
  /* Bound and listening under a temporary name, then renamed into place:
   * the path never names a socket nobody listens on yet (a client that
   * sees it can connect at once). */
  struct sockaddr_un tmp = {.sun_family = AF_UNIX};
  int tn = snprintf(tmp.sun_path, sizeof tmp.sun_path, "%s.%d", path, (int)getpid());
  if (tn < 0 || (size_t)tn >= sizeof tmp.sun_path)
    return al_make_error(err, ENAMETOOLONG, "socket path `%s`", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return al_make_error(err, errno, "socket");
  unlink(tmp.sun_path); /* a leftover of a broker with our pid that was killed */
  mode_t old = umask(0177);
  int r = bind(fd, (struct sockaddr *)&tmp, sizeof tmp);
  int e = errno;
  umask(old);
  if (r < 0) {
    close(fd);
    return al_make_error(err, e, "bind `%s`", tmp.sun_path);
  }
  if (chmod(tmp.sun_path, 0600) < 0 || listen(fd, 128) < 0 || rename(tmp.sun_path, path) < 0) {
    e = errno;
    close(fd);
    unlink(tmp.sun_path);
    return al_make_error(err, e, "listen `%s`", path);
  }
  return fd;
}
