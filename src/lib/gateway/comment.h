/* The forge gateway's reader of an agent comment (issue #26 items 2 and
 * 4): the request body of REST "Create an issue comment"
 * (docs.github.com/rest/issues/comments#create-an-issue-comment), which
 * the gateway reads whole before anything goes upstream. The body must be
 * a JSON object whose one member is `body`, a string (the page's only
 * body parameter); the text is rewritten by the one safe-text rewriter
 * (common/safetext.h) and re-serialised, so the forge gets airlock's
 * rendering, never the agent's bytes. Pure functions; fuzzed
 * (tests/fuzz/fuzz_gw_comment.c). */
#ifndef AL_GATEWAY_COMMENT_H
#define AL_GATEWAY_COMMENT_H

#include <stddef.h>

#include "common/safetext.h"

#define AL_GW_COMMENT_BODY_MAX (256 * 1024) /* bytes of a comment's request body */
#define AL_GW_COMMENT_NAME_MAX 64           /* bytes of a member name in a refusal */

/* Read in[0..len) as {"body": STRING} (RFC 8259; jansson, duplicate names
 * refused, nothing after the value). On success *text is the string,
 * malloc'd and NUL-terminated (it holds no NUL: jansson refuses \u0000),
 * its length in *text_len; the caller frees it. Returns 0, or -1 with a
 * static *why: "comment-not-json" (not JSON, not UTF-8, a name given
 * twice, trailing bytes), "comment-not-object", "comment-member-refused"
 * (any member but body; `bad` holds its name, printable), "comment-body-
 * missing", "comment-body-not-string". bad: AL_GW_COMMENT_NAME_MAX + 1
 * bytes, "" unless a member is named. */
int al_gw_comment_body(const char *in, size_t len, char **text, size_t *text_len, const char **why,
                       char *bad);

/* Read in[0..len) as al_gw_comment_body does, rewrite the text with
 * al_safetext_render (airlock's header first, the agent's text quoted and
 * made inert; links and images to forge_hosts, NULL-terminated, may stay;
 * at most AL_SAFETEXT_MAX bytes) and serialise {"body": REWRITTEN} again
 * (jansson, compact). *out: malloc'd, NUL-terminated, *out_len bytes; the
 * caller frees it. counts, when not NULL, gets what was changed. Returns 0,
 * or -1 with *why (al_gw_comment_body's, or "comment-rewrite-failed") and
 * bad as there. */
int al_gw_comment_rewrite(const char *in, size_t len, const char *const *forge_hosts, char **out,
                          size_t *out_len, struct al_safetext_counts *counts, const char **why,
                          char *bad);

#endif
