/* POST /webhook/jira and POST /webhook/linear (issue #31 item 4): a Jira
 * or Linear delivery, after the listener read it whole (http.c: the path
 * is configured, the body under webhook.max_body, the client under
 * listen.max_per_ip), in the order of GitHub's path:
 *   delivery id well-formed (400) → signature (401) → replay by delivery
 *   id or body digest (200 "duplicate", nothing done) → strict parse
 *   (400; Linear's webhookTimestamp over a minute off: 401) → not a
 *   trigger (202 "ignored") → the one served repository whose policy's
 *   `ticket:` is this vendor and this project / team (none, or more than
 *   one: 202 "ignored", the reason recorded) → intake limits (503, 429) →
 *   queued (202) or already active (200), the row's target OWNER/REPO#KEY.
 * Nothing before the signature is remembered (an unauthenticated sender
 * cannot fill the deliveries table); every refusal is a webhook_refused
 * log line with its rule, and from the signature on also the delivery's
 * recorded outcome. Delivery ids are stored as "jira:ID" / "linear:ID",
 * senders as "jira:ACCOUNTID" / "linear:USERID": one table, no vendor's id
 * mistaken for another's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "serve/internal.h"
#include "serve/webhook_tickets.h"
#include "tickets/tickets.h"

static json_t *outcome(const char *what, const char *detail)
{
  return json_pack("{s:s, s:s}", "outcome", what, "detail", detail);
}

/* Refused before the delivery is known to be the vendor's: logged only. */
static unsigned refuse_unrecorded(const struct serve_hook_req *rq, const char *vname,
                                  const char *rule, unsigned status, const char *detail,
                                  json_t **answer)
{
  serve_log("warn", "webhook_refused",
            json_pack("{s:s, s:s, s:s}", "peer", rq->peer, "vendor", vname, "rule", rule),
            "%s webhook refused: %s", vname, detail);
  *answer = outcome("refused", detail);
  return status;
}

/* Refused after the signature held: logged and recorded. */
static unsigned refuse_recorded(struct serve *s, const struct serve_hook_req *rq, const char *vname,
                                const char *id, const char *rule, unsigned status,
                                const char *prefix, const char *detail, json_t **answer)
{
  char o[AL_ERROR_MSG_MAX + 64];
  snprintf(o, sizeof o, "%s: %s", prefix, detail);
  al_queue_delivery_outcome(s->q, id, o, 0);
  serve_log("warn", "webhook_refused",
            json_pack("{s:s, s:s, s:s, s:s}", "peer", rq->peer, "vendor", vname, "delivery", id,
                      "rule", rule),
            "%s webhook %s refused: %s", vname, id, detail);
  *answer = outcome("refused", detail);
  return status;
}

/* The wall clock in ms since the epoch (Linear's webhookTimestamp). */
static int64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The served repository whose policy's ticket is kind and project: its
 * index, -1 when none, -2 when more than one. */
static int route(const struct serve *s, int kind, const char *project)
{
  int found = -1;
  for (size_t i = 0; i < s->cfg->n_repos; i++) {
    if (s->tk[i].kind != kind || strcmp(s->tk[i].project, project) != 0)
      continue;
    if (found >= 0)
      return -2;
    found = (int)i;
  }
  return found;
}

unsigned serve_ticket_hook(struct serve *s, const struct serve_hook_req *rq, json_t **answer,
                           unsigned *retry_after)
{
  const al_serve_config *cfg = s->cfg;
  bool jira = rq->vendor == SERVE_JIRA;
  const char *vname = jira ? "jira" : "linear";
  const struct serve_secret *sec = jira ? &s->jira : &s->linear;
  *retry_after = 0;
  if (!al_wh_ticket_delivery_ok(rq->delivery))
    return refuse_unrecorded(rq, vname, "delivery", 400,
                             jira ? "X-Atlassian-Webhook-Identifier missing or malformed (1..64 "
                                    "of [0-9A-Za-z-])"
                                  : "Linear-Delivery missing or malformed (1..64 of [0-9A-Za-z-])",
                             answer);
  al_error err = {0};
  int v = jira ? al_wh_jira_verify(sec->b, sec->len, rq->signature, rq->body, rq->len, &err)
               : al_wh_linear_verify(sec->b, sec->len, rq->signature, rq->body, rq->len, &err);
  if (v < 0)
    return refuse_unrecorded(rq, vname, "signature", 401, err.msg, answer);
  char id[80], digest[65];
  snprintf(id, sizeof id, "%s:%s", vname, rq->delivery);
  al_sha256_hex(rq->body, rq->len, digest);
  int seen = al_queue_delivery_new(s->q, id, digest, vname, &err);
  if (seen < 0) {
    serve_log("error", "queue", NULL, "%s", err.msg);
    *answer = outcome("error", "the queue is unavailable");
    return 503;
  }
  if (seen == 1) {
    serve_log("warn", "webhook_replay",
              json_pack("{s:s, s:s, s:s}", "peer", rq->peer, "vendor", vname, "delivery", id),
              "webhook %s: a replay (delivery id or body seen before): nothing done", id);
    *answer = outcome("duplicate", "delivery seen before: nothing done");
    return 200;
  }
  al_wh_ticket_event ev;
  int p = jira ? al_wh_jira_parse(rq->body, rq->len, cfg->jira_label, cfg->jira_assignee, NULL, &ev,
                                  &err)
               : al_wh_linear_parse(rq->body, rq->len, wall_ms(), cfg->linear_label,
                                    cfg->linear_app, NULL, &ev, &err);
  if (p < 0 && err.code == EACCES) /* Linear: webhookTimestamp too far from now */
    return refuse_recorded(s, rq, vname, id, "timestamp", 401, "refused", err.msg, answer);
  if (p < 0)
    return refuse_recorded(s, rq, vname, id, "parse", 400, "malformed", err.msg, answer);
  char o[AL_ERROR_MSG_MAX + 300];
  if (ev.kind == AL_WEBHOOK_IGNORE) {
    snprintf(o, sizeof o, "ignored: %s", ev.why);
    al_queue_delivery_outcome(s->q, id, o, 0);
    *answer = outcome("ignored", ev.why);
    return 202;
  }
  int kind = jira ? AL_TK_JIRA : AL_TK_LINEAR;
  int ri = route(s, kind, ev.project);
  if (ri < 0) {
    char why[200];
    snprintf(why, sizeof why,
             ri == -1 ? "%s %s is the ticket %s of no served repository's policy"
                      : "%s %s is the ticket %s of more than one served repository's policy "
                        "(which one is not guessed)",
             jira ? "project" : "team", ev.project, jira ? "project" : "team");
    snprintf(o, sizeof o, "ignored: %s", why);
    al_queue_delivery_outcome(s->q, id, o, 0);
    serve_log("info", "webhook_ignored",
              json_pack("{s:s, s:s, s:s, s:s}", "vendor", vname, "delivery", id, "ticket", ev.key,
                        "rule", "project"),
              "webhook %s (%s): %s", id, ev.key, o);
    *answer = outcome("ignored", why);
    return 202;
  }
  const char *repo = cfg->repos[ri].repo;
  char proj[AL_TK_PROJECT_MAX];
  unsigned long number = 0;
  if (al_tk_key_parse(ev.key, vname, proj, &number, &err) < 0) /* parsed once already */
    return refuse_recorded(s, rq, vname, id, "parse", 400, "malformed", err.msg, answer);
  char sender[160];
  snprintf(sender, sizeof sender, "%s:%s", vname, ev.sender);
  al_queue_limits lim = {.max_queued = cfg->max_queued,
                         .per_sender = cfg->per_sender,
                         .per_repo = cfg->per_repo,
                         .window_ms = cfg->window_ms};
  al_queue_refusal why = AL_QUEUE_ADMITTED;
  int64_t run = 0;
  int r = al_queue_enqueue_limited(s->q, &lim, repo, number, ev.key, ev.trigger, sender, id, &run,
                                   &why, &err);
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
    return refuse_recorded(s, rq, vname, id, rule, why == AL_QUEUE_FULL ? 503 : 429, pre, err.msg,
                           answer);
  }
  snprintf(o, sizeof o, "%s: run %lld (%s#%s, %s by %s)", r == 0 ? "queued" : "already-active",
           (long long)run, repo, ev.key, ev.trigger, sender);
  al_queue_delivery_outcome(s->q, id, o, run);
  serve_log("info", r == 0 ? "queued" : "already_active",
            json_pack("{s:s, s:I, s:s, s:s, s:s, s:s}", "delivery", id, "run", (json_int_t)run,
                      "repo", repo, "ticket", ev.key, "sender", sender, "trigger", ev.trigger),
            "webhook %s: %s", id, o);
  *answer = json_pack("{s:s, s:I}", "outcome", r == 0 ? "queued" : "already-active", "run",
                      (json_int_t)run);
  return r == 0 ? 202 : 200;
}
