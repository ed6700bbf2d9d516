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

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
  stop_signal = sig;
}

struct dk {
  CURL *curl;
  const char *sock;
  char *names[4]; /* containers created (ids), for cleanup */
  size_t n_ctr;
  char *nets[2];
  size_t n_net;
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

/* Only the long wait for the agent is cut short by a signal: a create or
 * start request always completes, so we learn the id of everything the
 * engine made and can remove it (an aborted create would leak it). */
static volatile sig_atomic_t abortable;

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
  return stop_signal && abortable ? 1 : 0;
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
  curl_easy_setopt(d->curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(d->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
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
    if (rc == CURLE_ABORTED_BY_CALLBACK)
      return al_make_error(err, EINTR, "docker %s %s: interrupted by signal %d", method, path,
                           (int)stop_signal);
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

static int create_network(struct dk *d, const char *name, bool internal, const char *rid, char **id,
                          al_error *err)
{
  json_t *out = NULL;
  char *body =
      dumps(json_pack("{s:s,s:s,s:b,s:b,s:{s:s}}", "Name", name, "Driver", "bridge", "Internal",
                      internal, "CheckDuplicate", 1, "Labels", "airlock.run", rid));
  if (call(d, "POST", "/networks/create", body, 30000, &out, err) < 0)
    return al_error_wrap(err, "create network %s", name);
  *id = al_xstrdup(json_string_value(json_object_get(out, "Id")));
  json_decref(out);
  d->nets[d->n_net++] = al_xstrdup(*id);
  return 0;
}

static int create_container(struct dk *d, const char *name, json_t *spec, char **id, al_error *err)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/create?name=%s", name);
  json_t *out = NULL;
  if (call(d, "POST", path, dumps(spec), 60000, &out, err) < 0)
    return al_error_wrap(err, "create container %s", name);
  *id = al_xstrdup(json_string_value(json_object_get(out, "Id")));
  json_decref(out);
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
  sig_atomic_t saved = stop_signal;
  stop_signal = 0; /* let the cleanup requests through */
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
  d->n_ctr = d->n_net = 0;
  stop_signal = saved;
}

/* Docker's multiplexed log stream: 8-byte headers (stream, 0,0,0, BE32 len). */
static void copy_logs(struct dk *d, const char *id)
{
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/logs?stdout=1&stderr=1", id);
  struct buf r;
  al_error e = {0};
  sig_atomic_t saved = stop_signal;
  stop_signal = 0;
  long code = req(d, "GET", path, NULL, 60000, &r, &e);
  stop_signal = saved;
  if (code != 200) {
    free(r.p);
    return;
  }
  size_t off = 0;
  while (off + 8 <= r.n) {
    const unsigned char *hd = (const unsigned char *)r.p + off;
    size_t len = ((size_t)hd[4] << 24) | ((size_t)hd[5] << 16) | ((size_t)hd[6] << 8) | hd[7];
    if (off + 8 + len > r.n)
      break;
    al_write_all(hd[0] == 2 ? 2 : 1, r.p + off + 8, len);
    off += 8 + len;
  }
  free(r.p);
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
  char name[128], *int_id = NULL, *egr_id = NULL, *proxy_id = NULL, *agent_id = NULL;
  char proxy_ip[64] = "";
  int rc = -1;

  if (net) {
    char pol[PATH_MAX];
    if (!p->source || !realpath(p->source, pol)) {
      al_make_error(err, ENOENT, "docker backend: the policy must come from a file");
      goto out;
    }
    snprintf(name, sizeof name, "airlock-%s-internal", rid);
    if (create_network(d, name, true, rid, &int_id, err) < 0)
      goto out;
    snprintf(name, sizeof name, "airlock-%s-egress", rid);
    if (create_network(d, name, o->egress_internal, rid, &egr_id, err) < 0)
      goto out;
    char *bind = al_strdup_printf("%s:" AL_RENDER_POLICY_TARGET ":ro", pol);
    json_t *hc = hardening(json_object());
    json_object_set_new(hc, "NetworkMode", json_string(egr_id));
    json_object_set_new(hc, "Binds", json_pack("[s]", bind));
    json_object_set_new(hc, "SecurityOpt", json_pack("[s]", "no-new-privileges:true"));
    json_object_set_new(hc, "Tmpfs", json_pack("{s:s}", "/tmp", "size=16m,mode=1777"));
    free(bind);
    json_t *spec = json_pack("{s:s,s:[s,s,s,s,s],s:s,s:o,s:{s:s}}", "Image",
                             o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE, "Cmd",
                             "proxy", "-p", AL_RENDER_POLICY_TARGET, "--listen", "0.0.0.0:3128",
                             "User", "65534:65534", "HostConfig", hc, "Labels", "airlock.run", rid);
    snprintf(name, sizeof name, "airlock-%s-proxy", rid);
    if (create_container(d, name, spec, &proxy_id, err) < 0)
      goto out;
    char path[300];
    snprintf(path, sizeof path, "/networks/%s/connect", int_id);
    if (call(d, "POST", path, dumps(json_pack("{s:s}", "Container", proxy_id)), 30000, NULL, err) <
            0 ||
        start(d, proxy_id, err) < 0) {
      al_error_wrap(err, "proxy container");
      goto out;
    }
    json_t *info = NULL;
    snprintf(path, sizeof path, "/containers/%s/json", proxy_id);
    if (call(d, "GET", path, NULL, 30000, &info, err) < 0)
      goto out;
    json_t *nets = json_object_get(json_object_get(info, "NetworkSettings"), "Networks");
    const char *k;
    json_t *v;
    json_object_foreach(nets, k, v)
    {
      if (strcmp(json_string_value(json_object_get(v, "NetworkID")) ?: "", int_id) == 0)
        snprintf(proxy_ip, sizeof proxy_ip, "%s",
                 json_string_value(json_object_get(v, "IPAddress")) ?: "");
    }
    json_decref(info);
    if (!proxy_ip[0]) {
      al_make_error(err, EIO, "proxy container has no address on the internal network");
      goto out;
    }
  }

  /* The agent. The proxy is addressed by IP: the agent needs no DNS, and
   * its resolver forwards nothing (Dns: 127.0.0.1 inside its own netns). */
  char *profile = NULL;
  if (al_seccomp_profile_json(&profile, err) < 0)
    goto out;
  char *seccomp = al_strdup_printf("seccomp=%s", profile);
  free(profile);
  json_t *hc = hardening(json_object());
  json_object_set_new(hc, "NetworkMode", json_string(net ? int_id : "none"));
  json_object_set_new(hc, "SecurityOpt", json_pack("[s,s]", "no-new-privileges:true", seccomp));
  free(seccomp);
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
  if (net) {
    json_object_set_new(hc, "Dns", json_pack("[s]", "127.0.0.1"));
    json_object_set_new(hc, "DnsSearch", json_pack("[s]", "."));
  }
  json_t *env = json_array();
  if (net) {
    static const char *const pv[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(pv); i++) {
      char *e = al_strdup_printf("%s=http://%s:3128", pv[i], proxy_ip);
      json_array_append_new(env, json_string(e));
      free(e);
    }
    json_array_append_new(env, json_string("NO_PROXY="));
    json_array_append_new(env, json_string("no_proxy="));
  }
  for (char *const *e = o->env; e && *e; e++)
    json_array_append_new(env, json_string(*e)); /* tokens: in this one request only */
  json_t *cmd = json_array();
  for (char *const *a = o->argv; *a; a++)
    json_array_append_new(cmd, json_string(*a));
  char user[32];
  snprintf(user, sizeof user, "%u:%u", p->process.user, p->process.user);
  const char *image = o->agent_image
                          ? o->agent_image
                          : (p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE);
  json_t *spec =
      json_pack("{s:s,s:o,s:o,s:s,s:s,s:s,s:o,s:{s:s},s:b,s:b}", "Image", image, "Cmd", cmd, "Env",
                env, "User", user, "WorkingDir", "/workspace", "Hostname", "sandbox", "HostConfig",
                hc, "Labels", "airlock.run", rid, "AttachStdout", 1, "AttachStderr", 1);
  snprintf(name, sizeof name, "airlock-%s-agent", rid);
  /* create_container wipes the serialized request (tokens) after sending;
   * jansson's copies of the strings are freed with the object. */
  if (create_container(d, name, spec, &agent_id, err) < 0)
    goto out;
  if (start(d, agent_id, err) < 0) {
    al_error_wrap(err, "agent container");
    goto out;
  }
  uint64_t tmo = o->timeout_ms ? o->timeout_ms : l->wall_ms;
  char path[300];
  snprintf(path, sizeof path, "/containers/%s/wait?condition=not-running", agent_id);
  json_t *w = NULL;
  if (stop_signal) {
    al_make_error(err, EINTR, "interrupted by signal %d", (int)stop_signal);
    *status = 128 + (int)stop_signal;
    goto out;
  }
  abortable = 1;
  int wr = call(d, "POST", path, NULL, (long)tmo, &w, err);
  abortable = 0;
  if (wr < 0) {
    if (err->code == ETIMEDOUT) {
      *status = AL_EXIT_TIMEOUT;
      copy_logs(d, agent_id);
      rc = 0;
    } else if (err->code == EINTR) {
      *status = 128 + (int)stop_signal;
    }
    goto out;
  }
  *status = (int)json_integer_value(json_object_get(w, "StatusCode"));
  json_decref(w);
  copy_logs(d, agent_id);
  rc = 0;
out:
  free(int_id);
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
  if (stop_signal) {
    /* SIGINT/SIGTERM is an outcome, not an error: everything is removed,
     * the status says which signal ended the run */
    *status = 128 + (int)stop_signal;
    al_error_clear(err);
    rc = 0;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  curl_easy_cleanup(d.curl);
  return rc;
}
