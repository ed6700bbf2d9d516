/* The docker backend's side door to the gateway (docs/docker.md, "Sealed
 * credentials"): a Unix SOCK_SEQPACKET socket the supervisor makes in a
 * private directory, bound into the proxy container only; the one
 * connection from the proxy container is checked (SO_PEERCRED, unix(7))
 * and given to the gateway as a source of hand-off packets. See gateway.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "gateway/gateway.h"

int al_gateway_listen(al_gateway_listener *l, al_error *err)
{
  memset(l, 0, sizeof *l);
  l->fd = -1;
  const char *base = getenv("TMPDIR");
  /* the socket's path must fit in sun_path (108 bytes) */
  if (!base || base[0] != '/' || strlen(base) > 60)
    base = "/tmp";
  snprintf(l->dir, sizeof l->dir, "%s/airlock-gw-XXXXXX", base);
  if (!mkdtemp(l->dir)) { /* mode 0700: no other user of the host gets in */
    int e = errno;
    l->dir[0] = '\0';
    return al_make_error(err, e, "gateway socket: mkdtemp in %s", base);
  }
  snprintf(l->path, sizeof l->path, "%s/gateway.sock", l->dir);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, l->path, strlen(l->path) + 1);
  l->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
      /* the proxy's uid in its container (65534, remapped by the engine's
       * userns-remap) is not ours: the socket is open to any uid, its
       * directory to ours only; the container reaches it through its bind
       * mount, and whoever connects is checked before it counts */
      chmod(l->path, 0666) < 0 || listen(l->fd, 4) < 0) {
    int e = errno;
    al_gateway_listener_close(l);
    return al_make_error(err, e, "gateway socket %s", l->path);
  }
  return 0;
}

/* The parent pid of pid, from /proc/PID/stat (proc(5)), or -1. */
static pid_t parent_of(pid_t pid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
  const char *rp = strrchr(buf, ')');
  if (!rp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
    return -1;
  char *end = NULL;
  errno = 0;
  long ppid = strtol(rp + 4, &end, 10);
  if (errno || end == rp + 4 || *end != ' ' || ppid <= 0 || ppid > INT32_MAX)
    return -1;
  return (pid_t)ppid;
}

int al_gateway_adopt(al_gateway *g, al_gateway_listener *l, pid_t proxy_pid, int timeout_ms,
                     al_error *err)
{
  if (l->fd < 0 || proxy_pid <= 0)
    return al_error_set(err, EINVAL, "gateway socket: nothing to adopt from");
  uint64_t end = al_now_ms() + (uint64_t)timeout_ms;
  unsigned strangers = 0;
  for (;;) {
    int64_t left = (int64_t)(end - al_now_ms());
    struct pollfd p = {.fd = l->fd, .events = POLLIN};
    int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      return al_error_set(
          err, ETIMEDOUT, "gateway socket %s: the proxy container did not connect in %d ms%s",
          l->path, timeout_ms, strangers ? " (connections from other processes were refused)" : "");
    int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
      continue;
    struct ucred uc;
    socklen_t ul = sizeof uc;
    /* the proxy is the container's process (proxy_pid) or, under the
     * engine's init, its child; anyone else is closed and not counted */
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &uc, &ul) < 0 || uc.pid <= 0 ||
        (uc.pid != proxy_pid && parent_of(uc.pid) != proxy_pid)) {
      close(c);
      strangers++;
      continue;
    }
    /* the run's egress counter first, to the proxy, then its connection
     * to the gateway (gateway.h: one budget for both) */
    int r = al_handoff_send_counter(c, al_gateway_egress_fd(g), err) < 0
                ? -1
                : al_handoff_send_source(al_gateway_handoff(g)->fd, c, err);
    close(c);
    /* one proxy per run: nobody else can connect from now on. The file
     * stays until the containers are gone (al_gateway_listener_close):
     * the engine re-creates a missing bind source as a directory when it
     * mounts the container again (e.g. for GET .../archive) */
    close(l->fd);
    l->fd = -1;
    return r;
  }
}

void al_gateway_listener_close(al_gateway_listener *l)
{
  if (l->fd >= 0)
    close(l->fd);
  l->fd = -1;
  if (l->path[0] && unlink(l->path) < 0 && errno != ENOENT)
    al_warn("gateway socket %s: unlink: %s", l->path, strerror(errno));
  l->path[0] = '\0';
  if (l->dir[0] && rmdir(l->dir) < 0 && errno != ENOENT)
    al_warn("gateway socket directory %s: rmdir: %s", l->dir, strerror(errno));
  l->dir[0] = '\0';
}
