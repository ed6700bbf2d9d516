/* Broker config parsing: see config.h for the schema; its tables are read
 * by the one YAML walker (common/yamlwalk.h), as the policy's and the
 * service's are. */
#include "forge/appconfig.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include "common/lazyfyaml.h"
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secmem.h"
#include "common/secretfile.h"
#include "common/redact.h"
#include "common/util.h"
#include "common/yamlwalk.h"

static const char *const role_names[AL_ROLE_COUNT] = {"git", "ticket"};

const char *al_role_name(al_role r)
{
  return (unsigned)r < AL_ROLE_COUNT ? role_names[r] : "?";
}

int al_role_parse(const char *name, al_role *out)
{
  for (int i = 0; i < AL_ROLE_COUNT; i++)
    if (strcmp(name, role_names[i]) == 0) {
      *out = (al_role)i;
      return 0;
    }
  return -1;
}

int al_secret_name_check(const char *name, const char **why)
{
  size_t n = strlen(name);
  bool ok = n > 0 && n < AL_SECRET_NAME_MAX;
  for (size_t i = 0; ok && i < n; i++)
    ok = islower((unsigned char)name[i]) || isdigit((unsigned char)name[i]) || name[i] == '_';
  if (!ok) {
    *why = "a secret's name is 1 to 63 characters of [a-z0-9_]";
    return -1;
  }
  return 0;
}

bool al_broker_config_repo_allowed(const al_broker_config *c, const char *repo)
{
  for (size_t i = 0; i < c->n_repos; i++)
    if (strcasecmp(c->repos[i], repo) == 0)
      return true;
  return false;
}

bool al_broker_config_uid_allowed(const al_broker_config *c, uid_t uid)
{
  for (size_t i = 0; i < c->n_client_uids; i++)
    if (c->client_uids[i] == uid)
      return true;
  return false;
}

void al_broker_config_free(al_broker_config *c)
{
  if (!c)
    return;
  free(c->source);
  free(c->app_id);
  free(c->client_id);
  free(c->private_key_path);
  free(c->gitlab_token_file);
  free(c->api_url);
  free(c->ca_file);
  for (size_t i = 0; i < c->n_repos; i++)
    free(c->repos[i]);
  free(c->repos);
  free(c->client_uids);
  free(c->state_dir);
  free(c->audit_token_file);
  free(c->audit_app_id);
  free(c->audit_client_id);
  free(c->audit_key_path);
  for (size_t i = 0; i < c->n_secrets; i++) {
    al_broker_secret *s = &c->secrets[i];
    free(s->name);
    free(s->file);
    for (size_t k = 0; k < s->n_repos; k++)
      free(s->repos[k]);
    free(s->repos);
    al_secret_free(s->value);
  }
  free(c->secrets);
  free(c);
}

/* ---- parsing: the tables of the one YAML walker (common/yamlwalk.h) ---- */

#define OFF(f) offsetof(al_broker_config, f)

/* app.id: a GitHub App id, kept as its decimal text (the JWT's `iss`). */
static int app_id_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  char **dst = (char **)(void *)((char *)obj + f->off);
  uint64_t id = 0;
  if (al_yw_uint(w, kv, 0, UINT64_MAX / 2, true, &id) < 0)
    return -1;
  free(*dst);
  *dst = al_strdup_printf("%llu", (unsigned long long)id);
  return 0;
}

static int client_id_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  for (const char *s = *(char **)(void *)((char *)obj + f->off); *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
      return al_yw_fail(w, al_yw_at(kv), kv->path, "unexpected character");
  return 0;
}

/* An App, {id | client_id, private_key}: at `app` and at `audit.app`. */
struct app {
  char *id;
  char *client_id;
  char *key;
};

static int app_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)obj;
  if (seen[0] == seen[1])
    return al_yw_fail(w, kv->key, kv->path, "set exactly one of `id` and `client_id`");
  return 0;
}

static const al_yw_field app_fields[] = {
    {.key = "id", .type = AL_YW_CUSTOM, .off = offsetof(struct app, id), .parse = app_id_parse},
    {.key = "client_id",
     .type = AL_YW_STR,
     .off = offsetof(struct app, client_id),
     .min = 1,
     .check = client_id_check},
    {.key = "private_key",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(struct app, key),
     .min = 1,
     .doc = "the App's PEM key"},
};
static const al_yw_map app_map = {app_fields, AL_ARRAY_SIZE(app_fields), app_done};

static int app_into(al_yw *w, const al_yw_kv *kv, char **id, char **client_id, char **key)
{
  struct app a = {0};
  int r = al_yw_walk(w, kv, &app_map, &a);
  free(*id);
  free(*client_id);
  free(*key);
  *id = a.id;
  *client_id = a.client_id;
  *key = a.key;
  return r;
}

static int app_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_broker_config *c = obj;
  return app_into(w, kv, &c->app_id, &c->client_id, &c->private_key_path);
}

static int audit_app_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_broker_config *c = obj;
  return app_into(w, kv, &c->audit_app_id, &c->audit_client_id, &c->audit_key_path);
}

static int api_url_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_broker_config *c = obj;
  size_t l = strlen(c->api_url);
  while (l > 0 && c->api_url[l - 1] == '/')
    c->api_url[--l] = '\0';
  const char *why;
  if (al_api_url_check(c->api_url, &why) < 0)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "%s", why);
  return 0;
}

static const al_yw_field api_fields[] = {
    {.key = "url", .type = AL_YW_STR, .off = OFF(api_url), .min = 1, .check = api_url_check},
    {.key = "ca_file", .type = AL_YW_STR, .off = OFF(ca_file), .min = 1},
    {.key = "timeout",
     .type = AL_YW_DURATION,
     .off = OFF(http_timeout_ms),
     .min = 100,
     .max = 600000},
    {.key = "retries",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(retries),
     .width = sizeof(unsigned),
     .min = 0,
     .max = 10},
    {.key = "max_rate_limit_wait",
     .type = AL_YW_DURATION,
     .off = OFF(max_rate_wait_ms),
     .min = 0,
     .max = 3600000},
};
static const al_yw_map api_map = {api_fields, AL_ARRAY_SIZE(api_fields), NULL};

/* The last repository of a list just read: OWNER/REPO, and not twice. */
static int repo_entry_check(al_yw *w, char **repos, size_t n, const al_yw_kv *kv)
{
  const char *why;
  /* a GitLab project may be in a subgroup: check_all holds a GitHub
   * broker to OWNER/REPO once it knows which it is */
  if (al_forge_repo_check(repos[n - 1], &why) < 0)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "%s", why);
  for (size_t i = 0; i + 1 < n; i++)
    if (strcasecmp(repos[i], repos[n - 1]) == 0)
      return al_yw_fail(w, al_yw_at(kv), kv->path, "listed twice");
  return 0;
}

static int repos_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_broker_config *c = obj;
  return repo_entry_check(w, c->repos, c->n_repos, kv);
}

static const al_yw_field str_item = {.type = AL_YW_STR, .min = 1};

/* roles.git / roles.ticket: {PERMISSION: read|write}, replacing the
 * default set. */
static int perm_pair(al_yw *w, const char *name, struct fy_node *k, const al_yw_kv *vkv, void *obj)
{
  al_perm_set *set = obj;
  al_autofree char *level = NULL;
  if (al_yw_str(w, vkv, &level) < 0)
    return -1;
  const char *why;
  bool wr;
  if (al_perm_check(name, level, &wr, &why) < 0)
    return al_yw_fail(w, k, vkv->path, "%s", why);
  snprintf(set->items[set->n].name, AL_PERM_NAME_MAX, "%s", name);
  set->items[set->n].write = wr;
  set->n++;
  return 0;
}

static int perms_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  al_broker_config *c = obj;
  al_role role = AL_ROLE_GIT;
  if (al_role_parse(f->key, &role) < 0)
    return al_yw_fail(w, kv->key, kv->path, "internal: no role `%s`", f->key);
  al_perm_set *set = &c->roles[role];
  set->n = 0;
  if (al_yw_each(w, kv, "permission: read|write", AL_ARRAY_SIZE(set->items), perm_pair, set) < 0)
    return -1;
  if (set->n == 0)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "a role needs at least one permission");
  return 0;
}

static const al_yw_field role_fields[] = {
    {.key = "git", .type = AL_YW_CUSTOM, .parse = perms_parse},
    {.key = "ticket", .type = AL_YW_CUSTOM, .parse = perms_parse},
};
static const al_yw_map role_map = {role_fields, AL_ARRAY_SIZE(role_fields), NULL};

/* clients.uids[i]: a uid, or a user name looked up now (getpwnam(3)). */
static int uid_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  uid_t *uid = obj;
  al_autofree char *s = NULL;
  if (al_yw_str(w, kv, &s) < 0)
    return -1;
  if (!s[0])
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must not be empty");
  if (isdigit((unsigned char)s[0])) {
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || *end || x >= (unsigned long)(uid_t)-1)
      return al_yw_fail(w, al_yw_at(kv), kv->path, "not a uid");
    *uid = (uid_t)x;
    return 0;
  }
  struct passwd *pw = getpwnam(s);
  if (!pw)
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "no such user `%s`: create it (useradd --system %s) or write the uid "
                      "that `airlock ticket` runs as",
                      s, s);
  *uid = pw->pw_uid;
  return 0;
}

static const al_yw_field uid_item = {.type = AL_YW_CUSTOM, .parse = uid_parse};

static const al_yw_field client_fields[] = {
    {.key = "uids",
     .type = AL_YW_LIST,
     .off = OFF(client_uids),
     .off_n = OFF(n_client_uids),
     .item = &uid_item,
     .item_size = sizeof(uid_t)},
};
static const al_yw_map client_map = {client_fields, AL_ARRAY_SIZE(client_fields), NULL};

static const al_yw_field lease_fields[] = {
    {.key = "ttl", .type = AL_YW_DURATION, .off = OFF(default_ttl_ms)},
    {.key = "max_ttl", .type = AL_YW_DURATION, .off = OFF(max_ttl_ms)},
    {.key = "max_active",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(max_active),
     .width = sizeof(size_t),
     .min = 1,
     .max = 4096},
};
static const al_yw_map lease_map = {lease_fields, AL_ARRAY_SIZE(lease_fields), NULL};

static int audit_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)obj;
  if (seen[0] == seen[1])
    return al_yw_fail(w, kv->key, kv->path, "set exactly one of `token_file` and `app`");
  return 0;
}

static const al_yw_field audit_fields[] = {
    {.key = "token_file", .type = AL_YW_STR, .off = OFF(audit_token_file), .min = 1},
    {.key = "app", .type = AL_YW_CUSTOM, .parse = audit_app_parse},
};
static const al_yw_map audit_map = {audit_fields, AL_ARRAY_SIZE(audit_fields), audit_done};

static int secret_repos_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  al_broker_secret *sec = obj;
  return repo_entry_check(w, sec->repos, sec->n_repos, kv);
}

static const al_yw_field secret_fields[] = {
    {.key = "file",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(al_broker_secret, file),
     .min = 1,
     .doc = "a 0600 file holding the value"},
    {.key = "repositories",
     .type = AL_YW_LIST,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(al_broker_secret, repos),
     .off_n = offsetof(al_broker_secret, n_repos),
     .min = 1,
     .item = &str_item,
     .item_size = sizeof(char *),
     .check = secret_repos_check,
     .doc = "the OWNER/REPO whose leases may carry it"},
};
static const al_yw_map secret_map = {secret_fields, AL_ARRAY_SIZE(secret_fields), NULL};

/* secrets: {NAME: {file, repositories}}, names of [a-z0-9_]. */
static int secret_pair(al_yw *w, const char *name, struct fy_node *k, const al_yw_kv *vkv,
                       void *obj)
{
  al_broker_config *c = obj;
  const char *why;
  if (al_secret_name_check(name, &why) < 0)
    return al_yw_fail(w, k, vkv->path, "`%.64s`: %s", name, why);
  c->secrets = al_xrealloc(c->secrets, (c->n_secrets + 1) * sizeof *c->secrets);
  al_broker_secret *sec = &c->secrets[c->n_secrets++];
  memset(sec, 0, sizeof *sec);
  sec->name = al_xstrdup(name);
  return al_yw_walk(w, vkv, &secret_map, sec);
}

static int secrets_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  return al_yw_each(w, kv, NULL, 64, secret_pair, obj);
}

static const al_yw_field gitlab_fields[] = {
    {.key = "token_file",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = OFF(gitlab_token_file),
     .min = 1,
     .doc = "the file of a token allowed to create project access tokens (a Maintainer's, scope "
            "api)"},
};
static const al_yw_map gitlab_map = {gitlab_fields, AL_ARRAY_SIZE(gitlab_fields), NULL};

static const al_yw_field top_fields[] = {
    {.key = "app",
     .type = AL_YW_CUSTOM,
     .parse = app_parse,
     .doc = "{id or client_id, private_key}"},
    {.key = "gitlab", .type = AL_YW_MAP, .map = &gitlab_map},
    {.key = "api", .type = AL_YW_MAP, .map = &api_map},
    {.key = "repositories",
     .type = AL_YW_LIST,
     .flags = AL_YW_REQUIRED,
     .off = OFF(repos),
     .off_n = OFF(n_repos),
     .min = 1,
     .item = &str_item,
     .item_size = sizeof(char *),
     .check = repos_check,
     .doc = "the OWNER/REPO a lease may name, at least one"},
    {.key = "roles", .type = AL_YW_MAP, .map = &role_map},
    {.key = "clients", .type = AL_YW_MAP, .map = &client_map},
    {.key = "lease", .type = AL_YW_MAP, .map = &lease_map},
    {.key = "state_dir", .type = AL_YW_STR, .off = OFF(state_dir), .min = 1},
    {.key = "audit", .type = AL_YW_MAP, .map = &audit_map},
    {.key = "secrets", .type = AL_YW_CUSTOM, .parse = secrets_parse},
};
static const al_yw_map top_map = {top_fields, AL_ARRAY_SIZE(top_fields), NULL};

/* The rules across sections, after the walk. */
static int check_all(const al_broker_config *c, const char *name, al_error *err)
{
  if (!c->private_key_path == !c->gitlab_token_file)
    return al_error_set(err, EINVAL,
                        "%s: set exactly one of `app` (a GitHub App) and `gitlab` (a GitLab "
                        "credential that creates project access tokens)",
                        name);
  if (c->gitlab_token_file) {
    size_t n = strlen(c->api_url);
    if (n < 7 || strcmp(c->api_url + n - 7, "/api/v4") != 0)
      return al_error_set(err, EINVAL, "%s: api.url `%s` must end in /api/v4 with `gitlab`", name,
                          c->api_url);
    if (c->audit_token_file || c->audit_key_path)
      return al_error_set(err, EINVAL,
                          "%s: audit: the GitLab audit is not built yet (issue #30 item 4)", name);
  }
  const char *why;
  for (size_t i = 0; !c->gitlab_token_file && i < c->n_repos; i++)
    if (al_repo_name_check(c->repos[i], &why) < 0)
      return al_error_set(err, EINVAL,
                          "%s: repositories: `%s`: %s (a GitLab GROUP/SUB/PROJECT only with "
                          "`gitlab`)",
                          name, c->repos[i], why);
  for (size_t i = 0; i < c->n_secrets; i++)
    for (size_t k = 0; k < c->secrets[i].n_repos; k++)
      if (!al_broker_config_repo_allowed(c, c->secrets[i].repos[k]))
        return al_error_set(err, EINVAL,
                            "%s: secrets.%s.repositories: `%s` is not in `repositories`", name,
                            c->secrets[i].name, c->secrets[i].repos[k]);
  if (c->default_ttl_ms < 1000 || c->default_ttl_ms > c->max_ttl_ms)
    return al_error_set(err, EINVAL, "%s: lease.ttl must be between 1s and lease.max_ttl", name);
  if (c->max_ttl_ms > 3600000)
    return al_error_set(err, EINVAL,
                        "%s: lease.max_ttl is at most 1h (installation tokens live 1 hour)", name);
  return 0;
}

void al_broker_default_roles(al_perm_set roles[AL_ROLE_COUNT])
{
  al_perm_set *g = &roles[AL_ROLE_GIT];
  memset(g, 0, sizeof *g);
  snprintf(g->items[0].name, AL_PERM_NAME_MAX, "contents");
  g->items[0].write = true;
  snprintf(g->items[1].name, AL_PERM_NAME_MAX, "pull_requests");
  g->items[1].write = true;
  g->n = 2;
  al_perm_set *t = &roles[AL_ROLE_TICKET];
  memset(t, 0, sizeof *t);
  snprintf(t->items[0].name, AL_PERM_NAME_MAX, "issues");
  t->items[0].write = true;
  t->n = 1;
}

void al_audit_app_perms(al_perm_set *out)
{
  memset(out, 0, sizeof *out);
  snprintf(out->items[0].name, AL_PERM_NAME_MAX, "administration");
  snprintf(out->items[1].name, AL_PERM_NAME_MAX, "contents");
  out->n = 2;
}

static void set_defaults(al_broker_config *c)
{
  c->api_url = al_xstrdup("https://api.github.com");
  c->http_timeout_ms = 30000;
  c->retries = 4;
  c->max_rate_wait_ms = 60000;
  c->default_ttl_ms = 15 * 60000;
  c->max_ttl_ms = 60 * 60000;
  c->max_active = 64;
  al_broker_default_roles(c->roles);
  c->client_uids = al_xmalloc(sizeof(uid_t));
  c->client_uids[0] = getuid();
  c->n_client_uids = 1;
}

int al_broker_config_load_buffer(const char *name, const char *buf, size_t len,
                                 al_broker_config **out, al_error *err)
{
  al_yw w = {.name = name, .err = err};
  if (al_yw_open(&w, buf, len, 1 << 20,
                 "empty config (it needs at least `app` and `repositories`)") < 0)
    return -1;
  al_broker_config *c = al_xcalloc(1, sizeof *c);
  c->source = al_xstrdup(name);
  set_defaults(c);
  al_yw_kv kv = {NULL, fy_document_root(w.doc), ""};
  int r = al_yw_walk(&w, &kv, &top_map, c);
  if (r == 0)
    r = check_all(c, name, err);
  al_yw_close(&w);
  if (r < 0) {
    if (err)
      err->code = EINVAL;
    al_broker_config_free(c);
    return -1;
  }
  *out = c;
  return 0;
}

int al_broker_config_load_file(const char *path, al_broker_config **out, al_error *err)
{
  al_autofree char *buf = NULL;
  size_t len;
  if (al_read_file(path, 1 << 20, &buf, &len, err) < 0)
    return -1;
  return al_broker_config_load_buffer(path, buf, len, out, err);
}

/* A private file holding one secret (common/secretfile.h's rule), one
 * value of at most 1024 bytes, each byte accepted by ok_byte. */
static int private_value_load(const char *path, const char *what, bool (*ok_byte)(unsigned char),
                              const char *shape, char **out, al_error *err)
{
  return al_secret_file_read(path, what, 1024, ok_byte, shape, out, NULL, err);
}

static bool token_byte(unsigned char c)
{
  return isalnum(c) || c == '_';
}

int al_broker_audit_token_load(const char *path, char **out, al_error *err)
{
  return private_value_load(path, "audit token file", token_byte, "one token of [A-Za-z0-9_]", out,
                            err);
}

static bool gitlab_token_byte(unsigned char c)
{
  return isalnum(c) || c == '_' || c == '-' || c == '.';
}

int al_broker_gitlab_token_load(const char *path, char **out, al_error *err)
{
  return private_value_load(path, "gitlab.token_file", gitlab_token_byte,
                            "one token of [A-Za-z0-9_.-]", out, err);
}

int al_broker_secrets_load(al_broker_config *c, al_error *err)
{
  for (size_t i = 0; i < c->n_secrets; i++) {
    al_broker_secret *s = &c->secrets[i];
    if (s->value)
      continue;
    al_autofree char *what = al_strdup_printf("secrets.%s.file", s->name);
    if (private_value_load(s->file, what, al_secret_byte_printable,
                           "one value of printable ASCII without spaces", &s->value, err) < 0)
      return -1;
    al_secret_fingerprint(s->value, s->fp);
  }
  return 0;
}

const al_broker_secret *al_broker_config_secret(const al_broker_config *c, const char *name)
{
  for (size_t i = 0; i < c->n_secrets; i++)
    if (strcmp(c->secrets[i].name, name) == 0)
      return &c->secrets[i];
  return NULL;
}

bool al_broker_secret_repo_allowed(const al_broker_secret *s, const char *repo)
{
  for (size_t i = 0; i < s->n_repos; i++)
    if (strcasecmp(s->repos[i], repo) == 0)
      return true;
  return false;
}
