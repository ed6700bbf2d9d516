/* The model relay's body and header rules (src/lib/relay/rules.h): every
 * server-side tool, connector, URL/file input and stored-state key of the
 * two vendor tables is refused, and each passes when the policy allows its
 * feature by name (the positive control: the rule, not the parser, made
 * the difference). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "relay/rules.h"

struct body_case {
  const char *vendor;
  const char *body;
  const char *feature; /* refused as this; NULL: passes */
};

static const struct body_case cases[] = {
    /* Anthropic Messages */
    {"anthropic", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", NULL},
    {"anthropic", "{\"tools\":[{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\"}}]}", NULL},
    {"anthropic", "{\"tools\":[{\"type\":\"custom\",\"name\":\"x\"}]}", NULL},
    {"anthropic", "{\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]}", NULL},
    {"anthropic", "{\"tools\":[{\"type\":\"text_editor_20250728\",\"name\":\"e\"}]}", NULL},
    {"anthropic", "{\"tools\":[{\"type\":\"computer_20250124\",\"name\":\"c\"}]}", NULL},
    {"anthropic", "{\"tools\":[{\"type\":\"memory_20250818\",\"name\":\"memory\"}]}", NULL},
    {"anthropic",
     "{\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://evil.example/sse\",\"name\":\"e\"}]}",
     "mcp"},
    {"anthropic", "{\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"e\"}]}", "mcp"},
    {"anthropic", "{\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]}",
     "web_search"},
    {"anthropic", "{\"tools\":[{\"type\":\"web_search_20260209\",\"name\":\"web_search\"}]}",
     "web_search"},
    {"anthropic", "{\"tools\":[{\"type\":\"web_fetch_20250910\",\"name\":\"web_fetch\"}]}",
     "web_fetch"},
    {"anthropic", "{\"tools\":[{\"type\":\"code_execution_20250825\",\"name\":\"c\"}]}",
     "code_execution"},
    {"anthropic", "{\"tools\":[{\"type\":\"tool_search_tool_regex_20251119\",\"name\":\"t\"}]}",
     "tool_search"},
    {"anthropic", "{\"tools\":[{\"type\":\"some_new_server_tool_20270101\",\"name\":\"n\"}]}",
     "some_new_server_tool_20270101"},
    {"anthropic", "{\"container\":\"container_abc\"}", "code_execution"},
    {"anthropic",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":{\"type\":"
     "\"url\",\"url\":\"https://evil.example/?leak=1\"}}]}]}",
     "url_source"},
    {"anthropic",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":"
     "\"url\",\"url\":\"https://evil.example/a.png\"}}]}]}",
     "url_source"},
    {"anthropic",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
     "\"t\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://"
     "e.example/x\"}}]}]}]}",
     "url_source"},
    {"anthropic",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":"
     "\"base64\",\"media_type\":\"image/png\",\"data\":\"AA==\"}}]}]}",
     NULL},
    {"anthropic",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":{\"type\":"
     "\"file\",\"file_id\":\"file_1\"}}]}]}",
     "files_api"},
    {"anthropic",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"container_upload\",\"file_id\":"
     "\"file_1\"}]}]}",
     "files_api"},
    /* a tool call's own arguments are the client's data, not instructions */
    {"anthropic",
     "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
     "\"name\":\"x\",\"input\":{\"type\":\"url\",\"url\":\"u\"}}]}]}",
     NULL},
    {"anthropic", "{\"mcp_servers\":null,\"container\":null}", NULL},
    /* OpenAI Responses and Chat Completions */
    {"openai", "{\"model\":\"m\",\"input\":\"hi\",\"store\":false}", NULL},
    {"openai",
     "{\"tools\":[{\"type\":\"function\",\"name\":\"shell\",\"parameters\":{\"type\":\"object\"}}]"
     "}",
     NULL},
    {"openai",
     "{\"tools\":[{\"type\":\"custom\",\"name\":\"apply_patch\"},{\"type\":\"local_shell\"}]}",
     NULL},
    {"openai",
     "{\"tools\":[{\"type\":\"mcp\",\"server_label\":\"e\",\"server_url\":\"https://evil.example/"
     "sse\"}]}",
     "mcp"},
    /* a namespace groups the client's functions (Codex); its members are checked */
    {"openai",
     "{\"tools\":[{\"type\":\"namespace\",\"name\":\"n\",\"tools\":[{\"type\":\"function\","
     "\"name\":\"f\"}]}]}",
     NULL},
    {"openai",
     "{\"tools\":[{\"type\":\"namespace\",\"name\":\"n\",\"tools\":[{\"type\":\"web_search\"}]}]}",
     "web_search"},
    {"openai",
     "{\"tools\":[{\"type\":\"namespace\",\"name\":\"n\",\"tools\":[{\"type\":\"namespace\","
     "\"tools\":[]}]}]}",
     "namespace"},
    {"openai",
     "{\"tools\":[{\"type\":\"mcp\",\"server_label\":\"g\",\"connector_id\":\"connector_gmail\"}]}",
     "mcp"},
    {"openai", "{\"tools\":[{\"type\":\"web_search\"}]}", "web_search"},
    {"openai", "{\"tools\":[{\"type\":\"web_search_preview_2025_03_11\"}]}", "web_search"},
    {"openai", "{\"web_search_options\":{}}", "web_search"},
    {"openai", "{\"tools\":[{\"type\":\"file_search\",\"vector_store_ids\":[\"vs_1\"]}]}",
     "file_search"},
    {"openai", "{\"tools\":[{\"type\":\"code_interpreter\",\"container\":{\"type\":\"auto\"}}]}",
     "code_interpreter"},
    {"openai", "{\"tools\":[{\"type\":\"computer_use_preview\",\"display_width\":1}]}",
     "computer_use"},
    {"openai", "{\"tools\":[{\"type\":\"image_generation\"}]}", "image_generation"},
    {"openai", "{\"tools\":[{\"type\":\"brand_new_hosted_tool\"}]}", "brand_new_hosted_tool"},
    {"openai", "{\"background\":true}", "background"},
    {"openai", "{\"previous_response_id\":\"resp_1\"}", "stored_state"},
    {"openai", "{\"conversation\":\"conv_1\"}", "stored_state"},
    {"openai", "{\"prompt\":{\"id\":\"pmpt_1\"}}", "stored_state"},
    {"openai", "{\"store\":true}", "store"},
    {"openai", "{\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]}", "stored_state"},
    {"openai",
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"https:/"
     "/evil.example/x.png\"}]}]}",
     "url_source"},
    {"openai",
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"data:"
     "image/png;base64,AA==\"}]}]}",
     NULL},
    {"openai",
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_url\":\"https://"
     "evil.example/a.pdf\"}]}]}",
     "url_source"},
    {"openai",
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_id\":\"file-1\"}]"
     "}]}",
     "files_api"},
    {"openai",
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"filename\":\"a.txt\","
     "\"file_data\":\"data:text/plain;base64,AA==\"}]}]}",
     NULL},
    {"openai",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{"
     "\"url\":\"http://evil.example/\"}}]}]}",
     "url_source"},
    {"openai",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":{\"file_id\":"
     "\"file-1\"}}]}]}",
     "files_api"}, /* a computer-use tool's screenshot by URL (issue #26 item 6); data: passes */
    {"openai",
     "{\"input\":[{\"type\":\"computer_call_output\",\"call_id\":\"c1\",\"output\":{\"type\":"
     "\"computer_screenshot\",\"image_url\":\"https://evil.example/s.png?d=SECRET\"}}]}",
     "url_source"},
    {"openai",
     "{\"input\":[{\"type\":\"computer_call_output\",\"call_id\":\"c1\",\"output\":{"
     "\"image_url\":\"HTTP://evil.example/s.png\"}}]}",
     "url_source"},
    {"openai",
     "{\"input\":[{\"type\":\"computer_call_output\",\"call_id\":\"c1\",\"output\":{\"type\":"
     "\"computer_screenshot\",\"image_url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]}",
     NULL},
    {"openai",
     "{\"input\":[{\"type\":\"computer_call_output\",\"call_id\":\"c1\",\"output\":{\"type\":"
     "\"computer_screenshot\",\"image_url\":\"DATA:image/png;base64,AA==\"}}]}",
     NULL},
    {"openai",
     "{\"input\":[{\"type\":\"computer_call_output\",\"call_id\":\"c1\",\"output\":{\"type\":"
     "\"computer_screenshot\",\"file_id\":\"file-1\"}}]}",
     "files_api"},
};

static void test_body_rules(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct body_case *k = &cases[i];
    const al_relay_ruleset *rs = al_relay_ruleset_find(k->vendor);
    assert_non_null(rs);
    char why[400], feat[72];
    int st =
        al_relay_check_body(rs, NULL, k->body, strlen(k->body), why, sizeof why, feat, sizeof feat);
    if (!k->feature) {
      if (st != 0)
        fail_msg("case %zu should pass: %s", i, why);
      continue;
    }
    if (st != 403 || strcmp(feat, k->feature) != 0)
      fail_msg("case %zu: want 403 %s, got %d %s (%s)", i, k->feature, st, feat, why);
    assert_non_null(strstr(why, k->feature)); /* the message names what to allow */
    /* positive control: allowed by name, the same body passes */
    const char *allowed[] = {k->feature, NULL};
    st = al_relay_check_body(rs, allowed, k->body, strlen(k->body), why, sizeof why, feat,
                             sizeof feat);
    if (st != 0)
      fail_msg("case %zu with relay.allow [%s]: still refused: %s", i, k->feature, why);
  }
}

static void test_body_shapes(void **state)
{
  (void)state;
  const al_relay_ruleset *rs = &al_relay_rules_anthropic;
  char why[400], feat[72];
  static const char *const bad[] = {
      "not json",
      "[1,2]",
      "{\"a\":1} trailing",
      /* a duplicate key: the vendor might read the other one */
      "{\"tools\":[],\"tools\":[{\"type\":\"web_search_20250305\"}]}",
      "{\"a\":\"\\u0000\"}",
      "{\"a\":\"\xff\"}",
      "{\"tools\":{\"type\":\"web_search_20250305\"}}",
      "{\"tools\":[{\"type\":7}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (al_relay_check_body(rs, NULL, bad[i], strlen(bad[i]), why, sizeof why, feat, sizeof feat) !=
        400)
      fail_msg("bad body %zu not refused with 400", i);
  char deep[1000];
  size_t n = 0;
  for (int i = 0; i < 100; i++)
    deep[n++] = '[';
  for (int i = 0; i < 100; i++)
    deep[n++] = ']';
  char obj[1100];
  snprintf(obj, sizeof obj, "{\"a\":%.*s}", (int)n, deep);
  assert_int_equal(
      al_relay_check_body(rs, NULL, obj, strlen(obj), why, sizeof why, feat, sizeof feat), 400);
  assert_non_null(strstr(why, "deeper"));
  /* control: 40 levels pass */
  snprintf(obj, sizeof obj, "{\"a\":%.*s%.*s}", 40, deep, 40, deep + 100);
  assert_int_equal(
      al_relay_check_body(rs, NULL, obj, strlen(obj), why, sizeof why, feat, sizeof feat), 0);
  assert_int_equal(al_relay_check_body(rs, NULL, "", 0, why, sizeof why, feat, sizeof feat), 0);
}

static void test_path_picks_rules(void **state)
{
  (void)state;
  assert_ptr_equal(al_relay_ruleset_for("anthropic", "/v1/responses"), &al_relay_rules_openai);
  assert_ptr_equal(al_relay_ruleset_for("openai", "/v1/messages"), &al_relay_rules_anthropic);
  assert_ptr_equal(al_relay_ruleset_for("openai", "/v1/other"), &al_relay_rules_openai);
  assert_null(al_relay_ruleset_for("nobody", "/x"));
}

static void test_headers(void **state)
{
  (void)state;
  const al_relay_ruleset *a = &al_relay_rules_anthropic, *o = &al_relay_rules_openai;
  assert_true(al_relay_header_allowed(a, NULL, "Anthropic-Version"));
  assert_true(al_relay_header_allowed(a, NULL, "X-Stainless-Lang"));
  assert_false(al_relay_header_allowed(a, NULL, "X-Evil"));
  assert_false(al_relay_header_allowed(o, NULL, "OpenAI-Organization"));
  assert_false(al_relay_header_allowed(o, NULL, "OpenAI-Project"));
  assert_true(al_relay_header_allowed(o, NULL, "originator"));
  const char *extra[] = {"x-evil", NULL};
  assert_true(al_relay_header_allowed(a, extra, "X-Evil")); /* control: relay.headers */
}

static void test_betas(void **state)
{
  (void)state;
  const al_relay_ruleset *a = &al_relay_rules_anthropic;
  char out[256], gone[256], why[300];
  assert_int_equal(al_relay_filter_betas(a, NULL, NULL,
                                         "claude-code-20250219, interleaved-thinking-2025-05-14",
                                         out, sizeof out, gone, sizeof gone, why, sizeof why),
                   0);
  assert_string_equal(out, "claude-code-20250219,interleaved-thinking-2025-05-14");
  assert_string_equal(gone, "");
  assert_int_equal(al_relay_filter_betas(a, NULL, NULL,
                                         "claude-code-20250219,mcp-client-2025-04-04", out,
                                         sizeof out, gone, sizeof gone, why, sizeof why),
                   403);
  assert_non_null(strstr(why, "mcp"));
  const char *allowed[] = {"mcp", NULL};
  assert_int_equal(al_relay_filter_betas(a, allowed, NULL, "mcp-client-2025-04-04", out, sizeof out,
                                         gone, sizeof gone, why, sizeof why),
                   0);
  assert_string_equal(out, "mcp-client-2025-04-04");
  assert_int_equal(al_relay_filter_betas(a, NULL, NULL, "files-api-2025-04-14", out, sizeof out,
                                         gone, sizeof gone, why, sizeof why),
                   403);
  /* unknown: dropped, named; listed in relay.anthropic_beta: kept */
  assert_int_equal(al_relay_filter_betas(a, NULL, NULL, "brand-new-2027-01-01", out, sizeof out,
                                         gone, sizeof gone, why, sizeof why),
                   0);
  assert_string_equal(out, "");
  assert_string_equal(gone, "brand-new-2027-01-01");
  const char *extra[] = {"brand-new-2027-01-01", NULL};
  assert_int_equal(al_relay_filter_betas(a, NULL, extra, "brand-new-2027-01-01", out, sizeof out,
                                         gone, sizeof gone, why, sizeof why),
                   0);
  assert_string_equal(out, "brand-new-2027-01-01");
  assert_int_equal(al_relay_filter_betas(a, NULL, NULL, "a\"b", out, sizeof out, gone, sizeof gone,
                                         why, sizeof why),
                   400);
}

/* Responses requests that omit `store` get `"store": false` (the vendor's
 * default stores them; issue #26 item 6); each case with its control. */
static void test_defaults(void **state)
{
  (void)state;
  const al_relay_ruleset *o = &al_relay_rules_openai;
  char *out = NULL, set[96], why[400], feat[72];
  size_t n = 0;
  static const struct {
    const char *path, *in, *want; /* want NULL: left as sent */
  } k[] = {
      {"/v1/responses", "{\"model\":\"m\",\"input\":\"hi\"}",
       "{\"store\":false,\"model\":\"m\",\"input\":\"hi\"}"},
      {"/v1/responses", " \n{ \"temperature\":0.7}", " \n{\"store\":false, \"temperature\":0.7}"},
      {"/v1/responses", "{}", "{\"store\":false}"},
      {"/v1/responses", "{ \n }", "{\"store\":false \n }"},
      {"/prefix/v1/responses", "{\"a\":1}", "{\"store\":false,\"a\":1}"},
      {"/v1/responses", "{\"store\":false,\"a\":1}", NULL}, /* control: already false */
      {"/v1/chat/completions", "{\"model\":\"m\"}", NULL},  /* control: Chat defaults false */
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    int st = al_relay_apply_defaults(o, NULL, k[i].path, k[i].in, strlen(k[i].in), &out, &n, set,
                                     sizeof set, why, sizeof why, feat, sizeof feat);
    assert_int_equal(st, 0);
    if (!k[i].want) {
      if (out)
        fail_msg("case %zu: changed to %.*s", i, (int)n, out);
      assert_string_equal(set, "");
      continue;
    }
    if (!out || n != strlen(k[i].want) || memcmp(out, k[i].want, n) != 0)
      fail_msg("case %zu: got %.*s, want %s", i, out ? (int)n : 0, out ? out : "", k[i].want);
    assert_string_equal(set, "store=false");
    /* the result is a body the checker reads, with store false */
    assert_int_equal(al_relay_check_body(o, NULL, out, n, why, sizeof why, feat, sizeof feat), 0);
    free(out);
    out = NULL;
  }
  /* with relay.allow: [store], nothing is added (the policy chose storing) */
  const char *allowed[] = {"store", NULL};
  assert_int_equal(al_relay_apply_defaults(o, allowed, "/v1/responses", "{}", 2, &out, &n, set,
                                           sizeof set, why, sizeof why, feat, sizeof feat),
                   0);
  assert_null(out);
  /* store: null is the vendor's default by another name: refused */
  static const char nul[] = "{\"store\":null}";
  assert_int_equal(al_relay_apply_defaults(o, NULL, "/v1/responses", nul, sizeof nul - 1, &out, &n,
                                           set, sizeof set, why, sizeof why, feat, sizeof feat),
                   403);
  assert_null(out);
  assert_string_equal(feat, "store");
  assert_non_null(strstr(why, "relay.allow: [store]"));
  /* the Anthropic table adds nothing */
  assert_int_equal(al_relay_apply_defaults(&al_relay_rules_anthropic, NULL, "/v1/messages", "{}", 2,
                                           &out, &n, set, sizeof set, why, sizeof why, feat,
                                           sizeof feat),
                   0);
  assert_null(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_body_rules),
                                     cmocka_unit_test(test_body_shapes),
                                     cmocka_unit_test(test_path_picks_rules),
                                     cmocka_unit_test(test_headers),
                                     cmocka_unit_test(test_betas),
                                     cmocka_unit_test(test_defaults)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
