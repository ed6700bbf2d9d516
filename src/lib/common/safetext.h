/* Safe text: what an agent wrote, made inert before airlock posts it on the
 * forge for the agent (the PR's title and body, the ticket comment, an agent
 * comment through the gateway). GitHub acts on some text the moment it is
 * posted or viewed: a mention notifies, a closing keyword closes an issue on
 * merge, an image is fetched by every viewer (the URL carries data out), raw
 * HTML can hide text (`<!--`) or load more. The rewriter turns each into
 * text GitHub shows but does not act on, and puts airlock's words first.
 *
 * It does NOT parse Markdown: every rule is context-free, so that it holds
 * in text, link text, link destinations, reference definitions, tables and
 * code alike, whatever GitHub's parser makes of the agent's bytes (a parser
 * that disagrees with GitHub's is the attacker's tool). The cost is that
 * code in the agent's text may show an `&lt;` or an invisible U+200B where
 * its bytes held a `<` or an `@`. The rules, in order (docs/gateway.md has
 * a before/after of each):
 *
 *   1. bytes: invalid UTF-8 as U+FFFD; C0 controls but TAB and LF, DEL and
 *      C1 controls as a space; CR LF and a lone CR (a CommonMark line
 *      ending) as LF; bidirectional controls as U+FFFD; one_line: TAB and
 *      LF as a space too.
 *   2. HTML (GFM spec §4.6 HTML blocks, §6.6 raw HTML, both start with `<`):
 *      every `<` as `&lt;`, and every `&` that starts something an entity
 *      could be (`&#`, `&` + a letter or digit; §6.2) as `&amp;`, so no
 *      entity can spell a `<`, `@`, `#` or `:` after this step.
 *   3. links (GFM §6.9 autolinks extension, §6.3 links): a URL whose scheme
 *      is http(s) and whose authority is exactly one of opts->forge_hosts
 *      (with an optional :port) stays; any other `scheme:` followed by `/`
 *      or `\` (and http:, https:, ftp:, mailto:, file: followed by anything)
 *      gets its colon as `[:]` and the dots of its host as `[.]`; a
 *      protocol-relative `//host` (or `\\host`) after a non-word character
 *      as `/[/]host` with its dots as `[.]`; a `www.` autolink's dots as
 *      `[.]`. So no outside link is clickable and no outside image loads.
 *   4. images (§6.4): `![` as `!\[` (a link's text, no longer an image),
 *      unless it is exactly `![alt](http(s)://FORGE-HOST/path)` with a
 *      plain alt and a path without spaces, quotes or parentheses.
 *   5. mentions (GitHub: "Mentioning people and teams"): every `@` followed
 *      by an ASCII letter or digit gets a U+200B ZERO WIDTH SPACE after it.
 *      GitHub's mention matches `@` immediately followed by the name, so
 *      `@\u200badmin` notifies no one (dependabot and Renovate post
 *      `@&#8203;user` for the same reason); U+200B, unlike a code span,
 *      is inert in every context, code spans included, and cannot be closed
 *      early by a backtick in the agent's text.
 *   6. closing keywords (GitHub: "Linking a pull request to an issue using a
 *      keyword"): close, closes, closed, fix, fixes, fixed, resolve,
 *      resolves, resolved, in any case, as a word, followed within 300
 *      non-blank ASCII bytes by
 *      anything that may be a reference (`#N`, `GH-N`, `OWNER/REPO#N`,
 *      a URL's `://`, `/issues/`, `/pull/`), get a U+200B after their
 *      first letter (`F\u200bixes #2`): no longer a keyword, whatever
 *      follows. Read with Markdown's `*_~\`\\` bytes removed first
 *      (`Fix**es**: #*2*` shows as "Fixes: #2").
 *   7. quick actions (GitLab: "GitLab quick actions"): a `/` followed by
 *      an ASCII letter with only blanks and `>` before it on its line
 *      (`/merge`, `/approve`, `/close`, `/assign @x`, `> /unlabel`) gets a
 *      U+200B after it (`/\u200bmerge`): GitLab runs a line of a
 *      description or a note that starts with a command, and
 *      `/\u200bmerge` is no command. GitHub shows it unchanged.
 *
 * Then (unless one_line) the result is quoted: every line starts with
 * "> ", so nothing the agent wrote can leave the quote (an unclosed code
 * fence ends with it) and a forged "Opened by airlock ..." footer shows as
 * the agent's quoted text; airlock's header comes before it and the
 * caller's footer after it, both outside the quote. */
#ifndef AL_SAFETEXT_H
#define AL_SAFETEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* The words airlock puts first (Markdown; itself inert by the rules above). */
#define AL_SAFETEXT_HEADER                                                                         \
  "**airlock:** the text below was written by an automated agent and is untrusted. airlock "       \
  "quoted it and made its mentions, issue keywords, HTML, images and outside links inert "         \
  "(docs/gateway.md). A human must review this change."

/* The default and the largest cap: GitHub's limit for an issue or PR body
 * and a comment is 65536 characters. */
#define AL_SAFETEXT_MAX 65536

/* What the rewriter changed, counted per rule (a run record's evidence). */
struct al_safetext_counts {
  size_t html;          /* `<` escaped */
  size_t entities;      /* `&` escaped */
  size_t links;         /* outside URLs, protocol-relative and www. links defanged */
  size_t images;        /* `![` made a link's text */
  size_t mentions;      /* `@name` made inert */
  size_t keywords;      /* closing keywords made inert */
  size_t controls;      /* bytes replaced in step 1 */
  size_t quick_actions; /* GitLab quick actions (`/merge` at a line's start) made inert */
  bool truncated;       /* the agent's text was cut to fit max_len */
  size_t in_len;        /* the agent's bytes */
  size_t shown_len;     /* how many of them were rendered (== in_len unless truncated) */
};

struct al_safetext_opts {
  /* Hosts whose http(s) links and images may stay (the forge's own, e.g.
   * "github.com", "api.github.com"), compared case-insensitively and
   * whole; NULL-terminated; NULL: none. */
  const char *const *forge_hosts;
  /* The most bytes *out may hold (without its NUL): 0 means
   * AL_SAFETEXT_MAX. The agent's text is cut (at a character) to fit,
   * header and footer never are; a note says where it was cut. */
  size_t max_len;
  /* airlock's words, first, outside the quote. NULL: AL_SAFETEXT_HEADER
   * (none with one_line); "": none. Trusted: copied as given. */
  const char *header;
  /* airlock's words after the quote (e.g. its footer). NULL or "": none.
   * Trusted: copied as given. */
  const char *footer;
  /* A title: one line, not quoted, no default header. */
  bool one_line;
  /* Filled when not NULL. */
  struct al_safetext_counts *counts;
};

/* Render len bytes of untrusted text `in` (any bytes, NULs included; NULL
 * with len 0 is the empty text) as described above. *out: malloc'd,
 * NUL-terminated, at most opts->max_len bytes; the caller frees it.
 * Errors (-1 with err, *out NULL): EINVAL when opts is NULL or header and
 * footer alone do not fit max_len (or max_len > AL_SAFETEXT_MAX). Pure:
 * no I/O, no global state; aborts only on out-of-memory. */
int al_safetext_render(const char *in, size_t len, const struct al_safetext_opts *opts, char **out,
                       al_error *err);

/* How many closing keywords with a reference after them rule 6 finds in
 * s[0..n) (any bytes): what would close an issue if s were a PR body or a
 * commit message. For the review notes' reading of commit messages, which
 * GitHub reads on merge and no rewriting can reach. */
size_t al_safetext_closing_keywords(const char *s, size_t n);

#endif
