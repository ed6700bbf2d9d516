/* Policy loader: bytes → libfyaml document → validated al_policy, its
 * defaults, its canonical form and hash.
 *
 * The schema (every key, its type, range and rule) is in schema.c, read by
 * the one YAML walker (common/yamlwalk.h): unknown and duplicate keys,
 * wrong types, bad values, anchors, aliases and tags are refused with
 * "FILE:LINE:COL: PATH: rule". This file checks what comes before the walk
 * (size, UTF-8, NUL bytes, one document) and the rules across sections
 * after it (relay defaults, pins that name an allowed host). */
#include "policy/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include "common/lazyfyaml.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/schema.h"

#define POLICY_MAX_BYTES (1024 * 1024)

/* ---- credentials ---- */

bool al_policy_env_reserved(const char *name)
{
  static const char *const exact[] = {"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", NULL};
  static const char *const nocase[] = {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", NULL};
  if (strncmp(name, "AIRLOCK_", 8) == 0 || strncmp(name, "GIT_CONFIG_", 11) == 0)
    return true;
  for (size_t i = 0; exact[i]; i++)
    if (strcmp(name, exact[i]) == 0)
      return true;
  for (size_t i = 0; nocase[i]; i++)
    if (strcasecmp(name, nocase[i]) == 0)
      return true;
  return false;
}

const char *al_cred_mode_name(al_cred_mode m)
{
  return m == AL_CRED_ENV ? "env" : "sealed";
}

/* ---- relay (the model relay, issues #10 and #17) ---- */

static json_t *str_array(char **v, size_t n)
{
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_string(v[i]));
  return a;
}

/* The vendor of an upstream that does not name one: by its host, else by
 * its auth style, else Anthropic (what `relay:` meant before #17). */
static const char *guess_vendor(const al_relay_upstream *u)
{
  size_t hl = strlen(u->host);
  if (strcmp(u->host, "api.openai.com") == 0 ||
      (hl > 11 && !strcmp(u->host + hl - 11, ".openai.com")))
    return "openai";
  if (strcmp(u->host, "api.anthropic.com") == 0)
    return "anthropic";
  if (u->auth && strcmp(u->auth, "bearer") == 0)
    return "openai";
  return "anthropic";
}

/* After parsing: required keys, vendor defaults (auth, routes), routes
 * unique across upstreams (a path picks its upstream). */
static int relay_finish(al_policy_relay *r, const char *name, al_error *err)
{
  if (r->n_upstreams == 0 || !r->upstreams[0].upstream)
    return al_error_set(err, EINVAL,
                        "%s:%d: relay.upstream: required (https://HOST[:PORT]), or relay.upstreams",
                        name, r->line);
  size_t brokers = 0;
  for (size_t i = 0; i < r->n_upstreams; i++) {
    al_relay_upstream *u = &r->upstreams[i];
    char where[32] = "relay";
    if (r->listed)
      snprintf(where, sizeof where, "relay.upstreams[%zu]", i);
    if (!u->key_file && !u->key_broker)
      return al_error_set(err, EINVAL,
                          "%s:%d: %s.key_file: required (a 0600 file the supervisor reads), or "
                          "`key: broker` (the `model_key` secret of the run's broker lease)",
                          name, r->line, where);
    if (u->key_file && u->key_broker)
      return al_error_set(err, EINVAL,
                          "%s:%d: %s: `key_file` and `key: broker` are exclusive; give one of them",
                          name, r->line, where);
    brokers += u->key_broker;
    if (!u->vendor)
      u->vendor = al_xstrdup(guess_vendor(u));
    bool openai = strcmp(u->vendor, "openai") == 0;
    if (!u->auth)
      u->auth = al_xstrdup(openai ? "bearer" : "x-api-key");
    if (!openai && (u->organization || u->project))
      return al_error_set(err, EINVAL, "%s:%d: %s: organization/project are OpenAI headers", name,
                          r->line, where);
    if (openai && u->n_betas)
      return al_error_set(err, EINVAL, "%s:%d: %s: anthropic_beta needs vendor: anthropic", name,
                          r->line, where);
    if (u->n_routes == 0) {
      static const char *const anth[] = {"/v1/messages", "/v1/messages/count_tokens"};
      static const char *const oai[] = {"/v1/responses", "/v1/chat/completions"};
      const char *const *def = openai ? oai : anth;
      u->routes = al_xcalloc(2, sizeof *u->routes);
      for (size_t k = 0; k < 2; k++) {
        u->routes[k].method = al_xstrdup("POST");
        u->routes[k].path = al_xstrdup(def[k]);
      }
      u->n_routes = 2;
    }
  }
  if (brokers > 1)
    return al_error_set(err, EINVAL,
                        "%s:%d: relay: only one upstream can take its key from the broker "
                        "(`key: broker`, the `model_key` secret); give the others key_file",
                        name, r->line);
  for (size_t i = 0; i < r->n_upstreams; i++)
    for (size_t k = 0; k < r->upstreams[i].n_routes; k++)
      for (size_t j = i + 1; j < r->n_upstreams; j++)
        for (size_t m = 0; m < r->upstreams[j].n_routes; m++)
          if (strcmp(r->upstreams[i].routes[k].path, r->upstreams[j].routes[m].path) == 0)
            return al_error_set(err, EINVAL,
                                "%s:%d: relay.upstreams[%zu] and [%zu] both route `%s`: a path "
                                "picks one upstream",
                                name, r->line, i, j, r->upstreams[i].routes[k].path);
  return 0;
}

static json_t *relay_upstream_json(const al_relay_upstream *u)
{
  json_t *routes = json_array();
  for (size_t i = 0; i < u->n_routes; i++) {
    al_autofree char *s = al_strdup_printf("%s %s", u->routes[i].method, u->routes[i].path);
    json_array_append_new(routes, json_string(s));
  }
  return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s?, s:s*, s:s?, s:s?, s:s*, s:o, s:o, s:o, "
                   "s:o, s:s?, s:s?}",
                   "vendor", u->vendor, "upstream", u->upstream, "host", u->host, "port",
                   (int)u->port, "prefix", u->prefix ? u->prefix : "", "auth", u->auth, "key_file",
                   u->key_file, "key", u->key_broker ? "broker" : NULL, "ca_file", u->ca_file,
                   "pin", u->pin, "pubkey_pin", u->pubkey_pin, "routes", routes, "allow",
                   str_array(u->allow, u->n_allow), "headers", str_array(u->headers, u->n_headers),
                   "anthropic_beta", str_array(u->betas, u->n_betas), "organization",
                   u->organization, "project", u->project);
}

static json_t *relay_json(const al_policy_relay *r)
{
  json_t *ups = json_array();
  for (size_t i = 0; i < r->n_upstreams; i++)
    json_array_append_new(ups, relay_upstream_json(&r->upstreams[i]));
  return json_pack("{s:o, s:I, s:{s:I, s:I}, s:I, s:{s:I, s:I, s:I, s:I}}", "upstreams", ups,
                   "max_request", (json_int_t)r->max_request, "budget", "requests",
                   (json_int_t)r->budget_requests, "tokens", (json_int_t)r->budget_tokens,
                   "max_connections", (json_int_t)r->max_conns, "timeouts_ms", "connect",
                   (json_int_t)r->connect_timeout_ms, "first_byte",
                   (json_int_t)r->first_byte_timeout_ms, "idle", (json_int_t)r->idle_timeout_ms,
                   "total", (json_int_t)r->total_timeout_ms);
}

char *al_policy_relay_canonical(const al_policy *p)
{
  if (!p->relay.present)
    return NULL;
  json_t *j = relay_json(&p->relay);
  char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(j);
  return s;
}

static void free_strv(char **v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void al_policy_relay_clear(al_policy_relay *r)
{
  for (size_t i = 0; i < r->n_upstreams; i++) {
    al_relay_upstream *u = &r->upstreams[i];
    free(u->vendor);
    free(u->upstream);
    free(u->host);
    free(u->prefix);
    free(u->auth);
    free(u->key_file);
    free(u->ca_file);
    free(u->pubkey_pin);
    free(u->pin);
    for (size_t k = 0; k < u->n_routes; k++) {
      free(u->routes[k].method);
      free(u->routes[k].path);
    }
    free(u->routes);
    free_strv(u->allow, u->n_allow);
    free_strv(u->headers, u->n_headers);
    free_strv(u->betas, u->n_betas);
    free(u->organization);
    free(u->project);
  }
  free(r->upstreams);
  memset(r, 0, sizeof *r);
}

const al_relay_upstream *al_policy_relay_key_broker(const al_policy *p)
{
  for (size_t i = 0; p->relay.present && i < p->relay.n_upstreams; i++)
    if (p->relay.upstreams[i].key_broker)
      return &p->relay.upstreams[i];
  return NULL;
}

static void set_defaults(al_policy *p)
{
  p->version = 1;
  p->network.max_conns = 64;
  p->network.head_timeout_ms = 10000;
  p->network.transparent = true;
  p->network.connect_timeout_ms = 10000;
  p->network.idle_timeout_ms = 300000;
  p->network.max_tunnel_ms = 3600000;
  p->filesystem.workspace_size = 2ull << 30;
  p->filesystem.tmp_size = 512ull << 20;
  p->process.user = 1000;
  p->process.limits.memory = 4ull << 30;
  p->process.limits.pids = 512;
  p->process.limits.wall_ms = 60 * 60000;
  p->process.limits.nofile = 4096;
  p->credentials.ttl_ms = 15 * 60000;
  p->credentials.mode = AL_CRED_SEALED; /* issue #15: the tokens stay outside */
  p->branch_prefix = al_xstrdup("airlock/");
  p->forge.api_url = al_xstrdup("https://api.github.com");
  p->forge.git_url = al_xstrdup("https://github.com");
}

static int finish(al_policy *p, const char *name, al_error *err)
{
  p->source = al_xstrdup(name);
  if (p->relay.present && relay_finish(&p->relay, name, err) < 0)
    return -1;
  if (p->credentials.present) {
    const al_policy_role *roles[] = {&p->credentials.git, &p->credentials.ticket};
    const char *const names[] = {"credentials.git.repo", "credentials.ticket.repo"};
    const char *why;
    for (size_t i = 0; p->forge.kind != AL_FORGE_GITLAB && i < 2; i++)
      if (roles[i]->present && roles[i]->repo && al_repo_name_check(roles[i]->repo, &why) < 0)
        return al_error_set(err, EINVAL,
                            "%s:%d:%d: %s: `%s` must be OWNER/REPO: %s (a GitLab GROUP/SUB/"
                            "PROJECT only with forge.kind: gitlab)",
                            name, roles[i]->repo_line, roles[i]->repo_col, names[i], roles[i]->repo,
                            why);
    if (!p->credentials.broker)
      p->credentials.broker = al_xstrdup("/run/airlock/broker.sock");
    if (p->credentials.mode == AL_CRED_ENV && p->credentials.agent_comments)
      return al_error_set(err, EINVAL,
                          "%s: credentials.agent_comments: only with `mode: sealed` (in env mode "
                          "the agent holds the ticket token and the gateway counts nothing)",
                          name);
  }
  for (size_t i = 0; i < p->network.n_pin; i++) {
    bool used = false;
    for (size_t j = 0; j < p->network.n_allow; j++)
      if (!p->network.allow[j].wildcard &&
          strcmp(p->network.allow[j].host, p->network.pin[i].host) == 0)
        used = true;
    if (!used)
      return al_error_set(err, EINVAL,
                          "%s:%d: network.pin: `%s` is pinned but not in network.allow (a pin "
                          "only says where an allowed name is)",
                          name, p->network.pin[i].line, p->network.pin[i].host);
  }
  return 0;
}

const char *al_policy_sha256(al_policy *p)
{
  if (!p->sha256[0]) {
    al_autofree char *canon = al_policy_canonical(p);
    al_sha256_hex(canon, strlen(canon), p->sha256);
  }
  return p->sha256;
}

int al_policy_load_buffer(const char *name, const char *buf, size_t len, al_policy **out,
                          al_error *err)
{
  al_yw w = {.name = name, .err = err, .flags = AL_YW_STRICT};
  if (al_yw_open(&w, buf, len, POLICY_MAX_BYTES, "empty policy (at least `version: 1`)") < 0)
    return -1;
  al_policy *p = al_xcalloc(1, sizeof *p);
  set_defaults(p);
  int r = al_policy_walk(&w, fy_document_root(w.doc), p);
  if (r == 0)
    r = finish(p, name, err);
  al_yw_close(&w);
  if (r < 0) {
    al_policy_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

int al_policy_load_file(const char *path, al_policy **out, al_error *err)
{
  al_autofree char *buf = NULL;
  size_t len = 0;
  if (al_read_file(path, POLICY_MAX_BYTES, &buf, &len, err) < 0)
    return -1;
  return al_policy_load_buffer(path, buf, len, out, err);
}

int al_policy_load_or_default(const char *path, al_policy **out, al_error *err)
{
  return path ? al_policy_load_file(path, out, err) : al_policy_default(out, err);
}

/* The built-in default is the policy file `version: 1`: the defaults and
 * nothing else. Built as data, not parsed, so `airlock run` without -p
 * never loads the YAML parser (common/lazyfyaml.h); tests/unit/
 * test_policy.c checks it equals the parsed text field by field. */
int al_policy_default(al_policy **out, al_error *err)
{
  al_policy *p = al_xcalloc(1, sizeof *p);
  set_defaults(p);
  if (finish(p, "<default>", err) < 0) {
    al_policy_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

static json_t *role_json(const al_policy_role *r)
{
  if (!r->present)
    return json_null();
  json_t *perms = json_object();
  for (size_t i = 0; i < r->n_perms; i++)
    json_object_set_new(perms, r->perms[i].name, json_string(al_perm_level(&r->perms[i])));
  return json_pack("{s:s?, s:o}", "repo", r->repo, "permissions", perms);
}

static int cmp_json_compact(const void *a, const void *b)
{
  char *x = json_dumps(*(json_t *const *)a, JSON_SORT_KEYS | JSON_COMPACT);
  char *y = json_dumps(*(json_t *const *)b, JSON_SORT_KEYS | JSON_COMPACT);
  int r = strcmp(x ? x : "", y ? y : "");
  free(x);
  free(y);
  return r;
}

/* Sort a JSON array of objects by their compact, key-sorted text. */
static void sort_entries(json_t *arr)
{
  size_t n = json_array_size(arr);
  if (n < 2)
    return;
  json_t **v = al_xcalloc(n, sizeof(json_t *));
  for (size_t i = 0; i < n; i++)
    v[i] = json_incref(json_array_get(arr, i));
  qsort(v, n, sizeof(json_t *), cmp_json_compact);
  json_array_clear(arr);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(arr, v[i]);
  free(v);
}

char *al_policy_canonical(const al_policy *p)
{
  json_t *root = json_object();
  json_object_set_new(root, "version", json_integer(p->version));
  if (p->network.present) {
    const al_policy_network *n = &p->network;
    json_t *allow = json_array();
    for (size_t i = 0; i < n->n_allow; i++) {
      const al_net_allow *a = &n->allow[i];
      al_autofree char *h = al_strdup_printf("%s%s", a->wildcard ? "*." : "", a->host);
      json_array_append_new(
          allow, json_pack("{s:s, s:i, s:b}", "host", h, "port", (int)a->port, "tls", a->tls));
    }
    json_t *pins = json_array();
    for (size_t i = 0; i < n->n_pin; i++)
      json_array_append_new(
          pins, json_pack("{s:s, s:s}", "host", n->pin[i].host, "address", n->pin[i].address));
    /* The allowlist and the pins are sets: their order in the file does not
     * change what is enforced, so it does not change the hash either. */
    sort_entries(allow);
    sort_entries(pins);
    json_object_set_new(
        root, "network",
        json_pack("{s:o, s:o, s:s?, s:I, s:I, s:{s:I, s:I, s:I, s:I}}", "allow", allow, "pin", pins,
                  "resolver", n->resolver, "max_connections", (json_int_t)n->max_conns,
                  "egress_budget", (json_int_t)n->egress_budget, "timeouts_ms", "head",
                  (json_int_t)n->head_timeout_ms, "connect", (json_int_t)n->connect_timeout_ms,
                  "idle", (json_int_t)n->idle_timeout_ms, "tunnel", (json_int_t)n->max_tunnel_ms));
    /* only when off: the hash of every policy that leaves it on is unchanged */
    if (!n->transparent)
      json_object_set_new(json_object_get(root, "network"), "transparent", json_false());
  } else {
    json_object_set_new(root, "network", json_string("none"));
  }
  const al_policy_filesystem *f = &p->filesystem;
  json_object_set_new(root, "filesystem",
                      json_pack("{s:s, s:I, s:I, s:o, s:s?}", "root", f->root ? f->root : "host",
                                "workspace_size", (json_int_t)f->workspace_size, "tmp_size",
                                (json_int_t)f->tmp_size, "ro_paths",
                                str_array(f->ro_paths, f->n_ro_paths), "image", f->image));
  /* the overrides, only when used (a policy without them keeps its hash) */
  if (f->n_sensitive_ro_paths)
    json_object_set_new(json_object_get(root, "filesystem"), "sensitive_ro_paths",
                        str_array(f->sensitive_ro_paths, f->n_sensitive_ro_paths));
  const al_policy_limits *l = &p->process.limits;
  json_object_set_new(
      root, "process",
      json_pack("{s:i, s:o, s:{s:I, s:i, s:i, s:I, s:i}}", "user", (int)p->process.user, "env_pass",
                str_array(p->process.env_pass, p->process.n_env_pass), "limits", "memory",
                (json_int_t)l->memory, "pids", (int)l->pids, "cpu_milli", (int)l->cpu_milli,
                "wall_ms", (json_int_t)l->wall_ms, "nofile", (int)l->nofile));
  if (p->process.n_secret_env)
    json_object_set_new(json_object_get(root, "process"), "secret_env",
                        str_array(p->process.secret_env, p->process.n_secret_env));
  if (p->credentials.present)
    json_object_set_new(root, "credentials",
                        json_pack("{s:s?, s:o, s:o, s:I, s:s, s:i}", "broker",
                                  p->credentials.broker, "git", role_json(&p->credentials.git),
                                  "ticket", role_json(&p->credentials.ticket), "ttl_ms",
                                  (json_int_t)p->credentials.ttl_ms, "mode",
                                  al_cred_mode_name(p->credentials.mode), "agent_comments",
                                  (int)p->credentials.agent_comments));
  json_object_set_new(
      root, "review",
      json_pack("{s:s, s:s?}", "branch_prefix", p->branch_prefix, "base_branch", p->base_branch));
  json_object_set_new(root, "forge",
                      json_pack("{s:s, s:s, s:s, s:s?}", "kind", al_forge_kind_names[p->forge.kind],
                                "api_url", p->forge.api_url, "git_url", p->forge.git_url, "ca_file",
                                p->forge.ca_file));
  if (p->relay.present)
    json_object_set_new(root, "relay", relay_json(&p->relay));
  if (p->ticket.present) {
    static const char *const kinds[] = {"github", "jira", "linear"};
    json_object_set_new(
        root, "ticket",
        json_pack("{s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?}", "kind",
                  kinds[p->ticket.kind >= 0 && p->ticket.kind <= 2 ? p->ticket.kind : 0], "url",
                  p->ticket.url, "project", p->ticket.project, "team", p->ticket.team, "user",
                  p->ticket.user, "ca_file", p->ticket.ca_file, "token_file",
                  p->ticket.token_file));
  }
  char *s = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(root);
  if (!s)
    s = al_xstrdup("{}");
  return s;
}

static void free_role(al_policy_role *r)
{
  free(r->repo);
  free(r->perms);
}

void al_policy_free(al_policy *p)
{
  if (!p)
    return;
  for (size_t i = 0; i < p->n_warnings; i++)
    free(p->warnings[i]);
  free(p->warnings);
  for (size_t i = 0; i < p->n_loud; i++)
    free(p->loud[i]);
  free(p->loud);
  for (size_t i = 0; i < p->filesystem.n_sensitive_ro_paths; i++)
    free(p->filesystem.sensitive_ro_paths[i]);
  free(p->filesystem.sensitive_ro_paths);
  for (size_t i = 0; i < p->process.n_secret_env; i++)
    free(p->process.secret_env[i]);
  free(p->process.secret_env);
  for (size_t i = 0; i < p->network.n_allow; i++)
    free(p->network.allow[i].host);
  free(p->network.allow);
  for (size_t i = 0; i < p->network.n_pin; i++) {
    free(p->network.pin[i].host);
    free(p->network.pin[i].address);
  }
  free(p->network.pin);
  free(p->network.resolver);
  free(p->filesystem.root);
  for (size_t i = 0; i < p->filesystem.n_ro_paths; i++)
    free(p->filesystem.ro_paths[i]);
  free(p->filesystem.ro_paths);
  free(p->filesystem.image);
  for (size_t i = 0; i < p->process.n_env_pass; i++)
    free(p->process.env_pass[i]);
  free(p->process.env_pass);
  free(p->credentials.broker);
  free_role(&p->credentials.git);
  free_role(&p->credentials.ticket);
  free(p->branch_prefix);
  free(p->base_branch);
  free(p->forge.api_url);
  free(p->forge.git_url);
  free(p->forge.ca_file);
  free(p->ticket.url);
  free(p->ticket.project);
  free(p->ticket.team);
  free(p->ticket.user);
  free(p->ticket.ca_file);
  free(p->ticket.token_file);
  al_policy_relay_clear(&p->relay);
  free(p->source);
  free(p);
}
