#!/bin/bash
# The record before the output (issue #26 item 7): with the run-record
# directory missing and uncreatable, read-only, or full, the run opens no
# pull request, exits 1, leaves no token alive, and says why. Read-only and
# full are tiny tmpfs mounts in a private mount namespace of this test
# (unshare -m), unique per run, gone with it. Control: the same run with a
# writable directory opens its PR (the probe sees a PR when one is made).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "record tests need root (the forge's data dir, the sandbox, mounts)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
npulls() { admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
npushes() { admin /pushes | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
ntokens() { admin /tokens | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("tokens",d) if isinstance(d,dict) else d; print(len(d))'; }

# run_case LABEL RECORD [SETUP]: airlock ticket with --record RECORD; SETUP
# (shell, run first in the same private mount namespace) makes the place
run_case() {
  local l=$1 r=$2 setup=${3:-true}
  p0=$(npulls); k0=$(ntokens); s0=$(npushes)
  unshare -m --propagation private env AIRLOCK="$AIRLOCK" POL="$FE_POLICY" AG="$FE_PUSH_AGENT" \
    REC="$r" SETUP="$setup" sh -c 'eval "$SETUP" || { echo "SETUP FAILED"; exit 99; }
      exec "$AIRLOCK" ticket acme/tally#1 -p "$POL" --agent "$AG" --record "$REC"' >"$T_TMP/out-$l.txt" 2>&1
  echo $? >"$T_TMP/rc-$l"
}

# --- control: a writable directory (missing, created) ---
run_case control "$T_TMP/new/dir/rec.json"
is "control: the run exits 0" "$(cat "$T_TMP/rc-control")" 0
is "control: it opened one PR (the check below sees a PR when one is made)" "$(( $(npulls) - p0 ))" 1
check "control: the record is written and validates" validate_record "$T_TMP/new/dir/rec.json"
# The supervisor's forge requests per phase (issue #33): every phase that ran
# has a count, the total is their sum, and the outputs phase (which opens the
# PR through the supervisor's own client) counted at least one.
reqs=$(python3 -c 'import json,sys
r=json.load(open(sys.argv[1])); q=r["requests"]; f=q["forge"]
names={p["name"] for p in r["phases"]}
print("missing:"+",".join(sorted(names-set(f))) if names-set(f) else "ok",
      "sum" if q["total"]==sum(f.values()) else "nosum", "outputs>0" if f.get("outputs",0)>0 else "outputs=0")' \
  "$T_TMP/new/dir/rec.json" 2>&1)
is "control: requests: every phase counted, total is the sum, outputs counted its PR" "$reqs" "ok sum outputs>0"

# --- missing and uncreatable: its parent is a regular file ---
: >"$T_TMP/afile"
run_case missing "$T_TMP/afile/runs/rec.json"
out=$(cat "$T_TMP/out-missing.txt")
is "missing: the run exits 1" "$(cat "$T_TMP/rc-missing")" 1
is "missing: no PR was opened" "$(( $(npulls) - p0 ))" 0
is "missing: no token was minted (checked before the lease)" "$(( $(ntokens) - k0 ))" 0
is "missing: the agent pushed nothing (it did not run)" "$(( $(npushes) - s0 ))" 0
like "missing: the message names the record and why" "$out" "run record .*afile/runs/rec.json.*(Not a directory|cannot be created)"
like "missing: ... and that no pull request is opened without it" "$out" "no pull request is opened"

# --- read-only and full: tmpfs in this test's private mount namespace ---
M=$T_TMP/mnt
mkdir -p "$M"
if ! unshare -m --propagation private sh -c "mount -t tmpfs -o size=64k tmpfs '$M' && umount '$M'" 2>/dev/null; then
  skip "read-only and full record directories: cannot mount a tmpfs in a private mount namespace here"
else
  run_case ro "$M/runs/rec.json" "mount -t tmpfs -o size=1m,mode=0755 tmpfs '$M' && mkdir '$M/runs' && mount -o remount,ro '$M'"
  out=$(cat "$T_TMP/out-ro.txt")
  is "read-only: the run exits 1" "$(cat "$T_TMP/rc-ro")" 1
  is "read-only: no PR was opened" "$(( $(npulls) - p0 ))" 0
  is "read-only: no token was minted" "$(( $(ntokens) - k0 ))" 0
  like "read-only: the message says why" "$out" "run record .*rec.json.*Read-only file system"

  run_case full "$M/runs/rec.json" "mount -t tmpfs -o size=32k,mode=0755 tmpfs '$M' && mkdir '$M/runs' && { dd if=/dev/zero of='$M/fill' bs=4k 2>/dev/null; true; }"
  out=$(cat "$T_TMP/out-full.txt")
  is "full: the run exits 1" "$(cat "$T_TMP/rc-full")" 1
  is "full: no PR was opened" "$(( $(npulls) - p0 ))" 0
  is "full: no token was minted" "$(( $(ntokens) - k0 ))" 0
  like "full: the message says why" "$out" "run record .*No space left on device"
fi
grep -h "SETUP FAILED" "$T_TMP"/out-*.txt >/dev/null && fail "a case's setup failed"
is "no token is active after the runs" "$(tokens_in active)" 0
done_testing
