/* Phase: load the policy and check it against the ticket. */
#include <unistd.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ticket_internal.h"
#include "proxy/host.h"

/* Is host:port of an https URL in the allowlist? */
static bool url_allowed(const al_policy *p, const char *url, char *host, size_t hostlen,
                        uint16_t *port)
{
  if (strncmp(url, "https://", 8) != 0)
    return false;
  const char *h = url + 8;
  size_t hl = strcspn(h, ":/");
  al_host canon;
  const char *why;
  if (al_host_canonicalize(h, hl, &canon, &why) < 0)
    return false;
  *port = 443;
  if (h[hl] == ':' && al_port_parse(h + hl + 1, strcspn(h + hl + 1, "/"), port, &why) < 0)
    return false;
  snprintf(host, hostlen, "%s", canon.name);
  for (size_t i = 0; i < p->network.n_allow; i++) {
    const al_net_allow *a = &p->network.allow[i];
    if (!a->wildcard && a->port == *port && strcmp(a->host, canon.name) == 0)
      return a->tls;
  }
  return false;
}

/* Phase: load and check the policy against the ticket. */
int tk_do_policy(struct ticket *t, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "policy");
  if (!t->o->policy_path) {
    tk_phase_end(t, s, "failed", "no policy given");
    return al_make_error(err, 0,
                         "a ticket run needs a policy (-p FILE) with network, "
                         "credentials and forge sections; see docs/policy.md");
  }
  if (al_policy_load_file(t->o->policy_path, &t->policy, err) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return -1;
  }
  al_policy *p = t->policy;
  json_object_set_new(t->rec, "policy",
                      json_pack("{s:s, s:s}", "source", p->source, "sha256", al_policy_sha256(p)));
  const char *why = NULL;
  if (!p->credentials.present)
    why = "the policy has no credentials section (where is the broker?)";
  else if (!p->network.present)
    why = "the policy has no network section: the agent could reach neither the API nor git";
  else if (p->credentials.git.present && p->credentials.git.repo &&
           strcmp(p->credentials.git.repo, t->repo) != 0)
    why = "credentials.git.repo is not the ticket's repository";
  else if (p->credentials.ticket.present && p->credentials.ticket.repo &&
           strcmp(p->credentials.ticket.repo, t->repo) != 0)
    why = "credentials.ticket.repo is not the ticket's repository";
  char host[256];
  uint16_t port;
  if (!why && !url_allowed(p, p->forge.api_url, host, sizeof host, &port))
    why = "forge.api_url's host:port is not in network.allow (with tls)";
  if (!why && !url_allowed(p, p->forge.git_url, host, sizeof host, &port))
    why = "forge.git_url's host:port is not in network.allow (with tls)";
  if (!why && p->forge.ca_file && access(p->forge.ca_file, R_OK) < 0)
    why = "forge.ca_file is not readable";
  if (why) {
    tk_phase_end(t, s, "failed", "%s", why);
    return al_make_error(err, 0, "policy `%s`: %s", p->source, why);
  }
  json_object_set_new(t->rec, "credentials_mode",
                      json_string(al_cred_mode_name(p->credentials.mode)));
  tk_phase_end(t, s, "ok", "sha256:%.12s, %zu allowed destinations, credentials %s",
               al_policy_sha256(p), p->network.n_allow, al_cred_mode_name(p->credentials.mode));
  return 0;
}
