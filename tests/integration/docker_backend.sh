# Sourced by docker.sh: `airlock run --backend docker` (issue 9 item 3).
# Uses $DOCKER, $AIRLOCK, $PROXY_IMAGE, $AGENT_IMAGE, pol.yaml from docker.sh.
# Only this test's runs count (another airlock run, or a second copy of the
# suite, may use the same engine): each run gets its own --run-id, and the
# checks below look at the objects labelled with those ids alone.
RID_BASE=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
RID_N=0
RIDS=()
# new_rid: the next run's id, and DRUN the command line of a run with pol.yaml
# under it (an array, not a function: `"${DRUN[@]}" ... &` must make $! the
# airlock process itself, which the tests signal)
new_rid() {
  RID_N=$((RID_N + 1)); RID=$(printf '%s%08x' "$RID_BASE" "$RID_N"); RIDS+=("$RID")
  DRUN=("$AIRLOCK" run --backend docker
    --agent-image "$AGENT_IMAGE" -p pol.yaml --run-id "$RID")
}
ours() { # ps|network|volume [running]: this test's objects still there, sorted
  local r
  for r in "${RIDS[@]}"; do
    case $1 in
      ps) if [ "${2:-}" = running ]; then "$DOCKER" ps -q --filter "label=airlock.run=$r"
          else "$DOCKER" ps -aq --filter "label=airlock.run=$r"; fi ;;
      network) "$DOCKER" network ls -q --filter "label=airlock.run=$r" ;;
      volume) "$DOCKER" volume ls -q --filter "label=airlock.run=$r" ;;
    esac
  done | sort
}
new_rid
# volumes with no label at all: what the engine makes for an image's VOLUME
anon_vols() { "$DOCKER" volume ls --format '{{.Name}} {{.Labels}}' | awk 'NF == 1 {print $1}' | sort; }
# until the agent container of run $RID in the background runs (30 s at most)
wait_agent_running() {
  for _ in $(seq 60); do
    [ -n "$("$DOCKER" ps -q --filter "label=airlock.run=$RID" --filter name=-agent)" ] && return 0
    sleep 0.5
  done
  return 1
}
# run_policy FILE CMD...: airlock run --backend docker with another policy
run_policy() {
  local pol=$1
  shift
  new_rid
  "$AIRLOCK" run --backend docker \
    --agent-image "$AGENT_IMAGE" -p "$pol" --run-id "$RID" -- "$@"
}

# Watch what the run makes while the agent sleeps a moment: networks (none:
# the egress proxy runs on the host), the containers (one), and the run's
# private TMPDIR on the host, where the hand-off socket was (its name is
# removed once the container has started).
RUN_TMP=$T_TMP/runtmp; mkdir -p "$RUN_TMP"
( sleep 8; for n in $("$DOCKER" network ls -q --filter "label=airlock.run=$RID"); do
    "$DOCKER" network inspect -f '{{.Name}} {{.Internal}}' "$n"; done >"$T_TMP/nets.txt"
  for c in $("$DOCKER" ps -q --filter "label=airlock.run=$RID"); do "$DOCKER" inspect "$c"; done \
    >"$T_TMP/inspect.txt"
  "$DOCKER" ps -q --filter "label=airlock.run=$RID" | wc -l >"$T_TMP/nctr.txt"
  find "$RUN_TMP" -mindepth 1 >"$T_TMP/runtmp.txt"
  pgrep -f -- "--run-id $RID" | grep -cv "^$" >"$T_TMP/nproc.txt" ) &
watcher=$!
export AIRLOCK_GIT_TOKEN=ghs_dockerbackendtest0000000000000000
out=$(TMPDIR=$RUN_TMP "${DRUN[@]}" --env AIRLOCK_GIT_TOKEN -- sh -c '
  id -u; echo "toklen=${#AIRLOCK_GIT_TOKEN}"
  grep -E "^(CapEff|NoNewPrivs):" /proc/self/status
  touch /etc/x 2>/dev/null && echo ROOT-WRITABLE; touch /workspace/a /tmp/b && echo RW-OK
  curl -sS -o /dev/null -w "code=%{http_connect}\n" https://denied.test/ 2>/dev/null
  getent hosts example.com >/dev/null && echo OUTSIDE-RESOLVES
  setarch linux32 /bin/sh -c : 2>/dev/null && echo PERSONALITY-ALLOWED
  echo "pid1=$(tr "\0\n" "  " </proc/1/cmdline | head -c 90)"; cat /proc/1/environ >/dev/null 2>&1 && echo PID1-ENV-READABLE
  cat /proc/1/mem >/dev/null 2>&1 && echo PID1-MEM-READABLE
  echo "pid1uid=$(grep "^Uid:" /proc/1/status | tr -s "\t " "  ")"
  kill -KILL 1; kill -STOP 1; echo PID1-SIGNALLED
  sleep 100 & kill -KILL $!; wait $!; echo "child-killed=$?"
  [ -S /.airlock/handoff.sock ] && echo DOOR-IS-A-SOCKET
  python3 -c "
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(\"/.airlock/handoff.sock\"); print(\"DOOR-CONNECTED\")
except OSError as e:
    print(\"door:\", e)"
  python3 -c "
import socket
def rp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((\"127.0.0.1\", port)); s.listen(); return s
try:
    rp(3128); print(\"LISTENER-STOLEN\")
except OSError as e:
    print(\"steal:\", e)
a = rp(0); b = rp(a.getsockname()[1]); print(\"reuseport-control=ok\")"
  echo "ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" ,)"
  echo "routes=$(tail -n +2 /proc/net/route | wc -l)"
  python3 -c "
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b\"x\", (\"10.255.255.1\", 53)); print(\"UDP-SENT\")
except OSError as e:
    print(\"udp:\", e)"
  sleep 10; exit 7' 2>"$T_TMP/run.err")
st=$?
unset AIRLOCK_GIT_TOKEN
wait $watcher
is "docker backend: the agent's exit status comes back" "$st" 7
like "docker backend: agent uid 1000" "$out" "^1000"
like "docker backend: token reached the agent's environment" "$out" "toklen=37"
like "docker backend: no capabilities" "$out" "CapEff:[[:space:]]+0000000000000000"
like "docker backend: no_new_privs" "$out" "NoNewPrivs:[[:space:]]+1"
check_not "docker backend: root read-only" grep -q ROOT-WRITABLE <<<"$out"
like "docker backend: /workspace and /tmp writable" "$out" "RW-OK"
like "docker backend: off-allowlist CONNECT refused by the proxy (403)" "$out" "code=403"
check_not "docker backend: outside names do not resolve" grep -q OUTSIDE-RESOLVES <<<"$out"
check_not "docker backend: airlock's seccomp profile loaded" grep -q PERSONALITY-ALLOWED <<<"$out"
is "docker backend: no network made for the run (the proxy runs on the host)" "$(wc -l <"$T_TMP/nets.txt" | tr -d ' ')" 0
[ "$(wc -l <"$T_TMP/nets.txt")" -eq 0 ] || diag "$(cat "$T_TMP/nets.txt")"
is "docker backend: one container for the run" "$(tr -d ' ' <"$T_TMP/nctr.txt")" 1
is "docker backend: the hand-off socket's name is gone from the host while the agent runs" "$(cat "$T_TMP/runtmp.txt")" ""
# the egress proxy: a process on the host, forked by airlock (its command
# line is airlock's, with this run's id), beside airlock itself
is "docker backend: the run's processes on the host while it runs (airlock and its proxy)" "$(cat "$T_TMP/nproc.txt")" 2
# The agent's network namespace: loopback only, no route, the proxy's
# listener on 127.0.0.1:3128 (handed over by the shim, docs/docker.md).
like "docker backend: PID 1 is airlock-shim" "$out" "pid1=/.airlock/shim --socket /.airlock/handoff.sock --listen 3128 --deadline [0-9]+ -- "
like "docker backend: PID 1 runs as the agent's uid (inside)" "$out" "pid1uid=Uid: 1000 1000 "
check_not "docker backend: PID 1's environment is not readable (not dumpable)" grep -q PID1-ENV-READABLE <<<"$out"
check_not "docker backend: PID 1's memory is not readable (not dumpable)" grep -q PID1-MEM-READABLE <<<"$out"
# positive control: the agent may kill a process of its own uid; PID 1, the
# namespace's init, ignores SIGKILL and SIGSTOP from inside, so the run goes
# on (the exit status 7 below comes from the agent's own exit)
like "control: the agent can SIGKILL a process of its own uid" "$out" "child-killed=137"
like "docker backend: SIGKILL and SIGSTOP to PID 1 from inside change nothing" "$out" "PID1-SIGNALLED"
# The hand-off socket: control, it is there (a socket, bound into this
# container); a connection after the hand-off is refused (the supervisor
# took exactly one and stopped listening)
like "control: the hand-off socket is bound into the agent container" "$out" "DOOR-IS-A-SOCKET"
like "docker backend: a second connection to the hand-off socket is refused" "$out" "door: .*Connection refused"
# The proxy's listener has no SO_REUSEPORT: the agent (its uid made it)
# cannot bind a second socket on 127.0.0.1:3128 and take its connections.
# Control: two SO_REUSEPORT sockets of the agent's on one port do bind.
like "control: two SO_REUSEPORT listeners of the agent share a port" "$out" "reuseport-control=ok"
like "docker backend: the agent cannot bind a second listener on 127.0.0.1:3128" "$out" "steal: .*Address already in use"
like "docker backend: the agent has only a loopback interface" "$out" "ifaces=lo,$"
like "docker backend: the agent has no route at all" "$out" "routes=0$"
like "docker backend: a UDP send off the machine is refused by the kernel" "$out" "udp: .*Network is unreachable"
# Positive control: a container on a Docker `internal: true` network (the
# seed's design, and what render compose prints) does have a route, to the
# bridge on the host; only iptables stands between it and the outside.
"$DOCKER" network create --internal --label "airlock.test=$$" altest-ctl$$ >/dev/null
ctl=$("$DOCKER" run --rm --pull never --network altest-ctl$$ "$AGENT_IMAGE" sh -c 'echo "routes=$(tail -n +2 /proc/net/route | wc -l)"' 2>&1)
"$DOCKER" network rm altest-ctl$$ >/dev/null
like "positive control: on an internal network a container has a route" "$ctl" "routes=[1-9]"
check_not "docker backend: every network of the run internal" grep -q false "$T_TMP/nets.txt"
check_not "docker backend: token not in airlock's own output" grep -q dockerbackendtest "$T_TMP/run.err"
# The token went through the agent's stdin, not the container's
# configuration: `docker inspect` (and the engine's config.v2.json) never
# show it. Control: the inspect output is there and names the agent.
like "control: the running container was inspected" "$(grep -c '"Name": "/airlock-.*-agent"' "$T_TMP/inspect.txt")" "^[1-9]"
check_not "docker backend: the token is not in docker inspect" grep -q dockerbackendtest "$T_TMP/inspect.txt"
like "control: the run's containers were seen while it ran (by its --run-id label)" "$(grep -c "\"airlock.run\": \"$RID\"" "$T_TMP/inspect.txt")" "^[1-9]"
is "docker backend: no container left" "$(ours ps)" ""
is "docker backend: no network left" "$(ours network)" ""
is "docker backend: no volume left" "$(ours volume)" ""
is "docker backend: nothing left in the run's TMPDIR" "$(find "$RUN_TMP" -mindepth 1)" ""
is "docker backend: no process of the run left on the host" "$(pgrep -f -- "--run-id $RID")" ""

# The image has the everyday commands a user tries first.
new_rid; "${DRUN[@]}" -- true >/dev/null 2>&1
is "docker backend: \`-- true\` runs (exit 0)" "$?" 0
new_rid; "${DRUN[@]}" -- false >/dev/null 2>&1
is "docker backend: \`-- false\` gives 1" "$?" 1
# Errors a new user meets say what to do.
new_rid; out=$("${DRUN[@]/$AGENT_IMAGE/airlock-agent:no-such-tag$$}" -- true 2>&1)
like "a missing image: the error says how to build it" "$out" "No such image.*scripts/docker-images.sh"
new_rid; out=$(DOCKER_HOST=tcp://127.0.0.1:1 "${DRUN[@]}" -- true 2>&1)
like "DOCKER_HOST not unix://: refused with a reason" "$out" "DOCKER_HOST .*unix socket only"
printf 'version: 1\nnetwork:\n  allow: [{host: forge.test, port: 8443}]\nrelay:\n  upstream: https://model.test\n  key_file: /etc/airlock/model.key\n' >relay-pol.yaml
chmod 644 relay-pol.yaml
out=$(run_policy relay-pol.yaml true 2>&1)
like "a policy with a relay: refused by the docker backend" "$out" "does not run the model relay"

# The second red team: an image with its own ENTRYPOINT (which would run
# before the prologue and could read the secrets on stdin) and a VOLUME (an
# anonymous volume on the host's disk, outside the policy's sizes).
ctr=$("$DOCKER" create --pull never "$AGENT_IMAGE" true)
"$DOCKER" commit --change 'VOLUME ["/data"]' \
  --change 'ENTRYPOINT ["/bin/sh","-c","echo ENTRYPOINT-RAN; head -c 40; exec \"$@\"","ep"]' \
  "$ctr" "airlock-agent:voltest$$" >/dev/null
"$DOCKER" rm -f "$ctr" >/dev/null
on_exit "$DOCKER rmi -f airlock-agent:voltest$$"
# control: run plainly, the image's entrypoint does run and /data is a volume
ctl=$(echo SECRET=x | "$DOCKER" run --rm -i --pull never --network none "airlock-agent:voltest$$" \
  sh -c 'grep -q " /data " /proc/self/mountinfo && echo DATA-IS-A-VOLUME' 2>&1)
like "control: the test image's ENTRYPOINT runs under a plain docker run" "$ctl" "ENTRYPOINT-RAN"
like "control: the test image's /data is a volume under a plain docker run" "$ctl" "DATA-IS-A-VOLUME"
new_rid
anon_before=$(anon_vols)
out=$(SECRET=hunter2 "$AIRLOCK" run --backend docker --run-id "$RID" \
  --agent-image "airlock-agent:voltest$$" -p pol.yaml --env SECRET -- \
  sh -c 'echo "SECRET=[$SECRET]"; touch /data/x 2>/dev/null && echo DATA-WRITABLE; true' 2>&1)
like "image ENTRYPOINT: the agent still gets its secret" "$out" "SECRET=\[hunter2\]"
check_not "image ENTRYPOINT: it never runs (nothing before the prologue)" grep -q ENTRYPOINT-RAN <<<"$out"
check_not "image VOLUME: not writable (a read-only tmpfs in its place)" grep -q DATA-WRITABLE <<<"$out"
is "image VOLUME: no volume of the run left" "$(ours volume)" ""
is "image VOLUME: no anonymous (unlabelled) volume made" "$(comm -13 <(echo "$anon_before") <(anon_vols) | grep -c .)" 0
# removed now, before docker.sh's exit removes the agent image it is made
# from (a parent with a child image would only be untagged, and stay)
"$DOCKER" rmi -f "airlock-agent:voltest$$" >/dev/null 2>&1
# Arguments that are not UTF-8 cannot travel in the Engine API's JSON:
# refused, never dropped (which would shift the others).
new_rid; out=$("${DRUN[@]}" -- sh -c 'echo "n=$#"' x A $'\xff' C 2>&1)
st=$?
is "a non-UTF-8 argument: refused (125)" "$st" 125
like "a non-UTF-8 argument: the error names it" "$out" "argument 5 .*not valid UTF-8"
# A loopback pin is the host's loopback, as for the native sandbox (the
# proxy runs on the host): a server the test starts on 127.0.0.1 answers
# through the proxy. Control: the same request without the pin is refused
# (the guard refuses loopback answers; the name does not resolve).
mkdir -p lo-www && echo LOOPBACK-SERVED >lo-www/x.txt
LPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory lo-www "$LPORT" >/dev/null 2>&1 &
lo_srv=$!
on_exit "kill $lo_srv"
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$LPORT/" && break; sleep 0.1; done
printf 'version: 1\nnetwork:\n  allow: [{host: forge.test, port: %s}]\n  pin: [{host: forge.test, address: 127.0.0.1}]\n  resolver: 127.0.0.1:9\n' "$LPORT" >lo-pin.yaml
printf 'version: 1\nnetwork:\n  allow: [{host: forge.test, port: %s}]\n  resolver: 127.0.0.1:9\n' "$LPORT" >lo-nopin.yaml
chmod 644 lo-pin.yaml lo-nopin.yaml
out=$(run_policy lo-pin.yaml curl -sS -m 10 "http://forge.test:$LPORT/x.txt" 2>&1)
like "a loopback pin: the host's loopback, reached through the proxy" "$out" "LOOPBACK-SERVED"
check_not "a loopback pin: no warning any more" grep -q "own loopback" <<<"$out"
out=$(run_policy lo-nopin.yaml curl -sS -m 10 "http://forge.test:$LPORT/x.txt" 2>&1)
check_not "control: without the pin the host's loopback is not reached" grep -q LOOPBACK-SERVED <<<"$out"
kill $lo_srv 2>/dev/null
new_rid; out=$("${DRUN[@]}" --timeout 8d -- true 2>&1)
like "--timeout beyond 7 days: a usage error naming the rule" "$out" "at most 7d"

# SIGINT in the middle of the run: everything is removed all the same.
new_rid; "${DRUN[@]}" -- sleep 60 >/dev/null 2>&1 &
pid=$!
wait_agent_running
like "SIGINT test: the agent container was running" "$("$DOCKER" ps -q --filter "label=airlock.run=$RID")" "."
kill -INT $pid
wait $pid
st=$?
is "SIGINT: exit status 130" "$st" 130
is "SIGINT: no container left" "$(ours ps)" ""
is "SIGINT: no network left" "$(ours network)" ""

# timeout: killed, 124, cleaned
new_rid; "${DRUN[@]}" --timeout 3s -- sleep 60 >/dev/null 2>&1
is "timeout: exit status 124" "$?" 124
is "timeout: no container left" "$(ours ps)" ""

# --- what the red team found (docs/docker.md, "Stopping") ---
# A closed reader of the agent's output (SIGPIPE) must not kill airlock and
# leave the run behind: the limit still holds, everything is removed.
new_rid; "${DRUN[@]}" --timeout 5s -- sh -c 'head -c 1000000 /dev/zero | tr "\0" y; sleep 300' 2>/dev/null | head -c 10 >/dev/null
is "closed stdout reader: airlock still ends the run at its limit (124)" "${PIPESTATUS[0]}" 124
is "closed stdout reader: no container left" "$(ours ps)" ""
is "closed stdout reader: no volume left" "$(ours volume)" ""
# SIGHUP (a closed terminal) ends the run like SIGINT.
new_rid; "${DRUN[@]}" -- sleep 60 >/dev/null 2>&1 &
pid=$!
wait_agent_running
kill -HUP $pid
wait $pid
is "SIGHUP: exit status 129" "$?" 129
is "SIGHUP: no container left" "$(ours ps)" ""
# The agent floods the proxy with refused requests: the decisions kept are
# the first ones, capped (the proxy's 8 MiB cap), never the engine's disk,
# and never lost altogether.
new_rid; "${DRUN[@]}" --log "$T_TMP/flood.jsonl" -- python3 -c '
import socket, time
h = b"x" * 200 + b".evil.test:443"
t0 = time.time()
while time.time() - t0 < 6:
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT " + h + b" HTTP/1.1\r\nHost: " + h + b"\r\n\r\n"); s.recv(4096); s.close()
' >/dev/null 2>"$T_TMP/flood.err"
sz=$(stat -c %s "$T_TMP/flood.jsonl" 2>/dev/null || echo 0)
like "flood: decisions were kept ($sz bytes)" "$sz" "^[1-9][0-9]{4,}$"
check "flood: at most 8 MiB kept (the proxy's cap)" test "$sz" -le 8388608
like "flood: the first decision is a deny of the flood target" "$(head -1 "$T_TMP/flood.jsonl")" '"decision":"deny"'
is "flood: no container left" "$(ours ps)" ""
# airlock is SIGKILLed: it cannot clean up, but its proxy dies with it
# (PR_SET_PDEATHSIG) and the shim's deadline (the limit + 30 s) ends PID 1,
# which ends every process of the agent's PID namespace. The stopped
# container is then removed by hand (docs/docker.md); no hand-off socket is
# left on the host.
KILL_TMP=$T_TMP/killtmp; mkdir -p "$KILL_TMP"
new_rid; TMPDIR=$KILL_TMP "${DRUN[@]}" --timeout 2s -- sleep 600 >/dev/null 2>&1 &
pid=$!
wait_agent_running
like "SIGKILL test: the agent container was running" "$("$DOCKER" ps -q --filter "label=airlock.run=$RID" --filter name=-agent)" "."
like "SIGKILL test: the run's proxy runs on the host" "$(pgrep -f -- "--run-id $RID" | grep -vx "$pid")" "^[0-9]+$"
kill -KILL $pid
wait $pid 2>/dev/null
for _ in $(seq 20); do [ -z "$(pgrep -f -- "--run-id $RID")" ] && break; sleep 0.25; done
is "after SIGKILL of airlock: its proxy is gone at once (PR_SET_PDEATHSIG)" "$(pgrep -f -- "--run-id $RID")" ""
is "after SIGKILL of airlock: no hand-off socket left on the host" "$(find "$KILL_TMP" -mindepth 1)" ""
for _ in $(seq 75); do
  [ -z "$(ours ps running)" ] && break
  sleep 1
done
is "after SIGKILL of airlock: no container of the run still runs (engine-side deadline)" \
  "$(ours ps running)" ""
for c in $(ours ps); do "$DOCKER" rm -f "$c" >/dev/null; done
for n in $(ours network); do "$DOCKER" network rm "$n" >/dev/null; done
for v in $(ours volume); do "$DOCKER" volume rm "$v" >/dev/null; done
