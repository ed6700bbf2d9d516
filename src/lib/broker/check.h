/* The trigger check: the broker answers, with its own credentials, the two
 * questions `airlock serve` must ask the forge before a run and may not
 * ask itself (it holds no token):
 *   - may this forge user trigger a run? GET /repos/{o}/{r}/collaborators/
 *     {user}/permission ("Get repository permissions for a user": `admin`,
 *     `write` (maintain included), `read`, `none`; a run needs write or admin);
 *   - is there already an open pull request from `airlock/<ticket>-*`?
 *     GET /repos/{o}/{r}/pulls?state=open ("List pull requests").
 * The broker mints a token for the repository with pull_requests: read
 * (metadata: read comes with it), makes the two reads, revokes it and
 * confirms the 401 before answering. A repository the App is not installed
 * on fails the mint: the answer is an error, and the service refuses.
 *
 * A GitLab broker (`gitlab:`) asks the same of GitLab with its driver: the
 * user's access level by the Project members API (forge/gitlab.h
 * al_gl_user_permission; Developer and above may trigger) and the open
 * merge requests from `airlock/<ticket>-*`; repo is then the project's full
 * path and user a GitLab username.
 *
 * Protocol (proto.h's framing; only as the first request, then close):
 *   client -> broker {"type":"check","version":1,"repo":"o/r","ticket":N,
 *                     "user":"login"}                      (user optional)
 *   broker -> client {"type":"check","repo":"o/r","ticket":N,"user":"login",
 *                     "permission":"write","role_name":"maintain",
 *                     "open_prs":[{"number":K,"head":"airlock/N-x","url":U}]}
 *                    or {"type":"error",...} (forbidden: the repository may
 *                     not be leased; upstream: the forge could not answer) */
#ifndef AL_BROKER_CHECK_H
#define AL_BROKER_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define AL_CHECK_PRS_MAX 8

typedef struct al_proto_check_req {
  char repo[256];       /* OWNER/REPO, or a GitLab project's full path */
  unsigned long ticket; /* 1 .. 2^31-1 (a GitLab issue's iid) */
  char user[104];       /* a GitHub login or GitLab username; "" : no permission question */
} al_proto_check_req;

/* Encode (new reference) / decode strictly (unknown fields, a bad repo,
 * ticket or login are EINVAL). */
json_t *al_proto_check_req_to_json(const al_proto_check_req *req);
int al_proto_check_req_from_json(json_t *msg, al_proto_check_req *out, al_error *err);

typedef struct al_check_result {
  char permission[16]; /* admin | write | read | none; "" when no user was asked */
  char role_name[32];  /* the forge's role_name ("maintain", "triage", ...) or "" */
  bool may_trigger;    /* permission is write or admin */
  size_t n_open_prs;   /* open PRs from airlock/<ticket>-* (at most AL_CHECK_PRS_MAX kept) */
  struct {
    long long number;
    char head[256];
    char url[512];
  } open_prs[AL_CHECK_PRS_MAX];
} al_check_result;

/* Ask the broker at socket_path (the client side; no token is involved).
 * user may be NULL. Errors: the connect errno; EACCES (the broker refused:
 * repository not leasable, uid not a client); EIO (the forge could not
 * answer, the App is not installed; the broker's message); EINVAL (a
 * broker without this request); EPROTO; ETIMEDOUT after 60 s. */
int al_broker_check(const char *socket_path, const char *repo, unsigned long ticket,
                    const char *user, al_check_result *out, al_error *err);

/* The broker's side, on a worker thread (check.c, libcurl): fills *answer
 * (new reference, the "check" message) or returns -1 with err. gh is the
 * broker's (github.h); cfg gives the API URL and CA; keep (keep.h, may be
 * NULL) holds the read token from its mint until its 401 is confirmed, so a
 * broker killed mid-check still revokes it at its next start. */
struct al_gh;
struct al_broker_config;
struct al_keep;
int al_broker_run_check(struct al_gh *gh, const struct al_broker_config *cfg, struct al_keep *keep,
                        const al_proto_check_req *req, json_t **answer, al_error *err);

#endif
