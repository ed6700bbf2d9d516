/* Unit test for the docker backend's listener hand-off, the supervisor's
 * side (run/dockerdoor.h; src/shim/shim.c is the other side): the one
 * connection's SO_PEERCRED pid is the peer's (what docker.c compares with
 * the container's PID 1), the listener it sends is taken only when it is a
 * listening TCP socket on 127.0.0.1:PORT sent alone, the ack reaches the
 * peer, and once one peer came nobody else can connect. The positive
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

#include "run/dockerdoor.h"

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
  uint16_t port = 0;
  int probe = tcp_on_loopback(SOCK_STREAM, true, &port);
  close(probe); /* the child binds the same port again (nobody else does
                   between: SO_REUSEADDR is not needed for a closed listener
                   without connections) */
  pid_t child = fork();
  assert_true(child >= 0);
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
  int good = tcp_on_loopback(SOCK_STREAM, true, &port);
  int off = tcp_on_loopback(SOCK_STREAM, true, &other);
  int udp = tcp_on_loopback(SOCK_DGRAM, false, NULL);
  int bound = tcp_on_loopback(SOCK_STREAM, false, NULL);
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
