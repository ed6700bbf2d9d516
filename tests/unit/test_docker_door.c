/* Unit test for the docker backend's listener hand-off, the supervisor's
 * side (run/dockerdoor.h; src/shim/shim.c is the other side): the one
 * connection's SO_PEERCRED pid is the peer's (what docker.c compares with
 * the container's PID 1), the listener it sends is taken only when it is a
 * listening TCP socket on 127.0.0.1:PORT sent alone, the ack reaches the
 * peer, and once one peer came nobody else can connect. Hostile listeners
 * (0.0.0.0, IPv6, an accepted connection, a Unix listener, Multipath TCP,
 * SO_REUSEPORT, the right one but in the supervisor's own network
 * namespace) are refused; the listeners offered are made in a fresh
 * network namespace, as the shim's is (needs CAP_SYS_ADMIN, else skip). The positive
 * controls: the first connection succeeds where the second is refused; a
 * good listener is taken where each bad one is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>

#include "run/dockerdoor.h"

/* The door refuses a listener of the supervisor's own network namespace
 * (the container's is a fresh one): the listeners these tests offer are
 * made "away", in a fresh namespace with lo up, as the shim makes its own;
 * the door runs "home". Needs CAP_SYS_ADMIN (unshare and setns back);
 * without it the tests skip. */
static int g_home = -1;

static bool away(void)
{
  if (g_home < 0)
    g_home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (g_home < 0 || unshare(CLONE_NEWNET) < 0)
    return false;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  bool up = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 &&
            (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
  if (s >= 0)
    close(s);
  assert_true(up);
  return true;
}

static void home(void)
{
  assert_int_equal(setns(g_home, CLONE_NEWNET), 0);
}

#define AWAY_OR_SKIP()                                                                             \
  do {                                                                                             \
    if (!away()) {                                                                                 \
      print_message("# cannot make a network namespace (%s): skipped\n", strerror(errno));         \
      skip();                                                                                      \
    }                                                                                              \
  } while (0)

static int connect_to(const char *path)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* A TCP socket on 127.0.0.1 (port 0: any), listening when `listening`. */
static int tcp_on_loopback(int type, bool listening, uint16_t *port)
{
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  struct sockaddr_in in = {.sin_family = AF_INET};
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_true(fd >= 0);
  assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof in), 0);
  if (listening)
    assert_int_equal(listen(fd, 4), 0);
  socklen_t l = sizeof in;
  getsockname(fd, (struct sockaddr *)&in, &l);
  if (port)
    *port = ntohs(in.sin_port);
  return fd;
}

/* Send one byte `tag` and the descriptors fds[0..n) on c. */
static void send_fds(int c, char tag, const int *fds, size_t n)
{
  union {
    char b[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct iovec iov = {&tag, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n) {
    m.msg_control = u.b;
    m.msg_controllen = CMSG_SPACE(n * sizeof(int));
    struct cmsghdr *ch = CMSG_FIRSTHDR(&m);
    ch->cmsg_level = SOL_SOCKET;
    ch->cmsg_type = SCM_RIGHTS;
    ch->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(ch), fds, n * sizeof(int));
  }
  assert_int_equal(sendmsg(c, &m, 0), 1);
}

static void wait_readable(int fd)
{
  struct pollfd p = {.fd = fd, .events = POLLIN};
  assert_int_equal(poll(&p, 1, 5000), 1);
}

/* The good case in a child process: it makes the listener, connects,
 * sends it and exits 0 once it read the ack 'A'. */
static void good_peer_hands_over(void **state)
{
  (void)state;
  al_docker_door d;
  al_error err = {0};
  assert_int_equal(al_docker_door_open(&d, &err), 0);
  struct stat st;
  assert_int_equal(stat(d.path, &st), 0);
  assert_true(S_ISSOCK(st.st_mode));
  assert_int_equal(stat(d.dir, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  AWAY_OR_SKIP(); /* the child, like the shim, in a namespace of its own */
  uint16_t port = 0;
  int probe = tcp_on_loopback(SOCK_STREAM, true, &port);
  close(probe); /* the child binds the same port again (nobody else does
                   between: SO_REUSEADDR is not needed for a closed listener
                   without connections) */
  pid_t child = fork();
  assert_true(child >= 0);
  if (child > 0)
    home();
  if (child == 0) {
    close(d.fd);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(port)};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (l < 0 || bind(l, (struct sockaddr *)&in, sizeof in) < 0 || listen(l, 4) < 0)
      _exit(2);
    int c = connect_to(d.path);
    if (c < 0)
      _exit(3);
    send_fds(c, 'L', &l, 1);
    char ack = 0;
    _exit(read(c, &ack, 1) == 1 && ack == 'A' ? 0 : 4);
  }
  wait_readable(d.fd);
  int conn = -1;
  pid_t peer = -1;
  assert_int_equal(al_docker_door_accept(&d, &conn, &peer, &err), 0);
  /* the pid docker.c compares with the container's State.Pid */
  assert_int_equal(peer, child);
  assert_int_not_equal(peer, getpid());
  assert_int_equal(d.fd, -1);
  /* exactly one peer: the socket's name still exists, nobody listens */
  int again = connect_to(d.path);
  assert_int_equal(again, -1);
  assert_int_equal(errno, ECONNREFUSED);
  int lfd = -1;
  assert_int_equal(al_docker_door_recv_listener(conn, port, 5000, &lfd, &err), 0);
  assert_true(lfd >= 0);
  assert_int_equal(al_docker_door_ack(conn, &err), 0);
  int ws = 0;
  assert_int_equal(waitpid(child, &ws, 0), child);
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 0);
  /* it is the child's listener, still listening here */
  int acc = 0;
  socklen_t al = sizeof acc;
  assert_int_equal(getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al), 0);
  assert_int_equal(acc, 1);
  close(lfd);
  close(conn);
  char dir[256];
  snprintf(dir, sizeof dir, "%s", d.dir);
  al_docker_door_close(&d);
  assert_int_equal(stat(dir, &st), -1);
  al_docker_door_close(&d); /* idempotent */
}

/* One bad message: refused with EPROTO, nothing taken. */
static void refused(char tag, const int *fds, size_t n, uint16_t port)
{
  al_docker_door d;
  al_error err = {0};
  assert_int_equal(al_docker_door_open(&d, &err), 0);
  int c = connect_to(d.path);
  assert_true(c >= 0);
  wait_readable(d.fd);
  int conn = -1;
  pid_t peer = -1;
  assert_int_equal(al_docker_door_accept(&d, &conn, &peer, &err), 0);
  assert_int_equal(peer, getpid());
  send_fds(c, tag, fds, n);
  int lfd = -1;
  assert_int_equal(al_docker_door_recv_listener(conn, port, 5000, &lfd, &err), -1);
  assert_int_equal(err.code, EPROTO);
  assert_int_equal(lfd, -1);
  close(c);
  close(conn);
  al_docker_door_close(&d);
}

static void bad_listeners_refused(void **state)
{
  (void)state;
  uint16_t port = 0, other = 0;
  AWAY_OR_SKIP();
  int good = tcp_on_loopback(SOCK_STREAM, true, &port);
  int off = tcp_on_loopback(SOCK_STREAM, true, &other);
  int udp = tcp_on_loopback(SOCK_DGRAM, false, NULL);
  int bound = tcp_on_loopback(SOCK_STREAM, false, NULL);
  home();
  int p[2];
  assert_int_equal(pipe(p), 0);
  refused('L', &off, 1, port);   /* a listener on another port */
  refused('L', &udp, 1, port);   /* not TCP */
  refused('L', &bound, 1, port); /* not listening */
  refused('L', p, 1, port);      /* not a socket */
  int two[2] = {good, good};
  refused('L', two, 2, port);   /* more than one descriptor */
  refused('X', &good, 1, port); /* not the hand-off's byte */
  refused('L', NULL, 0, port);  /* no descriptor at all */
  /* positive control: the same listener, alone, is taken */
  al_docker_door d;
  al_error err = {0};
  assert_int_equal(al_docker_door_open(&d, &err), 0);
  int c = connect_to(d.path);
  wait_readable(d.fd);
  int conn = -1, lfd = -1;
  pid_t peer = -1;
  assert_int_equal(al_docker_door_accept(&d, &conn, &peer, &err), 0);
  send_fds(c, 'L', &good, 1);
  assert_int_equal(al_docker_door_recv_listener(conn, port, 5000, &lfd, &err), 0);
  assert_true(lfd >= 0);
  close(lfd);
  close(c);
  close(conn);
  al_docker_door_close(&d);
  close(good);
  close(off);
  close(udp);
  close(bound);
  close(p[0]);
  close(p[1]);
}

/* A listening socket of family `fam` (AF_INET or AF_INET6) and protocol
 * `proto` on `addr` (a literal), port `port`; -1 when the kernel cannot
 * make one (a protocol it lacks). */
static int listener_at(int fam, int proto, const char *addr, uint16_t port, bool reuseport)
{
  int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, proto);
  if (fd < 0)
    return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport)
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
  struct sockaddr_storage ss = {0};
  socklen_t sl;
  if (fam == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, addr, &in->sin_addr), 1);
    sl = sizeof *in;
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
    sl = sizeof *in6;
  }
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Take one message with listener fd on a fresh door: the result of
 * al_docker_door_recv_listener (0 taken, else err's code). */
static int offer(char tag, int fd, uint16_t port)
{
  al_docker_door d;
  al_error err = {0};
  assert_int_equal(al_docker_door_open(&d, &err), 0);
  int c = connect_to(d.path);
  assert_true(c >= 0);
  wait_readable(d.fd);
  int conn = -1, lfd = -1;
  pid_t peer = -1;
  assert_int_equal(al_docker_door_accept(&d, &conn, &peer, &err), 0);
  send_fds(c, tag, &fd, 1);
  int r = al_docker_door_recv_listener(conn, port, 5000, &lfd, &err);
  if (r == 0)
    close(lfd);
  close(c);
  close(conn);
  al_docker_door_close(&d);
  return r == 0 ? 0 : err.code;
}

/* What a hostile peer could send instead of the shim's listener, each on
 * the port the door expects: refused. Positive control: the listener the
 * shim makes, on the same port, is taken (so each refusal is the check's,
 * not a broken port or message). */
/* listener_at, made away (a fresh network namespace) */
static int listener_away(int fam, int proto, const char *addr, uint16_t port, bool reuseport)
{
  assert_true(away());
  int fd = listener_at(fam, proto, addr, port, reuseport);
  home();
  return fd;
}

static void hostile_listeners_refused(void **state)
{
  (void)state;
  AWAY_OR_SKIP();
  uint16_t port = 0;
  int probe = tcp_on_loopback(SOCK_STREAM, false, &port);
  close(probe);
  home();

  /* 0.0.0.0: every address of the namespace, not loopback only */
  int any = listener_away(AF_INET, 0, "0.0.0.0", port, false);
  assert_true(any >= 0);
  assert_int_equal(offer('L', any, port), EPROTO);
  close(any);
  /* IPv6 loopback, and the dual-stack wildcard */
  int v6 = listener_away(AF_INET6, 0, "::1", port, false);
  if (v6 >= 0) {
    assert_int_equal(offer('L', v6, port), EPROTO);
    close(v6);
  }
  int v6any = listener_away(AF_INET6, 0, "::", port, false);
  if (v6any >= 0) {
    assert_int_equal(offer('L', v6any, port), EPROTO);
    close(v6any);
  }
  /* a connection accepted on 127.0.0.1:port: its local address is the
   * listener's, but it is not listening */
  assert_true(away());
  int l = listener_at(AF_INET, 0, "127.0.0.1", port, false);
  assert_true(l >= 0);
  int cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(cl, (struct sockaddr *)&to, sizeof to), 0);
  int acc = accept4(l, NULL, NULL, SOCK_CLOEXEC);
  assert_true(acc >= 0);
  home();
  assert_int_equal(offer('L', acc, port), EPROTO);
  close(acc);
  close(cl);
  /* a listening Unix socket (the door's own kind) */
  al_docker_door other;
  al_error err = {0};
  assert_int_equal(al_docker_door_open(&other, &err), 0);
  assert_int_equal(offer('L', other.fd, port), EPROTO);
  al_docker_door_close(&other);
  /* the right listener, but in the supervisor's own network namespace
   * (the host's loopback: every process of the host could reach it) */
  int mine = listener_at(AF_INET, 0, "127.0.0.1", port, false);
  assert_true(mine >= 0);
  assert_int_equal(offer('L', mine, port), EPROTO);
  close(mine);
  /* positive control: the shim's listener (away), on that port, is taken */
  assert_int_equal(offer('L', l, port), 0);
  close(l);
  /* Multipath TCP (SOCK_STREAM, family AF_INET, 127.0.0.1:port, but
   * another protocol) and a listener with SO_REUSEPORT (the agent, same
   * uid, could bind a second one beside it): not the shim's listener */
  int mp = listener_away(AF_INET, IPPROTO_MPTCP, "127.0.0.1", port, false);
  if (mp >= 0) {
    assert_int_equal(offer('L', mp, port), EPROTO);
    close(mp);
  } else {
    print_message("# no MPTCP in this kernel: that case is not run\n");
  }
  int rp = listener_away(AF_INET, 0, "127.0.0.1", port, true);
  assert_true(rp >= 0);
  assert_int_equal(offer('L', rp, port), EPROTO);
  close(rp);
}

static void silent_peer_times_out(void **state)
{
  (void)state;
  al_docker_door d;
  al_error err = {0};
  assert_int_equal(al_docker_door_open(&d, &err), 0);
  int c = connect_to(d.path);
  wait_readable(d.fd);
  int conn = -1, lfd = -1;
  pid_t peer = -1;
  assert_int_equal(al_docker_door_accept(&d, &conn, &peer, &err), 0);
  assert_int_equal(al_docker_door_recv_listener(conn, 3128, 100, &lfd, &err), -1);
  assert_int_equal(err.code, ETIMEDOUT);
  close(c);
  close(conn);
  al_docker_door_close(&d);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(good_peer_hands_over),
      cmocka_unit_test(bad_listeners_refused),
      cmocka_unit_test(silent_peer_times_out),
      cmocka_unit_test(hostile_listeners_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
