/* The proxy's capped decision log: see auditlog.h. */
#include "proxy/auditlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/redact.h"
#include "common/util.h"

#define RESERVE_MAX (256u << 10)

void al_auditlog_init(al_auditlog *a, int fd, uint64_t cap)
{
  memset(a, 0, sizeof *a);
  a->fd = fd;
  a->cap = cap;
  if (fd >= 0) {
    int fl = fcntl(fd, F_GETFL);
    off_t off = lseek(fd, 0, SEEK_CUR);
    if (fl >= 0 && !(fl & O_APPEND) && off >= 0) {
      a->use_offset = true;
      a->base = (uint64_t)off;
    }
  }
}

static uint64_t position(const al_auditlog *a)
{
  if (a->use_offset) {
    off_t off = lseek(a->fd, 0, SEEK_CUR);
    if (off >= 0 && (uint64_t)off >= a->base)
      return (uint64_t)off - a->base;
  }
  return a->written;
}

static uint64_t reserve(const al_auditlog *a)
{
  uint64_t r = a->cap / 4;
  return r > RESERVE_MAX ? RESERVE_MAX : r;
}

static const char *str(json_t *j, const char *k)
{
  const char *s = json_string_value(json_object_get(j, k));
  return s ? s : "";
}

static void aggregate(al_auditlog *a, json_t *j)
{
  a->aggregated++;
  const char *run = str(j, "run"), *host = str(j, "host"), *reason = str(j, "reason");
  const char *t = str(j, "time");
  int port = (int)json_integer_value(json_object_get(j, "port"));
  for (size_t i = 0; i < a->n_aggs; i++) {
    al_auditlog_agg *g = &a->aggs[i];
    if (g->port == port && !strcmp(g->run, run) && !strcmp(g->host, host) &&
        !strcmp(g->reason, reason)) {
      g->n++;
      snprintf(g->last, sizeof g->last, "%s", t);
      return;
    }
  }
  if (a->n_aggs == AL_AUDITLOG_AGGS) {
    a->agg_overflow++; /* counted in the summary's exact totals */
    return;
  }
  al_auditlog_agg *g = &a->aggs[a->n_aggs++];
  snprintf(g->run, sizeof g->run, "%s", run);
  snprintf(g->host, sizeof g->host, "%s", host);
  snprintf(g->reason, sizeof g->reason, "%s", reason);
  g->port = port;
  g->n = 1;
  snprintf(g->first, sizeof g->first, "%s", t);
  snprintf(g->last, sizeof g->last, "%s", t);
}

/* Write one serialised line if it fits under limit; else count it dropped. */
static void emit(al_auditlog *a, json_t *j, uint64_t limit)
{
  char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(j);
  char *r = s ? al_redact(s) : NULL; /* a credential in a URL never reaches the log */
  free(s);
  if (!r) {
    a->dropped++;
    return;
  }
  size_t n = strlen(r);
  r[n] = '\n';
  if (a->fd < 0) {
    free(r);
    return;
  }
  /* over the cap, or a failed write (a full sealed memfd: EPERM; a full
   * disk): counted as dropped */
  bool fits = !a->cap || position(a) + n + 1 <= limit;
  if (fits && al_write_all(a->fd, r, n + 1) == 0) {
    a->written += n + 1;
    a->lines++;
  } else {
    a->dropped++;
  }
  free(r);
}

void al_auditlog_write(al_auditlog *a, json_t *j)
{
  if (!j)
    return;
  if (a->cap && !strcmp(str(j, "event"), "deny") && position(a) >= a->cap / 2) {
    aggregate(a, j);
    json_decref(j);
    return;
  }
  emit(a, j, a->cap - reserve(a));
}

void al_auditlog_close(al_auditlog *a, json_t *summary)
{
  for (size_t i = 0; i < a->n_aggs; i++) {
    const al_auditlog_agg *g = &a->aggs[i];
    emit(a,
         json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:I, s:s, s:s}", "time", g->last, "event",
                   "deny-aggregate", "run", g->run, "host", g->host, "port", g->port, "decision",
                   "deny", "reason", g->reason, "count", (json_int_t)g->n, "first", g->first,
                   "last", g->last),
         a->cap > 4096 ? a->cap - 4096 : a->cap); /* room for the summary */
  }
  if (!summary)
    summary = json_object();
  bool capped = a->dropped || a->aggregated;
  json_object_set_new(summary, "event", json_string("summary"));
  json_object_set_new(summary, "lines_written", json_integer((json_int_t)a->lines));
  json_object_set_new(summary, "lines_dropped", json_integer((json_int_t)a->dropped));
  json_object_set_new(summary, "denials_aggregated", json_integer((json_int_t)a->aggregated));
  json_object_set_new(summary, "audit_cap", json_integer((json_int_t)a->cap));
  json_object_set_new(summary, "capped", json_boolean(capped));
  if (capped) {
    char note[256];
    snprintf(note, sizeof note,
             "the decision log reached its cap of %llu bytes: %llu denials aggregated, %llu "
             "lines dropped; the counts in this line are exact",
             (unsigned long long)a->cap, (unsigned long long)a->aggregated,
             (unsigned long long)a->dropped);
    json_object_set_new(summary, "note", json_string(note));
  }
  emit(a, summary, a->cap);
}
