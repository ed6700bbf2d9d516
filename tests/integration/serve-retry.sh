#!/bin/bash
# airlock serve (issue #29): an attempt whose fence check cannot reach the
# forge is retried. The check (ticket_fence.c: no open airlock/<ticket>-*
# PR, the token current) is the outputs phase's first step, before any
# write; under load it timed out and the row was marked failed and never
# retried (serve-restart lost 3 of 30 tickets that way). The agent waits
# behind a gate, so the forge's fault (502 on the open-PR listing, for as
# many tries as the forge client makes) is in place before the check and
# after serve's own trigger check, which lists the same route.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
sv_gated_agent "$T_TMP/agent"
serve_env_start 2 2 || { fail "forge + broker + serve environment"; done_testing; exit 1; }

fe_label 1 alice >/dev/null
st=$(sv_wait 1 running 120)
is "the run is running, its agent behind the gate" "$st" running
admin_post /faults '{"faults":[{"path":"/repos/acme/tally/pulls","method":"GET","status":502,"times":3}]}' >/dev/null
touch "$T_TMP/agent/open"
st=$(sv_wait 1 'succeeded|failed|refused' 300)
hits=$(admin /faults | python3 -c 'import json,sys; print(sum(f.get("hits",0) for f in json.load(sys.stdin)))')
admin_post /faults '{"faults":[]}' >/dev/null
like "the fault met the fence check's listing (every try of the forge client)" "$hits" '^[23]$'
events=$(sv_runs | python3 -c 'import json,sys; r=next(r for r in json.load(sys.stdin)["runs"] if r["id"]==1); print(" | ".join(e["what"] for e in r["events"]))')
like "attempt 1 stopped at the fence check, for the forge's answer, and was retried" "$events" "transient failure \(.*fence: listing the ticket's open pull requests.*\); retry 1 of 1"
is "2 attempts" "$(sv_field 1 attempts)" 2
R1=$SV_DIR/state/records/1-1.json
is "attempt 1's record: the fence check unanswered (what serve retries on)" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fence"]["status"])' "$R1" 2>&1)" unanswered
check "attempt 1's record validates against docs/run-record.schema.json" validate_record "$R1"
is "the ticket ends succeeded" "$st" succeeded
is "one PR for the ticket" "$(pulls_for 1)" 1
is "no token is active" "$(tokens_in active)" 0
done_testing
