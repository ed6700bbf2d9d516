/* The command-line conventions every verb shares (cli.h). */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/term.h"
#include "common/util.h"

static char g_name[64] = "airlock";
static const char *g_cmd = "";
static void (*g_usage)(FILE *out);

void al_cli_init(const char *cmd, void (*usage)(FILE *out))
{
  snprintf(g_name, sizeof g_name, "airlock %s", cmd);
  g_cmd = cmd;
  g_usage = usage;
  al_log_init(g_name, al_log_get_level());
}

const char *al_cli_name(void)
{
  return g_name;
}

__attribute__((format(printf, 1, 0))) static void verror(const char *fmt, va_list ap)
{
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  al_autofree char *clean = al_term_escape_line(msg ? msg : "out of memory");
  free(msg);
  fprintf(stderr, "%s: %s\n", g_name, clean);
}

void al_cli_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  verror(fmt, ap);
  va_end(ap);
}

/* The usage lines: the first line of the usage text (`usage: airlock CMD
 * ...`) and the lines after it that continue it or give another form
 * (indented by 4 spaces or more), up to a blank line or the first line
 * indented less (an option's description, "  -b, --branch B ..."), so
 * every command prints the same kind of usage lines, whether or not its
 * help text has a blank line after them. */
static void print_usage_lines(FILE *out)
{
  if (!g_usage)
    return;
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m)
    return;
  g_usage(m);
  fclose(m);
  for (char *p = buf, *nl; p && *p; p = nl + 1) {
    nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (p != buf && (n == 0 || strspn(p, " ") < 4))
      break;
    fprintf(out, "%.*s\n", (int)n, p);
    if (!nl)
      break;
  }
  free(buf);
}

int al_cli_usage_error(const char *fmt, ...)
{
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    verror(fmt, ap);
    va_end(ap);
  }
  print_usage_lines(stderr);
  fprintf(stderr, "Try `airlock help %s` for more.\n", g_cmd[0] ? g_cmd : "");
  return AL_EXIT_USAGE;
}

int al_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
  /* ':' first (after a '+'): a missing value is ':' rather than '?' */
  char so[128];
  bool plus = shortopts[0] == '+';
  snprintf(so, sizeof so, "%s:%s", plus ? "+" : "", shortopts + (plus ? 1 : 0));
  opterr = 0;
  int prev = optind;
  int c = getopt_long(argc, argv, so, longopts, NULL);
  if (c != '?' && c != ':')
    return c;
  /* the argument getopt was looking at: optind moved past it, unless a
   * short option cluster is still being read */
  const char *arg = optind > prev && optind - 1 < argc ? argv[optind - 1] : argv[prev];
  char shown[8];
  if (optopt && optopt < 256 && (!arg || arg[1] != '-')) {
    snprintf(shown, sizeof shown, "-%c", optopt);
    arg = shown;
  }
  if (c == ':')
    al_cli_error("option `%s` needs a value", arg ? arg : "?");
  else
    al_cli_error("unknown option `%s`", arg ? arg : "?");
  return '?';
}

int al_cli_max_operands(int argc, char **argv, int first, int max)
{
  if (argc - first > max)
    return al_cli_usage_error("unexpected argument `%s`", argv[first + max]);
  return 0;
}

int al_cli_uint(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
  uint64_t v = 0;
  const char *p = arg;
  bool ok = al_parse_decimal(&p, &v) == 0 && *p == '\0';
  if (!ok || v < min || v > max) {
    al_cli_usage_error("%s `%s`: must be a decimal number from %llu to %llu", opt, arg,
                       (unsigned long long)min, (unsigned long long)max);
    return AL_EXIT_USAGE;
  }
  *out = v;
  return 0;
}

int al_cli_port(const char *opt, const char *arg, bool allow_zero, uint16_t *out)
{
  uint64_t v;
  if (strcmp(arg, "0") == 0 && allow_zero) {
    *out = 0;
    return 0;
  }
  int r = al_cli_uint(opt, arg, 1, 65535, &v);
  if (r == 0)
    *out = (uint16_t)v;
  return r;
}

int al_cli_dns1123_label(const char *opt, const char *arg)
{
  size_t n = strlen(arg);
  bool ok = n >= 1 && n <= 63;
  for (size_t i = 0; ok && i < n; i++) {
    char c = arg[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    ok = alnum || (c == '-' && i > 0 && i < n - 1);
  }
  if (!ok)
    return al_cli_usage_error("%s `%s`: must be a DNS-1123 label: 1 to 63 of a-z 0-9 and `-`, "
                              "starting and ending with a letter or digit",
                              opt, arg);
  return 0;
}

bool al_cli_is_help(const char *arg)
{
  return arg && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0);
}
