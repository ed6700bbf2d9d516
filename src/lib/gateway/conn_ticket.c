/* A request to the ticket system's host (Jira, Linear; issue #31,
 * docs/gateway.md "The ticket host"): which rule of rules_tickets.h it
 * falls under, and Linear's GraphQL body, read whole, decided, its one
 * commentCreate held against the comment budget and rewritten by the
 * safe-text rules before a byte goes upstream. Jira's reads go the forge's
 * way (conn_request.c), its comment through the forge's comment path with
 * Jira's rewrite (al_gw_jira_comment_rewrite). The credential check is the
 * forge's: the placeholder only; the vendor credential is put upstream by
 * gwc_build_head. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/comment.h"
#include "gateway/conn_int.h"
#include "gateway/graphql.h"
#include "gateway/rules_tickets.h"

const al_gw_rule *gwc_ticket_match(al_gw_conn *c, req_ctx *r, const al_gw_qparams *qp,
                                   const char **param)
{
  const al_gw_tk_rules *t = &c->s->tk;
  if (t->kind == 1)
    return al_gw_jira_match(t, r->method, strlen(r->method), r->path, qp, &r->reason, param);
  return al_gw_linear_match(t, r->method, strlen(r->method), r->path, qp, &r->reason, param);
}

/* Frame head (built without framing: it ends in CRLF CRLF) with the
 * body's Content-Length and send both upstream. Returns 0, or a refusal's
 * status with *reason (and *detail for the TLS). */
static int send_whole(al_gw_conn *c, const char *uhead, size_t head_len, const char *body,
                      size_t len, const char **reason, const char **detail)
{
  al_gw_server *s = c->s;
  size_t cap = head_len + 48;
  char *head = malloc(cap);
  int hl =
      head ? snprintf(head, cap, "%.*sContent-Length: %zu\r\n\r\n", (int)(head_len - 2), uhead, len)
           : -1;
  int st = 0;
  if (hl < 0) {
    st = 500;
    *reason = "out-of-memory";
  } else if (gwc_upstream_open(c, detail) < 0) {
    st = 502;
    *reason = "upstream-tls";
  } else if (!gwc_egress_take(s, (uint64_t)hl + len)) {
    st = 403;
    *reason = "egress-budget";
  } else if (gwc_write_all(c->us, head, (size_t)hl) < 0 || gwc_write_all(c->us, body, len) < 0) {
    c->up_dead = true;
    st = 502;
    *reason = "upstream-write";
  }
  gwc_free_head(head, cap);
  return st;
}

int gwc_serve_linear(al_gw_conn *c, req_ctx *r, const al_http_request *q, bool expect)
{
  al_gw_server *s = c->s;
  if (!q->chunked && q->content_length > AL_GQL_BODY_MAX) {
    r->rule = NULL;
    gwc_refuse(c, r, 413, "graphql-refused: too-large", true);
    return 1;
  }
  if (gwc_egress_spent(s)) {
    r->rule = NULL;
    gwc_refuse(c, r, 403, "egress-budget", true);
    return 1;
  }
  if (gwc_upstream_gone(c))
    return 1; /* before the body is read: the client retries on a new connection */
  /* the head now (q's pointers die at the first body read); both rules
   * inject the same credential */
  size_t head_len = 0;
  char *uhead = gwc_build_head(c, q, r, false, -1, &head_len);
  if (!uhead) {
    r->rule = NULL;
    gwc_refuse(c, r, 400, "head-too-large", true);
    return 1;
  }
  if (gwc_send_continue(c, r, expect) < 0) {
    gwc_free_head(uhead, head_len);
    return 1;
  }
  const char *why = NULL;
  size_t len = 0;
  char *body = gwc_read_whole_body(c, q, &len, &why);
  if (!body || len > AL_GQL_BODY_MAX) {
    gwc_free_head(uhead, head_len);
    free(body);
    r->rule = NULL;
    bool big = body || strcmp(why, "body-too-large") == 0;
    gwc_refuse(c, r, big ? 413 : 400, big ? "graphql-refused: too-large" : why, true);
    return 1;
  }
  al_gw_linear_info info;
  char where[80] = "";
  const char *gwhy = NULL;
  if (al_gw_linear_check(&s->tk, body, len, &info, &gwhy, where) < 0) {
    gwc_free_head(uhead, head_len);
    free(body);
    r->rule = NULL;
    r->detail = where[0] ? where : NULL;
    /* the body was read to its end: the connection may go on */
    gwc_refuse(c, r, 403, gwhy, r->client_close);
    return r->client_close;
  }
  char *out = body;
  size_t out_len = len;
  if (info.comment) {
    r->rule = &al_gw_linear_rule_comment;
    if (!gwc_comment_hold(s)) {
      gwc_free_head(uhead, head_len);
      free(body);
      r->rule = NULL;
      gwc_refuse(c, r, 403, "comment-budget", r->client_close);
      return r->client_close;
    }
    struct al_safetext_counts n;
    memset(&n, 0, sizeof n);
    const char *const hosts[] = {s->git_host, s->api_host, NULL};
    out = NULL;
    if (al_gw_linear_comment_rewrite(body, len, &info, hosts, &out, &out_len, &n, &gwhy) < 0) {
      gwc_free_head(uhead, head_len);
      free(body);
      gwc_comment_release(s, false);
      r->rule = NULL;
      gwc_refuse(c, r, 400, gwhy, r->client_close);
      return r->client_close;
    }
    free(body);
    snprintf(r->detail_buf, sizeof r->detail_buf,
             "rewritten: html=%zu entities=%zu links=%zu images=%zu mentions=%zu keywords=%zu "
             "controls=%zu%s",
             n.html, n.entities, n.links, n.images, n.mentions, n.keywords, n.controls,
             n.truncated ? " truncated" : "");
    r->detail = r->detail_buf;
  }
  const char *reason = NULL, *detail = NULL;
  int st = send_whole(c, uhead, head_len, out, out_len, &reason, &detail);
  gwc_free_head(uhead, head_len);
  free(out);
  if (st) {
    if (info.comment)
      gwc_comment_release(s, false);
    r->detail = detail;
    gwc_refuse(c, r, st, reason, true);
    return 1;
  }
  r->up = out_len;
  r->reason = r->rule->name;
  int rr = gwc_relay_response(c, r);
  /* Linear answers a refused mutation 200 with `errors`: any 2xx spends */
  if (info.comment)
    gwc_comment_release(s, r->status >= 200 && r->status < 300);
  gwc_log_request(c, r);
  return rr != 0 || c->up_dead;
}
