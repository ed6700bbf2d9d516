#!/bin/bash
# The command-line conventions (src/cli/cli.h, docs/cli.md) as one table over
# every command `airlock --help` lists: messages start with `airlock CMD: `,
# usage errors exit 2 with the usage line and write nothing, --help and
# `airlock help CMD` agree, extra operands and bad numbers or names are
# refused, argv echoes are escaped. Plus the rows of issue #18's "Why" that
# are about the command line.
. "$(dirname "$0")/lib.sh"
cd "$T_TMP" || exit 1
# every command the top-level help lists (serve and later ones included)
cmds=$("$AIRLOCK" --help | sed -n '/^commands:/,/^$/p' | awk 'NF>1 && $1!="commands:" && $1!="help" && $1!="version" {print $1}')
like "control: the top-level help lists the commands" "$(echo $cmds)" '^demo ticket run policy'

for c in $cmds; do
  out=$("$AIRLOCK" "$c" --bogus-option 2>"$T_TMP/err"); rc=$?
  err=$(cat "$T_TMP/err")
  is "$c --bogus-option: exit 2" "$rc" 2
  like "$c --bogus-option: \`airlock $c: \` names the option" "$(head -1 <<<"$err")" "^airlock $c: unknown option \`--bogus-option\`"
  like "$c --bogus-option: the usage line follows" "$err" "usage: airlock $c"
  if grep -q 'unrecognized option\|invalid option\|^airlock-net' <<<"$err"; then fail "$c: no message of getopt's own"; else ok "$c: no message of getopt's own"; fi
  is "$c --bogus-option: nothing on stdout" "$out" ""
  help=$("$AIRLOCK" "$c" --help 2>&1); rc=$?
  like "$c --help: exit 0, usage first" "$rc/$(head -1 <<<"$help")" "^0/usage: airlock $c"
  is "airlock help $c is $c --help" "$("$AIRLOCK" help "$c" 2>&1)" "$help"
done
# the built-ins (issue #27 item 3 of the nits: `airlock help version` was refused)
for c in version help; do
  out=$("$AIRLOCK" help $c 2>&1); rc=$?
  like "airlock help $c: exit 0, usage first" "$rc/$(head -1 <<<"$out")" "^0/usage: airlock $c"
done
is "airlock version --help is airlock help version" "$("$AIRLOCK" version --help 2>&1)" "$("$AIRLOCK" help version 2>&1)"
"$AIRLOCK" help nosuchcommand >/dev/null 2>&1; rc=$?
is "control: airlock help of an unknown command is still a usage error" "$rc" 2
is "none of the usage errors wrote a file" "$(ls -A "$T_TMP" | grep -v '^err$')" ""

# usage errors print the same kind of usage lines for every command (the
# shared cli.c): the message, the usage lines only (no option descriptions,
# also for a help text without a blank line after them), the `Try` line
for c in $cmds; do
  "$AIRLOCK" "$c" --bogus-option >/dev/null 2>"$T_TMP/err"
  body=$(sed '1d;$d' "$T_TMP/err")
  bad=$(grep -vE "^(usage: airlock $c|    )" <<<"$body" | head -1)
  is "$c --bogus-option: only usage lines between the message and the Try line" "$bad" ""
  like "$c --bogus-option: ends with the Try line" "$(tail -1 "$T_TMP/err")" "^Try \`airlock help $c\` for more\.$"
done
out=$("$AIRLOCK" audit bad 2>&1 </dev/null); rc=$?
like "audit bad: a usage error with the usage lines (exit 2)" "$rc/$(tr '\n' ' ' <<<"$out")" '^2/airlock audit: repository `bad`: a repository is OWNER/REPO.* usage: airlock audit OWNER/REPO .*Try `airlock help audit` for more\. $'
rm -f "$T_TMP/err"

# the one command table: every command and subcommand is in the top-level
# help and in the completion, and answers --help
table=$("$AIRLOCK" help --complete); rc=$?
is "airlock help --complete: exit 0" "$rc" 0
is "help --complete lists the commands --help lists, then help and version" "$(cut -d' ' -f1 <<<"$table" | tr '\n' ' ')" "$(echo $cmds) help version "
BASH_COMPLETION=$AIRLOCK_SRC/contrib/completion/airlock.bash
words() { PATH="$(dirname "$AIRLOCK"):$PATH" bash -c "source '$BASH_COMPLETION'; COMP_WORDS=($1); COMP_CWORD=\$((\${#COMP_WORDS[@]}-1)); _airlock; echo \"\${COMPREPLY[*]}\""; }
top=$(words "airlock ''")
helptext=$("$AIRLOCK" --help)
while read -r c subs; do
  like "bash completes the command $c" "$top" "(^| )$c( |$)"
  [ -n "$subs" ] || continue
  line=$(grep -E "^  $c " <<<"$helptext")
  comp=$(words "airlock $c ''")
  for sub in $subs; do
    like "airlock --help names $c $sub" "$line" "[ |:]$sub( |\||$)"
    like "bash completes $c $sub" "$comp" "(^| )$sub( |$)"
    out=$("$AIRLOCK" "$c" "$sub" --help 2>&1); rc=$?
    like "airlock $c $sub --help: exit 0, its usage lines name it" "$rc/$(tr '\n' ' ' <<<"$out")" "^0/usage: .*airlock $c $sub"
  done
done <<<"$table"
like "bash completes policy init (issue 27)" "$(words "airlock policy i")" '^init$'
like "bash completes render cluster (issue 27)" "$(words "airlock render cl")" '^cluster$'
is "control: a command without subcommands completes files, not words of the table" "$(cd "$T_TMP" && mkdir -p cdir && words "airlock runs c")" "cdir"
rmdir "$T_TMP/cdir"

# extra operands: COMMAND-LINE (after `airlock`) | what the message names
printf 'version: 1\n' >pol.yaml
while IFS='|' read -r line want; do
  [ -n "$line" ] || continue
  eval "set -- $line"
  out=$("$AIRLOCK" "$@" 2>&1 </dev/null); rc=$?
  like "airlock $line: exit 2, $want" "$rc/$out" "^2/airlock [a-z]+: .*$want"
done <<'T'
demo extra junk|unexpected argument `extra`
ticket acme/tally#1 -p pol.yaml extra|unexpected argument `extra`
policy check pol.yaml extra|unexpected argument `extra`
policy default extra|unexpected argument `extra`
proxy -p pol.yaml --listen 127.0.0.1:0 extra|unexpected argument `extra`
relay extra|unexpected argument `extra`
broker -c pol.yaml extra|unexpected argument `extra`
probe extra|unexpected argument `extra`
token lease --repo a/b extra|unexpected argument `extra`
audit acme/tally extra|unexpected argument `extra`
render compose -p pol.yaml extra|unexpected argument `extra`
proxy -p pol.yaml --listen 127.0.0.1:0 --max-conns -5|--max-conns `-5`: must be a decimal number from 1 to
proxy -p pol.yaml --listen 127.0.0.1:0 --max-conns 0x10|--max-conns `0x10`: must be a decimal number
proxy -p pol.yaml --listen bogus|--listen `bogus`: expected ADDR:PORT
proxy -p pol.yaml --listen 127.1:3128|--listen `127.1:3128`: an ambiguous IPv4 spelling; write `127.0.0.1:3128`
proxy -p pol.yaml --listen 127.0.0.1:99999|--listen `127.0.0.1:99999`
render kubernetes -p pol.yaml --namespace 'Bad_NS!'|--namespace `Bad_NS!`: must be a DNS-1123 label
render kubernetes -p pol.yaml --namespace -x|--namespace `-x`: must be a DNS-1123 label
relay --listen-fd x|--listen-fd `x`: must be a decimal number
relay|which relay configuration\? \(-p POLICY or --config-json JSON\)
relay -p pol.yaml|where to listen\? \(--listen ADDR:PORT or --listen-fd N\)
relay -p pol.yaml --listen 127.0.0.1:0|--listen `127.0.0.1:0`: port 0 \(any free port\) is refused here
audit acme/tally --app-id 0x10|--app-id `0x10`
ticket acme/tally#1 -p|option `-p` needs a value
run --policy|option `--policy` needs a value
ticket acme/tally#1 --timeout 0|--timeout `0`
run|no command given
ticket acme/tally#1|a ticket run needs a policy: -p FILE
T
out=$("$AIRLOCK" proxy -p pol.yaml --listen bogus 2>&1)
if grep -q 'Invalid argument' <<<"$out"; then fail "proxy --listen bogus: no stray strerror"; else ok "proxy --listen bogus: no stray strerror"; fi
out=$("$AIRLOCK" render kubernetes -p pol.yaml --namespace good-ns 2>/dev/null); rc=$?
is "control: a DNS-1123 namespace is accepted" "$rc" 0
like "… and used" "$out" 'namespace: "good-ns"'

# ticket without -p: exit 2, no run record
out=$(HOME=$T_TMP/home "$AIRLOCK" ticket acme/tally#1 --agent /usr/bin/true --record "$T_TMP/rec.json" 2>&1); rc=$?
is "ticket without -p exits 2" "$rc" 2
[ -e "$T_TMP/rec.json" ] || [ -d "$T_TMP/home/.local/state/airlock" ] && fail "ticket without -p writes no run record" || ok "ticket without -p writes no run record"
out=$("$AIRLOCK" demo --bogus 2>&1); rc=$?
like "demo --bogus: refused (exit 2)" "$rc/$out" '^2/airlock demo: unknown option `--bogus`'
like "… with the usage" "$out" '^usage: airlock demo \[--hostile\]'

# render compose without -o writes nothing; with -o it writes the profile
mkdir -p "$T_TMP/rc" && cd "$T_TMP/rc"
out=$("$AIRLOCK" render compose -p ../pol.yaml 2>"$T_TMP/rc.err"); rc=$?
is "render compose without -o: exit 0" "$rc" 0
is "render compose without -o writes no file into the current directory" "$(ls -A)" ""
like "… and says how to write the profile it refers to" "$(cat "$T_TMP/rc.err")" 'airlock render seccomp -o .*airlock-seccomp.json'
like "… the Compose file is on stdout" "$out" 'services:'
# the hint leads where it says: following it writes the very file the Compose file refers to
hint=$(grep -oE 'airlock render seccomp -o [^`]+' "$T_TMP/rc.err" | head -1)
ref=$(grep -oE 'seccomp[:=][^"]*airlock-seccomp.json' <<<"$out" | head -1 | sed 's/^seccomp[:=]//')
like "control: the Compose file refers to a profile path" "$ref" 'airlock-seccomp.json$'
(eval "\"\$AIRLOCK\" ${hint#airlock }") 2>/dev/null
check "following the hint writes the profile the Compose file refers to" test -s "$ref"
rm -f "$ref"
"$AIRLOCK" render compose -p ../pol.yaml -o compose.yaml 2>/dev/null
check "control: with -o the profile is written beside it" test -s airlock-seccomp.json
cd "$T_TMP"

# version
v=$("$AIRLOCK" version); rc=$?
like "airlock version" "$rc/$v" '^0/airlock [0-9]+\.[0-9]+'
is "airlock --version says the same" "$("$AIRLOCK" --version)" "$v"
out=$("$AIRLOCK" version extra 2>&1); rc=$?
like "airlock version extra: exit 2" "$rc/$out" '^2/airlock version: unexpected argument `extra`'
out=$("$AIRLOCK" help nosuch 2>&1); rc=$?
like "airlock help nosuch: exit 2" "$rc/$out" '^2/airlock: unknown command `nosuch`'

# raw ESC bytes and bidi controls in argv are echoed escaped
for arg in $'--\033[2J\033]0;owned\007' $'\033[31mred' $'x\xe2\x80\xaey'; do
  for line in "run $arg" "proxy $arg" "render $arg" "policy check --for $arg pol.yaml" "$arg"; do
    out=$(eval "\"\$AIRLOCK\" $line" 2>&1 </dev/null)
    if printf '%s' "$out" | grep -q $'\033\|\007\|\xe2\x80\xae'; then fail "argv echo escaped: airlock $(printf %q "$line")"; diag "$(printf %q "$out")"; else ok "argv echo escaped: airlock $(printf %q "$line" | head -c 60)"; fi
  done
done
out=$("$AIRLOCK" policy check $'/nonexistent/\033[2Jx.yaml' 2>&1)
like "a file name in an error is escaped" "$out" '/nonexistent/\\x1b\[2Jx.yaml'

# run: without --log the proxy's decisions are counted, never mixed into the output
if "$AIRLOCK" run -q -- true 2>/dev/null; then
  printf 'version: 1\nnetwork:\n  allow:\n    - {host: web.test, port: 443}\n' >net.yaml
  probe='curl -s -m 5 https://evil.test/ >/dev/null 2>&1; curl -s -m 5 https://web.test/ >/dev/null 2>&1; echo CMD-OUTPUT'
  "$AIRLOCK" run -p net.yaml -- sh -c "$probe" >run.out 2>run.err; rc=$?
  is "run with a network: the command's status" "$rc" 0
  is "run: stdout is the command's only" "$(cat run.out)" "CMD-OUTPUT"
  if grep -q '"decision"' run.err; then fail "run: no proxy JSON line on stderr without --log"; else ok "run: no proxy JSON line on stderr without --log"; fi
  # evil.test is refused by the policy; web.test is allowed but does not
  # resolve (.test is reserved, and the machine may be offline): a failure
  like "run: one line counts the decisions, a refusal apart from a DNS failure" "$(cat run.err)" '^airlock run: 2 egress decision\(s\), 1 denied, 1 failed \(DNS, connect; the log writes a failure as decision deny with its reason, such as dns-failed\) \(--log FILE keeps them\)'
  "$AIRLOCK" run -q -p net.yaml -- sh -c "$probe" >run.out 2>run.err
  is "run -q: nothing from airlock on stderr" "$(cat run.err)" ""
  "$AIRLOCK" run -q -p net.yaml --log dec.jsonl -- sh -c "$probe" >/dev/null 2>&1
  like "control: --log keeps the decisions" "$(cat dec.jsonl)" '"decision":"deny"'
  # --log with a policy that has no network: said, not silently unwritten
  out=$("$AIRLOCK" run --log nonet.jsonl -- true 2>&1); rc=$?
  like "run --log without a network section: exit 0, and says the file is not written" "$rc/$out" \
    '^0/airlock run: warning: --log `nonet.jsonl`: the policy has no network section, so no egress proxy runs'
  check_not "… and writes no file" test -e nonet.jsonl
  check_not "control: with a network section no such warning" grep -q 'no network section' <<<"$("$AIRLOCK" run -p net.yaml --log dec2.jsonl -- true 2>&1)"
else
  skip "airlock run cannot make a sandbox here"; skip "-"; skip "-"; skip "-"; skip "-"; skip "-"
  skip "-"; skip "-"; skip "-"
fi
# --- one number rule (issue 27): no leading zero in any number, a plain
# option's, a duration's or a size's, on the command line or in a policy ---
while IFS='|' read -r line want; do
  [ -n "$line" ] || continue
  eval "set -- $line"
  out=$("$AIRLOCK" "$@" 2>&1 </dev/null); rc=$?
  like "airlock $line: exit 2, $want" "$rc/$out" "^2/airlock [a-z]+: .*$want"
done <<'T'
proxy -p pol.yaml --listen 127.0.0.1:0 --max-conns 010|--max-conns `010`: must be a decimal number
run --timeout 010s -- true|--timeout `010s`: .*no leading zero
run --timeout 1h05m -- true|--timeout `1h05m`: .*no leading zero
ticket acme/tally#1 -p pol.yaml --timeout 010s|--timeout `010s`: .*no leading zero
run --log-max 08MiB -- true|--log-max `08MiB`: .*no leading zero
render compose -p pol.yaml --replicas 02|--replicas `02`: must be a decimal number from 1 to 5
render compose -p pol.yaml --replicas +2|--replicas `\+2`: must be a decimal number from 1 to 5
T
printf 'version: 1\nprocess:\n  limits: {wall: 010m}\n' >lz.yaml
out=$("$AIRLOCK" policy check lz.yaml 2>&1); rc=$?
like "a policy duration with a leading zero is refused, with its line" "$rc/$out" '^1/.*lz.yaml:3:[0-9]+: .*no leading zero'
printf 'version: 1\nfilesystem:\n  tmp_size: 0512MiB\n' >lz2.yaml
out=$("$AIRLOCK" policy check lz2.yaml 2>&1); rc=$?
like "a policy size with a leading zero is refused, with its line" "$rc/$out" '^1/.*lz2.yaml:3:[0-9]+: .*no leading zero'
rm -f lz.yaml lz2.yaml
if "$AIRLOCK" run --timeout 10s -q -- true >/dev/null 2>&1; then
  ok "control: --timeout 10s is accepted"
  is "control: --timeout 0s is a number (0), refused only as a limit" "$("$AIRLOCK" run --timeout 0s -- true 2>&1 | grep -c 'leading zero')" 0
else
  skip "airlock run cannot make a sandbox here"; skip "-"
fi

# --- exit statuses (issue 27, docs/cli.md "Exit status") ---
# each command's --help (and so its man page's EXIT STATUS) says its own;
# serve's is not written yet
nostatus=""
for c in $cmds; do
  [ "$c" = serve ] && continue
  "$AIRLOCK" "$c" --help 2>/dev/null | grep -qiE '^(exit status|exit:)' || nostatus="$nostatus $c"
done
is "every command's --help states its exit status (serve aside)" "$nostatus" ""
# the table `airlock --help` (and airlock(1)) prints has every row of
# docs/cli.md's
rows=$(sed -n '/^## Exit status/,/^## /p' "$AIRLOCK_SRC/docs/cli.md" | grep -oE '^\| [0-9][0-9N+, ]* \|' | tr -d '|' | sed 's/^ *//; s/ *$//')
like "control: docs/cli.md's exit table has its rows" "$(echo $rows)" '^0 1 2 3 4 124 125 126, 127 128\+N$'
top=$("$AIRLOCK" --help)
nohelp=""
while read -r st; do grep -qF "  $st  " <<<"$top" || nohelp="$nohelp [$st]"; done <<<"$rows"
is "airlock --help's exit table has every row of docs/cli.md's" "$nohelp" ""
# a file named on the command line that cannot be read: a usage error (2)
"$AIRLOCK" broker -c "$T_TMP/nonexistent.yaml" >/dev/null 2>&1; rc=$?
is "broker -c MISSING: exit 2 (a file an option names cannot be read)" "$rc" 2
out=$("$AIRLOCK" broker app-manifest -c "$T_TMP/nonexistent.yaml" 2>&1); rc=$?
like "broker app-manifest -c MISSING: exit 2, the file named" "$rc/$out" "^2/airlock broker: open \`$T_TMP/nonexistent.yaml\`"
check "control: broker app-manifest without -c prints the manifest" "$AIRLOCK" broker app-manifest
"$AIRLOCK" serve -c "$T_TMP/nonexistent.yaml" >/dev/null 2>&1; rc=$?
is "serve -c MISSING: exit 2" "$rc" 2
"$AIRLOCK" run -p "$T_TMP/nonexistent.yaml" -- true >/dev/null 2>&1; rc=$?
is "run -p MISSING: exit 2" "$rc" 2
printf 'version: 1\nnetwork:\n  allow:\n    - {host: web.test, port: 443}\n' >"$T_TMP/lognet.yaml"
out=$("$AIRLOCK" run -p "$T_TMP/lognet.yaml" --log "$T_TMP/no-such-dir/dec.jsonl" -- true 2>&1); rc=$?
like "run --log FILE that cannot be opened: exit 2 (as with --backend docker), the file named" "$rc/$out" "^2/airlock run: --log \`$T_TMP/no-such-dir/dec.jsonl\`: No such file"
rm -f "$T_TMP/lognet.yaml"
# policy check: a FILE it cannot read is the command line's error (2), as
# every -p POLICY is; a FILE that reads but breaks a rule is invalid (1)
out=$("$AIRLOCK" policy check "$T_TMP/nonexistent.yaml" 2>&1); rc=$?
like "policy check MISSING: exit 2, the file named" "$rc/$out" "^2/airlock policy: open \`$T_TMP/nonexistent.yaml\`: No such file"
"$AIRLOCK" policy check --json "$T_TMP/nonexistent.yaml" >/dev/null 2>&1; rc=$?
is "policy check --json MISSING: exit 2 too" "$rc" 2
"$AIRLOCK" policy check "$T_TMP" >/dev/null 2>&1; rc=$?
is "policy check DIRECTORY: exit 2" "$rc" 2
printf 'version: 1\nbogus: 1\n' >"$T_TMP/bogus-key.yaml"
out=$("$AIRLOCK" policy check "$T_TMP/bogus-key.yaml" 2>&1); rc=$?
like "control: policy check of a file that breaks a rule: exit 1, its line" "$rc/$out" '^1/.*bogus-key.yaml:2:1: bogus: unknown key'
"$AIRLOCK" proxy -p "$T_TMP/nonexistent.yaml" --listen 127.0.0.1:0 >/dev/null 2>&1; rc=$?
is "proxy -p MISSING: exit 2" "$rc" 2
rm -f "$T_TMP/bogus-key.yaml"
# show: a RUN spelt as no id, prefix or path is a usage error (2); a
# well-formed one that names no record is "no such run" (1)
mkdir -p "$T_TMP/norecs"
out=$("$AIRLOCK" show --dir "$T_TMP/norecs" zz 2>&1); rc=$?
like "show zz: exit 2, naming the input and the rule" "$rc/$out" '^2/airlock show: run `zz`: expected a run id \(16 lower-case hex digits\)'
like "… with the usage line" "$out" 'usage: airlock show'
out=$("$AIRLOCK" show --dir "$T_TMP/norecs" 0000 2>&1); rc=$?
like "control: show 0000 (well-formed, no record): exit 1" "$rc/$out" '^1/airlock show: run `0000`: no record'
rmdir "$T_TMP/norecs"
# the top level: an unknown command or option is a short usage error, not
# the whole command list
for w in --bogus hlep xyzzy; do
  out=$("$AIRLOCK" $w 2>"$T_TMP/err"); rc=$?
  kind=command; [ "${w#-}" != "$w" ] && kind=option
  hint=""; [ "$w" = hlep ] && hint=" (did you mean \`help\`?)"
  is "airlock $w: exit 2" "$rc" 2
  is "airlock $w: nothing on stdout" "$out" ""
  is "airlock $w: the message${hint:+ with the nearest command}, the usage line, the Try line" "$(cat "$T_TMP/err")" \
    "airlock: unknown $kind \`$w\`$hint
usage: airlock COMMAND [ARGS...]
Try \`airlock help\` for the commands."
done
for t in "shwo show" "tiket ticket" "rnu run" "versoin version"; do
  set -- $t
  like "airlock $1: did you mean \`$2\`?" "$("$AIRLOCK" "$1" 2>&1 | head -1)" "^airlock: unknown command \`$1\` \(did you mean \`$2\`\?\)$"
done
check_not "control: a 2-letter word is no typo of gc (no hint)" grep -q 'did you mean' <<<"$("$AIRLOCK" xy 2>&1)"
rm -f "$T_TMP/err"
like "control: airlock without a command still lists the commands" "$("$AIRLOCK" 2>&1)" 'commands:'
# run --env: a name process.env_pass refuses as secret-like is said, by the
# same rule (policy/sensitive.h), before anything starts
out=$("$AIRLOCK" run -p "$T_TMP/nonexistent.yaml" --env GITHUB_TOKEN=x -- true 2>&1)
like "run --env GITHUB_TOKEN=x: warned by env_pass's rule" "$out" 'airlock run: warning: --env GITHUB_TOKEN looks like a secret \(\*TOKEN\*.*whatever runs in the sandbox holds its value'
like "… and told that --env NAME keeps the value off the command line" "$out" '--env NAME without `=VALUE` keeps the value off'
out=$(MY_API_KEY=1 "$AIRLOCK" run -p "$T_TMP/nonexistent.yaml" --env MY_API_KEY -- true 2>&1)
like "run --env MY_API_KEY (from the environment): warned" "$out" 'warning: --env MY_API_KEY looks like a secret'
check_not "… without the command-line advice" grep -q 'without `=VALUE`' <<<"$out"
printf 'version: 1\nprocess:\n  env_pass: [GITHUB_TOKEN]\n' >"$T_TMP/envpass.yaml"
out=$("$AIRLOCK" policy check "$T_TMP/envpass.yaml" 2>&1)
like "env_pass refuses the same name in the same words" "$out" '`GITHUB_TOKEN` looks like a secret \(\*TOKEN\*.*whatever runs in the sandbox holds its value'
rm -f "$T_TMP/envpass.yaml"
out=$("$AIRLOCK" run -p "$T_TMP/nonexistent.yaml" --env LANG=C -- true 2>&1)
check_not "control: run --env LANG=C: no warning" grep -q 'looks like a secret' <<<"$out"
# policy init --forge gitlab: the GitLab words, and whether a subgroup is taken
out=$("$AIRLOCK" policy init --forge gitlab group/sub/proj 2>&1); rc=$?
like "policy init --forge gitlab GROUP/SUB/PROJECT: exit 2, subgroups not accepted yet" "$rc/$(head -1 <<<"$out")" \
  '^2/airlock policy: `group/sub/proj`: expected GROUP/PROJECT, one group level: a project in a subgroup \(GROUP/SUB/PROJECT\) is not accepted yet'
check_not "… and no GitHub OWNER/REPO words" grep -q 'a repository is OWNER/REPO' <<<"$(head -1 <<<"$out")"
like "… and what takes one group level (docs/gitlab.md)" "$out" "credentials\.\*\.repo and the broker's repositories take one group level"
out=$("$AIRLOCK" policy init --forge gitlab 'a b/c' 2>&1); rc=$?
like "policy init --forge gitlab 'a b/c': GitLab's path rule" "$rc/$(head -1 <<<"$out")" '^2/.*expected GROUP/PROJECT: a GitLab project is a full path'
out=$("$AIRLOCK" policy init a/b/c 2>&1); rc=$?
like "policy init a/b/c (GitHub): OWNER/REPO's words, no character list that contradicts the rule" "$rc/$(head -1 <<<"$out")" '^2/.*expected OWNER/REPO: a repository is OWNER/REPO: one `/`'
# the broker cannot be reached: could not start the work (125)
out=$("$AIRLOCK" token lease --repo a/b --socket "$T_TMP/no-broker.sock" 2>&1 </dev/null); rc=$?
is "token lease without a broker: exit 125" "$rc" 125
like "… saying which socket" "$out" "connecting to the broker at \`$T_TMP/no-broker.sock\`"
like "… in the one message form (\`airlock token: \` then the message, no \`error: \`)" "$out" "^airlock token: connecting to the broker"
out=$("$AIRLOCK" audit a/b -c "$T_TMP/nonexistent.yaml" 2>&1 </dev/null); rc=$?
like "audit -c MISSING: exit 2, \`airlock audit: \` then the message" "$rc/$out" "^2/airlock audit: open \`$T_TMP/nonexistent.yaml\`"
# a ticket whose broker cannot be reached: a failed run (1, recorded), the
# broker named; nothing is said of an agent, which never started
mkdir -p "$T_TMP/nb" && chmod 700 "$T_TMP/nb"
"$AIRLOCK" policy init a/b | sed "s|broker: /run/airlock/broker.sock|broker: $T_TMP/nb/no-broker.sock|" >"$T_TMP/nb/pol.yaml"
like "control: the policy names the missing socket" "$(cat "$T_TMP/nb/pol.yaml")" "broker: $T_TMP/nb/no-broker.sock"
out=$(HOME=$T_TMP/nb "$AIRLOCK" ticket a/b#1 -p "$T_TMP/nb/pol.yaml" --agent /usr/bin/true \
  --record "$T_TMP/nb/rec.json" 2>&1 </dev/null); rc=$?
is "ticket without a broker: exit 1 (a failed run, as --help says)" "$rc" 1
like "… the broker's socket named" "$out" "no broker answers at \`$T_TMP/nb/no-broker.sock\`"
check_not "… and no line about what an agent held (none ran)" grep -q "the agent held" <<<"$out"
# a broker that cannot set itself up (its App key is missing): 125
mkdir -p "$T_TMP/bk" && chmod 700 "$T_TMP/bk"
cat >"$T_TMP/bk/broker.yaml" <<Y
app: {id: 1001, private_key: $T_TMP/bk/missing-key.pem}
api: {url: "https://127.0.0.1:9", retries: 1, timeout: 5s}
repositories: [a/b]
state_dir: $T_TMP/bk/state
Y
chmod 600 "$T_TMP/bk/broker.yaml"
out=$(timeout 30 "$AIRLOCK" broker -c "$T_TMP/bk/broker.yaml" --socket "$T_TMP/bk/b.sock" 2>&1); rc=$?
if grep -q 'missing-key.pem' <<<"$out"; then
  is "broker whose App key is missing: exit 125 (could not start)" "$rc" 125
else
  is "broker config for the key test is valid (fix the test's config)" "$rc/$out" "125/…missing-key.pem…"
fi
rm -rf "$T_TMP/bk"
done_testing
