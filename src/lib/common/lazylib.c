/* See lazylib.h. */
#include "common/lazylib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *al_lazylib_open(const char *soname, const char *what)
{
  /* RTLD_NOLOAD first: a binary linked with the library has it already */
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h)
    h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    fprintf(stderr, "airlock: cannot load %s (%s): %s\n", soname, what, why ? why : "?");
    abort();
  }
  /* h stays open for the life of the process (the caller's pointers use it) */
  return h;
}

void *al_lazylib_sym(void *h, const char *soname, const char *name)
{
  dlerror();
  void *p = dlsym(h, name);
  if (!p) {
    const char *why = dlerror();
    fprintf(stderr, "airlock: %s lacks %s: %s\n", soname, name, why ? why : "no such symbol");
    abort();
  }
  return p;
}
