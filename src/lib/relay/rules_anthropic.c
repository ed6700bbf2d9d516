/* The Anthropic Messages API rule set of the model relay (rules.h).
 *
 * Sources (read 2026-12; the vendor adds tools often, which is why tools
 * are deny-by-default and this table only names them):
 *   - Messages API reference, POST /v1/messages:
 *     https://docs.claude.com/en/api/messages (the `tools`, `mcp_servers`,
 *     `container` parameters; content block sources base64 / text /
 *     content / url / file)
 *   - Tool use overview, "server tools" vs "client tools":
 *     https://docs.claude.com/en/docs/agents-and-tools/tool-use/overview
 *   - Web search tool (web_search_20250305, web_search_20260209), web fetch
 *     tool (web_fetch_20250910, web_fetch_20260209), code execution tool
 *     (code_execution_20250522, code_execution_20250825), tool search tool
 *     (tool_search_tool_regex_*, tool_search_tool_bm25_*): the pages under
 *     https://docs.claude.com/en/docs/agents-and-tools/tool-use/
 *   - MCP connector (`mcp_servers`, `mcp_toolset`, beta mcp-client-*):
 *     https://docs.claude.com/en/docs/agents-and-tools/mcp-connector
 *   - Files API (`{"type": "file", "file_id"}` sources, `container_upload`
 *     blocks, beta files-api-2025-04-14):
 *     https://docs.claude.com/en/docs/build-with-claude/files
 *   - PDF support and vision (`{"type": "url", "url"}` sources the vendor
 *     downloads): https://docs.claude.com/en/docs/build-with-claude/pdf-support,
 *     https://docs.claude.com/en/docs/build-with-claude/vision
 *   - Agent Skills (container.skills, beta skills-2025-10-02):
 *     https://docs.claude.com/en/docs/agents-and-tools/agent-skills
 *   - Beta headers: https://docs.claude.com/en/api/beta-headers
 * Client tools (bash_*, text_editor_*, computer_*, memory_*) are
 * Anthropic-defined schemas the *client* executes (the agent, inside the
 * sandbox): the vendor runs nothing for them, so they pass. */
#include "relay/rules.h"

#include "common/util.h"

static const al_relay_rule rules[] = {
    /* remote MCP servers the vendor connects to */
    {AL_RULE_TOP_KEY, "mcp_servers", NULL, NULL, "mcp",
     "the vendor would connect to the listed MCP servers (any URL) for the agent"},
    {AL_RULE_TOOL_TYPE, "mcp_toolset", NULL, NULL, "mcp",
     "tools of a remote MCP server the vendor calls"},
    /* server tools */
    {AL_RULE_TOOL_TYPE, "web_search_*", NULL, NULL, "web_search",
     "the vendor would search the web with queries the agent writes"},
    {AL_RULE_TOOL_TYPE, "web_fetch_*", NULL, NULL, "web_fetch",
     "the vendor would fetch URLs (and send query strings) the agent chooses"},
    {AL_RULE_TOOL_TYPE, "code_execution_*", NULL, NULL, "code_execution",
     "the vendor would run code in its container, which has its own network"},
    {AL_RULE_TOOL_TYPE, "tool_search_tool_*", NULL, NULL, "tool_search",
     "a server-side tool the vendor executes"},
    {AL_RULE_TOP_KEY, "container", NULL, NULL, "code_execution",
     "reuses a vendor container (code execution, skills) with its files"},
    /* inputs the vendor fetches or looks up */
    {AL_RULE_OBJECT, "url", "url", NULL, "url_source",
     "the vendor would download this document or image URL"},
    {AL_RULE_OBJECT, "file", "file_id", NULL, "files_api",
     "a file from the vendor's Files API (stored outside this run)"},
    {AL_RULE_OBJECT, "container_upload", "file_id", NULL, "files_api",
     "a Files API file uploaded into the vendor's container"},
};

static const char *const client_tools[] = {"custom",     "bash_*",   "text_editor_*",
                                           "computer_*", "memory_*", NULL};

/* Forwarded request headers (everything else is dropped): what the
 * Anthropic SDKs and Claude Code send. Credentials (x-api-key,
 * Authorization) are dropped before this list is asked. */
static const char *const headers[] = {"content-type",
                                      "accept",
                                      "user-agent",
                                      "anthropic-version",
                                      "anthropic-beta",
                                      "anthropic-dangerous-direct-browser-access",
                                      "x-app",
                                      "x-stainless-*",
                                      "x-client-request-id",
                                      "x-claude-code-session-id",
                                      "idempotency-key",
                                      "request-id",
                                      NULL};

static const al_relay_beta betas[] = {
    /* turn on a server-side feature: refused unless relay.allow names it */
    {"mcp-client-*", "mcp"},
    {"web-fetch-*", "web_fetch"},
    {"web-search-*", "web_search"},
    {"code-execution-*", "code_execution"},
    {"files-api-*", "files_api"},
    {"skills-*", "code_execution"},
    {"advanced-tool-use-*", "tool_search"},
    /* harmless: request shape, limits, caching, thinking, streaming */
    {"claude-code-*", NULL},
    {"interleaved-thinking-*", NULL},
    {"fine-grained-tool-streaming-*", NULL},
    {"token-efficient-tools-*", NULL},
    {"prompt-caching-*", NULL},
    {"extended-cache-ttl-*", NULL},
    {"context-1m-*", NULL},
    {"context-management-*", NULL},
    {"output-128k-*", NULL},
    {"max-tokens-*", NULL},
    {"token-counting-*", NULL},
    {"structured-outputs-*", NULL},
    {"effort-*", NULL},
    {"oauth-*", NULL},
    {"computer-use-*", NULL},
    {"search-results-*", NULL},
    {"model-context-window-exceeded-*", NULL},
    {"tool-examples-*", NULL},
    {"redact-thinking-*", NULL},
};

const al_relay_ruleset al_relay_rules_anthropic = {
    .vendor = "anthropic",
    .rules = rules,
    .n_rules = AL_ARRAY_SIZE(rules),
    .client_tools = client_tools,
    .headers = headers,
    .betas = betas,
    .n_betas = AL_ARRAY_SIZE(betas),
};
