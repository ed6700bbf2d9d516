# Sourced by docker.sh: `airlock run --backend docker` (issue 9 item 3).
# Uses $DOCKER, $AIRLOCK, $PROXY_IMAGE, $AGENT_IMAGE, pol.yaml from docker.sh.
before_c=$("$DOCKER" ps -aq --filter label=airlock.run | sort)
before_n=$("$DOCKER" network ls -q --filter label=airlock.run | sort)
before_v=$("$DOCKER" volume ls -q | sort)
DRUN=("$AIRLOCK" run --backend docker --docker-egress-internal --proxy-image "$PROXY_IMAGE"
  --agent-image "$AGENT_IMAGE" -p pol.yaml)
# Watch the networks the run creates (every one must be internal: the test
# makes the egress network internal too) while the agent sleeps a moment.
( sleep 8; for n in $("$DOCKER" network ls -q --filter label=airlock.run); do
    "$DOCKER" network inspect -f '{{.Name}} {{.Internal}}' "$n"; done >"$T_TMP/nets.txt" ) &
watcher=$!
export AIRLOCK_GIT_TOKEN=ghs_dockerbackendtest0000000000000000
out=$("${DRUN[@]}" --env AIRLOCK_GIT_TOKEN -- sh -c '
  id -u; echo "toklen=${#AIRLOCK_GIT_TOKEN}"
  grep -E "^(CapEff|NoNewPrivs):" /proc/self/status
  touch /etc/x 2>/dev/null && echo ROOT-WRITABLE; touch /workspace/a /tmp/b && echo RW-OK
  curl -sS -o /dev/null -w "code=%{http_connect}\n" https://denied.test/ 2>/dev/null
  getent hosts example.com >/dev/null && echo OUTSIDE-RESOLVES
  setarch linux32 /bin/sh -c : 2>/dev/null && echo PERSONALITY-ALLOWED
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
like "docker backend: one network made for the run (the proxy's egress)" "$(wc -l <"$T_TMP/nets.txt")" "^ *1$"
# The agent shares the holder's network namespace: loopback only, no route,
# the proxy's listener on 127.0.0.1:3128 (handed over, docs/docker.md).
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
is "docker backend: no container left" "$("$DOCKER" ps -aq --filter label=airlock.run | sort)" "$before_c"
is "docker backend: no network left" "$("$DOCKER" network ls -q --filter label=airlock.run | sort)" "$before_n"
is "docker backend: no volume left" "$("$DOCKER" volume ls -q | sort)" "$before_v"

# SIGINT in the middle of the run: everything is removed all the same.
"${DRUN[@]}" -- sleep 60 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 60); do
  [ -n "$("$DOCKER" ps -q --filter label=airlock.run --filter name=-agent)" ] && break
  sleep 0.5
done
like "SIGINT test: the agent container was running" "$("$DOCKER" ps -q --filter label=airlock.run)" "."
kill -INT $pid
wait $pid
st=$?
is "SIGINT: exit status 130" "$st" 130
is "SIGINT: no container left" "$("$DOCKER" ps -aq --filter label=airlock.run | sort)" "$before_c"
is "SIGINT: no network left" "$("$DOCKER" network ls -q --filter label=airlock.run | sort)" "$before_n"

# timeout: killed, 124, cleaned
"${DRUN[@]}" --timeout 3s -- sleep 60 >/dev/null 2>&1
is "timeout: exit status 124" "$?" 124
is "timeout: no container left" "$("$DOCKER" ps -aq --filter label=airlock.run | sort)" "$before_c"
