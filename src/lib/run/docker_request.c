/* The agent container's create request (docker_request.h): the Engine API
 * spec made from al_docker_opts and the policy (hardening, mounts, limits,
 * the shim's command line, the /bin/sh prologue and the secrets for its
 * stdin), and al_docker_run_request, `airlock run --backend docker` after
 * its options. No engine call of its own: docker.c sends what is built. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "render/render.h"
#include "run/docker.h"
#include "run/docker_request.h"
#include "run/run.h"
#include "sandbox/syscalls.h"

#define DOCKER_FILE_MAX (1u << 20) /* one file of al_docker_opts.files, bytes */
/* The shim's deadline, past the agent's limit: if airlock dies, PID 1 of
 * the container exits at it, and the kernel ends every process of the
 * container's PID namespace. */
#define ENGINE_GRACE_S 30

/* The environment given to the agent through its stdin, never in the
 * container's configuration (which the engine keeps on its disk and shows
 * in `docker inspect`): NAME=VALUE lines, then an empty line. NAME is
 * [A-Za-z_][A-Za-z0-9_]*; a value may not hold a newline or NUL. *out
 * gets a new string (the caller wipes and frees it), or NULL when env is
 * empty. */
static int secrets_stdin(char *const *env, char **out, al_error *err)
{
  *out = NULL;
  if (!env || !env[0])
    return 0;
  size_t cap = 1;
  for (char *const *e = env; *e; e++) {
    const char *eq = strchr(*e, '=');
    size_t nl = eq ? (size_t)(eq - *e) : 0;
    bool ok = nl > 0 && !((*e)[0] >= '0' && (*e)[0] <= '9') &&
              strspn(*e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == nl &&
              !strchr(eq + 1, '\n');
    if (!ok)
      return al_make_error(err, EINVAL,
                           "docker backend: environment entry `%.*s`: NAME must be "
                           "[A-Za-z_][A-Za-z0-9_]* and the value one line",
                           (int)(nl && nl < 64 ? nl : 0), *e);
    cap += strlen(*e) + 1;
  }
  char *s = al_xmalloc(cap + 1);
  size_t n = 0;
  for (char *const *e = env; *e; e++) {
    size_t l = strlen(*e);
    memcpy(s + n, *e, l);
    s[n + l] = '\n';
    n += l + 1;
  }
  s[n++] = '\n';
  s[n] = '\0';
  *out = s;
  return 0;
}

/* The `sh -c` prologue in cmd, before the command that follows it:
 * - with secrets: read NAME=VALUE lines from stdin up to an empty line and
 *   export each (secrets_stdin), then point stdin at /dev/null;
 * - files (NAME=CONTENT, may be NULL): write each to /tmp/airlock/NAME
 *   (0444) from AIRLOCK_FILE_<i>_<k> in env (pieces of at most 64 KiB),
 *   then unset those. NAME:
 *   [A-Za-z0-9._-]{1,64}, not a dot name, so it is safe inside the script.
 * Needs /bin/sh in the image. */
static int wrapper(bool secrets, char *const *files, json_t *cmd, json_t *env, al_error *err)
{
  char *script = al_xstrdup(
      secrets ? "while IFS= read -r l && [ -n \"$l\" ]; do export \"$l\"; done; exec </dev/null;"
              : "");
  char *unset = al_xstrdup(":");
  int rc = 0;
  if (files && files[0]) {
    char *s2 = al_strdup_printf("%s set -e; umask 022; mkdir -p /tmp/airlock;", script);
    free(script);
    script = s2;
    free(unset);
    unset = al_xstrdup("unset");
  }
  for (size_t i = 0; files && files[i]; i++) {
    const char *eq = strchr(files[i], '=');
    size_t nl = eq ? (size_t)(eq - files[i]) : 0;
    bool ok = nl > 0 && nl <= 64 &&
              strspn(files[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                               "qrstuvwxyz0123456789._-") >= nl &&
              files[i][0] != '.';
    if (!ok) {
      rc = al_make_error(err, EINVAL,
                         "docker backend: file name `%.*s`: must be 1-64 of [A-Za-z0-9._-], "
                         "not starting with a dot",
                         (int)(nl ? nl : strlen(files[i])), files[i]);
      break;
    }
    size_t clen = strlen(eq + 1);
    if (clen > DOCKER_FILE_MAX) {
      rc = al_make_error(err, E2BIG, "docker backend: file `%.*s`: more than 1 MiB", (int)nl,
                         files[i]);
      break;
    }
    /* One variable holds at most 64 KiB (a single environment string may
     * not pass 128 KiB, execve(2) MAX_ARG_STRLEN): a larger file is split,
     * at UTF-8 character boundaries, and printf(1) writes the pieces in
     * order (its format is reused for each argument). */
    char *line = al_xstrdup(" printf '%s'");
    const char *c = eq + 1;
    size_t left = clen;
    for (size_t k = 0; rc == 0 && (k == 0 || left > 0); k++) {
      size_t take = left > 65536 ? 65536 : left;
      while (take < left && take > 0 && ((unsigned char)c[take] & 0xC0) == 0x80)
        take--;
      if (take == 0 && left > 0) /* no boundary: not UTF-8, refused just below */
        take = left > 65536 ? 65536 : left;
      char *v = al_strdup_printf("AIRLOCK_FILE_%zu_%zu=%.*s", i, k, (int)take, c);
      json_t *js = json_string(v);
      explicit_bzero(v, strlen(v));
      free(v);
      if (!js) {
        rc = al_make_error(err, EINVAL, "docker backend: file `%.*s`: not valid UTF-8", (int)nl,
                           files[i]);
        break;
      }
      json_array_append_new(env, js);
      char *l2 = al_strdup_printf("%s \"$AIRLOCK_FILE_%zu_%zu\"", line, i, k);
      free(line);
      line = l2;
      char *u2 = al_strdup_printf("%s AIRLOCK_FILE_%zu_%zu", unset, i, k);
      free(unset);
      unset = u2;
      c += take;
      left -= take;
    }
    if (rc < 0) {
      free(line);
      break;
    }
    char *s2 = al_strdup_printf("%s%s >/tmp/airlock/%.*s; chmod 0444 /tmp/airlock/%.*s;", script,
                                line, (int)nl, files[i], (int)nl, files[i]);
    free(line);
    free(script);
    script = s2;
  }
  if (rc == 0) {
    char *full = al_strdup_printf("%s %s; exec \"$@\"", script, unset);
    json_array_append_new(cmd, json_string("/bin/sh"));
    json_array_append_new(cmd, json_string("-c"));
    json_t *js = json_string(full);
    if (!js)
      rc = al_make_error(err, EINVAL, "docker backend: a file name is not valid UTF-8");
    else
      json_array_append_new(cmd, js);
    json_array_append_new(cmd, json_string("airlock-wrapper"));
    free(full);
  }
  free(script);
  free(unset);
  return rc;
}

static json_t *hardening(json_t *hc)
{
  json_object_set_new(hc, "ReadonlyRootfs", json_true());
  json_object_set_new(hc, "CapDrop", json_pack("[s]", "ALL"));
  json_object_set_new(hc, "Privileged", json_false());
  json_object_set_new(hc, "IpcMode", json_string("private"));
  json_object_set_new(hc, "Init", json_true());
  /* Docker's default masked paths, plus /proc/kallsyms (probe
   * fs.proc-sensitive): setting the list replaces the engine's. */
  json_object_set_new(hc, "MaskedPaths",
                      json_pack("[s,s,s,s,s,s,s,s,s,s,s,s]", "/proc/asound", "/proc/acpi",
                                "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                                "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                                "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
                                "/proc/kallsyms"));
  return hc;
}

int al_docker_agent_spec(const al_docker_opts *o, const char *rid, const char *shim_path,
                         const char *door_path, al_docker_volumes_fn volumes, void *volumes_ctx,
                         json_t **spec_out, char **stdin_data, al_error *err)
{
  const al_policy *p = o->policy;
  const al_policy_limits *l = &p->process.limits;
  bool net = p->network.present;
  uint64_t tmo = o->timeout_ms ? o->timeout_ms : l->wall_ms;
  /* seconds, counted by the shim from its start */
  char deadline[32];
  unsigned long long lim_s = (tmo + 999) / 1000;
  snprintf(deadline, sizeof deadline, "%llu", lim_s + ENGINE_GRACE_S);
  int rc = -1;
  json_t *hc = NULL, *env = NULL, *cmd = NULL;
  *spec_out = NULL;
  *stdin_data = NULL;
  /* The agent: PID 1 is the shim; NetworkMode none (loopback only, and,
   * with a network section, the proxy's listener on 127.0.0.1:3128). */
  char *profile = NULL;
  if (al_seccomp_profile_json(&profile, err) < 0)
    goto out;
  char *seccomp = al_strdup_printf("seccomp=%s", profile);
  free(profile);
  hc = o->control_unhardened ? json_object() : hardening(json_object());
  json_object_set_new(hc, "NetworkMode", json_string("none"));
  json_object_set_new(hc, "Init", json_false()); /* the shim is PID 1 */
  json_t *binds = json_array();
  json_array_append_new(binds, json_sprintf("%s:" SHIM_TARGET ":ro", shim_path));
  if (net)
    json_array_append_new(binds, json_sprintf("%s:" DOOR_TARGET ":ro", door_path));
  json_object_set_new(hc, "Binds", binds);
  if (!o->control_unhardened)
    json_object_set_new(hc, "SecurityOpt", json_pack("[s,s]", "no-new-privileges:true", seccomp));
  free(seccomp);
  /* What the agent prints may hold its tokens: no log driver, so nothing of
   * it is written to the engine's disk; we read it through attach. */
  json_object_set_new(hc, "LogConfig", json_pack("{s:s,s:{}}", "Type", "none", "Config"));
  char *tmp_o = al_strdup_printf("size=%llu,mode=1777,exec,nosuid,nodev",
                                 (unsigned long long)p->filesystem.tmp_size);
  char *ws_o = al_strdup_printf("size=%llu,mode=0700,uid=%u,gid=%u,exec,nosuid,nodev",
                                (unsigned long long)p->filesystem.workspace_size, p->process.user,
                                p->process.user);
  json_t *tmpfs = json_pack("{s:s,s:s}", "/tmp", tmp_o, "/workspace", ws_o);
  free(tmp_o);
  free(ws_o);
  /* An empty read-only tmpfs replaces the engine's sysfs at /sys (the
   * native sandbox has no /sys; probe fs.mountinfo). */
  if (!o->control_unhardened)
    json_object_set_new(tmpfs, "/sys", json_string("ro,size=4k,mode=0555,nosuid,nodev,noexec"));
  const char *image = o->agent_image
                          ? o->agent_image
                          : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE);
  /* A VOLUME of the image would give the agent an anonymous volume on the
   * host's disk, outside the policy's sizes and kept after a crash: an
   * empty read-only tmpfs takes each one's place. */
  if (volumes(volumes_ctx, image, tmpfs, err) < 0) {
    json_decref(tmpfs);
    goto out;
  }
  json_object_set_new(hc, "Tmpfs", tmpfs);
  json_object_set_new(hc, "Memory", json_integer((json_int_t)l->memory));
  json_object_set_new(hc, "MemorySwap", json_integer((json_int_t)l->memory));
  json_object_set_new(hc, "PidsLimit", json_integer(l->pids));
  if (l->cpu_milli)
    json_object_set_new(hc, "NanoCpus", json_integer((json_int_t)l->cpu_milli * 1000000));
  json_object_set_new(hc, "Ulimits",
                      json_pack("[{s:s,s:I,s:I},{s:s,s:i,s:i}]", "Name", "nofile", "Soft",
                                (json_int_t)l->nofile, "Hard", (json_int_t)l->nofile, "Name",
                                "core", "Soft", 0, "Hard", 0));
  env = json_array();
  if (net) {
    static const char *const pv[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(pv); i++)
      json_array_append_new(env, json_sprintf("%s=http://127.0.0.1:%d", pv[i], AL_PROXY_PORT));
    json_array_append_new(env, json_string("NO_PROXY="));
    json_array_append_new(env, json_string("no_proxy="));
  }
  /* o->env (tokens) goes through stdin, never into the configuration */
  if (secrets_stdin(o->env, stdin_data, err) < 0)
    goto out;
  /* PID 1: the shim (hand-off, deadline, orphans), then the prologue, then
   * the command */
  cmd = json_pack("[s]", SHIM_TARGET);
  if (net) {
    json_array_append_new(cmd, json_string("--socket"));
    json_array_append_new(cmd, json_string(DOOR_TARGET));
    json_array_append_new(cmd, json_string("--listen"));
    json_array_append_new(cmd, json_sprintf("%d", AL_PROXY_PORT));
  }
  json_array_append_new(cmd, json_string("--deadline"));
  json_array_append_new(cmd, json_string(deadline));
  json_array_append_new(cmd, json_string("--"));
  size_t n_pre = json_array_size(cmd);
  if (*stdin_data || (o->files && o->files[0])) {
    if (wrapper(*stdin_data != NULL, o->files, cmd, env, err) < 0)
      goto out;
  }
  for (char *const *a = o->argv; *a; a++) {
    json_t *js = json_string(*a);
    if (!js) {
      al_error_set(err, EINVAL,
                   "argument %d of the command (0 is the program) is not valid UTF-8 (the Engine "
                   "API takes JSON)",
                   (int)(a - o->argv));
      goto out;
    }
    json_array_append_new(cmd, js);
  }
  if (json_array_size(cmd) == n_pre) {
    al_error_set(err, EINVAL, "docker backend: no command to run");
    goto out;
  }
  char user[32];
  snprintf(user, sizeof user, "%u:%u", o->control_unhardened ? 0 : p->process.user,
           o->control_unhardened ? 0 : p->process.user);
  /* Our command is the Entrypoint, and there is no Cmd: the image's own
   * ENTRYPOINT (which would run before the prologue and could read the
   * secrets on stdin) and CMD never run. */
  *spec_out = json_pack("{s:s,s:o,s:n,s:o,s:s,s:s,s:o,s:{s:s},s:b,s:b,s:b,s:b,s:b}", "Image", image,
                        "Entrypoint", cmd, "Cmd", "Env", env, "User", user, "WorkingDir",
                        "/workspace", "HostConfig", hc, "Labels", "airlock.run", rid,
                        "AttachStdout", 1, "AttachStderr", 1, "AttachStdin", *stdin_data != NULL,
                        "OpenStdin", *stdin_data != NULL, "StdinOnce", *stdin_data != NULL);
  cmd = env = hc = NULL; /* the spec holds them */
  rc = 0;
out:
  json_decref(cmd);
  json_decref(env);
  json_decref(hc);
  return rc;
}

int al_docker_run_request(const struct al_run_request *rq, struct al_run_result *res, al_error *err)
{
  memset(res, 0, sizeof *res);
  res->status = 2;
  al_policy *policy = NULL;
  if (al_policy_load_or_default(rq->policy_path, &policy, err) < 0)
    return -1;
  int log_fd = -1;
  if (rq->log_path) {
    log_fd = open(rq->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log_fd < 0) {
      int e = errno;
      al_policy_free(policy);
      return al_make_error(err, e, "--log %s", rq->log_path);
    }
  }
  al_docker_opts o = {.policy = policy,
                      .argv = rq->argv,
                      .env = rq->env,
                      .timeout_ms = rq->timeout_ms,
                      .proxy_image = rq->proxy_image,
                      .agent_image = rq->agent_image,
                      .egress_internal = rq->egress_internal,
                      .egress_network = rq->network,
                      .run_id = rq->run_id,
                      .decisions_fd = log_fd >= 0 ? log_fd : 2};
  int dfd = -1;
  if (log_fd < 0 && policy->network.present &&
      (dfd = al_run_decisions_memfd("airlock-decisions")) >= 0)
    o.decisions_fd = dfd;
  res->status = 125;
  int r = al_docker_run(&o, &res->status, err);
  al_run_request_count(dfd, -1, res);
  if (dfd >= 0)
    close(dfd);
  if (log_fd >= 0)
    close(log_fd);
  al_policy_free(policy);
  return r;
}
