/* The egress proxy's event loop and connection state machine. See proxy.h.
 *
 * One connection (al_proxy_conn) walks these states:
 *
 *   HEAD ──decide──► RESOLVE ──► CONNECT ──► SNI (tls entries) ──► RELAY
 *     │                 │           │          │                      │
 *     └──── deny: 4xx/5xx, X-Airlock-Deny ──► DRAIN ──► closed ◄──────┘
 *
 * HEAD reads the request head (http.c); decide() canonicalizes the target
 * (host.c) and matches the run's allowlist before any name is resolved;
 * RESOLVE asks c-ares (or takes a pin) and classifies every answer
 * (addr.c); CONNECT dials the checked address; SNI buffers the client's
 * first flight and parses the ClientHello (tls.c); RELAY splices bytes
 * through one pipe per direction. DRAIN has written an error response and
 * reads what the client still sends for a moment, so that closing does not
 * reset the connection before the client has read the answer.
 *
 * Memory safety across a batch of epoll events: a connection that closes
 * sets its watches' fds to -1 (the loop skips them) and goes to the
 * graveyard, which is freed after the batch. A connection closed while a
 * DNS query is in flight stays a zombie until c-ares calls back. */
#include "proxy/proxy.h"

#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
#include "proxy/addr.h"
#include "proxy/auditlog.h"
#include "proxy/handoff.h"
#include "proxy/host.h"
#include "proxy/http.h"
#include "proxy/loop.h"
#include "proxy/tls.h"

#define container_of(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

#define TICK_MS 250
#define DRAIN_MS 1000
#define MAX_ADDRS 8
/* Per-direction pipe size, and the fixed receive buffer of the origin
 * socket (a fixed SO_RCVBUF turns off TCP autotuning, which would grow it
 * to tcp_rmem's maximum, 32 MiB here, per connection, outside the
 * sandbox's memory limit). With the default cap of 64 connections a run
 * can pin at most about 64 * 3 MiB of host memory. */
#define PIPE_WANT (512 << 10)
#define ORIGIN_RCVBUF (512 << 10)
#define COPY_BUF 65536
#define FIRST_BUF 16384 /* reads are copied until one fills this; then splice */
#define MAX_REASONS 64
#define DEFAULT_GLOBAL_CONNS 4096

/* ---- shared state ---- */

/* Counters kept per run and for the whole process (admin socket). */
typedef struct al_proxy_counters {
  uint64_t conns_total, conns_allowed, conns_denied, bytes_up, bytes_down;
  struct {
    const char *reason; /* static string */
    uint64_t n;
  } denials[MAX_REASONS];
  size_t n_denials;
} al_proxy_counters;

/* A policy in use, with its resolver channel. Reference-counted: runs and
 * connections hold references; the last one puts it on the dead list. */
typedef struct al_proxy_policy {
  struct al_proxy *px;
  const al_policy *p;
  al_policy *owned; /* non-NULL when loaded by a reload: freed with us */
  int refs;
  ares_channel ch;
  struct ares_watch *watches;
  struct al_proxy_policy *next; /* px->policies */
} al_proxy_policy;

/* One c-ares socket in the loop. */
typedef struct ares_watch {
  al_watch w;
  al_proxy_policy *pol;
  struct ares_watch *next;
} ares_watch;

typedef struct al_proxy_run {
  al_watch w; /* the listener */
  struct al_proxy *px;
  const char *run_id;
  const al_proxy_handoff *handoff;
  al_proxy_policy *pol;
  uint32_t n_conns;
  /* bytes client -> origin this run: &egress_local, or the counter shared
   * with the forge gateway (handoff.h), which adds what it forwards */
  uint64_t egress_local;
  uint64_t *egress_used;
  al_proxy_counters cnt;
} al_proxy_run;

static uint64_t egress_get(const al_proxy_run *r)
{
  return __atomic_load_n(r->egress_used, __ATOMIC_RELAXED);
}

static void egress_add(al_proxy_run *r, uint64_t n)
{
  __atomic_add_fetch(r->egress_used, n, __ATOMIC_RELAXED);
}

enum conn_state { ST_HEAD, ST_RESOLVE, ST_CONNECT, ST_SNI, ST_RELAY, ST_DRAIN, ST_CLOSED };

/* One direction of a relay: src -> pipe -> dst, with a userspace queue
 * (`pend`) drained first (the 200 response, a rebuilt head, a buffered
 * ClientHello) and used alone when splice(2) cannot serve. A direction
 * starts with copied reads of at most FIRST_BUF bytes and makes its pipe
 * only when one read fills that (`bulk`): a short exchange (a small
 * request, an answer of a few KiB) costs no pipe2/fcntl/close and fewer
 * syscalls; a bulk transfer is spliced after its first 16 KiB. */
typedef struct relay_dir {
  int pipe[2];
  size_t in_pipe;
  char *pend;
  size_t pend_off, pend_len;
  bool src_eof, done, copy, bulk;
  uint64_t bytes;
} relay_dir;

typedef struct al_proxy_conn {
  al_watch cw, ow; /* client, origin */
  struct al_proxy *px;
  al_proxy_run *run;
  al_proxy_policy *pol;
  struct al_proxy_conn *prev, *next; /* live list, or graveyard (next only) */
  enum conn_state st;
  bool c_rd, c_wr, o_rd, o_wr; /* edge-triggered readiness we have not used up */
  bool dns_pending, opened, cut, slot_released;
  uint64_t t_start, deadline, last_io;
  char client[64];

  char *buf; /* client bytes during HEAD and SNI */
  size_t buf_len, buf_cap;

  /* the decision */
  char *target; /* raw request-target, escaped to printable ASCII */
  al_host host;
  uint16_t port;
  bool tls, plain;
  uint64_t body_left; /* plain HTTP: request body bytes still to forward */
  char sni[256];
  char dialled[INET6_ADDRSTRLEN + 8];
  const char *reason;
  const char *detail;

  struct sockaddr_storage addrs[MAX_ADDRS];
  socklen_t addr_lens[MAX_ADDRS];
  size_t n_addrs, addr_i;

  relay_dir up, down; /* client -> origin, origin -> client */
} al_proxy_conn;

typedef struct al_proxy {
  const al_proxy_config *cfg;
  al_loop loop;
  al_watch sig_w, tick_w, admin_w;
  bool stop, accept_paused;
  al_proxy_run *runs;
  size_t n_runs;
  al_proxy_policy *policies, *dead_policies;
  struct ares_watch *dead_watches;
  al_proxy_conn *live, *graveyard;
  uint32_t n_conns, n_drain, max_conns;
  al_addr_set local;
  al_proxy_counters cnt;
  al_auditlog log; /* the capped decision log (auditlog.h) */
} al_proxy;

static void conn_close(al_proxy_conn *c);
static void conn_pump(al_proxy_conn *c);

/* ---- counters and the audit log ---- */

static void count_denial(al_proxy_counters *k, const char *reason)
{
  k->conns_denied++;
  for (size_t i = 0; i < k->n_denials; i++)
    if (strcmp(k->denials[i].reason, reason) == 0) {
      k->denials[i].n++;
      return;
    }
  if (k->n_denials < MAX_REASONS) {
    k->denials[k->n_denials].reason = reason;
    k->denials[k->n_denials++].n = 1;
  }
}

static json_t *counters_json(const al_proxy_counters *k)
{
  json_t *d = json_object();
  for (size_t i = 0; i < k->n_denials; i++)
    json_object_set_new(d, k->denials[i].reason, json_integer((json_int_t)k->denials[i].n));
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "connections", (json_int_t)k->conns_total,
                   "allowed", (json_int_t)k->conns_allowed, "denied", (json_int_t)k->conns_denied,
                   "bytes_up", (json_int_t)k->bytes_up, "bytes_down", (json_int_t)k->bytes_down,
                   "denials", d);
}

/* Escape anything but printable ASCII as \xNN so raw client bytes can be
 * logged as a JSON string. At most LOG_TARGET_MAX bytes of the target are
 * kept, then "...(N bytes, sha256:…)": a hostile client must not be able
 * to fill the run's audit log with a few huge requests and push its later
 * decisions out of the record. */
#define LOG_TARGET_MAX 256
static char *escape_raw(const char *s, size_t full_len)
{
  size_t len = full_len > LOG_TARGET_MAX ? LOG_TARGET_MAX : full_len;
  char *out = al_xmalloc(len * 4 + 96), *o = out;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '\\')
      *o++ = (char)ch;
    else
      o += sprintf(o, "\\x%02x", ch);
  }
  if (full_len > len) {
    char hex[65];
    al_sha256_hex(s, full_len, hex);
    o += sprintf(o, "...(%zu bytes, sha256:%.12s)", full_len, hex);
  }
  *o = '\0';
  return out;
}

static void audit_write(al_proxy *px, json_t *j)
{
  if (px->cfg->audit_fd < 0) {
    json_decref(j);
    return;
  }
  al_auditlog_write(&px->log, j); /* redacted, capped, never silently lost */
}

static json_t *time_json(void)
{
  struct timespec ts;
  struct tm tm;
  char b[40];
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(b + n, sizeof b - n, ".%03ldZ", ts.tv_nsec / 1000000);
  return json_string(b);
}

/* One audit line. event: "open" (a tunnel was allowed and starts),
 * "close" (an allowed tunnel ended), "deny" (refused or cut). */
static void audit_conn(al_proxy_conn *c, const char *event, const char *decision)
{
  json_t *j = json_object();
  json_object_set_new(j, "time", time_json());
  json_object_set_new(j, "event", json_string(event));
  json_object_set_new(j, "run", json_string(c->run->run_id));
  json_object_set_new(j, "client", json_string(c->client));
  json_object_set_new(j, "target", c->target ? json_string(c->target) : json_null());
  json_object_set_new(j, "host", c->host.name[0] ? json_string(c->host.name) : json_null());
  json_object_set_new(j, "port", c->port ? json_integer(c->port) : json_null());
  json_object_set_new(j, "address", c->dialled[0] ? json_string(c->dialled) : json_null());
  json_object_set_new(j, "sni", c->sni[0] ? json_string(c->sni) : json_null());
  json_object_set_new(j, "decision", json_string(decision));
  json_object_set_new(j, "reason", c->reason ? json_string(c->reason) : json_null());
  if (c->detail)
    json_object_set_new(j, "detail", json_string(c->detail));
  json_object_set_new(j, "bytes_up", json_integer((json_int_t)c->up.bytes));
  json_object_set_new(j, "bytes_down", json_integer((json_int_t)c->down.bytes));
  json_object_set_new(j, "duration_ms", json_integer((json_int_t)(al_now_ms() - c->t_start)));
  audit_write(c->px, j);
}

/* ---- policies and the resolver ---- */

static void ares_sock_cb(void *data, ares_socket_t fd, int readable, int writable);

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

static al_proxy_policy *policy_new(al_proxy *px, const al_policy *p, al_policy *owned,
                                   al_error *err)
{
  struct ares_options o;
  al_proxy_policy *pol = al_xcalloc(1, sizeof *pol);

  pol->px = px;
  pol->p = p;
  pol->owned = owned;
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
  pol->next = px->policies;
  px->policies = pol;
  return pol;
}

static al_proxy_policy *policy_ref(al_proxy_policy *pol)
{
  pol->refs++;
  return pol;
}

/* Drop a reference; the last one moves the policy to the dead list, which
 * is destroyed after the current batch (never inside a c-ares callback). */
static void policy_unref(al_proxy_policy *pol)
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

static void policy_destroy(al_proxy_policy *pol)
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
  if (pol->owned)
    al_policy_free(pol->owned);
  free(pol);
}

static const al_net_allow *policy_match(const al_policy *p, const al_host *h, uint16_t port)
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

static const char *policy_pin(const al_policy *p, const char *host)
{
  for (size_t i = 0; i < p->network.n_pin; i++)
    if (strcmp(p->network.pin[i].host, host) == 0)
      return p->network.pin[i].address;
  return NULL;
}

/* ---- connection helpers ---- */

static bool sockaddr_from_text(const char *text, uint16_t port, struct sockaddr_storage *ss,
                               socklen_t *len)
{
  struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)ss;

  memset(ss, 0, sizeof *ss);
  if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    *len = sizeof *s4;
    return true;
  }
  if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    *len = sizeof *s6;
    return true;
  }
  return false;
}

static void sockaddr_text(const struct sockaddr *sa, char *out, size_t n)
{
  char a[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const void *)sa;
    inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a);
    snprintf(out, n, "%s:%u", a, ntohs(s4->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const void *)sa;
    inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a);
    snprintf(out, n, "[%s]:%u", a, ntohs(s6->sin6_port));
  } else {
    snprintf(out, n, "?");
  }
}

static const char *status_text(int status)
{
  switch (status) {
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 408:
    return "Request Timeout";
  case 411:
    return "Length Required";
  case 431:
    return "Request Header Fields Too Large";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "Error";
  }
}

/* Refuse: answer `status` with X-Airlock-Deny (never an address), log the
 * decision and drain. Usable in every state before RELAY. */
static void conn_deny(al_proxy_conn *c, int status, const char *reason, const char *detail)
{
  char resp[384];
  int n;

  c->reason = reason;
  c->detail = detail;
  count_denial(&c->run->cnt, reason);
  count_denial(&c->px->cnt, reason);
  audit_conn(c, "deny", "deny");
  if (c->ow.fd >= 0) {
    close(c->ow.fd);
    c->ow.fd = -1;
  }
  if (status == 0 || c->st == ST_SNI || c->st == ST_RELAY) {
    /* inside a tunnel there is no HTTP to answer with */
    conn_close(c);
    return;
  }
  /* A one-line body so `curl -s` users see why; never an address. */
  char body[96];
  int bl = snprintf(body, sizeof body, "airlock: denied (%s)\n", reason);
  n = snprintf(resp, sizeof resp,
               "HTTP/1.1 %d %s\r\nX-Airlock-Deny: %s\r\nContent-Type: text/plain\r\n"
               "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
               status, status_text(status), reason, bl, body);
  (void)send(c->cw.fd, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(c->cw.fd, SHUT_WR);
  free(c->buf);
  c->buf = NULL;
  c->buf_len = c->buf_cap = 0;
  if (c->px->n_drain >= c->px->max_conns) { /* too many refusals in flight */
    conn_close(c);
    return;
  }
  /* a refused connection gives its slot back while it drains */
  c->st = ST_DRAIN;
  c->deadline = al_now_ms() + DRAIN_MS;
  c->px->n_drain++;
  c->run->n_conns--;
  c->px->n_conns--;
  c->slot_released = true;
  conn_pump(c); /* may already see EOF */
}

static void dir_free(relay_dir *d)
{
  if (d->pipe[0] >= 0)
    close(d->pipe[0]);
  if (d->pipe[1] >= 0)
    close(d->pipe[1]);
  d->pipe[0] = d->pipe[1] = -1;
  free(d->pend);
  d->pend = NULL;
}

/* Close both sockets, log the end of an allowed tunnel, leave the live
 * list. Memory goes to the graveyard (or waits for c-ares as a zombie). */
static void conn_close(al_proxy_conn *c)
{
  al_proxy *px = c->px;

  if (c->st == ST_CLOSED)
    return;
  if (c->st == ST_DRAIN)
    px->n_drain--;
  if (c->opened) {
    audit_conn(c, "close", c->cut ? "deny" : "allow");
    if (c->cut) {
      count_denial(&c->run->cnt, c->reason);
      count_denial(&px->cnt, c->reason);
    }
  }
  c->run->cnt.bytes_up += c->up.bytes;
  c->run->cnt.bytes_down += c->down.bytes;
  px->cnt.bytes_up += c->up.bytes;
  px->cnt.bytes_down += c->down.bytes;
  c->st = ST_CLOSED;
  if (c->cw.fd >= 0)
    close(c->cw.fd);
  if (c->ow.fd >= 0)
    close(c->ow.fd);
  c->cw.fd = c->ow.fd = -1;
  dir_free(&c->up);
  dir_free(&c->down);
  if (c->prev)
    c->prev->next = c->next;
  else
    px->live = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->prev = NULL;
  if (!c->slot_released) {
    c->run->n_conns--;
    px->n_conns--;
  }
  if (!c->dns_pending) {
    c->next = px->graveyard;
    px->graveyard = c;
  } else {
    c->next = NULL;
  }
}

static void conn_free(al_proxy_conn *c)
{
  policy_unref(c->pol);
  free(c->buf);
  free(c->target);
  free(c);
}

/* ---- relay ---- */

static int dir_make_pipe(relay_dir *d)
{
  if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
    d->copy = true; /* out of pipes: fall back to read/write */
    return 0;
  }
  (void)fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_WANT);
  return 0;
}

/* Move bytes src -> dst as far as readiness allows. Returns 0, or -1 when
 * the connection must close (c->reason set for a policy cut). `limit` caps
 * the bytes read from src (egress budget, request body). */
static int dir_pump(al_proxy_conn *c, relay_dir *d, int src, int dst, bool *src_rd, bool *dst_wr,
                    uint64_t limit)
{
  bool progress = true;

  while (progress) {
    progress = false;
    /* 1. the userspace queue */
    while (d->pend && d->pend_off < d->pend_len && *dst_wr) {
      ssize_t n = send(dst, d->pend + d->pend_off, d->pend_len - d->pend_off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN) {
          *dst_wr = false;
          break;
        }
        return -1;
      }
      d->pend_off += (size_t)n;
      d->bytes += (uint64_t)n;
      c->last_io = al_now_ms();
      progress = true;
    }
    if (d->pend && d->pend_off < d->pend_len)
      break;
    if (d->pend) {
      free(d->pend);
      d->pend = NULL;
      d->pend_off = d->pend_len = 0;
    }
    /* 2. pipe -> dst */
    if (d->in_pipe > 0 && *dst_wr) {
      ssize_t n =
          splice(d->pipe[0], NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n < 0) {
        if (errno == EAGAIN)
          *dst_wr = false;
        else if (errno != EINTR)
          return -1;
      } else {
        d->in_pipe -= (size_t)n;
        d->bytes += (uint64_t)n;
        c->last_io = al_now_ms();
        progress = true;
      }
    }
    /* 3. src -> pipe, only into an empty pipe: then EAGAIN means src is dry */
    if (d->in_pipe == 0 && !d->src_eof && *src_rd && limit > 0) {
      size_t want = limit < PIPE_WANT ? (size_t)limit : PIPE_WANT;
      ssize_t n;
      if (d->bulk && !d->copy && d->pipe[0] < 0)
        dir_make_pipe(d);
      bool copy = d->copy || !d->bulk;
      if (!copy) {
        n = splice(src, NULL, d->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n < 0 && errno == EINVAL) {
          d->copy = true; /* splice cannot serve this pair */
          continue;
        }
      } else {
        size_t cap = d->copy ? COPY_BUF : FIRST_BUF;
        if (want > cap)
          want = cap;
        d->pend = al_xmalloc(want);
        n = recv(src, d->pend, want, 0);
        if (n <= 0) {
          free(d->pend);
          d->pend = NULL;
        } else {
          d->pend_len = (size_t)n;
          if ((size_t)n == want)
            d->bulk = true; /* more is coming fast: splice from now on */
        }
      }
      if (n == 0) {
        d->src_eof = true;
      } else if (n < 0) {
        if (errno == EAGAIN)
          *src_rd = false;
        else if (errno != EINTR)
          return -1;
      } else {
        if (!copy)
          d->in_pipe += (size_t)n;
        if (d == &c->up) {
          egress_add(c->run, (uint64_t)n);
          if (c->plain)
            c->body_left -= (uint64_t)n;
        }
        progress = true;
      }
    }
  }
  return 0;
}

/* How many more bytes may go client -> origin. */
static uint64_t up_limit(al_proxy_conn *c)
{
  uint64_t lim = UINT64_MAX;
  uint64_t budget = c->pol->p->network.egress_budget;
  if (budget) {
    uint64_t used = egress_get(c->run);
    lim = used >= budget ? 0 : budget - used;
  }
  if (c->plain && c->body_left < lim)
    lim = c->body_left;
  return lim;
}

static void relay(al_proxy_conn *c)
{
  uint64_t lim = up_limit(c);

  if (dir_pump(c, &c->up, c->cw.fd, c->ow.fd, &c->c_rd, &c->o_wr, lim) < 0 ||
      dir_pump(c, &c->down, c->ow.fd, c->cw.fd, &c->o_rd, &c->c_wr, UINT64_MAX) < 0) {
    conn_close(c);
    return;
  }
  /* half-close: once a side has said EOF and its bytes are through */
  if (c->up.src_eof && c->up.in_pipe == 0 && !c->up.pend && !c->up.done) {
    shutdown(c->ow.fd, SHUT_WR);
    c->up.done = true;
  }
  if (c->down.src_eof && c->down.in_pipe == 0 && !c->down.pend && !c->down.done) {
    shutdown(c->cw.fd, SHUT_WR);
    c->down.done = true;
  }
  if (c->plain) {
    /* one request per connection: the origin's answer ends it */
    if (c->down.done)
      conn_close(c);
    return;
  }
  if (c->up.done && c->down.done) {
    conn_close(c);
    return;
  }
  uint64_t budget = c->pol->p->network.egress_budget;
  if (budget && egress_get(c->run) >= budget && !c->up.src_eof && (!c->plain || c->body_left > 0)) {
    c->reason = "egress-budget";
    c->cut = true;
    conn_close(c);
  }
}

/* ---- DNS and connect ---- */

static void conn_connect_next(al_proxy_conn *c);

/* A CONNECT to a forge host: answer 200, pass both fds and the early
 * bytes to the gateway (handoff.h), log "handoff" and forget the
 * connection. The watches leave epoll first: the gateway's dups keep the
 * sockets open, so close(2) alone would not remove them. */
static void conn_handoff(al_proxy_conn *c)
{
  static const char ok200[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  static uint64_t next_id;
  al_handoff_msg m = {.magic = AL_HANDOFF_MAGIC, .version = AL_HANDOFF_VERSION, .port = c->port};
  al_error e = {0};

  m.conn_id = ++next_id;
  m.early_len = (uint32_t)c->buf_len;
  snprintf(m.host, sizeof m.host, "%s", c->host.name);
  snprintf(m.client, sizeof m.client, "%s", c->client);
  al_loop_del(&c->px->loop, &c->cw);
  al_loop_del(&c->px->loop, &c->ow);
  if (c->buf_len > AL_HANDOFF_EARLY_MAX ||
      send(c->cw.fd, ok200, sizeof ok200 - 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
          (ssize_t)(sizeof ok200 - 1) ||
      al_handoff_send(c->run->handoff->fd, &m, c->buf, c->cw.fd, c->ow.fd, &e) < 0) {
    conn_deny(c, 0, "gateway-unavailable", e.msg[0] ? e.msg : NULL);
    return;
  }
  c->reason = "gateway";
  c->run->cnt.conns_allowed++;
  c->px->cnt.conns_allowed++;
  audit_conn(c, "handoff", "allow");
  conn_close(c);
}

static void conn_established(al_proxy_conn *c)
{
  static const char ok200[] = "HTTP/1.1 200 Connection established\r\n\r\n";

  sockaddr_text((struct sockaddr *)&c->addrs[c->addr_i], c->dialled, sizeof c->dialled);
  c->last_io = al_now_ms();
  if (al_handoff_matches(c->run->handoff, c->host.name, c->port)) {
    if (c->plain)
      conn_deny(c, 403, "gateway-plain-http", NULL);
    else
      conn_handoff(c);
    return;
  }
  if (c->plain) {
    c->st = ST_RELAY;
    c->opened = true;
    c->run->cnt.conns_allowed++;
    c->px->cnt.conns_allowed++;
    audit_conn(c, "open", "allow");
    conn_pump(c);
    return;
  }
  c->down.pend = al_xmalloc(sizeof ok200 - 1);
  memcpy(c->down.pend, ok200, sizeof ok200 - 1);
  c->down.pend_len = sizeof ok200 - 1;
  c->down.bytes = 0;
  if (c->tls) {
    c->st = ST_SNI;
    c->deadline = al_now_ms() + c->pol->p->network.head_timeout_ms;
  } else {
    c->st = ST_RELAY;
    c->opened = true;
    c->run->cnt.conns_allowed++;
    c->px->cnt.conns_allowed++;
    audit_conn(c, "open", "allow");
    if (c->buf_len) { /* early bytes sent with the CONNECT */
      c->up.pend = c->buf;
      c->up.pend_len = c->buf_len;
      c->buf = NULL;
      c->buf_len = c->buf_cap = 0;
    }
  }
  conn_pump(c);
}

static void origin_ready(al_watch *w, uint32_t ev)
{
  al_proxy_conn *c = container_of(w, al_proxy_conn, ow);

  if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    c->o_rd = true;
  if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
    c->o_wr = true;
  if (c->st == ST_CONNECT) {
    if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
      return;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(c->ow.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
      close(c->ow.fd);
      c->ow.fd = -1;
      c->o_rd = c->o_wr = false;
      c->addr_i++;
      conn_connect_next(c);
      return;
    }
    conn_established(c);
    return;
  }
  conn_pump(c);
}

static void conn_connect_next(al_proxy_conn *c)
{
  for (; c->addr_i < c->n_addrs; c->addr_i++) {
    struct sockaddr *sa = (struct sockaddr *)&c->addrs[c->addr_i];
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rcv = ORIGIN_RCVBUF;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    if (connect(fd, sa, c->addr_lens[c->addr_i]) < 0 && errno != EINPROGRESS) {
      close(fd);
      continue;
    }
    c->ow.fd = fd;
    c->ow.fn = origin_ready;
    c->st = ST_CONNECT;
    if (al_loop_add(&c->px->loop, &c->ow, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
      conn_deny(c, 502, "connect-failed", "epoll");
      return;
    }
    return;
  }
  conn_deny(c, 502, "connect-failed", NULL);
}

static void dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
  al_proxy_conn *c = arg;
  (void)timeouts;

  c->dns_pending = false;
  if (c->st != ST_RESOLVE) {
    if (res)
      ares_freeaddrinfo(res);
    if (c->st == ST_CLOSED) { /* a zombie: the client left while we asked */
      c->next = c->px->graveyard;
      c->px->graveyard = c;
    }
    return; /* else timed out and already answered */
  }
  if (status != ARES_SUCCESS || !res) {
    if (res)
      ares_freeaddrinfo(res);
    conn_deny(c, 502, "dns-failed", status == ARES_ENOTFOUND ? "no such name" : "lookup failed");
    return;
  }
  /* Every answer must be globally reachable: one bad answer refuses the
   * name (a rebinding resolver mixes them). */
  const char *bad = NULL;
  c->n_addrs = 0;
  for (struct ares_addrinfo_node *n = res->nodes; n; n = n->ai_next) {
    const char *w = al_addr_classify(n->ai_addr, &c->px->local);
    if (w) {
      bad = w;
      sockaddr_text(n->ai_addr, c->dialled, sizeof c->dialled); /* logged, never sent */
      break;
    }
    if (c->n_addrs < MAX_ADDRS && (size_t)n->ai_addrlen <= sizeof c->addrs[0]) {
      memcpy(&c->addrs[c->n_addrs], n->ai_addr, (size_t)n->ai_addrlen);
      c->addr_lens[c->n_addrs++] = (socklen_t)n->ai_addrlen;
    }
  }
  ares_freeaddrinfo(res);
  if (bad) {
    conn_deny(c, 403, "private-address", bad);
    return;
  }
  if (c->n_addrs == 0) {
    conn_deny(c, 502, "dns-failed", "no addresses");
    return;
  }
  c->dialled[0] = '\0';
  c->addr_i = 0;
  conn_connect_next(c);
}

/* After the allow decision: a pin, a literal, or a DNS query. */
static void conn_resolve(al_proxy_conn *c)
{
  const al_policy *p = c->pol->p;
  const char *pin = c->host.is_ip ? NULL : policy_pin(p, c->host.name);

  c->st = ST_RESOLVE;
  c->deadline = al_now_ms() + p->network.connect_timeout_ms;
  if (pin || c->host.is_ip) {
    const char *text = pin ? pin : c->host.name;
    if (!sockaddr_from_text(text, c->port, &c->addrs[0], &c->addr_lens[0])) {
      conn_deny(c, 502, "bad-pin", NULL);
      return;
    }
    if (!pin) { /* a listed literal is still checked; only pins skip the guard */
      const char *w = al_addr_classify((struct sockaddr *)&c->addrs[0], &c->px->local);
      if (w) {
        conn_deny(c, 403, "private-address", w);
        return;
      }
    }
    c->n_addrs = 1;
    c->addr_i = 0;
    conn_connect_next(c);
    return;
  }
  struct ares_addrinfo_hints hints;
  char port[8];
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NUMERICSERV;
  snprintf(port, sizeof port, "%u", c->port);
  c->dns_pending = true;
  /* may call dns_done before returning; nothing below may touch c */
  ares_getaddrinfo(c->pol->ch, c->host.name, port, &hints, dns_done, c);
}

/* ---- the decision ---- */

static char *rebuild_origin_form(al_proxy_conn *c, const al_http_request *req, const char *path,
                                 size_t path_len, size_t *out_len)
{
  size_t cap = req->head_len + 1024, n = 0; /* the new Host line is at most ~270 */
  char *o = al_xmalloc(cap);
  char hostport[AL_HOST_MAX + 16];

  if (c->host.family == AF_INET6)
    snprintf(hostport, sizeof hostport, "[%s]", c->host.name);
  else
    snprintf(hostport, sizeof hostport, "%s", c->host.name);
  if (c->port != 80)
    snprintf(hostport + strlen(hostport), sizeof hostport - strlen(hostport), ":%u", c->port);
  n += (size_t)snprintf(o + n, cap - n, "%.*s %.*s HTTP/1.1\r\nHost: %s\r\n", (int)req->method_len,
                        req->method, (int)path_len, path, hostport);
  for (size_t i = 0; i < req->n_headers; i++) {
    const al_http_header *h = &req->headers[i];
    if (al_http_header_is_hop(req, h))
      continue;
    n += (size_t)snprintf(o + n, cap - n, "%.*s: %.*s\r\n", (int)h->name_len, h->name,
                          (int)h->value_len, h->value);
  }
  n += (size_t)snprintf(o + n, cap - n, "Connection: close\r\n\r\n");
  *out_len = n;
  return o;
}

static void conn_decide(al_proxy_conn *c, const al_http_request *req)
{
  const al_policy *p = c->pol->p;
  const char *why = NULL;
  const char *path = NULL;
  size_t path_len = 0;
  bool connect = req->method_len == 7 && memcmp(req->method, "CONNECT", 7) == 0;

  c->target = escape_raw(req->target, req->target_len);
  if (!p->network.present) {
    conn_deny(c, 403, "no-network", NULL);
    return;
  }
  if (connect) {
    if (req->content_length > 0 || req->chunked) {
      conn_deny(c, 400, "connect-with-body", NULL);
      return;
    }
    if (al_authority_parse(req->target, req->target_len, &c->host, &c->port, &why) < 0) {
      conn_deny(c, 403, "bad-target", why);
      return;
    }
  } else {
    if (req->target[0] == '/' || (req->target_len == 1 && req->target[0] == '*')) {
      conn_deny(c, 403, "origin-form", NULL);
      return;
    }
    if (al_http_absolute_target(req->target, req->target_len, &c->host, &c->port, &path, &path_len,
                                &why) < 0) {
      conn_deny(c, 403, strcmp(why, "bad-scheme") == 0 ? "bad-scheme" : "bad-target", why);
      return;
    }
    al_host hh;
    uint16_t hp = 0;
    if (!req->host) {
      conn_deny(c, 403, "host-mismatch", "no Host field");
      return;
    }
    if (al_http_host_value(req->host->value, req->host->value_len, 80, &hh, &hp, &why) < 0 ||
        strcmp(hh.name, c->host.name) != 0 || hp != c->port) {
      conn_deny(c, 403, "host-mismatch", why);
      return;
    }
  }
  const al_net_allow *a = policy_match(p, &c->host, c->port);
  if (!a) {
    conn_deny(c, 403, c->host.is_ip ? "ip-literal" : "not-allowed", NULL);
    return;
  }
  if (p->network.egress_budget && egress_get(c->run) >= p->network.egress_budget) {
    conn_deny(c, 403, "egress-budget", NULL);
    return;
  }
  c->tls = a->tls;
  if (!connect) {
    if (a->tls) {
      conn_deny(c, 403, "tls-required", NULL);
      return;
    }
    if (req->chunked) {
      conn_deny(c, 411, "chunked-unsupported", NULL);
      return;
    }
    /* rebuilt into origin-form; the original head is never relayed */
    c->plain = true;
    c->body_left = req->content_length > 0 ? (uint64_t)req->content_length : 0;
    size_t extra = c->buf_len - req->head_len;
    if (extra > c->body_left)
      extra = (size_t)c->body_left; /* pipelined requests are dropped */
    size_t hl;
    char *head = rebuild_origin_form(c, req, path, path_len, &hl);
    c->up.pend = al_xrealloc(head, hl + extra);
    memcpy(c->up.pend + hl, c->buf + req->head_len, extra);
    c->up.pend_len = hl + extra;
    c->body_left -= extra;
    egress_add(c->run, hl + extra);
    free(c->buf);
    c->buf = NULL;
    c->buf_len = c->buf_cap = 0;
  } else if (c->buf_len == req->head_len) {
    /* nothing after the head: give the head buffer back now, so that an
     * open tunnel holds none (conn_sni allocates its own) */
    free(c->buf);
    c->buf = NULL;
    c->buf_len = c->buf_cap = 0;
  } else {
    /* keep bytes sent after the CONNECT head (an eager ClientHello) */
    memmove(c->buf, c->buf + req->head_len, c->buf_len - req->head_len);
    c->buf_len -= req->head_len;
  }
  conn_resolve(c);
}

/* ---- client side ---- */

/* Read what the client has into c->buf (up to buf_cap). Returns 1 on
 * data or nothing new, 0 on EOF, -1 on error. */
static int read_client(al_proxy_conn *c)
{
  while (c->buf_len < c->buf_cap) {
    ssize_t n = recv(c->cw.fd, c->buf + c->buf_len, c->buf_cap - c->buf_len, 0);
    if (n > 0) {
      c->buf_len += (size_t)n;
      continue;
    }
    if (n == 0)
      return 0;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN) {
      c->c_rd = false;
      return 1;
    }
    return -1;
  }
  return 1;
}

static void conn_head(al_proxy_conn *c)
{
  al_http_request req;
  const char *why = NULL;
  int r = read_client(c);

  int h = al_http_parse_head(c->buf, c->buf_len, &req, &why);
  if (h < 0) {
    conn_deny(c, why && strcmp(why, "head-too-large") == 0 ? 431 : 400, why, NULL);
    return;
  }
  if (h == 0) {
    if (r <= 0) {
      c->reason = r == 0 ? "client-closed" : "client-error";
      conn_close(c);
    }
    return;
  }
  conn_decide(c, &req);
}

static void conn_sni(al_proxy_conn *c)
{
  al_tls_hello hello;
  const char *why = NULL;
  al_host sni;

  if (c->buf_cap < AL_TLS_HELLO_MAX) {
    c->buf = al_xrealloc(c->buf, AL_TLS_HELLO_MAX);
    c->buf_cap = AL_TLS_HELLO_MAX;
  }
  int r = read_client(c);
  int t = al_tls_parse_client_hello((const uint8_t *)c->buf, c->buf_len, &hello, &why);
  if (t == 0) {
    if (r <= 0)
      conn_deny(c, 0, r == 0 ? "client-closed" : "client-error", "before ClientHello");
    return;
  }
  if (t < 0) {
    conn_deny(c, 0, why, NULL);
    return;
  }
  if (hello.has_sni)
    snprintf(c->sni, sizeof c->sni, "%s", hello.sni);
  if (hello.ech) {
    conn_deny(c, 0, "ech", NULL);
    return;
  }
  if (!hello.has_sni) {
    conn_deny(c, 0, "sni-missing", NULL);
    return;
  }
  if (al_host_canonicalize(hello.sni, hello.sni_len, &sni, &why) < 0 || sni.is_ip) {
    conn_deny(c, 0, "sni-malformed", why);
    return;
  }
  if (strcmp(sni.name, c->host.name) != 0) {
    conn_deny(c, 0, "sni-mismatch", NULL);
    return;
  }
  /* allowed: the buffered first flight goes to the origin unchanged */
  c->st = ST_RELAY;
  c->opened = true;
  c->run->cnt.conns_allowed++;
  c->px->cnt.conns_allowed++;
  audit_conn(c, "open", "allow");
  c->up.pend = c->buf;
  c->up.pend_len = c->buf_len;
  egress_add(c->run, c->buf_len);
  c->buf = NULL;
  c->buf_len = c->buf_cap = 0;
  conn_pump(c);
}

/* Do whatever the state allows with the readiness we hold. */
static void conn_pump(al_proxy_conn *c)
{
  switch (c->st) {
  case ST_HEAD:
    if (c->c_rd)
      conn_head(c);
    break;
  case ST_SNI: {
    /* flush the 200 first; the origin speaks only after the ClientHello */
    bool origin_rd = false; /* nothing is read from the origin yet */
    if (dir_pump(c, &c->down, c->ow.fd, c->cw.fd, &origin_rd, &c->c_wr, 0) < 0) {
      conn_deny(c, 0, "client-error", NULL);
      return;
    }
    if (c->c_rd || c->buf_len)
      conn_sni(c);
    break;
  }
  case ST_RELAY:
    relay(c);
    break;
  case ST_DRAIN: {
    char junk[4096];
    for (;;) {
      ssize_t n = recv(c->cw.fd, junk, sizeof junk, 0);
      if (n > 0)
        continue;
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      conn_close(c);
      break;
    }
    break;
  }
  case ST_RESOLVE:
  case ST_CONNECT:
  case ST_CLOSED:
  default:
    break;
  }
}

static void client_ready(al_watch *w, uint32_t ev)
{
  al_proxy_conn *c = container_of(w, al_proxy_conn, cw);

  if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    c->c_rd = true;
  if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
    c->c_wr = true;
  conn_pump(c);
}

/* ---- accepting ---- */

static void accept_one(al_proxy_run *run, int fd, const struct sockaddr_storage *ss)
{
  al_proxy *px = run->px;
  al_proxy_conn *c = al_xcalloc(1, sizeof *c);
  const al_policy *p = run->pol->p;

  c->px = px;
  c->run = run;
  c->pol = policy_ref(run->pol);
  c->cw.fd = fd;
  c->cw.fn = client_ready;
  c->ow.fd = -1;
  c->ow.fn = origin_ready;
  c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
  c->t_start = c->last_io = al_now_ms();
  c->st = ST_HEAD;
  c->deadline = c->t_start + p->network.head_timeout_ms;
  sockaddr_text((const struct sockaddr *)ss, c->client, sizeof c->client);
  c->next = px->live;
  if (px->live)
    px->live->prev = c;
  px->live = c;
  run->n_conns++;
  px->n_conns++;
  run->cnt.conns_total++;
  px->cnt.conns_total++;
  if (al_loop_add(&px->loop, &c->cw, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
    conn_close(c);
    return;
  }
  /* caps: per run (policy max_connections) and for the process. Refused
   * connections do not hold a run slot while they drain. */
  uint32_t cap = p->network.max_conns ? p->network.max_conns : 256;
  if (run->n_conns > cap || px->n_conns > px->max_conns) {
    conn_deny(c, 503, run->n_conns > cap ? "conn-limit" : "global-conn-limit", NULL);
    return;
  }
  c->buf_cap = AL_HTTP_HEAD_MAX;
  c->buf = al_xmalloc(c->buf_cap);
}

static void listener_ready(al_watch *w, uint32_t ev)
{
  al_proxy_run *run = container_of(w, al_proxy_run, w);
  (void)ev;

  for (;;) {
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        run->px->accept_paused = true; /* retried on the next tick */
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    accept_one(run, fd, &ss);
  }
}

/* ---- admin socket ---- */

static void admin_ready(al_watch *w, uint32_t ev)
{
  al_proxy *px = container_of(w, al_proxy, admin_w);
  (void)ev;

  for (;;) {
    int fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      return;
    json_t *runs = json_array();
    for (size_t i = 0; i < px->n_runs; i++) {
      json_t *r = counters_json(&px->runs[i].cnt);
      json_object_set_new(r, "run", json_string(px->runs[i].run_id));
      json_object_set_new(r, "active", json_integer(px->runs[i].n_conns));
      json_object_set_new(r, "egress_used", json_integer((json_int_t)egress_get(&px->runs[i])));
      json_array_append_new(runs, r);
    }
    json_t *all = counters_json(&px->cnt);
    json_object_set_new(all, "active", json_integer(px->n_conns));
    json_object_set_new(all, "runs", runs);
    char *s = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    if (s) {
      size_t n = strlen(s);
      s[n] = '\n';
      (void)al_write_all(fd, s, n + 1);
      free(s);
    }
    close(fd);
  }
}

static int admin_open(al_proxy *px, const char *path, al_error *err)
{
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  struct stat st;

  if (strlen(path) >= sizeof sun.sun_path)
    return al_make_error(err, ENAMETOOLONG, "admin socket `%s`", path);
  strcpy(sun.sun_path, path);
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(path); /* a stale socket of an earlier run */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return al_make_error(err, errno, "admin socket");
  mode_t old = umask(0177);
  int r = bind(fd, (struct sockaddr *)&sun, sizeof sun);
  umask(old);
  if (r < 0 || listen(fd, 16) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "admin socket `%s`", path);
  }
  px->admin_w.fd = fd;
  px->admin_w.fn = admin_ready;
  return al_loop_add(&px->loop, &px->admin_w, EPOLLIN) < 0
             ? al_make_error(err, errno, "epoll admin")
             : 0;
}

/* ---- signals, ticks, reload ---- */

static void reload(al_proxy *px)
{
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
  al_proxy_policy *pol = policy_new(px, np, np, &err);
  if (!pol) {
    al_policy_free(np);
    al_warn("proxy: reload refused, keeping the old policy: %s", err.msg);
    return;
  }
  for (size_t i = 0; i < px->n_runs; i++) {
    policy_unref(px->runs[i].pol);
    px->runs[i].pol = policy_ref(pol);
  }
  policy_unref(pol);
  json_t *j = json_pack("{s:o,s:s,s:s,s:s}", "time", time_json(), "event", "reload", "policy",
                        np->source ? np->source : "", "sha256", np->sha256);
  audit_write(px, j);
  al_info("proxy: policy reloaded from %s (sha256 %.12s)", px->cfg->reload_path, np->sha256);
}

static void signal_ready(al_watch *w, uint32_t ev)
{
  al_proxy *px = container_of(w, al_proxy, sig_w);
  struct signalfd_siginfo si;
  (void)ev;

  while (read(w->fd, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGHUP)
      reload(px);
    else
      px->stop = true;
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
        conn_deny(c, 408, "head-timeout", NULL);
      break;
    case ST_RESOLVE:
    case ST_CONNECT:
      if (now >= c->deadline)
        conn_deny(c, 504, c->st == ST_RESOLVE ? "dns-timeout" : "connect-timeout", NULL);
      break;
    case ST_SNI:
      if (now >= c->deadline)
        conn_deny(c, 0, "sni-timeout", NULL);
      break;
    case ST_RELAY:
      if (n->idle_timeout_ms && now - c->last_io >= n->idle_timeout_ms) {
        c->reason = "idle-timeout";
        conn_close(c);
      } else if (n->max_tunnel_ms && now - c->t_start >= n->max_tunnel_ms) {
        c->reason = "tunnel-lifetime";
        c->cut = true;
        conn_close(c);
      }
      break;
    case ST_DRAIN:
      if (now >= c->deadline)
        conn_close(c);
      break;
    case ST_CLOSED:
    default:
      break;
    }
  }
  /* c-ares timeouts */
  for (al_proxy_policy *pol = px->policies; pol; pol = pol->next)
    ares_process_fd(pol->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  if (px->accept_paused) {
    px->accept_paused = false;
    for (size_t i = 0; i < px->n_runs; i++)
      listener_ready(&px->runs[i].w, EPOLLIN);
  }
}

static void bury(al_proxy *px)
{
  while (px->graveyard) {
    al_proxy_conn *c = px->graveyard;
    px->graveyard = c->next;
    conn_free(c);
  }
  while (px->dead_policies) {
    al_proxy_policy *pol = px->dead_policies;
    px->dead_policies = pol->next;
    policy_destroy(pol);
  }
  while (px->dead_watches) {
    ares_watch *aw = px->dead_watches;
    px->dead_watches = aw->next;
    free(aw);
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

int al_proxy_serve(const al_proxy_config *cfg, al_error *err)
{
  al_proxy px_, *px = &px_;
  sigset_t mask, oldmask;
  int ret = -1;

  memset(px, 0, sizeof *px);
  px->cfg = cfg;
  al_auditlog_init(&px->log, cfg->audit_fd, cfg->audit_cap);
  px->sig_w.fd = px->tick_w.fd = px->admin_w.fd = -1;
  px->loop.epfd = -1;
  px->max_conns = cfg->max_conns_global ? cfg->max_conns_global : DEFAULT_GLOBAL_CONNS;
  if (cfg->n_listeners == 0)
    return al_make_error(err, EINVAL, "proxy: no listener");

  raise_nofile();
  signal(SIGPIPE, SIG_IGN);
  int ar = ares_library_init(ARES_LIB_INIT_ALL);
  if (ar != ARES_SUCCESS)
    return al_make_error(err, 0, "ares_library_init: %s", ares_strerror(ar));
  if (al_addr_set_local(&px->local) < 0)
    al_warn("proxy: getifaddrs failed; the host's own addresses are not refused by name");
  if (al_loop_init(&px->loop, err) < 0)
    goto out;

  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, &oldmask);
  px->sig_w.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  px->sig_w.fn = signal_ready;
  if (px->sig_w.fd < 0 || al_loop_add(&px->loop, &px->sig_w, EPOLLIN) < 0) {
    al_make_error(err, errno, "signalfd");
    goto out_sig;
  }
  px->tick_w.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  px->tick_w.fn = tick_ready;
  struct itimerspec its = {.it_interval = {0, TICK_MS * 1000000L},
                           .it_value = {0, TICK_MS * 1000000L}};
  if (px->tick_w.fd < 0 || timerfd_settime(px->tick_w.fd, 0, &its, NULL) < 0 ||
      al_loop_add(&px->loop, &px->tick_w, EPOLLIN) < 0) {
    al_make_error(err, errno, "timerfd");
    goto out_sig;
  }
  if (cfg->admin_path && admin_open(px, cfg->admin_path, err) < 0)
    goto out_sig;

  px->runs = al_xcalloc(cfg->n_listeners, sizeof *px->runs);
  px->n_runs = cfg->n_listeners;
  for (size_t i = 0; i < cfg->n_listeners; i++) {
    al_proxy_run *run = &px->runs[i];
    run->px = px;
    run->run_id = cfg->listeners[i].run_id ? cfg->listeners[i].run_id : "";
    run->handoff = cfg->listeners[i].handoff;
    run->egress_used =
        run->handoff && run->handoff->egress_used ? run->handoff->egress_used : &run->egress_local;
    run->pol = policy_new(px, cfg->listeners[i].policy, NULL, err);
    if (!run->pol)
      goto out_runs;
    run->w.fd = cfg->listeners[i].fd;
    run->w.fn = listener_ready;
    if (al_set_nonblock(run->w.fd, true) < 0 ||
        al_loop_add(&px->loop, &run->w, EPOLLIN | EPOLLET) < 0) {
      al_make_error(err, errno, "listener %zu", i);
      goto out_runs;
    }
  }

  if (cfg->ready && cfg->ready(cfg->ready_ctx, err) < 0)
    goto out_runs;

  while (!px->stop) {
    int n = al_loop_once(&px->loop, -1);
    if (n < 0) {
      al_make_error(err, -n, "epoll_wait");
      goto out_runs;
    }
    bury(px);
  }
  ret = 0;

out_runs:
  while (px->live) {
    px->live->reason = px->stop ? "shutdown" : "error";
    conn_close(px->live);
  }
  for (size_t i = 0; i < px->n_runs; i++) {
    if (px->runs[i].w.fd >= 0)
      al_loop_del(&px->loop, &px->runs[i].w);
    policy_unref(px->runs[i].pol);
  }
  /* zombies still waiting on DNS are released by the cancel callbacks */
  for (al_proxy_policy *pol = px->policies; pol; pol = pol->next)
    ares_cancel(pol->ch);
  bury(px);
  while (px->policies) { /* only left if a reference leaked; destroy anyway */
    al_proxy_policy *pol = px->policies;
    px->policies = pol->next;
    policy_destroy(pol);
  }
  bury(px);
  if (cfg->audit_fd >= 0) {
    /* the closing summary: exact counts, whatever the log could hold */
    json_t *runs = json_array();
    for (size_t i = 0; i < px->n_runs; i++) {
      json_t *r = counters_json(&px->runs[i].cnt);
      json_object_set_new(r, "run", json_string(px->runs[i].run_id));
      json_array_append_new(runs, r);
    }
    json_t *sum = counters_json(&px->cnt);
    json_object_set_new(sum, "time", time_json());
    json_object_set_new(sum, "runs", runs);
    al_auditlog_close(&px->log, sum);
  }
  free(px->runs);
out_sig:
  if (px->admin_w.fd >= 0) {
    close(px->admin_w.fd);
    if (cfg->admin_path) /* always set when admin_w is open */
      unlink(cfg->admin_path);
  }
  if (px->tick_w.fd >= 0)
    close(px->tick_w.fd);
  if (px->sig_w.fd >= 0)
    close(px->sig_w.fd);
  sigprocmask(SIG_SETMASK, &oldmask, NULL);
out:
  al_loop_close(&px->loop);
  al_addr_set_free(&px->local);
  ares_library_cleanup();
  return ret;
}
