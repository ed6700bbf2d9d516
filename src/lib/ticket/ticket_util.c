/* The ticket supervisor's shared pieces: phases and progress lines, the
 * agent's environment, sealed memfds, decision lines, the stderr forwarder. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/term.h"
#include "common/util.h"

void tk_phase_end(struct ticket *t, uint64_t start, const char *status, const char *fmt, ...)
{
  struct phase *ph = &t->phases[t->nphases - 1];
  ph->ms = al_now_ms() - start;
  ph->requests = al_ghapi_requests_sent() - ph->req0;
  al_ghapi_counts now;
  al_ghapi_counts_process(&now);
  ph->sup = (al_ghapi_counts){.sent = now.sent - ph->c0.sent,
                              .not_modified = now.not_modified - ph->c0.not_modified,
                              .app = now.app - ph->c0.app,
                              .rejected = now.rejected - ph->c0.rejected};
  ph->ended = true;
  ph->status = status;
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&ph->detail, fmt, ap) < 0)
      ph->detail = NULL;
    va_end(ap);
  }
  if (!t->o->quiet) {
    al_autofree char *redacted = al_redact(ph->detail ? ph->detail : "");
    al_autofree char *clean = al_term_escape_line(redacted ? redacted : "");
    fprintf(stderr, "airlock ticket: %-9s %-7s %5llu ms  %s%s\n", ph->name, status,
            (unsigned long long)ph->ms, clean,
            t->unprotected ? " " AL_TICKET_UNPROTECTED_MARK : "");
  }
}

uint64_t tk_phase_begin(struct ticket *t, const char *name)
{
  if (t->nphases < AL_ARRAY_SIZE(t->phases)) {
    t->phases[t->nphases] =
        (struct phase){.name = name, .status = "running", .req0 = al_ghapi_requests_sent()};
    al_ghapi_counts_process(&t->phases[t->nphases].c0);
    t->nphases++;
  }
  return al_now_ms();
}

void tk_phase_add_broker(struct ticket *t, const al_ghapi_counts *q)
{
  if (!t->nphases)
    return;
  al_ghapi_counts *b = &t->phases[t->nphases - 1].broker;
  b->sent += q->sent;
  b->not_modified += q->not_modified;
  b->app += q->app;
  b->rejected += q->rejected;
}

void tk_env_add(struct ticket *t, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  va_end(ap);
  t->env = al_xrealloc(t->env, (t->nenv + 2) * sizeof(char *));
  t->env[t->nenv++] = s;
  t->env[t->nenv] = NULL;
}

/* Wipe every environment string: called right after the sandbox started,
 * before the proxy is forked; from here on the supervisor holds no token. */
void tk_wipe_env(void *ctx)
{
  struct ticket *t = ctx;
  for (size_t i = 0; i < t->nenv; i++) {
    explicit_bzero(t->env[i], strlen(t->env[i]));
    free(t->env[i]);
  }
  free(t->env);
  t->env = NULL;
  t->nenv = 0;
}

char *tk_read_memfd(int fd, size_t *len)
{
  off_t end = lseek(fd, 0, SEEK_CUR);
  if (end < 0)
    end = 0;
  char *buf = al_xmalloc((size_t)end + 1);
  ssize_t n = pread(fd, buf, (size_t)end, 0);
  if (n < 0)
    n = 0;
  buf[n] = '\0';
  /* NULs would cut the text short; make them visible instead */
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0')
      buf[i] = '?';
  *len = (size_t)n;
  return buf;
}

/* A thread copying the agent's stderr to ours through the gutter
 * (common/term.h: each line marked as the agent's, escaped), capped. */
#define AGENT_STDERR_CAP (16u << 20)

static void *stderr_forward_main(void *arg)
{
  struct stderr_forward *sr = arg;
  /* No malloc here: the supervisor clones sandboxes with the raw clone
   * syscall, which does not take glibc's allocator locks the way fork(3)
   * does; a lock held by this thread at that moment would be inherited
   * locked. The gutter allocates nothing. */
  char buf[1024];
  size_t total = 0;
  al_term_gutter g;
  al_term_gutter_init(&g, 2, AL_TERM_AGENT_GUTTER);
  for (;;) {
    ssize_t n = read(sr->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (total < AGENT_STDERR_CAP) {
      al_term_gutter_write(&g, buf, (size_t)n);
      total += (size_t)n;
      if (total >= AGENT_STDERR_CAP) {
        al_term_gutter_end(&g);
        static const char m[] = "airlock ticket: the agent's stderr passed 16 MiB; the rest is "
                                "dropped\n";
        (void)!write(2, m, sizeof m - 1);
      }
    }
  }
  al_term_gutter_end(&g);
  close(sr->fd);
  return NULL;
}

int tk_stderr_forward_start(struct stderr_forward *sr, int fd)
{
  sr->fd = fd;
  /* the thread must not take the signals the supervisor waits for */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int r = pthread_create(&sr->th, NULL, stderr_forward_main, sr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r != 0) {
    errno = r;
    return -1;
  }
  sr->running = true;
  return 0;
}

void tk_stderr_forward_join(struct stderr_forward *sr)
{
  if (sr->running)
    pthread_join(sr->th, NULL);
  sr->running = false;
}

json_t *tk_decisions_from(const char *text)
{
  return tk_decisions_from_counted(text, NULL);
}

json_t *tk_decisions_from_counted(const char *text, size_t *skipped)
{
  json_t *arr = json_array();
  const char *p = text;
  size_t kept_deny = 0;
  if (skipped)
    *skipped = 0;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n > 0) {
      json_t *j = json_loadb(p, n, 0, NULL);
      const char *ev = json_string_value(json_object_get(j, "event"));
      bool deny = ev && strcmp(ev, "deny") == 0;
      /* Past MAX_DECISIONS only single denials give way: allowed
       * tunnels, hand-offs, aggregates and the summary are always kept. */
      if (json_array_size(arr) >= MAX_DECISIONS && (deny || !json_is_object(j))) {
        if (skipped)
          (*skipped)++;
        json_decref(j);
      } else {
        kept_deny += deny;
        json_array_append_new(arr, json_is_object(j) ? j : json_pack("{s:s%}", "unparsed", p, n));
        if (j && !json_is_object(j))
          json_decref(j);
      }
    }
    if (!nl)
      break;
    p = nl + 1;
  }
  (void)kept_deny;
  return arr;
}

char *tk_iso_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char buf[40];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return al_xstrdup(buf);
}

/* curl --resolve entries from the policy's pins, so the supervisor
 * reaches a pinned test forge exactly where the proxy would. */
uint64_t tk_deadline_in_lease(const al_lease *l, uint64_t want_ms)
{
  uint64_t now = al_now_ms(), d = now + want_ms;
  if (!l)
    return d;
  uint64_t end = al_lease_end_ms(l);
  uint64_t cap = end > now + TK_LEASE_MARGIN_MS ? end - TK_LEASE_MARGIN_MS : now + 1;
  return d < cap ? d : cap;
}

char **tk_pin_resolves(const al_policy *p)
{
  char **v = al_xcalloc(p->network.n_pin * 4 + 1, sizeof(char *));
  size_t n = 0;
  for (size_t i = 0; i < p->network.n_pin; i++)
    for (size_t j = 0; j < p->network.n_allow; j++)
      if (!p->network.allow[j].wildcard &&
          strcmp(p->network.allow[j].host, p->network.pin[i].host) == 0 && n < p->network.n_pin * 4)
        v[n++] = al_strdup_printf("%s:%u:%s%s%s", p->network.pin[i].host, p->network.allow[j].port,
                                  strchr(p->network.pin[i].address, ':') ? "[" : "",
                                  p->network.pin[i].address,
                                  strchr(p->network.pin[i].address, ':') ? "]" : "");
  return v;
}

void tk_free_strv(char **v)
{
  for (char **q = v; q && *q; q++)
    free(*q);
  free(v);
}
