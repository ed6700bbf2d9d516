/* The ticket supervisor. See ticket.h for the phases and guarantees. */
#include "run/ticket.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker/client.h"
#include "broker/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/term.h"
#include "common/util.h"
#include "policy/policy.h"
#include "probe/docker.h"
#include "probe/probe.h"
#include "relay/launch.h"
#include "proxy/host.h"
#include "forge/ghapi.h"
#include "run/review.h"
#include "run/run.h"

#define AGENT_STDOUT_CAP (4u << 20)
#define AUDIT_CAP (8u << 20)
#define MAX_DECISIONS 20000

int al_ticket_parse_target(const char *s, char *repo, size_t repolen, unsigned long *number,
                           al_error *err)
{
  const char *hash = strchr(s, '#');
  const char *slash = strchr(s, '/');
  if (!hash || !slash || slash > hash || slash == s || slash + 1 == hash)
    return al_make_error(err, 0, "ticket `%s`: expected OWNER/REPO#NUMBER", s);
  size_t rl = (size_t)(hash - s);
  if (rl >= repolen || rl > 140)
    return al_make_error(err, 0, "ticket `%s`: repository name too long", s);
  for (const char *p = s; p < hash; p++)
    if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.' || p == slash))
      return al_make_error(err, 0, "ticket `%s`: OWNER/REPO may hold only A-Z a-z 0-9 - _ .", s);
  if (strchr(slash + 1, '/') && strchr(slash + 1, '/') < hash)
    return al_make_error(err, 0, "ticket `%s`: expected OWNER/REPO#NUMBER", s);
  if (s[0] == '.' || slash[1] == '.')
    return al_make_error(err, 0, "ticket `%s`: a name may not start with `.`", s);
  const char *n = hash + 1;
  if (!*n || *n == '0' || strlen(n) > 9)
    return al_make_error(err, 0, "ticket `%s`: NUMBER must be 1 to 999999999", s);
  for (const char *p = n; *p; p++)
    if (!isdigit((unsigned char)*p))
      return al_make_error(err, 0, "ticket `%s`: NUMBER must be decimal digits", s);
  memcpy(repo, s, rl);
  repo[rl] = '\0';
  *number = strtoul(n, NULL, 10);
  return 0;
}

/* ---- the run ---- */

struct phase {
  const char *name;
  uint64_t ms;
  const char *status; /* "ok", "failed", "skipped", "warn" */
  char *detail;
};

struct ticket {
  const al_ticket_opts *o;
  al_policy *policy;
  char repo[160];
  unsigned long number;
  char run_id[33];
  char branch[256];
  json_t *rec;
  struct phase phases[12];
  size_t nphases;
  uint64_t t0;
  bool interrupted;
  bool unprotected;         /* the audit did not prove the budget and the user accepted that */
  bool decisions_truncated; /* docker backend: the proxy's decisions were cut or lost */
  /* secrets: only between lease and sandbox start */
  char **env;
  size_t nenv;
  al_lease *lease;
  char *relay_key; /* relay.key: broker: the lease's model_key (secret memory), until the relay
                      sandbox started */
};

static bool interrupted(struct ticket *t)
{
  sigset_t p;
  if (sigpending(&p) == 0 && (sigismember(&p, SIGINT) || sigismember(&p, SIGTERM)))
    t->interrupted = true;
  return t->interrupted;
}

__attribute__((format(printf, 4, 5))) static void
phase_end(struct ticket *t, uint64_t start, const char *status, const char *fmt, ...);
static void phase_end(struct ticket *t, uint64_t start, const char *status, const char *fmt, ...)
{
  struct phase *ph = &t->phases[t->nphases - 1];
  ph->ms = al_now_ms() - start;
  ph->status = status;
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&ph->detail, fmt, ap) < 0)
      ph->detail = NULL;
    va_end(ap);
  }
  if (!t->o->quiet) {
    al_autofree char *clean = al_redact(ph->detail ? ph->detail : "");
    fprintf(stderr, "airlock ticket: %-9s %-7s %5llu ms  %s%s\n", ph->name, status,
            (unsigned long long)ph->ms, clean,
            t->unprotected ? " " AL_TICKET_UNPROTECTED_MARK : "");
  }
}

static uint64_t phase_begin(struct ticket *t, const char *name)
{
  if (t->nphases < AL_ARRAY_SIZE(t->phases))
    t->phases[t->nphases++] = (struct phase){.name = name, .status = "running"};
  return al_now_ms();
}

static void env_add(struct ticket *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void env_add(struct ticket *t, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  va_end(ap);
  t->env = al_xrealloc(t->env, (t->nenv + 2) * sizeof(char *));
  t->env[t->nenv++] = s;
  t->env[t->nenv] = NULL;
}

/* Wipe every environment string: called right after the sandbox started,
 * before the proxy is forked; from here on the supervisor holds no token. */
static void wipe_env(void *ctx)
{
  struct ticket *t = ctx;
  for (size_t i = 0; i < t->nenv; i++) {
    explicit_bzero(t->env[i], strlen(t->env[i]));
    free(t->env[i]);
  }
  free(t->env);
  t->env = NULL;
  t->nenv = 0;
}

static int sealed_memfd(const char *name, size_t cap, al_error *err)
{
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return al_make_error(err, errno, "memfd_create %s", name);
  /* A fixed size and no growth: a chatty agent or proxy cannot fill the
   * host's memory, writes past the cap fail. The shared file offset tells
   * us afterwards how much was written. */
  if (ftruncate(fd, (off_t)cap) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "size %s", name);
  }
  return fd;
}

static char *read_memfd(int fd, size_t *len)
{
  off_t end = lseek(fd, 0, SEEK_CUR);
  if (end < 0)
    end = 0;
  char *buf = al_xmalloc((size_t)end + 1);
  ssize_t n = pread(fd, buf, (size_t)end, 0);
  if (n < 0)
    n = 0;
  buf[n] = '\0';
  /* NULs would cut the text short; make them visible instead */
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0')
      buf[i] = '?';
  *len = (size_t)n;
  return buf;
}

/* A thread copying the agent's stderr to ours, sanitized, capped. */
#define AGENT_STDERR_CAP (16u << 20)

struct stderr_relay {
  int fd;
  pthread_t th;
  bool running;
};

static void *stderr_relay_main(void *arg)
{
  struct stderr_relay *sr = arg;
  /* No malloc here: the supervisor clones sandboxes with the raw clone
   * syscall, which does not take glibc's allocator locks the way fork(3)
   * does; a lock held by this thread at that moment would be inherited
   * locked. */
  char buf[1024];
  char clean[4 * sizeof buf + 1];
  size_t total = 0;
  for (;;) {
    ssize_t n = read(sr->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (total < AGENT_STDERR_CAP) {
      size_t len = al_term_sanitize_into(buf, (size_t)n, clean);
      (void)!write(2, clean, len);
      total += (size_t)n;
      if (total >= AGENT_STDERR_CAP) {
        static const char m[] =
            "\nairlock: the agent's stderr passed 16 MiB; the rest is dropped\n";
        (void)!write(2, m, sizeof m - 1);
      }
    }
  }
  close(sr->fd);
  return NULL;
}

static int stderr_relay_start(struct stderr_relay *sr, int fd)
{
  sr->fd = fd;
  /* the thread must not take the signals the supervisor waits for */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int r = pthread_create(&sr->th, NULL, stderr_relay_main, sr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r != 0) {
    errno = r;
    return -1;
  }
  sr->running = true;
  return 0;
}

static void stderr_relay_join(struct stderr_relay *sr)
{
  if (sr->running)
    pthread_join(sr->th, NULL);
  sr->running = false;
}

/* Is host:port of an https URL in the allowlist? */
static bool url_allowed(const al_policy *p, const char *url, char *host, size_t hostlen,
                        uint16_t *port)
{
  if (strncmp(url, "https://", 8) != 0)
    return false;
  const char *h = url + 8;
  size_t hl = strcspn(h, ":/");
  al_host canon;
  const char *why;
  if (al_host_canonicalize(h, hl, &canon, &why) < 0)
    return false;
  *port = 443;
  if (h[hl] == ':' && al_port_parse(h + hl + 1, strcspn(h + hl + 1, "/"), port, &why) < 0)
    return false;
  snprintf(host, hostlen, "%s", canon.name);
  for (size_t i = 0; i < p->network.n_allow; i++) {
    const al_net_allow *a = &p->network.allow[i];
    if (!a->wildcard && a->port == *port && strcmp(a->host, canon.name) == 0)
      return a->tls;
  }
  return false;
}

static json_t *decisions_from(const char *text)
{
  json_t *arr = json_array();
  const char *p = text;
  while (*p && json_array_size(arr) < MAX_DECISIONS) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n > 0) {
      json_t *j = json_loadb(p, n, 0, NULL);
      json_array_append_new(arr, json_is_object(j) ? j : json_pack("{s:s%}", "unparsed", p, n));
      if (j && !json_is_object(j))
        json_decref(j);
    }
    if (!nl)
      break;
    p = nl + 1;
  }
  return arr;
}

/* The agent's own report: the last `AIRLOCK_RESULT {json}` line. The agent
 * is untrusted: only a PR URL under the forge's web URL for this repository
 * is accepted. */
static void agent_result(struct ticket *t, const char *out, al_ticket_outcome *res)
{
  const char *last = NULL;
  for (const char *p = strstr(out, "AIRLOCK_RESULT "); p; p = strstr(p + 1, "AIRLOCK_RESULT "))
    if (p == out || p[-1] == '\n')
      last = p;
  json_t *attempts = json_array();
  for (const char *p = strstr(out, "AIRLOCK_ATTEMPT "); p; p = strstr(p + 1, "AIRLOCK_ATTEMPT ")) {
    if (p != out && p[-1] != '\n')
      continue;
    const char *s = p + 16;
    json_t *j = json_loadb(s, strcspn(s, "\n"), 0, NULL);
    if (json_is_object(j) && json_array_size(attempts) < 200)
      json_array_append_new(attempts, j);
    else
      json_decref(j);
  }
  json_object_set_new(t->rec, "agent_attempts", attempts);
  if (!last)
    return;
  const char *s = last + 15;
  json_t *j = json_loadb(s, strcspn(s, "\n"), 0, NULL);
  const char *url = j ? json_string_value(json_object_get(j, "pr_url")) : NULL;
  /* Only a hint until verify_pr() has found the PR on the forge itself. */
  char prefix[1024];
  snprintf(prefix, sizeof prefix, "%s/%s/pull/", t->policy->forge.git_url, t->repo);
  bool ok = url && strncmp(url, prefix, strlen(prefix)) == 0 && strlen(url) < sizeof res->pr_url;
  if (ok) {
    const char *num = url + strlen(prefix);
    ok = *num && strspn(num, "0123456789") == strlen(num);
  }
  if (ok)
    snprintf(res->pr_url, sizeof res->pr_url, "%s", url);
  json_object_set_new(t->rec, "pull_request_reported",
                      ok ? json_pack("{s:s, s:s}", "url", url, "branch", t->branch)
                         : json_pack("{s:n, s:s}", "url", "rejected_report",
                                     url ? "the agent reported a URL outside this repository"
                                         : "no pull request reported"));
  json_decref(j);
}

/* The PR the record and the operator are pointed at is the one the forge
 * has from the run's branch (found by the review phase), never just what
 * the agent claims: an agent could name a human's PR or another run's. */
static void verify_pr(struct ticket *t, al_ticket_outcome *res)
{
  json_t *rep = json_object_get(t->rec, "pull_request_reported");
  const char *reported = rep ? json_string_value(json_object_get(rep, "url")) : NULL;
  json_t *found = json_object_get(json_object_get(t->rec, "review"), "pull_request");
  const char *url = found ? json_string_value(json_object_get(found, "url")) : NULL;
  json_t *o = json_pack("{s:s, s:b}", "branch", t->branch, "verified", url != NULL);
  json_object_set_new(o, "url", url ? json_string(url) : json_null());
  json_object_set_new(o, "reported_by_agent", reported ? json_string(reported) : json_null());
  if (url && reported && strcmp(url, reported) != 0)
    json_object_set_new(o, "mismatch", json_true());
  if (url && strlen(url) < sizeof res->pr_url)
    snprintf(res->pr_url, sizeof res->pr_url, "%s", url);
  else
    res->pr_url[0] = '\0';
  json_object_set_new(t->rec, "pull_request", o);
  json_object_del(t->rec, "pull_request_reported");
}

static int write_record(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  json_t *phases = json_array();
  for (size_t i = 0; i < t->nphases; i++)
    json_array_append_new(phases, json_pack("{s:s, s:I, s:s, s:s*}", "name", t->phases[i].name,
                                            "ms", (json_int_t)t->phases[i].ms, "status",
                                            t->phases[i].status, "detail", t->phases[i].detail));
  json_object_set_new(t->rec, "phases", phases);
  json_object_set_new(t->rec, "duration_ms", json_integer((json_int_t)(al_now_ms() - t->t0)));
  json_object_set_new(t->rec, "interrupted", json_boolean(t->interrupted));
  char *text = json_dumps(t->rec, JSON_INDENT(2) | JSON_SORT_KEYS);
  if (!text)
    return al_make_error(err, ENOMEM, "run record");
  /* Belt and braces: nothing token-shaped ever reaches the disk. */
  al_autofree char *clean = al_redact(text);
  free(text);

  char path[4096];
  if (t->o->record_path) {
    snprintf(path, sizeof path, "%s", t->o->record_path);
  } else {
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[3800];
    if (state && state[0] == '/')
      snprintf(dir, sizeof dir, "%s/airlock/runs", state);
    else
      snprintf(dir, sizeof dir, "%s/.local/state/airlock/runs",
               home && home[0] == '/' ? home : "/tmp");
    for (char *q = dir + 1; *q; q++)
      if (*q == '/') {
        *q = '\0';
        mkdir(dir, 0700);
        *q = '/';
      }
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/%s.json", dir, t->run_id);
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return al_make_error(err, errno, "run record `%s`", path);
  int r = al_write_all(fd, clean, strlen(clean));
  if (r == 0)
    r = al_write_all(fd, "\n", 1);
  close(fd);
  if (r < 0)
    return al_make_error(err, -r, "write run record `%s`", path);
  snprintf(res->record_path, sizeof res->record_path, "%s", path);
  if (t->o->json)
    printf("%s\n", clean);
  return 0;
}

static void block_signals(void)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, NULL);
}

static char *iso_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char buf[40];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return al_xstrdup(buf);
}

/* Phase: load and check the policy against the ticket. */
static int do_policy(struct ticket *t, al_error *err)
{
  uint64_t s = phase_begin(t, "policy");
  if (!t->o->policy_path) {
    phase_end(t, s, "failed", "no policy given");
    return al_make_error(err, 0,
                         "a ticket run needs a policy (-p FILE) with network, "
                         "credentials and forge sections; see docs/policy.md");
  }
  if (al_policy_load_file(t->o->policy_path, &t->policy, err) < 0) {
    phase_end(t, s, "failed", "%s", err->msg);
    return -1;
  }
  al_policy *p = t->policy;
  json_object_set_new(t->rec, "policy",
                      json_pack("{s:s, s:s}", "source", p->source, "sha256", al_policy_sha256(p)));
  const char *why = NULL;
  if (!p->credentials.present)
    why = "the policy has no credentials section (where is the broker?)";
  else if (!p->network.present)
    why = "the policy has no network section: the agent could reach neither the API nor git";
  else if (p->credentials.git.present && p->credentials.git.repo &&
           strcmp(p->credentials.git.repo, t->repo) != 0)
    why = "credentials.git.repo is not the ticket's repository";
  else if (p->credentials.ticket.present && p->credentials.ticket.repo &&
           strcmp(p->credentials.ticket.repo, t->repo) != 0)
    why = "credentials.ticket.repo is not the ticket's repository";
  char host[256];
  uint16_t port;
  if (!why && !url_allowed(p, p->forge.api_url, host, sizeof host, &port))
    why = "forge.api_url's host:port is not in network.allow (with tls)";
  if (!why && !url_allowed(p, p->forge.git_url, host, sizeof host, &port))
    why = "forge.git_url's host:port is not in network.allow (with tls)";
  if (!why && p->forge.ca_file && access(p->forge.ca_file, R_OK) < 0)
    why = "forge.ca_file is not readable";
  if (why) {
    phase_end(t, s, "failed", "%s", why);
    return al_make_error(err, 0, "policy `%s`: %s", p->source, why);
  }
  phase_end(t, s, "ok", "sha256:%.12s, %zu allowed destinations", al_policy_sha256(p),
            p->network.n_allow);
  return 0;
}

/* "name:level,..." of a policy role's permissions (malloc'd), or NULL when
 * it lists none (the broker's maximum for the role). */
static char *policy_perms(const al_policy_role *r)
{
  if (!r->present || r->n_perms == 0)
    return NULL;
  char *out = al_xstrdup("");
  for (size_t i = 0; i < r->n_perms; i++) {
    char *next =
        al_strdup_printf("%s%s%s:%s", out, i ? "," : "", r->perms[i].name, r->perms[i].level);
    free(out);
    out = next;
  }
  return out;
}

/* Issue #8: a run token's permissions are the two roles' and no more —
 * git: contents, pull_requests; ticket: issues; both: the implied
 * metadata: read. Returns the first granted "name:level" beyond that in
 * bad (or "" when none). */
static void beyond_role(al_role role, const char *granted, char *bad, size_t n)
{
  bad[0] = '\0';
  al_autofree char *copy = al_xstrdup(granted ? granted : "");
  char *save = NULL;
  for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
    char *lvl = strchr(it, ':');
    if (lvl)
      *lvl++ = '\0';
    bool ok;
    if (strcmp(it, "metadata") == 0)
      ok = lvl && strcmp(lvl, "read") == 0;
    else if (role == AL_ROLE_GIT)
      ok = strcmp(it, "contents") == 0 || strcmp(it, "pull_requests") == 0;
    else
      ok = strcmp(it, "issues") == 0;
    if (!ok) {
      snprintf(bad, n, "%s:%s", it, lvl ? lvl : "?");
      return;
    }
  }
}

static int do_lease(struct ticket *t, al_error *err)
{
  uint64_t s = phase_begin(t, "lease");
  al_autofree char *git_perms = policy_perms(&t->policy->credentials.git);
  al_autofree char *ticket_perms = policy_perms(&t->policy->credentials.ticket);
  static const char *const relay_secrets[] = {AL_RELAY_BROKER_SECRET};
  bool want_key = al_policy_relay_key_broker(t->policy) != NULL;
  al_lease_request rq = {.git_repo = t->repo,
                         .ticket_repo = t->repo,
                         .git_permissions = git_perms,
                         .ticket_permissions = ticket_perms,
                         .secrets = want_key ? relay_secrets : NULL,
                         .n_secrets = want_key ? 1 : 0,
                         .ttl_ms = t->policy->credentials.ttl_ms};
  if (al_lease_open(t->policy->credentials.broker, &rq, &t->lease, err) < 0) {
    phase_end(t, s, "failed", "%s", err->msg);
    return al_error_wrap(err, "broker `%s`", t->policy->credentials.broker);
  }
  json_t *toks = json_array();
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    if (!al_lease_fingerprint(t->lease, (al_role)r))
      continue;
    json_array_append_new(toks, json_pack("{s:s, s:s, s:s*, s:s*, s:s*}", "role",
                                          al_role_name((al_role)r), "fingerprint",
                                          al_lease_fingerprint(t->lease, (al_role)r), "repo",
                                          al_lease_repo(t->lease, (al_role)r), "permissions",
                                          al_lease_permissions(t->lease, (al_role)r), "expires_at",
                                          al_lease_token_expires_at(t->lease, (al_role)r)));
  }
  json_object_set_new(t->rec, "lease",
                      json_pack("{s:s*, s:I, s:s*, s:o}", "id", al_lease_id(t->lease), "ttl_ms",
                                (json_int_t)al_lease_ttl_ms(t->lease), "expires_at",
                                al_lease_expires_at(t->lease), "tokens", toks));
  if (want_key) {
    /* The model key goes to the relay's sandbox only: keep one copy until
     * it starts (the relay launcher wipes it), drop the lease's now. */
    const char *key = al_lease_secret(t->lease, AL_RELAY_BROKER_SECRET);
    if (!key) {
      phase_end(t, s, "failed", "the broker did not lease the `%s` secret", AL_RELAY_BROKER_SECRET);
      return al_make_error(err, EPROTO,
                           "the broker did not lease the `%s` secret (relay.key: broker)",
                           AL_RELAY_BROKER_SECRET);
    }
    t->relay_key = al_secret_dupn(key, strlen(key));
    int e = errno;
    al_lease_secret_wipe(t->lease, AL_RELAY_BROKER_SECRET);
    if (!t->relay_key) {
      phase_end(t, s, "failed", "secret memory for the model key");
      return al_make_error(err, e, "secret memory for the model key");
    }
    json_object_set_new(json_object_get(t->rec, "lease"), "secrets",
                        json_pack("[{s:s, s:s*}]", "name", AL_RELAY_BROKER_SECRET, "fingerprint",
                                  al_lease_secret_fingerprint(t->lease, AL_RELAY_BROKER_SECRET)));
  }
  if (!al_lease_token(t->lease, AL_ROLE_GIT) || !al_lease_token(t->lease, AL_ROLE_TICKET)) {
    phase_end(t, s, "failed", "the broker did not lease both tokens");
    return al_make_error(err, 0, "the broker did not lease both a git and a ticket token");
  }
  for (int r = 0; r < AL_ROLE_COUNT; r++) {
    char bad[128];
    beyond_role((al_role)r, al_lease_permissions(t->lease, (al_role)r), bad, sizeof bad);
    if (bad[0]) {
      phase_end(t, s, "failed", "the %s token holds %s, more than its role needs",
                al_role_name((al_role)r), bad);
      return al_make_error(err, 0,
                           "refusing to run: the broker granted the %s token `%s`, more than the "
                           "role needs (git: contents, pull_requests; ticket: issues); trim the "
                           "broker's roles",
                           al_role_name((al_role)r), bad);
    }
  }
  phase_end(t, s, "ok", "git %s, ticket %s (lease %s)", al_lease_fingerprint(t->lease, AL_ROLE_GIT),
            al_lease_fingerprint(t->lease, AL_ROLE_TICKET), al_lease_id(t->lease));
  return 0;
}

/* Where the forge's CA certificate is inside the docker backend's agent
 * container (written there by docker.h's `files`). */
#define DOCKER_CA_NAME "forge-ca.pem"
#define DOCKER_CA_PATH "/tmp/airlock/" DOCKER_CA_NAME

static void build_env(struct ticket *t)
{
  const al_policy *p = t->policy;
  const char *ca = t->o->docker ? DOCKER_CA_PATH : p->forge.ca_file;
  env_add(t, "AIRLOCK_RUN_ID=%s", t->run_id);
  env_add(t, "AIRLOCK_REPO=%s", t->repo);
  env_add(t, "AIRLOCK_TICKET=%lu", t->number);
  env_add(t, "AIRLOCK_API_URL=%s", p->forge.api_url);
  env_add(t, "AIRLOCK_GIT_URL=%s/%s.git", p->forge.git_url, t->repo);
  env_add(t, "AIRLOCK_BRANCH=%s", t->branch);
  env_add(t, "AIRLOCK_BASE_BRANCH=%s", p->base_branch ? p->base_branch : "");
  env_add(t, "AIRLOCK_GIT_TOKEN=%s", al_lease_token(t->lease, AL_ROLE_GIT));
  env_add(t, "AIRLOCK_TICKET_TOKEN=%s", al_lease_token(t->lease, AL_ROLE_TICKET));
  /* git, configured through the environment only: the credential helper
   * reads the token from the environment when git asks, so it is never in
   * .git/config, a remote URL or a command line. Only https, no prompts. */
  env_add(t, "GIT_CONFIG_COUNT=2");
  env_add(t, "GIT_CONFIG_KEY_0=credential.helper");
  env_add(t, "GIT_CONFIG_VALUE_0=!f() { test \"$1\" = get || exit 0; "
             "echo username=x-access-token; echo \"password=$AIRLOCK_GIT_TOKEN\"; }; f");
  env_add(t, "GIT_CONFIG_KEY_1=credential.useHttpPath");
  env_add(t, "GIT_CONFIG_VALUE_1=false");
  env_add(t, "GIT_ALLOW_PROTOCOL=https");
  env_add(t, "GIT_TERMINAL_PROMPT=0");
  env_add(t, "GIT_AUTHOR_NAME=airlock[bot]");
  env_add(t, "GIT_AUTHOR_EMAIL=airlock-bot@users.noreply.localhost");
  env_add(t, "GIT_COMMITTER_NAME=airlock[bot]");
  env_add(t, "GIT_COMMITTER_EMAIL=airlock-bot@users.noreply.localhost");
  if (p->forge.ca_file) {
    env_add(t, "SSL_CERT_FILE=%s", ca);
    env_add(t, "CURL_CA_BUNDLE=%s", ca);
    env_add(t, "GIT_SSL_CAINFO=%s", ca);
    env_add(t, "REQUESTS_CA_BUNDLE=%s", ca);
    env_add(t, "NODE_EXTRA_CA_CERTS=%s", ca);
  }
}

static int do_release(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  if (!t->lease)
    return 0;
  uint64_t s = phase_begin(t, "release");
  al_lease_result lr;
  memset(&lr, 0, sizeof lr);
  al_error e = {0};
  int r = al_lease_release(t->lease, true, &lr, &e);
  t->lease = NULL;
  json_t *toks = json_array();
  size_t dead = 0;
  for (size_t i = 0; i < lr.n && i < AL_ROLE_COUNT; i++) {
    json_array_append_new(toks, json_pack("{s:s, s:s, s:b, s:b, s:s*}", "role",
                                          al_role_name(lr.tokens[i].role), "fingerprint",
                                          lr.tokens[i].fingerprint, "revoked", lr.tokens[i].revoked,
                                          "confirmed_401", lr.tokens[i].confirmed, "error",
                                          lr.tokens[i].error[0] ? lr.tokens[i].error : NULL));
    if (lr.tokens[i].revoked && lr.tokens[i].confirmed)
      dead++;
  }
  res->tokens_dead = r == 0 && lr.answered && dead == lr.n && lr.n == AL_ROLE_COUNT;
  json_object_set_new(t->rec, "revocation",
                      json_pack("{s:b, s:s, s:o, s:b, s:s*}", "answered", lr.answered, "reason",
                                lr.reason, "tokens", toks, "all_dead", res->tokens_dead, "error",
                                r < 0 ? e.msg : NULL));
  if (!res->tokens_dead) {
    phase_end(t, s, "failed", "tokens not confirmed dead: %s", r < 0 ? e.msg : "see record");
    return al_make_error(err, r < 0 ? e.code : 0, "revocation: %s",
                         r < 0 ? e.msg : "not every token was confirmed dead");
  }
  phase_end(t, s, "ok", "%zu tokens revoked, each confirmed 401", dead);
  return 0;
}

/* "id (STATUS)" of every required criterion that does not hold. */
static void audit_failed_list(json_t *report, char *out, size_t n)
{
  out[0] = '\0';
  size_t off = 0, i;
  json_t *k;
  json_array_foreach(json_object_get(report, "criteria"), i, k)
  {
    const char *st = json_string_value(json_object_get(k, "status"));
    if (!json_is_true(json_object_get(k, "required")) || !st || !strcmp(st, "PASS") ||
        !strcmp(st, "WARN"))
      continue;
    int w = snprintf(out + off, n - off, "%s%s (%s)", off ? ", " : "",
                     json_string_value(json_object_get(k, "id")) ?: "?", st);
    if (w < 0 || (size_t)w >= n - off)
      break;
    off += (size_t)w;
  }
}

/* The refusal, criterion by criterion with its fix (stderr). */
static void audit_explain(json_t *report)
{
  size_t i;
  json_t *k;
  fprintf(stderr, "airlock ticket: the escape budget of %s (branch %s) does not hold:\n",
          json_string_value(json_object_get(report, "repo")) ?: "?",
          json_string_value(json_object_get(report, "branch")) ?: "?");
  json_array_foreach(json_object_get(report, "criteria"), i, k)
  {
    const char *st = json_string_value(json_object_get(k, "status"));
    if (!json_is_true(json_object_get(k, "required")) || !st || !strcmp(st, "PASS") ||
        !strcmp(st, "WARN"))
      continue;
    al_autofree char *ev = al_redact(json_string_value(json_object_get(k, "evidence")) ?: "");
    fprintf(stderr, "  %-7s %s: %s\n          evidence: %s\n          fix: %s\n", st,
            json_string_value(json_object_get(k, "id")) ?: "?",
            json_string_value(json_object_get(k, "title")) ?: "", ev,
            json_string_value(json_object_get(k, "fix")) ?: "(none given)");
  }
}

/* Phase: the escape budget from the forge's API (issue #8). The broker runs
 * `airlock audit` with its own credentials (the App's JWT and, when
 * configured, its read-only audit credential): the supervisor never holds
 * an admin credential. Refuse unless it holds, or unless the user accepted
 * an unprotected run (--accept-unprotected), which then marks the record
 * and every later progress line. */
static int do_audit(struct ticket *t, al_error *err)
{
  uint64_t s = phase_begin(t, "audit");
  char *text = NULL;
  bool holds = false;
  al_error ae = {0};
  int r = al_broker_audit(t->policy->credentials.broker, t->repo, t->policy->base_branch, &text,
                          &holds, &ae);
  json_t *report = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  if (r == 0 && !json_is_object(report)) {
    r = al_make_error(&ae, EPROTO, "the broker's audit report is not JSON");
    holds = false;
  }
  json_t *a = json_object();
  json_object_set_new(t->rec, "audit", a);
  char failed[768] = "";
  if (r < 0) {
    json_object_set_new(a, "status", json_string("error"));
    json_object_set_new(a, "error", json_string(ae.msg));
  } else {
    audit_failed_list(report, failed, sizeof failed);
    json_object_set_new(a, "status", json_string(holds ? "holds" : "does-not-hold"));
    json_object_set_new(a, "holds", json_boolean(holds));
    if (failed[0])
      json_object_set_new(a, "not_holding", json_string(failed));
    json_object_set_new(a, "report", json_incref(report));
  }
  json_object_set_new(a, "accepted_unprotected", json_false());
  if (r == 0 && holds) {
    json_int_t warn =
        json_integer_value(json_object_get(json_object_get(report, "counts"), "warn"));
    phase_end(t, s, "ok", "the escape budget of %s (branch %s) holds%s", t->repo,
              json_string_value(json_object_get(report, "branch")) ?: "?",
              warn ? " (see the WARN criteria in the record)" : "");
    json_decref(report);
    return 0;
  }
  if (r < 0 && (ae.code == ENOENT || ae.code == ECONNREFUSED) &&
      strstr(ae.msg, "connecting to the broker")) {
    /* no broker: --accept-unprotected would fail at the lease all the same */
    phase_end(t, s, "failed", "%s", ae.msg);
    json_decref(report);
    return al_error_set(err, ae.code,
                        "no broker answers at `%s` (policy credentials.broker): start it with "
                        "`airlock broker -c CONFIG --socket %s` (contrib/README.broker.md)",
                        t->policy->credentials.broker, t->policy->credentials.broker);
  }
  if (!t->o->accept_unprotected) {
    if (r < 0) {
      phase_end(t, s, "failed", "cannot prove the escape budget: %s", ae.msg);
      al_make_error(err, 0,
                    "refusing to run: the escape budget of %s could not be proven (%s); fix that, "
                    "or pass --accept-unprotected to run anyway (recorded)",
                    t->repo, ae.msg);
    } else {
      phase_end(t, s, "failed", "the escape budget does not hold: %s", failed);
      audit_explain(report);
      al_make_error(err, 0,
                    "refusing to run: the escape budget of %s does not hold: %s; apply the "
                    "fixes above (also in the run record), or pass --accept-unprotected to run "
                    "anyway (recorded)",
                    t->repo, failed);
    }
    json_decref(report);
    return -1;
  }
  /* Accepted: from here on every progress line says so. */
  t->unprotected = true;
  json_object_set_new(a, "accepted_unprotected", json_true());
  json_object_set_new(t->rec, "unprotected", json_true());
  if (r < 0)
    phase_end(t, s, "warn", "cannot prove the escape budget (%s); running anyway", ae.msg);
  else
    phase_end(t, s, "warn", "the escape budget does not hold: %s; running anyway", failed);
  json_decref(report);
  return 0;
}

/* Phase: a fast subset of the probe catalogue in a throwaway sandbox made
 * from the same policy (one probe per protection); fail closed. */
static int do_preflight(struct ticket *t, al_error *err)
{
  uint64_t s = phase_begin(t, "preflight");
  al_probe_report rep;
  memset(&rep, 0, sizeof rep);
  al_error pe = {0};
  int r;
  if (t->o->docker) {
    /* the same containers the agent will get, from the same settings */
    al_probe_docker_opts po = {
        .probe = {.policy = t->policy, .preflight = true},
        .proxy_image = t->o->docker->proxy_image,
        .agent_image = t->o->docker->agent_image,
        .socket_path = t->o->docker->socket_path,
        .egress_internal = t->o->docker->egress_internal,
        .egress_network = t->o->docker->egress_network,
    };
    r = al_probe_run_docker(&po, &rep, &pe);
    if (r == 0)
      r = rep.n_escaped || rep.n_inconclusive || rep.n == 0 ? 1 : 0;
  } else {
    r = al_probe_preflight(t->policy, &rep, &pe);
  }
  if (r < 0) {
    json_object_set_new(t->rec, "preflight",
                        json_pack("{s:s, s:s}", "status", "error", "error", pe.msg));
    phase_end(t, s, "failed", "%s", pe.msg);
    return al_make_error(err, pe.code, "preflight could not run: %s", pe.msg);
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&buf, &len);
  if (mf) {
    al_probe_report_print_json(&rep, mf);
    fclose(mf);
  }
  json_t *j = buf ? json_loads(buf, 0, NULL) : NULL;
  free(buf);
  json_object_set_new(t->rec, "preflight",
                      j ? j
                        : json_pack("{s:I, s:I, s:I}", "blocked", (json_int_t)rep.n_blocked,
                                    "escaped", (json_int_t)rep.n_escaped, "inconclusive",
                                    (json_int_t)rep.n_inconclusive));
  if (r != 0) {
    char first[AL_PROBE_EVIDENCE_MAX + 64] = "";
    for (size_t i = 0; i < rep.n; i++)
      if (rep.results[i].verdict != AL_PROBE_BLOCKED) {
        snprintf(first, sizeof first, "%s %s: %s", rep.results[i].id,
                 al_probe_verdict_name(rep.results[i].verdict), rep.results[i].evidence);
        break;
      }
    phase_end(t, s, "failed", "%zu escaped, %zu inconclusive; first: %s", rep.n_escaped,
              rep.n_inconclusive, first);
    al_make_error(err, 0, "preflight: the sandbox did not hold (%s); refusing to start the agent%s",
                  first,
                  t->o->docker && strstr(first, "priv.uid-map")
                      ? " (docker: run dockerd with userns-remap; docs/docker.md)"
                      : "");
    al_probe_report_free(&rep);
    return -1;
  }
  phase_end(t, s, "ok", "%zu probes blocked in %llu ms", rep.n_blocked,
            (unsigned long long)(rep.elapsed_us / 1000));
  al_probe_report_free(&rep);
  return 0;
}

/* curl --resolve entries from the policy's pins, so the supervisor
 * reaches a pinned test forge exactly where the proxy would. */
static char **pin_resolves(const al_policy *p)
{
  char **v = al_xcalloc(p->network.n_pin * 4 + 1, sizeof(char *));
  size_t n = 0;
  for (size_t i = 0; i < p->network.n_pin; i++)
    for (size_t j = 0; j < p->network.n_allow; j++)
      if (!p->network.allow[j].wildcard &&
          strcmp(p->network.allow[j].host, p->network.pin[i].host) == 0 && n < p->network.n_pin * 4)
        v[n++] = al_strdup_printf("%s:%u:%s%s%s", p->network.pin[i].host, p->network.allow[j].port,
                                  strchr(p->network.pin[i].address, ':') ? "[" : "",
                                  p->network.pin[i].address,
                                  strchr(p->network.pin[i].address, ':') ? "]" : "");
  return v;
}

static void free_strv(char **v)
{
  for (char **q = v; q && *q; q++)
    free(*q);
  free(v);
}

/* Phase: what the human reviewer should look at. The run's tokens are dead
 * by now, so a second, read-only lease reads the pull request: which
 * changed files run later outside the sandbox, and whether the diff, the PR
 * body or the comments carry the run's tokens or token-shaped strings. */
static void do_review(struct ticket *t)
{
  uint64_t s = phase_begin(t, "review");
  json_t *rv = json_object();
  json_object_set_new(t->rec, "review", rv);
  al_error e = {0};
  al_lease *l = NULL;
  al_ghapi *api = NULL;
  al_ghapi_resp r = {0};
  char **resolves = NULL;
  al_autofree char *branch_q = NULL; /* before the first goto: freed on every exit */
  al_autofree char *path = NULL;
  const char *fps[AL_ROLE_COUNT] = {NULL, NULL};
  json_t *toks = json_object_get(json_object_get(t->rec, "lease"), "tokens");
  for (size_t i = 0; i < json_array_size(toks) && i < AL_ROLE_COUNT; i++)
    fps[i] = json_string_value(json_object_get(json_array_get(toks, i), "fingerprint"));

  al_lease_request rq = {.git_repo = t->repo,
                         .ticket_repo = t->repo,
                         .git_permissions = "contents:read,pull_requests:read",
                         .ticket_permissions = "issues:read",
                         .ttl_ms = 60000};
  if (al_lease_open(t->policy->credentials.broker, &rq, &l, &e) < 0)
    goto fail;
  if (al_ghapi_new(t->policy->forge.api_url, t->policy->forge.ca_file, 20000, &api, &e) < 0)
    goto fail;
  resolves = pin_resolves(t->policy);
  al_ghapi_set_resolve(api, (const char *const *)resolves);
  const char *git = al_lease_token(l, AL_ROLE_GIT);
  const char *tkt = al_lease_token(l, AL_ROLE_TICKET);
  const char *owner_end = strchr(t->repo, '/');
  branch_q = al_ghapi_escape(t->branch);
  path = al_strdup_printf("/repos/%s/pulls?state=all&head=%.*s:%s", t->repo,
                          (int)(owner_end - t->repo), t->repo, branch_q);
  if (al_ghapi_get_list(api, path, git, &r, &e) < 0)
    goto fail;
  if (r.status != 200 || !json_is_array(r.json)) {
    al_make_error(&e, 0, "list pull requests: HTTP %ld %s", r.status, r.message);
    goto fail;
  }
  /* GitHub filters by `head`; take only a PR whose head really is the
   * run's branch, whatever the server did with the filter. */
  json_t *pr = NULL;
  {
    size_t i;
    json_t *v;
    json_array_foreach(r.json, i, v)
    {
      const char *ref = json_string_value(json_object_get(json_object_get(v, "head"), "ref"));
      if (ref && strcmp(ref, t->branch) == 0) {
        pr = v;
        break;
      }
    }
  }
  json_t *secrets = json_array();
  json_object_set_new(rv, "secrets", secrets);
  json_t *outside = json_array();
  json_object_set_new(rv, "runs_outside_sandbox", outside);
  if (!pr) {
    json_object_set_new(rv, "pull_request", json_null());
  } else {
    json_int_t num = json_integer_value(json_object_get(pr, "number"));
    json_object_set_new(rv, "pull_request",
                        json_pack("{s:I, s:O, s:O}", "number", num, "url",
                                  json_object_get(pr, "html_url"), "base",
                                  json_object_get(json_object_get(pr, "base"), "ref")));
    al_review_scan_secrets(json_string_value(json_object_get(pr, "body")), "pull request body", fps,
                           AL_ROLE_COUNT, secrets);
    al_review_scan_secrets(json_string_value(json_object_get(pr, "title")), "pull request title",
                           fps, AL_ROLE_COUNT, secrets);
    al_ghapi_resp f = {0};
    al_autofree char *fpath =
        al_strdup_printf("/repos/%s/pulls/%lld/files", t->repo, (long long)num);
    if (al_ghapi_get_list(api, fpath, git, &f, &e) == 0 && f.status == 200) {
      json_t *files = json_array();
      size_t i;
      json_t *v;
      json_array_foreach(f.json, i, v)
      {
        const char *name = json_string_value(json_object_get(v, "filename"));
        if (!name)
          continue;
        json_array_append_new(files, json_pack("{s:s, s:O*, s:O*, s:O*}", "file", name, "status",
                                               json_object_get(v, "status"), "additions",
                                               json_object_get(v, "additions"), "deletions",
                                               json_object_get(v, "deletions")));
        const char *why = al_review_runs_outside(name);
        if (why)
          json_array_append_new(outside, json_pack("{s:s, s:s}", "file", name, "why", why));
        al_autofree char *where = al_strdup_printf("diff of %s", name);
        al_review_scan_secrets(json_string_value(json_object_get(v, "patch")), where, fps,
                               AL_ROLE_COUNT, secrets);
      }
      json_object_set_new(rv, "files", files);
    }
    al_ghapi_resp_free(&f);
    al_autofree char *cpath =
        al_strdup_printf("/repos/%s/issues/%lld/comments", t->repo, (long long)num);
    if (al_ghapi_get_list(api, cpath, tkt, &f, &e) == 0 && f.status == 200) {
      size_t i;
      json_t *v;
      json_array_foreach(f.json, i, v)
          al_review_scan_secrets(json_string_value(json_object_get(v, "body")),
                                 "pull request comment", fps, AL_ROLE_COUNT, secrets);
    }
    al_ghapi_resp_free(&f);
  }
  {
    al_ghapi_resp f = {0};
    al_autofree char *cpath = al_strdup_printf("/repos/%s/issues/%lu/comments", t->repo, t->number);
    if (al_ghapi_get_list(api, cpath, tkt, &f, &e) == 0 && f.status == 200) {
      size_t i;
      json_t *v;
      json_object_set_new(rv, "ticket_comments", json_integer((json_int_t)json_array_size(f.json)));
      json_array_foreach(f.json, i, v)
          al_review_scan_secrets(json_string_value(json_object_get(v, "body")), "ticket comment",
                                 fps, AL_ROLE_COUNT, secrets);
    }
    al_ghapi_resp_free(&f);
  }
  al_ghapi_resp_free(&r);
  al_ghapi_free(api);
  free_strv(resolves);
  al_lease_release(l, false, NULL, NULL);
  size_t nrun = 0;
  for (size_t i = 0; i < json_array_size(secrets); i++)
    if (json_is_true(json_object_get(json_array_get(secrets, i), "run_token")))
      nrun++;
  phase_end(t, s, json_array_size(secrets) || json_array_size(outside) ? "warn" : "ok",
            "%zu file(s) that run outside the sandbox, %zu token-shaped string(s) (%zu of this "
            "run's, already revoked)",
            json_array_size(outside), json_array_size(secrets), nrun);
  return;
fail:
  json_object_set_new(rv, "error", json_string(e.msg));
  al_ghapi_resp_free(&r);
  if (api)
    al_ghapi_free(api);
  free_strv(resolves);
  if (l)
    al_lease_release(l, false, NULL, NULL);
  phase_end(t, s, "failed", "%s", e.msg);
}

/* The model relay's calls (issue #10) into the run record: one object per
 * call as the relay logged it (never a body), and totals. *sum (size
 * sumlen) gets the summary line's part: calls, refusals and upstream
 * errors with the first reason of each (issue #17), or "". */
static void relay_record(struct ticket *t, int fd, char *sum, size_t sumlen)
{
  sum[0] = '\0';
  if (fd < 0)
    return;
  size_t n = 0;
  al_autofree char *text = read_memfd(fd, &n);
  json_t *calls = decisions_from(text);
  json_int_t in = 0, out = 0, refused = 0;
  unsigned first_err = 0, first_ref = 0;
  char err_why[200] = "", ref_why[200] = "";
  for (size_t i = 0; i < json_array_size(calls); i++) {
    json_t *c = json_array_get(calls, i);
    in += json_integer_value(json_object_get(c, "tokens_in"));
    out += json_integer_value(json_object_get(c, "tokens_out"));
    const char *d = json_string_value(json_object_get(c, "decision"));
    const char *why = json_string_value(json_object_get(c, "reason"));
    if (!d || strcmp(d, "forwarded") != 0)
      refused++;
    if (d && strcmp(d, "upstream_error") == 0 && !first_err++)
      snprintf(err_why, sizeof err_why, "%.160s", why ? why : "?");
    else if (d && strcmp(d, "forwarded") != 0 && strcmp(d, "upstream_error") != 0 && !first_ref++)
      snprintf(ref_why, sizeof ref_why, "%.160s", why ? why : "?");
  }
  if (json_array_size(calls))
    snprintf(sum, sumlen, ", model relay: %zu call(s)%s%s%s%s%s%s", json_array_size(calls),
             first_ref ? "; refused: " : "", first_ref ? ref_why : "",
             first_ref > 1 ? " (and more)" : "", first_err ? "; upstream errors: " : "",
             first_err ? err_why : "", first_err > 1 ? " (and more)" : "");
  json_t *ups = json_array();
  for (size_t i = 0; i < t->policy->relay.n_upstreams; i++)
    json_array_append_new(ups, json_string(t->policy->relay.upstreams[i].upstream));
  json_object_set_new(t->rec, "model_relay",
                      json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I}, s:o}", "upstream",
                                t->policy->relay.upstreams[0].upstream, "upstreams", ups, "totals",
                                "calls", (json_int_t)json_array_size(calls), "not_forwarded",
                                refused, "tokens_in", in, "tokens_out", out, "calls", calls));
}

/* The agent phase on the Docker backend: the same environment, output and
 * decisions as the native sandbox (ro's fds), the forge's CA file placed in
 * the container (it has no host path). */
static int run_docker(struct ticket *t, const al_run_opts *ro, int *status, al_error *err)
{
  al_docker_opts d = *t->o->docker;
  d.policy = t->policy;
  d.argv = ro->argv;
  d.env = ro->env;
  d.timeout_ms = ro->timeout_ms;
  d.timed_out = ro->timed_out;
  d.stdout_fd = ro->stdout_fd;
  d.stderr_fd = ro->stderr_fd;
  d.audit_fd = ro->audit_fd;
  d.run_id = t->run_id;
  d.after_start = wipe_env; /* as for the native sandbox: tokens gone once started */
  d.after_start_ctx = t;
  d.decisions_truncated = &t->decisions_truncated;
  char *files[2] = {NULL, NULL};
  if (t->policy->forge.ca_file) {
    size_t n = 0;
    char *pem = NULL;
    if (al_read_file(t->policy->forge.ca_file, 1u << 20, &pem, &n, err) < 0)
      return al_error_wrap(err, "forge.ca_file");
    files[0] = al_strdup_printf(DOCKER_CA_NAME "=%s", pem);
    free(pem);
  }
  d.files = files[0] ? files : NULL;
  int r = al_docker_run(&d, status, err);
  free(files[0]);
  return r;
}

int al_ticket_run(const al_ticket_opts *o, al_ticket_outcome *res, al_error *err)
{
  memset(res, 0, sizeof *res);
  res->agent_status = -1;
  struct ticket t = {.o = o, .t0 = al_now_ms()};
  block_signals();
  if (al_random_hex(t.run_id, 8, err) < 0)
    return -1;
  snprintf(res->run_id, sizeof res->run_id, "%s", t.run_id);
  t.rec = json_object();
  al_autofree char *started = iso_now();
  json_object_set_new(t.rec, "schema", json_string("airlock.run-record/1"));
  json_object_set_new(t.rec, "run_id", json_string(t.run_id));
  json_object_set_new(t.rec, "started_at", json_string(started));
  json_object_set_new(t.rec, "accept_unprotected", json_boolean(o->accept_unprotected));
  json_object_set_new(t.rec, "unprotected", json_false());
  json_t *argv = json_array();
  for (char *const *a = o->agent_argv; a && *a; a++)
    json_array_append_new(argv, json_string(*a));
  json_object_set_new(t.rec, "agent", json_pack("{s:o}", "argv", argv));

  int rc = -1;
  int audit_fd = -1, out_fd = -1, relay_fd = -1;
  if (al_ticket_parse_target(o->target, t.repo, sizeof t.repo, &t.number, err) < 0)
    goto done;
  json_object_set_new(t.rec, "ticket",
                      json_pack("{s:s, s:I}", "repo", t.repo, "number", (json_int_t)t.number));
  if (do_policy(&t, err) < 0)
    goto done;
  /* al_docker_run refuses it too; here it is refused before any token is
   * minted */
  if (o->docker && t.policy->relay.present) {
    al_make_error(err, ENOTSUP,
                  "%s: the docker backend does not run the model relay (policy `relay`); use "
                  "the native backend",
                  o->policy_path);
    goto done;
  }
  json_object_set_new(t.rec, "backend", json_string(o->docker ? "docker" : "native"));
  snprintf(t.branch, sizeof t.branch, "%s%lu-%.8s", t.policy->branch_prefix, t.number, t.run_id);

  if (interrupted(&t) || do_audit(&t, err) < 0)
    goto done;
  if (interrupted(&t) || do_lease(&t, err) < 0)
    goto done;
  if (interrupted(&t) || do_preflight(&t, err) < 0)
    goto done;
  if (interrupted(&t))
    goto done;

  /* The sandbox. */
  {
    uint64_t s = phase_begin(&t, "agent");
    if ((audit_fd = sealed_memfd("airlock-audit", AUDIT_CAP, err)) < 0 ||
        (out_fd = sealed_memfd("airlock-agent-stdout", AGENT_STDOUT_CAP, err)) < 0 ||
        (t.policy->relay.present &&
         (relay_fd = sealed_memfd("airlock-relay", AUDIT_CAP, err)) < 0)) {
      phase_end(&t, s, "failed", "%s", err->msg);
      goto done;
    }
    build_env(&t);
    size_t nro = 0;
    const char *ro[34];
    for (const char *const *p = o->extra_ro_paths; p && *p && nro < 32; p++)
      ro[nro++] = *p;
    if (t.policy->forge.ca_file)
      ro[nro++] = t.policy->forge.ca_file;
    ro[nro] = NULL;
    al_run_opts ro_opts = {
        .policy = t.policy,
        .argv = o->agent_argv,
        .env = t.env,
        .timeout_ms = o->timeout_ms,
        .audit_fd = audit_fd,
        .run_id = t.run_id,
        .quiet = o->quiet,
        .extra_ro_paths = ro,
        .stdout_fd = out_fd,
        .relay_log_fd = relay_fd,
        .relay_key = t.relay_key,
        .after_start = wipe_env,
        .after_start_ctx = &t,
    };
    /* The agent's stdin is /dev/null (it must not read what the operator
     * types); its stderr goes through a pipe we relay with escape sequences
     * neutralised (it must not drive the operator's terminal, nor truncate
     * or rewrite our own stderr, which a shared descriptor would allow). */
    struct stderr_relay sr = {.fd = -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int errp[2] = {-1, -1};
    if (devnull < 0 || pipe2(errp, O_CLOEXEC) < 0 || stderr_relay_start(&sr, errp[0]) < 0) {
      al_make_error(err, errno, "agent stdio");
      phase_end(&t, s, "failed", "%s", err->msg);
      if (devnull >= 0)
        close(devnull);
      if (errp[0] >= 0) {
        close(errp[0]);
        close(errp[1]);
      }
      goto done;
    }
    bool timed_out = false; /* by the limit, not an agent that exits 124 */
    ro_opts.timed_out = &timed_out;
    ro_opts.stdin_fd = devnull;
    ro_opts.stderr_fd = errp[1];
    int status = 125;
    al_error re = {0};
    int r;
    if (o->docker)
      r = run_docker(&t, &ro_opts, &status, &re);
    else
      r = al_run_command(&ro_opts, &status, &re);
    al_secret_free(t.relay_key); /* already wiped once the relay started */
    t.relay_key = NULL;
    close(errp[1]);
    close(devnull);
    stderr_relay_join(&sr);
    wipe_env(&t);
    res->agent_status = r < 0 ? -1 : status;
    size_t n = 0;
    al_autofree char *audit = read_memfd(audit_fd, &n);
    json_t *decisions = decisions_from(audit);
    char relay_sum[512];
    relay_record(&t, relay_fd, relay_sum, sizeof relay_sum);
    size_t denied = 0;
    for (size_t i = 0; i < json_array_size(decisions); i++) {
      const char *d = json_string_value(json_object_get(json_array_get(decisions, i), "decision"));
      if (d && strcmp(d, "deny") == 0)
        denied++;
    }
    json_object_set_new(t.rec, "proxy_decisions", decisions);
    if (t.decisions_truncated) {
      json_object_set_new(t.rec, "proxy_decisions_truncated", json_true());
      al_warn("the proxy's decisions in the record are incomplete (cut at their cap, or lost)");
    }
    res->agent_stdout = read_memfd(out_fd, &n);
    agent_result(&t, res->agent_stdout, res);
    json_object_set_new(json_object_get(t.rec, "agent"), "exit_status", json_integer(status));
    json_object_set_new(json_object_get(t.rec, "agent"), "timed_out", json_boolean(timed_out));
    if (r < 0) {
      json_object_set_new(json_object_get(t.rec, "agent"), "error", json_string(re.msg));
      phase_end(&t, s, "failed", "%s", re.msg);
      *err = re;
    } else {
      phase_end(&t, s, status == 0 ? "ok" : "failed",
                "exit %d, %zu proxy decisions (%zu denied)%s%s%s", status,
                json_array_size(decisions), denied, relay_sum, res->pr_url[0] ? ", " : "",
                res->pr_url);
      if (status != 0)
        al_make_error(err, 0, "the agent exited with status %d%s", status,
                      timed_out ? " (timeout)" : "");
      else
        rc = 0;
    }
  }

done:
  res->unprotected = t.unprotected;
  wipe_env(&t);
  {
    al_error re = {0};
    if (do_release(&t, res, &re) < 0 && rc == 0) {
      *err = re;
      rc = -1;
    }
  }
  if (t.policy && json_object_get(t.rec, "lease"))
    do_review(&t);
  if (json_object_get(t.rec, "pull_request_reported"))
    verify_pr(&t, res);
  if (t.interrupted) {
    if (rc == 0)
      rc = -1;
    al_make_error(err, EINTR, "interrupted");
  }
  if (rc < 0)
    json_object_set_new(t.rec, "error", json_string(err->msg));
  al_autofree char *ended = iso_now();
  json_object_set_new(t.rec, "ended_at", json_string(ended));
  {
    al_error we = {0};
    if (write_record(&t, res, &we) < 0) {
      al_error_log("%s", we.msg);
      if (rc == 0) {
        *err = we;
        rc = -1;
      }
    }
  }
  if (audit_fd >= 0)
    close(audit_fd);
  if (out_fd >= 0)
    close(out_fd);
  if (relay_fd >= 0)
    close(relay_fd);
  al_secret_free(t.relay_key);
  for (size_t i = 0; i < t.nphases; i++)
    free(t.phases[i].detail);
  json_decref(t.rec);
  al_policy_free(t.policy);
  return rc;
}
