#!/bin/bash
# The host view's /etc when the host's /etc is hostile (attacker, session
# of the copy-instead-of-bind change, src/lib/sandbox/rootfs.c
# copy_small_file): a curated entry that is a symlink to a private file
# (absolute and relative), a private regular file (0600 root), a FIFO, a
# directory where a file is expected, an oversized file, a `shadow` beside
# them. The sandbox must start, copy nothing it should not, and show no
# secret byte; the positive control runs the same reader outside the
# sandbox and finds every secret.
#
# The hostile /etc is a bind mount over /etc in a private mount namespace
# of this test (unshare -m), so the host's /etc is never touched.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
  skip "needs root and unshare -m to put a hostile /etc in a private mount namespace"
  done_testing
fi

SECRET="airlock-etc-secret-$$-$RANDOM"
PRIV=$T_TMP/private
mkdir -p "$PRIV"
chmod 700 "$PRIV"
printf '%s\n' "$SECRET" >"$PRIV/secret"
chmod 600 "$PRIV/secret"

FAKE=$T_TMP/etc
mkdir -p "$FAKE"
# what programs need (the real curated entries), copied
for f in ld.so.cache ld.so.conf ld.so.conf.d ssl ca-certificates ca-certificates.conf \
  alternatives nsswitch.conf localtime services bash.bashrc profile python3; do
  [ -e "/etc/$f" ] && cp -a "/etc/$f" "$FAKE/$f"
done
ln -s "$PRIV/secret" "$FAKE/gitconfig"                    # absolute symlink to a private file
ln -s "../../../../../../..$PRIV/secret" "$FAKE/protocols" # relative, climbing
printf 'SECRET=%s\n' "$SECRET" >"$FAKE/environment"        # a private regular file
chmod 600 "$FAKE/environment"
mkfifo "$FAKE/inputrc"                                     # a FIFO: never opened, no hang
mkdir -p "$FAKE/login.defs"                                # a directory where a file is
printf 'x%.0s' $(seq 300000) >"$FAKE/mime.types"          # past the copy cap: bound
printf '%s\n' "$SECRET" >>"$FAKE/mime.types"
chmod 600 "$FAKE/mime.types"
printf 'root:%s:1:0:99999:7:::\n' "$SECRET" >"$FAKE/shadow" # not curated at all
chmod 644 "$FAKE/shadow"

# The reader: every secret it finds under /etc, one line each.
READER='for f in /etc/gitconfig /etc/protocols /etc/environment /etc/mime.types /etc/shadow; do
  if grep -qs "'"$SECRET"'" "$f" </dev/null; then echo "found $f"; fi
done
if grep -rqs --devices=skip "'"$SECRET"'" /etc; then echo "found (grep -r /etc)"; fi
echo reader-done'

in_ns() { # CMD...: run with the hostile /etc over /etc
  unshare -m --propagation private sh -c 'mount --bind "$0" /etc && exec "$@"' "$FAKE" "$@"
}

out=$(in_ns timeout 20 sh -c "$READER" 2>&1)
for f in gitconfig protocols environment mime.types shadow; do
  like "control: outside the sandbox the reader finds the secret through the hostile /etc/$f" \
    "$out" "found /etc/$f"
done

w=$(in_ns sh -c '(printf x >>/etc/services) 2>/dev/null && echo "services writable"')
is "control: outside the sandbox that /etc is writable" "$w" "services writable"

out=$(in_ns timeout 30 "$AIRLOCK" run -q -- sh -c "$READER"'
  ls -la /etc/gitconfig /etc/protocols 2>&1 | sed "s/^/ls: /"
  [ -e /etc/shadow ] && echo "shadow present"
  (printf x >>/etc/hosts) 2>/dev/null && echo "hosts writable"
  (printf x >>/etc/services) 2>/dev/null && echo "services writable"
  echo ok-started' 2>&1)
rc=$?
[ $rc = 0 ] || diag "$out"
is "the sandbox starts with a hostile /etc (FIFO, directory, symlinks, 0600 files)" "$rc" 0
like "the sandbox ran the reader to the end" "$out" 'ok-started'
if printf '%s' "$out" | grep -q found; then
  fail "no secret of the hostile /etc is readable inside"
  diag "$out"
else
  ok "no secret of the hostile /etc is readable inside"
fi
check_not "no shadow inside" grep -q 'shadow present' <<<"$out"
check_not "the copied /etc files are not writable" grep -q 'writable' <<<"$out"
like "a host symlink stays a symlink (it dangles inside, nothing is copied through it)" \
  "$out" "ls: l.* /etc/gitconfig -> $PRIV/secret"

# The probe's own verdict on this /etc.
in_ns timeout 60 "$AIRLOCK" probe --json >"$T_TMP/probe.json" 2>"$T_TMP/probe.err"
v=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(r["verdict"] + ":" + r["evidence"] for r in d["results"] if r["id"] == "fs.etc-curated"))
' "$T_TMP/probe.json" 2>&1)
like "fs.etc-curated is blocked with the hostile /etc" "$v" '^blocked:'

done_testing
