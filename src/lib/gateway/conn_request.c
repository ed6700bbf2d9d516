/* One request of a gateway connection (see conn.c for the states): the
 * decision line, the gateway's own answers, the rebuilt head with the
 * real token, the body with the gateway's framing, the relayed response,
 * and serve_request, which takes a request from its head to its line. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/comment.h"
#include "gateway/conn_int.h"
#include "gateway/apipath.h"
#include "gateway/graphql.h"
#include "gateway/refusal.h"
#include "gateway/rules_tickets.h"
#include "gateway/server.h"
#include "gateway/wire.h"
#include "net/chunked.h"
#include "net/host.h"
#include "net/http.h"
/* ---- the decision line ---- */

void gwc_log_request(al_gw_conn *c, req_ctx *r)
{
  if (r->logged)
    return;
  r->logged = true;
  json_t *j = json_object();
  json_object_set_new(j, "event", json_string("request"));
  json_object_set_new(j, "conn", json_integer((json_int_t)c->m.conn_id));
  json_object_set_new(j, "client", json_string(c->m.client));
  json_object_set_new(j, "host", json_string(c->m.host));
  json_object_set_new(j, "port", json_integer(c->m.port));
  json_object_set_new(j, "method", r->method[0] ? json_string(r->method) : json_null());
  json_object_set_new(j, "path", r->path[0] ? json_string(r->path) : json_null());
  json_object_set_new(j, "query", r->qlog[0] ? json_string(r->qlog) : json_null());
  json_object_set_new(j, "decision",
                      json_string(r->rule && !r->denied && r->status < 400 ? "allow" : "deny"));
  json_object_set_new(j, "rule", r->rule ? json_string(r->rule->name) : json_null());
  json_object_set_new(j, "reason", json_string(r->reason ? r->reason : "unknown"));
  if (r->detail)
    json_object_set_new(j, "detail", json_string(r->detail));
  json_object_set_new(j, "status", r->status ? json_integer(r->status) : json_null());
  json_object_set_new(j, "bytes_up", json_integer((json_int_t)r->up));
  json_object_set_new(j, "bytes_down", json_integer((json_int_t)r->down));
  if (r->rp) {
    json_t *refs = json_array();
    for (size_t i = 0; i < r->rp->n_cmds; i++)
      json_array_append_new(refs, json_pack("{s:s,s:s,s:s}", "ref", r->rp->cmd[i].ref, "old",
                                            r->rp->cmd[i].old_oid, "new", r->rp->cmd[i].new_oid));
    json_object_set_new(j, "refs", refs);
  }
  json_object_set_new(j, "duration_ms", json_integer((json_int_t)(al_now_ms() - r->t0)));
  al_gw_decision(c->s, j);
}

int gwc_send_continue(al_gw_conn *c, req_ctx *r, bool expect)
{
  if (!expect || gwc_write_all(c->cs, "HTTP/1.1 100 Continue\r\n\r\n", 25) >= 0)
    return 0;
  r->reason = "client-gone";
  gwc_log_request(c, r);
  return -1;
}

void gwc_log_conn(al_gw_conn *c, const char *reason, const char *detail)
{
  json_t *j = json_object();
  json_object_set_new(j, "event", json_string("tls"));
  json_object_set_new(j, "conn", json_integer((json_int_t)c->m.conn_id));
  json_object_set_new(j, "client", json_string(c->m.client));
  json_object_set_new(j, "host", json_string(c->m.host));
  json_object_set_new(j, "port", json_integer(c->m.port));
  json_object_set_new(j, "decision", json_string("deny"));
  json_object_set_new(j, "reason", json_string(reason));
  if (detail)
    json_object_set_new(j, "detail", json_string(detail));
  al_gw_decision(c->s, j);
}

/* ---- answers of the gateway itself ---- */

/* Answer status with a body saying why (refusal.h: JSON {"message",
 * "documentation_url"} for the API, text/plain for git, which prints it
 * as "remote: ..."), X-Airlock-Deny: reason, and log. */
void gwc_refuse(al_gw_conn *c, req_ctx *r, int status, const char *reason, bool close)
{
  char body[1024], head[768];
  r->status = status;
  r->reason = reason;
  bool git = al_gw_path_is_git(r->path);
  size_t bl = 0;
  if (git) {
    bl = al_gw_refusal_text(&c->s->rules, reason, r->method, r->path, body, sizeof body - 1);
    body[bl++] = '\n';
  } else {
    bl = al_gw_refusal_json(&c->s->rules, reason, r->method, r->path, body, sizeof body);
  }
  int hl = snprintf(head, sizeof head,
                    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                    "X-Airlock-Deny: %s\r\n%sContent-Length: %zu\r\n%s\r\n",
                    status, al_http_reason(status),
                    git ? "text/plain; charset=utf-8" : "application/json; charset=utf-8", reason,
                    status == 401 ? "WWW-Authenticate: Basic realm=\"airlock\"\r\n" : "", bl,
                    close ? "Connection: close\r\n" : "");
  if (hl > 0 && bl > 0 && (size_t)hl + bl < WB_CAP) {
    memcpy(c->wb, head, (size_t)hl);
    memcpy(c->wb + hl, body, bl);
    (void)gwc_write_all(c->cs, c->wb, (size_t)hl + bl);
  }
  gwc_log_request(c, r);
}

/* ---- the request ---- */

/* A body the gateway reads as JSON (and rewrites): the forge is told it
 * is JSON by the gateway, never by the agent. A forge that also takes
 * form fields (GitLab: Rack's params, private_token among them) would
 * otherwise read `{"body":"x&body=%2Fmerge&private_token=..."}` sent as
 * application/x-www-form-urlencoded as fields the checks never saw. */
static bool json_body(al_gw_body body)
{
  return body == AL_GW_BODY_COMMENT || body == AL_GW_BODY_GRAPHQL ||
         body == AL_GW_BODY_JIRA_COMMENT || body == AL_GW_BODY_LINEAR_GRAPHQL;
}

/* identity: the answer must come uncompressed (the GitLab receive-pack
 * advertisement, whose capabilities the gateway reads: conn_glpush.c), so
 * the client's Accept-Encoding is not passed on. */
static bool keep_header(const al_http_header *h, al_gw_body body, bool identity)
{
  if (json_body(body) && al_http_header_is(h, "content-type"))
    return false;
  if (identity && al_http_header_is(h, "accept-encoding"))
    return false;
  static const char *const keep[] = {
      "accept",        "accept-encoding",   "accept-language",      "user-agent",
      "content-type",  "git-protocol",      "cache-control",        "pragma",
      "if-none-match", "if-modified-since", "x-github-api-version", NULL};
  for (size_t i = 0; keep[i]; i++)
    if (al_http_header_is(h, keep[i]))
      return true;
  return body == AL_GW_BODY_PASS && al_http_header_is(h, "content-encoding");
}

/* A GitLab request target: origin-form, split at the first '?'; the path
 * is kept raw (al_gw_gl_match reads it strictly, its encoded segments
 * included), the query must hold no "%00" and no '#' (as
 * al_gw_target_parse's). */
static int gl_target_split(const char *t, size_t len, req_ctx *r, const char **why)
{
  const char *qm = memchr(t, '?', len);
  size_t pl = qm ? (size_t)(qm - t) : len;
  if (pl == 0 || t[0] != '/') {
    *why = "target-not-origin-form";
    return -1;
  }
  if (pl >= AL_GW_PATH_MAX) {
    *why = "target-too-long";
    return -1;
  }
  for (size_t i = 0; i < len; i++)
    if (t[i] == '#' || (unsigned char)t[i] < 0x21 || (unsigned char)t[i] > 0x7e ||
        (qm && t + i > qm && i + 2 < len && t[i] == '%' && t[i + 1] == '0' && t[i + 2] == '0')) {
      *why = i < pl ? "target-not-origin-form" : "query-nul";
      return -1;
    }
  memcpy(r->path, t, pl);
  r->path[pl] = '\0';
  r->query = qm ? qm + 1 : NULL;
  r->qlen = qm ? len - pl - 1 : 0;
  return 0;
}

const al_http_header *gwc_find_header(const al_http_request *q, const char *lname)
{
  for (size_t i = 0; i < q->n_headers; i++)
    if (al_http_header_is(&q->headers[i], lname))
      return &q->headers[i];
  return NULL;
}

/* Build the upstream head into a malloc'd buffer (it holds a token: the
 * caller wipes and frees it). */
char *gwc_build_head(al_gw_conn *c, const al_http_request *q, req_ctx *r, bool chunked, int64_t cl,
                     size_t *len)
{
  al_gw_server *s = c->s;
  size_t cap = 1024 + q->head_len + strlen(s->git_token) * 2 + strlen(s->ticket_token) * 2 +
               (s->tk_auth ? strlen(s->tk_auth) : 0) + (r->fwdq_len > 0 ? (size_t)r->fwdq_len : 0);
  char *h = malloc(cap);
  if (!h)
    return NULL;
  size_t n = 0;
#define PUT(...) n += (size_t)snprintf(h + n, cap - n, __VA_ARGS__)
  PUT("%s %s%s%s HTTP/1.1\r\n", r->method, r->path, r->fwdq_len > 0 ? "?" : "",
      r->fwdq_len > 0 ? r->fwdq : "");
  if (c->m.port == 443)
    PUT("Host: %s\r\n", c->m.host);
  else if (strchr(c->m.host, ':'))
    PUT("Host: [%s]:%u\r\n", c->m.host, c->m.port);
  else
    PUT("Host: %s:%u\r\n", c->m.host, c->m.port);
  for (size_t i = 0; i < q->n_headers; i++) {
    const al_http_header *f = &q->headers[i];
    if (keep_header(f, r->rule->body, r->rp_advert))
      PUT("%.*s: %.*s\r\n", (int)f->name_len, f->name, (int)f->value_len, f->value);
  }
  if (json_body(r->rule->body))
    PUT("Content-Type: application/json\r\n");
  if (r->rule->sides & AL_GW_SIDE_TICKET) {
    /* the vendor credential in the form its vendor takes (gateway.c) */
    PUT("Authorization: %s\r\n", s->tk_auth);
  } else if (r->rule->sides & AL_GW_SIDE_GIT) {
    /* git over HTTPS with an installation token: Basic x-access-token:TOKEN */
    char cred[4096];
    int cl2 = snprintf(cred, sizeof cred, "x-access-token:%s", s->git_token);
    unsigned char b64[6000];
    int bl = cl2 > 0 && (size_t)cl2 < sizeof cred
                 ? EVP_EncodeBlock(b64, (const unsigned char *)cred, cl2)
                 : 0;
    PUT("Authorization: Basic %.*s\r\n", bl, (const char *)b64);
    OPENSSL_cleanse(cred, sizeof cred);
    OPENSSL_cleanse(b64, sizeof b64);
  } else {
    const char *tok = r->rule->token == AL_GW_TOKEN_TICKET ? s->ticket_token : s->git_token;
    PUT("Authorization: Bearer %s\r\n", tok);
  }
  if (chunked)
    PUT("Transfer-Encoding: chunked\r\n");
  else if (cl >= 0 && (cl > 0 || strcmp(r->method, "POST") == 0))
    PUT("Content-Length: %lld\r\n", (long long)cl);
  PUT("\r\n");
#undef PUT
  if (n >= cap) {
    OPENSSL_cleanse(h, cap);
    free(h);
    return NULL;
  }
  *len = n;
  return h;
}

void gwc_free_head(char *h, size_t n)
{
  if (h) {
    OPENSSL_cleanse(h, n);
    free(h);
  }
}

/* Read up to cap decoded body bytes into out. Returns bytes (> 0), 0 at the
 * end of the body, -1 on a framing error (*why) or a dead client. */
ssize_t gwc_body_read(al_gw_conn *c, body_src *b, char *out, size_t cap, const char **why)
{
  for (;;) {
    if (b->done)
      return 0;
    if (!b->chunked && b->left == 0) {
      b->done = true;
      return 0;
    }
    if (c->rb_off == c->rb_len) {
      int f = gwc_c_fill(c);
      if (f <= 0) {
        *why = f == 0 ? "client-closed-in-body" : "client-error-in-body";
        return -1;
      }
    }
    size_t avail = c->rb_len - c->rb_off;
    if (avail > cap)
      avail = cap;
    if (!b->chunked) {
      if ((uint64_t)avail > b->left)
        avail = (size_t)b->left;
      memcpy(out, c->rb + c->rb_off, avail);
      c->rb_off += avail;
      b->left -= avail;
      return (ssize_t)avail;
    }
    size_t in = avail, got = 0;
    int r = al_chunked_decode(&b->ch, c->rb + c->rb_off, &in, out, &got, why);
    if (r < 0)
      return -1;
    c->rb_off += in;
    if (r == 1)
      b->done = true;
    if (got > 0)
      return (ssize_t)got;
  }
}

/* network.egress_budget, shared with the proxy (gateway.h): true when n
 * more bytes may go to the forge, and then they are counted. */
bool gwc_egress_take(al_gw_server *s, uint64_t n)
{
  if (!s->egress_used)
    return true;
  uint64_t used = __atomic_add_fetch(s->egress_used, n, __ATOMIC_RELAXED);
  return !s->egress_budget || used <= s->egress_budget;
}

bool gwc_egress_spent(const al_gw_server *s)
{
  return s->egress_used && s->egress_budget &&
         __atomic_load_n(s->egress_used, __ATOMIC_RELAXED) >= s->egress_budget;
}

/* Send decoded body bytes upstream, framed. data must sit at wb + 32. */
int gwc_send_up(al_gw_conn *c, bool chunked, size_t n)
{
  char *data = c->wb + 32;
  if (!chunked)
    return gwc_write_all(c->us, data, n);
  char hdr[20];
  size_t hl = al_chunk_header(n, hdr);
  memcpy(data - hl, hdr, hl);
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result): wire bytes, not a C string
  memcpy(data + n, "\r\n", 2);
  return gwc_write_all(c->us, data - hl, hl + n + 2);
}

/* Bytes of a refused push's pack read (and dropped) after its report, so
 * that the close does not reset the connection under git's feet; past
 * this the connection is closed anyway. */
#define PUSH_DRAIN_MAX (512ull << 20)

/* A push refused by its commands (al_gw_check_push): the rest of the body
 * (the pack) is read to its end and dropped first (git's remote-curl
 * feeds send-pack's whole output to the request; answered early, curl
 * ends the upload and the leftover corrupts git's status), then, when git
 * asked for report-status, the answer is 200 with the report-status git
 * prints as "! [remote rejected] REF (airlock: ...)" (refusal.h), else
 * 403 with the text. The connection is closed. Nothing goes upstream. */
static void refuse_push(al_gw_conn *c, req_ctx *r, body_src *b, const char *reason, size_t bad)
{
  uint64_t drained = 0;
  const char *why = NULL;
  ssize_t k = 1;
  while (drained < PUSH_DRAIN_MAX && (k = gwc_body_read(c, b, c->wb + 32, STREAM_CHUNK, &why)) > 0)
    drained += (uint64_t)k;
  char *rep = malloc(AL_GW_RP_REPORT_MAX);
  size_t n = rep ? al_gw_rp_report(&c->s->rules, r->rp, reason, bad, rep, AL_GW_RP_REPORT_MAX) : 0;
  if (n == 0) {
    free(rep);
    gwc_refuse(c, r, 403, reason, true);
    return;
  }
  r->status = 200;
  r->reason = reason;
  r->denied = true;
  r->detail = k == 0 ? "report-status" : "report-status, pack not read to its end";
  char head[512];
  int hl = snprintf(head, sizeof head,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-receive-pack-result\r\n"
                    "Cache-Control: no-cache\r\nX-Airlock-Deny: %s\r\nContent-Length: %zu\r\n"
                    "Connection: close\r\n\r\n",
                    reason, n);
  if (hl > 0 && (size_t)hl < sizeof head && gwc_write_all(c->cs, head, (size_t)hl) == 0)
    (void)gwc_write_all(c->cs, rep, n);
  free(rep);
  gwc_log_request(c, r);
}

/* One request, from its head to the end of its answer. Returns 0 to read
 * the next request, 1 to close the connection. */
int gwc_serve_request(al_gw_conn *c)
{
  al_gw_server *s = c->s;
  req_ctx r_, *r = &r_;
  al_http_request q;
  const char *why = NULL;

  memset(r, 0, sizeof *r);
  r->t0 = al_now_ms();
  /* compact: the head parser wants the head at the start of a buffer */
  if (c->rb_off > 0) {
    memmove(c->rb, c->rb + c->rb_off, c->rb_len - c->rb_off);
    c->rb_len -= c->rb_off;
    c->rb_off = 0;
  }
  int h;
  while ((h = al_http_parse_head(c->rb, c->rb_len, &q, &why)) == 0) {
    int f = gwc_c_fill(c);
    if (f <= 0) {
      if (c->rb_len > 0) {
        r->reason = f == 0 ? "client-closed-in-head" : "client-error-in-head";
        gwc_log_request(c, r);
      }
      return 1;
    }
  }
  if (h < 0) {
    gwc_refuse(c, r,
               strcmp(why, "head-too-large") == 0 || strcmp(why, "too-many-headers") == 0 ? 431
                                                                                          : 400,
               why, true);
    return 1;
  }
  c->n_requests++;
  /* the head is consumed; q points into rb until the next read into it */
  c->rb_off = q.head_len;
  snprintf(r->method, sizeof r->method, "%.*s", (int)(q.method_len < 20 ? q.method_len : 20),
           q.method);
  r->version_minor = q.version_minor;
  if (s->gitlab && !(c->sides & AL_GW_SIDE_TICKET)
          ? gl_target_split(q.target, q.target_len, r, &why) < 0
          : al_gw_target_parse(q.target, q.target_len, r->path, &r->query, &r->qlen, &why) < 0) {
    gwc_refuse(c, r, 400, why, true);
    return 1;
  }
  /* GHE-style /api/v3/... and /api/graphql: matched as the rules' paths
   * (apipath.h); forwarded as sent */
  char mpath[AL_GW_PATH_MAX];
  unsigned msides = al_gw_api_path_map(c->sides, s->rules.api_prefix, r->path, mpath);
  /* the query, read once by the one decoder: the credential check, the
   * rules and the record use this reading, and the forge gets it
   * re-encoded, never the agent's spelling */
  const al_gw_qparams *qp = NULL;
  if (r->query) {
    (void)al_gw_query_decode(r->query, r->qlen, &r->qp);
    qp = &r->qp;
    al_gw_query_log(qp, r->qlog, sizeof r->qlog);
    r->fwdq_len = al_gw_query_canon(qp, r->fwdq, sizeof r->fwdq);
  }
  const al_http_header *conn_h = gwc_find_header(&q, "connection");
  if (q.version_minor == 0)
    r->client_close = !(conn_h && strncasecmp(conn_h->value, "keep-alive", 10) == 0);
  else if (conn_h) {
    for (size_t i = 0; i + 5 <= conn_h->value_len; i++)
      if (strncasecmp(conn_h->value + i, "close", 5) == 0)
        r->client_close = true;
  }
  /* Host must name the CONNECT host */
  al_host hh;
  uint16_t hp;
  if (!q.host) {
    if (q.version_minor == 1) {
      gwc_refuse(c, r, 400, "host-missing", true);
      return 1;
    }
  } else if (al_http_host_value(q.host->value, q.host->value_len, 443, &hh, &hp, &why) < 0 ||
             strcmp(hh.name, c->m.host) != 0 || hp != c->m.port) {
    gwc_refuse(c, r, 400, "host-mismatch", true);
    return 1;
  }
  bool has_body = q.chunked || q.content_length > 0;
  bool close_on_refuse = has_body || r->client_close;
  const al_http_header *expect = gwc_find_header(&q, "expect");
  if (expect && !(expect->value_len == 12 && strncasecmp(expect->value, "100-continue", 12) == 0)) {
    gwc_refuse(c, r, 417, "expect-unsupported", true);
    return 1;
  }
  if (q.version_minor == 1 && strcmp(r->method, "POST") == 0 && !q.chunked &&
      q.content_length < 0) {
    gwc_refuse(c, r, 411, "length-required", true);
    return 1;
  }
  /* credential, then rule */
  const char *cwhy = NULL;
  const char *param = NULL;
  al_gw_cred cred;
  if (c->sides & AL_GW_SIDE_TICKET) {
    /* the ticket host: the placeholder only, then Jira's or Linear's rules */
    cred = al_gw_credential_q(&q, qp, s->placeholder, &cwhy);
    r->rule = gwc_ticket_match(c, r, qp, &param);
  } else if (s->gitlab) {
    /* GitLab's table reads the raw path (its encoded {project}, {file},
     * {branch} segments), after the API or git URL's own prefix */
    cred = al_gw_gl_credential(&q, qp, s->placeholder, &cwhy);
    r->rule = al_gw_gl_match(&s->gl, c->sides, r->method, strlen(r->method), r->path,
                             strlen(r->path), qp, &r->reason, &param);
  } else {
    cred = al_gw_credential_q(&q, qp, s->placeholder, &cwhy);
    r->rule = al_gw_match_q(&s->rules, msides, r->method, strlen(r->method), mpath, qp, &r->reason,
                            &param);
  }
  const al_gw_rule *rule = r->rule;
  const char *sv = NULL;
  size_t svl = 0;
  r->rp_advert = s->gitlab && rule && strcmp(rule->name, "git-info-refs") == 0 && r->query &&
                 al_gw_query_param(r->query, r->qlen, "service", &sv, &svl) == 1 && svl == 16 &&
                 memcmp(sv, "git-receive-pack", 16) == 0;
  if (!rule && param) {
    /* a query refusal names the parameter: "query-param-refused: NAME" */
    char name[AL_GW_QUERY_NAME_MAX + 1];
    al_gw_query_printable(param, name, sizeof name);
    snprintf(r->reason_buf, sizeof r->reason_buf, "%s: %s", r->reason, name);
    r->reason = r->reason_buf;
  }
  if (cred == AL_GW_CRED_FOREIGN) {
    r->rule = NULL;
    gwc_refuse(c, r, 403, cwhy, close_on_refuse);
    return close_on_refuse;
  }
  if (!rule && !s->gitlab && (msides & AL_GW_SIDE_API) && strcmp(r->method, "POST") == 0 &&
      al_gw_api_path_is_graphql(s->rules.api_prefix, mpath))
    return gwc_serve_graphql(c, r, &q, cred, close_on_refuse,
                             gwc_find_header(&q, "expect") != NULL); /* graphql.h */
  if (!rule) {
    gwc_refuse(c, r, 403, r->reason, close_on_refuse);
    return close_on_refuse;
  }
  if (cred == AL_GW_CRED_NONE) {
    /* never forwarded: git asks its credential helper and retries */
    r->rule = NULL;
    gwc_refuse(c, r, 401, "credential-missing", close_on_refuse);
    return close_on_refuse;
  }
  if (rule->body == AL_GW_BODY_NONE && has_body) {
    r->rule = NULL;
    gwc_refuse(c, r, 400, "body-not-allowed", true);
    return 1;
  }
  if (rule->body != AL_GW_BODY_PASS && gwc_find_header(&q, "content-encoding")) {
    /* a body the rule reads (or forwards without the field) must be plain */
    r->rule = NULL;
    gwc_refuse(c, r, 415, "content-encoding-refused", true);
    return 1;
  }
  if (rule->body == AL_GW_BODY_COMMENT || rule->body == AL_GW_BODY_JIRA_COMMENT)
    return gwc_serve_comment(c, r, &q, expect != NULL, close_on_refuse);
  if (rule->body == AL_GW_BODY_LINEAR_GRAPHQL)
    return gwc_serve_linear(c, r, &q, expect != NULL); /* conn_ticket.c */
  /* the request is allowed by its head; the run's egress budget is not
   * (the proxy's and this gateway's bytes, one counter) */
  if (gwc_egress_spent(s)) {
    r->rule = NULL;
    gwc_refuse(c, r, 403, "egress-budget", true);
    return 1;
  }
  if (gwc_upstream_gone(c))
    return 1; /* the forge closed the idle connection: the client retries on a new one */
  size_t head_len = 0;
  /* a GitLab push is rewritten (ci.skip): its length is known only later */
  bool up_chunked = q.chunked || (s->gitlab && rule->body == AL_GW_BODY_RECEIVE_PACK);
  char *uhead = gwc_build_head(c, &q, r, up_chunked, q.content_length, &head_len);
  /* q's pointers are dead after the first body read */
  if (!uhead) {
    gwc_refuse(c, r, 400, "head-too-large", true);
    return 1;
  }
  if (gwc_send_continue(c, r, expect) < 0) {
    gwc_free_head(uhead, head_len);
    return 1;
  }
  body_src b = {.chunked = q.chunked,
                .left = q.content_length > 0 ? (uint64_t)q.content_length : 0};
  al_chunked_init(&b.ch);
  char *rpbuf = NULL;
  size_t rplen = 0;
  if (rule->body == AL_GW_BODY_RECEIVE_PACK) {
    /* read the update request, check every command, then forward */
    r->rp = calloc(1, sizeof *r->rp);
    rpbuf = malloc(AL_RP_REQUEST_MAX + STREAM_CHUNK);
    int pr = 0;
    while (r->rp && rpbuf) {
      pr = al_rp_parse(rpbuf, rplen, r->rp, &why);
      if (pr != 0)
        break;
      if (rplen >= AL_RP_REQUEST_MAX) {
        pr = -1;
        why = "rp-commands-too-long";
        break;
      }
      ssize_t k = gwc_body_read(c, &b, rpbuf + rplen, STREAM_CHUNK, &why);
      if (k <= 0) {
        pr = -1;
        why = k == 0 ? "rp-truncated" : why;
        break;
      }
      rplen += (size_t)k;
      r->up += (uint64_t)k;
    }
    if (pr < 0 && rplen == 4 && memcmp(rpbuf, "0000", 4) == 0 &&
        strcmp(why, "rp-no-commands") == 0) {
      /* A body of one flush is git's probe before a large chunked push
       * (remote-curl.c probe_rpc: it reads only the status). Answered
       * here, never forwarded. */
      char extra[8];
      const char *ewhy = NULL;
      if (gwc_body_read(c, &b, extra, sizeof extra, &ewhy) == 0) {
        static const char ok[] = "HTTP/1.1 200 OK\r\n"
                                 "Content-Type: application/x-git-receive-pack-result\r\n"
                                 "Cache-Control: no-cache\r\nContent-Length: 0\r\n\r\n";
        gwc_free_head(uhead, head_len);
        free(rpbuf);
        r->rp->n_cmds = 0;
        r->status = 200;
        r->reason = "receive-pack-probe";
        int w = gwc_write_all(c->cs, ok, sizeof ok - 1);
        gwc_log_request(c, r);
        free(r->rp);
        return w < 0 || r->client_close;
      }
    }
    const char *pwhy = NULL;
    size_t bad = 0;
    if (!r->rp || !rpbuf || pr < 0 || al_gw_check_push(&s->rules, r->rp, &pwhy, &bad) < 0 ||
        (s->gitlab && gwc_gl_add_ci_skip(s, &rpbuf, &rplen, (size_t)pr, &pwhy) < 0)) {
      bool parsed = r->rp && rpbuf && pr >= 0;
      gwc_free_head(uhead, head_len);
      free(rpbuf);
      if (r->rp && pr < 0)
        r->rp->n_cmds = 0; /* a half-parsed list says nothing */
      if (parsed)
        refuse_push(c, r, &b, pwhy, bad);
      else
        gwc_refuse(c, r, 403, r->rp && pr < 0 ? why : "out-of-memory", true);
      free(r->rp);
      return 1;
    }
  }
  const char *updetail = NULL;
  if (gwc_upstream_open(c, &updetail) < 0) {
    gwc_free_head(uhead, head_len);
    free(rpbuf);
    r->detail = updetail;
    gwc_refuse(c, r, 502, "upstream-tls", true);
    free(r->rp);
    return 1;
  }
  if (!gwc_egress_take(s, head_len)) {
    gwc_free_head(uhead, head_len);
    free(rpbuf);
    gwc_refuse(c, r, 403, "egress-budget", true);
    free(r->rp);
    return 1;
  }
  int w = gwc_write_all(c->us, uhead, head_len);
  gwc_free_head(uhead, head_len);
  if (w < 0) {
    free(rpbuf);
    c->up_dead = true;
    gwc_refuse(c, r, 502, "upstream-write", true);
    free(r->rp);
    return 1;
  }
  /* the body: what the push check read first, then the rest streamed */
  int ret = 0;
  size_t done_rp = 0;
  for (;;) {
    size_t n;
    if (rpbuf && done_rp < rplen) {
      n = rplen - done_rp > STREAM_CHUNK ? STREAM_CHUNK : rplen - done_rp;
      memcpy(c->wb + 32, rpbuf + done_rp, n);
      done_rp += n;
    } else {
      ssize_t k = gwc_body_read(c, &b, c->wb + 32, STREAM_CHUNK, &why);
      if (k < 0) {
        /* the forge got a cut body; it cannot be answered sensibly */
        r->reason = why;
        r->status = 0;
        gwc_log_request(c, r);
        free(rpbuf);
        free(r->rp);
        c->up_dead = true;
        return 1;
      }
      if (k == 0)
        break;
      n = (size_t)k;
      r->up += n;
    }
    if (!gwc_egress_take(s, n)) {
      /* the budget ends here: the forge gets a cut body and the connection
       * goes; the agent's connection is answered by nothing more */
      free(rpbuf);
      c->up_dead = true;
      r->rule = NULL; /* a deny: the rest of the request never left */
      r->reason = "egress-budget";
      r->status = 0;
      gwc_log_request(c, r);
      free(r->rp);
      return 1;
    }
    if (gwc_send_up(c, up_chunked, n) < 0) {
      free(rpbuf);
      c->up_dead = true;
      r->reason = "upstream-write";
      r->status = 0;
      gwc_log_request(c, r);
      free(r->rp);
      return 1;
    }
  }
  free(rpbuf);
  if (up_chunked && gwc_write_all(c->us, "0\r\n\r\n", 5) < 0) {
    c->up_dead = true;
    gwc_refuse(c, r, 502, "upstream-write", true);
    free(r->rp);
    return 1;
  }
  r->reason = rule->name;
  int rr = gwc_relay_response(c, r);
  gwc_log_request(c, r); /* once: a refusal on the way has logged already */
  free(r->rp);
  ret = rr != 0 || c->up_dead;
  return ret;
}
