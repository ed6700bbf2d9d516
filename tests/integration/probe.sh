#!/bin/bash
# airlock probe (issue #7): the whole catalogue reports `blocked` inside a
# sandbox made from the default policy and from a policy allowing a pinned
# test host, as root and as an unprivileged user; the positive control
# (`--unconfined`: the same probes as a plain process on the host, an open
# proxy instead of the egress proxy) reports every probe `escaped`.
. "$(dirname "$0")/lib.sh"
ensure_test_user

# A fake invoker home with every credential file the probes look for, so
# the positive control has something to find and the sandbox has something
# to hide.
FAKEHOME=$T_TMP/home
mkdir -p "$FAKEHOME"/.ssh "$FAKEHOME"/.aws "$FAKEHOME"/.kube "$FAKEHOME"/.config/gh "$FAKEHOME"/.docker
for f in .ssh/id_ed25519 .aws/credentials .kube/config .config/gh/hosts.yml .git-credentials .netrc .docker/config.json; do
  echo "airlock-test-secret" >"$FAKEHOME/$f"
done

# The pinned test host: a loopback TCP server that logs whatever reaches it.
SRVLOG=$T_TMP/server.log
: >"$SRVLOG"
python3 - "$SRVLOG" >"$T_TMP/server.port" <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        d = c.recv(4096)
    except Exception:
        d = b""
    with open(sys.argv[1], "ab") as f: f.write(b"conn %d\n" % len(d))
    try: c.sendall(b"HELLO\n")
    except Exception: pass
    c.close()
PY
SRV_PID=$!
on_exit "kill $SRV_PID"
for _ in $(seq 50); do [ -s "$T_TMP/server.port" ] && break; sleep 0.1; done
read -r SRV_PORT <"$T_TMP/server.port"

NETPOL=$T_TMP/net.yaml
cat >"$NETPOL" <<YAML
version: 1
network:
  allow:
    - {host: forge.test, port: $SRV_PORT, tls: true}
  pin:
    - {host: forge.test, address: 127.0.0.1}
filesystem:
  workspace_size: 64MiB
  tmp_size: 32MiB
process:
  limits: {pids: 128, memory: 256MiB}
YAML
chmod 644 "$NETPOL"

# summarize JSON: "<probes> <blocked> <escaped> <inconclusive>", then one
# line per probe whose verdict is not $2
summary() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2]
print(d["probes"], d["blocked"], d["escaped"], d["inconclusive"], len({r["id"] for r in d["results"]}))
for r in d["results"]:
    if r["verdict"] != want:
        print("#   %s %s: %s" % (r["id"], r["verdict"], r["evidence"]))
' "$1" "$2"
}

all_blocked() { # MODE LABEL ARGS...
  local mode=$1 label=$2; shift 2
  local pre=()
  [ "$mode" = user ] && pre=(as_user)
  local out=$T_TMP/out-$mode-$label.json
  HOME=$FAKEHOME "${pre[@]}" "$AIRLOCK" probe --json "$@" >"$out" 2>"$T_TMP/err"
  local rc=$?
  if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out" 2>/dev/null; then
    fail "[$mode] $label: --json parses"; sed 's/^/#   /' "$T_TMP/err" | head; return
  fi
  ok "[$mode] $label: --json parses"
  local s; s=$(summary "$out" blocked)
  read -r n b e i u <<<"$(head -1 <<<"$s")"
  if [ "$n" -ge 50 ] && [ "$n" = "$b" ] && [ "$u" = "$n" ]; then
    ok "[$mode] $label: all $n probes blocked"
  else
    fail "[$mode] $label: all probes blocked ($n probes: $b blocked, $e escaped, $i inconclusive)"
    tail -n +2 <<<"$s"
  fi
  is "[$mode] $label: exit status 0" "$rc" 0
}

all_blocked root "default policy"
all_blocked root "pinned-host policy" -p "$NETPOL"
# the probe reads the proxy's answer with net/'s response-head parser: the
# status and the X-Airlock-Deny reason both reach the evidence (a probe
# that read no status would be inconclusive, one that lost the header
# would say a bare "403")
ev=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print([r["evidence"] for r in d["results"] if r["id"] == "net.proxy-denied-name"][0])' "$T_TMP/out-root-pinned-host policy.json" 2>&1)
like "net.proxy-denied-name names the proxy's 403 and its X-Airlock-Deny reason" "$ev" ": 403 [a-z][a-z-]+$"
# the proxy may dial the pinned host for the SNI probe's CONNECT; it must
# cut the tunnel before relaying a single byte of the foreign ClientHello
is "the pinned test host received no byte from any probe" "$(grep -v '^conn 0$' "$SRVLOG")" ""
if is_asan_build; then
  # Without a cgroup (unprivileged), memory is bounded by RLIMIT_DATA, under
  # which an ASan binary cannot start; airlock's own ASan build therefore
  # runs its probe process unbounded, and res.memory rightly says escaped.
  skip "[user] probes: ASan build — airlock's own binary runs without RLIMIT_DATA when no cgroup can be made; the normal build covers this"
else
  all_blocked user "default policy"
  all_blocked user "pinned-host policy" -p "$NETPOL"
  is "the pinned test host received no byte from any probe (user)" "$(grep -v '^conn 0$' "$SRVLOG")" ""
fi

# The pinned host itself is reachable through the proxy (the probes above
# are not blocked merely because nothing works).
out=$("$AIRLOCK" run -q -p "$NETPOL" -- python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"CONNECT forge.test:'"$SRV_PORT"' HTTP/1.1\r\nHost: forge.test\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())' 2>&1)
like "control: CONNECT to the pinned host through the proxy gets 200" "$out" "^HTTP/1.1 200"

# Positive control: every probe escapes with the protection off.
if [ "$(id -u)" = 0 ]; then
  out=$T_TMP/unconfined.json
  HOME=$FAKEHOME "$AIRLOCK" probe --unconfined --json >"$out" 2>"$T_TMP/err"
  rc=$?
  s=$(summary "$out" escaped)
  read -r n b e i u <<<"$(head -1 <<<"$s")"
  # priv.i386 cannot escape on a machine whose int 0x80 faults outside any
  # sandbox (docs/probes.md, "Known limits"): counted apart, as a skip
  noabi=$(jq -r '.results[] | select(.id == "priv.i386" and .verdict == "blocked" and (.evidence | test("no i386 syscall entry"))) | .id' "$out" | wc -l)
  if [ "$noabi" = 1 ]; then
    skip "control: priv.i386 escapes unconfined: this machine has no i386 syscall entry (int 0x80 faults outside the sandbox too)"
    e=$((e + 1))
  fi
  if [ "$n" -ge 50 ] && [ "$n" = "$e" ]; then
    ok "control: unconfined, all $n probes escape"
  else
    fail "control: unconfined, all probes escape ($n probes: $b blocked, $e escaped, $i inconclusive)"
    tail -n +2 <<<"$s"
  fi
  is "control: unconfined exits 1" "$rc" 1
  ids_in=$(python3 -c 'import json,sys; print(" ".join(sorted(r["id"] for r in json.load(open(sys.argv[1]))["results"])))' "$T_TMP/out-root-default policy.json")
  ids_out=$(python3 -c 'import json,sys; print(" ".join(sorted(r["id"] for r in json.load(open(sys.argv[1]))["results"])))' "$out")
  is "control: the same probes ran inside and outside" "$ids_out" "$ids_in"
else
  skip "positive control needs root (raw sockets, capabilities, /etc writes)"
fi

# Nothing of the probe runs is left on the host.
# (the host side killed the control's lingerer; give init a moment to reap it)
for _ in $(seq 30); do pgrep '^alp-' >/dev/null || break; sleep 0.1; done
left=$(pgrep -c '^alp-' 2>/dev/null)
is "no lingering probe process on the host" "${left:-0}" 0
left=$(ls -a / /etc /usr /var/tmp /dev/shm /tmp 2>/dev/null | grep -cE 'airlock-probe-|alprobe-')
is "no probe file left in /, /etc, /usr, /var/tmp, /dev/shm, /tmp" "$left" 0

# Preflight: the subset, all blocked; the time is a diagnostic only.
t0=$(date +%s%N)
"$AIRLOCK" probe --preflight --json -p "$NETPOL" >"$T_TMP/pre.json" 2>"$T_TMP/err"; rc=$?
t1=$(date +%s%N)
diag "preflight took $(( (t1 - t0) / 1000000 )) ms wall (target: under 200 ms; not a timed test)"
s=$(summary "$T_TMP/pre.json" blocked)
read -r n b e i u <<<"$(head -1 <<<"$s")"
if [ "$rc" = 0 ] && [ "$n" -ge 10 ] && [ "$n" = "$b" ]; then ok "preflight: $n probes, all blocked"
else fail "preflight: all blocked (rc=$rc, $n probes, $b blocked)"; tail -n +2 <<<"$s"; fi
if [ "$(id -u)" = 0 ]; then
  HOME=$FAKEHOME "$AIRLOCK" probe --preflight --unconfined --json >"$T_TMP/pre-u.json" 2>/dev/null
  s=$(summary "$T_TMP/pre-u.json" escaped)
  read -r n b e i u <<<"$(head -1 <<<"$s")"
  if [ "$n" -ge 10 ] && [ "$n" = "$e" ]; then ok "control: preflight unconfined, all $n escape"
  else fail "control: preflight unconfined, all escape ($n: $b blocked, $i inconclusive)"; tail -n +2 <<<"$s"; fi
fi

# Table output, --only, usage errors.
out=$("$AIRLOCK" probe --only credentials 2>&1); rc=$?
like "table has a header" "$out" '^PROBE +GROUP +VERDICT +EVIDENCE'
like "table ends with the counts" "$out" '[0-9]+ probes: [0-9]+ blocked, 0 escaped, 0 inconclusive'
is "--only credentials runs only that group" "$(grep -cE '^(net|fs|priv|res|persist)\.' <<<"$out")" 0
is "--only credentials exits 0" "$rc" 0
"$AIRLOCK" probe --only nonsense >/dev/null 2>&1; is "--only with an unknown group is a usage error" "$?" 2
n=$("$AIRLOCK" probe --list | grep -c '^| `')
[ "$n" -ge 50 ] && ok "--list documents $n probes" || fail "--list documents at least 50 probes ($n)"
# docs/probes.md's catalogue says it is generated from the table: it is the
# table's --list, byte for byte, from its first section to the end of the file
# (a probe added, or a row reworded, in one and not the other fails here)
listed=$("$AIRLOCK" probe --list | sed -n '/^### /,$p')
documented=$(sed -n '/^## The catalogue/,$p' "$AIRLOCK_SRC/docs/probes.md" | sed -n '/^### /,$p')
if [ -n "$listed" ] && [ "$listed" = "$documented" ]; then
  ok "docs/probes.md's catalogue is airlock probe --list"
else
  fail "docs/probes.md's catalogue is airlock probe --list"
  diff <(echo "$listed") <(echo "$documented") | head -20 | sed 's/^/#   /'
fi

done_testing
