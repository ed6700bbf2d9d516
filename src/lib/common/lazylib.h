/* Shared libraries the core binary opens on first use, by their Debian
 * soname, with dlopen(3).
 *
 * Every library in the core binary's DT_NEEDED list costs every start the
 * dynamic loader's work (open, map, relocate, look symbols up), ~0.1 ms
 * each on the benchmark machine, even when the run never calls it
 * (bench/README.md "The levers"). `airlock run -- CMD` under the default
 * policy needs none of c-ares (the egress proxy's resolver), libfyaml (a
 * policy *file*) or libcrypto (hashes). Their users include
 * common/lazycares.h, common/lazyfyaml.h or common/lazycrypto.h instead of
 * the library's header: the call sites stay as the library documents them,
 * and a macro turns each call into a call through a table of pointers that
 * is filled the first time any of them is used.
 *
 * The library is opened by its soname (the file the Debian package ships,
 * found through the loader's usual search: ld.so.cache), so a security
 * update of the package reaches airlock without a rebuild, as with a
 * linked library. A library that cannot be loaded, or lacks a function,
 * is fatal with a message naming it: these are hard dependencies
 * (scripts/install-deps.sh), exactly as when they were linked, only
 * reported at first use instead of at exec. */
#ifndef AL_COMMON_LAZYLIB_H
#define AL_COMMON_LAZYLIB_H

/* The handle of the library `soname` (e.g. "libcares.so.2"): the copy
 * already in the process if there is one (RTLD_NOLOAD: a binary or test
 * that links it), else a fresh dlopen(RTLD_NOW | RTLD_LOCAL). The handle
 * stays open for the life of the process. Prints "airlock: cannot load
 * SONAME (WHAT): dlerror" to stderr and aborts when it cannot be loaded. */
void *al_lazylib_open(const char *soname, const char *what);

/* The address of function `name` in the library `h` opened for `soname`
 * (dlsym(3)); aborts with a message naming both when it is missing. */
void *al_lazylib_sym(void *h, const char *soname, const char *name);

#endif
