#!/bin/bash
# Reading run records (issue 27, item 7): `airlock runs`, `airlock show`,
# `airlock gc` on records of real `airlock ticket` runs against the test
# forge (one that opens a PR, one hostile), then on hostile record files: a
# malformed one, one of the wrong types, one full of escape sequences; gc's
# --keep and --older-than on files whose mtime the test sets, and its
# refusal to remove what is not a run record. The record's new fields: the
# agent's binary digest and the policy's canonical text.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"

# --- what needs no forge: usage ---
"$AIRLOCK" gc --dir "$T_TMP/none" >"$T_TMP/u.out" 2>&1
is "gc without --keep or --older-than is a usage error" "$?" 2
like "... naming both options, then the usage lines" "$(tr '\n' ' ' <"$T_TMP/u.out")" 'airlock gc: give --keep N, --older-than DURATION or both.*usage: airlock gc'
"$AIRLOCK" runs --limit 010 --dir "$T_TMP/none" >/dev/null 2>&1
is "runs --limit 010 (a leading zero) is a usage error" "$?" 2
"$AIRLOCK" runs --keep 3 --dir "$T_TMP/none" >"$T_TMP/u.out" 2>&1
is "runs --keep (gc's option) is a usage error" "$?" 2
"$AIRLOCK" show --dir "$T_TMP/none" >/dev/null 2>&1
is "show without RUN is a usage error" "$?" 2
out=$("$AIRLOCK" gc --keep 1 --dir "$T_TMP/none" 2>&1); rc=$?
like "gc --dir of a directory that does not exist: exit 0, and says so" "$rc/$out" "^0/$T_TMP/none: 0 record\(s\) removed.*; no such directory$"
mkdir -p "$T_TMP/empty-gc"
check_not "control: an empty directory that exists is not called absent" grep -q 'no such directory' <<<"$("$AIRLOCK" gc --keep 1 --dir "$T_TMP/empty-gc" 2>&1)"
rmdir "$T_TMP/empty-gc"
"$AIRLOCK" gc --older-than 7 --dir "$T_TMP/none" >"$T_TMP/u.out" 2>&1
is "gc --older-than 7 (no unit) is a usage error" "$?" 2
out=$("$AIRLOCK" runs --dir "$T_TMP/none" 2>&1); rc=$?
is "runs on a missing directory: exit 0" "$rc" 0
like "... saying there are none" "$out" "no run records in $T_TMP/none"

# --- a DNS failure is not a denial (issue 27, a newcomer's nit) ---
F=$T_TMP/fail-dir
mkdir -p "$F"
# the proxy counts them apart (proxy/stats.c: al_proxy_reason_is_failure);
# the reader shows what the record says
printf '{"schema": "airlock.run-record/1", "run_id": "4444444444444444", "proxy_decision_counts": {"connections": 4, "allowed": 1, "denied": 1, "failed": 2, "denials": {"dns-failed": 2, "not-allowed": 1}}}\n' >"$F/4444444444444444.json"
printf '{"schema": "airlock.run-record/1", "run_id": "5555555555555555", "proxy_decision_counts": {"connections": 4, "allowed": 1, "denied": 3, "failed": 0, "denials": {"sni-mismatch": 2, "not-allowed": 1}}}\n' >"$F/5555555555555555.json"
den() { "$AIRLOCK" runs --json --dir "$F" | jq -r ".[] | select(.id == \"$1\") | .denials"; }
is "runs: two DNS failures and one refusal count one denial" "$(den 4444444444444444)" 1
is "control: three refusals count three" "$(den 5555555555555555)" 3
like "show: the DNS failures are failed, not denied" "$("$AIRLOCK" show --dir "$F" 4444444444444444 2>&1)" 'proxy: 4 connections, 1 allowed, 1 denied, 2 failed \(DNS, connect\)'

# airlock serve names its records ROW-ATTEMPT.json: runs and gc read them too
G=$T_TMP/serve-records; mkdir -p "$G"
printf '{"schema": "airlock.run-record/1", "run_id": "7777777777777777", "exit_status": 0}\n' >"$G/12-1.json"
printf '{"schema": "airlock.run-record/1", "run_id": "7777777777777778", "exit_status": 0}\n' >"$G/12-x.json"
is "runs: a serve record (records/12-1.json) is listed; control: 12-x.json is no record's name" "$("$AIRLOCK" runs --json --dir "$G" | jq -r '.[].id')" 7777777777777777
like "gc: it is counted" "$("$AIRLOCK" gc --keep 0 --dry-run --dir "$G" 2>&1)" '1 record\(s\) would be removed, 0 kept'
printf '{"schema": "airlock.run-record/1", "run_id": "6666666666666666", "audit": {"status": "does-not-hold", "holds": false, "not_holding": "B1 required reviews", "report": {"branch": "main", "counts": {"warn": 2}, "criteria": [{"id": "B1", "title": "required reviews", "status": "FAIL"}, {"id": "C3", "title": "workflow runs on airlock branches", "status": "WARN", "evidence": "ci.yml runs on push to airlock/*", "fix": "drop airlock/* from its push branches"}, {"id": "D2", "title": "code owners \\u001b[31mreview", "status": "WARN"}, {"id": "E1", "title": "not a warning", "status": "PASS"}, 7]}, "accepted_unprotected": true}}\n' >"$F/6666666666666666.json"
out=$("$AIRLOCK" show --dir "$F" 6666666666666666 2>&1)
like "show: each WARN criterion by id and what the audit saw, then its fix (the title when there is no evidence)" "$(tr '\n' ' ' <<<"$out")" 'WARN C3: ci.yml runs on push to airlock/\* +fix: drop airlock/\* from its push branches +WARN D2: code owners \\x1b\[31mreview'
# git's credential-less first try is counted challenged in the summary
# line, and its row says so too (a new user read "0 refused" above rows
# that said deny)
printf '{"schema": "airlock.run-record/1", "run_id": "8888888888888888", "gateway_summary": {"requests": 3, "allowed": 0, "refused": 1, "challenged": 2}, "gateway_decisions": [{"decision": "deny", "method": "GET", "host": "api.forge.test", "path": "/repos/acme/tally", "rule": "repo-read", "reason": "credential-missing", "status": 401}, {"decision": "deny", "method": "GET", "host": "api.forge.test", "path": "/repos/acme/tally", "rule": "repo-read", "reason": "credential-missing", "status": 401}, {"decision": "deny", "method": "POST", "host": "git.forge.test", "path": "/acme/tally.git/git-receive-pack", "rule": "git-push", "reason": "push-other-branch", "status": 200}]}\n' >"$F/8888888888888888.json"
gout=$("$AIRLOCK" show --dir "$F" 8888888888888888 2>&1)
like "show: a credential challenge's row says challenged, as the summary counts it" "$gout" 'challenged +GET repo-read +credential-missing +x2'
like "show: ... and a refusal's row still says deny" "$gout" 'deny +POST git-push +push-other-branch +x1'
# airlock serve names its records ROW-ATTEMPT.json: show finds one by the
# run id runs lists for it (a new user got "no record with that id")
SV=$T_TMP/serve-records; mkdir -p "$SV"
printf '{"schema": "airlock.run-record/1", "run_id": "990477ab69eae6f7", "ticket": {"repo": "acme/tally", "number": 1}}\n' >"$SV/1-1.json"
like "control: runs lists the serve record by the id inside it" "$("$AIRLOCK" runs --dir "$SV" 2>&1)" '^990477ab69eae6f7 '
like "show finds a serve record (1-1.json) by that id's prefix" "$("$AIRLOCK" show --dir "$SV" 9904 2>&1)" 'run 990477ab69eae6f7'
out9=$("$AIRLOCK" show --dir "$SV" abcd 2>&1); rc=$?
like "show: an id no record has is still 'no record' (exit 1)" "$rc/$out9" '^1/.*no record with that id'
if grep -qE 'WARN (B1|E1)' <<<"$out"; then fail "show: ... only the WARN ones (a FAIL and a PASS in the same list are not)"; else ok "show: ... only the WARN ones (a FAIL and a PASS in the same list are not)"; fi
# a file that runs outside the sandbox in two families is two notes but one
# file: show says both counts, so they match the demo's "N file(s)"
printf '{"schema": "airlock.run-record/1", "run_id": "7777777777777777", "review": {"runs_outside_sandbox": [{"file": ".github/workflows/ci.yml", "family": "ci", "why": "a"}, {"file": ".github/workflows/ci.yml", "family": "actions", "why": "b"}, {"file": "Makefile", "family": "build", "why": "c"}]}}\n' >"$F/7777777777777777.json"
o7=$("$AIRLOCK" show --dir "$F" 7777777777777777 2>&1)
like "show: notes that share a file are counted in files too" "$o7" 'runs_outside_sandbox: 3, in 2 file\(s\)'
like "show: the audit section, its status and branch" "$out" 'audit: does-not-hold \(branch main\)'
like "show: what does not hold, and the override" "$(tr '\n' ' ' <<<"$out")" 'not holding: B1 required reviews.*ACCEPTED UNPROTECTED'
like "control: a record without an audit says so" "$("$AIRLOCK" show --dir "$F" 5555555555555555 2>&1)" 'audit: none recorded'

# --- hostile record files (no forge needed) ---
H=$T_TMP/hostile-dir
mkdir -p "$H"
echo '{"schema": "airlock.run-record/1", "run_id": "1111111111111111", "phases": [' >"$H/1111111111111111.json"
python3 - "$H" <<'PY'
import json, sys, os
d = sys.argv[1]
# the wrong types everywhere
json.dump({"schema": "airlock.run-record/1", "run_id": "2222222222222222", "phases": "x",
           "ticket": [1], "pull_request": {"verified": "yes", "url": 7}, "agent": 5,
           "proxy_decisions": [1, None, {"event": 3}, {"event": "deny-aggregate", "count": "9"}],
           "proxy_decision_counts": {"denied": -5}, "gateway_decisions": {"a": 1},
           "gateway_summary": [], "review": {"files": [None, 3, {"file": {}}], "secrets": "s"},
           "revocation": {"tokens": [7]}, "exit_status": 99999, "started_at": 12},
          open(os.path.join(d, "2222222222222222.json"), "w"))
# escape sequences: OSC title, CSI clear screen, CR, BEL, C1 CSI, RTL override
E = "\x1b]0;pwned\x07\x1b[2J\r\u009b31m\u202eevil"
json.dump({"schema": "airlock.run-record/1", "run_id": "3333333333333333",
           "started_at": E, "ticket": {"repo": "a/b" + E, "number": 1}, "error": E,
           "phases": [{"name": "agent" + E, "ms": 1, "status": "failed", "detail": E}],
           "agent": {"argv": [E], "exit_status": 1},
           "proxy_decisions": [{"event": "deny", "decision": "deny", "host": E, "port": 443,
                                "reason": E}],
           "gateway_decisions": [{"decision": "deny", "method": E, "host": E, "path": E,
                                  "reason": E, "rule": E}],
           "pull_request": {"verified": True, "url": E, "branch": E},
           "review": {"files": [{"file": E, "status": E}], "could_not_read": [E]},
           "revocation": {"all_dead": False, "tokens": [{"role": E, "fingerprint": E}]}},
          open(os.path.join(d, "3333333333333333.json"), "w"))
PY
has_raw_escapes() { # stdin holds a byte a terminal acts on
  python3 -c 'import sys; b=sys.stdin.buffer.read(); sys.exit(0 if any(x in b for x in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b", b"\xe2\x80\xae")) else 1)'
}
# control: the probe finds the sequences in the record's decoded text
python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["error"])' "$H/3333333333333333.json" >"$T_TMP/ctl.out"
check "control: the escape-laden record's text holds raw terminal escapes (the probe sees them)" has_raw_escapes <"$T_TMP/ctl.out"
"$AIRLOCK" runs --dir "$H" >"$T_TMP/h-runs.out" 2>&1; rc=$?
is "runs on hostile records: exit 0, no crash" "$rc" 0
like "... the malformed record is listed with the reason" "$(cat "$T_TMP/h-runs.out")" '1111111111111111 +- +not a readable record: +`1111111111111111.json`: not JSON'
like "... the record of wrong types is listed" "$(cat "$T_TMP/h-runs.out")" '^2222222222222222 '
like "... the escape-laden record is listed, escaped" "$(cat "$T_TMP/h-runs.out")" '3333333333333333 \\x1b\]0;pwned'
like "... a cell too wide for its column ends in ... (not cut silently)" "$(grep '^3333333333333333 ' "$T_TMP/h-runs.out")" '^3333333333333333 \\x1b\]0;pwned[^ ]*\.\.\. '
check_not "runs prints no raw escape, CR, C1 or bidi character" has_raw_escapes <"$T_TMP/h-runs.out"
"$AIRLOCK" runs --json --dir "$H" >"$T_TMP/h-runs.json" 2>&1
check "runs --json on hostile records is valid JSON with 3 entries" python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert len(a)==3, a; assert "not JSON" in [x for x in a if x["file"].endswith("1111111111111111.json")][0]["error"]' "$T_TMP/h-runs.json"
check_not "runs --json prints no raw escape" has_raw_escapes <"$T_TMP/h-runs.json"
"$AIRLOCK" show 3333 --dir "$H" >"$T_TMP/h-show.out" 2>&1; rc=$?
is "show of the escape-laden record: exit 0" "$rc" 0
like "... its text shown escaped" "$(cat "$T_TMP/h-show.out")" 'error: \\x1b\]0;pwned\\x07\\x1b\[2J\\x0d\\xc2\\x9b31m\\u202eevil'
check_not "show prints no raw escape, CR, C1 or bidi character" has_raw_escapes <"$T_TMP/h-show.out"
"$AIRLOCK" show --json 3333 --dir "$H" >"$T_TMP/h-show.json" 2>&1
check_not "show --json prints no raw escape (JSON escapes, ASCII only)" has_raw_escapes <"$T_TMP/h-show.json"
check "show --json is the record" python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))==json.load(open(sys.argv[2]))' "$T_TMP/h-show.json" "$H/3333333333333333.json"
"$AIRLOCK" show 2222222222222222 --dir "$H" >"$T_TMP/h-show2.out" 2>&1; rc=$?
is "show of a record of wrong types: exit 0 (every value type-checked)" "$rc" 0
"$AIRLOCK" show 1111 --dir "$H" >"$T_TMP/h-show1.out" 2>&1; rc=$?
is "show of the malformed record: exit 1" "$rc" 1
like "... saying why" "$(cat "$T_TMP/h-show1.out")" 'airlock show: `.*1111111111111111.json`: not JSON'
"$AIRLOCK" show abcd --dir "$H" >"$T_TMP/h-show3.out" 2>&1; rc=$?
is "show of an unknown id: exit 1" "$rc" 1
cp "$H/2222222222222222.json" "$H/2222222222222223.json"
"$AIRLOCK" show 2222 --dir "$H" >"$T_TMP/h-show4.out" 2>&1; rc=$?
is "show of an ambiguous prefix: exit 1" "$rc" 1
like "... naming the candidates" "$(cat "$T_TMP/h-show4.out")" '2 records start with it \(2222222222222223, 2222222222222222\)'
"$AIRLOCK" show 'zz;rm' --dir "$H" >/dev/null 2>&1
is "show of a malformed id: exit 2 (usage: neither an id, a prefix nor a path)" "$?" 2
ln -s "$H/3333333333333333.json" "$H/4444444444444444.json"
"$AIRLOCK" show 4444 --dir "$H" >"$T_TMP/h-show5.out" 2>&1; rc=$?
is "show refuses a record that is a symlink (exit 1)" "$rc" 1
like "... saying so" "$(cat "$T_TMP/h-show5.out")" 'a symlink, not a run record'

# --- real records from airlock ticket against the test forge ---
if [ "$(id -u)" != 0 ]; then
  skip "ticket runs need root (the forge's data dir and the sandbox as root)"
elif [ ! -x "${AIRLOCK_FORGE:-}" ]; then
  skip "airlock-forge was not built"
elif ! forge_env_start; then
  fail "forge + broker environment"
else
  AGENTS=$AIRLOCK_SRC/examples/agents
  export XDG_STATE_HOME=$T_TMP/state # the default directory, this test's own
  RD=$XDG_STATE_HOME/airlock/runs
  "$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$AGENTS/patch-agent" >"$T_TMP/t1.out" 2>&1
  is "a ticket run that opens a PR exits 0" "$?" 0
  touch -d '-2 seconds' "$RD"/*.json # the first run is the older one, whatever the clock's grain
  "$AIRLOCK" ticket acme/tally#2 -p "$FE_POLICY" --agent "$AGENTS/hostile-agent" >"$T_TMP/t2.out" 2>&1
  hostile_rc=$?
  ls "$RD" >"$T_TMP/ls.out"
  is "two records in the default directory" "$(grep -c '^[0-9a-f]\{16\}\.json$' "$T_TMP/ls.out")" 2
  R1=$(grep -l '"number": 1' "$RD"/*.json | head -1); R2=$(grep -l '"number": 2' "$RD"/*.json | head -1)
  ID1=$(basename "$R1" .json); ID2=$(basename "$R2" .json)
  check "the records validate against the schema (exit_status, agent.binary, policy.canonical)" validate_record "$R1"
  check "... the hostile run's too" validate_record "$R2"
  is "the record's agent digest is the SHA-256 of the agent file" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agent"]["binary"]["sha256"])' "$R1")" \
    "$(sha256sum "$AGENTS/patch-agent" | cut -d' ' -f1)"
  is "the record's policy text hashes to the policy's sha256" \
    "$(python3 -c 'import json,sys,hashlib; p=json.load(open(sys.argv[1]))["policy"]; print(hashlib.sha256(p["canonical"].encode()).hexdigest()==p["sha256"], json.loads(p["canonical"])["credentials"]["mode"])' "$R1")" "True sealed"
  is "the record holds airlock ticket's exit status" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_status"])' "$R1") $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_status"])' "$R2")" "0 $hostile_rc"

  out=$("$AIRLOCK" runs 2>&1); rc=$?
  is "runs: exit 0" "$rc" 0
  like "runs lists the newest first: the hostile run, then the PR run" "$(tr '\n' ' ' <<<"$out")" "^ID +STARTED +TICKET +RESULT +DENIALS +PULL REQUEST +$ID2 .* acme/tally#2 .* $ID1 [0-9T:-]+Z +acme/tally#1 +0 \(pull request\) +0 +https://forge.test:[0-9]+/acme/tally/pull/[0-9]+"
  like "the hostile run shows its denials" "$(grep "^$ID2" <<<"$out")" "acme/tally#2 +$hostile_rc \([a-z ]+.*\) +[1-9][0-9]* +https://"
  like "runs --limit 1 shows one, and says how many are left" "$("$AIRLOCK" runs --limit 1 2>&1 | tr '\n' ' ')" "$ID2 .*\(1 older run\(s\) not shown"
  check "runs --json: both, with their results" python3 -c '
import json, subprocess, sys
a = json.loads(subprocess.run([sys.argv[1], "runs", "--json"], capture_output=True, check=True).stdout)
assert [x["id"] for x in a] == [sys.argv[3], sys.argv[2]], a
assert a[1]["exit_status"] == 0 and a[1]["result"] == "pull request" and a[1]["pull_request"], a[1]
assert a[0]["denials"] > 0, a[0]' "$AIRLOCK" "$ID1" "$ID2"

  out=$("$AIRLOCK" show "${ID1:0:6}" 2>&1); rc=$?
  is "show PREFIX: exit 0" "$rc" 0
  like "show: the phases with their times" "$(tr '\n' ' ' <<<"$out")" 'phases: +policy +ok +[0-9]+ ms.* agent +ok +[0-9]+ ms.* release +ok .* review +ok'
  like "show: the agent's digest" "$out" "agent $AGENTS/patch-agent sha256:[0-9a-f]{64}, exit 0"
  like "show: the proxy's decisions grouped with counts" "$out" 'allow +forge.test:[0-9]+ +gateway +x[0-9]+'
  like "show: the PR, verified" "$out" 'pull request: https://forge.test:[0-9]+/acme/tally/pull/[0-9]+ \(verified on the forge'
  like "show: the review notes" "$(tr '\n' ' ' <<<"$out")" 'review notes: +files: 1 +modified tally/stats.py'
  like "show: every token revoked" "$(tr '\n' ' ' <<<"$out")" 'tokens: all dead +git +sha256:[0-9a-f]{12} revoked \(confirmed 401\).* ticket +sha256:[0-9a-f]{12} revoked \(confirmed 401\)'
  out=$("$AIRLOCK" show "$R2" 2>&1)
  like "show PATH of the hostile run: the proxy's denials grouped by host and reason" "$out" 'deny +evil\.example:[0-9]+ +not-allowed +x[0-9]+'
  like "... the gateway's refusals listed one by one" "$(tr '\n' ' ' <<<"$out")" 'gateway: [0-9]+ requests, [0-9]+ allowed, [1-9][0-9]* refused.*refused: +[0-9T:.-]+Z [A-Z]+ '
  like "... with the ref of a refused push" "$out" 'ref refs/heads/main [0-9a-f]{12} -> [0-9a-f]{12}'
  like "... a refused push's 200 is not shown as a bare success" "$out" 'git-receive-pack  push-other-branch \(HTTP 200; the refusal is in the answer.s body'
  check_not "... no refusal shown with a bare (200)" grep -qE ' \(200\)$' <<<"$out"
  check "show --json prints the record itself" python3 -c 'import json,subprocess,sys; assert json.loads(subprocess.run([sys.argv[1],"show","--json",sys.argv[2]],capture_output=True,check=True).stdout)==json.load(open(sys.argv[3]))' "$AIRLOCK" "$ID2" "$R2"
  unset XDG_STATE_HOME
fi

# --- gc: --keep, --older-than, and nothing but run records ---
G=$T_TMP/gc
mkdir -p "$G" "$T_TMP/elsewhere"
mkrec() { # ID DAYS-OLD
  printf '{"schema": "airlock.run-record/1", "run_id": "%s", "phases": []}\n' "$1" >"$G/$1.json"
  touch -d "-$2 days" "$G/$1.json"
}
mkrec a000000000000001 1; mkrec a000000000000002 3; mkrec a000000000000003 5
mkrec a000000000000004 20; mkrec a000000000000005 40
# what is not a run record, each old enough to go if it were one
echo 'notes' >"$G/notes.txt"
echo '{"schema": "something-else/1", "run_id": "b000000000000001"}' >"$G/b000000000000001.json"
echo 'not json' >"$G/b000000000000002.json"
printf '{"schema": "airlock.run-record/1", "run_id": "a000000000000009"}' >"$T_TMP/elsewhere/a000000000000009.json"
ln -s "$T_TMP/elsewhere/a000000000000009.json" "$G/b000000000000003.json"
mkdir "$G/b000000000000004.json"
touch -h -d '-90 days' "$G"/b* "$G/notes.txt" "$T_TMP/elsewhere/a000000000000009.json"
left() { ls "$G" | tr '\n' ' '; }
ALL="a000000000000001.json a000000000000002.json a000000000000003.json a000000000000004.json a000000000000005.json b000000000000001.json b000000000000002.json b000000000000003.json b000000000000004.json notes.txt "

out=$("$AIRLOCK" gc --keep 2 --dry-run --dir "$G" 2>&1); rc=$?
is "gc --keep 2 --dry-run: exit 0" "$rc" 0
is "... removes nothing" "$(left)" "$ALL"
like "... says what it would remove" "$(tr '\n' ' ' <<<"$out")" 'would remove +a000000000000003.json.*would remove +a000000000000004.json.*would remove +a000000000000005.json.*3 record\(s\) would be removed, 2 kept'

"$AIRLOCK" gc --older-than 10d --dir "$G" >"$T_TMP/gc1.out" 2>&1
is "gc --older-than 10d: exit 0" "$?" 0
is "... removes the records written more than 10 days ago, and nothing else" "$(left)" "a000000000000001.json a000000000000002.json a000000000000003.json b000000000000001.json b000000000000002.json b000000000000003.json b000000000000004.json notes.txt "

"$AIRLOCK" gc --keep 1 --older-than 2d --dir "$G" >"$T_TMP/gc2.out" 2>&1
is "gc --keep 1 --older-than 2d: keeps the newest and the records younger than 2 days" "$(left)" "a000000000000001.json b000000000000001.json b000000000000002.json b000000000000003.json b000000000000004.json notes.txt "

out=$("$AIRLOCK" gc --keep 0 --dir "$G" 2>&1); rc=$?
is "gc --keep 0: exit 0" "$rc" 0
is "... removes the last run record (control: gc does remove) and only it" "$(left)" "b000000000000001.json b000000000000002.json b000000000000003.json b000000000000004.json notes.txt "
like "... naming a record of another schema it refused to remove" "$out" 'not a run record +b000000000000001.json: .*no "schema": "airlock.run-record/1"'
like "... a malformed one" "$out" 'not a run record +b000000000000002.json: .*not JSON'
like "... a symlink to a record" "$out" 'not a run record +b000000000000003.json: .*a symlink'
like "... a directory" "$out" 'not a run record +b000000000000004.json: .*not a regular file'
is "the symlink's target is untouched" "$(cat "$T_TMP/elsewhere/a000000000000009.json" | head -c 30)" '{"schema": "airlock.run-record'

done_testing
