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
 * still written). Single-threaded (the proxy's loop). */
#ifndef AL_PROXY_AUDITLOG_H
#define AL_PROXY_AUDITLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_AUDITLOG_AGGS 128

typedef struct al_auditlog_agg {
  char run[48];
  char host[256];
  int port;
  char reason[48];
  uint64_t n;
  char first[32], last[32];
} al_auditlog_agg;

typedef struct al_auditlog {
  int fd; /* borrowed; -1: nothing is written (counts are still kept) */
  uint64_t cap;
  uint64_t written; /* bytes this log wrote */
  bool use_offset;  /* the fd's offset is the position */
  uint64_t base;    /* the offset at open */
  uint64_t lines, dropped, aggregated, agg_overflow;
  al_auditlog_agg aggs[AL_AUDITLOG_AGGS];
  size_t n_aggs;
} al_auditlog;

/* Start a log on fd (borrowed) with cap bytes (0: none). */
void al_auditlog_init(al_auditlog *a, int fd, uint64_t cap);

/* One decision line: j (stolen) is serialised, redacted (common/redact.h)
 * and written, aggregated or dropped as above. Its "event", "run", "host",
 * "port", "reason" and "time" fields are what aggregation keys on. */
void al_auditlog_write(al_auditlog *a, json_t *j);

/* Write the aggregates and then summary (stolen; "event": "summary" and
 * the log's own counts are added: lines_written, lines_dropped,
 * denials_aggregated, audit_cap, capped). Call once, at the end. */
void al_auditlog_close(al_auditlog *a, json_t *summary);

#endif
