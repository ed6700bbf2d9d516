/* The docker backend's listener hand-off (dockerdoor.h). */
#include "run/dockerdoor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

int al_docker_door_open(al_docker_door *d, al_error *err)
{
  memset(d, 0, sizeof *d);
  d->fd = -1;
  const char *base = getenv("TMPDIR");
  /* the socket's path must fit in sun_path (108 bytes) */
  if (!base || base[0] != '/' || strlen(base) > 60)
    base = "/tmp";
  snprintf(d->dir, sizeof d->dir, "%s/airlock-dk-XXXXXX", base);
  if (!mkdtemp(d->dir)) { /* mode 0700: no other user of the host gets in */
    int e = errno;
    d->dir[0] = '\0';
    return al_make_error(err, e, "docker hand-off socket: mkdtemp in %s", base);
  }
  snprintf(d->path, sizeof d->path, "%s/handoff.sock", d->dir);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, d->path, strlen(d->path) + 1);
  d->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (d->fd < 0 || bind(d->fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(d->path, 0666) < 0 ||
      listen(d->fd, 1) < 0) {
    int e = errno;
    al_docker_door_close(d);
    return al_make_error(err, e, "docker hand-off socket %s", sa.sun_path);
  }
  return 0;
}

int al_docker_stage_open(al_docker_stage *s, const char *src, al_error *err)
{
  memset(s, 0, sizeof *s);
  const char *base = getenv("TMPDIR");
  if (!base || base[0] != '/' || strlen(base) > 200)
    base = "/tmp";
  snprintf(s->dir, sizeof s->dir, "%s/airlock-sh-XXXXXX", base);
  if (!mkdtemp(s->dir)) {
    int e = errno;
    s->dir[0] = '\0';
    return al_make_error(err, e, "docker backend: mkdtemp in %s", base);
  }
  snprintf(s->path, sizeof s->path, "%s/airlock-shim", s->dir);
  int in = open(src, O_RDONLY | O_CLOEXEC);
  int out = in < 0 ? -1 : open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
  int e = in < 0 || out < 0 ? errno : 0;
  char buf[65536];
  ssize_t k = 0;
  while (!e && (k = read(in, buf, sizeof buf)) != 0) {
    if (k < 0) {
      if (errno != EINTR)
        e = errno;
      continue;
    }
    if (al_write_all(out, buf, (size_t)k) < 0)
      e = errno ? errno : EIO;
  }
  if (out >= 0 && close(out) < 0 && !e)
    e = errno;
  if (in >= 0)
    close(in);
  if (e) {
    al_docker_stage_close(s);
    return al_make_error(err, e, "docker backend: copy %s to a private directory", src);
  }
  return 0;
}

void al_docker_stage_close(al_docker_stage *s)
{
  if (s->path[0] && unlink(s->path) < 0 && errno != ENOENT)
    al_warn("docker backend: unlink %s: %s", s->path, strerror(errno));
  s->path[0] = '\0';
  if (s->dir[0] && rmdir(s->dir) < 0 && errno != ENOENT)
    al_warn("docker backend: rmdir %s: %s", s->dir, strerror(errno));
  s->dir[0] = '\0';
}

void al_docker_door_unlink(al_docker_door *d)
{
  if (d->path[0] && unlink(d->path) < 0 && errno != ENOENT)
    al_warn("docker hand-off socket %s: unlink: %s", d->path, strerror(errno));
  d->path[0] = '\0';
  if (d->dir[0] && rmdir(d->dir) < 0 && errno != ENOENT)
    al_warn("docker hand-off directory %s: rmdir: %s", d->dir, strerror(errno));
  d->dir[0] = '\0';
}

void al_docker_door_close(al_docker_door *d)
{
  if (d->fd >= 0)
    close(d->fd);
  d->fd = -1;
  al_docker_door_unlink(d);
}

int al_docker_door_accept(al_docker_door *d, int *conn, pid_t *peer_pid, al_error *err)
{
  *conn = -1;
  *peer_pid = -1;
  if (d->fd < 0)
    return al_error_set(err, EINVAL, "docker hand-off socket: already used");
  int c = accept4(d->fd, NULL, NULL, SOCK_CLOEXEC);
  int e = errno;
  if (c < 0 && (e == EAGAIN || e == EINTR || e == ECONNABORTED))
    return al_error_set(err, EAGAIN, "docker hand-off socket: nobody there");
  /* one peer per run: nobody else can connect from now on */
  close(d->fd);
  d->fd = -1;
  if (c < 0)
    return al_make_error(err, e, "docker hand-off socket: accept");
  struct ucred uc;
  socklen_t ul = sizeof uc;
  if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &uc, &ul) < 0 || uc.pid <= 0) {
    e = errno;
    close(c);
    return al_make_error(err, e ? e : EPROTO, "docker hand-off socket: SO_PEERCRED");
  }
  *conn = c;
  *peer_pid = uc.pid;
  return 0;
}

/* Close every descriptor a message carried. */
static void close_passed(struct msghdr *m)
{
  for (struct cmsghdr *x = CMSG_FIRSTHDR(m); x; x = CMSG_NXTHDR(m, x))
    if (x->cmsg_level == SOL_SOCKET && x->cmsg_type == SCM_RIGHTS)
      for (size_t i = 0; i < (x->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
        int bad;
        memcpy(&bad, CMSG_DATA(x) + i * sizeof(int), sizeof bad);
        close(bad);
      }
}

int al_docker_door_recv_listener(int conn, uint16_t port, int timeout_ms, int *fd, al_error *err)
{
  *fd = -1;
  struct pollfd p = {.fd = conn, .events = POLLIN};
  int pr;
  while ((pr = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
    ;
  if (pr <= 0)
    return al_error_set(err, pr == 0 ? ETIMEDOUT : errno,
                        "docker hand-off: no listener from the container in %d ms", timeout_ms);
  union {
    char b[CMSG_SPACE(4 * sizeof(int))]; /* room to see (and close) extras */
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  char data[8];
  struct iovec iov = {data, sizeof data};
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
  ssize_t n = recvmsg(conn, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0)
    return al_make_error(err, errno, "docker hand-off: recvmsg");
  struct cmsghdr *ch = CMSG_FIRSTHDR(&m);
  if (n != 1 || data[0] != 'L' || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || !ch ||
      ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS ||
      ch->cmsg_len != CMSG_LEN(sizeof(int)) || CMSG_NXTHDR(&m, ch)) {
    close_passed(&m);
    return al_error_set(err, EPROTO,
                        "docker hand-off: the container sent %zd byte(s) and not exactly one "
                        "descriptor",
                        n);
  }
  int l;
  memcpy(&l, CMSG_DATA(ch), sizeof l);
  /* what came is hostile until checked: a listening IPv4 TCP socket on
   * 127.0.0.1:port, plain TCP (not MPTCP, also SOCK_STREAM), without
   * SO_REUSEPORT (which would let a process of the container's uid bind a
   * second listener on the port beside it; socket(7)) */
  int acc = 0, dom = 0, type = 0, proto = 0, reuse = 1;
  socklen_t l1 = sizeof acc, l2 = sizeof dom, l3 = sizeof type, l4 = sizeof proto,
            l5 = sizeof reuse;
  struct sockaddr_in a = {0};
  socklen_t al = sizeof a;
  if (getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l1) < 0 ||
      getsockopt(l, SOL_SOCKET, SO_DOMAIN, &dom, &l2) < 0 ||
      getsockopt(l, SOL_SOCKET, SO_TYPE, &type, &l3) < 0 ||
      getsockopt(l, SOL_SOCKET, SO_PROTOCOL, &proto, &l4) < 0 ||
      getsockopt(l, SOL_SOCKET, SO_REUSEPORT, &reuse, &l5) < 0 || !acc || dom != AF_INET ||
      type != SOCK_STREAM || proto != IPPROTO_TCP || reuse != 0 ||
      getsockname(l, (struct sockaddr *)&a, &al) < 0 || al != sizeof a || a.sin_family != AF_INET ||
      a.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || ntohs(a.sin_port) != port) {
    close(l);
    return al_error_set(err, EPROTO,
                        "docker hand-off: the descriptor is not a listening TCP socket on "
                        "127.0.0.1:%u (plain TCP, no SO_REUSEPORT)",
                        (unsigned)port);
  }
  /* and not a socket of our own network namespace: the container's
   * (NetworkMode none) is a fresh one, while a listener on the host's
   * loopback would open the run's proxy (and its gateway hand-off) to every
   * process of the host. SO_NETNS_COOKIE (socket(7), Linux 5.14; before:
   * not checked) needs no privilege, unlike SIOCGSKNS. */
  uint64_t theirs = 0, ours = 0;
  socklen_t c1 = sizeof theirs, c2 = sizeof ours;
  int me = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  bool same = me >= 0 && getsockopt(l, SOL_SOCKET, SO_NETNS_COOKIE, &theirs, &c1) == 0 &&
              getsockopt(me, SOL_SOCKET, SO_NETNS_COOKIE, &ours, &c2) == 0 && theirs == ours;
  if (me >= 0)
    close(me);
  if (same) {
    close(l);
    return al_error_set(err, EPROTO,
                        "docker hand-off: the listener is in the supervisor's own network "
                        "namespace, not the container's");
  }
  int fl = fcntl(l, F_GETFL);
  if (fl < 0 || fcntl(l, F_SETFL, fl | O_NONBLOCK) < 0) {
    int e = errno;
    close(l);
    return al_make_error(err, e, "docker hand-off: fcntl");
  }
  *fd = l;
  return 0;
}

int al_docker_door_ack(int conn, al_error *err)
{
  if (send(conn, "A", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
    return al_make_error(err, errno, "docker hand-off: the ack to the container");
  return 0;
}
