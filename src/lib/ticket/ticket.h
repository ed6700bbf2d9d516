/* airlock ticket: one ticket to one pull request (DESIGN.md §3, issue #6).
 *
 * Phases, each timed and recorded:
 *   policy → relay-check (with a relay section: each model API's TCP, TLS
 *   and trust, before any token) → audit → lease → preflight → sandbox
 *   (agent + egress proxy) → release (revoke, confirm) → review → record
 * Whatever happens, the lease is released (the broker revokes both tokens
 * and confirms they are dead) and the run record is written; after SIGKILL
 * of the supervisor the broker's revocation on connection close is the
 * guarantee. */
#ifndef AL_RUN_TICKET_H
#define AL_RUN_TICKET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "forge/names.h"
#include "run/docker.h"

typedef struct al_ticket_opts {
  const char *target;                /* "OWNER/REPO#N", or "OWNER/REPO#KEY" for a Jira or
                                        Linear ticket (policy `ticket:`) */
  const char *policy_path;           /* required: a ticket needs credentials and network sections */
  char *const *agent_argv;           /* the agent command, NULL-terminated; with agent_preset:
                                        the user's extra arguments (may be NULL) */
  const char *agent_preset;          /* "claude", "codex" (ticket/presets.h), or NULL */
  const char *agent_prefix;          /* npm prefix to find the preset's program, or NULL */
  const char *const *extra_ro_paths; /* host paths the agent needs (its own directory) */
  const char *record_path;           /* NULL: $XDG_STATE_HOME/airlock/runs/<run>.json */
  uint64_t timeout_ms;               /* 0: the policy's wall limit */
  const char *fence_path;            /* `airlock serve`'s fence file (ticket_fence.c), or NULL */
  bool quiet;                        /* no progress lines */
  bool json;                         /* print the run record on stdout at the end */
  bool accept_unprotected;           /* run even when the audit fails (recorded, printed) */
  bool show_agent_stdout;            /* echo the agent's stdout after the run (default on) */
  /* NULL: the native sandbox. Else the Docker backend (docker.h) with these
   * settings (images, socket, networks); the ticket fills in the policy,
   * argv, environment, output descriptors and the forge's CA file, and
   * agent_argv[0] names a program inside the agent image. */
  const al_docker_opts *docker;
} al_ticket_opts;

/* The agent's command line: the storage o points into (al_ticket_agent_command). */
typedef struct al_ticket_agent_cmd {
  char path[PATH_MAX]; /* the program: absolute on the host, a name looked up in the
                          sandbox's PATH, or (docker) a path in the agent image; "" for a
                          preset */
  char **argv;         /* path and the user's arguments, malloc'd: the caller frees it */
  char dir[PATH_MAX];
  const char *ro[2]; /* the program's directory (read-only in the sandbox), NULL-terminated */
} al_ticket_agent_cmd;

/* Fill cmd->argv (cmd->path, then args[0..nargs)) and point
 * o->agent_argv at it (unless o->agent_preset: the preset's extra
 * arguments are already there), and o->extra_ro_paths at the program's
 * own directory when it is on the host outside /usr (none for docker: the
 * program is in the image). Set cmd->path first. Dies only on ENOMEM. */
void al_ticket_agent_command(al_ticket_opts *o, al_ticket_agent_cmd *cmd, char *const *args,
                             size_t nargs, bool docker);

typedef struct al_ticket_outcome {
  char run_id[33];
  int agent_status; /* exit status per sandbox.h, or -1 when the agent never ran */
  bool tokens_dead; /* every token revoked and confirmed */
  char pr_url[512]; /* as reported by the agent and checked against the forge URL */
  char record_path[4096];
  char *agent_stdout;           /* what the agent printed (capped), malloc'd; caller frees */
  bool unprotected;             /* ran with --accept-unprotected although the audit did not
                                   prove the escape budget (print AL_TICKET_UNPROTECTED_MARK) */
  bool pr_verified;             /* pr_url is the PR the forge has from this run's branch */
  char pr_reported[512];        /* what the agent reported when it is not pr_url ("" else) */
  int exit_code;                /* what `airlock ticket` exits with (common/exitcodes.h): 0 only
                                   with pr_verified; 3 no PR; 4 audit/preflight refused; 124
                                   timeout; 128+N signal N; 1 any other failure */
  const char *credentials_mode; /* "sealed" or "env" (static); NULL before the policy loaded */
  bool pr_by_supervisor;        /* the supervisor opened pr_url (safe outputs) */
  size_t gateway_requests;      /* sealed: requests the forge gateway decided */
  size_t gateway_refused;       /* ... and refused */
  char gateway_refused_by[384]; /* "reason N, reason N" */
} al_ticket_outcome;

/* The suffix of every progress and summary line of an unprotected run. */
#define AL_TICKET_UNPROTECTED_MARK "[UNPROTECTED: accepted]"

/* Run one ticket. Returns 0 when the agent ran and exited 0 and every token
 * was confirmed dead; -1 with err otherwise (out is filled as far as the
 * run got, and the record is written either way). */
int al_ticket_run(const al_ticket_opts *o, al_ticket_outcome *res, al_error *err);

/* Longest repository of a ticket plus its NUL (a GitLab full path is at
 * most 255 bytes, forge/names.h). */
#define AL_TICKET_REPO_MAX 256

/* The ticket's repository (al_ticket_parse_target's) against the policy's
 * forge.kind: OWNER/REPO for GitHub (a GitLab path is refused naming
 * forge.kind: gitlab), GROUP[/SUB...]/PROJECT for GitLab. 0, or -1 with
 * err (EINVAL) naming the repository and the rule. */
int al_ticket_repo_for_forge(const char *repo, al_forge_kind kind, al_error *err);

/* Parse "OWNER/REPO#N": OWNER/REPO by the one rule (forge/names.h
 * al_repo_name_check) or a GitLab project's full path GROUP[/SUB...]/
 * PROJECT (al_gitlab_path_check; which of the two the run's forge takes is
 * al_ticket_repo_for_forge's, once the policy is read), N 1 to 999999999;
 * repo gets the repository (repolen bytes, AL_TICKET_REPO_MAX is enough).
 * Returns 0 or -1 with err naming the rule. */

int al_ticket_parse_target(const char *s, char *repo, size_t repolen, unsigned long *number,
                           al_error *err);
/* The same, and "OWNER/REPO#KEY" (issue #31: a Jira or Linear ticket,
 * "acme/app#PROJ-7"): when what follows `#` starts with an upper-case
 * letter and key is not NULL, it must be KEY-N by the one key rule
 * (tickets/tickets.h al_tk_key_parse), key (keylen bytes) gets it and
 * *number 0; its vendor and project are checked once the policy is read
 * (al_tk_target_parse). Else key is "". */
int al_ticket_parse_target_key(const char *s, char *repo, size_t repolen, unsigned long *number,
                               char *key, size_t keylen, al_error *err);

#endif
