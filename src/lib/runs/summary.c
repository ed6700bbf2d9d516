/* One run record summed up (a table row) and shown to a human (runs.h).
 * The record is untrusted: every value is looked up with its type checked,
 * and every line goes out through the one escaper. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "runs/runs.h"
#include "common/term.h"
#include "common/util.h"

static const char *jstr(const json_t *o, const char *key)
{
  return json_string_value(json_object_get(o, key)); /* NULL unless a string */
}

/* An integer member, or dflt. */
static long long jint(const json_t *o, const char *key, long long dflt)
{
  const json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

static bool jtrue(const json_t *o, const char *key)
{
  return json_is_true(json_object_get(o, key));
}

static const json_t *jarr(const json_t *o, const char *key)
{
  const json_t *v = json_object_get(o, key);
  return json_is_array(v) ? v : NULL;
}

/* The name of the first phase whose status is "failed", or NULL. */
static const char *failed_phase(const json_t *rec)
{
  const json_t *ph = jarr(rec, "phases");
  for (size_t i = 0; ph && i < json_array_size(ph); i++) {
    const json_t *p = json_array_get(ph, i);
    const char *st = jstr(p, "status");
    if (st && strcmp(st, "failed") == 0)
      return jstr(p, "name") ? jstr(p, "name") : "?";
  }
  return NULL;
}

static void result_of(const json_t *rec, al_run_summary *s)
{
  const char *phase = failed_phase(rec);
  const char *sig = jstr(rec, "signal");
  bool verified = jtrue(json_object_get(rec, "pull_request"), "verified");
  const char *outputs = jstr(json_object_get(rec, "outputs"), "status");
  int ex = s->exit_status;
  if (ex == 0 || (ex < 0 && verified))
    snprintf(s->result, sizeof s->result, "pull request");
  else if (ex > 128 || (ex < 0 && jtrue(rec, "interrupted")))
    snprintf(s->result, sizeof s->result, "interrupted%s%s", sig ? ": " : "", sig ? sig : "");
  else if (ex == 124 || (ex < 0 && jtrue(json_object_get(rec, "agent"), "timed_out")))
    snprintf(s->result, sizeof s->result, "timeout");
  else if (ex == 4)
    snprintf(s->result, sizeof s->result, "refused: %s", phase ? phase : "?");
  else if (ex == 3 || (ex < 0 && !phase && outputs && strcmp(outputs, "no-branch") == 0))
    snprintf(s->result, sizeof s->result, "no changes");
  else if (ex == 1 || phase || jstr(rec, "error"))
    snprintf(s->result, sizeof s->result, "failed%s%s", phase ? ": " : "", phase ? phase : "");
  else if (ex >= 0)
    snprintf(s->result, sizeof s->result, "exit %d", ex);
  else
    snprintf(s->result, sizeof s->result, "unknown");
}

void al_run_summarize(const json_t *rec, al_run_summary *s)
{
  memset(s, 0, sizeof *s);
  const char *id = jstr(rec, "run_id");
  snprintf(s->id, sizeof s->id, "%s", id ? id : "");
  const char *t = jstr(rec, "started_at");
  snprintf(s->started_at, sizeof s->started_at, "%s", t ? t : "");
  const json_t *tk = json_object_get(rec, "ticket");
  const char *repo = jstr(tk, "repo");
  long long num = jint(tk, "number", -1);
  if (repo && num >= 0) {
    char r[141];
    snprintf(r, sizeof r, "%s", repo);
    al_utf8_cut(r); /* before "#N" follows it */
    snprintf(s->target, sizeof s->target, "%s#%lld", r, num);
  } else if (repo)
    snprintf(s->target, sizeof s->target, "%s", repo);
  long long ex = jint(rec, "exit_status", -1);
  s->exit_status = ex >= 0 && ex <= 255 ? (int)ex : -1;
  result_of(rec, s);
  al_utf8_cut(s->id); /* each copy may have cut a sequence in two */
  al_utf8_cut(s->started_at);
  al_utf8_cut(s->target);
  al_utf8_cut(s->result);
  const json_t *pr = json_object_get(rec, "pull_request");
  const char *url = jtrue(pr, "verified") ? jstr(pr, "url") : NULL;
  snprintf(s->pr_url, sizeof s->pr_url, "%s", url ? url : "");
  al_utf8_cut(s->pr_url);
  const json_t *pc = json_object_get(rec, "proxy_decision_counts");
  long long pd = jint(pc, "denied", -1); /* refusals only: failures are "failed" */
  long long gr = jint(json_object_get(rec, "gateway_summary"), "refused", -1);
  if (pd < 0 && gr < 0)
    s->denials = -1;
  else
    s->denials = (pd > 0 ? pd : 0) + (gr > 0 && gr < (1LL << 40) ? gr : 0);
  s->duration_ms = jint(rec, "duration_ms", -1);
}

json_t *al_run_summary_json(const al_run_summary *s)
{
  json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", s->id, "started_at", s->started_at, "target",
                        s->target, "result", s->result);
  json_object_set_new(o, "exit_status",
                      s->exit_status >= 0 ? json_integer(s->exit_status) : json_null());
  json_object_set_new(o, "pull_request", s->pr_url[0] ? json_string(s->pr_url) : json_null());
  json_object_set_new(o, "denials", s->denials >= 0 ? json_integer(s->denials) : json_null());
  json_object_set_new(o, "duration_ms",
                      s->duration_ms >= 0 ? json_integer(s->duration_ms) : json_null());
  return o;
}

/* --- showing one record ------------------------------------------------ */

/* One line: formatted, then every control, escape and bidi character of it
 * escaped (common/term.h), then a newline. Our own text holds none, so
 * this only changes what came from the record. */
__attribute__((format(printf, 2, 3))) static void line(FILE *out, const char *fmt, ...)
{
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  int r = vasprintf(&msg, fmt, ap);
  va_end(ap);
  if (r < 0)
    return;
  al_autofree char *clean = al_term_escape_line(msg);
  free(msg);
  fprintf(out, "%s\n", clean);
}

#define LIST_MAX 40 /* items of one list shown before "... N more" */
#define S(x) ((x) ? (x) : "?")

/* Grouping decisions: (decision, where, reason) -> count, in the order
 * first seen. */
struct group {
  char *key[3];
  long long count;
};

struct groups {
  struct group *v;
  size_t n, cap;
};

static void group_add(struct groups *g, const char *a, const char *b, const char *c, long long k)
{
  for (size_t i = 0; i < g->n; i++)
    if (!strcmp(g->v[i].key[0], a) && !strcmp(g->v[i].key[1], b) && !strcmp(g->v[i].key[2], c)) {
      if (g->v[i].count < (1LL << 50))
        g->v[i].count += k;
      return;
    }
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 16;
    g->v = al_xrealloc(g->v, g->cap * sizeof *g->v);
  }
  g->v[g->n++] = (struct group){{al_xstrdup(a), al_xstrdup(b), al_xstrdup(c)}, k};
}

static void groups_print(FILE *out, struct groups *g)
{
  for (size_t i = 0; i < g->n; i++) {
    if (i == LIST_MAX) {
      line(out, "    ... %zu more", g->n - LIST_MAX);
      break;
    }
    line(out, "    %-10s %-40s %-24s x%lld", g->v[i].key[0], g->v[i].key[1], g->v[i].key[2],
         g->v[i].count);
  }
}

static void groups_free(struct groups *g)
{
  for (size_t i = 0; i < g->n; i++)
    for (int k = 0; k < 3; k++)
      free(g->v[i].key[k]);
  free(g->v);
}

static void show_head(const json_t *rec, const char *path, FILE *out)
{
  al_run_summary s;
  al_run_summarize(rec, &s);
  if (s.exit_status >= 0)
    line(out, "run %s  %s  exit %d (%s)", s.id, s.target[0] ? s.target : "?", s.exit_status,
         s.result);
  else
    line(out, "run %s  %s  %s", s.id, s.target[0] ? s.target : "?", s.result);
  char dur[32] = "?";
  if (s.duration_ms >= 0)
    snprintf(dur, sizeof dur, "%lld", s.duration_ms);
  line(out, "  started %s, ended %s, %s ms", S(jstr(rec, "started_at")), S(jstr(rec, "ended_at")),
       dur);
  line(out, "  backend %s, credentials %s%s", S(jstr(rec, "backend")),
       S(jstr(rec, "credentials_mode")),
       jtrue(rec, "unprotected") ? ", UNPROTECTED (--accept-unprotected)" : "");
  if (path)
    line(out, "  record %s", path);
  const json_t *pol = json_object_get(rec, "policy");
  if (pol)
    line(out, "  policy %s sha256:%.12s%s", S(jstr(pol, "source")), S(jstr(pol, "sha256")),
         jstr(pol, "canonical") ? " (canonical text in the record)" : "");
  const json_t *ag = json_object_get(rec, "agent");
  const json_t *argv = jarr(ag, "argv");
  const json_t *bin = json_object_get(ag, "binary");
  const char *prog = argv ? json_string_value(json_array_get(argv, 0)) : NULL;
  if (jstr(bin, "sha256"))
    line(out, "  agent %s sha256:%s, exit %lld%s", S(prog), jstr(bin, "sha256"),
         jint(ag, "exit_status", -1), jtrue(ag, "timed_out") ? " (timed out)" : "");
  else
    line(out, "  agent %s, exit %lld%s", S(prog), jint(ag, "exit_status", -1),
         jtrue(ag, "timed_out") ? " (timed out)" : "");
  if (jstr(rec, "error"))
    line(out, "  error: %s", jstr(rec, "error"));
}

static void show_phases(const json_t *rec, FILE *out)
{
  const json_t *ph = jarr(rec, "phases");
  line(out, "phases:");
  for (size_t i = 0; ph && i < json_array_size(ph); i++) {
    const json_t *p = json_array_get(ph, i);
    const char *d = jstr(p, "detail");
    line(out, "  %-10s %-7s %7lld ms  %s", S(jstr(p, "name")), S(jstr(p, "status")),
         jint(p, "ms", -1), d ? d : "");
  }
  const json_t *rq = json_object_get(rec, "requests");
  if (json_is_object(rq) && json_object_get(rq, "counted"))
    line(out,
         "forge requests: %lld counted (%lld sent: %lld answered 304, %lld with the App's JWT, "
         "%lld git, %lld refused credentials)",
         jint(rq, "counted", -1), jint(rq, "sent", -1), jint(rq, "not_modified", -1),
         jint(rq, "app", -1), jint(rq, "git", -1), jint(rq, "rejected", -1));
  else if (json_is_object(rq)) /* a record before every process was counted */
    line(out, "forge requests (supervisor): %lld", jint(rq, "total", -1));
}

static void show_proxy(const json_t *rec, FILE *out)
{
  const json_t *c = json_object_get(rec, "proxy_decision_counts");
  const json_t *d = jarr(rec, "proxy_decisions");
  if (!c && !d)
    return;
  if (json_is_object(c)) {
    line(out, "proxy: %lld connections, %lld allowed, %lld denied, %lld failed (DNS, connect)%s",
         jint(c, "connections", 0), jint(c, "allowed", 0), jint(c, "denied", 0),
         jint(c, "failed", 0),
         jtrue(rec, "proxy_decisions_truncated") ? " (decision lines truncated)" : "");
  } else
    line(out, "proxy: %zu decision line(s), no counts recorded", d ? json_array_size(d) : 0);
  struct groups g = {0};
  for (size_t i = 0; d && i < json_array_size(d); i++) {
    const json_t *x = json_array_get(d, i);
    const char *ev = jstr(x, "event");
    if (!ev || !strcmp(ev, "close") || !strcmp(ev, "summary") || !strcmp(ev, "reload"))
      continue;
    char where[300];
    const char *host = jstr(x, "host");
    long long port = jint(x, "port", -1);
    if (host && port >= 0)
      snprintf(where, sizeof where, "%.255s:%lld", host, port);
    else
      snprintf(where, sizeof where, "%.255s", host ? host : S(jstr(x, "target")));
    bool agg = !strcmp(ev, "deny-aggregate");
    long long k = agg ? jint(x, "count", 1) : 1;
    const char *dec = agg ? "deny" : S(jstr(x, "decision"));
    group_add(&g, dec, where, S(jstr(x, "reason")), k > 0 ? k : 1);
  }
  groups_print(out, &g);
  groups_free(&g);
}

static void show_gateway(const json_t *rec, FILE *out)
{
  const json_t *s = json_object_get(rec, "gateway_summary");
  const json_t *d = jarr(rec, "gateway_decisions");
  if (!s && !d)
    return;
  line(out, "gateway: %lld requests, %lld allowed, %lld refused, %lld challenged%s%s%s",
       jint(s, "requests", 0), jint(s, "allowed", 0), jint(s, "refused", 0),
       jint(s, "challenged", 0), jtrue(s, "truncated") ? " (truncated)" : "",
       jstr(s, "error") ? "; error: " : "", jstr(s, "error") ? jstr(s, "error") : "");
  struct groups g = {0};
  size_t refused = 0;
  for (size_t i = 0; d && i < json_array_size(d); i++) {
    const json_t *x = json_array_get(d, i);
    const char *dec = S(jstr(x, "decision"));
    char where[300];
    snprintf(where, sizeof where, "%.16s %.255s", S(jstr(x, "method")),
             jstr(x, "rule") ? jstr(x, "rule") : S(jstr(x, "event")));
    /* a credential-missing "deny" is git's first, credential-less try,
     * answered 401 so git sends the placeholder: the summary counts it
     * challenged, and so does its row (a new user read "0 refused" above
     * rows that said deny) */
    const char *why = jstr(x, "reason");
    group_add(&g, why && !strcmp(why, "credential-missing") ? "challenged" : dec, where, S(why), 1);
  }
  groups_print(out, &g);
  groups_free(&g);
  for (size_t i = 0; d && i < json_array_size(d); i++) {
    const json_t *x = json_array_get(d, i);
    const char *dec = jstr(x, "decision");
    const char *reason = jstr(x, "reason");
    if (!dec || !strcmp(dec, "allow") || (reason && !strcmp(reason, "credential-missing")))
      continue;
    if (refused++ == 0)
      line(out, "  refused:");
    if (refused > LIST_MAX)
      continue;
    /* git answers a push whose ref updates it refuses with 200 and the
     * refusal in the report-status (gitprotocol-pack "report-status"): a
     * bare "(200)" here would read as a success */
    long long st = jint(x, "status", -1);
    line(out, "    %s %s %s%s  %s (HTTP %lld%s)", S(jstr(x, "time")), S(jstr(x, "method")),
         S(jstr(x, "host")), S(jstr(x, "path")), S(reason), st,
         st >= 200 && st < 300 ? "; the refusal is in the answer's body, as git reports a refused "
                                 "ref update"
                               : "");
    const json_t *refs = jarr(x, "refs");
    for (size_t k = 0; refs && k < json_array_size(refs) && k < 8; k++)
      line(out, "      ref %s %.12s -> %.12s", S(jstr(json_array_get(refs, k), "ref")),
           S(jstr(json_array_get(refs, k), "old")), S(jstr(json_array_get(refs, k), "new")));
  }
  if (refused > LIST_MAX)
    line(out, "    ... %zu more", refused - LIST_MAX);
}

static void show_pr(const json_t *rec, FILE *out)
{
  const json_t *pr = json_object_get(rec, "pull_request");
  const json_t *o = json_object_get(rec, "outputs");
  if (jtrue(pr, "verified"))
    line(out, "pull request: %s (verified on the forge, branch %s)", S(jstr(pr, "url")),
         S(jstr(pr, "branch")));
  else
    line(out, "pull request: none from this run's branch%s%s%s",
         jstr(pr, "reported_by_agent") ? " (the agent reported " : "",
         jstr(pr, "reported_by_agent") ? jstr(pr, "reported_by_agent") : "",
         jstr(pr, "reported_by_agent") ? ", not this run's)" : "");
  if (o)
    line(out, "  outputs %s%s%s", S(jstr(o, "status")), jstr(o, "error") ? ": " : "",
         jstr(o, "error") ? jstr(o, "error") : "");
}

/* How many items of a have a value of member key that no earlier item has
 * (a file listed once per family it matches is one file). */
static size_t count_distinct(const json_t *a, const char *key)
{
  size_t n = 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    const char *v = jstr(json_array_get(a, i), key);
    bool seen = !v;
    for (size_t k = 0; v && !seen && k < i; k++) {
      const char *w = jstr(json_array_get(a, k), key);
      seen = w && !strcmp(v, w);
    }
    n += !seen;
  }
  return n;
}

/* One list of the review notes: "  NAME: N" (with per_file, "N, in M
 * file(s)" when items share a file) then up to LIST_MAX items, each the
 * members `keys` of the item joined by spaces. */
static void show_notes(FILE *out, const json_t *rv, const char *name, const char *const *keys,
                       bool per_file)
{
  const json_t *a = jarr(rv, name);
  if (!a || json_array_size(a) == 0)
    return;
  size_t files = per_file ? count_distinct(a, "file") : 0;
  if (files && files != json_array_size(a))
    line(out, "  %s: %zu, in %zu file(s)", name, json_array_size(a), files);
  else
    line(out, "  %s: %zu", name, json_array_size(a));
  for (size_t i = 0; i < json_array_size(a) && i < LIST_MAX; i++) {
    const json_t *x = json_array_get(a, i);
    char buf[1024] = "";
    size_t l = 0;
    if (json_is_string(x))
      snprintf(buf, sizeof buf, "%s", json_string_value(x));
    for (const char *const *k = keys; json_is_object(x) && *k && l < sizeof buf - 1; k++) {
      const json_t *v = json_object_get(x, *k);
      if (json_is_string(v))
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%s", l ? " " : "", json_string_value(v));
      else if (json_is_integer(v))
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%s=%lld", l ? " " : "", *k,
                              (long long)json_integer_value(v));
      else if (json_is_true(v))
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%s", l ? " " : "", *k);
    }
    line(out, "    %s", buf);
  }
  if (json_array_size(a) > LIST_MAX)
    line(out, "    ... %zu more", json_array_size(a) - LIST_MAX);
}

static void show_review(const json_t *rec, FILE *out)
{
  const json_t *rv = json_object_get(rec, "review");
  if (!json_is_object(rv))
    return;
  line(out, "review notes:%s%s", jstr(rv, "error") ? " error: " : "",
       jstr(rv, "error") ? jstr(rv, "error") : "");
  static const char *const files[] = {"status",    "file",      "previous_filename",
                                      "additions", "deletions", NULL};
  static const char *const outside[] = {"file", "family", "why", NULL};
  static const char *const kinds[] = {"file", "kind", "target", NULL};
  static const char *const secrets[] = {"where", "file", "kind", "fingerprint", "token", NULL};
  static const char *const links[] = {"where", "url", "image", NULL};
  static const char *const blocked[] = {"by", "target", "reason", "count", NULL};
  static const char *const none[] = {NULL};
  show_notes(out, rv, "files", files, false);
  show_notes(out, rv, "runs_outside_sandbox", outside, true);
  show_notes(out, rv, "kinds", kinds, false);
  show_notes(out, rv, "secrets", secrets, false);
  show_notes(out, rv, "links", links, false);
  show_notes(out, rv, "blocked", blocked, false);
  show_notes(out, rv, "could_not_read", none, false);
}

static void show_audit(const json_t *rec, FILE *out)
{
  const json_t *a = json_object_get(rec, "audit");
  if (!json_is_object(a)) {
    line(out, "audit: none recorded");
    return;
  }
  const json_t *rp = json_object_get(a, "report");
  const json_t *k = json_object_get(rp, "counts");
  line(out, "audit: %s%s%s%s", S(jstr(a, "status")), jstr(rp, "branch") ? " (branch " : "",
       jstr(rp, "branch") ? jstr(rp, "branch") : "", jstr(rp, "branch") ? ")" : "");
  if (jint(k, "warn", 0) > 0)
    line(out, "  %lld WARN criteria (the record's audit.report)", jint(k, "warn", 0));
  /* each WARN by its id, what the audit saw and its fix (the title says
   * what the criterion wants, which reads like a pass), so the reader
   * need not open the JSON */
  const json_t *crit = jarr(rp, "criteria");
  size_t warned = 0;
  for (size_t i = 0; crit && i < json_array_size(crit); i++) {
    const json_t *c = json_array_get(crit, i);
    if (!jstr(c, "status") || strcmp(jstr(c, "status"), "WARN") != 0)
      continue;
    if (warned++ >= LIST_MAX)
      continue;
    line(out, "    WARN %s: %s", S(jstr(c, "id")),
         jstr(c, "evidence") ? jstr(c, "evidence") : S(jstr(c, "title")));
    if (jstr(c, "fix"))
      line(out, "      fix: %s", jstr(c, "fix"));
  }
  if (warned > LIST_MAX)
    line(out, "    ... %zu more", warned - LIST_MAX);
  if (jstr(a, "not_holding"))
    line(out, "  not holding: %s", jstr(a, "not_holding"));
  if (jstr(a, "error"))
    line(out, "  error: %s", jstr(a, "error"));
  if (jtrue(a, "accepted_unprotected"))
    line(out, "  ACCEPTED UNPROTECTED (--accept-unprotected)");
}

static void show_revocation(const json_t *rec, FILE *out)
{
  const json_t *rv = json_object_get(rec, "revocation");
  if (!json_is_object(rv)) {
    line(out, "tokens: no revocation recorded%s",
         json_object_get(rec, "lease") ? " (a lease was taken: check the broker)" : "");
    return;
  }
  line(out, "tokens: %s", jtrue(rv, "all_dead") ? "all dead" : "NOT ALL CONFIRMED DEAD");
  const json_t *t = jarr(rv, "tokens");
  for (size_t i = 0; t && i < json_array_size(t) && i < LIST_MAX; i++) {
    const json_t *x = json_array_get(t, i);
    line(out, "  %-6s %s %s%s, expires %s%s%s", S(jstr(x, "role")), S(jstr(x, "fingerprint")),
         jtrue(x, "revoked") ? "revoked" : "not revoked",
         jtrue(x, "confirmed_401") ? " (confirmed 401)" : "", S(jstr(x, "expires_at")),
         jstr(x, "error") ? "; " : "", jstr(x, "error") ? jstr(x, "error") : "");
  }
  if (jstr(rv, "broker_error"))
    line(out, "  broker: %s", jstr(rv, "broker_error"));
}

void al_run_show(const json_t *rec, const char *path, FILE *out)
{
  show_head(rec, path, out);
  show_phases(rec, out);
  show_audit(rec, out);
  show_proxy(rec, out);
  show_gateway(rec, out);
  show_pr(rec, out);
  show_review(rec, out);
  show_revocation(rec, out);
}
