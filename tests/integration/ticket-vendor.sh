#!/bin/bash
# A run whose ticket is in Jira or Linear (issue #31): the supervisor reads
# the ticket through the ticket seam and posts its closing comment there,
# against the Jira and Linear doubles (tests/ticket-doubles, over TLS on
# loopback), with the vendor credential from ticket.token_file. Checked: one
# PR on the test forge and one comment on the double (its text the PR's
# link), the record (ticket kind and key, phase "ticket", the comment), and
# the credential in no output, record or agent environment (the probe: the
# agent prints its environment; control: the probe finds the run id there).
# Controls: a wrong credential (refused by the double, 401 named, no token
# minted, no PR), another ticket, a key of another project, a key with a
# GitHub-issue policy, a token file readable by others.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket runs need root (the forge's data dir, the sandbox)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
[ -x "${TICKET_DOUBLE:-}" ] || { skip "ticket-double was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
npulls() { admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
ntokens() { admin /tokens | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("tokens",d) if isinstance(d,dict) else d; print(len(d))'; }
TK=$T_TMP/tk
mkdir -p "$TK"; chmod 700 "$TK"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$TK/tls" >/dev/null 2>&1 || { fail "ticket host CA"; done_testing; exit 1; }
chmod 755 "$TK/tls"; chmod 644 "$TK/tls/ca.crt"
SECRET=tk-secret-$RANDOM$RANDOM-$$
printf '%s\n' "$SECRET" >"$TK/good"; chmod 600 "$TK/good"
printf 'not-the-%s\n' "$SECRET" >"$TK/bad"; chmod 600 "$TK/bad"

# the agent: the push agent, and its whole environment on stdout (the probe)
ENV_AGENT=$FE_DIR/push/env-agent
# (no AIRLOCK_RESULT: the PR's title is then the ticket's, as read by the seam)
{ printf '#!/bin/sh\necho "AGENT-ENV-BEGIN"; env; echo "AGENT-ENV-END"\n'; tail -n +2 "$FE_PUSH_AGENT" | grep -v AIRLOCK_RESULT; } >"$ENV_AGENT"
chmod 755 "$ENV_AGENT"

# double_start NAME KIND KEY: a double accepting $TK/good; sets DPORT, DPID
double_start() {
  local user=()
  [ "$2" = jira ] && user=(--user bot@acme.example)
  "$TICKET_DOUBLE" --kind "$2" --key "$3" --title "Fix the tally for $3" --body "the body of $3" \
    "${user[@]}" --token-file "$TK/good" --tls-dir "$TK/tls" --ports-file "$TK/$1.ports" \
    --state "$TK/$1.state" >"$TK/$1.log" 2>&1 &
  DPID=$!
  on_exit "kill $DPID"
  for _ in $(seq 100); do [ -s "$TK/$1.ports" ] && break; sleep 0.05; done
  DPORT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$TK/$1.ports")
}
double_stop() { kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; }
state() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TK/$1.state" "$2"; }

# policy NAME KIND PORT TOKENFILE: the forge policy and a ticket block
policy() {
  write_policy "$TK/$1.yaml" "$FE_SOCK"
  {
    echo "ticket:"
    echo "  kind: $2"
    echo "  url: https://127.0.0.1:$3"
    if [ "$2" = jira ]; then echo "  project: PROJ"; echo "  user: bot@acme.example"; else echo "  team: ENG"; fi
    echo "  ca_file: $TK/tls/ca.crt"
    echo "  token_file: $4"
  } >>"$TK/$1.yaml"
  chmod 644 "$TK/$1.yaml"
}

# run NAME TARGET: airlock ticket with the env agent; RC, OUT, REC
run() {
  "$AIRLOCK" ticket "$2" -p "$TK/$1.yaml" --agent "$ENV_AGENT" --record "$TK/$1.rec.json" \
    >"$TK/$1.out" 2>&1
  RC=$?
  OUT=$(cat "$TK/$1.out")
  REC=$(cat "$TK/$1.rec.json" 2>/dev/null)
}
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TK/$1.rec.json" "$2"; }

for v in jira:PROJ-7 linear:ENG-42; do
  kind=${v%%:*} key=${v#*:}
  double_start "$kind" "$kind" "$key"
  policy "$kind" "$kind" "$DPORT" "$TK/good"
  p0=$(npulls)
  run "$kind" "acme/tally#$key"
  double_stop
  is "$kind: the run exits 0" "$RC" 0
  [ "$RC" = 0 ] || diag "$(tail -20 "$TK/$kind.out")"
  is "$kind: one PR was opened" "$(( $(npulls) - p0 ))" 1
  is "$kind: one comment on the ticket" "$(state "$kind" 'len(s["comments"])')" 1
  pr=$(rec "$kind" 'r["outputs"]["pull_request"]["url"]')
  like "$kind: the comment links the PR" "$(state "$kind" 's["comments"][0]')" "^Opened .*/pull/[0-9]+ for review"
  like "$kind: ... the PR the record names" "$(state "$kind" 's["comments"][0]')" "${pr##*/pull/} for review"
  is "$kind: the double refused no request for its credential" "$(state "$kind" 's["auth_refused"]')" 0
  check "$kind: the record validates" validate_record "$TK/$kind.rec.json"
  is "$kind: the record's ticket" "$(rec "$kind" 'r["ticket"]["kind"]+" "+r["ticket"]["key"]+" "+str(r["ticket"]["number"])')" "$kind $key ${key#*-}"
  is "$kind: phase ticket ok" "$(rec "$kind" '[p["status"] for p in r["phases"] if p["name"]=="ticket"]')" "['ok']"
  is "$kind: the record's comment" "$(rec "$kind" 'r["outputs"]["ticket_comment"]["system"]+" "+r["outputs"]["ticket_comment"]["key"]')" "$kind $key"
  like "$kind: the PR title is the ticket's, with its key" "$(rec "$kind" 'r["outputs"]["pull_request"]["title"]')" "^Fix the tally for $key \\($key\\)$"
  like "$kind: the run branch carries the key" "$(rec "$kind" 'r["outputs"]["branch"]["name"]')" "^airlock/$key-"
  agent_env=$(printf '%s\n' "$OUT" | sed -n '/AGENT-ENV-BEGIN/,/AGENT-ENV-END/p')
  run_id=$(rec "$kind" 'r["run_id"]')
  like "$kind: control: the probe sees the agent's environment (its run id)" "$agent_env" "AIRLOCK_RUN_ID=$run_id"
  like "$kind: the agent is told the ticket's key" "$agent_env" "AIRLOCK_TICKET=$key"
  like "$kind: ... and its system" "$agent_env" "AIRLOCK_TICKET_SYSTEM=$kind"
  case "$OUT$REC" in *"$SECRET"*) fail "$kind: the vendor credential is in the output or the record" ;;
    *) ok "$kind: the vendor credential is in no output, agent environment or record" ;; esac
done

# --- controls: each stops before any token is minted, no PR ---
double_start ctl jira PROJ-7
policy ctl-bad jira "$DPORT" "$TK/bad"
policy ctl-good jira "$DPORT" "$TK/good"
k0=$(ntokens); p0=$(npulls)
run ctl-bad "acme/tally#PROJ-7"
is "wrong credential: the run exits 1" "$RC" 1
like "wrong credential: the message names the request and the 401" "$OUT" "GET /rest/api/3/issue/PROJ-7.*401"
check "wrong credential: the record validates" validate_record "$TK/ctl-bad.rec.json"
is "wrong credential: the record's phase ticket failed" "$(rec ctl-bad '[p["status"] for p in r["phases"] if p["name"]=="ticket"]')" "['failed']"
case "$OUT$REC" in *tk-secret*) fail "wrong credential: a credential is in the output" ;; *) ok "wrong credential: no credential in the output or record" ;; esac
run ctl-good "acme/tally#PROJ-8"
is "another ticket: the run exits 1" "$RC" 1
like "another ticket: the message names it" "$OUT" "PROJ-8"
run ctl-good "acme/tally#OTHER-1"
is "another project's key: the run exits 1" "$RC" 1
like "another project's key: refused naming the project" "$OUT" "OTHER-1.*PROJ"
cp "$TK/good" "$TK/open"; chmod 644 "$TK/open"
policy ctl-open jira "$DPORT" "$TK/open"
run ctl-open "acme/tally#PROJ-7"
is "a token file others can read: the run exits 1" "$RC" 1
like "a token file others can read: refused with its mode" "$OUT" "ticket.token_file .*mode 0600"
write_policy "$TK/gh.yaml" "$FE_SOCK"
run gh "acme/tally#PROJ-7"
is "a key with a GitHub-issue policy: the run exits 1" "$RC" 1
like "a key with a GitHub-issue policy: refused naming the rule" "$OUT" "needs a policy .ticket:. block"
check "a key with a GitHub-issue policy: the record validates (the key as given)" validate_record "$TK/gh.rec.json"
is "controls: no token was minted" "$(( $(ntokens) - k0 ))" 0
is "controls: no PR was opened" "$(( $(npulls) - p0 ))" 0
double_stop
is "controls: the double refused the wrong credential only (one request)" "$(state ctl 's["auth_refused"]')" 1
is "controls: no comment was posted" "$(state ctl 'len(s["comments"])')" 0

# --- sealed (the default mode): the agent reaches the ticket host through
# the gateway, with the placeholder; the vendor credential stays in the
# gateway. The agent reads its ticket, posts one comment, tries a comment
# on the next ticket (refused: other-ticket) and the real credential if it
# had one (it has not: the probe above). A name for the host, pinned to
# loopback, as a real site's would be (the proxy dials loopback only by
# pin, and a pinned name must be in network.allow: the run's own addition
# of the ticket host to the allow list is not what lets it through here).
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$TK/tls2" jira.test linear.test >/dev/null 2>&1
chmod 755 "$TK/tls2"; chmod 644 "$TK/tls2/ca.crt"
TK_AGENT=$FE_DIR/push/tk-agent
{
  printf '#!/bin/sh\n'
  cat <<'SH'
u=$AIRLOCK_TICKET_URL; a="Authorization: Bearer $AIRLOCK_TICKET_TOKEN"
if [ "$AIRLOCK_TICKET_SYSTEM" = jira ]; then
  c=$(curl -sS -o /dev/null -w '%{http_code}' -H "$a" "$u/rest/api/3/issue/$AIRLOCK_TICKET?fields=summary,description")
  p=$(curl -sS -o /dev/null -w '%{http_code}' -H "$a" -H 'Content-Type: application/json' \
    --data-binary '{"body":{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"agent was here"}]}]}}' \
    "$u/rest/api/3/issue/$AIRLOCK_TICKET/comment")
  o=$(curl -sS -o /dev/null -w '%{http_code}' -H "$a" -H 'Content-Type: application/json' \
    --data-binary '{"body":{"type":"doc","version":1,"content":[]}}' "$u/rest/api/3/issue/PROJ-8/comment")
else
  c=$(curl -sS -o /dev/null -w '%{http_code}' -H "$a" -H 'Content-Type: application/json' \
    --data-binary "{\"query\":\"query(\$id: String!) { issue(id: \$id) { id title } }\",\"variables\":{\"id\":\"$AIRLOCK_TICKET\"}}" "$u/graphql")
  m='mutation($input: CommentCreateInput!) { commentCreate(input: $input) { success } }'
  p=$(curl -sS -o /dev/null -w '%{http_code}' -H "$a" -H 'Content-Type: application/json' \
    --data-binary "{\"query\":\"$m\",\"variables\":{\"input\":{\"issueId\":\"$AIRLOCK_TICKET\",\"body\":\"agent was here\"}}}" "$u/graphql")
  o=$(curl -sS -o /dev/null -w '%{http_code}' -H "$a" -H 'Content-Type: application/json' \
    --data-binary "{\"query\":\"$m\",\"variables\":{\"input\":{\"issueId\":\"ENG-43\",\"body\":\"x\"}}}" "$u/graphql")
fi
echo "TK-READ=$c TK-COMMENT=$p TK-OTHER=$o"
SH
  tail -n +2 "$FE_PUSH_AGENT" | grep -v AIRLOCK_RESULT
} >"$TK_AGENT"
chmod 755 "$TK_AGENT"
# sealed_run NAME KIND KEY HOST AGENT: a double on HOST (a name, pinned),
# the policy in sealed mode with one agent comment, the run; RC, OUT
sealed_run() {
  local name=$1 kind=$2 key=$3 host=$4 agent=$5 user=()
  [ "$kind" = jira ] && user=(--user bot@acme.example)
  "$TICKET_DOUBLE" --kind "$kind" --key "$key" --title "Fix the tally for $key" --body "the body of $key" \
    "${user[@]}" --token-file "$TK/good" --tls-dir "$TK/tls2" --ports-file "$TK/$name.ports" \
    --state "$TK/$name.state" >"$TK/$name.log" 2>&1 &
  DPID=$!
  on_exit "kill $DPID"
  for _ in $(seq 100); do [ -s "$TK/$name.ports" ] && break; sleep 0.05; done
  DPORT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$TK/$name.ports")
  policy "$name" "$kind" "$DPORT" "$TK/good"
  sed -i -e "s|^  url: https://127.0.0.1:$DPORT|  url: https://$host:$DPORT|" -e "s|^  ca_file: $TK/tls/ca.crt|  ca_file: $TK/tls2/ca.crt|" \
    -e "s|^  pin:|  pin:\n    - {host: $host, address: 127.0.0.1}|" -e "s|^  allow:|  allow:\n    - {host: $host, port: $DPORT, tls: true}|" \
    -e "s|^credentials:|credentials:\n  mode: sealed\n  agent_comments: 1|" "$TK/$name.yaml"
  "$AIRLOCK" ticket "acme/tally#$key" -p "$TK/$name.yaml" --agent "$agent" --record "$TK/$name.rec.json" \
    >"$TK/$name.out" 2>&1
  RC=$?
  OUT=$(cat "$TK/$name.out")
  double_stop
}
ticket_decisions() {
  rec "$1" '" ".join(d["decision"]+":"+str(d.get("rule") or d.get("reason")) for d in r["gateway_decisions"] if d.get("host")=="'"$2"'" and d.get("event")=="request")'
}
for v in jira:PROJ-7:jira.test linear:ENG-42:linear.test; do
  IFS=: read -r kind key host <<<"$v"
  sealed_run "s$kind" "$kind" "$key" "$host" "$TK_AGENT"
  is "sealed $kind: the run exits 0" "$RC" 0
  [ "$RC" = 0 ] || diag "$(tail -20 "$TK/s$kind.out")"
  like "sealed $kind: the agent read its ticket and commented through the gateway; the next ticket refused" \
    "$OUT" "TK-READ=200 TK-COMMENT=20[01] TK-OTHER=403"
  is "sealed $kind: the ticket host is terminated by the gateway (record)" \
    "$(rec "s$kind" '[h for h in r["gateway"]["hosts"] if h.startswith("'"$host"':")] != []')" True
  is "sealed $kind: the gateway's decisions on the ticket host" "$(ticket_decisions "s$kind" "$host")" \
    "$([ "$kind" = jira ] && echo "allow:jira-issue allow:jira-comment-create deny:other-ticket" || echo "allow:linear-issue allow:linear-comment-create deny:graphql-refused: other-ticket")"
  is "sealed $kind: the ticket has the agent's comment and the run's closing one" "$(state "s$kind" 'len(s["comments"])')" 2
  is "sealed $kind: the double took no other write" "$(state "s$kind" 'len(s["writes"])')" 0
  is "sealed $kind: the double refused no credential (the gateway injected the vendor's form)" "$(state "s$kind" 's["auth_refused"]')" 0
  case "$OUT$(cat "$TK/s$kind.rec.json")" in *"$SECRET"*) fail "sealed $kind: the vendor credential is in the output or record" ;;
    *) ok "sealed $kind: the vendor credential is in no output, agent environment or record" ;; esac

  # the hostile agent on the same ticket: the ticket host's attempts are
  # refused at the gateway (their controls, the same requests straight to
  # the double with the real credential landing: gateway-tickets.sh)
  sealed_run "h$kind" "$kind" "$key" "$host" "$AIRLOCK_SRC/examples/agents/hostile-agent"
  for id in ticket-comment-other ticket-edit ticket-transition; do
    is "hostile $kind: $id refused" "$(rec "h$kind" "[a['outcome'] for a in r['agent_attempts'] if a['id']=='$id']")" "['refused']"
  done
  is "hostile $kind: the gateway's decisions on the ticket host name the rules" "$(ticket_decisions "h$kind" "$host")" \
    "$([ "$kind" = jira ] && echo "deny:other-ticket deny:write-refused deny:write-refused" || echo "deny:graphql-refused: other-ticket deny:graphql-refused: mutation deny:graphql-refused: mutation")"
  is "hostile $kind: the double took no write of the agent's" "$(state "h$kind" 'len(s["writes"])')" 0
done
is "no token is active after the runs" "$(tokens_in active)" 0
done_testing
