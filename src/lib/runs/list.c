/* `airlock runs`: the list of records as a table or JSON (runs/runs.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/term.h"
#include "common/util.h"
#include "runs/runs.h"

/* One table cell, escaped, padded to W columns; a cell wider than W ends in
 * "..." (the whole text is in `airlock show` and `--json`), never cut
 * silently. */
static void cell(FILE *out, const char *s, int w, bool last)
{
  al_autofree char *clean = al_term_escape_line(s && *s ? s : "-");
  if (last)
    fprintf(out, "%s\n", clean);
  else if (strlen(clean) > (size_t)w && w > 3)
    fprintf(out, "%.*s... ", w - 3, clean);
  else
    fprintf(out, "%-*.*s ", w, w, clean);
}

int al_runs_print_list(const char *dir, const al_run_entry *v, size_t n, size_t shown, bool json,
                       FILE *out)
{
  if (json) {
    json_t *a = json_array();
    for (size_t i = 0; i < shown; i++) {
      json_t *j = v[i].ok ? al_run_summary_json(&v[i].sum) : json_object();
      al_autofree char *file = al_strdup_printf("%s/%s", dir, v[i].name);
      json_object_set_new(j, "file", json_string(file));
      if (!v[i].ok)
        json_object_set_new(j, "error", json_string(v[i].problem));
      json_array_append_new(a, j);
    }
    /* ASCII only: no byte of a record's string reaches the terminal raw */
    char *text = json_dumps(a, JSON_INDENT(2) | JSON_ENSURE_ASCII);
    json_decref(a);
    if (!text)
      return -1;
    fprintf(out, "%s\n", text);
    free(text);
    return 0;
  }
  if (n == 0) {
    al_autofree char *clean = al_term_escape_line(dir);
    fprintf(out, "no run records in %s\n", clean);
  } else {
    fprintf(out, "%-16s %-20s %-24s %-26s %-7s %s\n", "ID", "STARTED", "TICKET", "RESULT",
            "DENIALS", "PULL REQUEST");
  }
  for (size_t i = 0; i < shown; i++) {
    const al_run_summary *s = &v[i].sum;
    if (!v[i].ok) {
      char id[AL_RUN_ID_LEN + 1]; /* the file's name without its ".json" */
      snprintf(id, sizeof id, "%.*s", (int)strcspn(v[i].name, "."), v[i].name);
      cell(out, id, 16, false);
      fprintf(out, "%-20s ", "-");
      cell(out, "not a readable record:", 24, false);
      cell(out, v[i].problem, 0, true);
      continue;
    }
    char res[128], den[24];
    if (s->exit_status >= 0)
      /* "0 (pull request)": "0 pull request" read as none */
      snprintf(res, sizeof res, "%d (%s)", s->exit_status, s->result);
    else
      snprintf(res, sizeof res, "%s", s->result);
    snprintf(den, sizeof den, s->denials >= 0 ? "%lld" : "-", s->denials);
    cell(out, s->id, 16, false);
    cell(out, s->started_at, 20, false);
    cell(out, s->target, 24, false);
    cell(out, res, 26, false);
    cell(out, den, 7, false);
    cell(out, s->pr_url, 0, true);
  }
  if (shown < n)
    fprintf(out, "(%zu older run(s) not shown: --limit 0 shows all)\n", n - shown);
  return 0;
}
