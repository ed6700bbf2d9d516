/* Phases: the model relay's upstream check, the escape-budget audit
 * (through the broker) and the preflight probes (fail closed). */
#include <errno.h>
#include <unistd.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "broker/client.h"
#include "common/log.h"
#include "common/redact.h"
#include "forge/audit.h"
#include "forge/etags.h"
#include "common/util.h"
#include "probe/docker.h"
#include "probe/probe.h"
#include "relay/check.h"

/* "id (STATUS)" of every required criterion that does not hold. */
static void audit_failed_list(json_t *report, char *out, size_t n)
{
  out[0] = '\0';
  size_t off = 0, i;
  json_t *k;
  json_array_foreach(json_object_get(report, "criteria"), i, k)
  {
    const char *st = json_string_value(json_object_get(k, "status"));
    if (!json_is_true(json_object_get(k, "required")) || !st || !strcmp(st, "PASS") ||
        !strcmp(st, "WARN"))
      continue;
    int w = snprintf(out + off, n - off, "%s%s (%s)", off ? ", " : "",
                     json_string_value(json_object_get(k, "id")) ?: "?", st);
    if (w < 0 || (size_t)w >= n - off)
      break;
    off += (size_t)w;
  }
}

/* The refusal, criterion by criterion with its fix (stderr). */
static void audit_explain(json_t *report)
{
  size_t i;
  json_t *k;
  fprintf(stderr, "airlock ticket: the escape budget of %s (branch %s) does not hold:\n",
          json_string_value(json_object_get(report, "repo")) ?: "?",
          json_string_value(json_object_get(report, "branch")) ?: "?");
  json_array_foreach(json_object_get(report, "criteria"), i, k)
  {
    const char *st = json_string_value(json_object_get(k, "status"));
    if (!json_is_true(json_object_get(k, "required")) || !st || !strcmp(st, "PASS") ||
        !strcmp(st, "WARN"))
      continue;
    al_autofree char *ev = al_redact(json_string_value(json_object_get(k, "evidence")) ?: "");
    fprintf(stderr, "  %-7s %s: %s\n          evidence: %s\n          fix: %s\n", st,
            json_string_value(json_object_get(k, "id")) ?: "?",
            json_string_value(json_object_get(k, "title")) ?: "", ev,
            json_string_value(json_object_get(k, "fix")) ?: "(none given)");
  }
}

/* The broker's roles from its grant: [{"name","write"}] per role. */
static void grant_roles(json_t *roles, al_perm_set out[AL_ROLE_COUNT])
{
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    size_t i;
    json_t *p;
    out[r].n = 0;
    json_array_foreach(json_object_get(roles, al_role_name((al_role)r)), i, p)
    {
      const char *name = json_string_value(json_object_get(p, "name"));
      if (!name || out[r].n == AL_ARRAY_SIZE(out[r].items))
        continue;
      snprintf(out[r].items[out[r].n].name, AL_PERM_NAME_MAX, "%s", name);
      out[r].items[out[r].n].write = json_is_true(json_object_get(p, "write"));
      out[r].n++;
    }
  }
}

/* ", revoked" or "; REVOCATION FAILED" after what (n bytes) for the token
 * of fingerprint fp, from the broker's answer to the release. */
static void note_revoked(const al_lease_result *res, const char *fp, char *what, size_t n)
{
  bool dead = false;
  const char *why = "the broker did not answer";
  for (size_t i = 0; i < res->n; i++)
    if (strcmp(res->tokens[i].fingerprint, fp) == 0) {
      dead = res->tokens[i].revoked && res->tokens[i].confirmed;
      why = res->tokens[i].error;
    }
  if (!dead)
    al_warn("revoking the audit's token %s: %s", fp, why);
  size_t l = strlen(what);
  snprintf(what + l, n - l, "%s", dead ? ", revoked" : "; REVOCATION FAILED");
}

/* `airlock audit` (forge/audit.h) here, in the supervisor, with the read
 * tokens the broker leases for it (al_audit_lease_open): the key stays in
 * the broker, which parses none of the repository's settings; the
 * supervisor holds only read tokens, revoked by the broker when the lease
 * ends (here, or when this process dies). 0 with *report (the report as
 * al_audit_format_json's object) and *holds, or -1 with err. */
static int audit_with_broker(struct ticket *t, json_t **report, bool *holds, al_error *err)
{
  *report = NULL;
  *holds = false;
  al_lease *l = NULL;
  json_t *g = NULL;
  if (al_audit_lease_open(t->policy->credentials.broker, t->repo, t->policy->base_branch,
                          t->policy->branch_prefix, &l, &g, err) < 0)
    return -1;
  al_ghapi_counts bq;
  al_lease_requests(l, &bq);
  tk_phase_add_broker(t, &bq);
  json_t *app = json_object_get(g, "app");
  const char *bfp = json_string_value(json_object_get(g, "bot_fingerprint"));
  const char *rfp = json_string_value(json_object_get(g, "read_fingerprint"));
  al_audit_grant gr = {
      .api_url = json_string_value(json_object_get(g, "api")),
      .ca_file = json_string_value(json_object_get(g, "ca_file")),
      .max_rate_wait_ms = (uint64_t)json_integer_value(json_object_get(g, "max_rate_wait_ms")),
      .app_slug = json_string_value(json_object_get(app, "slug")),
      .app_id = json_integer_value(json_object_get(app, "id")),
      .installation_id = json_integer_value(json_object_get(app, "installation_id")),
      .inst_permissions = json_object_get(app, "permissions"),
      .token = al_audit_lease_read_token(l),
      .credentials = json_string_value(json_object_get(g, "credentials")),
      .token_is_bot = json_is_true(json_object_get(g, "token_is_bot")),
      .bot_token = al_audit_lease_bot_token(l),
      .bot_fp = bfp,
  };
  grant_roles(json_object_get(g, "roles"), gr.roles);
  al_audit_opts ao = {
      .repo = t->repo,
      .branch = t->policy->base_branch,
      .run_prefix = t->policy->branch_prefix,
      .timeout_ms = (uint64_t)json_integer_value(json_object_get(g, "timeout_ms")),
      .grant = &gr,
  };
  ao.etags = tk_etags_open(t, gr.api_url);
  al_audit_report rep;
  int r = al_audit_run(&ao, &rep, err);
  if (ao.etags) {
    al_error se = {0};
    if (r == 0 && al_etags_save(ao.etags, &se) < 0)
      al_warn("%s", se.msg);
    al_etags_free(ao.etags);
  }
  char *text = r == 0 ? al_audit_format_json(&rep) : NULL;
  /* Never expected: the report names fingerprints only (checked while the
   * lease's tokens are still registered with the redactor). */
  bool leak = text && al_redact_contains_secret(text);
  free(text);
  al_lease_result res;
  al_error rerr = {0};
  al_lease_release(l, true, &res, &rerr);
  tk_phase_add_broker(t, &res.requests);
  if (r == 0) {
    if (rfp && json_is_true(json_object_get(g, "read_token_leased")))
      note_revoked(&res, rfp, rep.credentials, sizeof rep.credentials);
    if (bfp)
      note_revoked(&res, bfp, rep.as_app, sizeof rep.as_app);
  }
  json_decref(g);
  if (r < 0)
    return -1;
  text = leak ? NULL : al_audit_format_json(&rep);
  *holds = rep.holds;
  al_audit_report_free(&rep);
  if (leak)
    return al_make_error(err, EPROTO, "the audit report holds a secret; not used");
  *report = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  if (!json_is_object(*report)) {
    *holds = false;
    return al_make_error(err, ENOMEM, "audit report");
  }
  return 0;
}

/* The GitLab audit (issue #30 item 4, forge/audit_gitlab.h) with the read
 * token the broker leases for it (a project access token, read_api at
 * Maintainer, revoked when the lease ends: broker_jobs.c
 * job_audit_gitlab). The same report as GitHub's; -1 with err when it
 * could not run (then the phase refuses unless --accept-unprotected). */
static int audit_gitlab(const struct ticket *t, json_t **report, bool *holds, al_error *err)
{
  *report = NULL;
  *holds = false;
  al_lease *l = NULL;
  json_t *g = NULL;
  if (al_audit_lease_open(t->policy->credentials.broker, t->repo, t->policy->base_branch,
                          t->policy->branch_prefix, &l, &g, err) < 0)
    return -1;
  const char *rfp = json_string_value(json_object_get(g, "read_fingerprint"));
  const char *kind = json_string_value(json_object_get(g, "forge"));
  if (!kind || strcmp(kind, "gitlab") != 0) {
    json_decref(g);
    al_lease_release(l, true, NULL, NULL);
    return al_make_error(err, EPROTO,
                         "the broker's audit grant is not GitLab's (is the policy's broker the "
                         "one with gitlab.token_file?)");
  }
  char **resolves = tk_pin_resolves(t->policy);
  al_audit_opts ao = {
      .forge_kind = AL_FORGE_GITLAB,
      .repo = t->repo,
      .branch = t->policy->base_branch,
      .api_url = json_string_value(json_object_get(g, "api")),
      .ca_file = json_string_value(json_object_get(g, "ca_file")),
      .token = al_audit_lease_read_token(l),
      .token_source = json_string_value(json_object_get(g, "credentials")),
      .timeout_ms = (uint64_t)json_integer_value(json_object_get(g, "timeout_ms")),
      .run_prefix = t->policy->branch_prefix,
      .resolve = (const char *const *)resolves,
  };
  al_audit_report rep;
  int r = al_audit_run(&ao, &rep, err);
  tk_free_strv(resolves);
  char *text = r == 0 ? al_audit_format_json(&rep) : NULL;
  bool leak = text && al_redact_contains_secret(text);
  free(text);
  al_lease_result res;
  al_error rerr = {0};
  al_lease_release(l, true, &res, &rerr);
  if (r == 0 && rfp)
    note_revoked(&res, rfp, rep.credentials, sizeof rep.credentials);
  json_decref(g);
  if (r < 0)
    return -1;
  text = leak ? NULL : al_audit_format_json(&rep);
  *holds = rep.holds;
  al_audit_report_free(&rep);
  if (leak)
    return al_make_error(err, EPROTO, "the audit report holds a secret; not used");
  *report = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  if (!json_is_object(*report)) {
    *holds = false;
    return al_make_error(err, ENOMEM, "audit report");
  }
  return 0;
}

/* Phase: the escape budget from the forge's API (issue #8), audited here
 * with the read tokens the broker leases for it (audit_with_broker): the
 * supervisor never holds an admin credential nor the App's key. Refuse
 * unless it holds, or unless the user accepted an unprotected run
 * (--accept-unprotected), which then marks the record and every later
 * progress line. */
int tk_do_audit(struct ticket *t, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "audit");
  bool holds = false;
  al_error ae = {0};
  json_t *report = NULL;
  int r = t->policy->forge.kind == AL_FORGE_GITLAB ? audit_gitlab(t, &report, &holds, &ae)
                                                   : audit_with_broker(t, &report, &holds, &ae);
  json_t *a = json_object();
  json_object_set_new(t->rec, "audit", a);
  char failed[768] = "";
  if (r < 0) {
    json_object_set_new(a, "status", json_string("error"));
    json_object_set_new(a, "error", json_string(ae.msg));
  } else {
    audit_failed_list(report, failed, sizeof failed);
    json_object_set_new(a, "status", json_string(holds ? "holds" : "does-not-hold"));
    json_object_set_new(a, "holds", json_boolean(holds));
    if (failed[0])
      json_object_set_new(a, "not_holding", json_string(failed));
    json_object_set_new(a, "report", json_incref(report));
  }
  json_object_set_new(a, "accepted_unprotected", json_false());
  if (r == 0 && holds) {
    /* name the WARN criteria: "see the record" alone sent the reader to
     * a title that reads like a pass */
    char warns[200] = "";
    size_t nw = 0, wl = 0;
    size_t ci;
    json_t *c;
    json_array_foreach(json_object_get(report, "criteria"), ci, c)
    {
      const char *st = json_string_value(json_object_get(c, "status"));
      const char *id = json_string_value(json_object_get(c, "id"));
      if (!st || strcmp(st, "WARN") != 0 || !id)
        continue;
      nw++;
      if (wl + strlen(id) + 3 < sizeof warns)
        wl += (size_t)snprintf(warns + wl, sizeof warns - wl, "%s%s", wl ? ", " : "", id);
    }
    char suffix[300] = "";
    if (nw)
      snprintf(suffix, sizeof suffix,
               "; %zu WARN: %s (`airlock show %s` prints what each saw and its fix)", nw, warns,
               t->run_id[0] ? t->run_id : "RUN");
    tk_phase_end(t, s, "ok", "the escape budget of %s (branch %s) holds%s", t->repo,
                 json_string_value(json_object_get(report, "branch")) ?: "?", suffix);
    json_decref(report);
    return 0;
  }
  if (r < 0 && (strstr(ae.msg, "connecting to the broker") ||
                (ae.code == EACCES && strstr(ae.msg, "broker refused")))) {
    /* the broker cannot be reached, or does not serve this user: the lease
     * would fail the same way, so --accept-unprotected is no advice */
    tk_phase_end(t, s, "failed", "%s", ae.msg);
    json_decref(report);
    const char *b = t->policy->credentials.broker;
    if (ae.code == EACCES && strstr(ae.msg, "broker refused"))
      return al_error_set(err, ae.code,
                          "the broker at `%s` does not serve this user (uid %u): add it to "
                          "`clients.uids` in the broker's config and restart the broker "
                          "(contrib/README.broker.md)",
                          b, (unsigned)getuid());
    if (ae.code == EACCES)
      return al_error_set(err, ae.code,
                          "this user (uid %u) may not connect to the broker's socket `%s` "
                          "(policy credentials.broker): run as a user the broker serves, or "
                          "have the broker's operator give this user access to the socket "
                          "(its SocketGroup, contrib/README.broker.md)",
                          (unsigned)getuid(), b);
    return al_error_set(err, ae.code,
                        "no broker answers at `%s` (policy credentials.broker): start it with "
                        "`airlock broker -c CONFIG --socket %s` (contrib/README.broker.md)",
                        b, b);
  }
  if (!t->o->accept_unprotected) {
    t->security_refusal = true;
    if (r < 0) {
      tk_phase_end(t, s, "failed", "cannot prove the escape budget: %s", ae.msg);
      al_make_error(err, 0,
                    "refusing to run: the escape budget of %s could not be proven (%s); fix that, "
                    "or pass --accept-unprotected to run anyway (recorded)",
                    t->repo, ae.msg);
    } else {
      tk_phase_end(t, s, "failed", "the escape budget does not hold: %s", failed);
      audit_explain(report);
      al_make_error(err, 0,
                    "refusing to run: the escape budget of %s does not hold: %s; apply the "
                    "fixes above (also in the run record), or pass --accept-unprotected to run "
                    "anyway (recorded)",
                    t->repo, failed);
    }
    json_decref(report);
    return -1;
  }
  /* Accepted: from here on every progress line says so. */
  t->unprotected = true;
  json_object_set_new(a, "accepted_unprotected", json_true());
  json_object_set_new(t->rec, "unprotected", json_true());
  if (r < 0)
    tk_phase_end(t, s, "warn", "cannot prove the escape budget (%s); running anyway", ae.msg);
  else
    tk_phase_end(t, s, "warn", "the escape budget does not hold: %s; running anyway", failed);
  json_decref(report);
  return 0;
}

/* Phase: a fast subset of the probe catalogue in a throwaway sandbox made
 * from the same policy (one probe per protection); fail closed. */
int tk_do_preflight(struct ticket *t, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "preflight");
  al_probe_report rep;
  memset(&rep, 0, sizeof rep);
  al_error pe = {0};
  int r;
  bool env_tokens_seen = false;
  if (t->o->docker) {
    /* the same containers the agent will get, from the same settings */
    al_probe_docker_opts po = {
        .probe = {.policy = t->policy, .preflight = true},
        .proxy_image = t->o->docker->proxy_image,
        .agent_image = t->o->docker->agent_image,
        .socket_path = t->o->docker->socket_path,
        .egress_internal = t->o->docker->egress_internal,
        .egress_network = t->o->docker->egress_network,
    };
    r = al_probe_run_docker(&po, &rep, &pe);
    if (r == 0)
      r = rep.n_escaped || rep.n_inconclusive || rep.n == 0 ? 1 : 0;
  } else {
    /* The agent's own environment (sealed: placeholders), and the run's
     * real tokens for cred.run-tokens' judge, which stays on this side. */
    tk_build_env(t);
    const char *secrets[] = {al_lease_token(t->lease, AL_ROLE_GIT),
                             al_lease_token(t->lease, AL_ROLE_TICKET), NULL};
    al_probe_opts po = {.policy = t->policy,
                        .preflight = true,
                        .env = t->env,
                        .secrets = secrets[0] && secrets[1] ? secrets : NULL};
    r = al_probe_run(&po, &rep, &pe);
    tk_wipe_env(t);
    if (r == 0)
      r = rep.n_escaped || rep.n_inconclusive || rep.n == 0 ? 1 : 0;
    /* env mode: the agent holds the tokens by design, and the probe saying
     * so is its positive control; every other verdict still counts */
    if (r == 1 && t->policy->credentials.mode == AL_CRED_ENV && !rep.n_inconclusive) {
      size_t tok = 0;
      for (size_t i = 0; i < rep.n; i++)
        tok += rep.results[i].verdict == AL_PROBE_ESCAPED &&
               strcmp(rep.results[i].id, "cred.run-tokens") == 0;
      if (tok == rep.n_escaped && rep.n > 0) {
        r = 0;
        env_tokens_seen = true;
      }
    }
  }
  if (r < 0) {
    json_object_set_new(t->rec, "preflight",
                        json_pack("{s:s, s:s}", "status", "error", "error", pe.msg));
    tk_phase_end(t, s, "failed", "%s", pe.msg);
    return al_make_error(err, pe.code, "preflight could not run: %s", pe.msg);
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&buf, &len);
  if (mf) {
    al_probe_report_print_json(&rep, mf);
    fclose(mf);
  }
  json_t *j = buf ? json_loads(buf, 0, NULL) : NULL;
  free(buf);
  json_object_set_new(t->rec, "preflight",
                      j ? j
                        : json_pack("{s:I, s:I, s:I}", "blocked", (json_int_t)rep.n_blocked,
                                    "escaped", (json_int_t)rep.n_escaped, "inconclusive",
                                    (json_int_t)rep.n_inconclusive));
  if (r != 0) {
    t->security_refusal = true;
    char first[AL_PROBE_EVIDENCE_MAX + 64] = "";
    for (size_t i = 0; i < rep.n; i++)
      if (rep.results[i].verdict != AL_PROBE_BLOCKED) {
        snprintf(first, sizeof first, "%s %s: %s", rep.results[i].id,
                 al_probe_verdict_name(rep.results[i].verdict), rep.results[i].evidence);
        break;
      }
    tk_phase_end(t, s, "failed", "%zu escaped, %zu inconclusive; first: %s", rep.n_escaped,
                 rep.n_inconclusive, first);
    al_make_error(err, 0, "preflight: the sandbox did not hold (%s); refusing to start the agent%s",
                  first,
                  t->o->docker && strstr(first, "priv.uid-map")
                      ? " (docker: run dockerd with userns-remap; docs/docker.md)"
                      : "");
    al_probe_report_free(&rep);
    return -1;
  }
  tk_phase_end(t, s, "ok", "%zu probes blocked in %llu ms%s", rep.n_blocked,
               (unsigned long long)(rep.elapsed_us / 1000),
               env_tokens_seen ? "; cred.run-tokens found the tokens in the agent's environment, "
                                 "as credentials.mode: env intends"
                               : "");
  al_probe_report_free(&rep);
  return 0;
}

/* How to fix what the check of a relay upstream found (docs/troubleshooting.md). */
static const char *relay_check_fix(al_relay_up_failure f)
{
  switch (f) {
  case AL_RELAY_UP_DNS:
    return "check the host of relay.upstream (airlock demo --relay-upstream URL) and this "
           "host's resolver";
  case AL_RELAY_UP_CONNECT:
  case AL_RELAY_UP_TIMEOUT:
    return "check the port of relay.upstream and that this host reaches it (firewall, "
           "outbound proxy)";
  case AL_RELAY_UP_TLS:
    return "the port does not speak TLS as expected: relay.upstream must be the API's https:// "
           "URL";
  case AL_RELAY_UP_TLS_VERIFY:
    return "give the CA bundle that signed the API's certificate: relay.ca_file: PATH "
           "(airlock demo --relay-ca FILE; it replaces the system store), and check the host "
           "name in relay.upstream";
  case AL_RELAY_UP_PIN:
    return "if that key is the API's, put it in relay.pubkey_pin (airlock demo --relay-pin "
           "sha256//...), else the API is not the one the pin names";
  case AL_RELAY_UP_OK:
  default:
    return "";
  }
}

/* Phase: each model relay upstream checked once from here, before any
 * token is leased and before the agent starts (issue #27 item 5): TCP,
 * TLS and its verification (relay.ca_file, relay.pubkey_pin) within a few
 * seconds, and nothing sent after the handshake (the key is not read yet).
 * A failure names the upstream, the step and the fix; the record gets
 * `relay_check`. No-op without a relay section. */
int tk_do_relay_check(struct ticket *t, al_error *err)
{
  const al_policy_relay *r = &t->policy->relay;
  if (!r->present)
    return 0;
  uint64_t s = tk_phase_begin(t, "relay-check");
  uint64_t deadline =
      r->connect_timeout_ms < TK_RELAY_CHECK_MS ? r->connect_timeout_ms : TK_RELAY_CHECK_MS;
  json_t *ups = json_array();
  al_relay_up_failure bad = AL_RELAY_UP_OK;
  char badwhy[600] = "";
  const char *bad_up = NULL;
  for (size_t i = 0; i < r->n_upstreams; i++) {
    const al_relay_upstream *u = &r->upstreams[i];
    char why[512];
    al_relay_up_failure f = al_relay_check_upstream(u, deadline, why, sizeof why);
    json_t *o =
        json_pack("{s:s, s:s}", "upstream", u->upstream, "result", al_relay_up_failure_name(f));
    if (f != AL_RELAY_UP_OK) {
      json_object_set_new(o, "detail", json_string(why));
      if (bad == AL_RELAY_UP_OK) {
        bad = f;
        bad_up = u->upstream;
        snprintf(badwhy, sizeof badwhy, "%s", why);
      }
    }
    json_array_append_new(ups, o);
  }
  json_object_set_new(t->rec, "relay_check",
                      json_pack("{s:s, s:o, s:I}", "status", bad ? "failed" : "ok", "upstreams",
                                ups, "timeout_ms", (json_int_t)deadline));
  if (bad) {
    tk_phase_end(t, s, "failed", "%s: %s: %s", bad_up, al_relay_up_failure_name(bad), badwhy);
    return al_make_error(err, EHOSTUNREACH,
                         "the model relay's upstream %s failed its check before the agent "
                         "(%s): %s; %s",
                         bad_up, al_relay_up_failure_name(bad), badwhy, relay_check_fix(bad));
  }
  tk_phase_end(t, s, "ok", "%zu upstream(s): TCP, TLS and %s verified", r->n_upstreams,
               r->upstreams[0].pubkey_pin ? "the public-key pin" : "the certificate");
  return 0;
}
