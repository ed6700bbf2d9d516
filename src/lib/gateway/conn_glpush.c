/* GitLab: the run's push asks for no pipeline (issue #30). GitLab runs the
 * pushed branch's own .gitlab-ci.yml on push; the push option ci.skip
 * (docs.gitlab.com user/project/push_options) asks it not to. receive-pack
 * reads push options only when it advertised the capability
 * (receive.advertisePushOptions), so the gateway remembers the last
 * receive-pack advertisement it relayed and fails closed without it.
 * See conn_int.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/conn_int.h"
#include "gateway/wire.h"

static void advert_set(al_gw_server *s, bool has)
{
  pthread_mutex_lock(&s->mu);
  s->gl_push_options = has;
  pthread_mutex_unlock(&s->mu);
}

void gwc_gl_advert_head(al_gw_conn *c, req_ctx *r, const al_gw_response *resp)
{
  if (!r->rp_advert)
    return;
  bool encoded = false;
  for (size_t i = 0; i < resp->n_headers; i++)
    encoded |= al_http_header_is(&resp->headers[i], "content-encoding");
  if (resp->status != 200 || encoded) {
    advert_set(c->s, false); /* unread: fail closed */
    r->rp_advert = false;
  }
}

void gwc_gl_advert_keep(req_ctx *r, const char *data, size_t got)
{
  if (!r->rp_advert)
    return;
  size_t room = sizeof r->adv - r->adv_len;
  size_t k = got < room ? got : room;
  memcpy(r->adv + r->adv_len, data, k);
  r->adv_len += k;
}

void gwc_gl_advert_done(al_gw_conn *c, req_ctx *r)
{
  if (r->rp_advert)
    advert_set(c->s, al_rp_advert_has_cap(r->adv, r->adv_len, "push-options"));
}

int gwc_gl_add_ci_skip(al_gw_server *s, char **buf, size_t *len, size_t req_len, const char **why)
{
  pthread_mutex_lock(&s->mu);
  bool adv = s->gl_push_options;
  pthread_mutex_unlock(&s->mu);
  if (!adv) {
    *why = "push-options-not-advertised";
    return -1;
  }
  size_t cap = *len + 64;
  char *nb = malloc(cap);
  size_t nl = 0;
  if (!nb) {
    *why = "out-of-memory";
    return -1;
  }
  if (al_rp_add_push_option(*buf, req_len, "ci.skip", nb, cap, &nl, why) < 0) {
    free(nb);
    return -1;
  }
  memcpy(nb + nl, *buf + req_len, *len - req_len); /* the pack's first bytes */
  free(*buf);
  *buf = nb;
  *len = nl + (*len - req_len);
  return 0;
}
