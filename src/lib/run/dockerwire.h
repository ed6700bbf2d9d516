/* The bytes of the docker backend that come from outside airlock, parsed
 * without the HTTP client so they can be fuzzed (tests/fuzz/fuzz_docker_wire.c):
 * the container's multiplexed output, the engine's attach response head,
 * and the single-member ustar archive the engine returns for a file. */
#ifndef AL_RUN_DOCKERWIRE_H
#define AL_RUN_DOCKERWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Docker's multiplexed stream (attach and logs of a container without a
 * TTY; Engine API "Attach to a container", "Stream format"): frames of an
 * 8-byte header (stream type 1 stdout, 2 stderr; three zero bytes; a
 * big-endian 32-bit length) and the payload. The bytes are the container's,
 * hence hostile: any header is accepted as framing, payload of another
 * stream type is dropped. */
typedef struct al_docker_demux {
  int fd_out, fd_err; /* where stdout/stderr payload goes; -1: dropped */
  unsigned char hd[8];
  size_t hd_n; /* header bytes gathered so far */
  size_t left; /* payload bytes left in the current frame */
  int stream;  /* type of the current frame */
} al_docker_demux;

/* Feed n bytes (any split across calls). A write that fails (a reader that
 * went away) sets that fd to -1 and the rest of that stream is dropped;
 * never blocks longer than the write itself, never fails the caller. */
void al_docker_demux_feed(al_docker_demux *m, const char *p, size_t n);

/* The engine's answer to an attach request, read so far into buf[0..n),
 * parsed by the one strict response head parser (net/http.h
 * al_http_parse_response_head). Returns 1 when the head is not complete
 * yet, 0 when it is complete and says HTTP/1.1 101 (Switching Protocols) or
 * 200 with *body_off the offset of the first stream byte, -1 when it is
 * anything else or malformed (*body_off: the end of the status line, or n
 * without a CR, for the error message). */
int al_docker_attach_head(const char *buf, size_t n, size_t *body_off);

/* The first regular file of a ustar archive (POSIX.1-2001 pax/ustar:
 * 512-byte headers, size as octal digits at offset 124, type at 156),
 * skipping up to three pax extended headers (type x or g). 0 with
 * *data_off and *size when buf holds the whole file; -1 when the archive is
 * malformed or truncated. */
int al_ustar_first_file(const char *buf, size_t n, size_t *data_off, uint64_t *size);

#endif
