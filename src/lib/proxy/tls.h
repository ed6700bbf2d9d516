/* TLS ClientHello parser for the SNI gate (RFC 8446 §4.1.2 and §5.1,
 * RFC 6066 §3, draft-ietf-tls-esni for the ECH extension code point).
 * Reads the client's first bytes of a tunnel, possibly several TLS records
 * and possibly incomplete, and reports the server_name. */
#ifndef AL_PROXY_TLS_H
#define AL_PROXY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many bytes of the client's first flight are buffered. */
#define AL_TLS_HELLO_MAX 16384

#define AL_TLS_EXT_SERVER_NAME 0x0000
#define AL_TLS_EXT_ECH 0xfe0d

typedef struct al_tls_hello {
  bool has_sni;  /* a server_name extension is present */
  char sni[256]; /* its one host_name, NUL-terminated (raw bytes, checked printable) */
  size_t sni_len;
  bool ech;           /* an encrypted_client_hello extension is present */
  size_t hello_bytes; /* bytes of buf the records carrying the ClientHello took */
} al_tls_hello;

/* Parse the ClientHello at the start of buf[0..len). Handshake records may
 * split the message anywhere (RFC 8446 §5.1). Returns 1 with *out filled
 * when the whole ClientHello is present and well formed, 0 when more bytes
 * are needed (len < AL_TLS_HELLO_MAX and nothing invalid yet), -1 with a
 * static reason code in *why: "not-tls", "tls-malformed", "tls-too-large",
 * "sni-malformed" (several names, a non-host_name entry, a bad length, a
 * second server_name extension). No SNI and ECH are reported in *out, not
 * as errors; the caller decides. */
int al_tls_parse_client_hello(const uint8_t *buf, size_t len, al_tls_hello *out, const char **why);

#endif
