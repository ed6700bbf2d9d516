/* The reviewer's notes for a run's pull request (issue #6, item 5): which
 * changed files run later outside the sandbox, and whether the diff, the PR
 * body or the comments carry the run's tokens or token-shaped strings. */
#ifndef AL_RUN_REVIEW_H
#define AL_RUN_REVIEW_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

/* Why a changed file at `path` (repository-relative, '/'-separated) runs
 * outside the sandbox after the merge — a CI workflow, a git hook or
 * config, a package or build script, an agent or editor setting — or NULL
 * when it is ordinary content. The reason is a static string. The rules
 * are case-insensitive where the tools that read the files are. */
const char *al_review_runs_outside(const char *path);

/* Scan `text` for token-shaped strings (redact.h's patterns). For each,
 * append {"where": where, "fingerprint": "sha256:…", "run_token": bool} to
 * `found`, run_token being true when the fingerprint is one of run_fps.
 * Returns how many were found. The values themselves are never stored. */
size_t al_review_scan_secrets(const char *text, const char *where, const char *const *run_fps,
                              size_t nfps, json_t *found);

#endif
