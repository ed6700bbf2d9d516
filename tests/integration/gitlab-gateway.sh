#!/usr/bin/env bash
# The running forge gateway on a GitLab forge (issue #30 item 2): a policy
# with forge.kind gitlab makes the gateway match GitLab's table
# (rules_gitlab.h) against airlock-gitlab-forge over TLS. The agent's
# placeholder is swapped for the run's project token; the real token
# presented by the agent is a foreign credential; a push lands only on
# refs/heads/airlock/<ticket>-<run>. Each refusal beside its control: the
# same request with the placeholder, or the same push through the plain
# tunnel with the real token, lands.
. "$(dirname "$0")/lib.sh"
FORGE=${GITLAB_FORGE:?GITLAB_FORGE is set by meson}
HARNESS=${GATEWAY_HARNESS:?}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for t in curl jq git openssl; do command -v $t >/dev/null || { skip "$t not installed"; done_testing; exit 0; }; done
unset GIT_SSL_CAINFO GIT_SSL_CAPATH GIT_PROXY_SSL_CAINFO http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

umask 077
W=$T_TMP
chmod 700 "$W"
cd "$W" || exit 1
"$SRC/scripts/make-test-ca.sh" "$W/tls" gitlab.test >/dev/null 2>&1
FCA=$W/tls/ca.crt
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/admin.tok"
export GIT_CEILING_DIRECTORIES=$W HOME=$W/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
git config --global user.email t@example.test
git config --global user.name test
git init -q --bare -b main "$W/repos/acme/other.git"
git init -q -b main "$W/seed"
echo one >"$W/seed/a.txt"
git -C "$W/seed" add a.txt && git -C "$W/seed" commit -qm one
git -C "$W/seed" push -q "$W/repos/acme/other.git" main
# the forge advertises push options (GitLab does) and records what each
# push brought: its options (GIT_PUSH_OPTION_*, githooks(5)) and refs
git -C "$W/repos/acme/other.git" config receive.advertisePushOptions true
cat >"$W/repos/acme/other.git/hooks/pre-receive" <<HOOK
#!/bin/sh
{ echo "count=\${GIT_PUSH_OPTION_COUNT-none} opt0=\${GIT_PUSH_OPTION_0-} opt1=\${GIT_PUSH_OPTION_1-}"; cat; } >>"$W/hook.log"
HOOK
chmod 755 "$W/repos/acme/other.git/hooks/pre-receive"
"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$W/admin.tok" \
  --ports-file "$W/ports.json" --repos "$W/repos" --tls-dir "$W/tls" >"$W/forge.log" 2>&1 &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$W/ports.json" ] && break; sleep 0.05; done
P=$(jq -r .https "$W/ports.json" 2>/dev/null)
[ -n "$P" ] && [ "$P" != null ] || { fail "the forge starts with TLS"; sed 's/^/#   /' "$W/forge.log"; done_testing; exit 1; }
API=https://gitlab.test:$P/api/v4
GIT=https://gitlab.test:$P
DIRECT=(curl -sS --max-time 30 --cacert "$FCA" --resolve "gitlab.test:$P:127.0.0.1")
printf 'PRIVATE-TOKEN: %s\n' "$(cat "$W/admin.tok")" >"$W/admin.hdr"
TOM=$(date -u -d tomorrow +%Y-%m-%d)
is "the run's project token minted (over TLS)" "$("${DIRECT[@]}" -o "$W/mint.json" -w '%{http_code}' -H "@$W/admin.hdr" \
  -H 'Content-Type: application/json' -X POST \
  --data-binary "{\"name\":\"airlock-git\",\"scopes\":[\"api\",\"read_repository\",\"write_repository\"],\"access_level\":30,\"expires_at\":\"$TOM\"}" \
  "$API/projects/43/access_tokens")" 201
jq -r .token "$W/mint.json" >"$W/git.tok"
printf 'PRIVATE-TOKEN: %s\n' "$(cat "$W/git.tok")" >"$W/real.hdr"

cat >"$W/policy.yaml" <<YAML
version: 1
network:
  allow:
    - {host: gitlab.test, port: $P, tls: true}
  pin:
    - {host: gitlab.test, address: 127.0.0.1}
forge:
  kind: gitlab
  api_url: $API
  git_url: $GIT
  ca_file: $FCA
YAML
RUN=t$$
BR=airlock/1-$RUN
H=$W/h
mkdir -p "$H"
cat "$W/git.tok" "$W/git.tok" | "$HARNESS" -p "$W/policy.yaml" --repo acme/other --project-id 43 \
  --ticket 1 --branch "$BR" --run-id "$RUN" --dir "$H" 2>"$W/harness.err" &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$H/ports.json" ] && break; sleep 0.05; done
[ -s "$H/ports.json" ] || { fail "proxy and gateway start"; sed 's/^/#   /' "$W/harness.err"; done_testing; exit 1; }
ok "proxy and gateway start on a forge.kind gitlab policy"
GW=$(jq -r .gateway "$H/ports.json")
TUN=$(jq -r .tunnel "$H/ports.json")
PH=$(cat "$H/placeholder")
printf 'PRIVATE-TOKEN: %s\n' "$PH" >"$W/ph.hdr"
printf 'Authorization: Bearer %s\n' "$PH" >"$W/phb.hdr"
GCURL=(curl -sS --max-time 30 --proxy "http://127.0.0.1:$GW" --cacert "$H/ca.pem")
gw() {
  local args=("${GCURL[@]}" -o "$W/body" -w '%{http_code}' -X "$1" -H "@$3")
  [ -n "${4-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  "${args[@]}" "$API$2"
}
last_reason() { jq -r 'select(.event == "request") | .reason' "$H/gateway.jsonl" | tail -1; }

# ---- the API: the placeholder swapped, the real token refused
is "the project by its encoded path, PRIVATE-TOKEN placeholder" "$(gw GET /projects/acme%2Fother "$W/ph.hdr")" 200
is "  the forge answered for the run's project" "$(jq -r .path_with_namespace "$W/body")" acme/other
is "the issue by the project's id, Bearer placeholder" "$(gw GET /projects/43/issues/1 "$W/phb.hdr")" 200
is "the agent's real token in PRIVATE-TOKEN is refused (control: the placeholder above)" "$(gw GET /projects/acme%2Fother "$W/real.hdr")" 403
is "  reason foreign-credential" "$(last_reason)" foreign-credential
is "another project (acme/tools/tally, id 42) is refused" "$(gw GET /projects/42 "$W/ph.hdr")" 403
is "  reason other-project" "$(last_reason)" other-project
is "the agent opening its own MR is refused (the supervisor opens it)" \
  "$(gw POST /projects/43/merge_requests "$W/ph.hdr" '{"source_branch":"'"$BR"'","target_branch":"main","title":"x"}')" 403
is "  reason write-refused" "$(last_reason)" write-refused
is "the forge holds no MR from the agent" "$("${DIRECT[@]}" -H "@$W/admin.hdr" "$API/projects/43/merge_requests" | jq -r length)" 0
is "GraphQL is refused" "$("${GCURL[@]}" -o "$W/body" -w '%{http_code}' -X POST -H "@$W/ph.hdr" \
  -H 'Content-Type: application/json' --data-binary '{"query":"{ currentUser { username } }"}' "$GIT/api/graphql")" 403
is "  reason graphql-refused" "$(last_reason)" graphql-refused

# ---- git: the run branch lands; another branch is refused, lands through the tunnel
printf '#!/bin/sh\necho username=oauth2\necho password=%s\n' "$PH" >"$W/cred-ph"
chmod 700 "$W/cred-ph"
gitgw() {
  GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=http.proxy GIT_CONFIG_VALUE_0="http://127.0.0.1:$GW" \
    GIT_CONFIG_KEY_1=http.sslCAInfo GIT_CONFIG_VALUE_1="$H/ca.pem" \
    GIT_CONFIG_KEY_2=credential.helper GIT_CONFIG_VALUE_2="$W/cred-ph" git "$@"
}
BASIC=$(printf 'oauth2:%s' "$(cat "$W/git.tok")" | base64 -w0)
gittun() {
  GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=http.proxy GIT_CONFIG_VALUE_0="http://127.0.0.1:$TUN" \
    GIT_CONFIG_KEY_1=http.sslCAInfo GIT_CONFIG_VALUE_1="$FCA" \
    GIT_CONFIG_KEY_2=http.extraHeader GIT_CONFIG_VALUE_2="Authorization: Basic $BASIC" git "$@"
}
ref() { git -C "$W/repos/acme/other.git" rev-parse -q --verify "$1" 2>/dev/null; }
check "clone through the gateway with the placeholder" gitgw clone -q "$GIT/acme/other.git" "$W/c"
echo two >"$W/c/b.txt"
git -C "$W/c" add b.txt && git -C "$W/c" commit -qm two
ae_before=$(grep -c 'receive-pack advertisement' "$W/forge.log")
check "push of the run branch through the gateway" gitgw -C "$W/c" push -q origin "HEAD:refs/heads/$BR"
ae_line=$(grep 'receive-pack advertisement' "$W/forge.log" | sed -n "$((ae_before + 1))p")
is "  the gateway asked the advertisement uncompressed (no Accept-Encoding: it reads push-options in it)" \
  "$ae_line" "airlock-gitlab-forge: receive-pack advertisement, Accept-Encoding: (none)"
is "  the forge has the run branch at the pushed commit" "$(ref "refs/heads/$BR")" "$(git -C "$W/c" rev-parse HEAD)"
is "  the forge's hook saw exactly one push option, ci.skip (no pipeline for the agent's branch)" \
  "$(sed -n 1p "$W/hook.log")" "count=1 opt0=ci.skip opt1="
like "  on the run branch's update" "$(tail -1 "$W/hook.log")" "refs/heads/$BR\$"
MAIN=$(ref refs/heads/main)
OUT=$(gitgw -C "$W/c" push -q origin HEAD:refs/heads/main 2>&1) && fail "push to main through the gateway is refused" ||
  ok "push to main through the gateway is refused"
like "  git names the reason" "$OUT" "push-other-branch"
is "  the gateway's decision names it" "$(jq -r 'select(.event == "request" and .status == 200 and (.reason|test("push"))) | .reason' "$H/gateway.jsonl" | tail -1)" push-other-branch
is "  main did not move" "$(ref refs/heads/main)" "$MAIN"
OUT=$(gitgw -C "$W/c" push -q origin HEAD:refs/heads/airlock/999-deadbeef 2>&1) && fail "push to another run's branch is refused" ||
  like "push to another run's branch is refused" "$OUT" "push-other-branch"
ae_before=$(grep -c 'receive-pack advertisement' "$W/forge.log")
check "positive control: the same push to main through the plain tunnel with the real token lands" \
  gittun -C "$W/c" push -q origin HEAD:refs/heads/main
like "  control: git itself asks for the advertisement compressed (the header the gateway drops)" \
  "$(grep 'receive-pack advertisement' "$W/forge.log" | sed -n "$((ae_before + 1))p")" 'Accept-Encoding: .*gzip'
is "  main moved" "$(ref refs/heads/main)" "$(git -C "$W/c" rev-parse HEAD)"
is "  control: the tunnel's push reached the hook with no push option (the option above was the gateway's)" \
  "$(tail -2 "$W/hook.log" | head -1)" "count=0 opt0= opt1="

# ---- a forge that does not advertise push-options cannot be told ci.skip:
# the push is refused (fail closed), the branch does not move
git -C "$W/repos/acme/other.git" config receive.advertisePushOptions false
echo three >"$W/c/c.txt"
git -C "$W/c" add c.txt && git -C "$W/c" commit -qm three
RUNREF=$(ref "refs/heads/$BR")
OUT=$(gitgw -C "$W/c" push -q origin "HEAD:refs/heads/$BR" 2>&1) &&
  fail "the run-branch push to a forge without push-options is refused" ||
  ok "the run-branch push to a forge without push-options is refused"
like "  git names the reason" "$OUT" "push-options-not-advertised"
is "  the gateway's decision names it" "$(last_reason)" push-options-not-advertised
is "  the run branch did not move" "$(ref "refs/heads/$BR")" "$RUNREF"
git -C "$W/repos/acme/other.git" config receive.advertisePushOptions true
check "control: with push-options advertised again the same push lands" gitgw -C "$W/c" push -q origin "HEAD:refs/heads/$BR"
is "  the run branch moved" "$(ref "refs/heads/$BR")" "$(git -C "$W/c" rev-parse HEAD)"
is "  with ci.skip" "$(tail -2 "$W/hook.log" | head -1)" "count=1 opt0=ci.skip opt1="
if grep -qF "$(cat "$W/git.tok")" "$H/gateway.jsonl" "$H/proxy.jsonl" "$W/harness.err"; then
  fail "no decision line or log holds the run's token"
else ok "no decision line or log holds the run's token"; fi
done_testing
