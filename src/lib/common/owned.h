/* Things a command owns for the length of one run and must leave nothing
 * of, however the run ends: a private temporary directory, and the
 * termination signals it holds back until it has cleaned up.
 *
 * Typical use (airlock demo):
 *
 *   al_held_signals hs;
 *   al_signals_hold(&hs);                   // SIGPIPE ignored; INT/TERM/HUP held
 *   al_tmpdir d;
 *   if (al_tmpdir_make("airlock-demo", &d, err) < 0) ...
 *   ... work (a pending SIGINT makes the ticket stop early) ...
 *   al_tmpdir_remove(&d, NULL);
 *   int sig = al_signals_release(&hs);      // 0, or the signal that came
 *   return sig ? 128 + sig : rc;
 *
 * SIGKILL can not be held: after it the directory stays (docs/sandbox.md,
 * "What survives which crash"). */
#ifndef AL_OWNED_H
#define AL_OWNED_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

typedef struct al_tmpdir {
  char path[PATH_MAX]; /* "" when none was made */
  dev_t dev;           /* identity of what we made: remove only that */
  ino_t ino;
} al_tmpdir;

/* Make a new private directory "$TMPDIR/PREFIX.XXXXXX" (TMPDIR unset,
 * empty or not absolute: /tmp), mode 0700 (mkdtemp(3)). Returns 0, or -1
 * with err (the mkdtemp errno, ENAMETOOLONG). */
int al_tmpdir_make(const char *prefix, al_tmpdir *d, al_error *err);

/* Remove d's tree: depth first, never following a symbolic link, never
 * crossing into another file system (nftw(3) FTW_PHYS|FTW_MOUNT|FTW_DEPTH),
 * and only when d->path is still the directory al_tmpdir_make made (same
 * device and inode). Idempotent: d->path is "" afterwards. Returns 0, or
 * -1 with err (may be NULL) naming the first entry that could not go. */
int al_tmpdir_remove(al_tmpdir *d, al_error *err);

typedef struct al_held_signals {
  sigset_t old_mask;
  struct sigaction old_pipe;
  int taken; /* a signal al_signals_take() consumed, or 0 */
} al_held_signals;

/* Ignore SIGPIPE (a write to a closed pipe then fails with EPIPE; a
 * closed `| head` never kills the caller before it cleaned up) and block
 * SIGINT, SIGTERM and SIGHUP in the calling thread: they stay pending,
 * where al_ticket_run and al_sandbox_wait see them (signalfd(2)), until
 * al_signals_release(). Returns 0 or -1 with err. */
int al_signals_hold(al_held_signals *hs, al_error *err);

/* Consume one pending SIGINT/SIGTERM/SIGHUP without waiting
 * (sigtimedwait(2) with a zero timeout). Returns its number or 0; the
 * first one taken is also kept in hs->taken. */
int al_signals_take(al_held_signals *hs);

/* Take what is still pending, restore the mask and SIGPIPE as they were
 * before al_signals_hold(), and return the first termination signal seen
 * (hs->taken or a pending one), or 0. The caller exits 128 + that
 * signal. */
int al_signals_release(al_held_signals *hs);

/* A process-wide latch for "a termination signal (SIGINT, SIGTERM,
 * SIGHUP) reached this process": whoever reads one from a signalfd or
 * sigtimedwait (al_sandbox_wait, al_signals_take) notes it, so a caller
 * further up (the ticket supervisor, the demo) knows the run was
 * interrupted, and by what, after the signal itself was consumed. The
 * first one noted is kept. Async-signal-safe. */
void al_term_signal_note(int sig);
/* The first termination signal noted, or 0. */
int al_term_signal_noted(void);
/* "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGKILL", "SIGPIPE", or
 * "signal" for any other; static. */
const char *al_signal_name(int sig);

#endif
