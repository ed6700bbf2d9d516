/* The model relay's configuration: the policy's canonical `relay` object
 * (al_policy_relay_canonical, what `airlock relay --config-json` reads)
 * back into an al_policy_relay. See relay.h for the contract. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "relay/relay.h"
#include "relay/rules.h"

static int jstr(json_t *o, const char *k, bool opt, char **out, al_error *err)
{
  json_t *v = json_object_get(o, k);
  if (!v || json_is_null(v)) {
    if (opt)
      return 0;
    return al_error_set(err, EINVAL, "relay config: `%s` missing", k);
  }
  if (!json_is_string(v))
    return al_error_set(err, EINVAL, "relay config: `%s` must be a string", k);
  *out = al_xstrdup(json_string_value(v));
  return 0;
}

static int juint(json_t *o, const char *k, uint64_t *out, al_error *err)
{
  json_t *v = json_object_get(o, k);
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return al_error_set(err, EINVAL, "relay config: `%s` must be a whole number", k);
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

static int jstrv(json_t *o, const char *k, char ***out, size_t *n, al_error *err)
{
  json_t *a = json_object_get(o, k);
  if (!a || json_is_null(a))
    return 0;
  if (!json_is_array(a) || json_array_size(a) > 1024)
    return al_error_set(err, EINVAL, "relay config: `%s` must be a list of strings", k);
  *out = al_xcalloc(json_array_size(a) + 1, sizeof(char *));
  for (size_t i = 0; i < json_array_size(a); i++) {
    const char *v = json_string_value(json_array_get(a, i));
    if (!v)
      return al_error_set(err, EINVAL, "relay config: `%s` must be a list of strings", k);
    (*out)[(*n)++] = al_xstrdup(v);
  }
  return 0;
}

static int upstream_from_json(json_t *o, al_relay_upstream *u, al_error *err)
{
  uint64_t port = 0;
  json_t *routes = json_object_get(o, "routes");
  if (!json_is_object(o))
    return al_error_set(err, EINVAL, "relay config: an upstream must be an object");
  json_t *kb = json_object_get(o, "key");
  u->key_broker = json_is_string(kb) && strcmp(json_string_value(kb), "broker") == 0;
  if (jstr(o, "vendor", false, &u->vendor, err) < 0 ||
      jstr(o, "upstream", false, &u->upstream, err) < 0 ||
      jstr(o, "host", false, &u->host, err) < 0 || jstr(o, "prefix", false, &u->prefix, err) < 0 ||
      jstr(o, "auth", false, &u->auth, err) < 0 ||
      jstr(o, "key_file", true, &u->key_file, err) < 0 ||
      jstr(o, "ca_file", true, &u->ca_file, err) < 0 || jstr(o, "pin", true, &u->pin, err) < 0 ||
      jstr(o, "pubkey_pin", true, &u->pubkey_pin, err) < 0 ||
      jstr(o, "organization", true, &u->organization, err) < 0 ||
      jstr(o, "project", true, &u->project, err) < 0 || juint(o, "port", &port, err) < 0 ||
      jstrv(o, "allow", &u->allow, &u->n_allow, err) < 0 ||
      jstrv(o, "headers", &u->headers, &u->n_headers, err) < 0 ||
      jstrv(o, "anthropic_beta", &u->betas, &u->n_betas, err) < 0)
    return -1;
  if (port == 0 || port > 65535 || !json_is_array(routes) || json_array_size(routes) == 0 ||
      json_array_size(routes) > 1024)
    return al_error_set(err, EINVAL, "relay config: bad port or routes");
  if (strcmp(u->auth, "x-api-key") != 0 && strcmp(u->auth, "bearer") != 0)
    return al_error_set(err, EINVAL, "relay config: auth must be x-api-key or bearer");
  if (!al_relay_ruleset_find(u->vendor))
    return al_error_set(err, EINVAL, "relay config: vendor must be anthropic or openai");
  u->port = (uint16_t)port;
  u->routes = al_xcalloc(json_array_size(routes), sizeof *u->routes);
  for (size_t i = 0; i < json_array_size(routes); i++) {
    const char *s = json_string_value(json_array_get(routes, i));
    const char *sp = s ? strchr(s, ' ') : NULL;
    if (!sp || sp[1] != '/')
      return al_error_set(err, EINVAL, "relay config: route %zu must be `METHOD /path`", i);
    u->routes[i].method = strndup(s, (size_t)(sp - s));
    u->routes[i].path = al_xstrdup(sp + 1);
    u->n_routes = i + 1;
  }
  return 0;
}

int al_relay_config_from_json(const char *text, al_policy_relay *r, al_error *err)
{
  memset(r, 0, sizeof *r);
  json_error_t je;
  json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!json_is_object(o)) {
    json_decref(o);
    return al_error_set(err, EINVAL, "relay config: not a JSON object: %s", je.text);
  }
  uint64_t conns = 0;
  json_t *b = json_object_get(o, "budget"), *t = json_object_get(o, "timeouts_ms");
  json_t *ups = json_object_get(o, "upstreams");
  int rc = -1;
  if (juint(o, "max_request", &r->max_request, err) < 0 ||
      juint(o, "max_connections", &conns, err) < 0 ||
      juint(b, "requests", &r->budget_requests, err) < 0 ||
      juint(b, "tokens", &r->budget_tokens, err) < 0 ||
      juint(t, "connect", &r->connect_timeout_ms, err) < 0 ||
      juint(t, "first_byte", &r->first_byte_timeout_ms, err) < 0 ||
      juint(t, "idle", &r->idle_timeout_ms, err) < 0 ||
      juint(t, "total", &r->total_timeout_ms, err) < 0)
    goto out;
  if (conns == 0 || conns > 1024 || !json_is_array(ups) || json_array_size(ups) == 0 ||
      json_array_size(ups) > 16) {
    al_error_set(err, EINVAL, "relay config: bad max_connections or upstreams");
    goto out;
  }
  r->max_conns = (uint32_t)conns;
  r->upstreams = al_xcalloc(json_array_size(ups), sizeof *r->upstreams);
  for (size_t i = 0; i < json_array_size(ups); i++) {
    r->n_upstreams = i + 1;
    if (upstream_from_json(json_array_get(ups, i), &r->upstreams[i], err) < 0)
      goto out;
  }
  r->present = true;
  rc = 0;
out:
  json_decref(o);
  if (rc < 0)
    al_relay_config_clear(r);
  return rc;
}

void al_relay_config_clear(al_policy_relay *r)
{
  al_policy_relay_clear(r);
}
