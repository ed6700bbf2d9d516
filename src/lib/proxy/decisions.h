/* The proxy's decision log with a size cap that loses nothing silently
 * (issue #14). Lines are JSON objects, one per decision (docs/run-record.md, "Decisions").
 *
 *   below cap/2            every line is written
 *   cap/2 .. cap-reserve   "deny" lines are no longer written one by one:
 *                          they are aggregated per (run, host, port,
 *                          reason) and written at the end as
 *                          {"event":"deny-aggregate",...,"count":N}; every
 *                          other line (allowed tunnels opening and closing,
 *                          hand-offs to the forge gateway, reloads) still is
 *   past cap-reserve       lines are dropped and counted
 *   at close               the aggregates, then one {"event":"summary",...}
 *                          with the exact counts by decision and reason, the
 *                          lines dropped and the denials aggregated, written
 *                          into the reserve (so it always fits)
 *
 * The reserve is a quarter of the cap, at most 256 KiB. Position: the fd's
 * offset when it has one that is not O_APPEND (a memfd the supervisor
 * shares with other writers counts them too), else the bytes this log
 * wrote. cap 0: no cap (nothing aggregated or dropped; the summary is
 * still written).
 *
 * Batching (issue #19): a line may be deferred (the end of a tunnel):
 * it is kept, in order, in the log's buffer and goes out with the next
 * line that is not deferred, or at al_decisions_flush(), which the proxy
 * calls at the end of every batch of events, before its loop waits again;
 * al_decisions_close() flushes first. Every other line (an opening tunnel,
 * a denial, a hand-off, a reload) is written, with whatever was deferred
 * before it, before al_decisions_write*() returns, so before the client is
 * answered. Order is kept: the buffer is written in the order the lines
 * came. A proxy killed with SIGKILL loses at most the deferred lines of
 * the batch it was in. Not thread-safe: the proxy holds its log lock. */
#ifndef AL_PROXY_DECISIONS_H
#define AL_PROXY_DECISIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_DECISIONS_AGGS 128

typedef struct al_decisions_agg {
  char run[48];
  char host[256];
  int port;
  char reason[48];
  uint64_t n;
  char first[32], last[32];
} al_decisions_agg;

typedef struct al_decisions {
  int fd; /* borrowed; -1: nothing is written (counts are still kept) */
  uint64_t cap;
  uint64_t written; /* bytes this log wrote */
  bool use_offset;  /* the fd's offset is the position */
  uint64_t base;    /* the offset at open */
  uint64_t lines, dropped, aggregated, agg_overflow;
  char *buf; /* deferred lines, each with its newline, not yet written */
  size_t buf_len, buf_cap, buf_lines;
  al_decisions_agg aggs[AL_DECISIONS_AGGS];
  size_t n_aggs;
} al_decisions;

/* Start a log on fd (borrowed) with cap bytes (0: none). */
void al_decisions_init(al_decisions *a, int fd, uint64_t cap);

/* One decision line: j (stolen) is serialised, redacted (common/redact.h)
 * and written, aggregated or dropped as above. Its "event", "run", "host",
 * "port", "reason" and "time" fields are what aggregation keys on. */
void al_decisions_write(al_decisions *a, json_t *j);

/* What aggregation keys on, for al_decisions_write_line (strings borrowed;
 * NULL is ""). */
typedef struct al_decisions_key {
  const char *event, *run, *host, *reason, *time;
  int port;
} al_decisions_key;

/* One decision line already serialised: line (one JSON object, NUL-
 * terminated, no newline; borrowed) is redacted and written, aggregated,
 * dropped or, with defer, buffered (see Batching above); k holds the
 * fields that aggregation keys on, which must be those of the line. */
void al_decisions_write_line(al_decisions *a, const char *line, const al_decisions_key *k,
                             bool defer);

/* Write the deferred lines now (one write(2)); a failed write counts them
 * dropped. */
void al_decisions_flush(al_decisions *a);

/* True when deferred lines wait for al_decisions_flush. */
bool al_decisions_pending(const al_decisions *a);

/* Write s (n bytes) into out as a JSON string (RFC 8259 §7), quotes
 * included, escaped as jansson's json_dumps() escapes: '"', '\\' and the
 * control characters (\b \f \n \r \t, else \u00XX); well-formed UTF-8
 * (RFC 3629 §4) as it is. A byte that is not part of well-formed UTF-8,
 * which json_string() would refuse, is written as \u00XX (so the line is
 * always valid JSON and keeps every byte). out must hold 6 * n + 3 bytes;
 * it is NUL-terminated. Returns the length written, without the NUL. */
size_t al_decisions_json_string(char *out, const char *s, size_t n);

/* Write the aggregates and then summary (stolen; "event": "summary" and
 * the log's own counts are added: lines_written, lines_dropped,
 * denials_aggregated, decisions_cap, capped). Call once, at the end. */
void al_decisions_close(al_decisions *a, json_t *summary);

#endif
