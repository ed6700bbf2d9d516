/* airlock proxy -p POLICY --listen ADDR [--listen ADDR...] [--log FILE]
 *               [--admin PATH] [--run-id ID] [--max-conns N] [--workers N]
 * The egress proxy on its own (Docker/Kubernetes backends, debugging):
 * creates the listeners itself and runs al_proxy_serve() until SIGTERM or
 * SIGINT. SIGHUP reloads POLICY. Audit lines go to FILE (appended) or to
 * stdout. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "common/log.h"
#include "common/util.h"
#include "policy/policy.h"
#include "proxy/host.h"
#include "proxy/proxy.h"
#include "relay/launch.h"
#include "sandbox/sandbox.h"

#define MAX_LISTEN 16

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock proxy -p POLICY --listen ADDR:PORT [--listen ADDR:PORT...]\n"
               "                     [--log FILE] [--admin PATH] [--run-id ID] [--max-conns N]\n"
               "                     [--workers N] [--no-confine]\n\n"
               "Once listening it confines itself: as root it becomes nobody (so a SIGHUP\n"
               "reload needs a policy file readable by others), no capabilities, no\n"
               "filesystem writes, no exec. --no-confine keeps the invoker's privileges.\n"
               "Anyone who can connect to a listener can use the allowlist: listen on\n"
               "loopback or a network only the sandbox reaches.\n\n"
               "Serve the policy's network allowlist as an HTTP proxy (CONNECT, and plain\n"
               "HTTP to `tls: false` entries). Each --listen is its own run (own caps and\n"
               "counters). Decisions are JSON lines on stdout or in FILE. SIGHUP reloads\n"
               "POLICY; SIGTERM/SIGINT stop. --workers: event-loop threads (default one\n"
               "per CPU, at most 8, started with the first connection); caps, counters\n"
               "and the egress budget are shared.\n\n"
               "Used by the docker backend (docs/docker.md):\n"
               "  --deadline S              stop by itself after S seconds\n"
               "  --listener-from PATH      take the listener handed over on the unix socket\n"
               "                            PATH (in place of a --listen)\n"
               "  --send-listener PATH --listen 127.0.0.1:PORT   the holder: make the\n"
               "                            listener here, hand it over on PATH, then hold\n"
               "  --hold                    the holder without a listener\n"
               "  --handoff-socket PATH --handoff-host HOST:PORT [--handoff-host ...]\n"
               "                            sealed credentials: hand CONNECTs to HOST:PORT\n"
               "                            (the forge hosts) to the forge gateway listening\n"
               "                            on the unix socket PATH\n"
               "Used by the Compose rendering's relay-proxy service:\n"
               "  --relay-egress            serve the egress of POLICY's `relay` section (the\n"
               "                            model API host only), not its network section\n");
}

/* "127.0.0.1:3128" or "[::1]:3128" (port 0: any free port) -> h, port.
 * Returns 0 or -1 with err naming the rule (a usage error). */
static int parse_listen(const char *spec, al_host *h, uint16_t *port, al_error *err)
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

/* "127.0.0.1:3128" or "[::1]:3128" -> a bound, listening socket. */
static int listen_on(const char *spec, al_error *err)
{
  al_host h;
  uint16_t port = 0;
  struct sockaddr_storage ss;
  socklen_t sl;
  char pbuf[8];

  memset(&ss, 0, sizeof ss);
  if (parse_listen(spec, &h, &port, err) < 0)
    return -1;
  if (strncmp(h.name, "127.", 4) != 0 && strcmp(h.name, "::1") != 0)
    al_warn("--listen %s is not loopback: anyone who can reach it can use the allowlist; "
            "make sure only the sandbox's network can",
            spec);
  if (h.family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    inet_pton(AF_INET, h.name, &s4->sin_addr);
    sl = sizeof *s4;
  } else {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    inet_pton(AF_INET6, h.name, &s6->sin6_addr);
    sl = sizeof *s6;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return al_make_error(err, errno, "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4096) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "listen on %s", spec);
  }
  sl = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  snprintf(pbuf, sizeof pbuf, "%u",
           ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)(void *)&ss)->sin_port
                                         : ((struct sockaddr_in6 *)(void *)&ss)->sin6_port));
  al_info("proxy: listening on %s%s%s port %s", h.family == AF_INET6 ? "[" : "", h.name,
          h.family == AF_INET6 ? "]" : "", pbuf);
  return fd;
}

/* The docker backend's listener hand-off (docs/docker.md). The agent's
 * container has only a loopback interface: it shares the network namespace
 * of a small holder container (NetworkMode none), which creates the
 * listening socket on 127.0.0.1:3128 there and hands it to the proxy over a
 * unix socket in a tmpfs volume they share (SCM_RIGHTS, unix(7)). The
 * proxy accepts on it; the sockets it dials are its own, in its egress
 * network. So the agent has no route at all, as in the native sandbox. */
#define HANDOFF_TIMEOUT_MS 60000

/* One byte and room for one descriptor (SCM_RIGHTS, unix(7)). */
struct fdmsg {
  char byte;
  struct iovec iov;
  struct msghdr m;
  union { /* last: struct cmsghdr ends in a flexible array */
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int))];
  } u;
};

static void fdmsg_init(struct fdmsg *f, char byte)
{
  memset(f, 0, sizeof *f);
  f->byte = byte;
  f->iov.iov_base = &f->byte;
  f->iov.iov_len = 1;
  f->m.msg_iov = &f->iov;
  f->m.msg_iovlen = 1;
  f->m.msg_control = f->u.b;
  f->m.msg_controllen = sizeof f->u.b;
}

/* --listener-from PATH: bind PATH, take one listening TCP socket from the
 * first peer that sends one. Returns the fd or -1 with err. */
static int listener_from(const char *path, al_error *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return al_make_error(err, ENAMETOOLONG, "--listener-from `%s`: path too long", path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (srv < 0)
    return al_make_error(err, errno, "socket");
  unlink(path);
  if (bind(srv, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(srv, 1) < 0) {
    int e = errno;
    close(srv);
    return al_make_error(err, e, "--listener-from %s: bind", path);
  }
  struct pollfd pf = {.fd = srv, .events = POLLIN};
  int pr = poll(&pf, 1, HANDOFF_TIMEOUT_MS);
  int c = pr > 0 ? accept4(srv, NULL, NULL, SOCK_CLOEXEC) : -1;
  int e = errno;
  close(srv);
  unlink(path);
  if (pr <= 0)
    return al_make_error(err, pr == 0 ? ETIMEDOUT : e,
                         "--listener-from %s: no listener handed over in %d s", path,
                         HANDOFF_TIMEOUT_MS / 1000);
  if (c < 0)
    return al_make_error(err, e, "--listener-from %s: accept", path);
  struct timeval tv = {.tv_sec = 5};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct fdmsg fm;
  fdmsg_init(&fm, 0);
  struct msghdr *mp = &fm.m;
  ssize_t n = recvmsg(c, mp, MSG_CMSG_CLOEXEC);
  close(c);
  struct cmsghdr *ch = n == 1 ? CMSG_FIRSTHDR(mp) : NULL;
  if (!ch || ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS ||
      ch->cmsg_len != CMSG_LEN(sizeof(int)) || (mp->msg_flags & MSG_CTRUNC)) {
    /* close whatever did arrive */
    for (struct cmsghdr *x = CMSG_FIRSTHDR(mp); x; x = CMSG_NXTHDR(mp, x))
      if (x->cmsg_level == SOL_SOCKET && x->cmsg_type == SCM_RIGHTS)
        for (size_t i = 0; i < (x->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
          int bad;
          memcpy(&bad, CMSG_DATA(x) + i * sizeof(int), sizeof bad);
          close(bad);
        }
    return al_make_error(err, EPROTO, "--listener-from %s: the peer sent no single descriptor",
                         path);
  }
  int fd;
  memcpy(&fd, CMSG_DATA(ch), sizeof fd);
  /* what came is hostile until checked: a listening TCP socket */
  int acc = 0, dom = 0, type = 0;
  socklen_t l1 = sizeof acc, l2 = sizeof dom, l3 = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l1) < 0 ||
      getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l2) < 0 ||
      getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l3) < 0 || !acc ||
      (dom != AF_INET && dom != AF_INET6) || type != SOCK_STREAM) {
    close(fd);
    return al_make_error(err, EPROTO,
                         "--listener-from %s: the descriptor is not a listening TCP socket", path);
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    close(fd);
    return al_make_error(err, errno, "--listener-from: fcntl");
  }
  al_info("proxy: took the listener handed over on %s", path);
  return fd;
}

/* --deadline SECONDS (docker backend): the proxy and the holder stop by
 * themselves that long after they start, even if airlock, which enforces
 * the run's limit, is gone. 0: none. */
static unsigned long g_deadline_s;

/* --hold, and the end of --send-listener: PID 1 of the agent's PID
 * namespace in the docker backend. Not dumpable (the agent, another uid,
 * could not read its memory anyway), it says `handed` on stdout, then
 * reaps the orphans the agent leaves until the engine kills it. */
__attribute__((noreturn)) static void hold(void)
{
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  printf("handed\n");
  fflush(stdout);
  uint64_t end = g_deadline_s ? al_now_ms() + (uint64_t)g_deadline_s * 1000 : 0;
  for (;;) {
    /* PID 1 of a PID namespace ignores default-action signals, so the
     * deadline is a check, not an alarm; exiting ends every process of the
     * namespace (the agent's). */
    while (waitpid(-1, NULL, WNOHANG) > 0)
      ;
    if (end && al_now_ms() >= end) {
      al_cli_error("--deadline %lu s reached; the holder exits", g_deadline_s);
      _exit(0);
    }
    sleep(1);
  }
}

/* --send-listener PATH (with one --listen): the holder side. Make the
 * listener, connect to PATH (retrying while the proxy starts), send it,
 * say `handed` on stdout, then wait to be stopped: this process keeps the
 * network namespace the agent joins. Returns only on error. */
static int send_listener(const char *path, const char *spec)
{
  al_error err = {0};
  int fd = listen_on(spec, &err);
  if (fd < 0) {
    al_cli_error("%s", err.msg);
    return 1;
  }
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) {
    return al_cli_usage_error("--send-listener `%s`: path too long", path);
  }
  memcpy(sa.sun_path, path, strlen(path) + 1);
  /* The docker backend starts the proxy and this holder at once: until the
   * proxy listens, wait for the socket to appear in its directory
   * (inotify(7): IN_CREATE), trying again at least every 20 ms (the name
   * appears at bind(2), a moment before listen(2)). */
  char dir[sizeof sa.sun_path];
  memcpy(dir, path, strlen(path) + 1);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, slash ? "/" : ".");
  int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in >= 0 && inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO) < 0) {
    close(in);
    in = -1;
  }
  int c = -1;
  uint64_t give_up = al_now_ms() + HANDOFF_TIMEOUT_MS;
  for (;;) {
    c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c >= 0 && connect(c, (struct sockaddr *)&sa, sizeof sa) == 0)
      break;
    if (c >= 0)
      close(c);
    c = -1;
    if (al_now_ms() >= give_up)
      break;
    if (in >= 0) {
      struct pollfd pf = {.fd = in, .events = POLLIN};
      if (poll(&pf, 1, 20) > 0) {
        char evbuf[4096];
        while (read(in, evbuf, sizeof evbuf) > 0)
          ;
      }
    } else {
      usleep(20 * 1000);
    }
  }
  if (in >= 0)
    close(in);
  if (c < 0) {
    al_cli_error("--send-listener %s: no proxy there in %d s", path, HANDOFF_TIMEOUT_MS / 1000);
    return 1;
  }
  struct fdmsg fm;
  fdmsg_init(&fm, 'L');
  struct cmsghdr *ch = CMSG_FIRSTHDR(&fm.m);
  ch->cmsg_level = SOL_SOCKET;
  ch->cmsg_type = SCM_RIGHTS;
  ch->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(ch), &fd, sizeof fd);
  if (sendmsg(c, &fm.m, 0) != 1) {
    al_cli_error("--send-listener %s: %s", path, strerror(errno));
    return 1;
  }
  close(c);
  close(fd); /* the proxy holds it now */
  hold();
}

/* Once the listeners and the admin socket exist, the proxy needs no
 * privilege: as root it becomes nobody; in every case no capabilities,
 * no filesystem writes, no exec (al_confine_service). */
static int confine_ready(void *ctx, al_error *err)
{
  (void)ctx;
  return al_confine_service(err);
}

int cmd_proxy(int argc, char **argv)
{
  static const struct option opts[] = {
      {"policy", required_argument, NULL, 'p'},
      {"listen", required_argument, NULL, 'l'},
      {"log", required_argument, NULL, 'L'},
      {"log-max", required_argument, NULL, 'X'},
      {"admin", required_argument, NULL, 'a'},
      {"run-id", required_argument, NULL, 'r'},
      {"max-conns", required_argument, NULL, 'm'},
      {"workers", required_argument, NULL, 'W'},
      {"no-confine", no_argument, NULL, 'N'},
      /* hidden: the docker backend's listener hand-off (above) */
      {"listener-from", required_argument, NULL, 'F'},
      {"send-listener", required_argument, NULL, 'S'},
      {"hold", no_argument, NULL, 'H'},
      {"deadline", required_argument, NULL, 'D'},
      {"relay-egress", no_argument, NULL, 'R'},
      {"handoff-socket", required_argument, NULL, 'G'},
      {"handoff-host", required_argument, NULL, 'g'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  bool no_confine = false;
  const char *policy_path = NULL, *log_path = NULL, *admin = NULL, *run_id = "standalone";
  uint64_t log_max = 0; /* --log-max: bytes; 0: AL_PROXY_LOG_CAP with --log, none on stdout */
  const char *listener_path = NULL, *send_path = NULL;
  bool hold_only = false, relay_egress = false;
  const char *listen_specs[MAX_LISTEN];
  size_t n_listen = 0;
  const char *handoff_path = NULL;
  al_proxy_handoff handoff = {.fd = -1};
  unsigned long max_conns = 0;
  unsigned workers = 0;
  int o;

  optind = 1;
  al_cli_init("proxy", usage);
  while ((o = al_cli_getopt(argc, argv, "p:h", opts)) != -1) {
    switch (o) {
    case 'p':
      policy_path = optarg;
      break;
    case 'l': {
      if (n_listen == MAX_LISTEN)
        return al_cli_usage_error("at most %d --listen", MAX_LISTEN);
      al_host h;
      uint16_t port;
      al_error le = {0};
      if (parse_listen(optarg, &h, &port, &le) < 0)
        return al_cli_usage_error("%s", le.msg);
      listen_specs[n_listen++] = optarg;
      break;
    }
    case 'L':
      log_path = optarg;
      break;
    case 'X': {
      const char *why = NULL;
      if (al_parse_size(optarg, &log_max, &why) < 0 || log_max < 4096)
        return al_cli_usage_error("--log-max `%s`: %s", optarg, why ? why : "at least 4KiB");
      break;
    }
    case 'a':
      admin = optarg;
      break;
    case 'N':
      no_confine = true;
      break;
    case 'r':
      run_id = optarg;
      break;
    case 'F':
      listener_path = optarg;
      break;
    case 'S':
      send_path = optarg;
      break;
    case 'H':
      hold_only = true;
      break;
    case 'R':
      relay_egress = true;
      break;
    case 'G':
      handoff_path = optarg;
      break;
    case 'g': {
      al_host h;
      uint16_t port = 0;
      const char *why = NULL;
      if (handoff.n_hosts == AL_HANDOFF_MAX_HOSTS)
        return al_cli_usage_error("at most %d --handoff-host", AL_HANDOFF_MAX_HOSTS);
      if (al_authority_parse(optarg, strlen(optarg), &h, &port, &why) < 0)
        return al_cli_usage_error("--handoff-host `%s`: %s (expected HOST:PORT)", optarg, why);
      snprintf(handoff.hosts[handoff.n_hosts].host, sizeof handoff.hosts[0].host, "%s", h.name);
      handoff.hosts[handoff.n_hosts++].port = port;
      break;
    }
    case 'D': {
      uint64_t v;
      if (al_cli_uint("--deadline", optarg, 1, 7 * 86400 + 3600, &v) != 0)
        return AL_EXIT_USAGE; /* seconds: 7 days + 1 h at most */
      g_deadline_s = (unsigned long)v;
      break;
    }
    case 'm': {
      uint64_t v;
      if (al_cli_uint("--max-conns", optarg, 1, 100000, &v) != 0)
        return AL_EXIT_USAGE;
      max_conns = (unsigned long)v;
      break;
    }
    case 'W': {
      uint64_t v;
      if (al_cli_uint("--workers", optarg, 1, AL_PROXY_MAX_WORKERS, &v) != 0)
        return AL_EXIT_USAGE;
      workers = (unsigned)v;
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (hold_only) {
    if (send_path || listener_path || policy_path || n_listen || optind != argc) {
      return al_cli_usage_error("--hold takes only --deadline");
    }
    hold();
  }
  if (g_deadline_s && !send_path)
    alarm((unsigned)g_deadline_s); /* SIGALRM's default action ends the proxy */
  if (send_path) {
    if (n_listen != 1 || optind != argc) {
      return al_cli_usage_error("--send-listener takes exactly one --listen");
    }
    return send_listener(send_path, listen_specs[0]);
  }
  if (listener_path) {
    if (n_listen == MAX_LISTEN) {
      return al_cli_usage_error("at most %d listeners with --listener-from", MAX_LISTEN);
    }
    listen_specs[n_listen++] = NULL; /* taken from --listener-from */
  }
  if (optind != argc)
    return al_cli_usage_error("unexpected argument `%s`", argv[optind]);
  if (!policy_path)
    return al_cli_usage_error("which policy? (-p POLICY)");
  if (n_listen == 0)
    return al_cli_usage_error("where to listen? (--listen ADDR:PORT)");
  if (!handoff_path != !handoff.n_hosts)
    return al_cli_usage_error("--handoff-socket and --handoff-host go together");

  al_error err = {0};
  al_policy *policy = NULL;
  if (al_policy_load_file(policy_path, &policy, &err) < 0) {
    al_cli_error("%s", err.msg);
    return 1;
  }
  if (relay_egress) {
    /* the relay's own egress: the model API host only (relay/launch.h) */
    al_policy *rp = NULL;
    int r = al_relay_egress_policy(policy, &rp, &err);
    al_policy_free(policy);
    if (r < 0) {
      al_cli_error("--relay-egress: %s", err.msg);
      return 1;
    }
    policy = rp;
  }
  if (!policy->network.present)
    al_warn("proxy: %s has no network section: every request will be refused", policy_path);

  int audit_fd = STDOUT_FILENO;
  if (log_path) {
    audit_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (audit_fd < 0) {
      al_cli_error("--log %s: %s", log_path, strerror(errno));
      al_policy_free(policy);
      return 1;
    }
  }

  al_proxy_listener ls[MAX_LISTEN];
  char *ids[MAX_LISTEN] = {0};
  int rc = 1;
  size_t made = 0;
  /* the gateway first: connected before the listener is taken, so the
   * supervisor finds the connection once the holder says `handed` */
  if (handoff_path &&
      (handoff.fd = al_handoff_connect(handoff_path, HANDOFF_TIMEOUT_MS, &err)) < 0) {
    al_cli_error("%s", err.msg);
    goto out;
  }
  for (; made < n_listen; made++) {
    int fd = listen_specs[made] ? listen_on(listen_specs[made], &err)
                                : listener_from(listener_path, &err);
    if (!listen_specs[made] && fd >= 0 && g_deadline_s)
      alarm((unsigned)g_deadline_s); /* counted from the hand-off, as the holder's */
    if (fd < 0) {
      al_cli_error("%s", err.msg);
      goto out;
    }
    ids[made] = n_listen == 1 ? al_xstrdup(run_id) : al_strdup_printf("%s-%zu", run_id, made);
    ls[made] = (al_proxy_listener){.fd = fd,
                                   .run_id = ids[made],
                                   .policy = policy,
                                   .handoff = handoff.fd >= 0 ? &handoff : NULL};
  }
  /* the run's egress counter, shared with the gateway: from the supervisor
   * once it has checked our connection (docs/docker.md) */
  if (handoff.fd >= 0 &&
      al_handoff_recv_counter(handoff.fd, HANDOFF_TIMEOUT_MS, &handoff.egress_used, &err) < 0) {
    al_cli_error("--handoff-socket: %s", err.msg);
    goto out;
  }
  al_proxy_config cfg = {
      .ready = no_confine ? NULL : confine_ready,
      .listeners = ls,
      .n_listeners = n_listen,
      .audit_fd = audit_fd,
      .audit_cap = log_max    ? log_max
                   : log_path ? AL_PROXY_LOG_CAP
                              : 0,
      .admin_path = admin,
      .max_conns_global = (uint32_t)max_conns,
      .workers = workers,
      .reload_path = relay_egress ? NULL : policy_path,
  };
  if (al_proxy_serve(&cfg, &err) < 0) {
    al_cli_error("%s", err.msg);
    goto out;
  }
  rc = 0;
out:
  if (handoff.fd >= 0)
    close(handoff.fd);
  for (size_t i = 0; i < made; i++) {
    close(ls[i].fd);
    free(ids[i]);
  }
  if (log_path)
    close(audit_fd);
  al_policy_free(policy);
  return rc;
}
