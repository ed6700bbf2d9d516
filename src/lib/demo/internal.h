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

/* Run argv to its end (stdout and stderr appended to log_path): 0 when it
 * exited 0. */
int al_demo_run_script(const char *const argv[], const char *log_path);

/* Whether path exists with some bytes within ms milliseconds. */
bool al_demo_wait_for(const char *path, int ms);

/* --forge gitlab (demo_gitlab.c), from al_demo_setup after the private
 * directory: the test CA for gitlab.test (tls), the Maintainer's token
 * (secret/gitlab.token, 0600), the bare repository of the demo's project
 * and a GitLab fixture holding acme/tally#1's text, airlock-gitlab-forge
 * (HTTPS, d->https_port), the broker in its GitLab mode, the policy
 * (forge.kind gitlab). -1 with err (d->log names the log). */
int al_demo_gitlab_setup(al_demo *d, const al_demo_files *files, const char *tls, al_error *err);

/* GET /api/v4 + path on the GitLab test forge with the Maintainer's token
 * (HTTPS, the demo's CA, loopback, 10 s): the parsed 200 answer (the
 * caller decrefs), or NULL. */
json_t *al_demo_gitlab_get(al_demo *d, const char *path);

/* main's head on the GitLab test forge (the Maintainer's token), or "?". */
const char *al_demo_gitlab_main_sha(al_demo *d, char *buf, size_t n);

#endif
