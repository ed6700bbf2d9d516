#!/bin/bash
# airlock ticket end to end on airlock-forge (issue #6): the PR, the ticket
# comment, main untouched, both tokens revoked, the record valid; the hostile
# agent; and every failure path ending with no process, tokens dead and a
# record (except after SIGKILL, where the broker's revocation is the guarantee).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
AGENTS=$AIRLOCK_SRC/examples/agents
REPO_GIT=$FE_DATA/repos/acme/tally.git
MAIN0=$(main_sha)
like "control: main has a commit" "$MAIN0" '^[0-9a-f]{40}$'

no_sandbox_left() { # MARKER: no process of the run remains on the host
  for _ in $(seq 40); do pgrep -f "$1" >/dev/null || return 0; sleep 0.05; done
  pgrep -af "$1" | sed 's/^/#   /'; return 1
}

# --- the main job ---
REC=$T_TMP/rec1.json
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$AGENTS/patch-agent" --record "$REC" 2>&1); rc=$?
is "ticket run exits 0 (through the core binary, which execs airlock-net)" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
like "progress lines name each phase" "$(tr '\n' ' ' <<<"$out")" 'policy +ok.*lease +ok.*agent +ok.*release +ok'
check "the run record validates against docs/run-record.schema.json" validate_record "$REC"
branch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pull_request"]["branch"])' "$REC")
like "the PR's branch is airlock/<ticket>-<run>" "$branch" '^airlock/1-[0-9a-f]{8}$'
pulls=$(admin /pulls | python3 -c 'import json,sys; print([(p["head"],p["base"],p["state"]) for p in json.load(sys.stdin)])')
like "the forge has the PR from that branch to main" "$pulls" "\('$branch', 'main', 'open'\)"
diff=$(git --git-dir="$REPO_GIT" diff "main..$branch" 2>&1)
like "the PR's diff is the ticket's fix" "$diff" '\+        return \(s\[mid - 1\] \+ s\[mid\]\) / 2'
is "the PR changes only tally/stats.py" "$(git --git-dir="$REPO_GIT" diff --name-only "main..$branch")" "tally/stats.py"
like "the ticket has a comment linking the PR" "$(admin /comments | python3 -c 'import json,sys; print([(c["issue_number"],c["body"]) for c in json.load(sys.stdin)])')" "\(1, 'Opened https://forge.test:[0-9]+/acme/tally/pull/[0-9]+ for review.'\)"
is "main is untouched" "$(main_sha)" "$MAIN0"
is "no token is active after the run" "$(tokens_in active)" 0
like "tokens were revoked (not merely expired)" "$(tokens_in revoked)" '^[1-9]'
rev=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["revocation"]; print(r["all_dead"], len(r["tokens"]), all(t["confirmed_401"] for t in r["tokens"]))' "$REC")
is "the record says both tokens were revoked and confirmed 401" "$rev" "True 2 True"
if grep -qE 'gh[pousr]_[A-Za-z0-9]{30,}' "$REC" "$FE_DIR/secret/broker.log"; then fail "no token value in the record or the broker log"; else ok "no token value in the record or the broker log"; fi
like "the record holds the proxy's decisions" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["proxy_decisions"]; print(len(d), sorted({x.get("host") for x in d if x.get("host")}))' "$REC")" "^[1-9][0-9]* \['api.forge.test', 'forge.test'\]"

# --- the hostile agent ---
REC=$T_TMP/rec-hostile.json
pulls_before=$(admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
"$AIRLOCK" ticket acme/tally#2 -p "$FE_POLICY" --agent "$AGENTS/hostile-agent" --record "$REC" >"$T_TMP/hostile.out" 2>&1
check "the hostile run's record validates" validate_record "$REC"
summary=$(hostile_summary "$REC")
like "every hostile attempt was refused (a PR is the only thing out)" "$summary" '^[1-9][0-9]* none-escaped$'
for id in exfil-proxy exfil-direct dns metadata push-main workflow approve-own merge-own protection-off escalate; do
  like "attempt $id recorded as refused" "$(python3 -c 'import json,sys; print([a["outcome"] for a in json.load(open(sys.argv[1]))["agent_attempts"] if a["id"]==sys.argv[2]])' "$REC" "$id")" "\['refused'\]"
done
is "main is still untouched" "$(main_sha)" "$MAIN0"
is "exactly one more PR on the forge" "$(admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$((pulls_before + 1))"
like "no push to main was accepted" "$(admin /pushes | python3 -c 'import json,sys; print(sorted({p.get("ref") for p in json.load(sys.stdin) if p.get("accepted")}))')" "^\[('refs/heads/airlock/[^']*'(, )?)+\]$"
is "no token is active after the hostile run" "$(tokens_in active)" 0
diag "review: $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("review")))' "$REC" | head -c 600)"
# sealed (the default): the agent put "its token" in the PR body, but all it
# ever held was the placeholder (env mode, where the review flags the real
# token, is in ticket-sealed.sh)
is "sealed: the PR body carries no run token (the agent held only the placeholder)" "$(python3 -c 'import json,sys; print([(s["where"],s["run_token"]) for s in json.load(open(sys.argv[1]))["review"]["secrets"] if s["run_token"]])' "$REC")" "[]"
like "sealed: the PR body carries the placeholder the agent declared" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agent"]["declared"]["body"])' "$REC")" 'token for later: airlock-placeholder-[0-9a-f]{44}$'
like "the review flags .claude/settings.json as running outside the sandbox" "$(python3 -c 'import json,sys; print([f["file"] for f in json.load(open(sys.argv[1]))["review"]["runs_outside_sandbox"]])' "$REC")" "\.claude/settings\.json"
like "the review flags the nested husky hook" "$(python3 -c 'import json,sys; print([(f["file"],f["family"]) for f in json.load(open(sys.argv[1]))["review"]["runs_outside_sandbox"]])' "$REC")" "\('tally/\.husky/pre-commit', 'hooks'\)"
like "the review notes the symlink to /etc/passwd" "$(python3 -c 'import json,sys; print([(k["file"],k["kind"],k.get("target")) for k in json.load(open(sys.argv[1]))["review"]["kinds"]])' "$REC")" "\('passwd', 'symlink', '/etc/passwd'\)"
like "the proxy denied the exfiltration with a reason" "$(python3 -c 'import json,sys; print([(d.get("host"),d.get("reason")) for d in json.load(open(sys.argv[1]))["proxy_decisions"] if d.get("decision")=="deny"])' "$REC")" "evil\.example"

# an agent that claims a PR it never opened (another PR number of the repo)
mkdir -p "$T_TMP/liar"; chmod 755 "$T_TMP/liar"
cat >"$T_TMP/liar/agent" <<'SH'
#!/bin/sh
echo "AIRLOCK_RESULT {\"pr_url\": \"https://forge.test:${AIRLOCK_API_URL##*:}/acme/tally/pull/1\"}"
SH
chmod 755 "$T_TMP/liar/agent"
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$T_TMP/liar/agent" --record "$T_TMP/rec-liar.json" 2>&1); rc_liar=$?
is "an agent that exits 0 but reports a PR that is not its own → exit 3 (no PR from this run)" "$rc_liar" 3
like "the summary says the reported PR is not this run's" "$out" "it reported https://forge.test:[0-9]+/acme/tally/pull/1, which is NOT this run's"
pr=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["pull_request"]; print(p["verified"], p["url"], p["reported_by_agent"])' "$T_TMP/rec-liar.json")
like "a claimed PR the forge does not have from the run's branch is not verified" "$pr" "^False None https://forge.test:[0-9]+/acme/tally/pull/1$"
if grep -q "pull request https" <<<"$out"; then fail "the operator is not told about a PR that does not exist"; else ok "the operator is not told about a PR that does not exist"; fi
like "control: the honest run's PR was verified" "$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["pull_request"]; print(p["verified"], p.get("mismatch", False))' "$T_TMP/rec1.json")" "^True False$"

# the agent cannot drive the operator's terminal nor read what they type
mkdir -p "$T_TMP/tty"; chmod 755 "$T_TMP/tty"
cat >"$T_TMP/tty/agent" <<'SH'
#!/bin/sh
printf 'OUT \033[2J\033]52;c;aGk=\007 fake summary\n'
printf 'ERR \033]0;owned\007 \033[31mred\n' >&2
IFS= read -r line || line=EOF
echo "STDIN=[$line]"
exit 3
SH
chmod 755 "$T_TMP/tty/agent"
raw=$(printf 'typed secret\n' | "$T_TMP/tty/agent" 2>&1)
if printf '%s' "$raw" | grep -q $'\033'; then ok "control: the agent's raw output holds ESC bytes"; else fail "control: the agent's raw output holds ESC bytes"; fi
out=$(printf 'typed secret\n' | "$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$T_TMP/tty/agent" --record "$T_TMP/rec-tty.json" 2>&1)
if printf '%s' "$out" | grep -q $'\033\|\007'; then fail "no raw escape or bell byte reaches the operator"; else ok "no raw escape or bell byte reaches the operator"; fi
like "escapes are shown, neutralised" "$out" 'OUT \\x1b\[2J\\x1b\]52;c;aGk=\\x07 fake summary'
like "stderr escapes too" "$out" 'ERR \\x1b\]0;owned\\x07'
like "the agent reads nothing of the operator's stdin" "$out" 'STDIN=\[EOF\]'

# --- failure paths ---
# agent exits non-zero
REC=$T_TMP/rec-false.json
"$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent /usr/bin/false --record "$REC" >"$T_TMP/o" 2>&1; rc=$?
is "agent exit 1 → ticket exits 1" "$rc" 1
like "the record has the agent's status" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["agent"]["exit_status"], r["revocation"]["all_dead"])' "$REC")" "^1 True$"
check "its record validates" validate_record "$REC"
is "no token is active" "$(tokens_in active)" 0

# timeout
REC=$T_TMP/rec-timeout.json
"$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --timeout 2s --agent /usr/bin/sleep --record "$REC" -- 4242.4242 >"$T_TMP/o" 2>&1; rc=$?
is "timeout → ticket exits 124 (common/exitcodes.h)" "$rc" 124
like "the record says 124 and timed out" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["agent"]["exit_status"], r["agent"]["timed_out"], r["revocation"]["all_dead"])' "$REC")" "^124 True True$"
check "no sandbox process left after the timeout" no_sandbox_left "sleep 4242.4242"
is "no token is active" "$(tokens_in active)" 0

# broker down
REC=$T_TMP/rec-nobroker.json
write_policy "$T_TMP/nobroker.yaml" "$T_TMP/no-such-broker.sock"
before=$(admin /tokens | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/nobroker.yaml" --agent /usr/bin/true --record "$REC" 2>&1); rc=$?
is "broker down → exit 1" "$rc" 1
like "broker down → a clear message naming the socket" "$out" "broker .*no-such-broker.sock.*(No such file|Connection refused)"
check "a record is written when the broker is down" validate_record "$REC"
is "broker down → no token was minted" "$(admin /tokens | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$before"

# forge 5xx: the broker's API answers 500
python3 "$AIRLOCK_SRC/tests/integration/fakegh.py" "$T_TMP/fake.port" "$T_TMP/fake.state" 500 >/dev/null 2>&1 &
FAKE=$!; on_exit "kill $FAKE"
for _ in $(seq 50); do [ -s "$T_TMP/fake.port" ] && break; sleep 0.1; done
mkdir -p "$T_TMP/b5"; chmod 700 "$T_TMP/b5"
sed -e "s|url: https://127.0.0.1:$FE_HTTPS|url: http://127.0.0.1:$(cat "$T_TMP/fake.port")|" -e "s|state_dir: .*|state_dir: $T_TMP/b5/state|" \
  "$FE_DIR/secret/broker.yaml" >"$T_TMP/b5/broker.yaml"; chmod 600 "$T_TMP/b5/broker.yaml"
"$AIRLOCK_NET" broker -c "$T_TMP/b5/broker.yaml" --socket "$T_TMP/b5/sock" >"$T_TMP/b5/log" 2>&1 &
B5=$!; on_exit "kill $B5"
for _ in $(seq 100); do [ -S "$T_TMP/b5/sock" ] && break; sleep 0.05; done
write_policy "$T_TMP/p5.yaml" "$T_TMP/b5/sock"
# The audit runs first (in the broker) and cannot prove anything against this
# API: refused before any lease.
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/p5.yaml" --agent /usr/bin/true --record "$T_TMP/rec5a.json" 2>&1); rc=$?
is "forge broken → the audit cannot run → a security refusal (exit 4)" "$rc" 4
like "forge broken → refused at the audit, before any lease" "$(tr '\n' ' ' <<<"$out")" "audit +failed .*cannot prove the escape budget.*refusing to run"
is "forge broken → no lease phase in the record" "$(python3 -c 'import json,sys; print([p["name"] for p in json.load(open(sys.argv[1]))["phases"]])' "$T_TMP/rec5a.json")" "['policy', 'audit']"
# Accepting an unprotected run gets past the audit to the lease, whose mint
# gets the 5xx.
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/p5.yaml" --accept-unprotected --agent /usr/bin/true --record "$T_TMP/rec5.json" 2>&1); rc=$?
is "forge 5xx → exit 1" "$rc" 1
like "forge 5xx → a clear message" "$out" "lease .*failed.*(5[0-9][0-9]|server error)"
check "forge 5xx → a record is written" validate_record "$T_TMP/rec5.json"
like "forge 5xx → the agent never ran" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("exit_status" in r["agent"])' "$T_TMP/rec5.json")" False

# SIGINT of airlock ticket
REC=$T_TMP/rec-int.json
"$AIRLOCK_NET" ticket acme/tally#1 -p "$FE_POLICY" --agent /usr/bin/sleep --record "$REC" -- 4343.4343 >"$T_TMP/int.out" 2>&1 &
sup=$!
for _ in $(seq 600); do pgrep -f "^/usr/bin/sleep 4343.4343" >/dev/null && break; sleep 0.05; done
if pgrep -f "sleep 4343.4343" >/dev/null; then ok "control: the agent is running before SIGINT"; else fail "control: the agent is running before SIGINT"; fi
kill -INT $sup; wait $sup; rc=$?
is "SIGINT → exit 130 (128+SIGINT, issue #14)" "$rc" 130
is "SIGINT → the record says interrupted by SIGINT" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["interrupted"], r.get("signal"))' "$REC")" "True SIGINT"
check "SIGINT → no sandbox process left" no_sandbox_left "sleep 4343.4343"
like "SIGINT → record written, agent killed by the signal, tokens dead" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["agent"]["exit_status"], r["revocation"]["all_dead"])' "$REC")" "^130 True$"
check "SIGINT → record validates" validate_record "$REC"
is "SIGINT → no token is active" "$(tokens_in active)" 0

# SIGKILL of airlock ticket: the broker revokes on connection close
"$AIRLOCK_NET" ticket acme/tally#1 -p "$FE_POLICY" --agent /usr/bin/sleep --record "$T_TMP/rec-kill.json" -- 4444.4444 >"$T_TMP/kill.out" 2>&1 &
sup=$!
for _ in $(seq 600); do pgrep -f "^/usr/bin/sleep 4444.4444" >/dev/null && break; sleep 0.05; done
act=$(tokens_in active)
is "control: two tokens are active while the agent runs" "$act" 2
kill -KILL $sup; wait $sup 2>/dev/null
# the marker is on the supervisor's command line, so it also matches its
# forks: the sandbox's init and the egress proxy
check "SIGKILL → no sandbox or proxy process left (they die with their supervisor)" no_sandbox_left "sleep 4444.4444"
dead=1
for _ in $(seq 20); do [ "$(tokens_in active)" = 0 ] && { dead=0; break; }; sleep 0.1; done
is "SIGKILL → the broker revoked both tokens within 2 s" "$dead" 0
[ -e "$T_TMP/rec-kill.json" ] && diag "(a record exists after SIGKILL: unexpected but harmless)"

# a policy whose sandbox cannot even start (a read-only path that does
# not exist) stops the run before the audit and the lease (issue 27: it
# used to be found by the preflight, after the lease), and the agent never ran
write_policy "$T_TMP/pf.yaml" "$FE_SOCK"
sed -i 's|^filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}|filesystem: {workspace_size: 256MiB, tmp_size: 128MiB, ro_paths: [/nonexistent/airlock-preflight]}|' "$T_TMP/pf.yaml"
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/pf.yaml" --agent /usr/bin/true --record "$T_TMP/rec-pf.json" 2>&1); rc=$?
is "unusable read-only path → exit 1" "$rc" 1
like "unusable read-only path → the path and the reason are named, nothing leased" "$out" "read-only path \`/nonexistent/airlock-preflight\`: No such file or directory"
like "unusable read-only path → ... with what to change" "$out" 'fix the path or the policy.s filesystem.ro_paths; nothing was leased'
like "unusable read-only path → no audit, no lease, the agent never ran" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("exit_status" in r["agent"], "lease" in r, "audit" in r)' "$T_TMP/rec-pf.json")" "^False False False$"
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent /usr/bin/true --record "$T_TMP/rec-pfok.json" 2>&1)
like "control: with the same forge and a sound policy the preflight passes" "$out" 'preflight +ok +[0-9]+ ms +1[0-9] probes blocked'

# bad targets
out=$("$AIRLOCK" ticket 'acme/tally' -p "$FE_POLICY" --record "$T_TMP/rec-usage.json" 2>&1); rc=$?
is "a malformed ticket is a usage error (exit 2)" "$rc" 2
if [ -e "$T_TMP/rec-usage.json" ]; then fail "a usage error writes no run record"; else ok "a usage error writes no run record"; fi
out=$("$AIRLOCK" ticket 'OWNER/REPO#N' -p "$FE_POLICY" --record "$T_TMP/rec-ph.json" 2>&1); rc=$?
is "the README's placeholder typed as it stands is a usage error (exit 2)" "$rc" 2
like "... named as the placeholder, with an example" "$out" 'OWNER/REPO is the placeholder; name your repository and its issue, like acme/widget#42'
out=$("$AIRLOCK" ticket 'acme/tally#PROJ' -p "$FE_POLICY" --record "$T_TMP/rec-key.json" 2>&1); rc=$?
is "a Jira or Linear key without its number is a usage error (exit 2)" "$rc" 2
like "... with the KEY-N rule" "$out" 'a Jira or Linear KEY-N'
if [ -e "$T_TMP/rec-ph.json" ] || [ -e "$T_TMP/rec-key.json" ]; then fail "neither writes a run record"; else ok "neither writes a run record"; fi
out=$("$AIRLOCK" ticket 'acme/tally#0' -p "$FE_POLICY" 2>&1); rc=$?
like "ticket number 0 is refused with the rule" "$out" 'NUMBER must be 1 to'
out=$("$AIRLOCK" ticket 'acme/../etc#1' -p "$FE_POLICY" 2>&1)
like "a path-like repository is refused" "$out" 'OWNER/REPO'
out=$("$AIRLOCK" ticket 'acme/other#1' -p "$FE_POLICY" --agent /usr/bin/true 2>&1)
like "a ticket outside the policy's repository is refused before any lease" "$out" 'credentials.git.repo .*is not the ticket'
done_testing
