/* CODEOWNERS scanning: see codeowners.h. */
#include "forge/codeowners.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

const char *const AL_CODEOWNERS_PATHS[3] = {".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"};

static bool is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Does the owner token [s, s+n) equal one of names? */
static bool owner_matches(const char *s, size_t n, const char *const *names, size_t n_names)
{
  for (size_t i = 0; i < n_names; i++)
    if (strlen(names[i]) == n && strncasecmp(s, names[i], n) == 0)
      return true;
  return false;
}

size_t al_codeowners_lines_owned_by(const char *text, size_t len, const char *const *names,
                                    size_t n_names, unsigned *lines, size_t max)
{
  size_t found = 0;
  unsigned lineno = 0;
  size_t i = 0;
  while (i < len) {
    size_t end = i;
    while (end < len && text[end] != '\n' && text[end] != '\0')
      end++;
    lineno++;
    /* Tokens of this line: the first is the pattern, the rest owners,
     * up to a token that starts with '#'. */
    size_t p = i;
    int tok = 0;
    bool hit = false;
    while (p < end) {
      while (p < end && is_space(text[p]))
        p++;
      if (p >= end || text[p] == '#')
        break;
      size_t s = p;
      while (p < end && !is_space(text[p])) {
        if (text[p] == '\\' && p + 1 < end)
          p++; /* an escaped character (e.g. "\#" or "\ ") belongs to the token */
        p++;
      }
      if (tok > 0 && owner_matches(text + s, p - s, names, n_names))
        hit = true;
      tok++;
    }
    if (hit) {
      if (found < max)
        lines[found] = lineno;
      found++;
    }
    i = end + 1;
  }
  return found;
}
