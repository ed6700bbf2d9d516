#!/bin/bash
# airlock ticket runs `airlock audit` before leasing (issue 8), in the
# supervisor, with read tokens the broker leases it (the App's JWT reads
# the App for it; a read-only audit App or token file; issue 28), an unprotected repository is refused by default with the
# failing criteria and their fixes named and no run token minted, and
# --accept-unprotected runs anyway, marked in the record and on every
# progress line. The protected repository (the positive control) passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
for p in python3 curl openssl; do
  command -v $p >/dev/null || { skip "$p missing"; done_testing; exit 0; }
done
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket (audit App 1002 configured)"
AGENTS=$AIRLOCK_SRC/examples/agents
write_policy "$T_TMP/loose.yaml" "$FE_SOCK" 2m acme/loose
MARK='[UNPROTECTED: accepted]'

# tokens of one App in one state (app 1001: the run's App; 1002: the audit App)
app_tokens() { admin /tokens | python3 -c '
import json,sys
d=json.load(sys.stdin); d=d.get("tokens",d) if isinstance(d,dict) else d
# "run": tokens with more than metadata (the audit asks as the App with a
# metadata: read token, revoked at once: not a run token)
run=lambda t: set((t.get("permissions") or {}).keys()) - {"metadata"}
print(sum(1 for t in d if t.get("app_id")==int(sys.argv[1]) and (sys.argv[2]=="any" or (sys.argv[2]=="run" and run(t)) or t.get("state")==sys.argv[2])))' "$1" "$2"; }
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# --- the protected repository passes (positive control) ---
R=$T_TMP/tally.json
n1=$(app_tokens 1001 any)
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent /usr/bin/true --record "$R" 2>&1); rc=$?
is "acme/tally (protected): the run goes ahead, exit 3 (the agent, true, makes no PR)" "$rc" 3
[ $rc -eq 0 ] || diag "$out"
like "acme/tally: the audit phase is ok and comes before the lease" "$(tr '\n' ' ' <<<"$out")" 'audit +ok .*holds.*lease +ok'
# a WARN is read with `airlock show`: the line names this run, not a placeholder
like "control: acme/tally's audit has a WARN criterion" "$out" 'audit +ok .* holds; [1-9][0-9]* WARN: '
like "… and the audit line names this run's id for airlock show" "$out" "airlock show $(rec "$R" 'r["run_id"]')\` prints what each saw and its fix\)"
is "acme/tally: record audit.status / holds / accepted_unprotected" \
  "$(rec "$R" 'r["audit"]["status"], r["audit"]["holds"], r["audit"]["accepted_unprotected"], r["unprotected"]')" \
  "('holds', True, False, False)"
is "acme/tally: the report is the full audit (20 criteria, the App identified)" \
  "$(rec "$R" 'len(r["audit"]["report"]["criteria"]), r["audit"]["report"]["app"]["slug"], r["audit"]["report"]["app"]["installation_id"]')" \
  "(20, 'airlock-bot', 2001)"
like "acme/tally: the audit read protection with the audit App's token, then the broker revoked it" \
  "$(rec "$R" 'r["audit"]["report"]["credentials"]')" \
  '^installation token sha256:[0-9a-f]{12} \(administration:read,contents:read,metadata:read\) minted by the audit App 1002.*, revoked$'
is "acme/tally: the run's App holds no administration (app.no_dangerous_permissions PASS)" \
  "$(rec "$R" '[c["status"] for c in r["audit"]["report"]["criteria"] if c["id"]=="app.no_dangerous_permissions"][0]')" PASS
# (the lease's two, and the read-only review lease's two after the run)
is "control: a protected run mints tokens of the run's App" "$(( $(app_tokens 1001 any) - n1 >= 2 ))" 1
if grep -qF "$MARK" <<<"$out"; then fail "acme/tally: no UNPROTECTED mark"; else ok "acme/tally: no UNPROTECTED mark"; fi
check "acme/tally: the record validates" validate_record "$R"

# --- an unprotected repository is refused by default ---
R=$T_TMP/loose-refused.json
n1=$(app_tokens 1001 run)
out=$("$AIRLOCK" ticket acme/loose#1 -p "$T_TMP/loose.yaml" --agent "$AGENTS/patch-agent" --record "$R" 2>&1); rc=$?
is "acme/loose (unprotected): refused, exit 4 (security refusal)" "$rc" 4
like "acme/loose: the audit phase failed" "$out" 'audit +failed .*the escape budget does not hold'
like "acme/loose: the message names the failing criterion" "$out" 'refusing to run: the escape budget of acme/loose does not hold: branch\.protected \(FAIL\), reviews\.approvals \(FAIL\)'
like "acme/loose: ... and its fix" "$out" 'FAIL +branch\.protected: .*
 +evidence: .*
 +fix: protect the branch'
is "acme/loose: no run token was minted (forge /tokens, app 1001)" "$(( $(app_tokens 1001 run) - n1 ))" 0
is "acme/loose: the audit's own App tokens (metadata: read) are all revoked" "$(app_tokens 1001 active)" 0
is "acme/loose: no lease, no agent: phases are policy, audit" "$(rec "$R" '[p["name"] for p in r["phases"]]')" "['policy', 'audit']"
is "acme/loose: the record says the budget does not hold, not accepted" \
  "$(rec "$R" 'r["audit"]["status"], r["audit"]["holds"], r["accept_unprotected"], r["unprotected"], "exit_status" in r["agent"]')" \
  "('does-not-hold', False, False, False, False)"
like "acme/loose: the record's error names the criteria" "$(rec "$R" 'r["error"]')" 'branch\.protected \(FAIL\)'
check "acme/loose (refused): the record validates" validate_record "$R"
is "acme/loose: no PR on the forge for acme/loose" \
  "$(admin /pulls | python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin) if p.get("repo")=="acme/loose"))')" 0
is "every token the audits minted is revoked (audit App: none active)" "$(app_tokens 1002 active)" 0
like "control: the audit App did mint (and revoke) tokens" "$(app_tokens 1002 revoked)" '^[1-9]'

# --- the ci.* criteria judge the policy's run branches (issue #26) ---
is "acme/tally: the ci.* criteria judged airlock/ run branches, and hold" \
  "$(rec "$T_TMP/tally.json" 'r["audit"]["report"]["run_prefix"], sorted({c["status"] for c in r["audit"]["report"]["criteria"] if c["id"].startswith("ci.")})')" \
  "('airlock/', ['PASS'])"
cp "$T_TMP/loose.yaml" "$T_TMP/loose-bot.yaml"
printf 'review: {branch_prefix: bot/}\n' >>"$T_TMP/loose-bot.yaml"
R=$T_TMP/loose-bot.json
"$AIRLOCK" ticket acme/loose#1 -p "$T_TMP/loose-bot.yaml" --agent "$AGENTS/patch-agent" --record "$R" >/dev/null 2>&1; rc=$?
is "acme/loose, branch_prefix bot/: refused, exit 4" "$rc" 4
is "  the audit judged the policy's prefix" "$(rec "$R" 'r["audit"]["report"]["run_prefix"]')" bot/

# --- --accept-unprotected runs, and says so everywhere ---
R=$T_TMP/loose-accepted.json
MAIN0=$(main_sha acme/loose)
out=$("$AIRLOCK" ticket acme/loose#1 -p "$T_TMP/loose.yaml" --accept-unprotected --agent "$AGENTS/patch-agent" --record "$R" 2>"$T_TMP/acc.err"); rc=$?
err=$(cat "$T_TMP/acc.err")
is "acme/loose --accept-unprotected: the run goes ahead, exit 0" "$rc" 0
[ $rc -eq 0 ] || diag "$err"
like "acme/loose --accept-unprotected: the audit phase warns and names the criteria" "$err" 'audit +warn .*does not hold: branch\.protected \(FAIL\).*running anyway'
# every line from the audit's verdict on (the policy line comes before it)
after=$(grep '^airlock ticket: ' <<<"$err" | sed -n '/^airlock ticket: audit /,$p')
lines=$(grep -c . <<<"$after")
marked=$(grep -cF "$MARK" <<<"$after")
like "acme/loose --accept-unprotected: progress and summary lines printed" "$lines" '^([5-9]|[1-9][0-9])$'
is "acme/loose --accept-unprotected: every one of them says $MARK" "$marked" "$lines"
like "  among them the summary's run record line" "$after" "run record .* \\[UNPROTECTED: accepted\\]"
is "acme/loose --accept-unprotected: the record says so" \
  "$(rec "$R" 'r["accept_unprotected"], r["unprotected"], r["audit"]["accepted_unprotected"], r["audit"]["status"]')" \
  "(True, True, True, 'does-not-hold')"
is "acme/loose --accept-unprotected: the audit phase is recorded as warn" \
  "$(rec "$R" '[p["status"] for p in r["phases"] if p["name"]=="audit"]')" "['warn']"
like "acme/loose --accept-unprotected: a PR was made" "$(rec "$R" 'r["pull_request"]["url"]')" '^https://forge\.test:[0-9]+/acme/loose/pull/[0-9]+$'
is "acme/loose --accept-unprotected: tokens dead" "$(rec "$R" 'r["revocation"]["all_dead"]')" True
is "acme/loose --accept-unprotected: main untouched" "$(main_sha acme/loose)" "$MAIN0"
check "acme/loose (accepted): the record validates" validate_record "$R"

# --accept-unprotected where the budget holds marks nothing: the mark follows
# the verdict, not the flag.
R=$T_TMP/tally-flag.json
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --accept-unprotected --agent /usr/bin/true --record "$R" 2>&1); rc=$?
is "acme/tally --accept-unprotected: exit 3 (no PR from true), record not unprotected" "$rc/$(rec "$R" 'r["accept_unprotected"], r["unprotected"]')" "3/(True, False)"
if grep -qF "$MARK" <<<"$out"; then fail "acme/tally --accept-unprotected: no mark"; else ok "acme/tally --accept-unprotected: no mark"; fi

# --- the broker's audit credential matters -----------------------------------
# start_broker2 NAME: a second broker on $T_TMP/NAME/sock with config
# $T_TMP/NAME/broker.yaml (written by the caller); prints nothing
start_broker2() {
  "$AIRLOCK_NET" broker -c "$T_TMP/$1/broker.yaml" --socket "$T_TMP/$1/sock" >"$T_TMP/$1/log" 2>&1 &
  local pid=$!
  on_exit "kill $pid"
  for _ in $(seq 100); do [ -S "$T_TMP/$1/sock" ] && return 0; kill -0 $pid 2>/dev/null || return 1; sleep 0.05; done
  return 1
}
base_conf() { sed -e '/^audit:/,$d' -e "s|state_dir: .*|state_dir: $T_TMP/$1/state|" "$FE_DIR/secret/broker.yaml"; }

# Without an audit credential the App (no administration) cannot see the
# classic protection: UNKNOWN, never a pass, so the protected repo is refused.
mkdir -p "$T_TMP/noaud"; chmod 700 "$T_TMP/noaud"
base_conf noaud >"$T_TMP/noaud/broker.yaml"; chmod 600 "$T_TMP/noaud/broker.yaml"
check "a broker without an audit credential starts" start_broker2 noaud
write_policy "$T_TMP/noaud.yaml" "$T_TMP/noaud/sock"
R=$T_TMP/noaud.json
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/noaud.yaml" --agent /usr/bin/true --record "$R" 2>&1); rc=$?
is "no audit credential: acme/tally is refused (exit 4)" "$rc" 4
like "no audit credential: the criteria are UNKNOWN, not PASS" "$out" 'reviews\.approvals \(UNKNOWN\)'
like "no audit credential: the audit read with the App's own read-only token" "$(rec "$R" 'r["audit"]["report"]["credentials"]')" 'minted by the App for the audit, revoked$'

# audit.token_file: an operator's read-only admin token kept by the broker.
# The forge has no user tokens, so the test makes one from the audit App;
# it never appears on a command line (curl reads headers from a file).
mkdir -p "$T_TMP/tf"; chmod 700 "$T_TMP/tf"
now=$(admin /clock | python3 -c 'import json,sys; print(json.load(sys.stdin)["now"])')
printf 'Authorization: Bearer %s\n' "$(JWT_NOW=$now sh "$AIRLOCK_SRC/scripts/forge-jwt.sh" "$FE_DIR/secret/keys/auditor.pem" 1002)" >"$T_TMP/tf/jwt.h"
curl -s --noproxy '*' --cacert "$FE_CA" -H @"$T_TMP/tf/jwt.h" -X POST \
  --data-binary '{"repositories":["tally"],"permissions":{"administration":"read","contents":"read"}}' \
  "https://127.0.0.1:$FE_HTTPS/app/installations/2002/access_tokens" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >"$T_TMP/tf/audit.token"
chmod 600 "$T_TMP/tf/audit.token"
like "control: a read-only admin token for the token file" "$(head -c 4 "$T_TMP/tf/audit.token")" '^ghs_$'
{ base_conf tf; printf 'audit:\n  token_file: %s\n' "$T_TMP/tf/audit.token"; } >"$T_TMP/tf/broker.yaml"
chmod 600 "$T_TMP/tf/broker.yaml"
check "a broker with audit.token_file starts" start_broker2 tf
write_policy "$T_TMP/tf.yaml" "$T_TMP/tf/sock"
R=$T_TMP/tf.json
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/tf.yaml" --agent /usr/bin/true --record "$R" 2>&1); rc=$?
is "audit.token_file: acme/tally passes (exit 3: true makes no PR)" "$rc" 3
[ $rc -eq 0 ] || diag "$out"
like "audit.token_file: the report names the token by fingerprint only" "$(rec "$R" 'r["audit"]["report"]["credentials"]')" \
  "^the broker's audit token sha256:[0-9a-f]{12} \(audit\.token_file\)"
if { cat "$R" "$T_TMP/tf/log" "$T_TMP/tf/state/leases.jsonl"; printf '%s\n' "$out"; } | grep -qF -f "$T_TMP/tf/audit.token"; then
  fail "the audit token is in no record, log or output"; else ok "the audit token is in no record, log or output"; fi
mkdir -p "$T_TMP/tf2"; chmod 700 "$T_TMP/tf2"
cp "$T_TMP/tf/audit.token" "$T_TMP/tf2/audit.token"; chmod 644 "$T_TMP/tf2/audit.token"
{ base_conf tf2; printf 'audit:\n  token_file: %s\n' "$T_TMP/tf2/audit.token"; } >"$T_TMP/tf2/broker.yaml"
chmod 600 "$T_TMP/tf2/broker.yaml"
check_not "a token file readable by others stops the broker's start" start_broker2 tf2
like "  and says why" "$(cat "$T_TMP/tf2/log")" 'readable or writable by group or others'
# the test's own token: revoke it (curl reads it from a header file)
printf 'Authorization: Bearer %s\n' "$(cat "$T_TMP/tf/audit.token")" >"$T_TMP/tf/tok.h"
is "the token file's token is revoked by the test" \
  "$(curl -s --noproxy '*' --cacert "$FE_CA" -H @"$T_TMP/tf/tok.h" -X DELETE -o /dev/null -w '%{http_code}' "https://127.0.0.1:$FE_HTTPS/installation/token")" 204

# The broker's roles are part of the budget: a role granting more than the
# two roles need fails app.token_permissions, so the run is refused.
mkdir -p "$T_TMP/wide"; chmod 700 "$T_TMP/wide"
sed -e "s|state_dir: .*|state_dir: $T_TMP/wide/state|" \
  -e 's|git: {contents: write, pull_requests: write}|git: {contents: write, pull_requests: write, checks: write}|' \
  "$FE_DIR/secret/broker.yaml" >"$T_TMP/wide/broker.yaml"; chmod 600 "$T_TMP/wide/broker.yaml"
check "a broker with a wider git role starts" start_broker2 wide
write_policy "$T_TMP/wide.yaml" "$T_TMP/wide/sock"
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/wide.yaml" --agent /usr/bin/true --record "$T_TMP/wide.json" 2>&1); rc=$?
is "wider git role: refused (exit 4)" "$rc" 4
like "wider git role: app.token_permissions fails, naming checks" "$out" 'app\.token_permissions \(FAIL\)'
like "  evidence names the extra permission" "$(rec "$T_TMP/wide.json" '[c["evidence"] for c in r["audit"]["report"]["criteria"] if c["id"]=="app.token_permissions"][0]')" '`checks` is more than the role needs'

# --- the protocol: only repositories the broker may lease; strict requests ---
ask() { python3 - "$FE_SOCK" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    d = s.recv(65536)
    if not d: break
    buf += d
m = json.loads(buf)
print(m.get("type"), m.get("code", ""), m.get("holds", ""))
PY
}
is "audit of a repository the broker may not lease: forbidden" "$(ask '{"type":"audit","version":1,"repo":"acme/secret"}')" "error forbidden "
is "audit with a bad branch name: bad_request" "$(ask '{"type":"audit","version":1,"repo":"acme/tally","branch":"../x"}')" "error bad_request "
is "audit with an unknown field: bad_request" "$(ask '{"type":"audit","version":1,"repo":"acme/tally","token":"x"}')" "error bad_request "
is "control: a well-formed audit request is answered (with a grant, not a report)" "$(ask '{"type":"audit","version":1,"repo":"acme/tally","branch":"main"}')" "audit_grant  "
like "the broker's lease log records each audit" "$(grep -c '"event":"audit"' "$FE_DIR/secret/broker/leases.jsonl")" '^[1-9]'

# --- the key's process runs no audit (issue 28): it hands read tokens over ---
# Hold an audit grant open, read its tokens as the forge minted them, then
# drop the connection: the broker revokes them.
python3 - "$FE_SOCK" "$T_TMP/grant.json" <<'PY' &
import json, socket, sys, time, os
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"type":"audit","version":1,"repo":"acme/loose"}\n')
buf = b""
while not buf.endswith(b"\n"):
    d = s.recv(65536)
    if not d: break
    buf += d
m = json.loads(buf)
out = {"type": m.get("type"), "report": "report" in m or "report" in m.get("audit", {}),
       "tokens": [t["fingerprint"] for t in m.get("tokens", [])], "audit": m.get("audit")}
open(sys.argv[2] + ".tmp", "w").write(json.dumps(out)); os.rename(sys.argv[2] + ".tmp", sys.argv[2])
while not os.path.exists(sys.argv[2] + ".done"): time.sleep(0.05)
s.close()
PY
gpid=$!
for _ in $(seq 200); do [ -s "$T_TMP/grant.json" ] && break; sleep 0.1; done
grant() { python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T_TMP/grant.json" "$1"; }
# the grant's tokens as the forge holds them: app, permissions, state
minted() { admin /tokens | python3 -c '
import json,sys
d=json.load(sys.stdin); d=d.get("tokens",d) if isinstance(d,dict) else d
fps=json.loads(sys.argv[1])
for t in sorted((t for t in d if t["fingerprint"] in fps), key=lambda t: t["app_id"]):
    print(t["app_id"], ",".join("%s:%s" % kv for kv in sorted((t.get("permissions") or {}).items())), t["state"])' "$(grant 'json.dumps(g["tokens"])')"; }
is "the broker answers an audit with a grant, not a report" "$(grant 'g["type"], g["report"]')" "('audit_grant', False)"
is "  the App as its JWT shows it (slug, installation), and the broker's roles" \
  "$(grant 'bool(g["audit"]["app"]["slug"]), g["audit"]["app"]["installation_id"] > 0, sorted(g["audit"]["roles"])')" "(True, True, ['git', 'ticket'])"
minted_now=$(minted)
is "the grant's tokens as minted at the forge: read-only (the audit App's; the run's App's metadata), active" \
  "$minted_now" "$(printf '1001 metadata:read active\n1002 administration:read,contents:read,metadata:read active')"
touch "$T_TMP/grant.json.done"; wait $gpid
for _ in $(seq 100); do [ "$(minted | grep -c active)" = 0 ] && break; sleep 0.1; done
is "the connection dropped: the broker revoked both" \
  "$(minted)" "$(printf '1001 metadata:read revoked\n1002 administration:read,contents:read,metadata:read revoked')"
is "no token is active at the end" "$(tokens_in active)" 0
done_testing
