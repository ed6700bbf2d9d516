/* The proxy's capped decision log: see decisions.h. */
#include "proxy/decisions.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/redact.h"
#include "common/util.h"

#define RESERVE_MAX (256u << 10)

void al_decisions_init(al_decisions *a, int fd, uint64_t cap)
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

static uint64_t position(const al_decisions *a)
{
  if (a->use_offset) {
    off_t off = lseek(a->fd, 0, SEEK_CUR);
    if (off >= 0 && (uint64_t)off >= a->base)
      return (uint64_t)off - a->base;
  }
  return a->written;
}

static uint64_t reserve(const al_decisions *a)
{
  uint64_t r = a->cap / 4;
  return r > RESERVE_MAX ? RESERVE_MAX : r;
}

static const char *str(json_t *j, const char *k)
{
  const char *s = json_string_value(json_object_get(j, k));
  return s ? s : "";
}

static const char *nz(const char *s)
{
  return s ? s : "";
}

static void aggregate(al_decisions *a, const al_decisions_key *k)
{
  a->aggregated++;
  const char *run = nz(k->run), *host = nz(k->host), *reason = nz(k->reason);
  const char *t = nz(k->time);
  int port = k->port;
  for (size_t i = 0; i < a->n_aggs; i++) {
    al_decisions_agg *g = &a->aggs[i];
    if (g->port == port && !strcmp(g->run, run) && !strcmp(g->host, host) &&
        !strcmp(g->reason, reason)) {
      g->n++;
      snprintf(g->last, sizeof g->last, "%s", t);
      return;
    }
  }
  if (a->n_aggs == AL_DECISIONS_AGGS) {
    a->agg_overflow++; /* counted in the summary's exact totals */
    return;
  }
  al_decisions_agg *g = &a->aggs[a->n_aggs++];
  snprintf(g->run, sizeof g->run, "%s", run);
  snprintf(g->host, sizeof g->host, "%s", host);
  snprintf(g->reason, sizeof g->reason, "%s", reason);
  g->port = port;
  g->n = 1;
  snprintf(g->first, sizeof g->first, "%s", t);
  snprintf(g->last, sizeof g->last, "%s", t);
}

/* Past this many deferred bytes the buffer is written at once. */
#define BUF_FLUSH (64u << 10)

void al_decisions_flush(al_decisions *a)
{
  if (!a->buf_len)
    return;
  /* a failed write (a full sealed memfd: EPERM; a full disk): every line
   * of the batch counted as dropped */
  if (al_write_all(a->fd, a->buf, a->buf_len) == 0) {
    a->written += a->buf_len;
    a->lines += a->buf_lines;
  } else {
    a->dropped += a->buf_lines;
  }
  a->buf_len = a->buf_lines = 0;
}

bool al_decisions_pending(const al_decisions *a)
{
  return a->buf_len > 0;
}

/* Queue one serialised line (NUL-terminated) if it fits under limit, else
 * count it dropped; unless defer, write the queue now. */
static void emit_line(al_decisions *a, const char *line, uint64_t limit, bool defer)
{
  char *r = al_redact(line); /* a credential in a URL never reaches the log */
  size_t n = strlen(r);
  if (a->fd < 0) {
    free(r);
    return;
  }
  /* over the cap (what is queued counts): dropped */
  if (!a->cap || position(a) + a->buf_len + n + 1 <= limit) {
    if (a->buf_len + n + 1 > a->buf_cap) {
      a->buf_cap = (a->buf_len + n + 1) * 2;
      a->buf = al_xrealloc(a->buf, a->buf_cap);
    }
    memcpy(a->buf + a->buf_len, r, n);
    a->buf[a->buf_len + n] = '\n';
    a->buf_len += n + 1;
    a->buf_lines++;
  } else {
    a->dropped++;
  }
  free(r);
  if (!defer || a->buf_len >= BUF_FLUSH)
    al_decisions_flush(a);
}

static void emit(al_decisions *a, json_t *j, uint64_t limit)
{
  char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(j);
  if (!s) {
    a->dropped++;
    al_decisions_flush(a);
    return;
  }
  emit_line(a, s, limit, false);
  free(s);
}

void al_decisions_write_line(al_decisions *a, const char *line, const al_decisions_key *k,
                             bool defer)
{
  if (a->cap && !strcmp(nz(k->event), "deny") && position(a) + a->buf_len >= a->cap / 2) {
    aggregate(a, k);
    if (!defer)
      al_decisions_flush(a);
    return;
  }
  emit_line(a, line, a->cap - reserve(a), defer);
}

void al_decisions_write(al_decisions *a, json_t *j)
{
  if (!j)
    return;
  if (a->cap && !strcmp(str(j, "event"), "deny") && position(a) + a->buf_len >= a->cap / 2) {
    al_decisions_key k = {.event = "deny",
                          .run = str(j, "run"),
                          .host = str(j, "host"),
                          .reason = str(j, "reason"),
                          .time = str(j, "time"),
                          .port = (int)json_integer_value(json_object_get(j, "port"))};
    aggregate(a, &k);
    json_decref(j);
    al_decisions_flush(a);
    return;
  }
  emit(a, j, a->cap - reserve(a));
}

void al_decisions_close(al_decisions *a, json_t *summary)
{
  al_decisions_flush(a);
  for (size_t i = 0; i < a->n_aggs; i++) {
    const al_decisions_agg *g = &a->aggs[i];
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
  free(a->buf);
  a->buf = NULL;
  a->buf_len = a->buf_cap = a->buf_lines = 0;
}

/* Length of the well-formed UTF-8 sequence (RFC 3629 §4) at s (n bytes
 * left; s[0] >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
  size_t len;
  unsigned cp;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) {
    len = 2;
    cp = s[0] & 0x1fu;
  } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
    len = 3;
    cp = s[0] & 0x0fu;
  } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    len = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

size_t al_decisions_json_string(char *out, const char *s, size_t n)
{
  char *o = out;
  *o++ = '"';
  for (size_t i = 0; i < n;) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\') {
      *o++ = (char)ch;
      i++;
      continue;
    }
    if (ch >= 0x80) {
      size_t l = utf8_seq((const unsigned char *)s + i, n - i);
      if (l) {
        memcpy(o, s + i, l);
        o += l;
        i += l;
        continue;
      }
    }
    static const char hex[] = "0123456789ABCDEF";
    *o++ = '\\';
    switch (ch) {
    case '"':
      *o++ = '"';
      break;
    case '\\':
      *o++ = '\\';
      break;
    case '\b':
      *o++ = 'b';
      break;
    case '\f':
      *o++ = 'f';
      break;
    case '\n':
      *o++ = 'n';
      break;
    case '\r':
      *o++ = 'r';
      break;
    case '\t':
      *o++ = 't';
      break;
    default:
      *o++ = 'u';
      *o++ = '0';
      *o++ = '0';
      *o++ = hex[ch >> 4];
      *o++ = hex[ch & 15];
      break;
    }
    i++;
  }
  *o++ = '"';
  *o = '\0';
  return (size_t)(o - out);
}
