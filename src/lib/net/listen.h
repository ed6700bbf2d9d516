/* One TCP listener for airlock's own servers (`airlock proxy --listen`,
 * `airlock relay --listen`): an address spelled "ADDR:PORT" (IPv4) or
 * "[ADDR]:PORT" (IPv6), numeric and canonical (net/host.h, so "127.1" is
 * refused with the dotted quad to write instead), port 0 for any free port. */
#ifndef AL_NET_LISTEN_H
#define AL_NET_LISTEN_H

#include <stdint.h>

#include "common/error.h"
#include "net/host.h"

#define AL_LISTEN_NONBLOCK 1 /* the socket is O_NONBLOCK (an event loop's listener) */

/* Parse spec alone (the usage check of an option): 0 with *h and *port
 * (0: any free port), or -1 with err as below. */
int al_listen_parse(const char *spec, al_host *h, uint16_t *port, al_error *err);

/* Parse spec, make a socket (SOCK_CLOEXEC, SO_REUSEADDR), bind and listen
 * with `backlog`. Returns the fd (the caller owns it) with *h the address
 * and *port the bound port (the one the kernel chose for port 0); or -1
 * with err: "--listen `SPEC`: <the rule>" (EINVAL: expected ADDR:PORT, not
 * numeric, an ambiguous IPv4 spelling) or the errno of socket(2), bind(2)
 * or listen(2). */
int al_listen_tcp(const char *spec, int backlog, int flags, al_host *h, uint16_t *port,
                  al_error *err);

#endif
