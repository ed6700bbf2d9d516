#!/bin/bash
# Policies cannot open holes silently (issue 27 item 6): filesystem.ro_paths
# refuses a directory holding a Unix socket, /run, /var/run, home
# directories and credential stores; process.env_pass refuses secret-like
# names; each refusal names FILE:LINE and the rule. The overrides
# (filesystem.sensitive_ro_paths, process.secret_env) are accepted with a
# warning on every run, and the probe finds the socket when the override
# binds it (fs.ro-path-sockets escapes): the positive control that a bound
# socket is a real door. Without the override, nothing is bound.
. "$(dirname "$0")/lib.sh"
P=$T_TMP/p
mkdir -p "$P"

# a host service behind a Unix socket, in a directory of its own
SVC=$T_TMP/svc
mkdir -p "$SVC/sub"
echo "a tool" >"$SVC/tool.txt"
python3 - "$SVC/sub/service.sock" "$T_TMP/svc.log" >"$T_TMP/svc.ready" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(16)
print("up", flush=True)
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f: f.write("connected\n")
    c.close()
PY
SVC_PID=$!
on_exit "kill $SVC_PID"
for _ in $(seq 50); do [ -s "$T_TMP/svc.ready" ] && break; sleep 0.1; done
[ -S "$SVC/sub/service.sock" ] || { fail "the test's socket service started"; done_testing; exit 1; }

refused() { # NAME LINE REGEX <<YAML : policy check refuses it at NAME.yaml:LINE with REGEX
  local name=$1 line=$2 re=$3
  cat >"$P/$name.yaml"
  local out; out=$("$AIRLOCK" policy check "$P/$name.yaml" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$name.yaml:$line:[0-9]+: .*$re" <<<"$out"; then ok "refused: $name ($(head -c 300 <<<"$out"))"
  else fail "refused: $name at line $line with /$re/"; diag "rc=$rc $out"; fi
}

refused socket-dir 3 "holds the Unix socket $SVC/sub/service.sock .*sensitive_ro_paths" <<Y
version: 1
filesystem:
  ro_paths: [$SVC]
Y
refused socket-itself 4 "is a Unix socket" <<Y
version: 1
filesystem:
  ro_paths:
    - $SVC/sub/service.sock
Y
refused run 3 '`/run` is a sensitive tree \(runtime state and service sockets' <<'Y'
version: 1
filesystem:
  ro_paths: [/run]
Y
refused var-run 3 '`/var/run` is a sensitive tree' <<'Y'
version: 1
filesystem:
  ro_paths: [/var/run]
Y
refused under-run 3 '`/run/user` is under /run' <<'Y'
version: 1
filesystem:
  ro_paths: [/run/user]
Y
refused root-home 3 '`/root` is or holds the home directory' <<'Y'
version: 1
filesystem:
  ro_paths: [/root]
Y
refused home 3 '`/home` is or holds the home directory' <<'Y'
version: 1
filesystem:
  ro_paths: [/home]
Y
refused home-user 3 '`/home/alice` is a home directory' <<'Y'
version: 1
filesystem:
  ro_paths: [/home/alice]
Y
refused ssh 3 '`/home/alice/.ssh` is or holds /home/alice/.ssh' <<'Y'
version: 1
filesystem:
  ro_paths: [/home/alice/.ssh]
Y
refused kube 3 '`/root/.kube/config` is or holds /root/.kube' <<'Y'
version: 1
filesystem:
  ro_paths: [/root/.kube/config]
Y
refused docker-state 3 '`/var/lib/docker` is a sensitive tree \(the Docker engine' <<'Y'
version: 1
filesystem:
  ro_paths: [/var/lib/docker]
Y
refused etc 3 '`/etc/ssl` is under /etc' <<'Y'
version: 1
filesystem:
  ro_paths: [/etc/ssl]
Y
ln -s /run "$T_TMP/run-link"
refused symlink-to-run 3 "resolves to it" <<Y
version: 1
filesystem:
  ro_paths: [$T_TMP/run-link]
Y
refused token-env 3 '`GITHUB_TOKEN` looks like a secret .*process.secret_env' <<'Y'
version: 1
process:
  env_pass: [LANG, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY]
Y
refused aws-env 4 '`AWS_SECRET_ACCESS_KEY` looks like a secret' <<'Y'
version: 1
process:
  env_pass:
    - AWS_SECRET_ACCESS_KEY
Y
refused gh-env 3 '`GH_ENTERPRISE_TOKEN` looks like a secret' <<'Y'
version: 1
process:
  env_pass: [GH_ENTERPRISE_TOKEN]
Y
refused key-env 3 '`OPENAI_API_KEY` looks like a secret' <<'Y'
version: 1
process:
  env_pass: [OPENAI_API_KEY]
Y

# controls: what the tables do not name is accepted, silently
printf 'version: 1\nfilesystem:\n  ro_paths: [/root/airlock-no-such-project, /opt/airlock-tools]\nprocess:\n  env_pass: [LANG, TERM, GIT_AUTHOR_NAME, TZ]\n' >"$P/fine.yaml"
out=$("$AIRLOCK" policy check "$P/fine.yaml" 2>&1); rc=$?
is "control: a path inside a home, an ordinary path and ordinary names pass policy check" "$rc" 0
is "control: ... without a warning" "$(grep -c 'warning' <<<"$out")" 0
mkdir -p "$T_TMP/tools" && echo x >"$T_TMP/tools/a"
printf 'version: 1\nfilesystem:\n  ro_paths: [%s]\n' "$T_TMP/tools" >"$P/nosock.yaml"
check "control: a directory without a socket passes policy check" "$AIRLOCK" policy check "$P/nosock.yaml"

# the overrides: accepted, loud in policy check and on every run
cat >"$P/override.yaml" <<Y
version: 1
filesystem:
  sensitive_ro_paths: [$SVC]
process:
  secret_env: [HOLES_TEST_SECRET_TOKEN]
Y
chmod 644 "$P/override.yaml"
out=$("$AIRLOCK" policy check "$P/override.yaml" 2>&1); rc=$?
is "override: policy check accepts sensitive_ro_paths and secret_env" "$rc" 0
like "override: policy check warns of the bound socket directory, with its line" "$out" "override.yaml:3:[0-9]+: .*OVERRIDE: \`$SVC\` is bound read-only .*holds the Unix socket"
like "override: policy check warns of the passed secret, with its line" "$out" "override.yaml:5:[0-9]+: .*OVERRIDE: the host's \`HOLES_TEST_SECRET_TOKEN\` is passed"
out=$(HOLES_TEST_SECRET_TOKEN=s3cret-$$ "$AIRLOCK" run -q -p "$P/override.yaml" -- /bin/sh -c 'echo "env=$HOLES_TEST_SECRET_TOKEN"; cat '"$SVC/tool.txt" 2>"$T_TMP/run.err"); rc=$?
if [ $rc -eq 0 ]; then
  like "override: airlock run -q still warns of the bound socket directory" "$(cat "$T_TMP/run.err")" "warning: .*override.yaml:3:[0-9]+: .*OVERRIDE: \`$SVC\` is bound read-only"
  like "override: ... and of the passed secret" "$(cat "$T_TMP/run.err")" 'warning: .*override.yaml:5:[0-9]+: .*OVERRIDE: .*HOLES_TEST_SECRET_TOKEN'
  like "override: the secret_env value is inside (what the warning says)" "$out" "env=s3cret-$$"
  like "override: the sensitive_ro_paths directory is bound" "$out" 'a tool'
else
  fail "override: airlock run starts (rc=$rc)"; diag "$(cat "$T_TMP/run.err")"; skip "-"; skip "-"
fi
out=$(HOLES_TEST_SECRET_TOKEN=x "$AIRLOCK" run -q -p "$P/token-env.yaml" -- /bin/true 2>&1); rc=$?
is "a refused env_pass policy never starts a run (exit 2)" "$rc" 2

# the probe: with the override the bound socket answers (escape); the
# same directory without its socket, bound by ro_paths, is blocked
: >"$T_TMP/svc.log"
out=$(cd "$T_TMP" && "$AIRLOCK" probe -p "$P/override.yaml" --only filesystem 2>&1); rc=$?
line=$(grep '^fs.ro-path-sockets ' <<<"$out")
like "probe with the override: fs.ro-path-sockets escapes, connected to the bound socket" "$line" "escaped +connected to $SVC/sub/service.sock"
is "probe with the override: exit 1 (an escape)" "$rc" 1
like "probe with the override: the host service saw the connection" "$(cat "$T_TMP/svc.log")" 'connected'
out=$(cd "$T_TMP" && "$AIRLOCK" probe -p "$P/nosock.yaml" --only filesystem 2>&1)
like "control: probe with a socket-free ro_path: fs.ro-path-sockets blocked" "$(grep '^fs.ro-path-sockets ' <<<"$out")" 'blocked +no Unix socket under 1 ro_path'
out=$(cd "$T_TMP" && "$AIRLOCK" probe --unconfined --only filesystem 2>&1)
like "control: unconfined, fs.ro-path-sockets reaches the host's canary socket" "$(grep '^fs.ro-path-sockets ' <<<"$out")" 'escaped +connected to .*/canary.sock'
done_testing
