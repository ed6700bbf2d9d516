/* The broker daemon: one event loop (epoll + signalfd + timerfd + an
 * eventfd for worker results) that accepts lease connections on a Unix
 * socket, checks the peer's uid (SO_PEERCRED, unix(7)), mints the lease's
 * tokens on a worker thread, and revokes them on the one revoke path when
 * the lease ends: the client releases, closes, crashes or is killed, the
 * TTL passes, or the broker gets SIGTERM/SIGINT (then every lease is
 * revoked before the process exits). A failure ends one connection, never
 * the process. Protocol: proto.h. */
#ifndef AL_BROKER_BROKER_H
#define AL_BROKER_BROKER_H

#include <stdbool.h>

#include "forge/appconfig.h"
#include "common/error.h"

typedef struct al_broker_opts {
  const char *config_path;
  const char *socket_path; /* NULL: only a socket-activated fd is accepted */
  bool *started;           /* may be NULL: set true once it serves (a failure before that is
                              a failure to start: exit 125) */
} al_broker_opts;

/* Take a listening socket passed by systemd (sd_listen_fds(3) protocol:
 * LISTEN_PID == getpid(), LISTEN_FDS >= 1, the fd is 3). Returns the fd,
 * 0 when none was passed, or -1 with err when the passed fd is not a
 * listening AF_UNIX stream socket. Unsets LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES. */
int al_broker_inherited_listener(al_error *err);

/* Create a listening Unix socket at path with mode 0600. A stale socket
 * (nobody listening) is replaced; a live one or a non-socket is an error.
 * The socket is bound and listening under "PATH.PID" and renamed to path,
 * so path never names a socket that refuses connections. */
int al_broker_listen_unix(const char *path, al_error *err);

/* Load the config and key, listen, and serve until SIGTERM/SIGINT; every
 * live lease is revoked before returning. Returns 0 on a clean shutdown
 * (all revocations confirmed), -1 with err when startup fails or a
 * revocation could not be confirmed at shutdown. */
int al_broker_run(const al_broker_opts *opts, al_error *err);

#endif
