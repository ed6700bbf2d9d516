/* The ticket supervisor's driver: the phases in order (see ticket.h and
 * ticket_internal.h), whatever happens the release, review and record. */
#include <ctype.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "common/secmem.h"
#include "common/exitcodes.h"
#include "common/log.h"
#include "common/owned.h"
#include "common/util.h"
#include "policy/policy.h"
#include "forge/names.h"
#include "tickets/tickets.h"

int al_ticket_parse_target(const char *s, char *repo, size_t repolen, unsigned long *number,
                           al_error *err)
{
  return al_ticket_parse_target_key(s, repo, repolen, number, NULL, 0, err);
}

int al_ticket_parse_target_key(const char *s, char *repo, size_t repolen, unsigned long *number,
                               char *key, size_t keylen, al_error *err)
{
  const char *hash = strrchr(s, '#');
  if (!hash)
    return al_make_error(err, 0, "ticket `%s`: expected OWNER/REPO#NUMBER", s);
  size_t rl = (size_t)(hash - s);
  char r[AL_TICKET_REPO_MAX];
  const char *why = "a repository is OWNER/REPO";
  if (rl >= sizeof r || rl >= repolen)
    return al_make_error(err, 0, "ticket `%s`: OWNER/REPO is at most %zu bytes", s,
                         (sizeof r < repolen ? sizeof r : repolen) - 1);
  memcpy(r, s, rl);
  r[rl] = '\0';
  /* a GitHub OWNER/REPO, or a GitLab project's full path (GROUP/SUB/
   * PROJECT); which one the forge takes is the policy's forge.kind, checked
   * once it is read (al_ticket_repo_for_forge) */
  size_t pieces = 0;
  const char *glwhy = NULL;
  if (al_repo_name_check(r, &why) < 0 && al_gitlab_path_check(r, &pieces, &glwhy) < 0)
    return al_make_error(err, 0, "ticket `%s`: %s (or, with forge.kind: gitlab, %s)", s, why,
                         glwhy);
  /* the README's placeholder typed as it stands would otherwise pass both
   * rules (OWNER/REPO a name, N a one-letter key) and fail later, after the
   * policy was read */
  if (strcmp(r, "OWNER/REPO") == 0)
    return al_make_error(err, 0,
                         "ticket `%s`: OWNER/REPO is the placeholder; name your repository and "
                         "its issue, like acme/widget#42 (or acme/widget#ENG-42 for a Jira or "
                         "Linear ticket)",
                         s);
  const char *n = hash + 1;
  if (key && keylen)
    key[0] = '\0';
  if (key && *n >= 'A' && *n <= 'Z') {
    /* a Jira or Linear key: its shape here, by the one key rule
     * (tickets/target.c al_tk_key_parse), so a mistyped one is a usage
     * error; which vendor, and its project, once the policy says
     * (al_tk_target_parse) */
    char proj[AL_TK_PROJECT_MAX];
    unsigned long kn;
    al_error ke = {0};
    if (al_tk_key_parse(n, "Jira or Linear", proj, &kn, &ke) < 0)
      return al_make_error(err, 0,
                           "ticket `%s`: after `#` a NUMBER (a forge issue) or a Jira or Linear "
                           "KEY-N: %s",
                           s, ke.msg);
    if (strlen(n) >= keylen)
      return al_make_error(err, 0, "ticket `%s`: the key is at most %zu bytes", s, keylen - 1);
    memcpy(repo, r, rl + 1);
    snprintf(key, keylen, "%s", n);
    *number = 0;
    return 0;
  }
  if (!*n || *n == '0' || strlen(n) > 9)
    return al_make_error(err, 0, "ticket `%s`: NUMBER must be 1 to 999999999", s);
  for (const char *p = n; *p; p++)
    if (!isdigit((unsigned char)*p))
      return al_make_error(err, 0, "ticket `%s`: NUMBER must be decimal digits", s);
  memcpy(repo, r, rl + 1);
  *number = strtoul(n, NULL, 10);
  return 0;
}

int al_ticket_repo_for_forge(const char *repo, al_forge_kind kind, al_error *err)
{
  const char *why = NULL;
  size_t pieces = 0;
  if (kind == AL_FORGE_GITLAB) {
    if (al_gitlab_path_check(repo, &pieces, &why) < 0)
      return al_make_error(err, EINVAL, "the ticket's project `%s`: %s", repo, why);
    return 0;
  }
  if (al_repo_name_check(repo, &why) == 0)
    return 0;
  if (al_gitlab_path_check(repo, &pieces, &why) == 0)
    return al_make_error(err, EINVAL,
                         "the ticket's repository `%s` is a GitLab project's path (GROUP/SUB/"
                         "PROJECT), which only a policy with forge.kind: gitlab takes; a %s "
                         "repository is OWNER/REPO: one `/`",
                         repo, al_forge_kind_names[kind]);
  return al_make_error(err, EINVAL, "the ticket's repository `%s`: %s", repo, why);
}

/* Interrupted: a SIGINT/SIGTERM/SIGHUP is pending (blocked since the
 * start), or one already reached a sandbox wait or the caller
 * (al_term_signal_noted): the run stops at the next phase boundary. */
static bool interrupted(struct ticket *t)
{
  sigset_t p;
  if (!t->signo && sigpending(&p) == 0) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < AL_ARRAY_SIZE(sigs); i++)
      if (sigismember(&p, sigs[i])) {
        t->signo = sigs[i];
        break;
      }
  }
  if (!t->signo)
    t->signo = al_term_signal_noted();
  if (t->signo)
    t->interrupted = true;
  return t->interrupted;
}

/* The record before the output (issue #26 item 7): a run whose record
 * cannot be written makes no lease and opens no PR. The first check (no
 * record yet) probes 256 KiB; the one before the outputs twice the record
 * so far and 256 KiB more. */
#define RECORD_PROBE (256u << 10)
#define RECORD_PROBE_MAX (64u << 20)
static int record_ready(struct ticket *t, size_t room, al_error *err)
{
  if (tk_check_record(t, room, err) == 0)
    return 0;
  char m[AL_ERROR_MSG_MAX];
  snprintf(m, sizeof m, "%s", err->msg);
  return al_error_set(err, err->code ? err->code : EIO,
                      "%.900s; no pull request is opened without its record", m);
}

static size_t record_room(json_t *rec)
{
  char *s = json_dumps(rec, JSON_COMPACT);
  size_t n = s ? strlen(s) : 0;
  free(s);
  n = 2 * n + RECORD_PROBE;
  return n > RECORD_PROBE_MAX ? RECORD_PROBE_MAX : n;
}

static void block_signals(void)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, NULL);
}

int al_ticket_run(const al_ticket_opts *o, al_ticket_outcome *res, al_error *err)
{
  memset(res, 0, sizeof *res);
  res->agent_status = -1;
  res->exit_code = AL_EXIT_FAILED; /* until the driver knows better */
  struct ticket t = {
      .o = o, .t0 = al_now_ms(), .decisions_fd = -1, .out_fd = -1, .relay_fd = -1, .gw_fd = -1};
  block_signals();
  /* A closed stderr or stdout (`| head`), or a dead broker's socket, is
   * EPIPE, never a SIGPIPE that kills us before the release and the record. */
  struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old_pipe);
  if (al_random_hex(t.run_id, 8, err) < 0)
    return -1;
  snprintf(res->run_id, sizeof res->run_id, "%s", t.run_id);
  t.rec = json_object();
  al_autofree char *started = tk_iso_now();
  json_object_set_new(t.rec, "schema", json_string("airlock.run-record/1"));
  json_object_set_new(t.rec, "run_id", json_string(t.run_id));
  json_object_set_new(t.rec, "started_at", json_string(started));
  json_object_set_new(t.rec, "accept_unprotected", json_boolean(o->accept_unprotected));
  json_object_set_new(t.rec, "unprotected", json_false());
  json_t *argv = json_array();
  for (char *const *a = o->agent_argv; a && *a; a++)
    json_array_append_new(argv, json_string(*a));
  json_object_set_new(t.rec, "agent", json_pack("{s:o}", "argv", argv));

  int rc = -1;
  char key[AL_TK_KEY_MAX] = ""; /* clang-analyzer cannot see the parse set it */
  if (al_ticket_parse_target_key(o->target, t.repo, sizeof t.repo, &t.number, key, sizeof key,
                                 err) < 0)
    goto done;
  /* a key's number is set once it is checked (tk_vendor_target) */
  json_object_set_new(
      t.rec, "ticket",
      key[0] ? json_pack("{s:s, s:s}", "repo", t.repo, "key", key)
             : json_pack("{s:s, s:I}", "repo", t.repo, "number", (json_int_t)t.number));
  if (tk_do_policy(&t, err) < 0 || tk_vendor_target(&t, key, err) < 0 || tk_agent_plan(&t, err) < 0)
    goto done;
  res->credentials_mode = al_cred_mode_name(t.policy->credentials.mode);
  /* al_docker_run refuses it too; here it is refused before any token is
   * minted */
  if (o->docker && t.policy->relay.present) {
    al_make_error(err, ENOTSUP,
                  "%s: the docker backend does not run the model relay (policy `relay`); use "
                  "the native backend",
                  o->policy_path);
    goto done;
  }
  json_object_set_new(t.rec, "backend", json_string(o->docker ? "docker" : "native"));
  snprintf(t.branch, sizeof t.branch, "%s%s-%.8s", t.policy->branch_prefix, t.slug, t.run_id);
  if (tk_fence_begin(&t, err) < 0)
    goto done;

  if (record_ready(&t, RECORD_PROBE, err) < 0)
    goto done;
  /* a Jira or Linear ticket: read with the vendor credential, before any
   * token is minted (phase "ticket"; no-op for a GitHub issue) */
  if (interrupted(&t) || tk_do_vendor_read(&t, err) < 0)
    goto done;
  if (interrupted(&t) || tk_do_relay_check(&t, err) < 0)
    goto done;
  if (interrupted(&t) || tk_do_audit(&t, err) < 0)
    goto done;
  if (interrupted(&t) || tk_do_lease(&t, err) < 0)
    goto done;
  if (interrupted(&t) || tk_do_gateway(&t, err) < 0)
    goto done;
  if (interrupted(&t) || tk_do_preflight(&t, err) < 0)
    goto done;
  if (interrupted(&t))
    goto done;

  {
    int ar = tk_do_agent(&t, res, err);
    interrupted(&t); /* during the agent: the sandbox wait took the signal */
    tk_gateway_finish(&t, res);
    /* safe outputs: the supervisor's writes, with the tokens still alive */
    if (ar == 0 && !interrupted(&t) && record_ready(&t, record_room(t.rec), err) == 0 &&
        tk_do_outputs(&t, res, err) == 0)
      rc = 0;
  }

done:
  tk_gateway_finish(&t, res);
  res->unprotected = t.unprotected;
  tk_wipe_env(&t);
  tk_do_cleanup(&t, res); /* no PR: the run branch goes, with the lease still alive */
  {
    al_error re = {0};
    if (tk_do_release(&t, res, &re) < 0 && rc == 0) {
      *err = re;
      rc = -1;
    }
  }
  if (t.policy && json_object_get(t.rec, "lease"))
    tk_do_review(&t);
  if (json_object_get(t.rec, "pull_request_reported") || json_object_get(t.rec, "outputs"))
    tk_verify_pr(&t, res);
  (void)interrupted(&t);
  if (t.interrupted) {
    if (rc == 0)
      rc = -1;
    al_make_error(err, EINTR, "interrupted by %s", al_signal_name(t.signo));
  }
  if (rc < 0)
    json_object_set_new(t.rec, "error", json_string(err->msg));
  al_autofree char *ended = tk_iso_now();
  json_object_set_new(t.rec, "ended_at", json_string(ended));
  /* the status `airlock ticket` exits with (when the record is written;
   * a record that cannot be written is not there to say otherwise) */
  json_object_set_new(t.rec, "exit_status", json_integer(tk_exit_code(&t, res, rc)));
  {
    al_error we = {0};
    if (tk_write_record(&t, res, &we) < 0) {
      al_error_log("%s", we.msg);
      if (rc == 0) {
        *err = we;
        rc = -1;
      }
    }
  }
  res->exit_code = tk_exit_code(&t, res, rc);
  tk_post_review_notes(&t);
  tk_review_close(&t);
  if (t.decisions_fd >= 0)
    close(t.decisions_fd);
  if (t.out_fd >= 0)
    close(t.out_fd);
  if (t.relay_fd >= 0)
    close(t.relay_fd);
  if (t.gw_fd >= 0)
    close(t.gw_fd);
  free(t.ca_bundle);
  al_secret_free(t.relay_key);
  for (size_t i = 0; i < t.nphases; i++)
    free(t.phases[i].detail);
  tk_vendor_end(&t);
  tk_fence_end(&t); /* the heartbeat goes on until the record is written */
  json_decref(t.rec);
  al_policy_free(t.policy);
  al_agent_plan_free(&t.plan);
  sigaction(SIGPIPE, &old_pipe, NULL);
  return rc;
}
