/* In-process test doubles of Jira Cloud and Linear (README.md). */
#ifndef AL_TEST_TICKET_DOUBLE_H
#define AL_TEST_TICKET_DOUBLE_H

#include <stddef.h>

typedef struct td td;

/* Start a double (kind 1 Jira, 2 Linear) on 127.0.0.1, a free port
 * (*port). It serves one issue: key (PROJ-7 / ENG-42) with title and
 * body, and accepts the credential user:token (Jira Basic; with no user,
 * Bearer token: an OAuth access token) or token (Linear; bare or Bearer).
 * NULL when it cannot start. */
td *td_start(int kind, const char *key, const char *title, const char *body, const char *user,
             const char *token, unsigned *port);
/* The same over TLS with this key and certificate (PEM text), or plain
 * HTTP when either is NULL. */
td *td_start_tls(int kind, const char *key, const char *title, const char *body, const char *user,
                 const char *token, const char *key_pem, const char *cert_pem, unsigned *port);
/* How many comments were posted, and the text of the i-th (ADF flattened
 * to the concatenation of its text nodes for Jira), or NULL. */
size_t td_comments(td *d);
const char *td_comment(td *d, size_t i);
/* Every request it got, "METHOD URL USER-AGENT" (the i-th, or NULL), and
 * the writes it took beside its ticket's comments: "edit KEY" (Jira PUT
 * issue, Linear issueUpdate), "transition KEY" (Jira POST transitions),
 * "comment KEY" (a comment on its second issue, the next number of the
 * project: PROJ-8 beside PROJ-7, which takes comments and nothing else). */
size_t td_requests(td *d);
const char *td_request(td *d, size_t i);
size_t td_writes(td *d);
const char *td_write(td *d, size_t i);
/* How many requests were refused for their credential. */
size_t td_auth_refused(td *d);
void td_stop(td *d);

#endif
