/* Sealed credentials (issue #15): the forge gateway beside the egress
 * proxy, the agent's placeholder, and the CA bundle the sandbox trusts.
 *
 *   supervisor                          gateway (gateway.h)        sandbox
 *   ──────────                          ───────────────────        ───────
 *   lease: two tokens
 *   placeholder (random, per run)
 *   al_gateway_start(tokens) ─────────► holds the tokens + CA key
 *   CA bundle = system CAs
 *     + forge.ca_file + run CA ──────────────────────────────────► /run/airlock/ca-bundle.pem
 *   env: AIRLOCK_*_TOKEN = placeholder ─────────────────────────► the agent's environment
 *   proxy hands forge CONNECTs ───────► rules, swap placeholder → token upstream
 *   agent exits; al_gateway_stop ─────► decision lines (memfd) → record
 *
 * In env mode only the CA bundle applies (system CAs + forge.ca_file). */
#include <unistd.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "broker/client.h"
#include "common/log.h"
#include "common/memfd.h"
#include "common/util.h"
#include "forge/gitlab.h"
#include "gateway/gateway.h"

#define GW_DECISIONS_CAP (8u << 20)

/* The ticket host (the gateway's last hand-off pair) in the run's proxy
 * allow list, exactly that host:port with TLS, unless the policy lists it
 * already: the agent reaches it only through the gateway. */
static void allow_ticket_host(struct ticket *t, const al_proxy_handoff *h)
{
  al_policy_network *n = &t->policy->network;
  const char *host = h->hosts[h->n_hosts - 1].host;
  uint16_t port = h->hosts[h->n_hosts - 1].port;
  if (!n->present)
    return;
  for (size_t i = 0; i < n->n_allow; i++)
    if (!n->allow[i].wildcard && n->allow[i].port == port && strcmp(n->allow[i].host, host) == 0)
      return;
  bool ip = strchr(host, ':') || strspn(host, "0123456789.") == strlen(host);
  n->allow = al_xrealloc(n->allow, (n->n_allow + 1) * sizeof *n->allow);
  n->allow[n->n_allow++] =
      (al_net_allow){.host = al_xstrdup(host), .is_ip = ip, .port = port, .tls = true};
}

/* GitLab: the project's numeric id, asked of the forge with the run's git
 * token (forge/gitlab.h al_gl_project_id), for the gateway's table (the
 * agent may name the project by id or by path; both are the one project),
 * and its ci_config_path into t (the CI-definition guard compares it). */
static int gitlab_project_id(struct ticket *t, unsigned long *id, al_error *err)
{
  al_ghapi *c = NULL;
  al_ghapi_opts go = {.ca_file = t->policy->forge.ca_file, .timeout_ms = 20000};
  if (al_ghapi_open(t->policy->forge.api_url, &go, &c, err) < 0)
    return -1;
  char **resolves = tk_pin_resolves(t->policy);
  al_ghapi_set_resolve(c, (const char *const *)resolves);
  al_ghapi_set_deadline(c, tk_deadline_in_lease(t->lease, 20000));
  int r = al_gl_project_id(c, al_lease_token(t->lease, AL_ROLE_GIT), t->repo, id,
                           t->gl_ci_config_path, sizeof t->gl_ci_config_path, err);
  al_ghapi_free(c);
  tk_free_strv(resolves);
  return r < 0 ? al_error_wrap(err, "the GitLab project's id") : 0;
}

int tk_do_gateway(struct ticket *t, al_error *err)
{
  if (t->policy->credentials.mode != AL_CRED_SEALED)
    return 0;
  uint64_t s = tk_phase_begin(t, "gateway");
  if (al_gateway_placeholder(t->placeholder, err) < 0 ||
      (t->gw_fd = al_sealed_memfd("airlock-gateway", GW_DECISIONS_CAP, 0, err)) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return -1;
  }
  const al_policy *p = t->policy;
  unsigned long project_id = 0;
  if (p->forge.kind == AL_FORGE_GITLAB) {
    if (gitlab_project_id(t, &project_id, err) < 0) {
      tk_phase_end(t, s, "failed", "%s", err->msg);
      return -1;
    }
    json_object_set_new(t->rec, "forge_project_id", json_integer((json_int_t)project_id));
  }
  al_gateway_opts o = {
      .forge_kind = p->forge.kind,
      .project_id = project_id,
      .api_url = p->forge.api_url,
      .git_url = p->forge.git_url,
      .ca_file = p->forge.ca_file,
      .repo = t->repo,
      /* a Jira or Linear ticket is no issue of the repository: the
       * repository's issue with the key's number is not the agent's */
      .ticket = tk_vendor(t) ? 0 : t->number,
      .branch = t->branch,
      .max_comments = p->credentials.agent_comments,
      .git_token = al_lease_token(t->lease, AL_ROLE_GIT),
      .ticket_token = al_lease_token(t->lease, AL_ROLE_TICKET),
      .placeholder = t->placeholder,
      .lifetime_ms = t->o->timeout_ms ? t->o->timeout_ms : p->process.limits.wall_ms,
      .run_id = t->run_id,
      .decisions_fd = t->gw_fd,
      .egress_budget = p->network.egress_budget,
  };
  if (tk_vendor(t)) {
    /* the ticket host through the gateway too: the vendor credential
     * stays with it, the agent holds the placeholder */
    o.tk.kind = p->ticket.kind;
    o.tk.url = p->ticket.url;
    o.tk.ca_file = p->ticket.ca_file;
    o.tk.project = p->ticket.kind == AL_TK_JIRA ? p->ticket.project : p->ticket.team;
    o.tk.key = t->tk.key;
    o.tk.id = t->tk_read.id && t->tk_read.id[0] ? t->tk_read.id : NULL;
    o.tk.user = p->ticket.kind == AL_TK_JIRA ? p->ticket.user : NULL;
    o.tk.credential = t->tk_token;
  }
  if (al_gateway_start(&o, &t->gateway, err) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return al_error_wrap(err, "the forge gateway");
  }
  const al_proxy_handoff *h = al_gateway_handoff(t->gateway);
  if (tk_vendor(t))
    allow_ticket_host(t, h);
  const char *pem = al_gateway_ca_pem(t->gateway);
  char fp[65];
  al_sha256_hex(pem, strlen(pem), fp);
  json_t *hosts = json_array();
  for (size_t i = 0; i < h->n_hosts; i++) {
    al_autofree char *hp = al_strdup_printf("%s:%u", h->hosts[i].host, h->hosts[i].port);
    json_array_append_new(hosts, json_string(hp));
  }
  json_object_set_new(t->rec, "gateway",
                      json_pack("{s:o, s:s, s:i, s:i}", "hosts", hosts, "ca_sha256", fp,
                                "agent_comments", (int)p->credentials.agent_comments, "pid",
                                (int)al_gateway_pid(t->gateway)));
  char gl[64] = "";
  if (project_id)
    snprintf(gl, sizeof gl, "; GitLab project id %lu", project_id);
  tk_phase_end(t, s, "ok", "run CA sha256:%.12s; %zu %s host(s) terminated by airlock%s", fp,
               h->n_hosts, tk_vendor(t) ? "forge and ticket" : "forge", gl);
  return 0;
}

/* The decision's reason when it was refused, else NULL. A decision line is
 * refused unless its `decision` says allow (docs/gateway.md). */
static const char *refused_reason(json_t *d)
{
  const char *dec = json_string_value(json_object_get(d, "decision"));
  if (dec && strcmp(dec, "allow") == 0)
    return NULL;
  const char *why = json_string_value(json_object_get(d, "reason"));
  return why && *why ? why : (dec ? dec : "unparsed");
}

void tk_gateway_finish(struct ticket *t, al_ticket_outcome *res)
{
  if (!t->gateway)
    return;
  al_error e = {0};
  int r = al_gateway_stop(t->gateway, &e);
  al_gateway_free(t->gateway);
  t->gateway = NULL;
  size_t n = 0;
  al_autofree char *text = tk_read_memfd(t->gw_fd, &n);
  json_t *ds = tk_decisions_from(text);
  json_t *by = json_object();
  size_t refused = 0;
  size_t challenged = 0;
  for (size_t i = 0; i < json_array_size(ds); i++) {
    const char *why = refused_reason(json_array_get(ds, i));
    if (!why)
      continue;
    /* a request without any credential gets 401 and is never forwarded:
     * that is how git asks its credential helper, so it is counted apart */
    if (strcmp(why, "credential-missing") == 0) {
      challenged++;
      continue;
    }
    refused++;
    json_t *c = json_object_get(by, why);
    json_object_set_new(by, why, json_integer(c ? json_integer_value(c) + 1 : 1));
  }
  /* "reason N, reason N" for the summary line */
  res->gateway_refused = refused;
  res->gateway_requests = json_array_size(ds);
  size_t off = 0;
  const char *k;
  json_t *v;
  res->gateway_refused_by[0] = '\0';
  json_object_foreach(by, k, v)
  {
    int w = snprintf(res->gateway_refused_by + off, sizeof res->gateway_refused_by - off,
                     "%s%s %lld", off ? ", " : "", k, (long long)json_integer_value(v));
    if (w < 0 || (size_t)w >= sizeof res->gateway_refused_by - off)
      break;
    off += (size_t)w;
  }
  json_t *sum =
      json_pack("{s:I, s:I, s:I, s:I, s:o}", "requests", (json_int_t)json_array_size(ds), "allowed",
                (json_int_t)(json_array_size(ds) - refused - challenged), "refused",
                (json_int_t)refused, "challenged", (json_int_t)challenged, "refused_by_reason", by);
  if (n >= GW_DECISIONS_CAP - 1 || json_array_size(ds) >= MAX_DECISIONS)
    json_object_set_new(sum, "truncated", json_true());
  if (r < 0)
    json_object_set_new(sum, "error", json_string(e.msg));
  json_object_set_new(t->rec, "gateway_decisions", ds);
  json_object_set_new(t->rec, "gateway_summary", sum);
  if (r < 0)
    al_warn("forge gateway: %s", e.msg);
}

/* Append the file at path (PEM) to the bundle, with a newline after it. */
static int bundle_add(struct ticket *t, const char *path, bool optional, al_error *err)
{
  char *pem = NULL;
  size_t n = 0;
  if (al_read_file(path, 1u << 20, &pem, &n, err) < 0) {
    if (optional && err->code == ENOENT)
      return 1;
    return -1;
  }
  t->ca_bundle = al_xrealloc(t->ca_bundle, t->ca_bundle_len + n + 2);
  memcpy(t->ca_bundle + t->ca_bundle_len, pem, n);
  t->ca_bundle_len += n;
  if (n && pem[n - 1] != '\n')
    t->ca_bundle[t->ca_bundle_len++] = '\n';
  t->ca_bundle[t->ca_bundle_len] = '\0';
  free(pem);
  return 0;
}

int tk_ca_bundle(struct ticket *t, al_error *err)
{
  free(t->ca_bundle);
  t->ca_bundle = al_xstrdup("");
  t->ca_bundle_len = 0;
  static const char *const sys[] = {TK_SYSTEM_CAS};
  const char *sys_used = NULL;
  for (size_t i = 0; i < AL_ARRAY_SIZE(sys) && !sys_used; i++) {
    al_error e = {0};
    int r = bundle_add(t, sys[i], true, &e);
    if (r < 0)
      return al_error_set(err, e.code, "the system CAs: %s", e.msg);
    if (r == 0)
      sys_used = sys[i];
  }
  if (t->policy->forge.ca_file && bundle_add(t, t->policy->forge.ca_file, false, err) < 0)
    return al_error_wrap(err, "forge.ca_file");
  const char *run_ca = t->gateway ? al_gateway_ca_pem(t->gateway) : NULL;
  if (run_ca) {
    size_t l = strlen(run_ca);
    t->ca_bundle = al_xrealloc(t->ca_bundle, t->ca_bundle_len + l + 2);
    memcpy(t->ca_bundle + t->ca_bundle_len, run_ca, l);
    t->ca_bundle_len += l;
    if (l && run_ca[l - 1] != '\n')
      t->ca_bundle[t->ca_bundle_len++] = '\n';
    t->ca_bundle[t->ca_bundle_len] = '\0';
  }
  json_object_set_new(t->rec, "ca_bundle",
                      json_pack("{s:s, s:s?, s:s?, s:b, s:I}", "path",
                                t->o->docker ? TK_CA_BUNDLE_DOCKER : TK_CA_BUNDLE_NATIVE, "system",
                                sys_used, "forge_ca_file", t->policy->forge.ca_file, "run_ca",
                                run_ca != NULL, "bytes", (json_int_t)t->ca_bundle_len));
  return 0;
}
