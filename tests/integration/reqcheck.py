#!/usr/bin/env python3
"""Compare a run record's "requests" with the test forge's request log of
that run (tests/integration/ticket-requests.sh). Usage:
  reqcheck.py RECORD LOG   -> prints one line per check: "ok NAME" or
                              "MISMATCH NAME record=X log=Y", then a
                              summary line "counted=N sent=N nm=N".
The log's processes, by User-Agent: airlock-broker/ the broker,
airlock/ and airlock-audit/ the supervisor, anything else the agent
through the gateway. The record is written before the review notes are
posted and the review lease is closed: the log's tail from the
supervisor's last request (the notes' POST .../comments) on is not in it,
and must hold only that POST and the broker's revocations."""
import json, sys

rec = json.load(open(sys.argv[1]))["requests"]
log = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]

def proc(e):
    ua = e.get("ua", "")
    if ua.startswith("airlock-broker/"):
        return "broker"
    if ua.startswith("airlock/") or ua.startswith("airlock-audit/"):
        return "supervisor"
    return "gateway"

sup_idx = [i for i, e in enumerate(log) if proc(e) == "supervisor"]
cut = sup_idx[-1] if sup_idx else len(log)
tail = log[cut:]
out = []
notes = tail[:1]
if not notes or notes[0]["method"] != "POST" or not notes[0]["path"].endswith("/comments"):
    out.append("MISMATCH after-record: the supervisor's last request is not the notes' POST: %r" % (notes,))
elif any(proc(e) != "broker" for e in tail[1:]):
    out.append("MISMATCH after-record: more than the notes and the broker's revocations after the record")
else:
    out.append("ok after-record")
body = log[:cut]

def counts(p):
    es = [e for e in body if proc(e) == p]
    return {"sent": len(es), "not_modified": sum(e["not_modified"] for e in es),
            "app": sum(e["auth"] == "jwt" for e in es), "git": sum(e["kind"] == "git" for e in es),
            "rejected": sum(e["status"] == 401 for e in es)}

procs = rec["processes"]
for p in ("supervisor", "broker", "gateway"):
    c = counts(p)
    keys = ("sent", "not_modified", "git", "rejected") if p == "gateway" else ("sent", "not_modified", "app", "rejected")
    for k in keys:
        a, b = procs[p][k], c[k]
        out.append(("ok %s.%s" % (p, k)) if a == b else "MISMATCH %s.%s record=%s log=%s" % (p, k, a, b))
sent = len(body)
nm = sum(e["not_modified"] for e in body)
app = sum(e["auth"] == "jwt" for e in body)
git = sum(e["kind"] == "git" for e in body)
rej = sum(e["status"] == 401 for e in body)
counted = sent - nm - app - git - rej
for k, v in (("sent", sent), ("not_modified", nm), ("app", app), ("git", git), ("rejected", rej),
             ("counted", counted)):
    out.append(("ok %s" % k) if rec[k] == v else "MISMATCH %s record=%s log=%s" % (k, rec[k], v))
# the lowest x-ratelimit-remaining the supervisor was answered
sup_rem = [e["remaining"] for e in body if proc(e) == "supervisor" and e.get("remaining", -1) >= 0]
want = min(sup_rem) if sup_rem else None
got = rec.get("rate_limit", {}).get("remaining")
out.append("ok rate_limit" if got == want else "MISMATCH rate_limit record=%s log=%s" % (got, want))
phase_sum = sum(sum(v.values()) for v in rec["phases"].values())
out.append("ok phases-sum" if phase_sum == rec["sent"] else "MISMATCH phases-sum %s != sent %s" % (phase_sum, rec["sent"]))
print("\n".join(out))
after = sum(1 for e in tail if e["status"] != 401 and e["auth"] != "jwt")
print("counted=%d sent=%d nm=%d app=%d git=%d rejected=%d after=%d after_counted=%d"
      % (counted, sent, nm, app, git, rej, len(tail), after))
