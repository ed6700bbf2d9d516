#!/bin/bash
# airlock serve's intake limits (issue #29 item 4), each with its control:
#   1 comments `/airlock run` from a stranger: without limits, on 40 issues,
#     40 rows and a trigger check (a token minted) for each; with
#     intake.per_sender 3 and intake.check_cache, on the issue's 500 issues,
#     3 rows, the rest answered 429 and recorded, and at most 2 tokens (the
#     cached answer refuses the others)
#   2 a bounded queue: past intake.max_queued, 503 with Retry-After, recorded
#   3 40 connections sending a byte now and then from 127.0.0.1, where a
#     TLS reverse proxy connects from: without listen.trusted_proxies they
#     hold the per-IP slots and a signed delivery from the proxy is kept
#     out; with it the delivery gets through; a short
#     listen.request_deadline cuts them (a long one does not)
#   4 retention: `airlock serve --gc` deletes the finished rows past
#     retention.max_rows, never a queued one
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
serve_env_start 2 2 || { fail "forge + broker + serve environment"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -20; done_testing; exit 1; }

restart() { # ENDED: restart the daemon on a fresh state_dir with the current SV_* settings (the old one kept as state.ENDED)
  kill -TERM "$SV_PID" 2>/dev/null; wait "$SV_PID" 2>/dev/null
  mv "$SV_DIR/state" "$SV_DIR/state.$1"
  sv_config "$SV_CONF" 2 2
  sv_start || { fail "restart ($1)"; sed 's/^/#   /' "$SV_DIR/serve.log" | tail -20; }
}
ntokens() { admin /tokens | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# flood TAG [N]: mallory (read permission) comments the command on issues 1..N (40); prints the
# statuses. One process sends them all: the payload is sv_payload's, signed as sv_send signs.
flood() {
  python3 - "$SV_HOOK" "$SV_SECRET" "$1" "${2:-40}" <<'PY' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'
import hashlib, hmac, http.client, json, sys
hook, secretf, tag, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
secret = open(secretf, "rb").read().strip()
host, port = hook.rsplit(":", 1)
for i in range(1, n + 1):
    p = {"issue": {"number": i, "title": "t", "state": "open"},
         "repository": {"full_name": "acme/tally", "name": "tally", "owner": {"login": "acme"}},
         "sender": {"login": "mallory", "id": 501}, "installation": {"id": 2001},
         "action": "created", "comment": {"id": 1, "body": "/airlock run", "user": {"login": "mallory"}}}
    body = json.dumps(p).encode()
    h = {"Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
         "User-Agent": "GitHub-Hookshot/test", "X-GitHub-Delivery": "%s-%d" % (tag, i),
         "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}
    try:
        c = http.client.HTTPConnection(host, int(port), timeout=20)
        c.request("POST", "/webhook", body=body, headers=h)
        print(c.getresponse().status)
        c.close()
    except Exception as e:
        print("error", type(e).__name__)
PY
}
# settled: every row is finished (no queued or running row left), 120 s at most
settled() {
  for _ in $(seq 480); do
    n=$(sv_runs | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin)["runs"] if r["state"] in ("queued","running")))')
    [ "$n" = 0 ] && return 0; sleep 0.25
  done; return 1
}
mallory_rows() { sv_runs | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin)["runs"] if r["sender"]=="mallory"))'; }

# ---- 1: amplification --------------------------------------------------
# control: no sender limit, no cached answer
t0=$(ntokens)
statuses=$(flood ctl)
settled || fail "control: the rows settle"
t1=$(ntokens)
is "control: 40 stranger comments answered 202 each" "$statuses" "202×40 "
is "control: … make 40 rows" "$(mallory_rows)" 40
like "control: … and mint a check token each (the probe sees the amplification)" "$((t1 - t0))" '^(3[6-9]|[4-9][0-9])$'
# protected: 3 rows per sender per window, a refusing answer reused
SV_PER_SENDER=3 SV_CHECK_CACHE=10m restart ctl
t0=$(ntokens)
statuses=$(flood lim 500)   # the issue's 500 stranger comments
settled || fail "limited: the rows settle"
t1=$(ntokens)
is "limited: of 500 comments 3 are queued, 497 answered 429" "$statuses" "202×3 429×497 "
is "limited: … 3 rows" "$(mallory_rows)" 3
like "limited: … at most 2 tokens minted for the trigger checks" "$((t1 - t0))" '^[0-2]$'
reasons=$(sv_runs | python3 -c 'import json,sys; print("\n".join(r["reason"] or "" for r in json.load(sys.stdin)["runs"]))')
like "limited: … the other rows refused from the cached answer" "$reasons" 'reused: no token minted'
# from the queue itself: /runs.json shows only the newest 200 deliveries
outcomes=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM deliveries WHERE outcome LIKE ?", ("refused: intake.per_sender: sender mallory made 3 runs%",)).fetchone()[0])' "$SV_DIR/state/queue.db")
is "limited: … every 429 recorded as the delivery's outcome" "$outcomes" 497
like "limited: … and logged with its rule" "$(grep -c '"rule":"per_sender"' "$SV_DIR/serve.log")" '^(49[7-9]|[5-9][0-9][0-9])$'

# ---- 2: a bounded queue ----------------------------------------------
# the broker is not there: every trigger check fails (transient) and the
# rows stay queued
SV_MAX_QUEUED=3 SV_BROKER=$SV_DIR/no-broker.sock restart limited
out=""
for n in 1 2 3 4 5; do
  sv_payload "$T_TMP/q-$n.json" issues acme/tally "$n" carol airlock
  out="$out$(sv_send issues "q-$n" "$T_TMP/q-$n.json" good) "
done
is "max_queued 3: three queued (202), then 503" "$out" "202 202 202 503 503 "
ra=$(python3 - "$SV_HOOK" "$SV_SECRET" <<'PY'
import hashlib, hmac, http.client, json, sys
body = json.dumps({"action": "labeled", "label": {"name": "airlock"}, "issue": {"number": 9, "title": "t", "state": "open"},
                   "repository": {"full_name": "acme/tally"}, "sender": {"login": "carol"}}).encode()
sig = "sha256=" + hmac.new(open(sys.argv[2], "rb").read().strip(), body, hashlib.sha256).hexdigest()
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=20)
c.request("POST", "/webhook", body=body, headers={"X-GitHub-Event": "issues", "X-GitHub-Delivery": "q-ra", "X-Hub-Signature-256": sig})
r = c.getresponse()
print(r.status, r.getheader("Retry-After"), json.loads(r.read())["rule"])
PY
)
is "… with Retry-After and the rule" "$ra" "503 60 max_queued"
full=$(sv_runs | python3 -c 'import json,sys; print(sum(1 for d in json.load(sys.stdin)["deliveries"] if (d.get("outcome") or "").startswith("refused: intake.max_queued: the queue is full")))')
is "… each refusal recorded as the delivery's outcome" "$full" 3
is "… and 3 rows, all queued" "$(sv_runs | python3 -c 'import json,sys; print([r["state"] for r in json.load(sys.stdin)["runs"]])')" "['queued', 'queued', 'queued']"

# ---- 4: retention (on this queue: 3 queued rows, none finished) -----------
kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null
mv "$SV_DIR/state" "$SV_DIR/state.bounded"
cp -a "$SV_DIR/state.limited" "$SV_DIR/state"   # 3 finished rows of mallory
sqlite3 "$SV_DIR/state/queue.db" "INSERT INTO runs(repo, number, state, trigger, sender, created_ms) VALUES('acme/tally', 30, 'queued', 'label', 'carol', 1)" 2>/dev/null \
  || python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("INSERT INTO runs(repo, number, state, trigger, sender, created_ms) VALUES(?,?,?,?,?,?)", ("acme/tally",30,"queued","label","carol",1)); c.commit()' "$SV_DIR/state/queue.db"
cat "$SV_CONF" >"$T_TMP/gc.yaml"; printf 'retention:\n  max_age: 0\n  max_rows: 1\n' >>"$T_TMP/gc.yaml"
out=$("$AIRLOCK" serve --gc -c "$T_TMP/gc.yaml" 2>&1)
is "serve --gc with max_rows 1: the 2 oldest finished rows go" "$out" "2 finished rows deleted"
left=$(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("SELECT group_concat(state) FROM (SELECT state FROM runs ORDER BY id)").fetchone()[0], c.execute("SELECT count(*) FROM events WHERE run NOT IN (SELECT id FROM runs)").fetchone()[0], c.execute("SELECT count(*) FROM deliveries").fetchone()[0])' "$SV_DIR/state/queue.db")
is "… the newest finished row and the queued one stay, no orphan history, the deliveries kept" "$left" "refused,queued 0 500"
out=$("$AIRLOCK" serve --gc -c "$T_TMP/gc.yaml" 2>&1)
is "… a second pass deletes nothing" "$out" "0 finished rows deleted"
rm -rf "$SV_DIR/state"; mv "$SV_DIR/state.bounded" "$SV_DIR/state"

# ---- 3: slow connections -------------------------------------------------
# slow N SECONDS FILE: N connections each sending one header byte a second
# for SECONDS; writes "open" to FILE once all are connected, then prints how
# many the server closed
slow() {
  python3 - "$SV_HOOK" "$1" "$2" "$3" <<'PY' &
import socket, sys, time
hook, n, secs, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
host, port = hook.rsplit(":", 1)
socks = []
closed = set()
for k in range(n):
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
        socks.append(s)
        s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\n")
    except OSError:
        closed.add(k)
        if len(socks) <= k:
            socks.append(None)
time.sleep(0.5)
open(ready, "w").write("open")
head = b"X-Slow: " + b"a" * 1000
for i in range(secs):
    for k, s in enumerate(socks):
        if k in closed:
            continue
        try:
            s.sendall(head[i % len(head):i % len(head) + 1])
        except OSError:
            closed.add(k)
    if len(closed) == n:
        break
    time.sleep(1)
print(len(closed))
PY
}
# deliver XFF DELIVERY [bad]: a signed ping (with X-Forwarded-For when
# given; signed with another secret with `bad`); prints the status or the error
deliver() {
  python3 - "$SV_HOOK" "$SV_SECRET" "$1" "$2" "${3:-}" <<'PY'
import hashlib, hmac, http.client, sys
hook, secretf, xff, delivery, bad = sys.argv[1:6]
body = b'{"zen": "slow is smooth", "hook_id": 1}'
key = b"not-the-secret" if bad else open(secretf, "rb").read().strip()
sig = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
h = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig}
if xff:
    h["X-Forwarded-For"] = xff
host, port = hook.rsplit(":", 1)
try:
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request("POST", "/webhook", body=body, headers=h)
    print(c.getresponse().status)
except Exception as e:
    print("error", type(e).__name__)
PY
}
# deliver_lines DELIVERY XFF...: a ping signed with another secret (401),
# each XFF its own X-Forwarded-For line, in order; prints the status
deliver_lines() {
  python3 - "$SV_HOOK" "$@" <<'PY'
import http.client, sys
hook, delivery, *lines = sys.argv[1:]
host, port = hook.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=10)
body = b'{"zen": "two lines", "hook_id": 1}'
c.putrequest("POST", "/webhook")
for k, v in (("X-GitHub-Event", "ping"), ("X-GitHub-Delivery", delivery),
             ("X-Hub-Signature-256", "sha256=" + "0" * 64), ("Content-Length", str(len(body)))):
    c.putheader(k, v)
for v in lines:
    c.putheader("X-Forwarded-For", v)
c.endheaders(body)
print(c.getresponse().status)
PY
}
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
# control: no trusted proxy, the old per-IP limit of 32
SV_LISTEN_EXTRA="  max_per_ip: 32
  request_deadline: 10m" restart bounded
slow 40 8 "$T_TMP/ready1" >"$T_TMP/slow1.out"; sp=$!
wait_file "$T_TMP/ready1" || fail "control: the slow connections are open"
st=$(deliver "" slow-1)
like "control: with 40 slow connections from 127.0.0.1 a signed delivery from there is kept out" "$st" '^error'
wait $sp
like "control: … the 8 past max_per_ip were closed at once" "$(cat "$T_TMP/slow1.out")" '^([89]|[1-3][0-9])$'
like "… and logged" "$(grep -c '"rule":"max_per_ip"' "$SV_DIR/serve.log")" '^[1-9]'
is "control: an X-Forwarded-For from a peer that is no trusted proxy is not believed" "$(deliver 198.51.100.7 slow-1b bad; grep '"delivery":"slow-1b"' "$SV_DIR/serve.log" | grep -o '"peer":"[^"]*"')" '401
"peer":"127.0.0.1"'
# 127.0.0.1 is the trusted proxy: its connections are not counted per IP
SV_LISTEN_EXTRA="  max_per_ip: 32
  request_deadline: 10m
  trusted_proxies: [127.0.0.1]" restart slow-control
slow 40 8 "$T_TMP/ready2" >"$T_TMP/slow2.out"; sp=$!
wait_file "$T_TMP/ready2" || fail "the slow connections are open"
is "trusted proxy: the signed delivery it forwards gets through the 40 slow connections" "$(deliver 203.0.113.9 slow-2)" 200
wait $sp
is "… and a long request_deadline cut none of them (the control of the deadline below)" "$(cat "$T_TMP/slow2.out")" 0
is "… a delivery's client is the hop the trusted proxy added to X-Forwarded-For" "$(deliver '10.9.9.9, 203.0.113.7' slow-2b bad; grep '"delivery":"slow-2b"' "$SV_DIR/serve.log" | grep -o '"peer":"[^"]*"')" '401
"peer":"203.0.113.7"'
# a proxy that adds its own X-Forwarded-For line (HAProxy's forwardfor)
# leaves the client's line first: the client is still the last line's hop
is "… two X-Forwarded-For lines: the hop the proxy added on the last line, not the client's first line" "$(deliver_lines slow-2d 10.9.9.8 203.0.113.6; grep '"delivery":"slow-2d"' "$SV_DIR/serve.log" | grep -o '"peer":"[^"]*"')" '401
"peer":"203.0.113.6"'
is "… the control: one line holding both hops is read the same" "$(deliver_lines slow-2e '10.9.9.8, 203.0.113.5'; grep '"delivery":"slow-2e"' "$SV_DIR/serve.log" | grep -o '"peer":"[^"]*"')" '401
"peer":"203.0.113.5"'
is "… an X-Forwarded-For that is not an address is not believed (the proxy's own bucket)" "$(deliver 'evil, 127.0.0.1' slow-2c bad; grep '"delivery":"slow-2c"' "$SV_DIR/serve.log" | grep -o '"peer":"[^"]*"')" '401
"peer":"127.0.0.1?"'
# a short deadline: each is cut (the 8 seconds of the probe are its bound, not a measure)
SV_LISTEN_EXTRA="  max_per_ip: 32
  request_deadline: 2s
  trusted_proxies: [127.0.0.1]" restart slow-proxy
slow 40 60 "$T_TMP/ready3" >"$T_TMP/slow3.out"; sp=$!
wait_file "$T_TMP/ready3" || fail "the slow connections are open"
wait $sp
is "request_deadline 2s: every slow connection is cut" "$(cat "$T_TMP/slow3.out")" 40
like "… and logged with its rule" "$(grep -c '"rule":"request_deadline"' "$SV_DIR/serve.log")" '^[1-9]'
is "… a delivery after them is served" "$(deliver 203.0.113.9 slow-3)" 200
# a config that names a proxy by name is refused with its rule
SV_LISTEN_EXTRA="  trusted_proxies: [proxy.example]" sv_config "$T_TMP/bad.yaml" 2 2
out=$("$AIRLOCK" serve -c "$T_TMP/bad.yaml" 2>&1)
like "trusted_proxies: a name is refused with file:line:col and the rule" "$out" 'bad.yaml:[0-9]+:[0-9]+: listen.trusted_proxies\[0\]: `proxy.example` is not a numeric IPv4 or IPv6 address'
kill -TERM "$SV_PID"; wait "$SV_PID" 2>/dev/null
done_testing
