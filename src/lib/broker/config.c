/* Broker config parsing: see config.h for the schema. */
#include "broker/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/secmem.h"
#include "common/redact.h"
#include "common/util.h"

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

/* Permissions that would let a prompt-injected agent run code outside the
 * sandbox (workflows, actions), change the review rules that hold its pull
 * request (administration, rulesets, members), or read secrets. */
static const char *const never_granted[] = {
    "administration",
    "workflows",
    "actions",
    "secrets",
    "organization_administration",
    "organization_secrets",
    "dependabot_secrets",
    "codespaces_secrets",
    "environments",
    "repository_hooks",
    "organization_hooks",
    "members",
    "organization_custom_roles",
    "repository_custom_properties",
    "organization_self_hosted_runners",
    "security_events",
    "secret_scanning_alerts",
    "single_file",
    "emails",
    "organization_personal_access_tokens",
    "organization_personal_access_token_requests",
};

bool al_perm_never_granted(const char *name)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(never_granted); i++)
    if (strcmp(name, never_granted[i]) == 0)
      return true;
  return false;
}

const al_perm *al_perm_find(const al_perm_set *s, const char *name)
{
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->items[i].name, name) == 0)
      return &s->items[i];
  return NULL;
}

int al_perm_check(const char *name, const char *level, bool *write, const char **why)
{
  size_t n = strlen(name);
  if (n == 0 || n >= AL_PERM_NAME_MAX) {
    *why = "a permission name is 1 to 47 characters of [a-z_]";
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (!(islower((unsigned char)name[i]) || name[i] == '_')) {
      *why = "a permission name is 1 to 47 characters of [a-z_]";
      return -1;
    }
  if (al_perm_never_granted(name)) {
    *why = "this permission is never granted by the broker";
    return -1;
  }
  if (strcmp(level, "read") == 0)
    *write = false;
  else if (strcmp(level, "write") == 0)
    *write = true;
  else {
    *why = "a permission level is `read` or `write`";
    return -1;
  }
  return 0;
}

int al_repo_name_check(const char *repo, const char **why)
{
  const char *slash = strchr(repo, '/');
  *why = "a repository is OWNER/REPO with [A-Za-z0-9._-] in each part";
  if (!slash || strchr(slash + 1, '/') || slash == repo || !slash[1])
    return -1;
  size_t n = strlen(repo);
  if (n > 200)
    return -1;
  for (size_t i = 0; i < n; i++) {
    char c = repo[i];
    if (c != '/' && !isalnum((unsigned char)c) && c != '.' && c != '_' && c != '-')
      return -1;
  }
  size_t ol = (size_t)(slash - repo);
  const char *name = slash + 1;
  if ((ol == 1 && repo[0] == '.') || (ol == 2 && repo[0] == '.' && repo[1] == '.') ||
      strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return -1;
  return 0;
}

int al_api_url_check(const char *url, const char **why)
{
  const char *host;
  bool https;
  if (strncmp(url, "https://", 8) == 0) {
    https = true;
    host = url + 8;
  } else if (strncmp(url, "http://", 7) == 0) {
    https = false;
    host = url + 7;
  } else {
    *why = "the API URL must start with https://";
    return -1;
  }
  size_t hl;
  char hostbuf[256];
  if (*host == '[') {
    const char *end = strchr(host, ']');
    if (!end) {
      *why = "unterminated IPv6 literal in the API URL";
      return -1;
    }
    hl = (size_t)(end - host - 1);
    host++;
  } else {
    hl = strcspn(host, ":/?#");
  }
  if (hl == 0 || hl >= sizeof hostbuf || strchr(url, '@') || strchr(url, '?') || strchr(url, '#') ||
      strpbrk(url, " \t\r\n")) {
    *why = "the API URL needs a host and no user, query or fragment";
    return -1;
  }
  memcpy(hostbuf, host, hl);
  hostbuf[hl] = '\0';
  if (https)
    return 0;
  struct in_addr a4;
  struct in6_addr a6;
  if (strcmp(hostbuf, "localhost") == 0 ||
      (inet_pton(AF_INET, hostbuf, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) ||
      (inet_pton(AF_INET6, hostbuf, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)))
    return 0;
  *why = "the API URL must use https unless its host is a loopback address";
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

/* ---- parsing ---------------------------------------------------------- */

struct parser {
  const char *name;
  al_error *err;
};

/* Position of a node: its scalar token, else the key that led to it. */
static void node_pos(struct fy_node *n, struct fy_node *key, int *line, int *col)
{
  struct fy_token *t = n ? fy_node_get_scalar_token(n) : NULL;
  if (!t && key)
    t = fy_node_get_scalar_token(key);
  const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
  *line = m ? m->line + 1 : 0;
  *col = m ? m->column + 1 : 0;
}

__attribute__((format(printf, 5, 6))) static int perr(struct parser *p, struct fy_node *n,
                                                      struct fy_node *key, const char *path,
                                                      const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  node_pos(n, key, &line, &col);
  return al_make_error(p->err, 0, "%s:%d:%d: %s: %s", p->name, line, col, path, msg);
}
/* perr() is always -1; say so where the static analyzer can see it (it does
 * not follow variadic calls, and would report every `name` as unset). */
#define perr(...) (perr(__VA_ARGS__), -1)

/* A plain scalar's text (malloc'd), or an error. */
static int get_str(struct parser *p, struct fy_node *v, struct fy_node *k, const char *path,
                   char **out)
{
  if (!v || !fy_node_is_scalar(v) || fy_node_is_alias(v))
    return perr(p, v, k, path, "expected a string");
  size_t len;
  const char *s = fy_node_get_scalar(v, &len);
  if (!s || len == 0)
    return perr(p, v, k, path, "must not be empty");
  if (memchr(s, '\0', len))
    return perr(p, v, k, path, "contains a NUL byte");
  char *r = al_xmalloc(len + 1);
  memcpy(r, s, len);
  r[len] = '\0';
  free(*out);
  *out = r;
  return 0;
}

static int get_duration(struct parser *p, struct fy_node *v, struct fy_node *k, const char *path,
                        uint64_t *out)
{
  al_autofree char *s = NULL;
  if (get_str(p, v, k, path, &s) < 0)
    return -1;
  const char *why;
  if (al_parse_duration_ms(s, out, &why) < 0)
    return perr(p, v, k, path, "%s", why);
  return 0;
}

static int get_uint(struct parser *p, struct fy_node *v, struct fy_node *k, const char *path,
                    uint64_t max, uint64_t *out)
{
  al_autofree char *s = NULL;
  if (get_str(p, v, k, path, &s) < 0)
    return -1;
  char *end;
  errno = 0;
  if (!isdigit((unsigned char)s[0]))
    return perr(p, v, k, path, "expected a whole number");
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end || x > max)
    return perr(p, v, k, path, "expected a whole number up to %llu", (unsigned long long)max);
  *out = x;
  return 0;
}

static int need_map(struct parser *p, struct fy_node *v, struct fy_node *k, const char *path)
{
  if (!v || !fy_node_is_mapping(v))
    return perr(p, v, k, path, "expected a mapping");
  return 0;
}

static int need_seq(struct parser *p, struct fy_node *v, struct fy_node *k, const char *path)
{
  if (!v || !fy_node_is_sequence(v))
    return perr(p, v, k, path, "expected a list");
  return 0;
}

static int key_name(struct parser *p, struct fy_node *k, const char *path, const char **out)
{
  if (!k || !fy_node_is_scalar(k))
    return perr(p, k, NULL, path, "keys must be strings");
  *out = fy_node_get_scalar0(k);
  if (!*out)
    return perr(p, k, NULL, path, "bad key");
  return 0;
}

/* An App: {id | client_id, private_key} at `path` ("app", "audit.app"). */
static int parse_app_at(struct parser *p, const char *path, struct fy_node *map, struct fy_node *mk,
                        char **app_id, char **client_id, char **key_path)
{
  if (need_map(p, map, mk, path) < 0)
    return -1;
  char kp[48];
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, path, &name) < 0)
      return -1;
    snprintf(kp, sizeof kp, "%s.%s", path, name);
    if (strcmp(name, "id") == 0) {
      uint64_t id = 0;
      if (get_uint(p, v, k, kp, UINT64_MAX / 2, &id) < 0)
        return -1;
      free(*app_id);
      *app_id = al_strdup_printf("%llu", (unsigned long long)id);
    } else if (strcmp(name, "client_id") == 0) {
      if (get_str(p, v, k, kp, client_id) < 0)
        return -1;
      for (const char *s = *client_id; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
          return perr(p, v, k, kp, "unexpected character");
    } else if (strcmp(name, "private_key") == 0) {
      if (get_str(p, v, k, kp, key_path) < 0)
        return -1;
    } else {
      return perr(p, k, NULL, path, "unknown key `%s` (known: id, client_id, private_key)", name);
    }
  }
  if (!*app_id == !*client_id)
    return perr(p, map, mk, path, "set exactly one of `id` and `client_id`");
  if (!*key_path)
    return perr(p, map, mk, path, "`private_key` is required");
  return 0;
}

static int parse_app(struct parser *p, al_broker_config *c, struct fy_node *map, struct fy_node *mk)
{
  return parse_app_at(p, "app", map, mk, &c->app_id, &c->client_id, &c->private_key_path);
}

static int parse_audit(struct parser *p, al_broker_config *c, struct fy_node *map,
                       struct fy_node *mk)
{
  if (need_map(p, map, mk, "audit") < 0)
    return -1;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "audit", &name) < 0)
      return -1;
    if (strcmp(name, "token_file") == 0) {
      if (get_str(p, v, k, "audit.token_file", &c->audit_token_file) < 0)
        return -1;
    } else if (strcmp(name, "app") == 0) {
      if (parse_app_at(p, "audit.app", v, k, &c->audit_app_id, &c->audit_client_id,
                       &c->audit_key_path) < 0)
        return -1;
    } else {
      return perr(p, k, NULL, "audit", "unknown key `%s` (known: token_file, app)", name);
    }
  }
  if (!c->audit_token_file == !c->audit_key_path)
    return perr(p, map, mk, "audit", "set exactly one of `token_file` and `app`");
  return 0;
}

static int parse_api(struct parser *p, al_broker_config *c, struct fy_node *map, struct fy_node *mk)
{
  if (need_map(p, map, mk, "api") < 0)
    return -1;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "api", &name) < 0)
      return -1;
    if (strcmp(name, "url") == 0) {
      if (get_str(p, v, k, "api.url", &c->api_url) < 0)
        return -1;
      size_t l = strlen(c->api_url);
      while (l > 0 && c->api_url[l - 1] == '/')
        c->api_url[--l] = '\0';
      const char *why;
      if (al_api_url_check(c->api_url, &why) < 0)
        return perr(p, v, k, "api.url", "%s", why);
    } else if (strcmp(name, "ca_file") == 0) {
      if (get_str(p, v, k, "api.ca_file", &c->ca_file) < 0)
        return -1;
    } else if (strcmp(name, "timeout") == 0) {
      if (get_duration(p, v, k, "api.timeout", &c->http_timeout_ms) < 0)
        return -1;
      if (c->http_timeout_ms < 100 || c->http_timeout_ms > 600000)
        return perr(p, v, k, "api.timeout", "must be between 100ms and 10m");
    } else if (strcmp(name, "retries") == 0) {
      uint64_t r = 0;
      if (get_uint(p, v, k, "api.retries", 10, &r) < 0)
        return -1;
      c->retries = (unsigned)r;
    } else if (strcmp(name, "max_rate_limit_wait") == 0) {
      if (get_duration(p, v, k, "api.max_rate_limit_wait", &c->max_rate_wait_ms) < 0)
        return -1;
      if (c->max_rate_wait_ms > 3600000)
        return perr(p, v, k, "api.max_rate_limit_wait", "at most 1h");
    } else {
      return perr(p, k, NULL, "api",
                  "unknown key `%s` (known: url, ca_file, timeout, retries, max_rate_limit_wait)",
                  name);
    }
  }
  return 0;
}

static int parse_repos(struct parser *p, al_broker_config *c, struct fy_node *seq,
                       struct fy_node *sk)
{
  if (need_seq(p, seq, sk, "repositories") < 0)
    return -1;
  void *it = NULL;
  struct fy_node *v;
  while ((v = fy_node_sequence_iterate(seq, &it))) {
    char *r = NULL;
    if (get_str(p, v, sk, "repositories", &r) < 0)
      return -1;
    const char *why;
    if (al_repo_name_check(r, &why) < 0) {
      free(r);
      return perr(p, v, sk, "repositories", "%s", why);
    }
    if (al_broker_config_repo_allowed(c, r)) {
      free(r);
      return perr(p, v, sk, "repositories", "listed twice");
    }
    c->repos = al_xrealloc(c->repos, (c->n_repos + 1) * sizeof *c->repos);
    c->repos[c->n_repos++] = r;
  }
  return 0;
}

static int parse_perms(struct parser *p, al_perm_set *set, struct fy_node *map, struct fy_node *mk,
                       const char *path)
{
  if (need_map(p, map, mk, path) < 0)
    return -1;
  set->n = 0;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name;
    if (key_name(p, k, path, &name) < 0)
      return -1;
    al_autofree char *level = NULL;
    if (get_str(p, v, k, path, &level) < 0)
      return -1;
    const char *why;
    bool w;
    if (al_perm_check(name, level, &w, &why) < 0)
      return perr(p, k, NULL, path, "%s: %s", name, why);
    if (set->n == AL_ARRAY_SIZE(set->items))
      return perr(p, k, NULL, path, "too many permissions");
    snprintf(set->items[set->n].name, AL_PERM_NAME_MAX, "%s", name);
    set->items[set->n].write = w;
    set->n++;
  }
  if (set->n == 0)
    return perr(p, map, mk, path, "a role needs at least one permission");
  return 0;
}

static int parse_roles(struct parser *p, al_broker_config *c, struct fy_node *map,
                       struct fy_node *mk)
{
  if (need_map(p, map, mk, "roles") < 0)
    return -1;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "roles", &name) < 0)
      return -1;
    al_role r;
    if (al_role_parse(name, &r) < 0)
      return perr(p, k, NULL, "roles", "unknown role `%s` (known: git, ticket)", name);
    char path[32];
    snprintf(path, sizeof path, "roles.%s", name);
    if (parse_perms(p, &c->roles[r], v, k, path) < 0)
      return -1;
  }
  return 0;
}

static int parse_clients(struct parser *p, al_broker_config *c, struct fy_node *map,
                         struct fy_node *mk)
{
  if (need_map(p, map, mk, "clients") < 0)
    return -1;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "clients", &name) < 0)
      return -1;
    if (strcmp(name, "uids") != 0)
      return perr(p, k, NULL, "clients", "unknown key `%s` (known: uids)", name);
    if (need_seq(p, v, k, "clients.uids") < 0)
      return -1;
    free(c->client_uids);
    c->client_uids = NULL;
    c->n_client_uids = 0;
    void *it2 = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(v, &it2))) {
      al_autofree char *s = NULL;
      if (get_str(p, e, k, "clients.uids", &s) < 0 || !s)
        return -1;
      uid_t uid;
      if (isdigit((unsigned char)s[0])) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(s, &end, 10);
        if (errno || *end || x >= (unsigned long)(uid_t)-1)
          return perr(p, e, k, "clients.uids", "not a uid");
        uid = (uid_t)x;
      } else {
        struct passwd *pw = getpwnam(s);
        if (!pw)
          return perr(p, e, k, "clients.uids",
                      "no such user `%s`: create it (useradd --system %s) or write the uid "
                      "that `airlock ticket` runs as",
                      s, s);
        uid = pw->pw_uid;
      }
      c->client_uids = al_xrealloc(c->client_uids, (c->n_client_uids + 1) * sizeof(uid_t));
      c->client_uids[c->n_client_uids++] = uid;
    }
  }
  return 0;
}

static int parse_lease(struct parser *p, al_broker_config *c, struct fy_node *map,
                       struct fy_node *mk)
{
  if (need_map(p, map, mk, "lease") < 0)
    return -1;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "lease", &name) < 0)
      return -1;
    if (strcmp(name, "ttl") == 0) {
      if (get_duration(p, v, k, "lease.ttl", &c->default_ttl_ms) < 0)
        return -1;
    } else if (strcmp(name, "max_ttl") == 0) {
      if (get_duration(p, v, k, "lease.max_ttl", &c->max_ttl_ms) < 0)
        return -1;
    } else if (strcmp(name, "max_active") == 0) {
      uint64_t n = 0;
      if (get_uint(p, v, k, "lease.max_active", 4096, &n) < 0)
        return -1;
      if (n == 0)
        return perr(p, v, k, "lease.max_active", "must be at least 1");
      c->max_active = (size_t)n;
    } else {
      return perr(p, k, NULL, "lease", "unknown key `%s` (known: ttl, max_ttl, max_active)", name);
    }
  }
  return 0;
}

static int parse_secret(struct parser *p, al_broker_secret *sec, struct fy_node *map,
                        struct fy_node *mk, const char *path)
{
  if (need_map(p, map, mk, path) < 0)
    return -1;
  char kp[128];
  bool have_repos = false;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, path, &name) < 0)
      return -1;
    snprintf(kp, sizeof kp, "%s.%s", path, name);
    if (strcmp(name, "file") == 0) {
      if (get_str(p, v, k, kp, &sec->file) < 0)
        return -1;
    } else if (strcmp(name, "repositories") == 0) {
      if (need_seq(p, v, k, kp) < 0)
        return -1;
      have_repos = true;
      void *it2 = NULL;
      struct fy_node *e;
      while ((e = fy_node_sequence_iterate(v, &it2))) {
        char *r = NULL;
        if (get_str(p, e, k, kp, &r) < 0)
          return -1;
        const char *why;
        if (al_repo_name_check(r, &why) < 0) {
          free(r);
          return perr(p, e, k, kp, "%s", why);
        }
        if (al_broker_secret_repo_allowed(sec, r)) {
          free(r);
          return perr(p, e, k, kp, "listed twice");
        }
        sec->repos = al_xrealloc(sec->repos, (sec->n_repos + 1) * sizeof *sec->repos);
        sec->repos[sec->n_repos++] = r;
      }
    } else {
      return perr(p, k, NULL, path, "unknown key `%s` (known: file, repositories)", name);
    }
  }
  if (!sec->file)
    return perr(p, map, mk, path, "`file` is required");
  if (!have_repos || sec->n_repos == 0)
    return perr(p, map, mk, path, "`repositories` must list at least one OWNER/REPO");
  return 0;
}

static int parse_secrets(struct parser *p, al_broker_config *c, struct fy_node *map,
                         struct fy_node *mk)
{
  if (need_map(p, map, mk, "secrets") < 0)
    return -1;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "secrets", &name) < 0)
      return -1;
    const char *why;
    if (al_secret_name_check(name, &why) < 0)
      return perr(p, k, NULL, "secrets", "`%s`: %s", name, why);
    if (al_broker_config_secret(c, name))
      return perr(p, k, NULL, "secrets", "`%s` given twice", name);
    c->secrets = al_xrealloc(c->secrets, (c->n_secrets + 1) * sizeof *c->secrets);
    al_broker_secret *sec = &c->secrets[c->n_secrets++];
    memset(sec, 0, sizeof *sec);
    sec->name = al_xstrdup(name);
    char path[96];
    snprintf(path, sizeof path, "secrets.%s", name);
    if (parse_secret(p, sec, v, k, path) < 0)
      return -1;
  }
  return 0;
}

static int parse_root(struct parser *p, al_broker_config *c, struct fy_node *root)
{
  if (!root || !fy_node_is_mapping(root))
    return al_make_error(p->err, 0, "%s:1:1: the config must be a mapping", p->name);
  bool have_app = false, have_repos = false;
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(root, &it))) {
    struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
    const char *name = NULL;
    if (key_name(p, k, "", &name) < 0)
      return -1;
    int r;
    if (strcmp(name, "app") == 0) {
      r = parse_app(p, c, v, k);
      have_app = true;
    } else if (strcmp(name, "api") == 0) {
      r = parse_api(p, c, v, k);
    } else if (strcmp(name, "repositories") == 0) {
      r = parse_repos(p, c, v, k);
      have_repos = true;
    } else if (strcmp(name, "roles") == 0) {
      r = parse_roles(p, c, v, k);
    } else if (strcmp(name, "clients") == 0) {
      r = parse_clients(p, c, v, k);
    } else if (strcmp(name, "lease") == 0) {
      r = parse_lease(p, c, v, k);
    } else if (strcmp(name, "state_dir") == 0) {
      r = get_str(p, v, k, "state_dir", &c->state_dir);
    } else if (strcmp(name, "audit") == 0) {
      r = parse_audit(p, c, v, k);
    } else if (strcmp(name, "secrets") == 0) {
      r = parse_secrets(p, c, v, k);
    } else {
      r = perr(p, k, NULL, name,
               "unknown key (known: app, api, repositories, roles, clients, lease, state_dir, "
               "audit, secrets)");
    }
    if (r < 0)
      return -1;
  }
  if (!have_app)
    return al_make_error(p->err, 0, "%s: `app` is required", p->name);
  if (!have_repos || c->n_repos == 0)
    return al_make_error(p->err, 0, "%s: `repositories` must list at least one OWNER/REPO",
                         p->name);
  for (size_t i = 0; i < c->n_secrets; i++)
    for (size_t k = 0; k < c->secrets[i].n_repos; k++)
      if (!al_broker_config_repo_allowed(c, c->secrets[i].repos[k]))
        return al_make_error(p->err, 0,
                             "%s: secrets.%s.repositories: `%s` is not in `repositories`", p->name,
                             c->secrets[i].name, c->secrets[i].repos[k]);
  if (c->default_ttl_ms < 1000 || c->default_ttl_ms > c->max_ttl_ms)
    return al_make_error(p->err, 0, "%s: lease.ttl must be between 1s and lease.max_ttl", p->name);
  if (c->max_ttl_ms > 3600000)
    return al_make_error(
        p->err, 0, "%s: lease.max_ttl is at most 1h (installation tokens live 1 hour)", p->name);
  return 0;
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
  al_perm_set *g = &c->roles[AL_ROLE_GIT];
  snprintf(g->items[0].name, AL_PERM_NAME_MAX, "contents");
  g->items[0].write = true;
  snprintf(g->items[1].name, AL_PERM_NAME_MAX, "pull_requests");
  g->items[1].write = true;
  g->n = 2;
  al_perm_set *t = &c->roles[AL_ROLE_TICKET];
  snprintf(t->items[0].name, AL_PERM_NAME_MAX, "issues");
  t->items[0].write = true;
  t->n = 1;
  c->client_uids = al_xmalloc(sizeof(uid_t));
  c->client_uids[0] = getuid();
  c->n_client_uids = 1;
}

int al_broker_config_load_buffer(const char *name, const char *buf, size_t len,
                                 al_broker_config **out, al_error *err)
{
  struct fy_diag_cfg dcfg;
  fy_diag_cfg_default(&dcfg);
  dcfg.fp = NULL;
  dcfg.colorize = false;
  struct fy_diag *diag = fy_diag_create(&dcfg);
  if (!diag)
    return al_make_error(err, ENOMEM, "%s: creating the YAML diagnostics", name);
  fy_diag_set_collect_errors(diag, true);
  struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
  struct fy_document *doc = fy_document_build_from_string(&cfg, buf, len);
  if (!doc) {
    void *it = NULL;
    struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
    if (de)
      al_make_error(err, 0, "%s:%d:%d: YAML syntax error: %s", name, de->line + 1, de->column + 1,
                    de->msg ? de->msg : "?");
    else
      al_make_error(err, 0, "%s: YAML syntax error", name);
    err->code = EINVAL;
    fy_diag_destroy(diag);
    return -1;
  }
  al_broker_config *c = al_xcalloc(1, sizeof *c);
  c->source = al_xstrdup(name);
  set_defaults(c);
  struct parser p = {.name = name, .err = err};
  int r = parse_root(&p, c, fy_document_root(doc));
  fy_document_destroy(doc);
  fy_diag_destroy(diag);
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

/* A private file holding one secret: ours, not a symlink, mode & 077 == 0,
 * one value (surrounding whitespace ignored) of at most 1024 bytes, each
 * byte accepted by ok_byte. `what` names it in messages ("audit token
 * file", "secrets.NAME.file"); `shape` says what it must hold. */
static int private_value_load(const char *path, const char *what, bool (*ok_byte)(unsigned char),
                              const char *shape, char **out, al_error *err)
{
  *out = NULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return al_make_error(err, errno, "%s `%s`", what, path);
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "%s `%s`", what, path);
  }
  const char *why = NULL;
  if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != geteuid())
    why = "not owned by the broker's user";
  else if (st.st_mode & 077)
    why = "readable or writable by group or others (chmod 600)";
  if (why) {
    close(fd);
    al_make_error(err, 0, "%s `%s`: %s", what, path, why);
    if (err)
      err->code = EPERM;
    return -1;
  }
  char buf[1026]; /* one byte more than the limit, to see a longer file */
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      explicit_bzero(buf, sizeof buf);
      return al_make_error(err, e, "reading the %s `%s`", what, path);
    }
    if (r == 0 || (n += (size_t)r) == sizeof buf - 1)
      break;
  }
  close(fd);
  buf[n] = '\0';
  size_t a = 0, b = n;
  while (a < b && isspace((unsigned char)buf[a]))
    a++;
  while (b > a && isspace((unsigned char)buf[b - 1]))
    b--;
  bool ok = b > a && n <= 1024;
  for (size_t i = a; ok && i < b; i++)
    ok = ok_byte((unsigned char)buf[i]);
  if (!ok) {
    explicit_bzero(buf, sizeof buf);
    al_make_error(err, 0, "%s `%s`: expected %s, at most 1024 bytes", what, path, shape);
    if (err)
      err->code = EINVAL;
    return -1;
  }
  *out = al_secret_dupn(buf + a, b - a);
  int e = errno;
  explicit_bzero(buf, sizeof buf);
  if (!*out)
    return al_make_error(err, e, "secret memory for the %s", what);
  return 0;
}

static bool token_byte(unsigned char c)
{
  return isalnum(c) || c == '_';
}

static bool printable_byte(unsigned char c)
{
  return c > 0x20 && c < 0x7f;
}

int al_broker_audit_token_load(const char *path, char **out, al_error *err)
{
  return private_value_load(path, "audit token file", token_byte, "one token of [A-Za-z0-9_]", out,
                            err);
}

int al_broker_secrets_load(al_broker_config *c, al_error *err)
{
  for (size_t i = 0; i < c->n_secrets; i++) {
    al_broker_secret *s = &c->secrets[i];
    if (s->value)
      continue;
    al_autofree char *what = al_strdup_printf("secrets.%s.file", s->name);
    if (private_value_load(s->file, what, printable_byte,
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
