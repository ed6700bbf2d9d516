#include "broker/proto.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int al_perm_set_parse(const char *s, al_perm_set *set, al_error *err)
{
  set->n = 0;
  al_autofree char *copy = al_xstrdup(s);
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *sep = strpbrk(item, ":=");
    if (!sep)
      return al_error_set(err, EINVAL, "permission `%s`: expected NAME:LEVEL", item);
    *sep = '\0';
    const char *why;
    bool w;
    if (al_perm_check(item, sep + 1, &w, &why) < 0)
      return al_error_set(err, EINVAL, "permission `%s`: %s", item, why);
    if (al_perm_find(set, item))
      return al_error_set(err, EINVAL, "permission `%s` given twice", item);
    if (set->n == AL_ARRAY_SIZE(set->items))
      return al_error_set(err, EINVAL, "too many permissions");
    snprintf(set->items[set->n].name, AL_PERM_NAME_MAX, "%s", item);
    set->items[set->n].write = w;
    set->n++;
  }
  if (set->n == 0)
    return al_error_set(err, EINVAL, "empty permission list");
  return 0;
}

json_t *al_proto_lease_req_to_json(const al_proto_lease_req *req)
{
  json_t *toks = json_array();
  for (size_t i = 0; i < req->n_tokens; i++) {
    const al_proto_token_req *t = &req->tokens[i];
    json_t *o = json_pack("{s:s, s:s}", "role", al_role_name(t->role), "repo", t->repo);
    if (t->has_perms) {
      json_t *p = json_object();
      for (size_t k = 0; k < t->perms.n; k++)
        json_object_set_new(p, t->perms.items[k].name,
                            json_string(t->perms.items[k].write ? "write" : "read"));
      json_object_set_new(o, "permissions", p);
    }
    json_array_append_new(toks, o);
  }
  json_t *m =
      json_pack("{s:s, s:i, s:o}", "type", "lease", "version", AL_PROTO_VERSION, "tokens", toks);
  if (req->ttl_ms)
    json_object_set_new(m, "ttl_ms", json_integer((json_int_t)req->ttl_ms));
  if (req->n_secrets) {
    json_t *sec = json_array();
    for (size_t i = 0; i < req->n_secrets; i++)
      json_array_append_new(sec, json_string(req->secrets[i]));
    json_object_set_new(m, "secrets", sec);
  }
  return m;
}

static int token_req_from_json(json_t *o, al_proto_token_req *t, al_error *err)
{
  if (!json_is_object(o))
    return al_error_set(err, EINVAL, "tokens[]: expected an object");
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v)
  {
    if (strcmp(k, "role") && strcmp(k, "repo") && strcmp(k, "permissions"))
      return al_error_set(err, EINVAL, "tokens[]: unknown field `%s`", k);
  }
  const char *role = json_string_value(json_object_get(o, "role"));
  if (!role || al_role_parse(role, &t->role) < 0)
    return al_error_set(err, EINVAL, "tokens[].role: expected `git` or `ticket`");
  const char *repo = json_string_value(json_object_get(o, "repo"));
  const char *why;
  if (!repo || strlen(repo) >= sizeof t->repo || al_forge_repo_check(repo, &why) < 0)
    return al_error_set(err, EINVAL,
                        "tokens[].repo: expected OWNER/REPO (or a GitLab GROUP[/SUB...]/PROJECT)");
  snprintf(t->repo, sizeof t->repo, "%s", repo);
  json_t *p = json_object_get(o, "permissions");
  t->has_perms = false;
  t->perms.n = 0;
  if (p) {
    if (!json_is_object(p) || json_object_size(p) == 0 ||
        json_object_size(p) > AL_ARRAY_SIZE(t->perms.items))
      return al_error_set(err, EINVAL, "tokens[].permissions: expected a non-empty object");
    json_object_foreach(p, k, v)
    {
      const char *lvl = json_string_value(v);
      bool w;
      if (!lvl)
        return al_error_set(err, EINVAL, "permission `%s`: level must be a string", k);
      if (al_perm_check(k, lvl, &w, &why) < 0)
        return al_error_set(err, EPERM, "permission `%s`: %s", k, why);
      snprintf(t->perms.items[t->perms.n].name, AL_PERM_NAME_MAX, "%s", k);
      t->perms.items[t->perms.n].write = w;
      t->perms.n++;
    }
    t->has_perms = true;
  }
  return 0;
}

int al_proto_lease_req_from_json(json_t *msg, al_proto_lease_req *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  const char *k;
  json_t *v;
  json_object_foreach(msg, k, v)
  {
    if (strcmp(k, "type") && strcmp(k, "version") && strcmp(k, "tokens") && strcmp(k, "ttl_ms") &&
        strcmp(k, "secrets"))
      return al_error_set(err, EINVAL, "lease: unknown field `%s`", k);
  }
  json_t *ver = json_object_get(msg, "version");
  if (!json_is_integer(ver) || json_integer_value(ver) != AL_PROTO_VERSION)
    return al_error_set(err, EINVAL, "lease: protocol version %d expected", AL_PROTO_VERSION);
  json_t *ttl = json_object_get(msg, "ttl_ms");
  if (ttl) {
    if (!json_is_integer(ttl) || json_integer_value(ttl) < 1000)
      return al_error_set(err, EINVAL, "lease: ttl_ms must be an integer >= 1000");
    out->ttl_ms = (uint64_t)json_integer_value(ttl);
  }
  json_t *toks = json_object_get(msg, "tokens");
  if (!json_is_array(toks) || json_array_size(toks) == 0 || json_array_size(toks) > AL_ROLE_COUNT)
    return al_error_set(err, EINVAL, "lease: `tokens` must list 1 or 2 roles");
  size_t i;
  json_array_foreach(toks, i, v)
  {
    if (token_req_from_json(v, &out->tokens[i], err) < 0)
      return -1;
    for (size_t j = 0; j < i; j++)
      if (out->tokens[j].role == out->tokens[i].role)
        return al_error_set(err, EINVAL, "lease: role `%s` asked twice",
                            al_role_name(out->tokens[i].role));
    out->n_tokens++;
  }
  json_t *sec = json_object_get(msg, "secrets");
  if (sec) {
    if (!json_is_array(sec) || json_array_size(sec) == 0 ||
        json_array_size(sec) > AL_PROTO_SECRETS_MAX)
      return al_error_set(err, EINVAL, "lease: `secrets` must list 1 to %d secret names",
                          AL_PROTO_SECRETS_MAX);
    json_array_foreach(sec, i, v)
    {
      const char *name = json_string_value(v);
      const char *why;
      if (!name || strlen(name) != json_string_length(v) || al_secret_name_check(name, &why) < 0)
        return al_error_set(err, EINVAL,
                            "lease: secrets[%zu]: expected a name of [a-z0-9_], 1 to 63 characters",
                            i);
      for (size_t j = 0; j < out->n_secrets; j++)
        if (strcmp(out->secrets[j], name) == 0)
          return al_error_set(err, EINVAL, "lease: secret `%s` asked twice", name);
      snprintf(out->secrets[out->n_secrets++], AL_SECRET_NAME_MAX, "%s", name);
    }
  }
  return 0;
}

json_t *al_proto_audit_req_to_json(const al_proto_audit_req *req)
{
  json_t *m =
      json_pack("{s:s, s:i, s:s}", "type", "audit", "version", AL_PROTO_VERSION, "repo", req->repo);
  if (req->branch[0])
    json_object_set_new(m, "branch", json_string(req->branch));
  if (req->run_prefix[0])
    json_object_set_new(m, "run_prefix", json_string(req->run_prefix));
  return m;
}

/* git-check-ref-format(1), for a branch: the rules that matter for a name
 * that goes into an API path. */
static bool branch_ok(const char *b)
{
  size_t n = strlen(b);
  if (n == 0 || n > 255 || b[0] == '-' || b[0] == '/' || b[n - 1] == '/' || b[n - 1] == '.' ||
      strstr(b, "..") || strstr(b, "@{") || strstr(b, "//") ||
      (n >= 5 && strcmp(b + n - 5, ".lock") == 0))
    return false;
  for (const char *p = b; *p; p++)
    if ((unsigned char)*p < 0x21 || *p == 0x7f || strchr("~^:?*[\\", *p))
      return false;
  return true;
}

/* The policy's review.branch_prefix rule (policy/schema.c), for the run
 * branches the audit's ci.* criteria judge. */
static bool run_prefix_ok(const char *s)
{
  size_t n = strlen(s);
  if (n < 2 || n > 64 || s[n - 1] != '/' || s[0] == '/' || strstr(s, "..") || strstr(s, "//"))
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("/-_.", *p)))
      return false;
  return true;
}

int al_proto_audit_req_from_json(json_t *msg, al_proto_audit_req *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  const char *k;
  json_t *v;
  json_object_foreach(msg, k, v)
  {
    if (strcmp(k, "type") && strcmp(k, "version") && strcmp(k, "repo") && strcmp(k, "branch") &&
        strcmp(k, "run_prefix"))
      return al_error_set(err, EINVAL, "audit: unknown field `%s`", k);
  }
  json_t *ver = json_object_get(msg, "version");
  if (!json_is_integer(ver) || json_integer_value(ver) != AL_PROTO_VERSION)
    return al_error_set(err, EINVAL, "audit: protocol version %d expected", AL_PROTO_VERSION);
  const char *repo = json_string_value(json_object_get(msg, "repo"));
  const char *why;
  if (!repo || strlen(repo) >= sizeof out->repo || al_forge_repo_check(repo, &why) < 0)
    return al_error_set(err, EINVAL,
                        "audit: `repo` must be OWNER/REPO (or a GitLab GROUP[/SUB...]/PROJECT)");
  snprintf(out->repo, sizeof out->repo, "%s", repo);
  json_t *b = json_object_get(msg, "branch");
  if (b) {
    const char *bs = json_string_value(b);
    if (!bs || strlen(bs) != json_string_length(b) || !branch_ok(bs))
      return al_error_set(err, EINVAL, "audit: `branch` is not a valid branch name");
    snprintf(out->branch, sizeof out->branch, "%s", bs);
  }
  json_t *rp = json_object_get(msg, "run_prefix");
  if (rp) {
    const char *ps = json_string_value(rp);
    if (!ps || strlen(ps) != json_string_length(rp) || !run_prefix_ok(ps))
      return al_error_set(err, EINVAL,
                          "audit: `run_prefix` must be a branch prefix ending in `/`, like "
                          "airlock/");
    snprintf(out->run_prefix, sizeof out->run_prefix, "%s", ps);
  }
  return 0;
}

char *al_proto_line(json_t *msg, size_t *len)
{
  char *s = json_dumps(msg, JSON_COMPACT);
  if (!s)
    abort();
  size_t n = strlen(s);
  char *line = al_xmalloc(n + 2);
  memcpy(line, s, n);
  line[n] = '\n';
  line[n + 1] = '\0';
  for (size_t i = 0; i < n; i++)
    s[i] = 0;
  free(s);
  *len = n + 1;
  return line;
}
