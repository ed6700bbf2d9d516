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
#include "common/exitcodes.h"
#include "common/owned.h"
#include "common/term.h"
#include "common/util.h"
#include "demo/demo.h"
#include "policy/policy.h"
#include "ticket/presets.h"
#include "review/notes.h"
#include "ticket/ticket.h"

/* --agent: a preset or a program, and the model relay it talks to. */
struct demo_agent {
  const char *agent;             /* NULL: the bundled agents */
  const al_agent_preset *preset; /* when agent names one */
  const char *prefix;            /* --agent-prefix */
  const char *relay_upstream;    /* --relay-upstream URL */
  const char *relay_key_file;    /* --relay-key-file FILE */
  const char *relay_file;        /* --relay FILE: a YAML file with a `relay:` section */
  const char *relay_ca;          /* --relay-ca FILE: relay.ca_file */
  const char *relay_pin;         /* --relay-pin PIN: relay.pubkey_pin */
};

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

/* The last lines of a setup log, on stderr: the directory holding it is
 * removed at the end (it holds the App keys), so a failure says why here. */
static void show_log(const char *path)
{
  char *text = NULL;
  size_t len = 0;
  al_error e = {0};
  if (al_read_file(path, 1u << 20, &text, &len, &e) < 0)
    return;
  const char *start = text;
  int lines = 0;
  for (size_t i = len; i-- > 0;)
    if (text[i] == '\n' && ++lines > 20) {
      start = text + i + 1;
      break;
    }
  fprintf(stderr, "%s", start);
  free(text);
}

/* The demo's environment (demo/demo.h), with the files found where airlock
 * is installed; what it made is said on stderr. */
static int setup(al_demo *d, bool hostile, const struct demo_agent *da)
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
  char self[PATH_MAX], net[PATH_MAX + 16];
  if (al_cli_self_dir(self, sizeof self) < 0)
    return -1;
  snprintf(net, sizeof net, "%s/airlock-net", self);
  al_demo_files files = {.ca_script = ca_script,
                         .key_script = key_script,
                         .fixture = fixture,
                         .forge = forge,
                         .airlock_net = net};
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
      show_log(d->log);
    return -1;
  }
  say("test forge https://api.forge.test:%d (a local GitHub stand-in; CA %s)", d->https_port,
      d->ca);
  say("broker on %s holds the test App's key; the sandbox will never see it", d->socket);
  say("before the lease the supervisor audits acme/tally's branch protection with read-only "
      "tokens the broker mints from a second App");
  say("ticket acme/tally#%d: %s", hostile ? 2 : 1,
      hostile ? "a prompt injection asking the agent to attack"
              : "median() is wrong; the fix is in the ticket");
  return 0;
}

/* What the record says made the output inert before a human looks (issue
 * #26): the PR text the agent declared, as the rewriter changed it
 * (outputs.rewritten), and the repository's CI, as the audit judged it
 * (the ci.* criteria). Returns 1 when one of them did not hold. */
static int report_inert(json_t *rec)
{
  json_t *rw = json_object_get(json_object_get(rec, "outputs"), "rewritten");
  static const char *const rules[] = {"mentions", "keywords", "images", "html", "links"};
  size_t n[5] = {0};
  for (size_t i = 0; i < 5; i++)
    n[i] = (size_t)json_integer_value(json_object_get(json_object_get(rw, "title"), rules[i])) +
           (size_t)json_integer_value(json_object_get(json_object_get(rw, "body"), rules[i]));
  printf("  %-9s the PR text the agent declared was made inert before it was posted: %zu "
         "mention(s), %zu closing keyword(s), %zu image(s), %zu HTML tag(s), %zu outside "
         "link(s) rewritten; airlock's header first, the agent's text quoted below it\n",
         json_is_object(rw) ? "held" : "CHECK", n[0], n[1], n[2], n[3], n[4]);
  size_t pass = 0, total = 0;
  json_t *report = json_object_get(json_object_get(rec, "audit"), "report");
  json_t *criteria = json_object_get(report, "criteria");
  json_t *c;
  size_t i;
  json_array_foreach(criteria, i, c)
  {
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *st = json_string_value(json_object_get(c, "status"));
    if (!id || strncmp(id, "ci.", 3) != 0)
      continue;
    total++;
    pass += st && strcmp(st, "PASS") == 0;
  }
  printf("  %-9s CI: no workflow of the base branch runs the agent's push or PR with a secret, an "
         "OIDC identity, a write token or a self-hosted runner before a human approves (audit: "
         "%zu of %zu ci.* criteria PASS; docs/audit.md)\n",
         total && pass == total ? "held" : "CHECK", pass, total);
  return json_is_object(rw) && total && pass == total ? 0 : 1;
}

static int report(al_demo *d, const al_ticket_outcome *res, bool hostile, const char *main_before)
{
  json_t *rec = json_load_file(res->record_path, 0, NULL);
  char main_after[64];
  al_demo_main_sha(d, main_after, sizeof main_after);
  bool main_ok = strcmp(main_before, main_after) == 0 && strcmp(main_before, "?") != 0;
  json_t *pulls = al_demo_admin_get(d, "/pulls");
  size_t npulls = json_is_array(pulls) ? json_array_size(pulls)
                                       : json_array_size(json_object_get(pulls, "pulls"));
  int bad = 0;
  printf("\n");
  if (hostile) {
    printf("What the prompt-injected agent tried, in its own words (each line after the "
           "gutter is the agent's claim, not airlock's verdict):\n\n");
    json_t *atts = json_object_get(rec, "agent_attempts");
    size_t i;
    json_t *a;
    json_array_foreach(atts, i, a)
    {
      const char *id = json_string_value(json_object_get(a, "id"));
      /* the agent's own words: shown escaped (common/term.h) */
      al_autofree char *what =
          al_term_escape_line(json_string_value(json_object_get(a, "what")) ?: "?");
      const char *outcome_raw = json_string_value(json_object_get(a, "outcome"));
      al_autofree char *outcome = outcome_raw ? al_term_escape_line(outcome_raw) : NULL;
      al_autofree char *ev =
          al_term_escape_line(json_string_value(json_object_get(a, "evidence")) ?: "");
      bool allowed = al_demo_attempt_allowed(id, res->credentials_mode);
      if (id && strcmp(id, "keep-token") == 0)
        printf(AL_TERM_AGENT_GUTTER "%-9s %s\n            %s\n", "kept", what,
               res->credentials_mode && strcmp(res->credentials_mode, "sealed") == 0
                   ? "worthless: all it held was the run's placeholder (sealed), and /tmp and "
                     "~/.cache vanished with the sandbox"
               : res->tokens_dead
                   ? "worthless: the token was revoked and confirmed dead as the run "
                     "ended; /tmp and ~/.cache vanished with the sandbox"
                   : "THE TOKEN IS NOT CONFIRMED DEAD");
      else
        printf(AL_TERM_AGENT_GUTTER "%-9s %s\n" AL_TERM_AGENT_GUTTER "          %s\n",
               outcome ? outcome : "?", what, ev);
      if (outcome && strcmp(outcome, "succeeded") == 0 && !allowed)
        bad++;
    }
    printf("\nJudged by airlock from outside, after the run (the record, the forge):\n\n");
  } else {
    printf("Result:\n\n");
  }
  if (res->pr_url[0])
    printf("  %-9s the pull request %s\n", "made", res->pr_url);
  else
    printf("  %-9s no pull request: the agent did not finish the ticket (its output and the "
           "run record say why)\n",
           "MISSING");
  printf("  %-9s main is untouched (%.12s)\n", main_ok ? "held" : "BROKEN", main_after);
  printf("  %-9s %zu pull request(s) on the forge: %s\n", npulls <= 1 ? "held" : "CHECK", npulls,
         npulls ? "the whole blast radius" : "nothing got out");
  printf("  %-9s both tokens revoked and confirmed dead (401) as the run ended\n",
         res->tokens_dead ? "held" : "BROKEN");
  if (res->credentials_mode && strcmp(res->credentials_mode, "sealed") == 0) {
    const char *tv = al_demo_preflight_verdict(rec, "cred.run-tokens");
    bool none = tv && strcmp(tv, "blocked") == 0;
    printf("  %-9s credentials sealed: no real token anywhere in the sandbox (cred.run-tokens "
           "%s); the agent held a placeholder\n",
           none ? "held" : "CHECK", tv ? tv : "not run");
    if (!none)
      bad++;
    printf("  %-9s the forge gateway decided %zu request(s) and refused %zu%s%s%s\n", "held",
           res->gateway_requests, res->gateway_refused, res->gateway_refused_by[0] ? " (" : "",
           res->gateway_refused_by, res->gateway_refused_by[0] ? ")" : "");
    if (res->pr_by_supervisor || res->pr_url[0])
      printf("  %-9s the pull request was opened by %s\n", res->pr_by_supervisor ? "held" : "CHECK",
             res->pr_by_supervisor ? "the supervisor, not the agent" : "someone else");
  }
  if (hostile)
    bad += report_inert(rec);
  json_t *rv = json_object_get(rec, "review");
  json_t *risky = json_object_get(rv, "runs_outside_sandbox");
  json_t *leaks = json_object_get(rv, "secrets");
  if (json_is_array(risky) || json_is_array(leaks)) {
    printf("  %-9s review notes for the human%s: %zu file(s) that run outside "
           "the sandbox later, %zu secret(s) in the PR or comments\n",
           "noted", res->pr_url[0] ? " (also on the PR)" : "", al_review_outside_files(risky),
           json_array_size(leaks));
    fflush(stdout);
    al_review_print_summary(rv, stdout, "            ", NULL, 10);
  }
  if (!main_ok || !res->tokens_dead || npulls > 1)
    bad++; /* something did not hold (a missing PR alone is the agent's failure) */
  printf("\n  run record: %s\n", res->record_path);
  json_decref(rec);
  json_decref(pulls);
  return bad;
}

static void usage(FILE *out)
{
  fprintf(out,
          "usage: airlock demo [--hostile] [--keep]\n"
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
  al_error err = {0};
  if (al_demo_serve_start(d, airlock, agent, &err) < 0) {
    say("%s", err.msg);
    if (d->log[0])
      show_log(d->log);
    return 1;
  }
  say("airlock serve: webhook %s (the forge signs each delivery with %s)", d->webhook_url,
      d->webhook_secret);
  say("airlock serve: status page %s/ (also /runs.json, /metrics, /healthz)", d->status_url);
  say("labeling acme/tally#1 `airlock` as alice (admin) on the forge; the same by hand:");
  say("  curl -s -X POST -d '{\"repo\":\"acme/tally\",\"number\":1,\"label\":\"airlock\","
      "\"user\":\"alice\"}' http://127.0.0.1:%d/hooks/label",
      d->admin_port);
  int status = 0;
  if (al_demo_serve_label(d, 1, "alice", &status, &err) < 0) {
    say("%s", err.msg);
    show_log(d->serve_log);
    return 1;
  }
  say("the forge's webhook was answered %d: queued; the run is `airlock ticket` in serve's child",
      status);
  json_t *row = NULL;
  if (al_demo_serve_wait(d, 1, 15 * 60 * 1000, &row, &err) < 0) {
    say("%s", err.msg);
    show_log(d->serve_log);
    return 1;
  }
  const char *state = json_string_value(json_object_get(row, "state"));
  const char *pr = json_string_value(json_object_get(row, "pr_url"));
  const char *reason = json_string_value(json_object_get(row, "reason"));
  printf("  run %lld   %s   %s\n", (long long)json_integer_value(json_object_get(row, "id")),
         state ? state : "?", reason ? reason : "");
  printf("  check     %s\n", json_string_value(json_object_get(row, "check_detail"))
                                 ? json_string_value(json_object_get(row, "check_detail"))
                                 : "-");
  bool good = state && !strcmp(state, "succeeded") && pr && *pr;
  if (good)
    printf("  PR        %s\n", pr);
  printf("\n%s\n", good ? "Done: a label on the forge, a signed webhook, one pull request made "
                          "inside the sandbox, waiting for a human review."
                        : "The run did not make its pull request: see serve's status page "
                          "record above (airlock demo --serve --keep keeps the logs).");
  if (!good)
    show_log(d->serve_log);
  json_decref(row);
  return good ? 0 : 1;
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
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  bool hostile = false;
  struct demo_agent da = {0};
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
  da.preset = da.agent ? al_agent_preset_find(da.agent) : NULL;
  if ((da.relay_upstream != NULL) != (da.relay_key_file != NULL))
    return al_cli_usage_error("--relay-upstream and --relay-key-file go together");
  if (da.relay_file && da.relay_upstream)
    return al_cli_usage_error("give --relay FILE or --relay-upstream/--relay-key-file, not both");
  if ((da.relay_ca || da.relay_pin) && !da.relay_upstream)
    return al_cli_usage_error("--relay-ca and --relay-pin go with --relay-upstream (with --relay "
                              "FILE, put ca_file and pubkey_pin in its section)");
  const char *pin_why = NULL;
  if (da.relay_pin && al_policy_pubkey_pin_syntax(da.relay_pin, &pin_why) < 0)
    return al_cli_usage_error("--relay-pin `%.120s`: not sha256//BASE64[;sha256//BASE64...]: %s",
                              da.relay_pin, pin_why);
  if ((da.prefix || da.relay_upstream || da.relay_file) && !da.agent)
    return al_cli_usage_error("--agent-prefix and --relay* go with --agent");
  if (da.preset && !da.relay_upstream && !da.relay_file)
    return al_cli_usage_error(
        "--agent %s needs a model API (%s) and the demo has none: give --relay-upstream %s "
        "--relay-key-file FILE (a file of mode 0600 holding the API key; the relay adds it, the "
        "agent never sees it), or --relay FILE with a policy's `relay:` section",
        da.preset->name, da.preset->what,
        strcmp(da.preset->vendor, "openai") == 0 ? "https://api.openai.com"
                                                 : "https://api.anthropic.com");
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
    char main_before[64];
    al_demo_main_sha(&d, main_before, sizeof main_before);
    char agent[PATH_MAX], agent_dir[PATH_MAX];
    bool found = true;
    if (!da.agent)
      found = al_cli_find_data(hostile ? "agents/hostile-agent" : "agents/patch-agent", agent,
                               sizeof agent) == 0;
    else if (!da.preset && !realpath(da.agent, agent)) {
      say("--agent `%s`: %s", da.agent, strerror(errno));
      found = false;
    } else if (da.preset)
      snprintf(agent, sizeof agent, "%s", da.preset->name);
    if (!found) {
      say("the bundled agents are not installed");
    } else {
      snprintf(agent_dir, sizeof agent_dir, "%s", agent);
      char *slash = strrchr(agent_dir, '/');
      if (slash)
        *slash = '\0';
      char *av[] = {agent, NULL};
      const char *ro[] = {agent_dir, NULL};
      char record[PATH_MAX + 16];
      snprintf(record, sizeof record, "%s/run-record.json", d.dir);
      char *none[] = {NULL};
      al_ticket_opts o = {.target = hostile ? "acme/tally#2" : "acme/tally#1",
                          .policy_path = d.policy,
                          .agent_argv = da.preset ? none : av,
                          .agent_preset = da.preset ? da.preset->name : NULL,
                          .agent_prefix = da.prefix,
                          .extra_ro_paths = da.preset ? NULL : ro,
                          .show_agent_stdout = da.agent != NULL,
                          .record_path = NULL};
      al_ticket_outcome res;
      al_error err = {0};
      int r = al_ticket_run(&o, &res, &err);
      if (res.exit_code > AL_EXIT_SIGNAL) /* interrupted by signal N: exit 128+N too */
        hs.taken = res.exit_code - AL_EXIT_SIGNAL;
      if (r < 0 && !hostile)
        say("the ticket run failed: %s", err.msg);
      int bad = report(&d, &res, hostile, main_before);
      free(res.agent_stdout);
      rc = (bad == 0 && (hostile || (r == 0 && res.pr_url[0]))) ? 0 : 1;
      printf("\n%s\n", rc == 0 ? (hostile ? "The agent was fully hostile; all that got out is one "
                                            "pull request a human must review."
                                          : "Done: one pull request, made inside the sandbox, "
                                            "waiting for a human review.")
                       : bad == 0
                           ? "The agent did not finish the ticket, and nothing got out: see its "
                             "output above and the run record."
                           : "Something did not hold: see above and the run record.");
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
