# The environment of the `serve` suite: a forge that sends webhooks to an
# `airlock serve` daemon, a broker, and the runs' policy. Source after lib.sh
# and forgeenv.sh. serve_env_start writes the fixture (the demo's acme/tally
# with 40 copies of its ticket, users with each permission, and acme/stray
# on which the App is not installed), starts the daemon first (port 0: its
# ports go to listen.json), then the forge pointed at its webhook, the
# broker, and the policy. Sets SV_DIR SV_CONF SV_HOOK SV_STATUS SV_SECRET
# SV_PID plus forgeenv.sh's FE_*.

sv_fixture() { # OUT
  python3 - "$AIRLOCK_SRC/examples/demo/fixture.json" "$1" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
f["users"] += [{"login": "bob", "id": 502}, {"login": "carol", "id": 503},
               {"login": "mallory", "id": 504}, {"login": "mona", "id": 505}]
tally = next(r for r in f["repositories"] if r["full_name"] == "acme/tally")
tally["collaborators"] += [{"login": "carol", "permission": "write"},
                           {"login": "mallory", "permission": "read"},
                           {"login": "mona", "permission": "maintain"}]
tmpl = tally["issues"][0]
tally["issues"] = [dict(tmpl, number=n, title=f"{tmpl['title']} (copy {n})") for n in range(1, 41)]
stray = json.loads(json.dumps(next(r for r in f["repositories"] if r["full_name"] == "acme/loose")))
stray.update(id=3099, full_name="acme/stray")
f["repositories"].append(stray)
# acme/flaky: installed and protected like acme/tally; its runs' policy names
# a broker that is not there (a transient cause)
flaky = json.loads(json.dumps(tally))
flaky.update(id=3098, full_name="acme/flaky", issues=tally["issues"][:2])
f["repositories"].append(flaky)
for inst in f["installations"]:
    inst["repositories"].append("acme/flaky")
json.dump(f, open(sys.argv[2], "w"), indent=1)
PY
}

# sv_config FILE [max_concurrent [max_per_repo]]
sv_config() {
  cat >"$1" <<YAML
version: 1
listen:
  webhook: 127.0.0.1:0
  status: 127.0.0.1:0
${SV_LISTEN_EXTRA:-}
webhook:
  secret_file: $SV_SECRET
  label: airlock
  command: /airlock run
  max_body: 64KiB
broker: ${SV_BROKER:-$FE_SOCK}
state_dir: $SV_DIR/state
# the suite's other tests trigger many tickets as one user: generous
# intake limits unless a test sets its own (serve-intake.sh)
intake:
  max_queued: ${SV_MAX_QUEUED:-1000}
  per_sender: ${SV_PER_SENDER:-1000}
  per_repo: ${SV_PER_REPO:-1000}
  check_cache: ${SV_CHECK_CACHE:-0}
runs:
  max_concurrent: ${2:-2}
  max_per_repo: ${3:-2}
  retries: 1
  backoff: 1s
  agent: ${SV_AGENT:-$AIRLOCK_SRC/examples/agents/patch-agent}
repositories:
  - {repo: acme/tally, policy: $FE_POLICY}
  - {repo: acme/stray, policy: $SV_DIR/stray.yaml}
  - {repo: acme/loose, policy: $SV_DIR/loose.yaml}
  - {repo: acme/flaky, policy: $SV_DIR/flaky.yaml}
YAML
}

sv_start() { # start the daemon on $SV_CONF; sets SV_PID SV_HOOK SV_STATUS
  rm -f "$SV_DIR/state/listen.json"
  "$AIRLOCK_NET" serve -c "$SV_CONF" >>"$SV_DIR/serve.log" 2>&1 &
  SV_PID=$!
  on_exit "kill $SV_PID"
  for _ in $(seq 100); do [ -s "$SV_DIR/state/listen.json" ] && break; sleep 0.05; done
  SV_HOOK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["webhook"])' "$SV_DIR/state/listen.json") || return 1
  SV_STATUS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$SV_DIR/state/listen.json") || return 1
}

serve_env_start() {
  SV_DIR=$T_TMP/sv
  FE_DIR=$T_TMP/fe
  mkdir -p "$SV_DIR" "$FE_DIR/secret"
  chmod 700 "$SV_DIR" "$FE_DIR/secret"; chmod 755 "$FE_DIR"
  SV_SECRET=$SV_DIR/webhook.secret
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SV_SECRET"; chmod 600 "$SV_SECRET"
  FE_SOCK=$FE_DIR/secret/broker.sock
  FE_POLICY=$FE_DIR/airlock.yaml
  SV_CONF=$SV_DIR/serve.yaml
  sv_config "$SV_CONF" "$@"
  "$AIRLOCK_SRC/scripts/make-test-ca.sh" "$FE_DIR/tls" >/dev/null 2>&1 || return 1
  chmod 755 "$FE_DIR/tls"; chmod 644 "$FE_DIR/tls/ca.crt"
  FE_CA=$FE_DIR/tls/ca.crt
  # serve checks every policy at start, and the forge (whose port the
  # policies name) starts after serve (it needs serve's webhook URL): the
  # policies as they will be, on a port the forge replaces below
  FE_HTTPS=1 sv_policies
  sv_start || return 1
  "$AIRLOCK_SRC/scripts/make-app-key.sh" "$FE_DIR/secret/keys" app >/dev/null 2>&1 || return 1
  "$AIRLOCK_SRC/scripts/make-app-key.sh" "$FE_DIR/secret/keys" auditor >/dev/null 2>&1 || return 1
  FE_DATA=$FE_DIR/secret/forge
  cp -r "$AIRLOCK_SRC/examples/demo/project" "$FE_DIR/secret/project"
  sv_fixture "$FE_DIR/secret/fixture.json"
  "$AIRLOCK_FORGE" --fixture "$FE_DIR/secret/fixture.json" --data "$FE_DATA" \
    --tls-dir "$FE_DIR/tls" --key "1001=$FE_DIR/secret/keys/app.pub.pem" \
    --key "1002=$FE_DIR/secret/keys/auditor.pub.pem" \
    --webhook-url "http://$SV_HOOK/webhook" --webhook-secret "$SV_SECRET" \
    --ports-file "$FE_DIR/secret/ports.json" >"$FE_DIR/secret/forge.log" 2>&1 &
  FE_FORGE_PID=$!
  on_exit "kill $FE_FORGE_PID"
  for _ in $(seq 100); do [ -s "$FE_DIR/secret/ports.json" ] && break; sleep 0.05; done
  FE_HTTPS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["https"])' "$FE_DIR/secret/ports.json") || return 1
  FE_ADMIN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin"])' "$FE_DIR/secret/ports.json") || return 1
  write_broker_config "https://127.0.0.1:$FE_HTTPS" "acme/tally, acme/stray, acme/loose, acme/flaky"
  broker_start || return 1
  sv_policies
}
sv_policies() {
  write_policy "$FE_POLICY" "$FE_SOCK"
  write_policy "$SV_DIR/stray.yaml" "$FE_SOCK" 2m acme/stray
  write_policy "$SV_DIR/loose.yaml" "$FE_SOCK" 2m acme/loose
  write_policy "$SV_DIR/flaky.yaml" "$SV_DIR/no-broker-here.sock" 2m acme/flaky
}

# helpers over the daemon's JSON and the forge's admin API
sv_get() { curl -s --noproxy '*' --max-time 10 "http://$SV_STATUS$1"; }
sv_runs() { sv_get /runs.json; }
# sv_wait_state RUN_ID STATE... [timeout s]: wait until the run is in one of the states
sv_wait() {
  local id=$1 want=$2 t=${3:-120}
  for _ in $(seq $((t * 4))); do
    st=$(sv_runs | python3 -c 'import json,sys; d=json.load(sys.stdin); print(next((r["state"] for r in d["runs"] if r["id"]==int(sys.argv[1])), ""))' "$id" 2>/dev/null)
    if printf '%s' "$st" | grep -qE "^($want)$"; then echo "$st"; return 0; fi
    sleep 0.25
  done
  echo "$st"; return 1
}
sv_field() { # RUN_ID FIELD
  sv_runs | python3 -c 'import json,sys; d=json.load(sys.stdin); r=next((r for r in d["runs"] if r["id"]==int(sys.argv[1])), {}); print(r.get(sys.argv[2]))' "$1" "$2"
}
# the forge acts for a human
fe_label() { admin_post /hooks/label "{\"repo\":\"${3:-acme/tally}\",\"number\":$1,\"label\":\"${4:-airlock}\",\"user\":\"$2\"}"; }
fe_comment() { admin_post /hooks/comment "{\"repo\":\"${4:-acme/tally}\",\"number\":$1,\"body\":\"$3\",\"user\":\"$2\"}"; }
admin_post() { curl -s --noproxy '*' --max-time 20 -X POST -d "$2" "http://127.0.0.1:$FE_ADMIN$1"; }
json_get() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get(sys.argv[2]))' "$1" "$2"; }
pulls_for() { # ISSUE: open PRs from airlock/ISSUE-*
  admin /pulls | python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin) if p["head"].startswith("airlock/%s-" % sys.argv[1]) and p["state"]=="open"))' "$1"
}
# sv_send EVENT DELIVERY BODY_FILE [good|bad|none|malformed] [chunked]: POST to
# the webhook listener as GitHub would (or not); prints the HTTP status.
sv_send() {
  python3 - "$SV_HOOK" "$1" "$2" "$3" "${4:-good}" "${5:-}" "$SV_SECRET" <<'PY'
import hashlib, hmac, http.client, sys
hook, event, delivery, bodyf, mode, chunked, secretf = sys.argv[1:8]
body = open(bodyf, "rb").read()
secret = open(secretf, "rb").read().strip()
h = {"Content-Type": "application/json", "X-GitHub-Event": event, "User-Agent": "GitHub-Hookshot/test"}
if delivery:
    h["X-GitHub-Delivery"] = delivery
sig = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
if mode == "good":
    h["X-Hub-Signature-256"] = sig
elif mode == "bad":
    h["X-Hub-Signature-256"] = "sha256=" + hmac.new(b"not-the-secret", body, hashlib.sha256).hexdigest()
elif mode == "malformed":
    h["X-Hub-Signature-256"] = "sha1=" + sig[7:47]
host, port = hook.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=20)
try:
    if chunked:
        c.putrequest("POST", "/webhook")
        for k, v in h.items():
            c.putheader(k, v)
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        for i in range(0, len(body), 8192):
            part = body[i:i + 8192]
            c.send(b"%x\r\n%s\r\n" % (len(part), part))
        c.send(b"0\r\n\r\n")
    else:
        c.request("POST", "/webhook", body=body, headers=h)
    print(c.getresponse().status)
except Exception as e:
    print("error", type(e).__name__)
PY
}
# sv_payload FILE EVENT REPO NUMBER SENDER [LABEL|COMMENT]: a GitHub-shaped payload
sv_payload() {
  python3 - "$@" <<'PY'
import json, sys
out, event, repo, num, sender = sys.argv[1:6]
extra = sys.argv[6] if len(sys.argv) > 6 else "airlock"
p = {"issue": {"number": int(num), "title": "t", "state": "open"},
     "repository": {"full_name": repo, "name": repo.split("/")[1], "owner": {"login": repo.split("/")[0]}},
     "sender": {"login": sender, "id": 501}, "installation": {"id": 2001}}
if event == "issues":
    p.update(action="labeled", label={"name": extra})
else:
    p.update(action="created", comment={"id": 1, "body": extra, "user": {"login": sender}})
json.dump(p, open(out, "w"))
PY
}
sv_nruns() { sv_runs | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))'; }
# sv_gated_agent DIR: an agent that waits (up to 500 s) until DIR/open
# exists, then runs the patch agent (copied beside it: the sandbox shows an
# agent its own directory). Sets SV_AGENT; `touch DIR/open` lets it go.
sv_gated_agent() {
  mkdir -p "$1"; chmod 755 "$1"
  cp "$AIRLOCK_SRC/examples/agents/patch-agent" "$AIRLOCK_SRC/examples/agents/agentlib.py" "$1/"
  cat >"$1/gated-agent" <<'PY'
#!/usr/bin/python3
import os, time
here = os.path.dirname(os.path.abspath(__file__))
for _ in range(5000):
    if os.path.exists(os.path.join(here, "open")):
        break
    time.sleep(0.1)
print("gate open", flush=True)
os.execv(os.path.join(here, "patch-agent"), ["patch-agent"])
PY
  chmod 755 "$1/gated-agent"
  SV_AGENT=$1/gated-agent
}
