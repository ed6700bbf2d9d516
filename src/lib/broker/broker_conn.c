/* The broker daemon, one client connection (see broker.c for the
 * lifecycle): buffered line I/O on the epoll loop, the TTL timer, the one
 * revoke path (start_revoke), and the request table (lease, release,
 * ping, audit, check). */
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

#include "broker/broker_internal.h"
#include "broker/check.h"
#include "forge/app.h"
#include "forge/jwt.h"
#include "broker/keep.h"
#include "broker/proto.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
static const char *const state_names[] = {"new",      "minting", "active",
                                          "revoking", "closing", "auditing"};
/* ---- connections ------------------------------------------------------ */

/* Close c now; the memory is freed by bk_reap_dead() once no event of the
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

void bk_reap_dead(struct broker *b)
{
  while (b->dead) {
    struct conn *c = b->dead;
    b->dead = c->next_dead;
    free(c->pending_error);
    free(c);
  }
}

/* Stop reading from the peer (it is gone, or we are done with it). */
void bk_conn_stop_reading(struct conn *c)
{
  if (c->in_epoll) {
    epoll_ctl(c->b->ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->in_epoll = false;
  }
}

void bk_conn_update_events(struct conn *c)
{
  if (c->peer_gone)
    return;
  struct epoll_event ev = {.events =
                               EPOLLIN | EPOLLRDHUP | (c->out_off < c->out_len ? EPOLLOUT : 0),
                           .data.ptr = &c->ev_sock};
  epoll_ctl(c->b->ep, c->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
  c->in_epoll = true;
}

void bk_conn_queue_line(struct conn *c, char *line, size_t len)
{
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
  bk_conn_flush(c);
}

/* Queue msg (steals it) for the peer. `secret` lines are wiped once sent. */
void bk_conn_send(struct conn *c, json_t *msg)
{
  if (c->peer_gone) {
    json_decref(msg);
    return;
  }
  size_t len;
  char *line = al_proto_line(msg, &len);
  json_decref(msg);
  bk_conn_queue_line(c, line, len);
}

void bk_conn_send_error(struct conn *c, const char *code, const char *msg)
{
  bk_conn_send(c, json_pack("{s:s, s:s, s:s}", "type", "error", "code", code, "message", msg));
}

void bk_conn_maybe_close(struct conn *c)
{
  if (c->st == ST_CLOSING && (c->peer_gone || c->out_off >= c->out_len))
    conn_free(c);
}

void bk_conn_flush(struct conn *c)
{
  while (!c->peer_gone && c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      c->peer_gone = true; /* EPIPE, ECONNRESET */
      bk_conn_stop_reading(c);
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
  bk_conn_update_events(c);
}

void bk_arm_timer(struct conn *c, uint64_t ms)
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
void bk_start_revoke(struct conn *c, const char *reason)
{
  struct broker *b = c->b;
  disarm_timer(c);
  c->reason = reason;
  c->st = ST_REVOKING;
  struct job *j = bk_job_new(b, JOB_REVOKE, c, c->n_tokens);
  for (size_t i = 0; i < c->n_tokens; i++) {
    j->tokens[i] = c->tokens[i]; /* moves the secret */
    memset(&c->tokens[i], 0, sizeof c->tokens[i]);
  }
  j->n_tokens = c->n_tokens;
  c->n_tokens = 0;
  al_info("lease %s: ending (%s); revoking %zu token(s)", c->id, reason, j->n_tokens);
  bk_job_start(b, j);
}

/* End a connection because of an error: revoke if it holds tokens. */
void bk_conn_fail(struct conn *c, const char *code, const char *msg)
{
  al_warn("lease %s (uid %u pid %d): %s: %s", c->id[0] ? c->id : "-", (unsigned)c->uid, (int)c->pid,
          code, msg);
  switch (c->st) {
  case ST_ACTIVE:
    c->pending_error = al_strdup_printf("%s:%s", code, msg);
    bk_start_revoke(c, "protocol error");
    break;
  case ST_NEW:
    bk_conn_send_error(c, code, msg);
    c->st = ST_CLOSING;
    bk_conn_stop_reading(c);
    bk_conn_maybe_close(c);
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
    bk_conn_fail(c, "forbidden", m);
    return -1;
  }
  if (b->n_active >= b->cfg->max_active) {
    bk_conn_fail(c, "busy", "too many active leases");
    return -1;
  }
  if (al_random_hex(c->id, 8, &err) < 0) {
    bk_conn_fail(c, "internal", err.msg);
    return -1;
  }
  c->counted = true;
  b->n_active++;
  c->st = ST_AUDITING;
  disarm_timer(c);
  return 0;
}

/* "audit": lease the read tokens of the client's own `airlock audit` of a
 * repository it could lease (broker_jobs.c job_audit; the broker runs no
 * audit). Counts against lease.max_active until the grant's tokens are
 * revoked. */
static int handle_audit(struct conn *c, json_t *msg)
{
  struct broker *b = c->b;
  al_error err;
  al_error_clear(&err);
  al_proto_audit_req req;
  if (al_proto_audit_req_from_json(msg, &req, &err) < 0) {
    bk_conn_fail(c, "bad_request", err.msg);
    return -1;
  }
  if (admit_oneshot(c, req.repo, "audited") < 0)
    return -1;
  al_info("audit %s: uid %u pid %d asks to audit %s%s%s", c->id, (unsigned)c->uid, (int)c->pid,
          req.repo, req.branch[0] ? " branch " : "", req.branch);
  struct job *j = bk_job_new(b, JOB_AUDIT, c, 2);
  j->areq = req;
  bk_job_start(b, j);
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
    bk_conn_fail(c, "bad_request", err.msg);
    return -1;
  }
  if (admit_oneshot(c, req.repo, "checked") < 0)
    return -1;
  struct job *j = bk_job_new(b, JOB_CHECK, c, 0);
  j->creq = req;
  bk_job_start(b, j);
  return 0;
}

static int handle_ping(struct conn *c, json_t *msg)
{
  (void)msg;
  bk_conn_send(c, json_pack("{s:s}", "type", "pong"));
  return 0;
}

static int handle_release(struct conn *c, json_t *msg)
{
  (void)msg;
  c->reply_on_revoke = true;
  bk_start_revoke(c, "released");
  return 0;
}

static int handle_lease(struct conn *c, json_t *msg)
{
  struct broker *b = c->b;
  al_error err;
  al_error_clear(&err);
  if (al_proto_lease_req_from_json(msg, &c->req, &err) < 0) {
    bk_conn_fail(c, err.code == EPERM ? "forbidden" : "bad_request", err.msg);
    return -1;
  }
  if (b->n_active >= b->cfg->max_active) {
    bk_conn_fail(c, "busy", "too many active leases");
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
      bk_conn_fail(c, "forbidden", m);
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
          bk_conn_fail(c, "forbidden", m);
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
      bk_conn_fail(c, "forbidden", m);
      return -1;
    }
    for (size_t k = 0; k < c->req.n_tokens; k++)
      if (!al_broker_secret_repo_allowed(sec, c->req.tokens[k].repo)) {
        snprintf(m, sizeof m, "secret `%s` may not be leased for repository `%s`", sec->name,
                 c->req.tokens[k].repo);
        bk_conn_fail(c, "forbidden", m);
        return -1;
      }
    int n = snprintf(desc + off, sizeof desc - off, ", secret %s", sec->name);
    if (n > 0 && (size_t)n < sizeof desc - off)
      off += (size_t)n;
  }
  c->ttl_ms = c->req.ttl_ms ? c->req.ttl_ms : b->cfg->default_ttl_ms;
  if (c->ttl_ms > b->cfg->max_ttl_ms) {
    bk_conn_fail(c, "forbidden", "ttl exceeds lease.max_ttl");
    return -1;
  }
  if (al_random_hex(c->id, 8, &err) < 0) {
    bk_conn_fail(c, "internal", err.msg);
    return -1;
  }
  c->counted = true;
  b->n_active++;
  c->st = ST_MINTING;
  disarm_timer(c);
  al_info("lease %s: uid %u pid %d asks for %s, ttl %llums", c->id, (unsigned)c->uid, (int)c->pid,
          desc, (unsigned long long)c->ttl_ms);
  struct job *j = bk_job_new(b, JOB_MINT, c, c->req.n_tokens);
  j->req = c->req;
  memcpy(j->perms, c->perms, sizeof j->perms);
  bk_job_start(b, j);
  return 0;
}

static void conn_process_line(struct conn *c, char *line, size_t len)
{
  json_error_t je;
  json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  const char *type = json_string_value(json_object_get(msg, "type"));
  if (!msg || !json_is_object(msg) || !type) {
    json_decref(msg);
    bk_conn_fail(c, "bad_request", "expected a JSON object with a string `type`");
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
      bk_conn_fail(c, "bad_request", m);
      return;
    }
    handlers[i].fn(c, msg);
    json_decref(msg);
    return;
  }
  char m[128];
  snprintf(m, sizeof m, "unknown request type `%.40s`", type);
  json_decref(msg);
  bk_conn_fail(c, "bad_request", m);
}

static void conn_peer_gone(struct conn *c)
{
  if (c->peer_gone)
    return;
  c->peer_gone = true;
  bk_conn_stop_reading(c);
  al_debug("connection %s: peer closed (state %s)", c->id[0] ? c->id : "-", state_names[c->st]);
  switch (c->st) {
  case ST_NEW:
  case ST_CLOSING:
    c->st = ST_CLOSING;
    bk_conn_maybe_close(c);
    break;
  case ST_ACTIVE:
    bk_start_revoke(c, "connection closed");
    break;
  case ST_MINTING:
  case ST_REVOKING:
  case ST_AUDITING:
  default:
    break; /* the job's completion sees peer_gone */
  }
}

void bk_conn_readable(struct conn *c)
{
  for (;;) {
    if (c->dead || c->peer_gone)
      return;
    if (c->in_len == sizeof c->in) {
      bk_conn_fail(c, "bad_request", "message too long");
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
