/* Text from outside on the operator's terminal. An agent's output, a policy
 * file, an argument or a forge's answer is attacker-controlled: escape
 * sequences could clear the screen, set the window title or write the
 * clipboard (OSC 52); a carriage return or a bidi override could make a
 * line read as something else; a newline could start a line that looks
 * like airlock's own. Everything shown to the operator goes through the
 * one escaper here (al_term_escape_into); the gutter below marks whose
 * line it is. docs/output.md describes what the operator sees. */
#ifndef AL_TERM_H
#define AL_TERM_H

#include <stdbool.h>
#include <stddef.h>

/* Flags for al_term_escape_into. */
enum {
  AL_TERM_KEEP_NL = 1,  /* pass '\n' through (multi-line text: agent output) */
  AL_TERM_KEEP_TAB = 2, /* pass '\t' through */
  AL_TERM_PARTIAL = 4,  /* more bytes follow: an incomplete UTF-8 sequence at the
                           end is not consumed (see *consumed) instead of escaped */
};

/* The one escaper. Copies in[0..n) to out, NUL-terminated, with:
 *   C0 controls (but \n / \t when kept), DEL and C1 controls (raw bytes
 *   0x80..0x9f or UTF-8 U+0080..U+009F) as `\xNN` per byte;
 *   bytes that are not well-formed UTF-8 (RFC 3629 §3-4: no overlong
 *   forms, no surrogates, nothing above U+10FFFF) as `\xNN` per byte;
 *   Unicode format, bidi and separator characters (Cf, Zl, Zp: U+00AD,
 *   U+061C, U+200B..U+200F, U+2028..U+202E, U+2060..U+206F, U+FEFF, tags
 *   U+E0000..U+E007F and the rest of the table in term.c; Unicode 15) as
 *   `\uXXXX` or `\UXXXXXXXX`.
 * Everything else, printable UTF-8 included, is copied as it is. out must
 * hold 4 * n + 1 bytes. Returns the length written; *consumed (may be NULL)
 * gets how many input bytes were used (n unless AL_TERM_PARTIAL held back
 * the start of a split sequence). No allocation, no locks: safe in a
 * thread running beside fork/clone. */
size_t al_term_escape_into(const char *in, size_t n, unsigned flags, char *out, size_t *consumed);

/* al_term_escape_into(in, n, AL_TERM_KEEP_NL | AL_TERM_KEEP_TAB) into a
 * new string the caller frees. Aborts on out-of-memory. */
char *al_term_sanitize(const char *in, size_t n);

/* The same into out (4 * n + 1 bytes); returns the length. */
size_t al_term_sanitize_into(const char *in, size_t n, char *out);

/* One line for a message: NUL-terminated s with every control, \n and \t
 * included, escaped; a new string the caller frees. For error messages,
 * argv echoes and policy values. Aborts on out-of-memory. */
char *al_term_escape_line(const char *s);

/* The gutter: an agent's output shown to the operator, each line starting
 * with `prefix` (AL_TERM_AGENT_GUTTER), escaped as above, whatever the
 * reads split (mid-line, mid-UTF-8 sequence). airlock's own lines never
 * start with the gutter and the agent's always do, so no agent can print a
 * line that reads as airlock's. No allocation (the stderr relay thread). */
#define AL_TERM_AGENT_GUTTER "agent\xe2\x94\x82 " /* "agent│ " */

typedef struct al_term_gutter {
  int fd;
  const char *prefix;
  bool mid_line;         /* the last byte written was not a newline */
  unsigned char held[4]; /* the start of a UTF-8 sequence split across writes */
  size_t nheld;
  unsigned long long lines; /* lines started so far */
} al_term_gutter;

void al_term_gutter_init(al_term_gutter *g, int fd, const char *prefix);
/* Write n bytes of the agent's output through the gutter to g->fd. */
void al_term_gutter_write(al_term_gutter *g, const char *buf, size_t n);
/* The output ended: escape held bytes, end an unterminated last line with
 * a newline (so the next line, airlock's, starts at column 0). */
void al_term_gutter_end(al_term_gutter *g);

#endif
