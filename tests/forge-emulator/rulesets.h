/* Rulesets and classic protection as GitHub applies them (rulesets.c),
 * shared by the REST routes (api.c) and the push hook (git.c), so what the
 * API shows is what a push meets:
 *   - repository rulesets and organisation rulesets (fixture: an
 *     Organization user's `rulesets[]`, with `conditions.repository_name`);
 *   - ref matching for branches (refs/heads/) and tags (refs/tags/):
 *     ~ALL, ~DEFAULT_BRANCH, fnmatch patterns, include then exclude;
 *   - bypass: Integration actors by app id, bypass_mode always /
 *     pull_request / exempt; `current_user_can_bypass` for the caller;
 *   - `bypass_actors` shown only to a caller who can edit the ruleset
 *     (REST › Repos › Rules › "Get a repository ruleset": repository
 *     Administration: write; organisation rulesets: Organization
 *     administration: write);
 *   - classic protection: the rule for a branch is its exact name, else the
 *     first fnmatch pattern that matches — on GET as on push. */
#ifndef FORGE_RULESETS_H
#define FORGE_RULESETS_H

#include <stdbool.h>

#include "forge.h"

/* Every ruleset in force on repo: its own, then its organisation's whose
 * repository_name condition matches. A new array of copies, each with
 * "source_type" ("Repository"/"Organization") and "source". Lock held. */
json_t *forge_rulesets_of(json_t *repo);

/* Does ruleset rs (active) apply to `name` of `target` ("branch": a
 * branch name, "tag": a tag name)? repo_default: the repository's default
 * branch (for ~DEFAULT_BRANCH). */
bool forge_ruleset_applies(json_t *rs, const char *target, const char *name,
                           const char *repo_default);

/* What GitHub's current_user_can_bypass says for app (NULL: "never"):
 * "always", "pull_requests_only", "exempt" or "never". */
const char *forge_ruleset_bypass(json_t *rs, const struct forge_app *app);

/* Whether the caller may see rs's bypass_actors. */
bool forge_ruleset_actors_visible(json_t *rs, const struct forge_auth *au);

/* The classic protection rule that applies to branch (exact name, else the
 * first matching pattern), or NULL. Borrowed. */
json_t *forge_classic_for(json_t *repo, const char *branch);

/* Tag rules for a push of refs/tags/<tag> by app (may be NULL): an object
 * with booleans "ruleset" (a tag ruleset applies), "create", "update",
 * "del" (restricted and not bypassed by app). Caller owns it. repo needs
 * "rulesets" (already the effective list) and "default_branch". */
json_t *forge_tag_rules(json_t *repo, const char *tag, const struct forge_app *app);

/* Admin: POST /rulesets {"repo": "o/r" | "org": "login", "ruleset": {...}}
 * adds or replaces (by id); {"repo"|"org", "delete": ID} removes. True when
 * handled. Lock held. */
bool forge_rulesets_admin(struct forge_req *rq, struct forge_resp *resp);

#endif
