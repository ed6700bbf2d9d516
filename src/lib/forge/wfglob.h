/* GitHub Actions filter patterns (branches, branches-ignore, tags), judged
 * against every branch airlock's runs can push, not one name at a time.
 *
 * Follows GitHub Docs "Workflow syntax for GitHub Actions", "Filter pattern
 * cheat sheet": `*` is zero or more characters but not `/`; `**` zero or
 * more of any character; `+` one or more of the preceding character; `?`
 * zero or one of the preceding character; `[...]` one character listed or
 * in a range (a-z, A-Z, 0-9 only); `\` escapes the next character; `!` at
 * the start of a pattern negates it; patterns are read in order and the
 * last one that matches a name decides (a later `!` excludes, a later
 * positive includes again). Matching is case-sensitive (git ref names).
 * Older versions of the same page described `?` as "zero or one single
 * character" (`Octoc?t` matches `Octocat`); a list whose answer differs
 * between the two readings is refused as ambiguous.
 *
 * A subject is a set of names: one exact name (the base branch), or the
 * run branches `PREFIX<digits>-<8 lowercase hex>` (ticket/ticket.c names
 * them so). al_wfg_judge walks the product of the subject's automaton and
 * the patterns' (subset construction), so "some run branch matches" and
 * "every run branch matches" are decided exactly, with an example name for
 * each answer. Pure: no I/O, safe on untrusted bytes, bounded work. */
#ifndef AL_FORGE_WFGLOB_H
#define AL_FORGE_WFGLOB_H

#include <stdbool.h>
#include <stddef.h>

/* The longest pattern list and pattern the judge reads; beyond them a list
 * is refused (never guessed). */
#define AL_WFG_MAX_PATTERNS 64
#define AL_WFG_MAX_PATTERN_LEN 255

typedef struct al_wfg_subject {
  const char *name;       /* one exact name, or NULL */
  const char *run_prefix; /* name NULL: the run branches PREFIX<digits>-<8 hex> */
} al_wfg_subject;

typedef struct al_wfg_result {
  bool some_selected;   /* a name of the subject is selected by the list */
  bool some_unselected; /* a name of the subject is not */
  char selected_example[128];
  char unselected_example[128];
} al_wfg_result;

/* Judge the pattern list pats[0..n) (each NUL-terminated, as written in
 * the workflow file) against subject: a name is selected when the last
 * pattern it matches is positive (no `!`). Returns 0 with *res filled, or
 * -1 with a reason in why[whyn] (a pattern GitHub's rules do not define:
 * an unclosed or empty `[`, a range outside a-z/A-Z/0-9, a quantifier with
 * nothing to repeat, `\` at the end; too many or too long patterns; an
 * answer that depends on the reading of `?`; the work bound reached). */
int al_wfg_judge(const char *const *pats, size_t n, const al_wfg_subject *subject,
                 al_wfg_result *res, char *why, size_t whyn);

#endif
