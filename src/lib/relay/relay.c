/* The model relay's server: one thread per call, blocking sockets with
 * timeouts, OpenSSL for the upstream TLS. See relay.h for the contract. */
#include "relay/relay.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "relay/check.h"
#include "relay/relay_int.h"
#include "relay/rules.h"
#include "relay/usage.h"
static void log_call(struct call *c)
{
  struct relay *rl = c->rl;
  if (rl->o->log_fd < 0)
    return;
  char when[32];
  al_time_iso_ms(when);
  json_t *j = json_pack(
      "{s:s, s:s, s:s?, s:I, s:s, s:s, s:s?, s:i, s:b, s:I, s:I, s:I, s:I, "
      "s:I, s:I, s:b}",
      "time", when, "type", "model_call", "run", rl->o->run_id, "call", (json_int_t)c->id, "method",
      c->method, "path", c->path, "model", c->model[0] ? c->model : NULL, "status", c->status,
      "stream", c->stream, "tokens_in", (json_int_t)c->usage.tokens_in, "tokens_out",
      (json_int_t)c->usage.tokens_out, "bytes_up", (json_int_t)c->bytes_up, "bytes_down",
      (json_int_t)c->bytes_down, "latency_ms", (json_int_t)(al_now_ms() - c->t0_ms), "ttfb_ms",
      (json_int_t)c->ttfb_ms, "usage_seen", c->usage.seen);
  if (!j)
    return;
  json_object_set_new(j, "decision", json_string(c->decision ? c->decision : "error"));
  if (c->reason[0])
    json_object_set_new(j, "reason", json_string(c->reason));
  if (c->up) {
    json_object_set_new(j, "vendor", json_string(c->up->vendor));
    json_object_set_new(j, "upstream", json_string(c->up->upstream));
  }
  if (c->feature[0])
    json_object_set_new(j, "feature", json_string(c->feature));
  if (c->dropped[0])
    json_object_set_new(j, "dropped", json_string(c->dropped));
  if (c->set[0])
    json_object_set_new(j, "set", json_string(c->set));
  if (c->upstream_why)
    json_object_set_new(j, "upstream_failure", json_string(c->upstream_why));
  char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(j);
  if (!s)
    return;
  char *line = al_strdup_printf("%s\n", s);
  free(s);
  pthread_mutex_lock(&rl->mu);
  (void)al_write_all(rl->o->log_fd, line, strlen(line));
  pthread_mutex_unlock(&rl->mu);
  free(line);
}

void rl_set_timeout(int fd, int opt, uint64_t ms)
{
  struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)((ms % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

int rl_send_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len) {
    ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* An answer made by the relay itself (a refusal or an upstream failure). */
void rl_answer(struct call *c, int status, const char *decision, bool no_retry, const char *fmt,
               ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof c->reason, fmt, ap);
  va_end(ap);
  c->status = status;
  c->decision = decision;
  static const struct {
    int code;
    const char *text, *type;
  } texts[] = {{400, "Bad Request", "invalid_request_error"},
               {403, "Forbidden", "permission_error"},
               {405, "Method Not Allowed", "permission_error"},
               {411, "Length Required", "invalid_request_error"},
               {413, "Content Too Large", "request_too_large"},
               {426, "Upgrade Required", "invalid_request_error"},
               {429, "Too Many Requests", "rate_limit_error"},
               {431, "Request Header Fields Too Large", "invalid_request_error"},
               {501, "Not Implemented", "invalid_request_error"},
               {502, "Bad Gateway", "api_error"},
               {503, "Service Unavailable", "overloaded_error"},
               {504, "Gateway Timeout", "api_error"}};
  const char *text = "Error", *type = "api_error";
  for (size_t i = 0; i < AL_ARRAY_SIZE(texts); i++)
    if (texts[i].code == status) {
      text = texts[i].text;
      type = texts[i].type;
    }
  /* The error in the shape the agent's SDK reads, so the agent shows it:
   * Anthropic {"type":"error","error":{"type","message"}} (Messages API
   * "Errors" page); OpenAI {"error":{"message","type","param","code"}}
   * (API reference "Error codes"). */
  bool openai = c->rs ? c->rs == &al_relay_rules_openai
                      : (strstr(c->path, "/responses") || strstr(c->path, "/chat/"));
  json_t *j = openai ? json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", c->reason, "type",
                                 status == 429   ? "rate_limit_exceeded"
                                 : status >= 500 ? "server_error"
                                                 : "invalid_request_error",
                                 "param", "code", decision)
                     : json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type,
                                 "message", c->reason);
  char *b = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  char *head = al_strdup_printf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                                "Content-Length: %zu\r\n%sx-airlock-relay: refused\r\n"
                                "Connection: close\r\n\r\n",
                                status, text, b ? strlen(b) : 0,
                                no_retry ? "x-should-retry: false\r\n" : "");
  bool head_only = strcmp(c->method, "HEAD") == 0; /* RFC 9110 §9.3.2: no content */
  if (rl_send_all(c->fd, head, strlen(head)) == 0) {
    c->bytes_down += strlen(head);
    if (b && !head_only && rl_send_all(c->fd, b, strlen(b)) == 0)
      c->bytes_down += strlen(b);
  }
  free(head);
  free(b);
}

/* ---- one connection ---- */

/* The route (and so the upstream) of METHOD path: paths are unique
 * across upstreams (policy.c checks). */
static const al_relay_route *find_route(const al_policy_relay *cfg, const char *method,
                                        const char *path, bool *path_known, size_t *up)
{
  *path_known = false;
  for (size_t u = 0; u < cfg->n_upstreams; u++)
    for (size_t i = 0; i < cfg->upstreams[u].n_routes; i++) {
      const al_relay_route *r = &cfg->upstreams[u].routes[i];
      if (strcmp(r->path, path) == 0) {
        *path_known = true;
        *up = u;
        if (strcmp(r->method, method) == 0)
          return r;
      }
    }
  return NULL;
}

static void handle(struct call *c)
{
  struct relay *rl = c->rl;
  const al_policy_relay *cfg = rl->cfg;
  snprintf(c->method, sizeof c->method, "-");
  snprintf(c->path, sizeof c->path, "-");
  rl_set_timeout(c->fd, SO_RCVTIMEO, HEAD_TIMEOUT_MS);
  rl_set_timeout(c->fd, SO_SNDTIMEO, cfg->idle_timeout_ms);
  char *hbuf = al_xmalloc(HEAD_MAX + 1);
  struct request rq = {0};
  char *body = NULL;
  size_t body_len = 0;
  int st = rl_read_head(c, &rq, hbuf);
  if (st < 0)
    goto out_silent;
  if (rq.method) {
    snprintf(c->method, sizeof c->method, "%.15s", rq.method);
    if (rq.target) {
      size_t pl = strcspn(rq.target, "?");
      snprintf(c->path, sizeof c->path, "%.*s", (int)(pl > 256 ? 256 : pl), rq.target);
      for (char *p = c->path; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e || *p == '"' || *p == '\\')
          *p = '?';
    }
  }
  if (st > 0) {
    rl_answer(c, st, "refused", true, "malformed request head (%s)", rq.why ? rq.why : "?");
    goto out;
  }
  if (!rq.method || !rq.target || rq.target[0] != '/') { /* read_head sets both when it returns 0 */
    rl_answer(c, 400, "refused", true, "only origin-form targets (/path) are relayed");
    goto out;
  }
  const char *query = strchr(rq.target, '?');
  if (query)
    for (const char *p = query; *p; p++)
      if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '#') {
        rl_answer(c, 400, "refused", true, "bad query string");
        goto out;
      }
  /* WebSocket (RFC 6455 §4.1) is not relayed: refuse the upgrade at once,
   * with a body, so a client that tries it first (Codex) falls back to
   * HTTP without retrying. */
  const char *upg = rl_hget(&rq, "upgrade", NULL);
  if (upg && strcasestr(upg, "websocket")) {
    rl_answer(c, 426, "refused", true,
              "airlock relay: WebSocket is not relayed; use HTTP (streaming with SSE works)");
    goto out;
  }
  bool known = false;
  size_t up = 0;
  const al_relay_route *route = find_route(cfg, rq.method, c->path, &known, &up);
  if (known) {
    c->up = &cfg->upstreams[up];
    c->up_idx = up;
    c->rs = al_relay_ruleset_for(c->up->vendor, c->path);
  }
  if (!route) {
    if (known)
      rl_answer(c, 405, "refused", true, "method %s not allowed on %s", c->method, c->path);
    else
      rl_answer(c, 403, "refused", true, "route not allowed by the relay policy");
    goto out;
  }
  /* budgets: admit (and count) the call, or refuse it */
  pthread_mutex_lock(&rl->mu);
  bool over_req = cfg->budget_requests && rl->requests >= cfg->budget_requests;
  bool over_tok = cfg->budget_tokens && rl->tokens >= cfg->budget_tokens;
  if (!over_req && !over_tok)
    rl->requests++;
  uint64_t used_req = rl->requests, used_tok = rl->tokens;
  pthread_mutex_unlock(&rl->mu);
  if (over_req || over_tok) {
    rl_answer(c, 429, "budget", true, "airlock relay: %s budget of this run exhausted (%llu used)",
              over_req ? "request" : "token", (unsigned long long)(over_req ? used_req : used_tok));
    goto out;
  }
  st = rl_read_body(c, &rq, cfg->max_request, &body, &body_len);
  if (st < 0)
    goto out_silent;
  if (st > 0) {
    rl_answer(c, st, "refused", true, "%s",
              st == 413 ? "request body larger than relay.max_request"
                        : (st == 411 ? "a body length is required" : "malformed request body"));
    goto out;
  }
  c->bytes_up = body_len;
  al_usage_request_model(body, body_len, c->model, sizeof c->model);
  /* the body: no server-side tool, connector or fetch the policy does not
   * allow (rules.h) */
  st = al_relay_check_body(c->rs, (const char *const *)c->up->allow, body, body_len, c->reason,
                           sizeof c->reason, c->feature, sizeof c->feature);
  if (st) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    rl_answer(c, st, "refused", true, "airlock relay: %s", why);
    goto out;
  }
  /* members whose vendor default is unsafe, added when omitted (rules.h:
   * OpenAI Responses `"store": false`) */
  char *nb = NULL;
  size_t nb_len = 0;
  st = al_relay_apply_defaults(c->rs, (const char *const *)c->up->allow, c->path, body, body_len,
                               &nb, &nb_len, c->set, sizeof c->set, c->reason, sizeof c->reason,
                               c->feature, sizeof c->feature);
  if (st) {
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", c->reason);
    rl_answer(c, st, "refused", true, "airlock relay: %s", why);
    goto out;
  }
  if (nb) {
    free(body);
    body = nb;
    body_len = nb_len;
  }
  rl_forward(c, &rq, query, body, body_len);
  pthread_mutex_lock(&rl->mu);
  rl->tokens += c->usage.tokens_in + c->usage.tokens_out;
  pthread_mutex_unlock(&rl->mu);
out:
  log_call(c);
out_silent:
  al_usage_free(&c->usage);
  free(body);
  free(hbuf);
}

static void *conn_thread(void *arg)
{
  struct call *c = arg;
  handle(c);
  shutdown(c->fd, SHUT_WR);
  close(c->fd);
  struct relay *rl = c->rl;
  pthread_mutex_lock(&rl->mu);
  rl->active--;
  pthread_mutex_unlock(&rl->mu);
  free(c);
  return NULL;
}

static void free_ssl(struct relay *rl)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(rl->ssl); i++)
    if (rl->ssl[i])
      SSL_CTX_free(rl->ssl[i]);
}

int al_relay_serve(const al_relay_serve_opts *o, al_error *err)
{
  if (o->cfg->n_upstreams == 0 || o->cfg->n_upstreams > AL_ARRAY_SIZE(((struct relay *)0)->ssl))
    return al_error_set(err, EINVAL, "relay: 1 to 16 upstreams");
  struct relay rl = {.o = o, .cfg = o->cfg};
  pthread_mutex_init(&rl.mu, NULL);
  signal(SIGPIPE, SIG_IGN);
  for (size_t i = 0; i < o->cfg->n_upstreams && i < AL_ARRAY_SIZE(rl.ssl); i++) {
    const al_relay_upstream *u = &o->cfg->upstreams[i];
    SSL_CTX *ctx = al_relay_tls_ctx(u, err);
    if (!ctx) {
      free_ssl(&rl);
      return -1;
    }
    rl.ssl[i] = ctx;
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    free_ssl(&rl);
    return al_make_error(err, errno, "signalfd");
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (;;) {
    struct pollfd p[2] = {{.fd = o->listen_fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents)
      break;
    if (!(p[0].revents & POLLIN))
      continue;
    int fd = accept4(o->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct call *c = al_xcalloc(1, sizeof *c);
    c->rl = &rl;
    c->fd = fd;
    c->t0_ms = al_now_ms();
    pthread_mutex_lock(&rl.mu);
    bool full = rl.active >= o->cfg->max_conns;
    if (!full)
      rl.active++;
    c->id = ++rl.seq;
    pthread_mutex_unlock(&rl.mu);
    if (full) {
      rl_set_timeout(fd, SO_SNDTIMEO, 1000);
      snprintf(c->method, sizeof c->method, "-");
      snprintf(c->path, sizeof c->path, "-");
      rl_answer(c, 503, "refused", false, "too many concurrent calls (relay.max_connections)");
      log_call(c);
      close(fd);
      free(c);
      continue;
    }
    pthread_t th;
    if (pthread_create(&th, &attr, conn_thread, c) != 0) {
      close(fd);
      free(c);
      pthread_mutex_lock(&rl.mu);
      rl.active--;
      pthread_mutex_unlock(&rl.mu);
    }
  }
  pthread_attr_destroy(&attr);
  close(sfd);
  free_ssl(&rl);
  return 0;
}
