/* A private temporary directory and held termination signals: see owned.h. */
#include "common/owned.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int al_tmpdir_make(const char *prefix, al_tmpdir *d, al_error *err)
{
  memset(d, 0, sizeof *d);
  const char *base = getenv("TMPDIR");
  if (!base || base[0] != '/')
    base = "/tmp";
  char tmpl[PATH_MAX];
  int n = snprintf(tmpl, sizeof tmpl, "%s/%s.XXXXXX", base, prefix);
  if (n < 0 || (size_t)n >= sizeof tmpl)
    return al_make_error(err, ENAMETOOLONG, "temporary directory under `%s`", base);
  if (!mkdtemp(tmpl))
    return al_make_error(err, errno, "mkdtemp `%s`", tmpl);
  struct stat st;
  if (lstat(tmpl, &st) < 0) {
    int e = errno;
    rmdir(tmpl);
    return al_make_error(err, e, "stat `%s`", tmpl);
  }
  snprintf(d->path, sizeof d->path, "%s", tmpl);
  d->dev = st.st_dev;
  d->ino = st.st_ino;
  return 0;
}

/* nftw(3) has no user pointer: the first failure is kept here. One
 * removal at a time per process (the demo's teardown). */
static char rm_failed[PATH_MAX];
static int rm_errno;

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void)st;
  (void)ftw;
  int r = (type == FTW_DP || type == FTW_D) ? rmdir(path) : unlink(path);
  if (r < 0 && errno != ENOENT && !rm_failed[0]) {
    rm_errno = errno;
    snprintf(rm_failed, sizeof rm_failed, "%s", path);
  }
  return 0; /* go on: remove as much as can go */
}

int al_tmpdir_remove(al_tmpdir *d, al_error *err)
{
  if (!d->path[0])
    return 0;
  struct stat st;
  if (lstat(d->path, &st) < 0) {
    int e = errno;
    d->path[0] = '\0';
    return e == ENOENT ? 0 : al_make_error(err, e, "stat the temporary directory");
  }
  if (!S_ISDIR(st.st_mode) || st.st_dev != d->dev || st.st_ino != d->ino) {
    al_make_error(err, EEXIST, "`%s` is no longer the directory we made; left alone", d->path);
    d->path[0] = '\0';
    return -1;
  }
  rm_failed[0] = '\0';
  rm_errno = 0;
  int r = nftw(d->path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  int ret = 0;
  if (r < 0)
    ret = al_make_error(err, errno, "walk `%s`", d->path);
  else if (rm_failed[0])
    ret = al_make_error(err, rm_errno, "remove `%s`", rm_failed);
  d->path[0] = '\0';
  return ret;
}

static volatile sig_atomic_t noted_signal;

void al_term_signal_note(int sig)
{
  if (!noted_signal && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP))
    noted_signal = sig;
}

int al_term_signal_noted(void)
{
  return noted_signal;
}

const char *al_signal_name(int sig)
{
  switch (sig) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGQUIT:
    return "SIGQUIT";
  case SIGKILL:
    return "SIGKILL";
  case SIGPIPE:
    return "SIGPIPE";
  default:
    return "signal";
  }
}

static void term_set(sigset_t *s)
{
  sigemptyset(s);
  sigaddset(s, SIGINT);
  sigaddset(s, SIGTERM);
  sigaddset(s, SIGHUP);
}

int al_signals_hold(al_held_signals *hs, al_error *err)
{
  memset(hs, 0, sizeof *hs);
  struct sigaction ign = {.sa_handler = SIG_IGN};
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGPIPE, &ign, &hs->old_pipe) < 0)
    return al_make_error(err, errno, "ignore SIGPIPE");
  sigset_t set;
  term_set(&set);
  if (sigprocmask(SIG_BLOCK, &set, &hs->old_mask) < 0)
    return al_make_error(err, errno, "block SIGINT/SIGTERM/SIGHUP");
  return 0;
}

int al_signals_take(al_held_signals *hs)
{
  sigset_t set;
  term_set(&set);
  struct timespec zero = {0, 0};
  int s = sigtimedwait(&set, NULL, &zero);
  if (s <= 0)
    return 0;
  if (!hs->taken)
    hs->taken = s;
  al_term_signal_note(s);
  return s;
}

int al_signals_release(al_held_signals *hs)
{
  while (al_signals_take(hs) > 0)
    ;
  sigprocmask(SIG_SETMASK, &hs->old_mask, NULL);
  sigaction(SIGPIPE, &hs->old_pipe, NULL);
  return hs->taken ? hs->taken : al_term_signal_noted();
}
