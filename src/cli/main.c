/* airlock: run an autonomous coding agent on one ticket inside a sandbox and
 * let exactly one thing out: a pull request that a human must review. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "common/log.h"

struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
};

static const struct command commands[] = {
    {"run", cmd_run, "run a command in the sandbox: airlock run [-p POLICY] -- CMD..."},
    {"policy", cmd_policy, "check a policy file: airlock policy check FILE"},
};

static void usage(FILE *out)
{
  fprintf(out, "usage: airlock COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nairlock COMMAND --help for a command's options.\n");
}

int main(int argc, char **argv)
{
  al_log_init("airlock", AL_LOG_INFO);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("airlock %s\n", AIRLOCK_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "airlock: unknown command `%s`\n", argv[1]);
  usage(stderr);
  return 2;
}
