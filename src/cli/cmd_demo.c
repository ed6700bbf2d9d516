/* airlock demo [--hostile] [--keep] [--agent claude|codex|CMD [--agent-prefix DIR]
 *              [--relay-upstream URL --relay-key-file FILE [--relay-ca FILE]
 *               [--relay-pin PIN] | --relay FILE]]
 *
 * The main job with nothing to set up: a local GitHub-compatible test forge
 * (airlock-forge) with a sample project that has a real bug and a ticket
 * carrying its fix, a token broker holding a throwaway GitHub App key, and
 * `airlock ticket` running the bundled agent in the sandbox. --hostile runs
 * the hostile agent on a ticket written as a prompt injection and shows
 * every attempt beside what stopped it. Everything lives in a private
 * temporary directory and is removed at the end. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "cli.h"
#include "commands.h"
#include "common/owned.h"
#include "common/exitcodes.h"
#include "demo/demo.h"
#include "ticket/presets.h"

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout); /* in order with the summary when both go to one pipe */
  fputs("airlock demo: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* The demo's environment (demo/demo.h), with the files found where airlock
 * is installed; what it made is said on stderr. */
static int setup(al_demo *d, bool hostile, const al_demo_flags *da)
{
  char ca_script[PATH_MAX], key_script[PATH_MAX], fixture[PATH_MAX], forge[PATH_MAX];
  if (al_cli_find_data("scripts/make-test-ca.sh", ca_script, sizeof ca_script) < 0 ||
      al_cli_find_data("scripts/make-app-key.sh", key_script, sizeof key_script) < 0 ||
      al_cli_find_data("demo/fixture.json", fixture, sizeof fixture) < 0) {
    say("the demo's files are not installed (scripts/, demo/); set AIRLOCK_DATA_DIR");
    return -1;
  }
  if (al_cli_find_libexec("airlock-forge", forge, sizeof forge) < 0) {
    say("the test forge (airlock-forge) is not installed; set AIRLOCK_LIBEXEC_DIR");
    return -1;
  }
  char tdouble[PATH_MAX] = "";
  if (d->ticket_kind && al_cli_find_libexec("ticket-double", tdouble, sizeof tdouble) < 0) {
    say("--ticket needs the Jira and Linear test doubles (ticket-double), which only the build "
        "tree has (build/tests/integration); run the build tree's airlock or set "
        "AIRLOCK_LIBEXEC_DIR to the directory holding ticket-double");
    return -1;
  }
  char glforge[PATH_MAX] = "";
  if (d->gitlab && al_cli_find_libexec("airlock-gitlab-forge", glforge, sizeof glforge) < 0) {
    say("--forge gitlab needs the GitLab test forge (airlock-gitlab-forge), which only the "
        "build tree has (build/tests/gitlab-forge); run the build tree's airlock or set "
        "AIRLOCK_LIBEXEC_DIR to the directory holding it");
    return -1;
  }
  char self[PATH_MAX], net[PATH_MAX + 16];
  if (al_cli_self_dir(self, sizeof self) < 0)
    return -1;
  snprintf(net, sizeof net, "%s/airlock-net", self);
  al_demo_files files = {.ca_script = ca_script,
                         .key_script = key_script,
                         .fixture = fixture,
                         .forge = forge,
                         .airlock_net = net,
                         .ticket_double = tdouble,
                         .gitlab_forge = glforge};
  al_demo_relay relay = {.vendor = da->preset ? da->preset->vendor : "anthropic",
                         .upstream = da->relay_upstream,
                         .key_file = da->relay_key_file,
                         .relay_file = da->relay_file,
                         .ca_file = da->relay_ca,
                         .pubkey_pin = da->relay_pin};
  al_error err = {0};
  if (al_demo_setup(d, &files, &relay, da->agent != NULL, &err) < 0) {
    say("%s", err.msg);
    if (d->log[0])
      al_demo_show_log(d->log, stderr);
    return -1;
  }
  if (d->gitlab) {
    say("test forge https://gitlab.test:%d (a local GitLab stand-in; CA %s)", d->https_port, d->ca);
    say("broker on %s holds the Maintainer's token and mints per-run project access tokens; "
        "the sandbox will never see either",
        d->socket);
    say("before the lease the supervisor audits the project's protected branch, approval and "
        "push rules and CI with a read token the broker mints for it (read_api), revoked after");
  } else {
    say("test forge https://api.forge.test:%d (a local GitHub stand-in; CA %s)", d->https_port,
        d->ca);
    say("broker on %s holds the test App's key; the sandbox will never see it", d->socket);
    say("before the lease the supervisor audits acme/tally's branch protection with read-only "
        "tokens the broker mints from a second App");
  }
  if (d->ticket_kind)
    say("ticket %s on a local %s stand-in (https://%s:%d, loopback): acme/tally#1's text; "
        "the %s credential stays with the supervisor and the gateway",
        d->ticket_key, d->ticket_kind, d->ticket_host, d->ticket_port, d->ticket_kind);
  else if (d->gitlab)
    say("ticket %s#%d (a project in a subgroup): %s", AL_DEMO_GITLAB_PROJECT, hostile ? 2 : 1,
        hostile ? "a prompt injection asking the agent to attack"
                : "median() is wrong; the fix is in the ticket");
  else
    say("ticket acme/tally#%d: %s", hostile ? 2 : 1,
        hostile ? "a prompt injection asking the agent to attack"
                : "median() is wrong; the fix is in the ticket");
  return 0;
}

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock demo [--hostile] [--keep]\n"
          "       airlock demo --ticket jira|linear [--keep]\n"
          "       airlock demo --forge gitlab [--hostile | --agent CMD] [--keep]\n"
          "       airlock demo --serve [--keep]\n"
          "       airlock demo --agent claude|codex|CMD [--agent-prefix DIR]\n"
          "                    [--relay-upstream URL --relay-key-file FILE\n"
          "                     [--relay-ca FILE] [--relay-pin sha256//BASE64] | --relay FILE]\n\n"
          "Run the main job against a local test forge: a sample project with a real bug,\n"
          "a ticket carrying the fix, the token broker, and the bundled agent in the\n"
          "sandbox. --hostile: a prompt-injected agent instead, and what stopped it.\n"
          "--keep: leave the temporary directory (logs, policy) for inspection.\n"
          "--agent: your agent instead: a preset (claude, codex: docs/agents.md) or a\n"
          "program; a preset needs a model API through the relay: --relay-upstream URL\n"
          "with --relay-key-file FILE (the key, mode 0600; the agent never sees it), or\n"
          "--relay FILE holding a policy's whole `relay:` section (docs/policy.md).\n"
          "--relay-ca FILE: the CA bundle the API's certificate is verified with (in place\n"
          "of the system store); --relay-pin sha256//BASE64: its public key's SHA-256\n"
          "(curl's --pinnedpubkey form), checked too. The upstream is checked (TCP, TLS,\n"
          "both) before the agent starts.\n"
          "--serve: the same forge and broker with `airlock serve` between them: the\n"
          "ticket is labeled on the forge, the forge sends the signed webhook, serve\n"
          "runs the ticket and the PR appears (docs/serve.md).\n"
          "--ticket jira|linear: the ticket is in Jira or Linear instead (a local stand-in\n"
          "of the vendor's API, the build tree's ticket-double), the code on the test\n"
          "forge: one PR, one comment on the ticket, the vendor credential never in the\n"
          "sandbox, and the gateway's decisions for both hosts (docs/tickets.md).\n"
          "--forge gitlab: the project on a local GitLab stand-in instead (the build tree's\n"
          "airlock-gitlab-forge): the broker mints per-run project access tokens, the\n"
          "supervisor opens one Draft merge request, the tokens are revoked and seen\n"
          "answering 401 (docs/gitlab.md). With --hostile: the hostile agent's GitLab\n"
          "attempts (REST v4 and git), each refused at the gateway. With --agent CMD: your\n"
          "program (no preset: the GitLab demo has no relay).\n"
          "\n"
          "Exit status: 0 everything held (a PR made, or for --hostile only a PR got\n"
          "out); 1 something did not hold; 2 usage.\n");
}

/* --serve: airlock serve between the demo's forge and broker; the label,
 * the webhook, the run, the PR (demo/demo.h al_demo_serve_*). */
static int serve_demo(al_demo *d)
{
  char agent[PATH_MAX], self[PATH_MAX], airlock[PATH_MAX + 16];
  if (al_cli_find_data("agents/patch-agent", agent, sizeof agent) < 0 ||
      al_cli_self_dir(self, sizeof self) < 0) {
    say("the bundled agents are not installed");
    return 1;
  }
  snprintf(airlock, sizeof airlock, "%s/airlock", self);
  return al_demo_serve(d, airlock, agent, stdout);
}

int cmd_demo(int argc, char **argv)
{
  static const struct option opts[] = {{"hostile", no_argument, NULL, 'H'},
                                       {"keep", no_argument, NULL, 'k'},
                                       {"agent", required_argument, NULL, 'a'},
                                       {"agent-prefix", required_argument, NULL, 'X'},
                                       {"relay-upstream", required_argument, NULL, 'u'},
                                       {"relay-key-file", required_argument, NULL, 'K'},
                                       {"relay", required_argument, NULL, 'R'},
                                       {"relay-ca", required_argument, NULL, 'C'},
                                       {"relay-pin", required_argument, NULL, 'P'},
                                       {"serve", no_argument, NULL, 'S'},
                                       {"ticket", required_argument, NULL, 'T'},
                                       {"forge", required_argument, NULL, 'F'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  bool hostile = false;
  al_demo_flags da = {0};
  al_demo d;
  memset(&d, 0, sizeof d);
  int c;
  optind = 1;
  al_cli_init("demo", usage);
  while ((c = al_cli_getopt(argc, argv, "h", opts)) != -1) {
    switch (c) {
    case 'H':
      hostile = true;
      break;
    case 'k':
      d.keep = true;
      break;
    case 'a':
      da.agent = optarg;
      break;
    case 'X':
      da.prefix = optarg;
      break;
    case 'u':
      da.relay_upstream = optarg;
      break;
    case 'K':
      da.relay_key_file = optarg;
      break;
    case 'R':
      da.relay_file = optarg;
      break;
    case 'C':
      da.relay_ca = optarg;
      break;
    case 'P':
      da.relay_pin = optarg;
      break;
    case 'S':
      d.serve = true;
      break;
    case 'T':
      if (strcmp(optarg, "jira") != 0 && strcmp(optarg, "linear") != 0)
        return al_cli_usage_error("--ticket `%s`: jira or linear", optarg);
      d.ticket_kind = strcmp(optarg, "jira") == 0 ? "jira" : "linear";
      break;
    case 'F':
      if (strcmp(optarg, "github") != 0 && strcmp(optarg, "gitlab") != 0)
        return al_cli_usage_error("--forge `%s`: github or gitlab", optarg);
      d.gitlab = strcmp(optarg, "gitlab") == 0;
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
  if (da.agent && hostile)
    return al_cli_usage_error("--hostile runs the bundled hostile agent; --agent runs yours");
  if (d.serve && (hostile || da.agent))
    return al_cli_usage_error("--serve runs the bundled agent through airlock serve; it takes "
                              "neither --hostile nor --agent");
  if (d.ticket_kind && (hostile || d.serve))
    return al_cli_usage_error("--ticket runs the bundled agent on a Jira or Linear ticket; it "
                              "takes neither --hostile nor --serve");
  if (d.gitlab && (d.serve || d.ticket_kind))
    return al_cli_usage_error("--forge gitlab runs the bundled agents on a GitLab issue; it takes "
                              "neither --serve nor --ticket yet");
  al_error fe = {0};
  if (al_demo_check_flags(&da, &fe) < 0)
    return al_cli_usage_error("%s", fe.msg);
  /* --forge gitlab --agent CMD: a local command with no model API (the
   * GitLab demo has no relay); a preset needs one */
  if (d.gitlab && (da.preset || da.relay_upstream || da.relay_file))
    return al_cli_usage_error("--forge gitlab takes --agent CMD (a local command) only: no preset, "
                              "no --relay*");
  /* Nothing but SIGKILL ends the demo before its teardown: a closed
   * `| head` is EPIPE, not SIGPIPE; SIGINT/SIGTERM/SIGHUP stay pending,
   * the ticket sees them and stops, and we exit 128+N after cleaning up. */
  al_held_signals hs;
  al_error he = {0};
  if (al_signals_hold(&hs, &he) < 0) {
    say("%s", he.msg);
    return 1;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc = 1;
  if (d.serve) {
    if (setup(&d, false, &da) == 0)
      rc = serve_demo(&d);
  } else if (setup(&d, hostile, &da) == 0) {
    char agent[PATH_MAX];
    al_demo_agent a = {.path = agent,
                       .preset = da.preset ? da.preset->name : NULL,
                       .prefix = da.prefix,
                       .own = da.agent != NULL};
    if (!da.agent && al_cli_find_data(hostile ? "agents/hostile-agent" : "agents/patch-agent",
                                      agent, sizeof agent) < 0)
      say("the bundled agents are not installed");
    else if (da.agent && !da.preset && !realpath(da.agent, agent))
      say("--agent `%s`: %s", da.agent, strerror(errno));
    else {
      al_error err = {0};
      int signo = 0;
      rc = al_demo_ticket(&d, &a, hostile, stdout, &signo, &err);
      if (signo)
        hs.taken = signo;
    }
  }
  char note[AL_ERROR_MSG_MAX];
  al_demo_teardown(&d, note, sizeof note);
  if (note[0])
    say("%s", note);
  curl_global_cleanup();
  int sig = al_signals_release(&hs);
  if (sig) {
    say("interrupted by signal %d (%s); cleaned up", sig, strsignal(sig));
    return 128 + sig;
  }
  return rc;
}
