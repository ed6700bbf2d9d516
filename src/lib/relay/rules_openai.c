/* The OpenAI rule set of the model relay (rules.h): the Responses API and
 * Chat Completions.
 *
 * Sources (read 2026-12):
 *   - Responses API reference, POST /v1/responses:
 *     https://platform.openai.com/docs/api-reference/responses/create
 *     (`tools`, `background`, `previous_response_id`, `conversation`,
 *     `prompt`, `store`; input items input_image / input_file with
 *     image_url / file_url / file_id, item_reference)
 *   - Built-in tools: https://platform.openai.com/docs/guides/tools
 *     (web_search, web_search_preview*, file_search, code_interpreter,
 *     computer_use_preview, image_generation, mcp with server_url or
 *     connector_id: https://platform.openai.com/docs/guides/tools-connectors-mcp;
 *     client-executed: function, custom, local_shell, shell, apply_patch)
 *   - Background mode: https://platform.openai.com/docs/guides/background
 *   - Computer use (computer_call_output, computer_screenshot with
 *     image_url or file_id): https://platform.openai.com/docs/guides/tools-computer-use
 *   - Conversation state (store, previous_response_id, conversations):
 *     https://platform.openai.com/docs/guides/conversation-state
 *   - File inputs by URL: https://platform.openai.com/docs/guides/pdf-files;
 *     images by URL: https://platform.openai.com/docs/guides/images-vision
 *   - Chat Completions, POST /v1/chat/completions (`web_search_options`,
 *     `image_url` parts, `file` parts with file_id, `store`):
 *     https://platform.openai.com/docs/api-reference/chat/create
 *   - Organization and project headers:
 *     https://platform.openai.com/docs/api-reference/authentication */
#include "relay/rules.h"

#include "common/util.h"

static const al_relay_rule rules[] = {
    /* remote MCP servers and connectors the vendor connects to */
    {AL_RULE_TOOL_TYPE, "mcp", NULL, NULL, "mcp",
     "the vendor would call a remote MCP server (server_url) or connector (connector_id)"},
    /* hosted tools */
    {AL_RULE_TOOL_TYPE, "web_search*", NULL, NULL, "web_search",
     "the vendor would search the web (and open pages) with queries the agent writes"},
    {AL_RULE_TOP_KEY, "web_search_options", NULL, NULL, "web_search",
     "Chat Completions web search: the vendor searches the web for the agent"},
    {AL_RULE_TOOL_TYPE, "file_search", NULL, NULL, "file_search",
     "the vendor would search vector stores kept outside this run"},
    {AL_RULE_TOOL_TYPE, "code_interpreter", NULL, NULL, "code_interpreter",
     "the vendor would run code in its container"},
    {AL_RULE_TOOL_TYPE, "computer_use*", NULL, NULL, "computer_use", "a hosted computer-use tool"},
    {AL_RULE_TOOL_TYPE, "image_generation", NULL, NULL, "image_generation",
     "a hosted tool (image generation, with image inputs by URL or file)"},
    /* server-side state: work outside the run's lifetime, data kept by the vendor */
    {AL_RULE_TOP_KEY, "background", NULL, NULL, "background",
     "the vendor would keep working after the call returns, outside the run"},
    {AL_RULE_TOP_KEY, "previous_response_id", NULL, NULL, "stored_state",
     "continues a response stored by the vendor (from outside this run)"},
    {AL_RULE_TOP_KEY, "conversation", NULL, NULL, "stored_state",
     "a conversation stored by the vendor"},
    {AL_RULE_TOP_KEY, "prompt", NULL, NULL, "stored_state",
     "a prompt template stored by the vendor"},
    {AL_RULE_TOP_KEY, "store", NULL, NULL, "store",
     "the vendor would store the response for later retrieval"},
    /* a computer-use tool's result, a screenshot: by URL the vendor fetches
     * it (computer_call_output, output {type: computer_screenshot,
     * image_url | file_id}) */
    {AL_RULE_OBJECT, "computer_call_output", "output.image_url", "data:", "url_source",
     "the vendor would download this screenshot URL"},
    {AL_RULE_OBJECT, "computer_screenshot", "image_url", "data:", "url_source",
     "the vendor would download this screenshot URL"},
    {AL_RULE_OBJECT, "computer_screenshot", "file_id", NULL, "files_api",
     "a screenshot from the vendor's Files API"},
    {AL_RULE_OBJECT, "item_reference", "id", NULL, "stored_state",
     "an input item stored by the vendor"},
    /* inputs the vendor fetches or looks up */
    {AL_RULE_OBJECT, "input_image", "image_url", "data:", "url_source",
     "the vendor would download this image URL"},
    {AL_RULE_OBJECT, "input_file", "file_url", NULL, "url_source",
     "the vendor would download this file URL"},
    {AL_RULE_OBJECT, "image_url", "image_url.url", "data:", "url_source",
     "the vendor would download this image URL"},
    {AL_RULE_OBJECT, "input_image", "file_id", NULL, "files_api",
     "a file from the vendor's Files API"},
    {AL_RULE_OBJECT, "input_file", "file_id", NULL, "files_api",
     "a file from the vendor's Files API"},
    {AL_RULE_OBJECT, "file", "file.file_id", NULL, "files_api",
     "a file from the vendor's Files API"},
};

/* The Responses API stores every response unless the request says
 * `"store": false` (API reference, `store`: "Defaults to true"); Chat
 * Completions defaults to false. */
static const al_relay_default defaults[] = {
    {"/responses", "store", "false", "store",
     "the vendor stores the response (and its input) for later retrieval"},
};

static const char *const client_tools[] = {"function", "custom",      "local_shell",
                                           "shell",    "apply_patch", NULL};

/* `{"type": "namespace", "name", "tools": [...]}` groups the client's own
 * function tools (Codex CLI 0.171 sends one); its members are checked like
 * top-level tools. */
static const char *const group_tools[] = {"namespace", NULL};

/* Forwarded request headers: what the OpenAI SDKs and Codex CLI send.
 * OpenAI-Organization and OpenAI-Project are not here: they come from the
 * policy only. */
static const char *const headers[] = {"content-type",
                                      "accept",
                                      "user-agent",
                                      "openai-beta",
                                      "originator",
                                      "session_id",
                                      "session-id",
                                      "conversation_id",
                                      "x-client-request-id",
                                      "x-stainless-*",
                                      "x-codex-*",
                                      "x-openai-subagent",
                                      "version",
                                      "idempotency-key",
                                      "thread-id",
                                      "thread_id",
                                      NULL};

const al_relay_ruleset al_relay_rules_openai = {
    .vendor = "openai",
    .rules = rules,
    .n_rules = AL_ARRAY_SIZE(rules),
    .client_tools = client_tools,
    .group_tools = group_tools,
    .headers = headers,
    .betas = NULL,
    .n_betas = 0,
    .defaults = defaults,
    .n_defaults = AL_ARRAY_SIZE(defaults),
};
