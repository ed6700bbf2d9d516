/* The egress proxy's workers, signals, timer, reload, and al_proxy_serve().
 * See proxy.h; the pieces are described in proxy_int.h. */
#include "proxy/proxy_int.h"

static void reload(al_proxy *px);

const al_addr_set *px_local_addrs(al_proxy_shared *sh)
{
  if (!atomic_load(&sh->local_ready)) {
    pthread_mutex_lock(&sh->stat_mu);
    if (!atomic_load(&sh->local_ready)) {
      if (al_addr_set_local(&sh->local) < 0)
        al_warn("proxy: getifaddrs failed; the host's own addresses are not refused by name");
      if (sh->cfg->marks)
        sh->cfg->marks->local = al_now_ns();
      atomic_store(&sh->local_ready, true);
    }
    pthread_mutex_unlock(&sh->stat_mu);
  }
  return &sh->local;
}

/* Make pol (one reference, taken over) the policy of every listener of
 * this worker; new connections only, live ones keep theirs. */
static void adopt_policy(al_proxy *px, al_proxy_policy *pol)
{
  for (size_t i = 0; i < px->n_runs; i++) {
    px_policy_unref(px->runs[i].pol);
    px->runs[i].pol = px_policy_ref(pol);
  }
  px_policy_unref(pol);
}

/* Wake every other worker (stop, reload); eventfd(2). */
static void wake_workers(al_proxy_shared *sh)
{
  uint64_t one = 1;
  for (size_t i = 1; i < sh->n_workers; i++)
    if (sh->workers[i].started && write(sh->workers[i].wake_w.fd, &one, sizeof one) < 0)
      al_warn("proxy: waking worker %zu: %s", i, strerror(errno));
}

/* SIGHUP, in worker 0: load and check the file, adopt it here, then
 * publish it for the other workers (each makes its own resolver channel). */
static void reload(al_proxy *px)
{
  al_proxy_shared *sh = px->sh;
  al_policy *np = NULL;
  al_error err = {0};

  if (!px->cfg->reload_path) {
    al_warn("proxy: SIGHUP ignored (no policy file to reload)");
    return;
  }
  if (al_policy_load_file(px->cfg->reload_path, &np, &err) < 0) {
    al_warn("proxy: reload refused, keeping the old policy: %s", err.msg);
    return;
  }
  al_policy_hold *h = al_xcalloc(1, sizeof *h);
  h->p = np;
  atomic_init(&h->refs, 1);
  al_proxy_policy *pol = px_policy_new(px, np, h, &err);
  if (!pol) {
    px_hold_unref(h);
    al_warn("proxy: reload refused, keeping the old policy: %s", err.msg);
    return;
  }
  adopt_policy(px, pol);
  pthread_mutex_lock(&sh->stat_mu);
  al_policy_hold *old = sh->reload_hold;
  sh->reload_hold = h; /* our reference */
  px->reload_seen = ++sh->reload_gen;
  pthread_mutex_unlock(&sh->stat_mu);
  px_hold_unref(old);
  wake_workers(sh);
  json_t *j = json_pack("{s:o,s:s,s:s,s:s}", "time", px_time_json(), "event", "reload", "policy",
                        np->source ? np->source : "", "sha256", np->sha256);
  px_decision_write(px, j);
  al_info("proxy: policy reloaded from %s (sha256 %.12s)", px->cfg->reload_path, np->sha256);
}

/* A worker's eventfd: stop (the loop checks sh->stop) or a new policy. */
static void wake_ready(al_watch *w, uint32_t ev)
{
  al_proxy *px = container_of(w, al_proxy, wake_w);
  al_proxy_shared *sh = px->sh;
  al_policy_hold *h = NULL;
  uint64_t v;
  al_error err = {0};
  (void)ev;

  while (read(w->fd, &v, sizeof v) > 0)
    ;
  pthread_mutex_lock(&sh->stat_mu);
  if (px->reload_seen != sh->reload_gen) {
    px->reload_seen = sh->reload_gen;
    h = sh->reload_hold;
    if (h)
      atomic_fetch_add(&h->refs, 1);
  }
  pthread_mutex_unlock(&sh->stat_mu);
  if (!h)
    return;
  al_proxy_policy *pol = px_policy_new(px, h->p, h, &err);
  px_hold_unref(h);
  if (pol)
    adopt_policy(px, pol);
  else
    al_warn("proxy: worker %zu keeps the old policy: %s", px->idx, err.msg);
}

static void signal_ready(al_watch *w, uint32_t ev)
{
  al_proxy *px = container_of(w, al_proxy, sig_w);
  struct signalfd_siginfo si;
  (void)ev;

  while (read(w->fd, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGHUP) {
      reload(px);
    } else {
      if (px->cfg->marks && !px->cfg->marks->stop)
        px->cfg->marks->stop = al_now_ns();
      atomic_store(&px->sh->stop, true);
      wake_workers(px->sh);
    }
  }
}

static void tick_ready(al_watch *w, uint32_t ev)
{
  al_proxy *px = container_of(w, al_proxy, tick_w);
  uint64_t expirations;
  uint64_t now = al_now_ms();
  (void)ev;

  while (read(w->fd, &expirations, sizeof expirations) > 0)
    ;
  for (al_proxy_conn *c = px->live, *next; c; c = next) {
    next = c->next;
    const al_policy_network *n = &c->pol->p->network;
    switch (c->st) {
    case ST_HEAD:
      if (now >= c->deadline)
        px_conn_deny(c, 408, "head-timeout", NULL);
      break;
    case ST_RESOLVE:
    case ST_CONNECT:
      if (now >= c->deadline)
        px_conn_deny(c, 504, c->st == ST_RESOLVE ? "dns-timeout" : "connect-timeout", NULL);
      break;
    case ST_SNI:
      if (now >= c->deadline)
        px_conn_deny(c, 0, "sni-timeout", NULL);
      break;
    case ST_SPLICE:
      if (n->idle_timeout_ms && now - c->last_io >= n->idle_timeout_ms) {
        c->reason = "idle-timeout";
        px_conn_close(c);
      } else if (n->max_tunnel_ms && now - c->t_start >= n->max_tunnel_ms) {
        c->reason = "tunnel-lifetime";
        c->cut = true;
        px_conn_close(c);
      }
      break;
    case ST_DRAIN:
      if (now >= c->deadline)
        px_conn_close(c);
      break;
    case ST_CLOSED:
    default:
      break;
    }
  }
  /* c-ares timeouts */
  for (al_proxy_policy *pol = px->policies; pol; pol = pol->next)
    ares_process_fd(pol->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  for (size_t i = 0; i < px->n_runs; i++) {
    al_proxy_wrun *wr = &px->runs[i];
    if (wr->paused && px_listener_watch(px, wr) == 0)
      wr->paused = false; /* level-triggered: what waits is reported at once */
  }
}

static void raise_nofile(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* How many workers: cfg->workers, or one per CPU this process may run on
 * (sched_getaffinity(2)), at most AL_PROXY_MAX_WORKERS. */
static size_t worker_count(const al_proxy_config *cfg)
{
  size_t n = cfg->workers;
  if (n == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    n = sched_getaffinity(0, sizeof set, &set) == 0 ? (size_t)CPU_COUNT(&set) : 1;
  }
  if (n < 1)
    n = 1;
  return n > AL_PROXY_MAX_WORKERS ? AL_PROXY_MAX_WORKERS : n;
}

/* A worker's loop, timer, wake-up eventfd and listeners (not yet started). */
static int worker_init(al_proxy *px, al_proxy_shared *sh, size_t idx, al_error *err)
{
  const al_proxy_config *cfg = sh->cfg;

  memset(px, 0, sizeof *px);
  px->sh = sh;
  px->cfg = cfg;
  px->idx = idx;
  px->sig_w.fd = px->tick_w.fd = px->admin_w.fd = px->wake_w.fd = -1;
  px->loop.epfd = -1;
  if (al_loop_init(&px->loop, err) < 0)
    return -1;
  px->tick_w.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  px->tick_w.fn = tick_ready;
  struct itimerspec its = {.it_interval = {0, TICK_MS * 1000000L},
                           .it_value = {0, TICK_MS * 1000000L}};
  if (px->tick_w.fd < 0 || timerfd_settime(px->tick_w.fd, 0, &its, NULL) < 0 ||
      al_loop_add(&px->loop, &px->tick_w, EPOLLIN) < 0)
    return al_make_error(err, errno, "timerfd");
  px->wake_w.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  px->wake_w.fn = wake_ready;
  if (px->wake_w.fd < 0 || al_loop_add(&px->loop, &px->wake_w, EPOLLIN) < 0)
    return al_make_error(err, errno, "eventfd");
  /* one watch per listener: each run's proxy listener, then its
   * transparent ones (proxy.h), which share its policy and resolver */
  size_t n_watch = 0;
  for (size_t i = 0; i < sh->n_runs; i++)
    n_watch += 1 + cfg->listeners[i].n_transparent;
  px->runs = al_xcalloc(n_watch, sizeof *px->runs);
  px->n_runs = n_watch;
  for (size_t i = 0; i < n_watch; i++)
    px->runs[i].w.fd = -1;
  /* a worker made after a reload (grow_workers) serves the reloaded policy
   * at once; worker 0 alone sets reload_hold, and it is the caller */
  al_policy_hold *h = sh->reload_hold;
  al_proxy_policy *reloaded = h ? px_policy_new(px, h->p, h, err) : NULL;
  if (h && !reloaded)
    return -1;
  px->reload_seen = sh->reload_gen;
  size_t k = 0;
  for (size_t i = 0; i < sh->n_runs; i++) {
    const al_proxy_listener *l = &cfg->listeners[i];
    al_proxy_policy *pol = NULL;
    for (size_t j = 0; j <= l->n_transparent; j++, k++) {
      al_proxy_wrun *wr = &px->runs[k];
      wr->px = px;
      wr->run = &sh->runs[i];
      if (j == 0)
        pol = reloaded ? px_policy_ref(reloaded) : px_policy_new(px, l->policy, NULL, err);
      wr->pol = pol && j > 0 ? px_policy_ref(pol) : pol;
      if (!wr->pol) {
        if (reloaded)
          px_policy_unref(reloaded);
        return -1;
      }
      wr->w.fd = j == 0 ? l->fd : l->transparent_fds[j - 1];
      wr->tport = j == 0 ? 0 : l->transparent_ports[j - 1];
      wr->w.fn = px_listener_ready;
      if (idx == 0 && al_set_nonblock(wr->w.fd, true) < 0)
        return al_make_error(err, errno, "listener %zu", i);
      /* accepted sockets inherit TCP_NODELAY (tcp(7)): one setsockopt here,
       * none per connection */
      int one = 1;
      wr->nodelay = setsockopt(wr->w.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
      int r = px_listener_watch(px, wr);
      if (r < 0) {
        if (reloaded)
          px_policy_unref(reloaded);
        return al_make_error(err, -r, "listener %zu", i);
      }
    }
  }
  if (reloaded)
    px_policy_unref(reloaded);
  return 0;
}

static void grow_workers(al_proxy_shared *sh);

static int worker_loop(al_proxy *px, al_error *err)
{
  al_proxy_shared *sh = px->sh;
  while (!atomic_load(&sh->stop)) {
    int n = al_loop_once(&px->loop, -1);
    if (n < 0)
      return al_make_error(err, -n, "epoll_wait");
    px_decision_flush(px); /* the lines deferred in this batch, before we wait again */
    px_bury(px);
    /* worker 0 is the only thread until then, so the count is its own */
    if (px->idx == 0 && sh->n_wanted > sh->n_workers && sh->cnt.conns_total > 0 &&
        !atomic_load(&sh->stop))
      grow_workers(sh);
  }
  return 0;
}

/* Close this worker's connections (each logs its end), its listeners'
 * registrations, resolver channels and descriptors (but its wake-up
 * eventfd). */
static void worker_fini(al_proxy *px, const char *why)
{
  while (px->live) {
    px->live->reason = why;
    px_conn_close(px->live);
  }
  for (size_t i = 0; i < px->n_runs; i++) {
    if (px->runs[i].w.fd >= 0 && !px->runs[i].paused)
      al_loop_del(&px->loop, &px->runs[i].w);
    px_policy_unref(px->runs[i].pol);
  }
  /* zombies still waiting on DNS are released by the cancel callbacks */
  for (al_proxy_policy *pol = px->policies; pol; pol = pol->next)
    ares_cancel(pol->ch);
  px_bury(px);
  while (px->policies) { /* only left if a reference leaked; destroy anyway */
    al_proxy_policy *pol = px->policies;
    px->policies = pol->next;
    px_policy_destroy(pol);
  }
  px_bury(px);
  px_decision_flush(px); /* the close lines of the connections ended above */
  free(px->runs);
  px->runs = NULL;
  px->n_runs = 0;
  if (px->tick_w.fd >= 0)
    close(px->tick_w.fd);
  px->tick_w.fd = -1;
  /* wake_w stays open: worker 0 may still write to it; al_proxy_serve
   * closes it after the join */
  al_loop_close(&px->loop);
}

/* Workers 1..n-1: a failing loop ends only its own worker (logged); the
 * others keep serving the shared listeners. */
static void *worker_main(void *arg)
{
  al_proxy *px = arg;
  al_error e = {0};

  if (worker_loop(px, &e) < 0)
    al_error_log("proxy: worker %zu stopped: %s", px->idx, e.msg);
  worker_fini(px, atomic_load(&px->sh->stop) ? "shutdown" : "error");
  return NULL;
}

/* Workers 1..n_wanted-1, made and started by worker 0 (after ready(), so
 * they inherit its confinement). One that cannot be made leaves the proxy
 * serving with fewer (logged). */
static void grow_workers(al_proxy_shared *sh)
{
  for (size_t i = sh->n_workers; i < sh->n_wanted; i++) {
    al_proxy *w = &sh->workers[i];
    al_error we = {0};
    int r = worker_init(w, sh, i, &we) < 0 ? -1 : pthread_create(&w->thread, NULL, worker_main, w);
    if (r != 0) {
      al_warn("proxy: %zu worker(s) instead of %zu: %s", i, sh->n_wanted,
              r < 0 ? we.msg : strerror(r));
      worker_fini(w, "shutdown");
      if (w->wake_w.fd >= 0)
        close(w->wake_w.fd);
      break;
    }
    w->started = true;
    sh->n_workers = i + 1;
  }
  sh->n_wanted = sh->n_workers; /* grown once */
}

int al_proxy_serve(const al_proxy_config *cfg, al_error *err)
{
  al_proxy_shared sh_, *sh = &sh_;
  sigset_t mask, oldmask;
  int ret = -1;

  if (cfg->n_listeners == 0)
    return al_make_error(err, EINVAL, "proxy: no listener");
  memset(sh, 0, sizeof *sh);
  sh->cfg = cfg;
  pthread_mutex_init(&sh->stat_mu, NULL);
  pthread_mutex_init(&sh->log_mu, NULL);
  al_decisions_init(&sh->log, cfg->decisions_fd, cfg->decisions_cap);
  sh->max_conns = cfg->max_conns_global ? cfg->max_conns_global : DEFAULT_GLOBAL_CONNS;
  sh->n_runs = cfg->n_listeners;
  sh->runs = al_xcalloc(sh->n_runs, sizeof *sh->runs);
  for (size_t i = 0; i < sh->n_runs; i++) {
    sh->runs[i].run_id = cfg->listeners[i].run_id ? cfg->listeners[i].run_id : "";
    sh->runs[i].handoff = cfg->listeners[i].handoff;
    /* sealed: the gateway's bytes count in this run's budget (handoff.h) */
    sh->runs[i].egress_used = sh->runs[i].handoff && sh->runs[i].handoff->egress_used
                                  ? (_Atomic uint64_t *)sh->runs[i].handoff->egress_used
                                  : &sh->runs[i].egress_local;
    pthread_mutex_init(&sh->runs[i].budget_mu, NULL);
    sh->runs[i].self_len = sizeof sh->runs[i].self;
    if (getsockname(cfg->listeners[i].fd, (struct sockaddr *)&sh->runs[i].self,
                    &sh->runs[i].self_len) < 0 ||
        (sh->runs[i].self.ss_family != AF_INET && sh->runs[i].self.ss_family != AF_INET6))
      sh->runs[i].self_len = 0;
  }
  sh->n_wanted = worker_count(cfg);
  sh->workers = al_xcalloc(sh->n_wanted, sizeof *sh->workers);
  al_proxy *px = &sh->workers[0];
  px->sig_w.fd = px->admin_w.fd = -1;

  raise_nofile();
  signal(SIGPIPE, SIG_IGN);
  /* blocked before any worker thread exists, so every thread inherits it
   * and only worker 0's signalfd sees them */
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, &oldmask);
  int ar = ares_library_init(ARES_LIB_INIT_ALL);
  if (ar != ARES_SUCCESS) {
    al_make_error(err, 0, "ares_library_init: %s", ares_strerror(ar));
    goto out_mask;
  }
  /* worker 0 now; the others with the first connection when their number
   * is the default (an idle proxy, e.g. `airlock run -- true`, never pays
   * for them), at once when it was asked for */
  sh->n_workers = 1;
  if (worker_init(px, sh, 0, err) < 0)
    goto out_workers;
  if (cfg->marks)
    cfg->marks->workers = al_now_ns();

  px->sig_w.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  px->sig_w.fn = signal_ready;
  if (px->sig_w.fd < 0 || al_loop_add(&px->loop, &px->sig_w, EPOLLIN) < 0) {
    al_make_error(err, errno, "signalfd");
    goto out_workers;
  }
  if (cfg->admin_path && px_admin_open(px, cfg->admin_path, err) < 0)
    goto out_workers;
  if (cfg->ready && cfg->ready(cfg->ready_ctx, err) < 0)
    goto out_workers;
  /* after ready(): the threads inherit its confinement (Landlock and the
   * uid apply to the calling thread and what it creates later) */
  if (cfg->workers)
    grow_workers(sh);

  if (cfg->marks)
    cfg->marks->serving = al_now_ns();
  ret = worker_loop(px, err);
  atomic_store(&sh->stop, true);
  wake_workers(sh);
  for (size_t i = 1; i < sh->n_workers; i++)
    if (sh->workers[i].started)
      pthread_join(sh->workers[i].thread, NULL);
  if (cfg->marks)
    cfg->marks->joined = al_now_ns();

out_workers:
  worker_fini(px, ret == 0 ? "shutdown" : "error");
  /* workers 1..n_workers-1 were started (grow_workers) and have ended */
  for (size_t i = 0; i < sh->n_workers; i++)
    if (sh->workers[i].wake_w.fd >= 0)
      close(sh->workers[i].wake_w.fd);
  px_hold_unref(sh->reload_hold);
  if (cfg->decisions_fd >= 0) {
    /* the closing summary: exact counts, whatever the log could hold */
    json_t *runs = json_array();
    for (size_t i = 0; i < sh->n_runs; i++) {
      json_t *r = px_counters_json(&sh->runs[i].cnt);
      json_object_set_new(r, "run", json_string(sh->runs[i].run_id));
      json_array_append_new(runs, r);
    }
    json_t *sum = px_counters_json(&sh->cnt);
    json_object_set_new(sum, "time", px_time_json());
    json_object_set_new(sum, "runs", runs);
    al_decisions_close(&sh->log, sum);
  }
  if (cfg->marks)
    cfg->marks->closed = al_now_ns();
  if (px->admin_w.fd >= 0) {
    close(px->admin_w.fd);
    if (cfg->admin_path) /* always set when admin_w is open */
      unlink(cfg->admin_path);
  }
  if (px->sig_w.fd >= 0)
    close(px->sig_w.fd);
  al_addr_set_free(&sh->local);
  ares_library_cleanup();
out_mask:
  sigprocmask(SIG_SETMASK, &oldmask, NULL);
  for (size_t i = 0; i < sh->n_runs; i++)
    pthread_mutex_destroy(&sh->runs[i].budget_mu);
  pthread_mutex_destroy(&sh->stat_mu);
  pthread_mutex_destroy(&sh->log_mu);
  free(sh->runs);
  free(sh->workers);
  return ret;
}
