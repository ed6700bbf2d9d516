/* airlock-shim: PID 1 of the docker backend's agent container (docs/docker.md,
 * "What one run makes"). Linked statically and bound read-only from the host,
 * so nothing of the agent image (its loader, its libraries, an LD_PRELOAD in
 * its ENV) runs before it.
 *
 *   airlock-shim [--socket PATH --listen PORT] --deadline S -- CMD ARG...
 *
 *   shim (agent uid, container netns: lo)      supervisor (host)
 *   ─────────────────────────────────────      ───────────────────────────────
 *   socket+bind 127.0.0.1:PORT, listen
 *   connect PATH (SOCK_SEQPACKET) ───────────► accept one; SO_PEERCRED pid must
 *   sendmsg "L" + SCM_RIGHTS {listener}         be the container's State.Pid
 *                                               check it is that listener; fork
 *                                               the egress proxy on it (host)
 *   read the ack "A" ◄──────────────────────── send "A", stop listening
 *   close both; not dumpable; fork:
 *     child: exec CMD (the agent)
 *     PID 1: reap orphans, pass SIGTERM/INT/HUP/QUIT to CMD, exit with CMD's
 *            status, or 124 at the deadline (S seconds from our start), which
 *            ends every process of the container's PID namespace
 *
 * Only the kernel stands between the agent and this process (same uid): it
 * is not dumpable (no /proc/1/mem, environ, fd; process_vm_readv fails), and
 * as the init of its PID namespace it ignores SIGKILL and SIGSTOP from
 * inside, so the deadline holds even when the supervisor is gone. Errors
 * before the exec exit 125 with one line on stderr. No heap, no stdio
 * buffering games: this runs before the agent and must stay small. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, int e)
{
  if (e)
    fprintf(stderr, "airlock-shim: %s: %s\n", what, strerror(e));
  else
    fprintf(stderr, "airlock-shim: %s\n", what);
  _exit(125);
}

static unsigned long number(const char *s, unsigned long max, const char *opt)
{
  char *end = NULL;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || !end || end == s || *end || v > max)
    die(opt, EINVAL);
  return v;
}

static unsigned long long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

/* Make 127.0.0.1:port in this network namespace, hand it to the supervisor
 * at path, wait for its ack. */
static void hand_over(const char *path, unsigned port)
{
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (l < 0 || bind(l, (struct sockaddr *)&in, sizeof in) < 0 || listen(l, SOMAXCONN) < 0)
    die("the proxy's listener on 127.0.0.1", errno);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    die("--socket: path too long", 0);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) < 0)
    die("connect to the supervisor's hand-off socket", errno);
  union {
    char b[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  char tag = 'L';
  struct iovec iov = {&tag, 1};
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
  struct cmsghdr *ch = CMSG_FIRSTHDR(&m);
  ch->cmsg_level = SOL_SOCKET;
  ch->cmsg_type = SCM_RIGHTS;
  ch->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(ch), &l, sizeof l);
  if (sendmsg(c, &m, MSG_NOSIGNAL) != 1)
    die("send the listener", errno);
  /* the ack is the event: the proxy holds the listener (no polling); the
   * supervisor's own limit bounds the wait, and its death closes the
   * socket (read returns 0) */
  char ack = 0;
  ssize_t n;
  while ((n = read(c, &ack, 1)) < 0 && errno == EINTR)
    ;
  if (n != 1 || ack != 'A')
    die("the supervisor refused the listener or went away", n < 0 ? errno : 0);
  close(c);
  close(l);
}

int main(int argc, char **argv)
{
  const char *sock = NULL;
  unsigned port = 0;
  unsigned long deadline_s = 0;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (i + 1 >= argc)
      die("usage: airlock-shim [--socket PATH --listen PORT] --deadline S -- CMD...", 0);
    if (strcmp(argv[i], "--socket") == 0)
      sock = argv[++i];
    else if (strcmp(argv[i], "--listen") == 0)
      port = (unsigned)number(argv[++i], 65535, "--listen");
    else if (strcmp(argv[i], "--deadline") == 0)
      deadline_s = number(argv[++i], 8ul * 86400, "--deadline");
    else
      die("usage: airlock-shim [--socket PATH --listen PORT] --deadline S -- CMD...", 0);
  }
  if (i + 1 >= argc || !deadline_s || (!sock) != (!port))
    die("usage: airlock-shim [--socket PATH --listen PORT] --deadline S -- CMD...", 0);
  char **cmd = argv + i + 1;
  unsigned long long end = now_ms() + (unsigned long long)deadline_s * 1000ull;
  if (getpid() != 1)
    die("not PID 1 of the container (HostConfig.Init must be false)", 0);
  if (sock)
    hand_over(sock, port);
  /* the agent runs as our uid: it must not read or write our memory */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    die("PR_SET_DUMPABLE", errno);
  sigset_t all, old;
  sigemptyset(&all);
  int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
    sigaddset(&all, sigs[k]);
  if (sigprocmask(SIG_BLOCK, &all, &old) < 0)
    die("sigprocmask", errno);
  pid_t child = fork();
  if (child < 0)
    die("fork", errno);
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "airlock-shim: exec %s: %s\n", cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  /* stdin carries the agent's secrets to the wrapper: only the child keeps
   * it */
  int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (dn >= 0) {
    dup2(dn, 0);
    close(dn);
  } else {
    close(0);
  }
  for (;;) {
    unsigned long long t = now_ms();
    if (t >= end) {
      fprintf(stderr, "airlock-shim: --deadline %lu s reached; the container ends\n", deadline_s);
      _exit(124);
    }
    unsigned long long left = end - t;
    struct timespec ts = {.tv_sec = (time_t)(left / 1000),
                          .tv_nsec = (long)(left % 1000) * 1000000};
    siginfo_t si;
    int s = sigtimedwait(&all, &si, &ts);
    if (s < 0)
      continue; /* EAGAIN (the deadline, checked above) or EINTR */
    if (s != SIGCHLD) {
      kill(child, s); /* docker stop / kill from the host: the agent's to handle */
      continue;
    }
    int ws;
    pid_t r;
    while ((r = waitpid(-1, &ws, WNOHANG)) > 0)
      if (r == child)
        _exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
  }
}
