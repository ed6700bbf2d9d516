/* See lazyfyaml.h. */
#define AL_LAZYFYAML_IMPL
#include "common/lazyfyaml.h"

#include <pthread.h>

#include "common/lazylib.h"

static struct al_fyaml_api g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
  void *h = al_lazylib_open(AL_FYAML_SONAME, "libfyaml, the YAML parser");
/* NOLINTNEXTLINE(bugprone-macro-parentheses): f is a name, the member of the same name */
#define AL_FYAML_LOAD(f) g_api.f = (__typeof__(&(f)))al_lazylib_sym(h, AL_FYAML_SONAME, #f);
  AL_FYAML_FUNCS(AL_FYAML_LOAD)
#undef AL_FYAML_LOAD
  // cppcheck-suppress resourceLeak ; the library stays loaded until exit, on purpose
}

const struct al_fyaml_api *al_fyaml(void)
{
  pthread_once(&g_once, load);
  return &g_api;
}
