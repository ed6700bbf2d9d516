/* Token accounting for the model relay: reads the usage fields of a model
 * API response as it streams past, without holding the whole response.
 *
 * Input is the response body as it arrives on the wire (still framed:
 * HTTP/1.1 chunked transfer coding, RFC 9112 §7.1, is decoded here with
 * net/chunked.h, a trailer section skipped). Two
 * body kinds:
 *   - server-sent events (text/event-stream, WHATWG HTML §9.2): each event's
 *     `data:` lines are joined and parsed as JSON, one event at a time;
 *   - anything else: the body (up to AL_USAGE_JSON_MAX bytes) is parsed as
 *     one JSON document at the end.
 * In every JSON object found, `usage`, `message.usage` and `response.usage`
 * are read: Anthropic Messages (`message_start`, `message_delta`: input_tokens,
 * output_tokens, cache_*_input_tokens), OpenAI Chat Completions
 * (prompt_tokens, completion_tokens) and Responses (input_tokens,
 * output_tokens, in `response.completed`). Counts are cumulative in those
 * APIs, so the largest value seen is kept. Never stores a body beyond one
 * event (or the capped JSON document). */
#ifndef AL_RELAY_USAGE_H
#define AL_RELAY_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/chunked.h"

#define AL_USAGE_JSON_MAX (8u << 20)
#define AL_USAGE_EVENT_MAX (4u << 20)

typedef struct al_usage {
  bool sse;      /* body is an event stream */
  bool chunked;  /* body uses the chunked transfer coding */
  al_chunked ch; /* the one chunked decoder (net/chunked.h) */
  bool done;     /* the last chunk (and trailers) were seen: the body is complete */
  bool bad;      /* framing error: stop reading */
  /* body text: the current SSE line, or the JSON document */
  char *buf;
  size_t len, cap;
  bool overflow;
  char *event; /* SSE: joined data lines of the current event */
  size_t elen, ecap;
  bool eoverflow;
  /* results */
  bool seen;           /* some usage object was found */
  uint64_t tokens_in;  /* input (prompt) tokens, including cache reads/writes */
  uint64_t tokens_out; /* output (completion) tokens */
  uint64_t events;     /* SSE events seen */
} al_usage;

/* Start accounting for one response. */
void al_usage_init(al_usage *u, bool sse, bool chunked);
/* Feed raw body bytes as received (chunk framing included when chunked). */
void al_usage_feed(al_usage *u, const char *data, size_t len);
/* End of the body: parses a JSON body, flushes a last SSE event. */
void al_usage_finish(al_usage *u);
/* Release buffers (the struct may be reused after al_usage_init). */
void al_usage_free(al_usage *u);

/* Read "model" (a string of at most 128 printable bytes) from a JSON
 * request body into out (size outlen); "" when absent or not JSON. */
void al_usage_request_model(const char *body, size_t len, char *out, size_t outlen);

#endif
