#!/bin/bash
# airlock serve's GitLab webhooks (issue #30 item 5 and 'Done when': real-
# shaped GitLab webhooks queue runs; forged or replayed ones are refused).
# The payloads are GitLab's documented examples (tests/unit/gitlab-webhooks/:
# "Webhook events" › Issue events with a label added, Comment events on an
# issue) with the user, project and iid of each case put in. On the GitLab
# test forge (tests/gitlab-forge/, its fixture's acme/other: alice
# Maintainer, dev.one Developer, rita_r Reporter, gus Guest, bert blocked,
# stranger no member) a GitLab broker (gitlab.token_file) answers serve's
# trigger checks with the GitLab driver: the sender's access level is asked
# of GitLab (GET /users?username=, GET /projects/:id/members/all/:id), never
# read from the payload. runs.airlock is a stub that writes the argv serve
# gives it (the row's target) and fails.
# Daemon A (webhook.gitlab.secret_file):
#   control: a label added by a Developer, a note `/airlock run` by a
#     Maintainer: 202 queued, a row PROJECT#IID with the username, the
#     check's permission, and the run started with that target;
#   forged: a wrong X-Gitlab-Token, none: 401, no row, no delivery kept;
#   replayed: the control's X-Gitlab-Event-UUID with another issue, the
#     control's body under a new UUID: 200 duplicate, no row;
#   below Developer: Reporter, Guest, a blocked Developer, a stranger (the
#     payload as the control's, the user changed): queued, then refused by
#     the check with GitLab's answer, never started;
#   a project in a subgroup is the row's target as GROUP/SUB/PROJECT#IID, checked and started;
#     a project served with a GitHub policy, or not served: 403.
# Daemon B (webhook.gitlab.signing_token_file only): the signed form:
#   control signed: queued; a wrong signature, none, a webhook-timestamp
#   ten minutes old: 401; the control's webhook-id re-signed over another
#   issue under a new UUID: 200 duplicate (the webhook-id is a replay key).
# Daemon C (no webhook.gitlab): the path answers 404, even with the token.
. "$(dirname "$0")/lib.sh"
FORGE=${GITLAB_FORGE:?GITLAB_FORGE is set by meson}
AIRLOCK_NET=${AIRLOCK_NET:-$AIRLOCK_BUILD/src/cli/airlock-net}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$AIRLOCK_NET" ] || { skip "airlock-net was not built"; done_testing; exit 0; }
for p in curl jq python3; do command -v $p >/dev/null || { skip "$p is not installed"; done_testing; exit 0; }; done
D=$T_TMP/svgl
mkdir -p "$D/state" "$D/state2"; chmod 700 "$D" "$D/state" "$D/state2"
umask 077
rnd() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
rnd 24 >"$D/token"
for f in gh gl; do rnd 24 >"$D/$f.secret"; done
printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$D/gl.whsec"

"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token" \
  --ports-file "$D/ports.json" >"$D/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID"
for _ in $(seq 1 100); do [ -s "$D/ports.json" ] && break; kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
PORT=$(jq -r .http "$D/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the GitLab test forge starts"; sed 's/^/# /' "$D/forge.log"; done_testing; exit 1; }
API=http://127.0.0.1:$PORT/api/v4

cat >"$D/broker.yaml" <<EOF
gitlab: {token_file: $D/token}
api: {url: "$API", retries: 1, timeout: 5s}
repositories: [acme/other, acme/tools/tally]
state_dir: $D/bstate
EOF
SOCK=$D/broker.sock
"$AIRLOCK" broker -c "$D/broker.yaml" --socket "$SOCK" >"$D/broker.log" 2>&1 &
BPID=$!
on_exit "kill $BPID"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; kill -0 $BPID 2>/dev/null || break; sleep 0.1; done
[ -S "$SOCK" ] || { fail "the GitLab broker starts"; sed 's/^/#   /' "$D/broker.log"; done_testing; exit 1; }

# one GitLab policy for both projects (no credentials.*.repo: it would name one)
cat >"$D/gl.yaml" <<EOF
version: 1
network:
  allow:
    - {host: gitlab.test, port: 443, tls: true}
  pin:
    - {host: gitlab.test, address: 127.0.0.1}
filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}
process:
  limits: {memory: 1GiB, pids: 256, wall: 2m}
credentials:
  broker: $SOCK
  ttl: 5m
forge: {kind: gitlab, api_url: "https://gitlab.test/api/v4", git_url: "https://gitlab.test"}
EOF
cat >"$D/gh.yaml" <<EOF
version: 1
network:
  allow:
    - {host: api.forge.test, port: 8443, tls: true}
    - {host: forge.test, port: 8443, tls: true}
  pin:
    - {host: api.forge.test, address: 127.0.0.1}
    - {host: forge.test, address: 127.0.0.1}
filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}
process:
  limits: {memory: 1GiB, pids: 256, wall: 2m}
credentials:
  broker: $SOCK
  git: {repo: acme/plain, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: acme/plain, permissions: {issues: write}}
  ttl: 5m
forge:
  api_url: https://api.forge.test:8443
  git_url: https://forge.test:8443
EOF
printf '#!/bin/sh\necho "$*" >>%s/argv\nexit 1\n' "$D" >"$D/stub"; chmod 755 "$D/stub"

config() { # FILE STATE_DIR GITLAB-BLOCK
  cat >"$1" <<EOF
version: 1
listen: {webhook: 127.0.0.1:0, status: 127.0.0.1:0}
webhook:
  secret_file: $D/gh.secret
${3:+  gitlab: $3}
broker: $SOCK
state_dir: $2
intake: {per_sender: 1000, per_repo: 1000}
runs: {retries: 0, airlock: $D/stub, max_concurrent: 8, max_per_repo: 8}
repositories:
  - {repo: acme/other, policy: $D/gl.yaml}
  - {repo: acme/tools/tally, policy: $D/gl.yaml}
  - {repo: acme/plain, policy: $D/gh.yaml}
EOF
}
start() { # CONF STATE_DIR LOG: sets PID HOOK
  "$AIRLOCK_NET" serve -c "$1" >>"$3" 2>&1 &
  PID=$!
  on_exit "kill $PID"
  for _ in $(seq 200); do [ -s "$2/listen.json" ] && break; sleep 0.05; done
  HOOK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["webhook"])' "$2/listen.json") || return 1
}

# the sender: hook.py HOOK KIND USER PROJECT IID UUID; prints "STATUS OUTCOME".
# KIND label | note | note-other (a note that is not the command).
# env: TOKENF (X-Gitlab-Token's file, "" none), BADTOKEN=1 (another value),
# SIGNF (whsec file: the signed form), BADSIG=1, NOSIG=1, TS_OFF (s), WID
# (the webhook-id; default a fresh one), SAMEBODY=FILE (send FILE's bytes),
# SAVE=FILE (keep the body sent).
cat >"$D/hook.py" <<'PY'
import base64, hashlib, hmac, http.client, json, os, sys, time, uuid
hook, kind, user, project, iid, ev_uuid = sys.argv[1:7]
fx = os.path.join(os.environ["FX"], "issue-label-added.json" if kind == "label" else "note-on-issue.json")
p = json.load(open(fx))
uid = {"alice": 11, "dev.one": 12, "rita_r": 13, "gus": 14, "bert": 15, "stranger": 16}.get(user, 99)
p["user"].update(username=user, id=uid, name=user)
p["project"]["path_with_namespace"] = project
p["project"]["id"] = 43
if kind == "label":
    p["object_attributes"]["iid"] = int(iid)
else:
    p["issue"]["iid"] = int(iid)
    p["object_attributes"]["note"] = "/airlock run" if kind == "note" else "thanks, looks good"
body = open(os.environ["SAMEBODY"], "rb").read() if os.environ.get("SAMEBODY") else json.dumps(p).encode()
if os.environ.get("SAVE"):
    open(os.environ["SAVE"], "wb").write(body)
h = {"Content-Type": "application/json", "User-Agent": "GitLab/18.2.0",
     "X-Gitlab-Event": "Issue Hook" if kind == "label" else "Note Hook",
     "X-Gitlab-Event-UUID": ev_uuid, "X-Gitlab-Instance": "https://gitlab.test",
     "X-Gitlab-Webhook-UUID": "3c7d7f5e-2b1a-4e6f-9a8b-0c1d2e3f4a5b"}
tf = os.environ.get("TOKENF", "")
if tf:
    t = open(tf).read().strip()
    h["X-Gitlab-Token"] = "not-" + t if os.environ.get("BADTOKEN") else t
sf = os.environ.get("SIGNF", "")
if sf:
    key = base64.b64decode(open(sf).read().strip()[6:])
    wid = os.environ.get("WID") or "msg_" + uuid.uuid4().hex
    ts = str(int(time.time()) + int(os.environ.get("TS_OFF", "0")))
    mac = hmac.new(b"x" + key if os.environ.get("BADSIG") else key, wid.encode() + b"." + ts.encode() + b"." + body, hashlib.sha256).digest()
    h.update({"webhook-id": wid, "webhook-timestamp": ts})
    if not os.environ.get("NOSIG"):
        h["webhook-signature"] = "v1," + base64.b64encode(mac).decode()
host, port = hook.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=20)
c.request("POST", "/webhook/gitlab", body=body, headers=h)
r = c.getresponse()
data = r.read()
try:
    print(r.status, json.loads(data).get("outcome"))
except Exception:
    print(r.status, "?")
PY
export FX=$SRC/tests/unit/gitlab-webhooks
send() { python3 "$D/hook.py" "$HOOK" "$@"; }
newid() { python3 -c 'import uuid; print(uuid.uuid4())'; }
DB=$D/state/queue.db
sql() { python3 -c 'import sqlite3,sys; print("\n".join("|".join("" if v is None else str(v) for v in r) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2], sys.argv[3:])))' "$DB" "$@"; }
rows_for() { sql "SELECT count(*) FROM runs WHERE repo = ? AND number = ?" "$1" "$2"; }
outcome_of() { sql "SELECT outcome FROM deliveries WHERE id = ?" "gitlab:$1"; }
refused_lines() { grep '"event":"webhook_refused"' "$1" | grep '"vendor":"gitlab"' | grep -c "\"rule\":\"$2\""; }
wait_argv() { for _ in $(seq 400); do grep -q -- "$1" "$D/argv" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
state_of() { # REPO N: waits until the row is no longer queued, prints state|reason
  local s
  for _ in $(seq 400); do
    s=$(sql "SELECT state FROM runs WHERE repo = ? AND number = ? ORDER BY id DESC LIMIT 1" "$1" "$2")
    [ -n "$s" ] && [ "$s" != queued ] && [ "$s" != running ] && break
    sleep 0.05
  done
  sql "SELECT state || '|' || coalesce(reason, '') FROM runs WHERE repo = ? AND number = ? ORDER BY id DESC LIMIT 1" "$1" "$2"
}

config "$D/serve.yaml" "$D/state" "{secret_file: $D/gl.secret}"
start "$D/serve.yaml" "$D/state" "$D/serve.log" || { fail "serve starts"; sed 's/^/#   /' "$D/serve.log" | tail -20; done_testing; exit 1; }
ok "serve on $HOOK (webhook.gitlab with a secret token; a GitLab broker on the test forge)"
is "… both GitLab policies pass the check airlock ticket makes (no policy warning)" "$(grep -c '"event":"policy"' "$D/serve.log")" 0
export TOKENF=$D/gl.secret

# ---- control: a label added by a Developer, a note by a Maintainer
U1=$(newid)
is "control: the label added (Issue Hook) by a Developer is queued" "$(SAVE=$D/body1 send label dev.one acme/other 1 "$U1")" "202 queued"
is "control: … one row acme/other#1, trigger label, the GitLab username" "$(sql "SELECT repo, number, trigger, sender FROM runs WHERE repo = 'acme/other' AND number = 1")" "acme/other|1|label|dev.one"
like "control: … its delivery recorded with the target" "$(outcome_of "$U1")" '^queued: run [0-9]+ \(acme/other#1, label by dev\.one\)'
check "control: … started as airlock ticket acme/other#1 (after the trigger check)" wait_argv "^ticket acme/other#1 -p $D/gl.yaml"
like "control: … the check asked GitLab: Developer is write" "$(sql "SELECT permission || '|' || check_detail FROM runs WHERE repo = 'acme/other' AND number = 1")" \
  "^write\|dev\.one has permission \`write\` \(role developer\) on acme/other \(the forge's answer\)"
U2=$(newid)
is "control: \`/airlock run\` in a note (Note Hook) by a Maintainer is queued" "$(send note alice acme/other 2 "$U2")" "202 queued"
check "control: … started as airlock ticket acme/other#2" wait_argv "^ticket acme/other#2 -p "
like "control: … Maintainer is admin" "$(sql "SELECT permission || '|' || check_detail FROM runs WHERE repo = 'acme/other' AND number = 2")" \
  "^admin\|alice has permission \`admin\` \(role maintainer\)"
is "a note that is not the command: 202 ignored, no row" "$(send note-other alice acme/other 3 "$(newid)") $(rows_for acme/other 3)" "202 ignored 0"

# ---- forged
n0=$(refused_lines "$D/serve.log" token)
F1=$(newid) F2=$(newid)
is "forged: another X-Gitlab-Token: 401" "$(BADTOKEN=1 send label dev.one acme/other 4 "$F1")" "401 refused"
is "forged: no X-Gitlab-Token: 401" "$(TOKENF= send label dev.one acme/other 5 "$F2")" "401 refused"
is "forged: … no row for either" "$(rows_for acme/other 4)$(rows_for acme/other 5)" 00
is "forged: … each logged webhook_refused, rule token" "$(($(refused_lines "$D/serve.log" token) - n0))" 2
is "forged: … no delivery kept (unauthenticated)" "$(sql "SELECT count(*) FROM deliveries WHERE id IN (?, ?)" "gitlab:$F1" "gitlab:$F2")" 0
is "control of forged: #4 with the secret token is queued" "$(send label dev.one acme/other 4 "$(newid)")" "202 queued"
is "a delivery without X-Gitlab-Event-UUID: 400" "$(send label dev.one acme/other 6 "")" "400 refused"
is "… no row" "$(rows_for acme/other 6)" 0

# ---- replayed
is "replayed: the control's X-Gitlab-Event-UUID with another issue: 200 duplicate" "$(send label dev.one acme/other 7 "$U1")" "200 duplicate"
is "replayed: the control's body, byte for byte, under a new UUID: 200 duplicate" "$(SAMEBODY=$D/body1 send label dev.one acme/other 1 "$(newid)")" "200 duplicate"
is "replayed: … no row for #7, still one for #1" "$(rows_for acme/other 7) $(rows_for acme/other 1)" "0 1"
like "replayed: … logged as replays" "$(grep '"event":"webhook_replay"' "$D/serve.log" | grep -c '"vendor":"gitlab"')" '^[2-9]'
like "replayed: … the first delivery's outcome stands" "$(outcome_of "$U1")" '^queued: run [0-9]+ \(acme/other#1'

# ---- the sender's access level is GitLab's answer: below Developer refused
for c in rita_r:11:read:reporter gus:12:read:guest bert:13:none:inactive stranger:14:none:; do
  IFS=: read -r who n perm role <<<"$c"
  is "$who: the control's payload with this sender is queued (intake)" "$(send label "$who" acme/other "$n" "$(newid)")" "202 queued"
  like "$who: … refused by the trigger check: GitLab says \`$perm\`" "$(state_of acme/other "$n")" \
    "^refused\|$who may not trigger a run: permission \`$perm\` on acme/other \(a run needs write or admin\)"
  [ -n "$role" ] && like "$who: … the role GitLab named" "$(sql "SELECT check_detail FROM runs WHERE repo = 'acme/other' AND number = ?" "$n")" "\(role $role\)"
done
check_not "… none of the four was started" grep -E -- '^ticket acme/other#1[1-4] ' "$D/argv"
is "control beside them: the same payload by dev.one (#15) is started" "$(send label dev.one acme/other 15 "$(newid)")" "202 queued"
check "… started as airlock ticket acme/other#15" wait_argv "^ticket acme/other#15 -p "

# the check's tokens: read scopes only, each revoked (the Maintainer's list of the project's tokens)
printf 'PRIVATE-TOKEN: %s\n' "$(cat "$D/token")" >"$D/mh"
TOKS=$(curl -s --noproxy '*' -H @"$D/mh" "$API/projects/43/access_tokens")
like "the trigger checks minted project tokens on acme/other" "$(jq length <<<"$TOKS")" '^[1-9]'
is "… each with GitLab's read scopes only (read_api, read_repository)" "$(jq -c '[.[].scopes | sort] | unique' <<<"$TOKS")" '[["read_api","read_repository"]]'
is "… each revoked when the check was answered" "$(jq -c '[.[].revoked] | unique' <<<"$TOKS")" '[true]'

# ---- the target: a project in a subgroup; a project not GitLab's or not served
is "a subgroup's project: queued" "$(send label dev.one acme/tools/tally 7 "$(newid)")" "202 queued"
is "… its row's target is GROUP/SUB/PROJECT and the iid" "$(sql "SELECT repo || '#' || number FROM runs WHERE repo = 'acme/tools/tally'")" "acme/tools/tally#7"
check "… checked by the broker (dev.one is its Developer) and started as airlock ticket acme/tools/tally#7" wait_argv "^ticket acme/tools/tally#7 -p "
P1=$(newid)
is "a project served with a GitHub policy (forge.kind github): 403" "$(send label dev.one acme/plain 1 "$P1")" "403 refused"
like "… recorded, no row" "$(outcome_of "$P1")|$(rows_for acme/plain 1)" '^refused: acme/plain is served with a policy whose forge.kind is github.*\|0$'
P2=$(newid)
is "a project not served: 403, recorded" "$(send label dev.one acme/nope 1 "$P2") $(outcome_of "$P2")" "403 refused refused: project acme/nope is not served"

# ---- daemon B: the signed form only
kill -TERM "$PID"; wait "$PID" 2>/dev/null
config "$D/serve2.yaml" "$D/state2" "{signing_token_file: $D/gl.whsec}"
start "$D/serve2.yaml" "$D/state2" "$D/serve2.log" || { fail "serve (signing token) starts"; sed 's/^/#   /' "$D/serve2.log" | tail -20; done_testing; exit 1; }
DB=$D/state2/queue.db
export TOKENF= SIGNF=$D/gl.whsec
is "signed control: a delivery signed with the signing token is queued" "$(WID=msg_control1 send label dev.one acme/other 21 "$(newid)")" "202 queued"
check "signed control: … started as airlock ticket acme/other#21" wait_argv "^ticket acme/other#21 -p "
n0=$(refused_lines "$D/serve2.log" signature)
is "signed forged: a signature under another key: 401" "$(BADSIG=1 send label dev.one acme/other 22 "$(newid)")" "401 refused"
is "signed forged: no webhook-signature: 401" "$(NOSIG=1 send label dev.one acme/other 23 "$(newid)")" "401 refused"
is "signed replayed: a webhook-timestamp ten minutes old: 401" "$(TS_OFF=-600 send label dev.one acme/other 24 "$(newid)")" "401 refused"
is "signed: … no row for any of them" "$(rows_for acme/other 22)$(rows_for acme/other 23)$(rows_for acme/other 24)" 000
is "signed: … each logged webhook_refused, rule signature" "$(($(refused_lines "$D/serve2.log" signature) - n0))" 3
is "control of signed forged: #22 signed well is queued" "$(send label dev.one acme/other 22 "$(newid)")" "202 queued"
is "control of the timestamp: 60 s old is queued" "$(TS_OFF=-60 send label dev.one acme/other 24 "$(newid)")" "202 queued"
is "signed replayed: the control's webhook-id, re-signed over another issue, new UUID: 200 duplicate" \
  "$(WID=msg_control1 send label dev.one acme/other 25 "$(newid)")" "200 duplicate"
is "… no row for #25" "$(rows_for acme/other 25)" 0
is "a token-only sender on this daemon (no signature): 401" "$(TOKENF=$D/gl.secret SIGNF= send label dev.one acme/other 26 "$(newid)")" "401 refused"

# ---- a daemon without webhook.gitlab: its path answers 404, even with the token
kill -TERM "$PID"; wait "$PID" 2>/dev/null
mkdir -p "$D/state3"; chmod 700 "$D/state3"
config "$D/serve4.yaml" "$D/state3" ""
start "$D/serve4.yaml" "$D/state3" "$D/serve4.log" || { fail "serve (no gitlab block) starts"; sed 's/^/#   /' "$D/serve4.log" | tail -20; done_testing; exit 1; }
DB=$D/state3/queue.db
is "no webhook.gitlab: POST /webhook/gitlab with the token answers 404" "$(TOKENF=$D/gl.secret SIGNF= send label dev.one acme/other 31 "$(newid)")" "404 refused"
is "… no row, no delivery" "$(sql "SELECT (SELECT count(*) FROM runs) || '/' || (SELECT count(*) FROM deliveries)")" 0/0
like "… logged with rule not_configured" "$(grep -c '"rule":"not_configured"' "$D/serve4.log")" '^[1-9]'

# ---- the config's rules
kill -TERM "$PID"; wait "$PID" 2>/dev/null
printf 'version: 1\nwebhook:\n  secret_file: %s\n  gitlab: {label: airlock}\nbroker: /x\nstate_dir: /x\nrepositories:\n  - {repo: acme/tally, policy: /x}\n' "$D/gh.secret" >"$D/bad.yaml"
like "webhook.gitlab without a secret or signing token: refused, naming the rule" "$("$AIRLOCK_NET" serve -c "$D/bad.yaml" 2>&1)" 'webhook\.gitlab.*set secret_file .*signing_token_file'
printf 'nope\n' >"$D/bad.whsec"
config "$D/serve3.yaml" "$D/state2" "{signing_token_file: $D/bad.whsec}"
like "a signing token that is not whsec_<base64>: refused at start" "$("$AIRLOCK_NET" serve -c "$D/serve3.yaml" 2>&1)" 'signing_token_file.*whsec_'
sed -i 's|{repo: acme/plain, policy: .*}|{repo: acme/sub/plain, policy: '"$D"'/gh.yaml}|' "$D/serve3.yaml"
sed -i "s|signing_token_file: $D/bad.whsec|secret_file: $D/gl.secret|" "$D/serve3.yaml"
like "a subgroup path with a GitHub policy: refused at start" "$("$AIRLOCK_NET" serve -c "$D/serve3.yaml" 2>&1)" 'acme/sub/plain.*not OWNER/REPO.*forge\.kind is github'
done_testing
