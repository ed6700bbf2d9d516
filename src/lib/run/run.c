#include "run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "relay/launch.h"
#include "relay/relay.h"

pid_t al_run_start_proxy(const al_proxy_listener *ls, size_t n, int decisions_fd, al_error *err)
{
  return al_run_start_proxy_capped(ls, n, decisions_fd, 0, err);
}

/* AIRLOCK_DEBUG_TIMING: the proxy's milestones, in µs since the fork,
 * on stderr as it exits (the supervisor prints its side of the stop). */
static void print_proxy_timing(uint64_t t_fork, uint64_t t_confined, const al_proxy_marks *m)
{
#define US(t) ((t) ? (unsigned long long)(((t)-t_fork) / 1000) : 0ull)
  al_info("timing: proxy (us since its fork): confined %llu, local addrs %llu, workers %llu, "
          "serving %llu | stop signal %llu, workers joined %llu, summary %llu, exit %llu",
          US(t_confined), US(m->local), US(m->workers), US(m->serving), US(m->stop), US(m->joined),
          US(m->closed), US(al_now_ns()));
#undef US
}

pid_t al_run_start_proxy_capped(const al_proxy_listener *ls, size_t n, int decisions_fd,
                                uint64_t decisions_cap, al_error *err)
{
  pid_t parent = getpid();
  uint64_t t_fork = al_now_ns();
  pid_t pid = fork();
  if (pid < 0)
    return al_make_error(err, errno, "fork the egress proxy");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NAME, "airlock-proxy");
    int keep[5 + 2 * AL_PROXY_TRANSPARENT_MAX] = {decisions_fd};
    size_t nk = 1;
    for (size_t i = 0; i < n && i < 2; i++) {
      keep[nk++] = ls[i].fd;
      if (ls[i].handoff) /* the forge gateway's socket (issue #15) */
        keep[nk++] = ls[i].handoff->fd;
      for (size_t j = 0; j < ls[i].n_transparent && j < AL_PROXY_TRANSPARENT_MAX; j++)
        keep[nk++] = ls[i].transparent_fds[j];
    }
    al_close_fds_from(3, keep, nk);
    /* SIGTERM/SIGINT/SIGHUP stay blocked: one that comes before
     * al_proxy_serve reads its signalfd stays pending, so the proxy still
     * closes its connections and writes its summary (decisions.h). */
    sigset_t held;
    sigemptyset(&held);
    sigaddset(&held, SIGTERM);
    sigaddset(&held, SIGINT);
    sigaddset(&held, SIGHUP);
    sigprocmask(SIG_SETMASK, &held, NULL);
    al_proxy_marks marks = {0};
    bool timing = getenv("AIRLOCK_DEBUG_TIMING") != NULL;
    al_proxy_config cfg = {.listeners = ls,
                           .n_listeners = n,
                           .decisions_fd = decisions_fd,
                           .decisions_cap = decisions_cap,
                           .marks = timing ? &marks : NULL};
    al_error e = {0};
    /* The proxy reads what a hostile agent sends: it runs as nobody, with
     * no capabilities, no filesystem writes, no exec. */
    if (al_confine_service(&e) < 0) {
      al_error_log("egress proxy: %s", e.msg);
      _exit(1);
    }
    /* The uid change cleared the parent-death signal: set it again, and
     * make sure the supervisor did not die in between. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
      _exit(1);
    uint64_t t_confined = al_now_ns();
    if (al_proxy_serve(&cfg, &e) < 0) {
      al_error_log("egress proxy: %s", e.msg);
      _exit(1);
    }
    if (timing)
      print_proxy_timing(t_fork, t_confined, &marks);
    _exit(0);
  }
  return pid;
}

void al_run_stop_proxy(pid_t pid)
{
  if (pid <= 0)
    return;
  /* SIGTERM: the proxy closes its connections (each logs its end), writes
   * the summary with write(2) (nothing is buffered) and exits. A second
   * is its budget, then SIGKILL. */
  kill(pid, SIGTERM);
  if (!al_wait_exited(pid, 1000))
    kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* The agent's variables for the model relay (base URLs, placeholder keys,
 * NO_PROXY for loopback). */
static void relay_env(char **env, size_t *n)
{
  for (const char *const *e = al_relay_agent_env(); *e; e++)
    env[(*n)++] = (char *)*e;
}

/* Start the relay sandbox on the agent's 127.0.0.1:8080 listener (index
 * idx of the agent sandbox). Its log goes to o->relay_log_fd, or
 * o->relay_log_path, or stderr. */
static int start_relay(const al_run_opts *o, al_sandbox *sb, size_t idx, const char *rid,
                       al_relay_proc **rp, al_error *err)
{
  int lfd = al_sandbox_take_listener(sb, idx);
  int log_fd;
  if (o->relay_log_fd > 2)
    log_fd = dup(o->relay_log_fd);
  else if (o->relay_log_path)
    log_fd = open(o->relay_log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  else
    log_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (log_fd < 0) {
    close(lfd);
    return al_make_error(err, errno, "the relay's log");
  }
  al_relay_start_opts ro = {.policy = o->policy,
                            .agent_listener = lfd,
                            .log_fd = log_fd,
                            .run_id = rid,
                            .quiet = o->quiet,
                            .key = o->relay_key};
  int r = al_relay_start(&ro, rp, err);
  close(lfd);
  close(log_fd);
  return r;
}

int al_run_command(const al_run_opts *o, int *status, al_error *err)
{
  *status = AL_EXIT_SETUP;
  char run_id[33];
  if (!o->run_id && al_random_hex(run_id, 8, err) < 0)
    return -1;
  const char *rid = o->run_id ? o->run_id : run_id;

  /* The supervisor may hold secrets: no core dumps, no ptrace by the
   * invoker's other processes. */
  prctl(PR_SET_DUMPABLE, 0);
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);

  bool net = o->policy->network.present;
  bool relay = o->policy->relay.present;
  if (relay && al_policy_relay_key_broker(o->policy) && (!o->relay_key || !o->relay_key[0]))
    return al_error_set(err, EINVAL,
                        "relay.key: broker: the model key comes from a broker lease, which only "
                        "`airlock ticket` opens; `airlock run` needs relay.key_file");
  size_t nextra = 0;
  for (char *const *e = o->env; e && *e; e++)
    nextra++;
  al_autofree char **env = al_xcalloc(nextra + 24, sizeof(char *));
  size_t n = 0;
  static const char *const proxy_env[] = {"HTTP_PROXY=http://127.0.0.1:3128",
                                          "HTTPS_PROXY=http://127.0.0.1:3128",
                                          "http_proxy=http://127.0.0.1:3128",
                                          "https_proxy=http://127.0.0.1:3128",
                                          "NO_PROXY=",
                                          "no_proxy="};
  if (net)
    for (size_t i = 0; i < AL_ARRAY_SIZE(proxy_env); i++)
      if (!relay || strncasecmp(proxy_env[i], "no_proxy=", 9) != 0)
        env[n++] = (char *)proxy_env[i];
  if (relay)
    relay_env(env, &n);
  for (size_t i = 0; i < nextra; i++)
    env[n++] = o->env[i];
  env[n] = NULL;

  int decisions_fd = -1;
  if (net || relay) {
    if (o->log_path) {
      decisions_fd =
          open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (decisions_fd < 0)
        return al_make_error(err, errno, "--log `%s`", o->log_path);
    } else {
      decisions_fd = o->decisions_fd > 0 ? dup(o->decisions_fd) : dup(2);
    }
  }

  if (al_sandbox_block_signals(err) < 0) {
    if (decisions_fd >= 0)
      close(decisions_fd);
    return -1;
  }
  /* listeners: the proxy's, the relay's, then the transparent path's
   * (proxy.h: the allowed names resolve to them through /etc/hosts) */
  uint16_t ports[2 + AL_PROXY_TRANSPARENT_MAX];
  uint32_t addrs[2 + AL_PROXY_TRANSPARENT_MAX] = {0};
  size_t nports = 0;
  al_proxy_transparent_plan tp = {0};
  if (net)
    ports[nports++] = AL_PROXY_PORT;
  if (relay)
    ports[nports++] = AL_RELAY_PORT;
  size_t t_first = nports;
  if (net && o->policy->network.transparent) {
    al_proxy_transparent_plan_make(o->policy, &tp);
    if (tp.n_ports_dropped && !o->quiet)
      al_warn("transparent path: %zu port(s) of network.allow past the first %d have none "
              "(clients must use HTTPS_PROXY for them)",
              tp.n_ports_dropped, AL_PROXY_TRANSPARENT_MAX);
    for (size_t i = 0; i < tp.n_ports; i++) {
      addrs[nports] = AL_PROXY_TRANSPARENT_ADDR;
      ports[nports++] = tp.ports[i];
    }
  }
  al_autofree char *hosts = tp.hosts;
  al_sandbox_opts so = {
      .policy = o->policy,
      .argv = o->argv,
      .env = env,
      .listen_ports = nports ? ports : NULL,
      .listen_addrs = nports ? addrs : NULL,
      .n_listen = nports,
      .hosts = o->policy->filesystem.root ? NULL : hosts,
      .timeout_ms = o->timeout_ms,
      .run_id = rid,
      .quiet = o->quiet,
      .extra_ro_paths = o->extra_ro_paths,
      .stdout_fd = o->stdout_fd,
      .stdin_fd = o->stdin_fd,
      .stderr_fd = o->stderr_fd,
      .files = o->files,
      .n_files = o->n_files,
  };
  al_sandbox *sb = NULL;
  int setup_status = AL_EXIT_SETUP;
  if (al_sandbox_start(&so, &sb, &setup_status, err) < 0) {
    *status = setup_status;
    if (o->after_start)
      o->after_start(o->after_start_ctx);
    if (decisions_fd >= 0)
      close(decisions_fd);
    return -1;
  }
  if (o->after_start)
    o->after_start(o->after_start_ctx);

  pid_t proxy = -1;
  uint64_t t_proxy = 0;
  al_relay_proc *rp = NULL;
  if (net || relay) {
    al_proxy_listener ls[2];
    size_t nl = 0;
    char relay_rid[48];
    snprintf(relay_rid, sizeof relay_rid, "%s/relay", rid);
    int tfds[AL_PROXY_TRANSPARENT_MAX];
    for (size_t i = 0; i < tp.n_ports; i++)
      tfds[i] = al_sandbox_take_listener(sb, t_first + i);
    if (net)
      ls[nl++] = (al_proxy_listener){.fd = al_sandbox_take_listener(sb, 0),
                                     .run_id = rid,
                                     .policy = o->policy,
                                     .handoff = o->handoff,
                                     .transparent_fds = tfds,
                                     .transparent_ports = tp.ports,
                                     .n_transparent = tp.n_ports};
    if (relay) {
      if (start_relay(o, sb, net ? 1 : 0, rid, &rp, err) < 0) {
        for (size_t i = 0; i < nl; i++)
          close(ls[i].fd);
        for (size_t i = 0; i < tp.n_ports; i++)
          close(tfds[i]);
        al_sandbox_destroy(sb);
        close(decisions_fd);
        return -1;
      }
      ls[nl++] = (al_proxy_listener){.fd = al_relay_proxy_listener(rp),
                                     .run_id = relay_rid,
                                     .policy = al_relay_proxy_policy(rp)};
    }
    uint64_t cap = o->decisions_cap ? o->decisions_cap : o->log_path ? AL_RUN_LOG_CAP : 0;
    t_proxy = al_now_ns();
    proxy = al_run_start_proxy_capped(ls, nl, decisions_fd, cap, err);
    if (net)
      close(ls[0].fd);
    for (size_t i = 0; i < tp.n_ports; i++)
      close(tfds[i]);
    if (proxy < 0) {
      al_relay_stop(rp);
      al_sandbox_destroy(sb);
      close(decisions_fd);
      return -1;
    }
  }
  if (getenv("AIRLOCK_DEBUG_TIMING")) {
    al_sandbox_report rep;
    al_sandbox_get_report(sb, &rep);
    char line[512];
    al_sandbox_format_timing(sb, line, sizeof line);
    al_info("timing: clone->hello %lluus, maps+cgroup %lluus, setup->exec %lluus; %s",
            (unsigned long long)rep.clone_to_hello_us, (unsigned long long)rep.hello_to_go_us,
            (unsigned long long)rep.go_to_exec_us, line);
  }
  int r = al_sandbox_wait(sb, status, err);
  uint64_t t_term = al_now_ns();
  /* The command is done: the proxy closes its connections and writes its
   * summary while the sandbox is taken down (al_run_stop_proxy's SIGTERM
   * then finds it stopping or gone, and reaps it). With a relay, the relay
   * stops first: its calls in flight go through this proxy. */
  if (proxy > 0 && !rp)
    kill(proxy, SIGTERM);
  if (o->timed_out) {
    al_sandbox_report rep;
    al_sandbox_get_report(sb, &rep);
    *o->timed_out = rep.timed_out;
  }
  al_sandbox_destroy(sb);
  al_relay_stop(rp);
  if (rp)
    t_term = al_now_ns();
  al_run_stop_proxy(proxy);
  if (proxy > 0 && getenv("AIRLOCK_DEBUG_TIMING"))
    al_info("timing: supervisor (us since the proxy's fork): SIGTERM %llu, proxy reaped %llu",
            (unsigned long long)((t_term - t_proxy) / 1000),
            (unsigned long long)((al_now_ns() - t_proxy) / 1000));
  if (decisions_fd >= 0)
    close(decisions_fd);
  return r;
}

int al_run_count_decisions(int fd, al_run_decision_counts *out)
{
  memset(out, 0, sizeof *out);
  off_t end = lseek(fd, 0, SEEK_CUR);
  if (end < 0)
    return -1;
  al_autofree char *buf = al_xmalloc((size_t)end + 1);
  ssize_t got = end ? pread(fd, buf, (size_t)end, 0) : 0;
  if (got < 0)
    return -1;
  buf[got] = '\0';
  for (char *line = buf; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    json_t *j = *line ? json_loads(line, 0, NULL) : NULL;
    const char *ev = json_string_value(json_object_get(j, "event"));
    if (ev && !strcmp(ev, "summary")) { /* the proxy's closing line: exact counts */
      out->lines = (size_t)json_integer_value(json_object_get(j, "connections"));
      out->denied = (size_t)json_integer_value(json_object_get(j, "denied"));
      out->failed = (size_t)json_integer_value(json_object_get(j, "failed"));
      json_decref(j);
      return 0;
    }
    if (*line) {
      out->lines++;
      const char *d = json_string_value(json_object_get(j, "decision"));
      if (d && !strcmp(d, "deny")) {
        if (al_proxy_reason_is_failure(json_string_value(json_object_get(j, "reason"))))
          out->failed++;
        else
          out->denied++;
      }
    }
    json_decref(j);
    line = nl ? nl + 1 : NULL;
  }
  return 0;
}
