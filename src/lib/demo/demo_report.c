/* What `airlock demo` runs and says after the environment is up: the
 * ticket with the bundled or the user's agent, the verdicts read from the
 * run record and the forge, serve's row for --serve (demo/demo.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/exitcodes.h"
#include "common/owned.h"
#include "common/term.h"
#include "common/util.h"
#include "demo/demo.h"
#include "demo/internal.h"
#include "policy/policy.h"
#include "review/notes.h"

/* "airlock demo: " and a line on stderr, after what out holds so far. */
static void say_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_err(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fputs("airlock demo: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void al_demo_show_log(const char *path, FILE *out)
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
  fprintf(out, "%s", start);
  free(text);
}

/* Where the run stopped, from the record's phases: "phase NAME STATUS:
 * DETAIL" of the last phase that did not end ok, or "" (no record, or
 * every phase ok). */
static void stopped_at(json_t *rec, char *buf, size_t len)
{
  buf[0] = '\0';
  json_t *phases = json_object_get(rec, "phases");
  for (size_t i = json_array_size(phases); i-- > 0;) {
    json_t *p = json_array_get(phases, i);
    const char *st = json_string_value(json_object_get(p, "status"));
    if (!st || strcmp(st, "ok") == 0)
      continue;
    const char *name = json_string_value(json_object_get(p, "name"));
    const char *detail = json_string_value(json_object_get(p, "detail"));
    al_autofree char *d = al_term_escape_line(detail ? detail : "");
    snprintf(buf, len, "phase %s %s%s%.200s", name ? name : "?", st, d[0] ? ": " : "", d);
    return;
  }
  if (rec) {
    json_t *last = json_array_get(phases, json_array_size(phases) - 1);
    const char *name = json_string_value(json_object_get(last, "name"));
    const char *sig = json_string_value(json_object_get(rec, "signal"));
    if (json_is_true(json_object_get(rec, "interrupted")))
      snprintf(buf, len, "interrupted by %s%s%s", sig ? sig : "a signal",
               name ? " after phase " : "", name ? name : "");
    else
      snprintf(buf, len, "the run stopped before the agent: see the run record");
  }
}

/* What the record says made the output inert before a human looks (issue
 * #26): the PR text the agent declared, as the rewriter changed it
 * (outputs.rewritten), and the repository's CI, as the audit judged it
 * (the ci.* criteria). Returns 1 when one of them did not hold. */
static int report_inert(json_t *rec, bool posted, FILE *out)
{
  json_t *rw = json_object_get(json_object_get(rec, "outputs"), "rewritten");
  json_t *report = json_object_get(json_object_get(rec, "audit"), "report");
  static const char *const rules[] = {"mentions", "keywords", "images", "html", "links"};
  size_t n[5] = {0};
  for (size_t i = 0; i < 5; i++)
    n[i] = (size_t)json_integer_value(json_object_get(json_object_get(rw, "title"), rules[i])) +
           (size_t)json_integer_value(json_object_get(json_object_get(rw, "body"), rules[i]));
  bool text_ok = json_is_object(rw) || !posted;
  if (json_is_object(rw))
    fprintf(out,
            "  %-9s the PR text the agent declared was made inert before it was posted: %zu "
            "mention(s), %zu closing keyword(s), %zu image(s), %zu HTML tag(s), %zu outside "
            "link(s) rewritten; airlock's header first, the agent's text quoted below it\n",
            "held", n[0], n[1], n[2], n[3], n[4]);
  else
    fprintf(out, "  %-9s the PR text: %s\n", posted ? "CHECK" : "not run",
            posted ? "a pull request was opened but the record has no rewrite of its text"
                   : "no pull request was opened, so no text was posted");
  if (!json_is_object(report)) {
    /* the run stopped before its audit finished: nothing was judged */
    fprintf(out, "  %-9s CI: not judged: the run stopped before its audit finished\n", "not run");
    return text_ok ? 0 : 1;
  }
  size_t pass = 0, total = 0;
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
  fprintf(out,
          "  %-9s CI: no workflow of the base branch runs the agent's push or PR with a secret, "
          "an OIDC identity, a write token or a self-hosted runner before a human approves "
          "(audit: %zu of %zu ci.* criteria PASS; docs/audit.md)\n",
          total && pass == total ? "held" : "CHECK", pass, total);
  return text_ok && total && pass == total ? 0 : 1;
}

/* The hostile agent's attempts, each in its own words (escaped), and
 * beside it the outcome; returns how many succeeded that may not. */
static int report_attempts(json_t *rec, const al_ticket_outcome *res, FILE *out)
{
  int bad = 0;
  fprintf(out, "What the prompt-injected agent tried, in its own words (each line after the "
               "gutter is the agent's claim, not airlock's verdict):\n\n");
  json_t *atts = json_object_get(rec, "agent_attempts");
  if (!json_array_size(atts))
    fprintf(out, "  (nothing: %s)\n",
            res->agent_status < 0 ? "the agent never ran" : "the agent reported no attempt");
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
      fprintf(out, AL_TERM_AGENT_GUTTER "%-9s %s\n            %s\n", "kept", what,
              res->credentials_mode && strcmp(res->credentials_mode, "sealed") == 0
                  ? "worthless: all it held was the run's placeholder (sealed), and /tmp and "
                    "~/.cache vanished with the sandbox"
              : res->tokens_dead ? "worthless: the token was revoked and confirmed dead as the run "
                                   "ended; /tmp and ~/.cache vanished with the sandbox"
                                 : "THE TOKEN IS NOT CONFIRMED DEAD");
    else
      fprintf(out, AL_TERM_AGENT_GUTTER "%-9s %s\n" AL_TERM_AGENT_GUTTER "          %s\n",
              outcome ? outcome : "?", what, ev);
    if (outcome && strcmp(outcome, "succeeded") == 0 && !allowed)
      bad++;
  }
  fprintf(out, "\nJudged by airlock from outside, after the run (the record, the forge):\n\n");
  return bad;
}

/* Sealed credentials: the probe's verdict, the gateway's counts, who
 * opened the PR; returns 1 when no real token was not confirmed absent. */
static int report_sealed(json_t *rec, const al_ticket_outcome *res, FILE *out)
{
  const char *tv = al_demo_preflight_verdict(rec, "cred.run-tokens");
  bool none = tv && strcmp(tv, "blocked") == 0;
  if (!json_object_get(rec, "lease") || res->agent_status < 0) {
    /* no lease, or no agent in the sandbox: nothing there could use a
     * token, whatever an interrupted preflight said */
    fprintf(out, "  %-9s credentials sealed: %s\n", "not run",
            json_object_get(rec, "lease") ? "the agent never ran (the preflight's verdict: "
                                            "see the record)"
                                          : "the run stopped before any token was leased");
    return 0;
  }
  fprintf(out,
          "  %-9s credentials sealed: no real token anywhere in the sandbox (cred.run-tokens "
          "%s); the agent held a placeholder\n",
          none ? "held" : "CHECK", tv ? tv : "not run");
  fprintf(out, "  %-9s the forge gateway decided %zu request(s) and refused %zu%s%s%s\n", "held",
          res->gateway_requests, res->gateway_refused, res->gateway_refused_by[0] ? " (" : "",
          res->gateway_refused_by, res->gateway_refused_by[0] ? ")" : "");
  if (res->pr_by_supervisor || res->pr_url[0])
    fprintf(out, "  %-9s the pull request was opened by %s\n",
            res->pr_by_supervisor ? "held" : "CHECK",
            res->pr_by_supervisor ? "the supervisor, not the agent" : "someone else");
  return none ? 0 : 1;
}

/* Does a file under dir (not below skip: the private directory) hold
 * needle? Regular files up to 8 MiB read; the first one found into hit. */
static bool tree_holds(const char *dir, const char *skip, const char *needle, char *hit, size_t n)
{
  DIR *dh = opendir(dir);
  if (!dh)
    return false;
  bool found = false;
  struct dirent *e;
  while (!found && (e = readdir(dh))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (strcmp(p, skip) == 0 || lstat(p, &st) < 0)
      continue;
    if (S_ISDIR(st.st_mode))
      found = tree_holds(p, skip, needle, hit, n);
    else if (S_ISREG(st.st_mode)) {
      char *text = NULL;
      size_t len = 0;
      al_error e2 = {0};
      if (al_read_file(p, 8u << 20, &text, &len, &e2) == 0 &&
          memmem(text, len, needle, strlen(needle))) {
        found = true;
        snprintf(hit, n, "%s", p);
      }
      free(text);
    }
  }
  closedir(dh);
  return found;
}

/* --ticket: the comment on the Jira or Linear ticket, the vendor
 * credential kept out of the sandbox, the gateway's decisions per host.
 * Returns how many of these did not hold. */
static int report_vendor(al_demo *d, json_t *rec, const al_ticket_outcome *res, FILE *out)
{
  int bad = 0;
  json_t *cm = json_object_get(json_object_get(rec, "outputs"), "ticket_comment");
  const char *url = json_string_value(json_object_get(cm, "url"));
  /* the double writes what it took (its state file) as it stops, after
   * this summary: the record's URL is the double's answer to the post */
  bool comment_ok = url && *url && !json_object_get(cm, "error");
  fprintf(out, "  %-9s one comment on %s ticket %s: %s\n", comment_ok ? "held" : "MISSING",
          d->ticket_kind, d->ticket_key, url && *url ? url : "none in the record");
  if (!comment_ok && res->pr_url[0])
    bad++;
  /* where the sandbox could look: the demo's shared directory (policy,
   * CAs), the agent's stdout, the record; the credential file is in the
   * private directory, never bound */
  const char *tv = al_demo_preflight_verdict(rec, "cred.run-tokens");
  char hit[PATH_MAX] = "";
  bool in_tree = tree_holds(d->dir, d->secret, d->ticket_secret, hit, sizeof hit);
  bool in_out = res->agent_stdout && strstr(res->agent_stdout, d->ticket_secret);
  al_autofree char *rtext = rec ? json_dumps(rec, 0) : NULL;
  bool in_rec = rtext && strstr(rtext, d->ticket_secret);
  bool sealed = tv && strcmp(tv, "blocked") == 0;
  bool clean = !in_tree && !in_out && !in_rec;
  fprintf(out,
          "  %-9s the %s credential never entered the sandbox: cred.run-tokens %s; its value is "
          "in %s\n",
          sealed && clean ? "held" : (clean ? "CHECK" : "BROKEN"), d->ticket_kind,
          tv ? tv : "not run",
          clean ? "no file of the sandbox's view (the demo's directory), the agent's output or "
                  "the record"
                : (in_tree  ? hit
                   : in_out ? "the agent's output"
                            : "the record"));
  if (!clean || !sealed)
    bad++;
  /* the gateway's decisions, counted per host */
  char hosts[4][64] = {{0}};
  size_t counts[4] = {0}, nh = 0, i;
  json_t *x;
  json_array_foreach(json_object_get(rec, "gateway_decisions"), i, x)
  {
    const char *h = json_string_value(json_object_get(x, "host"));
    const char *ev = json_string_value(json_object_get(x, "event"));
    if (!h || (ev && strcmp(ev, "request") != 0))
      continue;
    size_t k = 0;
    while (k < nh && strcmp(hosts[k], h) != 0)
      k++;
    if (k == nh && nh < 4)
      snprintf(hosts[nh++], sizeof hosts[0], "%s", h);
    if (k < nh)
      counts[k]++;
  }
  bool forge_seen = false, ticket_seen = false;
  char line[512] = "";
  size_t used = 0;
  for (size_t k = 0; k < nh; k++) {
    forge_seen |= strcmp(hosts[k], "api.forge.test") == 0 || strcmp(hosts[k], "forge.test") == 0;
    ticket_seen |= strcmp(hosts[k], d->ticket_host) == 0;
    int w =
        snprintf(line + used, sizeof line - used, "%s%s %zu", k ? ", " : "", hosts[k], counts[k]);
    if (w > 0 && (size_t)w < sizeof line - used)
      used += (size_t)w;
  }
  fprintf(out, "  %-9s the gateway's decisions per host: %s\n",
          forge_seen && ticket_seen ? "held" : "CHECK", nh ? line : "none in the record");
  if (!forge_seen || !ticket_seen)
    bad++;
  return bad;
}

/* --forge gitlab: the merge request is a Draft that removes its branch
 * (the forge's own list); the GitLab audit held; a review's error said.
 * Returns how many of these did not hold. */
static int report_gitlab(json_t *rec, const al_ticket_outcome *res, json_t *mrs, FILE *out)
{
  int bad = 0;
  json_t *mr = json_array_size(mrs) == 1 ? json_array_get(mrs, 0) : NULL;
  bool draft = mr && json_is_true(json_object_get(mr, "draft"));
  bool rsb = mr && json_is_true(json_object_get(mr, "force_remove_source_branch"));
  if (res->pr_url[0]) {
    fprintf(out, "  %-9s the merge request is a Draft that removes its branch when merged: %s\n",
            draft && rsb ? "held" : "BROKEN", draft && rsb ? "yes" : "no");
    bad += !(draft && rsb);
  }
  json_t *a = json_object_get(rec, "audit");
  bool held = json_is_true(json_object_get(a, "holds"));
  fprintf(out, "  %-9s the GitLab audit: %s\n", held ? "held" : "BROKEN",
          held ? "the escape budget holds (protected main, approvals, push rule, CI)"
               : "the escape budget was not proven (see the audit line above)");
  bad += !held;
  const char *rverr = json_string_value(json_object_get(json_object_get(rec, "review"), "error"));
  if (rverr)
    fprintf(out, "  %-9s %s\n", "no notes", rverr);
  return bad;
}

int al_demo_report(al_demo *d, const al_ticket_outcome *res, bool hostile, const char *main_before,
                   FILE *out)
{
  json_t *rec = json_load_file(res->record_path, 0, NULL);
  char main_after[64];
  al_demo_main_sha(d, main_after, sizeof main_after);
  bool main_ok = strcmp(main_before, main_after) == 0 && strcmp(main_before, "?") != 0;
  json_t *pulls;
  if (d->gitlab) {
    char mp[64];
    snprintf(mp, sizeof mp, "/projects/%lld/merge_requests", d->gitlab_project_id);
    pulls = al_demo_gitlab_get(d, mp);
  } else {
    pulls = al_demo_admin_get(d, "/pulls");
  }
  size_t npulls = json_is_array(pulls) ? json_array_size(pulls)
                                       : json_array_size(json_object_get(pulls, "pulls"));
  int bad = 0;
  fprintf(out, "\n");
  if (hostile)
    bad += report_attempts(rec, res, out);
  else
    fprintf(out, "Result:\n\n");
  char stop[300] = "";
  stopped_at(rec, stop, sizeof stop);
  if (res->pr_url[0])
    fprintf(out, "  %-9s the pull request %s\n", "made", res->pr_url);
  else if (res->agent_status < 0)
    fprintf(out, "  %-9s no pull request: the agent never ran (%s)\n", "MISSING",
            stop[0] ? stop : "the run stopped before its record was written");
  else
    fprintf(out,
            "  %-9s no pull request: the agent did not finish the ticket (its output and the "
            "run record say why)\n",
            "MISSING");
  fprintf(out, "  %-9s main is untouched (%.12s)\n", main_ok ? "held" : "BROKEN", main_after);
  fprintf(out, "  %-9s %zu pull request(s) on the forge: %s\n", npulls <= 1 ? "held" : "CHECK",
          npulls, npulls ? "the whole blast radius" : "nothing got out");
  /* a run that stopped before the lease has no token to revoke: say so,
   * not BROKEN (the record has "lease" once the broker answered) */
  bool leased = json_object_get(rec, "lease") != NULL;
  if (leased)
    fprintf(out, "  %-9s both tokens revoked and confirmed dead (401) as the run ended\n",
            res->tokens_dead ? "held" : "BROKEN");
  else
    fprintf(out, "  %-9s no token was leased: the run stopped before the lease\n", "none");
  if (d->gitlab)
    bad += report_gitlab(rec, res, pulls, out);
  if (res->credentials_mode && strcmp(res->credentials_mode, "sealed") == 0)
    bad += report_sealed(rec, res, out);
  if (d->ticket_kind)
    bad += report_vendor(d, rec, res, out);
  if (hostile)
    bad += report_inert(rec, res->pr_url[0] != 0, out);
  json_t *rv = json_object_get(rec, "review");
  json_t *risky = json_object_get(rv, "runs_outside_sandbox");
  json_t *leaks = json_object_get(rv, "secrets");
  if (json_is_array(risky) || json_is_array(leaks)) {
    fprintf(out,
            "  %-9s review notes for the human%s: %zu file(s) that run outside "
            "the sandbox later, %zu secret(s) in the PR or comments\n",
            "noted", res->pr_url[0] && !json_object_get(rv, "error") ? " (also on the PR)" : "",
            al_review_outside_files(risky), json_array_size(leaks));
    fflush(out);
    al_review_print_summary(rv, out, "            ", NULL, 10);
  }
  if (!main_ok || (leased && !res->tokens_dead) || npulls > 1)
    bad++; /* something did not hold (a missing PR alone is the agent's failure) */
  if (rec)
    fprintf(out, "\n  run record: %s\n", res->record_path);
  else
    fprintf(out, "\n  run record: none was written (the error above says why)\n");
  json_decref(rec);
  json_decref(pulls);
  return bad;
}

int al_demo_ticket(al_demo *d, const al_demo_agent *a, bool hostile, FILE *out, int *signo,
                   al_error *err)
{
  *signo = 0;
  char main_before[64];
  al_demo_main_sha(d, main_before, sizeof main_before);
  char agent[PATH_MAX], agent_dir[PATH_MAX];
  snprintf(agent, sizeof agent, "%s", a->preset ? a->preset : a->path);
  snprintf(agent_dir, sizeof agent_dir, "%s", agent);
  char *slash = strrchr(agent_dir, '/');
  if (slash)
    *slash = '\0';
  char *av[] = {agent, NULL};
  const char *ro[] = {agent_dir, NULL};
  char *none[] = {NULL};
  char target[64];
  if (d->ticket_kind)
    snprintf(target, sizeof target, "acme/tally#%s", d->ticket_key);
  else if (d->gitlab)
    snprintf(target, sizeof target, "%s#%d", AL_DEMO_GITLAB_PROJECT, hostile ? 2 : 1);
  else
    snprintf(target, sizeof target, "%s", hostile ? "acme/tally#2" : "acme/tally#1");
  al_ticket_opts o = {.target = target,
                      .policy_path = d->policy,
                      .agent_argv = a->preset ? none : av,
                      .agent_preset = a->preset,
                      .agent_prefix = a->prefix,
                      .extra_ro_paths = a->preset ? NULL : ro,
                      .show_agent_stdout = a->own,
                      .record_path = NULL};
  al_ticket_outcome res;
  int r = al_ticket_run(&o, &res, err);
  if (res.exit_code > AL_EXIT_SIGNAL) /* interrupted by signal N: exit 128+N too */
    *signo = res.exit_code - AL_EXIT_SIGNAL;
  if (r < 0 && (!hostile || res.agent_status < 0)) /* the hostile agent's own failure is its part */
    say_err("the ticket run failed: %s", err->msg);
  int bad = al_demo_report(d, &res, hostile, main_before, out);
  free(res.agent_stdout);
  if (res.agent_status < 0 && !*signo) {
    /* nothing was shown: the run stopped before the agent (the error above) */
    fprintf(out, "\nThe run stopped before the agent ran, and nothing got out: see the error "
                 "above.\n");
    return 1;
  }
  int rc = (bad == 0 && (hostile || (r == 0 && res.pr_url[0]))) ? 0 : 1;
  if (*signo && bad == 0) {
    fprintf(out, "\nInterrupted (%s) before the run finished; %s: see above.\n",
            al_signal_name(*signo),
            res.pr_url[0] ? "the one pull request is all that got out" : "nothing got out");
    return 1;
  }
  fprintf(out, "\n%s\n",
          rc == 0    ? (hostile ? "The agent was fully hostile; all that got out is one "
                                  "pull request a human must review."
                                : "Done: one pull request, made inside the sandbox, "
                                  "waiting for a human review.")
          : bad == 0 ? "The agent did not finish the ticket, and nothing got out: see its "
                       "output above and the run record."
                     : "Something did not hold: see above and the run record.");
  return rc;
}

static int serve_report(al_demo *d, json_t *row, FILE *out)
{
  const char *state = json_string_value(json_object_get(row, "state"));
  const char *pr = json_string_value(json_object_get(row, "pr_url"));
  const char *reason = json_string_value(json_object_get(row, "reason"));
  const char *check = json_string_value(json_object_get(row, "check_detail"));
  fprintf(out, "  run %lld   %s   %s\n", (long long)json_integer_value(json_object_get(row, "id")),
          state ? state : "?", reason ? reason : "");
  fprintf(out, "  check     %s\n", check ? check : "-");
  bool good = state && !strcmp(state, "succeeded") && pr && *pr;
  if (good)
    fprintf(out, "  PR        %s\n", pr);
  fprintf(out, "\n%s\n",
          good ? "Done: a label on the forge, a signed webhook, one pull request made "
                 "inside the sandbox, waiting for a human review."
               : "The run did not make its pull request: see serve's status page "
                 "record above (airlock demo --serve --keep keeps the logs).");
  if (!good) {
    fflush(out);
    al_demo_show_log(d->serve_log, stderr);
  }
  return good ? 0 : 1;
}

int al_demo_serve(al_demo *d, const char *airlock, const char *agent, FILE *out)
{
  al_error err = {0};
  if (al_demo_serve_start(d, airlock, agent, &err) < 0) {
    say_err("%s", err.msg);
    if (d->log[0])
      al_demo_show_log(d->log, stderr);
    return 1;
  }
  say_err("airlock serve: webhook %s (the forge signs each delivery with %s)", d->webhook_url,
          d->webhook_secret);
  say_err("airlock serve: status page %s/ (also /runs.json, /metrics, /healthz)", d->status_url);
  say_err("labeling acme/tally#1 `airlock` as alice (admin) on the forge; the same by hand:");
  say_err("  curl -s -X POST -d '{\"repo\":\"acme/tally\",\"number\":1,\"label\":\"airlock\","
          "\"user\":\"alice\"}' http://127.0.0.1:%d/hooks/label",
          d->admin_port);
  int status = 0;
  if (al_demo_serve_label(d, 1, "alice", &status, &err) < 0) {
    say_err("%s", err.msg);
    al_demo_show_log(d->serve_log, stderr);
    return 1;
  }
  say_err(
      "the forge's webhook was answered %d: queued; the run is `airlock ticket` in serve's child",
      status);
  json_t *row = NULL;
  if (al_demo_serve_wait(d, 1, 15 * 60 * 1000, &row, &err) < 0) {
    say_err("%s", err.msg);
    al_demo_show_log(d->serve_log, stderr);
    return 1;
  }
  int rc = serve_report(d, row, out);
  json_decref(row);
  return rc;
}

int al_demo_check_flags(al_demo_flags *f, al_error *err)
{
  f->preset = f->agent ? al_agent_preset_find(f->agent) : NULL;
  if ((f->relay_upstream != NULL) != (f->relay_key_file != NULL))
    return al_error_set(err, EINVAL, "--relay-upstream and --relay-key-file go together");
  if (f->relay_file && f->relay_upstream)
    return al_error_set(err, EINVAL,
                        "give --relay FILE or --relay-upstream/--relay-key-file, not both");
  if ((f->relay_ca || f->relay_pin) && !f->relay_upstream)
    return al_error_set(err, EINVAL,
                        "--relay-ca and --relay-pin go with --relay-upstream (with --relay "
                        "FILE, put ca_file and pubkey_pin in its section)");
  const char *pin_why = NULL;
  if (f->relay_pin && al_policy_pubkey_pin_syntax(f->relay_pin, &pin_why) < 0)
    return al_error_set(err, EINVAL,
                        "--relay-pin `%.120s`: not sha256//BASE64[;sha256//BASE64...]: %s",
                        f->relay_pin, pin_why);
  if ((f->prefix || f->relay_upstream || f->relay_file) && !f->agent)
    return al_error_set(err, EINVAL, "--agent-prefix and --relay* go with --agent");
  if (f->preset && !f->relay_upstream && !f->relay_file)
    return al_error_set(
        err, EINVAL,
        "--agent %s needs a model API (%s) and the demo has none: give --relay-upstream %s "
        "--relay-key-file FILE (a file of mode 0600 holding the API key; the relay adds it, the "
        "agent never sees it), or --relay FILE with a policy's `relay:` section",
        f->preset->name, f->preset->what,
        strcmp(f->preset->vendor, "openai") == 0 ? "https://api.openai.com"
                                                 : "https://api.anthropic.com");
  return 0;
}
