/* epoll event loop; see loop.h. */
#include "proxy/loop.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#define AL_LOOP_BATCH 256

int al_loop_init(al_loop *l, al_error *err)
{
  l->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (l->epfd < 0)
    return al_make_error(err, errno, "epoll_create1");
  return 0;
}

void al_loop_close(al_loop *l)
{
  if (l->epfd >= 0)
    close(l->epfd);
  l->epfd = -1;
}

int al_loop_add(al_loop *l, al_watch *w, uint32_t events)
{
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0 ? -errno : 0;
}

int al_loop_mod(al_loop *l, al_watch *w, uint32_t events)
{
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void al_loop_del(al_loop *l, al_watch *w)
{
  if (w->fd >= 0)
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

int al_loop_once(al_loop *l, int timeout_ms)
{
  struct epoll_event evs[AL_LOOP_BATCH];
  int n = epoll_wait(l->epfd, evs, AL_LOOP_BATCH, timeout_ms);

  if (n < 0)
    return errno == EINTR ? 0 : -errno;
  for (int i = 0; i < n; i++) {
    al_watch *w = evs[i].data.ptr;
    if (w->fd >= 0) /* closed by an earlier handler of this batch */
      w->fn(w, evs[i].events);
  }
  return n;
}
