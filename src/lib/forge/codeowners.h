/* CODEOWNERS, read as GitHub reads it.
 *
 * Follows GitHub Docs "About code owners" (docs.github.com/en/repositories/
 * managing-your-repositorys-settings-and-features/customizing-your-repository/
 * about-code-owners): one rule per line, a gitignore-style pattern followed
 * by owners (@user, @org/team, or an e-mail address); `#` starts a comment
 * (a pattern that begins with `#` is written `\#`); the last matching line
 * wins. GitHub looks for the file in `.github/`, the root, then `docs/` of
 * the base branch and uses the first one it finds (AL_CODEOWNERS_PATHS).
 * Pure parsing: no I/O, safe on untrusted bytes (embedded NULs end a line). */
#ifndef AL_FORGE_CODEOWNERS_H
#define AL_FORGE_CODEOWNERS_H

#include <stddef.h>

/* Where GitHub looks, in order. */
extern const char *const AL_CODEOWNERS_PATHS[3];

/* Scan a CODEOWNERS text of `len` bytes for rules whose owners include one
 * of `names` (each with its leading '@', compared case-insensitively, e.g.
 * "@airlock-bot[bot]"). Writes up to `max` 1-based line numbers of such
 * rules to lines[] and returns how many rules matched in total (which may
 * exceed max). Never fails. */
size_t al_codeowners_lines_owned_by(const char *text, size_t len, const char *const *names,
                                    size_t n_names, unsigned *lines, size_t max);

#endif
