/* The service's config: a table of keys per mapping (type, validator,
 * default, doc) read by the one YAML walker (common/yamlwalk.h), as the
 * policy and the broker's config are. The tables are the schema: the
 * walker refuses any key they do not list, applies the defaults, checks
 * every value with the key's rule and names file:line:col, key and rule
 * in each error; `airlock serve --config-doc` prints the same tables. */
#include "serve/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include "common/lazyfyaml.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "forge/appconfig.h"
#include "common/util.h"
#include "common/yamlwalk.h"

/* "ADDR:PORT" with a numeric IPv4 or [IPv6] address, or "". */
static int addr_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  const char *s = *(char **)(void *)((char *)obj + f->off);
  if (!*s)
    return 0;
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s)
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "expected ADDR:PORT (127.0.0.1:8680, [::1]:8680) or \"\"");
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < 0 || p > 65535 || colon[1] == '\0')
    return al_yw_fail(
        w, al_yw_at(kv), kv->path,
        "the port must be 0 to 65535 (0: any free port, written to state_dir/listen.json)");
  return 0;
}

static int path_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  const char *s = *(char **)(void *)((char *)obj + f->off);
  if (s[0] != '/')
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be an absolute path");
  return 0;
}

static int repo_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const char *why, *why_gl;
  size_t pieces;
  const char *repo = ((const al_serve_repo *)obj)->repo;
  /* GitHub's OWNER/REPO, or a GitLab project's full path (subgroups too):
   * which forge it is on is its policy's forge.kind (checked at start) */
  if (al_repo_name_check(repo, &why) < 0 && al_gitlab_path_check(repo, &pieces, &why_gl) < 0)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "%s; or %s", why, why_gl);
  return 0;
}

/* A trusted proxy: a numeric IPv4 or IPv6 address (no names: a name's
 * address can change under us), given once. */
static int proxy_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_serve_config *c = obj;
  const char *s = c->trusted_proxies[c->n_trusted_proxies - 1];
  unsigned char buf[16];
  if (inet_pton(AF_INET, s, buf) != 1 && inet_pton(AF_INET6, s, buf) != 1)
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "`%s` is not a numeric IPv4 or IPv6 address (no names, no ranges)", s);
  for (size_t i = 0; i + 1 < c->n_trusted_proxies; i++)
    if (!strcmp(c->trusted_proxies[i], s))
      return al_yw_fail(w, al_yw_at(kv), kv->path, "`%s` listed twice", s);
  return 0;
}

/* Only version 1 exists; the number is not stored. */
static int version_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f, (void)obj;
  uint64_t v = 0;
  if (al_yw_uint(w, kv, 0, UINT64_MAX, true, &v) < 0)
    return -1;
  if (v != 1)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "only version 1 exists");
  return 0;
}

#define OFF(f) offsetof(al_serve_config, f)
static const al_yw_field listen_fields[] = {
    {.key = "webhook",
     .type = AL_YW_STR,
     .off = OFF(listen_webhook),
     .check = addr_check,
     .def = "127.0.0.1:8680",
     .shape = "ADDR:PORT",
     .doc = "ADDR:PORT of the webhook listener (POST /webhook); \"\" for none"},
    {.key = "status",
     .type = AL_YW_STR,
     .off = OFF(listen_status),
     .check = addr_check,
     .def = "127.0.0.1:8681",
     .shape = "ADDR:PORT",
     .doc = "ADDR:PORT of the read-only status page, JSON and /metrics; may equal "
            "listen.webhook; \"\" for none"},
    {.key = "timeout",
     .type = AL_YW_DURATION,
     .off = OFF(conn_timeout_ms),
     .min = 1000,
     .max = 3600000,
     .def = "15s",
     .doc = "a connection that sends nothing for this long is closed "
            "(MHD_OPTION_CONNECTION_TIMEOUT, whole seconds)"},
    {.key = "request_deadline",
     .type = AL_YW_DURATION,
     .off = OFF(request_deadline_ms),
     .min = 1000,
     .max = 3600000,
     .def = "30s",
     .doc = "a request's head and body must have arrived this long after it began (a client "
            "sending a byte now and then is cut)"},
    {.key = "max_connections",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(max_connections),
     .min = 4,
     .max = 4096,
     .def = "128",
     .doc = "open connections at once per listener (MHD_OPTION_CONNECTION_LIMIT)"},
    {.key = "max_per_ip",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(max_per_ip),
     .min = 1,
     .max = 4096,
     .def = "16",
     .doc = "open connections per client address; a trusted proxy's connections are not "
            "counted, its clients' requests are, by X-Forwarded-For"},
    {.key = "trusted_proxies",
     .type = AL_YW_LIST,
     .flags = AL_YW_INLINE,
     .off = OFF(trusted_proxies),
     .off_n = OFF(n_trusted_proxies),
     .min = 0,
     .max = AL_SERVE_PROXIES_MAX,
     .item = &(const al_yw_field){.type = AL_YW_STR, .min = 1, .max = 64},
     .item_size = sizeof(char *),
     .check = proxy_check,
     .doc = "numeric addresses of the reverse proxies in front of the listeners: only a "
            "connection from one of them has its X-Forwarded-For believed (its last hop)"},
};
static const al_yw_map listen_map = {listen_fields, AL_ARRAY_SIZE(listen_fields), NULL};

/* A Jira label (one word: Jira's labels hold no space, and the changelog
 * lists them space-separated), a Linear label name, or an account / user
 * id: printable ASCII, no space. */
static int word_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  const char *s = *(char **)(void *)((char *)obj + f->off);
  for (const char *p = s; *p; p++)
    if (*p <= ' ' || *p > '~')
      return al_yw_fail(w, al_yw_at(kv), kv->path,
                        "one word of printable ASCII (no space, no control byte)");
  return 0;
}

/* webhook.jira / webhook.linear, when present: a secret (no unsigned
 * delivery is accepted) and at least one trigger (seen[1], seen[2]: the
 * label and the id, in the tables below). */
static int vendor_done(al_yw *w, const al_yw_kv *kv, const bool *seen, const char *id)
{
  if (!seen[0])
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "secret_file is required (every delivery is authenticated by its HMAC)");
  if (!seen[1] && !seen[2])
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "set label, %s or both (what makes a delivery a trigger)", id);
  return 0;
}

static int jira_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)obj;
  return vendor_done(w, kv, seen, "assignee");
}

static int linear_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)obj;
  return vendor_done(w, kv, seen, "app");
}

static const al_yw_field jira_fields[] = {
    {.key = "secret_file",
     .type = AL_YW_STR,
     .off = OFF(jira_secret_file),
     .check = path_check,
     .shape = "path",
     .doc = "the Jira webhook's secret (mode 0600 or 0400): X-Hub-Signature is checked against it"},
    {.key = "label",
     .type = AL_YW_STR,
     .off = OFF(jira_label),
     .min = 1,
     .max = 255,
     .check = word_check,
     .doc = "an issue created with, or updated to add, this label starts a run"},
    {.key = "assignee",
     .type = AL_YW_STR,
     .off = OFF(jira_assignee),
     .min = 1,
     .max = 128,
     .check = word_check,
     .doc = "the bot's Atlassian accountId: an issue assigned to it starts a run"},
};
static const al_yw_map jira_map = {jira_fields, AL_ARRAY_SIZE(jira_fields), jira_done};

static const al_yw_field linear_fields[] = {
    {.key = "secret_file",
     .type = AL_YW_STR,
     .off = OFF(linear_secret_file),
     .check = path_check,
     .shape = "path",
     .doc = "the Linear webhook's signing secret (mode 0600 or 0400): Linear-Signature is checked "
            "against it"},
    {.key = "label",
     .type = AL_YW_STR,
     .off = OFF(linear_label),
     .min = 1,
     .max = 255,
     .doc = "an issue created with, or updated to add, the label of this name starts a run"},
    {.key = "app",
     .type = AL_YW_STR,
     .off = OFF(linear_app),
     .min = 1,
     .max = 64,
     .check = word_check,
     .doc = "the app user's id (OAuth app, actor=app): an issue assigned or delegated to it starts "
            "a run"},
};
static const al_yw_map linear_map = {linear_fields, AL_ARRAY_SIZE(linear_fields), linear_done};

/* webhook.gitlab, when present: at least one of the two credentials (no
 * unauthenticated delivery is accepted); label and command have GitHub's
 * defaults. */
static int gitlab_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)obj;
  if (!seen[0] && !seen[1])
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "set secret_file (X-Gitlab-Token), signing_token_file (webhook-signature) "
                      "or both (every delivery is authenticated)");
  return 0;
}

static const al_yw_field gitlab_fields[] = {
    {.key = "secret_file",
     .type = AL_YW_STR,
     .off = OFF(gitlab_secret_file),
     .check = path_check,
     .shape = "path",
     .doc = "the GitLab webhook's secret token (mode 0600 or 0400): X-Gitlab-Token must be it "
            "(compared in constant time)"},
    {.key = "signing_token_file",
     .type = AL_YW_STR,
     .off = OFF(gitlab_signing_file),
     .check = path_check,
     .shape = "path",
     .doc = "the GitLab webhook's signing token, whsec_<base64> (mode 0600 or 0400): when set, "
            "every delivery must carry a webhook-signature over webhook-id, webhook-timestamp "
            "(within 5 minutes) and the body"},
    {.key = "label",
     .type = AL_YW_STR,
     .off = OFF(gitlab_label),
     .min = 1,
     .max = 255,
     .def = "airlock",
     .doc = "an Issue Hook that adds this label (changes.labels) starts a run"},
    {.key = "command",
     .type = AL_YW_STR,
     .off = OFF(gitlab_command),
     .min = 1,
     .max = 255,
     .def = "/airlock run",
     .doc = "a Note Hook on an issue whose first line is this starts a run"},
};
static const al_yw_map gitlab_map = {gitlab_fields, AL_ARRAY_SIZE(gitlab_fields), gitlab_done};

static const al_yw_field webhook_fields[] = {
    {.key = "secret_file",
     .type = AL_YW_STR,
     .off = OFF(secret_file),
     .check = path_check,
     .shape = "path",
     .doc = "file holding the App's webhook secret (mode 0600 or 0400); required with a webhook "
            "listener"},
    {.key = "label",
     .type = AL_YW_STR,
     .off = OFF(label),
     .min = 1,
     .def = "airlock",
     .doc = "an `issues` event labeled with this label starts a run"},
    {.key = "command",
     .type = AL_YW_STR,
     .off = OFF(command),
     .min = 1,
     .def = "/airlock run",
     .doc = "an `issue_comment` (created) whose first line is this starts a run"},
    {.key = "max_body",
     .type = AL_YW_SIZE,
     .off = OFF(max_body),
     .min = 1024,
     .max = 25u << 20,
     .def = "1MiB",
     .doc = "the largest webhook body accepted (GitHub caps payloads at 25 MB)"},
    {.key = "jira",
     .type = AL_YW_MAP,
     .map = &jira_map,
     .doc = "POST /webhook/jira (absent: that path answers 404)"},
    {.key = "linear",
     .type = AL_YW_MAP,
     .map = &linear_map,
     .doc = "POST /webhook/linear (absent: that path answers 404)"},
    {.key = "gitlab",
     .type = AL_YW_MAP,
     .map = &gitlab_map,
     .doc = "POST /webhook/gitlab (absent: that path answers 404); its repositories' policies "
            "have forge.kind gitlab"},
};
static const al_yw_map webhook_map = {webhook_fields, AL_ARRAY_SIZE(webhook_fields), NULL};

static const char *const on_interrupt[] = {"fail", "requeue", NULL}; /* false, true */
static const char *const backends[] = {"native", "docker", NULL};    /* false, true */
static const char *const runners[] = {"local", "kubernetes", NULL};  /* false, true */

static const al_yw_field runs_fields[] = {
    {.key = "max_concurrent",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(max_concurrent),
     .min = 1,
     .max = 256,
     .def = "4",
     .doc = "runs at once, all repositories"},
    {.key = "max_per_repo",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(max_per_repo),
     .min = 1,
     .max = 256,
     .def = "2",
     .doc = "runs at once per repository"},
    {.key = "timeout",
     .type = AL_YW_DURATION,
     .off = OFF(timeout_ms),
     .min = 0,
     .max = 7 * 86400000ull,
     .def = "0",
     .doc = "the agent's wall clock per run (`airlock ticket --timeout`); 0: the policy's"},
    {.key = "retries",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(retries),
     .min = 0,
     .max = 10,
     .def = "2",
     .doc = "retries of a run that failed for a transient cause (forge 5xx, network); never for a "
            "refusal"},
    {.key = "backoff",
     .type = AL_YW_DURATION,
     .off = OFF(backoff_ms),
     .min = 0,
     .max = 86400000ull,
     .def = "30s",
     .doc = "wait before the first retry, doubled for each next one"},
    {.key = "on_interrupt",
     .type = AL_YW_ENUM,
     .off = OFF(requeue_interrupted),
     .width = sizeof(bool),
     .choices = on_interrupt,
     .def = "requeue",
     .doc = "a run interrupted by a restart of the service: requeue it (after checking the forge "
            "for its PR) or mark it failed"},
    {.key = "backend",
     .type = AL_YW_ENUM,
     .off = OFF(docker),
     .width = sizeof(bool),
     .choices = backends,
     .def = "native",
     .doc = "the sandbox backend of each run (`airlock ticket --backend`)"},
    {.key = "runner",
     .type = AL_YW_ENUM,
     .off = OFF(kube_runner),
     .width = sizeof(bool),
     .choices = runners,
     .def = "local",
     .doc = "where a run runs: `local`, a child `airlock ticket`; `kubernetes`, the objects of "
            "`render kubernetes --run-id` as a Job through the API server of election.api "
            "(env-mode policies only: a sealed one is refused; docs/scale.md)"},
    {.key = "agent",
     .type = AL_YW_STR,
     .off = OFF(agent),
     .check = path_check,
     .shape = "path",
     .doc = "the agent (`airlock ticket --agent`); default: the bundled patch-agent"},
    {.key = "airlock",
     .type = AL_YW_STR,
     .off = OFF(airlock),
     .check = path_check,
     .shape = "path",
     .doc = "the airlock binary each run execs; default: the service's own"},
};
static const al_yw_map runs_map = {runs_fields, AL_ARRAY_SIZE(runs_fields), NULL};

static const al_yw_field election_fields[] = {
    {.key = "lease",
     .type = AL_YW_STR,
     .off = OFF(election_lease),
     .def = "",
     .doc = "the coordination.k8s.io/v1 Lease whose holder dequeues (several replicas); \"\": no "
            "election, this process dequeues"},
    {.key = "namespace",
     .type = AL_YW_STR,
     .off = OFF(election_namespace),
     .def = "",
     .doc = "the Lease's namespace; \"\": the namespace file beside token_file"},
    {.key = "identity",
     .type = AL_YW_STR,
     .off = OFF(election_identity),
     .def = "",
     .doc = "this replica's holderIdentity; \"\": the host name (the pod's name)"},
    {.key = "api",
     .type = AL_YW_STR,
     .off = OFF(election_api),
     .def = "",
     .doc = "the API server, https://HOST:PORT; \"\": from KUBERNETES_SERVICE_HOST/PORT"},
    {.key = "token_file",
     .type = AL_YW_STR,
     .off = OFF(election_token_file),
     .check = path_check,
     .def = "/var/run/secrets/kubernetes.io/serviceaccount/token",
     .shape = "path",
     .doc = "the service account token (re-read for every request)"},
    {.key = "ca_file",
     .type = AL_YW_STR,
     .off = OFF(election_ca_file),
     .check = path_check,
     .def = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
     .shape = "path",
     .doc = "the CA the API server's certificate must chain to"},
    {.key = "duration",
     .type = AL_YW_DURATION,
     .off = OFF(election_duration_ms),
     .min = 2000,
     .max = 600000,
     .def = "15s",
     .doc = "leaseDurationSeconds: how long a standby waits after the last renewal it saw"},
    {.key = "renew_deadline",
     .type = AL_YW_DURATION,
     .off = OFF(election_renew_ms),
     .min = 1000,
     .max = 600000,
     .def = "10s",
     .doc = "the leader stops dequeuing (and stops its runs) this long after its last renewal; "
            "less than duration"},
    {.key = "retry",
     .type = AL_YW_DURATION,
     .off = OFF(election_retry_ms),
     .min = 100,
     .max = 60000,
     .def = "2s",
     .doc = "between two attempts to acquire or renew; less than renew_deadline"},
};
static const al_yw_map election_map = {election_fields, AL_ARRAY_SIZE(election_fields), NULL};

static const al_yw_field intake_fields[] = {
    {.key = "max_queued",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(max_queued),
     .min = 1,
     .max = 100000,
     .def = "200",
     .doc = "queued rows at most: a trigger past it is answered 503 and recorded, never dropped "
            "silently"},
    {.key = "per_sender",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(per_sender),
     .min = 1,
     .max = 100000,
     .def = "5",
     .doc = "rows one forge user's triggers may make per window, all repositories (429 after; "
            "`airlock serve enqueue` is not counted)"},
    {.key = "per_repo",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(per_repo),
     .min = 1,
     .max = 100000,
     .def = "50",
     .doc = "rows the webhook may make per repository per window (429 after)"},
    {.key = "window",
     .type = AL_YW_DURATION,
     .off = OFF(window_ms),
     .min = 1000,
     .max = 30 * 86400000ull,
     .def = "1h",
     .doc = "the window of per_sender and per_repo (rows created within it are counted)"},
    {.key = "check_cache",
     .type = AL_YW_DURATION,
     .off = OFF(check_cache_ms),
     .min = 0,
     .max = 86400000ull,
     .def = "10m",
     .doc = "a trigger check that found the sender without write on a repository is reused for "
            "that sender and repository this long (no new token); 0: ask every time"},
};
static const al_yw_map intake_map = {intake_fields, AL_ARRAY_SIZE(intake_fields), NULL};

static const al_yw_field retention_fields[] = {
    {.key = "max_age",
     .type = AL_YW_DURATION,
     .off = OFF(retain_age_ms),
     .min = 0,
     .max = 3650 * 86400000ull,
     .def = "30d",
     .doc = "finished rows (and their history) older than this are deleted, at start, hourly and "
            "by `airlock serve --gc`; 0: kept"},
    {.key = "max_rows",
     .type = AL_YW_UINT,
     .flags = AL_YW_QUOTED,
     .off = OFF(retain_rows),
     .min = 0,
     .max = 100000000,
     .def = "10000",
     .doc = "finished rows kept at most (the oldest go first); 0: no cap"},
};
static const al_yw_map retention_map = {retention_fields, AL_ARRAY_SIZE(retention_fields), NULL};

static const al_yw_field repo_fields[] = {
    {.key = "repo",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(al_serve_repo, repo),
     .check = repo_check,
     .doc = "OWNER/NAME"},
    {.key = "policy",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(al_serve_repo, policy),
     .check = path_check,
     .doc = "the absolute path of the run's policy"},
};
static const al_yw_map repo_map = {repo_fields, AL_ARRAY_SIZE(repo_fields), NULL};

/* After each repository: names are case-insensitive, as on GitHub. */
static int repo_unique(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const al_serve_config *c = obj;
  const al_serve_repo *r = &c->repos[c->n_repos - 1];
  for (size_t i = 0; i + 1 < c->n_repos; i++)
    if (!strcasecmp(c->repos[i].repo, r->repo))
      return al_yw_fail(w, al_yw_at(kv), kv->path, "repository %s listed twice", r->repo);
  return 0;
}

static const al_yw_field top_fields[] = {
    {.key = "version",
     .type = AL_YW_CUSTOM,
     .flags = AL_YW_REQUIRED,
     .parse = version_parse,
     .shape = "number",
     .doc = "the format version: 1"},
    {.key = "listen", .type = AL_YW_MAP, .map = &listen_map},
    {.key = "webhook", .type = AL_YW_MAP, .map = &webhook_map},
    {.key = "broker",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = OFF(broker),
     .check = path_check,
     .shape = "path",
     .doc = "the broker's socket: trigger checks (collaborator permission, open PRs) run there"},
    {.key = "state_dir",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = OFF(state_dir),
     .check = path_check,
     .shape = "path",
     .doc = "queue.db (SQLite, WAL), records/ and logs/ of the runs; created 0700"},
    {.key = "runs", .type = AL_YW_MAP, .map = &runs_map},
    {.key = "election", .type = AL_YW_MAP, .map = &election_map},
    {.key = "intake", .type = AL_YW_MAP, .map = &intake_map},
    {.key = "retention", .type = AL_YW_MAP, .map = &retention_map},
    {.key = "repositories",
     .type = AL_YW_LIST,
     .flags = AL_YW_REQUIRED | AL_YW_INLINE,
     .off = OFF(repos),
     .off_n = OFF(n_repos),
     .min = 1,
     .max = AL_SERVE_REPOS_MAX,
     .item = &(const al_yw_field){.type = AL_YW_MAP, .map = &repo_map},
     .item_size = sizeof(al_serve_repo),
     .check = repo_unique,
     .doc = "the repositories served: a list of {repo: OWNER/NAME, policy: PATH}"},
};
static const al_yw_map top_map = {top_fields, AL_ARRAY_SIZE(top_fields), NULL};

void al_serve_config_free(al_serve_config *c)
{
  if (!c)
    return;
  al_yw_free(&top_map, c);
  free(c->source);
  free(c);
}

int al_serve_config_load_buffer(const char *name, const char *buf, size_t len,
                                al_serve_config **out, al_error *err)
{
  al_yw w = {.name = name, .err = err, .flags = AL_YW_NO_CTRL};
  if (al_yw_open(&w, buf, len, 1 << 20,
                 "empty config (it needs version, broker, state_dir and repositories)") < 0)
    return -1;
  al_serve_config *c = al_xcalloc(1, sizeof *c);
  c->source = al_xstrdup(name);
  int r = al_yw_defaults(&w, &top_map, c);
  struct fy_node *root = fy_document_root(w.doc);
  al_yw_kv kv = {NULL, root, ""};
  if (r == 0)
    r = al_yw_walk(&w, &kv, &top_map, c);
  if (r == 0 && c->listen_webhook[0] && !c->secret_file)
    r = al_yw_fail(&w, al_yw_at(&kv), "webhook.secret_file",
                   "required when listen.webhook is set (every webhook is authenticated)");
  if (r == 0 && c->election_lease[0] &&
      (c->election_renew_ms >= c->election_duration_ms ||
       c->election_retry_ms >= c->election_renew_ms))
    r = al_yw_fail(&w, al_yw_at(&kv), "election",
                   "needs retry < renew_deadline < duration (a leader must stop before a standby "
                   "may take the Lease)");
  if (r == 0 && c->kube_runner && c->docker)
    r = al_yw_fail(&w, al_yw_at(&kv), "runs.backend",
                   "docker applies to runs.runner: local only (with runner: kubernetes the "
                   "cluster runs the agent's container)");
  al_yw_close(&w);
  if (r < 0) {
    al_serve_config_free(c);
    return -1;
  }
  *out = c;
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
  fprintf(f, "| key | type | default | what |\n|---|---|---|---|\n");
  al_yw_doc(f, &top_map, "");
}
