/* Phase: load the policy and check it against the ticket. */
#include <unistd.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "common/util.h"

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
  /* the canonical text too, not only its hash: what the run was allowed
   * can be read from the record alone (sha256 is of exactly this text) */
  al_autofree char *canonical = al_policy_canonical(p);
  json_object_set_new(t->rec, "policy",
                      json_pack("{s:s, s:s, s:s?}", "source", p->source, "sha256",
                                al_policy_sha256(p), "canonical", canonical));
  /* OWNER/REPO for GitHub, GROUP[/SUB...]/PROJECT for GitLab (issue #30) */
  if (al_ticket_repo_for_forge(t->repo, p->forge.kind, err) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return al_error_wrap(err, "policy");
  }
  /* the same check as `airlock policy check --for ticket` (policy/purpose.c) */
  if (al_policy_check_for(p, AL_POLICY_FOR_TICKET, t->repo, err) < 0) {
    tk_phase_end(t, s, "failed", "%s", err->msg);
    return al_error_wrap(err, "policy");
  }
  json_object_set_new(t->rec, "credentials_mode",
                      json_string(al_cred_mode_name(p->credentials.mode)));
  tk_phase_end(t, s, "ok", "sha256:%.12s, %zu allowed destinations, credentials %s",
               al_policy_sha256(p), p->network.n_allow, al_cred_mode_name(p->credentials.mode));
  return 0;
}
