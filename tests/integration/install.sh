#!/bin/bash
# Installed like a real tool (issue #18): `meson install --destdir` into a
# temporary directory, then every man page renders (`man -l`) and says what
# --help says, bash and zsh completion load, the broker example config says
# which lines to edit and starts once they are, and `airlock demo` runs
# from the installed tree (not the build tree).
. "$(dirname "$0")/lib.sh"
command -v meson >/dev/null || { skip "meson not installed"; done_testing; exit 0; }
D=$T_TMP/inst
# control for "no byte-code installed": a __pycache__ beside the agents, as
# running the demo from the tree leaves one
PYC=$AIRLOCK_SRC/examples/agents/__pycache__
[ -d "$PYC" ] || { mkdir -p "$PYC" && touch "$PYC/airlock-install-test.pyc" && on_exit rm -rf "$PYC"; }
meson install -C "$AIRLOCK_BUILD" --no-rebuild --destdir "$D" >"$T_TMP/install.log" 2>&1; rc=$?
is "meson install --destdir exits 0" "$rc" 0
[ $rc -eq 0 ] || { tail -20 "$T_TMP/install.log" | sed 's/^/#   /'; done_testing; exit 1; }
PREFIX=$(meson introspect "$AIRLOCK_BUILD" --buildoptions | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
R=$D$PREFIX
BIN=$R/bin/airlock
check "the binaries are installed" test -x "$BIN" -a -x "$R/bin/airlock-net"
check "the bundled agents are installed (and executable)" test -x "$R/share/airlock/agents/patch-agent" -a -x "$R/share/airlock/agents/hostile-agent"
check "the demo's sample project and fixture are installed" test -s "$R/share/airlock/demo/fixture.json" -a -d "$R/share/airlock/demo/project/.github"
check "the test forge is installed for the demo" test -x "$R/libexec/airlock/airlock-forge"
check "the systemd units are installed" test -s "$R/lib/systemd/system/airlock-broker.service" -a -s "$R/lib/systemd/system/airlock-broker.socket"
check "airlock serve's unit and example config are installed" test -s "$R/lib/systemd/system/airlock-serve.service" -a -s "$R/share/doc/airlock/examples/serve.yaml.example"
like "serve's unit runs the installed binary" "$(grep ^ExecStart= "$R/lib/systemd/system/airlock-serve.service")" "^ExecStart=$PREFIX/bin/airlock serve "
is "no Python byte-code is installed with the agents (one is in the tree)" "$(ls -d "$PYC" >/dev/null && find "$R" -name '__pycache__' -o -name '*.pyc' | wc -l)" 0
like "the service runs the installed binary" "$(grep ^ExecStart= "$R/lib/systemd/system/airlock-broker.service")" "^ExecStart=$PREFIX/bin/airlock broker "
check "the example policy and broker config are installed" test -s "$R/share/doc/airlock/examples/airlock.yaml" -a -s "$R/share/doc/airlock/examples/broker.yaml.example"

# --- man pages: one per command, from the same text as --help ---
cmds=$("$BIN" --help | sed -n '/^commands:/,/^$/p' | awk 'NF>1 && $1!="commands:" && $1!="help" && $1!="version" {print $1}')
# the first line of `airlock [CMD] --help` (plus $HELP_EXTRA) missing from the page text on stdin
HELP_CHECK='
import os, subprocess, sys
argv = [sys.argv[1]] + ([sys.argv[2]] if sys.argv[2] else []) + ["--help"]
help_text = subprocess.run(argv, capture_output=True, text=True).stdout + os.environ.get("HELP_EXTRA", "")
page = " ".join(sys.stdin.read().split())
for line in help_text.splitlines():
    l = " ".join(line.replace("usage: ", "").split())
    if l and l not in page:
        print(l)
        break
'
help_not_in_page() { python3 -c "$HELP_CHECK" "$BIN" "$1"; }
for page in airlock $(for c in $cmds; do echo "airlock-$c"; done); do
  f=$R/share/man/man1/$page.1
  if [ ! -s "$f" ]; then fail "man page $page(1) is installed"; continue; fi
  txt=$(MANWIDTH=300 man -l "$f" 2>"$T_TMP/man.err"); rc=$?
  if [ $rc -ne 0 ] || [ -s "$T_TMP/man.err" ]; then fail "man -l $page.1 renders without a warning"; sed 's/^/#   /' "$T_TMP/man.err" | head -5; continue; fi
  c=${page#airlock}; c=${c#-}
  # every line of --help is in the page (the page is made from it)
  missing=$(help_not_in_page "$c" <<<"$txt")
  is "man -l $page.1: renders, and holds every line of its --help" "$missing" ""
done
# every docs/X and examples/X a page names is installed where the page
# says (under share/doc/airlock), not only in a source tree the reader
# may not have
DOC=$R/share/doc/airlock
named=0; absent=""
for page in airlock $(for c in $cmds; do echo "airlock-$c"; done); do
  txt=$(MANWIDTH=300 man -l "$R/share/man/man1/$page.1" 2>/dev/null)
  for ref in $(grep -oE '(docs|examples)/[A-Za-z0-9._-]*[A-Za-z0-9]' <<<"$txt" | sort -u); do
    named=$((named + 1))
    [ -e "$DOC/$ref" ] || absent="$absent $page:$ref"
  done
done
like "control: the man pages name docs and examples" "$named" '^[1-9][0-9]+$'
# every share/doc/airlock path docs/install.md names is installed
dpaths=$(grep -oE 'share/doc/airlock/[A-Za-z0-9._/-]*[A-Za-z0-9]' "$AIRLOCK_SRC/docs/install.md" | sort -u)
like "control: docs/install.md names installed doc paths" "$(echo $dpaths)" 'examples/README\.broker\.md'
nodoc=""
for dp in $dpaths; do [ -e "$R/$dp" ] || nodoc="$nodoc $dp"; done
is "every share/doc/airlock path docs/install.md names is installed" "$nodoc" ""
# airlock(1)'s SEE ALSO names only pages that are installed (the exit
# status table's rows once read as commands: airlock-0(1), airlock-125(1))
see=$(MANWIDTH=2000 man -l "$R/share/man/man1/airlock.1" 2>/dev/null | sed -n '/^SEE ALSO/,$p' | grep -oE 'airlock-[a-z0-9-]+\(1\)' | tr -d '()' | sed 's/1$//')
like "control: airlock(1)'s SEE ALSO names the command pages" "$(echo $see)" 'airlock-ticket'
nopage=""
for pg in $see; do [ -s "$R/share/man/man1/$pg.1" ] || nopage="$nopage $pg"; done
is "every page airlock(1)'s SEE ALSO names is installed" "$nopage" ""
is "every docs/ and examples/ path a man page names is installed under share/doc/airlock" "$absent" ""
like "… and the pages say where that is" "$(MANWIDTH=300 man -l "$R/share/man/man1/airlock-policy.1" 2>/dev/null | tr -s ' \n' ' ')" \
  "paths this page names are under $PREFIX/share/doc/airlock"
missing=$(MANWIDTH=300 man -l "$R/share/man/man1/airlock-ticket.1" 2>/dev/null | HELP_EXTRA="a line no page has" help_not_in_page ticket)
is "control: the check notices a --help line that is not in the page" "$missing" "a line no page has"

# --- completion ---
out=$(PATH="$R/bin:$PATH" bash -c "source '$R/share/bash-completion/completions/airlock'; complete -p airlock" 2>&1)
is "bash completion loads" "$out" "complete -F _airlock airlock"
words() { PATH="$R/bin:$PATH" bash -c "source '$R/share/bash-completion/completions/airlock'; COMP_WORDS=($1); COMP_CWORD=\$((\${#COMP_WORDS[@]}-1)); _airlock; echo \"\${COMPREPLY[*]}\""; }
like "bash completes commands from airlock --help" "$(words 'airlock tic')" '^ticket$'
like "bash completes a command's options from its --help" "$(words 'airlock policy check --f')" '^--for --forge$'
is "control: an unknown prefix completes to nothing" "$(words 'airlock zzz')" ""
if command -v zsh >/dev/null; then
  out=$(PATH="$R/bin:$PATH" zsh -fc "fpath=('$R/share/zsh/site-functions' \$fpath); autoload -Uz compinit; compinit -u -d '$T_TMP/zcompdump'; print -r -- \${_comps[airlock]}" 2>&1)
  is "zsh completion loads (compinit maps airlock to _airlock)" "$out" "_airlock"
  check "zsh completion parses" zsh -n "$R/share/zsh/site-functions/_airlock"
else
  skip "zsh not installed"; skip "zsh not installed"
fi

# --- the broker's example config: which lines to edit, and then it works ---
EX=$R/share/doc/airlock/examples/broker.yaml.example
out=$("$R/bin/airlock-net" broker -c "$EX" --socket "$T_TMP/ex.sock" 2>&1); rc=$?
line=$(grep -oE 'broker.yaml.example:[0-9]+' <<<"$out" | head -1 | cut -d: -f2)
like "as shipped, the broker refuses it naming FILE:LINE" "$rc/$line" '^[12]/[0-9]+$'
like "… and that line is one marked EDIT (or the key systemd passes)" "$(sed -n "${line:-0}p" "$EX")" '# EDIT|private_key'
like "the example has an audit: section" "$(grep -c '^audit:' "$EX")" '^1$'
mkdir -p "$T_TMP/bx"; chmod 700 "$T_TMP/bx"
sh "$AIRLOCK_SRC/scripts/make-app-key.sh" "$T_TMP/bx/keys" app >/dev/null 2>&1
printf 'ghs_%s\n' 0123456789abcdef0123456789abcdef0123 >"$T_TMP/bx/audit.token"; chmod 600 "$T_TMP/bx/audit.token"
sed -e "s|private_key: .*|private_key: $T_TMP/bx/keys/app.pem|" -e "s|uids: \[airlock\]|uids: [$(id -u)]|" \
  -e "s|state_dir: .*|state_dir: $T_TMP/bx/state|" -e "s|token_file: /etc/airlock/audit.token|token_file: $T_TMP/bx/audit.token|" \
  -e "s|url: https://api.github.com|url: https://127.0.0.1:9|" "$EX" >"$T_TMP/bx/broker.yaml"
chmod 600 "$T_TMP/bx/broker.yaml"
"$R/bin/airlock-net" broker -c "$T_TMP/bx/broker.yaml" --socket "$T_TMP/bx/sock" >"$T_TMP/bx/log" 2>&1 &
BP=$!; on_exit "kill $BP"
for _ in $(seq 100); do [ -S "$T_TMP/bx/sock" ] && break; kill -0 $BP 2>/dev/null || break; sleep 0.05; done
if [ -S "$T_TMP/bx/sock" ]; then ok "with the EDIT lines filled in (and the key path), the example config starts a broker"; else fail "with the EDIT lines filled in, the example config starts a broker"; sed 's/^/#   /' "$T_TMP/bx/log" | head; fi
kill $BP 2>/dev/null; wait $BP 2>/dev/null

# --- the installed tree stands alone ---
printf 'version: 1\n' >"$T_TMP/min.yaml"
out=$(cd "$T_TMP" && "$BIN" ticket acme/tally#1 -p "$T_TMP/min.yaml" --record "$T_TMP/r.json" 2>&1)
if grep -q 'not installed\|patch-agent is not' <<<"$out"; then fail "an installed ticket without --agent finds the bundled agent"; diag "$out"; else ok "an installed ticket without --agent finds the bundled agent"; fi
like "… and goes on to check the policy" "$out" 'no credentials section'
sed 's|OWNER/REPO|acme/tally|g' "$R/share/doc/airlock/examples/airlock.yaml" >"$T_TMP/ex.yaml"
check "the installed example policy passes policy check --for ticket once OWNER/REPO are filled in" "$BIN" policy check --for ticket "$T_TMP/ex.yaml"
if [ -x "$R/libexec/airlock/airlock-forge" ] && [ "$(id -u)" = 0 ] || "$AIRLOCK" run -q -- true 2>/dev/null; then
  # hide the build and source trees: the installed demo must not need them
  out=$(cd "$T_TMP" && env -u AIRLOCK_SRC -u AIRLOCK_BUILD -u AIRLOCK_DATA_DIR -u AIRLOCK_LIBEXEC_DIR HOME="$T_TMP/home" "$BIN" demo 2>&1); rc=$?
  is "airlock demo from the installed tree exits 0" "$rc" 0
  [ $rc -eq 0 ] || sed 's/^/#   /' <<<"$out" | tail -20
  like "… and made its pull request" "$out" 'made +the pull request https://forge.test:[0-9]+/acme/tally/pull/[0-9]+'
  if grep -q "$AIRLOCK_BUILD\|$AIRLOCK_SRC" <<<"$out"; then fail "the installed demo used nothing of the build or source tree"; else ok "the installed demo used nothing of the build or source tree"; fi
else
  skip "no sandbox here for the demo"; skip "-"; skip "-"
fi
done_testing
