/* The docker backend (docker.h): Engine API v1.41 over /var/run/docker.sock
 * with libcurl (CURLOPT_UNIX_SOCKET_PATH). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "render/render.h"
#include "run/docker.h"
#include "run/docker_request.h"
#include "run/dockerdoor.h"
#include "run/dockerwire.h"
#include "run/run.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscalls.h"

#define API "http://localhost/v1.41"

/* The proxy's decisions, when the caller sets no cap of its own: the
 * first ~8 MiB of a flood (the run record's own cap) */
#define DECISIONS_CAP (8u << 20)
/* How long the shim may take to hand the listener over after the start. */
#define DOOR_TIMEOUT_MS 60000

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
  stop_signal = sig;
}

/* SIGINT or SIGTERM: caught by our handler, or pending while the caller
 * blocks them (airlock ticket does, and sees them itself afterwards). */
static int stopped(void)
{
  if (stop_signal)
    return stop_signal;
  sigset_t p;
  if (sigpending(&p) == 0) {
    if (sigismember(&p, SIGINT))
      return SIGINT;
    if (sigismember(&p, SIGTERM))
      return SIGTERM;
    if (sigismember(&p, SIGHUP))
      return SIGHUP;
    if (sigismember(&p, SIGQUIT))
      return SIGQUIT;
  }
  return 0;
}

struct dk {
  CURL *curl;
  const char *sock;
  char *names[1]; /* the container created (its id, or its name until the id is known) */
  size_t n_ctr;
  bool timing; /* AIRLOCK_DEBUG_TIMING is set: log each call's time */
};

struct buf {
  char *p;
  size_t n;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *ud)
{
  struct buf *b = ud;
  size_t n = sz * nm;
  if (b->n + n > (64u << 20))
    return 0;
  b->p = al_xrealloc(b->p, b->n + n + 1);
  memcpy(b->p + b->n, d, n);
  b->n += n;
  b->p[b->n] = '\0';
  return n;
}

/* One request. body: JSON text or NULL. *resp gets the body (caller frees).
 * Returns the HTTP status, or -1 with err. */
static long req(struct dk *d, const char *method, const char *path, const char *body,
                long timeout_ms, struct buf *resp, al_error *err)
{
  char url[1024];
  snprintf(url, sizeof url, API "%s", path);
  memset(resp, 0, sizeof *resp);
  curl_easy_reset(d->curl);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(d->curl, CURLOPT_UNIX_SOCKET_PATH, d->sock);
  curl_easy_setopt(d->curl, CURLOPT_URL, url);
  curl_easy_setopt(d->curl, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(d->curl, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, resp);
  curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(d->curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(d->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  if (body) {
    curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(d->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  } else if (strcmp(method, "POST") == 0) {
    curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, "");
  }
  uint64_t t0 = d->timing ? al_now_ns() : 0;
  CURLcode rc = curl_easy_perform(d->curl);
  curl_slist_free_all(h);
  if (d->timing) /* AIRLOCK_DEBUG_TIMING: where a run's time goes (bench/) */
    al_info("timing: docker %s %.60s %.1f ms", method, path, (double)(al_now_ns() - t0) / 1e6);
  if (rc != CURLE_OK) {
    free(resp->p);
    resp->p = NULL;
    if (rc == CURLE_OPERATION_TIMEDOUT)
      return al_make_error(err, ETIMEDOUT, "docker %s %s: timed out", method, path);
    if (rc == CURLE_COULDNT_CONNECT)
      return al_error_set(err, ECONNREFUSED,
                          "cannot reach the Docker engine at %s: is dockerd running, and may "
                          "this user use its socket?",
                          d->sock);
    return al_make_error(err, EIO, "docker %s %s (%s): %s", method, path, d->sock,
                         curl_easy_strerror(rc));
  }
  long code = 0;
  curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

/* A request whose JSON answer we want; fails on HTTP >= 300 with the
 * engine's message. body is consumed (freed, wiped). */
static int call(struct dk *d, const char *method, const char *path, char *body, long timeout_ms,
                json_t **out, al_error *err)
{
  struct buf r;
  long code = req(d, method, path, body, timeout_ms, &r, err);
  if (body) {
    explicit_bzero(body, strlen(body)); /* may hold tokens */
    free(body);
  }
  if (code < 0)
    return -1;
  json_t *j = r.p ? json_loads(r.p, JSON_DECODE_ANY, NULL) : NULL;
  if (code >= 300) {
    const char *m = json_string_value(json_object_get(j, "message"));
    int e = code == 404 ? ENOENT : code == 409 ? EBUSY : EIO;
    /* the engine's words, printable and short (they may echo our input) */
    char msg[300];
    const char *src = m ? m : (r.p ? r.p : "");
    size_t k = 0;
    for (; src[k] && k + 1 < sizeof msg; k++) {
      char ch = src[k];
      if (ch < 0x20 || ch >= 0x7f)
        ch = '?';
      msg[k] = ch;
    }
    msg[k] = '\0';
    al_error_set(err, e, "docker %s %s: HTTP %ld: %s%s", method, path, code, msg,
                 strstr(msg, "No such image")
                     ? " (build it with scripts/docker-images.sh, or pass --proxy-image / "
                       "--agent-image)"
                     : "");
    json_decref(j);
    free(r.p);
    return -1;
  }
  free(r.p);
  if (out)
    *out = j;
  else
    json_decref(j);
  return 0;
}

static char *dumps(json_t *j)
{
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

/* The "Id" of a create answer: 64 lowercase hex digits (it goes into
 * request paths). Consumes out. */
static int engine_id(json_t *out, char **id, al_error *err)
{
  const char *v = json_string_value(json_object_get(out, "Id"));
  bool ok = v && strlen(v) == 64 && strspn(v, "0123456789abcdef") == 64;
  *id = ok ? al_xstrdup(v) : NULL;
  json_decref(out);
  return ok ? 0 : al_make_error(err, EPROTO, "the engine's answer has no valid \"Id\"");
}

static int create_container(struct dk *d, const char *name, json_t *spec, char **id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/create?name=%s", name);
  json_t *out = NULL;
  char **slot = &d->names[d->n_ctr++]; /* by name until the id is known */
  *slot = al_xstrdup(name);
  char *body = dumps(spec);
  if (!body) {
    *id = NULL;
    return al_make_error(err, EINVAL,
                         "create container %s: an argument or variable is not valid UTF-8 (the "
                         "Engine API takes JSON)",
                         name);
  }
  if (call(d, "POST", path, body, 60000, &out, err) < 0 || engine_id(out, id, err) < 0)
    return al_error_wrap(err, "create container %s", name);
  free(*slot);
  *slot = al_xstrdup(*id);
  return 0;
}

/* POST /containers/{id}/kill with SIGNAL (a name); errors are ignored (the
 * container may have stopped already). Returns 0 when the engine took it. */
static int kill_container(struct dk *d, const char *id, const char *signal)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/kill?signal=%s", id, signal);
  al_error e = {0};
  return call(d, "POST", path, NULL, 30000, NULL, &e);
}

static int start(struct dk *d, const char *id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/start", id);
  return call(d, "POST", path, NULL, 60000, NULL, err);
}
/* Remove the run's container (force, with its anonymous volumes: v=1).
 * Errors are warnings. */
static void cleanup(struct dk *d)
{
  for (size_t i = 0; i < d->n_ctr; i++) {
    al_error e = {0};
    char path[300];
    snprintf(path, sizeof path, "/containers/%s?force=1&v=1", d->names[i]);
    if (call(d, "DELETE", path, NULL, 60000, NULL, &e) < 0 && e.code != ENOENT)
      al_warn("docker cleanup: %s", e.msg);
    free(d->names[i]);
  }
  d->n_ctr = 0;
}

/* The container's main process on the host (State.Pid), or -1 with err. */
static int container_pid(struct dk *d, const char *id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/json", id);
  json_t *info = NULL;
  if (call(d, "GET", path, NULL, 30000, &info, err) < 0)
    return -1;
  json_int_t pid = json_integer_value(json_object_get(json_object_get(info, "State"), "Pid"));
  json_decref(info);
  if (pid <= 0 || pid > INT32_MAX)
    return al_error_set(err, EPROTO, "container %.12s: no process id in its state", id);
  return (int)pid;
}

/* Attach to the agent container before it starts, over a raw connection
 * to the engine's socket (the attach endpoint hijacks it: Engine API
 * "Attach to a container", Upgrade: tcp), start the container, write
 * stdin_data (the secrets, read by the wrapper; see docker_request.c) and
 * close our write side, then stream stdout and stderr until the container
 * stops or the deadline passes. What the agent prints is never written to
 * the engine's disk: it runs with the `none` log driver. The engine's
 * answer is checked (101 or 200 within 16 KiB and 30 s); everything after
 * it is the container's hostile byte stream, only demultiplexed. The
 * secrets in stdin_data are wiped once written, and after_start (may be
 * NULL) is called then. Returns 0 when the stream ended, 1 when the
 * deadline passed first (the agent is still running), -1 with err (EINTR
 * on a signal, or the engine's error). */
/* The listener hand-off while the agent container starts (dockerdoor.h;
 * src/shim/shim.c draws both sides). */
struct door_run {
  al_docker_door door;
  struct dk *d;
  const char *id; /* the agent container */
  const al_docker_opts *o;
  const char *rid;
  uint64_t decisions_cap;
  pid_t proxy; /* the egress proxy, forked once the listener came; -1 before */
  bool done;
};

/* The shim has connected: its SO_PEERCRED pid must be the container's PID 1
 * (State.Pid, our PID namespace), what it sends the listener it made; then
 * the egress proxy is forked on it here on the host, confined as for the
 * native sandbox (al_run_start_proxy_capped), and the shim gets its ack.
 * Returns 0 (done, or nobody there after all) or -1 with err. */
static int door_take(struct door_run *r, al_error *err)
{
  int conn = -1, lfd = -1;
  pid_t peer = -1;
  if (al_docker_door_accept(&r->door, &conn, &peer, err) < 0) {
    if (err->code != EAGAIN)
      return -1;
    al_error_clear(err);
    return 0;
  }
  int cpid = container_pid(r->d, r->id, err);
  if (cpid < 0)
    goto fail;
  if (peer != cpid) {
    al_error_set(err, EPERM,
                 "docker hand-off: the connection came from pid %d, not the agent container's "
                 "PID 1 (%d): refused",
                 (int)peer, cpid);
    goto fail;
  }
  if (al_docker_door_recv_listener(conn, AL_PROXY_PORT, 5000, &lfd, err) < 0)
    goto fail;
  al_proxy_listener l = {
      .fd = lfd, .run_id = r->rid, .policy = r->o->policy, .handoff = r->o->handoff};
  r->proxy = al_run_start_proxy_capped(&l, 1, r->o->decisions_fd > 0 ? r->o->decisions_fd : -1,
                                       r->decisions_cap, err);
  close(lfd); /* the proxy holds it now */
  if (r->proxy < 0 || al_docker_door_ack(conn, err) < 0)
    goto fail;
  close(conn);
  r->done = true;
  if (r->d->timing)
    al_info("timing: docker listener handed over, proxy pid %d", (int)r->proxy);
  return 0;
fail:
  if (conn >= 0)
    close(conn);
  return -1;
}

static int attach_start_stream(struct dk *d, const char *id, char *stdin_data, int fd_out,
                               int fd_err, uint64_t timeout_ms, void (*after_start)(void *),
                               void *after_start_ctx, struct door_run *door, al_docker_stage *stage,
                               al_error *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(d->sock) >= sizeof sa.sun_path)
    return al_make_error(err, ENAMETOOLONG, "docker socket path too long: %s", d->sock);
  memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
  al_autoclose int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
    return al_make_error(err, errno, "docker attach: connect %s", d->sock);
  char head[16384];
  int hl = snprintf(head, sizeof head,
                    "POST /v1.41/containers/%s/attach?stream=1&stdout=1&stderr=1%s HTTP/1.1\r\n"
                    "Host: localhost\r\nContent-Length: 0\r\nConnection: Upgrade\r\n"
                    "Upgrade: tcp\r\n\r\n",
                    id, stdin_data ? "&stdin=1" : "");
  if (al_write_all(fd, head, (size_t)hl) < 0)
    return al_make_error(err, errno, "docker attach: write");
  /* the engine's response head */
  size_t n = 0, body = 0;
  int hr = 1;
  uint64_t deadline = al_now_ms() + 30000;
  while (hr == 1) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int left = (int)(deadline > al_now_ms() ? deadline - al_now_ms() : 0);
    if (n == sizeof head - 1 || poll(&pf, 1, left) <= 0)
      return al_make_error(err, EPROTO, "docker attach %.12s: no valid answer from the engine", id);
    ssize_t k = read(fd, head + n, sizeof head - 1 - n);
    if (k <= 0)
      return al_make_error(err, EPROTO, "docker attach %.12s: the engine closed the connection",
                           id);
    n += (size_t)k;
    hr = al_docker_attach_head(head, n, &body);
  }
  if (hr < 0) {
    for (size_t i = 0; i < body && i < 120; i++)
      if (head[i] < 0x20 || head[i] >= 0x7f)
        head[i] = '?';
    return al_make_error(err, EIO, "docker attach %.12s: %.*s", id, (int)(body < 120 ? body : 120),
                         head);
  }
  al_docker_demux m = {.fd_out = fd_out, .fd_err = fd_err};
  al_docker_demux_feed(&m, head + body, n - body);
  if (start(d, id, err) < 0)
    return al_error_wrap(err, "agent container");
  /* the container's bind mounts are made: the socket's name can go (the
   * listener keeps working through the mount), so nothing of it stays on
   * the host's disk even if we are killed */
  uint64_t door_deadline = al_now_ms() + DOOR_TIMEOUT_MS;
  if (door)
    al_docker_door_unlink(&door->door);
  al_docker_stage_close(stage); /* the shim's copy: bound, so it can go too */
  if (stdin_data) {
    /* small (a few KiB): the socket buffer takes it at once */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int werr = 0;
    for (size_t off = 0, len = strlen(stdin_data); off < len && !werr;) {
      ssize_t k = send(fd, stdin_data + off, len - off, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR && !stopped())
        continue;
      if (k <= 0)
        werr = errno ? errno : EIO;
      else
        off += (size_t)k;
    }
    /* our copy of the secrets is not needed any more */
    explicit_bzero(stdin_data, strlen(stdin_data));
    if (werr)
      return al_make_error(err, werr, "docker attach: write the agent's stdin");
    shutdown(fd, SHUT_WR);
  }
  if (after_start)
    after_start(after_start_ctx);
  deadline = al_now_ms() + timeout_ms;
  char buf[65536];
  for (;;) {
    if (stopped())
      return al_make_error(err, EINTR, "interrupted by signal %d", stopped());
    uint64_t now = al_now_ms();
    if (now >= deadline)
      return 1; /* the agent's limit, not an engine error */
    bool waiting = door && !door->done;
    if (waiting && now >= door_deadline)
      return al_make_error(err, ETIMEDOUT,
                           "docker hand-off: no listener from the container in %d s",
                           DOOR_TIMEOUT_MS / 1000);
    struct pollfd pf[2] = {{.fd = fd, .events = POLLIN},
                           {.fd = waiting ? door->door.fd : -1, .events = POLLIN}};
    uint64_t w = deadline - now < 100 ? deadline - now : 100;
    int pr = poll(pf, 2, (int)w);
    if (pr < 0 && errno != EINTR)
      return al_make_error(err, errno, "docker attach: poll");
    if (pr > 0 && (pf[1].revents & POLLIN) && door_take(door, err) < 0)
      return -1;
    if (pr <= 0 || !(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    ssize_t k = read(fd, buf, sizeof buf);
    if (k == 0)
      return 0; /* the container's streams are closed: it has stopped */
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return errno == ECONNRESET ? 0 : al_make_error(err, errno, "docker attach: read");
    }
    al_docker_demux_feed(&m, buf, (size_t)k);
  }
}

/* The image's Config.Volumes (GET /images/{name}/json): each path gets
 * "ro,size=4k" in tmpfs (a map of path -> options), unless the run already
 * mounts something there. A missing image is left to the create request,
 * which says so. */
static int image_volumes(void *ctx, const char *image, json_t *tmpfs, al_error *err)
{
  struct dk *d = ctx;
  char *esc = curl_easy_escape(d->curl, image, 0);
  if (!esc)
    return al_make_error(err, ENOMEM, "curl_easy_escape");
  char path[600];
  snprintf(path, sizeof path, "/images/%s/json", esc);
  curl_free(esc);
  json_t *info = NULL;
  al_error e = {0};
  if (call(d, "GET", path, NULL, 30000, &info, &e) < 0)
    return e.code == ENOENT ? 0 : al_make_error(err, e.code, "%s", e.msg);
  json_t *vols = json_object_get(json_object_get(info, "Config"), "Volumes");
  const char *k;
  json_t *v;
  int rc = 0;
  json_object_foreach(vols, k, v)
  {
    (void)v;
    if (k[0] != '/' || strlen(k) > 512 || strstr(k, "..")) {
      rc = al_error_set(err, EINVAL, "image %s: VOLUME `%.80s` is not a plain absolute path", image,
                        k);
      break;
    }
    if (!json_object_get(tmpfs, k))
      json_object_set_new(tmpfs, k, json_string("ro,size=4k,mode=0555,nosuid,nodev,noexec"));
  }
  json_decref(info);
  return rc;
}

/* The shim on the host, bound into the container: o->shim_path, else
 * airlock-shim in $AIRLOCK_LIBEXEC_DIR, beside our own binary, or in
 * ../libexec/airlock from it (an installed tree). A regular file. */
static int find_shim(const al_docker_opts *o, char *out, size_t outlen, al_error *err)
{
  char cand[3][PATH_MAX];
  size_t n = 0;
  if (o->shim_path) {
    snprintf(cand[n++], PATH_MAX, "%s", o->shim_path);
  } else {
    const char *env = getenv("AIRLOCK_LIBEXEC_DIR");
    if (env && env[0] == '/')
      snprintf(cand[n++], PATH_MAX, "%.4000s/airlock-shim", env);
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
      self[k] = '\0';
      char *slash = strrchr(self, '/');
      if (slash) {
        *slash = '\0';
        snprintf(cand[n++], PATH_MAX, "%.4000s/airlock-shim", self);
        snprintf(cand[n++], PATH_MAX, "%.4000s/../libexec/airlock/airlock-shim", self);
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (realpath(cand[i], out) && strlen(out) < outlen && stat(out, &st) == 0 &&
        S_ISREG(st.st_mode))
      return 0;
  }
  return al_error_set(err, ENOENT,
                      "docker backend: airlock-shim (the agent container's PID 1) not found%s%s; "
                      "build it (ninja) or set AIRLOCK_LIBEXEC_DIR",
                      n ? " at " : "", n ? cand[0] : "");
}

static int run_containers(struct dk *d, const al_docker_opts *o, const char *rid, int *status,
                          al_error *err)
{
  const al_policy *p = o->policy;
  const al_policy_limits *l = &p->process.limits;
  bool net = p->network.present;
  char name[128], *agent_id = NULL;
  char *stdin_data = NULL; /* the secrets, for the wrapper (secrets_stdin) */
  uint64_t tmo = o->timeout_ms ? o->timeout_ms : l->wall_ms;
  int rc = -1;
  struct door_run door = {
      .door = {.fd = -1},
      .d = d,
      .o = o,
      .rid = rid,
      .decisions_cap = o->decisions_cap ? o->decisions_cap : DECISIONS_CAP,
      .proxy = -1,
  };
  char shim[PATH_MAX];
  al_docker_stage stage = {0};
  if (find_shim(o, shim, sizeof shim, err) < 0 || al_docker_stage_open(&stage, shim, err) < 0)
    goto out;
  /* With a network section: the socket the shim hands the listener over
   * on, bound into this one container; the egress proxy runs here on the
   * host, forked and confined exactly as for the native sandbox. */
  if (net && al_docker_door_open(&door.door, err) < 0)
    goto out;

  /* The agent: PID 1 is the shim; NetworkMode none (loopback only, and,
   * with a network section, the proxy's listener on 127.0.0.1:3128). */
  json_t *spec = NULL;
  if (al_docker_agent_spec(o, rid, stage.path, net ? door.door.path : NULL, image_volumes, d, &spec,
                           &stdin_data, err) < 0)
    goto out;
  snprintf(name, sizeof name, "airlock-%s-agent", rid);
  if (create_container(d, name, spec, &agent_id, err) < 0)
    goto out;
  if (stopped()) {
    al_make_error(err, EINTR, "interrupted by signal %d", stopped());
    *status = 128 + stopped();
    goto out;
  }
  door.id = agent_id;
  uint64_t t_start = al_now_ms();
  int sr = attach_start_stream(d, agent_id, stdin_data, o->stdout_fd > 0 ? o->stdout_fd : 1,
                               o->stderr_fd > 0 ? o->stderr_fd : 2, tmo, o->after_start,
                               o->after_start_ctx, net ? &door : NULL, &stage, err);
  if (sr == 1) {
    *status = AL_EXIT_TIMEOUT;
    if (o->timed_out)
      *o->timed_out = true;
    rc = 0;
    goto out;
  }
  if (sr < 0) {
    if (err->code == EINTR)
      *status = 128 + stopped();
    goto out;
  }
  /* The streams have ended: normally the container has stopped; an agent
   * that closed them and runs on is still held to its limit. */
  {
    char path[300];
    snprintf(path, sizeof path, "/containers/%s/wait?condition=not-running", agent_id);
    uint64_t used = al_now_ms() - t_start;
    long left = (long)(used < tmo ? tmo - used : 0) + 5000;
    json_t *w = NULL;
    if (call(d, "POST", path, NULL, left, &w, err) < 0) {
      if (err->code == ETIMEDOUT) {
        al_error_clear(err);
        *status = AL_EXIT_TIMEOUT;
        if (o->timed_out)
          *o->timed_out = true;
        rc = 0;
      }
      goto out;
    }
    *status = (int)json_integer_value(json_object_get(w, "StatusCode"));
    json_decref(w);
    rc = 0;
  }
out:
  /* stop the agent (still running after its limit, a signal or a failed
   * hand-off) before the proxy: nothing it does afterwards goes
   * unrecorded; then the proxy closes what is open, logs each close and
   * its summary (al_run_stop_proxy: SIGTERM, a second, SIGKILL) */
  if (agent_id && (rc < 0 || *status == AL_EXIT_TIMEOUT || stopped()))
    kill_container(d, agent_id, "SIGKILL");
  al_run_stop_proxy(door.proxy);
  al_docker_door_close(&door.door);
  al_docker_stage_close(&stage);
  if (stdin_data) {
    explicit_bzero(stdin_data, strlen(stdin_data));
    free(stdin_data);
  }
  free(agent_id);
  return rc;
}

int al_docker_run(const al_docker_opts *o, int *status, al_error *err)
{
  *status = AL_EXIT_SETUP;
  char rid[33];
  if (o->run_id)
    snprintf(rid, sizeof rid, "%s", o->run_id);
  else if (al_random_hex(rid, 8, err) < 0)
    return -1;
  struct dk d = {.sock = o->socket_path ? o->socket_path : "/var/run/docker.sock",
                 .timing = getenv("AIRLOCK_DEBUG_TIMING") != NULL};
  const char *dh = getenv("DOCKER_HOST");
  if (!o->socket_path && dh && *dh) {
    if (strncmp(dh, "unix://", 7) != 0 || !dh[7])
      return al_error_set(err, EINVAL,
                          "DOCKER_HOST `%.80s`: the docker backend talks to a local engine over "
                          "its unix socket only (unix:///PATH); unset it for "
                          "/var/run/docker.sock",
                          dh);
    d.sock = dh + 7;
  }
  if (o->policy->relay.present)
    return al_error_set(err, ENOTSUP,
                        "%s: the docker backend does not run the model relay (policy `relay`); "
                        "use the native backend",
                        o->policy->source ? o->policy->source : "the policy");
  /* The egress proxy runs on the host (docs/docker.md): there is no
   * egress network to choose or to make internal; pins resolve as for the
   * native sandbox. */
  if (o->egress_network && o->policy->network.present)
    al_warn("docker backend: --docker-network %s is ignored: the egress proxy runs on the host "
            "and reaches what the host reaches, as for the native sandbox (docs/docker.md)",
            o->egress_network);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(d.curl = curl_easy_init()))
    return al_make_error(err, ENOMEM, "curl init");
  stop_signal = 0;
  /* SIGINT, SIGTERM, SIGHUP, SIGQUIT end the run (everything removed);
   * SIGPIPE is ignored: a closed reader of the agent's output must not kill
   * us and leave the run behind. */
  struct sigaction sa = {.sa_handler = on_stop}, ign = {.sa_handler = SIG_IGN}, old_int, old_term,
                   old_hup, old_quit, old_pipe;
  sigemptyset(&sa.sa_mask);
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  sigaction(SIGQUIT, &sa, &old_quit);
  sigaction(SIGPIPE, &ign, &old_pipe);
  int rc = run_containers(&d, o, rid, status, err);
  cleanup(&d);
  if (stopped()) {
    /* SIGINT/SIGTERM is an outcome, not an error: everything is removed,
     * the status says which signal ended the run */
    *status = 128 + stopped();
    if (o->stopped_by)
      *o->stopped_by = stopped();
    al_error_clear(err);
    rc = 0;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGHUP, &old_hup, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  sigaction(SIGPIPE, &old_pipe, NULL);
  curl_easy_cleanup(d.curl);
  return rc;
}
