/* The policy's schema: the field tables of every mapping of airlock.yaml
 * (docs/policy.md), read by the one YAML walker (common/yamlwalk.h), and
 * the rules a table cannot say (hosts, paths, URLs, permissions) as the
 * fields' check and parse callbacks. The relay's tables are in
 * schema_relay.c, the network's in schema_network.c.
 *
 * Strictness: the walker refuses unknown and duplicate keys, wrong types,
 * out-of-range values, anchors, aliases and tags (AL_YW_STRICT); messages
 * are "FILE:LINE:COL: PATH: rule". */
#include "policy/schema.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "forge/names.h"
#include "policy/sensitive.h"
#include "net/addr.h"
#include "net/host.h"

/* A surprising but valid choice: appended to the policy's warnings (the
 * walk's user pointer) in the same "FILE:LINE:COL: PATH: why" form as an
 * error. */
void al_policy_warn(al_yw *c, struct fy_node *at, const char *path, const char *fmt, ...)
{
  const struct policy_walk *pw = c->user;
  al_policy *p = pw ? pw->p : NULL;
  if (!p)
    return;
  char rule[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rule, sizeof rule, fmt, ap);
  va_end(ap);
  p->warnings = al_xrealloc(p->warnings, (p->n_warnings + 1) * sizeof *p->warnings);
  p->warnings[p->n_warnings++] = al_yw_message(c, at, path, "%s", rule);
}

/* An override in use: a warning, and one of the lines every run prints. */
__attribute__((format(printf, 4, 5))) static void loud(al_yw *c, struct fy_node *at,
                                                       const char *path, const char *fmt, ...)
{
  const struct policy_walk *pw = c->user;
  al_policy *p = pw ? pw->p : NULL;
  if (!p)
    return;
  char rule[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rule, sizeof rule, fmt, ap);
  va_end(ap);
  al_policy_warn(c, at, path, "%s", rule);
  p->loud = al_xrealloc(p->loud, (p->n_loud + 1) * sizeof *p->loud);
  p->loud[p->n_loud++] = al_yw_message(c, at, path, "%s", rule);
}

static int check_abs_path(al_yw *c, const al_yw_kv *kv, const char *s)
{
  if (s[0] != '/')
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` must be an absolute path", s);
  if (strstr(s, "/../") || strstr(s, "/./") || strstr(s, "//") ||
      (strlen(s) >= 3 && strcmp(s + strlen(s) - 3, "/..") == 0) ||
      (strlen(s) >= 2 && strcmp(s + strlen(s) - 2, "/.") == 0))
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` must be normalized (no `.`, `..` or `//`)",
                      s);
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return al_yw_fail(c, al_yw_at(kv), kv->path, "path contains a control character");
  return 0;
}

/* A Docker image reference as `docker run` takes it (distribution's
 * reference grammar, loosely): [A-Za-z0-9._/:@-], at most 255 bytes, not
 * starting with `-` or `.`. Keeps it safe to emit into YAML and JSON. */
static int check_image(al_yw *c, const al_yw_kv *kv, const char *s)
{
  size_t n = strlen(s);
  if (n == 0 || n > 255 || s[0] == '-' || s[0] == '.' || s[0] == '/' || s[0] == ':')
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%.64s` is not an image reference", s);
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          strchr("._/:@-", *p)))
      return al_yw_fail(c, al_yw_at(kv), kv->path,
                        "image reference may only contain letters, digits and `._/:@-`");
  return 0;
}

static bool valid_env_name(const char *s)
{
  if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return false;
  return strlen(s) <= 128;
}

static const char *const grantable[] = {"contents", "pull_requests", "issues", "metadata",
                                        "checks",   "statuses",      NULL};

/* https://HOST[:PORT][/PATH] with an LDH host; no userinfo, query or fragment. */
int al_policy_https_url(al_yw *c, const al_yw_kv *kv, const char *u)
{
  if (strncmp(u, "https://", 8) != 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` must start with https://", u);
  const char *h = u + 8;
  size_t hl = strcspn(h, ":/");
  al_host host;
  const char *why = NULL;
  if (hl == 0 || al_host_canonicalize(h, hl, &host, &why) < 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: not a valid host%s%s", u, why ? ": " : "",
                      why ? why : "");
  char amb[400];
  if (al_policy_ambiguous_ipv4(h, hl, &host, amb, sizeof amb))
    return al_yw_fail(c, al_yw_at(kv), kv->path, "%s", amb);
  const char *rest = h + hl;
  if (*rest == ':') {
    size_t pl = strcspn(rest + 1, "/");
    uint16_t port;
    if (al_port_parse(rest + 1, pl, &port, &why) < 0)
      return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s`: bad port: %s", u, why);
    rest += 1 + pl;
  }
  for (const char *q = rest; *q; q++)
    if (*q == '?' || *q == '#' || *q == '@' || (unsigned char)*q <= 0x20 ||
        (unsigned char)*q >= 0x7f)
      return al_yw_fail(c, al_yw_at(kv), kv->path,
                        "`%s`: only https://HOST[:PORT][/PATH] is allowed", u);
  return 0;
}

/* ---- filesystem ---- */

static int fs_root(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy_filesystem *fs = obj;
  al_autofree char *s = NULL;
  if (al_yw_str(c, kv, &s) < 0)
    return -1;
  if (strcmp(s, "host") == 0)
    return 0;
  if (check_abs_path(c, kv, s) < 0)
    return -1;
  if (strcmp(s, "/") == 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "the host's / is not a rootfs (use `host`)");
  free(fs->root);
  fs->root = al_steal_ptr(&s);
  return 0;
}

static int ro_path_reserved(al_yw *c, const al_yw_kv *kv, const char *s)
{
  if (check_abs_path(c, kv, s) < 0)
    return -1;
  static const char *const reserved[] = {"/", "/proc", "/dev", "/workspace", "/tmp", "/sys", NULL};
  for (size_t i = 0; reserved[i]; i++)
    if (strcmp(s, reserved[i]) == 0)
      return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` is managed by airlock and cannot be bound",
                        s);
  return 0;
}

/* ro_paths: the sensitive trees are refused here (sensitive.h). */
static int ro_path_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_policy_filesystem *fs = obj;
  const char *s = LAST(fs->ro_paths, fs->n_ro_paths);
  if (ro_path_reserved(c, kv, s) < 0)
    return -1;
  char why[PATH_MAX + 256];
  if (al_policy_ro_path_sensitive(s, why, sizeof why))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "%s; the sandbox must not see it. If it truly must be bound, move it to "
                      "filesystem.sensitive_ro_paths (warned on every run)",
                      why);
  return 0;
}

/* sensitive_ro_paths: the override, loud. */
static int sensitive_ro_path_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_policy_filesystem *fs = obj;
  const char *s = LAST(fs->sensitive_ro_paths, fs->n_sensitive_ro_paths);
  if (ro_path_reserved(c, kv, s) < 0)
    return -1;
  char why[PATH_MAX + 256];
  if (!al_policy_ro_path_sensitive(s, why, sizeof why))
    snprintf(why, sizeof why, "`%s` is not in the sensitive table (it could be in ro_paths)", s);
  loud(c, al_yw_at(kv), kv->path,
       "OVERRIDE: `%s` is bound read-only into the sandbox though it is sensitive: %s", s, why);
  return 0;
}

static int image_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  return check_image(c, kv, ((const al_policy_filesystem *)obj)->image);
}

const al_yw_field al_policy_str_item = {.type = AL_YW_STR};

static const al_yw_field fs_fields[] = {
    {.key = "root", .type = AL_YW_CUSTOM, .parse = fs_root},
    {.key = "workspace_size",
     .type = AL_YW_SIZE,
     .off = F(al_policy_filesystem, workspace_size),
     .min = 1024 * 1024},
    {.key = "tmp_size",
     .type = AL_YW_SIZE,
     .off = F(al_policy_filesystem, tmp_size),
     .min = 1024 * 1024},
    {.key = "ro_paths",
     .type = AL_YW_LIST,
     .off = F(al_policy_filesystem, ro_paths),
     .off_n = F(al_policy_filesystem, n_ro_paths),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = ro_path_check},
    {.key = "sensitive_ro_paths",
     .type = AL_YW_LIST,
     .off = F(al_policy_filesystem, sensitive_ro_paths),
     .off_n = F(al_policy_filesystem, n_sensitive_ro_paths),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = sensitive_ro_path_check},
    {.key = "image",
     .type = AL_YW_STR,
     .off = F(al_policy_filesystem, image),
     .check = image_check},
};
static const al_yw_map fs_map = {fs_fields, AL_ARRAY_SIZE(fs_fields), NULL};

/* ---- process ---- */

/* process.limits.cpu: cores as a decimal, e.g. 2 or 0.5. */
static int cpu_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy_limits *l = obj;
  al_autofree char *s = NULL;
  if (al_yw_str(c, kv, &s) < 0)
    return -1;
  char *end = NULL;
  errno = 0;
  double d = strtod(s, &end);
  if (errno || !end || *end || !isdigit((unsigned char)s[0]) || d < 0.01 || d > 1024)
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "cpu is a number of cores between 0.01 and 1024, got `%s`", s);
  l->cpu_milli = (uint32_t)(d * 1000.0 + 0.5);
  return 0;
}

static const al_yw_field limits_fields[] = {
    {.key = "memory",
     .type = AL_YW_SIZE,
     .off = F(al_policy_limits, memory),
     .min = 16 * 1024 * 1024},
    {.key = "pids",
     .type = AL_YW_UINT,
     .off = F(al_policy_limits, pids),
     .width = 4,
     .min = 8,
     .max = 1000000},
    {.key = "cpu", .type = AL_YW_CUSTOM, .parse = cpu_parse},
    {.key = "wall",
     .type = AL_YW_DURATION,
     .off = F(al_policy_limits, wall_ms),
     .min = 1000,
     .max = 7 * 86400000ull},
    {.key = "nofile",
     .type = AL_YW_UINT,
     .off = F(al_policy_limits, nofile),
     .width = 4,
     .min = 16,
     .max = 1048576},
};
static const al_yw_map limits_map = {limits_fields, AL_ARRAY_SIZE(limits_fields), NULL};

static int env_name_check(al_yw *c, const al_yw_kv *kv, const char *s)
{
  if (!valid_env_name(s))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", s);
  if (al_policy_env_reserved(s))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` is set by airlock and cannot be passed through", s);
  return 0;
}

static int env_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_policy_process *p = obj;
  const char *s = LAST(p->env_pass, p->n_env_pass);
  if (env_name_check(c, kv, s) < 0)
    return -1;
  if (al_policy_env_secret_like(s))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` %s. The forge tokens come from the broker, never from env_pass; if "
                      "the agent truly needs this one, move it to process.secret_env (warned on "
                      "every run)",
                      s, al_policy_env_secret_rule());
  return 0;
}

/* secret_env: the override, loud. */
static int secret_env_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_policy_process *p = obj;
  const char *s = LAST(p->secret_env, p->n_secret_env);
  if (env_name_check(c, kv, s) < 0)
    return -1;
  loud(c, al_yw_at(kv), kv->path,
       "OVERRIDE: the host's `%s` is passed into the sandbox: the agent holds its value", s);
  return 0;
}

static const al_yw_field process_fields[] = {
    {.key = "user",
     .type = AL_YW_UINT,
     .off = F(al_policy_process, user),
     .width = 4,
     .min = 1,
     .max = 65533},
    {.key = "env_pass",
     .type = AL_YW_LIST,
     .off = F(al_policy_process, env_pass),
     .off_n = F(al_policy_process, n_env_pass),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = env_check},
    {.key = "secret_env",
     .type = AL_YW_LIST,
     .off = F(al_policy_process, secret_env),
     .off_n = F(al_policy_process, n_secret_env),
     .item = &al_policy_str_item,
     .item_size = sizeof(char *),
     .check = secret_env_check},
    {.key = "limits", .type = AL_YW_MAP, .off = F(al_policy_process, limits), .map = &limits_map},
};
static const al_yw_map process_map = {process_fields, AL_ARRAY_SIZE(process_fields), NULL};

/* ---- credentials ---- */

/* permissions: {NAME: read|write}, NAME from the grantable list. */
static int perm_pair(al_yw *c, const char *name, struct fy_node *k, const al_yw_kv *vkv, void *obj)
{
  al_policy_role *r = obj;
  if (al_perm_never_granted(name))
    return al_yw_fail(c, k, vkv->path, "`%s` is never granted to a run (escape budget)", name);
  size_t g = 0;
  for (; grantable[g]; g++)
    if (strcmp(name, grantable[g]) == 0)
      break;
  if (!grantable[g])
    return al_yw_fail(c, k, vkv->path,
                      "unknown permission (grantable: contents, pull_requests, issues, "
                      "metadata, checks, statuses)");
  al_autofree char *level = NULL;
  if (al_yw_str(c, vkv, &level) < 0)
    return -1;
  if (strcmp(level, "read") != 0 && strcmp(level, "write") != 0)
    return al_yw_fail(c, al_yw_at(vkv), vkv->path, "must be `read` or `write`, got `%s`", level);
  r->perms = al_xrealloc(r->perms, (r->n_perms + 1) * sizeof *r->perms);
  al_perm *p = &r->perms[r->n_perms];
  snprintf(p->name, sizeof p->name, "%s", name); /* a grantable name, so it fits */
  p->write = strcmp(level, "write") == 0;
  r->n_perms++;
  return 0;
}

static int perms_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  return al_yw_each(c, kv, "permission: read|write", 32, perm_pair, obj);
}

static int repo_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_policy_role *r = obj;
  const char *why;
  al_yw_pos(al_yw_at(kv), &r->repo_line, &r->repo_col);
  /* or a GitLab project's full path: finish (policy.c) holds a GitHub
   * policy to OWNER/REPO once forge.kind is read */
  if (al_forge_repo_check(r->repo, &why) < 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` must be OWNER/REPO: %s", r->repo, why);
  return 0;
}

static int role_done(al_yw *c, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)c, (void)kv, (void)seen;
  ((al_policy_role *)obj)->present = true;
  return 0;
}

static const al_yw_field role_fields[] = {
    {.key = "repo", .type = AL_YW_STR, .off = F(al_policy_role, repo), .check = repo_check},
    {.key = "permissions", .type = AL_YW_CUSTOM, .parse = perms_parse},
};
static const al_yw_map role_map = {role_fields, AL_ARRAY_SIZE(role_fields), role_done};

int al_policy_abs_path_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  return check_abs_path(c, kv, *(char **)(void *)((char *)obj + f->off));
}

static int creds_done(al_yw *c, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)c, (void)kv, (void)seen;
  ((al_policy_credentials *)obj)->present = true;
  return 0;
}

static const char *const cred_modes[] = {"sealed", "env", NULL}; /* al_cred_mode's order */

static const al_yw_field creds_fields[] = {
    {.key = "broker",
     .type = AL_YW_STR,
     .off = F(al_policy_credentials, broker),
     .check = al_policy_abs_path_check},
    {.key = "git", .type = AL_YW_MAP, .off = F(al_policy_credentials, git), .map = &role_map},
    {.key = "ticket", .type = AL_YW_MAP, .off = F(al_policy_credentials, ticket), .map = &role_map},
    {.key = "ttl",
     .type = AL_YW_DURATION,
     .off = F(al_policy_credentials, ttl_ms),
     .min = 60000,
     .max = 3600000},
    {.key = "mode",
     .type = AL_YW_ENUM,
     .off = F(al_policy_credentials, mode),
     .width = sizeof(al_cred_mode),
     .choices = cred_modes,
     .rule = "must be `sealed` (the tokens stay outside the sandbox) or `env` (the agent holds "
             "them)"},
    {.key = "agent_comments",
     .type = AL_YW_UINT,
     .off = F(al_policy_credentials, agent_comments),
     .width = 4,
     .min = 0,
     .max = 100},
};
static const al_yw_map creds_map = {creds_fields, AL_ARRAY_SIZE(creds_fields), creds_done};

/* ---- forge, review ---- */

/* forge.api_url / git_url (https URLs, trailing slashes dropped) and
 * ca_file (an absolute path); their lines are kept for later messages. */
static int forge_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  al_policy_forge *fg = obj;
  char **dst = (char **)(void *)((char *)obj + f->off);
  size_t idx = f->off == F(al_policy_forge, api_url)   ? 0
               : f->off == F(al_policy_forge, git_url) ? 1
                                                       : 2;
  int col;
  al_yw_pos(al_yw_at(kv), &fg->line[idx], &col);
  if (idx == 2)
    return check_abs_path(c, kv, *dst);
  size_t n = strlen(*dst);
  while (n > 8 && (*dst)[n - 1] == '/')
    (*dst)[--n] = '\0';
  return al_policy_https_url(c, kv, *dst);
}

static const al_yw_field forge_fields[] = {
    {.key = "kind",
     .type = AL_YW_ENUM,
     .off = F(al_policy_forge, kind),
     .width = sizeof(al_forge_kind),
     .choices = al_forge_kind_names},
    {.key = "api_url", .type = AL_YW_STR, .off = F(al_policy_forge, api_url), .check = forge_check},
    {.key = "git_url", .type = AL_YW_STR, .off = F(al_policy_forge, git_url), .check = forge_check},
    {.key = "ca_file", .type = AL_YW_STR, .off = F(al_policy_forge, ca_file), .check = forge_check},
};
/* forge.kind gitlab (issue #30): GitLab's REST base is HOST[/PREFIX]/api/v4
 * and its git host is its own, so both are named, never defaulted to
 * GitHub's. */
static int forge_done(al_yw *c, const al_yw_kv *kv, void *obj, const bool *seen)
{
  const al_policy_forge *fg = obj;
  if (fg->kind != AL_FORGE_GITLAB)
    return 0;
  if (!seen[1] || !seen[2])
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "kind gitlab needs api_url (https://HOST/api/v4) and git_url "
                      "(https://HOST): they have no GitLab default");
  size_t n = strlen(fg->api_url);
  if (n < 7 || strcmp(fg->api_url + n - 7, "/api/v4") != 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "kind gitlab: api_url `%s` must end in /api/v4 (GitLab's REST v4 base)",
                      fg->api_url);
  return 0;
}

static const al_yw_map forge_map = {forge_fields, AL_ARRAY_SIZE(forge_fields), forge_done};

/* ---- ticket (issue #31) ---- */

static const char *const ticket_kinds[] = {"github", "jira", "linear", NULL};

/* A Jira project or Linear team key: A-Z then 1..9 of A-Z 0-9 _ (the
 * rule tickets/target.c applies to a ticket's key). */
static int ticket_key_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  const char *s = *(char **)(void *)((char *)obj + f->off);
  size_t n = strlen(s);
  bool ok = n >= 2 && n <= 10 && s[0] >= 'A' && s[0] <= 'Z';
  for (size_t i = 1; ok && i < n; i++)
    ok = (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_';
  if (!ok)
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` is not a key: an upper-case letter, then 1 to 9 upper-case letters, "
                      "digits or _ (like PROJ or ENG)",
                      s);
  return 0;
}

static int ticket_url_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  char **dst = (char **)(void *)((char *)obj + f->off);
  if (f->off == F(al_policy_ticket, ca_file) || f->off == F(al_policy_ticket, token_file))
    return check_abs_path(c, kv, *dst);
  size_t n = strlen(*dst);
  while (n > 8 && (*dst)[n - 1] == '/')
    (*dst)[--n] = '\0';
  return al_policy_https_url(c, kv, *dst);
}

static int ticket_user_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const char *s = ((const al_policy_ticket *)obj)->user;
  const char *at = strchr(s, '@');
  if (!at || at == s || !at[1] || strchr(at + 1, '@') || strpbrk(s, " :\"<>,;"))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` is not an e-mail address (the Atlassian account of the API token)", s);
  return 0;
}

/* Across keys: what each kind needs and refuses. */
static int ticket_done(al_yw *c, const al_yw_kv *kv, void *obj, const bool *seen)
{
  al_policy_ticket *t = obj;
  t->present = true;
  /* seen[] follows ticket_fields: kind, url, project, team, user, ca_file, token_file */
  static const char *const names[] = {"kind", "url",     "project",   "team",
                                      "user", "ca_file", "token_file"};
  const char *missing = NULL, *extra = NULL;
  if (!seen[0])
    missing = "kind";
  else if (t->kind == 1) { /* jira */
    missing = !seen[1] ? "url" : !seen[2] ? "project" : NULL;
    extra = seen[3] ? names[3] : NULL;
  } else if (t->kind == 2) { /* linear */
    missing = !seen[3] ? "team" : NULL;
    extra = seen[2] ? names[2] : seen[4] ? names[4] : NULL;
  } else { /* github: the issue of the run's repository, on the forge */
    extra = seen[1]   ? names[1]
            : seen[2] ? names[2]
            : seen[3] ? names[3]
            : seen[4] ? names[4]
            : seen[6] ? names[6]
                      : NULL;
  }
  if (missing)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s.%s` is required for kind %s", kv->path,
                      missing, seen[0] ? ticket_kinds[t->kind] : "(none)");
  if (extra)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s.%s` has no meaning for kind %s", kv->path,
                      extra, ticket_kinds[t->kind]);
  if (t->kind == 2 && !t->url)
    t->url = al_xstrdup("https://api.linear.app");
  return 0;
}

static const al_yw_field ticket_fields[] = {
    {.key = "kind",
     .type = AL_YW_ENUM,
     .off = F(al_policy_ticket, kind),
     .width = sizeof(int),
     .choices = ticket_kinds,
     .doc = "the ticket system: github (an issue of the run's repository), jira or linear"},
    {.key = "url",
     .type = AL_YW_STR,
     .off = F(al_policy_ticket, url),
     .check = ticket_url_check,
     .doc = "jira: https://SITE.atlassian.net; linear: https://api.linear.app (default)"},
    {.key = "project",
     .type = AL_YW_STR,
     .off = F(al_policy_ticket, project),
     .check = ticket_key_check,
     .doc = "jira: the one project's key (PROJ)"},
    {.key = "team",
     .type = AL_YW_STR,
     .off = F(al_policy_ticket, team),
     .check = ticket_key_check,
     .doc = "linear: the one team's key (ENG)"},
    {.key = "user",
     .type = AL_YW_STR,
     .off = F(al_policy_ticket, user),
     .check = ticket_user_check,
     .doc = "jira: the e-mail of the API token's account"},
    {.key = "ca_file",
     .type = AL_YW_STR,
     .off = F(al_policy_ticket, ca_file),
     .check = ticket_url_check,
     .doc = "extra trust anchors for the ticket host (absolute path)"},
    {.key = "token_file",
     .type = AL_YW_STR,
     .off = F(al_policy_ticket, token_file),
     .check = ticket_url_check,
     .doc = "jira, linear: the vendor credential, a 0600 file the supervisor reads (absolute "
            "path)"},
};
static const al_yw_map ticket_map = {ticket_fields, AL_ARRAY_SIZE(ticket_fields), ticket_done};

static int base_branch_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const char *b = ((const al_policy *)obj)->base_branch;
  if (!b[0] || strlen(b) > 200 || b[0] == '-' || b[0] == '/' || strstr(b, "..") ||
      strstr(b, "//") || strpbrk(b, " ~^:?*[\\"))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` is not a valid branch name (git-check-ref-format)", b);
  return 0;
}

static int branch_prefix_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const char *s = ((const al_policy *)obj)->branch_prefix;
  size_t n = strlen(s);
  if (n < 2 || n > 64 || s[n - 1] != '/' || s[0] == '/' || strstr(s, "..") || strstr(s, "//"))
    return al_yw_fail(c, al_yw_at(kv), kv->path,
                      "`%s` must be a branch prefix ending in `/`, like airlock/", s);
  for (const char *q = s; *q; q++)
    if (!(isalnum((unsigned char)*q) || *q == '/' || *q == '-' || *q == '_' || *q == '.'))
      return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` may only hold letters, digits, / - _ .",
                        s);
  if (strcmp(s, "main/") == 0 || strcmp(s, "master/") == 0)
    return al_yw_fail(c, al_yw_at(kv), kv->path, "`%s` is too close to a default branch name", s);
  return 0;
}

static const al_yw_field review_fields[] = {
    {.key = "branch_prefix",
     .type = AL_YW_STR,
     .off = F(al_policy, branch_prefix),
     .check = branch_prefix_check},
    {.key = "base_branch",
     .type = AL_YW_STR,
     .off = F(al_policy, base_branch),
     .check = base_branch_check},
};
static const al_yw_map review_map = {review_fields, AL_ARRAY_SIZE(review_fields), NULL};

/* ---- top level ---- */

static const al_yw_field top_fields[] = {
    {.key = "version",
     .type = AL_YW_UINT,
     .flags = AL_YW_REQUIRED,
     .off = F(al_policy, version),
     .width = sizeof(int),
     .min = 1,
     .max = 1,
     .rule = "only version 1 is understood by this airlock",
     .doc = "write `version: 1`"},
    {.key = "network", .type = AL_YW_CUSTOM, .parse = al_policy_network_parse},
    {.key = "filesystem", .type = AL_YW_MAP, .off = F(al_policy, filesystem), .map = &fs_map},
    {.key = "process", .type = AL_YW_MAP, .off = F(al_policy, process), .map = &process_map},
    {.key = "credentials", .type = AL_YW_MAP, .off = F(al_policy, credentials), .map = &creds_map},
    {.key = "review", .type = AL_YW_MAP, .off = 0, .map = &review_map},
    {.key = "forge", .type = AL_YW_MAP, .off = F(al_policy, forge), .map = &forge_map},
    {.key = "ticket", .type = AL_YW_MAP, .off = F(al_policy, ticket), .map = &ticket_map},
    {.key = "relay", .type = AL_YW_CUSTOM, .parse = al_policy_relay_parse},
};
static const al_yw_map top_map = {top_fields, AL_ARRAY_SIZE(top_fields), NULL};

int al_policy_walk(al_yw *w, struct fy_node *root, al_policy *p)
{
  struct policy_walk pw = {.p = p};
  void *saved = w->user;
  // cppcheck-suppress autoVariables ; w->user is restored before returning
  w->user = &pw;
  al_yw_kv kv = {NULL, root, ""};
  int rc = al_yw_walk(w, &kv, &top_map, p);
  w->user = saved;
  return rc;
}
