/* The docker backend's listener hand-off, the supervisor's side
 * (src/shim/shim.c draws both sides): a Unix SOCK_SEQPACKET socket in a
 * private directory, bound into the agent container only, on which the
 * container's PID 1 (airlock-shim) sends the listening socket it made at
 * 127.0.0.1:PORT in the container's network namespace. Kept apart from the
 * HTTP client so it can be tested alone (tests/unit/test_docker_door.c). */
#ifndef AL_RUN_DOCKERDOOR_H
#define AL_RUN_DOCKERDOOR_H

#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

typedef struct al_docker_door {
  int fd;         /* listening, non-blocking, CLOEXEC; -1 once a peer came */
  char dir[256];  /* $TMPDIR (if short) or /tmp, "airlock-dk-XXXXXX", mode 0700 */
  char path[300]; /* dir + "/handoff.sock", mode 0666; "" once unlinked */
} al_docker_door;

/* Make the directory and the socket (listen(2) backlog 1). The socket is
 * open to any uid (the shim's uid under the engine's userns-remap is not
 * ours) and its directory to ours only: the container reaches it through
 * its bind mount. Returns 0 or -1 with err (mkdtemp/socket/bind errno). */
int al_docker_door_open(al_docker_door *d, al_error *err);

/* Remove the socket's name and its directory; the listener keeps working
 * through the container's bind mount (made when the container started).
 * Idempotent. */
void al_docker_door_unlink(al_docker_door *d);

/* Close the listener (a later connect is refused) and unlink. Idempotent. */
void al_docker_door_close(al_docker_door *d);

/* A copy of a host file (the shim) in a private directory, bound into
 * the agent container from there: a bind's source path shows in the
 * container's /proc/self/mountinfo (field 4, proc(5)), and the shim's own
 * path may name the invoker's home (a checkout under /root), which the
 * sandbox must not learn (probe fs.mountinfo). */
typedef struct al_docker_stage {
  char dir[256];  /* $TMPDIR (if short) or /tmp, "airlock-sh-XXXXXX", mode 0700 */
  char path[300]; /* dir + "/airlock-shim", mode 0755; "" once removed */
} al_docker_stage;

/* Copy the regular file src into a new private directory. Returns 0 or -1
 * with err (mkdtemp/open/read/write errno, naming the path). */
int al_docker_stage_open(al_docker_stage *s, const char *src, al_error *err);

/* Remove the copy and its directory. Idempotent. */
void al_docker_stage_close(al_docker_stage *s);

/* Accept the one connection (the caller saw POLLIN on d->fd) and close the
 * listener whatever happens: exactly one peer per run. *conn gets the
 * connection, *peer_pid its SO_PEERCRED pid (unix(7)) in our PID
 * namespace, which the caller compares with the container's State.Pid.
 * Returns 0, or -1 with err (EAGAIN when nobody was there after all). */
int al_docker_door_accept(al_docker_door *d, int *conn, pid_t *peer_pid, al_error *err);

/* Receive the listener on conn (at most timeout_ms) and check it: one
 * descriptor by SCM_RIGHTS with the one byte 'L' (nothing more), a
 * listening IPv4 TCP socket (IPPROTO_TCP, not MPTCP; no SO_REUSEPORT)
 * bound to 127.0.0.1:port, not in the caller's own network namespace
 * (SO_NETNS_COOKIE, socket(7); Linux 5.14+, else that part is skipped). *fd gets it
 * (O_CLOEXEC, non-blocking). Anything else is closed. Returns 0, or -1 with
 * err (EPROTO naming what was wrong, ETIMEDOUT). */
int al_docker_door_recv_listener(int conn, uint16_t port, int timeout_ms, int *fd, al_error *err);

/* The one-byte ack 'A' on conn: the proxy holds the listener. Returns 0 or
 * -1 with err. */
int al_docker_door_ack(int conn, al_error *err);

#endif
