/* The proxy's counters (per run and for the process, under the stat lock) and
 * its decision lines (decisions.h). */
#include "proxy/proxy_int.h"

bool al_proxy_reason_is_failure(const char *reason)
{
  static const char *const failures[] = {"dns-failed",         "dns-timeout",   "connect-failed",
                                         "connect-timeout",    "client-closed", "client-error",
                                         "gateway-unavailable"};
  for (size_t i = 0; reason && i < sizeof failures / sizeof failures[0]; i++)
    if (strcmp(reason, failures[i]) == 0)
      return true;
  return false;
}

static void count_denial(al_proxy_counters *k, const char *reason)
{
  if (al_proxy_reason_is_failure(reason))
    k->conns_failed++;
  else
    k->conns_denied++;
  for (size_t i = 0; i < k->n_denials; i++)
    if (strcmp(k->denials[i].reason, reason) == 0) {
      k->denials[i].n++;
      return;
    }
  if (k->n_denials < MAX_REASONS) {
    k->denials[k->n_denials].reason = reason;
    k->denials[k->n_denials++].n = 1;
  }
}

/* The counters of a run and of the process move together, under the stat
 * lock (a handful of times per tunnel). */
void px_stat_denial(al_proxy_run *run, al_proxy_shared *sh, const char *reason)
{
  pthread_mutex_lock(&sh->stat_mu);
  count_denial(&run->cnt, reason);
  count_denial(&sh->cnt, reason);
  pthread_mutex_unlock(&sh->stat_mu);
}

void px_stat_total(al_proxy_run *run, al_proxy_shared *sh)
{
  pthread_mutex_lock(&sh->stat_mu);
  run->cnt.conns_total++;
  sh->cnt.conns_total++;
  pthread_mutex_unlock(&sh->stat_mu);
}

void px_stat_allowed(al_proxy_run *run, al_proxy_shared *sh)
{
  pthread_mutex_lock(&sh->stat_mu);
  run->cnt.conns_allowed++;
  sh->cnt.conns_allowed++;
  pthread_mutex_unlock(&sh->stat_mu);
}

void px_stat_bytes(al_proxy_run *run, al_proxy_shared *sh, uint64_t up, uint64_t down)
{
  pthread_mutex_lock(&sh->stat_mu);
  run->cnt.bytes_up += up;
  run->cnt.bytes_down += down;
  sh->cnt.bytes_up += up;
  sh->cnt.bytes_down += down;
  pthread_mutex_unlock(&sh->stat_mu);
}

json_t *px_counters_json(const al_proxy_counters *k)
{
  json_t *d = json_object();
  for (size_t i = 0; i < k->n_denials; i++)
    json_object_set_new(d, k->denials[i].reason, json_integer((json_int_t)k->denials[i].n));
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "connections", (json_int_t)k->conns_total,
                   "allowed", (json_int_t)k->conns_allowed, "denied", (json_int_t)k->conns_denied,
                   "failed", (json_int_t)k->conns_failed, "bytes_up", (json_int_t)k->bytes_up,
                   "bytes_down", (json_int_t)k->bytes_down, "denials", d);
}

/* Escape anything but printable ASCII as \xNN so raw client bytes can be
 * logged as a JSON string. At most LOG_TARGET_MAX bytes of the target are
 * kept, then "...(N bytes, sha256:…)": a hostile client must not be able
 * to fill the run's decision log with a few huge requests and push its later
 * decisions out of the record. */
#define LOG_TARGET_MAX 256
char *px_escape_raw(const char *s, size_t full_len)
{
  size_t len = full_len > LOG_TARGET_MAX ? LOG_TARGET_MAX : full_len;
  char *out = al_xmalloc(len * 4 + 96), *o = out;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '\\')
      *o++ = (char)ch;
    else
      o += sprintf(o, "\\x%02x", ch);
  }
  if (full_len > len) {
    char hex[65];
    al_sha256_hex(s, full_len, hex);
    o += sprintf(o, "...(%zu bytes, sha256:%.12s)", full_len, hex);
  }
  *o = '\0';
  return out;
}

void px_decision_write(al_proxy *px, json_t *j)
{
  if (px->cfg->decisions_fd < 0) {
    json_decref(j);
    return;
  }
  al_proxy_shared *sh = px->sh;
  pthread_mutex_lock(&sh->log_mu);
  al_decisions_write(&sh->log, j); /* redacted, capped, never silently lost */
  atomic_store(&sh->log_pending, al_decisions_pending(&sh->log));
  pthread_mutex_unlock(&sh->log_mu);
}

void px_decision_flush(al_proxy *px)
{
  al_proxy_shared *sh = px->sh;
  if (!atomic_load(&sh->log_pending))
    return;
  pthread_mutex_lock(&sh->log_mu);
  al_decisions_flush(&sh->log);
  atomic_store(&sh->log_pending, false);
  pthread_mutex_unlock(&sh->log_mu);
}

/* The time as al_time_iso_ms() writes it (RFC 3339, UTC, milliseconds),
 * with the part up to the seconds formatted once a second per thread. */
static void time_iso_ms(char out[32])
{
  static _Thread_local time_t sec = (time_t)-1;
  static _Thread_local char prefix[24];
  static _Thread_local size_t prefix_len;
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != sec) {
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    prefix_len = strftime(prefix, sizeof prefix, "%Y-%m-%dT%H:%M:%S", &tm);
    sec = ts.tv_sec;
  }
  memcpy(out, prefix, prefix_len);
  unsigned ms = (unsigned)(ts.tv_nsec / 1000000);
  char *o = out + prefix_len;
  *o++ = '.';
  *o++ = (char)('0' + ms / 100);
  *o++ = (char)('0' + ms / 10 % 10);
  *o++ = (char)('0' + ms % 10);
  *o++ = 'Z';
  *o = '\0';
}

json_t *px_time_json(void)
{
  char b[32];
  time_iso_ms(b);
  return json_string(b);
}

/* ---- one decision line, serialised directly (no JSON objects) ---- */

/* A growing line: starts in the caller's stack buffer. */
typedef struct line_buf {
  char *p;
  size_t len, cap;
  bool heap;
} line_buf;

static void lb_reserve(line_buf *b, size_t more)
{
  if (b->len + more + 1 <= b->cap)
    return;
  size_t cap = (b->len + more + 1) * 2;
  if (b->heap) {
    b->p = al_xrealloc(b->p, cap);
  } else {
    char *h = al_xmalloc(cap);
    memcpy(h, b->p, b->len);
    b->p = h;
    b->heap = true;
  }
  b->cap = cap;
}

static void lb_raw(line_buf *b, const char *s, size_t n)
{
  lb_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

/* A JSON string, or null for NULL (decisions.h al_decisions_json_string). */
static void lb_str(line_buf *b, const char *s)
{
  if (!s) {
    lb_raw(b, "null", 4);
    return;
  }
  size_t n = strlen(s);
  lb_reserve(b, n * 6 + 2);
  b->len += al_decisions_json_string(b->p + b->len, s, n);
}

static void lb_u64(line_buf *b, uint64_t v)
{
  char d[24];
  int n = snprintf(d, sizeof d, "%llu", (unsigned long long)v);
  lb_raw(b, d, (size_t)n);
}

#define LB_KEY(b, k) lb_raw((b), (k), sizeof(k) - 1)

/* One decision line. event: "open" (a tunnel was allowed and starts),
 * "close" (an allowed tunnel ended), "deny" (refused or cut). The fields
 * and their order are those of docs/run-record.md, "Decisions" (as the
 * jansson object it replaces wrote them). "close" is deferred
 * (decisions.h, Batching): the tunnel is over, nobody waits on the line;
 * every other event is written before the client hears of it. */
void px_decision_conn(al_proxy_conn *c, const char *event, const char *decision)
{
  if (c->px->cfg->decisions_fd < 0)
    return;
  char stack[1024], t[32];
  line_buf b = {.p = stack, .cap = sizeof stack};
  const char *host = c->host.name[0] ? c->host.name : NULL;

  time_iso_ms(t);
  stack[0] = '\0';
  LB_KEY(&b, "{\"time\":");
  lb_str(&b, t);
  LB_KEY(&b, ",\"event\":");
  lb_str(&b, event);
  LB_KEY(&b, ",\"run\":");
  lb_str(&b, c->run->run_id);
  LB_KEY(&b, ",\"client\":");
  lb_str(&b, c->client);
  LB_KEY(&b, ",\"target\":");
  lb_str(&b, c->target);
  LB_KEY(&b, ",\"host\":");
  lb_str(&b, host);
  LB_KEY(&b, ",\"port\":");
  if (c->port)
    lb_u64(&b, c->port);
  else
    LB_KEY(&b, "null");
  LB_KEY(&b, ",\"address\":");
  lb_str(&b, c->dialled[0] ? c->dialled : NULL);
  LB_KEY(&b, ",\"sni\":");
  lb_str(&b, c->sni[0] ? c->sni : NULL);
  if (c->tport)
    LB_KEY(&b, ",\"via\":\"transparent\"");
  LB_KEY(&b, ",\"decision\":");
  lb_str(&b, decision);
  LB_KEY(&b, ",\"reason\":");
  lb_str(&b, c->reason);
  if (c->detail) {
    LB_KEY(&b, ",\"detail\":");
    lb_str(&b, c->detail);
  }
  LB_KEY(&b, ",\"bytes_up\":");
  lb_u64(&b, c->up.bytes);
  LB_KEY(&b, ",\"bytes_down\":");
  lb_u64(&b, c->down.bytes);
  LB_KEY(&b, ",\"duration_ms\":");
  lb_u64(&b, al_now_ms() - c->t_start);
  LB_KEY(&b, "}");

  al_decisions_key k = {.event = event,
                        .run = c->run->run_id,
                        .host = host,
                        .reason = c->reason,
                        .time = t,
                        .port = c->port};
  al_proxy_shared *sh = c->px->sh;
  pthread_mutex_lock(&sh->log_mu);
  al_decisions_write_line(&sh->log, b.p, &k, strcmp(event, "close") == 0);
  atomic_store(&sh->log_pending, al_decisions_pending(&sh->log));
  pthread_mutex_unlock(&sh->log_mu);
  if (b.heap)
    free(b.p);
}
