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

#endif
