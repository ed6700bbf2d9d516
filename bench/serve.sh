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
#   Part 2 is issue #33's item 5 (serve under a backlog): the N rows are
#      all enqueued before its daemon starts, then drained at the cap; no
#      row may be lost (each must end succeeded, exactly once, with its PR);
#      dequeue-to-start per row = started − max(created, the daemon up, the
#      moment a slot was free: the finish that let it in); /metrics and the status page
#      are fetched every 0.5 s meanwhile and must answer 200 each time.
# usage: sudo bench/serve.sh [M] [N]   M=0 skips part 1
#   BUILD=DIR (default build/), SERVE_CAP=C (runs.max_concurrent and
#   max_per_repo, default 4). Exits non-zero when a row is lost or a page fails.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
M=${1:-5} N=${2:-60} CAP=${SERVE_CAP:-4}
BUILD=${BUILD:-$top/build}
export AIRLOCK=$BUILD/src/cli/airlock AIRLOCK_SRC=$top AIRLOCK_FORGE=$BUILD/tests/forge-emulator/airlock-forge
. "$top/tests/integration/lib.sh"
. "$top/tests/integration/forgeenv.sh"
. "$top/tests/integration/serveenv.sh"
# intake limits above the backlog (all rows are one repository and sender)
export SV_MAX_QUEUED=$((N + 10)) SV_PER_SENDER=$((N + 10)) SV_PER_REPO=$((N + 10))
serve_env_start "$CAP" "$CAP" >/dev/null || { echo "bench: environment failed" >&2; exit 1; }
ms() { date +%s%3N; }
med() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
direct=() viad=()
[ "$M" -gt 0 ] && for i in $(seq 1 "$M"); do
  t0=$(ms); "$AIRLOCK" ticket "acme/tally#$i" -p "$FE_POLICY" --agent "$AIRLOCK_SRC/examples/agents/patch-agent" -q --record "$T_TMP/d$i.json" >/dev/null 2>&1; t1=$(ms)
  direct+=($((t1 - t0)))
  n=$((i + 20))
  t0=$(ms); id=$("$AIRLOCK" serve enqueue -c "$SV_CONF" "acme/tally#$n" 2>/dev/null)
  sv_wait "$id" 'succeeded|failed|refused' 300 >/dev/null; t1=$(ms)
  viad+=($((t1 - t0)))
done
if [ "$M" -gt 0 ]; then
dm=$(printf '%s\n' "${direct[@]}" | med); vm=$(printf '%s\n' "${viad[@]}" | med)
# the daemon's record of its own runs: started - created (queue wait + check), run wall
inner=$(sv_runs | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["runs"] if x["state"]=="succeeded"]; import statistics as s; print(int(s.median([x["finished_ms"]-x["started_ms"] for x in r])), int(s.median([x["started_ms"]-x["created_ms"] for x in r])))')
fi
kill "$SV_PID"; wait "$SV_PID" 2>/dev/null

# 2. a second daemon whose runs are a stub
mkdir -p "$SV_DIR/stub"; chmod 700 "$SV_DIR/stub"
cat >"$SV_DIR/stub/airlock" <<'SH'
#!/bin/sh
# argv: ticket REPO#N -p POLICY --record FILE ...
rec=$6
printf '{"run_id":"stub","pull_request":{"url":"https://forge.test/stub/%s","verified":true},"revocation":{"tokens":[]}}' "${2#*#}" >"$rec"
SH
chmod 755 "$SV_DIR/stub/airlock"
sed -e "s|state_dir: .*|state_dir: $SV_DIR/state2|" -e "s|  max_concurrent: .*|  max_concurrent: $CAP\n  airlock: $SV_DIR/stub/airlock|" "$SV_CONF" >"$SV_DIR/stub.yaml"
SV_CONF=$SV_DIR/stub.yaml; mkdir -p "$SV_DIR/state2"; chmod 700 "$SV_DIR/state2"
rm -f "$SV_DIR/state/listen.json"
# the backlog: every row queued before the daemon that drains them starts
t0=$(ms)
for i in $(seq 1 "$N"); do
  "$AIRLOCK" serve enqueue -c "$SV_CONF" "acme/tally#$((i + 100))" >/dev/null 2>>"$SV_DIR/enqueue.err" ||
    { echo "bench: serve enqueue of row $i failed: $(tail -2 "$SV_DIR/enqueue.err")" >&2; exit 1; }
done
t1=$(ms)
"$AIRLOCK" serve -c "$SV_CONF" >>"$SV_DIR/serve2.log" 2>&1 & SV_PID=$!; on_exit "kill $SV_PID"
for _ in $(seq 100); do [ -s "$SV_DIR/state2/listen.json" ] && break; sleep 0.05; done
SV_STATUS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$SV_DIR/state2/listen.json") ||
  { echo "bench: the stub daemon did not start: $(tail -3 "$SV_DIR/serve2.log")" >&2; exit 1; }
t1s=$(ms)
# the drain, watched through the database (runs.json lists the last 500),
# the two pages fetched every 0.5 s meanwhile: code and ms per fetch
db=$SV_DIR/state2/queue.db
left() { python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True,timeout=10); print(c.execute("select count(*) from runs where state in (\"queued\",\"running\")").fetchone()[0])' "$db"; }
: >"$SV_DIR/probes"
deadline=$(( $(ms) + 3600000 ))
while :; do
  for path in /metrics /; do
    curl -s -o /dev/null -m 10 -w "$path %{http_code} %{time_total}\n" "http://$SV_STATUS$path" >>"$SV_DIR/probes" || echo "$path 000 10" >>"$SV_DIR/probes"
  done
  l=$(left) || l=1
  [ "$l" = 0 ] && break
  [ "$(ms)" -gt "$deadline" ] && { echo "bench: $l rows still queued or running after an hour" >&2; exit 1; }
  sleep 0.5
done
t2=$(ms)
python3 - "$db" "$N" "$CAP" "$SV_DIR/probes" $((t1 - t0)) $((t2 - t1s)) "$t1s" <<'PY'
import sqlite3, statistics as st, sys
db, n, cap, probes, enq_ms, drain_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
up = int(sys.argv[7])  # the daemon answered: nothing could start before
c = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
rows = c.execute("select number, state, created_ms, checked_ms, started_ms, finished_ms, pr_url, attempts"
                 " from runs order by id").fetchall()
bad = []
nums = [r[0] for r in rows]
if len(rows) != n or len(set(nums)) != n:
    bad.append(f"{len(rows)} rows for {len(set(nums))} tickets, {n} enqueued")
bad += [f"#{r[0]} {r[1]} pr={r[6]}" for r in rows if r[1] != "succeeded" or not r[6]]
# dequeue-to-start: a row can start once it is queued and a slot is free;
# the k-th start (by time) past the cap waits for the (k-cap)-th finish
fin = sorted(r[5] for r in rows if r[5])
srt = sorted((r[4], r[2]) for r in rows if r[4])
d2s = [s - max(cr, up, fin[k - cap] if k >= cap else 0) for k, (s, cr) in enumerate(srt)]
c2s = [r[4] - r[3] for r in rows if r[3] and r[4]]
pr = {}
for line in open(probes):
    p, code, t = line.split()
    pr.setdefault(p, []).append((code, float(t) * 1000))
def q(v, f):
    v = sorted(v); return v[min(len(v) - 1, int(f * len(v)))]
print(f"| backlog of {n} rows (stub runs), cap {cap} | value | target |")
print("|---|---:|---:|")
print(f"| `serve enqueue`, {n} rows before the daemon starts | {enq_ms / n:.0f} ms per row | - |")
print(f"| drained: succeeded with their PR, exactly once | {sum(1 for r in rows if r[1] == 'succeeded' and r[6])}/{n} in {drain_ms / 1000:.1f} s ({n / (drain_ms / 1000):.1f} rows/s) | {n}/{n}, no loss |")
print(f"| dequeue-to-start p50 / p90 (started − max(queued, daemon up, the slot's free)) | {st.median(d2s):.0f} / {q(d2s, .9):.0f} ms | p50 ≤ 50 ms |")
if c2s:
    print(f"| of it, trigger check done → started p50 | {st.median(c2s):.0f} ms | - |")
for p in ("/metrics", "/"):
    v = pr.get(p, [])
    okc = sum(1 for code, _ in v if code == "200")
    print(f"| `GET {p}` during the drain: 200s, p50 / max | {okc}/{len(v)}, {st.median([t for _, t in v]):.1f} / {max(t for _, t in v):.1f} ms | every fetch 200 |")
    if okc != len(v):
        bad.append(f"GET {p}: {len(v) - okc} of {len(v)} fetches not 200")
m = st.median(d2s)
print(f"\ntarget dequeue-to-start p50 <= 50 ms: {m:.0f} ms: {'met' if m <= 50 else 'NOT met'} (N={n}, cap {cap})")
if bad:
    sys.exit("bench: " + "; ".join(bad[:10]))
PY
rc=$?
[ "$M" -gt 0 ] && cat <<MD

| measure | value |
|---|---:|
| \`airlock ticket\` directly, median of $M | $dm ms |
| the same ticket through \`airlock serve\` (enqueue → finished), median of $M | $vm ms |
| overhead of the daemon per run | $((vm - dm)) ms ($(python3 -c "print(f'{($vm-$dm)/$dm*100:.1f}')")%) |
| daemon: run wall (its child) / queued → started (tick + trigger check), medians | ${inner% *} ms / ${inner#* } ms |
MD
exit $rc
