/* The run's egress budget: the bytes that may still go client -> origin,
 * one budget per run, exact across the workers (policy.h:
 * network.egress_budget; docs/policy.md). */
#include "proxy/proxy_int.h"

uint64_t px_up_limit(al_proxy_conn *c)
{
  uint64_t lim = UINT64_MAX;
  uint64_t budget = c->pol->p->network.egress_budget;
  if (budget) {
    uint64_t used = atomic_load(c->run->egress_used);
    lim = used >= budget ? 0 : budget - used;
  }
  if (c->plain && c->body_left < lim)
    lim = c->body_left;
  return lim;
}

bool px_budget_begin(al_proxy_conn *c)
{
  if (!c->pol->p->network.egress_budget)
    return false;
  pthread_mutex_lock(&c->run->budget_mu);
  return true;
}

void px_budget_end(al_proxy_conn *c, bool locked, uint64_t n)
{
  if (n)
    px_budget_charge(c->run, n);
  if (locked)
    pthread_mutex_unlock(&c->run->budget_mu);
}

void px_budget_charge(al_proxy_run *run, uint64_t n)
{
  atomic_fetch_add(run->egress_used, n);
}

bool px_budget_spent(const al_proxy_conn *c)
{
  uint64_t budget = c->pol->p->network.egress_budget;
  return budget && atomic_load(c->run->egress_used) >= budget;
}
