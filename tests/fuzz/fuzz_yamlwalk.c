/* libFuzzer target: the one YAML walker (src/lib/common/yamlwalk.c) over a
 * schema that uses every field type (the policy's shape: nested mappings,
 * lists of mappings, inline lists, enums, sizes, durations, custom fields),
 * with the policy corpus as seeds. Every config file airlock reads goes
 * through this code, and the policy may come from the repository a ticket
 * runs on. Invariants: a refused document says why, naming the file; what
 * a walk stored is freed by al_yw_free whether it succeeded or not
 * (LeakSanitizer); the same bytes give the same answer twice. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/util.h"
#include "common/yamlwalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct allow {
  char *host;
  uint16_t port;
  bool tls;
};

struct net {
  struct allow *allow;
  size_t n_allow;
  char *resolver;
  uint32_t max_conns;
  uint64_t budget;
  uint64_t head, idle;
};

struct doc {
  uint32_t version;
  struct net net;
  char *root;
  uint64_t ws;
  char **ro;
  size_t n_ro;
  uint32_t user;
  char *env[4];
  size_t n_env;
  int mode;
  uint64_t ttl;
  char *perm;
  int customs;
};

static int any_custom(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  struct doc *d = obj;
  /* a mapping of strings, or a string */
  if (kv->val && fy_node_is_mapping(kv->val)) {
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(kv->val, &it)) != NULL) {
      al_yw_kv k = {fy_node_pair_key(p), fy_node_pair_value(p), kv->path};
      if (al_yw_str(w, &k, &d->perm) < 0)
        return -1;
    }
    d->customs++;
    return 0;
  }
  if (al_yw_str(w, kv, &d->perm) < 0)
    return -1;
  d->customs++;
  return 0;
}

static int last_not_empty(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const struct doc *d = obj;
  if (!d->ro[d->n_ro - 1][0])
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must not be empty");
  return 0;
}

static int allow_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  struct allow *a = obj;
  if (!seen[2])
    a->tls = a->port == 443;
  if (a->host && strchr(a->host, '*') && a->host[0] != '*')
    return al_yw_fail(w, kv->val, kv->path, "bad wildcard");
  return 0;
}

static const al_yw_field allow_fields[] = {
    {.key = "host",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(struct allow, host),
     .min = 1,
     .max = 253},
    {.key = "port",
     .type = AL_YW_UINT,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(struct allow, port),
     .width = 2,
     .min = 1,
     .max = 65535},
    {.key = "tls", .type = AL_YW_BOOL, .off = offsetof(struct allow, tls)},
};
static const al_yw_map allow_map = {allow_fields, AL_ARRAY_SIZE(allow_fields), allow_done};
static const al_yw_field allow_item = {.type = AL_YW_MAP, .map = &allow_map};

static const al_yw_field timeout_fields[] = {
    {.key = "head",
     .type = AL_YW_DURATION,
     .off = offsetof(struct net, head),
     .min = 100,
     .max = 300000},
    {.key = "idle",
     .type = AL_YW_DURATION,
     .off = offsetof(struct net, idle),
     .min = 0,
     .max = 86400000},
};
static const al_yw_map timeout_map = {timeout_fields, AL_ARRAY_SIZE(timeout_fields), NULL};

static const al_yw_field net_fields[] = {
    {.key = "allow",
     .type = AL_YW_LIST,
     .off = offsetof(struct net, allow),
     .off_n = offsetof(struct net, n_allow),
     .item = &allow_item,
     .item_size = sizeof(struct allow)},
    {.key = "resolver", .type = AL_YW_STR, .off = offsetof(struct net, resolver)},
    {.key = "max_connections",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = offsetof(struct net, max_conns),
     .width = 4,
     .min = 1,
     .max = 100000},
    {.key = "egress_budget", .type = AL_YW_SIZE, .off = offsetof(struct net, budget), .min = 1},
    {.key = "timeouts", .type = AL_YW_MAP, .off = 0, .map = &timeout_map},
};
static const al_yw_map net_map = {net_fields, AL_ARRAY_SIZE(net_fields), NULL};

static const al_yw_field str_item = {.type = AL_YW_STR};

static const al_yw_field fs_fields[] = {
    {.key = "root", .type = AL_YW_STR, .off = offsetof(struct doc, root), .def = "host"},
    {.key = "workspace_size",
     .type = AL_YW_SIZE,
     .off = offsetof(struct doc, ws),
     .min = 1 << 20,
     .max = 1ull << 40,
     .def = "2GiB"},
    {.key = "ro_paths",
     .type = AL_YW_LIST,
     .off = offsetof(struct doc, ro),
     .off_n = offsetof(struct doc, n_ro),
     .max = 64,
     .item = &str_item,
     .item_size = sizeof(char *),
     .check = last_not_empty},
};
static const al_yw_map fs_map = {fs_fields, AL_ARRAY_SIZE(fs_fields), NULL};

static const al_yw_field process_fields[] = {
    {.key = "user",
     .type = AL_YW_UINT,
     .off = offsetof(struct doc, user),
     .width = 4,
     .min = 1,
     .max = 65533,
     .def = "1000"},
    {.key = "env_pass",
     .type = AL_YW_LIST,
     .flags = AL_YW_INLINE,
     .off = offsetof(struct doc, env),
     .off_n = offsetof(struct doc, n_env),
     .max = 4,
     .item = &str_item,
     .item_size = sizeof(char *)},
    {.key = "limits", .type = AL_YW_CUSTOM, .parse = any_custom},
};
static const al_yw_map process_map = {process_fields, AL_ARRAY_SIZE(process_fields), NULL};

static const char *const modes[] = {"sealed", "env", NULL};

static const al_yw_field creds_fields[] = {
    {.key = "broker", .type = AL_YW_STR, .off = offsetof(struct doc, root)},
    {.key = "git", .type = AL_YW_CUSTOM, .parse = any_custom},
    {.key = "ticket", .type = AL_YW_CUSTOM, .parse = any_custom},
    {.key = "ttl",
     .type = AL_YW_DURATION,
     .off = offsetof(struct doc, ttl),
     .min = 60000,
     .max = 3600000,
     .def = "15m"},
    {.key = "mode",
     .type = AL_YW_ENUM,
     .off = offsetof(struct doc, mode),
     .width = sizeof(int),
     .choices = modes,
     .def = "sealed"},
};
static const al_yw_map creds_map = {creds_fields, AL_ARRAY_SIZE(creds_fields), NULL};

static const al_yw_field top_fields[] = {
    {.key = "version",
     .type = AL_YW_UINT,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(struct doc, version),
     .width = 4,
     .min = 1,
     .max = 1,
     .rule = "only 1"},
    {.key = "network", .type = AL_YW_MAP, .off = offsetof(struct doc, net), .map = &net_map},
    {.key = "filesystem", .type = AL_YW_MAP, .off = 0, .map = &fs_map},
    {.key = "process", .type = AL_YW_MAP, .off = 0, .map = &process_map},
    {.key = "credentials", .type = AL_YW_MAP, .off = 0, .map = &creds_map},
    {.key = "review", .type = AL_YW_CUSTOM, .parse = any_custom},
    {.key = "forge", .type = AL_YW_CUSTOM, .parse = any_custom},
    {.key = "relay", .type = AL_YW_CUSTOM, .parse = any_custom},
};
static const al_yw_map top_map = {top_fields, AL_ARRAY_SIZE(top_fields), NULL};

/* One walk; the message (or "") into msg. */
static int walk_once(const uint8_t *data, size_t size, unsigned flags, char *msg, size_t n)
{
  al_error err = {0};
  al_yw w = {.name = "fuzz.yaml", .err = &err, .flags = flags};
  if (al_yw_open(&w, (const char *)data, size, 1 << 20, "empty") < 0) {
    if (!err.msg[0] || strncmp(err.msg, "fuzz.yaml", 9) != 0)
      __builtin_trap();
    snprintf(msg, n, "%s", err.msg);
    return -1;
  }
  struct doc *d = al_xcalloc(1, sizeof *d);
  int r = al_yw_defaults(&w, &top_map, d);
  if (r < 0) /* the table's own defaults must keep its rules */
    __builtin_trap();
  al_yw_kv kv = {NULL, fy_document_root(w.doc), ""};
  r = al_yw_walk(&w, &kv, &top_map, d);
  if (r < 0 && (!err.msg[0] || strncmp(err.msg, "fuzz.yaml", 9) != 0))
    __builtin_trap();
  if (r == 0 && d->version != 1) /* required, and only 1 */
    __builtin_trap();
  for (size_t i = 0; r == 0 && i < d->net.n_allow; i++)
    if (!d->net.allow[i].host || !d->net.allow[i].port) /* both required */
      __builtin_trap();
  snprintf(msg, n, "%s", r < 0 ? err.msg : "");
  al_yw_close(&w);
  al_yw_free(&top_map, d);
  free(d->perm);
  free(d);
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char a[AL_ERROR_MSG_MAX], b[AL_ERROR_MSG_MAX];
  unsigned flags = size > 0 && (data[0] & 1) ? AL_YW_STRICT | AL_YW_NO_CTRL : 0;
  int r1 = walk_once(data, size, flags, a, sizeof a);
  int r2 = walk_once(data, size, flags, b, sizeof b);
  if (r1 != r2 || strcmp(a, b) != 0)
    __builtin_trap();
  return 0;
}
