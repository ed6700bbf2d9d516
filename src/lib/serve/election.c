/* Leader election over a Lease: see election.h. */
#include "serve/election.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/internal.h"

/* Wall-clock ms (for the Lease's MicroTime fields only; every decision
 * uses the monotonic al_now_ms). */
static uint64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool dns_name(const char *s)
{
  size_t n = strlen(s);
  return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n &&
         s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}

int serve_election_init(struct serve_election *e, const al_serve_config *c, al_error *err)
{
  memset(e, 0, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", c->election_lease);
  if (!dns_name(e->name))
    return al_error_set(err, EINVAL, "election.lease `%s`: not a DNS subdomain name",
                        c->election_lease);
  if (c->election_namespace[0]) {
    snprintf(e->ns, sizeof e->ns, "%s", c->election_namespace);
  } else {
    /* the namespace file beside the token (the service account's dir) */
    char path[600];
    const char *slash = strrchr(c->election_token_file, '/');
    snprintf(path, sizeof path, "%.*s/namespace", (int)(slash - c->election_token_file),
             c->election_token_file);
    al_autofree char *text = NULL;
    if (al_read_file(path, 256, &text, NULL, err) < 0)
      return -1;
    text[strcspn(text, "\r\n")] = '\0';
    snprintf(e->ns, sizeof e->ns, "%s", text);
  }
  if (!dns_name(e->ns))
    return al_error_set(err, EINVAL, "election.namespace `%s`: not a DNS label", e->ns);
  if (c->election_identity[0]) {
    snprintf(e->id, sizeof e->id, "%s", c->election_identity);
  } else if (gethostname(e->id, sizeof e->id - 1) < 0) {
    return al_make_error(err, errno, "election.identity: gethostname");
  }
  if (strspn(e->id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:@/") !=
          strlen(e->id) ||
      !e->id[0])
    return al_error_set(err, EINVAL, "election.identity `%s`: letters, digits and -._:@/ only",
                        e->id);
  e->duration_ms = c->election_duration_ms;
  e->renew_ms = c->election_renew_ms;
  e->retry_ms = c->election_retry_ms;
  /* each request must end well before the leader's deadline */
  long timeout = (long)(e->renew_ms / 2 < 5000 ? e->renew_ms / 2 : 5000);
  return al_kube_init(&e->k, c->election_api, c->election_token_file, c->election_ca_file, timeout,
                      err);
}

static void note_error(struct serve_election *e, const char *what, const char *msg)
{
  char line[256];
  snprintf(line, sizeof line, "%s: %s", what, msg);
  if (strcmp(line, e->last_error) != 0) {
    snprintf(e->last_error, sizeof e->last_error, "%s", line);
    serve_log("warn", "election", json_pack("{s:s, s:s}", "lease", e->name, "identity", e->id),
              "%s", line);
  }
}

bool serve_election_leading(const struct serve_election *e, uint64_t now_ms)
{
  return e->leader && now_ms - e->renewed_ms < e->renew_ms;
}

static void observe(struct serve_election *e, const al_kube_lease *l, uint64_t now_ms)
{
  if (strcmp(l->holder, e->seen_holder) != 0 || strcmp(l->renew_time, e->seen_renew) != 0 ||
      !e->seen_ms) {
    snprintf(e->seen_holder, sizeof e->seen_holder, "%s", l->holder);
    snprintf(e->seen_renew, sizeof e->seen_renew, "%s", l->renew_time);
    e->seen_ms = now_ms;
  }
}

static bool won(struct serve_election *e, const al_kube_lease *l, uint64_t sent_ms)
{
  e->cur = *l;
  e->leader = true;
  e->renewed_ms = sent_ms;
  e->last_error[0] = '\0';
  observe(e, l, sent_ms);
  return true;
}

static bool step(struct serve_election *e, uint64_t now_ms)
{
  al_error err = {0};
  al_kube_lease got, want;
  char now[40];
  al_kube_micro_time(wall_ms(), now, sizeof now);
  int st = al_kube_lease_get(&e->k, e->ns, e->name, &got, &err);
  if (st < 0) {
    note_error(e, "reading the Lease", err.msg);
    return false;
  }
  if (st == 404) {
    memset(&want, 0, sizeof want);
    snprintf(want.holder, sizeof want.holder, "%s", e->id);
    want.duration_s = (int64_t)((e->duration_ms + 999) / 1000);
    snprintf(want.acquire_time, sizeof want.acquire_time, "%s", now);
    snprintf(want.renew_time, sizeof want.renew_time, "%s", now);
    st = al_kube_lease_create(&e->k, e->ns, e->name, &want, &got, &err);
    if (st == 201 || st == 200)
      return won(e, &got, now_ms);
    if (st < 0)
      note_error(e, "creating the Lease", err.msg);
    else if (st != 409)
      note_error(e, "creating the Lease", st == 403 ? "403 Forbidden (the Role?)" : "refused");
    return false;
  }
  if (st != 200) {
    char m[64];
    snprintf(m, sizeof m, "HTTP %d%s", st, st == 403 ? " Forbidden (the Role?)" : "");
    note_error(e, "reading the Lease", m);
    return false;
  }
  observe(e, &got, now_ms);
  bool mine = !strcmp(got.holder, e->id);
  uint64_t held_for = got.duration_s > 0 ? (uint64_t)got.duration_s * 1000 : e->duration_ms;
  if (!mine && got.holder[0] && now_ms - e->seen_ms < held_for) {
    e->cur = got;
    return false; /* another replica holds it and renews */
  }
  want = got;
  if (!mine) {
    snprintf(want.holder, sizeof want.holder, "%s", e->id);
    snprintf(want.acquire_time, sizeof want.acquire_time, "%s", now);
    want.transitions = got.transitions + 1;
  }
  want.duration_s = (int64_t)((e->duration_ms + 999) / 1000);
  snprintf(want.renew_time, sizeof want.renew_time, "%s", now);
  st = al_kube_lease_update(&e->k, e->ns, e->name, &want, &got, &err);
  if (st == 200)
    return won(e, &got, now_ms);
  if (st < 0)
    note_error(e, "updating the Lease", err.msg);
  else if (st != 409)
    note_error(e, "updating the Lease", st == 403 ? "403 Forbidden (the Role?)" : "refused");
  return false; /* 409: someone wrote first; we stand by this round */
}

bool serve_election_step(struct serve_election *e, uint64_t now_ms)
{
  if (now_ms >= e->next_ms) {
    e->next_ms = now_ms + e->retry_ms;
    bool was = e->leader;
    bool lead = step(e, now_ms);
    if (!lead && was && serve_election_leading(e, al_now_ms())) {
      /* A failed renewal (network) keeps a leader until its deadline; a
       * Lease seen held by another or a 409 ends it now. */
      if (e->last_error[0] && strcmp(e->cur.holder, e->id) == 0)
        lead = true;
    }
    e->leader = lead;
  }
  if (e->leader && !serve_election_leading(e, al_now_ms()))
    e->leader = false;
  return e->leader;
}

void serve_election_release(struct serve_election *e)
{
  if (!e->leader)
    return;
  al_kube_lease want = e->cur, got;
  want.holder[0] = '\0';
  want.duration_s = 1;
  al_error err = {0};
  al_kube_micro_time(wall_ms(), want.renew_time, sizeof want.renew_time);
  int st = al_kube_lease_update(&e->k, e->ns, e->name, &want, &got, &err);
  e->leader = false;
  serve_log(st == 200 ? "info" : "warn", "election",
            json_pack("{s:s, s:s, s:i}", "lease", e->name, "identity", e->id, "status", st),
            "released the Lease%s%s", st == 200 ? "" : ": ", st == 200 ? "" : err.msg);
}
