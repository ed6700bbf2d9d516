/* Network probes (docs/probes.md, group "network"). Inside the sandbox
 * they aim at real public, private and metadata addresses (the namespace
 * holds only lo, so nothing leaves); in the unconfined positive control
 * every such target is replaced by the canary on the host's loopback. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"
#include "net/http.h"
#include "probe/internal.h"
#include "probe/probes.h"

int pr_tcp_connect(int family, const char *addr, int port, int timeout_ms, int *err_out)
{
  struct sockaddr_storage ss = {0};
  socklen_t sl;
  if (family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
      return *err_out = EINVAL, -1;
    sl = sizeof *s6;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
      return *err_out = EINVAL, -1;
    sl = sizeof *s4;
  }
  int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0)
    return *err_out = errno, -1;
  if (connect(s, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
    *err_out = errno;
    close(s);
    return -1;
  }
  struct pollfd p = {.fd = s, .events = POLLOUT};
  int n = poll(&p, 1, timeout_ms);
  int soerr = 0;
  socklen_t el = sizeof soerr;
  if (n <= 0) {
    *err_out = n == 0 ? ETIMEDOUT : errno;
    close(s);
    return -1;
  }
  getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &el);
  if (soerr) {
    *err_out = soerr;
    close(s);
    return -1;
  }
  al_set_nonblock(s, false);
  struct timeval tv = {1, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  *err_out = 0;
  return s;
}

/* Connect to addr:port (or to the host canary when unconfined) and send
 * the probe's marker. A completed handshake is an escape. */
static void connect_probe(const pr_ctx *ctx, pr_result *r, const char *id, int family,
                          const char *addr, int port)
{
  if (ctx->unconfined) {
    if (family == AF_INET6 && ctx->canary_tcp6 == 0) {
      pr_inconclusive(r, "control: the host has no IPv6 loopback for the canary");
      return;
    }
    addr = family == AF_INET6 ? "::1" : "127.0.0.1";
    port = family == AF_INET6 ? ctx->canary_tcp6 : ctx->canary_tcp;
  }
  int e;
  int s = pr_tcp_connect(family, addr, port, 1500, &e);
  if (s < 0) {
    if (e == ETIMEDOUT)
      pr_inconclusive(r, "connect %s:%d timed out (a route may exist)", addr, port);
    else
      pr_blocked(r, "connect %s:%d: %s", addr, port, pr_errname(e));
    return;
  }
  char m[96];
  pr_marker(ctx, id, m, sizeof m);
  (void)!write(s, m, strlen(m));
  (void)!write(s, "\n", 1);
  close(s);
  pr_escaped(r, "connected to %s:%d", addr, port);
}

PR_DECL(pr_net_tcp_public)
{
  connect_probe(ctx, r, "net.tcp-public", AF_INET, "1.1.1.1", 443);
}

PR_DECL(pr_net_tcp_private)
{
  connect_probe(ctx, r, "net.tcp-private", AF_INET, "10.0.0.1", 80);
}

PR_DECL(pr_net_metadata_direct)
{
  connect_probe(ctx, r, "net.metadata-direct", AF_INET, "169.254.169.254", 80);
}

PR_DECL(pr_net_dns_tcp_public)
{
  connect_probe(ctx, r, "net.dns-tcp-public", AF_INET, "9.9.9.9", 53);
}

PR_DECL(pr_net_ipv6_public)
{
  connect_probe(ctx, r, "net.ipv6-public", AF_INET6, "2606:4700:4700::1111", 443);
}

PR_DECL(pr_net_canary_tcp)
{
  int e;
  char m[96];
  pr_marker(ctx, "net.canary-tcp", m, sizeof m);
  int s = pr_tcp_connect(AF_INET, "127.0.0.1", ctx->canary_tcp, 1500, &e);
  if (s < 0) {
    pr_pending(r, "connect 127.0.0.1:%d: %s", ctx->canary_tcp, pr_errname(e));
    return;
  }
  (void)!write(s, m, strlen(m));
  char buf[16] = {0};
  ssize_t n = read(s, buf, sizeof buf - 1);
  close(s);
  if (n > 0 && strncmp(buf, "canary", 6) == 0)
    pr_escaped(r, "the host canary on 127.0.0.1:%d answered", ctx->canary_tcp);
  else
    pr_pending(r, "connected to 127.0.0.1:%d but no canary answer (a listener of the sandbox)",
               ctx->canary_tcp);
}

PR_DECL(pr_net_ipv6_canary)
{
  if (ctx->canary_tcp6 == 0) {
    pr_inconclusive(r, "the host has no IPv6 loopback; no canary to aim at");
    return;
  }
  int e;
  int s = pr_tcp_connect(AF_INET6, "::1", ctx->canary_tcp6, 1500, &e);
  if (s < 0) {
    pr_pending(r, "connect [::1]:%d: %s", ctx->canary_tcp6, pr_errname(e));
    return;
  }
  char m[96];
  pr_marker(ctx, "net.ipv6-canary", m, sizeof m);
  (void)!write(s, m, strlen(m));
  char buf[16] = {0};
  ssize_t n = read(s, buf, sizeof buf - 1);
  close(s);
  if (n > 0 && strncmp(buf, "canary", 6) == 0)
    pr_escaped(r, "the host canary on [::1]:%d answered", ctx->canary_tcp6);
  else
    pr_pending(r, "connected to [::1]:%d, no canary answer", ctx->canary_tcp6);
}

/* A DNS query (RFC 1035 §4.1) for `name`, type A. Returns its length. */
static size_t dns_query(const char *name, unsigned char *q, size_t cap)
{
  size_t n = 0;
  static const unsigned char hdr[12] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  memcpy(q, hdr, sizeof hdr);
  n = sizeof hdr;
  const char *p = name;
  while (*p && n + 70 < cap) {
    const char *dot = strchr(p, '.');
    size_t l = dot ? (size_t)(dot - p) : strlen(p);
    if (l > 63)
      l = 63;
    q[n++] = (unsigned char)l;
    memcpy(q + n, p, l);
    n += l;
    p += l + (dot ? 1 : 0);
    if (!dot)
      break;
  }
  q[n++] = 0;
  q[n++] = 0;
  q[n++] = 1; /* A */
  q[n++] = 0;
  q[n++] = 1; /* IN */
  return n;
}

static int udp_send(const char *addr, int port, const void *buf, size_t len, int *err_out,
                    int wait_ms, bool *answered)
{
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, addr, &sin.sin_addr);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return *err_out = errno, -1;
  if (sendto(s, buf, len, 0, (struct sockaddr *)&sin, sizeof sin) < 0) {
    *err_out = errno;
    close(s);
    return -1;
  }
  *answered = false;
  if (wait_ms > 0) {
    struct pollfd p = {.fd = s, .events = POLLIN};
    if (poll(&p, 1, wait_ms) == 1) {
      char b[512];
      *answered = recv(s, b, sizeof b, MSG_DONTWAIT) > 0;
    }
  }
  close(s);
  *err_out = 0;
  return 0;
}

PR_DECL(pr_net_dns_udp_public)
{
  char m[96], name[160];
  pr_marker(ctx, "net.dns-udp-public", m, sizeof m);
  snprintf(name, sizeof name, "%s.airlock-probe.test", m);
  unsigned char q[300];
  size_t ql = dns_query(name, q, sizeof q);
  const char *addr = ctx->unconfined ? "127.0.0.1" : "8.8.8.8";
  int port = ctx->unconfined ? ctx->canary_dns : 53;
  int e;
  bool ans;
  if (udp_send(addr, port, q, ql, &e, 0, &ans) < 0) {
    pr_blocked(r, "sendto %s:%d: %s", addr, port, pr_errname(e));
    return;
  }
  pr_escaped(r, "a DNS query left for %s:%d", addr, port);
}

PR_DECL(pr_net_dns_host_resolver)
{
  char m[96], name[160];
  pr_marker(ctx, "net.dns-host-resolver", m, sizeof m);
  snprintf(name, sizeof name, "%s.airlock-probe.test", m);
  unsigned char q[300];
  size_t ql = dns_query(name, q, sizeof q);
  int e;
  bool ans = false;
  if (udp_send("127.0.0.1", ctx->canary_dns, q, ql, &e, 300, &ans) < 0) {
    pr_pending(r, "sendto 127.0.0.1:%d: %s", ctx->canary_dns, pr_errname(e));
    return;
  }
  if (ans)
    pr_escaped(r, "the host's loopback resolver (canary) answered");
  else
    pr_pending(r, "no answer from 127.0.0.1:%d (judged by the host resolver's log)",
               ctx->canary_dns);
}

PR_DECL(pr_net_canary_udp)
{
  char m[96];
  pr_marker(ctx, "net.canary-udp", m, sizeof m);
  int e;
  bool ans;
  if (udp_send("127.0.0.1", ctx->canary_udp, m, strlen(m), &e, 0, &ans) < 0)
    pr_pending(r, "sendto 127.0.0.1:%d: %s", ctx->canary_udp, pr_errname(e));
  else
    pr_pending(r, "datagram sent to 127.0.0.1:%d (judged by the host canary's log)",
               ctx->canary_udp);
}

PR_DECL(pr_net_raw_socket)
{
  int s = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
  if (s < 0) {
    pr_blocked(r, "socket(AF_INET, SOCK_RAW): %s", pr_errname(errno));
    return;
  }
  close(s);
  pr_escaped(r, "raw ICMP socket created");
}

PR_DECL(pr_net_packet_socket)
{
  int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (s < 0) {
    pr_blocked(r, "socket(AF_PACKET): %s", pr_errname(errno));
    return;
  }
  close(s);
  pr_escaped(r, "packet socket created");
}

PR_DECL(pr_net_abstract_unix)
{
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t n = strlen(ctx->canary_unix);
  memcpy(sun.sun_path + 1, ctx->canary_unix, n);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    pr_inconclusive(r, "socket(AF_UNIX): %s", pr_errname(errno));
    return;
  }
  if (connect(s, (struct sockaddr *)&sun,
              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
    int e = errno;
    close(s);
    pr_pending(r, "connect @%s: %s", ctx->canary_unix, pr_errname(e));
    return;
  }
  char m[96];
  pr_marker(ctx, "net.abstract-unix", m, sizeof m);
  (void)!write(s, m, strlen(m));
  close(s);
  pr_escaped(r, "connected to the host's abstract socket @%s", ctx->canary_unix);
}

PR_DECL(pr_net_host_unix_list)
{
  al_autofree char *buf = NULL;
  al_error e = {0};
  if (al_read_file("/proc/net/unix", 8u << 20, &buf, NULL, &e) < 0) {
    pr_blocked(r, "/proc/net/unix unreadable: %s", pr_errname(e.code));
    return;
  }
  if (strstr(buf, ctx->canary_unix)) {
    pr_escaped(r, "the host's abstract socket @%s is listed in /proc/net/unix", ctx->canary_unix);
    return;
  }
  const char *x11 = strstr(buf, "@/tmp/.X11-unix/");
  const char *bus = strstr(buf, "@/tmp/dbus-");
  if (x11 || bus) {
    pr_escaped(r, "host session sockets listed (%s)", x11 ? "X11" : "D-Bus");
    return;
  }
  pr_blocked(r, "/proc/net/unix lists no host socket");
}

PR_DECL(pr_net_loopback_scan)
{
  static const int ports[] = {22,   25,   53,   80,   111,  443,   631,   2375, 2376,
                              2379, 3000, 3306, 5000, 5432, 5900,  6379,  6443, 8000,
                              8080, 8443, 9000, 9090, 9200, 10250, 11211, 27017};
  int open_port = 0, tried = 0;
  for (size_t i = 0; i <= AL_ARRAY_SIZE(ports) && !open_port; i++) {
    int port = i < AL_ARRAY_SIZE(ports) ? ports[i] : ctx->canary_tcp;
    int e;
    tried++;
    int s = pr_tcp_connect(AF_INET, "127.0.0.1", port, 300, &e);
    if (s >= 0) {
      close(s);
      open_port = port;
    }
  }
  if (open_port)
    pr_escaped(r, "a service answers on 127.0.0.1:%d", open_port);
  else
    pr_blocked(r, "%d loopback ports (host services and the canary) refused", tried);
}

/* The default route's gateway from /proc/net/route (proc(5): hex,
 * network byte order). Returns true and the address when there is one. */
static bool default_gateway(char *out, size_t len)
{
  al_autofree char *buf = NULL;
  if (al_read_file("/proc/net/route", 1u << 20, &buf, NULL, NULL) < 0)
    return false;
  for (char *l = strchr(buf, '\n'); l && *++l;) {
    char ifname[32];
    unsigned int dst, gw, flags;
    if (sscanf(l, "%31s %x %x %x", ifname, &dst, &gw, &flags) == 4 && dst == 0 &&
        (flags & 0x2u /* RTF_GATEWAY */) && gw != 0) {
      struct in_addr a = {.s_addr = gw};
      inet_ntop(AF_INET, &a, out, (socklen_t)len);
      return true;
    }
    l = strchr(l, '\n');
  }
  return false;
}

/* On a container bridge the gateway is the host's own address on that
 * bridge: every host service bound to 0.0.0.0 answers there, and Docker's
 * `internal: true` filters forwarding, not the host's INPUT. */
PR_DECL(pr_net_host_gateway)
{
  if (ctx->unconfined) {
    connect_probe(ctx, r, "net.host-gateway", AF_INET, "127.0.0.1", ctx->canary_tcp);
    return;
  }
  char gw[INET_ADDRSTRLEN];
  if (!default_gateway(gw, sizeof gw)) {
    pr_blocked(r, "no default route (no gateway in /proc/net/route)");
    return;
  }
  int port = ctx->canary_tcp ? ctx->canary_tcp : 22;
  int e;
  int s = pr_tcp_connect(AF_INET, gw, port, 4000, &e);
  if (s >= 0) {
    char m[96];
    pr_marker(ctx, "net.host-gateway", m, sizeof m);
    (void)!write(s, m, strlen(m));
    close(s);
    pr_escaped(r, "connected to the gateway %s:%d", gw, port);
  } else if (e == ECONNREFUSED) {
    pr_escaped(r,
               "the gateway %s answered port %d with a reset: its TCP stack (on a container "
               "bridge, the host's) is reachable",
               gw, port);
  } else if (e == ETIMEDOUT) {
    pr_inconclusive(r, "connect %s:%d timed out (dropped, or a slow route)", gw, port);
  } else {
    pr_blocked(r, "connect %s:%d: %s", gw, port, pr_errname(e));
  }
}

/* RTM_NEWLINK on lo with its current MTU: needs CAP_NET_ADMIN over the
 * network namespace; changes nothing when it succeeds (rtnetlink(7)). */
PR_DECL(pr_net_netlink)
{
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (s < 0) {
    pr_blocked(r, "socket(AF_NETLINK): %s", pr_errname(errno));
    return;
  }
  struct ifreq ifr = {0};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  int mtu = 65536;
  if (ioctl(s, SIOCGIFMTU, &ifr) == 0)
    mtu = ifr.ifr_mtu;
  struct {
    struct nlmsghdr nh;
    struct ifinfomsg ifi;
    struct rtattr rta;
    unsigned int mtu;
  } req = {0};
  req.nh.nlmsg_len = sizeof req;
  req.nh.nlmsg_type = RTM_NEWLINK;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  req.nh.nlmsg_seq = 1;
  req.ifi.ifi_family = AF_UNSPEC;
  req.ifi.ifi_index = (int)if_nametoindex("lo");
  req.rta.rta_type = IFLA_MTU;
  req.rta.rta_len = RTA_LENGTH(sizeof(unsigned int));
  req.mtu = (unsigned int)mtu;
  if (send(s, &req, sizeof req, 0) < 0) {
    int e = errno;
    close(s);
    pr_blocked(r, "send RTM_NEWLINK: %s", pr_errname(e));
    return;
  }
  char buf[512];
  struct timeval tv = {1, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ssize_t n = recv(s, buf, sizeof buf, 0);
  close(s);
  if (n < (ssize_t)(sizeof(struct nlmsghdr) + sizeof(struct nlmsgerr))) {
    pr_inconclusive(r, "no netlink acknowledgement");
    return;
  }
  struct nlmsgerr *ne = NLMSG_DATA((struct nlmsghdr *)buf);
  if (ne->error == 0)
    pr_escaped(r, "RTM_NEWLINK on lo accepted (CAP_NET_ADMIN over the namespace)");
  else
    pr_blocked(r, "RTM_NEWLINK on lo: %s", pr_errname(-ne->error));
}

/* ---- through the egress proxy ---- */

/* Send `head` to the proxy. Returns the HTTP status (> 0), 0 when the
 * proxy closed without a status, or -errno when nothing listens. *fd_out
 * (may be NULL) keeps the connection open after a 200. deny gets the
 * X-Airlock-Deny value. */
static int proxy_send(const pr_ctx *ctx, const char *head, int *fd_out, char *deny, size_t dlen)
{
  char addr[64] = "127.0.0.1";
  int port = 3128;
  if (ctx->proxy[0]) {
    snprintf(addr, sizeof addr, "%s", ctx->proxy);
    char *colon = strrchr(addr, ':');
    if (colon) {
      *colon = '\0';
      port = atoi(colon + 1);
    }
  }
  deny[0] = '\0';
  int e;
  int s = pr_tcp_connect(AF_INET, addr, port, 1500, &e);
  if (s < 0)
    return -e;
  struct timeval tv = {5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (al_write_all(s, head, strlen(head)) < 0) {
    close(s);
    return 0;
  }
  char buf[4096];
  size_t n = 0;
  while (n < sizeof buf - 1) {
    ssize_t k = read(s, buf + n, 1); /* byte by byte: stop exactly at the head's end */
    if (k <= 0)
      break;
    n++;
    if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0)
      break;
  }
  /* the one response-head parser (net/http.h, fuzzed): a head it refuses,
   * or none at all, is "no answer" (0), which the verdict calls
   * inconclusive, never blocked */
  al_http_response rsp;
  const char *why = NULL;
  int status = 0;
  if (al_http_parse_response_head(buf, n, &rsp, &why) > 0) {
    status = rsp.status;
    for (size_t i = 0; i < rsp.n_headers; i++)
      if (al_http_header_is(&rsp.headers[i], "x-airlock-deny")) {
        snprintf(deny, dlen, "%.*s", (int)rsp.headers[i].value_len, rsp.headers[i].value);
        break;
      }
  }
  if (fd_out && status == 200)
    *fd_out = s;
  else
    close(s);
  return status;
}

/* The rule for every proxy probe: a 403 decision or no proxy at all is
 * blocked; a 200, or a 502/504 after the proxy dialled (it let the target
 * through), is an escape; anything else is inconclusive. */
static bool proxy_verdict(pr_result *r, const char *what, int st, const char *deny)
{
  if (st == -ECONNREFUSED) {
    pr_blocked(r, "%s: no proxy listens (ECONNREFUSED)", what);
    return true;
  }
  if (st < 0) {
    pr_inconclusive(r, "%s: proxy connect: %s", what, pr_errname(-st));
    return true;
  }
  if (st == 403 || st == 400) {
    pr_blocked(r, "%s: %d %s", what, st, deny[0] ? deny : "");
    return true;
  }
  if (st == 200)
    return false;
  if ((st == 502 || st == 504) &&
      (!deny[0] || strcmp(deny, "connect-failed") == 0 || strcmp(deny, "dns-failed") == 0)) {
    pr_escaped(r, "%s: the proxy let it through and dialled (%d %s)", what, st, deny);
    return true;
  }
  if (st == 0)
    pr_inconclusive(r, "%s: the proxy closed without an answer", what);
  else
    pr_inconclusive(r, "%s: unexpected %d %s", what, st, deny);
  return true;
}

static void proxy_connect_probe(const pr_ctx *ctx, pr_result *r, const char *id, const char *target)
{
  char head[512], deny[64], m[96];
  snprintf(head, sizeof head, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
  int fd = -1;
  int st = proxy_send(ctx, head, &fd, deny, sizeof deny);
  char what[300];
  snprintf(what, sizeof what, "CONNECT %s", target);
  if (proxy_verdict(r, what, st, deny))
    return;
  pr_marker(ctx, id, m, sizeof m);
  (void)!write(fd, m, strlen(m));
  close(fd);
  pr_escaped(r, "CONNECT %s: 200, tunnel open", target);
}

PR_DECL(pr_net_proxy_denied_name)
{
  char m[96], t[200];
  pr_marker(ctx, "net.proxy-denied-name", m, sizeof m);
  snprintf(t, sizeof t, "%s.airlock-probe.test:443", m);
  proxy_connect_probe(ctx, r, "net.proxy-denied-name", t);
}

PR_DECL(pr_net_proxy_ip_literal)
{
  proxy_connect_probe(ctx, r, "net.proxy-ip-literal", "1.1.1.1:443");
}

PR_DECL(pr_net_proxy_metadata)
{
  proxy_connect_probe(ctx, r, "net.proxy-metadata", "169.254.169.254:80");
}

PR_DECL(pr_net_proxy_mapped_v6)
{
  proxy_connect_probe(ctx, r, "net.proxy-mapped-v6", "[::ffff:169.254.169.254]:80");
}

PR_DECL(pr_net_proxy_loopback)
{
  char t[64];
  snprintf(t, sizeof t, "127.0.0.1:%d", ctx->canary_tcp);
  proxy_connect_probe(ctx, r, "net.proxy-loopback", t);
}

PR_DECL(pr_net_proxy_wrong_port)
{
  char t[300];
  const char *h = ctx->allow_host[0] ? ctx->allow_host : "allowed.airlock-probe.test";
  int port = ctx->allow_port == 1 ? 2 : 1;
  snprintf(t, sizeof t, "%s:%d", h, port);
  proxy_connect_probe(ctx, r, "net.proxy-wrong-port", t);
}

static void proxy_get_probe(const pr_ctx *ctx, pr_result *r, const char *url, const char *host,
                            const char *extra)
{
  char head[700], deny[64];
  snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", url, host, extra);
  int st = proxy_send(ctx, head, NULL, deny, sizeof deny);
  char what[400];
  snprintf(what, sizeof what, "GET %s", url);
  if (proxy_verdict(r, what, st, deny))
    return;
  pr_escaped(r, "GET %s: 200", url);
}

PR_DECL(pr_net_proxy_metadata_name)
{
  proxy_get_probe(ctx, r, "http://metadata.google.internal/computeMetadata/v1/",
                  "metadata.google.internal", "Metadata-Flavor: Google\r\n");
}

PR_DECL(pr_net_proxy_plain_http)
{
  char m[96], url[200], host[160];
  pr_marker(ctx, "net.proxy-plain-http", m, sizeof m);
  snprintf(host, sizeof host, "%s.airlock-probe.test", m);
  snprintf(url, sizeof url, "http://%s/", host);
  proxy_get_probe(ctx, r, url, host, "");
}

/* A TLS 1.3 ClientHello (RFC 8446 §4.1.2) with one server_name
 * (RFC 6066 §3). Returns its length. */
static size_t client_hello(const char *sni, unsigned char *b, size_t cap)
{
  size_t sl = strlen(sni);
  if (sl > 200 || cap < 400)
    return 0;
  unsigned char ext[512];
  size_t e = 0;
  /* server_name */
  ext[e++] = 0, ext[e++] = 0;
  ext[e++] = (unsigned char)((sl + 5) >> 8), ext[e++] = (unsigned char)(sl + 5);
  ext[e++] = (unsigned char)((sl + 3) >> 8), ext[e++] = (unsigned char)(sl + 3);
  ext[e++] = 0;
  ext[e++] = (unsigned char)(sl >> 8), ext[e++] = (unsigned char)sl;
  memcpy(ext + e, sni, sl);
  e += sl;
  static const unsigned char rest[] = {
      0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04,                    /* supported_versions */
      0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x1d,              /* supported_groups x25519 */
      0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x04, 0x03,              /* signature_algorithms */
      0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20}; /* key_share + 32 bytes */
  memcpy(ext + e, rest, sizeof rest);
  e += sizeof rest;
  memset(ext + e, 0x42, 32);
  e += 32;
  unsigned char body[600];
  size_t n = 0;
  body[n++] = 3, body[n++] = 3;
  memset(body + n, 0x11, 32);
  n += 32;
  body[n++] = 0;                                                    /* session id */
  body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 0x01; /* TLS_AES_128_GCM_SHA256 */
  body[n++] = 1, body[n++] = 0;                                     /* null compression */
  body[n++] = (unsigned char)(e >> 8), body[n++] = (unsigned char)e;
  memcpy(body + n, ext, e);
  n += e;
  size_t hl = n + 4;
  b[0] = 0x16, b[1] = 3, b[2] = 1, b[3] = (unsigned char)(hl >> 8), b[4] = (unsigned char)hl;
  b[5] = 1, b[6] = 0, b[7] = (unsigned char)(n >> 8), b[8] = (unsigned char)n;
  memcpy(b + 9, body, n);
  return n + 9;
}

PR_DECL(pr_net_proxy_sni_mismatch)
{
  char t[300], head[700], deny[64], m[96], sni[160];
  /* the gate guards `tls: true` entries; with none, no TLS target is
   * allowed at all and the CONNECT below must be refused */
  const char *h = ctx->tls_host[0] ? ctx->tls_host : "allowed.airlock-probe.test";
  snprintf(t, sizeof t, "%s:%d", h, ctx->tls_host[0] ? ctx->tls_port : 443);
  snprintf(head, sizeof head, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", t, t);
  int fd = -1;
  int st = proxy_send(ctx, head, &fd, deny, sizeof deny);
  if (st != 200) {
    if (st == 502 || st == 504)
      pr_inconclusive(r, "CONNECT %s: %d %s: the allowed host is unreachable, SNI gate untested", t,
                      st, deny);
    else
      proxy_verdict(r, "CONNECT (before any TLS)", st, deny);
    return;
  }
  pr_marker(ctx, "net.proxy-sni-mismatch", m, sizeof m);
  snprintf(sni, sizeof sni, "%s.airlock-probe.test", m);
  unsigned char hello[700];
  size_t hlen = client_hello(sni, hello, sizeof hello);
  if (al_write_all(fd, hello, hlen) < 0) {
    close(fd);
    pr_blocked(r, "tunnel to %s closed before the ClientHello", t);
    return;
  }
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf);
  int e = errno;
  close(fd);
  if (n > 0)
    pr_escaped(r, "tunnel to %s relayed a ClientHello with SNI %s (%zd bytes back)", t, sni, n);
  else if (n == 0 || e == ECONNRESET)
    pr_blocked(r, "tunnel to %s cut after a ClientHello with a foreign SNI", t);
  else
    pr_inconclusive(r, "tunnel to %s: no answer and no close after the ClientHello (%s)", t,
                    pr_errname(e));
}
