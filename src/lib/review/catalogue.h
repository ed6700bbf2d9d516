/* The catalogue of files that run outside the sandbox later: what a merged
 * pull request can make CI, git, a build tool, a test runner, an editor,
 * an environment loader or the next coding agent execute or obey. One data
 * table (review/catalogue.c), listed in docs/review.md.
 *
 * A rule's pattern is an fnmatch(3) pattern without FNM_PATHNAME (so `*`
 * crosses '/'), in lower case, matched against every suffix of the path
 * that starts at a component boundary: `.husky/`+anything flags `.husky/pre-commit`
 * and `sub/.husky/pre-commit` alike ("at any depth"). Before matching, the
 * path is folded the way the file systems that check it out fold names
 * (git's verify_path, is_hfs_dotgit, is_ntfs_dotgit): ASCII case, the
 * code points HFS+ ignores (U+200C..U+200F, U+202A..U+202E,
 * U+206A..U+206F, U+FEFF), trailing dots and spaces of a component and an
 * NTFS stream suffix (`:…`), and the 8.3 short names `git~N` / `gitmod~N`;
 * so `sub/.GIT/hooks/x`, `.git./config` and `.g\u200cit/config` all count
 * as a `.git` directory. */
#ifndef AL_REVIEW_CATALOGUE_H
#define AL_REVIEW_CATALOGUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One family of the catalogue: `id` is the stable name in the run record
 * ("ci", "git", ...), `title` the heading shown to the reviewer. */
typedef struct al_review_family {
  const char *id;
  const char *title;
} al_review_family;

/* One path rule. A rule with family NULL marks a path as ordinary content
 * and stops the search (e.g. `.gitignore` before the `.git*` catch-all). */
typedef struct al_review_rule {
  const char *family;
  const char *pattern;
  const char *why;
} al_review_rule;

/* One content rule: a file whose path matches `pattern` (as above) and whose
 * text holds `needle` (case-sensitive, anywhere) runs something later, e.g.
 * `//go:generate` in a .go file. */
typedef struct al_review_content_rule {
  const char *family;
  const char *pattern;
  const char *needle;
  const char *why;
} al_review_content_rule;

/* The tables, for docs and tests: *n gets the number of entries. Static. */
const al_review_family *al_review_families(size_t *n);
const al_review_rule *al_review_rules(size_t *n);
const al_review_content_rule *al_review_content_rules(size_t *n);

/* The title of family `id`, or `id` itself when it is not in the table. */
const char *al_review_family_title(const char *id);

/* The first path rule that flags `path` (repository-relative, '/'-separated,
 * any bytes), or NULL when it is ordinary content. A path over 4 KiB is
 * flagged by a rule of its own (family "name"). Pure, thread-safe. */
const al_review_rule *al_review_catalogue_match(const char *path);

/* The first content rule that flags `path` given text (len bytes, any
 * bytes, not NUL-terminated), or NULL. */
const al_review_content_rule *al_review_content_match(const char *path, const char *text,
                                                      size_t len);

/* GitLab's CI definition (issue #30): .gitlab-ci.yml, .gitlab-ci.yaml, a
 * file under .gitlab/ci/, or ci_config_path (the project's setting, NULL or
 * "" for none; a path outside the project, with '@' or ':', names none
 * here). Exact, case-sensitive: GitLab reads these names as they are. */
bool al_review_is_gitlab_ci_path(const char *path, const char *ci_config_path);

/* Does the head tree change GitLab's CI definition against the base tree?
 * Both are forge.h's tree shape ({path: {mode, type, sha}}); an entry added,
 * removed, or with another sha or mode counts. Returns 1 with the first such
 * path in out (n bytes, truncated, NUL-terminated), 0 when none differs, -1
 * when a tree is not an object (the caller fails closed). */
int al_review_gitlab_ci_changed(const json_t *base, const json_t *head, const char *ci_config_path,
                                char *out, size_t n);

/* Fold `path` as described above into out (outsz bytes; truncated, always
 * NUL-terminated). Returns the folded length. Exposed for tests. */
size_t al_review_fold_path(const char *path, char *out, size_t outsz);

#endif
