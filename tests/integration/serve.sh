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
# --- the config: every key from the table, errors with file:line:col ---
cfgerr() { # DESCRIPTION REGEX YAML
  printf '%s\n' "$3" >"$T_TMP/bad.yaml"
  out=$("$AIRLOCK" serve -c "$T_TMP/bad.yaml" 2>&1); rc=$?
  if [ $rc -eq 2 ] && printf '%s' "$out" | grep -qE -- "$2"; then ok "config: $1"; else fail "config: $1"; diag "rc=$rc $out"; fi
}
base="version: 1
broker: /run/b.sock
state_dir: $T_TMP/st
webhook: {secret_file: /etc/s}
repositories: [{repo: acme/tally, policy: /etc/p.yaml}]"
cfgerr "an unknown key is refused with its line" 'bad.yaml:6:[0-9]+: runs.max_concurent: unknown key' "$base
runs: {max_concurent: 3}"
cfgerr "a cap out of range" 'runs.max_concurrent: must be between 1 and 256' "$base
runs: {max_concurrent: 0}"
cfgerr "a relative path" 'state_dir: must be an absolute path' "${base/state_dir: $T_TMP\/st/state_dir: st}"
cfgerr "a bad listen address" 'listen.webhook: the port must be' "$base
listen: {webhook: '127.0.0.1:99999'}"
cfgerr "a webhook listener without a secret" 'webhook.secret_file: required when listen.webhook' "${base/webhook: \{secret_file: \/etc\/s\}/}"
cfgerr "a repository twice (names are case-insensitive, as on GitHub)" 'listed twice' "${base%repositories:*}repositories: [{repo: acme/tally, policy: /p}, {repo: ACME/Tally, policy: /q}]"
cfgerr "on_interrupt is requeue or fail" 'runs.on_interrupt: must be `fail` or `requeue`, got `maybe`' "$base
runs: {on_interrupt: maybe}"
cfgerr "the version" 'only version 1 exists' "${base/version: 1/version: 2}"
cfgerr "a key given twice, at its line" ':6:[0-9]+: (not valid YAML: duplicate key|broker: given twice)' "$base
broker: /run/other.sock"
like "--config-doc lists every key from the same table" "$("$AIRLOCK" serve --config-doc | grep -c '^| `')" '^(19|[2-5][0-9])$'
printf 'x' >"$T_TMP/open.secret"; chmod 644 "$T_TMP/open.secret"; mkdir -p "$T_TMP/st0"; chmod 700 "$T_TMP/st0"
printf 'version: 1\nbroker: /run/b.sock\nstate_dir: %s\nwebhook: {secret_file: %s}\nlisten: {webhook: "127.0.0.1:0", status: "127.0.0.1:0"}\nrepositories: [{repo: acme/tally, policy: /etc/p.yaml}]\n' "$T_TMP/st0" "$T_TMP/open.secret" >"$T_TMP/open.yaml"
out=$(timeout 10 "$AIRLOCK" serve -c "$T_TMP/open.yaml" 2>&1); rc=$?
is "a webhook secret readable by others: the daemon refuses to start (exit 1)" "$rc" 1
like "… and says why" "$out" 'mode 0644: readable or writable by group or others; it must be mode 0600 or stricter'

# the start checks every repository's policy the way a run would
printf 'x' >"$T_TMP/ok.secret"; chmod 600 "$T_TMP/ok.secret"
printf 'version: 1\nnetwork:\n  allow: []\n' >"$T_TMP/nocreds.yaml"
sed 's/^broker:.*/broker: \/run\/b.sock/; s|policy: /etc/p.yaml|policy: '"$T_TMP"'/nocreds.yaml|; s|'"$T_TMP"'/open.secret|'"$T_TMP"'/ok.secret|' "$T_TMP/open.yaml" >"$T_TMP/badpol.yaml"
out=$(timeout 10 "$AIRLOCK" serve -c "$T_TMP/badpol.yaml" 2>&1); rc=$?
is "a repository whose policy cannot serve a ticket: the daemon refuses to start (exit 1)" "$rc" 1
like "… naming the repository, the policy and the rule" "$out" 'repositories\[0\] \(acme/tally\): its policy cannot serve a ticket: .*nocreds.yaml: the policy has no credentials section'
sed 's/^broker:.*/broker: \/run\/b.sock/; s|policy: /etc/p.yaml|policy: '"$T_TMP"'/missing.yaml|; s|'"$T_TMP"'/open.secret|'"$T_TMP"'/ok.secret|' "$T_TMP/open.yaml" >"$T_TMP/nopol.yaml"
out=$(timeout 10 "$AIRLOCK" serve -c "$T_TMP/nopol.yaml" 2>&1); rc=$?
like "a missing policy file: refused at start, named" "$rc/$out" '^1/.*repositories\[0\] \(acme/tally\).*missing.yaml'
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
like "the check is in the queue row: the forge's answer for alice" "$(sv_field 1 check_detail)" '^alice has permission `admin`'
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

# --- hostile webhooks: refused without effect ---
P=$T_TMP/p6.json
sv_payload "$P" issues acme/tally 6 alice
n0=$(sv_nruns); pr0=$(admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
is "no signature → 401" "$(sv_send issues d-nosig "$P" none)" 401
is "a signature made with another secret → 401" "$(sv_send issues d-badsig "$P" bad)" 401
is "a malformed signature header (sha1=) → 401" "$(sv_send issues d-malsig "$P" malformed)" 401
is "no X-GitHub-Delivery → 400" "$(sv_send issues "" "$P" good)" 400
is "a delivery id with forbidden characters → 400" "$(sv_send issues 'x;rm' "$P" good)" 400
python3 -c 'import sys; open(sys.argv[1], "w").write("{\"pad\": \"" + "x" * 70000 + "\"}")' "$T_TMP/big.json"
is "a body over webhook.max_body (64 KiB) → 413" "$(sv_send issues d-big "$T_TMP/big.json" good)" 413
is "the same, chunked (no Content-Length) → 413" "$(sv_send issues d-bigc "$T_TMP/big.json" good chunked)" 413
printf '{"action": "labeled", "issue": {"number": 6,' >"$T_TMP/trunc.json"
is "malformed JSON, signed → 400" "$(sv_send issues d-trunc "$T_TMP/trunc.json" good)" 400
printf '{"action":"labeled","action":"labeled"}' >"$T_TMP/dup.json"
is "duplicate keys, signed → 400" "$(sv_send issues d-dupkey "$T_TMP/dup.json" good)" 400
python3 - "$P" "$T_TMP/strnum.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["issue"]["number"] = "6"; json.dump(p, open(sys.argv[2], "w"))
PY
is "issue.number as a string, signed → 400" "$(sv_send issues d-strnum "$T_TMP/strnum.json" good)" 400
sv_payload "$T_TMP/unknown.json" issues acme/tally 7 alice
is "an unknown event, signed → 202 ignored" "$(sv_send deployment d-unknown "$T_TMP/unknown.json" good)" 202
sv_payload "$T_TMP/loose.json" issues acme/nowhere 1 alice
is "a repository the service does not serve, signed → 403" "$(sv_send issues d-loose "$T_TMP/loose.json" good)" 403
is "GET /webhook → 405" "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' "http://$SV_HOOK/webhook")" 405
is "none of these added a run" "$(sv_nruns)" "$n0"
like "each refusal is logged as a JSON line with its rule" "$(grep -c '"event":"webhook_refused"' "$SV_DIR/serve.log")" '^(1[0-9]|[89])$'
# positive control: the same payload, signed, is a trigger
is "control: the same payload signed with the secret → 202" "$(sv_send issues d-good6 "$P" good)" 202
is "control: it added one run" "$(sv_nruns)" "$((n0 + 1))"
is "a replay of that delivery id → 200, nothing done" "$(sv_send issues d-good6 "$P" good)" 200
is "the same body under a new delivery id → 200, nothing done (a replay by digest)" "$(sv_send issues d-good6-again "$P" good)" 200
is "still one run more" "$(sv_nruns)" "$((n0 + 1))"
st=$(sv_wait 5 'succeeded|failed|refused' 180)
is "the control run succeeded" "$st" succeeded
is "one PR for ticket 6 (no duplicate from the replays)" "$(pulls_for 6)" 1
# a label on a repository the App is not installed on (the forge's own webhook)
out=$(fe_label 1 alice acme/stray)
is "acme/stray: the delivery is accepted for the check" "$(json_get "$out" status)" 202
st=$(sv_wait 6 'succeeded|failed|refused|running' 60)
is "acme/stray: refused at the check (the App is not installed)" "$st" refused
like "acme/stray: the reason is the forge's" "$(sv_field 6 reason)" 'trigger check refused: .*(404|Not Found)'
is "acme/stray: no token left active by the check" "$(tokens_in active)" 0

# --- retries only for transient causes ---
out=$(fe_label 1 alice acme/loose)
st=$(sv_wait 7 'succeeded|failed|refused' 120)
is "acme/loose (unprotected: the audit does not hold) → refused" "$st" refused
like "the reason is the audit's" "$(sv_field 7 reason)" '^audit'
is "a security refusal is not retried (1 attempt)" "$(sv_field 7 attempts)" 1
out=$(fe_label 1 alice acme/flaky)
st=$(sv_wait 8 'succeeded|failed|refused' 120)
is "acme/flaky (its runs' broker is unreachable) → failed" "$st" failed
is "a transient cause is retried (retries: 1 → 2 attempts)" "$(sv_field 8 attempts)" 2
like "the history shows the retry with its backoff" "$(sv_get /runs.json | python3 -c 'import json,sys; r=next(r for r in json.load(sys.stdin)["runs"] if r["id"]==8); print(" | ".join(e["what"] for e in r["events"]))')" 'transient failure .*retry 1 of 1 in 1000 ms.*running.*failed: (audit|lease)'
is "no token is active" "$(tokens_in active)" 0

# --- the status listener is its own, read-only ---
is "the status listener has no /webhook (POST → 405)" "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -X POST -d '{}' "http://$SV_STATUS/webhook")" 405
is "the webhook listener serves no status page (404)" "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' "http://$SV_HOOK/")" 404
html=$(sv_get /)
like "the status page lists run 1 with its PR link" "$html" '<a href="https://forge\.test:[0-9]+/acme/tally/pull/[0-9]+">'
if grep -qi '<script' <<<"$html"; then fail "the status page has no JavaScript"; else ok "the status page has no JavaScript"; fi
like "a run's page shows its phase lines" "$(sv_get /runs/1)" 'lease +ok'
like "a run's record is linked and served" "$(sv_get /runs/1/record | python3 -c 'import json,sys; print(json.load(sys.stdin)["revocation"]["all_dead"])')" True
m=$(sv_get /metrics)
like "metrics: runs by state" "$m" 'airlock_serve_runs\{state="succeeded"\} [3-9]'
like "metrics: refused runs" "$m" 'airlock_serve_runs\{state="refused"\} [3-9]'
like "metrics: durations" "$m" 'airlock_serve_run_duration_seconds_count\{state="succeeded"\} [3-9]'
like "metrics: queue depth and tokens outstanding" "$m" 'airlock_serve_queue_depth 0.*' 
like "metrics: tokens outstanding (none)" "$(tr '\n' ' ' <<<"$m")" 'tokens_outstanding\{source="running"\} 0 .*tokens_outstanding\{source="unconfirmed"\} 0'
like "metrics: deliveries by outcome" "$m" 'airlock_serve_webhook_deliveries_total\{outcome="ignored"\} [1-9]'
if command -v promtool >/dev/null; then check "promtool accepts /metrics" sh -c "printf '%s\n' \"\$1\" | promtool check metrics" _ "$m"; else skip "promtool is not installed: /metrics is checked by the patterns above only"; fi
if grep -qE 'gh[pousr]_[A-Za-z0-9]{30,}' "$SV_DIR/serve.log" "$SV_DIR"/state/logs/* "$SV_DIR"/state/records/*; then fail "no token value in the service's log, run logs or records"; else ok "no token value in the service's log, run logs or records"; fi
check "every line of the service's log is JSON" python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$SV_DIR/serve.log"

# --- the systemd unit ---
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$T_TMP/unit"
  sed "s|/usr/bin/airlock|$AIRLOCK|" "$AIRLOCK_SRC/contrib/airlock-serve.service" >"$T_TMP/unit/airlock-serve.service"
  out=$(systemd-analyze verify --man=no "$T_TMP/unit/airlock-serve.service" 2>&1)
  is "contrib/airlock-serve.service passes systemd-analyze verify with no complaint" "$out" ""
  sed -i 's/^KillMode=mixed/KillMode=bogus/' "$T_TMP/unit/airlock-serve.service"
  like "control: a broken unit draws a complaint" "$(systemd-analyze verify --man=no "$T_TMP/unit/airlock-serve.service" 2>&1)" 'kill mode'
else
  skip "systemd-analyze is not installed: the unit file is not verified"
fi

done_testing
