/* One TCP listener for airlock's own servers. See listen.h. */
#include "net/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* "127.0.0.1:3128" or "[::1]:3128" (port 0: any free port) -> h, port.
 * Returns 0 or -1 with err naming the rule (a usage error). */
int al_listen_parse(const char *spec, al_host *h, uint16_t *port, al_error *err)
{
  const char *why = NULL;
  const char *colon = strrchr(spec, ':');
  if (!colon)
    return al_error_set(err, EINVAL, "--listen `%s`: expected ADDR:PORT (IPv6 as [ADDR]:PORT)",
                        spec);
  /* port 0 (any free port) is allowed here, unlike in a target */
  if (strcmp(colon + 1, "0") == 0) {
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%.*s:1", (int)(colon - spec), spec);
    if (al_authority_parse(tmp, strlen(tmp), h, port, &why) < 0)
      return al_error_set(err, EINVAL, "--listen `%s`: %s", spec, why);
    *port = 0;
  } else if (al_authority_parse(spec, strlen(spec), h, port, &why) < 0) {
    return al_error_set(err, EINVAL, "--listen `%s`: %s (expected ADDR:PORT)", spec, why);
  }
  if (!h->is_ip)
    return al_error_set(err, EINVAL, "--listen `%s`: needs a numeric address", spec);
  if (strchr(spec, ':') == colon && (strlen(h->name) != (size_t)(colon - spec) ||
                                     strncmp(spec, h->name, (size_t)(colon - spec)) != 0))
    return al_error_set(err, EINVAL, "--listen `%s`: an ambiguous IPv4 spelling; write `%s:%.*s`",
                        spec, h->name, (int)strlen(colon + 1), colon + 1);
  return 0;
}

int al_listen_tcp(const char *spec, int backlog, int flags, al_host *h, uint16_t *port,
                  al_error *err)
{
  struct sockaddr_storage ss;
  socklen_t sl;

  memset(&ss, 0, sizeof ss);
  if (al_listen_parse(spec, h, port, err) < 0)
    return -1;
  if (h->family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(*port);
    inet_pton(AF_INET, h->name, &s4->sin_addr);
    sl = sizeof *s4;
  } else {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(*port);
    inet_pton(AF_INET6, h->name, &s6->sin6_addr);
    sl = sizeof *s6;
  }
  int fd =
      socket(ss.ss_family,
             SOCK_STREAM | SOCK_CLOEXEC | ((flags & AL_LISTEN_NONBLOCK) ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0)
    return al_make_error(err, errno, "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, backlog) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "listen on %s", spec);
  }
  sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
    *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)(void *)&ss)->sin_port
                                          : ((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
  return fd;
}
