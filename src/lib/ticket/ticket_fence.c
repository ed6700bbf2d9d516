/* Fencing of a run started by `airlock serve` (issue #29; docs/serve.md,
 * "One PR per ticket"). `--fence FILE` names the attempt's fence file,
 * written by the serve process that started it:
 *
 *   line 1  the attempt's fencing token (row.attempt.generation.holder)
 *   line 2  the starter's leader stamp file ("" without an election): one
 *           line, the CLOCK_MONOTONIC ms until which its Lease is renewed
 *
 * The token read at start is this attempt's. A serve that takes over
 * rewrites line 1 (a new token) only after this attempt's heartbeat
 * (FILE.hb, written once a second by a small helper process) stopped
 * changing. The helper writes it while the starter's leader stamp is
 * current, and always once the attempt passed the check below (an
 * attempt making its PR is waited for); never while the supervisor is
 * stopped (SIGSTOP: /proc/PPID/stat state T).
 *
 * Before the outputs phase, tk_fence_check: the token in FILE is still
 * ours, the starter's Lease is current, and no open pull request from
 * <branch_prefix><ticket>-* exists but this run's own; else the attempt
 * is stale: it stops without output (its tokens are revoked by the
 * release as on any failure) and its record says "fenced". */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/procstat.h"
#include "common/util.h"
#include "forge/forge.h"
#include "forge/ghapi.h"
#include "ticket/ticket_internal.h"

#define HB_INTERVAL_MS 1000

struct tk_fence {
  char token[300];
  char stamp[4096];
  char hb[4096];
  pid_t helper;
  volatile int *past; /* shared with the helper: the check passed */
};

/* Line `n` (0-based) of a small file into out; -1 when unreadable. */
static int read_line(const char *path, int n, char *out, size_t outsz)
{
  char buf[8192];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -1;
  ssize_t len = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (len < 0)
    return -1;
  buf[len] = '\0';
  char *p = buf;
  for (int i = 0; i < n && p; i++) {
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  if (!p)
    p = buf + len;
  size_t l = strcspn(p, "\n");
  if (l >= outsz)
    return -1;
  memcpy(out, p, l);
  out[l] = '\0';
  return 0;
}

static uint64_t mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The starter's Lease is current (no stamp: no election, always). */
static bool leader_current(const char *stamp)
{
  if (!stamp[0])
    return true;
  char line[64];
  if (read_line(stamp, 0, line, sizeof line) < 0)
    return false;
  char *end = NULL;
  unsigned long long until = strtoull(line, &end, 10);
  return end != line && mono_ms() < until;
}

/* The supervisor is stopped (SIGSTOP): /proc/PID/stat field 3 is T or t. */
static bool stopped(pid_t pid)
{
  al_proc_stat st;
  return al_proc_stat_read(pid, &st) < 0 || st.state == 'T' || st.state == 't';
}

/* The helper: forked before the lease (it holds no secret), writes only
 * the heartbeat, dies with the supervisor. */
static void __attribute__((noreturn)) helper_main(struct tk_fence *f, pid_t parent)
{
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(0);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  al_close_fds_from(3, NULL, 0);
  unsigned long long seq = 0;
  for (;;) {
    if (getppid() != parent)
      _exit(0);
    if (!stopped(parent) && (*f->past || leader_current(f->stamp))) {
      char tmp[4200], line[400];
      snprintf(tmp, sizeof tmp, "%s.tmp", f->hb);
      int n = snprintf(line, sizeof line, "%s %llu\n", f->token, ++seq);
      int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd >= 0) {
        bool ok = write(fd, line, (size_t)n) == n;
        close(fd);
        if (ok)
          rename(tmp, f->hb);
      }
    }
    struct timespec ts = {.tv_sec = HB_INTERVAL_MS / 1000,
                          .tv_nsec = (HB_INTERVAL_MS % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
}

int tk_fence_begin(struct ticket *t, al_error *err)
{
  if (!t->o->fence_path)
    return 0;
  struct tk_fence *f = al_xcalloc(1, sizeof *f);
  t->fence = f;
  if (read_line(t->o->fence_path, 0, f->token, sizeof f->token) < 0 || !f->token[0])
    return al_make_error(err, errno ? errno : EINVAL, "--fence `%s`: no fencing token in it",
                         t->o->fence_path);
  if (read_line(t->o->fence_path, 1, f->stamp, sizeof f->stamp) < 0)
    f->stamp[0] = '\0';
  snprintf(f->hb, sizeof f->hb, "%s.hb", t->o->fence_path);
  void *m = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return al_make_error(err, errno, "mmap");
  f->past = m;
  *f->past = 0;
  json_object_set_new(t->rec, "fence",
                      json_pack("{s:s, s:s}", "token", f->token, "status", "current"));
  pid_t parent = getpid();
  pid_t p = fork();
  if (p < 0)
    return al_make_error(err, errno, "fork the heartbeat");
  if (p == 0)
    helper_main(f, parent);
  f->helper = p;
  return 0;
}

void tk_fence_end(struct ticket *t)
{
  struct tk_fence *f = t->fence;
  if (!f)
    return;
  if (f->helper > 0) {
    kill(f->helper, SIGKILL);
    while (waitpid(f->helper, NULL, 0) < 0 && errno == EINTR)
      ;
  }
  if (f->past)
    munmap((void *)f->past, sizeof(int));
  free(f);
  t->fence = NULL;
}

/* An open PR from <prefix><slug>-* other than this run's branch: its
 * URL into out (1), none (0), -1 with err when the list is incomplete. */
static int open_ticket_pr(struct ticket *t, al_ghapi *api, const char *tok, char *out, size_t n,
                          al_error *err)
{
  al_autofree char *prefix = al_strdup_printf("%s%s-", t->policy->branch_prefix, t->slug);
  json_t *items = NULL;
  int r = al_forge_ops_of(t->policy->forge.kind)->prs_open(api, tok, t->repo, 5000, &items, err);
  int found = 0;
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    const char *ref = json_string_value(json_object_get(v, "head"));
    if (ref && !strncmp(ref, prefix, strlen(prefix)) && strcmp(ref, t->branch) != 0) {
      const char *url = json_string_value(json_object_get(v, "url"));
      snprintf(out, n, "%s (from %s)", url ? url : "?", ref);
      found = 1;
      break;
    }
  }
  json_decref(items);
  return found ? 1 : r < 0 ? -1 : 0;
}

int tk_fence_check(struct ticket *t, al_ghapi *api, const char *tok, al_error *err)
{
  struct tk_fence *f = t->fence;
  if (!f)
    return 0;
  char now[300] = "";
  char why[900] = "";
  if (read_line(t->o->fence_path, 0, now, sizeof now) < 0)
    snprintf(why, sizeof why, "its fence file `%s` cannot be read", t->o->fence_path);
  else if (strcmp(now, f->token) != 0)
    snprintf(why, sizeof why, "its token %s was revoked (the queue's token is now %s)", f->token,
             now[0] ? now : "none");
  else if (!leader_current(f->stamp))
    snprintf(why, sizeof why,
             "the serve that started it holds no current Lease (its renewal is past "
             "renew_deadline: frozen or partitioned)");
  if (!why[0]) {
    char pr[700];
    int r = open_ticket_pr(t, api, tok, pr, sizeof pr, err);
    if (r < 0) {
      /* nothing written yet: serve may retry the attempt (serve.c) */
      json_t *fj = json_object_get(t->rec, "fence");
      json_object_set_new(fj, "status", json_string("unanswered"));
      json_object_set_new(fj, "reason", json_string(err->msg));
      return al_error_wrap(err, "fence: listing the ticket's open pull requests");
    }
    if (r == 1)
      snprintf(why, sizeof why, "an open pull request for the ticket exists: %s", pr);
  }
  json_t *fj = json_object_get(t->rec, "fence");
  if (why[0]) {
    json_object_set_new(fj, "status", json_string("fenced"));
    json_object_set_new(fj, "reason", json_string(why));
    return al_error_set(err, ESTALE, "fenced: %s: this attempt makes no output", why);
  }
  *f->past = 1; /* from here the heartbeat goes on until the supervisor exits */
  json_object_set_new(fj, "status", json_string("passed"));
  return 0;
}
