/* The fencing tokens and the start-up recovery (internal.h): each attempt's
 * token in its fence file (what a running attempt compares before its
 * outputs), and the rows left `running` by a service that died or by
 * another replica, stopped or waited out by their heartbeat, their tokens
 * revoked, re-queued or not (runs.on_interrupt). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "common/procstat.h"
#include "common/util.h"
#include "serve/election.h"
#include "serve/internal.h"

/* Field 22 of /proc/PID/stat (start time in clock ticks), "" when gone. */
void serve_proc_start_time(pid_t pid, char out[32])
{
  al_proc_stat st;
  out[0] = '\0';
  if (al_proc_stat_read(pid, &st) == 0)
    snprintf(out, 32, "%llu", st.start_time);
}

/* Write a small file whole or not at all (a temporary, then rename). */
int serve_write_atomic(const char *path, const char *text, al_error *err)
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

void serve_fence_path(const struct serve *s, int64_t id, char *out, size_t n)
{
  snprintf(out, n, "%s/%lld", s->fence_dir, (long long)id);
}

/* The fencing token of attempt `attempt` of row `id` under this replica:
 * row.attempt.generation.holder (generation: the Lease's leaseTransitions
 * as we took it; holder: our identity, or the instance id). */
void serve_make_token(const struct serve *s, int64_t id, int attempt, const char *tag, char *out,
                      size_t n)
{
  long long gen = s->el ? (long long)s->el->cur.transitions : 0;
  snprintf(out, n, "%lld.%d.%lld.%s%s", (long long)id, attempt, gen,
           s->el ? s->el->id : s->instance, tag);
}

/* Make `token` the row's current one in its fence file (what a running
 * attempt compares before its outputs). */
int serve_set_fence(const struct serve *s, int64_t id, const char *token, al_error *err)
{
  char path[PATH_MAX];
  serve_fence_path(s, id, path, sizeof path);
  al_autofree char *text = al_strdup_printf("%s\n%s\n", token, s->stamp);
  return serve_write_atomic(path, text, err);
}

static bool same_process(pid_t pid, const char *start)
{
  if (pid <= 0 || !start[0])
    return false;
  char now[32];
  serve_proc_start_time(pid, now);
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
  serve_make_token(s, r->id, r->attempts, "!recovered", out, n);
  al_error err = {0};
  if (serve_set_fence(s, r->id, out, &err) < 0) {
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
 *   pending until its heartbeat stops (serve_pending_step). */
void serve_recover(struct serve *s)
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
    serve_fence_path(s, r->id, hb, sizeof hb);
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

/* The rows serve_recover() could not judge: fenced once their heartbeat has
 * not changed for hb_stale_ms by our clock (never by comparing the
 * heartbeat's time with ours). */
void serve_pending_step(struct serve *s)
{
  uint64_t now = al_now_ms();
  for (size_t i = 0; i < s->n_pending;) {
    struct serve_pending *p = &s->pending[i];
    char hb[PATH_MAX + 8];
    serve_fence_path(s, p->id, hb, sizeof hb);
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
