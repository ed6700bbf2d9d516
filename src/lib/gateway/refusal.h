/* What the gateway tells the agent when it refuses (issue #27 item 4): one
 * sentence per reason, naming the rule and the docs section, shaped for the
 * client that asked so that the client itself prints it:
 *
 *   - the API (gh, curl): a JSON error body {"message", "documentation_url"}
 *     as GitHub's REST API answers errors ("Troubleshooting the REST API":
 *     gh prints `message`);
 *   - git's ref advertisement and upload-pack (a fetch): a text/plain body,
 *     which git prints as `remote: …` lines (remote-curl.c show_http_message);
 *   - a refused push: a receive-pack report-status (gitprotocol-pack(5),
 *     "Report Status"; gitprotocol-http(5), "Smart Service
 *     git-receive-pack"), which git prints as `! [remote rejected] REF
 *     (airlock: …)`.
 *
 * Pure functions over buffers; no I/O. */
#ifndef AL_GATEWAY_REFUSAL_H
#define AL_GATEWAY_REFUSAL_H

#include <stddef.h>

#include "gateway/rules.h"
#include "gateway/wire.h"

/* The documentation the refusals point at (docs/gateway.md's section). */
#define AL_GW_REFUSAL_DOC "docs/gateway.md#refusals"

/* One sentence for reason (a decision line's reason: "write-refused",
 * "push-other-branch", "graphql-refused: mutation", ...) of a request
 * `method path` (path canonical, before the API prefix is stripped: may be
 * NULL), bound to the run's rules r (the run branch is named). Written into
 * out[0..cap), NUL-terminated, always starting "airlock: REASON: "; only
 * printable ASCII. Returns its length (truncated to cap-1). */
size_t al_gw_refusal_text(const al_gw_rules *r, const char *reason, const char *method,
                          const char *path, char *out, size_t cap);

/* The JSON error body for an API refusal: {"message": TEXT,
 * "documentation_url": AL_GW_REFUSAL_DOC} and a newline, TEXT from
 * al_gw_refusal_text (JSON-escaped). Returns the length, or 0 when cap is
 * too small. */
size_t al_gw_refusal_json(const al_gw_rules *r, const char *reason, const char *method,
                          const char *path, char *out, size_t cap);

/* True when path (canonical, whole) is one of git's smart-HTTP routes
 * (.../info/refs, .../git-upload-pack, .../git-receive-pack): the client
 * is git, and a refusal is answered as text/plain. */
bool al_gw_path_is_git(const char *path);

/* The receive-pack result for a push refused by al_gw_check_push: the
 * report-status pkt-lines "unpack ok", then "ng REF airlock: REASON: …" for
 * every command (the refused one's reason; the others "refused with the
 * rest of the push"), a flush; inside side-band packets of band 1 (at most
 * rq->side_band bytes each) followed by a flush when the client asked for a
 * side band, and then also a band-2 message git prints as `remote: …`.
 * rq->report_status must be set. Returns the length, or 0 when cap is too
 * small (AL_GW_RP_REPORT_MAX always suffices). */
#define AL_GW_RP_REPORT_MAX (AL_RP_MAX_CMDS * 1024 + 4096)
size_t al_gw_rp_report(const al_gw_rules *r, const al_rp_request *rq, const char *reason,
                       size_t bad, char *out, size_t cap);

#endif
