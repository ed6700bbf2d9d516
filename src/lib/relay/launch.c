#include "relay/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/secmem.h"
#include "common/secretfile.h"
#include "common/util.h"
#include "relay/relay.h"
#include "sandbox/sandbox.h"

struct al_relay_proc {
  al_sandbox *sb;
  al_policy *policy; /* the relay sandbox's own policy (and the proxy's for its listener) */
  int proxy_listener;
};

const char *const *al_relay_agent_env(void)
{
  static const char *const env[] = {"ANTHROPIC_BASE_URL=http://127.0.0.1:8080",
                                    "OPENAI_BASE_URL=http://127.0.0.1:8080/v1",
                                    "ANTHROPIC_API_KEY=airlock-relay-injects-the-key",
                                    "OPENAI_API_KEY=airlock-relay-injects-the-key",
                                    "AIRLOCK_MODEL_RELAY=http://127.0.0.1:8080",
                                    "NO_PROXY=127.0.0.1,localhost",
                                    "no_proxy=127.0.0.1,localhost",
                                    NULL};
  return env;
}

/* The key file (common/secretfile.h's rule): one key of printable ASCII,
 * no spaces, at most cap - 2 bytes. buf gets the key. */
static int read_key(const char *path, char *buf, size_t cap, al_error *err)
{
  char *key = NULL;
  size_t n = 0;
  if (al_secret_file_read(path, "relay.key_file", cap - 2, al_secret_byte_printable,
                          "one key of printable ASCII, no spaces", &key, &n, err) < 0)
    return -1;
  memcpy(buf, key, n + 1);
  al_secret_free(key);
  return 0;
}

/* The key handed over from the broker lease (`relay.key: broker`): the
 * same shape as a key file's. buf gets a copy. */
static int copy_key(const char *key, char *buf, size_t cap, al_error *err)
{
  if (!key || !key[0])
    return al_error_set(err, EINVAL,
                        "relay.key: broker: no key from the broker lease (only `airlock ticket` "
                        "leases the `model_key` secret)");
  size_t n = strlen(key);
  bool ok = n <= cap - 2;
  for (size_t i = 0; i < n && ok; i++)
    ok = key[i] > 0x20 && key[i] < 0x7f;
  if (!ok)
    return al_error_set(err, EINVAL,
                        "relay.key: broker: the `model_key` secret must be one key of printable "
                        "ASCII, no spaces, at most %zu bytes",
                        cap - 2);
  memcpy(buf, key, n + 1);
  return 0;
}

static int relay_policy(const al_policy *p, al_policy **out, al_error *err);

int al_relay_egress_policy(const al_policy *p, al_policy **out, al_error *err)
{
  if (!p->relay.present)
    return al_error_set(err, EINVAL, "%s: the policy has no relay section",
                        p->source ? p->source : "policy");
  return relay_policy(p, out, err);
}

/* The relay sandbox's policy: the upstreams' hosts as the only egress. */
static int relay_policy(const al_policy *p, al_policy **out, al_error *err)
{
  const al_policy_relay *r = &p->relay;
  char allow[16 * 300] = "", pin[16 * 320] = "";
  size_t na = 0, np = 0;
  for (size_t i = 0; i < r->n_upstreams; i++) {
    const al_relay_upstream *u = &r->upstreams[i];
    bool dup = false;
    for (size_t k = 0; k < i && !dup; k++)
      dup = strcmp(r->upstreams[k].host, u->host) == 0 && r->upstreams[k].port == u->port;
    if (!dup)
      na += (size_t)snprintf(allow + na, sizeof allow - na, "%s{host: \"%s\", port: %u, tls: true}",
                             na ? ", " : "", u->host, (unsigned)u->port);
    bool pdup = false;
    for (size_t k = 0; k < i && !pdup; k++)
      pdup = r->upstreams[k].pin && strcmp(r->upstreams[k].host, u->host) == 0;
    if (u->pin && !pdup)
      np += (size_t)snprintf(pin + np, sizeof pin - np, "%s{host: \"%s\", address: \"%s\"}",
                             np ? ", " : "", u->host, u->pin);
  }
  char pins[sizeof pin + 16] = "";
  if (np)
    snprintf(pins, sizeof pins, "  pin: [%s]\n", pin);
  char resolver[200] = "";
  if (p->network.present && p->network.resolver)
    snprintf(resolver, sizeof resolver, "  resolver: \"%s\"\n", p->network.resolver);
  uint64_t wall = p->process.limits.wall_ms + 60000;
  if (wall > 7 * 86400000ull)
    wall = 7 * 86400000ull;
  al_autofree char *yaml = al_strdup_printf(
      "version: 1\n"
      "network:\n"
      "  allow: [%s]\n"
      "%s%s"
      "  max_connections: %u\n"
      "  timeouts: {connect: %llums, idle: %llums, tunnel: %llums}\n"
      "filesystem: {workspace_size: 1MiB, tmp_size: 16MiB}\n"
      "process:\n"
      "  limits: {memory: 512MiB, pids: %u, nofile: 1024, wall: %llums}\n",
      allow, pins, resolver, r->max_conns * 2 + 4, (unsigned long long)r->connect_timeout_ms,
      (unsigned long long)r->idle_timeout_ms, (unsigned long long)r->total_timeout_ms,
      r->max_conns + 16, (unsigned long long)wall);
  if (al_policy_load_buffer("<relay>", yaml, strlen(yaml), out, err) < 0)
    return al_error_wrap(err, "the relay's policy");
  return 0;
}

/* The sibling airlock-net binary (the relay verb links OpenSSL). */
static int net_binary(char *out, size_t len, al_error *err)
{
  ssize_t n = readlink("/proc/self/exe", out, len - 16);
  if (n <= 0)
    return al_make_error(err, errno, "readlink /proc/self/exe");
  out[n] = '\0';
  char *slash = strrchr(out, '/');
  snprintf(slash + 1, len - (size_t)(slash + 1 - out), "airlock-net");
  if (access(out, X_OK) < 0)
    return al_make_error(err, errno, "the relay needs `%s`", out);
  return 0;
}

static int start(const al_relay_start_opts *o, al_relay_proc **out, al_error *err);

int al_relay_start(const al_relay_start_opts *o, al_relay_proc **out, al_error *err)
{
  const al_policy *p = o->policy;
  int r = start(o, out, err);
  if (al_policy_relay_key_broker(p) && o->key)
    explicit_bzero(o->key, strlen(o->key));
  return r;
}

static int start(const al_relay_start_opts *o, al_relay_proc **out, al_error *err)
{
  const al_policy *p = o->policy;
  if (!p->relay.present)
    return al_error_set(err, EINVAL, "the policy has no relay section");
  if (o->log_fd <= 2)
    return al_error_set(err, EINVAL, "the relay needs a log fd above 2");
  char bin[PATH_MAX];
  if (net_binary(bin, sizeof bin, err) < 0)
    return -1;
  al_autofree char *cfg = al_policy_relay_canonical(p);
  al_relay_proc *rp = al_xcalloc(1, sizeof *rp);
  rp->proxy_listener = -1;
  if (relay_policy(p, &rp->policy, err) < 0) {
    free(rp);
    return -1;
  }

  /* The keys live in this buffer for the few milliseconds it takes to
   * start the sandbox (its copy in the sandbox's envp is wiped by
   * al_sandbox_start). Locked and excluded from core dumps. One variable,
   * the keys in upstream order separated by one space (keys hold no
   * spaces). */
  const size_t mapped = 32768;
  char *kenv = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (kenv == MAP_FAILED) {
    al_policy_free(rp->policy);
    free(rp);
    return al_make_error(err, errno, "mmap");
  }
  (void)mlock(kenv, mapped);
  (void)madvise(kenv, mapped, MADV_DONTDUMP);
  (void)madvise(kenv, mapped, MADV_WIPEONFORK);
  size_t pre = strlen(AL_RELAY_KEY_ENV "=");
  memcpy(kenv, AL_RELAY_KEY_ENV "=", pre + 1); /* with its NUL, until the keys follow */
  int r = 0;
  size_t at = pre;
  const size_t kcap = AL_RELAY_KEY_MAX + 2;
  for (size_t i = 0; i < p->relay.n_upstreams && r == 0; i++) {
    const al_relay_upstream *u = &p->relay.upstreams[i];
    if (i)
      kenv[at++] = ' ';
    r = u->key_broker ? copy_key(o->key, kenv + at, kcap, err)
                      : read_key(u->key_file, kenv + at, kcap, err);
    at += strlen(kenv + at);
  }
  if (r == 0) {
    char *env[] = {kenv, NULL};
    char *argv[] = {bin,
                    (char *)"relay",
                    (char *)"--listen-fd",
                    (char *)"0",
                    (char *)"--proxy",
                    (char *)"127.0.0.1:3128",
                    (char *)"--run-id",
                    (char *)o->run_id,
                    (char *)"--config-json",
                    cfg,
                    NULL};
    const char *ro[18] = {bin};
    size_t nro = 1;
    for (size_t i = 0; i < p->relay.n_upstreams && nro < 17; i++) {
      const char *ca = p->relay.upstreams[i].ca_file;
      bool seen = !ca;
      for (size_t k = 1; k < nro && !seen; k++)
        seen = strcmp(ro[k], ca) == 0; /* a path is bound once */
      if (!seen)
        ro[nro++] = ca;
    }
    uint16_t port = 3128;
    al_sandbox_opts so = {
        .command_is_airlock = true,
        .policy = rp->policy,
        .argv = argv,
        .env = env,
        .listen_ports = &port,
        .n_listen = 1,
        .run_id = o->run_id,
        .extra_ro_paths = ro,
        .quiet = true,
        .stdout_fd = o->log_fd,
    };
    /* The sandbox inherits fds 0-2 only: hand it the agent's listener as
     * its stdin for the moment of the clone. */
    int saved = fcntl(0, F_DUPFD_CLOEXEC, 3);
    if (dup2(o->agent_listener, 0) < 0) {
      r = al_make_error(err, errno, "dup2 the relay listener");
    } else {
      int st = 0;
      r = al_sandbox_start(&so, &rp->sb, &st, err);
      if (saved >= 0)
        dup2(saved, 0);
      else
        close(0);
      if (r < 0)
        al_error_wrap(err, "start the relay sandbox");
    }
    if (saved >= 0)
      close(saved);
  }
  explicit_bzero(kenv, mapped);
  munmap(kenv, mapped);
  if (r < 0) {
    al_policy_free(rp->policy);
    free(rp);
    return -1;
  }
  rp->proxy_listener = al_sandbox_take_listener(rp->sb, 0);
  *out = rp;
  return 0;
}

int al_relay_proxy_listener(const al_relay_proc *rp)
{
  return rp->proxy_listener;
}

const al_policy *al_relay_proxy_policy(const al_relay_proc *rp)
{
  return rp->policy;
}

void al_relay_stop(al_relay_proc *rp)
{
  if (!rp)
    return;
  if (rp->sb) {
    pid_t pid = al_sandbox_pid(rp->sb);
    if (pid > 0) {
      /* let calls in flight log their line; then the sandbox is killed */
      kill(pid, SIGTERM);
      (void)al_wait_exited(pid, 200);
    }
    al_sandbox_destroy(rp->sb);
  }
  if (rp->proxy_listener >= 0)
    close(rp->proxy_listener);
  al_policy_free(rp->policy);
  free(rp);
}
