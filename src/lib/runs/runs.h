/* Reading the run records `airlock ticket` writes (docs/run-record.md,
 * docs/run-record.schema.json): find one, list a directory of them, sum one
 * up, show it to a human, and remove old ones (`airlock runs`, `show`,
 * `gc`; docs/cli.md).
 *
 * A record file is untrusted input: another local user, a hostile agent's
 * text copied into it, or a truncated write may have made it. Nothing here
 * trusts a type, a length or a byte of it: a file is read only if it is a
 * regular file (never through a symlink) of at most AL_RUN_RECORD_MAX
 * bytes, parsed by jansson, and every string taken from it is printed only
 * through common/term.h's escaper. Not thread-safe (the CLI's). */
#ifndef AL_RUNS_H
#define AL_RUNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "common/error.h"

#define AL_RUN_RECORD_MAX (64u << 20) /* bytes; the record of a flooded run stays far below */
#define AL_RUN_ID_LEN 16              /* hex digits of a run id */
#define AL_RUN_SCHEMA "airlock.run-record/1"

/* The directory `airlock ticket` writes records to:
 * $XDG_STATE_HOME/airlock/runs when XDG_STATE_HOME is absolute, else
 * $HOME/.local/state/airlock/runs (HOME absolute, else /tmp). With create,
 * the missing directories are made, mode 0700. Returns 0, or -1 when the
 * path does not fit in n bytes. */
int al_runs_default_dir(char *out, size_t n, bool create, al_error *err);

/* Is name a record's file name: AL_RUN_ID_LEN lower-case hex digits and
 * ".json" (airlock ticket's), or ROW-ATTEMPT.json, decimal (airlock
 * serve's records/)? */
bool al_runs_is_record_name(const char *name);

/* Read and check one record: the file `name` in the directory dirfd (or a
 * path, with dirfd AT_FDCWD). It must be a regular file (O_NOFOLLOW: not a
 * symlink; O_NONBLOCK: not a FIFO that hangs), at most AL_RUN_RECORD_MAX
 * bytes, one JSON object whose "schema" is AL_RUN_SCHEMA and whose
 * "run_id" is AL_RUN_ID_LEN lower-case hex digits. Returns 0 with *out (a
 * new reference; the caller json_decref()s it) and, when st is not NULL,
 * the file's stat; or -1 with err naming the file and the rule it broke. */
int al_run_record_loadat(int dirfd, const char *name, json_t **out, struct stat *st, al_error *err);

/* One record summed up for a table. Strings are the record's own bytes,
 * cut to their buffers, NOT escaped: print them through common/term.h. */
typedef struct al_run_summary {
  char id[AL_RUN_ID_LEN + 1];
  char started_at[32];   /* as recorded (RFC 3339), or "" */
  char target[160];      /* "OWNER/REPO#N", or "" */
  int exit_status;       /* airlock ticket's exit status, -1 when the record predates it */
  char result[96];       /* "pull request", "no changes", "failed: PHASE", "refused: PHASE",
                            "timeout", "interrupted: SIGNAL", "unknown" */
  char pr_url[512];      /* the verified pull request, or "" */
  long long denials;     /* proxy denials + gateway refusals; -1 when not recorded */
  long long duration_ms; /* -1 when not recorded */
} al_run_summary;

/* Sum up a record (any JSON value: what is missing or of the wrong type is
 * left empty or -1). Never fails. */
void al_run_summarize(const json_t *rec, al_run_summary *s);

/* The summary as a JSON object (a new reference): id, started_at, target,
 * exit_status (null when unknown), result, pull_request (null), denials
 * (null), duration_ms (null). */
json_t *al_run_summary_json(const al_run_summary *s);

/* One file of a record directory, as al_runs_list() found it. */
typedef struct al_run_entry {
  char name[40]; /* "<id>.json" or serve's "<row>-<attempt>.json" */
  struct timespec mtime;
  bool ok;            /* a readable record (al_run_record_loadat) */
  char problem[256];  /* when !ok: why not (unescaped) */
  al_run_summary sum; /* when ok */
} al_run_entry;

/* The records of dir (files with a record's name; other files are not
 * looked at), newest first: by modification time (when the record was
 * written, at the end of its run), then by name. A file that is not a
 * readable record is an entry with ok false and the reason. Returns 0 with
 * *out (free with free()) and *n, or -1 with err when the directory cannot
 * be read (a missing directory is 0 entries). */
int al_runs_list(const char *dir, al_run_entry **out, size_t *n, al_error *err);

/* RUN as the user gave it: a path when it holds a '/' or ends in ".json"
 * and names a file; otherwise a run id or a unique prefix of one (hex, at
 * least 4 digits) among dir's record names, else among the ids inside the
 * records not named by their id (airlock serve's ROW-ATTEMPT.json).
 * Returns 0 with *path_out (the
 * caller frees it), or -1 with err (no such run, an ambiguous prefix with
 * the candidates, a malformed id). */
int al_runs_resolve(const char *dir, const char *run, char **path_out, al_error *err);

/* Is RUN spelt as al_runs_resolve() takes it (a path: holds a '/' or ends
 * in ".json"; else 4 to 16 lower-case hex digits), without looking at any
 * file? Returns 0, or -1 with err (EINVAL, naming RUN and the rule): what
 * `airlock show` reports as a usage error before reading anything. */
int al_runs_ref_check(const char *run, al_error *err);

/* The list of `airlock runs` to out: the first `shown` of the n entries
 * of al_runs_list (dir: where they are, for the file names). json: a JSON
 * array of al_run_summary_json objects with "file" (and "error" for an
 * entry that is not a record), ASCII only; else a table (ID, STARTED,
 * TICKET, RESULT, DENIALS, PULL REQUEST), every cell escaped
 * (al_term_escape_line), "no run records in DIR" when there are none, and
 * how many older ones were not shown. 0, or -1 when the JSON could not be
 * made. */
int al_runs_print_list(const char *dir, const al_run_entry *v, size_t n, size_t shown, bool json,
                       FILE *out);

/* A record for a human (`airlock show`): the run, its phases with their
 * times, the proxy's and the gateway's decisions grouped by decision,
 * host and reason with counts, each refusal of the gateway, the pull
 * request, the review notes and the revocation of each token. Every line
 * passes through al_term_escape_line() (nothing of the record reaches the
 * terminal raw); long lists are cut with "... N more". `path` (may be NULL)
 * is shown as where the record is. Writes to out; never fails. */
void al_run_show(const json_t *rec, const char *path, FILE *out);

/* Retention (`airlock gc`). A record is removed when it is not among the
 * `keep` newest (with has_keep) AND is older than older_than_ms by its
 * modification time against now (with has_older_than); at least one of the
 * two must be set. Only files al_run_record_loadat() accepts are removed
 * (and only when the file is still the one that was checked: same device
 * and inode); any other file is kept and reported. With dry_run nothing is
 * removed. */
typedef struct al_runs_gc_opts {
  bool has_keep;
  size_t keep;
  bool has_older_than;
  uint64_t older_than_ms;
  bool dry_run;
  time_t now;
} al_runs_gc_opts;

typedef struct al_runs_gc_result {
  size_t removed;     /* removed (or, with dry_run, would be) */
  size_t kept;        /* records kept */
  size_t not_records; /* files kept because they are not run records */
} al_runs_gc_result;

/* what: "remove" (or "would remove"), "keep", "not a run record", with
 * the file name and a reason (unescaped). */
typedef void (*al_runs_gc_report)(void *ctx, const char *what, const char *name, const char *why);

/* Returns 0 with *res, or -1 with err (the directory cannot be read, an
 * unlink failed: the others are still tried). */
int al_runs_gc(const char *dir, const al_runs_gc_opts *o, al_runs_gc_report report, void *ctx,
               al_runs_gc_result *res, al_error *err);

#endif
