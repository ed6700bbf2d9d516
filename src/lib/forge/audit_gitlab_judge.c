/* The GitLab audit, the verdicts: each criterion judged from what
 * audit_gitlab.c read; UNKNOWN where GitLab did not show the setting (a
 * tier without the feature, a token without the role), never a pass. The
 * fix names the GitLab setting to change (Settings › Repository ›
 * Protected branches, Settings › Merge requests › Merge request approvals,
 * Settings › Repository › Push rules, Manage › Members, Settings › CI/CD ›
 * Variables / Deploy tokens). docs/audit.md "GitLab" says what each one
 * means. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "forge/audit_gitlab_internal.h"
#include "forge/codeowners.h"
#include "forge/gitlab_ci.h"

static const char *tier_note = " (GitLab answers 403 or 404 where the tier lacks the feature "
                               "(Premium) or the token is not a Maintainer's)";

static al_audit_status verdict(bool pass, bool unknown)
{
  return pass ? AL_AUDIT_PASS : unknown ? AL_AUDIT_UNKNOWN : AL_AUDIT_FAIL;
}

/* ---- protected branches ------------------------------------------------- */

/* The protected-branch entries whose name matches branch (a new array). */
static json_t *matching(struct glx *c, const char *branch)
{
  json_t *out = json_array();
  size_t i;
  json_t *e;
  json_array_foreach(c->pb.json, i, e)
  {
    const char *n = json_string_value(json_object_get(e, "name"));
    if (n && gl_branch_match(n, branch))
      json_array_append(out, e);
  }
  return out;
}

static void pb_unknown(struct glx *c, al_audit_gl_id id, struct sb *ev)
{
  au_sb_part(ev, "protected branches: not visible (%s)", c->pb.why);
  gl_set(c, id, AL_AUDIT_UNKNOWN, ev,
         "audit with a read token (read_api) of a Maintainer of the project: GitLab shows "
         "protected branches to Maintainers");
}

static void judge_protected(struct glx *c, json_t *m)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_PROTECTED;
  if (c->pb.st != L_PRESENT)
    return pb_unknown(c, AL_GL_PROTECTED, &ev);
  size_t i;
  json_t *e;
  json_array_foreach(m, i, e)
      au_sb_part(&ev, "protected branch rule `%s` matches %s",
                 au_str_or(json_string_value(json_object_get(e, "name")), "?"), c->rep->branch);
  if (!json_array_size(m))
    au_sb_part(&ev, "no protected branch rule of the %zu matches %s", json_array_size(c->pb.json),
               c->rep->branch);
  gl_set(c, AL_GL_PROTECTED, verdict(json_array_size(m) > 0, false), &ev,
         "protect the branch: Settings › Repository › Protected branches, Allowed to merge: "
         "Maintainers, Allowed to push and merge: No one, Allowed to force push off");
}

/* One access level entry ({access_level, user_id, group_id, deploy_key_id},
 * "Protected branches API"): may the bot (a Developer, or the named bot
 * user) use it? *why says what it grants. Returns 1 bot, 0 not, 2 a
 * group or a deploy key (not the bot, but not a role either). */
static int entry_admits_bot(struct glx *c, json_t *a, char *why, size_t n)
{
  json_t *uid = json_object_get(a, "user_id"), *gid = json_object_get(a, "group_id");
  json_t *dk = json_object_get(a, "deploy_key_id");
  long long lvl = json_integer_value(json_object_get(a, "access_level"));
  const char *d = au_str_or(json_string_value(json_object_get(a, "access_level_description")), "");
  if (json_is_integer(uid)) {
    bool bot = c->o->app_id > 0 && json_integer_value(uid) == c->o->app_id;
    snprintf(why, n, "user %lld%s%s%s", (long long)json_integer_value(uid), d[0] ? " (" : "", d,
             d[0] ? ")" : "");
    return bot ? 1 : 0;
  }
  if (json_is_integer(gid)) {
    snprintf(why, n, "group %lld%s%s%s", (long long)json_integer_value(gid), d[0] ? " (" : "", d,
             d[0] ? ")" : "");
    return 2;
  }
  if (json_is_integer(dk)) {
    snprintf(why, n, "deploy key %lld", (long long)json_integer_value(dk));
    return 2;
  }
  snprintf(why, n, "access_level %lld (%s)", lvl,
           lvl == 0    ? "No one"
           : lvl >= 40 ? "Maintainers"
           : lvl >= 30 ? "Developers + Maintainers"
                       : "below Developer");
  /* the run's bot is a Developer (30); 40 and above leave it out */
  return lvl == 0 || lvl >= 40 ? 0 : 1;
}

static void judge_levels(struct glx *c, json_t *m, al_audit_gl_id id, const char *key,
                         const char *what, const char *fix)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_PROTECTED;
  if (c->pb.st != L_PRESENT)
    return pb_unknown(c, id, &ev);
  bool fail = false, warn = false, any = false;
  size_t i, j;
  json_t *e, *a;
  json_array_foreach(m, i, e)
  {
    const char *name = au_str_or(json_string_value(json_object_get(e, "name")), "?");
    json_t *lv = json_object_get(e, key);
    if (!json_is_array(lv) || !json_array_size(lv)) {
      au_sb_part(&ev, "rule `%s`: no %s in the answer", name, key);
      fail = true;
      continue;
    }
    json_array_foreach(lv, j, a)
    {
      char w[200];
      int r = entry_admits_bot(c, a, w, sizeof w);
      any = true;
      au_sb_part(&ev, "rule `%s`: %s %s%s", name, what, w,
                 r == 1   ? ", which lets the bot in"
                 : r == 2 ? " (not a role: check who it holds)"
                          : "");
      fail = fail || r == 1;
      warn = warn || r == 2;
    }
  }
  if (!json_array_size(m)) {
    au_sb_part(&ev, "%s is not protected: any Developer, the bot included, may %s", c->rep->branch,
               what);
    fail = true;
  }
  (void)any;
  gl_set(c, id, fail ? AL_AUDIT_FAIL : warn ? AL_AUDIT_WARN : AL_AUDIT_PASS, &ev, fix);
}

static void judge_force(struct glx *c, json_t *m)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_PROTECTED;
  if (c->pb.st != L_PRESENT)
    return pb_unknown(c, AL_GL_FORCE_PUSH, &ev);
  bool fail = !json_array_size(m);
  if (fail)
    au_sb_part(&ev, "%s is not protected (force push is not blocked)", c->rep->branch);
  size_t i;
  json_t *e;
  json_array_foreach(m, i, e)
  {
    json_t *f = json_object_get(e, "allow_force_push");
    au_sb_part(&ev, "rule `%s`: allow_force_push = %s",
               au_str_or(json_string_value(json_object_get(e, "name")), "?"),
               json_is_boolean(f) ? (json_is_true(f) ? "true" : "false") : "absent");
    fail = fail || !json_is_false(f);
  }
  gl_set(c, AL_GL_FORCE_PUSH, fail ? AL_AUDIT_FAIL : AL_AUDIT_PASS, &ev,
         "Settings › Repository › Protected branches: turn off \"Allowed to force push\" "
         "(allow_force_push false) on every rule matching the branch");
}

static void judge_code_owners(struct glx *c, json_t *m)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_PROTECTED | AL_AUDIT_FROM_GL_FILES;
  if (c->co.st == L_UNKNOWN) {
    au_sb_part(&ev, "CODEOWNERS: not visible (%s)", c->co.why);
    gl_set(c, AL_GL_CODE_OWNERS, AL_AUDIT_UNKNOWN, &ev,
           "give the audit a token that can read the repository (read_api)");
    return;
  }
  if (c->co.st == L_ABSENT) {
    au_sb_part(&ev, "no CODEOWNERS in the root, docs/ or .gitlab/ of %s: no owner to require",
               c->rep->branch);
    gl_set(c, AL_GL_CODE_OWNERS, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  if (c->pb.st != L_PRESENT)
    return pb_unknown(c, AL_GL_CODE_OWNERS, &ev);
  au_sb_part(&ev, "%s exists on %s", c->co_path, c->rep->branch);
  bool pass = false, hidden = false;
  size_t i;
  json_t *e;
  json_array_foreach(m, i, e)
  {
    json_t *f = json_object_get(e, "code_owner_approval_required");
    au_sb_part(&ev, "rule `%s`: code_owner_approval_required = %s",
               au_str_or(json_string_value(json_object_get(e, "name")), "?"),
               json_is_boolean(f) ? (json_is_true(f) ? "true" : "false")
                                  : "absent (a tier without code owner approval)");
    pass = pass || json_is_true(f);
    hidden = hidden || !json_is_boolean(f);
  }
  if (!json_array_size(m))
    au_sb_part(&ev, "%s is not protected", c->rep->branch);
  /* a standing bot named as an owner would satisfy code owner approval
   * itself (the run's own bots, new each run, cannot be named) */
  bool bot_owner = false;
  if (c->o->app_slug && pass) {
    char n1[160];
    snprintf(n1, sizeof n1, "@%s", c->o->app_slug);
    const char *names[] = {n1};
    unsigned lines[4];
    const char *text = json_string_value(c->co.json);
    size_t n =
        al_codeowners_lines_owned_by(text, json_string_length(c->co.json), names, 1, lines, 4);
    if (n) {
      au_sb_part(&ev, "%s names the bot %s as an owner (line %u)", c->co_path, n1, lines[0]);
      bot_owner = true;
    }
  }
  if (bot_owner) {
    gl_set(c, AL_GL_CODE_OWNERS, AL_AUDIT_FAIL, &ev,
           "remove the bot from CODEOWNERS: a code owner's approval satisfies code owner "
           "approval");
    return;
  }
  gl_set(c, AL_GL_CODE_OWNERS, verdict(pass, hidden), &ev,
         hidden && !pass ? "code owner approval needs GitLab Premium: without it CODEOWNERS "
                           "is not enforced on merge"
                         : "Settings › Repository › Protected branches: turn on \"Code owner "
                           "approval\" (code_owner_approval_required) for the branch");
}

/* ---- approvals ---------------------------------------------------------- */

static bool is_bot_user(struct glx *c, json_t *u)
{
  const char *name = json_string_value(json_object_get(u, "username"));
  json_t *id = json_object_get(u, "id");
  return (c->o->app_id > 0 && json_integer_value(id) == c->o->app_id) ||
         (c->o->app_slug && name && !strcasecmp(name, c->o->app_slug));
}

/* Does approval rule r apply to merge requests into the branch? ("Merge
 * request approvals API": protected_branches empty and not
 * applies_to_all_protected_branches means every branch.) */
static bool rule_applies(struct glx *c, json_t *r, bool protected_branch)
{
  if (json_is_true(json_object_get(r, "applies_to_all_protected_branches")))
    return protected_branch;
  json_t *pbs = json_object_get(r, "protected_branches");
  if (!json_array_size(pbs))
    return true;
  size_t i;
  json_t *p;
  json_array_foreach(pbs, i, p)
  {
    const char *n = json_string_value(json_object_get(p, "name"));
    if (n && gl_branch_match(n, c->rep->branch))
      return true;
  }
  return false;
}

static void judge_approvals(struct glx *c, bool protected_branch)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_RULES | AL_AUDIT_FROM_GL_APPROVALS;
  bool pass = false, fail_bot = false;
  long long abm = json_integer_value(json_object_get(c->approvals.json, "approvals_before_merge"));
  if (c->approvals.st == L_PRESENT && abm > 0) {
    au_sb_part(&ev, "approvals_before_merge = %lld (the project's default rule)", abm);
    pass = true;
  }
  if (c->rules.st != L_PRESENT || !json_is_array(c->rules.json)) {
    au_sb_part(&ev, "approval rules: not visible (%s)%s",
               c->rules.st == L_UNKNOWN ? c->rules.why : "not a list", tier_note);
    gl_set(c, AL_GL_APPROVALS, pass ? AL_AUDIT_PASS : AL_AUDIT_UNKNOWN, &ev,
           "merge request approval rules need GitLab Premium; audit with a Maintainer's read "
           "token, and add a rule (Settings › Merge requests › Merge request approvals) with "
           "Approvals required >= 1 from people other than the bot");
    return;
  }
  size_t i, j;
  json_t *r, *u;
  size_t n_applies = 0;
  json_array_foreach(c->rules.json, i, r)
  {
    const char *name = au_str_or(json_string_value(json_object_get(r, "name")), "?");
    const char *type = au_str_or(json_string_value(json_object_get(r, "rule_type")), "regular");
    long long req = json_integer_value(json_object_get(r, "approvals_required"));
    if (!rule_applies(c, r, protected_branch) || !strcmp(type, "report_approver"))
      continue;
    n_applies++;
    json_t *el = json_object_get(r, "eligible_approvers");
    if (!json_is_array(el) || !json_array_size(el))
      el = json_object_get(r, "users");
    size_t humans = 0;
    bool bot = false;
    json_array_foreach(el, j, u)
    {
      if (is_bot_user(c, u))
        bot = true;
      else
        humans++;
    }
    bool any = !strcmp(type, "any_approver");
    /* approver groups whose members the answer does not list (hidden
     * groups, or none expanded): people, and never the run's bot (a
     * project access token's bot belongs to the project alone) */
    size_t groups = json_array_size(json_object_get(r, "groups"));
    bool hidden = json_is_true(json_object_get(r, "contains_hidden_groups"));
    au_sb_part(&ev, "rule `%s` (%s): approvals_required = %lld, %zu eligible approver(s)%s%s%s",
               name, type, req, humans, any ? " (any member with Developer or more)" : "",
               groups || hidden ? ", approver groups" : "", bot ? ", the bot among them" : "");
    if (bot && req >= 1) {
      fail_bot = true;
      continue;
    }
    if (req >= 1 && (any || humans > 0 || groups > 0 || hidden))
      pass = true;
  }
  if (!n_applies)
    au_sb_part(&ev, "no approval rule applies to merge requests into %s", c->rep->branch);
  gl_set(c, AL_GL_APPROVALS, fail_bot ? AL_AUDIT_FAIL : verdict(pass, false), &ev,
         fail_bot ? "remove the bot from the approval rule's eligible approvers (Settings › "
                    "Merge requests › Merge request approvals)"
                  : "Settings › Merge requests › Merge request approvals: add a rule for the "
                    "branch with Approvals required >= 1 and human approvers");
}

/* A boolean of the project's approval settings: PASS when it is want. */
static void judge_setting(struct glx *c, al_audit_gl_id id, const char *key, bool want,
                          const char *fix)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_APPROVALS;
  json_t *v = json_object_get(c->approvals.json, key);
  if (c->approvals.st != L_PRESENT || !json_is_boolean(v)) {
    au_sb_part(&ev, "approval settings: %s not visible (%s)%s", key,
               c->approvals.st == L_UNKNOWN ? c->approvals.why : "absent from the answer",
               tier_note);
    gl_set(c, id, AL_AUDIT_UNKNOWN, &ev,
           "merge request approval settings need GitLab Premium and a Maintainer's read token");
    return;
  }
  au_sb_part(&ev, "GET /approvals: %s = %s", key, json_is_true(v) ? "true" : "false");
  gl_set(c, id, verdict(json_is_true(v) == want, false), &ev, fix);
}

/* ---- push rule, the bot -------------------------------------------------- */

static void judge_push_rule(struct glx *c)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_PUSH_RULE;
  static const char *fix = "Settings › Repository › Push rules: Branch name, e.g. "
                           "`^(main|airlock/.*)$` (it applies to everyone who pushes)";
  if (c->push_rule.st == L_UNKNOWN) {
    au_sb_part(&ev, "push rule: not visible (%s)%s", c->push_rule.why, tier_note);
    gl_set(c, AL_GL_PUSH_RULE, AL_AUDIT_UNKNOWN, &ev,
           "push rules need GitLab Premium (and a Maintainer's token to read them)");
    return;
  }
  const char *re = json_string_value(json_object_get(c->push_rule.json, "branch_name_regex"));
  if (c->push_rule.st == L_ABSENT || !re || !*re) {
    au_sb_part(&ev, "%s",
               c->push_rule.st == L_ABSENT ? "no push rule on the project"
                                           : "the push rule has no branch_name_regex");
    gl_set(c, AL_GL_PUSH_RULE, AL_AUDIT_WARN, &ev, fix);
    return;
  }
  al_autofree char *slashed = al_strdup_printf("/%s/", re);
  int run = al_glci_regex_match(slashed, c->run_branch);
  int other = al_glci_regex_match(slashed, "not-airlock-7");
  au_sb_part(&ev, "branch_name_regex `%s`: %s %s, %s a name outside the prefix", re,
             run == AL_GLCI_YES  ? "admits"
             : run == AL_GLCI_NO ? "refuses"
                                 : "may admit",
             c->run_branch,
             other == AL_GLCI_NO    ? "refuses"
             : other == AL_GLCI_YES ? "admits"
                                    : "may admit");
  bool pass = run == AL_GLCI_YES && other == AL_GLCI_NO;
  gl_set(c, AL_GL_PUSH_RULE, pass ? AL_AUDIT_PASS : AL_AUDIT_WARN, &ev,
         run == AL_GLCI_NO ? "the push rule refuses the run branches: let `^airlock/` through"
                           : fix);
}

static void judge_bot(struct glx *c)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_GL_MEMBERS;
  au_sb_part(&ev, "the run's bot is a project access token the broker mints per run at "
                  "Developer (access_level 30, checked on GitLab's answer)");
  if (c->o->app_id <= 0) {
    au_sb_part(&ev, "no standing bot user named (--bot-id)");
    gl_set(c, AL_GL_BOT, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  if (c->member.st == L_UNKNOWN) {
    au_sb_part(&ev, "user %lld: membership not visible (%s)", c->o->app_id, c->member.why);
    gl_set(c, AL_GL_BOT, AL_AUDIT_UNKNOWN, &ev,
           "audit with a read token of a member of the project (read_api)");
    return;
  }
  if (c->member.st == L_ABSENT) {
    au_sb_part(&ev, "user %lld is not a member of the project (404)", c->o->app_id);
    gl_set(c, AL_GL_BOT, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  long long lvl = json_integer_value(json_object_get(c->member.json, "access_level"));
  au_sb_part(&ev, "user %lld (%s): access_level %lld", c->o->app_id,
             au_str_or(json_string_value(json_object_get(c->member.json, "username")), "?"), lvl);
  gl_set(c, AL_GL_BOT, lvl >= 40 ? AL_AUDIT_FAIL : AL_AUDIT_PASS, &ev,
         "Manage › Members: give the bot the Developer role (30), never Maintainer (40) or "
         "Owner (50), on the project and on its groups");
}

void gl_judge_all(struct glx *c)
{
  json_t *m = matching(c, c->rep->branch);
  judge_protected(c, m);
  judge_levels(c, m, AL_GL_PUSH, "push_access_levels", "push",
               "Settings › Repository › Protected branches: \"Allowed to push and merge\" No one "
               "(or Maintainers), and no user entry for the bot");
  judge_levels(c, m, AL_GL_MERGE, "merge_access_levels", "merge",
               "Settings › Repository › Protected branches: \"Allowed to merge\" Maintainers, and "
               "no user entry for the bot");
  judge_force(c, m);
  judge_code_owners(c, m);
  judge_approvals(c, json_array_size(m) > 0);
  judge_setting(c, AL_GL_AUTHOR, "merge_requests_author_approval", false,
                "Settings › Merge requests › Approval settings: turn on \"Prevent approval by "
                "merge request creator\" (merge_requests_author_approval false)");
  judge_setting(c, AL_GL_RESET, "reset_approvals_on_push", true,
                "Settings › Merge requests › Approval settings: \"When a commit is added\" › "
                "\"Remove all approvals\" (reset_approvals_on_push true)");
  judge_setting(c, AL_GL_OVERRIDE, "disable_overriding_approvers_per_merge_request", true,
                "Settings › Merge requests › Approval settings: turn on \"Prevent editing "
                "approval rules in merge requests\" "
                "(disable_overriding_approvers_per_merge_request true)");
  judge_push_rule(c);
  judge_bot(c);
  json_decref(m);
  gl_judge_ci(c);
}
