/* libfyaml (YAML 1.2 parser: the policy file, the broker's and the
 * service's configuration) for the core binary, opened on first use
 * (common/lazylib.h says why and how): `airlock run` under the built-in
 * default policy parses no YAML at all (al_policy_default). Include this
 * instead of <libfyaml.h>: each libfyaml function below is then called
 * through a pointer of its own type, taken from <libfyaml.h> (a signature
 * change there is a compile error here), looked up the first time any of
 * them is called. A libfyaml function missing from AL_FYAML_FUNCS is a
 * link error, never a silent direct call: the core binary does not link
 * libfyaml. The header's inline helpers that call the library
 * (fy_node_is_scalar and the like) are replaced by the same one-liners
 * over the table. */
#ifndef AL_COMMON_LAZYFYAML_H
#define AL_COMMON_LAZYFYAML_H

#include <libfyaml.h>
#include <stdbool.h>

#define AL_FYAML_SONAME "libfyaml.so.0"

#define AL_FYAML_FUNCS(X)                                                                          \
  X(fy_parser_create)                                                                              \
  X(fy_parser_set_string)                                                                          \
  X(fy_parser_destroy)                                                                             \
  X(fy_parse_load_document)                                                                        \
  X(fy_parse_document_destroy)                                                                     \
  X(fy_document_build_from_string)                                                                 \
  X(fy_document_destroy)                                                                           \
  X(fy_document_root)                                                                              \
  X(fy_document_lookup_anchor_by_node)                                                             \
  X(fy_node_get_type)                                                                              \
  X(fy_node_get_style)                                                                             \
  X(fy_node_get_tag)                                                                               \
  X(fy_node_get_scalar)                                                                            \
  X(fy_node_get_scalar_token)                                                                      \
  X(fy_token_start_mark)                                                                           \
  X(fy_node_mapping_iterate)                                                                       \
  X(fy_node_mapping_item_count)                                                                    \
  X(fy_node_mapping_lookup_by_string)                                                              \
  X(fy_node_pair_key)                                                                              \
  X(fy_node_pair_value)                                                                            \
  X(fy_node_sequence_iterate)                                                                      \
  X(fy_node_sequence_item_count)                                                                   \
  X(fy_diag_cfg_default)                                                                           \
  X(fy_diag_create)                                                                                \
  X(fy_diag_destroy)                                                                               \
  X(fy_diag_set_collect_errors)                                                                    \
  X(fy_diag_errors_iterate)

/* One pointer per function, of the function's own type. */
struct al_fyaml_api {
/* NOLINTNEXTLINE(bugprone-macro-parentheses): f is a name, declared as a member */
#define AL_FYAML_FIELD(f) __typeof__(&(f)) f;
  AL_FYAML_FUNCS(AL_FYAML_FIELD)
#undef AL_FYAML_FIELD
};

/* The table, filled on the first call (thread-safe, pthread_once). Aborts
 * with a message when libfyaml.so.0 or one of the functions cannot be
 * loaded (al_lazylib_open). Never NULL. */
const struct al_fyaml_api *al_fyaml(void);

#ifndef AL_LAZYFYAML_IMPL
#define fy_parser_create (al_fyaml()->fy_parser_create)
#define fy_parser_set_string (al_fyaml()->fy_parser_set_string)
#define fy_parser_destroy (al_fyaml()->fy_parser_destroy)
#define fy_parse_load_document (al_fyaml()->fy_parse_load_document)
#define fy_parse_document_destroy (al_fyaml()->fy_parse_document_destroy)
#define fy_document_build_from_string (al_fyaml()->fy_document_build_from_string)
#define fy_document_destroy (al_fyaml()->fy_document_destroy)
#define fy_document_root (al_fyaml()->fy_document_root)
#define fy_document_lookup_anchor_by_node (al_fyaml()->fy_document_lookup_anchor_by_node)
#define fy_node_get_type (al_fyaml()->fy_node_get_type)
#define fy_node_get_style (al_fyaml()->fy_node_get_style)
#define fy_node_get_tag (al_fyaml()->fy_node_get_tag)
#define fy_node_get_scalar (al_fyaml()->fy_node_get_scalar)
#define fy_node_get_scalar_token (al_fyaml()->fy_node_get_scalar_token)
#define fy_token_start_mark (al_fyaml()->fy_token_start_mark)
#define fy_node_mapping_iterate (al_fyaml()->fy_node_mapping_iterate)
#define fy_node_mapping_item_count (al_fyaml()->fy_node_mapping_item_count)
#define fy_node_mapping_lookup_by_string (al_fyaml()->fy_node_mapping_lookup_by_string)
#define fy_node_pair_key (al_fyaml()->fy_node_pair_key)
#define fy_node_pair_value (al_fyaml()->fy_node_pair_value)
#define fy_node_sequence_iterate (al_fyaml()->fy_node_sequence_iterate)
#define fy_node_sequence_item_count (al_fyaml()->fy_node_sequence_item_count)
#define fy_diag_cfg_default (al_fyaml()->fy_diag_cfg_default)
#define fy_diag_create (al_fyaml()->fy_diag_create)
#define fy_diag_destroy (al_fyaml()->fy_diag_destroy)
#define fy_diag_set_collect_errors (al_fyaml()->fy_diag_set_collect_errors)
#define fy_diag_errors_iterate (al_fyaml()->fy_diag_errors_iterate)

/* <libfyaml.h>'s inline helpers, over the table (the originals would call
 * fy_node_get_type directly) */
static inline bool al_fy_node_is_scalar(struct fy_node *fyn)
{
  return fy_node_get_type(fyn) == FYNT_SCALAR;
}
static inline bool al_fy_node_is_sequence(struct fy_node *fyn)
{
  return fy_node_get_type(fyn) == FYNT_SEQUENCE;
}
static inline bool al_fy_node_is_mapping(struct fy_node *fyn)
{
  return fy_node_get_type(fyn) == FYNT_MAPPING;
}
static inline bool al_fy_node_is_alias(struct fy_node *fyn)
{
  return fy_node_get_type(fyn) == FYNT_SCALAR && fy_node_get_style(fyn) == FYNS_ALIAS;
}
#define fy_node_is_scalar al_fy_node_is_scalar
#define fy_node_is_sequence al_fy_node_is_sequence
#define fy_node_is_mapping al_fy_node_is_mapping
#define fy_node_is_alias al_fy_node_is_alias
#endif

#endif
