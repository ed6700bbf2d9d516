#!/bin/bash
# airlock serve (issue #29): a damaged queue.db stops the start with a
# message naming the file and what to do (it used to start with `[]` and
# answer 503 to every webhook while the status page said 200); /healthz
# says whether the queue can be read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
serve_env_start 2 2 || { fail "forge + broker + serve environment"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -20; done_testing; exit 1; }
DB=$SV_DIR/state/queue.db
is "/healthz of a sound queue: ok" "$(sv_get /healthz)" ok
is "… with 200" "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' "http://$SV_STATUS/healthz")" 200
# rows enough for several pages (history lines, deliveries)
for n in $(seq 1 40); do sv_payload "$T_TMP/p$n.json" issues acme/tally "$n" alice bug; sv_send issues "d-$n" "$T_TMP/p$n.json" good >/dev/null; done
kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null
pages=$(python3 -c 'import os,sys; print(os.path.getsize(sys.argv[1]) // 4096)' "$DB")
like "the queue has several pages" "$pages" '^([4-9]|[1-9][0-9]+)$'
cp "$DB" "$T_TMP/sound.db"
# overwrite pages 2.. (not the header): what a disk or a careless copy does
python3 - "$DB" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4096)
    f.write(os.urandom(4096 * 2))
PY
out=$(timeout 60 "$AIRLOCK_NET" serve -c "$SV_CONF" 2>&1); rc=$?
is "a damaged queue.db: the daemon does not start (exit 1)" "$rc" 1
like "… naming the file" "$out" "queue: \`$DB\` is damaged"
like "… what is wrong" "$out" 'is damaged \((PRAGMA quick_check: |database disk image is malformed)'
like "… and what to do" "$out" "move it aside \\(mv $DB $DB.damaged"
out=$("$AIRLOCK" serve enqueue -c "$SV_CONF" acme/tally#1 2>&1); rc=$?
like "enqueue refuses it too" "$rc/$out" "^1/.*is damaged"
# control: the same file before the damage starts
cp "$T_TMP/sound.db" "$DB"; rm -f "$DB-wal" "$DB-shm"
sv_start || fail "control: the sound copy starts"
is "control: the sound queue starts and /healthz says ok" "$(sv_get /healthz)" ok
is "control: … with its rows" "$(sv_get /runs.json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["deliveries"]))')" 40
kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null
done_testing
