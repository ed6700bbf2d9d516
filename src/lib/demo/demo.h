/* The demo's environment (`airlock demo`): a local test forge (airlock-
 * forge) with a sample project and its tickets, a test CA, two test Apps'
 * keys, the token broker holding them, and the run's policy, all in one
 * temporary directory that al_demo_teardown() removes.
 *
 * Who does what, in order:
 *   al_demo_setup     make-test-ca.sh, make-app-key.sh (app, auditor) →
 *                     airlock-forge (ports.json) → broker.yaml + `airlock-net
 *                     broker` (its socket) → with ticket_kind, ticket-double
 *                     (its own CA, the vendor token 0600 in secret/) →
 *                     airlock.yaml (the policy; the ticket host and a
 *                     `ticket:` block with ticket_kind)
 *   the caller        runs the ticket against d->policy (ticket/ticket.h)
 *   al_demo_main_sha  the forge's admin listener: main's sha, before and after
 *   al_demo_teardown  SIGTERM to the children in reverse order (the broker
 *                     revokes what it minted), SIGKILL after 5 s, remove
 *                     the directory unless d->keep */
#ifndef AL_DEMO_H
#define AL_DEMO_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/owned.h"
#include "ticket/presets.h"
#include "ticket/ticket.h"

#define AL_DEMO_MAX_CHILDREN 5
/* `--forge gitlab`'s project: in a subgroup, as GitLab's often are */
#define AL_DEMO_GITLAB_PROJECT "acme/tools/tally"

/* Where the demo's programs and files are (the CLI finds them: src/cli/paths.h). */
typedef struct al_demo_files {
  const char *ca_script;   /* scripts/make-test-ca.sh */
  const char *key_script;  /* scripts/make-app-key.sh */
  const char *fixture;     /* demo/fixture.json: the forge's repositories and tickets */
  const char *forge;       /* the airlock-forge binary */
  const char *airlock_net; /* the airlock-net binary (runs the broker) */
  const char
      *ticket_double; /* with d->ticket_kind: the ticket-double binary (tests/ticket-doubles) */
  const char *gitlab_forge; /* with d->gitlab: airlock-gitlab-forge (tests/gitlab-forge) */
} al_demo_files;

/* The relay section of the demo's policy (`--agent` with a model API). */
typedef struct al_demo_relay {
  const char *vendor;     /* "anthropic" or "openai": the upstream's rule set */
  const char *upstream;   /* --relay-upstream URL, or NULL */
  const char *key_file;   /* --relay-key-file FILE (with upstream) */
  const char *relay_file; /* --relay FILE: a YAML file starting with `relay:`, or NULL */
  const char *ca_file;    /* --relay-ca FILE (with upstream): relay.ca_file, made absolute */
  const char *pubkey_pin; /* --relay-pin PIN (with upstream): relay.pubkey_pin */
} al_demo_relay;

typedef struct al_demo {
  al_tmpdir tmp;         /* what we made and remove: identity checked (common/owned.h) */
  char dir[PATH_MAX];    /* 0755: CA, policy (readable by the sandbox user) */
  char secret[PATH_MAX]; /* 0700: the app keys, broker config and socket, logs */
  char ca[PATH_MAX];     /* the test CA certificate (PEM) */
  char policy[PATH_MAX]; /* the run's policy, dir/airlock.yaml */
  char socket[PATH_MAX]; /* the broker's socket */
  char log[PATH_MAX];    /* after a failed setup: the log that says why, or "" */
  pid_t children[AL_DEMO_MAX_CHILDREN];
  size_t nchildren;
  int https_port, admin_port; /* the forge's listeners on 127.0.0.1 */
  bool keep;                  /* teardown leaves the directory */
  /* `airlock demo --serve` (demo_serve.c): set serve before al_demo_setup */
  bool serve;
  char webhook_url[128];         /* http://127.0.0.1:PORT/webhook: the forge posts there */
  char webhook_secret[PATH_MAX]; /* the webhook secret file (0600) */
  char serve_conf[PATH_MAX];     /* serve.yaml */
  char serve_log[PATH_MAX];      /* serve's log */
  char status_url[128];          /* http://127.0.0.1:PORT: serve's status page */
  /* `airlock demo --ticket jira|linear`: set ticket_kind before al_demo_setup;
   * the ticket is then KEY on the double (tests/ticket-doubles), its body
   * acme/tally#1's, on TICKET_HOST (pinned to loopback) */
  const char *ticket_kind;     /* "jira", "linear" or NULL (a GitHub issue) */
  char ticket_key[16];         /* PROJ-7 or ENG-42 */
  char ticket_host[32];        /* jira.test or linear.test */
  int ticket_port;             /* the double's port on 127.0.0.1 */
  char ticket_state[PATH_MAX]; /* the double's state file (its comments, refusals) */
  char ticket_secret[72];      /* the vendor credential (hex; never in the sandbox) */
  /* `airlock demo --forge gitlab` (demo_gitlab.c): set gitlab before
   * al_demo_setup; the forge is then airlock-gitlab-forge on gitlab.test
   * (pinned to loopback, HTTPS on https_port), the broker in its GitLab
   * mode (project access tokens), the policy forge.kind gitlab */
  bool gitlab;                 /* the project: AL_DEMO_GITLAB_PROJECT */
  char gitlab_token[72];       /* the Maintainer's token (hex; the broker's and the demo's only) */
  long long gitlab_project_id; /* acme/tally's id in the fixture */
} al_demo;

/* Build the whole environment into d (zeroed by the caller; d->keep may be
 * set). `own_agent`: limits for the user's agent (3 GiB, 20 m) instead of
 * the bundled one's (1 GiB, 2 m). Returns 0, or -1 with err saying which
 * step failed (d->log names the log to show when there is one); call
 * al_demo_teardown() in both cases. */
int al_demo_setup(al_demo *d, const al_demo_files *files, const al_demo_relay *relay,
                  bool own_agent, al_error *err);

/* main's sha in acme/tally (the forge's admin listener, GET /refs), into
 * buf; "?" when the forge does not say. */
const char *al_demo_main_sha(al_demo *d, char *buf, size_t n);

/* GET path from the forge's admin listener (plain HTTP on loopback, 10 s
 * timeout); the parsed JSON (the caller decrefs) or NULL. */
json_t *al_demo_admin_get(al_demo *d, const char *path);

/* The demo's verdicts on a run (what `airlock demo` exits 0 or 1 on).
 *
 * May a hostile agent's attempt `id` (the record's agent_attempts[].id)
 * succeed without anything having failed? Opening the one PR and keeping
 * a (worthless) token always; `open-pr-itself` only when the agent held
 * the token (credentials_mode "env"). */
bool al_demo_attempt_allowed(const char *id, const char *credentials_mode);

/* The verdict of preflight probe `id` in the run record rec
 * (preflight.results[].verdict: "blocked", "escaped", ...), or NULL when
 * it did not run. Sealed credentials hold when "cred.run-tokens" is
 * "blocked". */
const char *al_demo_preflight_verdict(json_t *rec, const char *id);

/* GET url (post NULL) or POST post to it, plain HTTP on loopback without a
 * proxy, 10 s timeout; the parsed JSON answer (the caller decrefs) or NULL. */
json_t *al_demo_http(const char *url, const char *post);

/* `airlock demo --serve`, after al_demo_setup with d->serve: write
 * serve.yaml (the webhook on d->webhook_url, the status page on a free
 * port, state in the demo's private directory, acme/tally with the demo's
 * policy, runs with `agent`), start `airlock serve -c` (the binary
 * `airlock`) as the demo's last child, and wait for its listen.json
 * (d->status_url). -1 with err (d->log names serve's log). */
int al_demo_serve_start(al_demo *d, const char *airlock, const char *agent, al_error *err);

/* Label acme/tally#number with `airlock` as `user` on the forge (its admin
 * POST /hooks/label): the forge sends the signed `issues` webhook to
 * serve. *status: the HTTP status serve answered the forge with. */
int al_demo_serve_label(al_demo *d, int number, const char *user, int *status, al_error *err);

/* Wait (up to timeout_ms) until serve's run for acme/tally#number is
 * finished (succeeded, failed, refused, interrupted); *row: that row of
 * /runs.json (new reference). -1 with err (ETIMEDOUT with its last state). */
int al_demo_serve_wait(al_demo *d, int number, int timeout_ms, json_t **row, al_error *err);

/* Stop the children (SIGTERM, reverse order: the broker revokes first;
 * SIGKILL after 5 s) and remove the directory unless d->keep. A message
 * about what could not be removed (or "kept DIR") goes to note, else "". */
void al_demo_teardown(al_demo *d, char *note, size_t n);

/* The agent `airlock demo` runs (demo_report.c). */
typedef struct al_demo_agent {
  const char *path;   /* the agent program (absolute), when preset is NULL */
  const char *preset; /* a preset's name (ticket/presets.h), or NULL */
  const char *prefix; /* --agent-prefix DIR, or NULL */
  bool own;           /* the user's agent (--agent): its stdout is shown */
} al_demo_agent;

/* Run the demo's ticket (acme/tally#1, #2 when hostile, acme/tally#KEY
 * with d->ticket_kind) with agent a
 * against d->policy (ticket/ticket.h al_ticket_run; the agent's directory
 * read-only in the sandbox), then print al_demo_report and the closing
 * line to out; a failed run of the bundled agent is said on stderr with
 * err's message. *signo: the signal that interrupted the run, or 0.
 * Returns the exit status: 0 everything held (a PR made; for hostile,
 * only a PR got out), 1 not. */
int al_demo_ticket(al_demo *d, const al_demo_agent *a, bool hostile, FILE *out, int *signo,
                   al_error *err);

/* The verdicts on a finished run, printed to out: the hostile agent's
 * attempts (its words escaped, common/term.h), the PR, main untouched,
 * the PRs on the forge, the tokens dead, sealed credentials, what made the
 * output inert (hostile), the review notes. main_before: main's sha before
 * the run (al_demo_main_sha). Returns how many things did not hold (a
 * missing PR alone is the agent's failure, not counted). */
int al_demo_report(al_demo *d, const al_ticket_outcome *res, bool hostile, const char *main_before,
                   FILE *out);

/* `airlock demo --serve`, after al_demo_setup with d->serve: start serve
 * (al_demo_serve_start with `airlock` and `agent`), label acme/tally#1 as
 * alice, wait up to 15 minutes for the run (al_demo_serve_label, _wait),
 * and print serve's row and the closing line to out; each step and any
 * failure (with the end of the log that says why) on stderr. Returns 0
 * when the run succeeded with a PR, else 1. */
int al_demo_serve(al_demo *d, const char *airlock, const char *agent, FILE *out);

/* The last 20 lines of a log (up to 1 MiB read) to out: the directory
 * holding it is removed at the end (it holds the App keys), so a failure
 * says why before. Nothing when it cannot be read. */
void al_demo_show_log(const char *path, FILE *out);

/* `airlock demo --agent`: a preset or a program, and the model relay it
 * talks to (the command line's values, borrowed). */
typedef struct al_demo_flags {
  const char *agent;             /* NULL: the bundled agents */
  const al_agent_preset *preset; /* set by al_demo_check_flags when agent names one */
  const char *prefix;            /* --agent-prefix */
  const char *relay_upstream;    /* --relay-upstream URL */
  const char *relay_key_file;    /* --relay-key-file FILE */
  const char *relay_file;        /* --relay FILE: a YAML file with a `relay:` section */
  const char *relay_ca;          /* --relay-ca FILE: relay.ca_file */
  const char *relay_pin;         /* --relay-pin PIN: relay.pubkey_pin */
} al_demo_flags;

/* The rules between the flags of f (set f->preset, ticket/presets.h):
 * --relay-upstream with --relay-key-file, not with --relay; --relay-ca and
 * --relay-pin only with --relay-upstream, the pin's syntax
 * (al_policy_pubkey_pin_syntax); --agent-prefix and --relay* only with
 * --agent; a preset needs a relay. 0, or -1 with err (EINVAL) saying
 * which rule, for a usage error. */
int al_demo_check_flags(al_demo_flags *f, al_error *err);

#endif
