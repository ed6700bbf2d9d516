/* airlock relay: the model relay (issue #10). Normally started by
 * `airlock run` / `airlock ticket` in its own sandbox (relay/launch.h);
 * can run alone for debugging. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "net/listen.h"
#include "commands.h"
#include "common/util.h"
#include "policy/policy.h"
#include "relay/relay.h"

static void usage(FILE *out)
{
  fprintf(
      out,
      "usage: airlock relay (-p POLICY | --config-json JSON) (--listen ADDR:PORT | --listen-fd N)\n"
      "                     [--proxy ADDR:PORT] [--log FILE] [--run-id ID] [--key-file FILE]\n"
      "\n"
      "Serve the model relay of a policy's `relay:` section: plain HTTP in, the\n"
      "configured routes only, the real key added, TLS (verified) out through\n"
      "the egress proxy's CONNECT. The key comes from $" AL_RELAY_KEY_ENV " (wiped on\n"
      "start) or --key-file (mode 0600). One JSON line per call goes to --log\n"
      "(default: stdout). Without --proxy it dials the upstream directly\n"
      "(debugging only).\n"
      "\n"
      "Exit status: 0 stopped by SIGTERM or SIGINT; 1 the relay failed while serving;\n"
      "2 usage (also a POLICY without a relay section, no usable key, a listener that\n"
      "cannot be made).\n");
}

int cmd_relay(int argc, char **argv)
{
  static const struct option opts[] = {
      {"policy", required_argument, NULL, 'p'}, {"config-json", required_argument, NULL, 'j'},
      {"listen", required_argument, NULL, 'l'}, {"listen-fd", required_argument, NULL, 'f'},
      {"proxy", required_argument, NULL, 'x'},  {"log", required_argument, NULL, 'o'},
      {"run-id", required_argument, NULL, 'r'}, {"key-file", required_argument, NULL, 'k'},
      {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
  const char *policy_path = NULL, *json = NULL, *listen = NULL, *proxy = NULL, *log_path = NULL,
             *run_id = NULL, *key_file = NULL;
  int listen_fd = -1;
  int c;
  optind = 1;
  al_cli_init("relay", usage);
  while ((c = al_cli_getopt(argc, argv, "p:h", opts)) != -1) {
    switch (c) {
    case 'p':
      policy_path = optarg;
      break;
    case 'j':
      json = optarg;
      break;
    case 'l':
      listen = optarg;
      break;
    case 'f': {
      uint64_t v;
      if (al_cli_uint("--listen-fd", optarg, 0, 65535, &v) != 0)
        return AL_EXIT_USAGE;
      listen_fd = (int)v;
    } break;
    case 'x':
      proxy = optarg;
      break;
    case 'o':
      log_path = optarg;
      break;
    case 'r':
      run_id = optarg;
      break;
    case 'k':
      key_file = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (al_cli_max_operands(argc, argv, optind, 0) != 0)
    return AL_EXIT_USAGE;
  if (listen) {
    /* ADDR:PORT or [ADDR]:PORT (net/listen.h): a usage error before the
     * key is touched; port 0 is refused here (no way to learn it) */
    al_host lh;
    uint16_t port;
    al_error le = {0};
    if (al_listen_parse(listen, &lh, &port, &le) < 0)
      return al_cli_usage_error("%s", le.msg);
    if (port == 0)
      return al_cli_usage_error("--listen `%s`: port 0 (any free port) is refused here: the "
                                "relay cannot tell which port it got; give a port from 1 to "
                                "65535, or --listen-fd N",
                                listen);
  }
  /* what is missing from the command line is said before the key (a new
   * user's bare `airlock relay` was told "no usable key") */
  if (!policy_path && !json)
    return al_cli_usage_error("which relay configuration? (-p POLICY or --config-json JSON)");
  if (!listen && listen_fd < 0)
    return al_cli_usage_error("where to listen? (--listen ADDR:PORT or --listen-fd N)");
  /* This process holds the model key: no core dumps, no ptrace. */
  prctl(PR_SET_DUMPABLE, 0);

  /* Take the key first, so it leaves the environment (and
   * /proc/self/environ) before anything else happens. */
  char *key = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (key == MAP_FAILED) {
    al_cli_error("mmap: %s", strerror(errno));
    return 1;
  }
  (void)mlock(key, 4096);
  (void)madvise(key, 4096, MADV_DONTDUMP);
  char *ev = getenv(AL_RELAY_KEY_ENV);
  if (ev) {
    snprintf(key, 4096, "%s", ev);
    explicit_bzero(ev, strlen(ev));
    unsetenv(AL_RELAY_KEY_ENV);
  } else if (key_file) {
    int fd = open(key_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & 077) || st.st_uid != geteuid()) {
      return al_cli_usage_error("--key-file `%s`: unreadable, or not ours with mode 0600",
                                key_file);
    }
    ssize_t n = read(fd, key, AL_RELAY_KEY_MAX);
    close(fd);
    while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
      n--;
    key[n > 0 ? n : 0] = '\0';
  }
  /* One key per upstream, in order, separated by single spaces. */
  char *keys[17] = {0};
  size_t nkeys = 0;
  bool kok = key[0] != '\0';
  for (char *k = key; kok && *k && nkeys < 16;) {
    keys[nkeys++] = k;
    char *sp = strchr(k, ' ');
    if (sp)
      *sp = '\0';
    size_t kl = strlen(k);
    kok = kl > 0 && kl <= AL_RELAY_KEY_MAX;
    for (size_t i = 0; i < kl && kok; i++)
      kok = k[i] > 0x20 && k[i] < 0x7f;
    k = sp ? sp + 1 : k + kl;
  }
  if (!kok) {
    return al_cli_usage_error("no usable key ($" AL_RELAY_KEY_ENV " or --key-file)");
  }

  al_error err = {0};
  al_policy_relay cfg = {0};
  if (policy_path) {
    al_policy *p = NULL;
    if (al_policy_load_file(policy_path, &p, &err) < 0) {
      return al_cli_usage_error("%s", err.msg);
    }
    al_autofree char *canon = al_policy_relay_canonical(p);
    al_policy_free(p);
    if (!canon) {
      return al_cli_usage_error("`%s` has no relay section", policy_path);
    }
    if (al_relay_config_from_json(canon, &cfg, &err) < 0) {
      return al_cli_usage_error("%s", err.msg);
    }
  } else if (json) {
    if (al_relay_config_from_json(json, &cfg, &err) < 0) {
      return al_cli_usage_error("%s", err.msg);
    }
  } else {
    usage(stderr);
    return 2;
  }
  if (nkeys != cfg.n_upstreams) {
    fprintf(stderr, "airlock relay: %zu key(s) for %zu upstream(s) (one per upstream, in order)\n",
            nkeys, cfg.n_upstreams);
    explicit_bzero(key, 4096);
    al_relay_config_clear(&cfg);
    return 2;
  }
  if (listen) {
    al_error lerr = {0};
    al_host lh;
    uint16_t lport = 0;
    listen_fd = al_listen_tcp(listen, 128, 0, &lh, &lport, &lerr);
    if (listen_fd < 0) {
      al_cli_error("%s", lerr.msg);
      al_relay_config_clear(&cfg);
      return 2;
    }
  }
  if (listen_fd < 0) {
    al_cli_error("need --listen ADDR:PORT ([ADDR]:PORT for IPv6) or --listen-fd N");
    al_relay_config_clear(&cfg);
    return 2;
  }
  int log_fd = 1;
  if (log_path) {
    log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log_fd < 0) {
      al_cli_error("--log `%s`: %s", log_path, strerror(errno));
      al_relay_config_clear(&cfg);
      return 2;
    }
  }
  al_relay_serve_opts so = {.cfg = &cfg,
                            .listen_fd = listen_fd,
                            .proxy_addr = proxy,
                            .keys = (const char *const *)keys,
                            .log_fd = log_fd,
                            .run_id = run_id};
  int r = al_relay_serve(&so, &err);
  if (r < 0)
    al_cli_error("%s", err.msg);
  explicit_bzero(key, 4096);
  al_relay_config_clear(&cfg);
  return r < 0 ? 1 : 0;
}
