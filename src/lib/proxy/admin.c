/* The admin socket: one JSON line of counters per connection. */
#include "proxy/proxy_int.h"

static void admin_ready(al_watch *w, uint32_t ev)
{
  al_proxy *px = container_of(w, al_proxy, admin_w);
  (void)ev;

  for (;;) {
    int fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      return;
    al_proxy_shared *sh = px->sh;
    json_t *runs = json_array();
    pthread_mutex_lock(&sh->stat_mu);
    for (size_t i = 0; i < sh->n_runs; i++) {
      al_proxy_run *run = &sh->runs[i];
      json_t *r = px_counters_json(&run->cnt);
      json_object_set_new(r, "run", json_string(run->run_id));
      json_object_set_new(r, "active", json_integer(atomic_load(&run->n_conns)));
      json_object_set_new(r, "egress_used",
                          json_integer((json_int_t)atomic_load(run->egress_used)));
      json_array_append_new(runs, r);
    }
    json_t *all = px_counters_json(&sh->cnt);
    pthread_mutex_unlock(&sh->stat_mu);
    json_object_set_new(all, "active", json_integer(atomic_load(&sh->n_conns)));
    json_object_set_new(all, "runs", runs);
    char *s = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    if (s) {
      size_t n = strlen(s);
      s[n] = '\n';
      (void)al_write_all(fd, s, n + 1);
      free(s);
    }
    close(fd);
  }
}

int px_admin_open(al_proxy *px, const char *path, al_error *err)
{
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  struct stat st;

  if (strlen(path) >= sizeof sun.sun_path)
    return al_make_error(err, ENAMETOOLONG, "admin socket `%s`", path);
  strcpy(sun.sun_path, path);
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(path); /* a stale socket of an earlier run */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return al_make_error(err, errno, "admin socket");
  mode_t old = umask(0177);
  int r = bind(fd, (struct sockaddr *)&sun, sizeof sun);
  umask(old);
  if (r < 0 || listen(fd, 16) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "admin socket `%s`", path);
  }
  px->admin_w.fd = fd;
  px->admin_w.fn = admin_ready;
  return al_loop_add(&px->loop, &px->admin_w, EPOLLIN) < 0
             ? al_make_error(err, errno, "epoll admin")
             : 0;
}
