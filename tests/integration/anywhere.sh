#!/bin/bash
# Works from anywhere (issue #27 item 1): airlock installed under a
# directory of mode 0700 (root's home is one) runs the sandbox, the probe,
# a command bound by ro_paths and the README's first command, `airlock
# demo`. The sandbox's uid cannot traverse that directory, so the
# supervisor opens airlock's binaries, the agent and every ro_path and
# hands them in (sandbox/hostpaths.c). Control: the same files are
# unreadable to an unprivileged uid, so the test would fail without that.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { skip "needs root (a 0700 directory the sandbox's uid cannot traverse)"; done_testing; exit 0; }
command -v meson >/dev/null || { skip "meson not installed"; done_testing; exit 0; }
ensure_test_user
# Not under /tmp: it is HOME below (as /root is), and the sandbox's own
# /tmp would shadow a home there (fs.write-home would write to the tmpfs).
LOCKED=$(mktemp -d /var/tmp/airlock-anywhere.XXXXXX)
on_exit "rm -rf '$LOCKED'"
chmod 0700 "$LOCKED"
D=$LOCKED/inst
meson install -C "$AIRLOCK_BUILD" --no-rebuild --destdir "$D" >"$T_TMP/install.log" 2>&1; rc=$?
is "meson install --destdir under a 0700 directory exits 0" "$rc" 0
[ $rc -eq 0 ] || { tail -20 "$T_TMP/install.log" | sed 's/^/#   /'; done_testing; exit 1; }
PREFIX=$(meson introspect "$AIRLOCK_BUILD" --buildoptions | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
R=$D$PREFIX
BIN=$R/bin/airlock
# the installed tree alone: nothing from the build or source tree
# HOME is the 0700 directory, as root's is for a checkout in /root
noenv=(env -u AIRLOCK_SRC -u AIRLOCK_BUILD -u AIRLOCK_DATA_DIR -u AIRLOCK_LIBEXEC_DIR HOME="$LOCKED")

# control: the premise. An unprivileged uid (as the sandbox's is) cannot
# reach the installed binary or the agent.
check_not "control: an unprivileged uid cannot read the binary under the 0700 directory" \
  setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r "$BIN"
check_not "control: nor the bundled agent" \
  setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r "$R/share/airlock/agents/patch-agent"

# a plain command bound by ro_paths from the 0700 directory
mkdir -p "$LOCKED/tools"
cp "$SBCHECK" "$LOCKED/tools/sbcheck"
echo "hello from a 0700 directory" >"$LOCKED/tools/note.txt"
cat >"$T_TMP/ro.yaml" <<YAML
version: 1
filesystem:
  ro_paths: [$LOCKED/tools]
YAML
out=$(cd "$T_TMP" && "${noenv[@]}" "$BIN" run -q -p "$T_TMP/ro.yaml" -- /bin/cat "$LOCKED/tools/note.txt" 2>&1); rc=$?
is "airlock run: a file under a ro_path in a 0700 directory is readable inside (rc)" "$rc" 0
is "airlock run: ... and holds what the host file holds" "$out" "hello from a 0700 directory"
out=$(cd "$T_TMP" && "${noenv[@]}" "$BIN" run -q -p "$T_TMP/ro.yaml" -- "$LOCKED/tools/sbcheck" read "$LOCKED/tools/note.txt" 2>&1); rc=$?
is "airlock run: a program under a ro_path in a 0700 directory runs and reads beside it" "$out" "ESCAPED: $LOCKED/tools/note.txt"
out=$(cd "$T_TMP" && "${noenv[@]}" "$BIN" run -q -p "$T_TMP/ro.yaml" -- "$LOCKED/tools/sbcheck" write "$LOCKED/tools/new" 2>&1); rc=$?
like "airlock run: the bound 0700 directory stays read-only" "$out" "^blocked: $LOCKED/tools/new: EROFS"
check_not "airlock run: ... and nothing was written on the host" test -e "$LOCKED/tools/new"

# the probe: airlock's own binary runs inside its sandbox
out=$(cd "$T_TMP" && "${noenv[@]}" "$BIN" probe 2>&1); rc=$?
# (exit 0 is not asked: a probe this machine cannot decide, e.g. priv.i386
# without IA-32 emulation, makes it 1; probe.sh judges the catalogue)
like "airlock probe from a 0700 directory: the catalogue ran inside, nothing escaped" "$out" '^[0-9]+ probes: [0-9]+ blocked, 0 escaped'
[ $rc -le 1 ] || diag "$(tail -5 <<<"$out")"
like "airlock probe from a 0700 directory: the filesystem probes blocked" "$(grep '^fs\.' <<<"$out" | awk '{print $3}' | sort -u | tr '\n' ' ')" '^blocked $'

# the README's first command
if [ -x "$R/libexec/airlock/airlock-forge" ]; then
  mkdir -p "$T_TMP/dtmp"
  out=$(cd "$T_TMP" && "${noenv[@]}" TMPDIR="$T_TMP/dtmp" "$BIN" demo 2>&1); rc=$?
  is "airlock demo from a 0700 directory exits 0" "$rc" 0
  [ $rc -eq 0 ] || sed 's/^/#   /' <<<"$out" | tail -30
  like "airlock demo from a 0700 directory made a pull request" "$out" 'made +the pull request https://forge.test:[0-9]+/acme/tally/pull/[0-9]+'
  is "airlock demo from a 0700 directory: nothing failed to hold" "$(grep -c 'Something did not hold' <<<"$out")" 0
  # an agent that truly cannot be used is refused before any token exists
  printf '#!/bin/sh\nexit 0\n' >"$LOCKED/tools/noexec-agent"
  chmod 0644 "$LOCKED/tools/noexec-agent"
  for bad in "$LOCKED/tools:is not a regular file" "$LOCKED/tools/noexec-agent:is not executable; chmod \+x"; do
    agent=${bad%%:*} want=${bad#*:}
    out=$(cd "$T_TMP" && "${noenv[@]}" TMPDIR="$T_TMP/dtmp" "$BIN" demo --agent "$agent" 2>&1); rc=$?
    like "airlock demo --agent ${agent#"$LOCKED"/}: refused, saying what to change" "$out" "the agent \`$agent\` $want"
    is "airlock demo --agent ${agent#"$LOCKED"/}: ... before the audit and the lease" "$(grep -cE 'airlock ticket: (audit|lease|preflight) ' <<<"$out")" 0
  done
  # control: the same check passes the bundled agent (the demo above ran it)
else
  skip "airlock demo: the test forge was not built"
fi
done_testing
