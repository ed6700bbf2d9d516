/* What the model relay lets through in a request: the per-vendor rule sets
 * (issue #17: "the model API cannot be a way out").
 *
 * A model API is a door out when the vendor fetches or executes something
 * on the agent's behalf: a remote MCP server (`mcp_servers`, an OpenAI
 * `{"type": "mcp", "server_url": ...}` tool), a server-side web search or
 * fetch, code execution in the vendor's container, a document or image
 * given by URL, a file from the vendor's Files API, a stored response or
 * conversation. The agent chooses the request body, so the relay reads it:
 * every request body is parsed as JSON (strictly: duplicate keys, NUL
 * escapes, invalid UTF-8, trailing bytes and nesting past
 * AL_RELAY_BODY_MAX_DEPTH are refused; the vendor must never see a body
 * the relay read differently) and checked against the vendor's table, one
 * data table per vendor in its own file (rules_anthropic.c,
 * rules_openai.c; documented in docs/policy.md). A request that uses a
 * feature the policy does not allow by name (`relay.allow`) is refused
 * with 403 before anything leaves.
 *
 * Tools are deny-by-default: a tool without a `type`, or with one of the
 * vendor's client-executed types (executed by the agent, inside the
 * sandbox), passes; every other type is a feature, named by the table
 * (`web_search_20250305` is `web_search`) or, when the table does not know
 * it, by the type itself, so a tool type the vendor adds tomorrow is
 * refused until someone allows it.
 *
 * Headers are an allowlist per vendor: names in the table (or
 * relay.headers) are forwarded, everything else is dropped (and named in
 * the call's log line). `anthropic-beta` values are filtered: values the
 * table marks as enabling a server-side feature refuse the request unless
 * the feature is allowed; values the table knows as harmless, or the
 * policy lists (relay.anthropic_beta), are forwarded; unknown values are
 * dropped. OpenAI-Organization and OpenAI-Project never come from the
 * agent: the relay sends the policy's values (relay.organization,
 * relay.project) or none. */
#ifndef AL_RELAY_RULES_H
#define AL_RELAY_RULES_H

#include <stdbool.h>
#include <stddef.h>

#define AL_RELAY_BODY_MAX_DEPTH 64

typedef enum al_relay_rule_kind {
  AL_RULE_TOP_KEY,   /* the body has member `match` and it is not null or false */
  AL_RULE_TOOL_TYPE, /* an element of the top-level `tools` array has `"type": match` */
  AL_RULE_OBJECT,    /* any object, at any depth, with `"type": match` and member `field`
                        (`a.b`: member b of member a) present, a string not starting with
                        `except_prefix` (case-insensitive) when that is set */
} al_relay_rule_kind;

/* One line of a vendor's table. `match` ending in `*` matches by prefix. */
typedef struct al_relay_rule {
  al_relay_rule_kind kind;
  const char *match;
  const char *field;         /* AL_RULE_OBJECT only */
  const char *except_prefix; /* AL_RULE_OBJECT only: e.g. "data:" (inline bytes are fine) */
  const char *feature;       /* the name relay.allow lists to let it through */
  const char *why;           /* what the vendor would do, for the refusal message */
} al_relay_rule;

/* An anthropic-beta value and the feature it turns on (NULL: harmless). */
typedef struct al_relay_beta {
  const char *value; /* trailing `*`: prefix */
  const char *feature;
} al_relay_beta;

/* A top-level member the relay adds when a body omits it, where the
 * vendor's default for it is the unsafe one (OpenAI Responses: `store`
 * defaults to true, the response kept by the vendor). Only on paths
 * ending in `path_suffix`; not when relay.allow names `feature`. */
typedef struct al_relay_default {
  const char *path_suffix; /* "/responses" */
  const char *member;      /* "store" */
  const char *json;        /* the value added, as JSON text: "false" */
  const char *feature;     /* the relay.allow name that turns it off */
  const char *why;         /* what the vendor's default would do */
} al_relay_default;

typedef struct al_relay_ruleset {
  const char *vendor; /* "anthropic", "openai" */
  const al_relay_rule *rules;
  size_t n_rules;
  const char *const *client_tools; /* tool types the client executes (prefix with `*`); NULL end */
  const char *const *group_tools;  /* tool types that group other tools in their own `tools`
                                      array (checked the same way, one level); NULL end */
  const char *const *headers; /* request headers forwarded, lower case (`*`: prefix); NULL end */
  const al_relay_beta *betas; /* anthropic-beta values known; NULL for none */
  size_t n_betas;
  const al_relay_default *defaults; /* members added when omitted; NULL for none */
  size_t n_defaults;
} al_relay_ruleset;

extern const al_relay_ruleset al_relay_rules_anthropic; /* rules_anthropic.c */
extern const al_relay_ruleset al_relay_rules_openai;    /* rules_openai.c */

/* The rule set of a vendor name ("anthropic", "openai"), or NULL. */
const al_relay_ruleset *al_relay_ruleset_find(const char *vendor);

/* The rule set for a request to `path` on an upstream of `vendor`: the
 * API's own when the path is one of the known APIs (`.../messages`,
 * `.../messages/count_tokens`: Anthropic; `.../responses`,
 * `.../chat/completions`: OpenAI), so a body is never read with the other
 * API's rules; else the vendor's. NULL for an unknown vendor. */
const al_relay_ruleset *al_relay_ruleset_for(const char *vendor, const char *path);

/* Check one request body (len bytes, not NUL-terminated, untrusted) against
 * rs. allowed: the feature names the policy allows (NULL-terminated, may be
 * NULL). An empty body passes (nothing to read). Returns 0 when the body may
 * be forwarded; 400 when it is not a JSON object the relay can read (bad
 * JSON, duplicate keys, too deep); 403 when it uses a feature not allowed.
 * why (at most whylen bytes, always NUL-terminated) says which and where;
 * feature (may be NULL) gets the feature's name on a 403. Never allocates
 * more than jansson's copy of the body; never recurses past
 * AL_RELAY_BODY_MAX_DEPTH. */
int al_relay_check_body(const al_relay_ruleset *rs, const char *const *allowed, const char *body,
                        size_t len, char *why, size_t whylen, char *feature, size_t featlen);

/* Add the members rs->defaults names to a body that omits them, on a path
 * the default applies to, unless `allowed` names its feature. body (len
 * bytes) must have passed al_relay_check_body (a JSON object). The member
 * is spliced in right after the opening brace, every other byte kept as
 * sent (no re-serialization: numbers and strings reach the vendor as the
 * agent wrote them). Returns 0 with *out NULL when nothing is added, or 0
 * with a new body in *out (malloc'd, *out_len bytes; the caller frees) and
 * what was added in set ("store=false", comma-separated; setlen bytes);
 * 403 with why and feature when the member is present as null (null is the
 * vendor's unsafe default by another name). An empty body is left alone. */
int al_relay_apply_defaults(const al_relay_ruleset *rs, const char *const *allowed,
                            const char *path, const char *body, size_t len, char **out,
                            size_t *out_len, char *set, size_t setlen, char *why, size_t whylen,
                            char *feature, size_t featlen);

/* Whether request header `name` (any case) is forwarded under rs, or listed
 * in extra (NULL-terminated, lower case, may be NULL). Credential and
 * hop-by-hop headers are the caller's to drop first. */
bool al_relay_header_allowed(const al_relay_ruleset *rs, const char *const *extra,
                             const char *name);

/* Filter an anthropic-beta header value (comma-separated tokens, RFC 9110
 * §5.6.1) into out (outlen bytes): known-harmless values, values listed in
 * extra and values whose feature is in allowed are kept; unknown values
 * are dropped and named in dropped (droplen bytes, comma-separated).
 * Returns 0, or 403 when a value turns on a feature not allowed (why
 * filled), or 400 when the value is not a token list. */
int al_relay_filter_betas(const al_relay_ruleset *rs, const char *const *allowed,
                          const char *const *extra, const char *value, char *out, size_t outlen,
                          char *dropped, size_t droplen, char *why, size_t whylen);

#endif
