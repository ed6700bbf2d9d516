/* `airlock probe --backend docker` (probe/docker.h): the host side is the
 * native one (outer.c: canaries, judge); only the sandbox differs. The
 * inner side runs in the agent container of the docker backend
 * (run/docker.h); its context travels in an environment variable (the
 * container's stdin is only for the run's secrets), and its results come
 * back through the attach stream into a memfd. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "probe/docker.h"
#include "probe/internal.h"
#include "run/docker.h"
#include "sandbox/sandbox.h"

/* The agent image's airlock binary (scripts/docker-images.sh). */
#define AGENT_AIRLOCK "/usr/bin/airlock"

/* Fit the context the host side built to the container: the proxy is at
 * the agent's HTTPS_PROXY (127.0.0.1:3128, the listener handed over),
 * and Docker itself sets HOSTNAME (the container's name for itself,
 * "sandbox": not a host value). Everything else stays the host's view on
 * purpose: the canary ports on the host's loopback, the host's home, the
 * canary directory, the supervisor's pid are what the probes must not
 * reach from inside. */
static void fit_ctx(const al_probe_docker_opts *o, pr_ctx *ctx)
{
  ctx->docker = true;
  ctx->proxy[0] = '\0';
  ctx->proxy_from_env = o->probe.policy->network.present;
  snprintf(ctx->ws_path, sizeof ctx->ws_path, "/workspace");
  snprintf(ctx->tmp_path, sizeof ctx->tmp_path, "/tmp");
  if (ctx->n_env_allowed < PR_MAX_ENV)
    ctx->env_allowed[ctx->n_env_allowed++] = (char *)"HOSTNAME";
}

/* Read a memfd written by al_docker_run from the start. */
static char *read_memfd(int fd)
{
  if (lseek(fd, 0, SEEK_SET) < 0)
    return al_xstrdup("");
  return pr_read_all_fd(fd);
}

int al_probe_run_docker(const al_probe_docker_opts *o, al_probe_report *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  al_probe_opts po = o->probe;
  po.unconfined = false;
  pr_host h;
  pr_ctx ctx;
  if (pr_host_setup(&po, &h, &ctx, err) < 0)
    return -1;
  fit_ctx(o, &ctx);

  int rc = -1;
  char *json = pr_ctx_to_json(&ctx);
  char *ctx_env = al_strdup_printf("%s=%s", PR_CONTEXT_ENV, json);
  al_autoclose int out_fd = memfd_create("airlock-probe-stdout", MFD_CLOEXEC);
  al_autoclose int err_fd = memfd_create("airlock-probe-stderr", MFD_CLOEXEC);
  if (out_fd < 0 || err_fd < 0) {
    al_make_error(err, errno, "memfd_create");
    goto out;
  }
  char *argv[] = {(char *)AGENT_AIRLOCK, (char *)"probe", (char *)"--inside", NULL};
  char *env[] = {ctx_env, NULL};
  al_docker_opts d = {
      .policy = po.policy,
      .argv = argv,
      .env = env,
      .timeout_ms = po.timeout_ms ? po.timeout_ms : (po.preflight ? 60000 : 180000),
      .socket_path = o->socket_path,
      .proxy_image = o->proxy_image,
      .agent_image = o->agent_image,
      .egress_internal = o->egress_internal,
      .egress_network = o->egress_network,
      .run_id = o->run_id ? o->run_id : ctx.nonce,
      .stdout_fd = out_fd,
      .stderr_fd = err_fd,
      .decisions_fd = -1,
      .control_unhardened = o->control_unhardened,
  };
  int status = AL_EXIT_SETUP;
  /* the leaked fd stays open while the containers run: it must not show
   * up inside (it cannot: the engine starts the container, not us) */
  int drc = al_docker_run(&d, &status, err);
  pr_host_close_leaked(&h);
  if (drc < 0) {
    al_error_wrap(err, "docker backend");
    goto out;
  }
  if (status == 128 + SIGINT || status == 128 + SIGTERM || status == 128 + SIGHUP ||
      status == 128 + SIGQUIT) {
    /* everything of the run is removed; a half-run catalogue proves nothing */
    al_error_set(err, EINTR, "interrupted by signal %d", status - 128);
    goto out;
  }
  char *lines = read_memfd(out_fd);
  if (!strstr(lines, "{\"id\":\"")) {
    char *e = read_memfd(err_fd);
    e[strcspn(e, "\n")] = '\0';
    al_make_error(err, EIO, "no probe result from the agent container (exit status %d)%s%s", status,
                  *e ? ": " : "", e);
    free(e);
    free(lines);
    goto out;
  }
  pr_host_judge(&po, &h, &ctx, lines, false, status, out);
  free(lines);
  rc = 0;
out:
  free(ctx_env);
  free(json);
  pr_host_finish(&h);
  return rc;
}
