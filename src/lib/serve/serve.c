/* The service's scheduler and supervisor of runs: see serve.h.
 *
 * One rule for memory and processes: a child exists in s->children from
 * fork to waitpid, and its row is `running` in the queue for exactly that
 * time; every exit of the loop goes through stop_children(), which does
 * not return before every child is reaped and its row finished. */
#include "serve/serve.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "broker/check.h"
#include "common/redact.h"
#include "common/procstat.h"
#include "common/util.h"
#include "policy/policy.h"
#include "ticket/ticket.h"
#include "tickets/tickets.h"
#include "serve/election.h"
#include "serve/runner_kube.h"
#include "serve/internal.h"

#define TICK_MS 250
#define CHECK_BACKOFF_MAX_MS 300000

void serve_log(const char *level, const char *event, json_t *extra, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char *clean = al_redact(msg);
  char t[32];
  al_time_iso_ms(t);
  json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "time", t, "level", level, "event", event, "msg",
                        clean ? clean : msg);
  free(clean);
  if (extra)
    json_object_update(o, extra);
  json_decref(extra);
  char *line = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (line) {
    char *red = al_redact(line);
    fprintf(stderr, "%s\n", red ? red : line);
    fflush(stderr);
    free(red);
    free(line);
  }
}

static int mkdir_0700(const char *path, al_error *err)
{
  if (mkdir(path, 0700) < 0 && errno != EEXIST)
    return al_make_error(err, errno, "mkdir `%s`", path);
  struct stat st;
  if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
    return al_error_set(err, ENOTDIR, "`%s` is not a directory", path);
  if (st.st_uid != geteuid() || (st.st_mode & 077))
    return al_error_set(err, EPERM,
                        "`%s` must be a directory of this user with mode 0700 (it holds the "
                        "queue and the run records)",
                        path);
  return 0;
}

/* ---- children ---------------------------------------------------------- */

static struct serve_child *child_by_pid(struct serve *s, pid_t pid)
{
  for (size_t i = 0; i < s->n_children; i++)
    if (s->children[i].pid == pid)
      return &s->children[i];
  return NULL;
}

static void reap(struct serve *s)
{
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p <= 0)
      return;
    pthread_mutex_lock(&s->children_lock);
    struct serve_child *c = child_by_pid(s, p);
    if (c)
      serve_child_done(s, c, st);
    pthread_mutex_unlock(&s->children_lock);
  }
}

/* Between fork and exec: dying is right here (nothing to unwind). */
static void __attribute__((noreturn)) child_exec(char **argv, int logfd, pid_t parent)
{
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent)
    _exit(127); /* the service died between fork and prctl */
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (nul < 0 || dup2(nul, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
    _exit(127);
  al_close_fds_from(3, NULL, 0);
  execve(argv[0], argv, environ);
  dprintf(2, "airlock serve: exec %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

static int spawn(struct serve *s, const al_queue_run *r, const al_serve_repo *repo, al_error *err)
{
  int attempt = r->attempts + 1;
  struct serve_child c = {.id = r->id, .attempts = attempt};
  snprintf(c.record, sizeof c.record, "%s/%lld-%d.json", s->records_dir, (long long)r->id, attempt);
  char log[PATH_MAX], target[320], timeout[32]; /* target: up to 255 + "#" + key */
  snprintf(log, sizeof log, "%s/%lld-%d.log", s->logs_dir, (long long)r->id, attempt);
  if (r->key[0])
    snprintf(target, sizeof target, "%s#%s", r->repo, r->key); /* the key form (ticket.h) */
  else
    snprintf(target, sizeof target, "%s#%lu", r->repo, r->number);
  const char *argv[20];
  size_t n = 0;
  argv[n++] = s->airlock;
  argv[n++] = "ticket";
  argv[n++] = target;
  argv[n++] = "-p";
  argv[n++] = repo->policy;
  argv[n++] = "--record";
  argv[n++] = c.record;
  char fpath[PATH_MAX];
  serve_fence_path(s, r->id, fpath, sizeof fpath);
  serve_make_token(s, r->id, attempt, "", c.fence, sizeof c.fence);
  if (serve_set_fence(s, r->id, c.fence, err) < 0)
    return -1;
  argv[n++] = "--fence";
  argv[n++] = fpath;
  if (s->cfg->agent) {
    argv[n++] = "--agent";
    argv[n++] = s->cfg->agent;
  }
  if (s->cfg->timeout_ms) {
    snprintf(timeout, sizeof timeout, "%llums", (unsigned long long)s->cfg->timeout_ms);
    argv[n++] = "--timeout";
    argv[n++] = timeout;
  }
  if (s->cfg->docker) {
    argv[n++] = "--backend";
    argv[n++] = "docker";
  }
  argv[n] = NULL;
  char kbuf[2][PATH_MAX];
  if (s->cfg->kube_runner) /* `airlock serve kube-run` in its place (runner_kube.h) */
    serve_kube_argv(s, r->id, target, repo->policy, c.record, kbuf, argv);
  int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (logfd < 0)
    return al_make_error(err, errno, "run log `%s`", log);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(logfd);
    return al_make_error(err, errno, "fork");
  }
  if (pid == 0)
    child_exec((char **)argv, logfd, parent);
  close(logfd);
  setpgid(pid, pid); /* also here: no race with a kill of the group */
  c.pid = pid;
  char start[32];
  serve_proc_start_time(pid, start);
  pthread_mutex_lock(&s->children_lock);
  s->children = al_xrealloc(s->children, (s->n_children + 1) * sizeof *s->children);
  s->children[s->n_children++] = c;
  pthread_mutex_unlock(&s->children_lock);
  al_queue_attempt a = {.pid = pid,
                        .pid_start = start,
                        .pid_ns = s->pid_ns,
                        .record = c.record,
                        .log = log,
                        .instance = s->instance,
                        .fence = c.fence};
  if (al_queue_start(s->q, r->id, &a, err) < 0) {
    /* Never expected: the row was queued a moment ago. Stop the child. */
    kill(-pid, SIGTERM);
    pthread_mutex_lock(&s->children_lock);
    s->children[s->n_children - 1].stopping = true;
    pthread_mutex_unlock(&s->children_lock);
    return -1;
  }
  serve_log("info", "run_started",
            json_pack("{s:I, s:s, s:i, s:i}", "run", (json_int_t)r->id, "ticket", target, "pid",
                      (int)pid, "attempt", attempt),
            "run %lld: %s attempt %d (pid %d)", (long long)r->id, target, attempt, (int)pid);
  return 0;
}

/* ---- scheduling -------------------------------------------------------- */

/* The trigger check (check.h) and the decision it leads to. Returns 1 when
 * the row may run, 0 when it was finished or postponed here. */
/* One trigger check through the broker, on a thread of its own: the
 * checks of a batch run at once (each is a token minted, two forge reads
 * and a revocation, ~0.5 s, almost all of it waiting). */
struct check_job {
  const char *broker;
  const al_queue_run *r;
  al_check_result cr;
  al_error err;
  int rc;
  bool skip;
  bool vendor; /* a Jira or Linear row: vendor_check, no broker */
  bool threaded;
  pthread_t th;
};

static void *check_main(void *arg)
{
  struct check_job *j = arg;
  bool local = !strcmp(j->r->trigger, "enqueue");
  j->rc = al_broker_check(j->broker, j->r->repo, j->r->number, local ? NULL : j->r->sender, &j->cr,
                          &j->err);
  return NULL;
}

static int check_row(struct serve *s, const al_queue_run *r, struct check_job *j)
{
  bool local = !strcmp(r->trigger, "enqueue");
  al_check_result cr = j->cr;
  al_error err = j->err;
  al_queue_result res = {.exit_status = -1};
  char why[900];
  if (j->rc < 0) {
    bool refuse = err.code == EACCES || err.code == EINVAL ||
                  (err.code == EIO && (strstr(err.msg, "404") || strstr(err.msg, "Not Found")));
    if (refuse) {
      snprintf(why, sizeof why, "trigger check refused: %s", err.msg);
      al_queue_set_check(s->q, r->id, NULL, why, &err);
      res.state = "refused";
      res.reason = why;
    } else {
      /* The broker or the forge is unreachable: the ticket stays queued. */
      uint64_t wait = s->cfg->backoff_ms ? s->cfg->backoff_ms : 1000;
      if (wait > CHECK_BACKOFF_MAX_MS)
        wait = CHECK_BACKOFF_MAX_MS;
      snprintf(why, sizeof why, "trigger check failed (%s); still queued, next try in %llu ms",
               err.msg, (unsigned long long)wait);
      res.state = "queued";
      res.not_before_ms = wait;
      res.reason = why;
    }
    al_error e2 = {0};
    if (al_queue_finish(s->q, r->id, &res, &e2) < 0)
      serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, e2.msg);
    serve_log("warn", "trigger_check", json_pack("{s:I}", "run", (json_int_t)r->id), "run %lld: %s",
              (long long)r->id, why);
    return 0;
  }
  char detail[400];
  if (local)
    snprintf(detail, sizeof detail,
             "local enqueue by %s (no forge user); %zu open PR(s) "
             "from airlock/%lu-*",
             r->sender, cr.n_open_prs, r->number);
  else
    snprintf(detail, sizeof detail,
             "%s has permission `%s`%s%s%s on %s (the forge's answer); %zu open PR(s) "
             "from airlock/%lu-*",
             r->sender, cr.permission, cr.role_name[0] ? " (role " : "", cr.role_name,
             cr.role_name[0] ? ")" : "", r->repo, cr.n_open_prs, r->number);
  al_queue_set_check(s->q, r->id, local ? "local" : cr.permission, detail, &err);
  if (!local && !cr.may_trigger) {
    snprintf(why, sizeof why,
             "%s may not trigger a run: permission `%s` on %s (a run needs write or admin)",
             r->sender, cr.permission, r->repo);
    res.state = "refused";
  } else if (cr.n_open_prs > 0 && (r->attempts > 0 || r->interrupted)) {
    snprintf(why, sizeof why,
             "its pull request %s (from %s) is open on the forge: an earlier attempt made it; "
             "not run again",
             cr.open_prs[0].url, cr.open_prs[0].head);
    res.state = "succeeded";
    res.pr_url = cr.open_prs[0].url;
  } else if (cr.n_open_prs > 0) {
    snprintf(why, sizeof why,
             "an open pull request %s from %s exists for this ticket; close it to run again",
             cr.open_prs[0].url, cr.open_prs[0].head);
    res.state = "refused";
  } else {
    return 1;
  }
  res.reason = why;
  if (al_queue_finish(s->q, r->id, &res, &err) < 0)
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, err.msg);
  serve_log("info", "run_not_started",
            json_pack("{s:I, s:s}", "run", (json_int_t)r->id, "state", res.state), "run %lld: %s",
            (long long)r->id, why);
  return 0;
}

#define CHECKS_MAX 16

/* A Jira or Linear row (issue #31): its sender is the vendor's account
 * id, not a forge user the broker could ask about, and neither vendor is
 * asked here about that user's rights. What admitted it is what the
 * detail says: the delivery's HMAC under the webhook's secret and the
 * trigger rule (a label added, an assignment or delegation to the bot),
 * both checked at intake (intake_tickets.c). An earlier run's branch is
 * the run's own fence check (ticket_fence.c). */
static void vendor_check(struct serve *s, const al_queue_run *r)
{
  bool jira = !strncmp(r->sender, "jira:", 5);
  char detail[400];
  if (!strcmp(r->trigger, "enqueue"))
    snprintf(detail, sizeof detail,
             "%s: local enqueue by %s (no forge or vendor user to ask); an earlier run's branch "
             "is the run's own fence check",
             r->key, r->sender);
  else
    snprintf(detail, sizeof detail,
             "%s (%s by %s): admitted by the delivery's HMAC signature (webhook.%s.secret_file) "
             "and the trigger rule; %s was not asked about the user's permission",
             r->key, r->trigger, r->sender, jira ? "jira" : "linear", jira ? "Jira" : "Linear");
  al_error err = {0};
  if (al_queue_set_check(s->q, r->id, NULL, detail, &err) < 0)
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, err.msg);
}

/* A forge sender whose last trigger check on this repository (within
 * intake.check_cache) found no write: refused again from that answer, no
 * token minted (issue #29 item 4: 500 stranger comments, one token). */
static bool cached_refusal(struct serve *s, const al_queue_run *r)
{
  char perm[32];
  if (!strcmp(r->trigger, "enqueue") ||
      al_queue_cached_permission(s->q, r->repo, r->sender, s->cfg->check_cache_ms, perm,
                                 sizeof perm) != 1)
    return false;
  if (!strcmp(perm, "write") || !strcmp(perm, "maintain") || !strcmp(perm, "admin") ||
      !strcmp(perm, "local"))
    return false;
  char why[400];
  snprintf(why, sizeof why,
           "%s may not trigger a run: permission `%s` on %s (a run needs write or admin; the "
           "forge's answer of a check within intake.check_cache, reused: no token minted)",
           r->sender, perm, r->repo);
  al_error err = {0};
  al_queue_set_check(s->q, r->id, NULL, why, &err);
  al_queue_result res = {.state = "refused", .exit_status = -1, .reason = why};
  if (al_queue_finish(s->q, r->id, &res, &err) < 0)
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, err.msg);
  serve_log("info", "run_not_started",
            json_pack("{s:I, s:s, s:b}", "run", (json_int_t)r->id, "state", "refused", "cached", 1),
            "run %lld: %s", (long long)r->id, why);
  return true;
}

static void schedule(struct serve *s)
{
  /* Bounded: a tick starts at most max_concurrent runs and decides at most
   * 64 rows, so signals and children are never starved. Each batch is the
   * rows that could start now; their trigger checks run concurrently, then
   * the rows are decided and started in queue order on this thread. */
  al_queue_run *rows = al_xcalloc(CHECKS_MAX, sizeof *rows);
  struct check_job *jobs = al_xcalloc(CHECKS_MAX, sizeof *jobs);
  for (int decided = 0; decided < 64 && s->n_children < s->cfg->max_concurrent;) {
    size_t room = s->cfg->max_concurrent - s->n_children;
    if (room > CHECKS_MAX)
      room = CHECKS_MAX;
    al_error err = {0};
    int n = al_queue_next_batch(s->q, (unsigned)s->cfg->max_concurrent,
                                (unsigned)s->cfg->max_per_repo, rows, (int)room, &err);
    if (n < 0)
      serve_log("error", "queue", NULL, "%s", err.msg);
    if (n <= 0)
      break;
    decided += n;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int i = 0; i < n; i++) {
      struct check_job *j = &jobs[i];
      memset(j, 0, sizeof *j);
      j->broker = s->cfg->broker;
      j->r = &rows[i];
      if (!al_serve_config_repo(s->cfg, rows[i].repo)) {
        j->skip = true;
        al_queue_result res = {.state = "refused",
                               .exit_status = -1,
                               .reason = "the repository is no longer in the service's config"};
        al_queue_finish(s->q, rows[i].id, &res, &err);
        continue;
      }
      if (rows[i].key[0]) {
        j->vendor = true;
        continue;
      }
      if (cached_refusal(s, &rows[i])) {
        j->skip = true;
        continue;
      }
      /* one check per sender and repository in a batch: a second row of
       * theirs waits a tick and finds the first answer (when it refused) */
      bool again = false;
      for (int k = 0; k < i && strcmp(rows[i].trigger, "enqueue"); k++)
        again |= !jobs[k].skip && !jobs[k].vendor && !strcasecmp(rows[k].sender, rows[i].sender) &&
                 !strcasecmp(rows[k].repo, rows[i].repo);
      if (again) {
        j->skip = true;
        continue;
      }
      j->threaded = pthread_create(&j->th, &attr, check_main, j) == 0;
      if (!j->threaded)
        check_main(j); /* no thread to be had: the check runs here */
    }
    pthread_attr_destroy(&attr);
    for (int i = 0; i < n; i++)
      if (jobs[i].threaded)
        pthread_join(jobs[i].th, NULL);
    for (int i = 0; i < n; i++) {
      const al_queue_run *r = &rows[i];
      if (jobs[i].skip)
        continue;
      if (jobs[i].vendor)
        vendor_check(s, r);
      else if (check_row(s, r, &jobs[i]) != 1)
        continue;
      if (spawn(s, r, al_serve_config_repo(s->cfg, r->repo), &err) < 0) {
        serve_log("error", "spawn", json_pack("{s:I}", "run", (json_int_t)r->id), "run %lld: %s",
                  (long long)r->id, err.msg);
        al_queue_result res = {.state = "failed", .exit_status = -1, .reason = err.msg};
        al_queue_finish(s->q, r->id, &res, &err);
      }
    }
  }
  free(rows);
  free(jobs);
}

/* Retention (config retention.*): at start and every GC_EVERY_MS. */
#define GC_EVERY_MS 3600000u
static void retain(struct serve *s)
{
  s->gc_ms = al_now_ms();
  int64_t n = 0;
  al_error err = {0};
  if (al_queue_gc(s->q, s->cfg->retain_age_ms, s->cfg->retain_rows, &n, &err) < 0)
    serve_log("error", "queue", NULL, "retention: %s", err.msg);
  else if (n > 0)
    serve_log("info", "retention", json_pack("{s:I}", "deleted", (json_int_t)n),
              "retention: %lld finished rows deleted (retention.max_age %llu ms, max_rows %llu)",
              (long long)n, (unsigned long long)s->cfg->retain_age_ms,
              (unsigned long long)s->cfg->retain_rows);
}

/* ---- shutdown ---------------------------------------------------------- */

static void stop_children(struct serve *s, int sfd)
{
  uint64_t now = al_now_ms();
  pthread_mutex_lock(&s->children_lock);
  for (size_t i = 0; i < s->n_children; i++) {
    s->children[i].stopping = true;
    s->children[i].stop_sent_ms = now;
    kill(-s->children[i].pid, SIGTERM);
  }
  pthread_mutex_unlock(&s->children_lock);
  bool killed = false;
  while (s->n_children > 0) {
    struct pollfd p = {.fd = sfd, .events = POLLIN};
    poll(&p, 1, TICK_MS);
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
        s->stop_signal = (int)si.ssi_signo; /* kept for the main loop (election loss) */
    reap(s);
    if (!killed && al_now_ms() - now > STOP_GRACE_MS) {
      pthread_mutex_lock(&s->children_lock);
      for (size_t i = 0; i < s->n_children; i++)
        kill(-s->children[i].pid, SIGKILL);
      pthread_mutex_unlock(&s->children_lock);
      killed = true;
    }
  }
}

/* One election step: a replica that takes the Lease recovers the rows
 * the last leader left running; one that loses it stops its runs at once
 * (interrupted, re-queued per runs.on_interrupt), before a standby may
 * take the Lease (renew_deadline < duration). */
/* The watchdog: every 100 ms, a leader whose Lease is past renew_deadline
 * (lead_until_ms, set by the main loop at each renewal) stops its runs:
 * SIGTERM to each run's group, whatever the main loop is doing (blocked
 * in a request, a slow disk). The main loop then reaps them as
 * interrupted. A frozen process (SIGSTOP) runs no thread: for that the
 * run's own fence check reads the same deadline (ticket_fence.c). */
static void *watchdog_main(void *arg)
{
  struct serve *s = arg;
  bool fired = false;
  while (!__atomic_load_n(&s->watchdog_stop, __ATOMIC_ACQUIRE)) {
    uint64_t until = __atomic_load_n(&s->lead_until_ms, __ATOMIC_ACQUIRE);
    if (until && al_now_ms() >= until) {
      if (!fired) {
        pthread_mutex_lock(&s->children_lock);
        size_t n = 0;
        for (size_t i = 0; i < s->n_children; i++)
          if (!s->children[i].stopping) {
            s->children[i].stopping = true;
            s->children[i].stop_sent_ms = al_now_ms();
            kill(-s->children[i].pid, SIGTERM);
            n++;
          }
        pthread_mutex_unlock(&s->children_lock);
        if (n)
          serve_log("warn", "watchdog", json_pack("{s:I}", "runs", (json_int_t)n),
                    "the Lease was not renewed within renew_deadline: stopped %zu runs", n);
        fired = true;
      }
    } else {
      fired = false;
    }
    usleep(100000);
  }
  return NULL;
}

/* Our leader stamp: the monotonic ms our Lease is good until (0: not
 * leading), read by our runs' fence checks (same host, same clock). */
static void set_lead_until(struct serve *s, uint64_t until)
{
  if (until == __atomic_load_n(&s->lead_until_ms, __ATOMIC_ACQUIRE))
    return;
  char text[32];
  snprintf(text, sizeof text, "%llu\n", (unsigned long long)until);
  al_error err = {0};
  if (serve_write_atomic(s->stamp, text, &err) < 0)
    serve_log("error", "fence", NULL, "leader stamp: %s", err.msg);
  __atomic_store_n(&s->lead_until_ms, until, __ATOMIC_RELEASE);
}

static void elect(struct serve *s, struct serve_election *el, int sfd)
{
  bool lead = serve_election_step(el, al_now_ms());
  set_lead_until(s, lead ? el->renewed_ms + el->renew_ms : 0);
  if (lead && s->leader != 1) {
    __atomic_store_n(&s->leader, 1, __ATOMIC_RELAXED);
    serve_log("info", "leading", json_pack("{s:s, s:s}", "lease", el->name, "identity", el->id),
              "holding the Lease %s/%s as %s: dequeuing", el->ns, el->name, el->id);
    serve_recover(s);
  } else if (!lead && s->leader == 1) {
    __atomic_store_n(&s->leader, 0, __ATOMIC_RELAXED);
    serve_log("warn", "standby",
              json_pack("{s:s, s:s, s:s}", "lease", el->name, "identity", el->id, "holder",
                        el->cur.holder),
              "lost the Lease %s/%s (%s%s%s): not dequeuing; stopping %zu runs", el->ns, el->name,
              strcmp(el->cur.holder, el->id) ? "holder now `" : "a write conflict or no renewal",
              strcmp(el->cur.holder, el->id) ? el->cur.holder : " within renew_deadline",
              strcmp(el->cur.holder, el->id) ? "`" : "", s->n_children);
    s->n_pending = 0; /* the new leader judges them */
    stop_children(s, sfd);
  }
}

/* One repository's name against its policy's forge.kind, then the
 * check `airlock ticket` makes (preflight below). */
static int forge_preflight(const al_serve_repo *r, size_t i, al_policy *p, al_error *err)
{
  const char *why;
  size_t pieces;
  bool gitlab = p->forge.kind == AL_FORGE_GITLAB;
  /* a GitHub repository is OWNER/REPO; a GitLab project's full path may
   * have subgroups, and the GitLab webhook finds it by that path */
  if (!gitlab && al_repo_name_check(r->repo, &why) < 0)
    return al_error_set(err, EINVAL,
                        "repositories[%zu] (%s): not OWNER/REPO, and its policy's forge.kind is "
                        "github (a GitLab project's path needs forge.kind gitlab)",
                        i, r->repo);
  if (gitlab && al_gitlab_path_check(r->repo, &pieces, &why) < 0)
    return al_error_set(err, EINVAL, "repositories[%zu] (%s): %s", i, r->repo, why);
  if (al_policy_check_for(p, AL_POLICY_FOR_TICKET, r->repo, err) < 0)
    return al_error_wrap(err, "repositories[%zu] (%s): its policy cannot serve a ticket", i,
                         r->repo);
  return 0;
}

/* Before the daemon accepts anything: every repository's policy reads and
 * passes the check `airlock ticket` makes for that repository
 * (policy/purpose.c), so a typo, a placeholder OWNER/REPO or a policy for
 * another repository stops the start instead of failing each run. The
 * broker's socket may come up later (the units start in any order): a
 * warning. Each run checks its policy again. Each policy's `ticket:`
 * kind and project (Jira) or team (Linear) go to s->tk, where the Jira and
 * Linear webhooks find their repository (intake_tickets.c): read here,
 * once; a policy changed later is seen at the next start. */
static int preflight(struct serve *s, al_error *err)
{
  const al_serve_config *cfg = s->cfg;
  s->tk = al_xcalloc(cfg->n_repos ? cfg->n_repos : 1, sizeof *s->tk);
  for (size_t i = 0; i < cfg->n_repos; i++) {
    const al_serve_repo *r = &cfg->repos[i];
    al_policy *p = NULL;
    if (al_policy_load_file(r->policy, &p, err) < 0)
      return al_error_wrap(err, "repositories[%zu] (%s): its policy cannot serve a ticket", i,
                           r->repo);
    if (forge_preflight(r, i, p, err) < 0) {
      al_policy_free(p);
      return -1;
    }
    s->tk[i].kind = p->ticket.kind;
    s->tk[i].forge = (int)p->forge.kind;
    const char *proj = p->ticket.kind == AL_TK_JIRA     ? p->ticket.project
                       : p->ticket.kind == AL_TK_LINEAR ? p->ticket.team
                                                        : NULL;
    snprintf(s->tk[i].project, sizeof s->tk[i].project, "%s", proj ? proj : "");
    al_policy_free(p);
  }
  struct stat st;
  if (stat(cfg->broker, &st) < 0 || !S_ISSOCK(st.st_mode))
    serve_log("warn", "broker-absent", json_pack("{s:s}", "broker", cfg->broker),
              "broker `%s` is not a socket yet: trigger checks and runs fail until the broker "
              "listens there",
              cfg->broker);
  return 0;
}

int al_serve_run(const al_serve_config *cfg, al_error *err)
{
  struct serve s = {.cfg = cfg, .started_ms = al_now_ms(), .leader = -1, .lock_fd = -1};
  pthread_mutex_init(&s.children_lock, NULL);
  struct serve_election el;
  bool electing = cfg->election_lease[0] != '\0';
  if (electing && serve_election_init(&el, cfg, err) < 0)
    return -1;
  if (electing)
    s.el = &el;
  int ret = -1;
  int sfd = -1;
  al_autofree char *dbp = al_strdup_printf("%s/queue.db", cfg->state_dir);
  if (mkdir_0700(cfg->state_dir, err) < 0)
    return -1;
  /* one instance per queue (the replicas of an election share it) */
  if (serve_lock_state_dir(cfg->state_dir, electing, &s.lock_fd, err) < 0)
    return -1;
  snprintf(s.fence_dir, sizeof s.fence_dir, "%s/fence", cfg->state_dir);
  if (mkdir_0700(s.fence_dir, err) < 0)
    goto out;
  {
    ssize_t n = readlink("/proc/self/ns/pid", s.pid_ns, sizeof s.pid_ns - 1);
    s.pid_ns[n > 0 ? n : 0] = '\0';
  }
  s.hb_stale_ms = electing && cfg->election_duration_ms > 5000 ? cfg->election_duration_ms : 5000;
  if (electing) {
    char digest[65];
    al_sha256_hex(el.id, strlen(el.id), digest);
    snprintf(s.stamp, sizeof s.stamp, "%s/leader-%.16s", s.fence_dir, digest);
  }
  snprintf(s.records_dir, sizeof s.records_dir, "%s/records", cfg->state_dir);
  snprintf(s.logs_dir, sizeof s.logs_dir, "%s/logs", cfg->state_dir);
  if (mkdir_0700(s.records_dir, err) < 0 || mkdir_0700(s.logs_dir, err) < 0)
    goto out;
  if (cfg->airlock) {
    snprintf(s.airlock, sizeof s.airlock, "%s", cfg->airlock);
  } else {
    ssize_t n = readlink("/proc/self/exe", s.airlock, sizeof s.airlock - 1);
    if (n <= 0) {
      al_make_error(err, errno, "readlink /proc/self/exe");
      goto out;
    }
    s.airlock[n] = '\0';
  }
  if (access(s.airlock, X_OK) < 0) {
    al_make_error(err, errno, "runs.airlock `%s`", s.airlock);
    goto out;
  }
  if (cfg->listen_webhook[0] &&
      (serve_secret_load("webhook.secret_file", cfg->secret_file, &s.gh, err) < 0 ||
       (cfg->jira_secret_file &&
        serve_secret_load("webhook.jira.secret_file", cfg->jira_secret_file, &s.jira, err) < 0) ||
       (cfg->linear_secret_file &&
        serve_secret_load("webhook.linear.secret_file", cfg->linear_secret_file, &s.linear, err) <
            0) ||
       serve_gitlab_secrets_load(&s, err) < 0))
    goto out;
  if (preflight(&s, err) < 0)
    goto out;
  if (al_queue_open(dbp, &s.q, err) < 0)
    goto out;
  {
    char foreign[40];
    int c = al_queue_claim(s.q, dbp, s.instance, foreign, err);
    if (c < 0)
      goto out;
    if (c == 1)
      serve_log("warn", "queue_copied",
                json_pack("{s:s, s:s}", "instance", s.instance, "was", foreign),
                "`%s` is not the file instance %s wrote (a copy or a restore): this is instance "
                "%s; the rows that instance left running are not recovered here",
                dbp, foreign, s.instance);
  }
  serve_refill_denials(&s);
  retain(&s);
  /* Signals first (blocked before any thread exists), so the listener
   * threads never take them. */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    al_make_error(err, errno, "signalfd");
    goto out;
  }
  /* With an election, the rows another replica runs are not ours to
   * recover: the leader does that when it takes the Lease. */
  if (electing)
    s.leader = 0;
  else
    serve_recover(&s);
  if (serve_http_start(&s, err) < 0)
    goto out;
  if (electing) {
    if (pthread_create(&s.watchdog, NULL, watchdog_main, &s) != 0) {
      al_make_error(err, EAGAIN, "the election's watchdog thread");
      goto out;
    }
    s.watchdog_running = true;
  }
  serve_log("info", "started",
            json_pack("{s:s, s:s, s:s, s:I, s:I}", "webhook", cfg->listen_webhook, "status",
                      cfg->listen_status, "state_dir", cfg->state_dir, "max_concurrent",
                      (json_int_t)cfg->max_concurrent, "max_per_repo",
                      (json_int_t)cfg->max_per_repo),
            "airlock serve: %zu repositories, runs exec %s", cfg->n_repos, s.airlock);
  bool stop = false;
  while (!stop) {
    struct pollfd p = {.fd = sfd, .events = POLLIN};
    poll(&p, 1, TICK_MS);
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
        stop = true;
        serve_log("info", "stopping", NULL, "signal %u: stopping (runs are interrupted)",
                  si.ssi_signo);
      }
    }
    reap(&s);
    if (!stop && electing)
      elect(&s, &el, sfd);
    if (!stop && s.stop_signal) {
      stop = true; /* a SIGTERM that came while the runs of a lost Lease were stopped */
      serve_log("info", "stopping", NULL, "signal %d: stopping", s.stop_signal);
    }
    if (!stop && s.leader != 0) {
      serve_pending_step(&s);
      schedule(&s);
    }
    if (!stop && al_now_ms() - s.gc_ms >= GC_EVERY_MS)
      retain(&s);
  }
  serve_http_stop(&s);
  stop_children(&s, sfd);
  if (electing)
    serve_election_release(&el);
  serve_log("info", "stopped", NULL, "airlock serve stopped");
  ret = 0;
out:
  serve_http_stop(&s);
  if (s.n_children)
    stop_children(&s, sfd);
  if (s.watchdog_running) {
    __atomic_store_n(&s.watchdog_stop, 1, __ATOMIC_RELEASE);
    pthread_join(s.watchdog, NULL);
  }
  if (s.stamp[0])
    unlink(s.stamp);
  free(s.pending);
  if (s.lock_fd >= 0)
    close(s.lock_fd);
  pthread_mutex_destroy(&s.children_lock);
  if (sfd >= 0)
    close(sfd);
  free(s.children);
  al_queue_close(s.q);
  serve_secret_wipe(&s.gh);
  serve_secret_wipe(&s.jira);
  serve_secret_wipe(&s.linear);
  serve_secret_wipe(&s.gl_token);
  serve_secret_wipe(&s.gl_signing);
  free(s.tk);
  return ret;
}

int al_serve_gc(const al_serve_config *cfg, int64_t *deleted, al_error *err)
{
  al_autofree char *dbp = al_strdup_printf("%s/queue.db", cfg->state_dir);
  struct stat st;
  if (stat(dbp, &st) < 0)
    return al_make_error(err, errno, "queue `%s`", dbp);
  al_queue *q;
  if (al_queue_open(dbp, &q, err) < 0)
    return -1;
  int r = al_queue_gc(q, cfg->retain_age_ms, cfg->retain_rows, deleted, err);
  al_queue_close(q);
  return r;
}
