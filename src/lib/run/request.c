/* `airlock run` after its options are parsed: the policy, where the
 * decisions go, the run, their counts (run/run.h al_run_request). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/memfd.h"
#include "run/run.h"

int al_run_decisions_memfd(const char *name)
{
  al_error e = {0};
  return al_sealed_memfd(name, AL_RUN_DECISIONS_CAP, 0, &e);
}

void al_run_request_count(int dfd, int rfd, al_run_result *res)
{
  if (dfd >= 0 && al_run_count_decisions(dfd, &res->decisions) < 0)
    memset(&res->decisions, 0, sizeof res->decisions);
  if (rfd >= 0 && al_run_count_decisions(rfd, &res->relay) < 0)
    memset(&res->relay, 0, sizeof res->relay);
}

int al_run_request_native(const al_run_request *rq, al_run_result *res, al_error *err)
{
  memset(res, 0, sizeof *res);
  res->status = 2;
  al_policy *policy = NULL;
  if (al_policy_load_or_default(rq->policy_path, &policy, err) < 0)
    return -1;
  /* a --log FILE that cannot be opened is the command line's error (2,
   * before anything starts), as the docker backend has it */
  if (rq->log_path && (policy->network.present || policy->relay.present)) {
    int fd = open(rq->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      int e = errno;
      al_policy_free(policy);
      return al_make_error(err, e, "--log `%s`", rq->log_path);
    }
    close(fd);
  }
  res->status = 0;
  /* without a network (or relay) section no proxy runs: --log would be
   * silently unwritten, which reads as "no decisions" */
  if (rq->log_path && !policy->network.present && !policy->relay.present && !rq->quiet)
    al_warn("--log `%s`: the policy has no network section, so no egress proxy runs and there "
            "are no decisions to log; the file is not written",
            rq->log_path);
  int dfd =
      !rq->log_path && policy->network.present ? al_run_decisions_memfd("airlock-decisions") : -1;
  int rfd = !rq->relay_log_path && policy->relay.present
                ? al_run_decisions_memfd("airlock-relay-log")
                : -1;
  al_run_opts ro = {
      .policy = policy,
      .argv = rq->argv,
      .env = rq->env,
      .timeout_ms = rq->timeout_ms,
      .log_path = rq->log_path,
      .decisions_fd = dfd,
      .decisions_cap = rq->log_path ? rq->log_max : AL_RUN_DECISIONS_CAP,
      .relay_log_path = rq->relay_log_path,
      .relay_log_fd = rfd,
      .quiet = rq->quiet,
      .run_id = rq->run_id,
      .timed_out = &res->timed_out,
  };
  int r = al_run_command(&ro, &res->status, err);
  al_run_request_count(dfd, rfd, res);
  if (dfd >= 0)
    close(dfd);
  if (rfd >= 0)
    close(rfd);
  al_policy_free(policy);
  return r;
}
