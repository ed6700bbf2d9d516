/* Atlassian Document Format, the JSON document Jira Cloud REST v3 uses for
 * descriptions and comment bodies (developer.atlassian.com/cloud/jira/
 * platform/apis/document/structure: a root {"version": 1, "type": "doc",
 * "content": [block nodes]}, block nodes such as paragraph, heading,
 * bulletList, codeBlock with inline `content`, inline nodes text (with
 * `marks`), hardBreak, mention {attrs.text}, emoji {attrs.text},
 * inlineCard {attrs.url}). Pure. */
#ifndef AL_TICKETS_ADF_H
#define AL_TICKETS_ADF_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

#define AL_ADF_DEPTH_MAX 32    /* nesting of content arrays */
#define AL_ADF_NODES_MAX 20000 /* nodes of one document */
#define AL_ADF_TEXT_MAX (256 * 1024)

/* Flatten an ADF document to plain text: the text of `text` nodes, a
 * mention's or an emoji's attrs.text, an inlineCard's attrs.url, LF for a
 * hardBreak, a blank line between block nodes, "- " before a list item;
 * marks (links, code, strong...) dropped, so a link's target is gone and
 * only its text is left. Unknown node types contribute their content's
 * text. Refused (-1, err EINVAL naming the rule): not an object with
 * "type": "doc", a node that is not an object, `content` not an array,
 * `text` not a string, deeper than AL_ADF_DEPTH_MAX, more than
 * AL_ADF_NODES_MAX nodes, text over AL_ADF_TEXT_MAX. json null is the
 * empty text. *out: malloc'd, NUL-terminated. */
int al_adf_to_text(const json_t *doc, char **out, al_error *err);

/* An ADF document holding `text` as plain paragraphs: one paragraph per
 * run of lines separated by a blank line, LF inside a paragraph as a
 * hardBreak, no marks, no other node type (so nothing in it is a link, a
 * mention or a card: what it shows is what it is). Empty text is a doc
 * with no content. New reference. */
json_t *al_adf_from_text(const char *text);

#endif
