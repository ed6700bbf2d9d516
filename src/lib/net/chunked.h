/* The one decoder of the chunked transfer coding (RFC 9112 §7.1), for every
 * HTTP/1.1 body airlock reads in chunks: the forge gateway's requests and
 * the forge's answers, the model relay's requests and the model API's
 * answers. Incremental (any split of the input gives the same bytes), pure
 * (no I/O, no allocation), fuzzed (tests/fuzz/fuzz_gw_chunked.c). */
#ifndef AL_NET_CHUNKED_H
#define AL_NET_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_CHUNK_EXT_MAX 1024     /* bytes of chunk extensions per chunk line */
#define AL_CHUNK_TRAILER_MAX 8192 /* bytes of the trailer section (skip_trailers) */

typedef struct al_chunked {
  int st;
  uint64_t left;   /* data bytes of the current chunk still to come */
  unsigned digits; /* hex digits of the size so far */
  size_t ext;      /* extension bytes on this chunk line */
  uint64_t total;  /* decoded bytes so far */
  size_t trailer;  /* bytes of trailer fields skipped so far */
  /* set after al_chunked_init to skip a trailer section (RFC 9112 §7.1.2:
   * a recipient may discard it) instead of refusing it; the model relay's
   * answers, which are only read for their usage. */
  bool skip_trailers;
} al_chunked;

/* Start decoding a chunked body. */
void al_chunked_init(al_chunked *c);

/* Decode in[0..*in_len): the body's data bytes are written to out (which
 * must have room for *in_len bytes and may equal in: decoding only moves
 * bytes backwards), their count to *out_len; *in_len becomes the bytes
 * consumed. Returns 1 once the last chunk and its final CRLF are consumed
 * (what follows belongs to the next message), 0 when more input is
 * needed (all of it was consumed), -1 with *why: "chunk-size-bad",
 * "chunk-size-overflow" (more than 2^63-1), "chunk-ext-too-long",
 * "chunk-ext-bad", "chunk-line-bad" (CR not followed by LF),
 * "chunk-missing-crlf" (data not followed by CRLF), "chunked-trailer"
 * (trailer fields are refused), and with skip_trailers "chunk-trailer-bad"
 * (a control byte in a field), "chunk-trailer-too-long" (over
 * AL_CHUNK_TRAILER_MAX bytes). Extensions are accepted and dropped. */
int al_chunked_decode(al_chunked *c, const char *in, size_t *in_len, char *out, size_t *out_len,
                      const char **why);

/* Write the chunk header for n data bytes ("%zx\r\n") into out[0..20);
 * returns its length. The caller writes the data and then "\r\n"; the last
 * chunk is "0\r\n\r\n". */
size_t al_chunk_header(size_t n, char out[20]);

#endif
