/* airlock: run an autonomous coding agent on one ticket inside a sandbox and
 * let exactly one thing out: a pull request that a human must review. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "paths.h"
#include "common/log.h"
#include "common/term.h"
#include "common/util.h"

/* The one command table: `airlock --help`, `airlock help --complete` (what
 * the bash and zsh completion read), the man pages (scripts/gen-man.py
 * reads --help) and the dispatch below all come from it.
 * tests/integration/cli.sh checks that every command and subcommand is in
 * the help, in the completion and answers its own --help. */
struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *subcommands; /* space-separated, or NULL: the words after the name */
  const char *summary;
};

/* Commands that need the HTTP client (libcurl) live in a second binary,
 * airlock-net, beside this one: loading libcurl and its ~30 libraries costs
 * about 3 ms per start, which `airlock run` must not pay. The core binary
 * execs the sibling for those verbs (as git does with git-<verb>). */
#ifdef AIRLOCK_NET_BINARY
#define NET(fn) fn
#else
#define NET(fn) NULL
#endif

static const struct command commands[] = {
    {"demo", NET(cmd_demo), NULL,
     "the main job against a local test forge: airlock demo [--hostile|--serve]"},
    {"ticket", NET(cmd_ticket), NULL,
     "one ticket to one PR: airlock ticket OWNER/REPO#N -p POLICY"},
    {"run", cmd_run, NULL, "run a command in the sandbox: airlock run [-p POLICY] -- CMD..."},
    {"policy", cmd_policy, "check default init",
     "policy files: airlock policy check FILE | default | init OWNER/REPO (a starter)"},
    {"proxy", cmd_proxy, NULL, "the egress proxy alone: airlock proxy -p POLICY --listen ADDR"},
    {"relay", NET(cmd_relay), NULL, "the model relay alone: airlock relay -p POLICY --listen ADDR"},
    {"broker", NET(cmd_broker), "app-manifest",
     "the token broker: airlock broker -c CONFIG --socket PATH | app-manifest [--audit]"},
    {"probe", cmd_probe, NULL,
     "attack the sandbox from inside: airlock probe [-p POLICY] [--json]"},
    {"token", cmd_token, "lease", "debug a broker lease: airlock token lease --repo OWNER/REPO"},
    {"audit", NET(cmd_audit), NULL,
     "prove the escape budget: airlock audit OWNER/REPO [--branch B]"},
    {"render", cmd_render, "compose kubernetes cluster seccomp",
     "manifests: airlock render compose|kubernetes|cluster|seccomp [-p POLICY]"},
    {"serve", NET(cmd_serve), "enqueue",
     "the service: webhooks and a queue of runs: airlock serve -c CONFIG | enqueue"},
    {"runs", cmd_runs, NULL, "the recent runs, newest first: airlock runs [--json] [--limit N]"},
    {"show", cmd_show, NULL, "one run's record, readable: airlock show RUN [--json]"},
    {"gc", cmd_gc, NULL, "remove old run records: airlock gc --keep N --older-than 7d"},
};

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "  %-8s %s\n", "help",
          "a command's options: airlock help COMMAND (= COMMAND --help); --complete: for shells");
  fprintf(out, "  %-8s %s\n", "version", "print the version: airlock version (= --version)");
  fprintf(out, "\nExit status (every command; docs/cli.md):\n" AL_EXIT_TABLE);
}

/* `airlock help --complete`: "NAME [SUB...]" per line, then help and
 * version: what contrib/completion/ offers. */
static void complete(FILE *out)
{
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "%s%s%s\n", commands[i].name, commands[i].subcommands ? " " : "",
            commands[i].subcommands ? commands[i].subcommands : "");
  fprintf(out, "help\nversion\n");
}

static const struct command *find(const char *name)
{
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(name, commands[i].name) == 0)
      return &commands[i];
  return NULL;
}

static int dispatch(const struct command *c, int argc, char **argv)
{
  return c->fn ? c->fn(argc, argv) : al_cli_exec_net(argc, argv, argv[0]);
}

/* Levenshtein distance of a and b, both at most 15 bytes (else 99). */
static size_t edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b), row[16];
  if (la > 15 || lb > 15)
    return 99;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* The command (or built-in) a typo most likely meant: one at edit
 * distance 1 or 2 and less than either length, the nearest (the first in
 * the table on a tie); NULL when none is that close. */
static const char *nearest(const char *name)
{
  static const char *const builtins[] = {"help", "version"};
  const char *best = NULL;
  size_t bd = 3;
  for (size_t i = 0; i < sizeof commands / sizeof commands[0] + 2; i++) {
    const char *c = i < sizeof commands / sizeof commands[0]
                        ? commands[i].name
                        : builtins[i - sizeof commands / sizeof commands[0]];
    size_t d = edit_distance(name, c);
    if (d < bd && d < strlen(name) && d < strlen(c)) { /* "xy" is no typo of "gc" */
      bd = d;
      best = c;
    }
  }
  return best;
}

/* A usage error of the top level (docs/cli.md, "Usage errors"): the
 * message (with the nearest command when a typo is likely), the usage
 * line and the Try line, not the whole command list. */
static int unknown(const char *name)
{
  al_autofree char *clean = al_term_escape_line(name);
  const char *near = name[0] == '-' ? NULL : nearest(name);
  fprintf(stderr,
          "airlock: unknown %s `%s`%s%s%s\nusage: airlock COMMAND [ARGS...]\n"
          "Try `airlock help` for the commands.\n",
          name[0] == '-' ? "option" : "command", clean, near ? " (did you mean `" : "",
          near ? near : "", near ? "`?)" : "");
  return AL_EXIT_USAGE;
}

#if defined(__SANITIZE_ADDRESS__)
#include <linux/seccomp.h>
#include <sys/prctl.h>
/* Test builds only. LeakSanitizer stops the world with ptrace(2) at exit,
 * which a sandbox's seccomp filter refuses, and then aborts: airlock's own
 * binary running inside a sandbox (probe inner, relay) skips the leak
 * check. Called by LSan; see sanitizer/lsan_interface.h. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
  return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == SECCOMP_MODE_FILTER;
}
#endif

/* The usage of the two built-ins the command table does not hold. */
static int builtin_help(const char *name)
{
  if (strcmp(name, "version") == 0)
    printf("usage: airlock version\n\nprint airlock's version (the same as airlock --version)\n");
  else
    printf("usage: airlock help [COMMAND]\n\nwithout COMMAND: the commands; with one: its "
           "options (the same as airlock COMMAND --help); --complete: for shells\n");
  return 0;
}

int main(int argc, char **argv)
{
  al_log_init("airlock", AL_LOG_INFO);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (al_cli_is_help(argv[1]) || (strcmp(argv[1], "help") == 0 && argc == 2)) {
    usage(stdout);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "help") == 0 && strcmp(argv[2], "--complete") == 0) {
    complete(stdout);
    return 0;
  }
  if (strcmp(argv[1], "help") == 0) {
    /* airlock help CMD: CMD's own --help, so the two never differ */
    if (argc > 3) {
      al_autofree char *clean = al_term_escape_line(argv[3]);
      fprintf(stderr, "airlock help: unexpected argument `%s`\nusage: airlock help [COMMAND]\n",
              clean);
      return AL_EXIT_USAGE;
    }
    if (strcmp(argv[2], "version") == 0 || strcmp(argv[2], "help") == 0)
      return builtin_help(argv[2]);
    const struct command *c = find(argv[2]);
    if (!c)
      return unknown(argv[2]);
    char help[] = "--help";
    char *hargv[] = {argv[2], help, NULL};
    return dispatch(c, 2, hargv);
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    if (argc == 3 && strcmp(argv[1], "version") == 0 && al_cli_is_help(argv[2]))
      return builtin_help("version");
    if (argc > 2) {
      al_autofree char *clean = al_term_escape_line(argv[2]);
      fprintf(stderr, "airlock version: unexpected argument `%s`\nusage: airlock version\n", clean);
      return AL_EXIT_USAGE;
    }
    printf("airlock %s\n", AIRLOCK_VERSION);
    return 0;
  }
  const struct command *c = find(argv[1]);
  return c ? dispatch(c, argc - 1, argv + 1) : unknown(argv[1]);
}
