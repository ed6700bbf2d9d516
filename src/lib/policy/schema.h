/* The policy's schema (schema.c): the field tables of airlock.yaml for the
 * one YAML walker (common/yamlwalk.h). Internal to policy/. */
#ifndef AL_POLICY_SCHEMA_H
#define AL_POLICY_SCHEMA_H

#include <libfyaml.h>

#include "common/yamlwalk.h"
#include "policy/policy.h"

/* Walk the document root against the policy's tables, filling p (whose
 * defaults are already set). w carries the file name, err, the document
 * and AL_YW_STRICT; warnings are appended to p->warnings. Returns 0, or -1
 * with "FILE:LINE:COL: PATH: rule" in w->err (EINVAL). What was read
 * before an error stays in p for al_policy_free(). */
int al_policy_walk(al_yw *w, struct fy_node *root, al_policy *p);

#endif
