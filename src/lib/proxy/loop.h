/* A small epoll event loop in the manner of Redis' ae.c.
 *
 * A watch is an fd plus the function to call when it is ready; owners embed
 * an al_watch in their own struct and find themselves again with
 * container_of-style arithmetic. A watch whose fd is set to -1 while a batch
 * of events is being dispatched gets no further calls in that batch, so an
 * owner may close itself from inside a handler as long as it frees its
 * memory only after al_loop_once() returns (see the proxy's graveyard). */
#ifndef AL_PROXY_LOOP_H
#define AL_PROXY_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

typedef struct al_watch al_watch;
typedef void al_watch_fn(al_watch *w, uint32_t events);

struct al_watch {
  int fd;          /* -1: dead, skip */
  al_watch_fn *fn; /* called with the epoll event mask (EPOLLIN, EPOLLOUT, ...) */
};

typedef struct al_loop {
  int epfd;
} al_loop;

/* Create the epoll instance (epoll_create1(2), EPOLL_CLOEXEC). */
int al_loop_init(al_loop *l, al_error *err);
void al_loop_close(al_loop *l);

/* Register / change / remove a watch (epoll_ctl(2)). `events` is an
 * EPOLL* mask, EPOLLET included when wanted. Return 0 or -errno. */
int al_loop_add(al_loop *l, al_watch *w, uint32_t events);
int al_loop_mod(al_loop *l, al_watch *w, uint32_t events);
void al_loop_del(al_loop *l, al_watch *w);

/* Wait up to timeout_ms (-1 forever) and dispatch every ready watch once.
 * Returns the number of events, 0 on timeout or EINTR, -errno on failure. */
int al_loop_once(al_loop *l, int timeout_ms);

#endif
