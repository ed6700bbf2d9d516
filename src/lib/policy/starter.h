/* The starter policies `airlock policy init` prints: examples/airlock.yaml
 * (GitHub, OWNER/REPO) and examples/airlock-gitlab.yaml (GitLab,
 * GROUP/PROJECT; issue #30), compiled in, with the placeholder replaced. */
#ifndef AL_POLICY_STARTER_H
#define AL_POLICY_STARTER_H

#include "common/error.h"
#include "forge/names.h"

/* The starter policy of forge `kind` for `repo` (OWNER/REPO, or GitLab's
 * GROUP/PROJECT: one group level, as a run's target and its credentials
 * name it today), checked before it is returned: it loads and passes
 * `policy check --for ticket --repo REPO`. *out is malloc'd. Returns 0, or
 * -1 with err: EINVAL naming the repository and the rule (a malformed
 * name, the docs' placeholder), EPROTO when the template itself does not
 * pass (a bug). */
int al_policy_starter(al_forge_kind kind, const char *repo, char **out, al_error *err);

#endif
