/* The sandbox's trust store (issue #17): the system's CA bundle plus the
 * run's extra CAs (forge.ca_file, the sealed gateway's run CA), never one
 * file alone, so that pointing SSL_CERT_FILE & co. at a private forge's CA
 * does not break every other TLS host inside. */
#ifndef AL_RUN_CABUNDLE_H
#define AL_RUN_CABUNDLE_H

#include <stddef.h>

#include "common/error.h"

/* The concatenation, PEM: the first system bundle that exists
 * (/etc/ssl/certs/ca-certificates.crt (Debian), /etc/pki/tls/certs/ca-bundle.crt
 * (Fedora), /etc/ssl/cert.pem; none is not an error), then each file of
 * `files` (NULL-terminated, may be NULL; each at most 1 MiB and must hold a
 * `-----BEGIN CERTIFICATE-----`), then each PEM text of `pems` (same).
 * malloc'd, NUL-terminated; *len its length. EINVAL names a file or text
 * that holds no certificate; errno of the failing read otherwise. */
char *al_ca_bundle_text(const char *const *files, const char *const *pems, size_t *len,
                        al_error *err);

/* Write that bundle to a new directory (mode 0755, under $TMPDIR or /tmp)
 * as ca-bundle.pem (mode 0644: certificates are public), for the sandbox
 * to bind read-only. path (len bytes) gets the file's path. Remove it with
 * al_ca_bundle_remove(). */
int al_ca_bundle_write(const char *const *files, const char *const *pems, char *path, size_t len,
                       al_error *err);

/* Remove the file and its directory; "" or NULL is a no-op. */
void al_ca_bundle_remove(const char *path);

#endif
