#!/bin/bash
# The model relay (issue #10): the agent inside `airlock run` reaches a
# local HTTPS fake model API (fakemodel.py, test CA made here, pinned to
# loopback) only through the relay at 127.0.0.1:8080; the key arrives
# upstream and exists nowhere in the agent's sandbox; other routes, other
# hosts, big bodies and calls past a budget are refused; SSE streams through
# unbuffered; a real agent CLI (Claude Code from npm) works through it.
# Every refusal has a positive control.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(dirname "$AIRLOCK")
for tool in python3 openssl; do
  command -v $tool >/dev/null || { skip "relay tests need $tool"; done_testing; exit; }
done
# --- 0. the policy's relay section ------------------------------------------
P=$T_TMP
cat >"$P/rgood.yaml" <<'YAML'
version: 1
relay:
  upstream: https://API.Anthropic.COM/
  key_file: /etc/airlock/model.key
  budget: {requests: 5, tokens: 1000}
  timeouts: {first_byte: 2m}
YAML
out=$("$AIRLOCK" policy check "$P/rgood.yaml" 2>&1)
like "relay section: upstream canonical (lower-case host, no trailing slash)" "$out" '"upstream":"https://api.anthropic.com"'
like "relay section: the Anthropic routes by default (vendor by host)" "$out" '"routes":\["POST /v1/messages","POST /v1/messages/count_tokens"\]'
like "relay section: defaults filled (size, timeouts in ms, auth)" "$out" '"max_request":8388608.*"first_byte":120000.*"auth":"x-api-key".*"vendor":"anthropic"'
# rbad NAME LINE:COL REGEX  (relay YAML body on stdin, indented two spaces)
rbad() {
  { printf 'version: 1\nrelay:\n'; cat; } >"$P/$1.yaml"
  local o; o=$("$AIRLOCK" policy check "$P/$1.yaml" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$1.yaml:$2: .*$3|$1.yaml: $3" <<<"$o"; then ok "relay section rejected: $1 ($o)"
  else fail "relay section rejected: $1 at $2 with /$3/"; diag "rc=$rc $o"; fi
}
rbad r-http 3:13 'must start with https://' <<<'  upstream: http://api.example.com
  key_file: /k'
rbad r-auth 5:9 'x-api-key. or .bearer' <<<'  upstream: https://api.example.com
  key_file: /k
  auth: basic'
rbad r-route-lower 5:13 'upper-case' <<<'  upstream: https://api.example.com
  key_file: /k
  routes: ["post /v1/messages"]'
rbad r-route-dots 5:13 'normalized' <<<'  upstream: https://api.example.com
  key_file: /k
  routes: ["POST /v1/../admin"]'
rbad r-route-query 5:13 'no query' <<<'  upstream: https://api.example.com
  key_file: /k
  routes: ["POST /v1/messages?x=1"]'
rbad r-keyrel 4:13 'absolute path' <<<'  upstream: https://api.example.com
  key_file: model.key'
rbad r-nokey 2 'relay.key_file: required' <<<'  upstream: https://api.example.com'
rbad r-pin 5:8 'numeric IPv4 or IPv6' <<<'  upstream: https://api.example.com
  key_file: /k
  pin: localhost'
# relay.ca_file must exist and be a regular file; relay.pubkey_pin is curl's sha256//BASE64
rbad r-ca-missing 5:12 'No such file.*must exist' <<<"  upstream: https://api.example.com
  key_file: /k
  ca_file: $P/no-such-ca.pem"
rbad r-ca-dir 5:12 'must be a regular file' <<<"  upstream: https://api.example.com
  key_file: /k
  ca_file: $P"
rbad r-ca-rel 5:12 'absolute path' <<<'  upstream: https://api.example.com
  key_file: /k
  ca_file: ca.pem'
rbad r-pk-prefix 5:15 'must start with .sha256//.' <<<'  upstream: https://api.example.com
  key_file: /k
  pubkey_pin: sha1//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='
rbad r-pk-short 5:15 '44-character base64' <<<'  upstream: https://api.example.com
  key_file: /k
  pubkey_pin: sha256//AAAA'
rbad r-pk-bits 5:15 '44-character base64' <<<'  upstream: https://api.example.com
  key_file: /k
  pubkey_pin: sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB='
rbad r-pk-sep 5:15 'separated by .;.' <<<'  upstream: https://api.example.com
  key_file: /k
  pubkey_pin: sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=,sha256//x'
printf 'x\n' >"$P/some-ca.pem"
cat >"$P/rpin.yaml" <<YAML
version: 1
relay:
  upstream: https://api.example.com
  key_file: /k
  ca_file: $P/some-ca.pem
  pubkey_pin: "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=;sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
YAML
out=$("$AIRLOCK" policy check "$P/rpin.yaml" 2>&1)
like "control: a regular ca_file and two well-formed pins are accepted, in the canonical form" "$out" \
  '"ca_file":"'"$P"'/some-ca.pem".*"pubkey_pin":"sha256//A{43}=;sha256//47DEQ'
rbad r-unknown 5:3 'unknown key' <<<'  upstream: https://api.example.com
  key_file: /k
  secret: hunter2'
rbad r-size 5:16 'at most 256MiB' <<<'  upstream: https://api.example.com
  key_file: /k
  max_request: 1GiB'
rbad r-userinfo 3:13 'userinfo' <<<'  upstream: https://user@api.example.com
  key_file: /k'

[ -x "$B/airlock-net" ] || { skip "relay tests need $B/airlock-net (the relay verb)"; done_testing; exit; }
if ! "$AIRLOCK" run -q -- true 2>/dev/null; then
  skip "the sandbox cannot start here"; done_testing; exit
fi

cd "$T_TMP"
# --- test PKI, key, fake API -------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=airlock-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=api.model.test 2>/dev/null
printf 'subjectAltName=DNS:api.model.test\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null
# a CA the relay does not trust, for the verification control
openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj /CN=other-ca 2>/dev/null
chmod 644 ca.pem other.pem

mkdir -m 700 secret
KEY="sk-ant-fake-$(openssl rand -hex 32)"
printf '%s\n' "$KEY" >secret/model.key
chmod 600 secret/model.key
KEYSHA=$(printf '%s' "$KEY" | sha256sum | cut -d' ' -f1)

python3 "$HERE/fakemodel.py" srv.pem srv.key fake.port fake.log --delay 0.4 >fake.err 2>&1 &
on_exit "kill $!"
for _ in $(seq 50); do [ -s fake.port ] && break; sleep 0.1; done
FP=$(cat fake.port 2>/dev/null)
[ -n "$FP" ] && ok "fake model API listens on 127.0.0.1:$FP" || { fail "fake model API starts"; cat fake.err; done_testing; exit 1; }
cp "$HERE/relayclient.py" rc.py && chmod 644 rc.py

# policy NAME EXTRA-RELAY-YAML [TOP-LEVEL-YAML]
policy() {
  cat >"$1.yaml" <<YAML
version: 1
filesystem:
  ro_paths: [$T_TMP]
${3:-}
relay:
  upstream: https://api.model.test:$FP
  key_file: $T_TMP/secret/model.key
  ca_file: $T_TMP/ca.pem
  pin: 127.0.0.1
$(case "$2" in *routes:*) ;; *) echo '  routes: ["POST /v1/messages", "POST /v1/chat/completions", "POST /v1/responses"]' ;; esac)
$2
YAML
}
policy relay "  max_request: 64KiB"
check "the relay policy is valid" "$AIRLOCK" policy check relay.yaml

# run POLICY CMD... : the command inside airlock run, relay log to relay.log
run() { local p=$1; shift; : >relay.log; timeout 60 "$AIRLOCK" run -q -p "$p.yaml" --relay-log relay.log --log proxy.log -- "$@"; }
cl() { python3 "$T_TMP/rc.py" "$@"; }
field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.readline()); v=eval("d"+sys.argv[1]); print(v if v is not None else "")' "$1"; }
upstream_count() { grep -c '"method"' fake.log 2>/dev/null || true; }

# --- 1. a call through the relay ---------------------------------------------
: >fake.log
out=$(run relay python3 "$T_TMP/rc.py" --header 'x-api-key: agent-own-key' --header 'Authorization: Bearer agent-token' \
  --header 'Cookie: session=agent' --header 'Api-Key: agent' --host evil.example \
  --json '{"model":"m-test","max_tokens":5,"messages":[{"role":"user","content":"PROMPT-MARKER-7781"}]}' POST /v1/messages 2>&1)
is "POST /v1/messages through the relay: 200" "$(field '["status"]' <<<"$out")" 200
like "the fake API's answer reaches the agent" "$out" 'Hello from the fake model API'
up=$(grep '"method"' fake.log | tail -1)
is "the key arrives upstream (SHA-256 of x-api-key matches)" "$(field '["creds"].get("x-api-key")' <<<"$up")" "$KEYSHA"
is "the agent's credential headers are dropped (only the relay's x-api-key upstream)" \
  "$(field '["creds"]' <<<"$up")" "{'x-api-key': '$KEYSHA'}"
is "the agent's Host header is replaced by the upstream's" "$(field '["host"]' <<<"$up")" "api.model.test:$FP"
is "identity encoding asked upstream (usage stays readable)" "$(field '["accept_encoding"]' <<<"$up")" identity
# positive control for the credential log: the fake does log credentials it gets
: >ctl.log
python3 "$T_TMP/rc.py" --addr 127.0.0.1:$FP --tls ca.pem --host api.model.test --header 'Authorization: Bearer x' \
  --header 'Cookie: a=b' --json '{"model":"m"}' POST /v1/messages >/dev/null 2>&1
like "control: the fake API logs credential headers it receives" "$(grep '"method"' fake.log | tail -1)" '"authorization": "[0-9a-f]{64}".*"cookie"'

line=$(grep '"model_call"' relay.log | tail -1)
like "the call is logged: path, model, status, tokens, bytes, latency" "$line" \
  '"bytes_down":[1-9][0-9]*,"bytes_up":[1-9].*"latency_ms":[0-9]+,"method":"POST","model":"m-test","path":"/v1/messages".*"status":200.*"tokens_in":25,"tokens_out":7'
if grep -q 'PROMPT-MARKER-7781\|Hello from the fake' relay.log proxy.log; then fail "no body in the relay's or proxy's log"; else ok "no body in the relay's or proxy's log"; fi
like "the relay's own tunnel went through the egress proxy (allowed: the model host only)" "$(cat proxy.log)" \
  '"run":"[0-9a-f]+/relay".*"target":"api.model.test:'"$FP"'".*"decision":"allow"'

# --- 2. streaming ------------------------------------------------------------
: >fake.log
out=$(run relay python3 "$T_TMP/rc.py" --json '{"model":"m-stream","stream":true}' POST '/v1/messages?beta=true' 2>&1)
first=$(field '["t_first_event"]' <<<"$out")
last=$(grep '"event": "message_stop"' fake.log | tail -1 | field '["t"]')
is "streamed: 200, all events delivered" "$(field '["status"]' <<<"$out"),$(field '["events"]' <<<"$out")" "200,11"
if python3 -c "import sys; sys.exit(0 if float('$first') + 1.0 < float('$last') else 1)" 2>/dev/null; then
  ok "the first event reached the agent before the last one was produced ($first < $last)"
else fail "the first event reached the agent before the last one was produced"; diag "first=$first last=$last"; fi
out=$(run relay python3 "$T_TMP/rc.py" --buffered --json '{"model":"m-stream","stream":true}' POST /v1/messages 2>&1)
first=$(field '["t_first_event"]' <<<"$out")
last=$(grep '"event": "message_stop"' fake.log | tail -1 | field '["t"]')
if python3 -c "import sys; sys.exit(0 if float('$first') + 1.0 < float('$last') else 1)" 2>/dev/null; then
  fail "control: a buffering reader fails the streaming check"
else ok "control: a buffering reader fails the streaming check"; fi
like "streamed usage counted (message_start input, message_delta output)" "$(grep model_call relay.log | tail -1)" \
  '"stream":true.*"tokens_in":25,"tokens_out":7'
out=$(run relay sh -c "python3 $T_TMP/rc.py --json '{\"model\":\"gpt-x\",\"stream\":true}' POST /v1/chat/completions >/dev/null;
  python3 $T_TMP/rc.py --chunked --json '{\"model\":\"gpt-r\",\"stream\":true}' POST /v1/responses >/dev/null" 2>&1)
like "OpenAI chat stream: usage from the final chunk" "$(grep '"gpt-x"' relay.log)" '"tokens_in":25,"tokens_out":7'
like "OpenAI responses stream (chunked request body): usage from response.completed" "$(grep '"gpt-r"' relay.log)" \
  '"status":200.*"tokens_in":25,"tokens_out":7'

# --- 3. refused routes, methods and shapes -------------------------------------
: >fake.log
run relay sh -c "
  python3 $T_TMP/rc.py --json '{}' POST /v1/models
  python3 $T_TMP/rc.py GET /v1/messages
  python3 $T_TMP/rc.py --json '{}' POST /v1/messages/../../admin
  python3 $T_TMP/rc.py --json '{}' POST /v1/messages%2f..
  python3 $T_TMP/rc.py --json '{}' POST http://evil.example/v1/messages
  python3 $T_TMP/rc.py CONNECT evil.example:443
  python3 $T_TMP/rc.py --header 'Content-Length: 2' --header 'Transfer-Encoding: chunked' POST /v1/messages
  python3 $T_TMP/rc.py --json '{\"model\":\"ok\"}' POST /v1/messages
" >refused.out 2>&1
st=$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["status"]) for l in open(sys.argv[1]) if l.startswith("{")))' refused.out)
is "other paths 403, other methods 405, odd targets and smuggling shapes 400" "$st" "403,405,403,403,400,400,400,200"
is "only the allowed call reached the fake API (positive control included)" "$(upstream_count)" 1
like "refusals say do not retry" "$(head -1 refused.out)" '"x-should-retry": "false"'
like "refusals are logged" "$(grep -c '"decision":"refused"' relay.log)" '^7$'

# --- 4. other hosts: the agent has no way out but the relay -----------------
out=$(run relay python3 -c "
import socket
for port in ($FP, 3128, 443):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=2); print('open', port)
    except OSError as e: print('refused', port)
" 2>&1)
is "the fake API, a proxy and port 443 are unreachable from the agent (no network section)" "$out" \
  "$(printf 'refused %s\nrefused 3128\nrefused 443' "$FP")"
policy relaynet "" "network:
  allow: [{host: other.test, port: 443}]"
out=$(run relaynet python3 "$T_TMP/rc.py" --addr 127.0.0.1:3128 CONNECT "api.model.test:$FP" 2>&1)
like "with a network section, the agent's proxy refuses the model host (only the relay may)" "$(field '["status"]' <<<"$out")" '^403$'
out=$(run relaynet python3 "$T_TMP/rc.py" --json '{"model":"n"}' POST /v1/messages 2>&1)
is "control: the relay still works beside the agent's proxy" "$(field '["status"]' <<<"$out")" 200

# --- 5. request size cap -----------------------------------------------------
: >fake.log
out=$(run relay sh -c "python3 $T_TMP/rc.py --size 100000 POST /v1/messages; python3 $T_TMP/rc.py --size 60000 POST /v1/messages" 2>&1)
is "a body over max_request (64KiB) gets 413; one under it passes" \
  "$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["status"]) for l in sys.stdin if l.startswith("{")))' <<<"$out")" "413,200"
is "the oversized body never reached the fake API" "$(upstream_count)" 1

# --- 6. budgets ----------------------------------------------------------------
policy budreq "  budget: {requests: 2}"
: >fake.log
out=$(run budreq python3 "$T_TMP/rc.py" --repeat 3 --json '{"model":"b"}' POST /v1/messages 2>&1)
is "request budget 2: the third call is refused with 429" \
  "$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["status"]) for l in sys.stdin if l.startswith("{")))' <<<"$out")" "200,200,429"
is "the fake API saw exactly the budgeted calls" "$(upstream_count)" 2
like "a budget refusal says do not retry" "$(tail -1 <<<"$out")" '"x-should-retry": "false"'
policy budtok "  budget: {tokens: 40}"
: >fake.log
out=$(run budtok python3 "$T_TMP/rc.py" --repeat 3 --json '{"model":"b","stream":true}' POST /v1/messages 2>&1)
is "token budget 40 (32 per call, read from the stream): 200, 200, then 429" \
  "$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["status"]) for l in sys.stdin if l.startswith("{")))' <<<"$out")" "200,200,429"
like "the budget refusal is logged" "$(tail -1 relay.log)" '"decision":"budget".*"status":429'

# --- 7. timeouts and TLS verification -------------------------------------------
policy slow "  timeouts: {first_byte: 1s}"
out=$(run slow sh -c "python3 $T_TMP/rc.py --json '{\"model\":\"slow\"}' POST /v1/messages; python3 $T_TMP/rc.py --json '{\"model\":\"fast\"}' POST /v1/messages" 2>&1)
is "first-byte timeout: 504 for a silent upstream, 200 for a prompt one" \
  "$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["status"]) for l in sys.stdin if l.startswith("{")))' <<<"$out")" "504,200"
sed "s|ca_file: .*|ca_file: $T_TMP/other.pem|" relay.yaml >badca.yaml
: >fake.log
out=$(run badca python3 "$T_TMP/rc.py" --json '{"model":"v"}' POST /v1/messages 2>&1)
is "an upstream certificate from an untrusted CA: 502" "$(field '["status"]' <<<"$out")" 502
like "the reason is the certificate" "$(tail -1 relay.log)" 'certificate'
is "no request reached the untrusted upstream" "$(upstream_count)" 0

# relay.pubkey_pin: the relay checks the upstream's public key on every call
# (airlock run has no check before the agent: the relay's own answer shows it)
SPKI=$(openssl x509 -in srv.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
OTHER_SPKI=$(openssl x509 -in other.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
policy pinok "  pubkey_pin: \"sha256//$OTHER_SPKI;sha256//$SPKI\""
policy pinbad "  pubkey_pin: sha256//$OTHER_SPKI"
: >fake.log
out=$(run pinbad python3 "$T_TMP/rc.py" --json '{"model":"v"}' POST /v1/messages 2>&1)
is "a verified upstream whose key matches no pubkey_pin: 502" "$(field '["status"]' <<<"$out")" 502
SPKI_RE=$(printf '%s' "$SPKI" | sed 's/[+]/[+]/g')
like "the reason names the key seen and the pin" "$(tail -1 relay.log)" "public key sha256//$SPKI_RE matches no relay.pubkey_pin"
like "... logged as upstream_failure: pin" "$(tail -1 relay.log)" '"upstream_failure":"pin"'
is "no request reached the upstream with the wrong pin" "$(upstream_count)" 0
out=$(run pinok python3 "$T_TMP/rc.py" --json '{"model":"v"}' POST /v1/messages 2>&1)
is "control: the right pin (one of two) passes: 200" "$(field '["status"]' <<<"$out")" 200
is "control: that request reached the upstream" "$(upstream_count)" 1

# --- 8. the key is nowhere in the agent's sandbox -----------------------------
cat >hunt.py <<'PY'
import os, re, sys
pat = re.compile(rb"sk-ant-fake-[0-9a-f]{64}")
found = []
for k, v in os.environ.items():
    if pat.search(v.encode()): found.append("env:" + k)
for pid in os.listdir("/proc"):
    if not pid.isdigit(): continue
    for f in ("environ", "cmdline"):
        try:
            if pat.search(open(f"/proc/{pid}/{f}", "rb").read()): found.append(f"/proc/{pid}/{f}")
        except OSError: pass
    try:
        if b"--config-json" in open(f"/proc/{pid}/cmdline", "rb").read(): found.append(f"relay process visible: {pid}")
    except OSError: pass
for top in ("/etc", "/tmp", "/workspace", "/run", "/var", "/home", "/root", "/dev/shm", "/opt", "/srv", "/mnt"):
    for d, dirs, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            try:
                if os.path.islink(p) or os.path.getsize(p) > 4 << 20: continue
                if pat.search(open(p, "rb").read()): found.append(p)
            except OSError: pass
if os.path.exists(sys.argv[1]): found.append("key file visible: " + sys.argv[1])
print("FOUND " + " ".join(found) if found else "CLEAN")
PY
chmod 644 hunt.py
# the test directory (bound read-only for the scripts) holds the key file:
# hide it from this check by binding only what the agent needs
mkdir -m 755 pub && cp hunt.py rc.py pub/
sed "s|ro_paths: \[.*\]|ro_paths: [$T_TMP/pub]|" relay.yaml >hunt.yaml
out=$(run hunt sh -c "python3 $T_TMP/pub/rc.py --json '{\"model\":\"h\"}' POST /v1/messages >/dev/null; python3 $T_TMP/pub/hunt.py $T_TMP/secret/model.key" 2>&1)
is "the key is in no env, /proc/*/environ|cmdline or file of the agent's sandbox; the relay is invisible" "$out" CLEAN
out=$(timeout 60 "$AIRLOCK" run -q -p hunt.yaml --relay-log /dev/null --env LEAKED="$KEY" -- python3 "$T_TMP/pub/hunt.py" /nonexistent 2>&1)
like "control: the same hunt finds the key when it is put in the environment" "$out" '^FOUND env:LEAKED .*/proc/[0-9]+/environ'
out=$(timeout 60 "$AIRLOCK" run -q -p hunt.yaml --relay-log /dev/null --env LEAKED="$KEY" -- sh -c "printf %s \"\$LEAKED\" >/tmp/k; unset LEAKED; exec python3 $T_TMP/pub/hunt.py /nonexistent" 2>&1)
like "control: ... and in a file" "$out" 'FOUND.*/tmp/k'

# --- 9. the key file must be private ---------------------------------------------
chmod 640 secret/model.key
out=$(run relay true 2>&1); rc=$?
chmod 600 secret/model.key
is "a group-readable key file is refused (exit 125)" "$rc" 125
like "... with the reason" "$out" 'mode 0600'
run relay true >/dev/null 2>&1
is "control: with mode 0600 the run starts" "$?" 0

# --- 10. a real agent CLI from npm ------------------------------------------------
if [ -n "${AIRLOCK_SKIP_NPM:-}" ]; then
  skip "Claude Code from npm: AIRLOCK_SKIP_NPM is set"
elif ! command -v npm >/dev/null; then
  skip "Claude Code from npm: npm not installed"
elif ! (mkdir -p npm && cd npm && timeout 300 npm install --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code >../npm.out 2>&1); then
  skip "Claude Code from npm: npm install failed ($(tail -1 npm.out))"
else
  CC=$T_TMP/npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe
  [ -x "$CC" ] || CC=$T_TMP/npm/node_modules/@anthropic-ai/claude-code/cli.js
  NODEDIR=$(dirname "$(readlink -f "$(command -v node 2>/dev/null || echo /usr/bin/node)")")
  extra=$T_TMP/npm
  case "$NODEDIR" in /usr/*) ;; *) extra="$extra, $NODEDIR" ;; esac
  policy cc "  routes: [\"POST /v1/messages\", \"POST /v1/messages/count_tokens\"]"
  sed -i "s|ro_paths: \[.*\]|ro_paths: [$extra]|" cc.yaml
  : >fake.log
  out=$(timeout 180 "$AIRLOCK" run -q -p cc.yaml --relay-log relay.log -e CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    -e DISABLE_AUTOUPDATER=1 -e DISABLE_TELEMETRY=1 -- "$CC" -p "say hello" --model claude-sonnet-4-5 2>&1)
  like "Claude Code ($(grep -o '"version": "[^"]*"' npm/node_modules/@anthropic-ai/claude-code/package.json)) inside the sandbox prints the fake API's answer" "$out" 'Hello from the fake model API'
  up=$(grep '"/v1/messages' fake.log | head -1)
  is "its request reached the fake API through the relay with the real key" "$(field '["creds"]' <<<"$up")" "{'x-api-key': '$KEYSHA'}"
  like "and is in the relay's log" "$(grep '"forwarded"' relay.log | head -1)" '"model":"claude-sonnet-4-5","path":"/v1/messages"'
fi

done_testing
