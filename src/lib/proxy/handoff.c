/* The proxy -> forge gateway hand-off packet. See handoff.h. */
#include "proxy/handoff.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

bool al_handoff_matches(const al_proxy_handoff *h, const char *host, uint16_t port)
{
  if (!h)
    return false;
  for (size_t i = 0; i < h->n_hosts && i < AL_HANDOFF_MAX_HOSTS; i++)
    if (h->hosts[i].port == port && strcmp(h->hosts[i].host, host) == 0)
      return true;
  return false;
}

/* The control buffer for two fds, aligned for struct cmsghdr. */
union fd2_cmsg {
  char buf[CMSG_SPACE(2 * sizeof(int))];
  struct cmsghdr align;
};

int al_handoff_send(int sock, const al_handoff_msg *m, const void *early, int client_fd,
                    int upstream_fd, al_error *err)
{
  union fd2_cmsg cm;
  struct iovec iov[2] = {{.iov_base = (void *)m, .iov_len = sizeof *m},
                         {.iov_base = (void *)early, .iov_len = m->early_len}};
  struct msghdr msg = {.msg_iov = iov,
                       .msg_iovlen = m->early_len ? 2 : 1,
                       .msg_control = cm.buf,
                       .msg_controllen = sizeof cm.buf};

  if (m->early_len > AL_HANDOFF_EARLY_MAX)
    return al_error_set(err, EMSGSIZE, "hand-off: %u early bytes (max %d)", m->early_len,
                        AL_HANDOFF_EARLY_MAX);
  memset(cm.buf, 0, sizeof cm.buf);
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  int fds[2] = {client_fd, upstream_fd};
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do
    n = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return al_make_error(err, errno, "hand-off to the gateway");
  if ((size_t)n != sizeof *m + m->early_len)
    return al_error_set(err, EIO, "hand-off to the gateway: short send");
  return 0;
}

int al_handoff_recv(int sock, al_handoff_msg *m, void *early, int *client_fd, int *upstream_fd,
                    al_error *err)
{
  union fd2_cmsg cm;
  /* one byte more than the largest valid packet: a longer one is truncated
   * (MSG_TRUNC) and refused */
  char tail[1];
  struct iovec iov[3] = {{.iov_base = m, .iov_len = sizeof *m},
                         {.iov_base = early, .iov_len = AL_HANDOFF_EARLY_MAX},
                         {.iov_base = tail, .iov_len = sizeof tail}};
  struct msghdr msg = {
      .msg_iov = iov, .msg_iovlen = 3, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf};
  int fds[2] = {-1, -1};
  size_t nfds = 0;

  *client_fd = *upstream_fd = -1;
  memset(m, 0, sizeof *m);
  ssize_t n;
  do
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return al_make_error(err, errno, "hand-off: recvmsg");
  if (n == 0 && msg.msg_controllen == 0)
    return 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int got[2];
    for (size_t i = 0; i < k; i++) {
      memcpy(&got[0], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (nfds < 2)
        fds[nfds] = got[0];
      else
        close(got[0]);
      nfds++;
    }
  }
  const char *why = NULL;
  if (!(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && nfds == 1 && (size_t)n == sizeof *m &&
      m->magic == AL_HANDOFF_SOURCE_MAGIC && m->version == AL_HANDOFF_VERSION) {
    /* a new source: a connected SEQPACKET unix socket, nothing else */
    int dom = 0, type = 0;
    socklen_t l1 = sizeof dom, l2 = sizeof type;
    if (getsockopt(fds[0], SOL_SOCKET, SO_DOMAIN, &dom, &l1) == 0 &&
        getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &l2) == 0 && dom == AF_UNIX &&
        type == SOCK_SEQPACKET) {
      *client_fd = fds[0];
      return 2;
    }
    close(fds[0]);
    return al_error_set(err, EPROTO, "hand-off: a source that is not a unix seqpacket socket");
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
    why = "truncated packet";
  else if (nfds != 2)
    why = "not exactly two descriptors";
  else if ((size_t)n < sizeof *m || m->magic != AL_HANDOFF_MAGIC ||
           m->version != AL_HANDOFF_VERSION)
    why = "bad header";
  else if (m->early_len > AL_HANDOFF_EARLY_MAX || (size_t)n != sizeof *m + m->early_len)
    why = "bad length";
  else if (!memchr(m->host, 0, sizeof m->host) || !memchr(m->client, 0, sizeof m->client) ||
           !m->host[0] || !m->port)
    why = "bad host";
  if (why) {
    for (size_t i = 0; i < 2; i++)
      if (fds[i] >= 0)
        close(fds[i]);
    return al_error_set(err, EPROTO, "hand-off: %s", why);
  }
  *client_fd = fds[0];
  *upstream_fd = fds[1];
  return 1;
}

/* One message of type `magic` carrying one descriptor (SCM_RIGHTS,
 * unix(7)); flags for sendmsg(2) beside MSG_NOSIGNAL. what names it in
 * errors. */
static int send_one_fd(int sock, uint32_t magic, int fd, int flags, const char *what, al_error *err)
{
  union fd2_cmsg cm;
  al_handoff_msg m = {.magic = magic, .version = AL_HANDOFF_VERSION};
  struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
  struct msghdr msg = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = cm.buf,
                       .msg_controllen = CMSG_SPACE(sizeof(int))};
  memset(cm.buf, 0, sizeof cm.buf);
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  do
    n = sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return al_make_error(err, errno, "hand-off: %s", what);
  if ((size_t)n != sizeof m)
    return al_error_set(err, EIO, "hand-off: %s: short send", what);
  return 0;
}

int al_handoff_send_source(int sock, int source_fd, al_error *err)
{
  return send_one_fd(sock, AL_HANDOFF_SOURCE_MAGIC, source_fd, 0, "giving the gateway its source",
                     err);
}

int al_handoff_connect(const char *path, int timeout_ms, al_error *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (!path || path[0] != '/' || strlen(path) >= sizeof sa.sun_path)
    return al_error_set(err, ENAMETOOLONG,
                        "--handoff-socket `%s`: not an absolute path shorter "
                        "than %zu bytes",
                        path ? path : "", sizeof sa.sun_path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int last = 0;
  for (int waited = 0;; waited += 100) {
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return al_make_error(err, errno, "--handoff-socket: socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
      return fd;
    last = errno;
    close(fd);
    if (waited >= timeout_ms || (last != ENOENT && last != ECONNREFUSED && last != EAGAIN))
      break;
    struct timespec ts = {.tv_nsec = 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return al_error_set(err, last == ENOENT || last == ECONNREFUSED ? ETIMEDOUT : last,
                      "--handoff-socket %s: no forge gateway there (%s)", path, strerror(last));
}

int al_handoff_send_counter(int sock, int memfd, al_error *err)
{
  return send_one_fd(sock, AL_HANDOFF_COUNTER_MAGIC, memfd, MSG_DONTWAIT,
                     "the egress counter to the proxy", err);
}

int al_handoff_recv_counter(int sock, int timeout_ms, uint64_t **counter, al_error *err)
{
  union fd2_cmsg cm;
  al_handoff_msg m;
  char tail[1];
  struct iovec iov[2] = {{.iov_base = &m, .iov_len = sizeof m},
                         {.iov_base = tail, .iov_len = sizeof tail}};
  struct msghdr msg = {
      .msg_iov = iov, .msg_iovlen = 2, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf};
  int fds[2] = {-1, -1};
  size_t nfds = 0;

  *counter = NULL;
  memset(&m, 0, sizeof m);
  struct pollfd p = {.fd = sock, .events = POLLIN};
  int pr;
  do
    pr = poll(&p, 1, timeout_ms);
  while (pr < 0 && errno == EINTR);
  if (pr <= 0)
    return al_error_set(err, ETIMEDOUT, "hand-off: no egress counter from the supervisor in %d ms",
                        timeout_ms);
  ssize_t n;
  do
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return al_make_error(err, errno, "hand-off: recvmsg (egress counter)");
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int got;
      memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (nfds < 2)
        fds[nfds] = got;
      else
        close(got);
      nfds++;
    }
  }
  const char *why = NULL;
  struct stat st;
  int seals = -1;
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfds != 1 || (size_t)n != sizeof m ||
      m.magic != AL_HANDOFF_COUNTER_MAGIC || m.version != AL_HANDOFF_VERSION)
    why = "not an egress counter packet";
  else if (fstat(fds[0], &st) < 0 || !S_ISREG(st.st_mode) ||
           st.st_size != AL_HANDOFF_COUNTER_SIZE || (seals = fcntl(fds[0], F_GET_SEALS)) < 0 ||
           (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
    why = "the egress counter is not a sealed memfd of one page";
  void *map = MAP_FAILED;
  if (!why) {
    map = mmap(NULL, AL_HANDOFF_COUNTER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    if (map == MAP_FAILED)
      why = "mmap of the egress counter failed";
  }
  for (size_t i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  if (why)
    return al_error_set(err, EPROTO, "hand-off: %s", why);
  *counter = map;
  return 0;
}
