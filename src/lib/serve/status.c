/* The read-only status pages: HTML without JavaScript, the same as JSON,
 * and Prometheus metrics (text exposition format 0.0.4,
 * prometheus.io/docs/instrumenting/exposition_formats). Every string shown
 * in HTML is escaped; log lines are already neutralised by `airlock
 * ticket` (escape sequences shown as \xNN) and escaped again here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "serve/internal.h"

struct buf {
  char *s;
  size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void bprintf(struct buf *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (need < 0)
    return;
  if (b->n + (size_t)need + 1 > b->cap) {
    b->cap = (b->n + (size_t)need + 1) * 2;
    b->s = al_xrealloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  b->n += (size_t)need;
}

/* HTML-escape s (NULL shows as "") into b. */
static void besc(struct buf *b, const char *s)
{
  for (; s && *s; s++) {
    switch (*s) {
    case '<':
      bprintf(b, "&lt;");
      break;
    case '>':
      bprintf(b, "&gt;");
      break;
    case '&':
      bprintf(b, "&amp;");
      break;
    case '"':
      bprintf(b, "&quot;");
      break;
    case '\'':
      bprintf(b, "&#39;");
      break;
    default:
      if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
        bprintf(b, "\\x%02x", (unsigned char)*s);
      else
        bprintf(b, "%c", *s);
    }
  }
}

static const char *jstr(json_t *o, const char *k)
{
  return json_string_value(json_object_get(o, k));
}

static long long jint(json_t *o, const char *k)
{
  return (long long)json_integer_value(json_object_get(o, k));
}

/* "#KEY" of a Jira or Linear row, else "#N" (the forge issue). */
static void ticket_name(struct buf *b, json_t *v)
{
  const char *key = jstr(v, "ticket_key");
  if (key) {
    bprintf(b, "#");
    besc(b, key);
  } else {
    bprintf(b, "#%lld", jint(v, "number"));
  }
}

static void iso_ms(long long ms, char out[32])
{
  if (ms <= 0) {
    snprintf(out, 32, "—");
    return;
  }
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* A link only to an https URL (the PR), escaped. */
static void blink(struct buf *b, const char *url)
{
  if (url && !strncmp(url, "https://", 8)) {
    bprintf(b, "<a href=\"");
    besc(b, url);
    bprintf(b, "\">");
    besc(b, url);
    bprintf(b, "</a>");
  } else {
    besc(b, url ? url : "");
  }
}

static const char head[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>airlock serve</title>"
    "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%%;vertical-align:top}"
    "pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap}</style></head><body>";

char *serve_page_index(struct serve *s, const char **type)
{
  struct buf b = {0};
  json_t *rows = al_queue_list(s->q, 200);
  json_t *st = al_queue_stats(s->q);
  bprintf(&b, head);
  bprintf(&b, "<h1>airlock serve</h1><p>");
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(st, "states"), i, v)
  {
    bprintf(&b, "%s: %lld &nbsp; ", jstr(v, "state"), jint(v, "n"));
  }
  bprintf(&b, "— <a href=\"/runs.json\">JSON</a> · <a href=\"/metrics\">metrics</a></p>");
  bprintf(&b, "<table><tr><th>run</th><th>ticket</th><th>state</th><th>trigger</th>"
              "<th>permission</th><th>attempts</th><th>queued</th><th>duration</th>"
              "<th>result</th><th>pull request</th></tr>");
  json_array_foreach(rows, i, v)
  {
    char created[32];
    iso_ms(jint(v, "created_ms"), created);
    long long d = jint(v, "finished_ms") && jint(v, "started_ms")
                      ? jint(v, "finished_ms") - jint(v, "started_ms")
                      : -1;
    bprintf(&b, "<tr><td><a href=\"/runs/%lld\">%lld</a></td><td>", jint(v, "id"), jint(v, "id"));
    besc(&b, jstr(v, "repo"));
    ticket_name(&b, v);
    bprintf(&b, "</td><td>%s</td><td>", jstr(v, "state"));
    besc(&b, jstr(v, "trigger"));
    bprintf(&b, " by ");
    besc(&b, jstr(v, "sender"));
    bprintf(&b, "</td><td>");
    besc(&b, jstr(v, "permission"));
    bprintf(&b, "</td><td>%lld</td><td>%s</td><td>", jint(v, "attempts"), created);
    if (d >= 0)
      bprintf(&b, "%.1f s", (double)d / 1000.0);
    bprintf(&b, "</td><td>");
    besc(&b, jstr(v, "reason"));
    bprintf(&b, "</td><td>");
    blink(&b, jstr(v, "pr_url"));
    bprintf(&b, "</td></tr>");
  }
  bprintf(&b, "</table><h2>webhook deliveries</h2><table><tr><th>delivery</th><th>event</th>"
              "<th>received</th><th>outcome</th></tr>");
  json_t *dl = al_queue_deliveries(s->q, 50);
  json_array_foreach(dl, i, v)
  {
    char t[32];
    iso_ms(jint(v, "received_ms"), t);
    bprintf(&b, "<tr><td>");
    besc(&b, jstr(v, "id"));
    bprintf(&b, "</td><td>");
    besc(&b, jstr(v, "event"));
    bprintf(&b, "</td><td>%s</td><td>", t);
    besc(&b, jstr(v, "outcome"));
    bprintf(&b, "</td></tr>");
  }
  bprintf(&b, "</table></body></html>\n");
  json_decref(dl);
  json_decref(rows);
  json_decref(st);
  *type = "text/html; charset=utf-8";
  return b.s;
}

/* The last max bytes of a file (malloc'd) or NULL. */
static char *file_tail(const char *path, size_t max)
{
  char *data = NULL;
  size_t len;
  al_error err;
  if (!path || al_read_file(path, 64u << 20, &data, &len, &err) < 0)
    return NULL;
  if (len > max) {
    memmove(data, data + len - max, max);
    data[max] = '\0';
  }
  return data;
}

char *serve_page_run(struct serve *s, int64_t id, const char **type, int *status)
{
  json_t *v = al_queue_get(s->q, id);
  *type = "text/html; charset=utf-8";
  if (!v) {
    *status = 404;
    return al_xstrdup("no such run\n");
  }
  struct buf b = {0};
  bprintf(&b, head);
  bprintf(&b, "<p><a href=\"/\">all runs</a></p><h1>run %lld: ", (long long)id);
  besc(&b, jstr(v, "repo"));
  ticket_name(&b, v);
  bprintf(&b, " — %s</h1><table>", jstr(v, "state"));
  const char *fields[] = {
      "trigger",  "sender",      "delivery", "permission", "check_detail",
      "attempts", "exit_status", "reason",   "run_id",     "tokens_unconfirmed"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(fields); i++) {
    json_t *f = json_object_get(v, fields[i]);
    bprintf(&b, "<tr><th>%s</th><td>", fields[i]);
    if (json_is_string(f))
      besc(&b, json_string_value(f));
    else if (json_is_integer(f))
      bprintf(&b, "%lld", (long long)json_integer_value(f));
    bprintf(&b, "</td></tr>");
  }
  bprintf(&b, "<tr><th>pull request</th><td>");
  blink(&b, jstr(v, "pr_url"));
  bprintf(&b, "</td></tr><tr><th>record</th><td>");
  if (jstr(v, "record"))
    bprintf(&b, "<a href=\"/runs/%lld/record\">run record (JSON)</a>", (long long)id);
  bprintf(&b, "</td></tr></table><h2>history</h2><ul>");
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(v, "events"), i, e)
  {
    char t[32];
    iso_ms(jint(e, "ms") > 100000000000LL ? jint(e, "ms") : 0, t);
    bprintf(&b, "<li>");
    besc(&b, jstr(e, "what"));
    bprintf(&b, "</li>");
  }
  bprintf(&b, "</ul><h2>phase lines (the run's log, last 64 KiB)</h2><pre>");
  char *log = file_tail(jstr(v, "log"), 65536);
  besc(&b, log);
  free(log);
  bprintf(&b, "</pre></body></html>\n");
  json_decref(v);
  *status = 200;
  return b.s;
}

char *serve_page_runs_json(struct serve *s, const char **type)
{
  json_t *o = json_pack("{s:o, s:o, s:o}", "runs", al_queue_list(s->q, 500), "stats",
                        al_queue_stats(s->q), "deliveries", al_queue_deliveries(s->q, 200));
  char *txt = json_dumps(o, JSON_INDENT(1));
  json_decref(o);
  *type = "application/json";
  return txt;
}

/* A Prometheus label value: \ " and newline escaped. */
static void blabel(struct buf *b, const char *s)
{
  for (; s && *s; s++) {
    if (*s == '\\' || *s == '"')
      bprintf(b, "\\%c", *s);
    else if (*s == '\n')
      bprintf(b, "\\n");
    else
      bprintf(b, "%c", *s);
  }
}

char *serve_page_metrics(struct serve *s, const char **type)
{
  json_t *st = al_queue_stats(s->q);
  struct buf b = {0};
  static const char *const states[] = {"queued", "running",     "succeeded",
                                       "failed", "interrupted", "refused"};
  bprintf(&b,
          "# HELP airlock_serve_leader 1 when this replica dequeues (holds the Lease, or no "
          "election).\n# TYPE airlock_serve_leader gauge\nairlock_serve_leader %d\n",
          __atomic_load_n(&s->leader, __ATOMIC_RELAXED) != 0);
  bprintf(&b, "# HELP airlock_serve_runs Runs in the queue by state.\n"
              "# TYPE airlock_serve_runs gauge\n");
  for (size_t k = 0; k < AL_ARRAY_SIZE(states); k++) {
    long long n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(st, "states"), i,
                       v) if (!strcmp(jstr(v, "state"), states[k])) n = jint(v, "n");
    bprintf(&b, "airlock_serve_runs{state=\"%s\"} %lld\n", states[k], n);
  }
  bprintf(&b, "# HELP airlock_serve_run_duration_seconds Wall time of finished attempts.\n"
              "# TYPE airlock_serve_run_duration_seconds summary\n");
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(st, "durations"), i, v)
  {
    bprintf(&b, "airlock_serve_run_duration_seconds_sum{state=\"%s\"} %.3f\n", jstr(v, "state"),
            (double)jint(v, "sum_ms") / 1000.0);
    bprintf(&b, "airlock_serve_run_duration_seconds_count{state=\"%s\"} %lld\n", jstr(v, "state"),
            jint(v, "n"));
  }
  bprintf(&b, "# HELP airlock_serve_denials_total Egress denials by reason, from the run "
              "records.\n# TYPE airlock_serve_denials_total counter\n");
  json_array_foreach(json_object_get(st, "denials"), i, v)
  {
    bprintf(&b, "airlock_serve_denials_total{reason=\"");
    blabel(&b, jstr(v, "reason"));
    bprintf(&b, "\"} %lld\n", jint(v, "n"));
  }
  json_t *t = json_array_get(json_object_get(st, "totals"), 0);
  bprintf(&b,
          "# HELP airlock_serve_tokens_outstanding Tokens that may be alive: two per running "
          "run (its lease), plus those in finished runs' records whose revocation was not "
          "confirmed (the broker retries those).\n"
          "# TYPE airlock_serve_tokens_outstanding gauge\n"
          "airlock_serve_tokens_outstanding{source=\"running\"} %lld\n"
          "airlock_serve_tokens_outstanding{source=\"unconfirmed\"} %lld\n"
          "# HELP airlock_serve_queue_depth Runs waiting to start.\n"
          "# TYPE airlock_serve_queue_depth gauge\nairlock_serve_queue_depth %lld\n",
          2 * jint(t, "running"), jint(t, "tokens_unconfirmed"), jint(t, "queue_depth"));
  bprintf(&b, "# HELP airlock_serve_webhook_deliveries_total Authenticated deliveries by "
              "outcome.\n# TYPE airlock_serve_webhook_deliveries_total counter\n");
  json_array_foreach(json_object_get(st, "deliveries"), i, v)
  {
    bprintf(&b, "airlock_serve_webhook_deliveries_total{outcome=\"");
    blabel(&b, jstr(v, "outcome"));
    bprintf(&b, "\"} %lld\n", jint(v, "n"));
  }
  json_decref(st);
  *type = "text/plain; version=0.0.4; charset=utf-8";
  return b.s;
}
