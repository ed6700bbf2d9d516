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
  # above the gateway's own cap of 64, so the cap test below meets the
  # gateway's, not the proxy's (a hand-off counts while it is in flight)
  max_connections: 256
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
  local err rc
  err=$(gitgw -C "$W/c2" push -q origin "$@" 2>&1); rc=$?
  if [ "$rc" -ne 0 ]; then ok "$name: refused through the gateway (git push fails)"; else fail "$name: refused through the gateway (git push fails)"; fi
  is "  reason $reason" "$(last_reason)" "$reason"
  # issue #27: git itself prints why (the gateway's report-status)
  like "  git prints the reason: ! [remote rejected] ... (airlock: $reason: ...)" "$err" "! \\[remote rejected\\] .* \\(airlock: $reason: [^)]*"
  like "  and airlock's sentence on a remote: line (side band 2)" "$err" "remote: airlock: $reason: "
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
err=$(gitgw clone -q "$GIT/acme/loose.git" "$W/loose" 2>&1); rc=$?
if [ "$rc" -ne 0 ]; then ok "clone of acme/loose: refused"; else fail "clone of acme/loose: refused"; fi
is "  reason" "$(last_reason)" other-repository
like "  git prints the gateway's sentence (text/plain answer: remote: airlock: other-repository: ...)" "$err" "remote: airlock: other-repository: this run may reach only its own repository"

# a large push: a pack of several MiB goes chunked (past http.postBuffer)
( cd "$W/c2" || exit 1
  head -c 12000000 /dev/urandom >blob.bin && git add blob.bin && git commit -qm big )
check "a 12 MB push of the run branch (chunked body)" gitgw -C "$W/c2" -c http.postBuffer=65536 push -q -f origin "HEAD:refs/heads/$BR"
is "  the forge has it" "$(ref_sha "refs/heads/$BR")" "$(git -C "$W/c2" rev-parse HEAD)"
up=$(decision '.rule == "git-receive-pack" and .status == 200' | jq -r .bytes_up)
if [ "${up:-0}" -gt 12000000 ]; then ok "  bytes_up counts the pack ($up)"; else fail "  bytes_up counts the pack (${up:-none})"; fi
err=$(gitgw -C "$W/c2" -c http.postBuffer=65536 push origin HEAD:refs/heads/feature-big 2>&1); rc=$?
if [ "$rc" -ne 0 ]; then ok "a 12 MB push to feature-big (chunked, after git's probe): refused"; else fail "a 12 MB push to feature-big (chunked, after git's probe): refused"; fi
like "  git prints the reason for the large push too" "$err" "! \\[remote rejected\\] HEAD -> feature-big \\(airlock: push-other-branch: only refs/heads/$BR may be pushed"
is "  the forge has no feature-big" "$(ref_sha refs/heads/feature-big)" ""
check "clone of the large branch through the gateway" gitgw clone -q -b "$BR" "$GIT/acme/tally.git" "$W/cbig"
is "  the blob arrived intact" "$(sha256sum <"$W/cbig/blob.bin")" "$(sha256sum <"$W/c2/blob.bin")"


# ---- the API ----
is "GET the repository" "$(gw GET /repos/acme/tally "$W/ph.hdr")" 200
is "  full_name" "$(jq -r .full_name "$W/body")" acme/tally
is "GET the ticket (ticket token injected)" "$(gw GET /repos/acme/tally/issues/1 "$W/ph.hdr")" 200
is "  its number" "$(jq -r .number "$W/body")" 1
is "GET the ticket's comments" "$(gw GET /repos/acme/tally/issues/1/comments "$W/ph.hdr")" 200
is "GET the run branch" "$(gw GET "/repos/acme/tally/branches/$BR" "$W/ph.hdr")" 200
is "GET contents" "$(gw GET "/repos/acme/tally/contents/README.md?ref=main" "$W/ph.hdr")" 200
is "owner/repo case-insensitive (GET /repos/ACME/Tally)" "$(gw GET /repos/ACME/Tally "$W/ph.hdr")" 200
printf 'Authorization: Bearer %s\n' "$PH" >"$W/ph-bearer.hdr"
is "the placeholder as a Bearer token" "$(gw GET /repos/acme/tally "$W/ph-bearer.hdr")" 200
# api_refused NAME METHOD PATH REASON [BODY]
api_refused() {
  is "$1: 403 through the gateway" "$(gw "$2" "$3" "$W/ph.hdr" "${5-}")" 403
  is "  reason $4" "$(last_reason)" "$4"
  like "  the answer says why (airlock: RULE: ..., the doc)" "$(jq -r '.message + " " + .documentation_url' "$W/body")" "^airlock: $4: .*docs/gateway.md#refusals"
}
api_refused "the agent opens a PR itself" POST /repos/acme/tally/pulls write-refused \
  "{\"title\":\"x\",\"head\":\"$BR\",\"base\":\"main\"}"
is "  no PR was made" "$(admin /pulls | jq length)" 0
is "  positive control: the real token through the tunnel opens it" \
  "$(tun POST /repos/acme/tally/pulls "$W/git.hdr" "{\"title\":\"x\",\"head\":\"$BR\",\"base\":\"main\"}")" 201
api_refused "a comment on another issue" POST /repos/acme/tally/issues/2/comments other-ticket '{"body":"hi"}'
api_refused "a comment on the ticket (max_comments 0)" POST /repos/acme/tally/issues/1/comments write-refused '{"body":"hi"}'
is "  positive control: the ticket token through the tunnel comments" \
  "$(tun POST /repos/acme/tally/issues/1/comments "$W/ticket.hdr" '{"body":"hi"}')" 201
api_refused "editing the ticket" PATCH /repos/acme/tally/issues/1 write-refused '{"title":"x"}'
api_refused "an approving review" POST /repos/acme/tally/pulls/1/reviews write-refused '{"event":"APPROVE"}'
api_refused "a COMMENT review" POST /repos/acme/tally/pulls/1/reviews write-refused '{"event":"COMMENT"}'
api_refused "a merge" PUT /repos/acme/tally/pulls/1/merge write-refused '{}'
api_refused "branch protection" PUT /repos/acme/tally/branches/main/protection write-refused '{}'
api_refused "another repository" GET /repos/acme/loose other-repository
api_refused "the installation's repositories" GET /installation/repositories no-rule
api_refused "the app" GET /app no-rule
api_refused "minting a token" POST /app/installations/1/access_tokens write-refused '{}'
# GraphQL (gateway/graphql.h): read-only queries of the run's repository
api_refused "GraphQL: viewer" POST /graphql "graphql-refused: top-level-field" '{"query":"{ viewer { login } }"}'
api_refused "GraphQL mutation" POST /graphql "graphql-refused: mutation" '{"query":"mutation { x }"}'
is "  positive control: the mutation reaches the forge through the tunnel" "$(tun POST /graphql "$W/git.hdr" '{"query":"mutation { x }"}')" 200
api_refused "GraphQL: another repository" POST /graphql "graphql-refused: other-repository" '{"query":"{ repository(owner: \"acme\", name: \"loose\") { name } }"}'
is "  positive control: through the tunnel the loose token reads it" "$(tun POST /graphql "$W/loose.hdr" '{"query":"{ repository(owner: \"acme\", name: \"loose\") { name } }"}'; jq -r .data.repository.name "$W/body")" "200loose"
api_refused "GraphQL: another issue" POST /graphql "graphql-refused: other-ticket" '{"query":"{ repository(owner: \"acme\", name: \"tally\") { issue(number: 2) { title } } }"}'
api_refused "GraphQL: an owner's other repositories" POST /graphql "graphql-refused: field" '{"query":"{ repository(owner: \"acme\", name: \"tally\") { owner { ... on Organization { repositories(first: 5) { nodes { name } } } } } }"}'
is "GraphQL: the run's repository and its ticket: 200" "$(gw POST /graphql "$W/ph.hdr" '{"query":"query($o: String!, $n: String!) { repository(owner: $o, name: $n) { nameWithOwner issue(number: 1) { number title } } }","variables":{"o":"acme","n":"tally"}}')" 200
is "  the forge answered (ticket token: the query reads the ticket)" "$(jq -r '.data.repository.nameWithOwner + " " + (.data.repository.issue.number|tostring)' "$W/body") $(last_reason)" "acme/tally 1 api-graphql-ticket"
is "an encoded dot-dot path: 400" "$(gw GET /repos/acme/tally/issues/%2e%2e/2 "$W/ph.hdr")" 400
is "  reason" "$(last_reason)" path-encoded-separator

# gh as airlock sets it up in sealed mode (ticket/ticket_agent.c tk_gh_env):
# GH_HOST the git host, GH_ENTERPRISE_TOKEN the placeholder; gh then asks
# /api/v3/... (GitHub Enterprise's paths), matched as the same rules
if command -v gh >/dev/null 2>&1; then
  ghgw() {
    GH_HOST=forge.test:$P GH_ENTERPRISE_TOKEN=$PH GH_REPO=forge.test:$P/acme/tally \
      GH_CONFIG_DIR=$W/ghconf GH_PROMPT_DISABLED=1 GH_NO_UPDATE_NOTIFIER=1 GH_PAGER=cat \
      SSL_CERT_FILE=$H/ca.pem HTTPS_PROXY=http://127.0.0.1:$GW gh "$@"
  }
  is "gh api repos/acme/tally through the gateway (GHE-style /api/v3/repos/acme/tally)" "$(ghgw api repos/acme/tally --jq .full_name 2>&1)" acme/tally
  like "  matched as api-repo, forwarded as sent" "$(decision '.path == "/api/v3/repos/acme/tally"')" '"rule":"api-repo".*"status":200'
  is "gh api of the ticket (ticket token)" "$(ghgw api repos/acme/tally/issues/1 --jq .number 2>&1)" 1
  out=$(ghgw api repos/acme/loose 2>&1); rc=$?
  like "gh api of another repository: refused, gh prints airlock's sentence" "$rc $(tr '\n' ' ' <<<"$out")" '^1 .*airlock: other-repository: this run may reach only its own repository.*HTTP 403'
  np0=$(admin /pulls | jq length)
  out=$(ghgw api -X POST repos/acme/tally/pulls -f title=x -f head="$BR" -f base=main 2>&1); rc=$?
  like "gh api POST .../pulls: refused, saying the supervisor opens the PR" "$rc $(tr '\n' ' ' <<<"$out")" '^1 .*airlock: write-refused: the agent does not open the pull request.*the supervisor opens the pull request after the agent exits'
  is "  no PR was made by it" "$(admin /pulls | jq length)" "$np0"
  out=$(ghgw issue view 1 --comments 2>&1); rc=$?
  is "gh issue view 1 --comments through the gateway (GraphQL): exit 0" "$rc" 0
  [ $rc -eq 0 ] || diag "$out"
  like "  it prints the ticket's comments (the control's \"hi\")" "$(tr '\n\t' '  ' <<<"$out")" '-- hi --'
  title=$(admin /issues | jq -r '[.[] | select(.repo == "acme/tally" and .number == 1)][0].title')
  is "gh issue view 1 --json title: the ticket's title" "$(ghgw issue view 1 --json title -q .title 2>&1)" "$title"
  prn=$(admin /pulls | jq -r '[.[] | select(.repo == "acme/tally")][0].number')
  out=$(ghgw pr view "$prn" 2>&1); rc=$?
  is "gh pr view $prn through the gateway: exit 0" "$rc" 0
  like "  it prints the PR" "$(tr '\n\t' '  ' <<<"$out")" "number: +$prn "
  is "gh pr view $prn --json headRefName: the run branch" "$(ghgw pr view "$prn" --json headRefName -q .headRefName 2>&1)" "$BR"
  out=$(ghgw issue view 2 2>&1); rc=$?
  like "gh issue view 2 (another issue): refused, gh prints why" "$rc $(tr '\n' ' ' <<<"$out")" '^1 .*airlock: graphql-refused: other-ticket'
  out=$(ghgw api graphql -f query='mutation { createPullRequest(input: {repositoryId: "R", baseRefName: "main", headRefName: "x", title: "x"}) { pullRequest { url } } }' 2>&1); rc=$?
  like "gh api graphql with a mutation: refused, naming who opens the PR" "$rc $(tr '\n' ' ' <<<"$out")" '^1 .*airlock: graphql-refused: mutation: .*the supervisor opens the pull request after the agent exits'
  is "/api/v3 alone is no route" "$(gw GET /api/v3 "$W/ph.hdr")" 403
  is "/API/v3/repos/acme/tally (another case) is no route" "$(gw GET /API/v3/repos/acme/tally "$W/ph.hdr")" 403
  is "  reason" "$(last_reason)" no-rule
else
  skip "gh is not installed (Debian: apt-get install gh)"
fi

# foreign credentials: never forwarded
is "the run's real ticket token (not the placeholder): 403" "$(gw GET /repos/acme/tally/issues/1 "$W/ticket.hdr")" 403
is "  reason" "$(last_reason)" foreign-credential
is "  positive control: the forge accepts that header through the tunnel" "$(tun GET /repos/acme/tally/issues/1 "$W/ticket.hdr")" 200
is "a valid token minted for acme/loose, to acme/loose: 403" "$(gw GET /repos/acme/loose "$W/loose.hdr")" 403
is "  reason" "$(last_reason)" foreign-credential
is "  positive control: through the tunnel the forge serves it" "$(tun GET /repos/acme/loose "$W/loose.hdr")" 200
printf 'Authorization: Bearer ghs_%s\n' "0123456789abcdefghijklmnopqrstuvwxyz" >"$W/fake.hdr"
is "a made-up ghs_ token: 403" "$(gw GET /repos/acme/tally/issues/1 "$W/fake.hdr")" 403
is "  reason" "$(last_reason)" foreign-credential
printf 'Cookie: user_session=%s\n' "$PH" >"$W/cookie.hdr"
is "the placeholder in a Cookie: 403" "$(gw GET /repos/acme/tally "$W/cookie.hdr")" 403
is "  reason" "$(last_reason)" foreign-credential
is "the placeholder in ?access_token=: 403" "$(gw GET "/repos/acme/tally?access_token=$PH" "")" 403
is "  reason" "$(last_reason)" foreign-credential
check_not "  the placeholder is not in the decision log" grep -q "$PH" "$H/gateway.jsonl"
# issue #26: the query spellings the forge's parsers decode to a credential
# name (seen forwarded with the real token, `allow, rule: api-repo`); one
# decoder now reads them for the credential check, the rules and the record
for qs in 'access_token%5B%5D=' 'access_token%5b%5d=' 'access_token%5B0%5D=' 'client_secret%5B%5D=' \
  'x=1;access_token=' 'access.token=' 'access_token%20='; do
  is "?$qs<placeholder>: 403" "$(gw GET "/repos/acme/tally?$qs$PH" "$W/ph.hdr")" 403
  is "  reason" "$(last_reason)" foreign-credential
  is "  positive control: the same query through the plain tunnel reaches the forge (200)" \
    "$(tun GET "/repos/acme/tally?${qs}x" "$W/git.hdr")" 200
done
is "  the record reads the name after ';' (it said \"x=*\")" \
  "$(jq -r 'select(.event == "request") | .query' "$H/gateway.jsonl" | grep -c '^x=\*&access_token=\*$')" 1
is "a parameter the route does not list: 403" "$(gw GET "/repos/acme/tally?per_page=1" "$W/ph.hdr")" 403
is "  reason names it" "$(last_reason)" "query-param-refused: per_page"
like "  and so does the answer (airlock: RULE: ...)" "$(jq -r .message "$W/body")" "^airlock: query-param-refused: per_page: "
is "the run's PR list (head=OWNER:<run branch>): 200" "$(gw GET "/repos/acme/tally/pulls?head=acme:$BR&state=all" "$W/ph.hdr")" 200
is "a second head spelled h%65ad: 403" "$(gw GET "/repos/acme/tally/pulls?head=acme:$BR&h%65ad=acme:main" "$W/ph.hdr")" 403
is "  reason" "$(last_reason)" "query-param-duplicate: head"
is "  positive control: through the tunnel the forge answers that query (200)" \
  "$(tun GET "/repos/acme/tally/pulls?head=acme:$BR&h%65ad=acme:main" "$W/git.hdr")" 200
is "an invalid escape in a value: 403" "$(gw GET "/repos/acme/tally/contents/README.md?ref=m%zzain" "$W/ph.hdr")" 403
is "  reason" "$(last_reason)" "query-bad-escape: ref"
is "the forge gets the decoded query re-encoded (R%65f=main read as ref=main): 200" \
  "$(gw GET "/repos/acme/tally/contents/README.md?R%65f=main" "$W/ph.hdr")" 200
is "  the record" "$(decision '.rule == "api-contents"' | jq -r .query)" "ref=*"

code=$("${GCURL[@]}" -o "$W/body" -w '%{http_code}' -u "x:$(cat "$W/loose.tok")" "$API/repos/acme/tally")
is "a foreign token in URL userinfo (sent as Basic): 403" "$code" 403
is "  reason" "$(last_reason)" foreign-credential
code=$("${GCURL[@]}" -o "$W/body" -w '%{http_code}' -u "x-access-token:$PH" "$API/repos/acme/tally")
is "the placeholder in URL userinfo is what git's helper sends: allowed" "$code" 200
is "no credential at all: 401, never forwarded" "$(gw GET /repos/acme/tally "")" 401
like "  with a Basic challenge" "$("${GCURL[@]}" -D - -o /dev/null "$API/repos/acme/tally")" 'WWW-Authenticate: Basic realm="airlock"'
is "  reason" "$(last_reason)" credential-missing
for t in git ticket loose; do
  check_not "  no $t token in the gateway's log" grep -qF "$(cat "$W/$t.tok")" "$H/gateway.jsonl"
  check_not "  no $t token in the proxy's log" grep -qF "$(cat "$W/$t.tok")" "$H/proxy.jsonl"
done
like "the proxy logged the hand-offs" "$(jq -r 'select(.event == "handoff") | .reason' "$H/proxy.jsonl" | sort -u)" '^gateway$'

# ---- HTTP framing (raw bytes through gwclient.py) ----
RAW=(python3 "$SRC/tests/integration/gwclient.py" "$GW" api.forge.test "$P" "$H/ca.pem")
AUTH="Authorization: token $PH"
req() { printf '%s %s HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\n%s\r\n' "$1" "$2" "$P" "$AUTH" "${3-}"; }
out=$( { req GET /repos/acme/tally; req POST /repos/acme/tally/issues/2/comments 'Content-Length: 2
'; printf '{}'; } | sed 's/^Content-Length: 2$/Content-Length: 2\r/' | "${RAW[@]}")
like "pipelined: an allowed GET then a refused POST" "$(echo "$out" | grep STATUS | tr '\n' ' ')" '^STATUS 200 - STATUS 403 other-ticket'
big=$(python3 -c 'print("X-Big: " + "a"*9000)')
out=$(req GET /repos/acme/tally "$big" | "${RAW[@]}")
like "a head over the size cap: 431" "$out" 'STATUS 431 head-too-large'
out=$(python3 -c '
import sys
h = "".join("X-%d: a\r\n" % i for i in range(10000))
sys.stdout.write("GET /repos/acme/tally HTTP/1.1\r\nHost: a\r\n" + h + "\r\n")' | "${RAW[@]}")
like "10,000 headers: refused" "$out" 'STATUS 431'
out=$(python3 -c '
import sys
sys.stdout.write("GET /repos/acme/tally HTTP/1.1\r\nHost: a\r\nX-L: " + "b"*65536 + "\r\n\r\n")' | "${RAW[@]}")
like "a 64 KiB header line: refused" "$out" 'STATUS 431'
chunked_post() { # BODY: a chunked POST to git-upload-pack with that raw body
  printf 'POST /acme/tally.git/git-upload-pack HTTP/1.1\r\nHost: forge.test:%s\r\n%s\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-git-upload-pack-request\r\n\r\n%b' "$P" "$AUTH" "$1" |
    python3 "$SRC/tests/integration/gwclient.py" "$GW" forge.test "$P" "$H/ca.pem"
}
for c in 'ffffffffffffffff\r\n' '-1\r\n' 'zz\r\n'; do
  out=$(chunked_post "$c")
  like "chunk size $c: the connection is cut, nothing answered by the forge" "$out" 'CLOSED'
done
is "  reasons logged" "$(jq -r 'select(.rule == "git-upload-pack" and .status == null) | .reason' "$H/gateway.jsonl" | sort | tr '\n' ' ')" \
  'chunk-size-bad chunk-size-bad chunk-size-overflow '
out=$(chunked_post "1;$(head -c 65536 /dev/zero | tr '\0' x)\r\n")
like "a 64 KiB chunk extension: cut" "$out" CLOSED
is "  reason" "$(last_reason)" chunk-ext-too-long
out=$(chunked_post '5\r\nhelloX')
like "a chunk without its CRLF: cut" "$out" CLOSED
is "  reason" "$(last_reason)" chunk-missing-crlf
out=$(printf 'GET /repos/acme/tally HTTP/1.0\r\nHost: api.forge.test:%s\r\n%s\r\nConnection: keep-alive\r\n\r\nGET /repos/acme/tally HTTP/1.0\r\nHost: api.forge.test:%s\r\n%s\r\n\r\n' "$P" "$AUTH" "$P" "$AUTH" | "${RAW[@]}")
like "HTTP/1.0 with keep-alive: two answers, then closed" "$(echo "$out" | tr '\n' ' ')" 'STATUS 200 - STATUS 200 - CLOSED'
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\nConnection: close\r\n\r\n' "$P" "$AUTH" | "${RAW[@]}")
like "Connection: close after a 200: closed" "$(echo "$out" | tr '\n' ' ')" 'STATUS 200 - CLOSED'
out=$(req GET /repos/acme/tally | "${RAW[@]}" --half-close)
like "a client that half-closes after the head still gets its answer" "$(echo "$out" | tr '\n' ' ')" 'STATUS 200'
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\n\r\n' "$P" "$AUTH" | "${RAW[@]}" --alpn h2)
like "ALPN offering only h2: refused, never tunnelled" "$out" 'TLS-FAILED'
like "  reason" "$(jq -r 'select(.event == "tls") | .reason' "$H/gateway.jsonl" | tail -1)" '^alpn-no-http1$'
out=$(req GET /repos/acme/tally | "${RAW[@]}" --alpn h2,http/1.1)
like "ALPN h2 + http/1.1: downgraded to http/1.1" "$(echo "$out" | tr '\n' ' ')" 'ALPN http/1.1 STATUS 200'
out=$(req GET /repos/acme/tally | "${RAW[@]}" --sni forge.test)
like "SNI other than the CONNECT host: refused" "$out" 'TLS-FAILED'
is "  reason" "$(jq -r 'select(.event == "tls") | .reason' "$H/gateway.jsonl" | tail -1)" sni-mismatch
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: forge.test:%s\r\n%s\r\n\r\n' "$P" "$AUTH" | "${RAW[@]}")
like "a Host other than the CONNECT host: 400" "$out" 'STATUS 400 host-mismatch'
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx' "$P" "$AUTH" | "${RAW[@]}")
like "duplicate Content-Length: 400" "$out" 'STATUS 400 duplicate-content-length'
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n' "$P" "$AUTH" | "${RAW[@]}")
like "Content-Length with Transfer-Encoding: 400" "$out" 'STATUS 400 cl-and-te'
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\nX: a\r\n b\r\n\r\n' "$P" "$AUTH" | "${RAW[@]}")
like "obs-fold: 400" "$out" 'STATUS 400 obs-fold'
out=$(printf 'GET https://api.forge.test/repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\n\r\n' "$P" "$AUTH" | "${RAW[@]}")
like "an absolute-form target: 400" "$out" 'STATUS 400 target-not-origin-form'

out=$(printf 'POST /acme/tally.git/git-receive-pack HTTP/1.1\r\nHost: forge.test:%s\r\n%s\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n0000' "$P" "$AUTH" |
  python3 "$SRC/tests/integration/gwclient.py" "$GW" forge.test "$P" "$H/ca.pem")
like "a push body with a Content-Encoding the gateway does not read: 415" "$out" 'STATUS 415 content-encoding-refused'
out=$(printf 'GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%s\r\n%s\r\nContent-Length: 3\r\n\r\nabc' "$P" "$AUTH" | "${RAW[@]}")
like "a GET with a body: 400" "$out" 'STATUS 400 body-not-allowed'
out=$(printf 'POST /acme/tally.git/git-upload-pack HTTP/1.1\r\nHost: forge.test:%s\r\n%s\r\n\r\n' "$P" "$AUTH" |
  python3 "$SRC/tests/integration/gwclient.py" "$GW" forge.test "$P" "$H/ca.pem")
like "a POST without framing: 411" "$out" 'STATUS 411 length-required'

# Expect: 100-continue (entry 25): an allowed push gets 100 from the gateway,
# a refused one its 403 before any body byte is read
printf '%04x%s %s refs/heads/feature-z\0report-status\n0000' $((4 + 40 + 1 + 40 + 1 + 20 + 15)) \
  0000000000000000000000000000000000000000 "$(git -C "$W/c2" rev-parse HEAD)" >"$W/rp-refused"
out=$(printf 'POST /acme/tally.git/git-receive-pack HTTP/1.1\r\nHost: forge.test:%s\r\n%s\r\nContent-Type: application/x-git-receive-pack-request\r\nContent-Length: %s\r\nExpect: 100-continue\r\n\r\n' "$P" "$AUTH" "$(stat -c %s "$W/rp-refused")" |
  python3 "$SRC/tests/integration/gwclient.py" "$GW" forge.test "$P" "$H/ca.pem" --wait-100 --body-after "$W/rp-refused")
like "Expect on a push: 100 Continue once the head is allowed" "$(echo "$out" | tr '\n' ' ')" 'STATUS 100 - '
like "  then the refused command list gets its report-status (200, X-Airlock-Deny)" "$(echo "$out" | tr '\n' ' ')" 'STATUS 200 push-other-branch'
out=$(printf 'POST /acme/loose.git/git-receive-pack HTTP/1.1\r\nHost: forge.test:%s\r\n%s\r\nContent-Length: 99999\r\nExpect: 100-continue\r\n\r\n' "$P" "$AUTH" |
  python3 "$SRC/tests/integration/gwclient.py" "$GW" forge.test "$P" "$H/ca.pem")
like "Expect on a refused push: 403 without 100, before any body" "$(echo "$out" | tr '\n' ' ')" '^ALPN [^ ]+ STATUS 403 other-repository'

# ---- the run CA ----
openssl x509 -in "$H/ca.pem" -noout -text >"$W/ca.txt"
like "the run CA is name-constrained to the forge hosts" "$(tr -d '\n' <"$W/ca.txt")" 'Name Constraints: critical *Permitted: *DNS:api.forge.test *DNS:forge.test'
like "  EC P-256" "$(cat "$W/ca.txt")" 'NIST CURVE: P-256|prime256v1'
like "  a CA for certificate signing" "$(tr -d '\n' <"$W/ca.txt")" 'Key Usage: critical *Certificate Sign'
check_not "  no private key was handed out" grep -q PRIVATE "$H/ca.pem"
echo | openssl s_client -proxy "127.0.0.1:$GW" -connect "forge.test:$P" -servername forge.test \
  -CAfile "$H/ca.pem" -verify_hostname forge.test -verify_return_error >"$W/sc.out" 2>&1
like "the served leaf verifies under the run CA for forge.test (openssl s_client)" "$(cat "$W/sc.out")" 'Verify return code: 0'
echo | openssl s_client -proxy "127.0.0.1:$GW" -connect "forge.test:$P" -servername forge.test \
  -CAfile "$H/ca.pem" -verify_hostname github.com -verify_return_error >"$W/sc2.out" 2>&1
like "  and not for another name" "$(cat "$W/sc2.out")" 'Verify return code: 62|hostname mismatch'

# ---- upstream trust: a gateway whose forge.ca_file did not sign the forge's certificate ----
sed "s|ca_file: .*|ca_file: $H/ca.pem|" "$W/policy.yaml" >"$W/policy-badca.yaml"
H2=$W/h2
mkdir -p "$H2"
cat "$W/git.tok" "$W/ticket.tok" | "$HARNESS" -p "$W/policy-badca.yaml" --repo acme/tally --ticket 1 \
  --branch "$BR" --run-id "$RUN-b" --dir "$H2" 2>"$W/harness2.err" &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$H2/ports.json" ] && break; sleep 0.05; done
printf 'Authorization: token %s\n' "$(cat "$H2/placeholder")" >"$W/ph2.hdr"
code=$(curl -sS --max-time 30 --proxy "http://127.0.0.1:$(jq -r .gateway "$H2/ports.json")" \
  --cacert "$H2/ca.pem" -o /dev/null -w '%{http_code}' -H "@$W/ph2.hdr" "$API/repos/acme/tally" 2>/dev/null)
is "the forge's certificate does not verify under that trust: 502" "$code" 502
like "  reason upstream-tls, with the verifier's error" "$(jq -c 'select(.event == "request")' "$H2/gateway.jsonl" | tail -1)" '"reason":"upstream-tls".*"detail":"[^"]*(issuer|verify)'

# the connection cap (64): 70 tunnels that never start TLS; the ones past the cap are closed
# The tunnels stay open until the gateway has logged its refusals (or 60 s
# passed): a loaded machine may take a while to hand 70 of them over.
python3 - "$GW" "$P" "$H/gateway.jsonl" >"$W/flood.out" <<'PY'
import json, socket, sys, time
gw, port, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = []
for _ in range(70):
    s = socket.create_connection(("127.0.0.1", gw), timeout=10)
    s.sendall(b"CONNECT api.forge.test:%d HTTP/1.1\r\nHost: x\r\n\r\n" % port)
    socks.append(s)
ok = 0
for s in socks:
    if s.recv(64).startswith(b"HTTP/1.1 200"):
        ok += 1
def refused():
    n = 0
    with open(log) as f:
        for line in f:
            try:
                n += json.loads(line).get("reason") == "conn-limit"
            except ValueError:
                pass
    return n
deadline = time.monotonic() + 60
while refused() < 6 and time.monotonic() < deadline:
    time.sleep(0.2)
print(ok)
for s in socks:
    s.close()
PY
is "70 idle tunnels: all accepted by the proxy" "$(cat "$W/flood.out")" 70
n=$(jq -r 'select(.event == "tls" and .reason == "conn-limit") | .reason' "$H/gateway.jsonl" | wc -l)
if [ "$n" -ge 6 ]; then ok "  the gateway refused those past its cap of 64 ($n conn-limit)"; else
  fail "  the gateway refused those past its cap of 64 ($n conn-limit)"
  diag "the gateway's connection lines: $(jq -r 'select(.event == "tls") | .reason' "$H/gateway.jsonl" | sort | uniq -c | tr '\n' ' ')"
  diag "its last lines: $(tail -3 "$H/gateway.jsonl")"
fi
for _ in $(seq 1 100); do
  [ "$(gw GET /repos/acme/tally "$W/ph.hdr")" = 200 ] && break; sleep 0.1
done
is "  and serves again once they are gone" "$(gw GET /repos/acme/tally "$W/ph.hdr")" 200

# a dead gateway: the proxy refuses the hand-off, nothing is tunnelled raw
G2=$(jq -r .gateway_pid "$H2/ports.json")
kill -9 "$G2"
for _ in $(seq 1 100); do kill -0 "$G2" 2>/dev/null || break; sleep 0.05; done
code=$(curl -sS --max-time 20 --proxy "http://127.0.0.1:$(jq -r .gateway "$H2/ports.json")" \
  --cacert "$FCA" -o /dev/null -w '%{http_code}' -H "@$W/ticket.hdr" "$API/repos/acme/tally/issues/1" 2>/dev/null)
is "with the gateway gone, a forge CONNECT gets no answer from the forge" "$code" 000
is "  the proxy logged gateway-unavailable" \
  "$(jq -r 'select(.decision == "deny") | .reason' "$H2/proxy.jsonl" | tail -1)" gateway-unavailable

# plain HTTP (absolute-form) to a forge host: refused by the proxy, whatever the allowlist says
sed "s|{host: forge.test, port: $P, tls: true}|{host: forge.test, port: $P, tls: false}|" "$W/policy.yaml" >"$W/policy-plain.yaml"
H3=$W/h3
mkdir -p "$H3"
cat "$W/git.tok" "$W/ticket.tok" | "$HARNESS" -p "$W/policy-plain.yaml" --repo acme/tally --ticket 1 \
  --branch "$BR" --run-id "$RUN-c" --dir "$H3" 2>"$W/harness3.err" &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$H3/ports.json" ] && break; sleep 0.05; done
code=$(curl -sS --max-time 20 --proxy "http://127.0.0.1:$(jq -r .gateway "$H3/ports.json")" -o /dev/null \
  -w '%{http_code}' "http://forge.test:$P/acme/tally.git/info/refs?service=git-upload-pack" 2>/dev/null)
is "plain HTTP to a gateway host (a tls: false entry): 403 from the proxy" "$code" 403
is "  reason gateway-plain-http" "$(jq -r 'select(.decision == "deny") | .reason' "$H3/proxy.jsonl" | tail -1)" gateway-plain-http
curl -sS --max-time 20 --proxy "http://127.0.0.1:$(jq -r .tunnel "$H3/ports.json")" -o /dev/null \
  "http://forge.test:$P/acme/tally.git/info/refs?service=git-upload-pack" 2>/dev/null
is "  positive control: without the hand-off the proxy lets it through" \
  "$(jq -r 'select(.event == "open") | .decision' "$H3/proxy.jsonl" | tail -1)" allow

# ---- the egress budget counts what the gateway forwards ----
# One counter for the run, shared by the proxy and the gateway: a push
# through the gateway that would pass network.egress_budget is cut there
# (egress-budget in the gateway's record), and then the proxy refuses new
# CONNECTs of that run, since the gateway's bytes are in its budget. Controls:
# the same push through the budget-less gateway above lands; the tunnel
# listener of the same harness (its own counter) still lets a request through.
sed 's/^network:/network:\n  egress_budget: 64KiB/' "$W/policy.yaml" >"$W/policy-budget.yaml"
H4=$W/h4
mkdir -p "$H4"
cat "$W/git.tok" "$W/ticket.tok" | "$HARNESS" -p "$W/policy-budget.yaml" --repo acme/tally --ticket 1 \
  --branch "$BR" --run-id "$RUN-b" --dir "$H4" 2>"$W/harness4.err" &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$H4/ports.json" ] && break; sleep 0.05; done
GW4=$(jq -r .gateway "$H4/ports.json") TUN4=$(jq -r .tunnel "$H4/ports.json")
printf '#!/bin/sh\necho username=x-access-token\necho password=%s\n' "$(cat "$H4/placeholder")" >"$W/cred-ph4"
chmod 700 "$W/cred-ph4"
gitgw4() {
  GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=http.proxy GIT_CONFIG_VALUE_0="http://127.0.0.1:$GW4" \
    GIT_CONFIG_KEY_1=http.sslCAInfo GIT_CONFIG_VALUE_1="$H4/ca.pem" \
    GIT_CONFIG_KEY_2=credential.helper GIT_CONFIG_VALUE_2="$W/cred-ph4" git "$@"
}
check "budget: a clone through the gateway fits in 64 KiB (what comes down is not egress)" \
  gitgw4 clone -q "$GIT/acme/tally.git" "$W/c4"
head -c 262144 /dev/urandom >"$W/c4/big.bin"
git -C "$W/c4" checkout -q -b big
git -C "$W/c4" add big.bin && git -C "$W/c4" commit -q -m "256 KiB of noise"
BIG=$(git -C "$W/c4" rev-parse HEAD)
check_not "budget: a 256 KiB push through the gateway is cut" gitgw4 -C "$W/c4" push -q -f origin "HEAD:refs/heads/$BR"
is "  the gateway's record says egress-budget, a deny" \
  "$(jq -r 'select(.event == "request" and (.path // "" | endswith("git-receive-pack"))) | .decision + " " + .reason' "$H4/gateway.jsonl" | tail -1)" "deny egress-budget"
check_not "  the forge's run branch is not at that commit" test "$(ref_sha "refs/heads/$BR")" = "$BIG"
code=$(curl -sS --max-time 20 --proxy "http://127.0.0.1:$GW4" --cacert "$H4/ca.pem" -H "@$W/ph.hdr" \
  -o /dev/null -w '%{http_connect}' "$API/repos/acme/tally" 2>/dev/null)
is "budget: then the proxy refuses the run's next CONNECT (the gateway's bytes are in its budget)" "$code" 403
is "  the proxy's reason: egress-budget" "$(jq -r 'select(.decision == "deny") | .reason' "$H4/proxy.jsonl" | tail -1)" egress-budget
is "  control: the proxy handed that run's forge CONNECTs to the gateway (the push never went through its own relay)" \
  "$(jq -s '[.[] | select(.event == "handoff")] | length > 0' "$H4/proxy.jsonl")" true
is "  control: the tunnel listener (its own counter) still lets a request through" \
  "$(curl -sS --max-time 20 --proxy "http://127.0.0.1:$TUN4" --cacert "$FCA" -H "@$W/git.hdr" -o /dev/null -w '%{http_code}' "$API/repos/acme/tally")" 200
check "  control: the same push through the budget-less gateway lands" gitgw -C "$W/c4" push -q -f origin "HEAD:refs/heads/$BR"
is "  the forge's run branch is at that commit now" "$(ref_sha "refs/heads/$BR")" "$BIG"

# ---- the gateway process ----
st=$(cat "/proc/$GPID/status" 2>/dev/null)
like "the gateway runs as nobody" "$(echo "$st" | grep '^Uid:')" $'Uid:\t65534'
like "  with no capabilities" "$(echo "$st" | grep '^CapEff:')" '0000000000000000'
like "  with seccomp on" "$(echo "$st" | grep '^Seccomp:')" '2'
check_not "  and no token in its environment or command line" grep -qF "$(cat "$W/git.tok")" "/proc/$GPID/environ" "/proc/$GPID/cmdline"
kill "$HPID"
for _ in $(seq 1 100); do kill -0 "$GPID" 2>/dev/null || break; sleep 0.05; done
check_not "the gateway is gone after the supervisor's stop" kill -0 "$GPID"
done_testing
