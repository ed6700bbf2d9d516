/* The proxy's counters (per run and for the process, under the stat lock) and
 * its decision lines (auditlog.h). */
#include "proxy/proxy_int.h"

static void count_denial(al_proxy_counters *k, const char *reason)
{
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
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "connections", (json_int_t)k->conns_total,
                   "allowed", (json_int_t)k->conns_allowed, "denied", (json_int_t)k->conns_denied,
                   "bytes_up", (json_int_t)k->bytes_up, "bytes_down", (json_int_t)k->bytes_down,
                   "denials", d);
}

/* Escape anything but printable ASCII as \xNN so raw client bytes can be
 * logged as a JSON string. At most LOG_TARGET_MAX bytes of the target are
 * kept, then "...(N bytes, sha256:…)": a hostile client must not be able
 * to fill the run's audit log with a few huge requests and push its later
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

void px_audit_write(al_proxy *px, json_t *j)
{
  if (px->cfg->audit_fd < 0) {
    json_decref(j);
    return;
  }
  pthread_mutex_lock(&px->sh->log_mu);
  al_auditlog_write(&px->sh->log, j); /* redacted, capped, never silently lost */
  pthread_mutex_unlock(&px->sh->log_mu);
}

json_t *px_time_json(void)
{
  char b[32];
  al_time_iso_ms(b);
  return json_string(b);
}

/* One audit line. event: "open" (a tunnel was allowed and starts),
 * "close" (an allowed tunnel ended), "deny" (refused or cut). */
void px_audit_conn(al_proxy_conn *c, const char *event, const char *decision)
{
  json_t *j = json_object();
  json_object_set_new(j, "time", px_time_json());
  json_object_set_new(j, "event", json_string(event));
  json_object_set_new(j, "run", json_string(c->run->run_id));
  json_object_set_new(j, "client", json_string(c->client));
  json_object_set_new(j, "target", c->target ? json_string(c->target) : json_null());
  json_object_set_new(j, "host", c->host.name[0] ? json_string(c->host.name) : json_null());
  json_object_set_new(j, "port", c->port ? json_integer(c->port) : json_null());
  json_object_set_new(j, "address", c->dialled[0] ? json_string(c->dialled) : json_null());
  json_object_set_new(j, "sni", c->sni[0] ? json_string(c->sni) : json_null());
  json_object_set_new(j, "decision", json_string(decision));
  json_object_set_new(j, "reason", c->reason ? json_string(c->reason) : json_null());
  if (c->detail)
    json_object_set_new(j, "detail", json_string(c->detail));
  json_object_set_new(j, "bytes_up", json_integer((json_int_t)c->up.bytes));
  json_object_set_new(j, "bytes_down", json_integer((json_int_t)c->down.bytes));
  json_object_set_new(j, "duration_ms", json_integer((json_int_t)(al_now_ms() - c->t_start)));
  px_audit_write(c->px, j);
}
