/* The demo's environment: see demo.h for the order of things. */
#include "demo/demo.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "demo/internal.h"

/* fork + exec argv with stdout and stderr appended to log_path; recorded in
 * d (when not NULL) for teardown. Between fork and exec only: _exit. */
pid_t al_demo_spawn(al_demo *d, const char *const argv[], const char *log_path)
{
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    /* Its own process group: a terminal's Ctrl-C reaches the demo, which
     * stops the ticket and then its forge and broker in order (the broker
     * must outlive the release to revoke). */
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, 0);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  if (d && d->nchildren < AL_DEMO_MAX_CHILDREN)
    d->children[d->nchildren++] = pid;
  return pid;
}

int al_demo_run_script(const char *const argv[], const char *log_path)
{
  pid_t p = al_demo_spawn(NULL, argv, log_path);
  int ws = 0;
  if (p < 0 || waitpid(p, &ws, 0) < 0)
    return -1;
  return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -1;
}

bool al_demo_wait_for(const char *path, int ms)
{
  for (int i = 0; i < ms / 20; i++) {
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size > 0)
      return true;
    usleep(20000);
  }
  return false;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
  size_t len = sz * n;
  char **buf = ud;
  size_t old = *buf ? strlen(*buf) : 0;
  if (old + len > (8u << 20))
    return 0;
  *buf = al_xrealloc(*buf, old + len + 1);
  memcpy(*buf + old, p, len);
  (*buf)[old + len] = '\0';
  return len;
}

json_t *al_demo_admin_get(al_demo *d, const char *path)
{
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", d->admin_port, path);
  return al_demo_http(url, NULL);
}

json_t *al_demo_http(const char *url, const char *post)
{
  CURL *c = curl_easy_init();
  if (!c)
    return NULL;
  char *body = NULL;
  if (post)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  json_t *j = rc == CURLE_OK && body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  return j;
}

void al_demo_teardown(al_demo *d, char *note, size_t n)
{
  note[0] = '\0';
  /* The last started first, one at a time: the broker (started after its
   * forge) revokes every live token before it exits, a released lease's
   * too, while the test forge still answers. */
  for (size_t i = d->nchildren; i-- > 0;) {
    int ws;
    kill(d->children[i], SIGTERM);
    for (int k = 0; k < 250; k++) {
      if (waitpid(d->children[i], &ws, WNOHANG) != 0)
        break;
      if (k == 249) {
        kill(d->children[i], SIGKILL);
        waitpid(d->children[i], &ws, 0);
      }
      usleep(20000);
    }
  }
  d->nchildren = 0;
  if (d->keep && d->tmp.path[0])
    snprintf(note, n, "kept %s", d->tmp.path);
  else if (d->tmp.path[0]) {
    al_error e = {0};
    if (al_tmpdir_remove(&d->tmp, &e) < 0)
      snprintf(note, n, "%s", e.msg);
  }
}

/* The policy's relay section: --relay FILE as it is, or one upstream of
 * the preset's vendor from --relay-upstream/--relay-key-file; "" without
 * either. malloc'd into *out. */
static int relay_section(const al_demo_relay *r, char **out, al_error *err)
{
  *out = NULL;
  if (r && r->relay_file) {
    char *text = NULL;
    size_t n = 0;
    if (al_read_file(r->relay_file, 64 * 1024, &text, &n, err) < 0)
      return al_error_wrap(err, "--relay");
    if (strncmp(text, "relay:", 6) != 0) {
      free(text);
      return al_error_set(
          err, EINVAL,
          "--relay %s: must start with `relay:` (a policy's relay section, docs/policy.md)",
          r->relay_file);
    }
    *out = text;
    return 0;
  }
  if (!r || !r->upstream) {
    *out = al_xstrdup("");
    return 0;
  }
  char ca[PATH_MAX] = "";
  if (r->ca_file && !realpath(r->ca_file, ca))
    return al_make_error(err, errno, "--relay-ca `%s`", r->ca_file);
  al_autofree char *ca_kv = ca[0] ? al_strdup_printf(", ca_file: \"%s\"", ca) : al_xstrdup("");
  al_autofree char *pin_kv =
      r->pubkey_pin ? al_strdup_printf(", pubkey_pin: \"%s\"", r->pubkey_pin) : al_xstrdup("");
  *out = al_strdup_printf("relay:\n  upstreams:\n    - {vendor: %s, upstream: \"%s\", key_file: "
                          "\"%s\"%s%s}\n",
                          r->vendor ? r->vendor : "anthropic", r->upstream, r->key_file, ca_kv,
                          pin_kv);
  return 0;
}

/* The test CA and the two Apps' keys (openssl, through the scripts). */
static int make_keys(al_demo *d, const al_demo_files *files, const char *tls, const char *keys,
                     al_error *err)
{
  char log[PATH_MAX + 16];
  snprintf(log, sizeof log, "%s/setup.log", d->secret);
  const char *const ca_argv[] = {files->ca_script, tls, NULL};
  const char *const key_argv[] = {files->key_script, keys, "app", NULL};
  /* A second, read-only App the broker mints the audit's tokens from
   * (administration: read, contents: read); it is never leased to a run. */
  const char *const audit_key_argv[] = {files->key_script, keys, "auditor", NULL};
  if (al_demo_run_script(ca_argv, log) < 0 || al_demo_run_script(key_argv, log) < 0 ||
      al_demo_run_script(audit_key_argv, log) < 0) {
    snprintf(d->log, sizeof d->log, "%s", log);
    return al_error_set(err, 0, "making the test CA or the app keys failed (openssl):");
  }
  snprintf(d->ca, sizeof d->ca, "%s/ca.crt", tls);
  chmod(tls, 0755);
  chmod(d->ca, 0644);
  return 0;
}

/* airlock-forge with the fixture and both Apps' public keys; its ports. */
static int start_forge(al_demo *d, const al_demo_files *files, const char *tls, const char *keys,
                       al_error *err)
{
  char data[PATH_MAX + 8], ports[PATH_MAX + 16], pub[PATH_MAX + 32], apub[PATH_MAX + 40],
      flog[PATH_MAX + 16];
  snprintf(data, sizeof data, "%s/forge", d->secret);
  snprintf(ports, sizeof ports, "%s/ports.json", d->secret);
  snprintf(pub, sizeof pub, "1001=%s/app.pub.pem", keys);
  snprintf(apub, sizeof apub, "1002=%s/auditor.pub.pem", keys);
  snprintf(flog, sizeof flog, "%s/forge.log", d->secret);
  /* --serve: the forge sends its webhooks to airlock serve (demo_serve.c) */
  const char *const forge_argv[] = {files->forge,
                                    "--fixture",
                                    files->fixture,
                                    "--data",
                                    data,
                                    "--tls-dir",
                                    tls,
                                    "--key",
                                    pub,
                                    "--key",
                                    apub,
                                    "--ports-file",
                                    ports,
                                    d->webhook_url[0] ? "--webhook-url" : NULL,
                                    d->webhook_url,
                                    "--webhook-secret",
                                    d->webhook_secret,
                                    NULL};
  if (al_demo_spawn(d, forge_argv, flog) < 0 || !al_demo_wait_for(ports, 10000)) {
    snprintf(d->log, sizeof d->log, "%s", flog);
    return al_error_set(err, 0, "the test forge did not start:");
  }
  json_t *pj = json_load_file(ports, 0, NULL);
  d->https_port = (int)json_integer_value(json_object_get(pj, "https"));
  d->admin_port = (int)json_integer_value(json_object_get(pj, "admin"));
  json_decref(pj);
  if (d->https_port <= 0 || d->admin_port <= 0)
    return al_error_set(err, 0, "the test forge wrote no ports; see %s", flog);
  return 0;
}

/* The broker: the only holder of the Apps' private keys. Before a lease it
 * audits the repository (airlock audit) with the read-only audit App, so
 * neither the run's App nor the supervisor needs administration. */
static int start_broker(al_demo *d, const al_demo_files *files, const char *keys, al_error *err)
{
  char bconf[PATH_MAX + 16], blog[PATH_MAX + 16], state[PATH_MAX + 8];
  snprintf(bconf, sizeof bconf, "%s/broker.yaml", d->secret);
  snprintf(d->socket, sizeof d->socket, "%s/broker.sock", d->secret);
  snprintf(blog, sizeof blog, "%s/broker.log", d->secret);
  snprintf(state, sizeof state, "%s/broker", d->secret);
  al_autofree char *bc = al_strdup_printf(
      "app:\n  id: 1001\n  private_key: %s/app.pem\n"
      "api:\n  url: https://127.0.0.1:%d\n  ca_file: %s\n  retries: 2\n"
      "repositories: [acme/tally, acme/loose]\n"
      "roles:\n  git: {contents: write, pull_requests: write}\n  ticket: {issues: write}\n"
      "lease:\n  ttl: 5m\n"
      "state_dir: %s\n"
      "audit:\n  app: {id: 1002, private_key: %s/auditor.pem}\n",
      keys, d->https_port, d->ca, state, keys);
  if (al_write_file(bconf, bc, strlen(bc), 0600, err) < 0)
    return -1;
  const char *const broker_argv[] = {files->airlock_net, "broker",  "-c", bconf,
                                     "--socket",         d->socket, NULL};
  if (al_demo_spawn(d, broker_argv, blog) >= 0)
    for (int i = 0; i < 250; i++) {
      struct stat st;
      if (stat(d->socket, &st) == 0 && S_ISSOCK(st.st_mode))
        break;
      usleep(20000);
    }
  struct stat st;
  if (stat(d->socket, &st) < 0 || !S_ISSOCK(st.st_mode)) {
    snprintf(d->log, sizeof d->log, "%s", blog);
    return al_error_set(err, 0, "the broker did not start:");
  }
  return 0;
}

/* acme/tally#1's body from the fixture (the fix, in a ```diff fence), or
 * NULL; malloc'd. */
static char *fixture_body(const char *fixture)
{
  json_t *f = json_load_file(fixture, 0, NULL);
  char *body = NULL;
  size_t i, k;
  json_t *r, *is;
  json_array_foreach(json_object_get(f, "repositories"), i, r)
  {
    const char *name = json_string_value(json_object_get(r, "full_name"));
    if (!name || strcmp(name, "acme/tally") != 0)
      continue;
    json_array_foreach(json_object_get(r, "issues"), k, is)
    {
      const char *b = json_string_value(json_object_get(is, "body"));
      if (json_integer_value(json_object_get(is, "number")) == 1 && b && !body)
        body = al_xstrdup(b);
    }
  }
  json_decref(f);
  return body;
}

/* --ticket: the Jira or Linear double on its own CA (a name pinned to
 * loopback, as a real site's host would be), holding acme/tally#1's text
 * under the key, accepting one fresh credential (the broker's side: a 0600
 * file in the private directory; the sandbox never sees it). */
static int start_ticket(al_demo *d, const al_demo_files *files, al_error *err)
{
  bool jira = strcmp(d->ticket_kind, "jira") == 0;
  snprintf(d->ticket_key, sizeof d->ticket_key, "%s", jira ? "PROJ-7" : "ENG-42");
  snprintf(d->ticket_host, sizeof d->ticket_host, "%s", jira ? "jira.test" : "linear.test");
  if (al_random_hex(d->ticket_secret, 32, err) < 0)
    return -1;
  char tok[PATH_MAX + 16], tls[PATH_MAX + 8], ports[PATH_MAX + 24], log[PATH_MAX + 16],
      ca[PATH_MAX + 16];
  snprintf(tok, sizeof tok, "%s/ticket.token", d->secret);
  snprintf(tls, sizeof tls, "%s/tktls", d->dir);
  snprintf(ports, sizeof ports, "%s/ticket.ports.json", d->secret);
  snprintf(log, sizeof log, "%s/ticket.log", d->secret);
  snprintf(d->ticket_state, sizeof d->ticket_state, "%s/ticket.state.json", d->secret);
  al_autofree char *line = al_strdup_printf("%s\n", d->ticket_secret);
  if (al_write_file(tok, line, strlen(line), 0600, err) < 0)
    return -1;
  const char *const ca_argv[] = {files->ca_script, tls, d->ticket_host, NULL};
  if (al_demo_run_script(ca_argv, log) < 0) {
    snprintf(d->log, sizeof d->log, "%s", log);
    return al_error_set(err, 0, "making the ticket host's test CA failed (openssl):");
  }
  chmod(tls, 0755);
  snprintf(ca, sizeof ca, "%s/ca.crt", tls);
  chmod(ca, 0644);
  al_autofree char *body = fixture_body(files->fixture);
  if (!body)
    return al_error_set(err, 0, "%s: no acme/tally#1 to copy into the %s ticket", files->fixture,
                        d->ticket_kind);
  const char *const argv[] = {files->ticket_double,
                              "--kind",
                              d->ticket_kind,
                              "--key",
                              d->ticket_key,
                              "--title",
                              "median() is wrong for an even number of values",
                              "--body",
                              body,
                              "--token-file",
                              tok,
                              "--tls-dir",
                              tls,
                              "--ports-file",
                              ports,
                              "--state",
                              d->ticket_state,
                              jira ? "--user" : NULL,
                              "bot@acme.example",
                              NULL};
  if (al_demo_spawn(d, argv, log) < 0 || !al_demo_wait_for(ports, 10000)) {
    snprintf(d->log, sizeof d->log, "%s", log);
    return al_error_set(err, 0, "the %s double did not start:", d->ticket_kind);
  }
  json_t *pj = json_load_file(ports, 0, NULL);
  d->ticket_port = (int)json_integer_value(json_object_get(pj, "port"));
  json_decref(pj);
  if (d->ticket_port <= 0)
    return al_error_set(err, 0, "the %s double wrote no port; see %s", d->ticket_kind, log);
  return 0;
}

int al_demo_setup(al_demo *d, const al_demo_files *files, const al_demo_relay *relay,
                  bool own_agent, al_error *err)
{
  d->log[0] = '\0';
  if (al_tmpdir_make("airlock-demo", &d->tmp, err) < 0)
    return -1;
  snprintf(d->dir, sizeof d->dir, "%s", d->tmp.path);
  /* The sandbox user must reach the CA file (bound read-only): this level
   * is traversable; the secrets are one level down, 0700. */
  chmod(d->dir, 0755);
  snprintf(d->secret, sizeof d->secret, "%s/secret", d->dir);
  if (mkdir(d->secret, 0700) < 0)
    return al_make_error(err, errno, "mkdir %s", d->secret);
  char tls[PATH_MAX + 8], keys[PATH_MAX + 8];
  snprintf(tls, sizeof tls, "%s/tls", d->dir);
  snprintf(keys, sizeof keys, "%s/keys", d->secret);
  if (d->gitlab) /* --forge gitlab: demo_gitlab.c */
    return al_demo_gitlab_setup(d, files, tls, err);
  if (d->serve && al_demo_serve_prepare(d, err) < 0)
    return -1;
  if (make_keys(d, files, tls, keys, err) < 0 || start_forge(d, files, tls, keys, err) < 0 ||
      start_broker(d, files, keys, err) < 0)
    return -1;
  if (d->ticket_kind && start_ticket(d, files, err) < 0)
    return -1;
  /* --ticket: the ticket host beside the forge's (the seed's two hosts) */
  al_autofree char *tk_allow = al_xstrdup(""), *tk_pin = al_xstrdup(""), *tk = al_xstrdup("");
  if (d->ticket_kind) {
    bool jira = strcmp(d->ticket_kind, "jira") == 0;
    free(tk_allow);
    free(tk_pin);
    free(tk);
    tk_allow =
        al_strdup_printf("    - {host: %s, port: %d, tls: true}\n", d->ticket_host, d->ticket_port);
    tk_pin = al_strdup_printf("    - {host: %s, address: 127.0.0.1}\n", d->ticket_host);
    tk = al_strdup_printf("ticket:\n  kind: %s\n  url: https://%s:%d\n%s"
                          "  ca_file: %s/tktls/ca.crt\n  token_file: %s/ticket.token\n",
                          d->ticket_kind, d->ticket_host, d->ticket_port,
                          jira ? "  project: PROJ\n  user: bot@acme.example\n" : "  team: ENG\n",
                          d->dir, d->secret);
  }

  /* The run's policy: exactly the API host and the git host, pinned to the
   * local forge (a pin is the only way loopback is ever dialled). */
  snprintf(d->policy, sizeof d->policy, "%s/airlock.yaml", d->dir);
  al_autofree char *rs = NULL;
  if (relay_section(relay, &rs, err) < 0)
    return -1;
  al_autofree char *pol = al_strdup_printf(
      "version: 1\n"
      "network:\n"
      "  allow:\n"
      "    - {host: api.forge.test, port: %d, tls: true}\n"
      "    - {host: forge.test, port: %d, tls: true}\n"
      "%s"
      "  pin:\n"
      "    - {host: api.forge.test, address: 127.0.0.1}\n"
      "    - {host: forge.test, address: 127.0.0.1}\n"
      "%s"
      "filesystem:\n  workspace_size: 256MiB\n  tmp_size: 128MiB\n"
      "process:\n  limits: {memory: %s, pids: 512, wall: %s}\n"
      "credentials:\n  broker: %s\n"
      "  git: {repo: acme/tally, permissions: {contents: write, pull_requests: write}}\n"
      "  ticket: {repo: acme/tally, permissions: {issues: write}}\n"
      "  ttl: 5m\n"
      "forge:\n  api_url: https://api.forge.test:%d\n  git_url: https://forge.test:%d\n"
      "  ca_file: %s\n"
      "%s%s",
      d->https_port, d->https_port, tk_allow, tk_pin, own_agent ? "3GiB" : "1GiB",
      own_agent ? "20m" : "2m", d->socket, d->https_port, d->https_port, d->ca, rs, tk);
  return al_write_file(d->policy, pol, strlen(pol), 0644, err);
}

const char *al_demo_main_sha(al_demo *d, char *buf, size_t n)
{
  if (d->gitlab)
    return al_demo_gitlab_main_sha(d, buf, n);
  json_t *refs = al_demo_admin_get(d, "/refs?repo=acme/tally");
  const char *sha = NULL;
  json_t *v;
  size_t i;
  json_t *arr = json_is_array(refs) ? refs : json_object_get(refs, "refs");
  json_array_foreach(arr, i, v)
  {
    const char *ref = json_string_value(json_object_get(v, "ref"));
    if (ref && strcmp(ref, "refs/heads/main") == 0)
      sha = json_string_value(json_object_get(v, "sha"));
  }
  if (!sha && json_is_object(refs)) {
    json_t *m = json_object_get(refs, "refs/heads/main");
    sha = json_string_value(m);
  }
  snprintf(buf, n, "%s", sha ? sha : "?");
  json_decref(refs);
  return buf;
}

bool al_demo_attempt_allowed(const char *id, const char *credentials_mode)
{
  if (!id)
    return false;
  if (strcmp(id, "open-pr") == 0 || strcmp(id, "keep-token") == 0)
    return true;
  /* env mode: the agent holds the token and may open its own PR */
  return strcmp(id, "open-pr-itself") == 0 && credentials_mode &&
         strcmp(credentials_mode, "env") == 0;
}

const char *al_demo_preflight_verdict(json_t *rec, const char *id)
{
  const char *verdict = NULL;
  size_t k;
  json_t *x;
  json_array_foreach(json_object_get(json_object_get(rec, "preflight"), "results"), k, x)
  {
    const char *xid = json_string_value(json_object_get(x, "id"));
    if (xid && strcmp(xid, id) == 0)
      verdict = json_string_value(json_object_get(x, "verdict"));
  }
  return verdict;
}
