/* `airlock audit`, the verdicts: each criterion judged from what
 * audit_gather.c read, classic protection and rulesets together (the
 * stricter wins, as GitHub enforces every layer), UNKNOWN where the token
 * could not see (never a pass). docs/audit.md says what each one means. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "forge/appconfig.h"
#include "forge/app.h"
#include "forge/jwt.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
#include "forge/audit_internal.h"
#include "forge/codeowners.h"
#include "forge/ghapi.h"

/* ---- judging: protection ---------------------------------------------- */

static bool enabled(json_t *o, const char *k)
{
  return json_is_true(json_object_get(json_object_get(o, k), "enabled"));
}

static json_t *classic_rpr(struct ctx *c)
{
  json_t *v = json_object_get(c->classic_json, "required_pull_request_reviews");
  return json_is_object(v) ? v : NULL;
}

static void classic_note(struct ctx *c, struct sb *ev)
{
  if (c->classic == L_ABSENT)
    au_sb_part(ev, "classic protection: none (404 Branch not protected)");
  else if (c->classic == L_UNKNOWN)
    au_sb_part(ev, "classic protection: not visible to the token (%s)", c->classic_why);
}

static const char *fix_unknown_classic =
    "give the audit a token that can read branch protection (Administration: read): "
    "AIRLOCK_AUDIT_TOKEN with a fine-grained token of a repository admin, or grant the App "
    "`administration: read`";

static al_audit_status verdict(bool pass, bool unknown)
{
  return pass ? AL_AUDIT_PASS : unknown ? AL_AUDIT_UNKNOWN : AL_AUDIT_FAIL;
}

static void judge_protected(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  bool pass = c->classic == L_PRESENT;
  if (pass)
    au_sb_part(&ev, "classic protection: present");
  classic_note(c, &ev);
  size_t nr = json_array_size(c->rules);
  if (c->rules_known)
    au_sb_part(&ev, "rulesets: %zu active rule(s) for the branch", nr);
  else
    au_sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  pass = pass || nr > 0;
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  au_set(c, AL_AC_PROTECTED, verdict(pass, unknown), &ev,
         unknown ? fix_unknown_classic
                 : "protect the branch: Settings › Rules › Rulesets (or Branches › Branch "
                   "protection rules), requiring a pull request with approvals");
}

/* A boolean review setting, classic key `ckey`, ruleset pull_request
 * parameter `rkey`. */
static void judge_review_flag(struct ctx *c, al_audit_id id, const char *ckey, const char *rkey,
                              const char *fix)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  bool pass = false;
  if (c->classic == L_PRESENT) {
    json_t *rpr = classic_rpr(c);
    if (!rpr) {
      au_sb_part(&ev, "classic protection: pull request reviews not required");
    } else {
      bool v = json_is_true(json_object_get(rpr, ckey));
      au_sb_part(&ev, "classic protection: %s = %s", ckey, v ? "true" : "false");
      pass = pass || v;
    }
  }
  classic_note(c, &ev);
  if (c->rules_known) {
    size_t i, n = 0;
    json_t *rule;
    json_array_foreach(c->rules, i, rule)
    {
      if (!json_is_string(json_object_get(rule, "type")) ||
          strcmp(json_string_value(json_object_get(rule, "type")), "pull_request") != 0)
        continue;
      bool v = json_is_true(json_object_get(json_object_get(rule, "parameters"), rkey));
      au_sb_part(&ev, "ruleset %lld: %s = %s",
                 (long long)json_integer_value(json_object_get(rule, "ruleset_id")), rkey,
                 v ? "true" : "false");
      pass = pass || v;
      n++;
    }
    if (n == 0)
      au_sb_part(&ev, "rulesets: no pull_request rule");
  } else {
    au_sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  }
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  au_set(c, id, verdict(pass, unknown), &ev, unknown && !pass ? fix_unknown_classic : fix);
}

static void judge_approvals(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  long long best = -1;
  if (c->classic == L_PRESENT) {
    json_t *rpr = classic_rpr(c);
    if (!rpr) {
      au_sb_part(&ev, "classic protection: pull request reviews not required");
    } else {
      long long n = json_integer_value(json_object_get(rpr, "required_approving_review_count"));
      au_sb_part(&ev, "classic protection: required_approving_review_count = %lld", n);
      if (n > best)
        best = n;
    }
  }
  classic_note(c, &ev);
  if (c->rules_known) {
    size_t i, k = 0;
    json_t *rule;
    json_array_foreach(c->rules, i, rule)
    {
      if (!json_is_string(json_object_get(rule, "type")) ||
          strcmp(json_string_value(json_object_get(rule, "type")), "pull_request") != 0)
        continue;
      long long n = json_integer_value(
          json_object_get(json_object_get(rule, "parameters"), "required_approving_review_count"));
      au_sb_part(&ev, "ruleset %lld: pull_request, required_approving_review_count = %lld",
                 (long long)json_integer_value(json_object_get(rule, "ruleset_id")), n);
      if (n > best)
        best = n;
      k++;
    }
    if (k == 0)
      au_sb_part(&ev, "rulesets: no pull_request rule");
  } else {
    au_sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  }
  bool pass = best >= 1;
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  au_set(c, AL_AC_APPROVALS, verdict(pass, unknown), &ev,
         unknown && !pass ? fix_unknown_classic
                          : "require a pull request before merging with at least 1 required "
                            "approval (classic: required_approving_review_count >= 1; ruleset: a "
                            "pull_request rule with required_approving_review_count >= 1)");
}

/* Force push / deletion: classic allow_* false, or a ruleset rule of
 * `rtype` (non_fast_forward / deletion). */
static void judge_push_rule(struct ctx *c, al_audit_id id, const char *ckey, const char *rtype,
                            const char *fix)
{
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES;
  struct sb ev = {0};
  bool pass = false;
  if (c->classic == L_PRESENT) {
    bool allowed = enabled(c->classic_json, ckey);
    au_sb_part(&ev, "classic protection: %s = %s", ckey, allowed ? "true" : "false");
    pass = !allowed;
  }
  classic_note(c, &ev);
  if (c->rules_known) {
    size_t i;
    json_t *rule;
    bool found = false;
    json_array_foreach(c->rules, i, rule)
    {
      const char *t = json_string_value(json_object_get(rule, "type"));
      if (t && strcmp(t, rtype) == 0) {
        au_sb_part(&ev, "ruleset %lld: %s rule",
                   (long long)json_integer_value(json_object_get(rule, "ruleset_id")), rtype);
        found = true;
      }
    }
    if (!found)
      au_sb_part(&ev, "rulesets: no %s rule", rtype);
    pass = pass || found;
  } else {
    au_sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  }
  bool unknown = c->classic == L_UNKNOWN || !c->rules_known;
  au_set(c, id, verdict(pass, unknown), &ev, unknown && !pass ? fix_unknown_classic : fix);
}

/* The detail of a ruleset, or NULL with *why. */
static json_t *rs_get(struct ctx *c, json_t *id, const char **why)
{
  char k[32];
  au_rs_key(k, sizeof k, id);
  json_t *d = json_object_get(c->rs_detail, k);
  if (json_is_object(d))
    return d;
  *why = json_is_string(d) ? json_string_value(d) : "not fetched";
  return NULL;
}

static bool is_admin_actor(const char *type)
{
  return type && (strcmp(type, "OrganizationAdmin") == 0 || strcmp(type, "RepositoryRole") == 0 ||
                  strcmp(type, "EnterpriseOwner") == 0);
}

/* What the bot's own current_user_can_bypass says for ruleset k, or NULL
 * with *why. */
static const char *bot_says(struct ctx *c, const char *k, const char **why)
{
  json_t *v = json_object_get(c->bot_view, k);
  if (json_is_string(v))
    return json_string_value(v);
  *why = !c->bot_known ? c->bot_why
         : v           ? au_str_or(json_string_value(json_object_get(v, "why")), "?")
                       : "not asked";
  return NULL;
}

/* The permission that would reveal a ruleset's bypass_actors. */
static const char *actors_permission(json_t *d)
{
  const char *st = json_string_value(json_object_get(d, "source_type"));
  return st && !strcmp(st, "Organization")
             ? "the organisation's Administration: write (organisation rulesets)"
             : "Administration: write on the repository";
}

/* Classic enforce_admins; or a ruleset with a pull_request rule whose
 * bypass list has no administrator role ("About rulesets": rulesets bind
 * everyone not on their bypass list). GitHub shows a ruleset's bypass list
 * only to a caller who can edit it; when it is hidden from every credential
 * the audit has, whether human administrators may bypass cannot be read:
 * that is a WARN naming the permission that would show it: it is about
 * humans (an administrator merging is still a human decision), and the
 * bot's own bypass is judged by bot.no_bypass from its own
 * current_user_can_bypass, which GitHub does not hide. */
static void judge_admins(struct ctx *c)
{
  struct sb ev = {0};
  bool pass = false, warn = false, unknown = c->classic == L_UNKNOWN || !c->rules_known;
  const char *hidden_perm = NULL;
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES | AL_AUDIT_FROM_RULESETS;
  if (c->classic == L_PRESENT) {
    bool v = enabled(c->classic_json, "enforce_admins");
    au_sb_part(&ev, "classic protection: enforce_admins = %s", v ? "true" : "false");
    pass = v;
  }
  classic_note(c, &ev);
  if (!c->rules_known)
    au_sb_part(&ev, "rulesets: not visible (%s)", c->rules_why);
  size_t i, j;
  json_t *rule, *a;
  json_t *seen = json_object();
  json_array_foreach(c->rules, i, rule)
  {
    const char *t = json_string_value(json_object_get(rule, "type"));
    json_t *rid = json_object_get(rule, "ruleset_id");
    char k[32];
    au_rs_key(k, sizeof k, rid);
    if (!t || strcmp(t, "pull_request") != 0 || json_object_get(seen, k))
      continue;
    json_object_set_new(seen, k, json_true());
    const char *why = NULL;
    json_t *d = rs_get(c, rid, &why);
    json_t *ba = json_object_get(d, "bypass_actors");
    if (d && !json_is_array(ba)) {
      const char *bw = NULL;
      const char *bot = bot_says(c, k, &bw);
      if (bot)
        c->from |= AL_AUDIT_FROM_AS_APP;
      au_sb_part(&ev,
                 "ruleset %s: pull_request rule; its bypass list is hidden from the audit's "
                 "credential (shown only with %s), so whether administrators may bypass it cannot "
                 "be read (the App's own answer, for bot.no_bypass: %s)",
                 k, actors_permission(d), bot ? bot : bw);
      hidden_perm = actors_permission(d);
      warn = true;
      pass = true;
      continue;
    }
    if (!d) {
      au_sb_part(&ev, "ruleset %s: not visible (%s)", k, why);
      unknown = true;
      continue;
    }
    const char *admin = NULL;
    json_array_foreach(ba, j, a)
    {
      const char *at = json_string_value(json_object_get(a, "actor_type"));
      if (is_admin_actor(at))
        admin = at;
    }
    if (admin) {
      au_sb_part(&ev, "ruleset %s: administrators may bypass (%s)", k, admin);
    } else {
      au_sb_part(&ev, "ruleset %s: pull_request rule, no administrator on its bypass list", k);
      pass = true;
      warn = false;
    }
  }
  json_decref(seen);
  al_autofree char *fix_hidden =
      hidden_perm
          ? al_strdup_printf("to check the administrators too, audit with a credential "
                             "holding %s (AIRLOCK_AUDIT_TOKEN or the broker's audit.token_file)",
                             hidden_perm)
          : NULL;
  au_set(c, AL_AC_ADMINS, pass && warn && !unknown ? AL_AUDIT_WARN : verdict(pass, unknown), &ev,
         unknown && !pass     ? fix_unknown_classic
         : fix_hidden && warn ? fix_hidden
                              : "classic: turn on \"Do not allow bypassing the above settings\" "
                                "(enforce_admins); ruleset: remove administrator roles from the "
                                "bypass list");
}

/* Is this {slug,id} / user object the bot? */
static bool is_bot_obj(struct ctx *c, json_t *o)
{
  const char *slug = json_string_value(json_object_get(o, "slug"));
  const char *login = json_string_value(json_object_get(o, "login"));
  json_t *id = json_object_get(o, "id");
  if (c->rep->app_slug[0]) {
    if (slug && strcasecmp(slug, c->rep->app_slug) == 0)
      return true;
    char bl[160];
    snprintf(bl, sizeof bl, "%s[bot]", c->rep->app_slug);
    if (login && strcasecmp(login, bl) == 0)
      return true;
  }
  return slug && c->rep->app_id > 0 && json_integer_value(id) == c->rep->app_id;
}

static bool list_has_bot(struct ctx *c, json_t *arr)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    if (is_bot_obj(c, v))
      return true;
  }
  return false;
}

/* bot.no_bypass: the App is on no bypass list that matters — classic
 * bypass_pull_request_allowances of the branch, and every ruleset with
 * rules on the branch (the effective rules, organisation rulesets
 * included). A visible bypass list is read for an Integration entry with
 * the App's id; the bot's own current_user_can_bypass (asked as the App)
 * is read for every ruleset, and anything but "never" (always,
 * pull_requests_only: it may merge its own pull request past the rules,
 * exempt: the rules do not apply to it) is a FAIL. UNKNOWN only when the
 * bypass list is hidden and the App's own answer could not be asked.
 * Rulesets that do not touch the branch (other branches', tag rulesets:
 * see tags.protected) are not this criterion. */
static void judge_bypass(struct ctx *c)
{
  struct sb ev = {0};
  bool fail = false, unknown = false;
  c->from = AL_AUDIT_FROM_CLASSIC | AL_AUDIT_FROM_RULES | AL_AUDIT_FROM_RULESETS;
  if (!c->rep->app_slug[0] && c->rep->app_id <= 0) {
    au_sb_part(&ev, "the App is not known (no broker config, no --app)");
    unknown = true;
  }
  if (c->classic == L_PRESENT) {
    json_t *bpa = json_object_get(classic_rpr(c), "bypass_pull_request_allowances");
    if (list_has_bot(c, json_object_get(bpa, "apps")) ||
        list_has_bot(c, json_object_get(bpa, "users"))) {
      au_sb_part(&ev, "classic protection: bypass_pull_request_allowances lists the App");
      fail = true;
    } else {
      au_sb_part(&ev, "classic protection: the App is not in bypass_pull_request_allowances");
    }
  } else {
    classic_note(c, &ev);
    unknown = unknown || c->classic == L_UNKNOWN;
  }
  if (!c->rules_known) {
    au_sb_part(&ev, "rules for the branch: not visible (%s)", c->rules_why);
    unknown = true;
  }
  json_t *ids = au_branch_ruleset_ids(c);
  json_t *v;
  const char *k;
  size_t n_checked = 0;
  json_object_foreach(ids, k, v)
  {
    json_t *d = json_object_get(c->rs_detail, k);
    const char *name = json_is_object(d) ? json_string_value(json_object_get(d, "name")) : NULL;
    const char *src =
        json_is_object(d) ? json_string_value(json_object_get(d, "source_type")) : NULL;
    n_checked++;
    bool listed = false;
    json_t *ba = json_object_get(d, "bypass_actors");
    if (json_is_array(ba)) {
      size_t j;
      json_t *a;
      json_array_foreach(ba, j, a)
      {
        const char *at = json_string_value(json_object_get(a, "actor_type"));
        if (!at || strcmp(at, "Integration") != 0)
          continue;
        long long aid = json_integer_value(json_object_get(a, "actor_id"));
        if (c->rep->app_id <= 0) {
          au_sb_part(&ev,
                     "ruleset %s: an App (id %lld) may bypass; the audited App's id is unknown", k,
                     aid);
          unknown = true;
        } else if (aid == c->rep->app_id) {
          const char *mode = json_string_value(json_object_get(a, "bypass_mode"));
          au_sb_part(&ev, "ruleset %s (%s): bypass_actors lists the App (Integration %lld, %s)", k,
                     au_str_or(name, "?"), aid, mode ? mode : "?");
          listed = fail = true;
        }
      }
    }
    const char *bw = NULL;
    const char *bot = bot_says(c, k, &bw);
    if (bot) {
      c->from |= AL_AUDIT_FROM_AS_APP;
      if (strcmp(bot, "never") != 0) {
        if (!listed)
          au_sb_part(&ev, "ruleset %s (%s%s%s): current_user_can_bypass = %s, asked as the App", k,
                     au_str_or(name, "?"), src ? ", " : "", src ? src : "", bot);
        fail = true;
      } else if (!listed) {
        au_sb_part(&ev, "ruleset %s (%s%s%s): current_user_can_bypass = never, asked as the App%s",
                   k, au_str_or(name, "?"), src ? ", " : "", src ? src : "",
                   json_is_array(ba) ? ""
                                     : " (its bypass list is hidden from the audit's credential)");
      }
    } else if (!json_is_array(ba) && !listed) {
      au_sb_part(&ev,
                 "ruleset %s: the bypass list is hidden (shown only with %s) and the App's own "
                 "answer is unknown (%s)",
                 k, json_is_object(d) ? actors_permission(d) : "write access to the ruleset",
                 bw ? bw : "?");
      unknown = true;
    }
  }
  json_decref(ids);
  if (!fail && !unknown)
    au_sb_part(&ev, "%zu ruleset(s) with rules on the branch: the App can bypass none", n_checked);
  au_set(c, AL_AC_BYPASS,
         fail      ? AL_AUDIT_FAIL
         : unknown ? AL_AUDIT_UNKNOWN
                   : AL_AUDIT_PASS,
         &ev,
         fail ? "remove the App from bypass_pull_request_allowances (classic: \"Allow specified "
                "actors to bypass required pull requests\") and from every ruleset's bypass list "
                "(organisation rulesets included)"
              : "give the audit the broker config (--config) so it can ask current_user_can_bypass "
                "as the App, or a credential that sees the bypass lists (Administration: write)");
}

static void judge_codeowner(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CODEOWNERS;
  struct sb ev = {0};
  if (!c->rep->app_slug[0]) {
    au_sb_part(&ev, "the App's slug is not known (no broker config, no --app)");
    au_set(c, AL_AC_CODEOWNER, AL_AUDIT_UNKNOWN, &ev, "run the audit with --config or --app SLUG");
    return;
  }
  if (c->co == L_UNKNOWN) {
    au_sb_part(&ev, "%s on %s: not visible (%s)", c->co_path, c->rep->branch, c->co_why);
    au_set(c, AL_AC_CODEOWNER, AL_AUDIT_UNKNOWN, &ev,
           "give the audit a token with Contents: read on the repository");
    return;
  }
  if (c->co == L_ABSENT) {
    au_sb_part(&ev, "no CODEOWNERS file in .github/, the root or docs/ of %s", c->rep->branch);
    au_set(c, AL_AC_CODEOWNER, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  char n1[160], n2[160];
  snprintf(n1, sizeof n1, "@%s[bot]", c->rep->app_slug);
  snprintf(n2, sizeof n2, "@%s", c->rep->app_slug);
  const char *names[] = {n1, n2};
  unsigned lines[8];
  size_t n = al_codeowners_lines_owned_by(c->co_text, c->co_len, names, 2, lines, 8);
  if (n == 0) {
    au_sb_part(&ev, "%s on %s (the file GitHub uses) does not name %s", c->co_path, c->rep->branch,
               n1);
    au_set(c, AL_AC_CODEOWNER, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  au_sb_add(&ev, "%s on %s names %s as an owner on line", c->co_path, c->rep->branch, n1);
  for (size_t i = 0; i < n && i < 8; i++)
    au_sb_add(&ev, "%s %u", i ? "," : "", lines[i]);
  au_set(c, AL_AC_CODEOWNER, AL_AUDIT_FAIL, &ev,
         "remove the App from CODEOWNERS: a code owner's approval satisfies code-owner review");
}

static void judge_push_allow(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_CLASSIC;
  struct sb ev = {0};
  if (c->classic == L_UNKNOWN) {
    classic_note(c, &ev);
    au_set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_UNKNOWN, &ev, fix_unknown_classic);
    return;
  }
  json_t *restr = json_object_get(c->classic_json, "restrictions");
  if (c->classic == L_ABSENT || !json_is_object(restr)) {
    au_sb_part(&ev, "classic protection: no push restrictions (restrictions = null)");
    if (c->classic == L_ABSENT)
      classic_note(c, &ev);
    au_set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_PASS, &ev, NULL);
    return;
  }
  if (list_has_bot(c, json_object_get(restr, "apps")) ||
      list_has_bot(c, json_object_get(restr, "users"))) {
    au_sb_part(&ev, "classic protection: restrictions lets the App push to %s", c->rep->branch);
    au_set(
        c, AL_AC_PUSH_ALLOW, AL_AUDIT_FAIL, &ev,
        "remove the App from \"Restrict who can push to matching branches\" (restrictions.apps)");
    return;
  }
  au_sb_part(&ev, "classic protection: restrictions do not list the App");
  au_set(c, AL_AC_PUSH_ALLOW, AL_AUDIT_PASS, &ev, NULL);
}

/* ---- judging: the App ------------------------------------------------- */

static const char *const dangerous[] = {"administration", "workflows", "actions", "secrets"};

static bool is_dangerous(const char *name)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(dangerous); i++)
    if (strcmp(name, dangerous[i]) == 0)
      return true;
  return false;
}

/* The installation's permissions (Apps › "Get a repository installation for
 * the authenticated app", field `permissions`). administration: read is a
 * WARN: it cannot change protection or merge, and it is what the App needs
 * to audit itself; write is a FAIL, as is any level of workflows, actions
 * or secrets. */
static void judge_app_perms(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_APP;
  struct sb ev = {0};
  if (!c->inst_known) {
    au_sb_part(&ev, "the installation's permissions need the App's JWT (no broker config given)");
    au_set(c, AL_AC_APP_PERMS, AL_AUDIT_UNKNOWN, &ev,
           "run the audit with --config BROKER.yaml so it can read the installation");
    return;
  }
  bool fail = false, warn = false;
  for (size_t i = 0; i < AL_ARRAY_SIZE(dangerous); i++) {
    const char *lvl = au_perm_level(c->inst_perms, dangerous[i]);
    if (!lvl)
      continue;
    if (strcmp(dangerous[i], "administration") == 0 && strcmp(lvl, "read") == 0) {
      au_sb_part(&ev,
                 "installation %lld holds administration: read (can read, not change, "
                 "protection)",
                 c->rep->installation_id);
      warn = true;
    } else {
      au_sb_part(&ev, "installation %lld holds %s: %s", c->rep->installation_id, dangerous[i], lvl);
      fail = true;
    }
  }
  if (!fail && !warn)
    au_sb_part(&ev, "installation %lld holds none of administration, workflows, actions, secrets",
               c->rep->installation_id);
  au_set(c, AL_AC_APP_PERMS,
         fail   ? AL_AUDIT_FAIL
         : warn ? AL_AUDIT_WARN
                : AL_AUDIT_PASS,
         &ev,
         fail ? "remove these permissions from the App (Settings › Developer settings › GitHub "
                "Apps › Permissions) and accept the change on the installation"
              : "audit with a separate read-only credential (AIRLOCK_AUDIT_TOKEN, or the "
                "broker's audit: {token_file | app}) and drop administration: read from the App");
}

/* The two roles' maximum: what DESIGN.md §2 gives a run. */
static bool role_perm_allowed(al_role role, const al_perm *p)
{
  if (strcmp(p->name, "metadata") == 0 && !p->write)
    return true;
  if (role == AL_ROLE_GIT)
    return strcmp(p->name, "contents") == 0 || strcmp(p->name, "pull_requests") == 0;
  return strcmp(p->name, "issues") == 0;
}

static void judge_app_scope(struct ctx *c)
{
  c->from = AL_AUDIT_FROM_BROKER | AL_AUDIT_FROM_APP;
  struct sb ev = {0};
  if (!c->cfg) {
    au_sb_part(&ev, "the broker's roles are unknown (no broker config given)");
    au_set(c, AL_AC_APP_SCOPE, AL_AUDIT_UNKNOWN, &ev,
           "run the audit with --config BROKER.yaml (the broker that serves the runs)");
    return;
  }
  bool fail = false, warn = false;
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    char buf[512];
    al_perm_set_format(&c->cfg->roles[r], buf, sizeof buf);
    au_sb_part(&ev, "role %s: %s", al_role_name((al_role)r), buf[0] ? buf : "(none)");
    for (size_t i = 0; i < c->cfg->roles[r].n; i++)
      if (!role_perm_allowed((al_role)r, &c->cfg->roles[r].items[i])) {
        au_sb_add(&ev, " (`%s` is more than the role needs)", c->cfg->roles[r].items[i].name);
        fail = true;
      }
  }
  if (c->inst_known) {
    const char *k;
    json_t *v;
    json_object_foreach(c->inst_perms, k, v)
    {
      if (is_dangerous(k) || strcmp(k, "metadata") == 0)
        continue; /* judged by app.no_dangerous_permissions / always granted */
      bool used = false;
      for (int r = 0; r < AL_ROLE_COUNT; r++)
        used = used || al_perm_find(&c->cfg->roles[r], k) != NULL;
      if (!used) {
        au_sb_part(&ev, "installation holds %s: %s, which no role uses", k,
                   au_str_or(json_string_value(v), "?"));
        warn = true;
      }
    }
  }
  au_set(c, AL_AC_APP_SCOPE,
         fail   ? AL_AUDIT_FAIL
         : warn ? AL_AUDIT_WARN
                : AL_AUDIT_PASS,
         &ev,
         fail ? "limit the broker's roles to git: {contents: write, pull_requests: write} and "
                "ticket: {issues: write}"
              : "remove the unused permissions from the App");
}

/* tags.protected (advisory): an active tag ruleset that restricts
 * creation, update AND deletion of tags, and that the App cannot bypass
 * (current_user_can_bypass asked as the App, or its visible bypass list).
 * Anything less is a WARN that says exactly which rules were found. */
static void judge_tags(struct ctx *c)
{
  struct sb ev = {0};
  c->from = AL_AUDIT_FROM_RULESETS;
  if (!c->rs_list_known) {
    au_sb_part(&ev, "rulesets list: not visible (%s)", c->rs_list_why);
    au_set(c, AL_AC_TAGS, AL_AUDIT_UNKNOWN, &ev, "give the audit a token with Metadata: read");
    return;
  }
  bool pass = false;
  size_t i;
  json_t *s;
  json_array_foreach(c->rs_list, i, s)
  {
    const char *t = json_string_value(json_object_get(s, "target"));
    const char *enf = json_string_value(json_object_get(s, "enforcement"));
    if (!t || strcmp(t, "tag") != 0 || !enf || strcmp(enf, "active") != 0)
      continue;
    const char *why = NULL;
    json_t *id = json_object_get(s, "id");
    json_t *d = rs_get(c, id, &why);
    bool cr = false, up = false, del = false;
    size_t j;
    json_t *rule;
    json_array_foreach(json_object_get(d, "rules"), j, rule)
    {
      const char *rt = json_string_value(json_object_get(rule, "type"));
      cr = cr || (rt && !strcmp(rt, "creation"));
      up = up || (rt && !strcmp(rt, "update"));
      del = del || (rt && !strcmp(rt, "deletion"));
    }
    char k[32];
    au_rs_key(k, sizeof k, id);
    const char *bw = NULL;
    const char *bot = bot_says(c, k, &bw);
    if (bot)
      c->from |= AL_AUDIT_FROM_AS_APP;
    bool bot_ok = bot ? !strcmp(bot, "never") : false;
    char rules[128];
    snprintf(rules, sizeof rules, "creation %s, update %s, deletion %s",
             cr ? "restricted" : "NOT restricted", up ? "restricted" : "NOT restricted",
             del ? "restricted" : "NOT restricted");
    json_t *inc =
        json_object_get(json_object_get(json_object_get(d, "conditions"), "ref_name"), "include");
    al_autofree char *pats = inc ? json_dumps(inc, JSON_COMPACT) : al_xstrdup("?");
    if (!d)
      au_sb_part(&ev, "tag ruleset %s (%s): %s", k,
                 au_str_or(json_string_value(json_object_get(s, "name")), "?"), why);
    else
      au_sb_part(&ev, "tag ruleset %s (%s) on %s: %s; the App %s", k,
                 au_str_or(json_string_value(json_object_get(s, "name")), "?"), pats, rules,
                 bot_ok ? "cannot bypass it (current_user_can_bypass = never, asked as the App)"
                 : bot  ? "CAN bypass it (current_user_can_bypass, asked as the App)"
                        : "may or may not bypass it (its own answer is unknown)");
    pass = pass || (d && cr && up && del && bot_ok);
  }
  if (!ev.len)
    au_sb_part(&ev, "no active tag ruleset");
  au_set(c, AL_AC_TAGS, pass ? AL_AUDIT_PASS : AL_AUDIT_WARN, &ev,
         "add a tag ruleset for release tags (e.g. refs/tags/v*) with creation, update and "
         "deletion rules, and keep the App off its bypass list");
}

void au_judge_all(struct ctx *c)
{
  judge_protected(c);
  judge_approvals(c);
  judge_review_flag(c, AL_AC_CODE_OWNERS, "require_code_owner_reviews", "require_code_owner_review",
                    "turn on \"Require review from Code Owners\" (classic "
                    "require_code_owner_reviews; ruleset require_code_owner_review)");
  if (c->rep->c[AL_AC_CODE_OWNERS].status == AL_AUDIT_PASS && c->co == L_ABSENT) {
    al_audit_criterion *k = &c->rep->c[AL_AC_CODE_OWNERS];
    char *e = al_strdup_printf("%s; but no CODEOWNERS file exists, so no owner is requested",
                               k->evidence);
    free(k->evidence);
    k->evidence = e;
    k->status = AL_AUDIT_WARN;
    k->fix = al_xstrdup("add a CODEOWNERS file (.github/CODEOWNERS) naming human reviewers");
  }
  judge_review_flag(c, AL_AC_STALE, "dismiss_stale_reviews", "dismiss_stale_reviews_on_push",
                    "turn on \"Dismiss stale pull request approvals when new commits are "
                    "pushed\" (classic dismiss_stale_reviews; ruleset "
                    "dismiss_stale_reviews_on_push)");
  judge_review_flag(c, AL_AC_LAST_PUSH, "require_last_push_approval", "require_last_push_approval",
                    "turn on \"Require approval of the most recent reviewable push\" "
                    "(require_last_push_approval)");
  judge_push_rule(c, AL_AC_FORCE_PUSH, "allow_force_pushes", "non_fast_forward",
                  "block force pushes (classic: allow_force_pushes off; ruleset: \"Block force "
                  "pushes\", non_fast_forward)");
  judge_push_rule(c, AL_AC_DELETION, "allow_deletions", "deletion",
                  "block deletion (classic: allow_deletions off; ruleset: \"Restrict "
                  "deletions\")");
  judge_admins(c);
  judge_bypass(c);
  judge_codeowner(c);
  judge_push_allow(c);
  judge_app_perms(c);
  judge_app_scope(c);
  au_judge_ci(c);
  judge_tags(c);
}
