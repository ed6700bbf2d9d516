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
#include "forge/appconfig.h"
/* ---- worker jobs ------------------------------------------------------ */

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

/* The broker's roles as [{"name","write"}] (the audit's app.token_permissions). */
static json_t *perm_set_json(const al_perm_set *ps)
{
  json_t *a = json_array();
  for (size_t i = 0; i < ps->n; i++)
    json_array_append_new(
        a, json_pack("{s:s, s:b}", "name", ps->items[i].name, "write", ps->items[i].write));
  return a;
}

/* The audit's credentials, on a worker thread: what the App's JWT shows of
 * the App and its installation, and the read tokens the audit needs, for
 * the client to run the audit itself (forge/audit.h opts.grant). The reader:
 * from the audit App (administration: read, contents: read), else the
 * audit.token_file's token (the operator's; handed on, never revoked here),
 * else from the run's App (administration and contents read, where the
 * installation holds them); and, unless the reader is the run's App's, a
 * metadata: read token of the run's App (its own current_user_can_bypass).
 * Minted tokens are kept (keep.h) and leased on the connection like a
 * ticket's. Nothing here reads the repository's settings. */
/* GitLab (issue #30): the audit's one read token (al_gh_mint_gl_audit),
 * kept and revoked like the run's; the grant has no App (GitLab's run bots
 * are the per-run project tokens) and says forge gitlab. */
static void job_audit_gitlab(struct broker *b, struct job *j)
{
  const char *repo = j->areq.repo;
  j->rc = -1;
  if (al_gh_mint_gl_audit(b->gh, repo, &j->tokens[0], &j->err) < 0) {
    al_error_wrap(&j->err, "minting the GitLab audit's read token");
    return;
  }
  keep_token(b, &j->tokens[0]);
  j->n_tokens = 1;
  char cred[256];
  snprintf(cred, sizeof cred,
           "project access token %s (read_api, Maintainer) minted by the broker for the audit",
           j->tokens[0].fp);
  j->answer = json_pack("{s:s, s:s, s:s?, s:I, s:I, s:{}, s:{}, s:s, s:b, s:s, s:b, s:n}", "forge",
                        "gitlab", "api", b->cfg->api_url, "ca_file", b->cfg->ca_file, "timeout_ms",
                        (json_int_t)b->cfg->http_timeout_ms, "max_rate_wait_ms",
                        (json_int_t)b->cfg->max_rate_wait_ms, "app", "roles", "credentials", cred,
                        "token_is_bot", 0, "read_fingerprint", j->tokens[0].fp, "read_token_leased",
                        1, "bot_fingerprint");
  if (!j->answer) {
    al_make_error(&j->err, ENOMEM, "the audit's grant");
    return;
  }
  snprintf(j->credentials, sizeof j->credentials, "%s", cred);
  j->rc = 0;
}

static void job_audit(struct broker *b, struct job *j)
{
  const char *repo = j->areq.repo;
  al_app_facts f;
  char cred[256], pf[256], rfp[20] = "";
  bool is_bot = false;
  al_perm_set ps = {0};
  j->rc = -1;
  if (al_gh_is_gitlab(b->gh)) {
    job_audit_gitlab(b, j);
    return;
  }
  if (al_gh_app_facts(b->gh, repo, &f, &j->err) < 0)
    return;
  if (b->audit_key) {
    const char *aid = b->cfg->audit_app_id ? b->cfg->audit_app_id : b->cfg->audit_client_id;
    al_audit_app_perms(&ps); /* the manifest of the audit App asks for the same (manifest.c) */
    if (al_gh_mint(b->audit_gh, AL_ROLE_GIT, repo, &ps, &j->tokens[0], &j->err) < 0) {
      al_error_wrap(&j->err, "minting a read-only token from the audit App %s", aid);
      goto out;
    }
    keep_token(b, &j->tokens[0]);
    j->n_tokens = 1;
    al_perm_set_format(&j->tokens[0].perms, pf, sizeof pf);
    snprintf(cred, sizeof cred,
             "installation token %s (%s) minted by the audit App %s; the App's JWT for the "
             "installation",
             j->tokens[0].fp, pf, aid);
    snprintf(rfp, sizeof rfp, "%s", j->tokens[0].fp);
  } else if (b->cfg->audit_token_file) {
    if (al_broker_audit_token_load(b->cfg->audit_token_file, &j->file_tok, &j->err) < 0)
      goto out;
    al_secret_fingerprint(j->file_tok, rfp);
    snprintf(cred, sizeof cred,
             "the broker's audit token %s (audit.token_file); the App's JWT for the "
             "installation",
             rfp);
  } else {
    static const char *const want[] = {"administration", "contents"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(want); i++) {
      if (!json_string_value(json_object_get(f.permissions, want[i])))
        continue;
      snprintf(ps.items[ps.n].name, AL_PERM_NAME_MAX, "%s", want[i]);
      ps.items[ps.n].write = false;
      ps.n++;
    }
    if (al_gh_mint(b->gh, AL_ROLE_GIT, repo, &ps, &j->tokens[0], &j->err) < 0) {
      al_error_wrap(&j->err, "minting a read-only installation token for the audit");
      goto out;
    }
    keep_token(b, &j->tokens[0]);
    j->n_tokens = 1;
    al_perm_set_format(&j->tokens[0].perms, pf, sizeof pf);
    snprintf(cred, sizeof cred, "installation token %s (%s) minted by the App for the audit",
             j->tokens[0].fp, pf);
    snprintf(rfp, sizeof rfp, "%s", j->tokens[0].fp);
    is_bot = true;
  }
  json_t *bot = json_null();
  if (!is_bot) {
    al_perm_set meta = {.n = 1};
    snprintf(meta.items[0].name, AL_PERM_NAME_MAX, "metadata");
    al_token *t = &j->tokens[j->n_tokens];
    if (al_gh_mint(b->gh, AL_ROLE_GIT, repo, &meta, t, &j->err) < 0) {
      al_error_wrap(&j->err, "minting a metadata: read token of the run's App (to ask "
                             "current_user_can_bypass as the App)");
      goto out;
    }
    keep_token(b, t);
    j->n_tokens++;
    bot = json_string(t->fp);
  }
  json_t *roles = json_object();
  for (int r = 0; r < AL_ROLE_COUNT; r++)
    json_object_set_new(roles, al_role_name((al_role)r), perm_set_json(&b->cfg->roles[r]));
  j->answer = json_pack(
      "{s:s, s:s?, s:I, s:I, s:{s:s, s:I, s:I, s:O}, s:o, s:s, s:b, s:s, s:b, s:o}", "api",
      b->cfg->api_url, "ca_file", b->cfg->ca_file, "timeout_ms",
      (json_int_t)b->cfg->http_timeout_ms, "max_rate_wait_ms", (json_int_t)b->cfg->max_rate_wait_ms,
      "app", "slug", f.slug, "id", (json_int_t)f.app_id, "installation_id",
      (json_int_t)f.installation_id, "permissions", f.permissions, "roles", roles, "credentials",
      cred, "token_is_bot", is_bot, "read_fingerprint", rfp, "read_token_leased",
      j->file_tok == NULL, "bot_fingerprint", bot);
  if (!j->answer) {
    al_make_error(&j->err, ENOMEM, "the audit's grant");
    goto out;
  }
  snprintf(j->credentials, sizeof j->credentials, "%s", cred);
  j->rc = 0;
out:
  al_app_facts_free(&f);
}

static void *job_main(void *arg)
{
  struct job *j = arg;
  struct broker *b = j->b;
  al_ghapi_counts c0, c1;
  al_ghapi_counts_thread(&c0);
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
  al_ghapi_counts_thread(&c1);
  j->rq = (al_ghapi_counts){.sent = c1.sent - c0.sent,
                            .not_modified = c1.not_modified - c0.not_modified,
                            .app = c1.app - c0.app,
                            .rejected = c1.rejected - c0.rejected};
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
  al_secret_free(j->file_tok);
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

/* {"sent", "not_modified", "app", "rejected"}: the forge requests a job sent. */
static json_t *requests_json(const al_ghapi_counts *q)
{
  return json_pack("{s:I, s:I, s:I, s:I}", "sent", (json_int_t)q->sent, "not_modified",
                   (json_int_t)q->not_modified, "app", (json_int_t)q->app, "rejected",
                   (json_int_t)q->rejected);
}

/* The grant: "lease" (a ticket's tokens and secrets) or, with extra, an
 * "audit_grant" (the audit's tokens, extra's fields, and file_tok: the
 * audit.token_file's token, or NULL). Every secret value jansson holds is
 * wiped once serialised. */
static void send_grant(struct conn *c, const char *type, json_t *extra, const char *file_tok)
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
  json_t *msg = json_pack("{s:s, s:s, s:I, s:s, s:o}", "type", type, "lease", c->id, "ttl_ms",
                          (json_int_t)c->ttl_ms, "expires_at", exp, "tokens", toks);
  json_object_set_new(msg, "requests", requests_json(&c->grant_rq));
  if (extra)
    json_object_set(msg, "audit", extra);
  if (file_tok)
    json_object_set_new(msg, "read_token", json_string(file_tok));
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
  json_t *ft = json_object_get(msg, "read_token");
  if (ft)
    OPENSSL_cleanse((char *)json_string_value(ft), json_string_length(ft));
  json_decref(msg);
  bk_conn_queue_line(c, line, len);
  bk_arm_timer(c, c->ttl_ms);
}

/* The connection's tokens as the public JSON array the lease log records
 * (a new reference), each also logged by fingerprint: "WHAT ID: ROLE token
 * FP for REPO {PERMS} expires T" (ROLE "read" for an audit's read tokens). */
static json_t *tokens_announced(const struct conn *c, const char *what, bool by_role)
{
  json_t *pub = json_array();
  for (size_t i = 0; i < c->n_tokens; i++) {
    const al_token *t = &c->tokens[i];
    json_array_append_new(pub, bk_token_public_json(t));
    char ps[200];
    al_perm_set_format(&t->perms, ps, sizeof ps);
    al_info("%s %s: %s token %s for %s {%s} expires %s", what, c->id,
            by_role ? al_role_name(t->role) : "read", t->fp, t->repo, ps, t->expires_at_str);
  }
  return pub;
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
    bk_lease_log(b, json_pack("{s:s, s:s, s:i, s:i, s:s}", "event", "refused", "lease", c->id,
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
  json_t *pub = tokens_announced(c, "lease", true);
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
  bk_lease_log(b, rec);
  if (c->peer_gone || b->stopping) {
    c->st = ST_ACTIVE;
    bk_start_revoke(c, c->peer_gone ? "client left before the grant" : "shutdown");
    return;
  }
  c->st = ST_ACTIVE;
  c->grant_rq = j->rq;
  send_grant(c, "lease", NULL, NULL);
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
  bk_lease_log(b,
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
      bk_conn_send(c, json_pack("{s:s, s:s, s:s, s:O, s:o}", "type", "revoked", "lease", c->id,
                                "reason", c->reason, "tokens", res, "requests",
                                requests_json(&j->rq)));
    }
  }
  json_decref(res);
  c->st = ST_CLOSING;
  bk_conn_stop_reading(c);
  if (!c->peer_gone)
    shutdown(c->fd, SHUT_RD);
  bk_conn_maybe_close(c);
}

/* The audit's grant is ready: lease its tokens on the connection (revoked
 * on "release", when the connection ends, at the TTL or at shutdown) and
 * send them with what the client needs to run the audit. */
static void audit_done(struct broker *b, struct job *j)
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
    al_warn("audit %s of %s: %s", c->id, j->areq.repo, j->err.msg);
    bk_lease_log(b, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s}", "event", "audit", "id", c->id,
                              "uid", (int)c->uid, "pid", (int)c->pid, "repo", j->areq.repo,
                              "branch", j->areq.branch, "error", j->err.msg));
    if (c->n_tokens > 0) { /* no half-made grant: kill what was minted */
      c->pending_error = al_strdup_printf("upstream:%s", j->err.msg);
      c->st = ST_ACTIVE;
      bk_start_revoke(c, "minting failed");
      return;
    }
    if (!c->peer_gone)
      bk_conn_send_error(c, "upstream", j->err.msg);
    c->st = ST_CLOSING;
    bk_conn_stop_reading(c);
    if (!c->peer_gone)
      shutdown(c->fd, SHUT_RD);
    bk_conn_maybe_close(c);
    return;
  }
  json_t *pub = tokens_announced(c, "audit", false);
  al_info("audit %s of %s: the grant is %s; the client runs the audit", c->id, j->areq.repo,
          j->credentials);
  bk_lease_log(b,
               json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:o}", "event", "audit", "id", c->id,
                         "uid", (int)c->uid, "pid", (int)c->pid, "repo", j->areq.repo, "branch",
                         j->areq.branch, "credentials", j->credentials, "tokens", pub));
  c->st = ST_ACTIVE;
  if (c->peer_gone || b->stopping) {
    bk_start_revoke(c, c->peer_gone ? "client left before the grant" : "shutdown");
    return;
  }
  c->ttl_ms = b->cfg->default_ttl_ms;
  c->grant_rq = j->rq;
  send_grant(c, "audit_grant", j->answer, j->file_tok);
}

static void check_done(struct broker *b, struct job *j)
{
  struct conn *c = j->c;
  const char *perm = j->answer ? json_string_value(json_object_get(j->answer, "permission")) : NULL;
  al_info("check %s: uid %u asks about %s#%lu%s%s: %s%s", c->id, (unsigned)c->uid, j->creq.repo,
          j->creq.ticket, j->creq.user[0] ? " for " : "", j->creq.user,
          j->rc < 0 ? "failed: " : "permission ", j->rc < 0 ? j->err.msg : (perm ? perm : "-"));
  bk_lease_log(b,
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
