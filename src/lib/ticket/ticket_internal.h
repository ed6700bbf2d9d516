/* The ticket supervisor's internals, shared by its phase files:
 *   ticket.c         the driver: phases in order, then release, review, record
 *   ticket_policy.c  policy: load, check against the ticket
 *   ticket_audit.c   audit (through the broker), preflight (probe subset)
 *   ticket_lease.c   lease (two scoped tokens), release (revoke, confirm 401)
 *   ticket_sealed.c  sealed credentials: the forge gateway, the placeholder, the CA bundle
 *   ticket_agent.c   agent: environment, sandbox or container, decisions
 *   ticket_outputs.c safe outputs: the supervisor opens the one PR, comments on the ticket
 *   ticket_review.c  review: notes for the human reviewer
 *   ticket_record.c  the PR the run is judged by; the run record on disk
 *   ticket_util.c    phase lines, environment, memfds, decision lines
 * Not a public interface: nothing outside src/lib/run/ticket*.c includes it. */
#ifndef AL_RUN_TICKET_INTERNAL_H
#define AL_RUN_TICKET_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/client.h"
#include "forge/ghapi.h"
#include "policy/policy.h"
#include "ticket/presets.h"
#include "review/secrets.h"
#include "ticket/ticket.h"
#include "tickets/tickets.h"

#define AGENT_STDOUT_CAP (4u << 20)
#define PX_DECISIONS_CAP (8u << 20)
#define MAX_DECISIONS 20000

struct phase {
  const char *name;
  uint64_t ms;
  const char *status; /* "ok", "failed", "skipped", "warn" */
  char *detail;
  uint64_t req0;          /* al_ghapi_requests_sent() when the phase began */
  uint64_t requests;      /* this process's forge requests during the phase */
  al_ghapi_counts c0;     /* al_ghapi_counts_process() when the phase began */
  al_ghapi_counts sup;    /* this process's, split (set at the phase's end) */
  al_ghapi_counts broker; /* the broker's for this phase's leases (its answers) */
  bool ended;
};

struct ticket {
  const al_ticket_opts *o;
  al_policy *policy;
  char repo[AL_TICKET_REPO_MAX];
  unsigned long number;
  char run_id[33];
  char branch[256];
  json_t *rec;
  struct phase phases[16];
  size_t nphases;
  uint64_t t0;
  bool interrupted;
  bool unprotected;         /* the audit did not prove the budget and the user accepted that */
  bool decisions_truncated; /* docker backend: the proxy's decisions were cut or lost */
  bool security_refusal;    /* the audit or the preflight refused the run (exit 4) */
  bool timed_out;           /* the agent hit the wall-clock limit (exit 124) */
  int signo;                /* the signal that interrupted the run, or 0 */
  /* secrets: only between lease and sandbox start */
  char **env;
  size_t nenv;
  al_agent_plan plan; /* with --agent PRESET: argv, env, ro paths (ticket/presets.h) */
  al_lease *lease;
  char *relay_key; /* relay.key: broker: the lease's model_key (secret memory), until the relay
                      sandbox started */
  /* the review (ticket_review.c): the run's tokens as the scanner knows
   * them (fingerprint, length, type prefix: never a value); its own lease
   * and client, kept until the notes are posted after the record */
  al_secret_known run_tokens[AL_ROLE_COUNT];
  size_t n_run_tokens;
  al_lease *review_lease;
  al_ghapi *review_api;
  long long review_pr;    /* the PR the notes go on, 0 when none */
  bool review_read_only;  /* the broker gave no pull_requests: write: notes not posted */
  char record_sha256[65]; /* of the record file as written, "" before */
  /* the agent phase's sealed memfds (closed by the driver): the proxy's
   * decisions, the agent's stdout, the relay's call log; -1 when not made */
  int decisions_fd, out_fd, relay_fd;
  /* sealed mode (ticket_sealed.c): the agent's placeholder credential (not
   * a secret outside this run's gateway), the gateway while it runs, its
   * decision lines (a sealed memfd, -1 when none) */
  char placeholder[65];
  /* GitLab: the project's ci_config_path (forge/gitlab.h al_gl_project_id,
   * read at the gateway's start in sealed mode; "" for none or env mode),
   * compared by the CI-definition guard (ticket_outputs.c gl_ci_guard) */
  char gl_ci_config_path[256];
  struct al_gateway *gateway;
  int gw_fd;
  /* the CA bundle put into the sandbox (system CAs + forge.ca_file + the
   * gateway's run CA), malloc'd */
  char *ca_bundle;
  size_t ca_bundle_len;
  struct tk_fence *fence; /* `--fence` (ticket_fence.c), or NULL */
  /* the ticket in its system (ticket_vendor.c, issue #31): its name as
   * branches show it ("7" for GitHub issue #7, "PROJ-7"), and for Jira or
   * Linear the parsed key, the vendor credential (secret memory, from
   * ticket.token_file, until the outputs are done) and what was read */
  char slug[AL_TK_KEY_MAX];
  al_tk_target tk;
  char *tk_token;
  al_tk_ticket tk_read;
};

/* A Jira or Linear ticket (ticket_vendor.c, issue #31). */
bool tk_vendor(const struct ticket *t); /* the policy's ticket is jira or linear */
/* After the policy: key (from OWNER/REPO#KEY, "" when a number was given)
 * against the policy's ticket kind and project/team; fills t->tk,
 * t->slug and t->number, and the record's ticket {kind, key}. */
int tk_vendor_target(struct ticket *t, const char *key, al_error *err);
/* Phase "ticket": read ticket.token_file and the ticket (al_tk_read). */
int tk_do_vendor_read(struct ticket *t, al_error *err);
/* The ticket's title as read, or NULL. */
const char *tk_vendor_title(const struct ticket *t);
/* Post text (made inert by the caller) as the run's comment on the
 * ticket; the record's outputs.ticket_comment {url, body} or {error}. */
void tk_vendor_comment(struct ticket *t, const char *text, json_t *outputs);
/* Wipe the credential, free what was read. Idempotent. */
void tk_vendor_end(struct ticket *t);

/* Fencing (ticket_fence.c): read the token and start the heartbeat;
 * before the outputs, check the token, the starter's Lease and the
 * ticket's open PRs (-1 with ESTALE "fenced: ..." when stale); stop. */
struct al_ghapi;
int tk_fence_begin(struct ticket *t, al_error *err);
int tk_fence_check(struct ticket *t, struct al_ghapi *api, const char *tok, al_error *err);
void tk_fence_end(struct ticket *t);

/* Where the CA bundle is inside the sandbox, per backend. */
#define TK_CA_BUNDLE_NATIVE "/run/airlock/ca-bundle.pem"
#define TK_CA_BUNDLE_DOCKER_NAME "ca-bundle.pem"
#define TK_CA_BUNDLE_DOCKER "/tmp/airlock/" TK_CA_BUNDLE_DOCKER_NAME
/* The host's system trust store, the first of these that exists. */
#define TK_SYSTEM_CAS "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"

/* A thread copying the agent's stderr to ours, sanitized, capped. */
struct stderr_forward {
  int fd;
  pthread_t th;
  bool running;
};

/* Progress: begin a phase (returns its start, ms) and end it with a status
 * ("ok", "failed", "skipped", "warn") and a detail line (printed unless -q,
 * redacted). */
uint64_t tk_phase_begin(struct ticket *t, const char *name);
/* Add the broker's forge requests q (a grant's or a revocation's
 * "requests") to the phase running now (the last begun). */
void tk_phase_add_broker(struct ticket *t, const al_ghapi_counts *q);
/* The record's "requests" (ticket_requests.c, docs/run-record.md): every
 * process's forge requests per phase, the gateway's from the decisions in
 * t->rec. A new object. */
json_t *tk_requests_json(const struct ticket *t);
/* The ETag cache of t->repo on the API at api (forge/etags.h), beside the
 * run records (ticket_requests.c; docs/audit.md "Conditional reads"), or
 * NULL when there is no such place. Free with al_etags_free. */
al_etags *tk_etags_open(const struct ticket *t, const char *api);
/* A client of the policy's forge API (options go, the deadline, the pins)
 * whose GETs are conditional on t->repo's ETag cache (*et, opened here), or
 * NULL (then *et is NULL too). tk_conditional_close saves the cache and
 * frees both (NULLs are fine). */
al_ghapi *tk_conditional_client(const struct ticket *t, const al_ghapi_opts *go,
                                uint64_t deadline_ms, const char *const *resolves, al_etags **et);
void tk_conditional_close(al_ghapi *api, al_etags *et);
__attribute__((format(printf, 4, 5))) void tk_phase_end(struct ticket *t, uint64_t start,
                                                        const char *status, const char *fmt, ...);
/* Append one "NAME=value" to the agent's environment (t->env). */
__attribute__((format(printf, 2, 3))) void tk_env_add(struct ticket *t, const char *fmt, ...);
/* Wipe and free every environment string (ctx: struct ticket *). */
void tk_wipe_env(void *ctx);
/* What was written to a sealed memfd (up to its offset), NULs shown as '?';
 * malloc'd, *len its length. */
char *tk_read_memfd(int fd, size_t *len);
/* JSON lines to an array of objects (at most MAX_DECISIONS; a line that is
 * not an object becomes {"unparsed": line}). */
json_t *tk_decisions_from(const char *text);
/* The same for the proxy's decisions: past MAX_DECISIONS only single
 * "deny" lines (and lines that are not objects) are left out, counted in
 * *skipped; every other line is kept. */
json_t *tk_decisions_from_counted(const char *text, size_t *skipped);
/* Record what the proxy's closing summary (proxy/decisions.h) says about
 * decisions: `proxy_decision_counts` (exact, by decision and reason),
 * `proxy_decisions_truncated` with `proxy_decisions_dropped` and
 * `proxy_decisions_aggregated` when the log was capped, or when the
 * summary is missing (the proxy did not finish), or skipped > 0 lines were
 * left out here. Returns the number of denied connections (the summary's,
 * else those listed). ticket_decisions.c */
size_t tk_decisions_account(struct ticket *t, json_t *decisions, size_t skipped);
/* The current time, ISO 8601 UTC (malloc'd). */
char *tk_iso_now(void);
/* curl --resolve entries from the policy's pins (NULL-terminated, free with
 * tk_free_strv). */
char **tk_pin_resolves(const al_policy *p);
void tk_free_strv(char **v);
/* A forge client's deadline for a phase after the agent (issue #27 item 5):
 * al_now_ms() + want_ms, but never later than TK_LEASE_MARGIN_MS before the
 * lease's end (al_lease_end_ms), so that no wait, a rate limit's included,
 * outlives the tokens the phase uses. l may be NULL (no lease: want_ms). */
#define TK_LEASE_MARGIN_MS 5000u
uint64_t tk_deadline_in_lease(const al_lease *l, uint64_t want_ms);
int tk_stderr_forward_start(struct stderr_forward *sr, int fd);
void tk_stderr_forward_join(struct stderr_forward *sr);

/* The phases. Each returns 0 or -1 with err, and records itself in t->rec. */
int tk_do_policy(struct ticket *t, al_error *err);
/* The model relay's upstreams, checked once before the lease and the agent
 * (phase "relay-check", ticket_audit.c): TCP + TLS + trust, within
 * TK_RELAY_CHECK_MS (or relay.timeouts.connect when shorter) each. */
#define TK_RELAY_CHECK_MS 5000u
int tk_do_relay_check(struct ticket *t, al_error *err);
int tk_do_audit(struct ticket *t, al_error *err);
int tk_do_lease(struct ticket *t, al_error *err);
int tk_do_preflight(struct ticket *t, al_error *err);
/* sealed mode: start the gateway with the lease's tokens (phase
 * "gateway"); no-op in env mode. */
int tk_do_gateway(struct ticket *t, al_error *err);
/* Stop the gateway (if running) and put its decisions into the record:
 * gateway_decisions[] and gateway_summary {requests, allowed, refused,
 * refused_by_reason}. Idempotent. */
void tk_gateway_finish(struct ticket *t, al_ticket_outcome *res);
/* The agent's environment into t->env (wipe with tk_wipe_env): sealed,
 * the placeholder under every token name; env, the lease's tokens. */
void tk_build_env(struct ticket *t);
/* Build t->ca_bundle (system CAs, forge.ca_file, the run CA). */
int tk_ca_bundle(struct ticket *t, al_error *err);
int tk_do_agent(struct ticket *t, al_ticket_outcome *res, al_error *err);
/* With --agent PRESET: find its program and build t->plan (ticket/presets.h),
 * before any token is minted; the record's agent gets the preset and the
 * resolved argv. 0 without a preset. */
int tk_agent_plan(struct ticket *t, al_error *err);
/* Safe outputs (ticket_outputs.c): after the agent, before the release:
 * the supervisor opens the run's one PR from the run branch (sealed; env:
 * unless the agent opened it) and comments on the ticket with its link.
 * 0 (also when the agent pushed nothing: no PR, the run exits 3), or -1
 * with err. */
int tk_do_outputs(struct ticket *t, al_ticket_outcome *res, al_error *err);
/* An attempt that ends without a PR, with its lease alive: delete its run
 * branch when it exists and no PR from it is open (ticket_outputs.c);
 * the record's `branch_cleanup` {branch, status: deleted | absent | kept |
 * failed, detail}. Never fails the run. */
void tk_do_cleanup(struct ticket *t, const al_ticket_outcome *res);
int tk_do_release(struct ticket *t, al_ticket_outcome *res, al_error *err);
void tk_do_review(struct ticket *t);
/* After the record is written: post the notes (review/notes.h) on the PR
 * as one comment with the review lease's git token; a line says where or
 * why not. Then tk_review_close releases that lease. */
void tk_post_review_notes(struct ticket *t);
void tk_review_close(struct ticket *t);
void tk_verify_pr(struct ticket *t, al_ticket_outcome *res);
int tk_write_record(struct ticket *t, al_ticket_outcome *res, al_error *err);
/* Where the run record goes: --record, else $XDG_STATE_HOME/airlock/runs/
 * (or ~/.local/state/airlock/runs/) RUN_ID.json, into path (n bytes). */
int tk_record_path(const struct ticket *t, char *path, size_t n, al_error *err);
/* Whether the record can be written (issue #26 item 7): its directories
 * exist or are made, the file opens for writing when it exists (never
 * truncated here), and `room` bytes fit beside it (a probe file,
 * written, synced, removed). -1 with err naming the path and the errno
 * (EROFS, ENOSPC, ENOTDIR, EACCES...). Called before the audit and the
 * lease, and again before the outputs with the record's size so far. */
int tk_check_record(struct ticket *t, size_t room, al_error *err);
/* The exit status of the run (common/exitcodes.h) from how it ended: rc is
 * the driver's result so far. */
int tk_exit_code(const struct ticket *t, const al_ticket_outcome *res, int rc);

#endif
