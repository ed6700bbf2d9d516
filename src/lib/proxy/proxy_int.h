/* Internal to the egress proxy (src/lib/proxy/): what its files share.
 * Not an API (proxy.h is). The event loops and the connection state
 * machine, in files of one job each: accept.c (listeners, caps), head.c
 * (the request head and the decision), dial.c (DNS, the self-connect
 * guard, connect, hand-off), splice.c (the tunnel, and a plain origin's
 * response heads without X-Airlock-*) and budget.c, conn.c (deny, close, pump), stats.c
 * (counters, decision lines), policies.c (policies, resolver channels),
 * admin.c, transparent.c (the listeners the sandbox's /etc/hosts points
 * the allowed names at: decided by SNI or Host, as a CONNECT would be),
 * proxy.c (workers, signals, timer, reload, al_proxy_serve).
 *
 * One connection (al_proxy_conn) walks these states:
 *
 *   HEAD ──decide──► RESOLVE ──► CONNECT ──► SNI (tls entries) ──► SPLICE
 *     │                 │           │          │                      │
 *     └──── deny: 4xx/5xx, X-Airlock-Deny ──► DRAIN ──► closed ◄──────┘
 *
 * HEAD reads the request head (http.c); decide() canonicalizes the target
 * (host.c) and matches the run's allowlist before any name is resolved;
 * RESOLVE asks c-ares (or takes a pin) and classifies every answer
 * (addr.c); CONNECT dials the checked address; SNI buffers the client's
 * first flight and parses the ClientHello (tls.c); SPLICE splices bytes
 * through one pipe per direction. DRAIN has written an error response and
 * reads what the client still sends for a moment, so that closing does not
 * reset the connection before the client has read the answer.
 *
 * Memory safety across a batch of epoll events: a connection that closes
 * sets its watches' fds to -1 (the loop skips them) and goes to the
 * graveyard, which is freed after the batch. A connection closed while a
 * DNS query is in flight stays a zombie until c-ares calls back. */
#ifndef AL_PROXY_PROXY_INT_H
#define AL_PROXY_PROXY_INT_H

#include "proxy/proxy.h"

#include "common/lazycares.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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
#include "net/addr.h"
#include "proxy/decisions.h"
#include "proxy/handoff.h"
#include "net/host.h"
#include "net/http.h"
#include "proxy/loop.h"
#include "proxy/tls.h"

#define container_of(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

#define TICK_MS 250
#define DRAIN_MS 1000
#define MAX_ADDRS 8
/* Per-direction pipe size, and the fixed receive buffer of the origin
 * socket (a fixed SO_RCVBUF turns off TCP autotuning, which would grow it
 * to tcp_rmem's maximum, 32 MiB here, per connection, outside the
 * sandbox's memory limit; the kernel doubles the value for its
 * bookkeeping). 1 MiB each: a bulk tunnel splices ~0.5 MiB per call, half
 * the calls of 512 KiB (issue #19: 0.6 -> 0.5 CPU-s per GiB on a loaded
 * 2-vCPU machine; bench/proxy.py). A tunnel whose client does not read
 * pins at most the pipe, the origin buffer (2 MiB with the doubling) and
 * the client socket's autotuned send buffer (tcp_wmem's maximum, 4 MiB
 * here): with the default cap of 64 connections about 64 * 7 MiB per run. */
#define PIPE_WANT (1 << 20)
#define ORIGIN_RCVBUF (1 << 20)
#define COPY_BUF 65536
#define FIRST_BUF 16384 /* reads are copied until one fills this; then splice */
#define MAX_REASONS 64
#define DEFAULT_GLOBAL_CONNS 4096

/* ---- shared state ---- */

/* Counters kept per run and for the whole process (admin socket). */
typedef struct al_proxy_counters {
  uint64_t conns_total, conns_allowed, bytes_up, bytes_down;
  uint64_t conns_denied; /* refused by the policy or a rule (a decision) */
  uint64_t conns_failed; /* the way out failed: al_proxy_reason_is_failure */
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
  struct al_policy_hold *hold; /* non-NULL when loaded by a reload: one reference */
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

/* What the workers share of one run (one listener). Its counters are under
 * the process's stat lock; n_conns and egress_used are atomics, and while
 * the run has an egress budget every read that spends it holds budget_mu
 * (take the limit, read, add), so the budget is exact across workers. */
typedef struct al_proxy_run {
  const char *run_id;
  const al_proxy_handoff *handoff;
  _Atomic uint32_t n_conns;
  /* bytes client -> origin: &egress_local, or the counter shared with the
   * forge gateway (handoff.h egress_used), which adds what it forwards */
  _Atomic uint64_t egress_local;
  _Atomic uint64_t *egress_used;
  pthread_mutex_t budget_mu;
  al_proxy_counters cnt; /* under al_proxy_shared.stat_mu */
  /* the listener's own address (getsockname(2) at start; self_len 0 when
   * it could not be read): a dial to it is refused (dial.c, self-connect) */
  struct sockaddr_storage self;
  socklen_t self_len;
} al_proxy_run;

/* A reloaded policy, shared by the workers' al_proxy_policy wrappers (each
 * has its own resolver channel); the last reference frees it. */
typedef struct al_policy_hold {
  al_policy *p;
  _Atomic int refs;
} al_policy_hold;

/* One listener in one worker's loop. */
typedef struct al_proxy_wrun {
  al_watch w; /* the listener fd, shared by every worker (EPOLLEXCLUSIVE) */
  struct al_proxy *px;
  al_proxy_run *run;
  al_proxy_policy *pol;
  bool paused;    /* out of descriptors: removed from epoll until the next tick */
  bool nodelay;   /* the listener has TCP_NODELAY: accepted sockets inherit it */
  uint16_t tport; /* a transparent listener for this port (transparent.c); 0: the proxy's */
} al_proxy_wrun;

/* The process: what every worker reads or updates. */
typedef struct al_proxy_shared {
  const al_proxy_config *cfg;
  pthread_mutex_t stat_mu; /* the counters below and in runs[], the reload fields */
  pthread_mutex_t log_mu;  /* the log (held across its write(2)s) */
  al_proxy_counters cnt;
  al_decisions log;        /* the capped decision log (decisions.h), under log_mu */
  atomic_bool log_pending; /* it holds deferred lines: flush at the end of a batch */
  al_proxy_run *runs;
  size_t n_runs;
  _Atomic uint32_t n_conns, n_drain;
  uint32_t max_conns;
  al_addr_set local;       /* read once, by px_local_addrs() */
  atomic_bool local_ready; /* local is read (under stat_mu) */
  atomic_bool stop;
  /* the newest reloaded policy (under stat_mu), counted by generation */
  al_policy_hold *reload_hold;
  unsigned reload_gen;
  struct al_proxy *workers; /* n_wanted of them */
  size_t n_workers;         /* made: worker 0, then the started ones */
  size_t n_wanted;          /* worker_count(); grow_workers makes the rest */
} al_proxy_shared;

enum conn_state { ST_HEAD, ST_RESOLVE, ST_CONNECT, ST_SNI, ST_SPLICE, ST_DRAIN, ST_CLOSED };

/* One direction of a splice: src -> pipe -> dst, with a userspace queue
 * (`pend`) drained first (the 200 response, a rebuilt head, a buffered
 * ClientHello) and used alone when splice(2) cannot serve. A direction
 * starts with copied reads of at most FIRST_BUF bytes and makes its pipe
 * only when one read fills that (`bulk`): a short exchange (a small
 * request, an answer of a few KiB) costs no pipe2/fcntl/close and fewer
 * syscalls; a bulk transfer is spliced after its first 16 KiB. */
typedef struct splice_dir {
  int pipe[2];
  size_t in_pipe;
  char *pend;
  size_t pend_off, pend_len;
  bool src_eof, done, copy, bulk;
  uint64_t bytes;
} splice_dir;

typedef struct al_proxy_conn {
  al_watch cw, ow; /* client, origin */
  struct al_proxy *px;
  al_proxy_run *run;
  al_proxy_policy *pol;
  struct al_proxy_conn *prev, *next; /* live list, or graveyard (next only) */
  enum conn_state st;
  bool c_rd, c_wr, o_rd, o_wr; /* edge-triggered readiness we have not used up */
  /* the side reported EPOLLRDHUP, EPOLLHUP or EPOLLERR: read it to EOF or
   * EAGAIN, a short read does not mean it is dry (see px_read_dry) */
  bool c_hup, o_hup;
  bool dns_pending, opened, cut, slot_released;
  /* accepted on a transparent listener for port tport (transparent.c);
   * direct_tls: it speaks TLS from its first byte, so no HTTP answer and
   * no "200 Connection established" is ever written to it */
  uint16_t tport;
  bool direct_tls;
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
  /* plain HTTP: the origin's response heads, read and forwarded without
   * X-Airlock-* (splice.c) until the final one; then the bytes as they come */
  char *rhead;
  size_t rhead_len;
  bool resp_done;
  char sni[256];
  char dialled[INET6_ADDRSTRLEN + 8];
  const char *reason;
  const char *detail;

  struct sockaddr_storage addrs[MAX_ADDRS];
  socklen_t addr_lens[MAX_ADDRS];
  size_t n_addrs, addr_i;

  splice_dir up, down; /* client -> origin, origin -> client */
} al_proxy_conn;

/* One worker: an event loop on its own thread with its own connections,
 * resolver channels and timer; a connection lives and dies in the worker
 * that accepted it. Worker 0 runs on the calling thread and also owns the
 * signals, the admin socket and reloads. */
typedef struct al_proxy {
  al_proxy_shared *sh;
  const al_proxy_config *cfg;
  size_t idx;
  al_loop loop;
  al_watch sig_w, tick_w, admin_w, wake_w;
  al_proxy_wrun *runs;
  size_t n_runs;
  al_proxy_policy *policies, *dead_policies;
  struct ares_watch *dead_watches;
  al_proxy_conn *live, *graveyard;
  unsigned reload_seen;
  pthread_t thread;
  bool started;
} al_proxy;

/* proxy.c: the host's own interface addresses, read (getifaddrs(3)) on
 * the first call, the first dial, so an idle proxy never reads them; a
 * failure is logged once and leaves the set empty (the range checks still
 * apply). Any worker; the set lives as long as the proxy. */
const al_addr_set *px_local_addrs(al_proxy_shared *sh);

/* admin.c */
int px_admin_open(al_proxy *px, const char *path, al_error *err);

/* stats.c */
void px_decision_conn(al_proxy_conn *c, const char *event, const char *decision);
void px_decision_write(al_proxy *px, json_t *j);
/* Write the log's deferred lines (decisions.h, Batching), if there are any:
 * each worker calls it at the end of every batch of events. */
void px_decision_flush(al_proxy *px);
json_t *px_counters_json(const al_proxy_counters *k);
char *px_escape_raw(const char *s, size_t full_len);
void px_stat_allowed(al_proxy_run *run, al_proxy_shared *sh);
void px_stat_bytes(al_proxy_run *run, al_proxy_shared *sh, uint64_t up, uint64_t down);
void px_stat_denial(al_proxy_run *run, al_proxy_shared *sh, const char *reason);
void px_stat_total(al_proxy_run *run, al_proxy_shared *sh);
json_t *px_time_json(void);

/* conn.c */
void px_bury(al_proxy *px);
void px_client_ready(al_watch *w, uint32_t ev);
void px_conn_close(al_proxy_conn *c);
void px_conn_deny(al_proxy_conn *c, int status, const char *reason, const char *detail);
void px_conn_pump(al_proxy_conn *c);
bool px_sockaddr_from_text(const char *text, uint16_t port, struct sockaddr_storage *ss,
                           socklen_t *len);
void px_sockaddr_text(const struct sockaddr *sa, char *out, size_t n);

/* head.c */
void px_conn_head(al_proxy_conn *c);
/* Read what the client has into c->buf (up to buf_cap); head: stop at a
 * whole request head. Returns 1 on data or nothing new, 0 on EOF, -1 on
 * error. */
int px_read_client(al_proxy_conn *c, bool head);
/* The common tail of a decision: the target (c->host, c->port) matched
 * against the allowlist, the budget; returns the entry, or NULL after
 * denying. */
const al_net_allow *px_conn_match(al_proxy_conn *c);
char *px_rebuild_origin_form(al_proxy_conn *c, const al_http_request *req, const char *path,
                             size_t path_len, size_t *out_len);
/* plain HTTP allowed: the rebuilt head and the body bytes already read
 * become the first bytes up; c->buf is given back */
void px_conn_plain_start(al_proxy_conn *c, const al_http_request *req, const char *path,
                         size_t path_len);

/* transparent.c: ST_HEAD on a transparent listener (proxy.h) */
void px_conn_transparent(al_proxy_conn *c);
void px_conn_sni(al_proxy_conn *c);

/* dial.c */
void px_conn_resolve(al_proxy_conn *c);
void px_origin_ready(al_watch *w, uint32_t ev);

/* A recv(2) that asked for `asked` bytes got n > 0: whether the socket is
 * now dry, so that the edge-triggered readiness is used up without another
 * recv that would only say EAGAIN. epoll(7): for a stream socket, a read
 * that returns less than asked has exhausted the input. Not when the side
 * already reported a hang-up (its EOF may have come with the data, and no
 * new edge would tell us). */
static inline bool px_read_dry(size_t asked, ssize_t n, bool hup)
{
  return (size_t)n < asked && !hup;
}

/* splice.c */
int px_dir_pump(al_proxy_conn *c, splice_dir *d, int src, int dst, bool *src_rd, bool *dst_wr,
                bool up);
void px_splice(al_proxy_conn *c);

/* policies.c */
void px_hold_unref(al_policy_hold *h);
void px_policy_destroy(al_proxy_policy *pol);
const al_net_allow *px_policy_match(const al_policy *p, const al_host *h, uint16_t port);
al_proxy_policy *px_policy_new(al_proxy *px, const al_policy *p, al_policy_hold *hold,
                               al_error *err);
const char *px_policy_pin(const al_policy *p, const char *host);
al_proxy_policy *px_policy_ref(al_proxy_policy *pol);
void px_policy_unref(al_proxy_policy *pol);

/* accept.c */
void px_listener_ready(al_watch *w, uint32_t ev);
int px_listener_watch(al_proxy *px, al_proxy_wrun *wr);

/* budget.c */
/* How many more bytes may go client -> origin now: the run's budget left
 * (UINT64_MAX without one), and for plain HTTP the request body left. */
uint64_t px_up_limit(al_proxy_conn *c);
/* Around one read that spends the budget: begin takes the run's budget lock
 * when the run has a budget (returns whether it did); end adds the n bytes
 * read and releases it. Between them: px_up_limit, then read at most that. */
bool px_budget_begin(al_proxy_conn *c);
void px_budget_end(al_proxy_conn *c, bool locked, uint64_t n);
/* Count n bytes that went out without a cap (a rebuilt head, a ClientHello
 * checked by the SNI gate). */
void px_budget_charge(al_proxy_run *run, uint64_t n);
/* The run has a budget and it is spent. */
bool px_budget_spent(const al_proxy_conn *c);

#endif
