/* Text from a sandbox on the operator's terminal. An agent's output is
 * attacker-controlled: escape sequences could clear the screen, forge
 * airlock's own summary, set the window title or write the clipboard
 * (OSC 52). Everything shown to the operator goes through here. */
#ifndef AL_TERM_H
#define AL_TERM_H

#include <stddef.h>

/* Copy n bytes of in to a new NUL-terminated string with every C0 control
 * byte but \n and \t, DEL, and every C1 control (U+0080..U+009F, raw or
 * UTF-8 encoded) written as `\xNN`; NUL bytes likewise. The caller frees
 * the result. Aborts on out-of-memory. */
char *al_term_sanitize(const char *in, size_t n);

/* The same into out, which must hold 4 * n + 1 bytes; returns the length.
 * No allocation, no locks: safe in a thread running beside fork/clone. */
size_t al_term_sanitize_into(const char *in, size_t n, char *out);

#endif
