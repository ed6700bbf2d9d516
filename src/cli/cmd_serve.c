/* airlock serve -c CONFIG                      the service (docs/serve.md)
 * airlock serve enqueue -c CONFIG OWNER/REPO#N  add a ticket to its queue (or #KEY)
 * airlock serve --config-doc                    the config keys as Markdown
 * airlock serve --gc -c CONFIG                  apply the retention now
 * airlock serve kube-run ...                    one run as a Job (runs.runner: kubernetes;
 *                                               the service's own child, runner_kube.h) */
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "common/log.h"
#include "serve/config.h"
#include "serve/runner_kube.h"
#include "serve/serve.h"

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock serve -c CONFIG\n"
               "       airlock serve enqueue -c CONFIG OWNER/REPO#N|OWNER/REPO#KEY\n"
               "       airlock serve --gc -c CONFIG\n"
               "       airlock serve --config-doc\n"
               "\n"
               "The service: a forge webhook (an issue labeled with webhook.label, or a comment\n"
               "whose first line is webhook.command, from a user with write permission), a\n"
               "signed Jira or Linear webhook (webhook.jira, webhook.linear) or\n"
               "`enqueue` adds the ticket to a durable queue; each run is `airlock ticket` in a\n"
               "child process. Status page, JSON and /metrics on listen.status. docs/serve.md.\n"
               "\n"
               "  -c, --config FILE   the service's config (YAML)\n"
               "      --config-doc    print the config keys (Markdown) and exit\n"
               "      --gc            delete the finished rows past retention.max_age and\n"
               "                      retention.max_rows now, print how many, and exit\n"
               "\n"
               "`enqueue` writes to the queue in state_dir directly (no network): who may\n"
               "write there may enqueue. KEY (PROJ-7) names a Jira or Linear ticket of a\n"
               "repository whose policy's ticket: is that vendor's. It prints the run's id.\n");
}

/* `airlock serve kube-run -c CONFIG --row ID --instance INST -p POLICY
 * --record FILE TARGET`: what serve execs per run with runs.runner:
 * kubernetes (serve_kube_argv). Exit 0/1/3 as al_serve_kube_run. */
static int kube_run(int argc, char **argv)
{
  static const struct option opts[] = {
      {"config", required_argument, NULL, 'c'},   {"row", required_argument, NULL, 'r'},
      {"instance", required_argument, NULL, 'i'}, {"policy", required_argument, NULL, 'p'},
      {"record", required_argument, NULL, 'R'},   {NULL, 0, NULL, 0}};
  const char *config = NULL;
  struct al_serve_kube_args a = {0};
  int c;
  optind = 1;
  while ((c = al_cli_getopt(argc, argv, "c:p:", opts)) != -1) {
    if (c == 'c')
      config = optarg;
    else if (c == 'r')
      a.row = strtoll(optarg, NULL, 10);
    else if (c == 'i')
      a.instance = optarg;
    else if (c == 'p')
      a.policy = optarg;
    else if (c == 'R')
      a.record = optarg;
    else
      return al_cli_usage_error(NULL);
  }
  if (!config || !a.instance || !a.policy || !a.record || a.row <= 0 || optind != argc - 1)
    return al_cli_usage_error("kube-run: -c, --row, --instance, -p, --record and one TARGET");
  a.target = argv[optind];
  al_serve_config *cfg;
  al_error err = {0};
  if (al_serve_config_load(config, &cfg, &err) < 0) {
    al_cli_error("%s", err.msg);
    return 2;
  }
  int rc = al_serve_kube_run(cfg, &a, &err);
  if (rc < 0)
    al_cli_error("%s", err.msg);
  al_serve_config_free(cfg);
  return rc < 0 ? 1 : rc;
}

int cmd_serve(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "kube-run") == 0) {
    al_cli_init("serve kube-run", usage);
    return kube_run(argc - 1, argv + 1);
  }
  static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                       {"config-doc", no_argument, NULL, 'D'},
                                       {"gc", no_argument, NULL, 'G'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  bool enqueue = argc > 1 && strcmp(argv[1], "enqueue") == 0;
  if (enqueue) {
    argv++;
    argc--;
  }
  const char *config = NULL;
  bool gc = false;
  int c;
  optind = 1;
  al_cli_init("serve", usage);
  while ((c = al_cli_getopt(argc, argv, "c:h", opts)) != -1) {
    switch (c) {
    case 'c':
      config = optarg;
      break;
    case 'G':
      gc = true;
      break;
    case 'D':
      al_serve_config_doc(stdout);
      return 0;
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (!config) {
    return al_cli_usage_error("-c CONFIG is required");
  }
  if (enqueue ? optind != argc - 1 : optind != argc) {
    fprintf(stderr,
            enqueue ? "airlock serve enqueue: one ticket (OWNER/REPO#N or OWNER/REPO#KEY)\n"
                    : "airlock serve: unexpected argument `%s`\n",
            argv[optind < argc ? optind : 0]);
    return 2;
  }
  al_serve_config *cfg;
  al_error err = {0};
  if (al_serve_config_load(config, &cfg, &err) < 0) {
    al_cli_error("%s", err.msg);
    return 2;
  }
  int rc = 0;
  if (gc && enqueue) {
    al_cli_error("--gc is an option of `airlock serve`, not of `enqueue`");
    rc = 2;
  } else if (gc) {
    int64_t n = 0;
    if (al_serve_gc(cfg, &n, &err) < 0) {
      al_cli_error("%s", err.msg);
      rc = 1;
    } else {
      printf("%" PRId64 " finished rows deleted\n", n);
    }
  } else if (enqueue) {
    char sender[80], pwbuf[1024];
    struct passwd pwd, *pw = NULL;
    if (getpwuid_r(getuid(), &pwd, pwbuf, sizeof pwbuf, &pw) != 0)
      pw = NULL;
    snprintf(sender, sizeof sender, "local:uid=%u(%.32s)", (unsigned)getuid(),
             pw ? pw->pw_name : "?");
    int64_t id;
    int r = al_serve_enqueue(cfg, argv[optind], sender, &id, &err);
    if (r < 0) {
      al_cli_error("%s", err.msg);
      rc = 1;
    } else {
      printf("%" PRId64 "\n", id);
      if (r == 1)
        al_cli_error("%s already has a queued or running run (%" PRId64 "); nothing added",
                     argv[optind], id);
    }
  } else if (al_serve_run(cfg, &err) < 0) {
    al_cli_error("%s", err.msg);
    rc = 1;
  }
  al_serve_config_free(cfg);
  return rc;
}
