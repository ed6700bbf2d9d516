/* GHE-style API paths mapped onto the rules' paths. See apipath.h. */
#include "gateway/apipath.h"

#include <string.h>

#include "gateway/rules.h"

bool al_gw_api_path_is_graphql(const char *api_prefix, const char *path)
{
  return strcmp(path, api_prefix[0] ? "/api/graphql" : "/graphql") == 0;
}

bool al_gw_api_path_normalize(const char *api_prefix, char path[AL_GW_PATH_MAX])
{
  static const char v3[] = "/api/v3/";
  if (!api_prefix[0]) {
    if (strncmp(path, v3, sizeof v3 - 1) == 0 && path[sizeof v3 - 1] != '\0')
      memmove(path, path + sizeof v3 - 2, strlen(path + sizeof v3 - 2) + 1);
    else if (strcmp(path, "/api/graphql") == 0)
      memcpy(path, "/graphql", sizeof "/graphql");
  } else if (strcmp(path, "/graphql") == 0) {
    memcpy(path, "/api/graphql", sizeof "/api/graphql");
  }
  return al_gw_api_path_is_graphql(api_prefix, path);
}

unsigned al_gw_api_path_map(unsigned sides, const char *api_prefix, const char *path,
                            char out[AL_GW_PATH_MAX])
{
  size_t n = strlen(path);
  if (n >= AL_GW_PATH_MAX)
    n = AL_GW_PATH_MAX - 1;
  memcpy(out, path, n);
  out[n] = '\0';
  if (sides == AL_GW_SIDE_API) {
    (void)al_gw_api_path_normalize(api_prefix, out);
    return sides;
  }
  if (sides == AL_GW_SIDE_GIT &&
      ((strncmp(path, "/api/v3/", 8) == 0 && path[8]) || strcmp(path, "/api/graphql") == 0)) {
    if (api_prefix[0] && strcmp(path, "/api/graphql") != 0 &&
        strncmp(path, api_prefix, strlen(api_prefix)) != 0)
      return sides; /* an API prefix other than /api/v3: not this host's API */
    (void)al_gw_api_path_normalize(api_prefix, out);
    return AL_GW_SIDE_API;
  }
  return sides;
}
