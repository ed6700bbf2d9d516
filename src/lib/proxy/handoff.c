/* The proxy -> forge gateway hand-off packet. See handoff.h. */
#include "proxy/handoff.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
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
