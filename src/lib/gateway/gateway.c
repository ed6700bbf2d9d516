/* The forge gateway's process: start, hand-shake with the supervisor, stop.
 * See gateway.h for the picture. */
#include "gateway/gateway.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

int al_gateway_placeholder(char out[65], al_error *err)
{
  static const char prefix[] = "airlock-placeholder-";
  char hex[45];
  if (al_random_hex(hex, 22, err) < 0)
    return al_error_wrap(err, "placeholder");
  snprintf(out, 65, "%s%s", prefix, hex);
  return 0;
}

int al_gateway_start(const al_gateway_opts *o, al_gateway **out, al_error *err)
{
  (void)o;
  *out = NULL;
  return al_error_set(err, ENOSYS, "forge gateway: not implemented yet");
}

const char *al_gateway_ca_pem(const al_gateway *g)
{
  (void)g;
  return NULL;
}

const al_proxy_handoff *al_gateway_handoff(const al_gateway *g)
{
  (void)g;
  return NULL;
}

pid_t al_gateway_pid(const al_gateway *g)
{
  (void)g;
  return -1;
}

int al_gateway_stop(al_gateway *g, al_error *err)
{
  (void)g;
  (void)err;
  return 0;
}

void al_gateway_free(al_gateway *g)
{
  (void)g;
}
