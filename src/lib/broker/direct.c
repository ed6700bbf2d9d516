/* The supervisor revokes what it holds: see direct.h. */
#include "broker/direct.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
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
  al_ghapi_resp r = {0};
  if (al_ghapi_request(api, "DELETE", "/installation/token", token, NULL, &r, &e) < 0) {
    snprintf(error, n, "%s", e.msg);
  } else if (r.status == 204 || r.status == 401) {
    *revoked = true;
  } else {
    snprintf(error, n, "DELETE /installation/token: HTTP %ld %s", r.status, r.message);
  }
  al_ghapi_resp_free(&r);
  for (int i = 0; *revoked && i < 3 && !*confirmed; i++) {
    if (i)
      usleep(250000);
    memset(&r, 0, sizeof r);
    if (al_ghapi_get(api, "/installation/repositories?per_page=1", token, &r, &e) < 0) {
      snprintf(error, n, "%s", e.msg);
    } else if (r.status == 401) {
      *confirmed = true;
    } else {
      snprintf(error, n, "the token still answers HTTP %ld after DELETE /installation/token",
               r.status);
    }
    al_ghapi_resp_free(&r);
  }
  al_ghapi_free(api);
}
