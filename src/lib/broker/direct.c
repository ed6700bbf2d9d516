/* The supervisor revokes what it holds: see direct.h. */
#include "broker/direct.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "forge/forge.h"
#include "forge/ghapi.h"

void al_direct_revoke(void *ctx, al_role role, const char *token, bool *revoked, bool *confirmed,
                      char *error, size_t n)
{
  (void)role;
  const al_direct_forge *f = ctx;
  *revoked = *confirmed = false;
  if (!f || !f->api_url) {
    snprintf(error, n, "the supervisor knows no forge API URL to revoke at (policy forge.api_url)");
    return;
  }
  al_ghapi_opts go = {.ca_file = f->ca_file,
                      .timeout_ms = 10000,
                      .retries = 2,
                      .max_wait_ms = 10000,
                      .wipe_bodies = true};
  al_ghapi *api = NULL;
  al_error e = {0};
  if (al_ghapi_open(f->api_url, &go, &api, &e) < 0) {
    snprintf(error, n, "%s", e.msg);
    return;
  }
  al_ghapi_set_resolve(api, f->resolve);
  al_ghapi_set_deadline(api, f->deadline_ms ? f->deadline_ms : al_now_ms() + 30000);
  al_forge_ops_of(f->kind)->token_revoke(api, token, revoked, confirmed, error, n);
  al_ghapi_free(api);
}
