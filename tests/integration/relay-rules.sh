#!/bin/bash
# The model relay reads what it forwards (issue #17): through `airlock run`,
# every server-side tool, connector and URL input of the vendor tables is
# refused with a 403 in the vendor's error shape and never reaches the
# (fake) model API, each with a positive control where the policy allows it
# by name; headers are an allowlist (anthropic-beta filtered, the agent's
# OpenAI-Organization/Project replaced by the policy's); two vendors in one
# run, each with its own key and auth style; WebSocket upgrades get 426 at
# once; an unreachable upstream gives the agent a 502 that says why.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(dirname "$AIRLOCK")
for tool in python3 openssl; do
  command -v $tool >/dev/null || { skip "relay rule tests need $tool"; done_testing; exit; }
done
[ -x "$B/airlock-net" ] || { skip "relay rule tests need $B/airlock-net"; done_testing; exit; }
if ! "$AIRLOCK" run -q -- true 2>/dev/null; then
  skip "the sandbox cannot start here"; done_testing; exit
fi
cd "$T_TMP" || exit 1
# --- test PKI (one certificate for both fake vendors), keys, fake API -------
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=airlock-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=api.model.test 2>/dev/null
printf 'subjectAltName=DNS:api.model.test,DNS:api.openai.test\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null
chmod 644 ca.pem
mkdir -m 700 secret
KEY_A="sk-ant-fake-$(openssl rand -hex 32)"; KEY_O="sk-oai-fake-$(openssl rand -hex 32)"
printf '%s\n' "$KEY_A" >secret/a.key; printf '%s\n' "$KEY_O" >secret/o.key
chmod 600 secret/a.key secret/o.key
SHA_A=$(printf '%s' "$KEY_A" | sha256sum | cut -d' ' -f1); SHA_O=$(printf '%s' "$KEY_O" | sha256sum | cut -d' ' -f1)
python3 "$HERE/fakemodel.py" srv.pem srv.key fake.port fake.log >fake.err 2>&1 &
on_exit "kill $!"
for _ in $(seq 50); do [ -s fake.port ] && break; sleep 0.1; done
FP=$(cat fake.port 2>/dev/null)
[ -n "$FP" ] && ok "fake model API listens on 127.0.0.1:$FP" || { fail "fake model API starts"; done_testing; exit 1; }
mkdir -m 755 pub && cp "$HERE/relayclient.py" pub/rc.py && chmod 644 pub/rc.py

# policy NAME ANTHROPIC-EXTRA OPENAI-EXTRA: both vendors, one run
policy() {
  cat >"$1.yaml" <<YAML
version: 1
filesystem:
  ro_paths: [$T_TMP/pub]
relay:
  upstreams:
    - vendor: anthropic
      upstream: https://api.model.test:$FP
      key_file: $T_TMP/secret/a.key
      ca_file: $T_TMP/ca.pem
      pin: 127.0.0.1
$2
    - vendor: openai
      upstream: https://api.openai.test:$FP
      key_file: $T_TMP/secret/o.key
      ca_file: $T_TMP/ca.pem
      pin: 127.0.0.1
$3
YAML
}
policy rules "" ""
check "a policy with two upstreams is valid" "$AIRLOCK" policy check rules.yaml
out=$("$AIRLOCK" policy check rules.yaml)
like "vendor defaults: anthropic x-api-key, openai bearer, each its own routes" "$out" \
  '"auth":"x-api-key".*"routes":\["POST /v1/messages","POST /v1/messages/count_tokens"\].*"vendor":"anthropic".*"auth":"bearer".*"routes":\["POST /v1/responses","POST /v1/chat/completions"\].*"vendor":"openai"'
cat >dup.yaml <<YAML
version: 1
relay:
  upstreams:
    - {upstream: https://a.example, key_file: /k, routes: ["POST /v1/x"]}
    - {upstream: https://b.example, key_file: /k, routes: ["POST /v1/x"]}
YAML
out=$("$AIRLOCK" policy check dup.yaml 2>&1)
like "two upstreams routing one path are refused" "$out" 'both route `/v1/x`'
cat >badhdr.yaml <<YAML
version: 1
relay: {upstream: https://api.openai.com, key_file: /k, headers: [openai-organization]}
YAML
out=$("$AIRLOCK" policy check badhdr.yaml 2>&1)
like "relay.headers cannot let the agent's OpenAI-Organization through" "$out" 'relay.headers\[0\]: `openai-organization` is not a header the relay may forward'

run() { local p=$1; shift; : >relay.log; timeout 120 "$AIRLOCK" run -q -p "$p.yaml" --relay-log relay.log --log proxy.log -- "$@"; }
count() { grep -c '"method"' fake.log 2>/dev/null || true; }
statuses() { python3 -c 'import json,sys; print(",".join(str(json.loads(l)["status"]) for l in sys.stdin if l.startswith("{")))'; }

# --- 1. two vendors, one run: each its key, its auth style ------------------
: >fake.log
out=$(run rules sh -c "python3 $T_TMP/pub/rc.py --json '{\"model\":\"a1\"}' POST /v1/messages;
  python3 $T_TMP/pub/rc.py --json '{\"model\":\"o1\",\"input\":\"hi\"}' POST /v1/responses" 2>&1)
is "Messages and Responses through one relay: 200, 200" "$(statuses <<<"$out")" "200,200"
is "Anthropic gets its key as x-api-key, OpenAI its own as Bearer" \
  "$(python3 -c 'import json,sys; print(" ".join(json.dumps(json.loads(l)["creds"],sort_keys=True) for l in open(sys.argv[1])))' fake.log)" \
  "{\"x-api-key\": \"$SHA_A\"} {\"authorization\": \"$SHA_O\"}"
like "the hosts differ per upstream" "$(grep -o '"host": "[^"]*"' fake.log | tr '\n' ' ')" "api.model.test:$FP.*api.openai.test:$FP"

# --- 2. each server-side feature: refused, never upstream; allowed: forwarded
# cases: NAME VENDOR-PATH FEATURE BODY
cases=$(cat <<'CASES'
mcp_servers|/v1/messages|mcp|{"model":"x","mcp_servers":[{"type":"url","url":"https://evil.example/sse?leak=SECRET","name":"e"}]}
web_search|/v1/messages|web_search|{"model":"x","tools":[{"type":"web_search_20250305","name":"web_search"}]}
web_fetch|/v1/messages|web_fetch|{"model":"x","tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}
code_execution|/v1/messages|code_execution|{"model":"x","tools":[{"type":"code_execution_20250825","name":"code_execution"}]}
container|/v1/messages|code_execution|{"model":"x","container":"container_1"}
url_document|/v1/messages|url_source|{"model":"x","messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://evil.example/leak"}}]}]}
files_api|/v1/messages|files_api|{"model":"x","messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}
unknown_tool|/v1/messages|brand_new_20270101|{"model":"x","tools":[{"type":"brand_new_20270101","name":"n"}]}
oai_mcp_url|/v1/responses|mcp|{"model":"x","tools":[{"type":"mcp","server_label":"e","server_url":"https://evil.example/sse"}]}
oai_mcp_connector|/v1/responses|mcp|{"model":"x","tools":[{"type":"mcp","server_label":"g","connector_id":"connector_gmail"}]}
oai_web_search|/v1/responses|web_search|{"model":"x","tools":[{"type":"web_search"}]}
oai_file_search|/v1/responses|file_search|{"model":"x","tools":[{"type":"file_search","vector_store_ids":["vs"]}]}
oai_code_interpreter|/v1/responses|code_interpreter|{"model":"x","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}
oai_computer|/v1/responses|computer_use|{"model":"x","tools":[{"type":"computer_use_preview"}]}
oai_image_generation|/v1/responses|image_generation|{"model":"x","tools":[{"type":"image_generation"}]}
oai_input_file_url|/v1/responses|url_source|{"model":"x","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://evil.example/a.pdf"}]}]}
oai_input_image_url|/v1/responses|url_source|{"model":"x","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://evil.example/a.png"}]}]}
oai_background|/v1/responses|background|{"model":"x","background":true}
oai_previous|/v1/responses|stored_state|{"model":"x","previous_response_id":"resp_1"}
oai_store|/v1/responses|store|{"model":"x","store":true}
chat_web_search|/v1/chat/completions|web_search|{"model":"x","web_search_options":{}}
oai_computer_screenshot|/v1/responses|url_source|{"model":"x","input":[{"type":"computer_call_output","call_id":"c1","output":{"type":"computer_screenshot","image_url":"https://evil.example/s.png?d=SECRET"}}]}
oai_store_null|/v1/responses|store|{"model":"x","store":null}
CASES
)
while IFS='|' read -r name path feature body; do
  [ -n "$name" ] || continue
  printf '%s' "$body" >"pub/$name.json"; chmod 644 "pub/$name.json"
  : >fake.log
  out=$(run rules sh -c "python3 $T_TMP/pub/rc.py --json \"\$(cat $T_TMP/pub/$name.json)\" POST $path" 2>&1)
  st=$(statuses <<<"$out")
  if [ "$st" = 403 ] && [ "$(count)" = 0 ] && grep -q "\"feature\":\"$feature\".*\"status\":403" relay.log; then
    ok "$name: refused (403, feature $feature in the relay log), nothing reached the model API"
  else fail "$name: refused"; diag "status=$st upstream=$(count) log=$(tail -1 relay.log)"; fi
  # positive control: the same body with relay.allow: [$feature] is forwarded
  if [ "${path#/v1/messages}" != "$path" ]; then policy allow "      allow: [$feature]" ""
  else policy allow "" "      allow: [$feature]"; fi
  : >fake.log
  out=$(run allow sh -c "python3 $T_TMP/pub/rc.py --json \"\$(cat $T_TMP/pub/$name.json)\" POST $path" 2>&1)
  is "$name: control: with relay.allow: [$feature] it is forwarded" "$(statuses <<<"$out"),$(count)" "200,1"
done <<<"$cases"

# a computer_call_output screenshot inline (data:) is no URL: forwarded
: >fake.log
out=$(run rules python3 "$T_TMP/pub/rc.py" --json '{"model":"x","input":[{"type":"computer_call_output","call_id":"c1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,iVBORw0KGgo="}}]}' POST /v1/responses 2>&1)
is "control: a computer_call_output screenshot as a data: URL is forwarded" "$(statuses <<<"$out"),$(count)" "200,1"

# store: a Responses request that omits it reaches the vendor with store: false
: >fake.log
out=$(run rules sh -c "python3 $T_TMP/pub/rc.py --json '{\"model\":\"s1\",\"input\":\"hi\"}' POST /v1/responses;
  python3 $T_TMP/pub/rc.py --json '{\"model\":\"s2\",\"store\":false}' POST /v1/responses;
  python3 $T_TMP/pub/rc.py --json '{\"model\":\"s3\"}' POST /v1/chat/completions" 2>&1)
is "store cases: all forwarded" "$(statuses <<<"$out")" "200,200,200"
is "omitted store reaches the Responses API as false; store: false as sent; Chat Completions untouched" \
  "$(python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["store"]) for l in open(sys.argv[1]) if "\"store\"" in l))' fake.log)" \
  "False False absent"
like "the relay log says what it set" "$(grep '"model":"s1"' relay.log)" '"set":"store=false"'
policy storeok "" "      allow: [store]"
: >fake.log
run storeok python3 "$T_TMP/pub/rc.py" --json '{"model":"s4","input":"hi"}' POST /v1/responses >/dev/null 2>&1
is "control: with relay.allow: [store] the body is forwarded as sent (store absent)" \
  "$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["store"])' fake.log)" "absent"

# the refusal is in the vendor's error shape, so the agent's SDK shows it
out=$(run rules python3 "$T_TMP/pub/rc.py" --json "$(cat pub/web_search.json)" POST /v1/messages 2>&1)
like "Anthropic shape: {type: error, error: {type, message}} naming relay.allow" "$out" '\\"type\\": ?\\"error\\".*permission_error.*relay.allow: \[web_search\]'
out=$(run rules python3 "$T_TMP/pub/rc.py" --json "$(cat pub/oai_mcp_url.json)" POST /v1/responses 2>&1)
like "OpenAI shape: {error: {message, type, param, code}}" "$out" '\\"error\\":\{\\"message\\":\\"airlock relay: openai: tools\[0\] is the server-side tool `mcp`.*\\"type\\":\\"invalid_request_error\\",\\"param\\":null,\\"code\\":\\"refused\\"'
like "refusals say do not retry" "$out" '"x-should-retry": "false"'

# --- 3. headers: an allowlist; betas filtered; org/project from the policy ---
: >fake.log
out=$(run rules sh -c "python3 $T_TMP/pub/rc.py --header 'X-Evil: 1' --header 'anthropic-version: 2023-06-01' \
    --header 'anthropic-beta: claude-code-20250219, brand-new-2027-01-01' --json '{\"model\":\"h\"}' POST /v1/messages;
  python3 $T_TMP/pub/rc.py --header 'OpenAI-Organization: org-agent' --header 'OpenAI-Project: proj-agent' \
    --header 'originator: codex_cli_rs' --json '{\"model\":\"h\"}' POST /v1/responses" 2>&1)
is "header case: both calls forwarded" "$(statuses <<<"$out")" "200,200"
a=$(sed -n 1p fake.log); o=$(sed -n 2p fake.log)
if grep -q '"x-evil"' <<<"$a"; then fail "a header outside the allowlist is dropped"; else ok "a header outside the allowlist is dropped"; fi
like "control: allowlisted headers are forwarded (anthropic-version)" "$a" '"anthropic-version"'
like "known-harmless beta kept, unknown beta dropped" "$a" '"beta": "claude-code-20250219"'
like "the drop is in the relay log (names only)" "$(sed -n 1p relay.log)" '"dropped":"x-evil,anthropic-beta=brand-new-2027-01-01"'
like "the agent's OpenAI-Organization/Project never reach upstream" "$o" '"org": null, "project": null'
like "control: allowlisted OpenAI headers are forwarded (originator)" "$o" '"originator"'
policy orgp "" "      organization: org-policy
      project: proj_policy"
: >fake.log
run orgp python3 "$T_TMP/pub/rc.py" --header 'OpenAI-Organization: org-agent' --json '{"model":"h"}' POST /v1/responses >/dev/null 2>&1
like "with relay.organization/project, the policy's values are sent" "$(cat fake.log)" '"org": "org-policy", "project": "proj_policy"'
: >fake.log
out=$(run rules python3 "$T_TMP/pub/rc.py" --header 'anthropic-beta: mcp-client-2025-04-04' --json '{"model":"b"}' POST /v1/messages 2>&1)
is "a beta that turns on a server-side feature (mcp-client) is refused" "$(statuses <<<"$out"),$(count)" "403,0"
policy betaok "      allow: [mcp]" ""
: >fake.log
out=$(run betaok python3 "$T_TMP/pub/rc.py" --header 'anthropic-beta: mcp-client-2025-04-04' --json '{"model":"b"}' POST /v1/messages 2>&1)
is "control: with relay.allow: [mcp] the beta is forwarded" "$(statuses <<<"$out"),$(grep -c '"beta": "mcp-client-2025-04-04"' fake.log)" "200,1"

# --- 4. WebSocket: refused at once, with a body -------------------------------
: >fake.log
out=$(run rules python3 "$T_TMP/pub/rc.py" --header 'Upgrade: websocket' --header 'Sec-WebSocket-Version: 13' \
  --header 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' GET /v1/responses 2>&1)
is "a WebSocket upgrade gets 426 (not 405), nothing upstream" "$(statuses <<<"$out"),$(count)" "426,0"
like "... with a body that says to use HTTP" "$out" 'WebSocket is not relayed'

# --- 5. an unreachable upstream: the agent's 502 says why ---------------------
sed "s|api.openai.test:$FP|api.openai.test:1|" rules.yaml >down.yaml
out=$(run down python3 "$T_TMP/pub/rc.py" --json '{"model":"d"}' POST /v1/responses 2>&1)
is "an unreachable upstream: 502" "$(statuses <<<"$out")" 502
like "the agent's 502 body names the upstream and the cause" "$out" 'upstream https://api.openai.test:1 unreachable: egress proxy refused the tunnel'
like "the relay log records upstream_failure: connect" "$(tail -1 relay.log)" '"decision":"upstream_error".*"upstream_failure":"connect"'
out=$(run down python3 "$T_TMP/pub/rc.py" --json '{"model":"d"}' POST /v1/messages 2>&1)
is "control: the other upstream of the same run still answers" "$(statuses <<<"$out")" 200
done_testing
