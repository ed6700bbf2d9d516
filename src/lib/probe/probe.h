/* airlock probe: attack the sandbox from inside and prove nothing gets out
 * (issue #7, DESIGN.md §2 "escape budget", docs/probes.md).
 *
 * Shape of one probe run:
 *
 *   outer (this process, on the host)
 *     ├─ canary process: TCP/UDP listeners on the host's loopback, a fake
 *     │  DNS resolver, an abstract unix socket, and (unconfined mode only)
 *     │  an open proxy; it logs every byte it is sent
 *     ├─ egress proxy (when the policy has a network section), resolving
 *     │  through the canary resolver so a looked-up name is observable
 *     └─ sandbox from the policy ──► `airlock probe --inside`
 *            reads its context (JSON) on stdin, runs each probe in its own
 *            child with a timeout, writes one JSON line per probe on stdout
 *
 * then the outer process adds the judgments that only the host can make:
 * canary hits, names the resolver saw, files left on the host, processes
 * that outlived the run, host /dev/shm. A probe's verdict is `blocked`,
 * `escaped`, or `inconclusive` (with the reason); inconclusive is never a
 * pass. */
#ifndef AL_PROBE_H
#define AL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "policy/policy.h"

typedef enum al_probe_verdict {
  AL_PROBE_BLOCKED = 0,
  AL_PROBE_ESCAPED = 1,
  AL_PROBE_INCONCLUSIVE = 2,
} al_probe_verdict;

/* "blocked", "escaped", "inconclusive". */
const char *al_probe_verdict_name(al_probe_verdict v);

#define AL_PROBE_EVIDENCE_MAX 240

typedef struct al_probe_result {
  const char *id;    /* static, e.g. "net.tcp-public" */
  const char *group; /* static: network, filesystem, privileges, resources, persistence,
                        credentials */
  al_probe_verdict verdict;
  char evidence[AL_PROBE_EVIDENCE_MAX]; /* one line, never a secret */
  uint32_t elapsed_ms;                  /* inside, for this probe */
} al_probe_result;

typedef struct al_probe_report {
  al_probe_result *results; /* n entries, catalogue order; owned, al_probe_report_free() */
  size_t n;
  size_t n_blocked, n_escaped, n_inconclusive;
  uint64_t elapsed_us; /* wall time of the whole run, sandbox start to judgment */
  int inner_status;    /* exit status of the inner process (sandbox.h conventions) */
} al_probe_report;

typedef struct al_probe_opts {
  const al_policy *policy; /* borrowed; the sandbox (and proxy) are made from it */
  const char *only_group;  /* run only this group, or NULL for all */
  bool preflight;          /* the fast subset only (one probe per protection) */
  /* Positive control: run the inner probes as a plain child process on the
   * host, with no sandbox, the full environment, an inherited fd and an
   * open proxy in place of the egress proxy. Every probe must then report
   * `escaped`. For tests only: it does (bounded, cleaned-up) things to the
   * host, e.g. creates and removes zero-byte files in /etc when root. */
  bool unconfined;
  const char *self_exe; /* path of the airlock binary to run inside; NULL: /proc/self/exe */
  uint64_t timeout_ms;  /* whole run; 0: 60 s (preflight: 10 s) */
  /* The ticket's preflight (issue #15): the agent's own environment
   * (NAME=VALUE, NULL-terminated, borrowed; sealed mode: placeholders),
   * set in the probe sandbox as the agent will get it; NULL: none. */
  char *const *env;
  /* The run's real tokens (NULL-terminated, borrowed), for the host-side
   * judge of cred.run-tokens only: they never enter the sandbox, not even
   * hashed. NULL: a canary token of the probe's own stands in (present in
   * the positive control's environment only). */
  const char *const *secrets;
} al_probe_opts;

/* Run the catalogue (or the subset the options select) and judge it.
 * On success returns 0 and fills *out (the caller frees it with
 * al_probe_report_free); the verdicts are in out->results. Returns -1 with
 * err when the probe run itself could not be set up (sandbox start,
 * canary, pipes) — the caller must then treat the sandbox as unproven.
 * Blocks SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGCHLD in the calling thread
 * (al_sandbox_block_signals) and, while the sandbox starts, briefly points
 * the calling process's fds 0 and 1 at pipes (restored before returning;
 * not thread-safe). Forks two helper processes (canary, proxy), both gone
 * when it returns. */
int al_probe_run(const al_probe_opts *o, al_probe_report *out, al_error *err);

/* The preflight of every ticket run (DESIGN.md §3 step 3): a throwaway
 * sandbox made from `p` runs one probe per protection (network namespace,
 * host loopback, egress proxy, read-only root, hidden home, fd hygiene,
 * capabilities, no_new_privs, seccomp, arch filter, user namespace,
 * uid map, limits, environment, lingering processes) in about 100 ms.
 *
 * Returns 0 when every probe of the subset is `blocked`; 1 when at least
 * one `escaped` or is `inconclusive` (the caller must refuse to start the
 * agent; *out says which and why); -1 with err when the preflight could
 * not run at all (refuse as well). *out is filled in the first two cases
 * and must be released with al_probe_report_free; it is zeroed on -1.
 * Same process-level side effects as al_probe_run. */
int al_probe_preflight(const al_policy *p, al_probe_report *out, al_error *err);

/* Print the report as a table (id, group, verdict, evidence) or as JSON
 * ({"results":[{id,group,verdict,evidence,ms}...],"blocked":N,...}). */
void al_probe_report_print(const al_probe_report *r, FILE *f);
int al_probe_report_print_json(const al_probe_report *r, FILE *f);

void al_probe_report_free(al_probe_report *r);

/* The catalogue as Markdown (the table of docs/probes.md). */
void al_probe_catalogue_markdown(FILE *f);

/* The hidden inner mode (`airlock probe --inside`): read the context from
 * $AIRLOCK_PROBE_CONTEXT when set (docker backend, probe/docker.h; removed
 * from the environment before any probe runs), else from fd 0, run the
 * probes, write one JSON line per probe to fd 1. Returns the
 * process exit status (0, or 2 on a bad context). Meant to be the whole
 * process: it forks one child per probe. */
int al_probe_inner_main(void);

#endif
