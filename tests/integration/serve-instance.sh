#!/bin/bash
# airlock serve (issue #29): one instance per queue. A second serve on the
# same state_dir refuses to start and names the holder (it used to
# "recover" the live instance's run: SIGTERM, the ticket lost); a serve on
# a copy of queue.db recognises the copy (the instance id in the file)
# and recovers nothing it does not own: the first instance's run goes on
# and makes the ticket's one PR.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
sv_gated_agent "$T_TMP/agent"
serve_env_start 2 2 || { fail "forge + broker + serve environment"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -20; done_testing; exit 1; }
write_policy "$FE_POLICY" "$FE_SOCK" 10m   # room for the gate
ok "serve (pid $SV_PID) on $SV_HOOK, forge on $FE_HTTPS"
DB=$SV_DIR/state/queue.db
row() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select "+sys.argv[3]+" from runs where id=?", (int(sys.argv[2]),)).fetchone(); print(r[0] if r else "")' "${3:-$DB}" "$1" "$2"; }
wait_row() { for _ in $(seq $((${3:-120} * 10))); do [ "$(row "$1" state "${4:-$DB}")" = "$2" ] && return 0; sleep 0.1; done; return 1; }

id=$("$AIRLOCK" serve enqueue -c "$SV_CONF" acme/tally#1 2>>"$T_TMP/enq.err")
check "ticket 1 is running (its agent waits at the gate)" wait_row "$id" running 120
pid1=$(row "$id" pid)

# a second serve on the same state_dir
sed 's/127.0.0.1:0/127.0.0.1:0/' "$SV_CONF" >"$T_TMP/second.yaml"
out=$(timeout 30 "$AIRLOCK_NET" serve -c "$T_TMP/second.yaml" 2>&1); rc=$?
is "a second serve on the same state_dir refuses to start (exit 1)" "$rc" 1
like "… and names the holder's pid" "$out" "state_dir .* is in use by another airlock serve \\(pid $SV_PID,"
is "the first instance's run was not touched (still running, same pid)" "$(row "$id" state) $(row "$id" pid)" "running $pid1"
check_not "… and nothing recovered it" grep -q '"event":"recovered"' "$SV_DIR/serve.log"

# a serve on a copy of queue.db (a consistent copy, as a backup makes it)
mkdir -p "$T_TMP/copy"; chmod 700 "$T_TMP/copy"
python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close()' "$DB" "$T_TMP/copy/queue.db"
chmod 600 "$T_TMP/copy/queue.db"
sed "s|^state_dir: .*|state_dir: $T_TMP/copy|" "$SV_CONF" >"$T_TMP/copy.yaml"
"$AIRLOCK_NET" serve -c "$T_TMP/copy.yaml" >"$T_TMP/copy.log" 2>&1 &
CPID=$!
on_exit "kill $CPID"
check "the serve on the copy starts" sh -c "for i in \$(seq 200); do [ -s '$T_TMP/copy/listen.json' ] && exit 0; sleep 0.1; done; exit 1"
check "it says the file is a copy" sh -c "for i in \$(seq 100); do grep -q '\"event\":\"queue_copied\"' '$T_TMP/copy.log' && exit 0; sleep 0.1; done; exit 1"
check "… and leaves the row of the other instance: not re-queued (interrupted)" wait_row "$id" interrupted 60 "$T_TMP/copy/queue.db"
like "… saying why" "$(row "$id" reason "$T_TMP/copy/queue.db")" 'left running by airlock serve instance [0-9a-f]+, not this one .*not stopped and the ticket is not run again'
is "the live run is untouched (same pid, running)" "$(row "$id" state) $(row "$id" pid)" "running $pid1"
check_not "the copy started no run" grep -q '"event":"run_started"' "$T_TMP/copy.log"
kill -TERM "$CPID"; wait "$CPID" 2>/dev/null

touch "$T_TMP/agent/open"
check "ticket 1 ends succeeded under the first instance" wait_row "$id" succeeded 300
is "one open PR for ticket 1" "$(pulls_for 1)" 1
is "no token is active" "$(tokens_in active)" 0

# positive control: with the first instance stopped, the same second
# serve starts (the lock is the only thing that refused it)
kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null
"$AIRLOCK_NET" serve -c "$T_TMP/second.yaml" >"$T_TMP/second.log" 2>&1 &
P2=$!
on_exit "kill $P2"
check "control: once the first instance stopped, the second starts on the state_dir" sh -c "for i in \$(seq 200); do grep -q '\"event\":\"started\"' '$T_TMP/second.log' && exit 0; sleep 0.1; done; exit 1"
kill -TERM "$P2"; wait "$P2" 2>/dev/null
done_testing
