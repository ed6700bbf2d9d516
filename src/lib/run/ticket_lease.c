/* Phases: the broker lease (two scoped tokens) and its release (both
 * revoked and confirmed dead). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ticket_internal.h"
#include "broker/client.h"
#include "broker/secmem.h"
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
    char *next =
        al_strdup_printf("%s%s%s:%s", out, i ? "," : "", r->perms[i].name, r->perms[i].level);
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
  int r = al_lease_release(t->lease, true, &lr, &e);
  t->lease = NULL;
  json_t *toks = json_array();
  size_t dead = 0;
  for (size_t i = 0; i < lr.n && i < AL_ROLE_COUNT; i++) {
    json_array_append_new(toks, json_pack("{s:s, s:s, s:b, s:b, s:s*}", "role",
                                          al_role_name(lr.tokens[i].role), "fingerprint",
                                          lr.tokens[i].fingerprint, "revoked", lr.tokens[i].revoked,
                                          "confirmed_401", lr.tokens[i].confirmed, "error",
                                          lr.tokens[i].error[0] ? lr.tokens[i].error : NULL));
    if (lr.tokens[i].revoked && lr.tokens[i].confirmed)
      dead++;
  }
  res->tokens_dead = r == 0 && lr.answered && dead == lr.n && lr.n == AL_ROLE_COUNT;
  json_object_set_new(t->rec, "revocation",
                      json_pack("{s:b, s:s, s:o, s:b, s:s*}", "answered", lr.answered, "reason",
                                lr.reason, "tokens", toks, "all_dead", res->tokens_dead, "error",
                                r < 0 ? e.msg : NULL));
  if (!res->tokens_dead) {
    tk_phase_end(t, s, "failed", "tokens not confirmed dead: %s", r < 0 ? e.msg : "see record");
    return al_make_error(err, r < 0 ? e.code : 0, "revocation: %s",
                         r < 0 ? e.msg : "not every token was confirmed dead");
  }
  tk_phase_end(t, s, "ok", "%zu tokens revoked, each confirmed 401", dead);
  return 0;
}
