/* The GitLab audit (issue #30 item 4): the escape budget of a GitLab
 * project proven from GitLab's own REST v4 API, into the same report as
 * GitHub's (forge/audit.h al_audit_report: al_audit_format_json, `airlock
 * show` and the ticket's audit phase read it unchanged). The criteria are
 * al_audit_gl_id's (forge/audit.h), judged PASS, WARN, FAIL or UNKNOWN;
 * UNKNOWN where GitLab answers 403 or 404 because of the tier or the
 * token's role, never a pass. docs/audit.md "GitLab" says what each
 * criterion means and which setting fixes it.
 *
 * What it reads (docs.gitlab.com, REST API v4; the project by its
 * URL-encoded full path, "Namespaced paths"):
 *   GET /projects/:id                          Projects API › "Get a single project"
 *                                              (default_branch, ci_config_path,
 *                                              builds_access_level, auto_devops_enabled)
 *   GET /projects/:id/protected_branches       Protected branches API › "List protected
 *                                              branches" (wildcards too: every entry whose
 *                                              name matches the branch is judged, the most
 *                                              permissive wins as GitLab applies them)
 *   GET /projects/:id/approvals                Merge request approvals API › "Retrieve
 *                                              project-level MR approval settings"
 *                                              (Premium)
 *   GET /projects/:id/approval_rules           "Get all project-level approval rules"
 *                                              (Premium)
 *   GET /projects/:id/push_rule                Push rules API › "Get project push rules"
 *                                              (Premium; null when none)
 *   GET /projects/:id/members/all/:user_id     Project members API › "Get a member of a
 *                                              project, including inherited and invited
 *                                              members" (the bot's access_level)
 *   GET /projects/:id/repository/files/:path?ref=  Repository files API › "Get file from
 *                                              repository": CODEOWNERS (root, docs/,
 *                                              .gitlab/: "Code Owners" § "CODEOWNERS file")
 *                                              and the CI file (forge/gitlab_ci.h)
 *   GET /projects/:id/variables                Project-level CI/CD variables API (protected,
 *                                              masked, environment_scope; never the values)
 *   GET /groups/:id, /groups/:id/variables     Groups API › "Get a single group" (parent_id),
 *                                              Group-level CI/CD variables API: the
 *                                              project's group and each parent (their
 *                                              variables reach its pipelines too)
 *   GET /projects/:id/deploy_tokens            Deploy tokens API › "List project deploy
 *                                              tokens" (gitlab-deploy-token reaches CI jobs)
 *
 * The credential: opts.token, a read token of a Maintainer of the project
 * (scope read_api; protected branches, variables and deploy tokens need
 * the Maintainer role). The bot: GitLab's run bots are per-run project
 * access tokens minted by the broker at Developer (forge/app.c checks the
 * answer); a standing bot user, if there is one, is named by
 * opts.app_slug (username) and opts.app_id (user id). */
#ifndef AL_FORGE_AUDIT_GITLAB_H
#define AL_FORGE_AUDIT_GITLAB_H

#include "common/error.h"
#include "forge/audit.h"

/* The GitLab audit: what al_audit_run does with opts.forge_kind
 * AL_FORGE_GITLAB, callable directly. Required: opts.repo (the project's
 * full path, "group/sub/project"), opts.api_url (the REST v4 base, ending
 * in /api/v4), opts.token. Optional: branch (NULL: the project's default),
 * ca_file, resolve, timeout_ms, run_prefix, token_source, app_slug/app_id
 * (a standing bot user). broker_config and grant are refused (EINVAL):
 * GitLab's broker hands the audit no grant yet. Returns 0 with *out filled
 * (al_audit_report_free) whatever the verdict: read out->holds; -1 with
 * err when it could not run: bad options (EINVAL), the API unreachable,
 * the token refused (EACCES, 401), the project or branch not found
 * (ENOENT). */
int al_audit_gitlab_run(const al_audit_opts *opts, al_audit_report *out, al_error *err);

#endif
