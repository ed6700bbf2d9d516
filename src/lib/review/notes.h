/* The review notes as the reviewer reads them: escaped names, links and
 * images found in what the agent wrote, the Markdown posted on the pull
 * request, and the lines of the terminal summary. Pure functions over the
 * run record (no network): the review phase (ticket_review.c) fills
 * record.review, these render it. Every string the agent controls (file
 * names, symlink targets, URLs, hosts) goes through al_review_escape and
 * then a Markdown code span, so it cannot forge the notes' structure. */
#ifndef AL_REVIEW_NOTES_H
#define AL_REVIEW_NOTES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A display form of untrusted text s that is printable ASCII except for
 * ordinary UTF-8 letters: `\` as `\\`; C0 controls, DEL and bytes that
 * are not UTF-8 as `\xNN`; C1 controls, bidirectional controls (U+061C,
 * U+200E/F, U+202A..U+202E, U+2066..U+2069) and invisible characters
 * (U+00AD, U+200B..U+200D, U+2060..U+2064, U+FEFF, U+FFF9..U+FFFB) as
 * `\u{XXXX}`. At most max bytes of output before a final "..." (0: no
 * limit). Never NULL (aborts on OOM); the caller frees. */
char *al_review_escape(const char *s, size_t max);

/* Why the name s needs its own note, or NULL: "control characters",
 * "bidirectional controls", "invisible characters", "bytes that are not
 * UTF-8 (shown by the forge as U+FFFD)", "leading or trailing spaces".
 * Static strings. */
const char *al_review_name_issue(const char *s);

/* A CommonMark code span holding s (already escaped: no line breaks):
 * a backtick fence one longer than the longest run inside, padded with
 * spaces when s starts or ends with a backtick or a space (CommonMark
 * 0.30 §6.1). malloc'd. */
char *al_review_md_code(const char *s);

/* Append to links one {"where", "url", "image"} per URL in text: http(s),
 * ftp and protocol-relative URLs, Markdown link and image targets, HTML
 * src/href/srcset/poster attributes (an image is what the forge fetches
 * when the page is shown: a Markdown image, <img>, <video>, <audio>,
 * <source>, <picture>). url is escaped and at most 300 bytes. At most 200
 * per call. Returns how many were added. */
size_t al_review_find_links(const char *text, const char *where, json_t *links);

/* The notes as GitHub-flavoured Markdown for one PR comment (at most
 * ~60000 characters: lists are shortened, never the counts), from the run
 * record rec (its run_id, review, and the decisions the review counted in
 * review.blocked) and the SHA-256 (64 hex) of the record file as written
 * (NULL: "not written yet"). The first line is the marker
 * `<!-- airlock-review-notes run=<run_id> -->`. Token-shaped strings are
 * redacted (common/redact.h), as in the record. malloc'd. */
char *al_review_notes_markdown(json_t *rec, const char *record_sha256);

/* How many distinct files review.runs_outside_sandbox names (one file may
 * match several families: a hook that is also a build step is one file).
 * 0 when outside is not an array. */
size_t al_review_outside_files(json_t *outside);

/* The notes for the terminal, one item a line, each line starting with
 * prefix and ending with suffix (NULL: none; e.g. the unprotected mark);
 * names escaped (al_review_escape), the whole line passed through
 * common/term.h and redacted (common/redact.h). At most max_items items per section (0: 50). Not
 * thread-safe (one caller: the supervisor). */
void al_review_print_summary(json_t *review, FILE *out, const char *prefix, const char *suffix,
                             size_t max_items);

#endif
