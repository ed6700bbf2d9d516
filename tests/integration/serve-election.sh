#!/bin/bash
# airlock serve with several replicas (issue #20, docs/scale.md): Lease-based
# leader election against kubestub.py, a test double of the three Lease
# endpoints on loopback with the API's optimistic-concurrency rule (a PUT
# with a stale resourceVersion is 409, a second create is 409). Two daemons
# share one queue (as two replicas on the node holding the volume); only the
# Lease's holder dequeues. Not a Kubernetes API server: what this does not
# test is in docs/scale.md.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
serve_env_start 2 2 || { fail "forge + broker + serve environment"; done_testing; exit 1; }
kill "$SV_PID"; wait "$SV_PID" 2>/dev/null   # the suite's single daemon: not used here

K=$T_TMP/kube
mkdir -p "$K/sa-a" "$K/sa-b" "$K/sa-bad"
chmod 700 "$K"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$K/tls" >/dev/null 2>&1 || { fail "test CA"; done_testing; exit 1; }
rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
TA=$(rand) TB=$(rand)
printf 'serve-a %s\nserve-b %s\n' "$TA" "$TB" >"$K/tokens"
printf '%s\n' "$TA" >"$K/sa-a/token"; printf '%s\n' "$TB" >"$K/sa-b/token"; rand >"$K/sa-bad/token"
for d in sa-a sa-b sa-bad; do printf 'airlock\n' >"$K/$d/namespace"; chmod 600 "$K/$d/token"; done
python3 "$AIRLOCK_SRC/tests/integration/kubestub.py" "$K/tls/server.crt" "$K/tls/server.key" "$K/tokens" "$K/port" 2>"$K/stub.err" &
STUB=$!
on_exit "kill $STUB"
for _ in $(seq 100); do [ -s "$K/port" ] && break; sleep 0.05; done
KPORT=$(cat "$K/port")
stub() { curl -s --noproxy '*' --max-time 10 --cacert "$K/tls/ca.crt" "https://127.0.0.1:$KPORT$@"; }
holder() { stub /_stub/state | python3 -c 'import json,sys; l=json.load(sys.stdin)["lease"]; print(l[0]["spec"]["holderIdentity"] if l else "(none)")'; }
nreq() { # WHO METHOD [STATUS]: requests the stub saw
  stub /_stub/state | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)["log"] if e["who"]==sys.argv[1] and e["method"]==sys.argv[2] and (len(sys.argv)<4 or e["status"]==int(sys.argv[3]))))' "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
is "the stub refuses a request without a token" "$(stub /apis/coordination.k8s.io/v1/namespaces/airlock/leases/x -o /dev/null -w '%{http_code}')" 401

# elect_config FILE IDENTITY SA-DIR STATUS-PORT [extra election lines]
elect_config() {
  cat >"$1" <<YAML
version: 1
listen:
  webhook: ""
  status: 127.0.0.1:$4
broker: $FE_SOCK
state_dir: $SV_DIR/state
runs:
  max_concurrent: 2
  agent: $AIRLOCK_SRC/examples/agents/patch-agent
election:
  lease: airlock-serve
  identity: $2
  api: https://127.0.0.1:$KPORT
  token_file: $K/$3/token
  ca_file: $K/tls/ca.crt
  duration: 4s
  renew_deadline: 3s
  retry: 300ms
${5:-}
repositories:
  - {repo: acme/tally, policy: $FE_POLICY}
YAML
}
PA=$(free_port) PB=$(free_port)
elect_config "$K/a.yaml" serve-a sa-a "$PA" "  namespace: airlock"
elect_config "$K/b.yaml" serve-b sa-b "$PB"   # namespace from the file beside the token
start_daemon() { # NAME CONFIG: sets PID_<NAME>
  "$AIRLOCK_NET" serve -c "$2" >>"$K/$1.log" 2>&1 &
  eval "PID_$1=$!"
  on_exit "kill $!"
}
metric_leader() { curl -s --noproxy '*' --max-time 5 "http://127.0.0.1:$1/metrics" | sed -n 's/^airlock_serve_leader //p'; }
wait_for() { # TRIES(0.1 s) COMMAND...: until the command succeeds
  local n=$1; shift
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}
holder_is() { [ "$(holder)" = "$1" ]; }
row_state() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select state from runs where id=?", (int(sys.argv[2]),)).fetchone(); print(r[0] if r else "")' "$SV_DIR/state/queue.db" "$1"; }
row_is() { [ "$(row_state "$1")" = "$2" ]; }
started_by() { grep -c "\"event\":\"run_started\".*\"run\":$2[,}]" "$K/$1.log"; }

start_daemon a "$K/a.yaml"
check "serve-a creates the Lease and holds it" wait_for 100 holder_is serve-a
is "… by a create (POST 201) after a 404" "$(nreq serve-a GET 404) $(nreq serve-a POST 201)" "1 1"
start_daemon b "$K/b.yaml"
check "serve-b reads the Lease (its namespace from the file beside its token)" wait_for 100 sh -c "[ \$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | grep -o '\"who\": \"serve-b\"' | wc -l) -ge 3 ]"
is "serve-b stands by: serve-a still holds the Lease" "$(holder)" serve-a
is "serve-b never wrote the Lease (no PUT, no successful POST)" "$(nreq serve-b PUT) $(nreq serve-b POST 201)" "0 0"
is "/metrics: serve-a airlock_serve_leader 1" "$(metric_leader "$PA")" 1
is "/metrics: serve-b airlock_serve_leader 0" "$(metric_leader "$PB")" 0

id1=$("$AIRLOCK" serve enqueue -c "$K/a.yaml" acme/tally#1 2>>"$K/enq.err")
check "ticket 1: succeeded" wait_for 1800 row_is "$id1" succeeded
is "ticket 1 was started by the leader, not by the standby" "$(started_by a "$id1") $(started_by b "$id1")" "1 0"

# No holder dequeues but the holder: another identity takes the Lease.
stub /_stub/set -d '{"holder": "serve-x", "duration": 3600}' >/dev/null
check "serve-a sees the Lease taken and stands by" wait_for 100 grep -q '"event":"standby"' "$K/a.log"
id2=$("$AIRLOCK" serve enqueue -c "$K/a.yaml" acme/tally#2 2>>"$K/enq.err")
ga=$(nreq serve-a GET 200) gb=$(nreq serve-b GET 200)
check "both replicas read the Lease 5 more times after the enqueue" wait_for 300 sh -c "
  a=\$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | python3 -c 'import json,sys; l=json.load(sys.stdin)[\"log\"]; print(sum(1 for e in l if e[\"who\"]==\"serve-a\" and e[\"method\"]==\"GET\"), sum(1 for e in l if e[\"who\"]==\"serve-b\" and e[\"method\"]==\"GET\"))')
  set -- \$a; [ \$1 -ge $((ga + 5)) ] && [ \$2 -ge $((gb + 5)) ]"
is "a standby does not dequeue: ticket 2 is still queued" "$(row_state "$id2")" queued
is "… and neither replica started it" "$(started_by a "$id2") $(started_by b "$id2")" "0 0"
is "/metrics: both 0" "$(metric_leader "$PA") $(metric_leader "$PB")" "0 0"
# Positive control: the same row runs as soon as the Lease is free.
stub /_stub/set -d '{"holder": "", "duration": 4}' >/dev/null
check "control: the Lease released, one replica takes it" wait_for 100 sh -c "h=\$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"lease\"][0][\"spec\"][\"holderIdentity\"])'); [ \"\$h\" = serve-a ] || [ \"\$h\" = serve-b ]"
check "control: … and ticket 2 runs and succeeds" wait_for 1800 row_is "$id2" succeeded
is "ticket 2 was started once" "$(( $(started_by a "$id2") + $(started_by b "$id2") ))" 1

# Optimistic concurrency: another writer updates the Lease between the
# leader's read and its write; the write (stale resourceVersion) gets 409.
L=$(holder); [ "$L" = serve-a ] && O=serve-b || O=serve-a
c409=$(nreq "$L" PUT 409)
nstandby=$(grep -c '"event":"standby"' "$K/${L#serve-}.log")
stub /_stub/steal-next-put -d '{"holder": "serve-thief"}' >/dev/null
check "the leader's next renewal meets 409 Conflict" wait_for 100 sh -c "[ \$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)[\"log\"] if e[\"who\"]==\"$L\" and e[\"method\"]==\"PUT\" and e[\"status\"]==409))') -gt $c409 ]"
check "… and it stands by" wait_for 100 sh -c "[ \$(grep -c '\"event\":\"standby\"' $K/${L#serve-}.log) -gt $nstandby ]"
is "the thief's Lease is not overwritten by either replica" "$(holder)" serve-thief

# A leader SIGKILLed mid-run: the standby takes over only once the Lease
# has not been renewed for its duration, recovers the row, and the ticket
# ends in one PR with no live token.
stub /_stub/set -d '{"holder": "", "duration": 4}' >/dev/null
wait_for 100 sh -c "h=\$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"lease\"][0][\"spec\"][\"holderIdentity\"])'); [ \"\$h\" = serve-a ] || [ \"\$h\" = serve-b ]"
L=$(holder); [ "$L" = serve-a ] && O=serve-b || O=serve-a
id3=$("$AIRLOCK" serve enqueue -c "$K/a.yaml" acme/tally#3 2>>"$K/enq.err")
check "ticket 3 is running under $L" wait_for 600 row_is "$id3" running
tr0=$(stub /_stub/state | python3 -c 'import json,sys; print(json.load(sys.stdin)["lease"][0]["spec"].get("leaseTransitions", 0))')
eval "kill -KILL \$PID_${L#serve-}"
check "$O takes the Lease after the dead leader's duration" wait_for 300 holder_is "$O"
tr1=$(stub /_stub/state | python3 -c 'import json,sys; print(json.load(sys.stdin)["lease"][0]["spec"].get("leaseTransitions", 0))')
is "leaseTransitions went up by one" "$((tr1 - tr0))" 1
check "ticket 3 ends succeeded under $O" wait_for 1800 row_is "$id3" succeeded
like "… after being marked interrupted by the new leader" "$(python3 -c 'import sqlite3,sys; print([r[0] for r in sqlite3.connect(sys.argv[1]).execute("select what from events where run=?", (int(sys.argv[2]),))])' "$SV_DIR/state/queue.db" "$id3" 2>&1)" 'interrupted'
is "one open PR per ticket (1, 2, 3)" "$(pulls_for 1) $(pulls_for 2) $(pulls_for 3)" "1 1 1"
is "every token is dead (none active on the forge)" "$(tokens_in active)" 0

# SIGTERM of the leader: it hands the Lease over (holderIdentity "").
eval "kill -TERM \$PID_${O#serve-}; wait \$PID_${O#serve-} 2>/dev/null"
is "a leader stopped by SIGTERM releases the Lease" "$(holder)" ""
like "… and says so" "$(grep '"event":"election"' "$K/${O#serve-}.log" | tail -1)" 'released the Lease'

# A replica whose token the API refuses never leads; it says why.
PD=$(free_port)
elect_config "$K/bad.yaml" serve-bad sa-bad "$PD" "  namespace: airlock"
start_daemon bad "$K/bad.yaml"
check "a refused token: the log says HTTP 401" wait_for 100 grep -q 'reading the Lease: HTTP 401' "$K/bad.log"
is "… and it is not the leader" "$(metric_leader "$PD")" 0
eval "kill -TERM \$PID_bad; wait \$PID_bad 2>/dev/null"
# A wrong CA: TLS fails, never leads.
elect_config "$K/ca.yaml" serve-ca sa-a "$PD" "  namespace: airlock"
sed -i "s|ca_file: .*|ca_file: $FE_CA|" "$K/ca.yaml"
start_daemon ca "$K/ca.yaml"
check "an API certificate from another CA: the log names the TLS failure" wait_for 100 grep -qiE 'reading the Lease: .*(certificate|SSL)' "$K/ca.log"
eval "kill -TERM \$PID_ca; wait \$PID_ca 2>/dev/null"
check_not "no token value in any daemon log" grep -qF -e "$TA" -e "$TB" "$K/a.log" "$K/b.log" "$K/bad.log" "$K/ca.log"

# Config: the deadlines' order and the names are checked.
elect_config "$K/order.yaml" serve-o sa-a "$PD" "  namespace: airlock"
sed -i 's/renew_deadline: 3s/renew_deadline: 5s/' "$K/order.yaml"
like "renew_deadline >= duration is refused" "$("$AIRLOCK_NET" serve -c "$K/order.yaml" 2>&1)" 'retry < renew_deadline < duration'
elect_config "$K/name.yaml" serve-o sa-a "$PD" "  namespace: airlock"
sed -i 's/lease: airlock-serve/lease: Bad_Name/' "$K/name.yaml"
like "a Lease name that is not a DNS name is refused" "$("$AIRLOCK_NET" serve -c "$K/name.yaml" 2>&1)" 'election.lease `Bad_Name`'
done_testing
