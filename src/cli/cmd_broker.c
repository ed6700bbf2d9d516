/* airlock broker -c CONFIG [--socket PATH] [-v]: the token broker daemon
 * (src/lib/broker/broker.h).
 * airlock broker app-manifest [--audit] [...]: the GitHub App manifest of
 * the run's App or of the audit App (src/lib/broker/manifest.h). */
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "broker/broker.h"
#include "forge/appconfig.h"
#include "broker/manifest.h"
#include "cli.h"
#include "commands.h"
#include "common/log.h"

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock broker -c CONFIG [--socket PATH] [-v]\n"
               "       airlock broker app-manifest [--audit] [--name NAME] [--url URL]\n"
               "                      [--webhook-url URL] [--redirect-url URL] [-c CONFIG]\n"
               "                      [--html [--org ORG]]\n"
               "  -c, --config FILE   broker config (YAML)\n"
               "  -s, --socket PATH   listen on this Unix socket (mode 0600); not needed when\n"
               "                      systemd passes a socket (LISTEN_FDS)\n"
               "  -v, --verbose       debug logging\n"
               "app-manifest: print the GitHub App manifest (JSON) of the run's App, or with\n"
               "--audit of the read-only audit App: exactly the permissions the broker mints\n"
               "(the roles of -c CONFIG, else the defaults: contents, pull_requests and issues\n"
               "write; the audit App administration and contents read) and metadata read;\n"
               "with --webhook-url (where `airlock serve` is reached) the issues and\n"
               "issue_comment events. --html prints a page whose button posts it to GitHub's\n"
               "new-App form (of --org ORG, else your account). docs/github-app.md.\n"
               "\n"
               "Exit status: 0 stopped by SIGTERM, or the manifest printed; 2 usage (also a\n"
               "CONFIG that cannot be read or is invalid); 125 the broker cannot set itself\n"
               "up (its App key, its socket).\n");
}

static int manifest_main(int argc, char **argv)
{
  static const struct option opts[] = {{"audit", no_argument, NULL, 'a'},
                                       {"name", required_argument, NULL, 'n'},
                                       {"url", required_argument, NULL, 'u'},
                                       {"webhook-url", required_argument, NULL, 'w'},
                                       {"redirect-url", required_argument, NULL, 'r'},
                                       {"config", required_argument, NULL, 'c'},
                                       {"html", no_argument, NULL, 'H'},
                                       {"org", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  al_app_manifest_opts mo = {0};
  const char *config = NULL, *org = NULL;
  bool html = false;
  int c;
  optind = 1;
  while ((c = al_cli_getopt(argc, argv, "an:u:w:r:c:Ho:h", opts)) != -1) {
    switch (c) {
    case 'a':
      mo.audit = true;
      break;
    case 'n':
      mo.name = optarg;
      break;
    case 'u':
      mo.url = optarg;
      break;
    case 'w':
      mo.webhook_url = optarg;
      break;
    case 'r':
      mo.redirect_url = optarg;
      break;
    case 'c':
      config = optarg;
      break;
    case 'H':
      html = true;
      break;
    case 'o':
      org = optarg;
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
  if (org && !html)
    return al_cli_usage_error("--org goes with --html");
  al_error err = {0};
  al_broker_config *cfg = NULL;
  if (config && al_broker_config_load_file(config, &cfg, &err) < 0) {
    al_cli_error("%s", err.msg);
    return AL_EXIT_USAGE; /* a file the command line names, as `broker -c` (docs/cli.md) */
  }
  mo.cfg = cfg;
  json_t *m = NULL;
  int r = al_app_manifest(&mo, &m, &err);
  al_broker_config_free(cfg);
  if (r < 0)
    return al_cli_usage_error("%s", err.msg);
  char *text =
      html ? al_app_manifest_html(m, org, &err) : json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS);
  json_decref(m);
  if (!text)
    return html ? al_cli_usage_error("%s", err.msg) : AL_EXIT_FAILED;
  fputs(text, stdout);
  if (!html)
    fputc('\n', stdout);
  free(text);
  return AL_EXIT_OK;
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
  if (argc > 1 && strcmp(argv[1], "app-manifest") == 0)
    return manifest_main(argc - 1, argv + 1);
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
    al_cli_error("curl_global_init failed");
    return 1;
  }
  al_error err = {0};
  /* the config named on the command line: unreadable or invalid is a usage
   * error (2), as for every file an option names (docs/cli.md) */
  al_broker_config *cfg = NULL;
  if (al_broker_config_load_file(o.config_path, &cfg, &err) < 0) {
    curl_global_cleanup();
    al_cli_error("%s", err.msg);
    return AL_EXIT_USAGE;
  }
  al_broker_config_free(cfg);
  bool started = false;
  o.started = &started;
  int r = al_broker_run(&o, &err);
  curl_global_cleanup();
  if (r < 0) {
    al_cli_error("%s", err.msg);
    return started ? AL_EXIT_FAILED : AL_EXIT_CANNOT_RUN;
  }
  return 0;
}
