/* Shared helpers of the vendor codecs (jira.c, linear.c, github.c). */
#ifndef AL_TICKETS_CODEC_INT_H
#define AL_TICKETS_CODEC_INT_H

#include <jansson.h>

#include "common/error.h"
#include "tickets/tickets.h"

/* Parse body[0..len) as one JSON object (duplicates refused). NULL with err. */
json_t *al_tk_json_object(const char *vendor, const char *body, size_t len, al_error *err);

/* The string at `path` (dotted, e.g. "fields.summary") of j, or NULL. */
const char *al_tk_str(const json_t *j, const char *path);

/* A copy of s, bounded by AL_TK_TEXT_MAX (cut at a character), never NULL. */
char *al_tk_dup(const char *s);

/* Append one comment (id, author, body copied) to t, or count it dropped. */
void al_tk_add_comment(al_tk_ticket *t, const char *id, const char *author, const char *body);

#endif
