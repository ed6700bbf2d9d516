#!/bin/bash
# The forge gateway (issue #15 part A) with the egress proxy, airlock-forge
# and real git and curl (TAP). gateway-harness runs the proxy with two
# listeners: GW hands forge CONNECTs to the gateway; TUN is a plain CONNECT
# tunnel with the same allowlist, the positive control: every attack that
# the gateway refuses is shown to succeed through TUN with a real token.
# Tokens never appear on a command line: curl reads headers from 0600
# files (-H @file), git gets them through GIT_CONFIG_* env.
. "$(dirname "$0")/lib.sh"

SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FORGE=${AIRLOCK_FORGE:-}
HARNESS=${GATEWAY_HARNESS:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ] || [ -z "$HARNESS" ] || [ ! -x "$HARNESS" ]; then
  skip "airlock-forge or gateway-harness not built"
  done_testing
  exit
fi
for t in git curl openssl jq python3; do
  if ! command -v "$t" >/dev/null; then
    skip "$t not installed"
    done_testing
    exit
  fi
done
unset GIT_SSL_CAINFO GIT_SSL_CAPATH GIT_PROXY_SSL_CAINFO http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

umask 077
W=$T_TMP
chmod 700 "$W"
cd "$W" || exit 1 # git below must never see the source tree
"$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null 2>&1
"$SRC/scripts/make-app-key.sh" "$W/keys" app >/dev/null 2>&1
FCA=$W/tls/ca.crt

# ---- the forge ----
"$FORGE" --fixture "$SRC/examples/demo/fixture.json" --data "$W/data" --tls-dir "$W/tls" \
  --key "1001=$W/keys/app.pub.pem" --key "1002=$W/keys/app.pub.pem" \
  --ports-file "$W/ports.json" >"$W/forge.out" 2>"$W/forge.err" &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$W/ports.json" ] && break; sleep 0.05; done
if [ ! -s "$W/ports.json" ]; then
  fail "forge starts"; sed 's/^/#   /' "$W/forge.err"; done_testing; exit 1
fi
P=$(jq -r .https "$W/ports.json")
ADMIN=http://127.0.0.1:$(jq -r .admin "$W/ports.json")
admin() { curl -s --noproxy '*' "$ADMIN$1"; }
DIRECT=(curl -sS --max-time 30 --cacert "$FCA" --resolve "api.forge.test:$P:127.0.0.1")
jwt() { JWT_NOW=$(admin /clock | jq -r .now) "$SRC/scripts/forge-jwt.sh" "$W/keys/app.pem" 1001; }
printf 'Authorization: Bearer %s\n' "$(jwt)" >"$W/jwt"
# mint NAME BODY: the token into $W/NAME.tok (raw) and $W/NAME.hdr (curl header file)
mint() {
  "${DIRECT[@]}" -o "$W/mint.json" -w '%{http_code}' -H "@$W/jwt" -X POST \
    --data-binary "$2" "https://api.forge.test:$P/app/installations/2001/access_tokens" >"$W/mint.code"
  jq -r .token "$W/mint.json" >"$W/$1.tok"
  printf 'Authorization: token %s\n' "$(cat "$W/$1.tok")" >"$W/$1.hdr"
  cat "$W/mint.code"
}
is "mint the run's git token" "$(mint git '{"repositories":["tally"],"permissions":{"contents":"write","pull_requests":"write"}}')" 201
is "mint the run's ticket token" "$(mint ticket '{"repositories":["tally"],"permissions":{"issues":"write"}}')" 201
is "mint a token for another repository (acme/loose)" "$(mint loose '{"repositories":["loose"],"permissions":{"contents":"write","issues":"write"}}')" 201

# ---- proxy + gateway ----
cat >"$W/policy.yaml" <<YAML
version: 1
network:
  allow:
    - {host: api.forge.test, port: $P, tls: true}
    - {host: forge.test, port: $P, tls: true}
  pin:
    - {host: api.forge.test, address: 127.0.0.1}
    - {host: forge.test, address: 127.0.0.1}
forge:
  api_url: https://api.forge.test:$P
  git_url: https://forge.test:$P
  ca_file: $FCA
YAML
RUN=t$$
BR=airlock/1-$RUN
H=$W/h
mkdir -p "$H"
cat "$W/git.tok" "$W/ticket.tok" | "$HARNESS" -p "$W/policy.yaml" --repo acme/tally --ticket 1 \
  --branch "$BR" --run-id "$RUN" --dir "$H" 2>"$W/harness.err" &
HPID=$!
on_exit "kill $HPID"
for _ in $(seq 1 200); do [ -s "$H/ports.json" ] && break; sleep 0.05; done
if [ ! -s "$H/ports.json" ]; then
  fail "proxy and gateway start"; sed 's/^/#   /' "$W/harness.err"; done_testing; exit 1
fi
ok "proxy and gateway start"
GW=$(jq -r .gateway "$H/ports.json")
TUN=$(jq -r .tunnel "$H/ports.json")
GPID=$(jq -r .gateway_pid "$H/ports.json")
PH=$(cat "$H/placeholder")
printf 'Authorization: token %s\n' "$PH" >"$W/ph.hdr"
API=https://api.forge.test:$P
GIT=https://forge.test:$P
GCURL=(curl -sS --max-time 30 --proxy "http://127.0.0.1:$GW" --cacert "$H/ca.pem")
TCURL=(curl -sS --max-time 30 --proxy "http://127.0.0.1:$TUN" --cacert "$FCA")
# gw METHOD PATH HEADERFILE [BODY]: status through the gateway; body in $W/body
gw() {
  local args=("${GCURL[@]}" -o "$W/body" -w '%{http_code}' -X "$1")
  [ -n "$3" ] && args+=(-H "@$3")
  [ -n "${4-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  "${args[@]}" "$API$2"
}
tun() {
  local args=("${TCURL[@]}" -o "$W/body" -w '%{http_code}' -X "$1")
  [ -n "$3" ] && args+=(-H "@$3")
  [ -n "${4-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  "${args[@]}" "$API$2"
}
# the gateway's last decision line matching a jq filter
decision() { jq -c "select(.event == \"request\") | select($1)" "$H/gateway.jsonl" | tail -1; }
last_reason() { jq -r 'select(.event == "request") | .reason' "$H/gateway.jsonl" | tail -1; }

ref_sha() { admin "/refs?repo=${2:-acme/tally}" | jq -r --arg r "$1" '.[$r] // empty'; }

# ---- git through the gateway (the placeholder from a credential helper) ----
# Every git command below names its repository (-C, or a fresh clone dir):
# a failed clone must never make a later command run in the source tree.
export GIT_CEILING_DIRECTORIES=$W
mkdir -p "$W/home"
export HOME=$W/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
git config --global user.email t@example.test
git config --global user.name test
git config --global init.defaultBranch main
printf '#!/bin/sh\necho username=x-access-token\necho password=%s\n' "$PH" >"$W/cred-ph"
chmod 700 "$W/cred-ph"
# gitgw ARGS...: git through the gateway; gittun ARGS...: through the plain
# tunnel with the real git token (an extra header from the environment)
gitgw() {
  GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=http.proxy GIT_CONFIG_VALUE_0="http://127.0.0.1:$GW" \
    GIT_CONFIG_KEY_1=http.sslCAInfo GIT_CONFIG_VALUE_1="$H/ca.pem" \
    GIT_CONFIG_KEY_2=credential.helper GIT_CONFIG_VALUE_2="$W/cred-ph" git "$@"
}
BASIC=$(printf 'x-access-token:%s' "$(cat "$W/git.tok")" | base64 -w0)
gittun() {
  GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=http.proxy GIT_CONFIG_VALUE_0="http://127.0.0.1:$TUN" \
    GIT_CONFIG_KEY_1=http.sslCAInfo GIT_CONFIG_VALUE_1="$FCA" \
    GIT_CONFIG_KEY_2=http.extraHeader GIT_CONFIG_VALUE_2="Authorization: Basic $BASIC" git "$@"
}

check "clone with protocol v2 through the gateway" gitgw -c protocol.version=2 clone -q "$GIT/acme/tally.git" "$W/c2"
like "  upload-pack allowed, Git-Protocol v2 kept" "$(decision '.rule == "git-upload-pack"')" '"status":200'
like "  the first request without a credential got 401 (git asked its helper)" \
  "$(jq -r 'select(.reason == "credential-missing") | .status' "$H/gateway.jsonl" | head -1)" '^401$'
check "clone with protocol v0 through the gateway" gitgw -c protocol.version=0 clone -q "$GIT/acme/tally" "$W/c0"
check "fetch through the gateway" gitgw -C "$W/c2" fetch -q origin
( cd "$W/c2" && git checkout -q -b work && echo one >f1 && git add f1 && git commit -qm one )
check "push of the run branch through the gateway" gitgw -C "$W/c2" push -q origin "HEAD:refs/heads/$BR"
is "  the forge has the run branch at the pushed commit" "$(ref_sha "refs/heads/$BR")" "$(git -C "$W/c2" rev-parse HEAD)"
like "  the decision names the ref update" "$(decision '.rule == "git-receive-pack"')" "\"ref\":\"refs/heads/$BR\",\"old\":\"0{40}\",\"new\":\"[0-9a-f]{40}\""
( cd "$W/c2" && git commit -q --amend -m one-amended )
check "force-push of the run branch" gitgw -C "$W/c2" push -q -f origin "HEAD:refs/heads/$BR"
is "  the forge has the amended commit" "$(ref_sha "refs/heads/$BR")" "$(git -C "$W/c2" rev-parse HEAD)"
check "push with protocol v0 client settings" gitgw -C "$W/c2" -c protocol.version=0 push -q -f origin "HEAD:refs/heads/$BR"

# refused pushes: REASON, refspec; the forge must not have moved
# refused NAME REASON REF REFSPEC...
refused_push() {
  local name=$1 reason=$2 ref=$3; shift 3
  local before; before=$(ref_sha "$ref")
  check_not "$name: refused through the gateway" gitgw -C "$W/c2" push -q origin "$@"
  is "  reason $reason" "$(last_reason)" "$reason"
  is "  the forge's $ref did not move" "$(ref_sha "$ref")" "$before"
}
# positive_control NAME REF REFSPEC...: the same push through the tunnel with the real token lands
positive_control() {
  local name=$1 ref=$2; shift 2
  local before; before=$(ref_sha "$ref")
  check "$name: positive control, through the plain tunnel with the real token" gittun -C "$W/c2" push -q origin "$@"
  if [ "$(ref_sha "$ref")" != "$before" ]; then ok "  the forge accepted it there ($ref changed)"; else fail "  the forge accepted it there ($ref changed)"; fi
}
( cd "$W/c2" && echo two >f2 && git add f2 && git commit -qm two )
refused_push "push to a branch outside the run's (feature-x)" push-other-branch refs/heads/feature-x HEAD:refs/heads/feature-x
positive_control "push to feature-x" refs/heads/feature-x HEAD:refs/heads/feature-x
refused_push "push to another run's branch" push-other-branch refs/heads/airlock/999-deadbeef HEAD:refs/heads/airlock/999-deadbeef
positive_control "push to another run's branch" refs/heads/airlock/999-deadbeef HEAD:refs/heads/airlock/999-deadbeef
refused_push "push of a tag" push-tag refs/tags/v9.9.9 HEAD:refs/tags/v9.9.9
positive_control "push of a tag" refs/tags/v9.9.9 HEAD:refs/tags/v9.9.9
refused_push "force-update of a tag" push-tag refs/tags/v9.9.9 +HEAD~1:refs/tags/v9.9.9
refused_push "delete of a tag" push-tag refs/tags/v9.9.9 :refs/tags/v9.9.9
refused_push "delete of the run branch itself" push-delete "refs/heads/$BR" ":refs/heads/$BR"
refused_push "push to refs/notes/commits" push-other-ref refs/notes/commits HEAD:refs/notes/commits
refused_push "push to refs/pull/1/head" push-other-ref refs/pull/1/head HEAD:refs/pull/1/head
refused_push "push to main with --no-verify" push-other-branch refs/heads/main --no-verify HEAD:refs/heads/main
refused_push "a push mixing the run branch and feature-y is refused whole" push-other-branch "refs/heads/$BR" \
  "HEAD:refs/heads/$BR" HEAD:refs/heads/feature-y
is "  feature-y was not created either" "$(ref_sha refs/heads/feature-y)" ""
positive_control "the mixed push" refs/heads/feature-y "HEAD:refs/heads/$BR" HEAD:refs/heads/feature-y

# another repository: neither push nor clone
check_not "push of the run branch to acme/loose: refused" gitgw -C "$W/c2" push -q "$GIT/acme/loose.git" "HEAD:refs/heads/$BR"
is "  reason" "$(last_reason)" other-repository
is "  acme/loose has no such branch" "$(ref_sha "refs/heads/$BR" acme/loose)" ""
check_not "clone of acme/loose: refused" gitgw clone -q "$GIT/acme/loose.git" "$W/loose"
is "  reason" "$(last_reason)" other-repository

# a large push: a pack of several MiB goes chunked (past http.postBuffer)
( cd "$W/c2" || exit 1
  head -c 12000000 /dev/urandom >blob.bin && git add blob.bin && git commit -qm big )
check "a 12 MB push of the run branch (chunked body)" gitgw -C "$W/c2" -c http.postBuffer=65536 push -q -f origin "HEAD:refs/heads/$BR"
is "  the forge has it" "$(ref_sha "refs/heads/$BR")" "$(git -C "$W/c2" rev-parse HEAD)"
up=$(decision '.rule == "git-receive-pack" and .status == 200' | jq -r .bytes_up)
if [ "${up:-0}" -gt 12000000 ]; then ok "  bytes_up counts the pack ($up)"; else fail "  bytes_up counts the pack (${up:-none})"; fi
check "clone of the large branch through the gateway" gitgw clone -q -b "$BR" "$GIT/acme/tally.git" "$W/cbig"
is "  the blob arrived intact" "$(sha256sum <"$W/cbig/blob.bin")" "$(sha256sum <"$W/c2/blob.bin")"

done_testing
