/* A policy checked for what it will be used for (policy.h,
 * al_policy_check_for): the rules beyond the schema that `airlock ticket`,
 * `airlock run` and `airlock render` need, in one place, so `airlock policy
 * check --for` and the commands themselves can never disagree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/policy.h"
#include "net/host.h"

static const char *const names[] = {"run", "ticket", "render"};

static const char *const needs[] = {
    /* run */
    "any valid policy (without one, the embedded default: no network); a relay section needs "
    "relay.key_file (`key: broker` only works with airlock ticket)",
    /* ticket */
    "a network section allowing forge.api_url's and forge.git_url's host:port with TLS, a "
    "credentials section (the broker's socket; git and ticket roles naming the ticket's "
    "repository), a readable forge.ca_file when one is given, and with forge.kind gitlab no "
    "Jira or Linear ticket",
    /* render */
    "credentials.mode env when there is a credentials section (sealed runs only under airlock "
    "ticket; render --env-credentials overrides); a network section (the rendered proxy "
    "refuses everything without one); a relay section is not rendered",
};

int al_policy_purpose_parse(const char *s, al_policy_purpose *out)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (al_policy_purpose)i;
      return 0;
    }
  return -1;
}

const char *al_policy_purpose_name(al_policy_purpose what)
{
  return (size_t)what < AL_ARRAY_SIZE(names) ? names[what] : "?";
}

const char *al_policy_purpose_needs(al_policy_purpose what)
{
  return (size_t)what < AL_ARRAY_SIZE(needs) ? needs[what] : "?";
}

static void add_warning(al_policy *p, char *w)
{
  p->warnings = al_xrealloc(p->warnings, (p->n_warnings + 1) * sizeof *p->warnings);
  p->warnings[p->n_warnings++] = w;
}

/* Is host:port of an https URL in the allowlist, with TLS? Fills host and
 * port for the message. */
static bool url_allowed(const al_policy *p, const char *url, char *host, size_t hostlen,
                        uint16_t *port)
{
  snprintf(host, hostlen, "?");
  *port = 443;
  if (strncmp(url, "https://", 8) != 0)
    return false;
  const char *h = url + 8;
  size_t hl = strcspn(h, ":/");
  al_host canon;
  const char *why;
  if (al_host_canonicalize(h, hl, &canon, &why) < 0)
    return false;
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

/* "FILE:LINE: " or "FILE: " when the value has no line (a default). */
static int fail_at(al_error *err, const al_policy *p, int line, const char *rule)
{
  if (line > 0)
    return al_error_set(err, EINVAL, "%s:%d: %s", p->source, line, rule);
  return al_error_set(err, EINVAL, "%s: %s", p->source, rule);
}

static int check_ticket(al_policy *p, const char *repo, al_error *err)
{
  char rule[600];
  /* issue #30: a GitLab ticket runs (the broker's project tokens, the
   * gateway's GitLab table, the driver's Draft MR and note); a Jira or
   * Linear ticket on a GitLab project has not been tried, so it is refused */
  if (p->forge.kind == AL_FORGE_GITLAB && p->ticket.present && p->ticket.kind != 0)
    return fail_at(err, p, 0,
                   "forge.kind gitlab with a Jira or Linear `ticket:`: not built yet (a GitLab "
                   "project's own issue is; docs/gitlab.md)");
  if (!p->credentials.present)
    return fail_at(err, p, 0,
                   "the policy has no credentials section (where is the broker? see "
                   "docs/policy.md, `credentials`)");
  if (!p->network.present)
    return fail_at(err, p, 0,
                   "the policy has no network section: the agent could reach neither the API "
                   "nor git");
  const struct {
    const char *name, *repo;
  } roles[] = {
      {"credentials.git.repo", p->credentials.git.present ? p->credentials.git.repo : NULL},
      {"credentials.ticket.repo",
       p->credentials.ticket.present ? p->credentials.ticket.repo : NULL}};
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (roles[i].repo && strcasecmp(roles[i].repo, "OWNER/REPO") == 0) {
      snprintf(rule, sizeof rule,
               "%s is still the placeholder OWNER/REPO: write the repository the tickets are "
               "in (`airlock policy init ORG/NAME` writes a policy with it filled in)",
               roles[i].name);
      return fail_at(err, p, 0, rule);
    }
  if (repo && p->credentials.git.present && p->credentials.git.repo &&
      strcmp(p->credentials.git.repo, repo) != 0) {
    snprintf(rule, sizeof rule, "credentials.git.repo (%s) is not the ticket's repository (%s)",
             p->credentials.git.repo, repo);
    return fail_at(err, p, 0, rule);
  }
  if (repo && p->credentials.ticket.present && p->credentials.ticket.repo &&
      strcmp(p->credentials.ticket.repo, repo) != 0) {
    snprintf(rule, sizeof rule, "credentials.ticket.repo (%s) is not the ticket's repository (%s)",
             p->credentials.ticket.repo, repo);
    return fail_at(err, p, 0, rule);
  }
  static const char *const which[] = {"forge.api_url", "forge.git_url"};
  const char *urls[] = {p->forge.api_url, p->forge.git_url};
  for (int i = 0; i < 2; i++) {
    char host[256];
    uint16_t port;
    if (!url_allowed(p, urls[i], host, sizeof host, &port)) {
      snprintf(rule, sizeof rule,
               "%s's host:port is not in network.allow (with tls): add `{host: %s, port: %u}` "
               "(%s is %s%s)",
               which[i], host, port, which[i], urls[i], p->forge.line[i] ? "" : ", the default");
      return fail_at(err, p, p->forge.line[i], rule);
    }
  }
  if (p->forge.ca_file && access(p->forge.ca_file, R_OK) < 0) {
    snprintf(rule, sizeof rule, "forge.ca_file `%s` is not readable: %s", p->forge.ca_file,
             strerror(errno));
    return fail_at(err, p, p->forge.line[2], rule);
  }
  /* a Jira or Linear ticket (issue #31): the supervisor reads it and
   * comments on it with the vendor credential of ticket.token_file */
  if (p->ticket.present && p->ticket.kind != 0 && !p->ticket.token_file)
    return fail_at(err, p, 0,
                   "ticket.token_file is required for a jira or linear ticket: the vendor "
                   "credential, a 0600 file the supervisor reads (docs/tickets.md)");
  return 0;
}

int al_policy_check_for(al_policy *p, al_policy_purpose what, const char *repo, al_error *err)
{
  switch (what) {
  case AL_POLICY_FOR_TICKET:
    return check_ticket(p, repo, err);
  case AL_POLICY_FOR_RUN:
    if (al_policy_relay_key_broker(p))
      return fail_at(err, p, p->relay.line,
                     "relay.key: broker: the model key comes from a broker lease, which only "
                     "`airlock ticket` opens; `airlock run` needs relay.key_file");
    return 0;
  case AL_POLICY_FOR_RENDER:
    /* the rule of render/render.c al_render_check_credentials */
    if (p->credentials.present && p->credentials.mode == AL_CRED_SEALED)
      return fail_at(err, p, 0,
                     "credentials.mode is sealed (the default), which `airlock render` cannot "
                     "keep: the forge gateway that holds the tokens outside the agent runs only "
                     "under `airlock ticket`; set credentials.mode: env, or render with "
                     "--env-credentials (env mode: the agent's container gets the real tokens)");
    if (!p->network.present)
      add_warning(p, al_strdup_printf("%s: network: none: the rendered proxy refuses every "
                                      "request",
                                      p->source));
    if (p->relay.present)
      add_warning(p, al_strdup_printf("%s:%d: relay: not rendered (it needs an egress listener "
                                      "of its own); airlock render says so in its output",
                                      p->source, p->relay.line));
    return 0;
  default:
    return al_error_set(err, EINVAL, "unknown purpose");
  }
}
