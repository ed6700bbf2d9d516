#!/bin/bash
# airlock serve's Jira and Linear webhooks (issue #31 'Done when': signed,
# replayed and forged webhooks from both vendors accepted or refused as
# they should be). One daemon, no forge: acme/tally's policy names a Jira
# project (PROJ), acme/widget's a Linear team (ENG); runs.airlock is a stub
# that writes the argv serve gives it (the queued row's target) and fails.
# Payloads are shaped from the vendors' documented examples (the unit
# test's shapes). For each vendor:
#   control: a signed delivery (a label added) answers 202 queued, makes a
#     row OWNER/REPO#KEY and the run is started with that target;
#   forged: a wrong secret, a body changed after signing, no signature:
#     401, logged webhook_refused rule signature, no row, no delivery kept;
#   replayed: the same delivery id with another signed ticket, the same
#     body under a new id: 200 duplicate, no row; Linear: a webhookTimestamp
#     five minutes old under a new id: 401, recorded, no row;
#   another project / team: 202 ignored, the reason recorded, no row.
# Each refused delivery is otherwise a trigger for a ticket without a row
# (a fresh key, a fresh id), so without its check it would be queued.
# Last, a daemon without the webhook.linear block answers 404 on its path
# (a signed delivery included), and its GitHub path still answers.
. "$(dirname "$0")/lib.sh"
AIRLOCK_NET=${AIRLOCK_NET:-$AIRLOCK_BUILD/src/cli/airlock-net}
[ -x "$AIRLOCK_NET" ] || { skip "airlock-net was not built"; done_testing; exit 0; }
D=$T_TMP/svt
mkdir -p "$D/state"; chmod 700 "$D" "$D/state"
for f in jira linear gh; do head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/$f.secret"; chmod 600 "$D/$f.secret"; done
echo not-a-real-token >"$D/tok"; chmod 600 "$D/tok"
BOT=5b10ac8d82e05b22cc7d4ef5
APP=2c5e7d52-3f0a-4c1e-9d7b-6a0f1e8b9c21

policy() { # FILE REPO TICKET-BLOCK
  cat >"$1" <<YAML
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
  broker: $D/no-broker.sock
  git: {repo: $2, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: $2, permissions: {issues: write}}
  ttl: 5m
forge:
  api_url: https://api.forge.test:8443
  git_url: https://forge.test:8443
$3
YAML
}
policy "$D/tally.yaml" acme/tally "ticket: {kind: jira, url: 'https://127.0.0.1:9', project: PROJ, user: bot@acme.example, token_file: $D/tok}"
policy "$D/widget.yaml" acme/widget "ticket: {kind: linear, url: 'https://127.0.0.1:9', team: ENG, token_file: $D/tok}"
policy "$D/plain.yaml" acme/plain ""
printf '#!/bin/sh\necho "$*" >>%s/argv\nexit 1\n' "$D" >"$D/stub"; chmod 755 "$D/stub"

config() { # FILE STATE_DIR [with-linear]
  {
    echo "version: 1"
    echo "listen: {webhook: 127.0.0.1:0, status: 127.0.0.1:0}"
    echo "webhook:"
    echo "  secret_file: $D/gh.secret"
    echo "  jira: {secret_file: $D/jira.secret, label: airlock, assignee: $BOT}"
    [ -n "${3:-}" ] && echo "  linear: {secret_file: $D/linear.secret, label: airlock, app: $APP}"
    echo "broker: $D/no-broker.sock"
    echo "state_dir: $2"
    # generous intake limits: a refusal below is its own check's, never per_sender's
    echo "intake: {per_sender: 1000, per_repo: 1000}"
    echo "runs: {retries: 0, airlock: $D/stub}"
    echo "repositories:"
    echo "  - {repo: acme/tally, policy: $D/tally.yaml}"
    echo "  - {repo: acme/widget, policy: $D/widget.yaml}"
    echo "  - {repo: acme/plain, policy: $D/plain.yaml}"
  } >"$1"
}
start() { # CONF STATE_DIR LOG: sets PID HOOK STATUS
  "$AIRLOCK_NET" serve -c "$1" >>"$3" 2>&1 &
  PID=$!
  on_exit "kill $PID"
  for _ in $(seq 200); do [ -s "$2/listen.json" ] && break; sleep 0.05; done
  HOOK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["webhook"])' "$2/listen.json") || return 1
  STATUS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$2/listen.json") || return 1
}

# the sender: hook.py HOOK PATH VENDOR SECRET DELIVERY MODE KEY [TS_OFFSET_MS]
# prints "STATUS OUTCOME"; MODE good | wrong (another secret) | changed
# (signed, then a byte of the body changed) | none (no signature header) |
# same-body (the body of KEY as first sent, byte for byte). TRIG (env):
# label (default), assignee:ID (Jira, Linear) or delegate:ID (Linear).
# VENDOR github: a GitHub `issues` labeled delivery, KEY is OWNER/REPO#N.
cat >"$D/hook.py" <<'PY'
import hashlib, hmac, http.client, json, os, sys, time
hook, path, vendor, secretf, delivery, mode, key = sys.argv[1:8]
off = int(sys.argv[8]) if len(sys.argv) > 8 else 0
trig = os.environ.get("TRIG", "label")
secret = open(secretf, "rb").read().strip()
proj = key.split("-")[0]
store = os.path.join(os.path.dirname(secretf), "body-%s-%s" % (vendor, key.replace("/", "_")))
if vendor == "github":
    repo, num = key.split("#")
    p = {"action": "labeled", "label": {"name": "airlock"}, "issue": {"number": int(num), "title": "t", "state": "open"},
         "repository": {"full_name": repo, "name": repo.split("/")[1], "owner": {"login": repo.split("/")[0]}},
         "sender": {"login": "carol", "id": 503}, "installation": {"id": 2001}}
    sig_h, del_h, pre = "X-Hub-Signature-256", "X-GitHub-Delivery", "sha256="
elif vendor == "jira":   # Jira Cloud "Webhooks": jira:issue_updated, a label added
    p = {"timestamp": int(time.time() * 1000), "webhookEvent": "jira:issue_updated",
         "issue_event_type_name": "issue_generic",
         "user": {"self": "https://acme.atlassian.net/rest/api/2/user?accountId=557058:f58131cb",
                  "accountId": "557058:f58131cb-b67d-43c7-b30d-6b58d40bd077", "displayName": "Mia"},
         "issue": {"id": str(10000 + int(key.split("-")[1])), "self": "https://acme.atlassian.net/rest/api/2/10002",
                   "key": key, "fields": {"summary": "Tally is off by one", "project": {"id": "10000", "key": proj, "name": "Project"},
                                          "labels": ["airlock", "bug"], "assignee": None}},
         "changelog": {"id": "10100", "items": [{"field": "labels", "fieldtype": "jira", "from": None,
                                                  "fromString": "bug", "to": None, "toString": "airlock bug"}]}}
    if trig.startswith("assignee:"):   # assigned, no label added
        p["issue"]["fields"].update(labels=["bug"], assignee={"accountId": trig[9:], "displayName": "bot"})
        p["changelog"]["items"] = [{"field": "assignee", "fieldtype": "jira", "fieldId": "assignee", "from": None,
                                    "fromString": None, "to": trig[9:], "toString": "airlock bot"}]
    sig_h, del_h, pre = "X-Hub-Signature", "X-Atlassian-Webhook-Identifier", "sha256="
else:                  # Linear "Webhooks": an Issue update that added the label
    p = {"action": "update", "type": "Issue", "createdAt": "2026-12-02T00:00:00.000Z",
         "organizationId": "org-1", "url": "https://linear.app/acme/issue/" + key,
         "actor": {"id": "user-7", "type": "user", "name": "Ann"},
         "data": {"id": "8f1c2d6e-1111-4a2b-9c3d-%012d" % int(key.split("-")[1]), "identifier": key, "title": "Tally",
                  "team": {"id": "t1", "key": proj, "name": "Eng"}, "labelIds": ["l-air"],
                  "labels": [{"id": "l-air", "name": "airlock"}]},
         "updatedFrom": {"labelIds": [], "updatedAt": "2026-12-02T00:00:00.000Z"},
         "webhookTimestamp": int(time.time() * 1000) + off, "webhookId": "wh-1"}
    if ":" in trig:                    # assigned or delegated, no label added
        field = trig.split(":")[0] + "Id"
        p["data"].update(labelIds=[], labels=[])
        p["data"][field] = trig.split(":", 1)[1]
        p["updatedFrom"] = {field: None, "updatedAt": "2026-12-02T00:00:00.000Z"}
    sig_h, del_h, pre = "Linear-Signature", "Linear-Delivery", ""
if mode == "same-body":
    body = open(store, "rb").read()
else:
    body = json.dumps(p).encode()
    if not os.path.exists(store):
        open(store, "wb").write(body)
k = b"not-" + secret if mode == "wrong" else secret
h = {"Content-Type": "application/json", "User-Agent": "test", del_h: delivery}
if vendor == "github":
    h["X-GitHub-Event"] = "issues"
if mode != "none":
    h[sig_h] = pre + hmac.new(k, body, hashlib.sha256).hexdigest()
if mode == "changed":
    body = body.replace(b"Tally", b"Tallx", 1)
host, port = hook.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=20)
c.request("POST", path, body=body, headers=h)
r = c.getresponse()
data = r.read()
try:
    print(r.status, json.loads(data).get("outcome"))
except Exception:
    print(r.status, "?")
PY
send() { python3 "$D/hook.py" "$HOOK" "$@"; }
DB=$D/state/queue.db
sql() { python3 -c 'import sqlite3,sys; print("\n".join("|".join("" if v is None else str(v) for v in r) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2], sys.argv[3:])))' "$DB" "$@"; }
rows_for() { sql "SELECT count(*) FROM runs WHERE ticket_key = ?" "$1"; }
outcome_of() { sql "SELECT outcome FROM deliveries WHERE id = ?" "$1"; }
refused_lines() { grep '"event":"webhook_refused"' "$D/serve.log" | grep -c "\"rule\":\"$1\""; }
wait_argv() { for _ in $(seq 200); do grep -q -- "$1" "$D/argv" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

config "$D/serve.yaml" "$D/state" linear
start "$D/serve.yaml" "$D/state" "$D/serve.log" || { fail "serve starts"; sed 's/^/#   /' "$D/serve.log" | tail -20; done_testing; exit 1; }
ok "serve on $HOOK (Jira and Linear webhooks configured)"

for v in jira:PROJ:OPS linear:ENG:OPS; do
  vendor=${v%%:*} rest=${v#*:}; P=${rest%%:*} OTHER=${rest#*:}
  path=/webhook/$vendor S=$D/$vendor.secret
  repo=$([ "$vendor" = jira ] && echo acme/tally || echo acme/widget)
  # control
  is "$vendor control: a signed delivery is queued" "$(send "$path" "$vendor" "$S" "$vendor-d1" good "$P-7")" "202 queued"
  is "$vendor control: … one row for $P-7, on $repo" "$(sql "SELECT repo, number, trigger, sender FROM runs WHERE ticket_key = ?" "$P-7")" \
    "$repo|7|label|$vendor:$([ "$vendor" = jira ] && echo 557058:f58131cb-b67d-43c7-b30d-6b58d40bd077 || echo user-7)"
  like "$vendor control: … its delivery recorded with the target" "$(outcome_of "$vendor:$vendor-d1")" "^queued: run [0-9]+ \\($repo#$P-7, label by $vendor:"
  check "$vendor control: … the run is started as airlock ticket $repo#$P-7" wait_argv "^ticket $repo#$P-7 -p "
  like "$vendor control: … the status page names the ticket by its key" "$(curl -s --noproxy '*' --max-time 10 "http://$STATUS/")" "$repo#$P-7<"
  like "$vendor control: … the row's check says what admitted it and what was not asked" \
    "$(sql "SELECT check_detail FROM runs WHERE ticket_key = ?" "$P-7")" "admitted by the delivery's HMAC signature \\(webhook\\.$vendor\\.secret_file\\) and the trigger rule; (Jira|Linear) was not asked"
  # forged
  n0=$(refused_lines signature)
  is "$vendor forged: another secret: 401" "$(send "$path" "$vendor" "$S" "$vendor-f1" wrong "$P-11")" "401 refused"
  is "$vendor forged: the body changed after signing: 401" "$(send "$path" "$vendor" "$S" "$vendor-f2" changed "$P-12")" "401 refused"
  is "$vendor forged: no signature: 401" "$(send "$path" "$vendor" "$S" "$vendor-f3" none "$P-13")" "401 refused"
  is "$vendor forged: … no row for any of them" "$(rows_for "$P-11")$(rows_for "$P-12")$(rows_for "$P-13")" 000
  is "$vendor forged: … each logged webhook_refused, rule signature" "$(($(refused_lines signature) - n0))" 3
  is "$vendor forged: … and no delivery kept (unauthenticated)" "$(sql "SELECT count(*) FROM deliveries WHERE id LIKE ?" "$vendor:$vendor-f%")" 0
  # control of the forged ones: the same tickets signed are queued
  is "$vendor control of forged: $P-12 signed is queued" "$(send "$path" "$vendor" "$S" "$vendor-c12" good "$P-12")" "202 queued"
  # replayed
  is "$vendor replayed: the control's delivery id with another signed ticket: 200 duplicate" "$(send "$path" "$vendor" "$S" "$vendor-d1" good "$P-21")" "200 duplicate"
  is "$vendor replayed: the control's body, byte for byte, under a new id: 200 duplicate" "$(send "$path" "$vendor" "$S" "$vendor-r2" same-body "$P-7")" "200 duplicate"
  is "$vendor replayed: … no row for $P-21, still one for $P-7" "$(rows_for "$P-21") $(rows_for "$P-7")" "0 1"
  like "$vendor replayed: … logged as a replay" "$(grep '"event":"webhook_replay"' "$D/serve.log" | grep -c "\"delivery\":\"$vendor:$vendor-")" '^[2-9]'
  like "$vendor replayed: … the first delivery's outcome stands" "$(outcome_of "$vendor:$vendor-d1")" "^queued: run [0-9]+ \\($repo#$P-7"
  if [ "$vendor" = linear ]; then
    is "linear replayed: a webhookTimestamp 5 minutes old under a new id: 401" "$(send "$path" "$vendor" "$S" linear-old good "$P-31" -300000)" "401 refused"
    is "linear replayed: … no row for $P-31" "$(rows_for "$P-31")" 0
    like "linear replayed: … recorded as the delivery's outcome" "$(outcome_of linear:linear-old)" '^refused: .*replayed or delayed'
    like "linear replayed: … logged with rule timestamp" "$(refused_lines timestamp)" '^[1-9]'
    is "linear control of the timestamp: 30 s old is queued" "$(send "$path" "$vendor" "$S" linear-new good "$P-32" -30000)" "202 queued"
  fi
  # another project / team
  is "$vendor another project: 202 ignored" "$(send "$path" "$vendor" "$S" "$vendor-o1" good "$OTHER-3")" "202 ignored"
  is "$vendor another project: … no row" "$(rows_for "$OTHER-3")" 0
  like "$vendor another project: … the reason recorded" "$(outcome_of "$vendor:$vendor-o1")" "^ignored: $([ "$vendor" = jira ] && echo project || echo team) $OTHER is the ticket .* of no served repository's policy"
done

# the other triggers: assigned to the bot (Jira), assigned or delegated to the app (Linear),
# each beside the same to someone else (ignored: the trigger rule is the check)
is "jira: assigned to the bot (webhook.jira.assignee): queued" "$(TRIG=assignee:$BOT send /webhook/jira jira "$D/jira.secret" jira-a1 good PROJ-61)" "202 queued"
is "… its row's trigger is assignee" "$(sql "SELECT trigger FROM runs WHERE ticket_key = 'PROJ-61'")" assignee
is "jira: assigned to another account: ignored, no row" "$(TRIG=assignee:5b10ac8d82e05b22cc7d0000 send /webhook/jira jira "$D/jira.secret" jira-a2 good PROJ-62) $(rows_for PROJ-62)" "202 ignored 0"
is "linear: delegated to the app (webhook.linear.app): queued" "$(TRIG=delegate:$APP send /webhook/linear linear "$D/linear.secret" linear-a1 good ENG-61)" "202 queued"
is "linear: assigned to the app: queued" "$(TRIG=assignee:$APP send /webhook/linear linear "$D/linear.secret" linear-a2 good ENG-62)" "202 queued"
is "… their rows' triggers" "$(sql "SELECT group_concat(trigger) FROM (SELECT trigger FROM runs WHERE ticket_key IN ('ENG-61','ENG-62') ORDER BY id)")" "delegate,assignee"
is "linear: delegated to another user: ignored, no row" "$(TRIG=delegate:user-9 send /webhook/linear linear "$D/linear.secret" linear-a3 good ENG-63) $(rows_for ENG-63)" "202 ignored 0"

# GitHub's path, on a repository whose policy keeps its tickets in Jira: its issue is not a ticket
is "github control: a labeled issue of acme/plain (no ticket: block) is queued" "$(send /webhook github "$D/gh.secret" gh-1 good 'acme/plain#5')" "202 queued"
is "github: a labeled issue of acme/tally (ticket: jira) is ignored" "$(send /webhook github "$D/gh.secret" gh-2 good 'acme/tally#5')" "202 ignored"
is "… no row for acme/tally#5, its reason recorded" "$(sql "SELECT count(*) FROM runs WHERE repo = 'acme/tally' AND number = 5")|$(outcome_of gh-2)" \
  "0|ignored: the repository's policy keeps its tickets in Jira or Linear (ticket:): its GitHub issues do not start runs"

# the local trigger takes the key form too, checked against the repository's policy
enq() { local o; o=$("$AIRLOCK_NET" serve enqueue -c "$D/serve.yaml" "$1" 2>&1); printf 'rc=%s %s' "$?" "$o" | tr '\n' ' '; }
eid=$("$AIRLOCK_NET" serve enqueue -c "$D/serve.yaml" acme/tally#PROJ-71 2>"$D/enq.err")
like "serve enqueue acme/tally#PROJ-71: a row" "$eid" '^[0-9]+$'
is "… its key, number and trigger" "$(sql "SELECT ticket_key, number, trigger FROM runs WHERE id = ?" "${eid:-0}")" "PROJ-71|71|enqueue"
check "… started as airlock ticket acme/tally#PROJ-71" wait_argv "^ticket acme/tally#PROJ-71 -p "
like "… its check says a local enqueue" "$(sql "SELECT check_detail FROM runs WHERE id = ?" "${eid:-0}")" '^PROJ-71: local enqueue by local:uid='
like "serve enqueue acme/tally#ENG-3 (another project): refused" "$(enq acme/tally#ENG-3)" '^rc=1 .*acme/tally#ENG-3: .*its project is `ENG`, but the policy.s is `PROJ`'
like "serve enqueue acme/tally#5 (its tickets are in Jira): refused" "$(enq acme/tally#5)" '^rc=1 .*keeps its tickets in jira .*by its key'
like "serve enqueue acme/plain#PROJ-1 (no ticket: block): refused" "$(enq acme/plain#PROJ-1)" '^rc=1 .*has no Jira or Linear ticket: block'
is "… none of the three made a row" "$(sql "SELECT count(*) FROM runs WHERE ticket_key IN ('ENG-3','PROJ-1') OR (repo = 'acme/tally' AND ticket_key IS NULL)")" 0
like "control: serve enqueue acme/plain#6 (a GitHub issue) makes a row" "$(enq acme/plain#6)" '^rc=0 [0-9]+ ?$'

# the vendors' ids are apart: a Jira delivery id once used by Linear is new to Jira
is "a Linear delivery id is not a Jira replay" "$(send /webhook/jira jira "$D/jira.secret" linear-d1 good PROJ-41)" "202 queued"
# a secret of the other vendor is a forgery
is "Linear's secret on the Jira path: 401" "$(send /webhook/jira jira "$D/linear.secret" jira-x1 good PROJ-42)" "401 refused"

# a daemon without webhook.linear: its path answers 404, even signed
kill -TERM "$PID"; wait "$PID" 2>/dev/null
mkdir -p "$D/state2"; chmod 700 "$D/state2"
config "$D/serve2.yaml" "$D/state2"
start "$D/serve2.yaml" "$D/state2" "$D/serve2.log" || { fail "serve (no linear block) starts"; sed 's/^/#   /' "$D/serve2.log" | tail -20; done_testing; exit 1; }
DB=$D/state2/queue.db
is "no webhook.linear: POST /webhook/linear, signed, answers 404" "$(send /webhook/linear linear "$D/linear.secret" l2-1 good ENG-51)" "404 refused"
is "… no row, no delivery" "$(sql "SELECT (SELECT count(*) FROM runs) || '/' || (SELECT count(*) FROM deliveries)")" 0/0
like "… logged with rule not_configured" "$(grep -c '"rule":"not_configured"' "$D/serve2.log")" '^[1-9]'
is "control: the Jira path of the same daemon queues" "$(send /webhook/jira jira "$D/jira.secret" j2-1 good PROJ-52)" "202 queued"
# the config refuses a vendor block without a secret
printf 'version: 1\nwebhook:\n  secret_file: %s\n  jira: {label: airlock}\nbroker: /x\nstate_dir: /x\nrepositories:\n  - {repo: acme/tally, policy: /x}\n' "$D/gh.secret" >"$D/bad.yaml"
like "webhook.jira without secret_file: the config is refused, naming the rule" "$("$AIRLOCK_NET" serve -c "$D/bad.yaml" 2>&1)" 'webhook\.jira.*secret_file is required'
printf 'version: 1\nwebhook:\n  secret_file: %s\n  linear: {secret_file: %s}\nbroker: /x\nstate_dir: /x\nrepositories:\n  - {repo: acme/tally, policy: /x}\n' "$D/gh.secret" "$D/linear.secret" >"$D/bad2.yaml"
like "webhook.linear without a trigger: refused, naming label and app" "$("$AIRLOCK_NET" serve -c "$D/bad2.yaml" 2>&1)" 'webhook\.linear.*set label, app or both'
printf 'version: 1\nwebhook:\n  secret_file: %s\n  jira: {secret_file: %s, label: "air lock"}\nbroker: /x\nstate_dir: /x\nrepositories:\n  - {repo: acme/tally, policy: /x}\n' "$D/gh.secret" "$D/jira.secret" >"$D/bad3.yaml"
like "a Jira label with a space: refused (Jira's labels are one word)" "$("$AIRLOCK_NET" serve -c "$D/bad3.yaml" 2>&1)" 'webhook\.jira\.label.*one word'
done_testing
