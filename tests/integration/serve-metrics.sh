#!/bin/bash
# airlock serve (issue #29): every /metrics series and every /runs.json
# field is read back and checked against the queue's own rows and the run
# records: the denials are the counts the proxy recorded (the old binder
# stored the address of the text, and /metrics served it). The runs' agent
# first makes requests the proxy denies, then does the demo's patch.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
mkdir -p "$T_TMP/agent"; chmod 755 "$T_TMP/agent"
# the sandbox shows the agent its own directory only: the patch agent beside it
cp "$AIRLOCK_SRC/examples/agents/patch-agent" "$AIRLOCK_SRC/examples/agents/agentlib.py" "$T_TMP/agent/"
cat >"$T_TMP/agent/deny-then-patch" <<PY
#!/usr/bin/python3
import os, urllib.request
# requests the policy does not allow: the proxy denies each (its record)
for url in ("http://evil.example/a", "http://evil.example/b", "https://exfil.example/c"):
    try:
        urllib.request.urlopen(url, timeout=10).read()
    except Exception as e:
        print("denied as expected:", type(e).__name__, flush=True)
here = os.path.dirname(os.path.abspath(__file__))
os.execv(os.path.join(here, "patch-agent"), ["patch-agent"])
PY
chmod 755 "$T_TMP/agent/deny-then-patch"
SV_AGENT=$T_TMP/agent/deny-then-patch
serve_env_start 2 2 || { fail "forge + broker + serve environment"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -20; done_testing; exit 1; }
ok "serve on $SV_HOOK, forge on $FE_HTTPS"

fe_label 1 alice >/dev/null
fe_label 2 alice >/dev/null
fe_comment 3 bob "/airlock run" >/dev/null
for id in 1 2 3; do sv_wait "$id" 'succeeded|failed|refused' 240 >/dev/null; done
is "runs 1 and 2 succeeded, run 3 (bob) was refused" "$(sv_field 1 state) $(sv_field 2 state) $(sv_field 3 state)" "succeeded succeeded refused"
[ "$(sv_field 1 state)" = succeeded ] || { diag "run 1: $(sv_field 1 reason)"; sed 's/^/#   /' "$(sv_field 1 log)" | tail -30; }
sv_payload "$T_TMP/p.json" issues acme/tally 9 alice bug
sv_send issues d-ignored "$T_TMP/p.json" good >/dev/null
DB=$SV_DIR/state/queue.db
REC1=$(sv_field 1 record)
like "control: the proxy denied the agent's requests (run 1's record)" "$(python3 -c 'import json,sys; print(sum(1 for d in json.load(open(sys.argv[1]))["proxy_decisions"] if d.get("decision")=="deny"))' "$REC1")" '^[1-9]'

sv_get /metrics >"$T_TMP/metrics"
sv_runs >"$T_TMP/runs.json"
check "every /metrics series has the value the queue and the run records give it" python3 - "$T_TMP/metrics" "$DB" <<'PY'
import collections, json, re, sqlite3, sys
text, db = open(sys.argv[1]).read(), sqlite3.connect(sys.argv[2])
series = {}
for line in text.splitlines():
    if not line or line.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)(\{[^}]*\})? (\S+)', line)
    assert m, "not a sample line: %r" % line
    series[m.group(1) + (m.group(2) or "")] = float(m.group(3))
want = {"airlock_serve_leader": 1}
states = dict(db.execute("select state, count(*) from runs group by state"))
for st in ("queued", "running", "succeeded", "failed", "interrupted", "refused"):
    want['airlock_serve_runs{state="%s"}' % st] = states.get(st, 0)
for st, n, s in db.execute("select state, count(*), sum(finished_ms - started_ms) from runs"
                           " where finished_ms is not null and started_ms is not null group by state"):
    want['airlock_serve_run_duration_seconds_count{state="%s"}' % st] = n
    want['airlock_serve_run_duration_seconds_sum{state="%s"}' % st] = round(s / 1000.0, 3)
den, unconf = collections.Counter(), 0
for (rec,) in db.execute("select record from runs where record is not null and state not in ('queued','running')"):
    r = json.load(open(rec))
    den.update(d.get("reason") or "unknown" for d in r.get("proxy_decisions", []) if d.get("decision") == "deny")
    unconf += sum(1 for t in r.get("revocation", {}).get("tokens", []) if not t.get("confirmed_401"))
assert den, "the records hold no denial: the test proves nothing"
for k, n in den.items():
    want['airlock_serve_denials_total{reason="%s"}' % k] = n
want['airlock_serve_tokens_outstanding{source="running"}'] = 2 * states.get("running", 0)
want['airlock_serve_tokens_outstanding{source="unconfirmed"}'] = unconf
want["airlock_serve_queue_depth"] = states.get("queued", 0)
for o, n in db.execute("select case when instr(coalesce(outcome,''),':')>0 then substr(outcome,1,instr(outcome,':')-1)"
                       " else coalesce(outcome,'none') end, count(*) from deliveries group by 1"):
    want['airlock_serve_webhook_deliveries_total{outcome="%s"}' % o] = n
bad = [(k, series.get(k), v) for k, v in want.items() if series.get(k) != v]
extra = sorted(set(series) - set(want))
if bad or extra:
    print("mismatch (series, served, expected):", bad, "served but not expected:", extra)
    sys.exit(1)
print(len(want), "series checked")
PY
check "every /runs.json field is the queue row's, and the run record's where the record has it" python3 - "$T_TMP/runs.json" "$DB" <<'PY'
import collections, json, sqlite3, sys
d, db = json.load(open(sys.argv[1])), sqlite3.connect(sys.argv[2])
db.row_factory = sqlite3.Row
rows = {r["id"]: dict(r) for r in db.execute("select * from runs")}
assert len(d["runs"]) == len(rows), (len(d["runs"]), len(rows))
for r in d["runs"]:
    q = rows[r["id"]]
    assert set(r) == set(q) | {"events"}, ("fields", sorted(set(r) ^ set(q)))
    for k, v in q.items():
        if k == "denials":
            v = json.loads(v) if v is not None else None
        assert r[k] == v, (r["id"], k, r[k], v)
    ev = [tuple(e) for e in db.execute("select ms, what from events where run=? order by rowid", (r["id"],))]
    assert [(e["ms"], e["what"]) for e in r["events"]] == ev, (r["id"], "events")
    for e in r["events"]:
        assert e["ms"] > 10**12, ("events.ms is wall-clock ms", e)
    if r["record"] and r["state"] not in ("queued", "running"):
        rec = json.load(open(r["record"]))
        assert r["run_id"] == rec["run_id"], ("run_id", r["id"])
        den = collections.Counter(x.get("reason") or "unknown" for x in rec.get("proxy_decisions", []) if x.get("decision") == "deny")
        assert r["denials"] == dict(den), ("denials", r["id"], r["denials"], dict(den))
        pr = rec.get("pull_request") or {}
        assert r["pr_url"] == (pr.get("url") if pr.get("verified") else None), ("pr_url", r["id"])
        unc = sum(1 for t in rec.get("revocation", {}).get("tokens", []) if not t.get("confirmed_401"))
        assert r["tokens_unconfirmed"] == unc, ("tokens_unconfirmed", r["id"])
st = d["stats"]
assert {x["state"]: x["n"] for x in st["states"]} == dict(db.execute("select state, count(*) from runs group by state"))
den = collections.Counter()
for r in d["runs"]:
    den.update(r["denials"] or {})
assert {x["reason"]: x["n"] for x in st["denials"]} == dict(den), (st["denials"], den)
assert [x["id"] for x in d["deliveries"]] == [x[0] for x in db.execute("select id from deliveries order by received_ms desc, rowid desc")]
print(len(d["runs"]), "runs checked")
PY
# a metric's value is stable across reads (no address, no garbage)
is "two reads of /metrics are the same" "$(sv_get /metrics | md5sum)" "$(md5sum <"$T_TMP/metrics")"
done_testing
