/* airlock's exit statuses: one table for every command (docs/exit-status.md,
 * each command's --help and man page). A script can tell "a PR a human must
 * review exists" (0) from every way of not getting there. `airlock run`
 * passes its command's own status through and adds only the 124..128+N
 * codes, as timeout(1) and env(1) do. */
#ifndef AL_EXITCODES_H
#define AL_EXITCODES_H

enum al_exit {
  AL_EXIT_OK = 0,           /* ticket: this run's one PR exists and is verified on the forge */
  AL_EXIT_FAILED = 1,       /* the run failed or was refused (see the message and the record) */
  AL_EXIT_USAGE = 2,        /* bad command line, or a file it names: nothing started or written */
  AL_EXIT_NO_CHANGES = 3,   /* the agent finished but no PR from this run's branch exists */
  AL_EXIT_SECURITY = 4,     /* refused for security: the audit or the preflight did not hold */
  AL_EXIT_TIMEOUT = 124,    /* the wall-clock limit was reached; the sandbox was killed */
  AL_EXIT_CANNOT_RUN = 125, /* could not start the work: no broker (token lease), a setup */
  AL_EXIT_NOT_EXEC = 126,   /* run: the command is not executable */
  AL_EXIT_NOT_FOUND = 127,  /* run: the command was not found */
  AL_EXIT_SIGNAL = 128,     /* + N: interrupted (or killed) by signal N */
};

/* The exit-status table as --help prints it (one line per code, each
 * starting with two spaces). */
#define AL_EXIT_TABLE                                                                              \
  "  0    success (ticket: this run's one pull request exists, verified on the forge)\n"           \
  "  1    the run failed or was refused (the message says why; so does the record)\n"              \
  "  2    usage error (the command line, or a file it names): nothing was started or written\n"    \
  "  3    no changes: the agent finished but no PR from this run's branch exists\n"                \
  "  4    security refusal: the audit or the preflight probes did not hold\n"                      \
  "  124  timeout: the wall-clock limit was reached and the sandbox was killed\n"                  \
  "  125  could not start: token lease (no broker), broker (its key, socket), run and probe\n"     \
  "       (the sandbox's setup); ticket records such a failure as a failed run (1)\n"              \
  "  126, 127  airlock run: the command is not executable / not found\n"                           \
  "  128+N  interrupted by signal N (130: Ctrl-C, 143: SIGTERM)\n"

#endif
