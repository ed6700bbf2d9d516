/* Where the broker keeps what it needs to revoke every token it minted
 * and has not yet seen die: the kernel keyring (keyrings(7), libkeyutils),
 * never the disk. A broker that is SIGKILLed, crashes or loses its host
 * process tree leaves its outstanding tokens here; the next broker with
 * the same identity finds them at start and revokes each (DELETE
 * /installation/token with the token itself, then confirms 401).
 *
 * Layout: the per-uid persistent keyring (keyctl_get_persistent(3): it
 * outlives every process of the uid and expires after
 * /proc/sys/kernel/keys/persistent_keyring_expiry seconds idle, 3 days by
 * default) holds one keyring per broker identity, "airlock-broker:<16
 * hex>" (SHA-256 of the identity string: the state_dir, else the socket
 * path), which holds one "user" key per token, described by its
 * fingerprint. Each key's payload is the token and what revoking it needs
 * (role, repository, expiry); its permissions are possessor-only, and its
 * kernel timeout is the token's own expiry, so the kernel drops it when
 * GitHub would have killed the token anyway. Where persistent keyrings are
 * not built in (CONFIG_PERSISTENT_KEYRINGS), the uid's user keyring is
 * used instead: it lives as long as any process of the uid (docs:
 * contrib/README.broker.md, "Token lifetime").
 *
 * Thread-safe (each call is a few keyctl(2) calls): the mint worker puts,
 * the event loop drops. */
#ifndef AL_BROKER_KEEP_H
#define AL_BROKER_KEEP_H

#include <stddef.h>

#include "forge/app.h"
#include "common/error.h"

typedef struct al_keep al_keep;

/* Find or create the keyring of `identity` (any string; hashed). On
 * success *out is the store (al_keep_close). Errors: the keyctl errno
 * (ENOSYS/EOPNOTSUPP without keyrings, EDQUOT over the uid's key quota). */
int al_keep_open(const char *identity, al_keep **out, al_error *err);
void al_keep_close(al_keep *k);

/* "persistent keyring of uid N: airlock-broker:HEX" (or "user keyring"). */
const char *al_keep_where(const al_keep *k);

/* Keep t (its value, role, repo, expiry) until al_keep_drop(t->fp).
 * Errors: the keyctl errno. */
int al_keep_put(al_keep *k, const al_token *t, al_error *err);

/* Forget the token of fingerprint fp (confirmed dead, or expired). No-op
 * when it is not kept. */
void al_keep_drop(al_keep *k, const char *fp);

/* Every token kept, as al_tokens (values in secret memory: clear each with
 * al_token_clear, then free the array). A key that does not parse is
 * reported in the log, dropped and skipped. Returns the count (>= 0) or -1
 * with err. */
int al_keep_load(al_keep *k, al_token **out, al_error *err);

#endif
