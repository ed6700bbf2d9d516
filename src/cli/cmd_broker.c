/* airlock broker -c CONFIG [--socket PATH] [-v]: the token broker daemon
 * (src/lib/broker/broker.h). */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "broker/broker.h"
#include "cli.h"
#include "commands.h"
#include "common/log.h"

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock broker -c CONFIG [--socket PATH] [-v]\n"
               "  -c, --config FILE   broker config (YAML)\n"
               "  -s, --socket PATH   listen on this Unix socket (mode 0600); not needed when\n"
               "                      systemd passes a socket (LISTEN_FDS)\n"
               "  -v, --verbose       debug logging\n");
}

int cmd_broker(int argc, char **argv)
{
  static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                       {"socket", required_argument, NULL, 's'},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  al_broker_opts o = {0};
  enum al_log_level level = AL_LOG_INFO;
  int c;
  al_cli_init("broker", usage);
  while ((c = al_cli_getopt(argc, argv, "c:s:vh", opts)) != -1) {
    switch (c) {
    case 'c':
      o.config_path = optarg;
      break;
    case 's':
      o.socket_path = optarg;
      break;
    case 'v':
      level = AL_LOG_DEBUG;
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
  if (!o.config_path)
    return al_cli_usage_error("which config? (-c CONFIG)");
  al_log_init("airlock broker", level);
  /* The process holds the App key: no core dumps, no ptrace by our uid. */
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    al_error_log("curl_global_init failed");
    return 1;
  }
  al_error err = {0};
  int r = al_broker_run(&o, &err);
  curl_global_cleanup();
  if (r < 0) {
    al_error_log("%s", err.msg);
    return 1;
  }
  return 0;
}
