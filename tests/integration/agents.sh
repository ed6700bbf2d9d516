#!/bin/bash
# Real coding agents out of the box (issue #17): `airlock ticket --agent
# claude` and `--agent codex` with the real npm packages (installed here
# into a temporary prefix), each working the demo ticket against a scripted
# stub model API on loopback (fakemodel.py --script: Messages API with SSE
# for Claude Code, Responses API with SSE for Codex): one tool call that
# runs the bundled patch-agent (it applies the ticket's fix, runs the
# tests, pushes the run branch, opens the PR), then a final answer that
# declares the result. Checked: the PR is verified on the forge; the model
# key is nowhere in the sandbox (hunted from inside, with a positive
# control); every host the client tried besides the forge was denied and
# is in the run record (with a positive control). Never a real model API.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { skip "agent preset tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }

# --- the presets' messages need no npm -------------------------------------
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent claude 2>&1); rc=$?
if [ "$rc" != 0 ] && ! grep -q 'airlock ticket: lease' <<<"$out"; then
  ok "--agent claude without a relay upstream for it: refused before any lease"
else fail "--agent claude without a relay upstream: refused before any lease"; diag "rc=$rc $out"; fi
like "... saying what to add" "$out" 'no relay upstream with vendor: anthropic'
cd "$T_TMP" || exit 1
A=$T_TMP/agent
mkdir -p "$A"
cp "$AIRLOCK_SRC/examples/agents/patch-agent" "$AIRLOCK_SRC/examples/agents/agentlib.py" "$A/"
mkdir -m 700 secret
KEY="sk-ant-fake-$(openssl rand -hex 32)"; KEY2="sk-oai-fake-$(openssl rand -hex 32)"
printf '%s\n' "$KEY" >secret/a.key; printf '%s\n' "$KEY2" >secret/o.key; chmod 600 secret/*.key
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out "$A/ca.pem" -days 2 -subj /CN=airlock-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=api.model.test 2>/dev/null
printf 'subjectAltName=DNS:api.model.test,DNS:api.openai.test,IP:127.0.0.1\n' >ext.cnf
openssl x509 -req -in srv.csr -CA "$A/ca.pem" -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null

# the hunt the scripted model runs first (inside the sandbox): the key in any
# environment, command line or readable file
cat >"$A/hunt.py" <<'PY'
import os, re
pat = re.compile(rb"sk-(ant|oai)-fake-[0-9a-f]{64}")
found = []
for pid in os.listdir("/proc"):
    if not pid.isdigit(): continue
    for f in ("environ", "cmdline"):
        try:
            if pat.search(open(f"/proc/{pid}/{f}", "rb").read()): found.append(f"/proc/{pid}/{f}")
        except OSError: pass
for top in ("/etc", "/tmp", "/workspace", "/run", "/var", "/home", "/root", "/dev/shm", "/opt", "/srv", "/mnt"):
    for d, dirs, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            try:
                if os.path.islink(p) or os.path.getsize(p) > 4 << 20: continue
                if pat.search(open(p, "rb").read()): found.append(p)
            except OSError: pass
print("KEYHUNT " + ("FOUND " + " ".join(found) if found else "CLEAN"))
PY
chmod -R a+rX "$A"
# the one tool call: hunt, try a host that is not allowed (the control for
# "denied and recorded"), then the patch-agent does the ticket
# (written out by the command itself, as a model would: nothing of the
# test's directory needs to be visible inside)
SCRIPT="mkdir -p /tmp/w && cd /tmp/w && cat >agentlib.py <<'AIRLOCK_EOF1'
$(cat "$A/agentlib.py")
AIRLOCK_EOF1
cat >patch-agent <<'AIRLOCK_EOF2'
$(cat "$A/patch-agent")
AIRLOCK_EOF2
cat >hunt.py <<'AIRLOCK_EOF3'
$(cat "$A/hunt.py")
AIRLOCK_EOF3
python3 hunt.py >&2; curl -s -m 5 -o /dev/null https://denied.example.test/ || true; python3 patch-agent"
python3 "$HERE/fakemodel.py" srv.pem srv.key fake.port fake.log --script "$SCRIPT" >fake.err 2>&1 &
on_exit "kill $!"
for _ in $(seq 50); do [ -s fake.port ] && break; sleep 0.1; done
FP=$(cat fake.port 2>/dev/null)
[ -n "$FP" ] && ok "scripted model API on 127.0.0.1:$FP" || { fail "scripted model API starts"; done_testing; exit 1; }

agent_policy() { # FILE
  write_policy "$1" "$FE_SOCK" 5m
  sed -i "s|^filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}|filesystem: {workspace_size: 256MiB, tmp_size: 128MiB, ro_paths: [$A]}|; s|memory: 1GiB|memory: 2GiB|" "$1"
  cat >>"$1" <<YAML
relay:
  upstreams:
    - {vendor: anthropic, upstream: "https://api.model.test:$FP", key_file: $T_TMP/secret/a.key, ca_file: $A/ca.pem, pin: 127.0.0.1}
    - {vendor: openai, upstream: "https://api.openai.test:$FP", key_file: $T_TMP/secret/o.key, ca_file: $A/ca.pem, pin: 127.0.0.1}
YAML
}
agent_policy "$T_TMP/agents.yaml"
check "the agents' policy is valid" "$AIRLOCK" policy check "$T_TMP/agents.yaml"

# --- the trust store: the system's CAs plus the forge's, one bundle ----------
cat >"$A/ca-check" <<'SH'
#!/bin/sh
f=$SSL_CERT_FILE
n=$(grep -c 'BEGIN CERTIFICATE' "$f")
same=yes
for v in "$CURL_CA_BUNDLE" "$GIT_SSL_CAINFO" "$REQUESTS_CA_BUNDLE" "$NODE_EXTRA_CA_CERTS"; do [ "$v" = "$f" ] || same=no; done
# the forge verifies with the bundle (through the proxy); so does the system's first CA's subject
curl -s -o /dev/null -w 'forge=%{http_code}\n' "$AIRLOCK_API_URL/repos/$AIRLOCK_REPO/issues/$AIRLOCK_TICKET" -H "Authorization: Bearer $AIRLOCK_TICKET_TOKEN" >&2
printf 'CABUNDLE %s certs=%s same=%s writable=%s\n' "$f" "$n" "$same" "$( [ -w "$f" ] && echo yes || echo no)" >&2
exit 0
SH
chmod 755 "$A/ca-check"
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$A/ca-check" 2>&1)
sys_n=$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt 2>/dev/null || echo 0)
fca_n=$(grep -c 'BEGIN CERTIFICATE' "$FE_CA")
like "the sandbox's CA bundle: all five variables name one read-only file" "$out" 'CABUNDLE /[^ ]*/ca-bundle.pem certs=[0-9]+ same=yes writable=no'
n=$(grep -o 'CABUNDLE [^ ]* certs=[0-9]*' <<<"$out" | sed 's/.*certs=//')
if [ -n "$n" ] && [ "$n" -ge $((sys_n + fca_n)) ] && [ "$sys_n" -gt 0 ]; then
  ok "... holding the system's $sys_n CAs plus the forge's ($n; control: forge.ca_file alone has $fca_n)"
else fail "... holding the system's CAs plus the forge's"; diag "bundle=$n system=$sys_n forge=$fca_n"; fi
like "... with which the forge still verifies" "$out" 'forge=200'

out=$(AIRLOCK_AGENT_PREFIX= PATH=/usr/bin:/bin "$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/agents.yaml" --agent codex --agent-prefix "$T_TMP/nowhere" 2>&1); rc=$?
if [ "$rc" != 0 ] && ! grep -q 'airlock ticket: lease' <<<"$out"; then
  ok "a preset whose program is missing stops before any lease"
else fail "a preset whose program is missing stops before any lease"; diag "rc=$rc"; fi
like "... and says how to install it" "$out" 'npm install --prefix .*/nowhere @openai/codex'

# --- the real npm packages ---------------------------------------------------
if [ -n "${AIRLOCK_SKIP_NPM:-}" ]; then
  skip "Claude Code and Codex from npm: AIRLOCK_SKIP_NPM is set"; done_testing; exit 0
elif ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  skip "Claude Code and Codex from npm: npm/node not installed"; done_testing; exit 0
elif ! timeout 400 npm install --prefix "$T_TMP/npm" --no-audit --no-fund --loglevel=error \
    @anthropic-ai/claude-code @openai/codex >npm.out 2>&1; then
  skip "Claude Code and Codex from npm: npm install failed ($(tail -1 npm.out))"; done_testing; exit 0
fi
chmod -R a+rX "$T_TMP/npm"
ok "npm installed $(cd npm/node_modules && for p in @anthropic-ai/claude-code @openai/codex; do printf '%s@%s ' $p "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' $p/package.json)"; done)"

# run_agent NAME: airlock ticket with the preset; sets OUT, RC, REC
run_agent() {
  REC=$T_TMP/rec-$1.json
  : >fake.log
  OUT=$(timeout 400 "$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/agents.yaml" --agent "$1" \
    --agent-prefix "$T_TMP/npm" --record "$REC" 2>&1); RC=$?
}
rec() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($1)" "$REC"; }
for agent in claude codex; do
  vendor=anthropic; path=/v1/messages
  [ $agent = codex ] && { vendor=openai; path=/v1/responses; }
  run_agent $agent
  if [ "$RC" = 0 ] && grep -q 'verified on the forge' <<<"$OUT"; then
    ok "--agent $agent: the ticket ends in a PR verified on the forge"
  else fail "--agent $agent: the ticket ends in a verified PR"; diag "rc=$RC" "$(tail -30 <<<"$OUT")"; fi
  like "--agent $agent: the scripted model got a tool call's result back, then answered" \
    "$(grep -o '"script": "[a-z]*"' fake.log | tr '\n' ' ')" '"call".*"final"'
  like "--agent $agent: its calls went through the relay to the $vendor upstream" \
    "$(rec '" ".join(c["vendor"]+c["path"]+":"+c["decision"] for c in r["model_relay"]["calls"])')" "$vendor$path:forwarded"
  like "--agent $agent: the key hunt inside ran and found nothing" "$OUT" 'KEYHUNT CLEAN'
  is "--agent $agent: every connection the agent's proxy allowed was to the forge" \
    "$(rec '" ".join(sorted(set(d["host"] for d in r["proxy_decisions"] if d.get("decision")=="allow" and not d.get("run","").endswith("/relay"))))')" "api.forge.test forge.test"
  is "--agent $agent: the relay's own egress reached only the model upstream" \
    "$(rec '" ".join(sorted(set(d["host"]+":"+d["decision"] for d in r["proxy_decisions"] if d.get("run","").endswith("/relay"))))')" \
    "$([ $agent = claude ] && echo api.model.test:allow || echo api.openai.test:allow)"
  like "--agent $agent: the host it was not allowed to reach is denied and in the record (control)" \
    "$(rec '" ".join(sorted(set(d["host"]+":"+d["decision"] for d in r["proxy_decisions"] if d.get("decision")!="allow")))')" 'denied.example.test:deny'
  diag "--agent $agent: hosts denied: $(rec '" ".join(sorted(set(str(d.get("host")) for d in r["proxy_decisions"] if d.get("decision")!="allow")))')"
  is "--agent $agent: the record names the preset" "$(rec 'r["agent"]["preset"]')" $agent
done
# airlock demo --agent: the same one command against the bundled forge
out=$(timeout 60 "$AIRLOCK" demo --agent claude 2>&1); rc=$?
is "demo --agent claude without a model: a usage error at once" "$rc" 2
like "... saying what is needed" "$out" 'needs a model API .*--relay-upstream https://api.anthropic.com --relay-key-file FILE'
# --relay-ca and --relay-pin: parsed, checked, and written into the demo's
# relay upstream, which the run checks before the lease (issue #27 item 5)
out=$(timeout 60 "$AIRLOCK" demo --agent claude --relay-ca "$A/ca.pem" 2>&1); rc=$?
is "demo --relay-ca without --relay-upstream: a usage error" "$rc,$(grep -c 'go with --relay-upstream' <<<"$out")" "2,1"
out=$(timeout 60 "$AIRLOCK" demo --agent claude --relay-upstream https://127.0.0.1:$FP --relay-key-file "$T_TMP/secret/a.key" --relay-pin sha256//short 2>&1); rc=$?
is "demo --relay-pin malformed: a usage error naming the rule" "$rc,$(grep -c 'relay-pin .sha256//short.: not sha256//BASE64.*44-character base64' <<<"$out")" "2,1"
WRONG_PIN=sha256//$(printf x | openssl dgst -sha256 -binary | base64)
demo_check() { # NAME WANT-REGEX DEMO-ARGS...
  local name=$1 want=$2; shift 2
  : >fake.log
  out=$(timeout 300 "$AIRLOCK" demo --agent claude --agent-prefix "$T_TMP/npm" --relay-upstream "https://127.0.0.1:$FP" \
    --relay-key-file "$T_TMP/secret/a.key" "$@" 2>&1); rc=$?
  if [ "$rc" = 1 ] && grep -qE -- "$want" <<<"$out"; then ok "demo $name: the run stops at the relay check with the reason"
  else fail "demo $name: the run stops at the relay check with the reason"; diag "rc=$rc" "$(tail -15 <<<"$out")"; fi
  is "demo $name: nothing reached the model API" "$(grep -c '"method"' fake.log)" 0
}
demo_check "without --relay-ca" \
  'failed its check before the agent \(tls-verify\): the certificate of 127.0.0.1:[0-9]+ did not verify against the system.s CA store.*--relay-ca FILE'
demo_check "--relay-ca and a wrong --relay-pin" \
  '\(pin-mismatch\): the certificate of 127.0.0.1:[0-9]+ verified, but its public key sha256//.* matches no relay.pubkey_pin.*--relay-pin' \
  --relay-ca "$A/ca.pem" --relay-pin "$WRONG_PIN"
cat >relay-demo.yaml <<YAML
relay:
  upstreams:
    - {vendor: anthropic, upstream: "https://api.model.test:$FP", key_file: $T_TMP/secret/a.key, ca_file: $A/ca.pem, pin: 127.0.0.1}
    - {vendor: openai, upstream: "https://api.openai.test:$FP", key_file: $T_TMP/secret/o.key, ca_file: $A/ca.pem, pin: 127.0.0.1}
YAML
for agent in claude codex; do
  : >fake.log
  out=$(timeout 400 "$AIRLOCK" demo --agent $agent --agent-prefix "$T_TMP/npm" --relay relay-demo.yaml 2>&1); rc=$?
  if [ "$rc" = 0 ] && grep -q 'Done: one pull request' <<<"$out"; then ok "demo --agent $agent: one pull request, verified"
  else fail "demo --agent $agent ends in a pull request"; diag "rc=$rc" "$(tail -25 <<<"$out")"; fi
done

# positive control for the hunt: the same hunt sees the key when it is there
out=$(timeout 60 "$AIRLOCK" run -q -p "$T_TMP/agents.yaml" --relay-log /dev/null --env LEAKED="$KEY" -- python3 "$A/hunt.py" 2>&1)
like "control: the hunt finds the key when it is in the sandbox" "$out" 'KEYHUNT FOUND /proc/[0-9]+/environ'
done_testing
