/* The canary: a forked helper on the host's loopback that must hear
 * nothing from inside the sandbox. It listens on TCP (127.0.0.1 and ::1),
 * UDP, a fake DNS resolver (answers NXDOMAIN, RFC 1035 §4.1.1 RCODE 3), an
 * abstract unix socket, and — for the positive control only — an open
 * proxy that answers 200 to every CONNECT and never dials anything. Every
 * byte it receives goes to a log pipe as "KIND LEN\n<bytes>\n" (KIND: T tcp,
 * U udp, D dns name, X unix, P proxy request); the outer process searches
 * it for probe markers afterwards. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "net/host.h"
#include "net/http.h"
#include "probe/internal.h"

#define MAX_CONNS 64
#define LOG_CAP (512u * 1024u)

static size_t logged;

static void log_rec(int fd, char kind, const void *buf, size_t len)
{
  if (len > 512)
    len = 512;
  if (logged + len + 32 > LOG_CAP)
    return;
  char hdr[32];
  int h = snprintf(hdr, sizeof hdr, "%c %zu\n", kind, len);
  al_write_all(fd, hdr, (size_t)h);
  al_write_all(fd, buf, len);
  al_write_all(fd, "\n", 1);
  logged += (size_t)h + len + 1;
}

static int listen_tcp(int family, int *port)
{
  int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0)
    return -1;
  struct sockaddr_storage ss = {0};
  socklen_t sl;
  if (family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    sl = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sl = sizeof *a;
  }
  if (bind(s, (struct sockaddr *)&ss, sl) < 0 || listen(s, 64) < 0) {
    close(s);
    return -1;
  }
  if (getsockname(s, (struct sockaddr *)&ss, &sl) < 0) {
    close(s);
    return -1;
  }
  // NOLINTNEXTLINE(clang-analyzer-core.CallAndMessage): getsockname() filled ss
  *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                   : ((struct sockaddr_in *)&ss)->sin_port);
  return s;
}

static int bind_udp(int *port)
{
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof a;
  if (bind(s, (struct sockaddr *)&a, sl) < 0) {
    close(s);
    return -1;
  }
  getsockname(s, (struct sockaddr *)&a, &sl);
  *port = ntohs(a.sin_port);
  return s;
}

struct conn {
  int fd;
  char kind; /* T, X, P */
  bool tunnel;
  size_t hlen;
  char head[2048];
};

static void dns_answer(int s, int logfd)
{
  unsigned char q[1500];
  struct sockaddr_storage peer;
  socklen_t pl = sizeof peer;
  ssize_t n = recvfrom(s, q, sizeof q, 0, (struct sockaddr *)&peer, &pl);
  if (n < 12)
    return;
  char name[256];
  size_t o = 12, nl = 0;
  while (o < (size_t)n && q[o] && nl < sizeof name - 70) {
    size_t l = q[o++];
    if (l > 63 || o + l > (size_t)n)
      break;
    if (nl)
      name[nl++] = '.';
    memcpy(name + nl, q + o, l);
    nl += l;
    o += l;
  }
  log_rec(logfd, 'D', name, nl);
  q[2] |= 0x80;                     /* QR */
  q[3] = (unsigned char)(0x80 | 3); /* RA, NXDOMAIN */
  q[6] = q[7] = q[8] = q[9] = q[10] = q[11] = 0;
  sendto(s, q, (size_t)n, 0, (struct sockaddr *)&peer, pl);
}

/* The open proxy of the positive control: log, pretend to resolve, say
 * yes. It never opens a connection of its own. */
static bool proxy_data(struct conn *c, int logfd)
{
  char buf[2048];
  ssize_t n = read(c->fd, buf, sizeof buf);
  if (n <= 0)
    return false;
  if (c->tunnel) {
    log_rec(logfd, 'P', buf, (size_t)n);
    (void)!write(c->fd, "canary\n", 7);
    return true;
  }
  size_t room = sizeof c->head - 1 - c->hlen;
  size_t k = (size_t)n < room ? (size_t)n : room;
  memcpy(c->head + c->hlen, buf, k);
  c->hlen += k;
  c->head[c->hlen] = '\0';
  /* the one request-head parser (net/http.h, fuzzed); the probes send
   * well-formed heads, so a head it refuses is logged and closed */
  al_http_request req;
  const char *why = NULL;
  int hl = al_http_parse_head(c->head, c->hlen, &req, &why);
  if (hl == 0)
    return c->hlen < sizeof c->head - 1;
  log_rec(logfd, 'P', c->head, c->hlen);
  if (hl < 0)
    return false;
  bool connect = req.method_len == 7 && memcmp(req.method, "CONNECT", 7) == 0;
  al_host host;
  uint16_t port;
  const char *path;
  size_t path_len;
  if (connect ? al_authority_parse(req.target, req.target_len, &host, &port, &why)
              : al_http_absolute_target(req.target, req.target_len, &host, &port, &path, &path_len,
                                        &why))
    return false;
  log_rec(logfd, 'D', host.name, strlen(host.name));
  if (connect) {
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    (void)!write(c->fd, ok, sizeof ok - 1);
    c->tunnel = true;
    return true;
  }
  static const char resp[] =
      "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\ncanary\n";
  (void)!write(c->fd, resp, sizeof resp - 1);
  return false;
}

static void canary_loop(int listeners[6], int logfd)
{
  /* listeners: tcp, tcp6, udp, dns, unix, proxy (-1 when absent) */
  struct conn conns[MAX_CONNS] = {0};
  size_t nc = 0;
  uint64_t deadline = al_now_ms() + 10 * 60 * 1000; /* never outlive a run by much */
  for (;;) {
    struct pollfd p[6 + MAX_CONNS];
    for (int i = 0; i < 6; i++)
      p[i] = (struct pollfd){.fd = listeners[i], .events = POLLIN};
    for (size_t i = 0; i < nc; i++)
      p[6 + i] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
    if (poll(p, 6 + nc, 1000) < 0 && errno != EINTR)
      _exit(1);
    if (al_now_ms() > deadline)
      _exit(0);
    for (int i = 0; i < 6; i++) {
      if (listeners[i] < 0 || !(p[i].revents & POLLIN))
        continue;
      if (i == 2) {
        char b[1500];
        ssize_t n = recv(listeners[i], b, sizeof b, 0);
        if (n > 0)
          log_rec(logfd, 'U', b, (size_t)n);
        continue;
      }
      if (i == 3) {
        dns_answer(listeners[i], logfd);
        continue;
      }
      int c = accept4(listeners[i], NULL, NULL, SOCK_CLOEXEC);
      if (c < 0)
        continue;
      char kind = (char)(i == 4 ? 'X' : i == 5 ? 'P' : 'T');
      log_rec(logfd, kind, "(connect)", 9);
      if (kind == 'T')
        (void)!write(c, "canary\n", 7);
      if (nc == MAX_CONNS) {
        close(c);
        continue;
      }
      conns[nc] = (struct conn){.fd = c, .kind = kind};
      nc++;
    }
    for (size_t i = 0; i < nc;) {
      short ev = p[6 + i].revents;
      bool keep = true;
      if (p[6 + i].fd == conns[i].fd && (ev & (POLLIN | POLLHUP | POLLERR))) {
        if (conns[i].kind == 'P') {
          keep = proxy_data(&conns[i], logfd);
        } else {
          char b[1024];
          ssize_t n = read(conns[i].fd, b, sizeof b);
          if (n > 0)
            log_rec(logfd, conns[i].kind, b, (size_t)n);
          else
            keep = false;
        }
      }
      if (!keep) {
        close(conns[i].fd);
        conns[i] = conns[--nc];
        p[6 + i] = p[6 + nc];
        continue;
      }
      i++;
    }
  }
}

int pr_canary_start(pr_canary *c, const char *nonce, bool open_proxy, al_error *err)
{
  memset(c, 0, sizeof *c);
  c->pid = -1;
  c->log_fd = -1;
  int ls[6] = {-1, -1, -1, -1, -1, -1};
  ls[0] = listen_tcp(AF_INET, &c->tcp);
  if (ls[0] < 0)
    return al_make_error(err, errno, "canary: listen on 127.0.0.1");
  ls[1] = listen_tcp(AF_INET6, &c->tcp6);
  if (ls[1] < 0)
    c->tcp6 = 0;
  ls[2] = bind_udp(&c->udp);
  ls[3] = bind_udp(&c->dns);
  snprintf(c->unix_name, sizeof c->unix_name, "airlock-probe-canary-%s", nonce);
  ls[4] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t nl = strlen(c->unix_name);
  memcpy(sun.sun_path + 1, c->unix_name, nl);
  if (ls[4] >= 0 && (bind(ls[4], (struct sockaddr *)&sun,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + nl)) < 0 ||
                     listen(ls[4], 16) < 0)) {
    close(ls[4]);
    ls[4] = -1;
  }
  if (open_proxy)
    ls[5] = listen_tcp(AF_INET, &c->proxy_port);
  int lp[2];
  int rc = 0;
  if (ls[2] < 0 || ls[3] < 0 || ls[4] < 0 || (open_proxy && ls[5] < 0)) {
    rc = al_make_error(err, errno, "canary: sockets");
    goto out;
  }
  if (pipe2(lp, O_CLOEXEC) < 0) {
    rc = al_make_error(err, errno, "canary: pipe");
    goto out;
  }
  fcntl(lp[1], F_SETPIPE_SZ, 1 << 20);
  pid_t pid = fork();
  if (pid < 0) {
    rc = al_make_error(err, errno, "canary: fork");
    close(lp[0]);
    close(lp[1]);
    goto out;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NAME, "airlock-canary");
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_IGN);
    close(lp[0]);
    canary_loop(ls, lp[1]);
    _exit(0);
  }
  close(lp[1]);
  c->pid = pid;
  c->log_fd = lp[0];
out:
  for (int i = 0; i < 6; i++)
    if (ls[i] >= 0)
      close(ls[i]);
  return rc;
}

void pr_canary_stop(pr_canary *c, char **log, size_t *len)
{
  *log = NULL;
  *len = 0;
  if (c->pid > 0) {
    /* give in-flight records (a datagram sent just before the run ended) a moment */
    usleep(20000);
    kill(c->pid, SIGKILL);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    c->pid = -1;
  }
  if (c->log_fd < 0)
    return;
  size_t cap = 64 * 1024, n = 0;
  char *b = al_xmalloc(cap + 1);
  for (;;) {
    if (n == cap) {
      cap *= 2;
      b = al_xrealloc(b, cap + 1);
    }
    ssize_t k = read(c->log_fd, b + n, cap - n);
    if (k <= 0)
      break;
    n += (size_t)k;
  }
  b[n] = '\0';
  close(c->log_fd);
  c->log_fd = -1;
  *log = b;
  *len = n;
}
