/* The service's listeners (libmicrohttpd, internal polling thread pool):
 * POST /webhook (GitHub), POST /webhook/jira and /webhook/linear (when
 * configured; their steps are intake_tickets.c's), POST /webhook/gitlab
 * (intake_gitlab.c's) on listen.webhook; the read-only pages on
 * listen.status (one listener serves both when the addresses are equal).
 *
 * A webhook delivery, in order (each step's refusal has no effect on the
 * queue; only an authenticated delivery is remembered):
 *   method + path → Content-Length / body cap (413) → X-GitHub-Delivery
 *   well-formed (400) → X-Hub-Signature-256 (401) → replay by delivery id
 *   or body digest (200 "duplicate", nothing done) → strict parse (400) →
 *   not a trigger (202 "ignored") → repository not served (403) →
 *   intake limits (503 a full queue, 429 a sender's or a repository's
 *   rate; recorded as the delivery's outcome) → enqueued (202 "queued")
 *   or the ticket is already queued or running (200 "already-active").
 *
 * Connections (issue #29 item 4): at most listen.max_connections per
 * listener (MHD_OPTION_CONNECTION_LIMIT), idle ones closed after
 * listen.timeout (MHD_OPTION_CONNECTION_TIMEOUT), and two limits MHD has
 * no option for, kept in a table of the open connections here: a request
 * whose head and body have not arrived listen.request_deadline after it
 * began is cut (shutdown(2) from the reaper thread: a client sending a
 * byte now and then keeps an MHD connection alive forever), and at most
 * listen.max_per_ip connections per peer address, except a peer listed in
 * listen.trusted_proxies: its connections are not counted (its clients
 * are many), its requests are, per client, by the X-Forwarded-For hop it
 * added (the rightmost address that is not itself a trusted proxy). An
 * X-Forwarded-For from any other peer is ignored. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "serve/internal.h"
#include "serve/webhook.h"
#include "tickets/tickets.h"

struct listener {
  struct serve *s;
  bool webhook, status;
};

struct req {
  char *body;
  size_t len;
  bool too_large;
  bool counted; /* a trusted proxy's request, counted for its client */
};

static struct listener g_l_webhook, g_l_status;

/* One open connection (the table below; socket_context points here). */
struct slot {
  bool used;
  int fd;
  char peer[INET6_ADDRSTRLEN];       /* the socket's peer address */
  bool proxy;                        /* peer is in listen.trusted_proxies */
  char client[INET6_ADDRSTRLEN + 2]; /* the request's client: peer, or its X-Forwarded-For hop */
  bool in_request;                   /* a proxy's request being read, counted for client */
  uint64_t begun_ms;                 /* the current request began (accept, or the last's end) */
  bool answered;                     /* its response is queued: no deadline */
  bool cut;                          /* the reaper cut it */
};

static struct {
  pthread_mutex_t lock;
  struct slot *slots;
  size_t n;
  const al_serve_config *cfg;
  pthread_t reaper;
  bool reaper_running;
  int stop; /* atomic */
  uint64_t refused_ip, cut;
} g_conns = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool is_trusted(const char *ip)
{
  for (size_t i = 0; i < g_conns.cfg->n_trusted_proxies; i++)
    if (!strcmp(g_conns.cfg->trusted_proxies[i], ip))
      return true;
  return false;
}

/* sa's numeric address into out (IPv4-mapped IPv6 as IPv4), or "?". */
static void addr_text(const struct sockaddr *sa, char *out, size_t n)
{
  snprintf(out, n, "?");
  if (!sa)
    return;
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
              (socklen_t)n);
  } else if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a))
      inet_ntop(AF_INET, a->s6_addr + 12, out, (socklen_t)n);
    else
      inet_ntop(AF_INET6, a, out, (socklen_t)n);
  }
}

static uint64_t mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
  (void)cls;
  pthread_mutex_lock(&g_conns.lock);
  if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    struct slot *sl = *socket_context;
    if (sl)
      memset(sl, 0, sizeof *sl);
    *socket_context = NULL;
    pthread_mutex_unlock(&g_conns.lock);
    return;
  }
  const union MHD_ConnectionInfo *fi =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *ai =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  int fd = fi ? fi->connect_fd : -1;
  char peer[INET6_ADDRSTRLEN];
  addr_text(ai ? ai->client_addr : NULL, peer, sizeof peer);
  bool proxy = is_trusted(peer);
  size_t same = 0;
  struct slot *free_slot = NULL;
  for (size_t i = 0; i < g_conns.n; i++) {
    struct slot *sl = &g_conns.slots[i];
    if (!sl->used) {
      if (!free_slot)
        free_slot = sl;
    } else if (!proxy && !strcmp(sl->peer, peer)) {
      same++;
    }
  }
  bool refuse = !free_slot || (!proxy && same >= g_conns.cfg->max_per_ip);
  if (free_slot) {
    *free_slot = (struct slot){.used = true, .fd = fd, .proxy = proxy, .begun_ms = mono_ms()};
    snprintf(free_slot->peer, sizeof free_slot->peer, "%s", peer);
    snprintf(free_slot->client, sizeof free_slot->client, "%s", peer);
    *socket_context = free_slot;
  }
  uint64_t nref = refuse ? ++g_conns.refused_ip : 0;
  pthread_mutex_unlock(&g_conns.lock);
  if (refuse) {
    if (fd >= 0)
      shutdown(fd, SHUT_RDWR); /* MHD reads the end and closes it */
    if (nref <= 10 || nref % 1000 == 0)
      serve_log("warn", "connection_refused",
                json_pack("{s:s, s:s, s:I}", "peer", peer, "rule", "max_per_ip", "count",
                          (json_int_t)nref),
                "connection from %s refused: %zu open, listen.max_per_ip %llu (%llu refused so "
                "far)",
                peer, same, (unsigned long long)g_conns.cfg->max_per_ip, (unsigned long long)nref);
  }
}

static struct slot *slot_of(struct MHD_Connection *conn)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

/* The reaper: cuts every request past listen.request_deadline. */
static void *reaper_main(void *arg)
{
  (void)arg;
  while (!__atomic_load_n(&g_conns.stop, __ATOMIC_ACQUIRE)) {
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    uint64_t now = mono_ms();
    char peers[8][INET6_ADDRSTRLEN + 2];
    size_t np = 0, ncut = 0;
    pthread_mutex_lock(&g_conns.lock);
    for (size_t i = 0; i < g_conns.n; i++) {
      struct slot *sl = &g_conns.slots[i];
      if (!sl->used || sl->answered || sl->cut ||
          now - sl->begun_ms < g_conns.cfg->request_deadline_ms)
        continue;
      sl->cut = true;
      if (sl->fd >= 0)
        shutdown(sl->fd, SHUT_RDWR);
      ncut++;
      if (np < 8)
        snprintf(peers[np++], sizeof peers[0], "%s", sl->client);
    }
    g_conns.cut += ncut;
    uint64_t total = g_conns.cut;
    pthread_mutex_unlock(&g_conns.lock);
    for (size_t i = 0; i < np; i++)
      serve_log("warn", "connection_cut",
                json_pack("{s:s, s:s, s:I}", "peer", peers[i], "rule", "request_deadline", "count",
                          (json_int_t)total),
                "connection from %s cut: its request had not arrived %llu ms after it began "
                "(listen.request_deadline)",
                peers[i], (unsigned long long)g_conns.cfg->request_deadline_ms);
  }
  return NULL;
}

static enum MHD_Result send_body_retry(struct MHD_Connection *conn, unsigned status, char *body,
                                       const char *type, unsigned retry_after);

static enum MHD_Result send_body(struct MHD_Connection *conn, unsigned status, char *body,
                                 const char *type)
{
  return send_body_retry(conn, status, body, type, 0);
}

/* The response is queued: the request is no longer under the deadline. */
static void mark_answered(struct MHD_Connection *conn)
{
  pthread_mutex_lock(&g_conns.lock);
  struct slot *sl = slot_of(conn);
  if (sl)
    sl->answered = true;
  pthread_mutex_unlock(&g_conns.lock);
}

/* retry_after: seconds for a Retry-After field (RFC 9110 §10.2.3), 0: none. */
static enum MHD_Result send_body_retry(struct MHD_Connection *conn, unsigned status, char *body,
                                       const char *type, unsigned retry_after)
{
  mark_answered(conn);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(body ? strlen(body) : 0, body ? body : (char *)"",
                                      body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", type);
  if (retry_after) {
    char ra[24];
    snprintf(ra, sizeof ra, "%u", retry_after);
    MHD_add_response_header(r, "Retry-After", ra);
  }
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'none'; style-src 'unsafe-inline'");
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_json_retry(struct MHD_Connection *conn, unsigned status, json_t *j,
                                       unsigned retry_after)
{
  char *b = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (b) {
    size_t n = strlen(b);
    b = al_xrealloc(b, n + 2);
    b[n] = '\n';
    b[n + 1] = '\0';
  }
  return send_body_retry(conn, status, b, "application/json", retry_after);
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

/* The request's client (its peer, or a trusted proxy's hop) into out. */
static void client_of(struct MHD_Connection *conn, char out[INET6_ADDRSTRLEN + 2])
{
  snprintf(out, INET6_ADDRSTRLEN + 2, "?");
  pthread_mutex_lock(&g_conns.lock);
  struct slot *sl = slot_of(conn);
  if (sl)
    snprintf(out, INET6_ADDRSTRLEN + 2, "%s", sl->client);
  pthread_mutex_unlock(&g_conns.lock);
}

static enum MHD_Result too_large(struct serve *s, struct MHD_Connection *conn, const char *peer)
{
  serve_log("warn", "webhook_refused", json_pack("{s:s, s:s}", "peer", peer, "rule", "size"),
            "webhook refused: body over %llu bytes", (unsigned long long)s->cfg->max_body);
  return answer(conn, MHD_HTTP_CONTENT_TOO_LARGE, "refused", "body too large");
}

/* A Jira or Linear delivery, after the whole body arrived: its headers
 * to intake_tickets.c, its answer back. */
static enum MHD_Result ticket_webhook(struct serve *s, struct MHD_Connection *conn, struct req *rq,
                                      serve_vendor v)
{
  char peer[INET6_ADDRSTRLEN + 2];
  client_of(conn, peer);
  if (rq->too_large)
    return too_large(s, conn, peer);
  bool jira = v == SERVE_JIRA;
  struct serve_hook_req h = {
      .vendor = v,
      .signature = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               jira ? "X-Hub-Signature" : "Linear-Signature"),
      .delivery = MHD_lookup_connection_value(
          conn, MHD_HEADER_KIND, jira ? "X-Atlassian-Webhook-Identifier" : "Linear-Delivery"),
      .peer = peer,
      .body = rq->body ? rq->body : "",
      .len = rq->len};
  json_t *j = NULL;
  unsigned retry = 0;
  unsigned status = serve_ticket_hook(s, &h, &j, &retry);
  return send_json_retry(conn, status, j, retry);
}

/* A GitLab delivery, after the whole body arrived: its headers to
 * intake_gitlab.c, its answer back. */
static enum MHD_Result gitlab_webhook(struct serve *s, struct MHD_Connection *conn, struct req *rq)
{
  char peer[INET6_ADDRSTRLEN + 2];
  client_of(conn, peer);
  if (rq->too_large)
    return too_large(s, conn, peer);
  struct serve_gl_req h = {
      .token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Gitlab-Token"),
      .uuid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Gitlab-Event-UUID"),
      .event = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Gitlab-Event"),
      .wh_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "webhook-id"),
      .wh_ts = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "webhook-timestamp"),
      .wh_sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "webhook-signature"),
      .peer = peer,
      .body = rq->body ? rq->body : "",
      .len = rq->len};
  json_t *j = NULL;
  unsigned retry = 0;
  unsigned status = serve_gitlab_hook(s, &h, &j, &retry);
  return send_json_retry(conn, status, j, retry);
}

/* The webhook, after the whole body arrived. */
static enum MHD_Result webhook(struct serve *s, struct MHD_Connection *conn, struct req *rq)
{
  const al_serve_config *cfg = s->cfg;
  const char *delivery = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-GitHub-Delivery");
  const char *event = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-GitHub-Event");
  const char *sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Hub-Signature-256");
  char pbuf[INET6_ADDRSTRLEN + 2];
  client_of(conn, pbuf);
  const char *peer = pbuf;
  if (rq->too_large)
    return too_large(s, conn, peer);
  if (!al_webhook_delivery_ok(delivery)) {
    serve_log("warn", "webhook_refused", json_pack("{s:s, s:s}", "peer", peer, "rule", "delivery"),
              "webhook refused: X-GitHub-Delivery missing or malformed");
    return answer(conn, MHD_HTTP_BAD_REQUEST, "refused",
                  "X-GitHub-Delivery missing or malformed (1..64 of [0-9A-Za-z-])");
  }
  al_error err = {0};
  if (al_webhook_verify(s->gh.b, s->gh.len, sig, rq->body ? rq->body : "", rq->len, &err) < 0) {
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
  if (s->tk[al_serve_config_repo(cfg, ev.repo) - cfg->repos].kind != AL_TK_GITHUB) {
    /* its policy's tickets are in Jira or Linear: a GitHub issue is not one */
    static const char why[] = "the repository's policy keeps its tickets in Jira or Linear "
                              "(ticket:): its GitHub issues do not start runs";
    char o[300];
    snprintf(o, sizeof o, "ignored: %s", why);
    al_queue_delivery_outcome(s->q, delivery, o, 0);
    return answer(conn, MHD_HTTP_ACCEPTED, "ignored", why);
  }
  int64_t id = 0;
  const char *trigger = !strcmp(ev.event, "issues") ? "label" : "comment";
  al_queue_limits lim = {.max_queued = cfg->max_queued,
                         .per_sender = cfg->per_sender,
                         .per_repo = cfg->per_repo,
                         .window_ms = cfg->window_ms};
  al_queue_refusal why = AL_QUEUE_ADMITTED;
  int r = al_queue_enqueue_limited(s->q, &lim, ev.repo, ev.number, NULL, trigger, ev.sender,
                                   delivery, &id, &why, &err);
  if (r < 0) {
    serve_log("error", "queue", NULL, "%s", err.msg);
    return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "error", "the queue is unavailable");
  }
  if (r == 2) {
    /* refused by an intake limit: recorded, answered, never dropped silently */
    const char *rule = why == AL_QUEUE_FULL           ? "max_queued"
                       : why == AL_QUEUE_SENDER_LIMIT ? "per_sender"
                                                      : "per_repo";
    char o[AL_ERROR_MSG_MAX + 64];
    snprintf(o, sizeof o, "refused: intake.%s: %s", rule, err.msg);
    al_queue_delivery_outcome(s->q, delivery, o, 0);
    serve_log("warn", "webhook_refused",
              json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "peer", peer, "delivery", delivery,
                        "rule", rule, "repo", ev.repo, "ticket", (json_int_t)ev.number, "sender",
                        ev.sender),
              "webhook %s (%s#%lu by %s): %s", delivery, ev.repo, ev.number, ev.sender, o);
    unsigned status =
        why == AL_QUEUE_FULL ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_TOO_MANY_REQUESTS;
    return send_json_retry(
        conn, status,
        json_pack("{s:s, s:s, s:s}", "outcome", "refused", "rule", rule, "detail", err.msg),
        why == AL_QUEUE_FULL ? 60 : (unsigned)(cfg->window_ms / 1000));
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

/* Every X-Forwarded-For line, in the order received, joined with ','
 * (RFC 9110 §5.3: one list): a proxy that adds its own line (HAProxy's
 * option forwardfor) leaves the client's line first, and the first line
 * alone would be the client's word. Over 1024 bytes: over, nothing is
 * believed. */
struct xff_join {
  char buf[1025];
  size_t len;
  bool over;
};

static enum MHD_Result xff_collect(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
  (void)kind;
  struct xff_join *x = cls;
  if (!key || strcasecmp(key, "X-Forwarded-For") != 0)
    return MHD_YES;
  size_t vl = value ? strlen(value) : 0;
  if (x->len + vl + 1 >= sizeof x->buf) {
    x->over = true;
    return MHD_NO;
  }
  if (x->len)
    x->buf[x->len++] = ',';
  if (vl)
    memcpy(x->buf + x->len, value, vl);
  x->len += vl;
  x->buf[x->len] = '\0';
  return MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
  (void)version;
  struct listener *l = cls;
  struct serve *s = l->s;
  /* /webhook (GitHub), /webhook/jira, /webhook/linear (intake_tickets.c):
   * a vendor's path without its webhook.* block answers 404 */
  int tk = !l->webhook                       ? -1
           : !strcmp(url, "/webhook/jira")   ? SERVE_JIRA
           : !strcmp(url, "/webhook/linear") ? SERVE_LINEAR
                                             : -1;
  bool gl = l->webhook && !strcmp(url, "/webhook/gitlab"); /* intake_gitlab.c */
  bool is_hook = l->webhook && (!strcmp(url, "/webhook") || tk >= 0 || gl);
  struct req *rq = *con_cls;
  if (!rq && gl && !s->gl_token.b && !s->gl_signing.b) {
    serve_log("warn", "webhook_refused",
              json_pack("{s:s, s:s}", "rule", "not_configured", "path", url),
              "webhook refused: %s (webhook.gitlab is not in the config)", url);
    return answer(conn, MHD_HTTP_NOT_FOUND, "refused", "this webhook is not configured");
  }
  if (!rq && tk >= 0 && !(tk == SERVE_JIRA ? s->jira.b : s->linear.b)) {
    serve_log("warn", "webhook_refused",
              json_pack("{s:s, s:s}", "rule", "not_configured", "path", url),
              "webhook refused: %s (webhook.%s is not in the config)", url,
              tk == SERVE_JIRA ? "jira" : "linear");
    return answer(conn, MHD_HTTP_NOT_FOUND, "refused", "this webhook is not configured");
  }
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
    struct req *nrq = al_xcalloc(1, sizeof(struct req));
    *con_cls = nrq;
    /* a trusted proxy's request: its client is the X-Forwarded-For hop
     * it added, and its client's requests are what max_per_ip counts */
    pthread_mutex_lock(&g_conns.lock);
    struct slot *sl = slot_of(conn);
    bool over = false;
    char client[INET6_ADDRSTRLEN + 2] = "";
    size_t same = 0;
    if (sl && sl->proxy) {
      struct xff_join x = {.len = 0};
      MHD_get_connection_values(conn, MHD_HEADER_KIND, xff_collect, &x);
      al_webhook_xff_client(x.len && !x.over ? x.buf : NULL,
                            (const char *const *)s->cfg->trusted_proxies, s->cfg->n_trusted_proxies,
                            client, sizeof client);
      if (!client[0])
        snprintf(client, sizeof client, "%s?", sl->peer); /* no usable hop: one bucket */
      for (size_t i = 0; i < g_conns.n; i++)
        same += g_conns.slots[i].used && g_conns.slots[i].in_request &&
                !strcmp(g_conns.slots[i].client, client);
      over = same >= s->cfg->max_per_ip;
      snprintf(sl->client, sizeof sl->client, "%s", client);
      if (!over) {
        sl->in_request = true;
        nrq->counted = true;
      }
    }
    pthread_mutex_unlock(&g_conns.lock);
    if (over) {
      serve_log("warn", "connection_refused",
                json_pack("{s:s, s:s}", "peer", client, "rule", "max_per_ip"),
                "request for %s (through a trusted proxy) refused: %zu requests open, "
                "listen.max_per_ip %llu",
                client, same, (unsigned long long)s->cfg->max_per_ip);
      return send_json_retry(conn, MHD_HTTP_TOO_MANY_REQUESTS,
                             json_pack("{s:s, s:s}", "outcome", "refused", "detail",
                                       "too many requests open from this client"),
                             5);
    }
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
  if (gl)
    return gitlab_webhook(s, conn, rq);
  if (is_hook && tk >= 0)
    return ticket_webhook(s, conn, rq, (serve_vendor)tk);
  if (is_hook)
    return webhook(s, conn, rq);
  return status_page(s, conn, url);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  (void)toe;
  struct req *rq = *con_cls;
  /* the next request on this connection starts its own deadline */
  pthread_mutex_lock(&g_conns.lock);
  struct slot *sl = slot_of(conn);
  if (sl) {
    sl->begun_ms = mono_ms();
    sl->answered = false;
    if (rq && rq->counted)
      sl->in_request = false;
  }
  pthread_mutex_unlock(&g_conns.lock);
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
      MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, notify_conn, NULL,
      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)g_conns.cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
      (unsigned)((g_conns.cfg->conn_timeout_ms + 999) / 1000), MHD_OPTION_END);
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
  g_conns.cfg = c;
  if (!g_conns.slots) {
    g_conns.n = 2 * (size_t)c->max_connections + 8; /* both listeners, and MHD's slack */
    g_conns.slots = al_xcalloc(g_conns.n, sizeof *g_conns.slots);
  }
  __atomic_store_n(&g_conns.stop, 0, __ATOMIC_RELEASE);
  if (!g_conns.reaper_running) {
    if (pthread_create(&g_conns.reaper, NULL, reaper_main, NULL) != 0)
      return al_error_set(err, EAGAIN, "the listeners' reaper thread");
    g_conns.reaper_running = true;
  }
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
  if (g_conns.reaper_running) {
    __atomic_store_n(&g_conns.stop, 1, __ATOMIC_RELEASE);
    pthread_join(g_conns.reaper, NULL);
    g_conns.reaper_running = false;
  }
  free(g_conns.slots);
  g_conns.slots = NULL;
  g_conns.n = 0;
}
