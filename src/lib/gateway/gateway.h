/* The forge gateway (issue #15 part A, DESIGN.md §2 "secrets", sealed mode).
 *
 * The process that holds a run's two forge tokens (and, for a Jira or
 * Linear ticket, the vendor credential: .tk below) and its CA key, and sees
 * only the TCP connections the egress proxy already allowed to the forge's
 * API and git hosts (and the ticket host). It terminates the agent's TLS with a per-run CA, reads
 * each HTTP/1.1 request strictly, matches it against a default-deny rule
 * table built for this run (rules.h), rebuilds it in origin-form with its
 * own framing, swaps the agent's placeholder credential for the right token
 * and sends it over verified TLS to the forge. One JSON decision line per
 * request goes to the decisions fd.
 *
 *   supervisor                                 gateway (forked child)
 *   ──────────                                 ──────────────────────
 *   al_gateway_start(): socketpair, pipes
 *   fork ─────────────────────────────────────► PDEATHSIG, not dumpable, close fds
 *   write tokens + placeholder (pipe) ────────► read into secret memory (secmem.h)
 *                                               make the CA + leaves (ca.h), in memory
 *   read the CA certificate PEM ◄───────────── write it; the key stays here
 *                                               load upstream trust (system or ca_file)
 *   read "ready" or an error text ◄─────────── al_confine_service(): nobody, no caps,
 *                                               no writes, no exec; PDEATHSIG again
 *   give al_gateway_handoff() to the proxy      serve: one thread per handed-off
 *   (al_proxy_listener.handoff)                 connection (conn.c), at most 64
 *   ...                                         ...
 *   al_gateway_stop(): SIGTERM, reap ─────────► finish the lines of open requests, exit
 *
 * Usage (the supervisor, in sealed mode):
 *
 *   char ph[65];
 *   al_gateway_placeholder(ph, err);             // the agent's env gets ph, never a token
 *   al_gateway_opts o = {.api_url = ..., .git_url = ..., .repo = "acme/tally",
 *                        .ticket = 1, .branch = "airlock/1-ab12cd34",
 *                        .git_token = gt, .ticket_token = tt, .placeholder = ph,
 *                        .lifetime_ms = wall_ms, .run_id = id, .decisions_fd = fd};
 *   al_gateway *gw;
 *   if (al_gateway_start(&o, &gw, err) < 0) ...
 *   // the sandbox trusts al_gateway_ca_pem(gw) (plus the system CAs)
 *   al_proxy_listener l = {.fd = ..., .run_id = id, .policy = p,
 *                          .handoff = al_gateway_handoff(gw)};
 *   ... run the proxy (al_run_start_proxy keeps handoff->fd open) and the agent ...
 *   al_run_stop_proxy(proxy); al_gateway_stop(gw, err); al_gateway_free(gw);
 *
 * A Jira or Linear ticket adds .tk = {.kind, .url, .ca_file, .project, .key,
 * .id, .user, .credential} (and .ticket = 0): the ticket host is handed off
 * and terminated too, its leaf under the same CA.
 *
 * The proxy's allowlist must still allow the forge hosts (and the ticket host) (the proxy checks
 * the allowlist, resolves and dials before it hands off). */
#ifndef AL_GATEWAY_GATEWAY_H
#define AL_GATEWAY_GATEWAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "forge/names.h"
#include "proxy/handoff.h"

#define AL_GATEWAY_MAX_CONNS 64

typedef struct al_gateway_opts {
  /* forge.api_url / forge.git_url: "https://host[:port][/prefix]" (port
   * default 443). The API prefix (e.g. "/api/v3") is put before every API
   * route; a git URL's prefix before every repository path. May name the
   * same host:port (GitHub Enterprise style). Only https. */
  const char *api_url, *git_url;
  const char *ca_file; /* upstream trust: forge.ca_file (PEM), or NULL = the system store */
  const char *repo;    /* "OWNER/REPO", matched case-insensitively as GitHub does; GitLab:
                          the project's full path GROUP[/SUB...]/PROJECT */
  /* forge.kind: AL_FORGE_GITLAB matches GitLab's table (rules_gitlab.h:
   * the project by path or project_id, PRIVATE-TOKEN / JOB-TOKEN / Bearer
   * / Basic placeholders, GraphQL refused); anything else GitHub's */
  al_forge_kind forge_kind;
  unsigned long project_id; /* GitLab: the project's numeric id (>= 1); else unused */
  unsigned long ticket;     /* issue number; 0: not an issue of this forge
                             * (Jira, Linear): no issue route is served */
  const char *branch;       /* run branch without refs/heads/, e.g. "airlock/12-ab12cd34" */
  unsigned max_comments;    /* POST comments on its own ticket the agent may make; 0 = none */
  /* The run's installation tokens: the git token (contents) for git routes
   * and repository reads, the ticket token for the ticket's routes. Copied
   * to the gateway over a pipe (never argv, env or disk); the caller keeps
   * and wipes its own copies. May be equal. */
  const char *git_token, *ticket_token;
  const char *placeholder; /* the per-run placeholder the agent holds (al_gateway_placeholder) */
  uint64_t lifetime_ms;    /* the run's wall limit; the CA is valid this long plus 1 h */
  const char *run_id;      /* goes into every decision line */
  int decisions_fd;        /* decisions, one JSON line each; dup'd by the gateway; -1: none */
  /* network.egress_budget (bytes client -> origin per run; 0: none). The
   * gateway adds every request byte it forwards to the forge (head and
   * body, as sent) to the run's counter, which it shares with the proxy
   * (al_proxy_handoff.egress_used): a request that finds it spent is
   * refused (403 egress-budget), a body that would pass it is cut. */
  uint64_t egress_budget;
  /* The ticket system's host (issue #31, docs/gateway.md "The ticket
   * host"): when kind is 1 (Jira) or 2 (Linear), a third host whose
   * requests are decided by rules_tickets.h (the one ticket's reads, at
   * most max_comments comments on it, one comment budget with the forge's),
   * with the placeholder swapped for the vendor credential upstream
   * (Jira: "Basic base64(user:credential)" with a user, else "Bearer
   * credential"; Linear: an API key (lin_api_...) bare, else "Bearer
   * credential", as tickets/client.c sends them). Set ticket = 0 with it.
   * The credential goes to the gateway over the token pipe, as the tokens
   * do; the caller keeps and wipes its own copy. kind 0: no ticket host. */
  struct {
    int kind;               /* 0 none, 1 jira, 2 linear (tickets/tickets.h al_tk_kind) */
    const char *url;        /* ticket.url: https://host[:port][/prefix]; not a forge host:port */
    const char *ca_file;    /* ticket.ca_file (PEM), or NULL = the system store */
    const char *project;    /* ticket.project (Jira) or ticket.team (Linear): the key's */
    const char *key;        /* the ticket's key, "PROJ-7" */
    const char *id;         /* the vendor's id of it (Jira's number, Linear's UUID), or NULL */
    const char *user;       /* Jira: ticket.user (the token's account e-mail), or NULL (OAuth) */
    const char *credential; /* the vendor credential (ticket.token_file), printable ASCII */
  } tk;
} al_gateway_opts;

typedef struct al_gateway al_gateway;

/* Fork and start the gateway (the picture above). Blocks until the child is
 * confined and serving, or failed (its error text comes back in err), at
 * most 10 s. On success *out owns the child, the CA PEM and the parent's
 * end of the hand-off socketpair. Errors: EINVAL for a bad option (a URL
 * that is not https://host[:port][/prefix], an empty token, a repo not
 * OWNER/REPO, a branch that is not a valid ref, a ticket host that is a
 * forge host:port, a ticket key not of tk.project), errno of fork/pipe, EIO
 * with the child's message. Follows gitprotocol-http(5), RFC 9112, RFC 5280
 * §4.2.1.10 (name constraints). */
int al_gateway_start(const al_gateway_opts *o, al_gateway **out, al_error *err);

/* The run CA certificate, PEM, NUL-terminated; owned by g. Put it in the
 * sandbox's CA bundle (after the system CAs and forge.ca_file). */
const char *al_gateway_ca_pem(const al_gateway *g);

/* What the proxy listener hands off (al_proxy_listener.handoff): the
 * parent's end of the SOCK_SEQPACKET socketpair and the host:port pairs of
 * api_url, git_url and tk.url (canonical names). Owned by g; valid until
 * al_gateway_free(). The supervisor keeps the fd open only to fork the
 * proxy; al_gateway_stop() closes it. */
const al_proxy_handoff *al_gateway_handoff(const al_gateway *g);

/* The shared egress counter's value now (bytes). */
uint64_t al_gateway_egress_used(const al_gateway *g);

/* The gateway's pid (for the record and for tests), or -1 once reaped. */
pid_t al_gateway_pid(const al_gateway *g);

/* SIGTERM, wait up to 5 s (open requests log their decision), then SIGKILL,
 * reap; closes the hand-off fd. Idempotent. Returns 0, or -1 with err when
 * the gateway had died on its own before (its exit status in the message). */
int al_gateway_stop(al_gateway *g, al_error *err);

/* Stop (if still running) and free. NULL is a no-op. */
void al_gateway_free(al_gateway *g);

/* Make a fresh placeholder: "airlock-placeholder-" + 44 hex digits (64
 * characters), from getrandom(2). Worthless outside this run's gateway. */
int al_gateway_placeholder(char out[65], al_error *err);

#endif
