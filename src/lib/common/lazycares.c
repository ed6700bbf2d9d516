/* See lazycares.h. */
#define AL_LAZYCARES_IMPL
#include "common/lazycares.h"

#include <pthread.h>

#include "common/lazylib.h"

static struct al_cares_api g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
  void *h = al_lazylib_open(AL_CARES_SONAME, "c-ares, the egress proxy's resolver");
/* NOLINTNEXTLINE(bugprone-macro-parentheses): f is a name, the member of the same name */
#define AL_CARES_LOAD(f) g_api.f = (__typeof__(&(f)))al_lazylib_sym(h, AL_CARES_SONAME, #f);
  AL_CARES_FUNCS(AL_CARES_LOAD)
#undef AL_CARES_LOAD
  // cppcheck-suppress resourceLeak ; the library stays loaded until exit, on purpose
}

const struct al_cares_api *al_cares(void)
{
  pthread_once(&g_once, load);
  return &g_api;
}
