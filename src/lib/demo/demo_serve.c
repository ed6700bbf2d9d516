/* `airlock demo --serve`: the demo's forge and broker, plus `airlock serve`
 * on loopback between them (docs/serve.md starts with it). The forge is
 * started with serve's webhook URL and secret (al_demo_serve_prepare,
 * called by al_demo_setup), serve after the broker and the policy
 * (al_demo_serve_start); the forge's admin POST /hooks/label is the
 * maintainer who labels the ticket (al_demo_serve_label); serve's
 * /runs.json says how it ended (al_demo_serve_wait). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "demo/demo.h"
#include "demo/internal.h"

/* A free port on 127.0.0.1 (bound and released: the forge must know
 * serve's webhook URL before serve starts). */
static int free_port(al_error *err)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return al_make_error(err, errno, "socket");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "a free port on 127.0.0.1");
  }
  close(fd);
  return ntohs(a.sin_port);
}

int al_demo_serve_prepare(al_demo *d, al_error *err)
{
  int port = free_port(err);
  if (port < 0)
    return -1;
  snprintf(d->webhook_url, sizeof d->webhook_url, "http://127.0.0.1:%d/webhook", port);
  snprintf(d->webhook_secret, sizeof d->webhook_secret, "%s/webhook.secret", d->secret);
  unsigned char raw[32];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? read(fd, raw, sizeof raw) : -1;
  if (fd >= 0)
    close(fd);
  if (got != (ssize_t)sizeof raw)
    return al_make_error(err, EIO, "reading /dev/urandom");
  char hex[65];
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  return al_write_file(d->webhook_secret, hex, 64, 0600, err);
}

int al_demo_serve_start(al_demo *d, const char *airlock, const char *agent, al_error *err)
{
  char state[PATH_MAX + 8], listen[PATH_MAX + 24];
  snprintf(state, sizeof state, "%s/serve", d->secret);
  snprintf(listen, sizeof listen, "%s/listen.json", state);
  snprintf(d->serve_conf, sizeof d->serve_conf, "%s/serve.yaml", d->secret);
  snprintf(d->serve_log, sizeof d->serve_log, "%s/serve.log", d->secret);
  const char *hook = d->webhook_url + strlen("http://");
  al_autofree char *conf = al_strdup_printf(
      "version: 1\n"
      "listen:\n  webhook: %.*s\n  status: 127.0.0.1:0\n"
      "webhook:\n  secret_file: %s\n  label: airlock\n  command: /airlock run\n"
      "broker: %s\n"
      "state_dir: %s\n"
      "runs:\n  max_concurrent: 1\n  max_per_repo: 1\n  retries: 0\n  agent: %s\n"
      "repositories:\n  - {repo: acme/tally, policy: %s}\n",
      (int)(strchr(hook, '/') - hook), hook, d->webhook_secret, d->socket, state, agent, d->policy);
  if (al_write_file(d->serve_conf, conf, strlen(conf), 0600, err) < 0)
    return -1;
  const char *const argv[] = {airlock, "serve", "-c", d->serve_conf, NULL};
  if (al_demo_spawn(d, argv, d->serve_log) < 0)
    return al_make_error(err, errno, "starting airlock serve");
  for (int i = 0; i < 500; i++) {
    struct stat st;
    if (stat(listen, &st) == 0 && st.st_size > 0)
      break;
    usleep(20000);
  }
  json_t *lj = json_load_file(listen, 0, NULL);
  const char *status = json_string_value(json_object_get(lj, "status"));
  if (!status || strlen(status) > 64) {
    json_decref(lj);
    snprintf(d->log, sizeof d->log, "%s", d->serve_log);
    return al_error_set(err, 0, "airlock serve did not start:");
  }
  snprintf(d->status_url, sizeof d->status_url, "http://%s", status);
  json_decref(lj);
  return 0;
}

int al_demo_serve_label(al_demo *d, int number, const char *user, int *status, al_error *err)
{
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/hooks/label", d->admin_port);
  json_t *body = json_pack("{s:s, s:i, s:s, s:s}", "repo", "acme/tally", "number", number, "label",
                           "airlock", "user", user);
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  json_t *ans = text ? al_demo_http(url, text) : NULL;
  free(text);
  json_t *st = json_object_get(ans, "status");
  *status = json_is_integer(st) ? (int)json_integer_value(st) : -1;
  const char *why = json_string_value(json_object_get(ans, "error"));
  int r = 0;
  if (!ans)
    r = al_error_set(err, EIO, "the forge's admin listener did not answer POST /hooks/label");
  else if (*status < 200 || *status > 299)
    r = al_error_set(err, EIO, "airlock serve answered the forge's webhook with %d%s%s", *status,
                     why && *why ? ": " : "", why ? why : "");
  json_decref(ans);
  return r;
}

int al_demo_serve_wait(al_demo *d, int number, int timeout_ms, json_t **row, al_error *err)
{
  *row = NULL;
  char url[160], last[32] = "none";
  snprintf(url, sizeof url, "%s/runs.json", d->status_url);
  for (int waited = 0; waited <= timeout_ms; waited += 500) {
    json_t *runs = al_demo_http(url, NULL);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(runs, "runs"), i, r)
    {
      if (json_integer_value(json_object_get(r, "number")) != number)
        continue;
      const char *st = json_string_value(json_object_get(r, "state"));
      snprintf(last, sizeof last, "%s", st ? st : "?");
      if (st && strcmp(st, "queued") != 0 && strcmp(st, "running") != 0) {
        *row = json_incref(r);
        json_decref(runs);
        return 0;
      }
      break;
    }
    json_decref(runs);
    usleep(500 * 1000);
  }
  return al_error_set(err, ETIMEDOUT, "serve's run of acme/tally#%d did not finish in %d s (%s)",
                      number, timeout_ms / 1000, last);
}
