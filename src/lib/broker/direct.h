/* The supervisor's own revocation of the tokens it holds, for when the
 * broker cannot confirm them dead (it was killed, crashed, is
 * unreachable, or answered "not confirmed"): the forge driver's
 * token_revoke (forge/forge.h; GitHub: DELETE /installation/token with the
 * token itself, then a read with it until that answers 401). Through the
 * one forge client (forge/ghapi.h), never a second HTTP stack. */
#ifndef AL_BROKER_DIRECT_H
#define AL_BROKER_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/client.h"
#include "forge/names.h"

/* Where the tokens live: what the run's policy says (forge.api_url,
 * forge.ca_file, network.pin as curl --resolve entries). Borrowed. */
typedef struct al_direct_forge {
  al_forge_kind kind; /* the policy's forge.kind (0: github) */
  const char *api_url;
  const char *ca_file;        /* or NULL: the system store */
  const char *const *resolve; /* "HOST:PORT:ADDRESS", NULL-terminated, or NULL */
  uint64_t deadline_ms;       /* al_now_ms() deadline for all the calls; 0: 30 s from now */
} al_direct_forge;

/* An al_lease_fallback (client.h): ctx is an al_direct_forge. Revokes the
 * token and looks for the 401 (three tries, 250 ms apart, within the
 * deadline); never logs the token. */
void al_direct_revoke(void *ctx, al_role role, const char *token, bool *revoked, bool *confirmed,
                      char *error, size_t n);

#endif
