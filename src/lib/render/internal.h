/* Helpers shared by the renderers; not a public API. */
#ifndef AL_RENDER_INTERNAL_H
#define AL_RENDER_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "policy/policy.h"

/* Write `s` as a YAML double-quoted scalar (YAML 1.2 §7.3.1): `"`, `\` and
 * every control or non-ASCII byte escaped, so no input can end the scalar. */
void rd_quote(FILE *f, const char *s);

/* Distinct ports of the policy's allowlist, ascending; returns the count. */
size_t rd_ports(const al_policy *p, uint16_t *ports, size_t max);

/* The header note of a policy with credentials.mode: sealed (render.c):
 * what the renderings do not cover (the forge gateway), and what they carry
 * instead (env mode). Nothing for an env policy or one without credentials.
 * what: the subject and verb, "This Compose file carries" / "These manifests carry". */
void rd_sealed_note(FILE *f, const al_policy *p, const char *what);

/* agent-sandbox (sandbox.c): the SandboxTemplate's head, up to and
 * including `podTemplate.metadata.labels:` (the caller writes the labels
 * and the pod spec at the Job template's indentation), and the claim, whose
 * shutdownTime is now (Unix s; 0: the clock) + deadline + 60 s, RFC 3339. */
void rd_sandbox_template_head(FILE *f, const char *ns, const char *name, const char *run,
                              unsigned long long deadline);
void rd_sandbox_claim(FILE *f, const char *ns, const char *name, const char *run, long long now,
                      unsigned long long deadline);

#endif
