#!/usr/bin/env bash
# The running gateway on the ticket host (issue #31 item 3, 'Done when' 2):
# a policy whose ticket: is Jira or Linear makes the gateway terminate the
# ticket host too (the Jira and Linear doubles of tests/ticket-doubles over
# TLS on loopback), decide each request by rules_tickets.h and put the
# vendor credential upstream in the vendor's form, while the agent holds
# only the placeholder. For each vendor: the one ticket's read and one
# comment land (controls); refused with the rule's reason are a comment on
# another ticket, an edit, a transition (Jira) / a mutation other than
# commentCreate (Linear), commentCreate on another issue, a second comment
# (the budget) and the real vendor credential sent by the agent. Each
# refusal has its control: the same request sent straight to the double
# with the real credential lands there (the protection off). The double's
# request log shows no refused request reached it. A Jira policy without
# ticket.user (OAuth 2.0) gets its token upstream as Bearer.
. "$(dirname "$0")/lib.sh"
HARNESS=${GATEWAY_HARNESS:?}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "${TICKET_DOUBLE:-}" ] || { skip "ticket-double was not built"; done_testing; exit 0; }
for t in curl jq openssl python3; do command -v $t >/dev/null || { skip "$t not installed"; done_testing; exit 0; }; done
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

umask 077
W=$T_TMP
chmod 700 "$W"
"$SRC/scripts/make-test-ca.sh" "$W/tls" jira.test linear.test >/dev/null 2>&1 ||
  { fail "the ticket hosts' test CA"; done_testing; exit 1; }
TCA=$W/tls/ca.crt

# vendor KIND HOST KEY SECRET USER: the double, the policy, the harness;
# sets DPID, DPORT, GW, PH, H (the harness's dir), D (the double's files)
vendor() {
  local kind=$1 host=$2 key=$3 secret=$4 user=$5
  D=$W/$kind-$RANDOM
  mkdir -p "$D"
  printf '%s\n' "$secret" >"$D/token"
  local uargs=()
  [ -n "$user" ] && uargs=(--user "$user")
  "$TICKET_DOUBLE" --kind "$kind" --key "$key" --title "Fix the tally for $key" --body "body of $key" \
    "${uargs[@]}" --token-file "$D/token" --tls-dir "$W/tls" --ports-file "$D/ports" \
    --state "$D/state" >"$D/double.log" 2>&1 &
  DPID=$!
  on_exit "kill $DPID"
  for _ in $(seq 1 200); do [ -s "$D/ports" ] && break; sleep 0.05; done
  DPORT=$(jq -r .port "$D/ports" 2>/dev/null)
  {
    echo "version: 1"
    echo "network:"
    echo "  allow:"
    echo "    - {host: $host, port: $DPORT, tls: true}"
    echo "  pin:"
    echo "    - {host: $host, address: 127.0.0.1}"
    echo "forge:"
    echo "  api_url: https://api.forge.test"
    echo "  git_url: https://forge.test"
    echo "ticket:"
    echo "  kind: $kind"
    echo "  url: https://$host:$DPORT"
    if [ "$kind" = jira ]; then echo "  project: PROJ"; [ -n "$user" ] && echo "  user: $user"; else echo "  team: ENG"; fi
    echo "  ca_file: $TCA"
    echo "  token_file: $D/token"
  } >"$D/policy.yaml"
  H=$D/h
  mkdir -p "$H"
  printf 'git-tok-%s\nticket-tok-%s\n%s\n' "$$" "$$" "$secret" |
    "$HARNESS" -p "$D/policy.yaml" --repo acme/tally --ticket 0 --branch "airlock/$key-t$$" \
      --max-comments 1 --ticket-key "$key" --run-id "t$kind$$" --dir "$H" 2>"$D/harness.err" &
  on_exit "kill $!"
  for _ in $(seq 1 200); do [ -s "$H/ports.json" ] && break; sleep 0.05; done
  GW=$(jq -r .gateway "$H/ports.json" 2>/dev/null)
  PH=$(cat "$H/placeholder" 2>/dev/null)
}
last_reason() { jq -r 'select(.event == "request") | .reason' "$H/gateway.jsonl" | tail -1; }
last_rule() { jq -r 'select(.event == "request") | .rule' "$H/gateway.jsonl" | tail -1; }
# gw UA METHOD PATH [BODY] [AUTH]: through the proxy and the gateway, as the
# agent (the placeholder unless AUTH names another Authorization value)
gw() {
  local args=(curl -sS --max-time 30 --proxy "http://127.0.0.1:$GW" --cacert "$H/ca.pem" -A "$1"
    -o "$W/body" -w '%{http_code}' -X "$2" -H "Authorization: ${5:-Bearer $PH}")
  [ -n "${4-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  "${args[@]}" "$URL$3"
}
# direct UA METHOD PATH [BODY]: straight to the double with the real
# credential in the vendor's form (the protection off)
direct() {
  local args=(curl -sS --max-time 30 --cacert "$TCA" --resolve "$HOST:$DPORT:127.0.0.1" -A "$1"
    -o "$W/body" -w '%{http_code}' -X "$2" -H "Authorization: $REAL")
  [ -n "${4-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  "${args[@]}" "$URL$3"
}
state() { jq -r "$1" "$D/state"; }
reached() { jq -r --arg ua "$1" '[.requests[] | select(endswith(" " + $ua))] | length' "$D/state"; }
stop_double() { kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; }

# ==== Jira Cloud REST v3 ====
JSECRET=jira-secret-$RANDOM$RANDOM-$$
HOST=jira.test
vendor jira jira.test PROJ-7 "$JSECRET" bot@acme.example
[ -n "$GW" ] && [ "$GW" != null ] && [ -n "$PH" ] ||
  { fail "jira: proxy and gateway start"; sed 's/^/#   /' "$D/harness.err"; done_testing; exit 1; }
ok "jira: proxy and gateway start with the ticket host"
URL=https://jira.test:$DPORT
REAL="Basic $(printf 'bot@acme.example:%s' "$JSECRET" | base64 -w0)"
ADF='{"body":{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"MSG"}]}]}}'
is "jira: the run CA names the ticket host (its leaf verifies)" \
  "$(gw j-read GET "/rest/api/3/issue/PROJ-7?fields=summary,description,project")" 200
is "  the double answered for the ticket (the vendor credential went upstream)" "$(jq -r .key "$W/body")" PROJ-7
is "  rule jira-issue" "$(last_rule)" jira-issue
is "jira: the ticket's comments" "$(gw j-comments GET /rest/api/3/issue/PROJ-7/comment)" 200
is "jira: one comment on the ticket lands" "$(gw j-comment POST /rest/api/3/issue/PROJ-7/comment "${ADF/MSG/hello from the agent}")" 201
is "  rule jira-comment-create" "$(last_rule)" jira-comment-create
like "  its decision says what the rewrite changed" "$(jq -r 'select(.rule == "jira-comment-create") | .detail' "$H/gateway.jsonl")" "^rewritten: "
is "jira: a second comment is refused (max_comments 1)" "$(gw j-comment2 POST /rest/api/3/issue/PROJ-7/comment "${ADF/MSG/again}")" 403
is "  reason comment-budget" "$(last_reason)" comment-budget
is "jira: a comment on another ticket is refused" "$(gw j-other POST /rest/api/3/issue/PROJ-8/comment "${ADF/MSG/elsewhere}")" 403
is "  reason other-ticket" "$(last_reason)" other-ticket
is "jira: reading another ticket is refused" "$(gw j-other-read GET /rest/api/3/issue/PROJ-8)" 403
is "  reason other-ticket" "$(last_reason)" other-ticket
is "jira: an edit of the ticket (PUT issue) is refused" "$(gw j-edit PUT /rest/api/3/issue/PROJ-7 '{"fields":{"summary":"owned"}}')" 403
is "  reason write-refused" "$(last_reason)" write-refused
is "jira: a transition (POST transitions) is refused" "$(gw j-trans POST /rest/api/3/issue/PROJ-7/transitions '{"transition":{"id":"31"}}')" 403
is "  reason write-refused" "$(last_reason)" write-refused
is "jira: the real vendor credential sent by the agent is refused" "$(gw j-foreign GET /rest/api/3/issue/PROJ-7 "" "$REAL")" 403
is "  reason foreign-credential" "$(last_reason)" foreign-credential
# Get issue without fields= returns every field, and issuelinks, subtasks
# and parent are other issues (keys, summaries, statuses); updateHistory is
# a write (the bot's recently-viewed list)
is "jira: reading the ticket without fields= (every field) is refused" "$(gw j-allfields GET /rest/api/3/issue/PROJ-7)" 403
is "  reason query-fields-required: fields" "$(last_reason)" "query-fields-required: fields"
is "jira: fields=issuelinks (other issues' summaries) is refused" "$(gw j-links GET "/rest/api/3/issue/PROJ-7?fields=summary,issuelinks")" 403
is "  reason query-value-refused: fields" "$(last_reason)" "query-value-refused: fields"
is "jira: updateHistory=true (a write) is refused" "$(gw j-history GET "/rest/api/3/issue/PROJ-7?fields=summary&updateHistory=true")" 403
is "  reason query-param-refused: updatehistory" "$(last_reason)" "query-param-refused: updatehistory"
# controls: the same requests straight to the double, with the real credential
is "control: straight to the double, the comment on another ticket lands" "$(direct c-other POST /rest/api/3/issue/PROJ-8/comment "${ADF/MSG/elsewhere}")" 201
is "control: straight to the double, the edit lands" "$(direct c-edit PUT /rest/api/3/issue/PROJ-7 '{"fields":{"summary":"owned"}}')" 204
is "control: straight to the double, the transition lands" "$(direct c-trans POST /rest/api/3/issue/PROJ-7/transitions '{"transition":{"id":"31"}}')" 204
is "control: straight to the double, the real credential reads the ticket" "$(direct c-foreign GET /rest/api/3/issue/PROJ-7)" 200
is "control: straight to the double, a second comment lands" "$(direct c-comment2 POST /rest/api/3/issue/PROJ-7/comment "${ADF/MSG/again}")" 201
is "control: straight to the double, the read of every field lands" "$(direct c-allfields GET /rest/api/3/issue/PROJ-7)" 200
is "control: straight to the double, fields=issuelinks lands" "$(direct c-links GET "/rest/api/3/issue/PROJ-7?fields=summary,issuelinks")" 200
stop_double
is "jira: the double took the edit, the transition and the other comment from the controls only" \
  "$(state '.writes | join(",")')" "comment PROJ-8,edit PROJ-7,transition PROJ-7"
is "jira: its ticket has two comments, the agent's and the control's" "$(state '.comments | length')" 2
like "  the agent's, quoted under the safe-text banner (rewritten by the gateway)" "$(state '.comments[0]')" '^> hello from the agent$'
like "  ... the banner" "$(state '.comments[0]')" '^\*\*airlock:\*\* the text below was written by an automated agent'
is "  the control's, as sent" "$(state '.comments[1]')" again
for ua in j-comment2 j-other j-other-read j-edit j-trans j-foreign j-allfields j-links j-history; do
  is "jira: refused $ua never reached the double" "$(reached $ua)" 0
done
for ua in j-read j-comments j-comment c-other c-edit c-trans c-foreign c-comment2 c-allfields c-links; do
  is "  control: $ua reached it" "$(reached $ua)" 1
done
is "jira: the double refused no credential (the gateway's was the vendor's form)" "$(state .auth_refused)" 0
if grep -qF "$JSECRET" "$H/gateway.jsonl" "$H/proxy.jsonl" "$D/harness.err"; then
  fail "jira: no decision line or log holds the vendor credential"
else ok "jira: no decision line or log holds the vendor credential"; fi
is "jira: every request has its decision line" "$(jq -r 'select(.event == "request") | .decision' "$H/gateway.jsonl" | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')" "allow=3 deny=9 "

# ==== Jira with OAuth 2.0 (no ticket.user): the access token as Bearer ====
OSECRET=jira-oauth-$RANDOM$RANDOM-$$
vendor jira jira.test PROJ-7 "$OSECRET" ""
[ -n "$GW" ] && [ "$GW" != null ] && [ -n "$PH" ] ||
  { fail "jira oauth: proxy and gateway start"; sed 's/^/#   /' "$D/harness.err"; done_testing; exit 1; }
URL=https://jira.test:$DPORT
is "jira oauth: the ticket reads through the gateway (Bearer upstream)" "$(gw o-read GET "/rest/api/3/issue/PROJ-7?fields=summary")" 200
REAL="Basic $(printf 'bot@acme.example:%s' "$OSECRET" | base64 -w0)"
is "  control: the double refuses the Basic form for this token" "$(direct o-basic GET "/rest/api/3/issue/PROJ-7?fields=summary")" 401
stop_double
is "jira oauth: the double refused only the control's request" "$(state .auth_refused)" 1

# ==== Linear GraphQL ====
LSECRET=lin_api_$RANDOM$RANDOM$$
HOST=linear.test
vendor linear linear.test ENG-42 "$LSECRET" ""
[ -n "$GW" ] && [ "$GW" != null ] && [ -n "$PH" ] ||
  { fail "linear: proxy and gateway start"; sed 's/^/#   /' "$D/harness.err"; done_testing; exit 1; }
ok "linear: proxy and gateway start with the ticket host"
URL=https://linear.test:$DPORT
REAL=$LSECRET # Linear: the API key bare
gql() { python3 -c 'import json,sys; print(json.dumps({"query": sys.argv[1], "variables": json.loads(sys.argv[2])}))' "$1" "$2"; }
READ=$(gql 'query($id: String!) { issue(id: $id) { id identifier title } }' '{"id":"ENG-42"}')
CC='mutation($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id url } } }'
COMMENT=$(gql "$CC" '{"input":{"issueId":"ENG-42","body":"hello from the agent"}}')
COMMENT2=$(gql "$CC" '{"input":{"issueId":"ENG-42","body":"again"}}')
OTHER=$(gql "$CC" '{"input":{"issueId":"ENG-43","body":"elsewhere"}}')
UPDATE=$(gql 'mutation($id: String!) { issueUpdate(id: $id, input: {stateId: "done"}) { success } }' '{"id":"ENG-42"}')
is "linear: the ticket's issue(id:) query" "$(gw l-read POST /graphql "$READ")" 200
is "  the double answered for the ticket (the API key went upstream bare)" "$(jq -r .data.issue.identifier "$W/body")" ENG-42
is "  rule linear-issue" "$(last_rule)" linear-issue
is "linear: one commentCreate on the ticket lands" "$(gw l-comment POST /graphql "$COMMENT")" 200
is "  rule linear-comment-create" "$(last_rule)" linear-comment-create
is "  the double says success" "$(jq -r .data.commentCreate.success "$W/body")" true
is "linear: a second comment is refused (max_comments 1)" "$(gw l-comment2 POST /graphql "$COMMENT2")" 403
is "  reason comment-budget" "$(last_reason)" comment-budget
is "linear: commentCreate on another issue is refused" "$(gw l-other POST /graphql "$OTHER")" 403
is "  reason graphql-refused: other-ticket" "$(last_reason)" "graphql-refused: other-ticket"
is "linear: a mutation other than commentCreate (issueUpdate: an edit or a transition) is refused" "$(gw l-update POST /graphql "$UPDATE")" 403
is "  reason graphql-refused: mutation" "$(last_reason)" "graphql-refused: mutation"
is "linear: the real API key sent by the agent is refused" "$(gw l-foreign POST /graphql "$READ" "$REAL")" 403
is "  reason foreign-credential" "$(last_reason)" foreign-credential
is "control: straight to the double, commentCreate on another issue lands" "$(direct c-other POST /graphql "$OTHER")" 200
is "control: straight to the double, issueUpdate lands" "$(direct c-update POST /graphql "$UPDATE")" 200
is "control: straight to the double, the real API key reads the ticket" "$(direct c-foreign POST /graphql "$READ")" 200
is "control: straight to the double, a second comment lands" "$(direct c-comment2 POST /graphql "$COMMENT2")" 200
stop_double
is "linear: the double took the other comment and the edit from the controls only" \
  "$(state '.writes | join(",")')" "comment ENG-43,edit ENG-42"
is "linear: its ticket has two comments, the agent's and the control's" "$(state '.comments | length')" 2
like "  the agent's, quoted under the safe-text banner (rewritten by the gateway)" "$(state '.comments[0]')" '^> hello from the agent$'
like "  ... the banner" "$(state '.comments[0]')" '^\*\*airlock:\*\* the text below was written by an automated agent'
is "  the control's, as sent" "$(state '.comments[1]')" again
for ua in l-comment2 l-other l-update l-foreign; do
  is "linear: refused $ua never reached the double" "$(reached $ua)" 0
done
for ua in l-read l-comment c-other c-update c-foreign c-comment2; do
  is "  control: $ua reached it" "$(reached $ua)" 1
done
is "linear: the double refused no credential" "$(state .auth_refused)" 0
if grep -qF "$LSECRET" "$H/gateway.jsonl" "$H/proxy.jsonl" "$D/harness.err"; then
  fail "linear: no decision line or log holds the vendor credential"
else ok "linear: no decision line or log holds the vendor credential"; fi
done_testing
