/* The service's listeners (libmicrohttpd, internal polling thread pool):
 * POST /webhook on listen.webhook; the read-only pages on listen.status
 * (one listener serves both when the addresses are equal).
 *
 * A webhook delivery, in order (each step's refusal has no effect on the
 * queue; only an authenticated delivery is remembered):
 *   method + path → Content-Length / body cap (413) → X-GitHub-Delivery
 *   well-formed (400) → X-Hub-Signature-256 (401) → replay by delivery id
 *   or body digest (200 "duplicate", nothing done) → strict parse (400) →
 *   not a trigger (202 "ignored") → repository not served (403) →
 *   enqueued (202 "queued") or the ticket is already queued or running
 *   (200 "already-active"). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "serve/internal.h"
#include "serve/webhook.h"

struct listener {
  struct serve *s;
  bool webhook, status;
};

struct req {
  char *body;
  size_t len;
  bool too_large;
};

static struct listener g_l_webhook, g_l_status;

static enum MHD_Result send_body(struct MHD_Connection *conn, unsigned status, char *body,
                                 const char *type)
{
  struct MHD_Response *r =
      MHD_create_response_from_buffer(body ? strlen(body) : 0, body ? body : (char *)"",
                                      body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'none'; style-src 'unsafe-inline'");
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, json_t *j)
{
  char *b = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (b) {
    size_t n = strlen(b);
    b = al_xrealloc(b, n + 2);
    b[n] = '\n';
    b[n + 1] = '\0';
  }
  return send_body(conn, status, b, "application/json");
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *outcome,
                              const char *detail)
{
  return send_json(conn, status, json_pack("{s:s, s:s}", "outcome", outcome, "detail", detail));
}

/* The webhook, after the whole body arrived. */
static enum MHD_Result webhook(struct serve *s, struct MHD_Connection *conn, struct req *rq)
{
  const al_serve_config *cfg = s->cfg;
  const char *delivery = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-GitHub-Delivery");
  const char *event = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-GitHub-Event");
  const char *sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Hub-Signature-256");
  const char *peer = "?";
  char pbuf[64] = "";
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET &&
      inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr,
                pbuf, sizeof pbuf))
    peer = pbuf;
  if (rq->too_large) {
    serve_log("warn", "webhook_refused", json_pack("{s:s, s:s}", "peer", peer, "rule", "size"),
              "webhook refused: body over %llu bytes", (unsigned long long)cfg->max_body);
    return answer(conn, MHD_HTTP_CONTENT_TOO_LARGE, "refused", "body too large");
  }
  if (!al_webhook_delivery_ok(delivery)) {
    serve_log("warn", "webhook_refused", json_pack("{s:s, s:s}", "peer", peer, "rule", "delivery"),
              "webhook refused: X-GitHub-Delivery missing or malformed");
    return answer(conn, MHD_HTTP_BAD_REQUEST, "refused",
                  "X-GitHub-Delivery missing or malformed (1..64 of [0-9A-Za-z-])");
  }
  al_error err = {0};
  if (al_webhook_verify(s->secret, s->secret_len, sig, rq->body ? rq->body : "", rq->len, &err) <
      0) {
    serve_log("warn", "webhook_refused",
              json_pack("{s:s, s:s, s:s}", "peer", peer, "rule", "signature", "delivery", delivery),
              "webhook refused: %s", err.msg);
    return answer(conn, MHD_HTTP_UNAUTHORIZED, "refused", err.msg);
  }
  char digest[65];
  al_sha256_hex(rq->body ? rq->body : "", rq->len, digest);
  int seen = al_queue_delivery_new(s->q, delivery, digest, event ? event : "", &err);
  if (seen < 0) {
    serve_log("error", "queue", NULL, "%s", err.msg);
    return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "error", "the queue is unavailable");
  }
  if (seen == 1) {
    serve_log("warn", "webhook_replay", json_pack("{s:s, s:s}", "peer", peer, "delivery", delivery),
              "webhook %s: a replay (delivery id or body seen before): nothing done", delivery);
    return answer(conn, MHD_HTTP_OK, "duplicate", "delivery seen before: nothing done");
  }
  al_webhook_event ev;
  if (al_webhook_parse(event, rq->body ? rq->body : "", rq->len, cfg->label, cfg->command, &ev,
                       &err) < 0) {
    char o[AL_ERROR_MSG_MAX + 16];
    snprintf(o, sizeof o, "malformed: %s", err.msg);
    al_queue_delivery_outcome(s->q, delivery, o, 0);
    serve_log("warn", "webhook_refused",
              json_pack("{s:s, s:s}", "delivery", delivery, "rule", "parse"),
              "webhook %s refused: %s", delivery, err.msg);
    return answer(conn, MHD_HTTP_BAD_REQUEST, "refused", err.msg);
  }
  if (ev.kind == AL_WEBHOOK_PING) {
    al_queue_delivery_outcome(s->q, delivery, "ping", 0);
    return answer(conn, MHD_HTTP_OK, "pong", "ping received");
  }
  if (ev.kind == AL_WEBHOOK_IGNORE) {
    char o[300];
    snprintf(o, sizeof o, "ignored: %s", ev.why);
    al_queue_delivery_outcome(s->q, delivery, o, 0);
    return answer(conn, MHD_HTTP_ACCEPTED, "ignored", ev.why);
  }
  if (!al_serve_config_repo(cfg, ev.repo)) {
    char o[300];
    snprintf(o, sizeof o, "refused: repository %s is not served", ev.repo);
    al_queue_delivery_outcome(s->q, delivery, o, 0);
    serve_log(
        "warn", "webhook_refused",
        json_pack("{s:s, s:s, s:s}", "delivery", delivery, "rule", "repository", "repo", ev.repo),
        "webhook %s: %s", delivery, o);
    return answer(conn, MHD_HTTP_FORBIDDEN, "refused", "repository not served");
  }
  int64_t id = 0;
  const char *trigger = !strcmp(ev.event, "issues") ? "label" : "comment";
  int r = al_queue_enqueue(s->q, ev.repo, ev.number, trigger, ev.sender, delivery, &id, &err);
  if (r < 0) {
    serve_log("error", "queue", NULL, "%s", err.msg);
    return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "error", "the queue is unavailable");
  }
  char o[300];
  snprintf(o, sizeof o, "%s: run %lld (%s by %s)", r == 0 ? "queued" : "already-active",
           (long long)id, trigger, ev.sender);
  al_queue_delivery_outcome(s->q, delivery, o, id);
  serve_log("info", r == 0 ? "queued" : "already_active",
            json_pack("{s:s, s:I, s:s, s:I, s:s, s:s}", "delivery", delivery, "run", (json_int_t)id,
                      "repo", ev.repo, "ticket", (json_int_t)ev.number, "sender", ev.sender,
                      "trigger", trigger),
            "webhook %s: %s", delivery, o);
  return send_json(conn, r == 0 ? MHD_HTTP_ACCEPTED : MHD_HTTP_OK,
                   json_pack("{s:s, s:I}", "outcome", r == 0 ? "queued" : "already-active", "run",
                             (json_int_t)id));
}

static enum MHD_Result status_page(struct serve *s, struct MHD_Connection *conn, const char *url)
{
  const char *type = "text/plain";
  int status = 200;
  char *body = NULL;
  /* /runs/N or /runs/N/record */
  long long id = 0;
  const char *tail = NULL;
  if (!strncmp(url, "/runs/", 6) && url[6] >= '1' && url[6] <= '9') {
    char *end;
    id = strtoll(url + 6, &end, 10);
    tail = end;
  }
  char why[300];
  bool healthy = al_queue_health(s->q, why, sizeof why) == 0;
  if (!strcmp(url, "/healthz")) {
    /* the queue's health: 200 ok, else 503 with why (a probe's answer) */
    status = healthy ? 200 : 503;
    body = al_strdup_printf("%s\n", healthy ? "ok" : why);
  } else if (!healthy && (!strcmp(url, "/") || !strcmp(url, "/runs.json") ||
                          !strcmp(url, "/metrics") || tail)) {
    /* never an empty page with 200 over a queue that cannot be read */
    status = 503;
    body = al_strdup_printf("airlock serve: %s\n", why);
  } else if (!strcmp(url, "/")) {
    body = serve_page_index(s, &type);
  } else if (!strcmp(url, "/runs.json")) {
    body = serve_page_runs_json(s, &type);
  } else if (!strcmp(url, "/metrics")) {
    body = serve_page_metrics(s, &type);
  } else if (tail && !*tail && id > 0) {
    body = serve_page_run(s, id, &type, &status);
  } else if (tail && !strcmp(tail, "/record") && id > 0) {
    json_t *row = al_queue_get(s->q, id);
    const char *rec = json_string_value(json_object_get(row, "record"));
    char *data = NULL;
    size_t len;
    al_error err;
    if (rec && al_read_file(rec, 64u << 20, &data, &len, &err) == 0) {
      body = data;
      type = "application/json";
    } else {
      status = 404;
      body = al_xstrdup("no record for this run\n");
    }
    json_decref(row);
  } else {
    status = 404;
    body = al_xstrdup("not found\n");
  }
  return send_body(conn, (unsigned)status, body, type);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
  (void)version;
  struct listener *l = cls;
  struct serve *s = l->s;
  bool is_hook = l->webhook && !strcmp(url, "/webhook");
  struct req *rq = *con_cls;
  if (!rq) {
    if (is_hook && strcmp(method, "POST") != 0)
      return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "refused", "POST only");
    if (!is_hook) {
      if (!l->status || (strcmp(method, "GET") && strcmp(method, "HEAD")))
        return send_body(conn, l->status ? 405 : 404, al_xstrdup("not here\n"), "text/plain");
    } else {
      const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
      if (cl && strtoull(cl, NULL, 10) > s->cfg->max_body) {
        serve_log("warn", "webhook_refused", json_pack("{s:s}", "rule", "size"),
                  "webhook refused: Content-Length %s over %llu", cl,
                  (unsigned long long)s->cfg->max_body);
        return answer(conn, MHD_HTTP_CONTENT_TOO_LARGE, "refused", "body too large");
      }
    }
    *con_cls = al_xcalloc(1, sizeof(struct req));
    return MHD_YES;
  }
  if (*upload_size) {
    if (!rq->too_large) {
      if (rq->len + *upload_size > s->cfg->max_body) {
        rq->too_large = true;
        free(rq->body);
        rq->body = NULL;
        rq->len = 0;
      } else {
        rq->body = al_xrealloc(rq->body, rq->len + *upload_size + 1);
        memcpy(rq->body + rq->len, upload, *upload_size);
        rq->len += *upload_size;
        rq->body[rq->len] = '\0';
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (is_hook)
    return webhook(s, conn, rq);
  return status_page(s, conn, url);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  (void)conn;
  (void)toe;
  struct req *rq = *con_cls;
  if (rq) {
    free(rq->body);
    free(rq);
  }
  *con_cls = NULL;
}

/* "ADDR:PORT" or "[ADDR]:PORT" into a sockaddr. */
static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, bool *v6,
                      al_error *err)
{
  *v6 = false;
  *len = 0;
  char host[128];
  const char *colon = strrchr(s, ':');
  size_t hl = (size_t)(colon - s);
  if (hl >= sizeof host)
    return al_error_set(err, EINVAL, "listen address `%s`: too long", s);
  memcpy(host, s, hl);
  host[hl] = '\0';
  int port = (int)strtol(colon + 1, NULL, 10); /* checked by the config (0..65535) */
  memset(ss, 0, sizeof *ss);
  if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
    host[hl - 1] = '\0';
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
      return al_error_set(err, EINVAL, "listen address `%s`: not an IPv6 address", s);
    *len = sizeof *a;
    *v6 = true;
    return 0;
  }
  struct sockaddr_in *a = (struct sockaddr_in *)ss;
  a->sin_family = AF_INET;
  a->sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
    return al_error_set(err, EINVAL, "listen address `%s`: not a numeric IPv4 address", s);
  *len = sizeof *a;
  *v6 = false;
  return 0;
}

static struct MHD_Daemon *start_one(struct listener *l, const char *addr, al_error *err)
{
  struct sockaddr_storage ss;
  socklen_t len;
  bool v6;
  if (parse_addr(addr, &ss, &len, &v6, err) < 0)
    return NULL;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
  if (v6)
    flags |= MHD_USE_IPv6;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, handler, l, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)128, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)32,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)15, MHD_OPTION_END);
  if (!d)
    al_error_set(err, EADDRINUSE, "cannot listen on %s (in use, or not an address of this host)",
                 addr);
  return d;
}

int serve_http_start(struct serve *s, al_error *err)
{
  const al_serve_config *c = s->cfg;
  /* The same ADDR:PORT is one listener; two port-0 entries are two. */
  size_t wl = strlen(c->listen_webhook);
  s->shared_listener = c->listen_webhook[0] && !strcmp(c->listen_webhook, c->listen_status) &&
                       !(wl > 2 && !strcmp(c->listen_webhook + wl - 2, ":0"));
  g_l_webhook = (struct listener){.s = s, .webhook = true, .status = s->shared_listener};
  g_l_status = (struct listener){.s = s, .status = true};
  if (c->listen_webhook[0] && !(s->d_webhook = start_one(&g_l_webhook, c->listen_webhook, err)))
    return al_error_wrap(err, "listen.webhook");
  if (!s->shared_listener && c->listen_status[0] &&
      !(s->d_status = start_one(&g_l_status, c->listen_status, err)))
    return al_error_wrap(err, "listen.status");
  /* The bound ports (port 0 picks one), for tests and operators. */
  json_t *o = json_object();
  struct MHD_Daemon *ds[2] = {
      s->d_webhook, s->d_status ? s->d_status : (s->shared_listener ? s->d_webhook : NULL)};
  const char *names[2] = {"webhook", "status"};
  const char *addrs[2] = {c->listen_webhook, c->listen_status};
  for (int i = 0; i < 2; i++) {
    if (!ds[i])
      continue;
    const union MHD_DaemonInfo *inf = MHD_get_daemon_info(ds[i], MHD_DAEMON_INFO_BIND_PORT);
    const char *colon = strrchr(addrs[i], ':');
    al_autofree char *a =
        al_strdup_printf("%.*s:%u", (int)(colon - addrs[i]), addrs[i], inf ? inf->port : 0);
    json_object_set_new(o, names[i], json_string(a));
  }
  char *txt = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  al_autofree char *path = al_strdup_printf("%s/listen.json", c->state_dir);
  al_autofree char *tmp = al_strdup_printf("%s.tmp", path);
  int r = al_write_file(tmp, txt, strlen(txt), 0600, err);
  free(txt);
  if (r < 0 || rename(tmp, path) < 0)
    return al_make_error(err, errno, "writing `%s`", path);
  return 0;
}

void serve_http_stop(struct serve *s)
{
  if (s->d_webhook)
    MHD_stop_daemon(s->d_webhook);
  if (s->d_status)
    MHD_stop_daemon(s->d_status);
  s->d_webhook = s->d_status = NULL;
}
