/* The run record's "requests" (issue #33): the forge requests of every
 * process that works for the run, per phase, split by what the forge's rate
 * limit makes of them (docs/run-record.md "requests"):
 *   supervisor  this process (forge/ghapi.h al_ghapi_counts_process), per
 *               phase, as the phase's difference;
 *   broker      the App's reads, token mints and revocations it made for
 *               the phase's leases, as it said in its answers (broker
 *               "requests");
 *   gateway     the agent's requests the gateway forwarded to the forge's
 *               hosts (its decisions in the record: allowed, with an
 *               upstream status), in the agent phase.
 * counted = sent - not_modified - app - git - rejected: the REST requests
 * on the installation's budget (a 304 is not counted by GitHub; an App
 * JWT's requests are the App's; git over HTTPS is not REST; a 401 is a
 * refused credential, the revoked tokens' death checks: no longer the
 * installation's). */
#include <string.h>
#include <strings.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "ticket/ticket_internal.h"
#include "common/log.h"
#include "common/util.h"
#include "forge/etags.h"
#include "runs/runs.h"

/* The host of URL "scheme://host[:port][/...]" into out (n bytes). */
static void url_host(const char *url, char *out, size_t n)
{
  out[0] = '\0';
  if (!url)
    return;
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  size_t l = strcspn(p, ":/");
  if (l < n) {
    memcpy(out, p, l);
    out[l] = '\0';
  }
}

static bool git_path(const char *p)
{
  size_t n = p ? strlen(p) : 0;
  static const char *const tails[] = {"/info/refs", "/git-upload-pack", "/git-receive-pack"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(tails); i++) {
    size_t k = strlen(tails[i]);
    if (n >= k && strcmp(p + n - k, tails[i]) == 0)
      return true;
  }
  return false;
}

struct gw_counts {
  uint64_t sent, not_modified, git, rejected;
};

/* The gateway's requests forwarded to the forge's API or git host. */
static struct gw_counts gateway_counts(const struct ticket *t)
{
  struct gw_counts g = {0};
  char api[256], git[256];
  url_host(t->policy ? t->policy->forge.api_url : NULL, api, sizeof api);
  url_host(t->policy ? t->policy->forge.git_url : NULL, git, sizeof git);
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(t->rec, "gateway_decisions"), i, d)
  {
    const char *dec = json_string_value(json_object_get(d, "decision"));
    const char *host = json_string_value(json_object_get(d, "host"));
    json_t *st = json_object_get(d, "status");
    if (!dec || strcmp(dec, "allow") != 0 || !json_is_integer(st) || !host ||
        (strcasecmp(host, api) != 0 && strcasecmp(host, git) != 0))
      continue;
    g.sent++;
    if (json_integer_value(st) == 304)
      g.not_modified++;
    if (json_integer_value(st) == 401)
      g.rejected++;
    if (git_path(json_string_value(json_object_get(d, "path"))))
      g.git++;
  }
  return g;
}

static json_t *counts_json(const al_ghapi_counts *q)
{
  return json_pack("{s:I, s:I, s:I, s:I}", "sent", (json_int_t)q->sent, "not_modified",
                   (json_int_t)q->not_modified, "app", (json_int_t)q->app, "rejected",
                   (json_int_t)q->rejected);
}

static void add(al_ghapi_counts *a, const al_ghapi_counts *b)
{
  a->sent += b->sent;
  a->not_modified += b->not_modified;
  a->app += b->app;
  a->rejected += b->rejected;
}

json_t *tk_requests_json(const struct ticket *t)
{
  json_t *forge = json_object(), *phases = json_object();
  uint64_t total = 0;
  al_ghapi_counts sup = {0}, bro = {0};
  bool agent = false;
  struct gw_counts gw = gateway_counts(t);
  for (size_t i = 0; i < t->nphases; i++) {
    const struct phase *ph = &t->phases[i];
    al_ghapi_counts s = ph->sup;
    if (!ph->ended) { /* still running (the record of an interrupted run) */
      al_ghapi_counts now;
      al_ghapi_counts_process(&now);
      s = (al_ghapi_counts){.sent = now.sent - ph->c0.sent,
                            .not_modified = now.not_modified - ph->c0.not_modified,
                            .app = now.app - ph->c0.app,
                            .rejected = now.rejected - ph->c0.rejected};
    }
    uint64_t n = s.sent;
    json_t *prev = json_object_get(forge, ph->name);
    json_object_set_new(forge, ph->name,
                        json_integer((json_int_t)n + (prev ? json_integer_value(prev) : 0)));
    total += n;
    add(&sup, &s);
    add(&bro, &ph->broker);
    json_t *p = json_object_get(phases, ph->name);
    if (!p) {
      p = json_pack("{s:I, s:I, s:I}", "supervisor", (json_int_t)0, "broker", (json_int_t)0,
                    "gateway", (json_int_t)0);
      json_object_set_new(phases, ph->name, p);
    }
    json_object_set_new(
        p, "supervisor",
        json_integer(json_integer_value(json_object_get(p, "supervisor")) + (json_int_t)s.sent));
    json_object_set_new(p, "broker",
                        json_integer(json_integer_value(json_object_get(p, "broker")) +
                                     (json_int_t)ph->broker.sent));
    if (strcmp(ph->name, "agent") == 0 && !agent) {
      agent = true;
      json_object_set_new(p, "gateway", json_integer((json_int_t)gw.sent));
    }
  }
  uint64_t sent = sup.sent + bro.sent + gw.sent;
  uint64_t nm = sup.not_modified + bro.not_modified + gw.not_modified;
  uint64_t app = sup.app + bro.app;
  uint64_t rej = sup.rejected + bro.rejected + gw.rejected;
  json_t *procs = json_pack("{s:o, s:o, s:{s:I, s:I, s:I, s:I}}", "supervisor", counts_json(&sup),
                            "broker", counts_json(&bro), "gateway", "sent", (json_int_t)gw.sent,
                            "not_modified", (json_int_t)gw.not_modified, "git", (json_int_t)gw.git,
                            "rejected", (json_int_t)gw.rejected);
  json_t *o = json_pack("{s:o, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I}", "forge", forge, "total",
                        (json_int_t)total, "phases", phases, "processes", procs, "sent",
                        (json_int_t)sent, "not_modified", (json_int_t)nm, "app", (json_int_t)app,
                        "git", (json_int_t)gw.git, "rejected", (json_int_t)rej);
  json_object_set_new(o, "counted", json_integer((json_int_t)(sent - nm - app - gw.git - rej)));
  long long rl_rem, rl_reset;
  al_ghapi_rate_seen(&rl_rem, &rl_reset);
  if (rl_rem >= 0)
    json_object_set_new(
        o, "rate_limit",
        json_pack("{s:I, s:I}", "remaining", (json_int_t)rl_rem, "reset", (json_int_t)rl_reset));
  return o;
}

/* The ETag cache of t->repo on the API at api (forge/etags.h): beside the
 * run records, in DIR/../etags/ (the directory 0700), one file per forge and
 * repository. NULL
 * when there is no such place (the audit then reads unconditionally).
 * The name: the API URL's host, '-', OWNER+NAME (a file of another URL on
 * that host is replaced). */
al_etags *tk_etags_open(const struct ticket *t, const char *api)
{
  char dir[4096];
  al_error e = {0};
  if (!api || al_runs_default_dir(dir, sizeof dir, true, &e) < 0)
    return NULL;
  char *slash = strrchr(dir, '/');
  if (!slash)
    return NULL;
  snprintf(slash, sizeof dir - (size_t)(slash - dir), "/etags");
  if (mkdir(dir, 0700) < 0 && errno != EEXIST)
    return NULL;
  /* one file per forge host and repository: "HOST-OWNER+NAME" */
  const char *h = strstr(api, "://");
  h = h ? h + 3 : api;
  char name[400];
  size_t k = 0;
  for (; *h && *h != ':' && *h != '/' && k < 200; h++)
    name[k++] = (char)((isalnum((unsigned char)*h) || *h == '.' || *h == '-') ? *h : '_');
  snprintf(name + k, sizeof name - k, "-%s", t->repo);
  for (char *p = name; *p; p++)
    if (*p == '/')
      *p = '+';
  al_autofree char *file = al_strdup_printf("%s/%s.json", dir, name);
  al_etags *et = NULL;
  if (al_etags_open(file, api, t->repo, &et, &e) < 0)
    return NULL;
  return et;
}

al_ghapi *tk_conditional_client(const struct ticket *t, const al_ghapi_opts *go,
                                uint64_t deadline_ms, const char *const *resolves, al_etags **et)
{
  al_ghapi *api = NULL;
  al_error e = {0};
  *et = tk_etags_open(t, t->policy->forge.api_url);
  if (!*et || al_ghapi_open(t->policy->forge.api_url, go, &api, &e) < 0) {
    al_etags_free(*et);
    *et = NULL;
    return NULL;
  }
  al_ghapi_set_deadline(api, deadline_ms);
  al_ghapi_set_resolve(api, resolves);
  al_ghapi_set_etags(api, *et);
  return api;
}

void tk_conditional_close(al_ghapi *api, al_etags *et)
{
  if (et) {
    al_error e = {0};
    if (al_etags_save(et, &e) < 0)
      al_warn("%s", e.msg);
  }
  al_ghapi_free(api);
  al_etags_free(et);
}
