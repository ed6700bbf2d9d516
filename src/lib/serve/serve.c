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
#include <openssl/crypto.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
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
#include "serve/election.h"
#include "serve/internal.h"

#define TICK_MS 250
#define STOP_GRACE_MS 60000
#define RECORD_MAX (64u << 20)
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

/* Field 22 of /proc/PID/stat (start time in clock ticks), "" when gone. */
static void proc_start_time(pid_t pid, char out[32])
{
  al_proc_stat st;
  out[0] = '\0';
  if (al_proc_stat_read(pid, &st) == 0)
    snprintf(out, 32, "%llu", st.start_time);
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

/* Read the webhook secret: a regular file of this user, not readable by
 * group or others, 1..4096 bytes, one trailing newline dropped. */
static int load_secret(struct serve *s, al_error *err)
{
  const char *path = s->cfg->secret_file;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return al_make_error(err, errno, "webhook.secret_file `%s`", path);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
    close(fd);
    return al_error_set(err, EPERM,
                        "webhook.secret_file `%s`: must be a regular file of this user, mode "
                        "0600 or 0400",
                        path);
  }
  s->secret = mmap(NULL, 4097, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s->secret == MAP_FAILED) {
    s->secret = NULL;
    close(fd);
    return al_make_error(err, errno, "mmap");
  }
  (void)mlock(s->secret, 4097);
  (void)madvise(s->secret, 4097, MADV_DONTDUMP);
  ssize_t n = al_read_all(fd, s->secret, 4097);
  close(fd);
  if (n > 0 && s->secret[n - 1] == '\n')
    n--;
  if (n > 0 && s->secret[n - 1] == '\r')
    n--;
  if (n <= 0 || n > 4096)
    return al_error_set(err, EINVAL, "webhook.secret_file `%s`: must hold 1 to 4096 bytes", path);
  s->secret_len = (size_t)n;
  return 0;
}

static void wipe_secret(struct serve *s)
{
  if (s->secret) {
    OPENSSL_cleanse(s->secret, 4097);
    munmap(s->secret, 4097);
    s->secret = NULL;
  }
}

/* ---- classifying a finished run from its record ---------------------- */

struct outcome {
  char state[16];
  char reason[600];
  char pr_url[512];
  char run_id[40];
  char *denials; /* JSON text, malloc'd */
  int tokens_unconfirmed;
  bool transient;
  bool fenced; /* the attempt stopped at its fence check (ticket_fence.c) */
};

/* Causes worth a retry: the forge answered 5xx or could not be reached. */
static bool transient_text(const char *e)
{
  static const char *const pats[] = {"HTTP 5",
                                     " 500",
                                     " 502",
                                     " 503",
                                     " 504",
                                     "server error",
                                     "Server Error",
                                     "Connection refused",
                                     "timed out",
                                     "Timeout was reached",
                                     "Couldn't connect",
                                     "Could not resolve",
                                     "Connection reset",
                                     "connecting to the broker",
                                     "no broker answers"};
  for (size_t i = 0; e && i < AL_ARRAY_SIZE(pats); i++)
    if (strstr(e, pats[i]))
      return true;
  return false;
}

/* The proxy's denials in a run record as JSON text {reason: count}
 * (malloc'd): one per proxy_decisions entry whose decision is "deny". */
static char *denials_text(json_t *r)
{
  json_t *den = json_object();
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(r, "proxy_decisions"), i, d)
  {
    const char *dec = json_string_value(json_object_get(d, "decision"));
    if (!dec || strcmp(dec, "deny"))
      continue;
    const char *why = json_string_value(json_object_get(d, "reason"));
    char key[64];
    snprintf(key, sizeof key, "%s", why ? why : "unknown");
    json_int_t n = json_integer_value(json_object_get(den, key));
    json_object_set_new(den, key, json_integer(n + 1));
  }
  char *txt = json_dumps(den, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(den);
  return txt;
}

/* Finished rows without denials (a database migrated from schema 0, whose
 * column held an address): read them again from each row's run record. */
static void refill_denials(struct serve *s)
{
  json_t *rows = al_queue_without_denials(s->q, 10000);
  size_t i, n = 0;
  json_t *v;
  json_array_foreach(rows, i, v)
  {
    const char *rec = json_string_value(json_object_get(v, "record"));
    al_autofree char *buf = NULL;
    size_t len = 0;
    al_error e = {0};
    if (!rec || al_read_file(rec, RECORD_MAX, &buf, &len, &e) < 0)
      continue;
    json_t *r = json_loadb(buf, len, 0, NULL);
    if (!r)
      continue;
    al_autofree char *txt = denials_text(r);
    json_decref(r);
    if (txt &&
        al_queue_set_denials(s->q, json_integer_value(json_object_get(v, "id")), txt, &e) == 0)
      n++;
  }
  if (n)
    serve_log("info", "denials_refilled", json_pack("{s:I}", "runs", (json_int_t)n),
              "%zu finished runs had no denial counts: read again from their run records", n);
  json_decref(rows);
}

static void classify(const char *record, int wstatus, bool stopped_by_us, struct outcome *o)
{
  memset(o, 0, sizeof *o);
  int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  al_autofree char *buf = NULL;
  size_t len = 0;
  al_error e;
  json_t *r = NULL;
  if (al_read_file(record, RECORD_MAX, &buf, &len, &e) == 0)
    r = json_loadb(buf, len, 0, NULL);
  if (r) {
    const char *id = json_string_value(json_object_get(r, "run_id"));
    snprintf(o->run_id, sizeof o->run_id, "%s", id ? id : "");
    json_t *pr = json_object_get(r, "pull_request");
    const char *url = json_string_value(json_object_get(pr, "url"));
    if (url && json_is_true(json_object_get(pr, "verified")))
      snprintf(o->pr_url, sizeof o->pr_url, "%s", url);
    o->denials = denials_text(r);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(r, "revocation"), "tokens"), i, d)
    {
      if (!json_is_true(json_object_get(d, "confirmed_401")))
        o->tokens_unconfirmed++;
    }
  }
  const char *error = r ? json_string_value(json_object_get(r, "error")) : NULL;
  const char *fst = json_string_value(json_object_get(json_object_get(r, "fence"), "status"));
  if (fst && !strcmp(fst, "fenced")) {
    o->fenced = true;
    snprintf(o->state, sizeof o->state, "failed");
    snprintf(o->reason, sizeof o->reason, "%s", error ? error : "fenced");
  } else if (stopped_by_us) {
    snprintf(o->state, sizeof o->state, "interrupted");
    snprintf(o->reason, sizeof o->reason, "the service stopped (exit status %d)", code);
  } else if (!r) {
    snprintf(o->state, sizeof o->state, "failed");
    if (WIFSIGNALED(wstatus))
      snprintf(o->reason, sizeof o->reason, "no run record (killed by signal %d)",
               WTERMSIG(wstatus));
    else
      snprintf(o->reason, sizeof o->reason, "no run record (exit status %d)", code);
  } else if (code == 0 && o->pr_url[0]) {
    snprintf(o->state, sizeof o->state, "succeeded");
    snprintf(o->reason, sizeof o->reason, "pull request %s, tokens dead", o->pr_url);
  } else if (code == 0) {
    snprintf(o->state, sizeof o->state, "failed");
    snprintf(o->reason, sizeof o->reason, "the agent exited 0 without a verified pull request");
  } else {
    const char *phase = "", *audit_status = "";
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(r, "phases"), i, p)
    {
      const char *st = json_string_value(json_object_get(p, "status"));
      if (st && !strcmp(st, "failed")) {
        phase = json_string_value(json_object_get(p, "name")) ?: "";
        break;
      }
    }
    audit_status = json_string_value(json_object_get(json_object_get(r, "audit"), "status")) ?: "";
    snprintf(o->reason, sizeof o->reason, "%s%s%s", phase[0] ? phase : "run",
             error ? ": " : " failed", error ? error : "");
    /* A security refusal (the audit does not hold, the broker forbids the
     * lease) is never retried. */
    if ((!strcmp(phase, "audit") && !strcmp(audit_status, "does-not-hold")) ||
        (error && strstr(error, "(forbidden)"))) {
      snprintf(o->state, sizeof o->state, "refused");
    } else {
      snprintf(o->state, sizeof o->state, "failed");
      /* the fence check is the outputs phase's first step, before any
       * write: a forge that could not answer it (the record's fence
       * status "unanswered") leaves nothing to undo, so that attempt is
       * retried like an early phase's */
      bool before_writes = fst && !strcmp(fst, "unanswered");
      o->transient = (!strcmp(phase, "lease") || !strcmp(phase, "audit") ||
                      !strcmp(phase, "preflight") || !strcmp(phase, "policy") || before_writes) &&
                     transient_text(error);
    }
  }
  json_decref(r);
}

/* ---- children ---------------------------------------------------------- */

static struct serve_child *child_by_pid(struct serve *s, pid_t pid)
{
  for (size_t i = 0; i < s->n_children; i++)
    if (s->children[i].pid == pid)
      return &s->children[i];
  return NULL;
}

/* Finish the row of a reaped child; frees its slot. */
static void child_done(struct serve *s, struct serve_child *c, int wstatus)
{
  struct outcome o;
  classify(c->record, wstatus, c->stopping, &o);
  al_queue_result res = {.state = o.state,
                         .exit_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                         .reason = o.reason,
                         .pr_url = o.pr_url[0] ? o.pr_url : NULL,
                         .run_id = o.run_id[0] ? o.run_id : NULL,
                         .denials = o.denials,
                         .tokens_unconfirmed = o.tokens_unconfirmed};
  res.fence = c->fence;
  char why[800];
  if (o.fenced) {
    /* it made nothing: the ticket runs again if the row is still ours (the
     * trigger check finds a PR another attempt made) */
    res.fenced = 1;
    res.state = "queued";
    res.interrupted = true;
    snprintf(why, sizeof why, "attempt %d fenced (%s); re-queued", c->attempts, o.reason);
    res.reason = why;
  } else if (c->stopping) {
    res.interrupted = true;
    if (s->cfg->requeue_interrupted) {
      res.state = "queued";
      snprintf(why, sizeof why, "interrupted (%s); re-queued (runs.on_interrupt: requeue)",
               o.reason);
      res.reason = why;
    }
  } else if (o.transient && (uint64_t)c->attempts <= s->cfg->retries) {
    uint64_t wait = s->cfg->backoff_ms << (c->attempts - 1 < 16 ? c->attempts - 1 : 16);
    res.state = "queued";
    res.not_before_ms = wait;
    snprintf(why, sizeof why, "transient failure (%s); retry %d of %llu in %llu ms", o.reason,
             c->attempts, (unsigned long long)s->cfg->retries, (unsigned long long)wait);
    res.reason = why;
  }
  al_error err = {0};
  if (al_queue_finish(s->q, c->id, &res, &err) < 0) {
    if (err.code == ESTALE) {
      /* another replica fenced this attempt and owns the row now */
      al_queue_event(s->q, c->id, "fenced: attempt %d (token %s) ended after it was fenced: %s: %s",
                     c->attempts, c->fence, res.state, res.reason);
      serve_log("warn", "fenced",
                json_pack("{s:I, s:i}", "run", (json_int_t)c->id, "attempt", c->attempts),
                "run %lld: attempt %d ended after it was fenced (token %s): its outcome (%s) is "
                "not the row's",
                (long long)c->id, c->attempts, c->fence, res.state);
      free(o.denials);
      *c = s->children[--s->n_children];
      return;
    }
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)c->id, err.msg);
  }
  serve_log(!strcmp(res.state, "succeeded") ? "info" : "warn", "run_finished",
            json_pack("{s:I, s:s, s:i, s:s?, s:s?}", "run", (json_int_t)c->id, "state", res.state,
                      "exit_status", res.exit_status, "pr_url", res.pr_url, "record_run_id",
                      res.run_id),
            "run %lld: %s", (long long)c->id, res.reason);
  free(o.denials);
  *c = s->children[--s->n_children];
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
      child_done(s, c, st);
    pthread_mutex_unlock(&s->children_lock);
  }
}

/* Write a small file whole or not at all (a temporary, then rename). */
static int write_atomic(const char *path, const char *text, al_error *err)
{
  char tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return al_make_error(err, errno, "`%s`", tmp);
  size_t n = strlen(text);
  bool ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
  int e = errno;
  close(fd);
  if (!ok || rename(tmp, path) < 0) {
    unlink(tmp);
    return al_make_error(err, ok ? errno : e, "`%s`", path);
  }
  return 0;
}

static void fence_path(const struct serve *s, int64_t id, char *out, size_t n)
{
  snprintf(out, n, "%s/%lld", s->fence_dir, (long long)id);
}

/* The fencing token of attempt `attempt` of row `id` under this replica:
 * row.attempt.generation.holder (generation: the Lease's leaseTransitions
 * as we took it; holder: our identity, or the instance id). */
static void make_token(const struct serve *s, int64_t id, int attempt, const char *tag, char *out,
                       size_t n)
{
  long long gen = s->el ? (long long)s->el->cur.transitions : 0;
  snprintf(out, n, "%lld.%d.%lld.%s%s", (long long)id, attempt, gen,
           s->el ? s->el->id : s->instance, tag);
}

/* Make `token` the row's current one in its fence file (what a running
 * attempt compares before its outputs). */
static int set_fence(const struct serve *s, int64_t id, const char *token, al_error *err)
{
  char path[PATH_MAX];
  fence_path(s, id, path, sizeof path);
  al_autofree char *text = al_strdup_printf("%s\n%s\n", token, s->stamp);
  return write_atomic(path, text, err);
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
  char log[PATH_MAX], target[240], timeout[32];
  snprintf(log, sizeof log, "%s/%lld-%d.log", s->logs_dir, (long long)r->id, attempt);
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
  fence_path(s, r->id, fpath, sizeof fpath);
  make_token(s, r->id, attempt, "", c.fence, sizeof c.fence);
  if (set_fence(s, r->id, c.fence, err) < 0)
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
  proc_start_time(pid, start);
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
             "check: local enqueue by %s (no forge user); %zu open PR(s) "
             "from airlock/%lu-*",
             r->sender, cr.n_open_prs, r->number);
  else
    snprintf(detail, sizeof detail,
             "check: %s has permission `%s`%s%s%s on %s (the forge's answer); %zu open PR(s) "
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
      if (cached_refusal(s, &rows[i])) {
        j->skip = true;
        continue;
      }
      /* one check per sender and repository in a batch: a second row of
       * theirs waits a tick and finds the first answer (when it refused) */
      bool again = false;
      for (int k = 0; k < i && strcmp(rows[i].trigger, "enqueue"); k++)
        again |= !jobs[k].skip && !strcasecmp(rows[k].sender, rows[i].sender) &&
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
      if (jobs[i].skip || check_row(s, r, &jobs[i]) != 1)
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

/* ---- start-up recovery and shutdown ----------------------------------- */

static bool same_process(pid_t pid, const char *start)
{
  if (pid <= 0 || !start[0])
    return false;
  char now[32];
  proc_start_time(pid, now);
  return now[0] && !strcmp(now, start);
}

/* Finish a recovered row: interrupted, re-queued per runs.on_interrupt,
 * only while it still holds `fence`. */
static void recovered(struct serve *s, const al_queue_run *r, const char *fence, const char *what)
{
  char why[900];
  snprintf(why, sizeof why, "interrupted: %s; %s", what,
           s->cfg->requeue_interrupted ? "re-queued (runs.on_interrupt: requeue)"
                                       : "not re-queued (runs.on_interrupt: fail)");
  al_queue_result res = {.state = s->cfg->requeue_interrupted ? "queued" : "interrupted",
                         .exit_status = -1,
                         .reason = why,
                         .interrupted = true,
                         .fence = fence[0] ? fence : NULL};
  al_error err = {0};
  if (al_queue_finish(s->q, r->id, &res, &err) < 0)
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, err.msg);
  serve_log("warn", "recovered", json_pack("{s:I}", "run", (json_int_t)r->id), "run %lld: %s",
            (long long)r->id, why);
}

/* Revoke the row's token: a new one in its fence file first (what the
 * attempt compares before its outputs), then in the row. Returns the new
 * token in out, or -1 (the row moved on: leave it). */
static int bump_fence(struct serve *s, const al_queue_run *r, const char *old, char *out, size_t n)
{
  make_token(s, r->id, r->attempts, "!recovered", out, n);
  al_error err = {0};
  if (set_fence(s, r->id, out, &err) < 0) {
    serve_log("error", "fence", json_pack("{s:I}", "run", (json_int_t)r->id), "run %lld: %s",
              (long long)r->id, err.msg);
    return -1;
  }
  int rc = al_queue_fence(s->q, r->id, old[0] ? old : NULL, out, &err);
  if (rc < 0)
    serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, err.msg);
  return rc == 0 ? 0 : -1;
}

/* Rows left `running` by a service that died or by another replica:
 * - another instance's (a copied queue.db): not ours; not stopped, not
 *   run again from here (interrupted, never re-queued);
 * - its process visible in our PID namespace: stopped as before (the
 *   group; the ticket supervisor revokes on SIGTERM, the broker on its
 *   connection's close after SIGKILL), its token revoked, re-queued or not;
 * - else (another PID namespace or host, where a pid means nothing to us):
 *   pending until its heartbeat stops (pending_step). */
static void recover(struct serve *s)
{
  al_queue_run rows[256];
  al_error err = {0};
  int n = al_queue_running(s->q, rows, 256, &err);
  if (n < 0)
    serve_log("error", "queue", NULL, "%s", err.msg);
  for (int i = 0; i < n; i++) {
    al_queue_run *r = &rows[i];
    bool pending = false;
    for (size_t k = 0; k < s->n_pending; k++)
      pending |= s->pending[k].id == r->id;
    bool ours = false;
    for (size_t k = 0; k < s->n_children; k++)
      ours |= s->children[k].id == r->id;
    if (pending || ours)
      continue;
    char token[300];
    if (r->instance[0] && strcmp(r->instance, s->instance) != 0) {
      char why[400];
      snprintf(why, sizeof why,
               "left running by airlock serve instance %s, not this one (%s): this queue.db is "
               "a copy or a restore; its process is not stopped and the ticket is not run again "
               "from here (trigger it again if it has no PR)",
               r->instance, s->instance);
      al_queue_result res = {.state = "interrupted",
                             .exit_status = -1,
                             .reason = why,
                             .interrupted = true,
                             .fence = r->fence[0] ? r->fence : NULL};
      if (al_queue_finish(s->q, r->id, &res, &err) < 0)
        serve_log("error", "queue", NULL, "run %lld: %s", (long long)r->id, err.msg);
      serve_log("warn", "not_recovered",
                json_pack("{s:I, s:s}", "run", (json_int_t)r->id, "instance", r->instance),
                "run %lld: %s", (long long)r->id, why);
      continue;
    }
    if (r->pid_ns[0] && !strcmp(r->pid_ns, s->pid_ns)) {
      bool alive = same_process(r->pid, r->pid_start);
      if (alive) {
        kill(-r->pid, SIGTERM);
        uint64_t until = al_now_ms() + STOP_GRACE_MS;
        while (same_process(r->pid, r->pid_start) && al_now_ms() < until)
          usleep(50000);
        if (same_process(r->pid, r->pid_start))
          kill(-r->pid, SIGKILL);
      }
      if (bump_fence(s, r, r->fence, token, sizeof token) < 0)
        continue;
      recovered(s, r, token,
                alive ? "the service was restarted while it ran (its process was still there "
                        "and was stopped)"
                      : "the service was restarted while it ran (its process was gone)");
      continue;
    }
    /* not visible here: wait out its heartbeat */
    s->pending = al_xrealloc(s->pending, (s->n_pending + 1) * sizeof *s->pending);
    struct serve_pending *p = &s->pending[s->n_pending++];
    memset(p, 0, sizeof *p);
    p->id = r->id;
    p->attempts = r->attempts;
    p->pid = r->pid;
    snprintf(p->fence, sizeof p->fence, "%s", r->fence);
    p->seen_ms = p->since_ms = al_now_ms();
    char hb[PATH_MAX + 8];
    fence_path(s, r->id, hb, sizeof hb);
    strcat(hb, ".hb");
    al_autofree char *text = NULL;
    if (al_read_file(hb, sizeof p->hb - 1, &text, NULL, &err) == 0)
      snprintf(p->hb, sizeof p->hb, "%s", text);
    serve_log("warn", "recovering",
              json_pack("{s:I, s:i, s:s, s:s}", "run", (json_int_t)r->id, "pid", (int)r->pid,
                        "pid_ns", r->pid_ns, "token", r->fence),
              "run %lld: its process (pid %d in %s) is not in this PID namespace (%s): waiting "
              "until its heartbeat has not changed for %llu ms before fencing it",
              (long long)r->id, (int)r->pid, r->pid_ns[0] ? r->pid_ns : "an unknown namespace",
              s->pid_ns, (unsigned long long)s->hb_stale_ms);
  }
}

/* The rows recover() could not judge: fenced once their heartbeat has
 * not changed for hb_stale_ms by our clock (never by comparing the
 * heartbeat's time with ours). */
static void pending_step(struct serve *s)
{
  uint64_t now = al_now_ms();
  for (size_t i = 0; i < s->n_pending;) {
    struct serve_pending *p = &s->pending[i];
    char hb[PATH_MAX + 8];
    fence_path(s, p->id, hb, sizeof hb);
    strcat(hb, ".hb");
    al_autofree char *text = NULL;
    al_error err = {0};
    char cur[200] = "";
    if (al_read_file(hb, sizeof cur - 1, &text, NULL, &err) == 0)
      snprintf(cur, sizeof cur, "%s", text);
    if (strcmp(cur, p->hb) != 0) {
      snprintf(p->hb, sizeof p->hb, "%s", cur);
      p->seen_ms = now;
    }
    if (now - p->seen_ms < s->hb_stale_ms) {
      i++;
      continue;
    }
    al_queue_run r = {.id = p->id, .attempts = p->attempts};
    char token[300], what[700];
    if (bump_fence(s, &r, p->fence, token, sizeof token) == 0) {
      snprintf(what, sizeof what,
               "attempt %d fenced: its process (pid %d) is not visible here and its heartbeat "
               "did not change for %llu ms; token %s revoked",
               p->attempts, (int)p->pid, (unsigned long long)(now - p->seen_ms), p->fence);
      recovered(s, &r, token, what);
    }
    s->pending[i] = s->pending[--s->n_pending];
  }
}

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
  if (write_atomic(s->stamp, text, &err) < 0)
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
    recover(s);
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

/* Before the daemon accepts anything: every repository's policy reads and
 * passes the check `airlock ticket` makes for that repository
 * (policy/purpose.c), so a typo, a placeholder OWNER/REPO or a policy for
 * another repository stops the start instead of failing each run. The
 * broker's socket may come up later (the units start in any order): a
 * warning. Each run checks its policy again. */
static int preflight(const al_serve_config *cfg, al_error *err)
{
  for (size_t i = 0; i < cfg->n_repos; i++) {
    const al_serve_repo *r = &cfg->repos[i];
    al_policy *p = NULL;
    if (al_policy_load_file(r->policy, &p, err) < 0 ||
        al_policy_check_for(p, AL_POLICY_FOR_TICKET, r->repo, err) < 0) {
      al_policy_free(p);
      return al_error_wrap(err, "repositories[%zu] (%s): its policy cannot serve a ticket", i,
                           r->repo);
    }
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
  if (cfg->listen_webhook[0] && load_secret(&s, err) < 0)
    goto out;
  if (preflight(cfg, err) < 0)
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
  refill_denials(&s);
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
    recover(&s);
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
      pending_step(&s);
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
  wipe_secret(&s);
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

int al_serve_enqueue(const al_serve_config *cfg, const char *target, const char *sender,
                     int64_t *id, al_error *err)
{
  char repo[201];
  unsigned long number;
  if (al_ticket_parse_target(target, repo, sizeof repo, &number, err) < 0)
    return -1;
  if (!al_serve_config_repo(cfg, repo))
    return al_error_set(err, EINVAL, "%s is not served (not in `repositories` of %s)", repo,
                        cfg->source);
  al_autofree char *dbp = al_strdup_printf("%s/queue.db", cfg->state_dir);
  struct stat st;
  if (stat(cfg->state_dir, &st) < 0)
    return al_make_error(err, errno, "state_dir `%s` (start `airlock serve` first)",
                         cfg->state_dir);
  al_queue *q;
  if (al_queue_open(dbp, &q, err) < 0)
    return -1;
  int r = al_queue_enqueue(q, repo, number, "enqueue", sender, NULL, id, err);
  al_queue_close(q);
  return r;
}
