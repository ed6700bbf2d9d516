/* The catalogue of what a policy may not hand the sandbox silently
 * (sensitive.c): host trees for filesystem.ro_paths, secret-looking names
 * for process.env_pass. Overrides: filesystem.sensitive_ro_paths and
 * process.secret_env (docs/policy.md), warned on every run. */
#ifndef AL_POLICY_SENSITIVE_H
#define AL_POLICY_SENSITIVE_H

#include <stdbool.h>
#include <stddef.h>

/* Is the normalized absolute path one a policy may not bind read-only
 * without the override? True, with the reason in why (n bytes, a
 * sentence naming the tree), when the path is at, under or above a tree
 * of the table (/run, /var/run, /proc, /sys, /dev, /boot, /etc, the
 * container engines' state, /var/log), is or holds a home directory
 * (/root, /home, /home/NAME, $HOME) or a credential store under one
 * (~/.ssh, ~/.kube, ~/.aws, ~/.config/gh, ...); the same for what it
 * resolves to on this host (realpath(3)); or, on this host, is a Unix
 * socket or a directory holding one (a walk of at most 20000 entries and
 * 24 levels, symlinks not followed; past the bound it is refused too).
 * An absent path is not refused here (the sandbox refuses it at start). */
bool al_policy_ro_path_sensitive(const char *path, char *why, size_t n);

/* Does the variable name look like it holds a secret: *TOKEN*, *SECRET*,
 * *KEY*, *PASSWORD*, *PASSWD*, *CREDENTIAL*, *PRIVATE*, *COOKIE*, or AWS_*, GH_*, GITHUB_*,
 * GITLAB_*, GOOGLE_*, AZURE_*, OPENAI_*, ANTHROPIC_*, NPM_*, VAULT_* (case-insensitive)? */
bool al_policy_env_secret_like(const char *name);

/* What is said of such a name after it, by every command that refuses or
 * warns about one (process.env_pass refuses, `airlock run --env` warns):
 * "looks like a secret (*TOKEN*, ...): whatever runs in the sandbox holds
 * its value". A static string. */
const char *al_policy_env_secret_rule(void);

#endif
