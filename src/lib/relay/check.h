/* The model relay's upstream trust, shared by the relay's server and the
 * supervisor's check before the agent starts (issue #27 item 5).
 *
 * Each upstream is trusted through relay.ca_file (a PEM bundle in place of
 * the system store) or the system store, with host-name verification
 * (RFC 6125 via SSL_set1_host) and SNI (RFC 6066 §3), and, with
 * relay.pubkey_pin, the SHA-256 of the certificate's SubjectPublicKeyInfo
 * (DER, RFC 5280 §4.1.2.7) must be one of the pins, in curl's
 * --pinnedpubkey form `sha256//BASE64` (RFC 7469 §2.4's pin-sha256 value). */
#ifndef AL_RELAY_CHECK_H
#define AL_RELAY_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"

/* What the check of one upstream found: AL_RELAY_UP_OK, or the step that
 * failed. */
typedef enum al_relay_up_failure {
  AL_RELAY_UP_OK = 0,
  AL_RELAY_UP_DNS,        /* the host did not resolve */
  AL_RELAY_UP_CONNECT,    /* no TCP connection to any of its addresses */
  AL_RELAY_UP_TLS,        /* the handshake failed (not a verification) */
  AL_RELAY_UP_TLS_VERIFY, /* the chain or the host name did not verify */
  AL_RELAY_UP_PIN,        /* verified, but the public key matches no pin */
  AL_RELAY_UP_TIMEOUT,    /* the deadline passed (connect or handshake) */
} al_relay_up_failure;

/* Its name as the record and the messages say it: "ok", "dns", "connect",
 * "tls", "tls-verify", "pin-mismatch", "timeout". */
const char *al_relay_up_failure_name(al_relay_up_failure f);

/* A TLS client context for upstream u: TLS 1.2 at least, peer verification
 * on, ALPN http/1.1, trust from u->ca_file alone when given, else the
 * system store. Returns the context (the caller frees it with
 * SSL_CTX_free; void * to keep OpenSSL out of this header) or NULL with
 * err (EINVAL naming relay.ca_file when it cannot be loaded). */
void *al_relay_tls_ctx(const al_relay_upstream *u, al_error *err);

/* After a successful handshake on ssl (an SSL *): does the peer
 * certificate's SPKI match one of pins (relay.pubkey_pin's form)? 0 yes,
 * -1 no; got (n bytes) gets "sha256//BASE64" of the key that was seen. */
int al_relay_pin_match(void *ssl, const char *pins, char *got, size_t n);

/* Check upstream u once from here, as the relay will reach it: resolve
 * its host (or use u->pin, the address it is pinned to), connect over
 * TCP, handshake TLS with al_relay_tls_ctx's trust and u->host as SNI and
 * verified name, and match u->pubkey_pin. Nothing is sent after the
 * handshake (no request, no key). All of it within timeout_ms. Returns
 * the step that failed (AL_RELAY_UP_OK: all held); why (n bytes) gets one
 * sentence: what failed and why, without advice. */
al_relay_up_failure al_relay_check_upstream(const al_relay_upstream *u, uint64_t timeout_ms,
                                            char *why, size_t n);

#endif
