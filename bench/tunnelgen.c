/* tunnelgen: a small load generator for the egress proxy benchmark
 * (bench/proxy.py). Opens N connections, P at a time, on 127.0.0.1 only.
 * For each: (through a proxy) send `CONNECT TARGET`, wait for its 200;
 * then `GET PATH` with `Connection: close` and read the answer to EOF.
 * Each request is one new tunnel, as with curl -Z -p -x ... -H
 * 'Connection: close', but without curl's per-transfer bookkeeping.
 *
 *   tunnelgen PROXY_PORT TARGET PATH N P
 *     PROXY_PORT  0: connect to TARGET directly (TARGET must be 127.0.0.1:PORT)
 *     TARGET      host:port put in CONNECT and Host
 *   prints "<seconds> <ok> <failed>"; ok = answers starting "HTTP/1.1 200".
 *   Gives up after 120 s. Build: cc -O2 -o tunnelgen tunnelgen.c */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { S_CONNECTING, S_PROXY_HEAD, S_RESPONSE };

typedef struct conn {
  int fd, state;
  char head[1024];
  size_t len;
  char status[16];
  size_t slen;
} conn;

static struct sockaddr_in dst;
static char connect_req[512], get_req[512];
static size_t connect_len, get_len;
static int use_proxy, epfd;
static long ok, failed, started, total;

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int start_one(conn *c)
{
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0)
    return -1;
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&dst, sizeof dst) < 0 && errno != EINPROGRESS) {
    close(c->fd);
    c->fd = -1;
    return -1;
  }
  c->state = S_CONNECTING;
  c->len = c->slen = 0;
  struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
  epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
  started++;
  return 0;
}

static void finish(conn *c, int good)
{
  close(c->fd);
  c->fd = -1;
  if (good)
    ok++;
  else
    failed++;
  while (started < total && start_one(c) < 0) {
    started++;
    failed++;
  }
}

static int send_all(int fd, const char *p, size_t n)
{
  /* requests are tiny: one send fills an empty socket buffer */
  return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static void on_event(conn *c, uint32_t ev)
{
  char buf[65536];

  if (c->state == S_CONNECTING) {
    int err = 0;
    socklen_t sl = sizeof err;
    if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
      return;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err) {
      finish(c, 0);
      return;
    }
    if (send_all(c->fd, use_proxy ? connect_req : get_req, use_proxy ? connect_len : get_len) < 0) {
      finish(c, 0);
      return;
    }
    c->state = use_proxy ? S_PROXY_HEAD : S_RESPONSE;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &e);
    return;
  }
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    if (n <= 0) {
      finish(c, n == 0 && c->state == S_RESPONSE && c->slen >= 12 &&
                    memcmp(c->status, "HTTP/1.1 200", 12) == 0);
      return;
    }
    if (c->state == S_PROXY_HEAD) {
      if (c->len + (size_t)n > sizeof c->head) {
        finish(c, 0);
        return;
      }
      memcpy(c->head + c->len, buf, (size_t)n);
      c->len += (size_t)n;
      char *e = memmem(c->head, c->len, "\r\n\r\n", 4);
      if (!e)
        continue;
      /* "HTTP/1.x 200" and nothing after the head (the origin has not
       * been asked anything yet) */
      if (c->len < 12 || memcmp(c->head + 8, " 200", 4) != 0 || e + 4 != c->head + c->len ||
          send_all(c->fd, get_req, get_len) < 0) {
        finish(c, 0);
        return;
      }
      c->state = S_RESPONSE;
      continue;
    }
    size_t take = sizeof c->status - c->slen;
    if (take > (size_t)n)
      take = (size_t)n;
    memcpy(c->status + c->slen, buf, take);
    c->slen += take;
  }
}

int main(int argc, char **argv)
{
  if (argc != 6) {
    fprintf(stderr, "usage: tunnelgen PROXY_PORT TARGET PATH N P\n");
    return 2;
  }
  int pport = atoi(argv[1]);
  const char *target = argv[2], *path = argv[3];
  total = atol(argv[4]);
  long par = atol(argv[5]);
  if (total <= 0 || par <= 0 || par > 10000)
    return 2;
  use_proxy = pport != 0;
  dst.sin_family = AF_INET;
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only */
  if (use_proxy) {
    dst.sin_port = htons((uint16_t)pport);
  } else {
    const char *colon = strrchr(target, ':');
    if (!colon || strncmp(target, "127.0.0.1:", 10) != 0)
      return 2;
    dst.sin_port = htons((uint16_t)atoi(colon + 1));
  }
  connect_len = (size_t)snprintf(connect_req, sizeof connect_req,
                                 "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
  get_len = (size_t)snprintf(get_req, sizeof get_req,
                             "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: tunnelgen\r\n"
                             "Accept: */*\r\nConnection: close\r\n\r\n",
                             path, target);
  epfd = epoll_create1(EPOLL_CLOEXEC);
  conn *cs = calloc((size_t)par, sizeof *cs);
  if (epfd < 0 || !cs)
    return 1;

  double t0 = now(), limit = t0 + 120;
  for (long i = 0; i < par && started < total; i++)
    if (start_one(&cs[i]) < 0) {
      started++;
      failed++;
      cs[i].fd = -1;
    }
  while (ok + failed < total && now() < limit) {
    struct epoll_event evs[256];
    int n = epoll_wait(epfd, evs, 256, 1000);
    for (int i = 0; i < n; i++)
      on_event(evs[i].data.ptr, evs[i].events);
  }
  printf("%.4f %ld %ld\n", now() - t0, ok, total - ok);
  return 0;
}
