#!/bin/bash
# The token broker (issue 5) against airlock-forge, plus a tiny fake API
# (fakegh.py) for the 401/422/5xx paths. Tokens never appear on a command
# line: the test client hands them to a child's environment, and the child
# feeds them to curl/git through stdin or GIT_CONFIG_* variables.
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:?}
EXEC=${BROKER_LEASE_EXEC:?}
FORGE=${AIRLOCK_FORGE:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ]; then
  skip "airlock-forge not built (-Dforge=false)"
  done_testing
  exit 0
fi
for p in openssl curl git python3; do
  command -v $p >/dev/null || { skip "$p missing"; done_testing; exit 0; }
done

W=$T_TMP
cd "$W" || exit 1
sh "$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null 2>&1
sh "$SRC/scripts/make-app-key.sh" "$W/keys" >/dev/null
"$FORGE" --fixture "$SRC/tests/forge-emulator/fixtures/sample.json" --data "$W/forge" \
  --tls-dir "$W/tls" --port 0 --admin-port 0 --ports-file "$W/ports.json" \
  --key 1001="$W/keys/app.pub.pem" --key 1002="$W/keys/app.pub.pem" >"$W/forge.log" 2>&1 &
FORGE_PID=$!
on_exit "kill $FORGE_PID"
for _ in $(seq 50); do [ -s "$W/ports.json" ] && break; sleep 0.1; done
port() { python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$W/ports.json" "$1"; }
HP=$(port https)
AP=$(port admin)
API="https://127.0.0.1:$HP"
ADMIN="http://127.0.0.1:$AP"

# token_state FP: the forge's view of a token (active / revoked / expired / none)
token_state() {
  curl -s "$ADMIN/tokens" | python3 -c '
import json,sys
fp=sys.argv[1]
st=[t["state"] for t in json.load(sys.stdin) if t["fingerprint"]==fp]
print(st[0] if st else "none")' "$1"
}
token_count() { curl -s "$ADMIN/tokens" | python3 -c 'import json,sys;print(len(json.load(sys.stdin)))'; }
# wait_state FP STATE: up to 1 s (the issue's bound)
wait_state() {
  local i s
  for i in $(seq 20); do
    s=$(token_state "$1")
    [ "$s" = "$2" ] && { echo "$s"; return 0; }
    sleep 0.05
  done
  echo "$s"
}

write_config() { # FILE API_URL KEY [extra yaml]
  cat >"$1" <<EOF
app: {id: 1001, private_key: $3}
api: {url: "$2", ca_file: $W/tls/ca.crt, retries: 1, timeout: 5s}
repositories: [acme/widget]
state_dir: $W/state
${4:-}
EOF
}

start_broker() { # CONFIG SOCKET LOG -> sets BROKER_PID
  "$AIRLOCK" broker -c "$1" --socket "$2" >"$3" 2>&1 &
  BROKER_PID=$!
  on_exit "kill $BROKER_PID"
  for _ in $(seq 50); do [ -S "$2" ] && return 0; kill -0 $BROKER_PID 2>/dev/null || return 1; sleep 0.1; done
  return 1
}

write_config "$W/broker.yaml" "$API" "$W/keys/app.pem"
SOCK=$W/broker.sock
check "broker starts against the forge" start_broker "$W/broker.yaml" "$SOCK" "$W/broker.log"
is "socket mode is 0600" "$(stat -c %a "$SOCK")" "600"

# ---- scoping: the child gets the tokens in its environment -------------------
cat >"$W/scope.sh" <<'EOF'
#!/bin/bash
# Runs with AL_GIT_TOKEN / AL_TICKET_TOKEN in the environment. Prints NAME=STATUS.
api() { # TOKENVAR METHOD PATH [BODY]
  local tok=${!1}
  { printf 'header = "Authorization: Bearer %s"\n' "$tok"
    printf 'header = "Accept: application/vnd.github+json"\n'; } |
    curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" -K - -X "$2" \
      ${4:+-H 'Content-Type: application/json' --data "$4"} "$API$3"
}
push() { # TOKENVAR BRANCH FILE: clone with the git token, push with TOKENVAR
  local tok=${!1} d b64 gb64
  d=$(mktemp -d)
  gb64=$(printf 'x-access-token:%s' "$AL_GIT_TOKEN" | base64 -w0)
  b64=$(printf 'x-access-token:%s' "$tok" | base64 -w0)
  GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader GIT_CONFIG_VALUE_0="Authorization: Basic $gb64" \
    git clone -q "https://127.0.0.1:$HP/acme/widget.git" "$d" 2>/dev/null || { echo fail; return; }
  mkdir -p "$d/$(dirname "$3")"; echo x >"$d/$3"
  git -C "$d" add -A && git -C "$d" -c user.name=t -c user.email=t@t commit -qm t
  if GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader GIT_CONFIG_VALUE_0="Authorization: Basic $b64" \
     git -C "$d" push -q origin "HEAD:refs/heads/$2" 2>"$d.err"; then echo ok; else echo refused; fi
  rm -rf "$d" "$d.err"
}
echo "git_read_repo=$(api AL_GIT_TOKEN GET /repos/acme/widget)"
echo "git_read_other=$(api AL_GIT_TOKEN GET /repos/acme/other)"
echo "git_comment=$(api AL_GIT_TOKEN POST /repos/acme/widget/issues/1/comments '{"body":"x"}')"
echo "ticket_comment=$(api AL_TICKET_TOKEN POST /repos/acme/widget/issues/1/comments '{"body":"x"}')"
echo "git_push=$(push AL_GIT_TOKEN airlock/t-1 src/new.txt)"
echo "git_push_workflow=$(push AL_GIT_TOKEN airlock/t-2 .github/workflows/x.yml)"
echo "ticket_push=$(push AL_TICKET_TOKEN airlock/t-3 src/other.txt)"
# no token value in any broker log or state file (grep reads the values from stdin)
if grep -rqF -f <(printf '%s\n%s\n' "$AL_GIT_TOKEN" "$AL_TICKET_TOKEN") "$LOGS"; then
  echo "leak=yes"; else echo "leak=no"; fi
EOF
chmod +x "$W/scope.sh"
export CA=$W/tls/ca.crt API HP LOGS="$W/broker.log $W/state"
export GIT_SSL_CAINFO=$W/tls/ca.crt GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
out=$("$EXEC" "$SOCK" acme/widget release "$W/scope.sh" 2>"$W/exec.err")
gfp=$(echo "$out" | awk '$1=="git"{print $2}')
tfp=$(echo "$out" | awk '$1=="ticket"{print $2}')
like "lease granted two tokens" "$gfp $tfp" '^sha256:[0-9a-f]{12} sha256:[0-9a-f]{12}$'
val() { echo "$out" | sed -n "s/^$1=//p"; }
is "git token reads its repository (positive control)" "$(val git_read_repo)" 200
like "git token cannot read another repository" "$(val git_read_other)" '^(403|404)$'
is "ticket token can comment (positive control)" "$(val ticket_comment)" 201
like "git token cannot comment" "$(val git_comment)" '^(403|404)$'
is "git token can push an airlock/ branch (positive control)" "$(val git_push)" ok
is "git token cannot push under .github/workflows/" "$(val git_push_workflow)" refused
is "ticket token cannot push" "$(val ticket_push)" refused
is "no token value in the broker's log or state dir" "$(val leak)" no
like "release: broker answered revoked + confirmed" "$out" 'confirmed yes reason released'
is "git token revoked on the forge" "$(token_state "$gfp")" revoked
is "ticket token revoked on the forge" "$(token_state "$tfp")" revoked
like "broker log shows the fingerprint and the confirmation" "$(cat "$W/broker.log")" "token $gfp revoked, 401 confirmed"
like "lease log has the grant (fingerprint, permissions, expiry)" "$(cat "$W/state/leases.jsonl")" "\"fingerprint\":\"$gfp\".*\"permissions\""

# ---- the broker itself refuses administration (not only the client library) --
n0=$(token_count)
resp=$(python3 - "$SOCK" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"type":"lease","version":1,"tokens":[{"role":"git","repo":"acme/widget","permissions":{"administration":"write"}}]}\n')
print(s.makefile().readline().strip())
EOF
)
like "administration request refused by the broker" "$resp" '"code":"forbidden".*administration'
resp=$(python3 - "$SOCK" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"type":"lease","version":1,"tokens":[{"role":"ticket","repo":"acme/widget","permissions":{"contents":"write"}}]}\n')
print(s.makefile().readline().strip())
EOF
)
like "a permission outside the role's maximum is refused" "$resp" '"code":"forbidden"'
is "no token was minted for refused requests" "$(token_count)" "$n0"
resp=$(python3 - "$SOCK" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"type":"release"}\n')
print(s.makefile().readline().strip())
EOF
)
like "a request out of order ends the connection" "$resp" '"code":"bad_request"'

# ---- every way a lease ends revokes and confirms ------------------------------
for mode in close crash; do
  out=$("$EXEC" "$SOCK" acme/widget $mode 2>/dev/null)
  fp=$(echo "$out" | awk '$1=="git"{print $2}')
  fp2=$(echo "$out" | awk '$1=="ticket"{print $2}')
  is "client $mode: git token revoked within 1s" "$(wait_state "$fp" revoked)" revoked
  is "client $mode: ticket token revoked within 1s" "$(wait_state "$fp2" revoked)" revoked
done
"$EXEC" "$SOCK" acme/widget hold >"$W/hold.out" 2>&1 &
HOLD=$!
for _ in $(seq 50); do grep -q ticket "$W/hold.out" && break; sleep 0.1; done
fp=$(awk '$1=="git"{print $2}' "$W/hold.out")
is "held lease is active" "$(token_state "$fp")" active
kill -9 $HOLD
wait $HOLD 2>/dev/null
is "client SIGKILL: token revoked within 1s" "$(wait_state "$fp" revoked)" revoked
like "broker logged the revocation's confirmation" "$(cat "$W/broker.log")" "token $fp revoked, 401 confirmed"

out=$(AL_TEST_TTL_MS=1500 "$EXEC" "$SOCK" acme/widget ttl 2>&1)
fp=$(echo "$out" | awk '$1=="git"{print $2}')
like "TTL: the client is told" "$out" 'expired'
like "TTL: revoked and confirmed" "$out" 'confirmed yes reason ttl'
is "TTL: token revoked on the forge" "$(token_state "$fp")" revoked

# airlock token lease prints fingerprints only and releases on EOF
out=$("$AIRLOCK" token lease --repo acme/widget --socket "$SOCK" </dev/null 2>&1)
like "airlock token lease prints fingerprints" "$out" 'git +acme/widget sha256:[0-9a-f]{12}'
like "airlock token lease: released and confirmed" "$out" 'ticket sha256:[0-9a-f]{12} revoked=yes confirmed=yes'
if echo "$out" | grep -qE 'gh[pousr]_'; then fail "airlock token lease printed a token"; else ok "airlock token lease printed no token"; fi

# shutdown: SIGTERM revokes every live lease before exit
"$EXEC" "$SOCK" acme/widget hold >"$W/hold2.out" 2>&1 &
HOLD=$!
on_exit "kill -9 $HOLD"
for _ in $(seq 50); do grep -q ticket "$W/hold2.out" && break; sleep 0.1; done
fp=$(awk '$1=="git"{print $2}' "$W/hold2.out")
kill -TERM $BROKER_PID
wait $BROKER_PID
is "SIGTERM: broker exits 0 after revoking" "$?" 0
is "SIGTERM: live lease's token revoked" "$(token_state "$fp")" revoked
if grep -rqE 'gh[pousr]_[A-Za-z0-9]{20,}' "$W/broker.log" "$W/state"; then
  fail "token-shaped string in broker log/state"; else ok "no token-shaped string in broker log/state"; fi

# ---- static secrets (relay.key: broker): leased to a listed repository only ---
MODEL_KEY="sk-test-$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$MODEL_KEY" >"$W/model.key"; chmod 600 "$W/model.key"
mkdir -p "$W/sstate"
cat >"$W/secrets.yaml" <<EOF
app: {id: 1001, private_key: $W/keys/app.pem}
api: {url: "$API", ca_file: $W/tls/ca.crt, retries: 1, timeout: 5s}
repositories: [acme/widget, acme/other]
state_dir: $W/sstate
secrets:
  model_key: {file: $W/model.key, repositories: [acme/widget]}
EOF
cat >"$W/secret.sh" <<'EOF'
#!/bin/bash
[ "$AL_SECRET" = "$(cat "$MODEL_KEY_FILE")" ] && echo "secret_value=ok" || echo "secret_value=wrong"
if grep -rqF -e "$AL_SECRET" $SLOGS; then echo "secret_leak=yes"; else echo "secret_leak=no"; fi
EOF
chmod +x "$W/secret.sh"
check "broker with a secrets: section starts" start_broker "$W/secrets.yaml" "$W/s.sock" "$W/s.log"
like "broker logs the secret's fingerprint only" "$(cat "$W/s.log")" 'secret model_key: sha256:[0-9a-f]{12}'
out=$(AL_TEST_SECRET=model_key MODEL_KEY_FILE=$W/model.key SLOGS="$W/s.log $W/sstate" \
  "$EXEC" "$W/s.sock" acme/widget release "$W/secret.sh" 2>"$W/exec-s.err")
sfp=$(echo "$out" | awk '$1=="secret"{print $2}')
like "secret leased to a listed repository (fingerprint)" "$sfp" '^sha256:[0-9a-f]{12}$'
is "the client got the secret's value" "$(echo "$out" | sed -n 's/^secret_value=//p')" ok
is "secret value absent from the broker's log and state dir (during the lease)" \
  "$(echo "$out" | sed -n 's/^secret_leak=//p')" no
like "the lease with a secret released cleanly" "$out" 'confirmed yes reason released'
like "lease log records the secret by name and fingerprint" "$(cat "$W/sstate/leases.jsonl")" \
  "\"secrets\":\\[\\{\"name\":\"model_key\",\"fingerprint\":\"$sfp\""
before=$(token_count)
out=$(AL_TEST_SECRET=model_key "$EXEC" "$W/s.sock" acme/other release 2>&1)
is "secret refused for an unlisted repository: no lease" "$?" 1
like "refusal says why" "$out" 'forbidden.*secret `model_key` may not be leased for repository `acme/other`'
is "refused secret: no token minted (no half-made lease)" "$(token_count)" "$before"
out=$(AL_TEST_SECRET=api_key "$EXEC" "$W/s.sock" acme/widget release 2>&1)
like "unknown secret refused" "$out" 'no secret `api_key` in the broker'
out=$(AL_TEST_SECRET=Bad-Name "$EXEC" "$W/s.sock" acme/widget release 2>&1)
like "malformed secret name refused by the client" "$out" "secret's name is 1 to 63"
if grep -rqF -e "$MODEL_KEY" "$W/s.log" "$W/sstate"; then
  fail "secret value in the broker's log/state"; else ok "no secret value in the broker's log/state"; fi
kill $BROKER_PID; wait $BROKER_PID 2>/dev/null
chmod 644 "$W/model.key"
out=$("$AIRLOCK" broker -c "$W/secrets.yaml" --socket "$W/s2.sock" 2>&1)
like "secret file readable by others is refused" "$out" 'secrets.model_key.file .*readable or writable by group or others'
chmod 600 "$W/model.key"

# ---- configuration and key checks --------------------------------------------
cp "$W/keys/app.pem" "$W/loose.pem"; chmod 644 "$W/loose.pem"
write_config "$W/loose.yaml" "$API" "$W/loose.pem"
out=$("$AIRLOCK" broker -c "$W/loose.yaml" --socket "$W/x.sock" 2>&1)
like "key readable by others is refused" "$out" 'mode 0644'
if [ "$(id -u)" = 0 ]; then
  cp "$W/keys/app.pem" "$W/other.pem"; chmod 600 "$W/other.pem"; chown 65534 "$W/other.pem"
  write_config "$W/other.yaml" "$API" "$W/other.pem"
  out=$("$AIRLOCK" broker -c "$W/other.yaml" --socket "$W/x.sock" 2>&1)
  like "key owned by another uid is refused" "$out" 'owned by uid 65534'
else
  skip "key owner check needs root to chown"
fi
printf 'not a key\n' >"$W/bad.pem"; chmod 600 "$W/bad.pem"
write_config "$W/bad.yaml" "$API" "$W/bad.pem"
out=$("$AIRLOCK" broker -c "$W/bad.yaml" --socket "$W/x.sock" 2>&1)
like "garbage key is refused" "$out" 'not a PEM private key'
write_config "$W/unk.yaml" "$API" "$W/keys/app.pem" "colour: blue"
out=$("$AIRLOCK" broker -c "$W/unk.yaml" --socket "$W/x.sock" 2>&1)
like "unknown config key: FILE:LINE:COL" "$out" 'unk.yaml:[0-9]+:[0-9]+: colour: unknown key'
write_config "$W/adm.yaml" "$API" "$W/keys/app.pem" "roles: {git: {contents: write, administration: write}}"
out=$("$AIRLOCK" broker -c "$W/adm.yaml" --socket "$W/x.sock" 2>&1)
like "administration in a role is refused in the config" "$out" 'administration: this permission is never granted'
write_config "$W/http.yaml" "http://192.0.2.1:80" "$W/keys/app.pem"
out=$("$AIRLOCK" broker -c "$W/http.yaml" --socket "$W/x.sock" 2>&1)
like "plain http to a non-loopback API is refused" "$out" 'must use https unless'

# ---- API failures: clear errors, no half-made lease --------------------------
lease_err() { "$AIRLOCK" token lease --repo acme/widget --socket "$1" </dev/null 2>&1; }
# unreachable: a loopback port nobody listens on
write_config "$W/unr.yaml" "https://127.0.0.1:1" "$W/keys/app.pem"
start_broker "$W/unr.yaml" "$W/unr.sock" "$W/unr.log"
out=$(lease_err "$W/unr.sock")
like "unreachable API: clear error" "$out" 'upstream.*(Could not connect|Failed to connect|Connection refused)'
kill $BROKER_PID; wait $BROKER_PID 2>/dev/null

for mode in 422 401 500 flaky broad; do
  python3 "$SRC/tests/integration/fakegh.py" "$W/fake-$mode.port" "$W/fake-$mode.jsonl" $mode &
  FP=$!
  on_exit "kill $FP"
  for _ in $(seq 50); do [ -s "$W/fake-$mode.port" ] && break; sleep 0.1; done
  cat >"$W/fake-$mode.yaml" <<EOF
app: {id: 1, private_key: $W/keys/app.pem}
api: {url: "http://127.0.0.1:$(cat "$W/fake-$mode.port")", retries: 2}
repositories: [acme/widgets]
EOF
  start_broker "$W/fake-$mode.yaml" "$W/fake-$mode.sock" "$W/fake-$mode.log"
  out=$("$AIRLOCK" token lease --repo acme/widgets --socket "$W/fake-$mode.sock" </dev/null 2>&1)
  minted=$(grep -c '"path": "/app/installations/7/access_tokens", "status": 201' "$W/fake-$mode.jsonl")
  revoked=$(grep -c '"method": "DELETE", "path": "/installation/token", "status": 204' "$W/fake-$mode.jsonl")
  case $mode in
  422) like "422: the API's message reaches the client" "$out" 'HTTP 422: The permissions requested are not granted' ;;
  401) like "401: clear error" "$out" 'HTTP 401: A JSON web token could not be decoded' ;;
  500) like "5xx: retried, then a clear error" "$out" 'HTTP 502'
       is "5xx: retried (1 + 2 retries)" "$(grep -c '"status": 502' "$W/fake-$mode.jsonl")" 3 ;;
  flaky) like "one 502 then success: lease granted after a retry" "$out" 'confirmed=yes' ;;
  broad) like "broader grant than asked: refused" "$out" 'was not asked for' ;;
  esac
  is "$mode: every minted token was revoked (no half-made lease)" "$revoked" "$minted"
  kill $BROKER_PID; wait $BROKER_PID 2>/dev/null
  kill $FP; wait $FP 2>/dev/null
done

done_testing
