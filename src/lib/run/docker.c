/* The docker backend (docker.h): Engine API v1.41 over /var/run/docker.sock
 * with libcurl (CURLOPT_UNIX_SOCKET_PATH). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
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
#include "run/dockerwire.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscalls.h"

#define API "http://localhost/v1.41"

/* The listener hand-off between the holder and the proxy (cmd_proxy.c). */
#define HANDOFF_DIR "/run/airlock"
#define DOCKER_FILE_MAX (1u << 20) /* one file of al_docker_opts.files, bytes */
#define HANDOFF_SOCK HANDOFF_DIR "/listener.sock"
/* The forge gateway's socket in the proxy container (sealed credentials). */
#define GATEWAY_SOCK "/run/airlock-gateway.sock"
/* The proxy's decisions, in the same volume; the volume's size caps them. */
#define DECISIONS_FILE HANDOFF_DIR "/decisions.jsonl"
#define DECISIONS_CAP (8u << 20)
#define DECISIONS_LOG_MAX "8372224" /* DECISIONS_CAP - 16 KiB: proxy/auditlog.h */
/* The engine-side deadline of the proxy and the holder, past the agent's
 * limit: if airlock dies, they stop by themselves, and the agent with the
 * holder (PID 1 of its PID namespace). */
#define ENGINE_GRACE_S 30

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
  char *names[4]; /* containers created (ids), for cleanup: proxy, holder, agent */
  size_t n_ctr;
  char *nets[2];
  size_t n_net;
  char *vols[1];
  size_t n_vol;
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

static int create_network(struct dk *d, const char *name, bool internal, const char *rid, char **id,
                          al_error *err)
{
  json_t *out = NULL;
  char *body =
      dumps(json_pack("{s:s,s:s,s:b,s:b,s:{s:s}}", "Name", name, "Driver", "bridge", "Internal",
                      internal, "CheckDuplicate", 1, "Labels", "airlock.run", rid));
  /* tracked by name before the call: a create that times out on our side
   * may still have happened */
  char **slot = &d->nets[d->n_net++];
  *slot = al_xstrdup(name);
  if (call(d, "POST", "/networks/create", body, 30000, &out, err) < 0 ||
      engine_id(out, id, err) < 0)
    return al_error_wrap(err, "create network %s", name);
  free(*slot);
  *slot = al_xstrdup(*id);
  return 0;
}

/* A tmpfs volume (local driver, no host path) for the listener hand-off.
 * Mode 1777 without an owner: with the daemon's userns-remap the proxy's
 * uid on the host is not 65534. Only the proxy and the holder mount it.
 * POST /volumes/create. */
static int create_volume(struct dk *d, const char *name, const char *rid, al_error *err)
{
  char *body = dumps(json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "Name", name, "Driver", "local",
                               "DriverOpts", "type", "tmpfs", "device", "tmpfs", "o",
                               "size=9m,mode=1777", "Labels", "airlock.run", rid));
  d->vols[d->n_vol++] = al_xstrdup(name); /* before the call, as for networks */
  if (call(d, "POST", "/volumes/create", body, 30000, NULL, err) < 0)
    return al_error_wrap(err, "create volume %s", name);
  return 0;
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

/* Start the proxy (may be NULL) and the holder at the same time: the
 * engine spends most of a start waiting (runc, the network namespace), and
 * the holder retries its connection to the proxy's hand-off socket until
 * the proxy is up (cmd_proxy.c send_listener). The proxy's start runs on a
 * thread with its own connection to the engine. Returns 0, or -1 with err
 * naming the container that did not start. */
struct start_job {
  struct dk d;
  const char *id;
  al_error err;
  int rc;
};

static void *start_job_run(void *p)
{
  struct start_job *j = p;
  j->rc = start(&j->d, j->id, &j->err);
  return NULL;
}

static int start_both(struct dk *d, const char *proxy_id, const char *hold_id, al_error *err)
{
  if (!proxy_id) {
    if (start(d, hold_id, err) < 0)
      return al_error_wrap(err, "the holder container");
    return 0;
  }
  struct start_job j = {.d = {.sock = d->sock, .timing = d->timing, .curl = curl_easy_init()},
                        .id = proxy_id};
  pthread_t t;
  bool threaded = j.d.curl && pthread_create(&t, NULL, start_job_run, &j) == 0;
  if (!threaded) { /* one after the other, as before */
    if (j.d.curl)
      curl_easy_cleanup(j.d.curl);
    if (start(d, proxy_id, err) < 0)
      return al_error_wrap(err, "proxy container");
    if (start(d, hold_id, err) < 0)
      return al_error_wrap(err, "the holder container");
    return 0;
  }
  al_error herr = {0};
  int hr = start(d, hold_id, &herr);
  pthread_join(t, NULL);
  curl_easy_cleanup(j.d.curl);
  if (j.rc < 0) {
    *err = j.err;
    return al_error_wrap(err, "proxy container");
  }
  if (hr < 0) {
    *err = herr;
    return al_error_wrap(err, "the holder container");
  }
  return 0;
}

/* Remove everything of the run, containers first (networks in use cannot
 * go), with their anonymous volumes (v=1). Errors are warnings. */
struct remove_job {
  struct dk d;
  const char *id;
};

static void remove_container(struct dk *d, const char *id)
{
  al_error e = {0};
  char path[300];
  snprintf(path, sizeof path, "/containers/%s?force=1&v=1", id);
  int r = call(d, "DELETE", path, NULL, 60000, NULL, &e);
  if (r < 0 && e.code == EBUSY) {
    /* the engine is removing it already (AutoRemove): wait until it is
     * gone, or its network and volume cannot go */
    snprintf(path, sizeof path, "/containers/%s/json", id);
    for (int k = 0; k < 100 && call(d, "GET", path, NULL, 10000, NULL, &e) == 0; k++)
      usleep(100 * 1000);
  } else if (r < 0 && e.code != ENOENT) {
    al_warn("docker cleanup: %s", e.msg);
  }
}

static void *remove_job_run(void *p)
{
  struct remove_job *j = p;
  remove_container(&j->d, j->id);
  return NULL;
}

static void cleanup(struct dk *d)
{
  al_error e = {0};
  char path[300];
  /* The containers are stopped or about to be: remove them all at once,
   * each on its own connection (the last on ours); the networks and the
   * volume go once every container is gone. */
  struct remove_job jobs[AL_ARRAY_SIZE(d->names)];
  pthread_t th[AL_ARRAY_SIZE(d->names)];
  bool started[AL_ARRAY_SIZE(d->names)] = {false};
  for (size_t i = 0; i + 1 < d->n_ctr; i++) {
    jobs[i] = (struct remove_job){
        .d = {.sock = d->sock, .timing = d->timing, .curl = curl_easy_init()}, .id = d->names[i]};
    started[i] = jobs[i].d.curl && pthread_create(&th[i], NULL, remove_job_run, &jobs[i]) == 0;
    if (!started[i] && jobs[i].d.curl)
      curl_easy_cleanup(jobs[i].d.curl);
  }
  if (d->n_ctr > 0)
    remove_container(d, d->names[d->n_ctr - 1]);
  for (size_t i = d->n_ctr; i-- > 0;) {
    if (i + 1 < d->n_ctr) {
      if (started[i]) {
        pthread_join(th[i], NULL);
        curl_easy_cleanup(jobs[i].d.curl);
      } else {
        remove_container(d, d->names[i]);
      }
    }
    free(d->names[i]);
  }
  for (size_t i = d->n_net; i-- > 0;) {
    snprintf(path, sizeof path, "/networks/%s", d->nets[i]);
    if (call(d, "DELETE", path, NULL, 60000, NULL, &e) < 0 && e.code != ENOENT)
      al_warn("docker cleanup: %s", e.msg);
    free(d->nets[i]);
  }
  for (size_t i = d->n_vol; i-- > 0;) {
    snprintf(path, sizeof path, "/volumes/%s", d->vols[i]);
    if (call(d, "DELETE", path, NULL, 60000, NULL, &e) < 0 && e.code != ENOENT)
      al_warn("docker cleanup: %s", e.msg);
    free(d->vols[i]);
  }
  d->n_ctr = d->n_net = d->n_vol = 0;
}

/* The proxy's decisions file (JSON lines, in the size-capped tmpfs
 * hand-off volume, so a flood keeps the first DECISIONS_CAP bytes and
 * never fills the host's disk) into fd: GET /containers/{id}/archive, one
 * ustar member (POSIX.1 ustar header: size at 124, 12 octal digits; type
 * at 156). */
static void copy_decisions(struct dk *d, const char *id, int fd, bool *truncated)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/archive?path=%s", id, DECISIONS_FILE);
  struct buf r;
  al_error e = {0};
  long code = req(d, "GET", path, NULL, 60000, &r, &e);
  if (code == 404 && !(r.p && strstr(r.p, "No such container"))) {
    free(r.p);
    return; /* no decision at all: the file was never written */
  }
  if (code != 200 || !r.p || r.n < 512) {
    al_warn("docker: the proxy's decisions could not be read (%s); the record has none",
            code < 0      ? e.msg
            : code == 404 ? "the proxy container is gone"
                          : "unexpected answer from the engine");
    if (truncated)
      *truncated = true;
    free(r.p);
    return;
  }
  size_t off = 0;
  uint64_t size = 0;
  bool ok = al_ustar_first_file(r.p, r.n, &off, &size) == 0;
  if (!ok) {
    al_warn("docker: the proxy's decisions archive is malformed; none recorded");
    free(r.p);
    return;
  }
  if (size >= DECISIONS_CAP - 4096)
    al_warn("docker: the proxy's decisions reached their cap (%llu bytes); later ones were not "
            "kept",
            (unsigned long long)size);
  if (truncated && size >= DECISIONS_CAP - 4096)
    *truncated = true;
  if (al_write_all(fd, r.p + off, size) < 0)
    al_warn("docker: writing the proxy's decisions: %s", strerror(errno));
  free(r.p);
}

/* Is the container still running? (GET /containers/{id}/json) */
static bool running(struct dk *d, const char *id)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/json", id);
  json_t *info = NULL;
  al_error e = {0};
  if (call(d, "GET", path, NULL, 30000, &info, &e) < 0)
    return false;
  bool r = json_is_true(json_object_get(json_object_get(info, "State"), "Running"));
  json_decref(info);
  return r;
}

/* The holder's stdout as it comes (logs?follow=1): stop the transfer once
 * "handed\n" has arrived. The stream is the engine's multiplexed form
 * (8-byte frame headers); the holder writes the word in one write(2), so
 * it is never split by a header. At most 64 KiB are kept. */
struct handed_watch {
  char buf[65536];
  size_t n;
  bool seen;
  /* once a second: is the proxy still running? (its own connection: the
   * main one carries the stream) */
  struct dk probe;
  const char *proxy_id;
  uint64_t next_check_ms;
  bool proxy_gone;
};

static size_t on_holder_out(char *p, size_t sz, size_t nm, void *ud)
{
  struct handed_watch *w = ud;
  size_t n = sz * nm;
  size_t room = sizeof w->buf - w->n;
  memcpy(w->buf + w->n, p, n < room ? n : room);
  w->n += n < room ? n : room;
  if (memmem(w->buf, w->n, "handed\n", 7)) {
    w->seen = true;
    return 0; /* ends the transfer: CURLE_WRITE_ERROR, which means "seen" */
  }
  if (w->n == sizeof w->buf) /* keep the tail: the word may come later */
    w->n = 0;
  return n;
}

/* libcurl calls this about once a second while the stream is idle
 * (CURLOPT_XFERINFOFUNCTION): a signal, or a proxy that stopped, ends the
 * wait (the holder would retry for a minute). */
static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
  (void)a;
  (void)b;
  (void)c;
  (void)d;
  struct handed_watch *w = ud;
  if (stopped())
    return 1;
  uint64_t now = al_now_ms();
  if (w->proxy_id && w->probe.curl && now >= w->next_check_ms) {
    w->next_check_ms = now + 1000;
    if (!running(&w->probe, w->proxy_id)) {
      w->proxy_gone = true;
      return 1;
    }
  }
  return 0;
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

/* Wait until the holder says `handed` (it is set up; with a proxy: the
 * proxy has the listener), up to 60 s, by following its output (Engine API
 * "Get container logs", follow=1): no polling. The stream ends early when
 * the holder stops; then the error carries the last words of the proxy (or
 * the holder). proxy_id may be NULL. */
static int wait_handed(struct dk *d, const char *hold_id, const char *proxy_id, al_error *err)
{
  char url[1024];
  snprintf(url, sizeof url, API "/containers/%s/logs?follow=1&stdout=1&stderr=0", hold_id);
  struct handed_watch *w = al_xcalloc(1, sizeof *w);
  w->proxy_id = proxy_id;
  w->probe = (struct dk){.sock = d->sock, .curl = proxy_id ? curl_easy_init() : NULL};
  w->next_check_ms = al_now_ms() + 1000;
  uint64_t t0 = d->timing ? al_now_ns() : 0;
  curl_easy_reset(d->curl);
  curl_easy_setopt(d->curl, CURLOPT_UNIX_SOCKET_PATH, d->sock);
  curl_easy_setopt(d->curl, CURLOPT_URL, url);
  curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, on_holder_out);
  curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, w);
  curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(d->curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(d->curl, CURLOPT_TIMEOUT_MS, 60000L);
  curl_easy_setopt(d->curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(d->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(d->curl, CURLOPT_XFERINFODATA, w);
  CURLcode rc = curl_easy_perform(d->curl);
  long code = 0;
  curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &code);
  bool seen = w->seen, proxy_gone = w->proxy_gone;
  if (w->probe.curl)
    curl_easy_cleanup(w->probe.curl);
  free(w);
  if (d->timing)
    al_info("timing: docker follow the holder until `handed` %.1f ms",
            (double)(al_now_ns() - t0) / 1e6);
  if (seen)
    return 0;
  if (stopped())
    return al_make_error(err, EINTR, "interrupted by signal %d", stopped());
  if (rc == CURLE_OPERATION_TIMEDOUT)
    return al_make_error(err, ETIMEDOUT, "no listener hand-off in 60 s");
  if (!proxy_gone && (rc != CURLE_OK || code != 200))
    return al_make_error(err, EIO, "docker: following the holder's output: %s (HTTP %ld)",
                         curl_easy_strerror(rc), code);
  /* the stream ended without the word (the holder stopped), or the proxy
   * stopped */
  char lp[300];
  snprintf(lp, sizeof lp, "/containers/%s/logs?stdout=0&stderr=1&tail=3",
           proxy_gone || (proxy_id && !running(d, proxy_id)) ? proxy_id : hold_id);
  struct buf pl;
  al_error e = {0};
  req(d, "GET", lp, NULL, 10000, &pl, &e);
  char last[512] = "";
  size_t k = 0;
  for (size_t j = 8; pl.p && j < pl.n && k + 1 < sizeof last; j++) {
    char ch = pl.p[j];
    if (ch < 0x20 || ch >= 0x7f)
      ch = ' ';
    last[k++] = ch;
  }
  last[k] = '\0';
  free(pl.p);
  return al_make_error(err, EIO, "the proxy or the holder container stopped: %s", last);
}

/* Attach to the agent container before it starts, over a raw connection
 * to the engine's socket (the attach endpoint hijacks it: Engine API
 * "Attach to a container", Upgrade: tcp), start the container, write
 * stdin_data (the secrets, read by the wrapper; see secrets_wrapper) and
 * close our write side, then stream stdout and stderr until the container
 * stops or the deadline passes. What the agent prints is never written to
 * the engine's disk: it runs with the `none` log driver. The engine's
 * answer is checked (101 or 200 within 16 KiB and 30 s); everything after
 * it is the container's hostile byte stream, only demultiplexed. The
 * secrets in stdin_data are wiped once written, and after_start (may be
 * NULL) is called then. Returns 0 when the stream ended, 1 when the
 * deadline passed first (the agent is still running), -1 with err (EINTR
 * on a signal, or the engine's error). */
static int attach_start_stream(struct dk *d, const char *id, char *stdin_data, int fd_out,
                               int fd_err, uint64_t timeout_ms, void (*after_start)(void *),
                               void *after_start_ctx, al_error *err)
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
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    uint64_t w = deadline - now < 100 ? deadline - now : 100;
    int pr = poll(&pf, 1, (int)w);
    if (pr < 0 && errno != EINTR)
      return al_make_error(err, errno, "docker attach: poll");
    if (pr <= 0)
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

/* The proxy's and the holder's own messages (their decisions are not
 * here): a bounded json-file log, so an agent that makes them talk cannot
 * fill the host's disk. */
static json_t *small_logs(void)
{
  return json_pack("{s:s,s:{s:s,s:s}}", "Type", "json-file", "Config", "max-size", "1m", "max-file",
                   "1");
}

/* The image's Config.Volumes (GET /images/{name}/json): each path gets
 * "ro,size=4k" in tmpfs (a map of path -> options), unless the run already
 * mounts something there. A missing image is left to the create request,
 * which says so. */
static int image_volumes(struct dk *d, const char *image, json_t *tmpfs, al_error *err)
{
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

static int run_containers(struct dk *d, const al_docker_opts *o, const char *rid, int *status,
                          al_error *err)
{
  const al_policy *p = o->policy;
  const al_policy_limits *l = &p->process.limits;
  bool net = p->network.present;
  char name[128], *egr_id = NULL, *proxy_id = NULL, *hold_id = NULL, *agent_id = NULL;
  char *mount = NULL;      /* the hand-off volume, NAME:DIR */
  char *stdin_data = NULL; /* the secrets, for the wrapper (secrets_stdin) */
  uint64_t tmo = o->timeout_ms ? o->timeout_ms : l->wall_ms;
  /* seconds, counted by both from the hand-off (just before the agent
   * starts); the proxy outlives the holder by a little */
  char deadline[32], proxy_deadline[32];
  unsigned long long lim_s = (tmo + 999) / 1000;
  snprintf(deadline, sizeof deadline, "%llu", lim_s + ENGINE_GRACE_S);
  snprintf(proxy_deadline, sizeof proxy_deadline, "%llu", lim_s + ENGINE_GRACE_S + 5);
  int rc = -1;

  if (net) {
    char pol[PATH_MAX];
    if (!p->source || !realpath(p->source, pol)) {
      al_make_error(err, ENOENT, "docker backend: the policy must come from a file");
      goto out;
    }
    if (o->egress_network) {
      egr_id = al_xstrdup(o->egress_network); /* the operator's: not removed */
    } else {
      snprintf(name, sizeof name, "airlock-%s-egress", rid);
      if (create_network(d, name, o->egress_internal, rid, &egr_id, err) < 0)
        goto out;
    }
    /* The hand-off volume: tmpfs, on no host path, for one unix socket. */
    char vol[128];
    snprintf(vol, sizeof vol, "airlock-%s-handoff", rid);
    if (create_volume(d, vol, rid, err) < 0)
      goto out;
    mount = al_strdup_printf("%s:" HANDOFF_DIR, vol);
    char *bind = al_strdup_printf("%s:" AL_RENDER_POLICY_TARGET ":ro", pol);
    json_t *hc = hardening(json_object());
    json_object_set_new(hc, "NetworkMode", json_string(egr_id));
    json_object_set_new(hc, "Binds", json_pack("[s,s]", bind, mount));
    if (o->handoff_socket) /* the gateway's socket: into this container only */
      json_array_append_new(json_object_get(hc, "Binds"),
                            json_sprintf("%s:" GATEWAY_SOCK ":ro", o->handoff_socket));
    json_object_set_new(hc, "SecurityOpt", json_pack("[s]", "no-new-privileges:true"));
    json_object_set_new(hc, "Tmpfs", json_pack("{s:s}", "/tmp", "size=16m,mode=1777"));
    free(bind);
    json_object_set_new(hc, "LogConfig", small_logs());
    json_t *spec =
        json_pack("{s:s,s:[s,s,s,s,s,s,s,s,s,s,s,s,s],s:s,s:o,s:{s:s}}", "Image",
                  o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE, "Cmd", "proxy", "-p",
                  AL_RENDER_POLICY_TARGET, "--listener-from", HANDOFF_SOCK, "--log", DECISIONS_FILE,
                  /* the proxy caps itself under DECISIONS_CAP: aggregated, counted */
                  "--log-max", DECISIONS_LOG_MAX, "--run-id", rid, "--deadline", proxy_deadline,
                  "User", "65534:65534", "HostConfig", hc, "Labels", "airlock.run", rid);
    if (o->handoff_socket) {
      json_t *cmd = json_object_get(spec, "Cmd");
      json_array_append_new(cmd, json_string("--handoff-socket"));
      json_array_append_new(cmd, json_string(GATEWAY_SOCK));
      for (char *const *h = o->handoff_hosts; h && *h; h++) {
        json_array_append_new(cmd, json_string("--handoff-host"));
        json_array_append_new(cmd, json_string(*h));
      }
    }
    snprintf(name, sizeof name, "airlock-%s-proxy", rid);
    if (create_container(d, name, spec, &proxy_id, err) < 0) {
      al_error_wrap(err, "proxy container");
      goto out;
    }
    /* started below, beside the holder */
  }

  /* The holder: PID 1 of the agent's PID namespace (another uid, not
   * dumpable, reaps orphans) and owner of its network namespace (loopback
   * only); with a network section it also makes the listener there and
   * hands it to the proxy. */
  {
    json_t *hc = hardening(json_object());
    json_object_set_new(hc, "Init", json_false()); /* it is PID 1 itself */
    json_object_set_new(hc, "NetworkMode", json_string("none"));
    if (mount)
      json_object_set_new(hc, "Binds", json_pack("[s]", mount));
    json_object_set_new(hc, "SecurityOpt", json_pack("[s]", "no-new-privileges:true"));
    json_object_set_new(hc, "Memory", json_integer(32 << 20));
    json_object_set_new(hc, "PidsLimit", json_integer(8));
    json_object_set_new(hc, "LogConfig", small_logs());
    json_t *spec = net ? json_pack("{s:s,s:[s,s,s,s,s,s,s],s:s,s:o,s:{s:s}}", "Image",
                                   o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE, "Cmd",
                                   "proxy", "--send-listener", HANDOFF_SOCK, "--listen",
                                   "127.0.0.1:3128", "--deadline", deadline, "User", "65534:65534",
                                   "HostConfig", hc, "Labels", "airlock.run", rid)
                       : json_pack("{s:s,s:[s,s,s,s],s:s,s:o,s:{s:s}}", "Image",
                                   o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE, "Cmd",
                                   "proxy", "--hold", "--deadline", deadline, "User", "65534:65534",
                                   "HostConfig", hc, "Labels", "airlock.run", rid);
    snprintf(name, sizeof name, "airlock-%s-hold", rid);
    if (create_container(d, name, spec, &hold_id, err) < 0) {
      al_error_wrap(err, "the holder container");
      goto out;
    }
    if (start_both(d, proxy_id, hold_id, err) < 0)
      goto out;
    if (wait_handed(d, hold_id, proxy_id, err) < 0) {
      al_error_wrap(err, net ? "the agent's network (listener hand-off)" : "the holder container");
      goto out;
    }
  }
  /* the proxy has connected to the forge gateway before it took the
   * listener: the supervisor checks and adopts that connection now */
  if (proxy_id && o->handoff_socket && o->proxy_ready) {
    int ppid = container_pid(d, proxy_id, err);
    if (ppid <= 0 || o->proxy_ready(o->proxy_ready_ctx, ppid, err) < 0) {
      al_error_wrap(err, "the forge gateway's connection from the proxy container");
      goto out;
    }
  }
  char agent_ns[160];
  snprintf(agent_ns, sizeof agent_ns, "container:%s", hold_id);

  /* The agent: in the holder's network namespace (loopback, the proxy's
   * listener on 127.0.0.1:3128, no route) or in none. */
  char *profile = NULL;
  if (al_seccomp_profile_json(&profile, err) < 0)
    goto out;
  char *seccomp = al_strdup_printf("seccomp=%s", profile);
  free(profile);
  json_t *hc = o->control_unhardened ? json_object() : hardening(json_object());
  json_object_set_new(hc, "NetworkMode", json_string(agent_ns));
  json_object_set_new(hc, "PidMode", json_string(agent_ns));
  json_object_set_new(hc, "Init", json_false()); /* the holder is PID 1 */
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
  /* An empty read-only tmpfs replaces the engine's sysfs at /sys (the
   * native sandbox has no /sys; probe fs.mountinfo). */
  if (!o->control_unhardened)
    json_object_set_new(tmpfs, "/sys", json_string("ro,size=4k,mode=0555,nosuid,nodev,noexec"));
  /* A VOLUME of the image would give the agent an anonymous volume on the
   * host's disk, outside the policy's sizes and kept after a crash: an
   * empty read-only tmpfs takes each one's place. */
  if (image_volumes(d,
                    o->agent_image
                        ? o->agent_image
                        : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE),
                    tmpfs, err) < 0) {
    json_decref(tmpfs);
    json_decref(hc);
    goto out;
  }
  json_object_set_new(hc, "Tmpfs", tmpfs);
  free(tmp_o);
  free(ws_o);
  json_object_set_new(hc, "Memory", json_integer((json_int_t)l->memory));
  json_object_set_new(hc, "MemorySwap", json_integer((json_int_t)l->memory));
  json_object_set_new(hc, "PidsLimit", json_integer(l->pids));
  if (l->cpu_milli)
    json_object_set_new(hc, "NanoCpus", json_integer((json_int_t)l->cpu_milli * 1000000));
  json_object_set_new(hc, "Ulimits",
                      json_pack("[{s:s,s:I,s:I},{s:s,s:i,s:i}]", "Name", "nofile", "Soft",
                                (json_int_t)l->nofile, "Hard", (json_int_t)l->nofile, "Name",
                                "core", "Soft", 0, "Hard", 0));
  json_t *env = json_array();
  if (net) {
    static const char *const pv[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(pv); i++) {
      char *e = al_strdup_printf("%s=http://127.0.0.1:3128", pv[i]);
      json_array_append_new(env, json_string(e));
      free(e);
    }
    json_array_append_new(env, json_string("NO_PROXY="));
    json_array_append_new(env, json_string("no_proxy="));
  }
  /* o->env (tokens) goes through stdin, never into the configuration */
  if (secrets_stdin(o->env, &stdin_data, err) < 0) {
    json_decref(env);
    json_decref(hc);
    goto out;
  }
  json_t *cmd = json_array();
  if (stdin_data || (o->files && o->files[0])) {
    if (wrapper(stdin_data != NULL, o->files, cmd, env, err) < 0) {
      json_decref(cmd);
      json_decref(env);
      json_decref(hc);
      goto out;
    }
  }
  for (char *const *a = o->argv; *a; a++) {
    json_t *js = json_string(*a);
    if (!js) {
      al_error_set(err, EINVAL,
                   "argument %d of the command (0 is the program) is not valid UTF-8 (the Engine "
                   "API takes JSON)",
                   (int)(a - o->argv));
      json_decref(cmd);
      json_decref(env);
      json_decref(hc);
      goto out;
    }
    json_array_append_new(cmd, js);
  }
  if (json_array_size(cmd) == 0) {
    al_error_set(err, EINVAL, "docker backend: no command to run");
    json_decref(cmd);
    json_decref(env);
    json_decref(hc);
    goto out;
  }
  char user[32];
  snprintf(user, sizeof user, "%u:%u", o->control_unhardened ? 0 : p->process.user,
           o->control_unhardened ? 0 : p->process.user);
  const char *image = o->agent_image
                          ? o->agent_image
                          : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE);
  /* Our command is the Entrypoint, and there is no Cmd: the image's own
   * ENTRYPOINT (which would run before the prologue and could read the
   * secrets on stdin) and CMD never run. */
  json_t *spec = json_pack("{s:s,s:o,s:n,s:o,s:s,s:s,s:o,s:{s:s},s:b,s:b,s:b,s:b,s:b}", "Image",
                           image, "Entrypoint", cmd, "Cmd", "Env", env, "User", user, "WorkingDir",
                           "/workspace", "HostConfig", hc, "Labels", "airlock.run", rid,
                           "AttachStdout", 1, "AttachStderr", 1, "AttachStdin", stdin_data != NULL,
                           "OpenStdin", stdin_data != NULL, "StdinOnce", stdin_data != NULL);
  snprintf(name, sizeof name, "airlock-%s-agent", rid);
  if (create_container(d, name, spec, &agent_id, err) < 0)
    goto out;
  if (stopped()) {
    al_make_error(err, EINTR, "interrupted by signal %d", stopped());
    *status = 128 + stopped();
    goto out;
  }
  uint64_t t_start = al_now_ms();
  int sr = attach_start_stream(d, agent_id, stdin_data, o->stdout_fd > 0 ? o->stdout_fd : 1,
                               o->stderr_fd > 0 ? o->stderr_fd : 2, tmo, o->after_start,
                               o->after_start_ctx, err);
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
  /* stop the agent (still running after its limit or a signal) before its
   * decisions are read: nothing it does afterwards goes unrecorded */
  if (agent_id && ((rc == 0 && *status == AL_EXIT_TIMEOUT) || stopped()))
    kill_container(d, agent_id, "SIGKILL");
  if (proxy_id && o->audit_fd > 0) {
    /* SIGTERM: the proxy closes what is still open and logs each close;
     * then its file is complete */
    if (kill_container(d, proxy_id, "SIGTERM") == 0) {
      char path[300];
      al_error ke = {0};
      snprintf(path, sizeof path, "/containers/%s/wait?condition=not-running", proxy_id);
      json_t *w = NULL;
      if (call(d, "POST", path, NULL, 10000, &w, &ke) == 0)
        json_decref(w);
    }
    copy_decisions(d, proxy_id, o->audit_fd, o->decisions_truncated);
  }
  free(hold_id);
  free(mount);
  if (stdin_data) {
    explicit_bzero(stdin_data, strlen(stdin_data));
    free(stdin_data);
  }
  free(egr_id);
  free(proxy_id);
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
  /* A pin is resolved by the proxy, which runs in its own container: a
   * loopback pin is the proxy container's own loopback, never the host's. */
  for (size_t i = 0; i < o->policy->network.n_pin; i++) {
    const char *a = o->policy->network.pin[i].address;
    if (strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0)
      al_warn("docker backend: pin %s -> %s is the proxy container's own loopback, not the "
              "host's; put the service in a container on the egress network and pin its "
              "address (docs/docker.md, \"A ticket on the docker backend\")",
              o->policy->network.pin[i].host, a);
  }
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
