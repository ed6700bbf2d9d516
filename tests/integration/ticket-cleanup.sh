#!/bin/bash
# airlock ticket (issue #29 item 6): an attempt that ends without a pull
# request deletes its run branch (it used to stay on the forge:
# `airlock/3-d197b559` after an interrupted attempt), recorded in the run
# record's branch_cleanup; a run whose PR is open keeps its branch.
# Control: the same probe (the forge's refs) sees the branch of the run
# that made its PR, and the push log shows the failing agent's branch was
# pushed before it was deleted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
AGENTS=$AIRLOCK_SRC/examples/agents
refs() { admin "/refs?repo=acme/tally" | python3 -c 'import json,sys; print(" ".join(sorted(k for k in json.load(sys.stdin) if k.startswith("refs/heads/airlock/"))))'; }
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# the control: a run that makes its PR keeps its branch, and the probe sees it
REC=$T_TMP/ok.json
"$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$AGENTS/patch-agent" --record "$REC" >"$T_TMP/ok.out" 2>&1
is "control: the run made its PR (exit 0)" "$?" 0
b1=$(rec "$REC" 'r["pull_request"]["branch"]')
like "control: its branch is on the forge (the probe sees a run branch)" "$(refs)" "refs/heads/$b1"
is "control: … and nothing was cleaned" "$(rec "$REC" 'r.get("branch_cleanup")')" None

# an agent that pushes its work, then fails: no PR
A=$T_TMP/agent; mkdir -p "$A"; chmod 755 "$A"
cp "$AGENTS/patch-agent" "$AGENTS/agentlib.py" "$A/"
cat >"$A/push-then-fail" <<'PY'
#!/usr/bin/python3
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
rc = subprocess.call([os.path.join(here, "patch-agent")])
print("patch-agent exited %d; now failing on purpose" % rc, flush=True)
sys.exit(1)
PY
chmod 755 "$A/push-then-fail"
REC=$T_TMP/fail.json
"$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$A/push-then-fail" --record "$REC" >"$T_TMP/fail.out" 2>&1; rc=$?
isnt "the failing agent's run fails" "$rc" 0
check "its record validates against docs/run-record.schema.json" validate_record "$REC"
b2=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([p["branch"] for p in [r.get("pull_request") or {}] if p.get("branch")] or [""])' "$REC" | tr -d "[]'")
[ -n "$b2" ] || b2=$(rec "$REC" 'r["branch_cleanup"]["branch"]' 2>/dev/null)
like "its run branch is airlock/1-<run> (another run of the same ticket)" "$b2" "^airlock/1-[0-9a-f]{8}\$"
pushed=$(admin /pushes | python3 -c 'import json,sys; b=sys.argv[1]; print(sum(1 for p in json.load(sys.stdin) if p.get("ref")=="refs/heads/"+b and p.get("accepted") and set(p.get("new",""))!={"0"}))' "$b2")
like "control: the agent did push that branch" "$pushed" '^[1-9]' || sed 's/^/#   /' "$T_TMP/fail.out" | tail -15
is "no PR from it" "$(admin /pulls | python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin) if p["head"]==sys.argv[1]))' "$b2")" 0
is "the record says the branch was deleted" "$(rec "$REC" 'r["branch_cleanup"]["status"]')" deleted
refs_now=$(refs)
if [[ " $refs_now " == *" refs/heads/$b2 "* ]]; then fail "the branch is gone from the forge"; diag "$refs_now"; else ok "the branch is gone from the forge"; fi
like "… the other run's branch (its PR is open) is still there" "$refs_now" "refs/heads/$b1"
is "the deletion is in the forge's push log, through the REST API" "$(admin /pushes | python3 -c 'import json,sys; print([p.get("via") for p in json.load(sys.stdin) if p.get("ref")=="refs/heads/"+sys.argv[1] and set(p.get("new",""))=={"0"}])' "$b2")" "['rest']"
is "no token is active after the run" "$(tokens_in active)" 0

done_testing
