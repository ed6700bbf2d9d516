/* The broker daemon's worker jobs (see broker.c): mint, revoke, audit and
 * check run on a thread each; their results are taken on the main thread
 * (drain_jobs), which sends the lease, confirms revocations, retries the
 * pending ones and answers audits and checks. */
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
#include "forge/audit.h"
/* ---- worker jobs ------------------------------------------------------ */

/* The audit, on a worker thread: the App's own config and key (already
 * loaded), and the audit credential when configured. */
static void job_audit(struct broker *b, struct job *j)
{
  al_audit_opts ao = {
      .repo = j->areq.repo,
      .branch = j->areq.branch[0] ? j->areq.branch : NULL,
      .run_prefix = j->areq.run_prefix[0] ? j->areq.run_prefix : NULL,
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

struct job *bk_job_new(struct broker *b, enum job_kind kind, struct conn *c, size_t ntok)
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
void bk_job_start(struct broker *b, struct job *j)
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

/* ---- job completion (main thread) ------------------------------------- */

json_t *bk_secrets_public_json(const struct broker *b, const al_proto_lease_req *req)
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
    json_t *o = bk_token_public_json(t);
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
  bk_format_iso(now + (time_t)(c->ttl_ms / 1000), exp);
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
  bk_conn_queue_line(c, line, len);
  bk_arm_timer(c, c->ttl_ms);
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
    bk_audit_log(b, json_pack("{s:s, s:s, s:i, s:i, s:s}", "event", "refused", "lease", c->id,
                              "uid", (int)c->uid, "pid", (int)c->pid, "error", j->err.msg));
    if (c->n_tokens > 0) { /* no half-made lease: kill what was minted */
      c->pending_error = al_strdup_printf("upstream:%s", j->err.msg);
      bk_start_revoke(c, "minting failed");
    } else {
      if (!c->peer_gone)
        bk_conn_send_error(c, "upstream", j->err.msg);
      c->st = ST_CLOSING;
      bk_conn_stop_reading(c);
      bk_conn_maybe_close(c);
    }
    return;
  }
  json_t *pub = json_array();
  for (size_t i = 0; i < c->n_tokens; i++) {
    json_array_append_new(pub, bk_token_public_json(&c->tokens[i]));
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
    json_object_set_new(rec, "secrets", bk_secrets_public_json(b, &c->req));
  bk_audit_log(b, rec);
  if (c->peer_gone || b->stopping) {
    c->st = ST_ACTIVE;
    bk_start_revoke(c, c->peer_gone ? "client left before the grant" : "shutdown");
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
  bk_audit_log(b,
               json_pack("{s:s, s:s, s:s, s:b, s:O}", "event", "revoked", "lease", c ? c->id : "-",
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
      bk_conn_send_error(c, c->pending_error, sep + 1);
    } else if (c->reply_on_revoke) {
      bk_conn_send(c, json_pack("{s:s, s:s, s:s, s:O}", "type", "revoked", "lease", c->id, "reason",
                                c->reason, "tokens", res));
    }
  }
  json_decref(res);
  c->st = ST_CLOSING;
  bk_conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  bk_conn_maybe_close(c);
}

static void audit_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  if (j->rc < 0) {
    al_warn("audit %s of %s: %s", c->id, j->areq.repo, j->err.msg);
    bk_audit_log(b, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s}", "event", "audit", "id", c->id,
                              "uid", (int)c->uid, "pid", (int)c->pid, "repo", j->areq.repo,
                              "branch", j->areq.branch, "error", j->err.msg));
    if (!c->peer_gone)
      bk_conn_send_error(c, "upstream", j->err.msg);
  } else {
    json_t *rep = json_loads(j->report, 0, NULL);
    al_info("audit %s of %s: the escape budget %s%s%s", c->id, j->areq.repo,
            j->holds ? "holds" : "DOES NOT hold", j->failed[0] ? ": " : "", j->failed);
    bk_audit_log(b, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:b, s:s, s:s}", "event", "audit",
                              "id", c->id, "uid", (int)c->uid, "pid", (int)c->pid, "repo",
                              j->areq.repo, "branch",
                              json_string_value(json_object_get(rep, "branch")) ?: "", "holds",
                              j->holds, "not_holding", j->failed, "credentials", j->credentials));
    if (!rep || al_redact_contains_secret(j->report)) {
      /* Never expected: the report names fingerprints only. */
      al_error_log("audit %s: the report is malformed or holds a secret; not sent", c->id);
      if (!c->peer_gone)
        bk_conn_send_error(c, "internal", "the audit report could not be sent");
      json_decref(rep);
    } else if (!c->peer_gone) {
      bk_conn_send(c, json_pack("{s:s, s:s, s:b, s:o}", "type", "audit", "repo", j->areq.repo,
                                "holds", j->holds, "report", rep));
    } else {
      json_decref(rep);
    }
  }
  c->st = ST_CLOSING;
  bk_conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  bk_conn_maybe_close(c);
}

static void check_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  const char *perm = j->answer ? json_string_value(json_object_get(j->answer, "permission")) : NULL;
  al_info("check %s: uid %u asks about %s#%lu%s%s: %s%s", c->id, (unsigned)c->uid, j->creq.repo,
          j->creq.ticket, j->creq.user[0] ? " for " : "", j->creq.user,
          j->rc < 0 ? "failed: " : "permission ", j->rc < 0 ? j->err.msg : (perm ? perm : "-"));
  bk_audit_log(b,
               json_pack("{s:s, s:s, s:i, s:i, s:s, s:I, s:s, s:s?, s:s?}", "event", "check", "id",
                         c->id, "uid", (int)c->uid, "pid", (int)c->pid, "repo", j->creq.repo,
                         "ticket", (json_int_t)j->creq.ticket, "user", j->creq.user, "permission",
                         perm, "error", j->rc < 0 ? j->err.msg : NULL));
  if (!c->peer_gone) {
    if (j->rc < 0)
      bk_conn_send_error(c, "upstream", j->err.msg);
    else
      bk_conn_send(c, json_incref(j->answer));
  }
  c->st = ST_CLOSING;
  bk_conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  bk_conn_maybe_close(c);
}

void bk_drain_jobs(struct broker *b)
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

void bk_start_retry(struct broker *b)
{
  if (b->retry_running || b->n_pending == 0)
    return;
  struct job *j = bk_job_new(b, JOB_REVOKE, NULL, b->n_pending);
  for (size_t i = 0; i < b->n_pending; i++)
    j->tokens[i] = b->pending[i];
  j->n_tokens = b->n_pending;
  free(b->pending);
  b->pending = NULL;
  b->n_pending = 0;
  b->retry_running = true;
  al_info("retrying %zu unconfirmed revocation(s)", j->n_tokens);
  bk_job_start(b, j);
}
