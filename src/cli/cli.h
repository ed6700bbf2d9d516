/* The command-line conventions every `airlock` verb shares (docs/cli.md):
 *
 *   - every message starts with `airlock CMD: ` and is one line, with
 *     control, format and bidi characters escaped (common/term.h);
 *   - a usage error (unknown option, missing value, bad number or name,
 *     extra operand) prints the message and the usage lines on stderr and
 *     exits AL_EXIT_USAGE (2), before anything is started or written;
 *   - `airlock help CMD` is `airlock CMD --help`: help on stdout, exit 0;
 *   - exit statuses come from common/exitcodes.h.
 *
 * A command calls al_cli_init() first, parses with al_cli_getopt() (never
 * getopt's own messages: opterr is 0), and reports with al_cli_error() and
 * al_cli_usage_error(). Not thread-safe (a CLI parses once, in main). */
#ifndef AL_CLI_CLI_H
#define AL_CLI_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/exitcodes.h"

/* Name the command for messages ("ticket" -> "airlock ticket: ") and give
 * its usage printer (prints the full --help text to its FILE; the lines up
 * to the first blank line are the usage lines). Also sets the log prefix. */
void al_cli_init(const char *cmd, void (*usage)(FILE *out));

/* "airlock CMD" (or "airlock" before al_cli_init). */
const char *al_cli_name(void);

/* getopt_long(3) with our messages: an unknown option or a missing value
 * prints `airlock CMD: unknown option `--x`` / `option `-p` needs a value`
 * and returns '?'. A leading '+' in shortopts (stop at the first operand)
 * is kept. Resets optind when it is 0 (call once with optind = 0 or 1). */
int al_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* Print `airlock CMD: MESSAGE` (escaped, one line) on stderr. */
void al_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: the message (when fmt is not NULL), then the usage lines
 * and `Try `airlock help CMD`.` on stderr. Returns AL_EXIT_USAGE. */
int al_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Operands left after the options: refuse any beyond `max`. Returns 0, or
 * AL_EXIT_USAGE after printing `unexpected argument `X``. */
int al_cli_max_operands(int argc, char **argv, int first, int max);

/* A decimal integer option value in [min, max]: no sign, no spaces, no
 * hex or octal, no trailing text. Returns 0 with *out, or AL_EXIT_USAGE
 * after printing `--OPT `ARG`: RULE`. */
int al_cli_uint(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out);

/* A TCP port (1..65535; 0 too when allow_zero: "any free port"). */
int al_cli_port(const char *opt, const char *arg, bool allow_zero, uint16_t *out);

/* A DNS-1123 label (RFC 1123 §2.1 as Kubernetes names namespaces: 1..63
 * of [a-z0-9-], starting and ending alphanumeric). Returns 0 or
 * AL_EXIT_USAGE after printing why. */
int al_cli_dns1123_label(const char *opt, const char *arg);

/* Is this argument --help or -h? */
bool al_cli_is_help(const char *arg);

#endif
