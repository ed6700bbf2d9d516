/* Where the CLI finds its companions: the bundled agents, the demo's
 * project and fixture, the test-forge binary and its scripts. Installed:
 * DATADIR (share/airlock) and LIBEXECDIR (libexec/airlock); in a build
 * tree: the source and build directories meson compiled in. The
 * environment may override with AIRLOCK_DATA_DIR / AIRLOCK_LIBEXEC_DIR. */
#ifndef AL_CLI_PATHS_H
#define AL_CLI_PATHS_H

#include <stddef.h>

/* Find `rel` (e.g. "agents/patch-agent", "demo/fixture.json",
 * "scripts/make-test-ca.sh") under the data directories; the absolute path
 * goes to out. Returns 0 or -1 (ENOENT). */
int al_cli_find_data(const char *rel, char *out, size_t outlen);
/* Find a helper binary ("airlock-forge"). Returns 0 or -1. */
int al_cli_find_libexec(const char *name, char *out, size_t outlen);
/* The directory of the running airlock binary. */
int al_cli_self_dir(char *out, size_t outlen);

/* Re-exec as the sibling airlock-net binary (the verbs and backends that
 * link libcurl; see main.c) with the verb's arguments: argv[0] is the verb
 * ("run", "probe", ...), argc counts them. Returns only on failure, with
 * the message printed naming `why` (what needed it): 125 when our own
 * binary cannot be found, 127 when airlock-net cannot be executed. */
int al_cli_exec_net(int argc, char **argv, const char *why);

#endif
