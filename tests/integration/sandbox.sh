#!/bin/bash
# The native sandbox from inside, as root and as an unprivileged user.
# Every check has a positive control: the same probe (sbcheck) run outside
# the sandbox must report ESCAPED, so we know the probe can see an escape.
. "$(dirname "$0")/lib.sh"
ensure_test_user
# (a copy when the build tree is out of the test user's reach: a checkout in /root)
SB=$(t_reachable "${SBCHECK:?}")
SBDIR=$(dirname "$SB")

POL=$T_TMP/policy.yaml
cat >"$POL" <<YAML
version: 1
filesystem:
  workspace_size: 64MiB
  tmp_size: 32MiB
  ro_paths: [$SBDIR]
process:
  limits: {pids: 64, memory: 128MiB}
YAML
chmod 644 "$POL"

# canaries on the host: a TCP listener on loopback and an abstract unix socket
CANARY_LOG=$T_TMP/canary.log
: >"$CANARY_LOG"
python3 - "$CANARY_LOG" >"$T_TMP/canary.port" <<'PY' &
import socket, sys, threading, os
log = sys.argv[1]
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(16)
u = socket.socket(socket.AF_UNIX); u.bind("\0airlock-test-canary-%d" % os.getpid()); u.listen(16)
print(t.getsockname()[1], "airlock-test-canary-%d" % os.getpid(), flush=True)
def serve(s, name):
    while True:
        c, _ = s.accept()
        with open(log, "a") as f: f.write(name + "\n")
        c.close()
threading.Thread(target=serve, args=(u, "abstract"), daemon=True).start()
serve(t, "tcp")
PY
CANARY_PID=$!
on_exit "kill $CANARY_PID"
for _ in $(seq 50); do [ -s "$T_TMP/canary.port" ] && break; sleep 0.1; done
read -r CANARY_PORT CANARY_ABS <"$T_TMP/canary.port"

in_sb() { "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- "$SB" "$@"; }
out_sb() { "$SB" "$@"; }

# expect_blocked NAME ATTEMPT ARGS... : control outside (as root) must escape,
# inside must be blocked.
expect_blocked() {
  local name=$1; shift
  local out
  if [ "$MODE" = root ]; then
    out=$(out_sb "$@" 2>&1)
    if [ $? -eq 0 ]; then ok "control: $name escapes outside the sandbox ($out)"
    else fail "control: $name escapes outside the sandbox ($out)"; fi
  fi
  out=$(in_sb "$@" 2>&1)
  local rc=$?
  if [ $rc -ne 0 ] && grep -q '^blocked:' <<<"$out" && ! grep -q ESCAPED <<<"$out"; then ok "[$MODE] $name blocked (rc=$rc: $out)"
  else fail "[$MODE] $name blocked (rc=$rc: $out)"; fi
}

suite() {
  MODE=$1
  if [ "$MODE" = user ]; then PRE=(as_user); else PRE=(); fi

  out=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'id -u; id -g; id -G' 2>&1)
  is "[$MODE] uid/gid/groups are 1000" "$(echo $out)" "1000 1000 1000"

  status=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- cat /proc/self/status)
  caps=$(grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' <<<"$status" | awk '{print $2}' | sort -u)
  is "[$MODE] all five capability sets empty" "$caps" "0000000000000000"
  like "[$MODE] NoNewPrivs: 1" "$status" $'NoNewPrivs:\t1'
  like "[$MODE] Seccomp: 2 (filter)" "$status" $'Seccomp:\t2'
  if [ "$MODE" = root ]; then
    hs=$(cat /proc/self/status)
    like "control: outside, CapBnd is not empty" "$(grep CapBnd <<<"$hs")" 'CapBnd:.*[1-9a-f]'
    like "control: outside, NoNewPrivs is 0 and Seccomp 0" "$(grep -E 'NoNewPrivs|Seccomp:' <<<"$hs" | tr -d '\t\n')" 'NoNewPrivs:0Seccomp:0'
  fi

  # read-only system, writable workspace and tmp
  for p in /airlock-probe /usr/airlock-probe /etc/airlock-probe; do
    out=$(in_sb write "$p" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -qE '^blocked: .*(EROFS|EACCES|EPERM)' <<<"$out"; then ok "[$MODE] write to $p refused ($out)"; else fail "[$MODE] write to $p refused ($out)"; fi
  done
  if [ "$MODE" = root ]; then
    check "control: root can write to /etc outside" out_sb write /etc/airlock-probe-$$
  fi
  check "[$MODE] /workspace writable" in_sb write /workspace/probe
  check "[$MODE] /tmp writable" in_sb write /tmp/probe
  check "[$MODE] /dev/shm writable" in_sb write /dev/shm/probe
  ws=$(in_sb statfs /workspace); tmp=$(in_sb statfs /tmp)
  like "[$MODE] /workspace is tmpfs of 64 MiB" "$ws" 'type=0x1021994 bytes=67108864$'
  like "[$MODE] /tmp is tmpfs of 32 MiB" "$tmp" 'type=0x1021994 bytes=33554432$'

  # host paths absent
  [ "$MODE" = root ] && { mkdir -p /root/.ssh; touch /root/.ssh/airlock-test-key; on_exit "rm -f /root/.ssh/airlock-test-key"; }
  [ "$MODE" = root ] && check "control: the invoker's ~/.ssh key exists outside" out_sb exists /root/.ssh/airlock-test-key
  for p in /home /root /run /var/run/docker.sock /root/.ssh/airlock-test-key /var /mnt /opt /srv /media /sys /etc/resolv.conf /etc/shadow; do
    out=$(in_sb exists "$p" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q '^blocked: .*ENOENT' <<<"$out"; then ok "[$MODE] $p absent ($out)"; else fail "[$MODE] $p absent ($out)"; fi
  done

  # an fd the caller left open above 2 must not cross
  if [ "$MODE" = root ]; then
    exec 7</dev/null
    check "control: fd 7 left open is visible outside" out_sb fd 7
    exec 7<&-
  fi
  exec 7</dev/null
  out=$(in_sb fd 7 2>&1); rc=$?
  exec 7<&-
  if [ $rc -eq 1 ] && grep -q '^blocked: .*ENOENT' <<<"$out"; then ok "[$MODE] inherited fd 7 absent inside ($out)"; else fail "[$MODE] inherited fd 7 absent inside ($out)"; fi

  # network: the host loopback canary is reachable outside, not inside;
  # a public address is unroutable inside (it never leaves: no route).
  if [ "$MODE" = root ]; then
    : >"$CANARY_LOG"
    check "control: canary on host loopback reachable outside" out_sb connect 127.0.0.1 "$CANARY_PORT"
    check "control: host abstract socket reachable outside" out_sb abstract "$CANARY_ABS"
    sleep 0.3
    is "control: the canary logs both connections" "$(sort "$CANARY_LOG" | tr '\n' ' ')" "abstract tcp "
  fi
  sleep 0.2; : >"$CANARY_LOG"
  out=$(in_sb connect 127.0.0.1 "$CANARY_PORT" 2>&1)
  like "[$MODE] TCP to the host's loopback canary refused inside" "$out" '^blocked: connect'
  out=$(in_sb connect 1.1.1.1 443 2>&1)
  like "[$MODE] connect() to 1.1.1.1:443 fails with ENETUNREACH" "$out" 'blocked: connect: ENETUNREACH'
  out=$(in_sb abstract "$CANARY_ABS" 2>&1)
  like "[$MODE] host abstract unix socket unreachable inside" "$out" '^blocked: abstract'
  sleep 0.3
  is "[$MODE] the canary saw no connection from the sandbox" "$(cat "$CANARY_LOG")" ""

  # kernel attack surface
  expect_blocked "TIOCSTI" tiocsti
  expect_blocked "io_uring_setup" io_uring
  expect_blocked "unshare(CLONE_NEWUSER)" unshare_user
  expect_blocked "ptrace" ptrace
  expect_blocked "raw socket" raw
  expect_blocked "packet socket" packet
  expect_blocked "clone3 answers ENOSYS" clone3
  expect_blocked "packet socket with high bits in the family" family_highbits
  if "$SB" vsock >/dev/null 2>&1; then
    expect_blocked "AF_VSOCK socket (the hypervisor, no netns)" vsock
  else
    skip "[$MODE] AF_VSOCK: this kernel has no vsock, so there is nothing to refuse"
  fi
  if [ "$(uname -m)" = x86_64 ] && "$SB" newsyscall >/dev/null 2>&1; then
    expect_blocked "a syscall newer than libseccomp (open_tree_attr) answers ENOSYS" newsyscall
  else
    skip "[$MODE] syscall 467: not x86_64 or this kernel does not have it"
  fi
  if [ "$MODE" = root ]; then
    check "control: mount works outside (in a private mount ns)" unshare -m "$SB" mount
  fi
  out=$(in_sb mount 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -q '^blocked: mount' <<<"$out"; then ok "[$MODE] mount refused ($out)"; else fail "[$MODE] mount refused ($out)"; fi
  for abi in x32 i386; do
    if [ $abi = i386 ] && { out_sb i386 >/dev/null 2>&1; [ $? = 139 ]; }; then
      # int 0x80 faults (SIGSEGV) outside any sandbox: no i386 entry here
      skip "[$MODE] i386 syscall kills the process: this machine has no i386 syscall entry (int 0x80 faults outside the sandbox too)"
      continue
    fi
    [ "$MODE" = root ] && check "control: $abi syscall does not kill the process outside" out_sb $abi
    in_sb $abi >/dev/null 2>&1; rc=$?
    is "[$MODE] $abi syscall kills the process (SIGSYS → 128+31)" "$rc" 159
  done

  # limits
  [ "$MODE" = root ] && check "control: 100 forks succeed outside" out_sb forkbomb 100
  out=$(in_sb forkbomb 100 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -q '^blocked: fork bomb' <<<"$out"; then ok "[$MODE] fork bomb stopped by the pids limit ($out)"; else fail "[$MODE] fork bomb stopped by the pids limit ($out)"; fi
  check "[$MODE] the host can still fork afterwards" true
  [ "$MODE" = root ] && check "control: 256 MiB allocation succeeds outside" out_sb memhog 256
  out=$(in_sb memhog 256 2>&1); rc=$?
  # stopped = refused (blocked: malloc) or killed by the OOM killer (137)
  if { [ $rc -eq 1 ] && grep -q '^blocked: malloc' <<<"$out"; } || [ $rc -eq 137 ]; then ok "[$MODE] memory hog stopped at 128 MiB (rc=$rc $out)"; else fail "[$MODE] memory hog stopped (rc=$rc $out)"; fi

  # timeout
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- true; is "[$MODE] control: a quick command exits 0" "$?" 0
  start=$(date +%s)
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" --timeout 1s -- sleep 30; rc=$?
  is "[$MODE] --timeout 1s on sleep 30 gives 124" "$rc" 124
  [ $(( $(date +%s) - start )) -lt 10 ] && ok "[$MODE] the timeout fired promptly" || fail "[$MODE] the timeout fired promptly"

  # exit statuses
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'exit 7'; is "[$MODE] exit status passes through" "$?" 7
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'kill -TERM $$'; is "[$MODE] killed by SIGTERM gives 143" "$?" 143
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- /nonexistent/cmd 2>/dev/null; is "[$MODE] missing command gives 127" "$?" 127
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- /etc/passwd 2>/dev/null; is "[$MODE] non-executable gives 126" "$?" 126
  err=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- /nonexistent/cmd 2>&1)
  like "[$MODE] exec failure names the step and errno" "$err" 'exec `/nonexistent/cmd`: No such file or directory'

  # SIGKILL of the supervisor takes the whole sandbox down
  marker="airlock-linger-$MODE-$$"
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- "$SB" linger "$marker" &
  sup=$!
  for _ in $(seq 50); do pgrep -f "$marker" >/dev/null && break; sleep 0.1; done
  if pgrep -f "$marker" >/dev/null; then ok "[$MODE] control: the lingering sandbox process runs"; else fail "[$MODE] control: the lingering sandbox process runs"; fi
  # the supervisor may be setpriv's child: kill every airlock supervisor of this run
  pkill -KILL -f "$AIRLOCK run -q -p $POL -- $SB linger $marker" ; kill -KILL $sup 2>/dev/null
  wait $sup 2>/dev/null
  gone=0
  for _ in $(seq 30); do pgrep -f "$marker" >/dev/null || { gone=1; break; }; sleep 0.1; done
  if [ $gone = 1 ]; then ok "[$MODE] after SIGKILL of the supervisor no sandbox process remains"
  else fail "[$MODE] after SIGKILL of the supervisor no sandbox process remains"; pgrep -af "$marker" | sed 's/^/#   /'; pkill -KILL -f "$marker"; fi

  # nothing persists: a second run does not see the first one's files
  "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'echo x > /workspace/persist && echo x > /tmp/persist && test -f /workspace/persist'
  is "[$MODE] control: a file written in /workspace is visible in the same run" "$?" 0
  out=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'ls /workspace /tmp' 2>&1)
  if grep -q persist <<<"$out" || ! grep -q '^home$' <<<"$out"; then fail "[$MODE] /workspace and /tmp are empty in the next run"; else ok "[$MODE] /workspace and /tmp are empty in the next run"; fi
  if grep -qs persist /tmp/persist /workspace/persist 2>/dev/null; then fail "[$MODE] nothing of the sandbox on the host"; else ok "[$MODE] nothing of the sandbox on the host"; fi

  # hostname and network interfaces
  out=$(in_sb exists /proc/self >/dev/null; "${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'cat /proc/sys/kernel/hostname; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "')
  is "[$MODE] hostname airlock and only lo" "$(echo $out)" "airlock lo"
  # the network namespace is made beside the root by a helper (sandbox/
  # netns.c) and joined by init: the command's is a new one, not the host's;
  # control: the same reading twice on the host gives the same namespace
  host_net=$(readlink /proc/self/ns/net)
  is "[$MODE] control: the host's network namespace reads the same twice" "$(readlink /proc/self/ns/net)" "$host_net"
  sb_net=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- readlink /proc/self/ns/net 2>&1)
  like "[$MODE] the command's network namespace is a namespace" "$sb_net" "^net:\[[0-9]+\]$"
  check_not "[$MODE] the command's network namespace is not the host's" test "$sb_net" = "$host_net"
  # and the helper that made it is gone before the command starts (pid 1
  # is init, the helper was pid 2: only 1 and the command are left)
  out=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'set -- /proc/[0-9]*; echo $#')
  is "[$MODE] init and the command are the only processes (the netns helper was reaped)" "$out" "2"
  out=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" -- sh -c 'sleep 5 & set -- /proc/[0-9]*; echo $#; kill $!')
  is "[$MODE] control: the same count sees a third process" "$out" "3"
  out=$("${PRE[@]}" env -u TERM FOO=bar "$AIRLOCK" run -q -p "$POL" -- /usr/bin/env | cut -d= -f1 | sort | tr "\n" " ")
  is "[$MODE] environment cleared to the documented set" "$out" "HOME LANG LOGNAME PATH TMPDIR USER "
  out=$("${PRE[@]}" env TERM=xterm-test "$AIRLOCK" run -q -p "$POL" --env A_B=c -- /usr/bin/env | sort | tr "\n" " ")
  like "[$MODE] TERM passes through and --env is set" "$out" "A_B=c .*TERM=xterm-test"
  like "control: a variable set for the supervisor is in its environment" "$(env AIRLOCK_TEST_SECRET=hunter2hunter2 env)" hunter2
  out=$("${PRE[@]}" env AIRLOCK_TEST_SECRET=hunter2hunter2 "$AIRLOCK" run -q -p "$POL" -- sh -c 'cat /proc/1/environ; cat /proc/1/cmdline; env' 2>&1 | tr '\0' ' ')
  if grep -q hunter2 <<<"$out"; then fail "[$MODE] the host environment is not visible inside (env, /proc/1)"; else ok "[$MODE] the host environment is not visible inside (env, /proc/1)"; fi
  out=$("${PRE[@]}" "$AIRLOCK" run -q -p "$POL" --env ARGSECRET=swordfish42 -- sh -c 'echo "env=$ARGSECRET"; tr "\0" " " </proc/1/cmdline' 2>&1)
  like "[$MODE] control: the --env value reaches the command" "$out" 'env=swordfish42'
  if grep -q 'swordfish42.*swordfish42' <<<"$(tr '\n' ' ' <<<"$out")" || grep -v '^env=' <<<"$out" | grep -q swordfish42; then
    fail "[$MODE] the supervisor's command line (with --env values) is wiped from /proc/1/cmdline"
  else ok "[$MODE] the supervisor's command line (with --env values) is wiped from /proc/1/cmdline"; fi
}

suite root
suite user
done_testing
