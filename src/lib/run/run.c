#include "run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"

static pid_t start_proxy(const al_policy *policy, const char *run_id, int listen_fd, int audit_fd,
                         al_error *err)
{
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return al_make_error(err, errno, "fork the egress proxy");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NAME, "airlock-proxy");
    int keep[] = {listen_fd, audit_fd};
    al_close_fds_from(3, keep, audit_fd > 2 ? 2 : 1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    al_proxy_listener l = {.fd = listen_fd, .run_id = run_id, .policy = policy};
    al_proxy_config cfg = {.listeners = &l, .n_listeners = 1, .audit_fd = audit_fd};
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
    if (al_proxy_serve(&cfg, &e) < 0) {
      al_error_log("egress proxy: %s", e.msg);
      _exit(1);
    }
    _exit(0);
  }
  return pid;
}

static void stop_proxy(pid_t pid)
{
  if (pid <= 0)
    return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 200; i++) {
    int ws;
    pid_t r = waitpid(pid, &ws, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR))
      return;
    usleep(5000);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
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
  size_t nextra = 0;
  for (char *const *e = o->env; e && *e; e++)
    nextra++;
  al_autofree char **env = al_xcalloc(nextra + 8, sizeof(char *));
  size_t n = 0;
  static const char *const proxy_env[] = {"HTTP_PROXY=http://127.0.0.1:3128",
                                          "HTTPS_PROXY=http://127.0.0.1:3128",
                                          "http_proxy=http://127.0.0.1:3128",
                                          "https_proxy=http://127.0.0.1:3128",
                                          "NO_PROXY=", "no_proxy="};
  if (net)
    for (size_t i = 0; i < AL_ARRAY_SIZE(proxy_env); i++)
      env[n++] = (char *)proxy_env[i];
  for (size_t i = 0; i < nextra; i++)
    env[n++] = o->env[i];
  env[n] = NULL;

  int audit_fd = -1;
  if (net) {
    if (o->log_path) {
      audit_fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (audit_fd < 0)
        return al_make_error(err, errno, "--log `%s`", o->log_path);
    } else {
      audit_fd = o->audit_fd > 0 ? dup(o->audit_fd) : dup(2);
    }
  }

  if (al_sandbox_block_signals(err) < 0) {
    if (audit_fd >= 0)
      close(audit_fd);
    return -1;
  }
  uint16_t port = AL_PROXY_PORT;
  al_sandbox_opts so = {
      .policy = o->policy,
      .argv = o->argv,
      .env = env,
      .listen_ports = net ? &port : NULL,
      .n_listen = net ? 1 : 0,
      .timeout_ms = o->timeout_ms,
      .run_id = rid,
      .quiet = o->quiet,
      .extra_ro_paths = o->extra_ro_paths,
      .stdout_fd = o->stdout_fd,
  };
  al_sandbox *sb = NULL;
  int setup_status = AL_EXIT_SETUP;
  if (al_sandbox_start(&so, &sb, &setup_status, err) < 0) {
    *status = setup_status;
    if (o->after_start)
      o->after_start(o->after_start_ctx);
    if (audit_fd >= 0)
      close(audit_fd);
    return -1;
  }
  if (o->after_start)
    o->after_start(o->after_start_ctx);

  pid_t proxy = -1;
  if (net) {
    int lfd = al_sandbox_take_listener(sb, 0);
    proxy = start_proxy(o->policy, rid, lfd, audit_fd, err);
    close(lfd);
    if (proxy < 0) {
      al_sandbox_destroy(sb);
      close(audit_fd);
      return -1;
    }
  }
  if (getenv("AIRLOCK_DEBUG_TIMING")) {
    al_sandbox_report rep;
    al_sandbox_get_report(sb, &rep);
    al_info("timing: clone->hello %lluus, maps+cgroup %lluus, setup->exec %lluus",
            (unsigned long long)rep.clone_to_hello_us, (unsigned long long)rep.hello_to_go_us,
            (unsigned long long)rep.go_to_exec_us);
  }
  int r = al_sandbox_wait(sb, status, err);
  al_sandbox_destroy(sb);
  stop_proxy(proxy);
  if (audit_fd >= 0)
    close(audit_fd);
  return r;
}
