/* ghapi-call: drive the forge client (src/lib/forge/ghapi.h) from a test
 * script, against the test forge. Test-only; never installed.
 *
 * usage: ghapi-call [options] API_URL METHOD PATH
 *   --ca FILE            trust anchors
 *   --resolve H:P:A      curl --resolve entry (repeatable, up to 8)
 *   --list N             a list call (al_ghapi_list) capped at N items (0 = default)
 *   --field NAME         the list is the array member NAME of each page
 *   --body JSON          a request body
 *   --deadline-ms N      al_ghapi_set_deadline(now + N)
 *   --secondary-ms N     opts.secondary_wait_ms (test forge only)
 *   --body-max N         opts.body_max
 *   --token-stdin        read the bearer token from the first line of stdin
 *                        (never from the command line)
 * Prints one JSON object: {"rc", "status", "class", "message", "note",
 * "moved_status", "moved_to", "error"} for a request; {"rc", "list_status",
 * "items", "pages", "why", "http_status", "class", "names"} for a list
 * ("names": each item's `filename`, `name` or `id`). Exit 0 when it ran. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secmem.h"
#include "common/util.h"
#include "forge/ghapi.h"

static json_t *names_of(json_t *items)
{
  json_t *n = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(items, i, v)
  {
    json_t *k = json_object_get(v, "filename");
    if (!k)
      k = json_object_get(v, "name");
    if (!k)
      k = json_object_get(v, "id");
    json_array_append(n, k ? k : json_null());
  }
  return n;
}

int main(int argc, char **argv)
{
  al_ghapi_opts o = {0};
  const char *resolve[9] = {0};
  size_t nres = 0;
  long long list = -1, deadline = 0;
  const char *field = NULL, *body = NULL;
  char tok[8192] = "";
  bool tok_in = false;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--token-stdin") == 0) {
      tok_in = true;
      continue;
    }
    if (!v) {
      fprintf(stderr, "ghapi-call: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--ca") == 0)
      o.ca_file = v;
    else if (strcmp(a, "--resolve") == 0 && nres < 8)
      resolve[nres++] = v;
    else if (strcmp(a, "--list") == 0)
      list = atoll(v);
    else if (strcmp(a, "--field") == 0)
      field = v;
    else if (strcmp(a, "--body") == 0)
      body = v;
    else if (strcmp(a, "--deadline-ms") == 0)
      deadline = atoll(v);
    else if (strcmp(a, "--secondary-ms") == 0)
      o.secondary_wait_ms = (uint64_t)atoll(v);
    else if (strcmp(a, "--body-max") == 0)
      o.body_max = (size_t)atoll(v);
    else {
      fprintf(stderr, "ghapi-call: unknown option %s\n", a);
      return 2;
    }
  }
  if (argc - i != 3) {
    fprintf(stderr, "usage: ghapi-call [options] API_URL METHOD PATH\n");
    return 2;
  }
  if (tok_in) {
    if (!fgets(tok, sizeof tok, stdin)) {
      fprintf(stderr, "ghapi-call: no token on stdin\n");
      return 2;
    }
    tok[strcspn(tok, "\r\n")] = '\0';
  }
  al_error err = {0};
  al_ghapi *c = NULL;
  if (al_ghapi_open(argv[i], &o, &c, &err) < 0) {
    fprintf(stderr, "ghapi-call: %s\n", err.msg);
    return 2;
  }
  al_ghapi_set_resolve(c, resolve);
  if (deadline > 0)
    al_ghapi_set_deadline(c, al_now_ms() + (uint64_t)deadline);
  const char *bearer = tok_in ? tok : NULL;
  json_t *out;
  if (list >= 0) {
    json_t *items = NULL;
    al_ghapi_list_info st;
    int rc =
        field ? al_ghapi_list_field(c, argv[i + 2], field, bearer, (size_t)list, &items, &st, &err)
              : al_ghapi_list(c, argv[i + 2], bearer, (size_t)list, &items, &st, &err);
    out = json_pack("{s:i, s:s, s:I, s:I, s:s, s:I, s:s, s:o, s:I, s:s}", "rc", rc, "list_status",
                    al_ghapi_list_status_name(st.status), "items", (json_int_t)st.items, "pages",
                    (json_int_t)st.pages, "why", st.why, "http_status", (json_int_t)st.http_status,
                    "class", al_ghapi_class_name(st.cls), "names", names_of(items), "moved_status",
                    (json_int_t)st.moved_status, "moved_to", st.moved_to);
    json_decref(items);
  } else {
    json_t *b = body ? json_loads(body, 0, NULL) : NULL;
    al_ghapi_resp r;
    int rc = al_ghapi_request(c, argv[i + 1], argv[i + 2], bearer, b, &r, &err);
    json_decref(b);
    out = json_pack("{s:i, s:I, s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:O*}", "rc", rc, "status",
                    (json_int_t)r.status, "class", al_ghapi_class_name(r.cls), "message", r.message,
                    "note", r.note, "moved_status", (json_int_t)r.moved_status, "moved_to",
                    r.moved_to, "error", rc < 0 ? err.msg : "", "rate_waits",
                    (json_int_t)r.rate_waits, "json", r.json);
    al_ghapi_resp_free(&r);
  }
  char *s = json_dumps(out, JSON_COMPACT);
  puts(s);
  free(s);
  json_decref(out);
  al_wipe_str(tok);
  al_ghapi_free(c);
  return 0;
}
