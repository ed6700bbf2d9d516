/* Policies in use by a worker, each with its own c-ares channel whose sockets
 * live in that worker's loop; the allowlist match and the pins. */
#include "proxy/proxy_int.h"

static void ares_watch_ready(al_watch *w, uint32_t ev)
{
  ares_watch *aw = container_of(w, ares_watch, w);
  int fd = w->fd;
  ares_process_fd(aw->pol->ch, ev & (EPOLLIN | EPOLLERR | EPOLLHUP) ? fd : ARES_SOCKET_BAD,
                  ev & EPOLLOUT ? fd : ARES_SOCKET_BAD);
}

/* c-ares tells us which of its sockets to watch (ARES_OPT_SOCK_STATE_CB). */
static void ares_sock_cb(void *data, ares_socket_t fd, int readable, int writable)
{
  al_proxy_policy *pol = data;
  ares_watch **pp = &pol->watches;

  while (*pp && (*pp)->w.fd != fd)
    pp = &(*pp)->next;
  ares_watch *aw = *pp;
  uint32_t ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
  if (!ev) {
    if (aw) {
      al_loop_del(&pol->px->loop, &aw->w);
      *pp = aw->next;
      aw->w.fd = -1; /* a later event of this batch may still name it */
      aw->next = pol->px->dead_watches;
      pol->px->dead_watches = aw;
    }
    return;
  }
  if (!aw) {
    aw = al_xcalloc(1, sizeof *aw);
    aw->w.fd = fd;
    aw->w.fn = ares_watch_ready;
    aw->pol = pol;
    aw->next = pol->watches;
    pol->watches = aw;
    al_loop_add(&pol->px->loop, &aw->w, ev);
  } else {
    al_loop_mod(&pol->px->loop, &aw->w, ev);
  }
}

al_proxy_policy *px_policy_new(al_proxy *px, const al_policy *p, al_policy_hold *hold,
                               al_error *err)
{
  struct ares_options o;
  al_proxy_policy *pol = al_xcalloc(1, sizeof *pol);

  pol->px = px;
  pol->p = p;
  memset(&o, 0, sizeof o);
  /* DNS only (never /etc/hosts), no search list, no HOSTALIASES: a name
   * means exactly itself. */
  o.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
  o.lookups = (char *)"b";
  o.sock_state_cb = ares_sock_cb;
  o.sock_state_cb_data = pol;
  o.timeout = 2000;
  o.tries = 2;
  int r = ares_init_options(&pol->ch, &o,
                            ARES_OPT_FLAGS | ARES_OPT_LOOKUPS | ARES_OPT_SOCK_STATE_CB |
                                ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
  if (r != ARES_SUCCESS) {
    free(pol);
    al_make_error(err, 0, "ares_init_options: %s", ares_strerror(r));
    return NULL;
  }
  if (p->network.resolver) {
    r = ares_set_servers_ports_csv(pol->ch, p->network.resolver);
    if (r != ARES_SUCCESS) {
      ares_destroy(pol->ch);
      free(pol);
      al_make_error(err, 0, "resolver `%s`: %s", p->network.resolver, ares_strerror(r));
      return NULL;
    }
  }
  pol->refs = 1;
  pol->hold = hold;
  if (hold)
    atomic_fetch_add(&hold->refs, 1);
  pol->next = px->policies;
  px->policies = pol;
  return pol;
}

void px_hold_unref(al_policy_hold *h)
{
  if (h && atomic_fetch_sub(&h->refs, 1) == 1) {
    al_policy_free(h->p);
    free(h);
  }
}

al_proxy_policy *px_policy_ref(al_proxy_policy *pol)
{
  pol->refs++;
  return pol;
}

/* Drop a reference; the last one moves the policy to the dead list, which
 * is destroyed after the current batch (never inside a c-ares callback). */
void px_policy_unref(al_proxy_policy *pol)
{
  if (!pol || --pol->refs > 0)
    return;
  al_proxy *px = pol->px;
  for (al_proxy_policy **pp = &px->policies; *pp; pp = &(*pp)->next)
    if (*pp == pol) {
      *pp = pol->next;
      break;
    }
  pol->next = px->dead_policies;
  px->dead_policies = pol;
}

void px_policy_destroy(al_proxy_policy *pol)
{
  ares_destroy(pol->ch); /* closes its sockets through ares_sock_cb */
  while (pol->watches) {
    ares_watch *aw = pol->watches;
    pol->watches = aw->next;
    al_loop_del(&pol->px->loop, &aw->w);
    aw->w.fd = -1;
    aw->next = pol->px->dead_watches;
    pol->px->dead_watches = aw;
  }
  px_hold_unref(pol->hold);
  free(pol);
}

const al_net_allow *px_policy_match(const al_policy *p, const al_host *h, uint16_t port)
{
  for (size_t i = 0; i < p->network.n_allow; i++) {
    const al_net_allow *a = &p->network.allow[i];
    if (a->port != port || a->is_ip != h->is_ip)
      continue;
    if (h->is_ip ? (!a->wildcard && strcmp(a->host, h->name) == 0)
                 : al_host_matches(h->name, a->host, a->wildcard))
      return a;
  }
  return NULL;
}

const char *px_policy_pin(const al_policy *p, const char *host)
{
  for (size_t i = 0; i < p->network.n_pin; i++)
    if (strcmp(p->network.pin[i].host, host) == 0)
      return p->network.pin[i].address;
  return NULL;
}
