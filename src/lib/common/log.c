#include "common/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "common/term.h"

static const char *g_prog = "airlock";
static enum al_log_level g_level = AL_LOG_INFO;
static FILE *g_file;

void al_log_init(const char *progname, enum al_log_level level)
{
  g_prog = progname;
  g_level = level;
}

void al_log_set_file(FILE *f)
{
  g_file = f;
}

enum al_log_level al_log_get_level(void)
{
  return g_level;
}

/* A component's message names it ("proxy: reload refused ..."), which
 * reads well under another command ("airlock ticket: proxy: ...") but
 * doubles under its own ("airlock proxy: proxy: ..."): when the program
 * name's last word is the message's first, that word is said once. */
static const char *skip_own_name(const char *msg)
{
  const char *sp = strrchr(g_prog, ' ');
  const char *word = sp ? sp + 1 : NULL;
  size_t wl = word ? strlen(word) : 0;
  if (wl && strncmp(msg, word, wl) == 0 && msg[wl] == ':' && msg[wl + 1] == ' ')
    return msg + wl + 2;
  return msg;
}

void al_log(enum al_log_level level, const char *fmt, ...)
{
  if (level > g_level)
    return;
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  char *redacted = al_redact(buf);
  /* one line, whatever a hostile name or answer inside it holds (term.h) */
  const char *src = skip_own_name(redacted ? redacted : buf);
  size_t sl = strlen(src);
  char *clean = malloc(4 * sl + 1);
  if (clean)
    al_term_escape_into(src, sl, AL_TERM_KEEP_TAB, clean, NULL);
  static const char *names[] = {"error", "warning", "info", "debug"};
  FILE *out = g_file ? g_file : stderr;
  fprintf(out, "%s: %s%s%s\n", g_prog, level <= AL_LOG_WARN ? names[level] : "",
          level <= AL_LOG_WARN ? ": " : "", clean ? clean : "(out of memory)");
  fflush(out);
  free(clean);
  free(redacted);
}
