/* c-ares (the egress proxy's DNS resolver) for the core binary, opened on
 * first use (common/lazylib.h says why and how). Include this instead of
 * <ares.h>: each c-ares function below is then called through a pointer of
 * its own type, taken from <ares.h> (a signature change there is a compile
 * error here), looked up the first time any of them is called. A c-ares
 * function missing from AL_CARES_FUNCS is a link error, never a silent
 * direct call: the core binary does not link libcares. */
#ifndef AL_COMMON_LAZYCARES_H
#define AL_COMMON_LAZYCARES_H

#include <ares.h>

#define AL_CARES_SONAME "libcares.so.2"

#define AL_CARES_FUNCS(X)                                                                          \
  X(ares_library_init)                                                                             \
  X(ares_library_cleanup)                                                                          \
  X(ares_init_options)                                                                             \
  X(ares_set_servers_ports_csv)                                                                    \
  X(ares_destroy)                                                                                  \
  X(ares_cancel)                                                                                   \
  X(ares_getaddrinfo)                                                                              \
  X(ares_freeaddrinfo)                                                                             \
  X(ares_process_fd)                                                                               \
  X(ares_strerror)

/* One pointer per function, of the function's own type. */
struct al_cares_api {
/* NOLINTNEXTLINE(bugprone-macro-parentheses): f is a name, declared as a member */
#define AL_CARES_FIELD(f) __typeof__(&(f)) f;
  AL_CARES_FUNCS(AL_CARES_FIELD)
#undef AL_CARES_FIELD
};

/* The table, filled on the first call (thread-safe, pthread_once). Aborts
 * with a message when libcares.so.2 or one of the functions cannot be
 * loaded (al_lazylib_open). Never NULL. */
const struct al_cares_api *al_cares(void);

#ifndef AL_LAZYCARES_IMPL
#define ares_library_init (al_cares()->ares_library_init)
#define ares_library_cleanup (al_cares()->ares_library_cleanup)
#define ares_init_options (al_cares()->ares_init_options)
#define ares_set_servers_ports_csv (al_cares()->ares_set_servers_ports_csv)
#define ares_destroy (al_cares()->ares_destroy)
#define ares_cancel (al_cares()->ares_cancel)
#define ares_getaddrinfo (al_cares()->ares_getaddrinfo)
#define ares_freeaddrinfo (al_cares()->ares_freeaddrinfo)
#define ares_process_fd (al_cares()->ares_process_fd)
#define ares_strerror (al_cares()->ares_strerror)
#endif

#endif
