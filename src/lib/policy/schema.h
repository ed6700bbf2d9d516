/* The policy's schema (schema.c, schema_network.c, schema_relay.c): the field tables of
 * airlock.yaml for the one YAML walker (common/yamlwalk.h). Internal to policy/. */
#ifndef AL_POLICY_SCHEMA_H
#define AL_POLICY_SCHEMA_H

#include "common/lazyfyaml.h"
#include <stdbool.h>
#include <stddef.h>

#include "common/yamlwalk.h"
#include "net/host.h"
#include "policy/policy.h"

/* Walk the document root against the policy's tables, filling p (whose
 * defaults are already set). w carries the file name, err, the document
 * and AL_YW_STRICT; warnings are appended to p->warnings. Returns 0, or -1
 * with "FILE:LINE:COL: PATH: rule" in w->err (EINVAL). What was read
 * before an error stays in p for al_policy_free(). */
int al_policy_walk(al_yw *w, struct fy_node *root, al_policy *p);

/* ---- shared by the schema's files (schema.c, schema_network.c, schema_relay.c) ---- */

/* The walk's state (al_yw.user): the policy, for warnings; the first
 * shorthand key of `relay:`, for the "both forms" message. */
struct policy_walk {
  al_policy *p;
  struct fy_node *short_key;
};

#define F(type, field) offsetof(type, field)
/* The last element of a list the walker just read. */
#define LAST(arr, n) ((arr)[(n)-1])

/* A list element read as a string (char *). */
extern const al_yw_field al_policy_str_item;

/* u is https://HOST[:PORT][/PATH] with a valid host (no userinfo, query or
 * fragment, no ambiguous IPv4 spelling). 0 or -1 with the message at kv. */
int al_policy_https_url(al_yw *c, const al_yw_kv *kv, const char *u);

/* The field's char * (at f->off in obj) is an absolute, normalized path
 * without control characters. A field `check`. */
int al_policy_abs_path_check(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj);

/* s is a numeric IPv4 or IPv6 address. */
bool al_policy_numeric_ip(const char *s);

/* A surprising but valid choice: appended to the policy's warnings (the
 * walk's user pointer, struct policy_walk) as "FILE:LINE:COL: PATH: why". */
__attribute__((format(printf, 4, 5))) void al_policy_warn(al_yw *c, struct fy_node *at,
                                                          const char *path, const char *fmt, ...);

/* in[0..len), canonicalized as h (net/host.h), is an IPv4 literal spelled
 * other than as the plain dotted quad (octal, hex, short forms: inet_aton
 * would read it otherwise). True with the rule, and the dotted quad to
 * write, in msg (n bytes). */
bool al_policy_ambiguous_ipv4(const char *in, size_t len, const al_host *h, char *msg, size_t n);

/* `network:` (schema_network.c): `none`, or the mapping walked into
 * ((al_policy *)obj)->network. A field `parse`. */
int al_policy_network_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj);

/* `relay:` (schema_relay.c): sets the relay's defaults and walks it into
 * ((al_policy *)obj)->relay. A field `parse`. */
int al_policy_relay_parse(al_yw *c, const al_yw_field *f, const al_yw_kv *kv, void *obj);

#endif
