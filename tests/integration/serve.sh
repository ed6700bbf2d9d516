#!/bin/bash
# airlock serve (issue #20) end to end on airlock-forge: a label makes a PR
# with no one at a terminal; a comment command from a user without write
# permission does nothing (recorded); hostile webhooks are refused without
# effect; the status page, JSON and metrics show it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
serve_env_start 2 2 || { fail "forge + broker + serve environment"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -20; done_testing; exit 1; }
ok "serve on $SV_HOOK (webhook) and $SV_STATUS (status), forge on $FE_HTTPS"
MAIN0=$(main_sha)

# --- a label makes a PR, no one at a terminal ---
out=$(fe_label 1 alice)
is "the forge delivered the label event and the service accepted it (202)" "$(json_get "$out" status)" 202
st=$(sv_wait 1 'succeeded|failed|refused' 180)
is "run 1 (label by alice, admin) succeeded" "$st" succeeded
[ "$st" = succeeded ] || { diag "$(sv_field 1 reason)"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -5; }
like "its PR is on the forge, from airlock/1-*" "$(sv_field 1 pr_url)" '^https://forge\.test:[0-9]+/acme/tally/pull/[0-9]+$'
is "one open PR from airlock/1-*" "$(pulls_for 1)" 1
like "the check is in the queue row: the forge's answer for alice" "$(sv_field 1 check_detail)" 'alice has permission `admin`'
is "the permission column" "$(sv_field 1 permission)" admin
is "main is untouched" "$(main_sha)" "$MAIN0"
is "no token is active after the run" "$(tokens_in active)" 0
check "the run's record validates" validate_record "$(sv_field 1 record)"
like "the record was written by the child (airlock ticket)" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["pull_request"]["verified"], r["revocation"]["all_dead"])' "$(sv_field 1 record)")" '^True True$'

# --- who may trigger is the forge's answer, not the payload ---
out=$(fe_comment 3 bob "/airlock run")
is "bob's comment was accepted as a delivery (queued for the check)" "$(json_get "$out" status)" 202
st=$(sv_wait 2 'succeeded|failed|refused|running' 60)
is "bob (no permission) is refused" "$st" refused
like "the refusal names the forge's answer" "$(sv_field 2 reason)" 'bob may not trigger a run: permission `none`'
is "no PR for ticket 3" "$(pulls_for 3)" 0
out=$(fe_comment 3 mallory "/airlock run please")
st=$(sv_wait 3 'succeeded|failed|refused|running' 60)
is "mallory (read) is refused" "$st" refused
is "the queue row records mallory's permission" "$(sv_field 3 permission)" read
out=$(fe_comment 4 mona "/airlock run")
st=$(sv_wait 4 'succeeded|failed|refused' 180)
is "mona (maintain = write) may trigger: her run succeeded" "$st" succeeded
like "her role is recorded" "$(sv_field 4 check_detail)" 'mona has permission `write` \(role maintain\)'
out=$(fe_comment 5 carol "please /airlock run")
is "a comment that does not start with the command is ignored (202)" "$(json_get "$out" status)" 202
out=$(fe_label 5 carol acme/tally bug)
is "another label is ignored" "$(json_get "$out" status)" 202
is "neither made a run" "$(sv_runs | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')" 4

done_testing
