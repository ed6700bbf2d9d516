/* airlock token lease --repo OWNER/REPO [--socket PATH] [--role R] [--permissions P] [--ttl D]
 * Debugging aid: take a lease from the broker, print fingerprints (never
 * token values), hold it until Enter/EOF on stdin, SIGINT/SIGTERM, or the
 * broker ends it; then release and print the revocation result. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "broker/client.h"
#include "cli.h"
#include "commands.h"
#include "common/log.h"
#include "common/util.h"

#define DEFAULT_SOCKET "/run/airlock/broker.sock"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock token lease --repo OWNER/REPO [--socket PATH] [--role git|ticket|both]\n"
          "                           [--permissions NAME:LEVEL,...] [--ttl DURATION]\n"
          "  Takes a lease from the broker and prints the tokens' fingerprints (never their\n"
          "  values); holds it until Enter or EOF on stdin, SIGINT/SIGTERM, or the broker\n"
          "  ends it, then releases it and prints the revocation result.\n"
          "  --socket defaults to $AIRLOCK_BROKER_SOCKET or " DEFAULT_SOCKET ".\n"
          "\n"
          "Exit status: 0 the lease was held and released; 1 the broker refused it or\n"
          "its release failed; 2 usage; 125 no broker answers at the socket.\n");
}

static void print_token(const al_lease *l, al_role r)
{
  if (!al_lease_fingerprint(l, r))
    return;
  printf("%-6s %s %s {%s} token expires %s\n", al_role_name(r), al_lease_repo(l, r),
         al_lease_fingerprint(l, r), al_lease_permissions(l, r), al_lease_token_expires_at(l, r));
}

static int lease_main(int argc, char **argv)
{
  static const struct option opts[] = {{"repo", required_argument, NULL, 'r'},
                                       {"socket", required_argument, NULL, 's'},
                                       {"role", required_argument, NULL, 'R'},
                                       {"permissions", required_argument, NULL, 'p'},
                                       {"ttl", required_argument, NULL, 't'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *repo = NULL, *role = "both", *perms = NULL;
  const char *sock = getenv("AIRLOCK_BROKER_SOCKET");
  uint64_t ttl = 0;
  int c;
  while ((c = al_cli_getopt(argc, argv, "r:s:R:p:t:h", opts)) != -1) {
    switch (c) {
    case 'r':
      repo = optarg;
      break;
    case 's':
      sock = optarg;
      break;
    case 'R':
      role = optarg;
      break;
    case 'p':
      perms = optarg;
      break;
    case 't': {
      const char *why;
      if (al_parse_duration_ms(optarg, &ttl, &why) < 0) {
        return al_cli_usage_error("--ttl: %s", why);
      }
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    default:
      return al_cli_usage_error(NULL);
    }
  }
  bool git = strcmp(role, "git") == 0 || strcmp(role, "both") == 0;
  bool ticket = strcmp(role, "ticket") == 0 || strcmp(role, "both") == 0;
  if (al_cli_max_operands(argc, argv, optind, 0) != 0)
    return AL_EXIT_USAGE;
  if (!git && !ticket)
    return al_cli_usage_error("--role `%s`: git, ticket or both", role);
  if (!repo)
    return al_cli_usage_error("which repository? (--repo OWNER/REPO)");
  al_lease_request rq = {.git_repo = git ? repo : NULL,
                         .ticket_repo = ticket ? repo : NULL,
                         .git_permissions = git ? perms : NULL,
                         .ticket_permissions = ticket ? perms : NULL,
                         .ttl_ms = ttl};
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  al_autoclose int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

  al_error err = {0};
  al_lease *l;
  if (al_lease_open(sock ? sock : DEFAULT_SOCKET, &rq, &l, &err) < 0) {
    al_cli_error("%s", err.msg);
    return al_broker_unreachable(&err) ? AL_EXIT_CANNOT_RUN : AL_EXIT_FAILED;
  }
  printf("lease %s: ttl %llus, ends %s\n", al_lease_id(l),
         (unsigned long long)(al_lease_ttl_ms(l) / 1000), al_lease_expires_at(l));
  print_token(l, AL_ROLE_GIT);
  print_token(l, AL_ROLE_TICKET);
  printf("holding the lease; press Enter (or EOF, or Ctrl-C) to release\n");
  fflush(stdout);

  bool stdin_open = true;
  for (;;) {
    struct pollfd p[3] = {{.fd = al_lease_fd(l), .events = POLLIN},
                          {.fd = sfd, .events = POLLIN},
                          {.fd = stdin_open ? 0 : -1, .events = POLLIN}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[0].revents) {
      int r = al_lease_poll(l, &err);
      if (r != 0) {
        printf("the broker ended the lease%s\n", r < 0 ? " (protocol error)" : "");
        break;
      }
    }
    if (p[1].revents) {
      printf("signal: releasing\n");
      break;
    }
    if (p[2].revents) {
      char buf[256];
      ssize_t n = read(0, buf, sizeof buf);
      if (n <= 0 || memchr(buf, '\n', (size_t)n))
        break;
    }
  }
  al_lease_result res;
  int r = al_lease_release(l, true, &res, &err);
  for (size_t i = 0; i < res.n; i++)
    printf("%-6s %s revoked=%s confirmed=%s%s%s\n", al_role_name(res.tokens[i].role),
           res.tokens[i].fingerprint, res.tokens[i].revoked ? "yes" : "no",
           res.tokens[i].confirmed ? "yes" : "no", res.tokens[i].error[0] ? " error: " : "",
           res.tokens[i].error);
  if (res.answered)
    printf("lease ended (%s)\n", res.reason);
  if (r < 0) {
    al_cli_error("%s", err.msg);
    return 1;
  }
  return 0;
}

int cmd_token(int argc, char **argv)
{
  al_cli_init("token", usage);
  if (argc >= 2 && strcmp(argv[1], "lease") == 0)
    return lease_main(argc - 1, argv + 1);
  if (argc >= 2 && al_cli_is_help(argv[1])) {
    usage(stdout);
    return 0;
  }
  if (argc < 2)
    return al_cli_usage_error("which subcommand? (lease)");
  return al_cli_usage_error("unknown %s `%s` (lease)", argv[1][0] == '-' ? "option" : "subcommand",
                            argv[1]);
}
