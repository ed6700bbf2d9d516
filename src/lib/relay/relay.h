/* The model relay: the agent's only way to its LLM, holding the key the
 * agent never sees (issue #10, DESIGN.md §3).
 *
 * It serves plain HTTP/1.1 (RFC 9112) on a listening socket that lives in
 * the agent's network namespace (127.0.0.1:8080 there). Per request it
 *   - accepts only the configured METHOD + path pairs (query passed through);
 *   - parses the head with the strict parser (net/http.h: CRLF only, no
 *     obs-fold, token names, one Host and one Content-Length, chunked only
 *     as the final coding; 400 naming the rule), caps it (64 KiB, 64
 *     fields) and the body (relay.max_request);
 *   - refuses calls past the run's budget of requests or tokens (429 with
 *     `x-should-retry: false`, which the Anthropic and OpenAI SDKs honour);
 *   - reads the body as JSON and refuses server-side tools, connectors and
 *     fetches the policy does not allow by name (rules.h: one table per
 *     vendor), with 403 in the vendor's error shape;
 *   - forwards only the vendor's allowlisted headers (rules.h), filters
 *     anthropic-beta, drops every credential and hop-by-hop header the agent
 *     sent (Authorization, x-api-key, api-key, Cookie, Proxy-*, Connection,
 *     OpenAI-Organization, OpenAI-Project, ...) and adds the real key
 *     (`x-api-key: K` or `Authorization: Bearer K`) and the policy's
 *     organization/project;
 *   - opens a tunnel through the egress proxy (CONNECT, RFC 9110 §9.3.6),
 *     speaks TLS with certificate and host-name verification (OpenSSL,
 *     RFC 6125 via SSL_set1_host) and SNI (RFC 6066 §3);
 *   - reads the response head with the same strict parser (a head that
 *     breaks a rule is a 502 naming it; 1xx interim heads are skipped) and
 *     rebuilds it for the agent;
 *   - streams the response back as it arrives (no buffering: each TLS read
 *     is written to the agent at once), reading the usage fields on the way
 *     (usage.h) to charge the token budget;
 *   - enforces timeouts: connect (CONNECT + handshake), first byte, idle
 *     between reads, total per call;
 *   - writes one JSON line per call to the log: time, run, method, path,
 *     model, status, stream, tokens_in/out, bytes_up/down, latency_ms,
 *     ttfb_ms, decision and reason (plus vendor, upstream, the refused
 *     feature, the dropped header names, and for upstream_error what failed:
 *     connect, tls, send, response, timeout, closed, malformed). Never a
 *     body, never a header value.
 * One thread per connection (at most relay.max_connections), blocking I/O
 * with socket timeouts; every connection is answered with
 * `Connection: close`. */
#ifndef AL_RELAY_RELAY_H
#define AL_RELAY_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "policy/policy.h"

#define AL_RELAY_PORT 8080
#define AL_RELAY_KEY_ENV "AIRLOCK_RELAY_KEY"
#define AL_RELAY_KEY_MAX 1024

/* Fill *out from the canonical JSON of a policy's relay section
 * (al_policy_relay_canonical). Strict: missing or mistyped fields are
 * EINVAL. Release with al_relay_config_clear(). */
int al_relay_config_from_json(const char *text, al_policy_relay *r, al_error *err);
void al_relay_config_clear(al_policy_relay *r);

typedef struct al_relay_serve_opts {
  const al_policy_relay *cfg; /* borrowed */
  int listen_fd;              /* listening TCP socket (any namespace); borrowed */
  const char *proxy_addr;     /* "127.0.0.1:3128": tunnel through this proxy; NULL: dial the
                                 upstream (or cfg->pin) directly (debugging only) */
  const char *const *keys;    /* the model API key of each upstream (cfg->upstreams[i]),
                                 borrowed; must stay valid while serving */
  int log_fd;                 /* JSON lines, one per call; -1: none */
  const char *run_id;         /* goes into every log line; may be NULL */
} al_relay_serve_opts;

/* Serve until SIGTERM or SIGINT (blocked and read through a signalfd), then
 * return 0; calls still running are abandoned with the process. Sets SIGPIPE
 * to SIG_IGN. Returns -1 with err only on setup failure (TLS context, CA
 * file, signalfd). One call failing never stops the loop. */
int al_relay_serve(const al_relay_serve_opts *o, al_error *err);

#endif
