/* airlock proxy -p POLICY --listen ADDR [--listen ADDR...] [--log FILE]
 *               [--admin PATH] [--run-id ID] [--max-conns N] [--workers N]
 * The egress proxy on its own (the Compose/Kubernetes renderings, debugging):
 * creates the listeners itself and runs al_proxy_serve() until SIGTERM or
 * SIGINT. SIGHUP reloads POLICY. Decision lines go to FILE (appended) or to
 * stdout. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "common/log.h"
#include "common/util.h"
#include "policy/policy.h"
#include "net/host.h"
#include "net/listen.h"
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
               "Used by the Compose rendering's relay-proxy service:\n"
               "  --relay-egress            serve the egress of POLICY's `relay` section (the\n"
               "                            model API host only), not its network section\n"
               "\n"
               "Exit status: 0 stopped by SIGTERM or SIGINT; 1 failed (a listener could not\n"
               "be made, the proxy could not run); 2 usage (also a POLICY that cannot be read\n"
               "or is invalid, a --log FILE that cannot be opened).\n");
}

/* "127.0.0.1:3128" or "[::1]:3128" -> a bound, listening socket
 * (net/listen.h), with the warning a non-loopback listener deserves. */
static int listen_on(const char *spec, al_error *err)
{
  al_host h;
  uint16_t port = 0;
  int fd = al_listen_tcp(spec, 4096, AL_LISTEN_NONBLOCK, &h, &port, err);
  if (fd < 0)
    return -1;
  if (strncmp(h.name, "127.", 4) != 0 && strcmp(h.name, "::1") != 0)
    al_warn("--listen %s is not loopback: anyone who can reach it can use the allowlist; "
            "make sure only the sandbox's network can",
            spec);
  al_info("listening on %s%s%s port %u", h.family == AF_INET6 ? "[" : "", h.name,
          h.family == AF_INET6 ? "]" : "", (unsigned)port);
  return fd;
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
      {"relay-egress", no_argument, NULL, 'R'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  bool no_confine = false;
  const char *policy_path = NULL, *log_path = NULL, *admin = NULL, *run_id = "standalone";
  uint64_t log_max = 0; /* --log-max: bytes; 0: AL_PROXY_LOG_CAP with --log, none on stdout */
  bool relay_egress = false;
  const char *listen_specs[MAX_LISTEN];
  size_t n_listen = 0;
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
      if (al_listen_parse(optarg, &h, &port, &le) < 0)
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
    case 'R':
      relay_egress = true;
      break;
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
  if (optind != argc)
    return al_cli_usage_error("unexpected argument `%s`", argv[optind]);
  if (!policy_path)
    return al_cli_usage_error("which policy? (-p POLICY)");
  if (n_listen == 0)
    return al_cli_usage_error("where to listen? (--listen ADDR:PORT)");

  al_error err = {0};
  al_policy *policy = NULL;
  if (al_policy_load_file(policy_path, &policy, &err) < 0) {
    al_cli_error("%s", err.msg);
    return AL_EXIT_USAGE; /* a file the command line names (docs/cli.md) */
  }
  if (relay_egress) {
    /* the relay's own egress: the model API host only (relay/launch.h) */
    al_policy *rp = NULL;
    int r = al_relay_egress_policy(policy, &rp, &err);
    al_policy_free(policy);
    if (r < 0) {
      al_cli_error("--relay-egress: %s", err.msg);
      return AL_EXIT_USAGE;
    }
    policy = rp;
  }
  if (!policy->network.present)
    al_warn("%s has no network section: every request will be refused", policy_path);

  int decisions_fd = STDOUT_FILENO;
  if (log_path) {
    decisions_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (decisions_fd < 0) {
      al_cli_error("--log `%s`: cannot open for appending: %s", log_path, strerror(errno));
      al_policy_free(policy);
      return AL_EXIT_USAGE;
    }
  }

  al_proxy_listener ls[MAX_LISTEN];
  char *ids[MAX_LISTEN] = {0};
  int rc = 1;
  size_t made = 0;
  for (; made < n_listen; made++) {
    int fd = listen_on(listen_specs[made], &err);
    if (fd < 0) {
      al_cli_error("%s", err.msg);
      goto out;
    }
    ids[made] = n_listen == 1 ? al_xstrdup(run_id) : al_strdup_printf("%s-%zu", run_id, made);
    ls[made] = (al_proxy_listener){.fd = fd, .run_id = ids[made], .policy = policy};
  }
  al_proxy_config cfg = {
      .ready = no_confine ? NULL : confine_ready,
      .listeners = ls,
      .n_listeners = n_listen,
      .decisions_fd = decisions_fd,
      .decisions_cap = log_max    ? log_max
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
  for (size_t i = 0; i < made; i++) {
    close(ls[i].fd);
    free(ids[i]);
  }
  if (log_path)
    close(decisions_fd);
  al_policy_free(policy);
  return rc;
}
