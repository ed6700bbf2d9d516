/* Redaction of secrets in any text that may reach a log, a run record or a
 * terminal. One place, used by every log of the project.
 *
 * Redacted: the exact values of tokens registered with al_redact_register()
 * (raw; percent-encoded in any mix of literal and %XX bytes, either hex
 * case; and base64("x-access-token:" + token), the Basic credentials git
 * sends, with or without padding), and anything shaped like a GitHub token:
 * gh[pousr]_[A-Za-z0-9._-]{36,} and github_pat_[A-Za-z0-9_]{22,} (no upper
 * bound; newer tokens are ~500 characters). A redacted span becomes
 * "[REDACTED sha256:<12 hex>]": for a registered value, the fingerprint of
 * the value itself (whatever form matched), so logs and lease records agree;
 * for a pattern match, that of the matched text.
 *
 * Thread-safe (one mutex): the broker's worker threads log while the main
 * thread registers and unregisters. */
#ifndef AL_REDACT_H
#define AL_REDACT_H

#include <stdbool.h>
#include <stddef.h>

/* Register a live secret value (copied; no fixed limit). Values shorter
 * than 8 bytes are ignored (too likely to match ordinary text). Returns 0. */
int al_redact_register(const char *secret);
/* Forget a value (after revocation) and wipe the copies. NULL is a no-op. */
void al_redact_unregister(const char *secret);
/* Forget and wipe all registered values. */
void al_redact_clear(void);

/* Return a malloc'd copy of text with every secret replaced. Never NULL:
 * aborts on out-of-memory (a caller must never fall back to the raw text).
 * The caller frees. */
char *al_redact(const char *text);

/* True when text contains a registered secret or a token-shaped string. */
bool al_redact_contains_secret(const char *text);

/* SHA-256 fingerprint of a secret for logs: "sha256:" + 12 hex digits into
 * out (at least 20 bytes). */
void al_secret_fingerprint(const char *secret, char out[20]);

#endif
