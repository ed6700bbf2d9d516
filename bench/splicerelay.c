/* splicerelay: the floor for one bulk tunnel in bench/proxy.py. The least
 * a CONNECT relay can do: read the CONNECT head, dial 127.0.0.1 at the
 * head's port (loopback only, whatever the host), answer 200, then move
 * bytes with blocking splice(2) through one pipe per direction, one thread
 * per direction. No policy, no accounting, no log, no event loop: what is
 * left is the second TCP hop and the splice calls themselves.
 *
 *   splicerelay PORT      listen on 127.0.0.1:PORT until killed
 *
 * Build: cc -O2 -pthread -o splicerelay splicerelay.c. Not part of airlock. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIPE_SZ (1 << 20)

typedef struct half {
  int src, dst;
} half;

static void *pump(void *arg)
{
  half *h = arg;
  int p[2];

  if (pipe2(p, O_CLOEXEC) == 0) {
    (void)fcntl(p[1], F_SETPIPE_SZ, PIPE_SZ);
    for (;;) {
      ssize_t n = splice(h->src, NULL, p[1], NULL, PIPE_SZ, SPLICE_F_MOVE);
      if (n <= 0)
        break;
      while (n > 0) {
        ssize_t m = splice(p[0], NULL, h->dst, NULL, (size_t)n, SPLICE_F_MOVE);
        if (m <= 0)
          goto done;
        n -= m;
      }
    }
  done:
    close(p[0]);
    close(p[1]);
  }
  shutdown(h->dst, SHUT_WR);
  return NULL;
}

static void *serve(void *arg)
{
  int c = (int)(long)arg, o = -1;
  char head[4096];
  size_t len = 0;
  char *end = NULL;

  while (!end && len < sizeof head - 1) {
    ssize_t n = recv(c, head + len, sizeof head - 1 - len, 0);
    if (n <= 0)
      goto out;
    len += (size_t)n;
    head[len] = '\0';
    end = strstr(head, "\r\n\r\n");
  }
  char *sp = strchr(head, ' '), *colon = sp ? strchr(sp, ':') : NULL;
  if (!end || strncmp(head, "CONNECT ", 8) != 0 || !colon || end + 4 != head + len)
    goto out;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  o = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (o < 0 || connect(o, (struct sockaddr *)&a, sizeof a) < 0)
    goto out;
  int one = 1;
  setsockopt(o, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  if (send(c, ok, sizeof ok - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof ok - 1))
    goto out;
  half up = {c, o}, down = {o, c};
  pthread_t t;
  if (pthread_create(&t, NULL, pump, &up) != 0)
    goto out;
  pump(&down);
  pthread_join(t, NULL);
out:
  if (o >= 0)
    close(o);
  close(c);
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc != 2)
    return 2;
  signal(SIGPIPE, SIG_IGN);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1024) < 0) {
    perror("splicerelay");
    return 1;
  }
  for (;;) {
    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      usleep(10000);
      continue;
    }
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, serve, (void *)(long)c) != 0)
      close(c);
    pthread_attr_destroy(&at);
  }
}
