/* Phases: the broker lease (two scoped tokens) and its release (both
 * revoked and confirmed dead). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "broker/client.h"
#include "broker/direct.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
#include "relay/launch.h"

/* "name:level,..." of a policy role's permissions (malloc'd), or NULL when
 * it lists none (the broker's maximum for the role). */
static char *policy_perms(const al_policy_role *r)
{
  if (!r->present || r->n_perms == 0)
    return NULL;
  char *out = al_xstrdup("");
  for (size_t i = 0; i < r->n_perms; i++) {
    char *next = al_strdup_printf("%s%s%s:%s", out, i ? "," : "", r->perms[i].name,
                                  al_perm_level(&r->perms[i]));
    free(out);
    out = next;
  }
  return out;
}

/* Issue #8: a run token's permissions are the two roles' and no more —
 * git: contents, pull_requests; ticket: issues; both: the implied
 * metadata: read. Returns the first granted "name:level" beyond that in
 * bad (or "" when none). */
static void beyond_role(al_role role, const char *granted, char *bad, size_t n)
{
  bad[0] = '\0';
  al_autofree char *copy = al_xstrdup(granted ? granted : "");
  char *save = NULL;
  for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
    char *lvl = strchr(it, ':');
    if (lvl)
      *lvl++ = '\0';
    bool ok;
    if (strcmp(it, "metadata") == 0)
      ok = lvl && strcmp(lvl, "read") == 0;
    else if (role == AL_ROLE_GIT)
      ok = strcmp(it, "contents") == 0 || strcmp(it, "pull_requests") == 0;
    else
      ok = strcmp(it, "issues") == 0;
    if (!ok) {
      snprintf(bad, n, "%s:%s", it, lvl ? lvl : "?");
      return;
    }
  }
}

int tk_do_lease(struct ticket *t, al_error *err)
{
  uint64_t s = tk_phase_begin(t, "lease");
  al_autofree char *git_perms = policy_perms(&t->policy->credentials.git);
  al_autofree char *ticket_perms = policy_perms(&t->policy->credentials.ticket);
  static const char *const relay_secrets[] = {AL_RELAY_BROKER_SECRET};
  bool want_key = al_policy_relay_key_broker(t->policy) != NULL;
  al_lease_request rq = {.git_repo = t->repo,
                         .ticket_repo = t->repo,
                         .git_permissions = git_perms,
                         .ticket_permissions = ticket_perms,
                         .secrets = want_key ? relay_secrets : NULL,
                         .n_secrets = want_key ? 1 : 0,
                         .ttl_ms = t->policy->credentials.ttl_ms};
  if (al_lease_open(t->policy->credentials.broker, &rq, &t->lease, err) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return al_error_wrap(err, "broker `%s`", t->policy->credentials.broker);
  }
  al_ghapi_counts bq;
  al_lease_requests(t->lease, &bq);
  tk_phase_add_broker(t, &bq);
  json_t *toks = json_array();
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    if (!al_lease_fingerprint(t->lease, (al_role)r))
      continue;
    json_array_append_new(toks, json_pack("{s:s, s:s, s:s*, s:s*, s:s*}", "role",
                                          al_role_name((al_role)r), "fingerprint",
                                          al_lease_fingerprint(t->lease, (al_role)r), "repo",
                                          al_lease_repo(t->lease, (al_role)r), "permissions",
                                          al_lease_permissions(t->lease, (al_role)r), "expires_at",
                                          al_lease_token_expires_at(t->lease, (al_role)r)));
  }
  /* what the review's scanner needs to recognise the tokens later, in any
   * encoding, once they are revoked and wiped: no value (review/secrets.h) */
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    const char *tok = al_lease_token(t->lease, (al_role)r);
    if (!tok || t->n_run_tokens >= AL_ARRAY_SIZE(t->run_tokens))
      continue;
    al_secret_known *k = &t->run_tokens[t->n_run_tokens++];
    al_secret_fingerprint(tok, k->fp);
    k->len = strlen(tok);
    const char *us = strchr(tok, '_');
    size_t pl = us && us - tok < 8 ? (size_t)(us - tok) + 1 : 0;
    memcpy(k->prefix, tok, pl);
    k->prefix[pl] = '\0';
    k->name = r == AL_ROLE_GIT ? "git token" : "ticket token";
  }
  json_object_set_new(t->rec, "lease",
                      json_pack("{s:s*, s:I, s:s*, s:o}", "id", al_lease_id(t->lease), "ttl_ms",
                                (json_int_t)al_lease_ttl_ms(t->lease), "expires_at",
                                al_lease_expires_at(t->lease), "tokens", toks));
  if (want_key) {
    /* The model key goes to the relay's sandbox only: keep one copy until
     * it starts (the relay launcher wipes it), drop the lease's now. */
    const char *key = al_lease_secret(t->lease, AL_RELAY_BROKER_SECRET);
    if (!key) {
      tk_phase_end(t, s, "failed", "the broker did not lease the `%s` secret",
                   AL_RELAY_BROKER_SECRET);
      return al_make_error(err, EPROTO,
                           "the broker did not lease the `%s` secret (relay.key: broker)",
                           AL_RELAY_BROKER_SECRET);
    }
    t->relay_key = al_secret_dupn(key, strlen(key));
    int e = errno;
    al_lease_secret_wipe(t->lease, AL_RELAY_BROKER_SECRET);
    if (!t->relay_key) {
      tk_phase_end(t, s, "failed", "secret memory for the model key");
      return al_make_error(err, e, "secret memory for the model key");
    }
    json_object_set_new(json_object_get(t->rec, "lease"), "secrets",
                        json_pack("[{s:s, s:s*}]", "name", AL_RELAY_BROKER_SECRET, "fingerprint",
                                  al_lease_secret_fingerprint(t->lease, AL_RELAY_BROKER_SECRET)));
  }
  if (!al_lease_token(t->lease, AL_ROLE_GIT) || !al_lease_token(t->lease, AL_ROLE_TICKET)) {
    tk_phase_end(t, s, "failed", "the broker did not lease both tokens");
    return al_make_error(err, 0, "the broker did not lease both a git and a ticket token");
  }
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    char bad[128];
    beyond_role((al_role)r, al_lease_permissions(t->lease, (al_role)r), bad, sizeof bad);
    if (bad[0]) {
      tk_phase_end(t, s, "failed", "the %s token holds %s, more than its role needs",
                   al_role_name((al_role)r), bad);
      return al_make_error(err, 0,
                           "refusing to run: the broker granted the %s token `%s`, more than the "
                           "role needs (git: contents, pull_requests; ticket: issues); trim the "
                           "broker's roles",
                           al_role_name((al_role)r), bad);
    }
  }
  tk_phase_end(t, s, "ok", "git %s, ticket %s (lease %s)",
               al_lease_fingerprint(t->lease, AL_ROLE_GIT),
               al_lease_fingerprint(t->lease, AL_ROLE_TICKET), al_lease_id(t->lease));
  return 0;
}

int tk_do_release(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  if (!t->lease)
    return 0;
  uint64_t s = tk_phase_begin(t, "release");
  al_lease_result lr;
  memset(&lr, 0, sizeof lr);
  al_error e = {0};
  /* Whatever the broker could not confirm (it is dead, unreachable, or
   * failed), the supervisor revokes itself, with the tokens it holds. */
  char **resolves = tk_pin_resolves(t->policy);
  al_direct_forge df = {.kind = t->policy->forge.kind,
                        .api_url = t->policy->forge.api_url,
                        .ca_file = t->policy->forge.ca_file,
                        .resolve = (const char *const *)resolves};
  char broker_err[AL_ERROR_MSG_MAX];
  int r =
      al_lease_release_or(t->lease, al_direct_revoke, &df, &lr, broker_err, sizeof broker_err, &e);
  tk_phase_add_broker(t, &lr.requests);
  tk_free_strv(resolves);
  t->lease = NULL;
  json_t *toks = json_array();
  size_t dead = 0, by_supervisor = 0;
  for (size_t i = 0; i < lr.n && i < AL_ROLE_COUNT; i++) {
    bool ok = lr.tokens[i].revoked && lr.tokens[i].confirmed;
    json_array_append_new(
        toks, json_pack("{s:s, s:s, s:b, s:b, s:s*, s:s*, s:s*}", "role",
                        al_role_name(lr.tokens[i].role), "fingerprint", lr.tokens[i].fingerprint,
                        "revoked", lr.tokens[i].revoked, "confirmed_401", lr.tokens[i].confirmed,
                        "error", lr.tokens[i].error[0] ? lr.tokens[i].error : NULL, "expires_at",
                        lr.tokens[i].expires_at[0] ? lr.tokens[i].expires_at : NULL, "revoked_by",
                        lr.tokens[i].revoked_by[0] ? lr.tokens[i].revoked_by : NULL));
    if (ok)
      dead++;
    if (ok && strcmp(lr.tokens[i].revoked_by, "supervisor") == 0)
      by_supervisor++;
  }
  res->tokens_dead = r == 0 && dead == lr.n && lr.n == AL_ROLE_COUNT;
  json_t *rv = json_pack("{s:b, s:s, s:o, s:b, s:s*}", "answered", lr.answered, "reason",
                         lr.answered ? lr.reason : "broker gone", "tokens", toks, "all_dead",
                         res->tokens_dead, "error", r < 0 ? e.msg : NULL);
  if (broker_err[0])
    json_object_set_new(rv, "broker_error", json_string(broker_err));
  json_object_set_new(t->rec, "revocation", rv);
  if (by_supervisor)
    al_warn("the broker did not confirm %zu token(s) dead (%s); the supervisor revoked them "
            "itself and saw each get 401",
            by_supervisor, broker_err[0] ? broker_err : "no answer");
  if (!res->tokens_dead) {
    tk_phase_end(t, s, "failed", "tokens not confirmed dead: %s", r < 0 ? e.msg : "see record");
    return al_make_error(err, r < 0 ? e.code : 0, "revocation: %s",
                         r < 0 ? e.msg : "not every token was confirmed dead");
  }
  tk_phase_end(t, s, "ok", "%zu tokens revoked, each confirmed 401%s", dead,
               by_supervisor ? " (by the supervisor: the broker did not answer)" : "");
  return 0;
}
