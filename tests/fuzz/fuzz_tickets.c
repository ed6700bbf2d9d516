/* libFuzzer target: the ticket seam's readers of what a ticket system
 * answers (src/lib/tickets/: jira.c, linear.c, adf.c; issue #31), all
 * untrusted. The first byte picks the reader. Invariants: an accepted
 * ticket has its title, body and id set, every comment its id and body;
 * the key read back is the one asked for; the text of a flattened ADF
 * document is at most AL_ADF_TEXT_MAX bytes, and a document built from
 * it flattens back to a text no longer than it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tickets/adf.h"
#include "tickets/tickets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const al_tk_ticket *t, const char *key)
{
  if (!t->id || !t->title || !t->body || !t->key || strcmp(t->key, key) != 0)
    abort();
  for (size_t i = 0; i < t->n_comments; i++)
    if (!t->comments[i].id || !t->comments[i].body || !t->comments[i].author)
      abort();
  if (t->n_comments > AL_TK_COMMENTS_MAX)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  al_error err = {0};
  al_tk_target jt, lt;
  if (al_tk_target_parse(AL_TK_JIRA, "PROJ-7", "PROJ", &jt, &err) < 0 ||
      al_tk_target_parse(AL_TK_LINEAR, "ENG-42", "ENG", &lt, &err) < 0)
    abort();
  al_tk_ticket t = {0};
  switch (data[0] % 4) {
  case 0:
    if (al_tk_jira_read_issue(body, len, &jt, &t, &err) == 0) {
      if (!t.project || strcmp(t.project, "PROJ") != 0)
        abort();
      check(&t, "PROJ-7");
    }
    break;
  case 1: {
    bool more;
    t.id = strdup("1");
    if (al_tk_jira_read_comments(body, len, &t, &more, &err) == 0)
      for (size_t i = 0; i < t.n_comments; i++)
        if (!t.comments[i].body)
          abort();
    break;
  }
  case 2:
    if (al_tk_linear_read_issue(body, len, &lt, &t, &err) == 0)
      check(&t, "ENG-42");
    break;
  default: {
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    char *text = NULL;
    if (j && al_adf_to_text(j, &text, &err) == 0) {
      size_t n = strlen(text);
      if (n > AL_ADF_TEXT_MAX)
        abort();
      json_t *d = al_adf_from_text(text);
      char *back = NULL;
      if (al_adf_to_text(d, &back, &err) < 0 || strlen(back) > n)
        abort();
      free(back);
      json_decref(d);
    }
    free(text);
    json_decref(j);
  }
  }
  al_tk_ticket_free(&t);
  return 0;
}
