/* POST /webhook/gitlab (issue #30 item 5): a GitLab delivery, after the
 * listener read it whole (http.c: the path is configured, the body under
 * webhook.max_body, the client under listen.max_per_ip), in the order of
 * GitHub's path:
 *   X-Gitlab-Event-UUID a UUID (400) → X-Gitlab-Token, when
 *   webhook.gitlab.secret_file is set, the secret in constant time (401)
 *   → webhook-id / webhook-timestamp (within 5 minutes) /
 *   webhook-signature, when signing_token_file is set, a v1 HMAC that
 *   holds (401) → replay by webhook-id (signed), by X-Gitlab-Event-UUID
 *   or by body digest (200 "duplicate", nothing done) → strict parse
 *   (serve/webhook_gitlab.h; 400) → not a trigger (202 "ignored") → the
 *   served repository of that project.path_with_namespace (none: 403; its
 *   policy not forge.kind gitlab: 403; its tickets in Jira or Linear: 202
 *   ignored) → intake limits (503, 429) → queued (202) or already active
 *   (200).
 * The row: repo the project's full path as configured (subgroups too),
 * number the iid, the sender the GitLab username, which the
 * trigger check (serve.c, through the broker) asks GitLab about: the
 * payload's word on who the sender is is believed only as a name, never
 * as an access level. Nothing before the authentication is remembered;
 * every refusal is a webhook_refused log line with its rule, and from the
 * authentication on also the delivery's recorded outcome. Delivery ids are
 * stored as "gitlab:UUID" and, signed, "gitlab-webhook-id:ID" as well. */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/util.h"
#include "forge/names.h"
#include "serve/internal.h"
#include "serve/webhook_gitlab.h"
#include "tickets/tickets.h"

#define SIGNED_TOLERANCE_S 300 /* Standard Webhooks: 5 minutes either way */

int serve_gitlab_secrets_load(struct serve *s, al_error *err)
{
  const al_serve_config *cfg = s->cfg;
  if (cfg->gitlab_secret_file && serve_secret_load("webhook.gitlab.secret_file",
                                                   cfg->gitlab_secret_file, &s->gl_token, err) < 0)
    return -1;
  if (!cfg->gitlab_signing_file)
    return 0;
  if (serve_secret_load("webhook.gitlab.signing_token_file", cfg->gitlab_signing_file,
                        &s->gl_signing, err) < 0)
    return -1;
  unsigned char key[64];
  size_t kl;
  int r = al_gl_webhook_signing_key((const char *)s->gl_signing.b, key, &kl, err);
  OPENSSL_cleanse(key, sizeof key);
  if (r < 0)
    return al_error_wrap(err, "webhook.gitlab.signing_token_file `%s`", cfg->gitlab_signing_file);
  return 0;
}

static json_t *outcome(const char *what, const char *detail)
{
  return json_pack("{s:s, s:s}", "outcome", what, "detail", detail);
}

/* Refused before the delivery is known to be GitLab's: logged only. */
static unsigned refuse_unrecorded(const struct serve_gl_req *rq, const char *rule, unsigned status,
                                  const char *detail, json_t **answer)
{
  serve_log("warn", "webhook_refused",
            json_pack("{s:s, s:s, s:s}", "peer", rq->peer, "vendor", "gitlab", "rule", rule),
            "gitlab webhook refused: %s", detail);
  *answer = outcome("refused", detail);
  return status;
}

/* Refused after the authentication held: logged and recorded. */
static unsigned refuse_recorded(struct serve *s, const struct serve_gl_req *rq, const char *id,
                                const char *rule, unsigned status, const char *prefix,
                                const char *detail, json_t **answer)
{
  char o[AL_ERROR_MSG_MAX + 64];
  snprintf(o, sizeof o, "%s: %s", prefix, detail);
  al_queue_delivery_outcome(s->q, id, o, 0);
  serve_log("warn", "webhook_refused",
            json_pack("{s:s, s:s, s:s, s:s}", "peer", rq->peer, "vendor", "gitlab", "delivery", id,
                      "rule", rule),
            "gitlab webhook %s refused: %s", id, detail);
  *answer = outcome("refused", detail);
  return status;
}

/* The configured credentials, each that is set: 0, or -1 with err. */
static int authenticate(const struct serve *s, const struct serve_gl_req *rq, const char **rule,
                        al_error *err)
{
  if (s->gl_token.b) {
    *rule = "token";
    if (al_gl_webhook_verify_token(s->gl_token.b, s->gl_token.len, rq->token, err) < 0)
      return -1;
  }
  if (s->gl_signing.b) {
    *rule = "signature";
    unsigned char key[64];
    size_t kl = 0;
    int r = al_gl_webhook_signing_key((const char *)s->gl_signing.b, key, &kl, err);
    if (r == 0)
      r = al_gl_webhook_verify_signed(key, kl, rq->wh_id, rq->wh_ts, rq->wh_sig, rq->body, rq->len,
                                      (int64_t)time(NULL), SIGNED_TOLERANCE_S, err);
    OPENSSL_cleanse(key, sizeof key);
    if (r < 0)
      return -1;
  }
  return 0;
}

/* Remember the delivery under its replay keys: 0 new, 1 a replay, -1 the
 * queue failed. Signed: the webhook-id first (its own row, keyed by a
 * digest of the id: the body's digest is the UUID row's). */
static int remember(struct serve *s, const struct serve_gl_req *rq, const char *id, al_error *err)
{
  if (s->gl_signing.b) {
    char wid[160], wdig[65];
    snprintf(wid, sizeof wid, "gitlab-webhook-id:%s", rq->wh_id);
    al_sha256_hex(wid, strlen(wid), wdig);
    int seen = al_queue_delivery_new(s->q, wid, wdig, "gitlab", err);
    if (seen != 0)
      return seen;
  }
  char digest[65];
  al_sha256_hex(rq->body, rq->len, digest);
  return al_queue_delivery_new(s->q, id, digest, "gitlab", err);
}

/* The served repository of a GitLab project path (GitLab's paths are
 * matched without regard to case): its index, or -1. */
static int route(const struct serve *s, const char *project)
{
  for (size_t i = 0; i < s->cfg->n_repos; i++)
    if (!strcasecmp(s->cfg->repos[i].repo, project))
      return (int)i;
  return -1;
}

static unsigned enqueue(struct serve *s, const struct serve_gl_req *rq, const char *id,
                        const char *repo, const al_gl_webhook_event *ev, json_t **answer,
                        unsigned *retry_after)
{
  const al_serve_config *cfg = s->cfg;
  const char *trigger = !strcmp(ev->event, "Issue Hook") ? "label" : "comment";
  al_queue_limits lim = {.max_queued = cfg->max_queued,
                         .per_sender = cfg->per_sender,
                         .per_repo = cfg->per_repo,
                         .window_ms = cfg->window_ms};
  al_queue_refusal why = AL_QUEUE_ADMITTED;
  int64_t run = 0;
  al_error err = {0};
  int r = al_queue_enqueue_limited(s->q, &lim, repo, ev->number, NULL, trigger, ev->sender, id,
                                   &run, &why, &err);
  if (r < 0) {
    serve_log("error", "queue", NULL, "%s", err.msg);
    *answer = outcome("error", "the queue is unavailable");
    return 503;
  }
  if (r == 2) {
    const char *rule = why == AL_QUEUE_FULL           ? "max_queued"
                       : why == AL_QUEUE_SENDER_LIMIT ? "per_sender"
                                                      : "per_repo";
    char pre[40];
    snprintf(pre, sizeof pre, "refused: intake.%s", rule);
    *retry_after = why == AL_QUEUE_FULL ? 60 : (unsigned)(cfg->window_ms / 1000);
    return refuse_recorded(s, rq, id, rule, why == AL_QUEUE_FULL ? 503 : 429, pre, err.msg, answer);
  }
  char o[700];
  snprintf(o, sizeof o, "%s: run %lld (%s#%lu, %s by %s)", r == 0 ? "queued" : "already-active",
           (long long)run, repo, ev->number, trigger, ev->sender);
  al_queue_delivery_outcome(s->q, id, o, run);
  serve_log("info", r == 0 ? "queued" : "already_active",
            json_pack("{s:s, s:I, s:s, s:I, s:s, s:s}", "delivery", id, "run", (json_int_t)run,
                      "repo", repo, "ticket", (json_int_t)ev->number, "sender", ev->sender,
                      "trigger", trigger),
            "webhook %s: %s", id, o);
  *answer = json_pack("{s:s, s:I}", "outcome", r == 0 ? "queued" : "already-active", "run",
                      (json_int_t)run);
  return r == 0 ? 202 : 200;
}

unsigned serve_gitlab_hook(struct serve *s, const struct serve_gl_req *rq, json_t **answer,
                           unsigned *retry_after)
{
  const al_serve_config *cfg = s->cfg;
  *retry_after = 0;
  if (!al_gl_webhook_uuid_ok(rq->uuid))
    return refuse_unrecorded(rq, "delivery", 400,
                             "X-Gitlab-Event-UUID missing or not a UUID (8-4-4-4-12 hex digits)",
                             answer);
  al_error err = {0};
  const char *rule = "token";
  if (authenticate(s, rq, &rule, &err) < 0)
    return refuse_unrecorded(rq, rule, 401, err.msg, answer);
  char id[80];
  snprintf(id, sizeof id, "gitlab:%s", rq->uuid);
  int seen = remember(s, rq, id, &err);
  if (seen < 0) {
    serve_log("error", "queue", NULL, "%s", err.msg);
    *answer = outcome("error", "the queue is unavailable");
    return 503;
  }
  if (seen == 1) {
    serve_log("warn", "webhook_replay",
              json_pack("{s:s, s:s, s:s}", "peer", rq->peer, "vendor", "gitlab", "delivery", id),
              "webhook %s: a replay (event UUID, webhook-id or body seen before): nothing done",
              id);
    *answer = outcome("duplicate", "delivery seen before: nothing done");
    return 200;
  }
  al_gl_webhook_event ev;
  if (al_gl_webhook_parse(rq->event, rq->body, rq->len, cfg->gitlab_label, cfg->gitlab_command, &ev,
                          &err) < 0)
    return refuse_recorded(s, rq, id, "parse", 400, "malformed", err.msg, answer);
  char o[AL_ERROR_MSG_MAX + 300];
  if (ev.kind != AL_WEBHOOK_RUN) {
    snprintf(o, sizeof o, "ignored: %s", ev.why);
    al_queue_delivery_outcome(s->q, id, o, 0);
    *answer = outcome("ignored", ev.why);
    return 202;
  }
  int ri = route(s, ev.project);
  char why[400];
  if (ri < 0) {
    snprintf(why, sizeof why, "project %s is not served", ev.project);
    return refuse_recorded(s, rq, id, "repository", 403, "refused", why, answer);
  }
  if (s->tk[ri].forge != AL_FORGE_GITLAB) {
    snprintf(why, sizeof why,
             "%s is served with a policy whose forge.kind is github: a GitLab delivery does not "
             "start its runs",
             cfg->repos[ri].repo);
    return refuse_recorded(s, rq, id, "forge", 403, "refused", why, answer);
  }
  if (s->tk[ri].kind != AL_TK_GITHUB) {
    static const char tk_why[] = "the project's policy keeps its tickets in Jira or Linear "
                                 "(ticket:): its GitLab issues do not start runs";
    snprintf(o, sizeof o, "ignored: %s", tk_why);
    al_queue_delivery_outcome(s->q, id, o, 0);
    *answer = outcome("ignored", tk_why);
    return 202;
  }
  return enqueue(s, rq, id, cfg->repos[ri].repo, &ev, answer, retry_after);
}
