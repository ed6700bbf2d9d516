/* A finished run (internal.h): its run record classified (succeeded,
 * failed, refused or interrupted; worth a retry or not; its PR, denials and
 * unconfirmed revocations) and its queue row finished: ended, re-queued,
 * or retried after a backoff. serve.c reaps the child and calls it. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/util.h"
#include "serve/internal.h"

#define RECORD_MAX (64u << 20)

struct outcome {
  char state[16];
  char reason[600];
  char pr_url[512];
  char run_id[40];
  char *denials; /* JSON text, malloc'd */
  int tokens_unconfirmed;
  bool transient;
  bool fenced; /* the attempt stopped at its fence check (ticket_fence.c) */
};

/* Causes worth a retry: the forge answered 5xx or could not be reached. */
static bool transient_text(const char *e)
{
  static const char *const pats[] = {"HTTP 5",
                                     " 500",
                                     " 502",
                                     " 503",
                                     " 504",
                                     "server error",
                                     "Server Error",
                                     "Connection refused",
                                     "timed out",
                                     "Timeout was reached",
                                     "Couldn't connect",
                                     "Could not resolve",
                                     "Connection reset",
                                     "connecting to the broker",
                                     "no broker answers"};
  for (size_t i = 0; e && i < AL_ARRAY_SIZE(pats); i++)
    if (strstr(e, pats[i]))
      return true;
  return false;
}

/* The proxy's denials in a run record as JSON text {reason: count}
 * (malloc'd): one per proxy_decisions entry whose decision is "deny". */
static char *denials_text(json_t *r)
{
  json_t *den = json_object();
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(r, "proxy_decisions"), i, d)
  {
    const char *dec = json_string_value(json_object_get(d, "decision"));
    if (!dec || strcmp(dec, "deny"))
      continue;
    const char *why = json_string_value(json_object_get(d, "reason"));
    char key[64];
    snprintf(key, sizeof key, "%s", why ? why : "unknown");
    json_int_t n = json_integer_value(json_object_get(den, key));
    json_object_set_new(den, key, json_integer(n + 1));
  }
  char *txt = json_dumps(den, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(den);
  return txt;
}

/* Finished rows without denials (a database migrated from schema 0, whose
 * column held an address): read them again from each row's run record. */
void serve_refill_denials(struct serve *s)
{
  json_t *rows = al_queue_without_denials(s->q, 10000);
  size_t i, n = 0;
  json_t *v;
  json_array_foreach(rows, i, v)
  {
    const char *rec = json_string_value(json_object_get(v, "record"));
    al_autofree char *buf = NULL;
    size_t len = 0;
    al_error e = {0};
    if (!rec || al_read_file(rec, RECORD_MAX, &buf, &len, &e) < 0)
      continue;
    json_t *r = json_loadb(buf, len, 0, NULL);
    if (!r)
      continue;
    al_autofree char *txt = denials_text(r);
    json_decref(r);
    if (txt &&
        al_queue_set_denials(s->q, json_integer_value(json_object_get(v, "id")), txt, &e) == 0)
      n++;
  }
  if (n)
    serve_log("info", "denials_refilled", json_pack("{s:I}", "runs", (json_int_t)n),
              "%zu finished runs had no denial counts: read again from their run records", n);
  json_decref(rows);
}

static void classify(const char *record, int wstatus, bool stopped_by_us, struct outcome *o)
{
  memset(o, 0, sizeof *o);
  int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  al_autofree char *buf = NULL;
  size_t len = 0;
  al_error e;
  json_t *r = NULL;
  if (al_read_file(record, RECORD_MAX, &buf, &len, &e) == 0)
    r = json_loadb(buf, len, 0, NULL);
  if (r) {
    const char *id = json_string_value(json_object_get(r, "run_id"));
    snprintf(o->run_id, sizeof o->run_id, "%s", id ? id : "");
    json_t *pr = json_object_get(r, "pull_request");
    const char *url = json_string_value(json_object_get(pr, "url"));
    if (url && json_is_true(json_object_get(pr, "verified")))
      snprintf(o->pr_url, sizeof o->pr_url, "%s", url);
    o->denials = denials_text(r);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(r, "revocation"), "tokens"), i, d)
    {
      if (!json_is_true(json_object_get(d, "confirmed_401")))
        o->tokens_unconfirmed++;
    }
  }
  const char *error = r ? json_string_value(json_object_get(r, "error")) : NULL;
  const char *fst = json_string_value(json_object_get(json_object_get(r, "fence"), "status"));
  if (fst && !strcmp(fst, "fenced")) {
    o->fenced = true;
    snprintf(o->state, sizeof o->state, "failed");
    snprintf(o->reason, sizeof o->reason, "%s", error ? error : "fenced");
  } else if (stopped_by_us) {
    snprintf(o->state, sizeof o->state, "interrupted");
    snprintf(o->reason, sizeof o->reason, "the service stopped (exit status %d)", code);
  } else if (!r) {
    snprintf(o->state, sizeof o->state, "failed");
    if (WIFSIGNALED(wstatus))
      snprintf(o->reason, sizeof o->reason, "no run record (killed by signal %d)",
               WTERMSIG(wstatus));
    else
      snprintf(o->reason, sizeof o->reason, "no run record (exit status %d)", code);
  } else if (code == 0 && o->pr_url[0]) {
    snprintf(o->state, sizeof o->state, "succeeded");
    snprintf(o->reason, sizeof o->reason, "pull request %s, tokens dead", o->pr_url);
  } else if (code == 0) {
    snprintf(o->state, sizeof o->state, "failed");
    snprintf(o->reason, sizeof o->reason, "the agent exited 0 without a verified pull request");
  } else {
    const char *phase = "", *audit_status = "";
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(r, "phases"), i, p)
    {
      const char *st = json_string_value(json_object_get(p, "status"));
      if (st && !strcmp(st, "failed")) {
        phase = json_string_value(json_object_get(p, "name")) ?: "";
        break;
      }
    }
    audit_status = json_string_value(json_object_get(json_object_get(r, "audit"), "status")) ?: "";
    snprintf(o->reason, sizeof o->reason, "%s%s%s", phase[0] ? phase : "run",
             error ? ": " : " failed", error ? error : "");
    /* A security refusal (the audit does not hold, the broker forbids the
     * lease) is never retried. */
    if ((!strcmp(phase, "audit") && !strcmp(audit_status, "does-not-hold")) ||
        (error && strstr(error, "(forbidden)")) ||
        json_is_true(json_object_get(r, "refused"))) { /* runner_kube.c: sealed */
      snprintf(o->state, sizeof o->state, "refused");
    } else {
      snprintf(o->state, sizeof o->state, "failed");
      /* the fence check is the outputs phase's first step, before any
       * write: a forge that could not answer it (the record's fence
       * status "unanswered") leaves nothing to undo, so that attempt is
       * retried like an early phase's */
      bool before_writes = fst && !strcmp(fst, "unanswered");
      o->transient = (!strcmp(phase, "lease") || !strcmp(phase, "audit") ||
                      !strcmp(phase, "preflight") || !strcmp(phase, "policy") || before_writes) &&
                     transient_text(error);
    }
  }
  json_decref(r);
}

/* Finish the row of a reaped child; frees its slot. */
void serve_child_done(struct serve *s, struct serve_child *c, int wstatus)
{
  struct outcome o;
  classify(c->record, wstatus, c->stopping, &o);
  al_queue_result res = {.state = o.state,
                         .exit_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                         .reason = o.reason,
                         .pr_url = o.pr_url[0] ? o.pr_url : NULL,
                         .run_id = o.run_id[0] ? o.run_id : NULL,
                         .denials = o.denials,
                         .tokens_unconfirmed = o.tokens_unconfirmed};
  res.fence = c->fence;
  char why[800];
  if (o.fenced) {
    /* it made nothing: the ticket runs again if the row is still ours (the
     * trigger check finds a PR another attempt made) */
    res.fenced = 1;
    res.state = "queued";
    res.interrupted = true;
    snprintf(why, sizeof why, "attempt %d fenced (%s); re-queued", c->attempts, o.reason);
    res.reason = why;
  } else if (c->stopping) {
    res.interrupted = true;
    if (s->cfg->requeue_interrupted) {
      res.state = "queued";
      snprintf(why, sizeof why, "interrupted (%s); re-queued (runs.on_interrupt: requeue)",
               o.reason);
      res.reason = why;
    }
  } else if (o.transient && (uint64_t)c->attempts <= s->cfg->retries) {
    uint64_t wait = s->cfg->backoff_ms << (c->attempts - 1 < 16 ? c->attempts - 1 : 16);
    res.state = "queued";
    res.not_before_ms = wait;
    snprintf(why, sizeof why, "transient failure (%s); retry %d of %llu in %llu ms", o.reason,
             c->attempts, (unsigned long long)s->cfg->retries, (unsigned long long)wait);
    res.reason = why;
  }
  al_error err = {0};
  if (al_queue_finish(s->q, c->id, &res, &err) < 0) {
    if (err.code == ESTALE) {
      /* another replica fenced this attempt and owns the row now */
      al_queue_event(s->q, c->id, "fenced: attempt %d (token %s) ended after it was fenced: %s: %s",
                     c->attempts, c->fence, res.state, res.reason);
      serve_log("warn", "fenced",
                json_pack("{s:I, s:i}", "run", (json_int_t)c->id, "attempt", c->attempts),
                "run %lld: attempt %d ended after it was fenced (token %s): its outcome (%s) is "
                "not the row's",
                (long long)c->id, c->attempts, c->fence, res.state);
      free(o.denials);
      *c = s->children[--s->n_children];
      return;
    }
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)c->id, err.msg);
  }
  serve_log(!strcmp(res.state, "succeeded") ? "info" : "warn", "run_finished",
            json_pack("{s:I, s:s, s:i, s:s?, s:s?}", "run", (json_int_t)c->id, "state", res.state,
                      "exit_status", res.exit_status, "pr_url", res.pr_url, "record_run_id",
                      res.run_id),
            "run %lld: %s", (long long)c->id, res.reason);
  free(o.denials);
  *c = s->children[--s->n_children];
}
