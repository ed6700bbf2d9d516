/* The egress proxy: the sandbox's only way out (DESIGN.md §2, issue #3).
 *
 * One process serves one or more listening sockets. Each listener belongs
 * to one run (a sandbox) and carries that run's id and policy; connection
 * caps, the egress budget and counters are per run. The proxy permits
 * exactly the policy's host:port pairs: CONNECT in authority-form (RFC 9110
 * §9.3.6) with an SNI gate on `tls: true` entries, and absolute-form plain
 * HTTP (RFC 9112 §3.2.2) only to `tls: false` entries, rebuilt into
 * origin-form. Names are resolved by the proxy itself (c-ares) only after
 * the allow decision; special-purpose answers are refused; the checked
 * address is the one dialled. */
#ifndef AL_PROXY_PROXY_H
#define AL_PROXY_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"
#include "proxy/handoff.h"

typedef struct al_proxy_listener {
  int fd;                  /* a listening SOCK_STREAM socket (listen(2) already called);
                              borrowed: the proxy neither closes nor unlinks it. It may
                              live in another network namespace (the sandbox's). */
  const char *run_id;      /* borrowed; goes into every decision line of this listener */
  const al_policy *policy; /* borrowed; must outlive al_proxy_serve(). Its `network`
                              section is the allowlist; present == false denies all. */
  /* Borrowed, or NULL (issue #15). An allowed CONNECT to one of its
   * host:port pairs is answered 200 and passed, client and upstream fd, to
   * the forge gateway (handoff.h; no SNI gate here, the gateway checks it);
   * absolute-form plain HTTP to such a pair is refused (gateway-plain-http). */
  const al_proxy_handoff *handoff;
  /* The run's transparent listeners (issue #27 item 3), or none: sockets
   * on AL_PROXY_TRANSPARENT_ADDR in the sandbox, where its /etc/hosts
   * sends the allowed names, for clients that ignore HTTPS_PROXY. One per
   * port (transparent_ports[i], the port a client there asked for). A
   * connection whose first byte starts a TLS record (0x16) is decided as a
   * CONNECT to SNI:port would be, then its ClientHello goes on unchanged;
   * any other is read as a plain HTTP/1.1 request in origin-form whose
   * Host names the target (port 80 by default), decided as absolute-form
   * would be. Same caps, budget, counters, log (with "via":"transparent")
   * and gateway hand-off as the run's proxy listener. Borrowed, like fd. */
  const int *transparent_fds;
  const uint16_t *transparent_ports;
  size_t n_transparent;
} al_proxy_listener;

/* The sandbox's address for the allowed names (/etc/hosts), a loopback
 * address of its own network namespace that is not 127.0.0.1 (the proxy
 * and the relay listen there, on their own ports). Host byte order. */
#define AL_PROXY_TRANSPARENT_ADDR 0x7f000002u /* 127.0.0.2 */
#define AL_PROXY_TRANSPARENT_ADDR_TEXT "127.0.0.2"
#define AL_PROXY_TRANSPARENT_MAX 8 /* ports; the allowlist's first 8 distinct ones */

/* What the sandbox needs for a policy's transparent path: the distinct
 * ports of network.allow (in the order they first appear, at most
 * AL_PROXY_TRANSPARENT_MAX; *n_ports_dropped counts the rest) and the
 * /etc/hosts lines naming every allowed host name (not wildcards, which a
 * hosts file cannot express, nor IP literals) with that address, as one
 * malloc'd string the caller frees ("" when there is none). Names are
 * canonical (net/host.h), so printable and without whitespace. hosts(5). */
typedef struct al_proxy_transparent_plan {
  uint16_t ports[AL_PROXY_TRANSPARENT_MAX];
  size_t n_ports;
  size_t n_ports_dropped;
  char *hosts;
} al_proxy_transparent_plan;
void al_proxy_transparent_plan_make(const al_policy *p, al_proxy_transparent_plan *out);

/* --log FILE: the decisions of one run take at most this much of it by
 * default; the last line says when the cap was reached (decisions.h) */
#define AL_PROXY_LOG_CAP (64ull << 20)

/* Start and stop milestones of al_proxy_serve (CLOCK_MONOTONIC ns, as
 * al_now_ns; 0: not reached), for AIRLOCK_DEBUG_TIMING (bench/README.md). */
typedef struct al_proxy_marks {
  uint64_t local;   /* the host's own addresses read (getifaddrs; at the first dial) */
  uint64_t workers; /* every worker's loop, timer and resolver channels made */
  uint64_t serving; /* worker threads started, the first epoll_wait next */
  uint64_t stop;    /* the stop signal read */
  uint64_t joined;  /* the other workers done, their connections closed and logged */
  uint64_t closed;  /* the summary written */
} al_proxy_marks;

typedef struct al_proxy_config {
  const al_proxy_listener *listeners; /* n_listeners >= 1 */
  size_t n_listeners;
  int decisions_fd;          /* JSON lines, one per decision; -1 for none. Borrowed. */
  uint64_t decisions_cap;    /* bytes decisions_fd may take, 0: no cap. Past half of it denials
                            are aggregated, near it lines are dropped (counted); the last
                            line is always a summary with exact counts (decisions.h) */
  const char *admin_path;    /* Unix socket path for counters (mode 0600, created and
                                unlinked by the proxy), or NULL. Must be outside the sandbox. */
  uint32_t max_conns_global; /* across all listeners; 0 means 4096 */
  const char *reload_path;   /* on SIGHUP load this policy file and make it the policy of
                                every listener (new connections only; live tunnels keep
                                theirs; an invalid file is refused and the old one kept).
                                NULL: SIGHUP is logged and ignored. */
  /* Called once everything is set up (listeners, admin socket, signals),
   * before the first connection: e.g. al_confine_service() for the
   * standalone proxy. A negative return stops the proxy with err. May be
   * NULL. */
  int (*ready)(void *ctx, al_error *err);
  void *ready_ctx;
  /* Event-loop threads (workers), each with its own epoll set, timer and
   * resolver channels, all waiting on every listener (EPOLLEXCLUSIVE: a new
   * connection wakes one); a connection stays in the worker that accepted
   * it. Caps, counters, the egress budget and the log are shared and exact.
   * 0: one per CPU the process may run on, at most AL_PROXY_MAX_WORKERS;
   * worker 0 serves alone until the first connection, which starts the
   * others (an idle proxy, e.g. `airlock run -- true`, runs one thread).
   * N > 0: N workers, all started before the first connection. */
  unsigned workers;
  al_proxy_marks *marks; /* filled as the proxy goes (may be NULL); borrowed */
} al_proxy_config;

#define AL_PROXY_MAX_WORKERS 8

/* Run the proxy until SIGTERM or SIGINT; then close every connection and
 * return 0. Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and
 * so in the worker threads it starts after cfg->ready, which it joins
 * before returning) and reads them through a signalfd; sets SIGPIPE to SIG_IGN (splice(2) to a
 * closed socket raises it). Raises RLIMIT_NOFILE's soft limit to the hard
 * limit. Meant to own its process: the supervisor forks, the child calls
 * this and exits with its result.
 *
 * One connection failing never stops the loop. Returns -1 with err set only
 * for setup failures (epoll, signalfd, timerfd, c-ares init, admin socket)
 * or a fatal epoll error. */
int al_proxy_serve(const al_proxy_config *cfg, al_error *err);

/* Is a decision line's reason a failure of the way out (DNS, the origin,
 * the client: dns-failed, dns-timeout, connect-failed, connect-timeout,
 * client-closed, client-error, gateway-unavailable) rather than a refusal
 * by the policy? The counters keep the two apart: "denied" counts the
 * refusals, "failed" the failures (docs/troubleshooting.md, Proxy). */
bool al_proxy_reason_is_failure(const char *reason);

#endif
