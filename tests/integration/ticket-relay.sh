#!/bin/bash
# airlock ticket with the model relay taking its key from the broker lease
# (issue #10 item 1, `relay.key: broker`): the broker's `model_key` secret
# reaches the fake model API through the relay, never the agent's sandbox,
# the run record or the broker's log; a policy asking for it against a
# broker that does not list the repository gets no lease at all.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }

# the broker again, now with the model key as a static secret of acme/tally
KEY="sk-ant-fake-$(openssl rand -hex 32)"
KEYSHA=$(printf '%s' "$KEY" | sha256sum | cut -d' ' -f1)
printf '%s\n' "$KEY" >"$FE_DIR/secret/model.key"
chmod 600 "$FE_DIR/secret/model.key"
kill "$FE_BROKER_PID"; wait "$FE_BROKER_PID" 2>/dev/null
cat >>"$FE_DIR/secret/broker.yaml" <<YAML
secrets:
  model_key: {file: $FE_DIR/secret/model.key, repositories: [acme/tally]}
YAML
check "the broker starts with a secrets: section" broker_start

# the fake model API (TLS, api.model.test pinned to 127.0.0.1)
A=$T_TMP/agent
mkdir -p "$A"
cd "$T_TMP" || exit 1
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out "$A/ca.pem" -days 2 -subj /CN=airlock-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=api.model.test 2>/dev/null
printf 'subjectAltName=DNS:api.model.test\n' >ext.cnf
openssl x509 -req -in srv.csr -CA "$A/ca.pem" -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null
python3 "$HERE/fakemodel.py" srv.pem srv.key fake.port fake.log >fake.err 2>&1 &
on_exit "kill $!"
for _ in $(seq 50); do [ -s fake.port ] && break; sleep 0.1; done
FP=$(cat fake.port 2>/dev/null)
[ -n "$FP" ] && ok "fake model API on 127.0.0.1:$FP" || { fail "fake model API starts"; done_testing; exit 1; }

# the agent: one model call through the relay; its environment and the
# answer go to stderr (relayed to ours)
cp "$HERE/relayclient.py" "$A/rc.py"
cat >"$A/agent" <<'SH'
#!/bin/sh
d=$(dirname "$0")
env | sed 's/^/agent-env: /' >&2
cat /proc/self/environ | tr '\0' '\n' | sed 's/^/agent-proc: /' >&2
python3 "$d/rc.py" --json '{"model":"m-test","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' POST /v1/messages >&2
exit 0
SH
chmod -R a+rX "$A"; chmod 755 "$A/agent"

# the run App's tokens that hold more than metadata (see the refused lease below)
run_tokens() { admin /tokens | python3 -c 'import json,sys; print(sum(1 for t in json.load(sys.stdin) if t.get("app_id")==1001 and set((t.get("permissions") or {}).keys())-{"metadata"}))'; }
SPKI=$(openssl x509 -in srv.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
relay_policy() { # FILE SOCKET REPO [RELAY-YAML]  (default: the test CA and the server's key pinned)
  write_policy "$1" "$2" 2m "$3"
  printf 'relay:\n' >>"$1"
  printf '%s\n' "${4:-  upstream: https://api.model.test:$FP
  key: broker
  ca_file: $A/ca.pem
  pubkey_pin: sha256//$SPKI
  pin: 127.0.0.1}" >>"$1"
}
relay_policy "$T_TMP/rk.yaml" "$FE_SOCK" acme/tally
check "the policy with relay.key: broker is valid" "$AIRLOCK" policy check "$T_TMP/rk.yaml"

REC=$T_TMP/rec-rk.json
: >fake.log
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/rk.yaml" --agent "$A/agent" --record "$REC" 2>&1)
like "the agent's call through the relay: 200" "$out" '"status": ?200'
up=$(grep '"method"' fake.log | tail -1)
like "the broker's model key arrives upstream (SHA-256 of x-api-key)" "$up" "\"x-api-key\": \"$KEYSHA\""
like "control: the agent's environment was dumped" "$out" 'agent-env: ANTHROPIC_BASE_URL=http://127.0.0.1:8080'
if grep -qF -e "$KEY" <<<"$out"; then fail "the key is absent from the agent's environment and /proc"
else ok "the key is absent from the agent's environment and /proc"; fi
is "the run record names the secret by fingerprint" \
  "$(python3 -c 'import json,sys; print(" ".join(s["name"]+"="+s["fingerprint"] for s in json.load(open(sys.argv[1]))["lease"]["secrets"]))' "$REC")" \
  "model_key=sha256:${KEYSHA:0:12}"
check "the run record validates against docs/run-record.schema.json" validate_record "$REC"
if grep -rqF -e "$KEY" "$REC" "$FE_DIR/secret/broker.log" "$FE_DIR/secret/broker"; then
  fail "the key is absent from the run record, the broker's log and state"
else ok "the key is absent from the run record, the broker's log and state"; fi

is "the record's relay check: ok before the lease" \
  "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); n=[p["name"] for p in r["phases"]]; print(r["relay_check"]["status"], r["relay_check"]["upstreams"][0]["result"], n.index("relay-check") < n.index("lease"))' "$REC")" "ok ok True"

# the upstream checked before the lease and the agent (issue #27 item 5):
# each failure ends the run at once with its step and its fix, nothing is
# leased and nothing reaches the fake API; the run above is the control
# (the right CA and pin: the check passes and the agent's call arrives)
rcheck() { # NAME RELAY-YAML EXIT-REGEX RESULT MESSAGE-REGEX
  relay_policy "$T_TMP/$1.yaml" "$FE_SOCK" acme/tally "$2"
  : >fake.log
  local b; b=$(run_tokens)
  out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/$1.yaml" --agent "$A/agent" --record "$T_TMP/rec-$1.json" 2>&1); rc=$?
  is "$1: the run fails (exit 1)" "$rc" 1
  like "$1: the message names the upstream, the step and the fix" "$out" "$5"
  is "$1: the record says relay_check $4, before any lease" \
    "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["relay_check"]["status"], r["relay_check"]["upstreams"][0]["result"], "lease" in r, [p["status"] for p in r["phases"] if p["name"]=="relay-check"])' "$T_TMP/rec-$1.json")" \
    "failed $4 False ['failed']"
  like "$1: the record's error is the same message" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$T_TMP/rec-$1.json")" "$5"
  check "$1: the record validates" validate_record "$T_TMP/rec-$1.json"
  is "$1: no run token minted" "$(run_tokens)" "$b"
  is "$1: no request reached the fake API, the agent did not run" "$(grep -c '"method"' fake.log; grep -c 'agent-env:' <<<"$out")" "0
0"
}
rcheck rc-noca "  upstream: https://api.model.test:$FP
  key: broker
  pin: 127.0.0.1" 1 tls-verify \
  "upstream https://api.model.test:$FP failed its check before the agent \\(tls-verify\\): the certificate of api.model.test:$FP did not verify against the system's CA store: .*relay.ca_file: PATH \\(airlock demo --relay-ca FILE"
OTHER=$(openssl req -x509 -newkey rsa:2048 -nodes -keyout /dev/null -days 1 -subj /CN=x 2>/dev/null | openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
rcheck rc-badpin "  upstream: https://api.model.test:$FP
  key: broker
  ca_file: $A/ca.pem
  pubkey_pin: sha256//$OTHER
  pin: 127.0.0.1" 1 pin-mismatch \
  "\\(pin-mismatch\\): the certificate of api.model.test:$FP verified, but its public key sha256//.* matches no relay.pubkey_pin; .*--relay-pin"
CLOSED=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
rcheck rc-closed "  upstream: https://api.model.test:$CLOSED
  key: broker
  ca_file: $A/ca.pem
  pin: 127.0.0.1" 1 connect \
  "\\(connect\\): TCP connect to api.model.test:$CLOSED \\(127.0.0.1\\) failed: Connection refused; check the port"
rcheck rc-dns "  upstream: https://no-such-host.invalid
  key: broker" 1 dns \
  "\\(dns\\): no-such-host.invalid does not resolve from this host"
if grep -qF -e "$KEY" "$T_TMP"/rec-rc-*.json; then fail "the key is in none of the failed runs' records"
else ok "the key is in none of the failed runs' records"; fi

# a repository the secret does not list: no lease, no token, a clear reason
# (the audit App 1002 may mint its read-only token for the audit, and the audit asks
# current_user_can_bypass as the run's App with a metadata-only token: count the
# run's App 1001 tokens that hold more than metadata)
before=$(run_tokens)
relay_policy "$T_TMP/rk-loose.yaml" "$FE_SOCK" acme/loose
out=$("$AIRLOCK" ticket acme/loose#1 -p "$T_TMP/rk-loose.yaml" --accept-unprotected --agent "$A/agent" --record "$T_TMP/rec-loose.json" 2>&1); rc=$?
is "a secret not listed for the repository: exit 1" "$rc" 1
like "the refusal names the secret and the repository" "$out" 'secret `model_key` may not be leased for repository `acme/loose`'
is "no run token was minted for the refused lease" "$(run_tokens)" "$before"

# airlock run cannot take the key from a broker
out=$("$AIRLOCK" run -p "$T_TMP/rk.yaml" -- true 2>&1)
like "airlock run with relay.key: broker says only airlock ticket can" "$out" 'only `airlock ticket`'
done_testing
