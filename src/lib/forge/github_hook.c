/* The GitHub driver's webhook check (forge/forge.h webhook_verify): pure,
 * no HTTP, so the service's fuzzed webhook parser links it alone. */
#include <errno.h>
#include <string.h>

#include "common/hmac.h"
#include "forge/forge.h"

/* "Validating webhook deliveries": X-Hub-Signature-256 = "sha256=" + hex
 * HMAC-SHA256 of the raw body with the webhook secret, compared in
 * constant time. */
int al_github_webhook_verify(const void *secret, size_t secret_len, const char *header,
                             const void *body, size_t len, al_error *err)
{
  if (header && strncmp(header, "sha256=", 7) != 0)
    return al_error_set(err, EACCES, "X-Hub-Signature-256 malformed (expected sha256=<64 hex>)");
  return al_hmac_sha256_hex_verify("X-Hub-Signature-256", "sha256=<64 hex>", secret, secret_len,
                                   header ? header + 7 : NULL, body, len, err);
}
