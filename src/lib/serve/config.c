/* The service's config: a table of keys (type, validator, default, doc)
 * and one walker over libfyaml's nodes. The table is the schema: the
 * walker refuses any key it does not list, applies the defaults, checks
 * every value with the key's rule and names file:line:col, key and rule
 * in each error. The policy and broker configs walk their YAML by hand
 * today (STYLE.md); this walker is written so they can move onto it. */
#include "serve/config.h"

#include <errno.h>
#include <libfyaml.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/config.h"
#include "common/util.h"

enum cfg_type { T_STR, T_PATH, T_ADDR, T_SIZE, T_DUR, T_UINT, T_ENUM, T_INT_VERSION, T_REPOS };

struct cfg_key {
  const char *key; /* dotted path */
  enum cfg_type type;
  size_t off;        /* offset in al_serve_config */
  bool required;     /* (T_PATH secret_file: required when listen.webhook is set; see check_all) */
  const char *def;   /* default, parsed like the file's text; NULL: none */
  uint64_t min, max; /* T_UINT, T_SIZE, T_DUR bounds */
  const char *choices; /* T_ENUM: "a|b"; the field is a bool, true for b */
  const char *doc;
};

#define OFF(f) offsetof(al_serve_config, f)
static const struct cfg_key keys[] = {
    {"version", T_INT_VERSION, 0, true, NULL, 1, 1, NULL, "the format version: 1"},
    {"listen.webhook", T_ADDR, OFF(listen_webhook), false, "127.0.0.1:8680", 0, 0, NULL,
     "ADDR:PORT of the webhook listener (POST /webhook); \"\" for none"},
    {"listen.status", T_ADDR, OFF(listen_status), false, "127.0.0.1:8681", 0, 0, NULL,
     "ADDR:PORT of the read-only status page, JSON and /metrics; may equal listen.webhook; \"\" "
     "for none"},
    {"webhook.secret_file", T_PATH, OFF(secret_file), false, NULL, 0, 0, NULL,
     "file holding the App's webhook secret (mode 0600 or 0400); required with a webhook "
     "listener"},
    {"webhook.label", T_STR, OFF(label), false, "airlock", 0, 0, NULL,
     "an `issues` event labeled with this label starts a run"},
    {"webhook.command", T_STR, OFF(command), false, "/airlock run", 0, 0, NULL,
     "an `issue_comment` (created) whose first line is this starts a run"},
    {"webhook.max_body", T_SIZE, OFF(max_body), false, "1MiB", 1024, 25u << 20, NULL,
     "the largest webhook body accepted (GitHub caps payloads at 25 MB)"},
    {"broker", T_PATH, OFF(broker), true, NULL, 0, 0, NULL,
     "the broker's socket: trigger checks (collaborator permission, open PRs) run there"},
    {"state_dir", T_PATH, OFF(state_dir), true, NULL, 0, 0, NULL,
     "queue.db (SQLite, WAL), records/ and logs/ of the runs; created 0700"},
    {"runs.max_concurrent", T_UINT, OFF(max_concurrent), false, "4", 1, 256, NULL,
     "runs at once, all repositories"},
    {"runs.max_per_repo", T_UINT, OFF(max_per_repo), false, "2", 1, 256, NULL,
     "runs at once per repository"},
    {"runs.timeout", T_DUR, OFF(timeout_ms), false, "0", 0, 7 * 86400000ull, NULL,
     "the agent's wall clock per run (`airlock ticket --timeout`); 0: the policy's"},
    {"runs.retries", T_UINT, OFF(retries), false, "2", 0, 10, NULL,
     "retries of a run that failed for a transient cause (forge 5xx, network); never for a "
     "refusal"},
    {"runs.backoff", T_DUR, OFF(backoff_ms), false, "30s", 0, 86400000ull, NULL,
     "wait before the first retry, doubled for each next one"},
    {"runs.on_interrupt", T_ENUM, OFF(requeue_interrupted), false, "requeue", 0, 0, "fail|requeue",
     "a run interrupted by a restart of the service: requeue it (after checking the forge for "
     "its PR) or mark it failed"},
    {"runs.backend", T_ENUM, OFF(docker), false, "native", 0, 0, "native|docker",
     "the sandbox backend of each run (`airlock ticket --backend`)"},
    {"runs.agent", T_PATH, OFF(agent), false, NULL, 0, 0, NULL,
     "the agent (`airlock ticket --agent`); default: the bundled patch-agent"},
    {"runs.airlock", T_PATH, OFF(airlock), false, NULL, 0, 0, NULL,
     "the airlock binary each run execs; default: the service's own"},
    {"election.lease", T_STR, OFF(election_lease), false, "", 0, 0, NULL,
     "the coordination.k8s.io/v1 Lease whose holder dequeues (several replicas); \"\": no "
     "election"},
    {"election.namespace", T_STR, OFF(election_namespace), false, "", 0, 0, NULL,
     "the Lease's namespace; \"\": the service account's namespace file"},
    {"election.identity", T_STR, OFF(election_identity), false, "", 0, 0, NULL,
     "this replica's holderIdentity; \"\": the host name (the pod's name)"},
    {"election.api", T_STR, OFF(election_api), false, "", 0, 0, NULL,
     "the API server, https://HOST:PORT; \"\": from KUBERNETES_SERVICE_HOST/PORT"},
    {"election.token_file", T_PATH, OFF(election_token_file), false,
     "/var/run/secrets/kubernetes.io/serviceaccount/token", 0, 0, NULL,
     "the service account token (re-read for every request)"},
    {"election.ca_file", T_PATH, OFF(election_ca_file), false,
     "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", 0, 0, NULL,
     "the CA the API server's certificate must chain to"},
    {"election.duration", T_DUR, OFF(election_duration_ms), false, "15s", 2000, 600000, NULL,
     "leaseDurationSeconds: how long a standby waits after the last renewal it saw"},
    {"election.renew_deadline", T_DUR, OFF(election_renew_ms), false, "10s", 1000, 600000, NULL,
     "the leader stops dequeuing (and stops its runs) this long after its last renewal; less "
     "than duration"},
    {"election.retry", T_DUR, OFF(election_retry_ms), false, "2s", 100, 60000, NULL,
     "between two attempts to acquire or renew; less than renew_deadline"},
    {"repositories", T_REPOS, 0, true, NULL, 1, AL_SERVE_REPOS_MAX, NULL,
     "the repositories served: a list of {repo: OWNER/NAME, policy: PATH}"},
};

struct walker {
  const char *name;
  al_error *err;
  al_serve_config *c;
  bool seen[AL_ARRAY_SIZE(keys)];
};

static void node_pos(struct fy_node *n, int *line, int *col)
{
  /* a scalar's own token; for a collection, its first key's */
  struct fy_token *t = n ? fy_node_get_scalar_token(n) : NULL;
  if (!t && n && fy_node_is_mapping(n)) {
    void *it = NULL;
    struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);
    t = p ? fy_node_get_scalar_token(fy_node_pair_key(p)) : NULL;
  } else if (!t && n && fy_node_is_sequence(n)) {
    void *it = NULL;
    struct fy_node *first = fy_node_sequence_iterate(n, &it);
    t = first ? fy_node_get_scalar_token(first) : NULL;
  }
  const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
  *line = m ? m->line + 1 : 0;
  *col = m ? m->column + 1 : 0;
}

__attribute__((format(printf, 4, 5))) static int werr(struct walker *w, struct fy_node *n,
                                                      const char *key, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  node_pos(n, &line, &col);
  return al_error_set(w->err, EINVAL, "%s:%d:%d: %s: %s", w->name, line, col, key, msg);
}
#define werr(...) (werr(__VA_ARGS__), -1)

/* A scalar's text (malloc'd) or an error naming key. Empty allowed. */
static int scalar(struct walker *w, struct fy_node *v, const char *key, char **out)
{
  if (!v || !fy_node_is_scalar(v) || fy_node_is_alias(v))
    return werr(w, v, key, "expected a scalar");
  size_t len;
  const char *s = fy_node_get_scalar(v, &len);
  if (!s)
    s = "";
  if (memchr(s, '\0', len))
    return werr(w, v, key, "contains a NUL byte");
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return werr(w, v, key, "contains a control character");
  if (len > 4096)
    return werr(w, v, key, "longer than 4096 bytes");
  char *r = al_xmalloc(len + 1);
  memcpy(r, s, len);
  r[len] = '\0';
  *out = r;
  return 0;
}

/* "ADDR:PORT" with a numeric IPv4 or [IPv6] address, or "". */
static const char *addr_rule(const char *s)
{
  if (!*s)
    return NULL;
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s)
    return "expected ADDR:PORT (127.0.0.1:8680, [::1]:8680) or \"\"";
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < 0 || p > 65535 || colon[1] == '\0')
    return "the port must be 0 to 65535 (0: any free port, written to state_dir/listen.json)";
  return NULL;
}

/* Parse text for key k into the config. v is the node (for positions). */
static int set_value(struct walker *w, const struct cfg_key *k, const char *text, struct fy_node *v)
{
  char *base = (char *)w->c;
  const char *why = NULL;
  uint64_t n = 0;
  switch (k->type) {
  case T_STR:
    if (!*text && !(k->def && !k->def[0])) /* a default of "" means "" is allowed */
      return werr(w, v, k->key, "must not be empty");
    free(*(char **)(void *)(base + k->off));
    *(char **)(void *)(base + k->off) = al_xstrdup(text);
    return 0;
  case T_PATH:
    if (text[0] != '/')
      return werr(w, v, k->key, "must be an absolute path");
    free(*(char **)(void *)(base + k->off));
    *(char **)(void *)(base + k->off) = al_xstrdup(text);
    return 0;
  case T_ADDR:
    if ((why = addr_rule(text)))
      return werr(w, v, k->key, "%s", why);
    free(*(char **)(void *)(base + k->off));
    *(char **)(void *)(base + k->off) = al_xstrdup(text);
    return 0;
  case T_SIZE:
    if (al_parse_size(text, &n, &why) < 0)
      return werr(w, v, k->key, "%s", why ? why : "expected a size (64KiB, 1MiB)");
    break;
  case T_DUR:
    if (strcmp(text, "0") == 0)
      n = 0;
    else if (al_parse_duration_ms(text, &n, &why) < 0)
      return werr(w, v, k->key, "%s", why ? why : "expected a duration (30s, 5m, 2h)");
    break;
  case T_UINT:
  case T_INT_VERSION: {
    char *end;
    errno = 0;
    unsigned long long u = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-')
      return werr(w, v, k->key, "expected a whole number");
    n = u;
    break;
  }
  case T_ENUM: {
    const char *bar = strchr(k->choices, '|');
    size_t l0 = (size_t)(bar - k->choices);
    if (strlen(text) == l0 && !strncmp(text, k->choices, l0))
      *(bool *)(base + k->off) = false;
    else if (!strcmp(text, bar + 1))
      *(bool *)(base + k->off) = true;
    else
      return werr(w, v, k->key, "expected %.*s or %s", (int)l0, k->choices, bar + 1);
    return 0;
  }
  case T_REPOS:
  default:
    return werr(w, v, k->key, "internal: no scalar form");
  }
  if (n < k->min || n > k->max) {
    if (k->type == T_INT_VERSION)
      return werr(w, v, k->key, "only version 1 exists");
    if (k->type == T_UINT)
      return werr(w, v, k->key, "must be %llu to %llu", (unsigned long long)k->min,
                  (unsigned long long)k->max);
    return werr(w, v, k->key, "out of range");
  }
  if (k->type != T_INT_VERSION)
    *(uint64_t *)(void *)(base + k->off) = n;
  return 0;
}

static int parse_repos(struct walker *w, const struct cfg_key *k, struct fy_node *v)
{
  if (!v || !fy_node_is_sequence(v))
    return werr(w, v, k->key, "expected a list of {repo: OWNER/NAME, policy: PATH}");
  void *it = NULL;
  struct fy_node *item;
  al_serve_config *c = w->c;
  while ((item = fy_node_sequence_iterate(v, &it))) {
    char path[64];
    snprintf(path, sizeof path, "repositories[%zu]", c->n_repos);
    if (c->n_repos == AL_SERVE_REPOS_MAX)
      return werr(w, item, path, "at most %d repositories", AL_SERVE_REPOS_MAX);
    if (!fy_node_is_mapping(item))
      return werr(w, item, path, "expected {repo: OWNER/NAME, policy: PATH}");
    al_serve_repo *r = &c->repos[c->n_repos];
    void *it2 = NULL;
    struct fy_node_pair *pr;
    while ((pr = fy_node_mapping_iterate(item, &it2))) {
      al_autofree char *name = NULL, *val = NULL;
      if (scalar(w, fy_node_pair_key(pr), path, &name) < 0)
        return -1;
      char kp[128];
      snprintf(kp, sizeof kp, "%s.%s", path, name);
      if (scalar(w, fy_node_pair_value(pr), kp, &val) < 0)
        return -1;
      const char *why;
      if (!strcmp(name, "repo")) {
        if (r->repo)
          return werr(w, fy_node_pair_key(pr), kp, "given twice");
        if (al_repo_name_check(val, &why) < 0)
          return werr(w, fy_node_pair_value(pr), kp, "%s", why);
        r->repo = al_steal_ptr(&val);
      } else if (!strcmp(name, "policy")) {
        if (r->policy)
          return werr(w, fy_node_pair_key(pr), kp, "given twice");
        if (val[0] != '/')
          return werr(w, fy_node_pair_value(pr), kp, "must be an absolute path");
        r->policy = al_steal_ptr(&val);
      } else {
        return werr(w, fy_node_pair_key(pr), kp, "unknown key (repo, policy)");
      }
    }
    if (!r->repo || !r->policy)
      return werr(w, item, path, "needs both repo and policy");
    for (size_t i = 0; i < c->n_repos; i++)
      if (!strcasecmp(c->repos[i].repo, r->repo))
        return werr(w, item, path, "repository %s listed twice", r->repo);
    c->n_repos++;
  }
  if (c->n_repos == 0)
    return werr(w, v, k->key, "at least one repository");
  return 0;
}

static int walk(struct walker *w, struct fy_node *map, const char *prefix)
{
  if (!map || !fy_node_is_mapping(map))
    return werr(w, map, prefix[0] ? prefix : "(document)", "expected a mapping");
  void *it = NULL;
  struct fy_node_pair *pr;
  while ((pr = fy_node_mapping_iterate(map, &it))) {
    al_autofree char *name = NULL;
    if (scalar(w, fy_node_pair_key(pr), prefix[0] ? prefix : "(key)", &name) < 0)
      return -1;
    al_autofree char *full = prefix[0] ? al_strdup_printf("%s.%s", prefix, name) : al_xstrdup(name);
    struct fy_node *v = fy_node_pair_value(pr);
    size_t i;
    for (i = 0; i < AL_ARRAY_SIZE(keys); i++)
      if (!strcmp(keys[i].key, full))
        break;
    if (i < AL_ARRAY_SIZE(keys)) {
      if (w->seen[i])
        return werr(w, fy_node_pair_key(pr), full, "given twice");
      w->seen[i] = true;
      if (keys[i].type == T_REPOS) {
        if (parse_repos(w, &keys[i], v) < 0)
          return -1;
        continue;
      }
      al_autofree char *text = NULL;
      if (scalar(w, v, full, &text) < 0 || set_value(w, &keys[i], text, v) < 0)
        return -1;
      continue;
    }
    size_t fl = strlen(full);
    bool is_section = false;
    for (i = 0; i < AL_ARRAY_SIZE(keys); i++)
      if (!strncmp(keys[i].key, full, fl) && keys[i].key[fl] == '.')
        is_section = true;
    if (!is_section)
      return werr(w, fy_node_pair_key(pr), full,
                  "unknown key (airlock serve --config-doc "
                  "lists them)");
    if (walk(w, v, full) < 0)
      return -1;
  }
  return 0;
}

void al_serve_config_free(al_serve_config *c)
{
  if (!c)
    return;
  for (size_t i = 0; i < AL_ARRAY_SIZE(keys); i++) {
    enum cfg_type t = keys[i].type;
    if (t == T_STR || t == T_PATH || t == T_ADDR)
      free(*(char **)(void *)((char *)c + keys[i].off));
  }
  /* repos[n_repos] may hold a half-read entry when parsing stopped on it */
  for (size_t i = 0; i <= c->n_repos && i < AL_SERVE_REPOS_MAX; i++) {
    free(c->repos[i].repo);
    free(c->repos[i].policy);
  }
  free(c->source);
  free(c);
}

int al_serve_config_load_buffer(const char *name, const char *buf, size_t len,
                                al_serve_config **out, al_error *err)
{
  struct fy_diag_cfg dcfg;
  fy_diag_cfg_default(&dcfg);
  dcfg.fp = NULL;
  dcfg.colorize = false;
  struct fy_diag *diag = fy_diag_create(&dcfg);
  if (!diag)
    return al_make_error(err, ENOMEM, "%s: creating the YAML diagnostics", name);
  fy_diag_set_collect_errors(diag, true);
  struct fy_parse_cfg pcfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
  struct fy_document *doc = fy_document_build_from_string(&pcfg, buf, len);
  if (!doc) {
    void *it = NULL;
    struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
    if (de)
      al_error_set(err, EINVAL, "%s:%d:%d: YAML syntax error: %s", name, de->line + 1,
                   de->column + 1, de->msg ? de->msg : "?");
    else
      al_error_set(err, EINVAL, "%s: YAML syntax error", name);
    fy_diag_destroy(diag);
    return -1;
  }
  struct walker w = {.name = name, .err = err, .c = al_xcalloc(1, sizeof(al_serve_config))};
  w.c->source = al_xstrdup(name);
  int r = 0;
  for (size_t i = 0; i < AL_ARRAY_SIZE(keys) && r == 0; i++)
    if (keys[i].def)
      r = set_value(&w, &keys[i], keys[i].def, NULL);
  if (r == 0)
    r = walk(&w, fy_document_root(doc), "");
  for (size_t i = 0; i < AL_ARRAY_SIZE(keys) && r == 0; i++)
    if (keys[i].required && !w.seen[i])
      r = werr(&w, fy_document_root(doc), keys[i].key, "required (%s)", keys[i].doc);
  if (r == 0 && w.c->listen_webhook[0] && !w.c->secret_file)
    r = werr(&w, fy_document_root(doc), "webhook.secret_file",
             "required when listen.webhook is set (every webhook is authenticated)");
  if (r == 0 && w.c->election_lease[0] &&
      (w.c->election_renew_ms >= w.c->election_duration_ms ||
       w.c->election_retry_ms >= w.c->election_renew_ms))
    r = werr(&w, fy_document_root(doc), "election",
             "needs retry < renew_deadline < duration (a leader must stop before a standby may "
             "take the Lease)");
  fy_document_destroy(doc);
  fy_diag_destroy(diag);
  if (r < 0) {
    al_serve_config_free(w.c);
    return -1;
  }
  *out = w.c;
  return 0;
}

int al_serve_config_load(const char *path, al_serve_config **out, al_error *err)
{
  al_autofree char *buf = NULL;
  size_t len;
  if (al_read_file(path, 1 << 20, &buf, &len, err) < 0)
    return -1;
  return al_serve_config_load_buffer(path, buf, len, out, err);
}

const al_serve_repo *al_serve_config_repo(const al_serve_config *c, const char *repo)
{
  for (size_t i = 0; i < c->n_repos; i++)
    if (!strcasecmp(c->repos[i].repo, repo))
      return &c->repos[i];
  return NULL;
}

void al_serve_config_doc(FILE *f)
{
  static const char *const tn[] = {"string", "path", "ADDR:PORT", "size", "duration",
                                   "number", "enum", "number",    "list"};
  fprintf(f, "| key | type | default | what |\n|---|---|---|---|\n");
  for (size_t i = 0; i < AL_ARRAY_SIZE(keys); i++)
    fprintf(f, "| `%s` | %s%s%s | %s | %s |\n", keys[i].key, tn[keys[i].type],
            keys[i].choices ? ": " : "", keys[i].choices ? keys[i].choices : "",
            keys[i].required ? "required" : (keys[i].def ? keys[i].def : "—"), keys[i].doc);
}
