#!/bin/bash
# The broker's revocation, confirmed with patience (issue #21): the test
# forge mints JWT-shaped ghs_ tokens whose revocation takes effect after a
# delay; the broker must see the token still working, check again with a
# backoff, and confirm the 401 — and, as a positive control, declare a token
# alive when its revocation never takes effect within the bound. Also: a
# suspended installation gets a clear error and no token. Tokens never
# appear on a command line (broker-lease-exec hands them to a child's
# environment; the child only tests their shape).
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:?}
EXEC=${BROKER_LEASE_EXEC:?}
FORGE=${AIRLOCK_FORGE:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ]; then
  skip "airlock-forge not built (-Dforge=false)"
  done_testing
  exit 0
fi
for p in openssl curl jq; do
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
for _ in $(seq 100); do [ -s "$W/ports.json" ] && break; sleep 0.1; done
API="https://127.0.0.1:$(jq -r .https "$W/ports.json")"
ADMIN="http://127.0.0.1:$(jq -r .admin "$W/ports.json")"
admin() { curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' --data-binary "$2" "$ADMIN$1"; }
state_of() { curl -s "$ADMIN/tokens" | jq -r --arg f "$1" '.[]|select(.fingerprint==$f).state'; }

cat >"$W/broker.yaml" <<EOF
app: {id: 1001, private_key: $W/keys/app.pem}
api: {url: "$API", ca_file: $W/tls/ca.crt, retries: 1, timeout: 5s}
repositories: [acme/widget]
state_dir: $W/state
EOF
SOCK=$W/broker.sock
"$AIRLOCK" broker -c "$W/broker.yaml" --socket "$SOCK" >"$W/broker.log" 2>&1 &
BROKER_PID=$!
on_exit "kill $BROKER_PID"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { fail "broker starts"; sed 's/^/#   /' "$W/broker.log"; done_testing; exit 1; }

# The child checks the token's shape only (its value stays in its env).
cat >"$W/shape.sh" <<'EOF'
#!/bin/bash
if [[ $AL_GIT_TOKEN =~ ^ghs_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]]; then echo shape=jwt; else echo shape=classic; fi
EOF
chmod +x "$W/shape.sh"

# ---- JWT-shaped tokens, revoked with a delay: confirmed after the backoff
admin /settings '{"token_format":"jwt","revoke_delay_ms":1500}' >/dev/null
out=$("$EXEC" "$SOCK" acme/widget release "$W/shape.sh" 2>&1)
gfp=$(awk '$1=="git"{print $2}' <<<"$out")
is "the forge minted a JWT-shaped ghs_ token, and the broker accepted it" "$(sed -n 's/^shape=//p' <<<"$out")" jwt
like "delayed revocation: confirmed in the end" "$out" 'confirmed yes'
like "delayed revocation: the broker saw the token still working and checked again" \
  "$(cat "$W/broker.log")" "token $gfp still works after DELETE /installation/token; checking again in"
like "delayed revocation: the 401 came on a later check" "$(cat "$W/broker.log")" "token $gfp: revocation confirmed \(401\) on check [2-9]"
is "the forge agrees: revoked" "$(state_of "$gfp")" revoked

# ---- positive control: a revocation that never takes effect in the bound
admin /settings '{"token_format":"jwt","revoke_delay_ms":120000}' >/dev/null
out=$("$EXEC" "$SOCK" acme/widget release "$W/shape.sh" 2>&1)
gfp=$(awk '$1=="git"{print $2}' <<<"$out")
like "a token still alive after the bound: not confirmed" "$out" 'confirmed no'
like "a token still alive: the broker says so, with the time it waited" "$(cat "$W/broker.log")" \
  "token $gfp still works [0-9]+ms after DELETE /installation/token"
is "the forge agrees: still active (the check was right)" "$(state_of "$gfp")" active

# ---- classic tokens, no delay: confirmed at the first check, no extra checks
admin /settings '{"token_format":"classic","revoke_delay_ms":0}' >/dev/null
out=$("$EXEC" "$SOCK" acme/widget release "$W/shape.sh" 2>&1)
gfp=$(awk '$1=="git"{print $2}' <<<"$out")
is "classic token shape" "$(sed -n 's/^shape=//p' <<<"$out")" classic
like "immediate revocation: confirmed" "$out" 'confirmed yes'
if grep -q "token $gfp still works" "$W/broker.log"; then fail "immediate revocation: no second check"; else ok "immediate revocation: no second check"; fi

# ---- a suspended installation: a clear error, no token minted
n_before=$(curl -s "$ADMIN/tokens" | jq length)
admin /installations/2001/suspend '{"suspended":true}' >/dev/null
out=$("$EXEC" "$SOCK" acme/widget release 2>&1)
like "suspended installation: the lease fails and says why" "$out" 'suspended'
is "suspended installation: no token minted" "$(curl -s "$ADMIN/tokens" | jq length)" "$n_before"
admin /installations/2001/suspend '{"suspended":false}' >/dev/null
out=$("$EXEC" "$SOCK" acme/widget release 2>&1)
like "positive control: unsuspended, the lease works again" "$out" 'confirmed yes'

done_testing
