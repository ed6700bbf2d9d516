/* The docker backend (docker.h): Engine API v1.41 over /var/run/docker.sock
 * with libcurl (CURLOPT_UNIX_SOCKET_PATH). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "render/render.h"
#include "run/docker.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscalls.h"

#define API "http://localhost/v1.41"

/* The listener hand-off between the holder and the proxy (cmd_proxy.c). */
#define HANDOFF_DIR "/run/airlock"
#define HANDOFF_SOCK HANDOFF_DIR "/listener.sock"

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
  CURLcode rc = curl_easy_perform(d->curl);
  curl_slist_free_all(h);
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
    int e = code == 404 ? ENOENT : EIO;
    al_make_error(err, e, "docker %s %s: HTTP %ld: %s", method, path, code,
                  m ? m : (r.p ? r.p : ""));
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
  if (call(d, "POST", "/networks/create", body, 30000, &out, err) < 0)
    return al_error_wrap(err, "create network %s", name);
  if (engine_id(out, id, err) < 0) {
    d->nets[d->n_net++] = al_xstrdup(name); /* removed by name */
    return al_error_wrap(err, "create network %s", name);
  }
  d->nets[d->n_net++] = al_xstrdup(*id);
  return 0;
}

/* A tmpfs volume (local driver, no host path) for the listener hand-off,
 * owned by the proxy's user. POST /volumes/create. */
static int create_volume(struct dk *d, const char *name, const char *rid, al_error *err)
{
  char *body =
      dumps(json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "Name", name, "Driver", "local",
                      "DriverOpts", "type", "tmpfs", "device", "tmpfs", "o",
                      "size=1m,mode=0700,uid=65534,gid=65534", "Labels", "airlock.run", rid));
  if (call(d, "POST", "/volumes/create", body, 30000, NULL, err) < 0)
    return al_error_wrap(err, "create volume %s", name);
  d->vols[d->n_vol++] = al_xstrdup(name);
  return 0;
}

static int create_container(struct dk *d, const char *name, json_t *spec, char **id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/create?name=%s", name);
  json_t *out = NULL;
  if (call(d, "POST", path, dumps(spec), 60000, &out, err) < 0)
    return al_error_wrap(err, "create container %s", name);
  if (engine_id(out, id, err) < 0) {
    d->names[d->n_ctr++] = al_xstrdup(name); /* removed by name */
    return al_error_wrap(err, "create container %s", name);
  }
  d->names[d->n_ctr++] = al_xstrdup(*id);
  return 0;
}

static int start(struct dk *d, const char *id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/start", id);
  return call(d, "POST", path, NULL, 60000, NULL, err);
}

/* Remove everything of the run, containers first (networks in use cannot
 * go), with their anonymous volumes (v=1). Errors are warnings. */
static void cleanup(struct dk *d)
{
  al_error e = {0};
  char path[300];
  for (size_t i = d->n_ctr; i-- > 0;) {
    snprintf(path, sizeof path, "/containers/%s?force=1&v=1", d->names[i]);
    if (call(d, "DELETE", path, NULL, 60000, NULL, &e) < 0)
      al_warn("docker cleanup: %s", e.msg);
    free(d->names[i]);
  }
  for (size_t i = d->n_net; i-- > 0;) {
    snprintf(path, sizeof path, "/networks/%s", d->nets[i]);
    if (call(d, "DELETE", path, NULL, 60000, NULL, &e) < 0)
      al_warn("docker cleanup: %s", e.msg);
    free(d->nets[i]);
  }
  for (size_t i = d->n_vol; i-- > 0;) {
    snprintf(path, sizeof path, "/volumes/%s", d->vols[i]);
    if (call(d, "DELETE", path, NULL, 60000, NULL, &e) < 0)
      al_warn("docker cleanup: %s", e.msg);
    free(d->vols[i]);
  }
  d->n_ctr = d->n_net = d->n_vol = 0;
}

/* Docker's multiplexed stream (attach and logs without a TTY): frames of an
 * 8-byte header (stream type: 1 stdout, 2 stderr; 3 zero bytes; BE32
 * length) and the payload. A demuxer keeps its state across chunks. The
 * bytes are the container's, hence hostile: a frame of another stream type
 * is dropped, never trusted further. */
struct demux {
  int fd_out, fd_err; /* -1: drop that stream */
  unsigned char hd[8];
  size_t hd_n;    /* header bytes gathered */
  size_t left;    /* payload bytes left in the current frame */
  int stream;     /* of the current frame */
  bool headers;   /* attach: the response head has been read */
  long http_code; /* attach: from the status line */
};

static void demux_feed(struct demux *m, const char *p, size_t n)
{
  while (n > 0) {
    if (m->left == 0) {
      size_t k = 8 - m->hd_n < n ? 8 - m->hd_n : n;
      memcpy(m->hd + m->hd_n, p, k);
      m->hd_n += k;
      p += k;
      n -= k;
      if (m->hd_n < 8)
        return;
      m->hd_n = 0;
      m->stream = m->hd[0];
      m->left =
          ((size_t)m->hd[4] << 24) | ((size_t)m->hd[5] << 16) | ((size_t)m->hd[6] << 8) | m->hd[7];
      continue;
    }
    size_t k = m->left < n ? m->left : n;
    int fd = m->stream == 1 ? m->fd_out : m->stream == 2 ? m->fd_err : -1;
    if (fd >= 0 && al_write_all(fd, p, k) < 0)
      fd = -1; /* a closed reader must not stop the run */
    p += k;
    n -= k;
    m->left -= k;
  }
}

static size_t on_stream(char *d, size_t sz, size_t nm, void *ud)
{
  demux_feed(ud, d, sz * nm);
  return sz * nm;
}

static size_t on_header(char *d, size_t sz, size_t nm, void *ud)
{
  struct demux *m = ud;
  size_t n = sz * nm;
  if (n >= 12 && strncmp(d, "HTTP/", 5) == 0) {
    const char *sp = memchr(d, ' ', n);
    if (sp && sp + 4 <= d + n)
      m->http_code = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
  } else if (n <= 2 && (d[0] == '\r' || d[0] == '\n')) {
    m->headers = true; /* the empty line that ends the head */
  }
  return n;
}

/* The proxy container's stdout (its decisions, JSON lines) into fd. */
static void copy_logs(struct dk *d, const char *id, int fd_out, int fd_err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/logs?stdout=%d&stderr=%d", id, fd_out >= 0,
           fd_err >= 0);
  struct buf r;
  al_error e = {0};
  long code = req(d, "GET", path, NULL, 60000, &r, &e);
  if (code == 200 && r.p) {
    struct demux m = {.fd_out = fd_out, .fd_err = fd_err};
    demux_feed(&m, r.p, r.n);
  } else {
    al_warn("docker: the proxy's decisions could not be read: %s",
            code < 0 ? e.msg : "the engine refused");
  }
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

/* Wait until the holder says `handed` (the proxy has the listener), up to
 * 60 s; fail early, with the proxy's last words, when either stops. */
static int wait_handed(struct dk *d, const char *hold_id, const char *proxy_id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/logs?stdout=1&stderr=0", hold_id);
  for (int i = 0; i < 600; i++) {
    struct buf r;
    al_error e = {0};
    long code = req(d, "GET", path, NULL, 10000, &r, &e);
    bool done = code == 200 && r.p && memmem(r.p, r.n, "handed\n", 7);
    free(r.p);
    if (done)
      return 0;
    if (stopped())
      return al_make_error(err, EINTR, "interrupted by signal %d", stopped());
    if (i % 10 == 9 && (!running(d, hold_id) || !running(d, proxy_id))) {
      char lp[300];
      snprintf(lp, sizeof lp, "/containers/%s/logs?stdout=0&stderr=1&tail=3", proxy_id);
      struct buf pl;
      req(d, "GET", lp, NULL, 10000, &pl, &e);
      char last[512] = "";
      size_t k = 0;
      for (size_t j = 8; pl.p && j < pl.n && k + 1 < sizeof last; j++)
        last[k++] = (pl.p[j] >= 0x20 && pl.p[j] < 0x7f) ? pl.p[j] : ' ';
      last[k] = '\0';
      free(pl.p);
      return al_make_error(err, EIO, "the proxy or the holder container stopped: %s", last);
    }
    usleep(100 * 1000);
  }
  return al_make_error(err, ETIMEDOUT, "no listener hand-off in 60 s");
}

/* Attach to the agent container's stdout and stderr before it starts (so
 * nothing is missed and nothing needs the engine's log files: the agent
 * runs with the `none` log driver, so what it prints, tokens included,
 * never lands on the host's disk), start it, stream until it stops or the
 * deadline passes. Returns 0 when the stream ended, -1 with err (ETIMEDOUT,
 * EINTR, or the engine's error). */
static int attach_start_stream(struct dk *d, const char *id, int fd_out, int fd_err,
                               uint64_t timeout_ms, al_error *err)
{
  char url[400];
  snprintf(url, sizeof url, API "/containers/%s/attach?stream=1&stdout=1&stderr=1", id);
  struct demux m = {.fd_out = fd_out, .fd_err = fd_err};
  CURL *a = curl_easy_init();
  CURLM *mh = curl_multi_init();
  if (!a || !mh) {
    if (a)
      curl_easy_cleanup(a);
    if (mh)
      curl_multi_cleanup(mh);
    return al_make_error(err, ENOMEM, "curl init");
  }
  curl_easy_setopt(a, CURLOPT_UNIX_SOCKET_PATH, d->sock);
  curl_easy_setopt(a, CURLOPT_URL, url);
  curl_easy_setopt(a, CURLOPT_POST, 1L);
  curl_easy_setopt(a, CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(a, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(a, CURLOPT_WRITEDATA, &m);
  curl_easy_setopt(a, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(a, CURLOPT_HEADERDATA, &m);
  curl_easy_setopt(a, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(a, CURLOPT_NOPROXY, "*");
  curl_multi_add_handle(mh, a);
  int rc = -1, running = 1;
  bool started = false;
  uint64_t t0 = al_now_ms(), deadline = t0 + 30000;
  for (;;) {
    curl_multi_perform(mh, &running);
    if (!running)
      break;
    if (!started && m.headers) {
      if (m.http_code != 200) {
        al_make_error(err, EIO, "docker attach %.12s: HTTP %ld", id, m.http_code);
        goto out;
      }
      if (start(d, id, err) < 0) {
        al_error_wrap(err, "agent container");
        goto out;
      }
      started = true;
      deadline = al_now_ms() + timeout_ms;
    }
    if (stopped()) {
      al_make_error(err, EINTR, "interrupted by signal %d", stopped());
      goto out;
    }
    if (al_now_ms() >= deadline) {
      if (!started)
        al_make_error(err, EIO, "docker attach %.12s: no answer in 30 s", id);
      else
        al_make_error(err, ETIMEDOUT, "the agent ran past its limit of %llu ms",
                      (unsigned long long)timeout_ms);
      goto out;
    }
    curl_multi_poll(mh, NULL, 0, 100, NULL);
  }
  CURLMsg *msg;
  int q;
  CURLcode res = CURLE_OK;
  while ((msg = curl_multi_info_read(mh, &q)))
    if (msg->msg == CURLMSG_DONE)
      res = msg->data.result;
  if (!started) {
    al_make_error(err, EIO, "docker attach %.12s: %s (HTTP %ld)", id,
                  res == CURLE_OK ? "the stream ended before the start" : curl_easy_strerror(res),
                  m.http_code);
    goto out;
  }
  rc = 0;
out:
  curl_multi_remove_handle(mh, a);
  curl_easy_cleanup(a);
  curl_multi_cleanup(mh);
  return rc;
}

/* files (NAME=CONTENT): a `sh -c` prologue in cmd that writes each to
 * /tmp/airlock/NAME (0444) from AIRLOCK_FILE_<i> in env, unsets those and
 * execs the command that follows. NAME: [A-Za-z0-9._-]{1,64}, not a dot
 * name, so it is safe inside the script. */
static int files_wrapper(char *const *files, json_t *cmd, json_t *env, al_error *err)
{
  char *script = al_xstrdup("set -e; umask 022; mkdir -p /tmp/airlock;");
  char *unset = al_xstrdup("unset");
  int rc = 0;
  for (size_t i = 0; files[i]; i++) {
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
    char *v = al_strdup_printf("AIRLOCK_FILE_%zu=%s", i, eq + 1);
    json_array_append_new(env, json_string(v));
    free(v);
    char *s2 = al_strdup_printf("%s printf '%%s' \"$AIRLOCK_FILE_%zu\" >/tmp/airlock/%.*s;"
                                " chmod 0444 /tmp/airlock/%.*s;",
                                script, i, (int)nl, files[i], (int)nl, files[i]);
    free(script);
    script = s2;
    char *u2 = al_strdup_printf("%s AIRLOCK_FILE_%zu", unset, i);
    free(unset);
    unset = u2;
  }
  if (rc == 0) {
    char *full = al_strdup_printf("%s %s; exec \"$@\"", script, unset);
    json_array_append_new(cmd, json_string("/bin/sh"));
    json_array_append_new(cmd, json_string("-c"));
    json_array_append_new(cmd, json_string(full));
    json_array_append_new(cmd, json_string("airlock-files"));
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
  return hc;
}

static int run_containers(struct dk *d, const al_docker_opts *o, const char *rid, int *status,
                          al_error *err)
{
  const al_policy *p = o->policy;
  const al_policy_limits *l = &p->process.limits;
  bool net = p->network.present;
  char name[128], *egr_id = NULL, *proxy_id = NULL, *hold_id = NULL, *agent_id = NULL;
  char agent_net[160] = "none";
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
    char *mount = al_strdup_printf("%s:" HANDOFF_DIR, vol);
    char *bind = al_strdup_printf("%s:" AL_RENDER_POLICY_TARGET ":ro", pol);
    json_t *hc = hardening(json_object());
    json_object_set_new(hc, "NetworkMode", json_string(egr_id));
    json_object_set_new(hc, "Binds", json_pack("[s,s]", bind, mount));
    json_object_set_new(hc, "SecurityOpt", json_pack("[s]", "no-new-privileges:true"));
    json_object_set_new(hc, "Tmpfs", json_pack("{s:s}", "/tmp", "size=16m,mode=1777"));
    free(bind);
    json_t *spec =
        json_pack("{s:s,s:[s,s,s,s,s,s,s],s:s,s:o,s:{s:s}}", "Image",
                  o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE, "Cmd", "proxy", "-p",
                  AL_RENDER_POLICY_TARGET, "--listener-from", HANDOFF_SOCK, "--run-id", rid, "User",
                  "65534:65534", "HostConfig", hc, "Labels", "airlock.run", rid);
    snprintf(name, sizeof name, "airlock-%s-proxy", rid);
    if (create_container(d, name, spec, &proxy_id, err) < 0 || start(d, proxy_id, err) < 0) {
      free(mount);
      al_error_wrap(err, "proxy container");
      goto out;
    }
    /* The holder: the agent's network namespace (loopback only) and the
     * listener in it, handed to the proxy. */
    hc = hardening(json_object());
    json_object_set_new(hc, "NetworkMode", json_string("none"));
    json_object_set_new(hc, "Binds", json_pack("[s]", mount));
    json_object_set_new(hc, "SecurityOpt", json_pack("[s]", "no-new-privileges:true"));
    free(mount);
    spec = json_pack("{s:s,s:[s,s,s,s,s],s:s,s:o,s:{s:s}}", "Image",
                     o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE, "Cmd", "proxy",
                     "--send-listener", HANDOFF_SOCK, "--listen", "127.0.0.1:3128", "User",
                     "65534:65534", "HostConfig", hc, "Labels", "airlock.run", rid);
    snprintf(name, sizeof name, "airlock-%s-net", rid);
    if (create_container(d, name, spec, &hold_id, err) < 0 || start(d, hold_id, err) < 0 ||
        wait_handed(d, hold_id, proxy_id, err) < 0) {
      al_error_wrap(err, "the agent's network (listener hand-off)");
      goto out;
    }
    snprintf(agent_net, sizeof agent_net, "container:%s", hold_id);
  }

  /* The agent: in the holder's network namespace (loopback, the proxy's
   * listener on 127.0.0.1:3128, no route) or in none. */
  char *profile = NULL;
  if (al_seccomp_profile_json(&profile, err) < 0)
    goto out;
  char *seccomp = al_strdup_printf("seccomp=%s", profile);
  free(profile);
  json_t *hc = o->control_unhardened ? json_object() : hardening(json_object());
  json_object_set_new(hc, "NetworkMode", json_string(agent_net));
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
  json_object_set_new(hc, "Tmpfs", json_pack("{s:s,s:s}", "/tmp", tmp_o, "/workspace", ws_o));
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
  for (char *const *e = o->env; e && *e; e++)
    json_array_append_new(env, json_string(*e)); /* tokens: in this one request only */
  json_t *cmd = json_array();
  if (o->files && o->files[0]) {
    if (files_wrapper(o->files, cmd, env, err) < 0) {
      json_decref(cmd);
      json_decref(env);
      json_decref(hc);
      goto out;
    }
  }
  for (char *const *a = o->argv; *a; a++)
    json_array_append_new(cmd, json_string(*a));
  char user[32];
  snprintf(user, sizeof user, "%u:%u", o->control_unhardened ? 0 : p->process.user,
           o->control_unhardened ? 0 : p->process.user);
  const char *image = o->agent_image
                          ? o->agent_image
                          : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE);
  json_t *spec = json_pack("{s:s,s:o,s:o,s:s,s:s,s:s,s:o,s:{s:s},s:b,s:b}", "Image", image, "Cmd",
                           cmd, "Env", env, "User", user, "WorkingDir", "/workspace", "Hostname",
                           net ? "" : "sandbox", "HostConfig", hc, "Labels", "airlock.run", rid,
                           "AttachStdout", 1, "AttachStderr", 1);
  snprintf(name, sizeof name, "airlock-%s-agent", rid);
  /* create_container wipes the serialized request (tokens) after sending;
   * jansson's copies of the strings are freed with the object. */
  if (create_container(d, name, spec, &agent_id, err) < 0)
    goto out;
  if (stopped()) {
    al_make_error(err, EINTR, "interrupted by signal %d", stopped());
    *status = 128 + stopped();
    goto out;
  }
  uint64_t tmo = o->timeout_ms ? o->timeout_ms : l->wall_ms;
  int sr = attach_start_stream(d, agent_id, o->stdout_fd > 0 ? o->stdout_fd : 1,
                               o->stderr_fd > 0 ? o->stderr_fd : 2, tmo, err);
  if (sr < 0) {
    if (err->code == ETIMEDOUT) {
      *status = AL_EXIT_TIMEOUT;
      al_error_clear(err);
      rc = 0;
    } else if (err->code == EINTR) {
      *status = 128 + stopped();
    }
    goto out;
  }
  /* The stream has ended: the container has stopped; its status. */
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/wait?condition=not-running", agent_id);
  json_t *w = NULL;
  if (call(d, "POST", path, NULL, 30000, &w, err) < 0)
    goto out;
  *status = (int)json_integer_value(json_object_get(w, "StatusCode"));
  json_decref(w);
  rc = 0;
out:
  if (proxy_id && o->audit_fd >= 0)
    copy_logs(d, proxy_id, o->audit_fd, -1);
  free(hold_id);
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
  struct dk d = {.sock = o->socket_path ? o->socket_path : "/var/run/docker.sock"};
  const char *dh = getenv("DOCKER_HOST");
  if (!o->socket_path && dh && strncmp(dh, "unix://", 7) == 0)
    d.sock = dh + 7;
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(d.curl = curl_easy_init()))
    return al_make_error(err, ENOMEM, "curl init");
  struct sigaction sa = {.sa_handler = on_stop}, old_int, old_term;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  stop_signal = 0;
  int rc = run_containers(&d, o, rid, status, err);
  cleanup(&d);
  if (stopped()) {
    /* SIGINT/SIGTERM is an outcome, not an error: everything is removed,
     * the status says which signal ended the run */
    *status = 128 + stopped();
    al_error_clear(err);
    rc = 0;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  curl_easy_cleanup(d.curl);
  return rc;
}
