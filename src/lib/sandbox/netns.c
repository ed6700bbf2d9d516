/* The sandbox's network namespace, made beside its root instead of in
 * front of it.
 *
 * Creating a network namespace is the costliest part of clone(2) (the
 * loopback device, its sysctl and /proc entries: ~0.5-0.7 ms of CPU on the
 * benchmark machine, bench/README.md). The sandbox's init does not need it
 * until its root is built, so the clone leaves CLONE_NEWNET out and init
 * forks a helper first:
 *
 *   init (pid 1)                              helper (pid 2, same namespaces)
 *   clone(SIGCHLD) ───────────────────────►   unshare(CLONE_NEWNET): owned by
 *   build the root (rootfs.c)                   the sandbox's user namespace
 *        ...                                  lo up, the listeners (127.0.0.1)
 *        ...                                  ──► supervisor: MSG_LISTENERS(fds)
 *   recv the namespace ◄────────────────────  SIOCGSKNS: its fd (SCM_RIGHTS)
 *   reap it; check the namespace's owner      _exit(0)
 *   setns(fd, CLONE_NEWNET)
 *
 * The helper runs airlock's own code only, before the command exists, and
 * is gone (reaped) before init confines itself; it reports a failure on
 * the supervisor's socket (sb_die) and init then exits. It is started with
 * the raw clone(2) and uses plain system calls only (no malloc, no stdio
 * locks): like init, a raw clone whose glibc state still describes the
 * supervisor's threads (internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "sandbox/internal.h"

static void helper_main(int sync_fd, int sock, const al_sandbox_opts *o) __attribute__((noreturn));
static void helper_main(int sync_fd, int sock, const al_sandbox_opts *o)
{
  if (unshare(CLONE_NEWNET) < 0)
    sb_die(sync_fd, 125, errno, "unshare the network namespace");
  sb_loopback_up(sync_fd);
  int lfds[AL_SANDBOX_MAX_LISTENERS];
  for (size_t i = 0; i < o->n_listen; i++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
      sb_die(sync_fd, 125, errno, "listener socket");
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(o->listen_ports[i])};
    uint32_t a = o->listen_addrs && o->listen_addrs[i] ? o->listen_addrs[i] : INADDR_LOOPBACK;
    sin.sin_addr.s_addr = htonl(a);
    /* every 127.0.0.0/8 address is local on lo (the kernel's local route
     * for lo's 127.0.0.1/8); ports below 1024 are the sandbox's to bind:
     * its user namespace owns this network namespace (capabilities(7)) */
    if (bind(s, (struct sockaddr *)&sin, sizeof sin) < 0)
      sb_die(sync_fd, 125, errno, "bind 127.%u.%u.%u:%u in the sandbox", (a >> 16) & 255u,
             (a >> 8) & 255u, a & 255u, o->listen_ports[i]);
    if (listen(s, 4096) < 0)
      sb_die(sync_fd, 125, errno, "listen on port %u in the sandbox", o->listen_ports[i]);
    lfds[i] = s;
  }
  sb_send_listeners(sync_fd, lfds, o->n_listen);
  /* the namespace itself, as a descriptor (SIOCGSKNS, sock_ioctl in
   * net/socket.c; no /proc, which init is pivoting away meanwhile) */
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int ns = s < 0 ? -1 : ioctl(s, SIOCGSKNS);
  if (ns < 0)
    sb_die(sync_fd, 125, errno, "SIOCGSKNS: the network namespace's descriptor");
  char one = 'n';
  struct iovec iov = {.iov_base = &one, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr mh = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  if (!c)
    _exit(125);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &ns, sizeof ns);
  if (sendmsg(sock, &mh, MSG_NOSIGNAL) != 1)
    sb_die(sync_fd, 125, errno, "send the network namespace to init");
  _exit(0);
}

int sb_netns_start(int sync_fd, const al_sandbox_opts *o, pid_t *helper)
{
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
    sb_die(sync_fd, 125, errno, "socketpair for the network namespace");
  pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid < 0)
    sb_die(sync_fd, 125, errno, "start the network namespace helper");
  if (pid == 0) {
    close(sp[0]);
    helper_main(sync_fd, sp[1], o);
  }
  close(sp[1]);
  *helper = pid;
  return sp[0];
}

/* st_ino of the namespace behind fd, or of the user namespace owning it */
static ino_t ns_ino(int sync_fd, int fd, bool owner)
{
  int f = owner ? ioctl(fd, NS_GET_USERNS) : fd;
  if (f < 0)
    sb_die(sync_fd, 125, errno, "NS_GET_USERNS");
  struct stat st;
  if (fstat(f, &st) < 0)
    sb_die(sync_fd, 125, errno, "fstat a namespace");
  if (owner)
    close(f);
  return st.st_ino;
}

void sb_netns_join(int sync_fd, int sock, pid_t helper)
{
  char one;
  struct iovec iov = {.iov_base = &one, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr mh = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  ssize_t n;
  while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
    ;
  if (n != 1)
    _exit(125); /* the helper died; it told the supervisor why */
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  int ns = -1;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
      c->cmsg_len == CMSG_LEN(sizeof(int)))
    memcpy(&ns, CMSG_DATA(c), sizeof ns);
  if (ns < 0)
    sb_die(sync_fd, 125, EPROTO, "no network namespace from the helper");
  close(sock);
  int ws;
  while (waitpid(helper, &ws, 0) < 0)
    if (errno != EINTR)
      sb_die(sync_fd, 125, errno, "reap the network namespace helper");
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
    sb_die(sync_fd, 125, ECHILD, "the network namespace helper failed");
  /* The namespace must be one the sandbox's own user namespace owns (made
   * inside it), never the host's (owned by the initial user namespace):
   * checked (NS_GET_USERNS, ioctl_ns(2)), not assumed. */
  int user = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
  if (user < 0)
    sb_die(sync_fd, 125, errno, "open /proc/self/ns/user");
  if (ns_ino(sync_fd, ns, true) != ns_ino(sync_fd, user, false))
    sb_die(sync_fd, 125, EPERM, "the network namespace is not the sandbox's own");
  close(user);
  if (setns(ns, CLONE_NEWNET) < 0)
    sb_die(sync_fd, 125, errno, "join the sandbox's network namespace");
  close(ns);
}
