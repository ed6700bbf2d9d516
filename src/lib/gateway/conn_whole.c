/* The requests decided on their whole body before a byte of it goes
 * upstream (split from conn_request.c): an agent comment (AL_GW_BODY_COMMENT,
 * issue #26), held against max_comments, read whole and rewritten by the
 * safe-text rules, and a POST to the API's GraphQL endpoint (graphql.h),
 * read whole and decided. The body is read as the client framed it
 * (gwc_body_read, conn_request.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/comment.h"
#include "gateway/conn_int.h"
#include "gateway/graphql.h"
#include "gateway/rules_tickets.h"
#include "net/chunked.h"

/* ---- an agent comment (AL_GW_BODY_COMMENT, issue #26) ---- */

/* Take one unit of max_comments for a comment in flight (false when the
 * spent and the in-flight ones fill it), and give it back: spent when the
 * forge accepted the comment (2xx), free again otherwise. */
bool gwc_comment_hold(al_gw_server *s)
{
  pthread_mutex_lock(&s->mu);
  bool ok = s->comments_used + s->comments_inflight < s->rules.max_comments;
  if (ok)
    s->comments_inflight++;
  pthread_mutex_unlock(&s->mu);
  return ok;
}

void gwc_comment_release(al_gw_server *s, bool accepted)
{
  pthread_mutex_lock(&s->mu);
  s->comments_inflight--;
  if (accepted)
    s->comments_used++;
  pthread_mutex_unlock(&s->mu);
}

/* Read the whole request body (at most AL_GW_COMMENT_BODY_MAX bytes, as
 * the client framed it) into a malloc'd buffer. Returns it with *len, or
 * NULL with *why: a framing reason (al_chunked_decode's, "client-closed-in-
 * body"), "body-too-large", "out-of-memory". */
char *gwc_read_whole_body(al_gw_conn *c, const al_http_request *q, size_t *len, const char **why)
{
  body_src b = {.chunked = q->chunked,
                .left = q->content_length > 0 ? (uint64_t)q->content_length : 0};
  al_chunked_init(&b.ch);
  char *buf = malloc(AL_GW_COMMENT_BODY_MAX + 1);
  size_t n = 0;
  if (!buf) {
    *why = "out-of-memory";
    return NULL;
  }
  for (;;) {
    /* one byte of room more than the cap, to see a body that passes it */
    ssize_t k = gwc_body_read(c, &b, buf + n, AL_GW_COMMENT_BODY_MAX + 1 - n, why);
    if (k == 0)
      break;
    if (k < 0 || n + (size_t)k > AL_GW_COMMENT_BODY_MAX) {
      if (k > 0)
        *why = "body-too-large";
      free(buf);
      return NULL;
    }
    n += (size_t)k;
  }
  *len = n;
  return buf;
}

/* A comment: held against the budget, its body read whole and its framing
 * checked, then read as {"body": STRING} (comment.h), before its head
 * goes upstream with a Content-Length of what is sent. A refusal on the
 * way is a deny with its reason, and nothing reaches the forge. Returns
 * as gwc_serve_request. */
int gwc_serve_comment(al_gw_conn *c, req_ctx *r, const al_http_request *q, bool expect,
                      bool close_on_refuse)
{
  al_gw_server *s = c->s;
  if (q->content_length > AL_GW_COMMENT_BODY_MAX) {
    gwc_refuse(c, r, 413, "body-too-large", true);
    return 1;
  }
  if (!gwc_comment_hold(s)) {
    r->rule = NULL;
    gwc_refuse(c, r, 403, "comment-budget", close_on_refuse);
    return close_on_refuse;
  }
  if (gwc_egress_spent(s)) {
    gwc_comment_release(s, false);
    r->rule = NULL;
    gwc_refuse(c, r, 403, "egress-budget", true);
    return 1;
  }
  if (gwc_upstream_gone(c)) {
    gwc_comment_release(s, false);
    return 1; /* before the body is read: the client retries on a new connection */
  }
  /* the head now (q's pointers die at the first body read), its framing
   * once the body is known: build_head without one ends in CRLF CRLF */
  size_t head_len = 0;
  char *uhead = gwc_build_head(c, q, r, false, -1, &head_len);
  if (!uhead) {
    gwc_comment_release(s, false);
    gwc_refuse(c, r, 400, "head-too-large", true);
    return 1;
  }
  if (gwc_send_continue(c, r, expect) < 0) {
    gwc_free_head(uhead, head_len);
    gwc_comment_release(s, false);
    return 1;
  }
  const char *why = NULL;
  size_t in_len = 0;
  char *in = gwc_read_whole_body(c, q, &in_len, &why);
  char *out = NULL, bad[AL_GW_COMMENT_NAME_MAX + 1];
  size_t out_len = 0;
  int status = 400;
  struct al_safetext_counts n;
  const char *const hosts[] = {s->git_host, s->api_host, NULL};
  memset(&n, 0, sizeof n);
  if (!in) {
    status = strcmp(why, "body-too-large") == 0 ? 413 : 400;
  } else if ((r->rule->body == AL_GW_BODY_JIRA_COMMENT
                  ? al_gw_jira_comment_rewrite(in, in_len, hosts, &out, &out_len, &n, &why, bad)
                  : al_gw_comment_rewrite(in, in_len, hosts, &out, &out_len, &n, &why, bad)) < 0) {
    if (bad[0]) {
      snprintf(r->reason_buf, sizeof r->reason_buf, "%s: %s", why, bad);
      why = r->reason_buf;
    }
  }
  free(in);
  if (!out) {
    gwc_free_head(uhead, head_len);
    gwc_comment_release(s, false);
    /* a framing error leaves the connection unreadable; a bad JSON body
     * was read to its end */
    bool cut = !in || r->client_close;
    gwc_refuse(c, r, status, why, cut);
    return cut ? 1 : 0;
  }
  /* the record says what the rewriter changed */
  snprintf(r->detail_buf, sizeof r->detail_buf,
           "rewritten: html=%zu entities=%zu links=%zu images=%zu mentions=%zu keywords=%zu "
           "controls=%zu%s",
           n.html, n.entities, n.links, n.images, n.mentions, n.keywords, n.controls,
           n.truncated ? " truncated" : "");
  r->detail = r->detail_buf;
  /* the head, framed */
  char *head = malloc(head_len + 48);
  int hl = head ? snprintf(head, head_len + 48, "%.*sContent-Length: %zu\r\n\r\n",
                           (int)(head_len - 2), uhead, out_len)
                : -1;
  gwc_free_head(uhead, head_len);
  const char *updetail = NULL;
  int fail = 0;
  if (hl < 0)
    fail = 1;
  else if (gwc_upstream_open(c, &updetail) < 0)
    fail = 2;
  else if (!gwc_egress_take(s, (uint64_t)hl + out_len))
    fail = 3;
  else if (gwc_write_all(c->us, head, (size_t)hl) < 0 || gwc_write_all(c->us, out, out_len) < 0)
    fail = 4;
  if (head)
    gwc_free_head(head, head_len + 48);
  free(out);
  if (fail) {
    gwc_comment_release(s, false);
    if (fail == 4)
      c->up_dead = true;
    r->detail = fail == 2 ? updetail : NULL;
    gwc_refuse(c, r, fail == 3 ? 403 : 502,
               fail == 1   ? "out-of-memory"
               : fail == 2 ? "upstream-tls"
               : fail == 3 ? "egress-budget"
                           : "upstream-write",
               true);
    return 1;
  }
  r->up = out_len;
  r->reason = r->rule->name;
  int rr = gwc_relay_response(c, r);
  gwc_comment_release(s, r->status >= 200 && r->status < 300);
  gwc_log_request(c, r);
  return rr != 0 || c->up_dead;
}

/* A POST to the API's GraphQL endpoint (graphql.h): the body is read
 * whole (at most AL_GQL_BODY_MAX), decided, and only then forwarded with
 * the token its reading needs. q's fields are used before the first body
 * read: both possible heads are built first. Returns as gwc_serve_request. */
int gwc_serve_graphql(al_gw_conn *c, req_ctx *r, const al_http_request *q, al_gw_cred cred,
                      bool close_on_refuse, bool expect)
{
  al_gw_server *s = c->s;
  if (r->query) {
    gwc_refuse(c, r, 403, "unexpected-query", true);
    return 1;
  }
  if (cred == AL_GW_CRED_NONE) {
    gwc_refuse(c, r, 401, "credential-missing", close_on_refuse);
    return close_on_refuse;
  }
  if (gwc_find_header(q, "content-encoding")) {
    gwc_refuse(c, r, 415, "content-encoding-refused", true);
    return 1;
  }
  if (!q->chunked && q->content_length > AL_GQL_BODY_MAX) {
    gwc_refuse(c, r, 413, "graphql-refused: too-large", true);
    return 1;
  }
  if (gwc_egress_spent(s)) {
    gwc_refuse(c, r, 403, "egress-budget", true);
    return 1;
  }
  if (gwc_upstream_gone(c))
    return 1;
  size_t lg = 0, lt = 0;
  r->rule = &al_gql_rule_git;
  char *hg = gwc_build_head(c, q, r, q->chunked, q->content_length, &lg);
  r->rule = &al_gql_rule_ticket;
  char *ht = gwc_build_head(c, q, r, q->chunked, q->content_length, &lt);
  r->rule = NULL;
  bool chunked = q->chunked;
  body_src b = {.chunked = q->chunked,
                .left = q->content_length > 0 ? (uint64_t)q->content_length : 0};
  al_chunked_init(&b.ch);
  char *body = malloc(AL_GQL_BODY_MAX + 1);
  if (!hg || !ht || !body) {
    gwc_free_head(hg, lg);
    gwc_free_head(ht, lt);
    free(body);
    gwc_refuse(c, r, 400, "head-too-large", true);
    return 1;
  }
  if (gwc_send_continue(c, r, expect) < 0) {
    gwc_free_head(hg, lg);
    gwc_free_head(ht, lt);
    free(body);
    return 1;
  }
  size_t bl = 0;
  const char *why = NULL;
  ssize_t k;
  while ((k = gwc_body_read(c, &b, body + bl, AL_GQL_BODY_MAX + 1 - bl, &why)) > 0) {
    bl += (size_t)k;
    if (bl > AL_GQL_BODY_MAX)
      break;
  }
  al_gql_info info;
  char where[80] = "";
  const char *gwhy = NULL;
  if (k < 0 || bl > AL_GQL_BODY_MAX || al_gql_check(&s->rules, body, bl, &info, &gwhy, where) < 0) {
    gwc_free_head(hg, lg);
    gwc_free_head(ht, lt);
    free(body);
    if (k < 0) {
      r->reason = why;
      gwc_log_request(c, r);
      return 1;
    }
    r->detail = where[0] ? where : NULL;
    gwc_refuse(c, r, bl > AL_GQL_BODY_MAX ? 413 : 403,
               bl > AL_GQL_BODY_MAX ? "graphql-refused: too-large" : gwhy, true);
    r->detail = NULL;
    return 1;
  }
  r->rule = info.issue ? &al_gql_rule_ticket : &al_gql_rule_git;
  char *head = info.issue ? ht : hg;
  size_t hl = info.issue ? lt : lg;
  gwc_free_head(info.issue ? hg : ht, info.issue ? lg : lt);
  const char *updetail = NULL;
  if (gwc_upstream_open(c, &updetail) < 0) {
    gwc_free_head(head, hl);
    free(body);
    r->detail = updetail;
    gwc_refuse(c, r, 502, "upstream-tls", true);
    return 1;
  }
  if (!gwc_egress_take(s, hl + bl)) {
    gwc_free_head(head, hl);
    free(body);
    gwc_refuse(c, r, 403, "egress-budget", true);
    return 1;
  }
  int w = gwc_write_all(c->us, head, hl);
  gwc_free_head(head, hl);
  for (size_t off = 0; w == 0 && off < bl;) {
    size_t n = bl - off > STREAM_CHUNK ? STREAM_CHUNK : bl - off;
    memcpy(c->wb + 32, body + off, n);
    w = gwc_send_up(c, chunked, n);
    off += n;
  }
  if (w == 0 && chunked)
    w = gwc_write_all(c->us, "0\r\n\r\n", 5);
  free(body);
  r->up = bl;
  if (w < 0) {
    c->up_dead = true;
    gwc_refuse(c, r, 502, "upstream-write", true);
    return 1;
  }
  r->reason = r->rule->name;
  int rr = gwc_relay_response(c, r);
  gwc_log_request(c, r);
  return rr != 0 || c->up_dead;
}
