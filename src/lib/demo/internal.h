/* Between demo.c and demo_serve.c. */
#ifndef AL_DEMO_INTERNAL_H
#define AL_DEMO_INTERNAL_H

#include "demo/demo.h"

/* fork + exec argv, stdout and stderr appended to log_path, in its own
 * process group with PR_SET_PDEATHSIG; recorded in d (when not NULL) for
 * the teardown. -1 when fork fails. */
pid_t al_demo_spawn(al_demo *d, const char *const argv[], const char *log_path);

/* --serve, before the forge starts: a free loopback port for serve's
 * webhook listener (d->webhook_url) and the webhook secret
 * (d->webhook_secret, 0600, 32 random bytes as hex). */
int al_demo_serve_prepare(al_demo *d, al_error *err);

#endif
