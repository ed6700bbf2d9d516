# Sourced by docker.sh: `airlock probe --backend docker` (issue 9): the
# catalogue inside the docker backend's agent container, judged like the
# native run; the positive control (`--docker-unhardened`: the agent
# container without airlock's hardening) must make the hardening-dependent
# probes escape. Uses $DOCKER, $AIRLOCK, $PROXY_IMAGE, $AGENT_IMAGE from
# docker.sh. Network safety: every network of the run is internal
# (--docker-egress-internal), and the proxy resolves through 127.0.0.1:53 in
# its own network namespace, where nothing listens (never the host's
# resolver); the allowed host is pinned.
cat >probe-pol.yaml <<'P'
version: 1
network:
  allow:
    - {host: forge.test, port: 8443}
  pin: [{host: forge.test, address: 127.0.0.1}]
  resolver: 127.0.0.1:53
filesystem:
  workspace_size: 64MiB
  tmp_size: 32MiB
process:
  limits: {memory: 256MiB, pids: 128, wall: 5m, nofile: 1024}
P
chmod 644 probe-pol.yaml

# Probes the docker backend cannot block from its side, each with the
# reason (docs/docker.md, "Differences"). While such a probe escapes it is
# reported as SKIP with that reason (counted as skipped, never as passed);
# once it is blocked it counts as a pass like any other. Any probe that is
# not blocked and not listed here fails the test outright.
declare -A DOCKER_GAPS=()
# A per-container user namespace exists only with the daemon's
# userns-remap; without it, uid 1000 inside is uid 1000 on the host.
DOCKER_USERNS=
"$DOCKER" info --format '{{.SecurityOptions}}' 2>/dev/null | grep -q 'name=userns' && DOCKER_USERNS=1
if [ -z "$DOCKER_USERNS" ]; then
  DOCKER_GAPS[priv.uid-map]="this dockerd runs without userns-remap: no user namespace per container (uid 1000 inside is uid 1000 on the host)"
fi

before_c=$("$DOCKER" ps -aq --filter label=airlock.run | sort)
before_n=$("$DOCKER" network ls -q --filter label=airlock.run | sort)
before_v=$("$DOCKER" volume ls -q | sort)
DPROBE=("$AIRLOCK" probe --backend docker --docker-egress-internal --proxy-image "$PROXY_IMAGE"
  --agent-image "$AGENT_IMAGE" -p probe-pol.yaml --json)

verdicts() { # FILE -> "id verdict" lines
  python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]: print(r["id"], r["verdict"])' "$1"
}
evidence() { # FILE ID
  python3 -c 'import json,sys
print(next((r["evidence"] for r in json.load(open(sys.argv[1]))["results"] if r["id"] == sys.argv[2]), ""))' "$1" "$2"
}

# ---- hardened: the agent container as `airlock run --backend docker` makes it ----
out=$T_TMP/dprobe.json
"${DPROBE[@]}" >"$out" 2>"$T_TMP/dprobe.err"
rc=$?
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out" 2>/dev/null; then
  ok "docker probe: --json parses"
  n=$(verdicts "$out" | wc -l)
  nl=$("$AIRLOCK" probe --list | grep -c '^| `')
  is "docker probe: every probe of the catalogue ran" "$n" "$nl"
  unexpected=""
  while read -r id v; do
    if [ -n "${DOCKER_GAPS[$id]+x}" ]; then
      if [ "$v" = blocked ]; then
        ok "docker probe: $id blocked"
      else
        skip "docker probe: $id is $v ($(evidence "$out" "$id")): known gap: ${DOCKER_GAPS[$id]}"
      fi
    elif [ "$v" != blocked ]; then
      unexpected+="$id=$v ($(evidence "$out" "$id")); "
    fi
  done < <(verdicts "$out")
  is "docker probe: every probe outside the known gaps is blocked" "$unexpected" ""
  nb=$(verdicts "$out" | grep -vc ' blocked$')
  if [ "$nb" = 0 ]; then is "docker probe: exit status 0 (all blocked)" "$rc" 0
  else is "docker probe: exit status 1 while $nb probes are not blocked" "$rc" 1; fi
  # host-side judgments stay honest: made on the host, after the run
  like "docker probe: res.linger judged on the host" "$(evidence "$out" res.linger)" "^host side: "
  like "docker probe: persist.host-files judged on the host" "$(evidence "$out" persist.host-files)" "^host side: "
  like "docker probe: the host canary on 127.0.0.1 is unreachable" "$(evidence "$out" net.canary-tcp)" "host side saw nothing"
  like "docker probe: proxy probes reach the proxy container (403)" "$(evidence "$out" net.proxy-ip-literal)" ": 403"
else
  fail "docker probe: --json parses (exit status $rc)"
  sed 's/^/#   /' "$T_TMP/dprobe.err" | head -20
fi

# ---- positive control: the same container without airlock's hardening ----
ctl=$T_TMP/dprobe-ctl.json
"${DPROBE[@]}" --docker-unhardened >"$ctl" 2>"$T_TMP/dprobe-ctl.err"
rc=$?
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$ctl" 2>/dev/null; then
  is "control: unhardened exits 1" "$rc" 1
  # Each of these is blocked above by a specific part of the hardening
  # (read-only root, CapDrop ALL, no-new-privileges, uid 1000, airlock's
  # seccomp profile) and must escape without it.
  # fs.mknod: under the daemon's userns-remap the kernel refuses device
  # nodes to container root whatever its capabilities, so it stays blocked.
  mk=fs.mknod
  [ -n "${DOCKER_USERNS:-}" ] && mk=
  for id in fs.write-root fs.write-etc fs.write-usr $mk fs.mountinfo net.raw-socket \
    net.packet-socket priv.caps priv.no-new-privs priv.setuid; do
    v=$(verdicts "$ctl" | awk -v i="$id" '$1 == i {print $2}')
    is "control: unhardened container, $id escapes ($(evidence "$ctl" "$id"))" "$v" escaped
    [ -f "$out" ] && is "control: $id is blocked when hardened" \
      "$(verdicts "$out" | awk -v i="$id" '$1 == i {print $2}')" blocked
  done
  # airlock's seccomp profile against Docker's default one: which calls the
  # default profile lets through depends on the engine's version (io_uring
  # is refused from Docker 25 on), so one of these must escape, not each.
  sc=""
  for id in priv.io-uring priv.x32 priv.i386 priv.ptrace priv.syscall-sweep; do
    v=$(verdicts "$ctl" | awk -v i="$id" '$1 == i {print $2}')
    [ "$v" = escaped ] && sc+="$id "
    [ -f "$out" ] && is "control: $id is blocked when hardened (airlock's seccomp profile)" \
      "$(verdicts "$out" | awk -v i="$id" '$1 == i {print $2}')" blocked
  done
  like "control: Docker's default seccomp profile lets a probe through that airlock's refuses" "$sc" "."
  diag "seccomp-dependent probes escaping in the control: ${sc:-none}"
else
  fail "control: unhardened --json parses (exit status $rc)"
  sed 's/^/#   /' "$T_TMP/dprobe-ctl.err" | head -20
fi

# ---- priv.syscall-new: the profile's default is ENOSYS ----
# airlock's profile is an allow-list of the calls the build's libseccomp
# names, default ERRNO(ENOSYS), so calls newer than the table answer ENOSYS
# as under the native filter. Docker's default profile answers ENOSYS for
# them too (runc's stub above its newest call), so the control is the
# same calls (the probe's numbers, the probe's arguments) in the agent image
# under seccomp=unconfined (this kernel has them) and under airlock's
# profile rebuilt in the old shape (default allow, the refusals only).
[ -f "$out" ] && is "docker probe: priv.syscall-new blocked (the profile's default is ENOSYS)" \
  "$(verdicts "$out" | awk '$1 == "priv.syscall-new" {print $2}')" blocked
"$AIRLOCK" render seccomp -o "$T_TMP/sc-new.json"
python3 -c 'import json,sys
p = json.load(open(sys.argv[1])); p["defaultAction"] = "SCMP_ACT_ALLOW"; p.pop("defaultErrnoRet")
p["syscalls"] = [e for e in p["syscalls"] if e["action"] != "SCMP_ACT_ALLOW"]
json.dump(p, open(sys.argv[2], "w"))' "$T_TMP/sc-new.json" "$T_TMP/sc-old.json"
newcalls() { # SECCOMP-OPT -> the calls 457..469 that did not answer ENOSYS
  "$DOCKER" run --rm --pull never --network none --user 1000:1000 --security-opt "seccomp=$1" \
    "$AGENT_IMAGE" python3 -c 'import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
for nr in range(457, 470):
    if libc.syscall(ctypes.c_long(nr), ctypes.c_long(-1), 0, 0, 0, 0, 0) >= 0 or ctypes.get_errno() != errno.ENOSYS:
        print(nr, end=" ")
print("END")' 2>&1
}
reach=$(newcalls unconfined)
if [ "$reach" = END ]; then
  skip "control: this kernel has none of syscalls 457-469 (every answer is ENOSYS unconfined)"
else
  like "control: unconfined, syscalls 457-469 reach the kernel ($reach)" "$reach" "^[0-9].* END$"
  like "control: the old profile shape (default allow) lets them reach it" \
    "$(newcalls "$T_TMP/sc-old.json")" "^[0-9].* END$"
fi
is "airlock's profile: every one of syscalls 457-469 answers ENOSYS" "$(newcalls "$T_TMP/sc-new.json")" END

# ---- nothing of either run is left ----
is "docker probe: no container left" "$("$DOCKER" ps -aq --filter label=airlock.run | sort)" "$before_c"
is "docker probe: no network left" "$("$DOCKER" network ls -q --filter label=airlock.run | sort)" "$before_n"
is "docker probe: no volume left" "$("$DOCKER" volume ls -q | sort)" "$before_v"
