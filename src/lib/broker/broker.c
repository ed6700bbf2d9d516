/* The broker daemon: see broker.h. The whole lifecycle of a lease:
 *
 *   accept ─ SO_PEERCRED check ─ NEW ──"lease"──► MINTING (worker thread)
 *        ─► ACTIVE (tokens sent, TTL timer armed)
 *        ─► REVOKING (worker thread: DELETE + confirm 401 per token)
 *        ─► CLOSING (last message flushed) ─► freed
 *
 * Every way out of ACTIVE (release, EOF, reset, TTL, protocol error,
 * shutdown) goes through start_revoke(), the one revoke path.
 *
 * An audit connection is a lease of read tokens for the client's own audit:
 *
 *   NEW ──"audit"──► AUDITING (worker thread: the App's JWT reads the App and
 *        its installation; the read tokens are minted) ─► ACTIVE ("audit_grant"
 *        sent; the client runs the audit, forge/audit.h) ─► REVOKING ─► CLOSING
 *
 * The broker parses none of the repository's settings: it signs, mints and
 * revokes. Tokens whose
 * revocation could not be confirmed stay in `pending` and are retried on a
 * timer until they are confirmed dead or their expiry has passed. */
#include "broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "broker/broker_internal.h"
#include "broker/check.h"
#include "forge/app.h"
#include "forge/jwt.h"
#include "broker/keep.h"
#include "broker/proto.h"
#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
/* ---- small helpers ---------------------------------------------------- */

void bk_format_iso(time_t t, char out[32])
{
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *perms_json(const al_perm_set *s)
{
  json_t *p = json_object();
  for (size_t i = 0; i < s->n; i++)
    json_object_set_new(p, s->items[i].name, json_string(s->items[i].write ? "write" : "read"));
  return p;
}

/* Public description of a token: never its value. */
json_t *bk_token_public_json(const al_token *t)
{
  return json_pack("{s:s, s:s, s:s, s:o, s:s, s:I}", "role", al_role_name(t->role), "repo", t->repo,
                   "fingerprint", t->fp, "permissions", perms_json(&t->perms), "expires_at",
                   t->expires_at_str, "installation_id", (json_int_t)t->installation_id);
}

/* Public description of the secrets a lease carries: names and
 * fingerprints, never a value. */

/* Append one JSON line to the lease log (state_dir/leases.jsonl). */
void bk_lease_log(struct broker *b, json_t *rec)
{
  char ts[32];
  bk_format_iso(time(NULL), ts);
  json_object_set_new(rec, "time", json_string(ts));
  if (b->lease_fd < 0) {
    json_decref(rec);
    return;
  }
  size_t len;
  char *line = al_proto_line(rec, &len);
  json_decref(rec);
  if (al_redact_contains_secret(line)) {
    /* Never expected: the record carries fingerprints only. */
    al_error_log("lease log: the record held a secret; not written");
  } else if (al_write_all(b->lease_fd, line, len) < 0) {
    al_warn("lease log: write: %s", strerror(errno));
  }
  free(line);
}

/* ---- accept, signals, loop -------------------------------------------- */

static void on_accept(struct broker *b)
{
  for (;;) {
    int fd = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        al_warn("accept: %s", strerror(errno));
      return;
    }
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
      al_warn("SO_PEERCRED: %s; connection dropped", strerror(errno));
      close(fd);
      continue;
    }
    if (!al_broker_config_uid_allowed(b->cfg, cred.uid)) {
      al_warn("connection refused: uid %u (pid %d) is not in clients.uids", (unsigned)cred.uid,
              (int)cred.pid);
      static const char m[] = "{\"type\":\"error\",\"code\":\"forbidden\",\"message\":\"uid not "
                              "allowed\"}\n";
      (void)!send(fd, m, sizeof m - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    struct conn *c = al_xcalloc(1, sizeof *c);
    c->b = b;
    c->fd = fd;
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->pid = cred.pid;
    c->ev_sock = (struct ev){EV_CONN, c};
    c->ev_timer = (struct ev){EV_TIMER, c};
    c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (c->tfd < 0) {
      al_warn("timerfd_create: %s; connection dropped", strerror(errno));
      close(fd);
      free(c);
      continue;
    }
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &c->ev_timer};
    epoll_ctl(b->ep, EPOLL_CTL_ADD, c->tfd, &tev);
    c->next = b->conns;
    if (b->conns)
      b->conns->prev = c;
    b->conns = c;
    al_info("connection from uid %u gid %u pid %d", (unsigned)cred.uid, (unsigned)cred.gid,
            (int)cred.pid);
    bk_arm_timer(c, HANDSHAKE_MS);
    bk_conn_update_events(c);
  }
}

static void on_timer(struct conn *c)
{
  uint64_t v;
  if (read(c->tfd, &v, sizeof v) != sizeof v)
    return;
  if (c->st == ST_NEW) {
    bk_conn_fail(c, "bad_request", "no lease request within 30s");
  } else if (c->st == ST_ACTIVE) {
    al_info("lease %s: TTL reached", c->id);
    bk_conn_send(c, json_pack("{s:s, s:s}", "type", "expired", "lease", c->id));
    c->reply_on_revoke = true;
    bk_start_revoke(c, "ttl");
  }
}

/* Unlink the socket path only while it is the inode we bound: a broker
 * started after we stopped listening may own that path now. */
static void unlink_own_socket(struct broker *b)
{
  if (!b->socket_path)
    return;
  struct stat st;
  if (lstat(b->socket_path, &st) == 0) {
    if (st.st_dev == b->sock_dev && st.st_ino == b->sock_ino)
      unlink(b->socket_path);
    else
      al_info("%s is another broker's socket now; left in place", b->socket_path);
  }
  free(b->socket_path);
  b->socket_path = NULL;
}

static void begin_shutdown(struct broker *b)
{
  if (b->stopping)
    return;
  b->stopping = true;
  al_info("shutting down: revoking every live lease");
  if (b->lfd >= 0) {
    epoll_ctl(b->ep, EPOLL_CTL_DEL, b->lfd, NULL);
    close(b->lfd);
    b->lfd = -1;
  }
  /* Nobody can connect any more: the path is free for a new broker now,
   * not after the revocations. */
  unlink_own_socket(b);
  for (struct conn *c = b->conns, *next; c; c = next) {
    next = c->next;
    if (c->st == ST_NEW) {
      c->st = ST_CLOSING;
      bk_conn_stop_reading(c);
      bk_conn_maybe_close(c);
    } else if (c->st == ST_ACTIVE) {
      c->reply_on_revoke = true;
      bk_start_revoke(c, "shutdown");
    }
  }
}

/* The keyring store of this broker's identity (its config file and its
 * socket: a restart with the same command line finds it), and what an
 * earlier run left there: every token it minted and never saw die goes to
 * `pending`, revoked as soon as the loop starts. */
static void open_keep(struct broker *b, const al_broker_opts *opts)
{
  char cfg[PATH_MAX];
  if (!realpath(opts->config_path, cfg))
    snprintf(cfg, sizeof cfg, "%s", opts->config_path);
  al_autofree char *id =
      al_strdup_printf("%s\n%s", cfg, opts->socket_path ? opts->socket_path : "(systemd socket)");
  al_error e = {0};
  if (al_keep_open(id, &b->keep, &e) < 0) {
    al_error_log("no kernel keyring (%s): a crash of this broker would leave its live tokens "
                 "alive until they expire; the supervisor still revokes what it holds",
                 e.msg);
    return;
  }
  al_token *old = NULL;
  int n = al_keep_load(b->keep, &old, &e);
  if (n < 0) {
    al_error_log("%s: %s", al_keep_where(b->keep), e.msg);
  } else if (n > 0) {
    al_warn("%d token(s) minted by an earlier run of this broker were never confirmed dead "
            "(found in the %s); revoking them now",
            n, al_keep_where(b->keep));
    b->pending = al_xrealloc(b->pending, (b->n_pending + (size_t)n) * sizeof *b->pending);
    for (int i = 0; i < n; i++) {
      al_info("token %s (%s %s, expires %s): left by an earlier run", old[i].fp,
              al_role_name(old[i].role), old[i].repo, old[i].expires_at_str);
      al_redact_register(old[i].value);
      b->pending[b->n_pending++] = old[i];
    }
    b->recovered = (size_t)n;
  }
  free(old);
  al_info("outstanding tokens are kept in the %s", al_keep_where(b->keep));
}

static int setup(struct broker *b, const al_broker_opts *opts, al_error *err)
{
  if (al_broker_config_load_file(opts->config_path, &b->cfg, err) < 0)
    return -1;
  if (b->cfg->private_key_path && al_app_key_load(b->cfg->private_key_path, &b->key, err) < 0)
    return -1;
  if (al_gh_new(b->cfg, b->key, &b->gh, err) < 0)
    return -1;
  if (b->cfg->audit_key_path) {
    /* The audit App: loaded once, used only by audits, never leased. */
    b->audit_view = *b->cfg;
    b->audit_view.app_id = b->cfg->audit_app_id;
    b->audit_view.client_id = b->cfg->audit_client_id;
    b->audit_view.private_key_path = b->cfg->audit_key_path;
    if (al_app_key_load(b->cfg->audit_key_path, &b->audit_key, err) < 0)
      return al_error_wrap(err, "audit.app.private_key");
    if (al_gh_new(&b->audit_view, b->audit_key, &b->audit_gh, err) < 0)
      return -1;
  } else if (b->cfg->audit_token_file) {
    /* Checked now (owner, mode, shape) so a bad file stops the start;
     * read again for each audit, so it can be rotated in place. */
    char *tok = NULL;
    if (al_broker_audit_token_load(b->cfg->audit_token_file, &tok, err) < 0)
      return -1;
    al_secret_free(tok);
  }
  if (al_broker_secrets_load(b->cfg, err) < 0)
    return -1;
  for (size_t i = 0; i < b->cfg->n_secrets; i++) {
    const al_broker_secret *sec = &b->cfg->secrets[i];
    al_redact_register(sec->value);
    al_info("secret %s: %s, for %zu repositories", sec->name, sec->fp, sec->n_repos);
  }
  if (b->cfg->state_dir) {
    if (mkdir(b->cfg->state_dir, 0700) < 0 && errno != EEXIST)
      return al_make_error(err, errno, "state_dir `%s`", b->cfg->state_dir);
    al_autofree char *p = al_strdup_printf("%s/leases.jsonl", b->cfg->state_dir);
    b->lease_fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (b->lease_fd < 0)
      return al_make_error(err, errno, "lease log `%s`", p);
  }
  int lfd = al_broker_inherited_listener(err);
  if (lfd < 0)
    return -1;
  if (lfd == 0) {
    if (!opts->socket_path)
      return al_make_error(err, EINVAL, "no --socket PATH and no socket passed by systemd");
    lfd = al_broker_listen_unix(opts->socket_path, err);
    if (lfd < 0)
      return -1;
    struct stat sst;
    if (lstat(opts->socket_path, &sst) < 0) {
      close(lfd);
      return al_make_error(err, errno, "stat `%s`", opts->socket_path);
    }
    b->socket_path = al_xstrdup(opts->socket_path);
    b->sock_dev = sst.st_dev;
    b->sock_ino = sst.st_ino;
    al_info("listening on %s (mode 0600)", opts->socket_path);
  } else {
    al_info("listening on the socket passed by systemd (fd %d)", lfd);
  }
  b->lfd = lfd;
  if (al_set_nonblock(lfd, true) < 0)
    return al_make_error(err, errno, "O_NONBLOCK on the listener");
  /* Only now, holding the socket (one live broker per path): the keyring
   * of this identity is ours, and what it holds an earlier run left. */
  open_keep(b, opts);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
    return al_make_error(err, errno, "sigprocmask");
  signal(SIGPIPE, SIG_IGN);
  b->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  b->ep = epoll_create1(EPOLL_CLOEXEC);
  b->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  b->retry_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (b->sfd < 0 || b->ep < 0 || b->wakefd < 0 || b->retry_tfd < 0)
    return al_make_error(err, errno, "event loop setup");
  struct itimerspec its = {.it_interval = {.tv_sec = RETRY_MS / 1000},
                           .it_value = {.tv_sec = RETRY_MS / 1000}};
  timerfd_settime(b->retry_tfd, 0, &its, NULL);
  b->ev_listen = (struct ev){EV_LISTEN, NULL};
  b->ev_sig = (struct ev){EV_SIGNAL, NULL};
  b->ev_wake = (struct ev){EV_WAKE, NULL};
  b->ev_retry = (struct ev){EV_RETRY, NULL};
  struct epoll_event e1 = {.events = EPOLLIN, .data.ptr = &b->ev_listen};
  struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = &b->ev_sig};
  struct epoll_event e3 = {.events = EPOLLIN, .data.ptr = &b->ev_wake};
  struct epoll_event e4 = {.events = EPOLLIN, .data.ptr = &b->ev_retry};
  if (epoll_ctl(b->ep, EPOLL_CTL_ADD, b->lfd, &e1) < 0 ||
      epoll_ctl(b->ep, EPOLL_CTL_ADD, b->sfd, &e2) < 0 ||
      epoll_ctl(b->ep, EPOLL_CTL_ADD, b->wakefd, &e3) < 0 ||
      epoll_ctl(b->ep, EPOLL_CTL_ADD, b->retry_tfd, &e4) < 0)
    return al_make_error(err, errno, "epoll_ctl");
  return 0;
}

int al_broker_run(const al_broker_opts *opts, al_error *err)
{
  struct broker b = {.ep = -1, .lfd = -1, .sfd = -1, .wakefd = -1, .retry_tfd = -1, .lease_fd = -1};
  pthread_mutex_init(&b.done_lock, NULL);
  int ret = -1;
  if (setup(&b, opts, err) < 0)
    goto out;
  if (b.cfg->gitlab_token_file)
    al_info("broker ready: GitLab project access tokens (gitlab.token_file), API %s, %zu "
            "projects, no audit grant (the GitLab audit is not built yet)",
            b.cfg->api_url, b.cfg->n_repos);
  else
    al_info("broker ready: app %s, API %s, %zu repositories, audit reads with %s",
            b.cfg->app_id ? b.cfg->app_id : b.cfg->client_id, b.cfg->api_url, b.cfg->n_repos,
            b.audit_key               ? "the audit App"
            : b.cfg->audit_token_file ? "audit.token_file"
                                      : "the App's own token");
  if (opts->started)
    *opts->started = true;
  bk_start_retry(&b); /* what an earlier run left (open_keep) */
  for (;;) {
    if (b.stopping && !b.conns && b.jobs_running == 0) {
      if (b.n_pending > 0 && !b.shutdown_retry_done) {
        b.shutdown_retry_done = true;
        bk_start_retry(&b);
        continue;
      }
      break;
    }
    struct epoll_event evs[32];
    int n = epoll_wait(b.ep, evs, 32, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      al_error_log("epoll_wait: %s", strerror(errno));
      begin_shutdown(&b);
      continue;
    }
    for (int i = 0; i < n; i++) {
      struct ev *ev = evs[i].data.ptr;
      switch (ev->kind) {
      case EV_LISTEN:
        if (!b.stopping)
          on_accept(&b);
        break;
      case EV_SIGNAL: {
        struct signalfd_siginfo si;
        while (read(b.sfd, &si, sizeof si) == sizeof si) {
          if (si.ssi_signo == SIGHUP)
            al_info("SIGHUP ignored (restart to reload the config)");
          else
            begin_shutdown(&b);
        }
        break;
      }
      case EV_WAKE:
        bk_drain_jobs(&b);
        break;
      case EV_RETRY: {
        uint64_t v;
        (void)!read(b.retry_tfd, &v, sizeof v);
        bk_start_retry(&b);
        break;
      }
      case EV_CONN: {
        struct conn *c = ev->c;
        if (c->dead)
          break;
        uint32_t e = evs[i].events;
        if (e & EPOLLOUT)
          bk_conn_flush(c);
        if (!c->dead && e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
          bk_conn_readable(c); /* reads to EOF; EOF ends the lease */
        break;
      }
      case EV_TIMER:
        if (!ev->c->dead)
          on_timer(ev->c);
        break;
      default:
        break;
      }
    }
    bk_reap_dead(&b);
  }
  ret = 0;
  if (b.n_pending > 0) {
    for (size_t i = 0; i < b.n_pending; i++) {
      al_error_log("token %s: revocation could not be confirmed before exit; it expires at %s%s",
                   b.pending[i].fp, b.pending[i].expires_at_str,
                   b.keep ? "; kept in the keyring: the next start revokes it" : "");
      al_token_clear(&b.pending[i]);
    }
    ret = al_make_error(err, EPROTO, "%zu token(s) could not be confirmed revoked", b.n_pending);
  }
  al_info("broker stopped");
out:
  free(b.pending);
  al_redact_clear();
  unlink_own_socket(&b);
  al_keep_close(b.keep);
  bk_reap_dead(&b);
  int *fds[] = {&b.lfd, &b.sfd, &b.ep, &b.wakefd, &b.retry_tfd, &b.lease_fd};
  for (size_t i = 0; i < AL_ARRAY_SIZE(fds); i++)
    if (*fds[i] >= 0)
      close(*fds[i]);
  al_gh_free(b.gh);
  al_gh_free(b.audit_gh);
  EVP_PKEY_free(b.key);
  EVP_PKEY_free(b.audit_key);
  al_broker_config_free(b.cfg);
  pthread_mutex_destroy(&b.done_lock);
  return ret;
}

/* ---- sockets ---------------------------------------------------------- */

int al_broker_inherited_listener(al_error *err)
{
  const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
  if (!pid || !fds)
    return 0;
  bool mine = strtol(pid, NULL, 10) == (long)getpid();
  long n = strtol(fds, NULL, 10);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!mine || n < 1)
    return 0;
  int fd = 3; /* SD_LISTEN_FDS_START */
  int v = 0;
  socklen_t l = sizeof v;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0 || !v)
    return al_make_error(err, EINVAL, "fd 3 from systemd is not a listening socket");
  int dom = 0;
  l = sizeof dom;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) < 0 || dom != AF_UNIX)
    return al_make_error(err, EINVAL, "fd 3 from systemd is not an AF_UNIX socket");
  al_set_cloexec(fd, true);
  for (long i = 1; i < n; i++)
    close(3 + (int)i); /* only one socket is used */
  return fd;
}

int al_broker_listen_unix(const char *path, al_error *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return al_make_error(err, ENAMETOOLONG, "socket path `%s`", path);
  strcpy(sa.sun_path, path);
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return al_make_error(err, EEXIST, "`%s` exists and is not a socket", path);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int r = probe >= 0 ? connect(probe, (struct sockaddr *)&sa, sizeof sa) : -1;
    int e = errno;
    if (probe >= 0)
      close(probe);
    if (r == 0)
      return al_make_error(err, EADDRINUSE, "another broker is listening on `%s`", path);
    if (e != ECONNREFUSED)
      return al_make_error(err, e, "probing `%s`", path);
    if (unlink(path) < 0)
      return al_make_error(err, errno, "removing the stale socket `%s`", path);
  }
  /* Bound and listening under a temporary name, then renamed into place:
   * the path never names a socket nobody listens on yet (a client that
   * sees it can connect at once). */
  struct sockaddr_un tmp = {.sun_family = AF_UNIX};
  int tn = snprintf(tmp.sun_path, sizeof tmp.sun_path, "%s.%d", path, (int)getpid());
  if (tn < 0 || (size_t)tn >= sizeof tmp.sun_path)
    return al_make_error(err, ENAMETOOLONG, "socket path `%s`", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return al_make_error(err, errno, "socket");
  unlink(tmp.sun_path); /* a leftover of a broker with our pid that was killed */
  mode_t old = umask(0177);
  int r = bind(fd, (struct sockaddr *)&tmp, sizeof tmp);
  int e = errno;
  umask(old);
  if (r < 0) {
    close(fd);
    return al_make_error(err, e, "bind `%s`", tmp.sun_path);
  }
  if (chmod(tmp.sun_path, 0600) < 0 || listen(fd, 128) < 0 || rename(tmp.sun_path, path) < 0) {
    e = errno;
    close(fd);
    unlink(tmp.sun_path);
    return al_make_error(err, e, "listen `%s`", path);
  }
  return fd;
}
