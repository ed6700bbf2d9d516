/* The forge seam's table of drivers: see forge.h. */
#include "forge/forge.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"

/* Indexed by al_forge_kind (forge/names.h): one line per driver. */
static const al_forge_ops *const drivers[] = {
    [AL_FORGE_GITHUB] = &al_forge_github,
    [AL_FORGE_GITLAB] = &al_forge_gitlab,
};

const al_forge_ops *al_forge_ops_of(al_forge_kind kind)
{
  if ((size_t)kind < AL_ARRAY_SIZE(drivers) && drivers[kind])
    return drivers[kind];
  return &al_forge_github;
}

const al_forge_ops *al_forge_ops_find(const char *kind, const char *field, al_error *err)
{
  for (size_t i = 0; al_forge_kind_names[i]; i++)
    if (kind && strcmp(kind, al_forge_kind_names[i]) == 0 && i < AL_ARRAY_SIZE(drivers))
      return drivers[i];
  char list[256] = "";
  size_t o = 0;
  for (size_t i = 0; al_forge_kind_names[i] && o < sizeof list; i++)
    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", al_forge_kind_names[i]);
  al_error_set(err, EINVAL, "%s: unknown forge kind `%s` (airlock has drivers for: %s)", field,
               kind ? kind : "", list);
  return NULL;
}
