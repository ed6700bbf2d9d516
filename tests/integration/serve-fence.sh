#!/bin/bash
# airlock serve (issue #29): a frozen leader cannot make a second PR.
# Replica A runs in its own PID namespace (as in a pod) and starts a run
# whose agent is slow (it waits at a gate); A is frozen with SIGSTOP; B
# takes the Lease from kubestub.py. B cannot see A's run (a pid in another
# namespace means nothing to it): it waits until the run's heartbeat stops,
# then revokes the attempt's fencing token and runs the ticket again. The
# gate opens: A's attempt reaches its fence check, finds its token revoked
# and makes nothing; B's makes the one PR. A is resumed: its late finish
# does not overwrite the row; the stale attempt is recorded as fenced.
# Control: the same, with A's runs started without their fence file (a
# wrapper as runs.airlock drops --fence), makes two PRs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
command -v unshare >/dev/null || { skip "unshare (util-linux) is not installed: no PID namespace for replica A"; done_testing; exit 0; }
unshare -p -f --mount-proc true 2>/dev/null || { skip "unshare -p -f --mount-proc is not permitted here"; done_testing; exit 0; }
sv_gated_agent "$T_TMP/agent"
serve_env_start 2 2 || { fail "forge + broker + serve environment"; done_testing; exit 1; }
kill "$SV_PID"; wait "$SV_PID" 2>/dev/null   # the suite's single daemon: not used here
write_policy "$FE_POLICY" "$FE_SOCK" 10m        # room for the gate

K=$T_TMP/kube
mkdir -p "$K/sa-a" "$K/sa-b"
chmod 700 "$K"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$K/tls" >/dev/null 2>&1 || { fail "test CA"; done_testing; exit 1; }
rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
TA=$(rand) TB=$(rand)
printf 'serve-a %s\nserve-b %s\n' "$TA" "$TB" >"$K/tokens"
printf '%s\n' "$TA" >"$K/sa-a/token"; printf '%s\n' "$TB" >"$K/sa-b/token"
for d in sa-a sa-b; do printf 'airlock\n' >"$K/$d/namespace"; chmod 600 "$K/$d/token"; done
python3 "$AIRLOCK_SRC/tests/integration/kubestub.py" "$K/tls/server.crt" "$K/tls/server.key" "$K/tokens" "$K/port" 2>"$K/stub.err" &
STUB=$!
on_exit "kill $STUB"
for _ in $(seq 100); do [ -s "$K/port" ] && break; sleep 0.05; done
KPORT=$(cat "$K/port")
stub() { curl -s --noproxy '*' --max-time 10 --cacert "$K/tls/ca.crt" "https://127.0.0.1:$KPORT$@"; }
holder() { stub /_stub/state | python3 -c 'import json,sys; l=json.load(sys.stdin)["lease"]; print(l[0]["spec"]["holderIdentity"] if l else "(none)")'; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
elect_config() { # FILE IDENTITY SA-DIR STATUS-PORT STATE-DIR [runs.airlock]
  cat >"$1" <<YAML
version: 1
listen:
  webhook: ""
  status: 127.0.0.1:$4
broker: $FE_SOCK
state_dir: $5
runs:
  max_concurrent: 2
  agent: $SV_AGENT
${6:+  airlock: $6}
election:
  lease: airlock-serve
  identity: $2
  namespace: airlock
  api: https://127.0.0.1:$KPORT
  token_file: $K/$3/token
  ca_file: $K/tls/ca.crt
  duration: 4s
  renew_deadline: 3s
  retry: 300ms
repositories:
  - {repo: acme/tally, policy: $FE_POLICY}
YAML
}
wait_for() { local n=$1; shift; for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done; return 1; }
holder_is() { [ "$(holder)" = "$1" ]; }

# scenario STATE-DIR TICKET [both replicas' runs.airlock]: sets DB ID A_PID B_PID
scenario() {
  local st=$1 n=$2
  mkdir -p "$st"; chmod 700 "$st"
  rm -f "$T_TMP/agent/open"
  stub /_stub/set -d '{"holder": "", "duration": 4}' >/dev/null
  elect_config "$K/a.yaml" serve-a sa-a "$(free_port)" "$st" "${3:-}"
  elect_config "$K/b.yaml" serve-b sa-b "$(free_port)" "$st" "${3:-}"
  DB=$st/queue.db
  # A: its own PID namespace (and /proc), as a pod
  unshare -p -f --mount-proc "$AIRLOCK_NET" serve -c "$K/a.yaml" >>"$K/a-$n.log" 2>&1 &
  U=$!
  on_exit "kill -CONT $U; kill $U"
  wait_for 100 holder_is serve-a || return 1
  A_PID=$(pgrep -P "$U" | head -1)   # serve itself: the child of unshare (PID 1 inside)
  on_exit "kill -CONT $A_PID; kill $A_PID"
  ID=$("$AIRLOCK" serve enqueue -c "$K/a.yaml" "acme/tally#$n" 2>>"$K/enq.err")
  wait_for 1200 row_is "$ID" running || return 1
  "$AIRLOCK_NET" serve -c "$K/b.yaml" >>"$K/b-$n.log" 2>&1 &
  B_PID=$!
  on_exit "kill $B_PID"
}
row() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select "+sys.argv[3]+" from runs where id=?", (int(sys.argv[2]),)).fetchone(); print(r[0] if r else "")' "$DB" "$1" "$2"; }
row_is() { [ "$(row "$1" state)" = "$2" ]; }
attempts_ge() { [ "$(row "$1" attempts)" -ge "$2" ] && [ "$(row "$1" state)" = running ]; }
events() { python3 -c 'import sqlite3,sys; print("\n".join(r[0] for r in sqlite3.connect(sys.argv[1]).execute("select what from events where run=? order by rowid", (int(sys.argv[2]),))))' "$DB" "$1"; }

# --- the frozen leader, with fencing ---
scenario "$T_TMP/st1" 25 || { fail "scenario: A leads and runs ticket 25"; sed 's/^/#   /' "$K"/a-25.log | tail -20; done_testing; exit 1; }
ok "A (pid $A_PID, its own PID namespace) leads and runs ticket 25 (attempt 1, agent at the gate)"
kill -STOP "$A_PID"
check "A is frozen; B takes the Lease" wait_for 300 holder_is serve-b
check "B cannot see A's run: it waits for the run's heartbeat" wait_for 300 grep -q '"event":"recovering"' "$K/b-25.log"
check "B fences attempt 1 and starts attempt 2" wait_for 1200 attempts_ge "$ID" 2
touch "$T_TMP/agent/open"
check "ticket 25 ends succeeded" wait_for 3000 row_is "$ID" succeeded
R1=$T_TMP/st1/records/$ID-1.json
check "attempt 1 (A's) wrote its record" wait_for 1200 test -s "$R1"
like "attempt 1's record: fenced before its outputs" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["fence"]["status"], r.get("error"))' "$R1")" '^fenced fenced: '
check "attempt 1's record validates against docs/run-record.schema.json" validate_record "$R1"
like "… and its tokens were revoked" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["revocation"]["all_dead"])' "$R1")" True
kill -CONT "$A_PID"
check "A, resumed, records that its attempt ended after it was fenced" wait_for 600 sh -c "python3 -c 'import sqlite3,sys; sys.exit(0 if any(\"ended after it was fenced\" in r[0] for r in sqlite3.connect(sys.argv[1]).execute(\"select what from events where run=?\", (int(sys.argv[2]),))) else 1)' '$DB' '$ID'"
is "the row is still B's outcome (succeeded)" "$(row "$ID" state)" succeeded
like "the history shows the fencing" "$(events "$ID" | tr '\n' '|')" 'recovering|fenced: token [^|]* revoked|attempt 1 fenced|running \(pid [0-9]+, token 25?[0-9]*\.2\.'
like "the row counts the fenced attempt" "$(row "$ID" fenced)" '^[1-9]'
is "exactly one open PR for ticket 25" "$(pulls_for 25)" 1
is "every token is dead" "$(tokens_in active)" 0
kill -TERM "$A_PID" "$B_PID" 2>/dev/null; wait "$B_PID" 2>/dev/null
for _ in $(seq 100); do kill -0 "$A_PID" 2>/dev/null || break; sleep 0.1; done

# --- control: both replicas' runs without their fence check (A's and B's:
# with B's check alone, whichever attempt reaches its outputs second stops,
# and the count would depend on the order) ---
stub /_stub/set -d '{"holder": "", "duration": 4}' >/dev/null
cat >"$T_TMP/nofence" <<SH
#!/bin/bash
# airlock, with the --fence option of \`airlock ticket\` dropped
args=()
while [ \$# -gt 0 ]; do
  if [ "\$1" = --fence ]; then shift 2; continue; fi
  args+=("\$1"); shift
done
exec "$AIRLOCK_NET" "\${args[@]}"
SH
chmod 755 "$T_TMP/nofence"
scenario "$T_TMP/st2" 26 "$T_TMP/nofence" || { fail "control scenario"; done_testing; exit 1; }
kill -STOP "$A_PID"
wait_for 300 holder_is serve-b
wait_for 1200 attempts_ge "$ID" 2
touch "$T_TMP/agent/open"
wait_for 3000 row_is "$ID" succeeded
# A's attempt has made its output (or not) once its record is written: wait
# for that (bounded), not for a fixed while, so a loaded machine gives the
# same count
wait_for 3000 test -s "$T_TMP/st2/records/$ID-1.json"
for _ in $(seq 100); do [ "$(pulls_for 26)" -ge 2 ] && break; sleep 0.1; done
is "control: without the fence check, the frozen leader's run makes a second PR" "$(pulls_for 26)" 2
kill -CONT "$A_PID"
kill -TERM "$A_PID" "$B_PID" 2>/dev/null
done_testing
