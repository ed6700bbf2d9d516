#!/bin/bash
# airlock serve against `airlock ticket` run directly (issue #20), on the
# test forge (no network): not a test; it prints a Markdown table.
#   1. per-run overhead: M tickets one at a time, each directly (`airlock
#      ticket`) and through the daemon (`serve enqueue` → finished, as the
#      queue records it), medians;
#   2. queue throughput: N rows through a daemon whose runs are a stub that
#      writes a minimal record and exits (what is left is the daemon's own
#      work per row: the SQLite transactions, the broker's trigger check —
#      a token minted, two reads, revoked and confirmed — and fork/exec).
# usage: sudo bench/serve.sh [M] [N]   (needs a build in build/)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
M=${1:-5} N=${2:-60}
export AIRLOCK=$top/build/src/cli/airlock AIRLOCK_SRC=$top AIRLOCK_FORGE=$top/build/tests/forge-emulator/airlock-forge
. "$top/tests/integration/lib.sh"
. "$top/tests/integration/forgeenv.sh"
. "$top/tests/integration/serveenv.sh"
serve_env_start 4 4 >/dev/null || { echo "bench: environment failed" >&2; exit 1; }
ms() { date +%s%3N; }
med() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
direct=() viad=()
for i in $(seq 1 "$M"); do
  t0=$(ms); "$AIRLOCK" ticket "acme/tally#$i" -p "$FE_POLICY" --agent "$AIRLOCK_SRC/examples/agents/patch-agent" -q --record "$T_TMP/d$i.json" >/dev/null 2>&1; t1=$(ms)
  direct+=($((t1 - t0)))
  n=$((i + 20))
  t0=$(ms); id=$("$AIRLOCK" serve enqueue -c "$SV_CONF" "acme/tally#$n" 2>/dev/null)
  sv_wait "$id" 'succeeded|failed|refused' 300 >/dev/null; t1=$(ms)
  viad+=($((t1 - t0)))
done
dm=$(printf '%s\n' "${direct[@]}" | med); vm=$(printf '%s\n' "${viad[@]}" | med)
# the daemon's record of its own runs: started - created (queue wait + check), run wall
inner=$(sv_runs | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["runs"] if x["state"]=="succeeded"]; import statistics as s; print(int(s.median([x["finished_ms"]-x["started_ms"] for x in r])), int(s.median([x["started_ms"]-x["created_ms"] for x in r])))')
kill "$SV_PID"; wait "$SV_PID" 2>/dev/null

# 2. a second daemon whose runs are a stub
mkdir -p "$SV_DIR/stub"; chmod 700 "$SV_DIR/stub"
cat >"$SV_DIR/stub/airlock" <<'SH'
#!/bin/sh
# argv: ticket REPO#N -p POLICY --record FILE ...
rec=$6
printf '{"run_id":"stub","pull_request":{"url":"https://forge.test/stub","verified":true},"revocation":{"tokens":[]}}' >"$rec"
SH
chmod 755 "$SV_DIR/stub/airlock"
sed -e "s|state_dir: .*|state_dir: $SV_DIR/state2|" -e "s|  max_concurrent: .*|  max_concurrent: 4\n  airlock: $SV_DIR/stub/airlock|" "$SV_CONF" >"$SV_DIR/stub.yaml"
SV_CONF=$SV_DIR/stub.yaml; mkdir -p "$SV_DIR/state2"; chmod 700 "$SV_DIR/state2"
rm -f "$SV_DIR/state/listen.json"
"$AIRLOCK" serve -c "$SV_CONF" >>"$SV_DIR/serve2.log" 2>&1 & SV_PID=$!; on_exit "kill $SV_PID"
for _ in $(seq 100); do [ -s "$SV_DIR/state2/listen.json" ] && break; sleep 0.05; done
SV_STATUS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$SV_DIR/state2/listen.json")
t0=$(ms)
for i in $(seq 1 "$N"); do "$AIRLOCK" serve enqueue -c "$SV_CONF" "acme/tally#$((i + 100))" >/dev/null 2>&1; done
t1=$(ms)
for _ in $(seq 2400); do
  d=$(sv_runs | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin)["runs"] if r["state"] not in ("queued","running")))')
  [ "$d" -ge "$N" ] && break; sleep 0.1
done
t2=$(ms)
ok_n=$(sv_runs | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin)["runs"] if r["state"]=="succeeded"))')
cat <<MD
| measure | value |
|---|---:|
| \`airlock ticket\` directly, median of $M | $dm ms |
| the same ticket through \`airlock serve\` (enqueue → finished), median of $M | $vm ms |
| overhead of the daemon per run | $((vm - dm)) ms ($(python3 -c "print(f'{($vm-$dm)/$dm*100:.1f}')")%) |
| daemon: run wall (its child) / queued → started (tick + trigger check), medians | ${inner% *} ms / ${inner#* } ms |
| \`serve enqueue\`, $N rows | $(( (t1 - t0) / N )) ms per row (a process start + one transaction) |
| queue throughput with a stub run (check + fork/exec + record), $N rows, cap 4 | $(python3 -c "print(f'{$N/(($t2-$t1)/1000):.1f}')") rows/s ($ok_n succeeded) |
MD
