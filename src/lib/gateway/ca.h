/* The forge gateway's per-run certificate authority (issue #15), in memory
 * only: an EC P-256 CA (basicConstraints CA:TRUE pathlen 0, keyUsage
 * keyCertSign + cRLSign, X.509 name constraints permitting only the forge
 * host names, RFC 5280 §4.2.1.10) and one leaf per host (SAN = the host, an
 * IP SAN for an IP literal; EKU serverAuth). The CA key never leaves the
 * gateway process; only the CA certificate's PEM is handed out. */
#ifndef AL_GATEWAY_CA_H
#define AL_GATEWAY_CA_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define AL_GW_CA_MAX_HOSTS 4
#define AL_GW_CA_MARGIN_MS (3600ull * 1000) /* added to the lifetime; 1 h */

typedef struct al_gw_ca {
  EVP_PKEY *ca_key, *leaf_key; /* one leaf key for all leaves */
  X509 *ca;
  size_t n;
  struct {
    char host[256];
    X509 *cert;
  } leaf[AL_GW_CA_MAX_HOSTS];
  char *ca_pem; /* malloc'd, NUL-terminated */
} al_gw_ca;

/* Make the CA and a leaf for each of hosts[0..n) (canonical names or IP
 * literals, n <= AL_GW_CA_MAX_HOSTS, duplicates skipped). notBefore is
 * 5 min in the past (clock skew), notAfter lifetime_ms + AL_GW_CA_MARGIN_MS
 * from now. run_id goes into the CA's subject CN. Returns 0 or -1 with err
 * (OpenSSL's reason). */
int al_gw_ca_make(al_gw_ca *ca, const char *const *hosts, size_t n, uint64_t lifetime_ms,
                  const char *run_id, al_error *err);

/* The leaf for host, or NULL. */
X509 *al_gw_ca_leaf(const al_gw_ca *ca, const char *host);

void al_gw_ca_free(al_gw_ca *ca);

#endif
