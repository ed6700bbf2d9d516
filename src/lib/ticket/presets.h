/* Agent presets (issue #17): `airlock ticket --agent claude|codex` runs a
 * real coding agent with everything it needs, from one table (presets.c)
 * a user can read and copy (docs/agents.md, "Agent presets").
 *
 * A preset names the agent's npm package and program, its flags, its
 * environment (telemetry and update checks off, its own sandbox off
 * because airlock is the sandbox, its home on a writable path it accepts),
 * the model relay vendor it talks to, and the prompt that tells it the
 * contract (docs/agents.md). al_agent_preset_resolve() finds the program on
 * the host (an npm prefix, else PATH), and works out what the sandbox must
 * bind read-only: the package's whole node_modules tree (npm puts the
 * platform binaries in sibling packages) and node when it lives outside
 * /usr. Nothing here holds a secret. */
#ifndef AL_RUN_PRESETS_H
#define AL_RUN_PRESETS_H

#include <stddef.h>

#include "common/error.h"
#include "policy/policy.h"

typedef struct al_agent_preset {
  const char *name;        /* --agent NAME */
  const char *what;        /* one line: the agent and its API */
  const char *npm_package; /* what `npm install` takes */
  const char *program;     /* the program's name (PATH, PREFIX/bin, PREFIX/node_modules/.bin) */
  const char *vendor;      /* the relay upstream's vendor it needs ("anthropic", "openai") */
  const char *api_path;    /* the relay route it calls, e.g. "/v1/messages" */
  const char *model;       /* the model it asks for (--model / -m) */
  /* Arguments after the program. "{PROMPT}" becomes the contract prompt,
   * "{MODEL}" the model. NULL-terminated. */
  const char *const *args;
  const char *const *env; /* NAME=VALUE for the agent; NULL-terminated */
  const char *make_dir;   /* a directory created (mkdir -p) inside before it starts, or NULL */
} al_agent_preset;

/* The preset named `name`, or NULL (then --agent names a program). */
const al_agent_preset *al_agent_preset_find(const char *name);

/* All presets, *n of them (for --help and the docs test). */
const al_agent_preset *al_agent_presets(size_t *n);

/* The contract prompt every preset gives its agent (docs/agents.md: work
 * in /workspace, run the tests, push the run branch, declare the result).
 * Static. */
const char *al_agent_prompt(void);

typedef struct al_agent_plan {
  char **argv;     /* the agent's command: absolute program (or node + script), flags, prompt */
  char **env;      /* NAME=VALUE, the preset's */
  char **ro_paths; /* host paths to bind read-only (package tree, node) */
  char *program;   /* the resolved program, for messages */
} al_agent_plan;

/* Find p's program and build the plan. prefix: an npm prefix to search
 * first (`npm install --prefix DIR` or `npm install -g --prefix DIR`), or
 * NULL ($AIRLOCK_AGENT_PREFIX, then the host's PATH). policy: the run's
 * policy, which must have a relay upstream of p->vendor routing
 * p->api_path (else EINVAL saying what to add). extra: the user's own
 * arguments (after `--`), appended; may be NULL. ENOENT when the program
 * is not installed, with the install command in the message. The caller
 * frees *out with al_agent_plan_free. */
int al_agent_preset_resolve(const al_agent_preset *p, const char *prefix, const al_policy *policy,
                            char *const *extra, al_agent_plan *out, al_error *err);

void al_agent_plan_free(al_agent_plan *pl);

#endif
