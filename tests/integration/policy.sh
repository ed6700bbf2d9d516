#!/bin/bash
# Policy files: a valid file round-trips through its canonical form; invalid
# files are each rejected with the right FILE:LINE:COL and rule.
. "$(dirname "$0")/lib.sh"
P=$T_TMP

cat >"$P/good.yaml" <<'YAML'
version: 1
network:
  allow:
    - {host: API.GitHub.com., port: 443}
    - {host: github.com, port: 443}
    - {host: plain.test, port: 8080, tls: false}
    - {host: "*.example.org", port: 443}
  pin: [{host: plain.test, address: 127.0.0.1}]
  resolver: 127.0.0.1:5353
filesystem:
  root: host
  workspace_size: 2GiB
  tmp_size: 512MiB
process:
  user: 1000
  env_pass: [LANG, TERM]
  limits: {memory: 4GiB, pids: 512, wall: 60m, nofile: 4096, cpu: 1.5}
credentials:
  broker: /run/airlock/broker.sock
  git:     {repo: octo/demo, permissions: {contents: write, pull_requests: write}}
  ticket:  {repo: octo/demo, permissions: {issues: write}}
  ttl: 15m
review:
  branch_prefix: airlock/
YAML
out=$("$AIRLOCK" policy check "$P/good.yaml" 2>&1); rc=$?
is "valid policy accepted" "$rc" 0
canon=$(head -1 <<<"$out")
like "host canonicalized (lower-case, trailing dot removed)" "$canon" '"host":"api.github.com","port":443,"tls":true'
like "tls defaults to false on a non-443 port when given" "$canon" '"host":"plain.test","port":8080,"tls":false'
like "sizes in bytes" "$canon" '"workspace_size":2147483648'
like "durations in ms" "$canon" '"wall_ms":3600000'
like "cpu in milli-cores" "$canon" '"cpu_milli":1500'
sha=$(sed -n 's/^sha256: //p' <<<"$out")
like "sha256 printed" "$sha" '^[0-9a-f]{64}$'
# round trip: two spellings of one policy have one canonical form and hash
sed -e 's/API.GitHub.com./api.github.com/' -e 's/2GiB/2048MiB/' -e 's/60m/1h/' "$P/good.yaml" >"$P/good2.yaml"
sha2=$("$AIRLOCK" policy check "$P/good2.yaml" 2>&1 | sed -n 's/^sha256: //p')
is "two spellings of one policy have one canonical hash" "$sha2" "$sha"
python3 - "$P/good.yaml" "$P/good4.yaml" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
i = next(k for k, l in enumerate(lines) if "API.GitHub.com" in l)
lines[i], lines[i + 1] = lines[i + 1], lines[i]
open(sys.argv[2], "w").write("\n".join(lines))
PY
sha4=$("$AIRLOCK" policy check "$P/good4.yaml" 2>&1 | sed -n 's/^sha256: //p')
is "the allowlist's order does not change the hash" "$sha4" "$sha"
sed -e 's/pids: 512/pids: 513/' "$P/good.yaml" >"$P/good3.yaml"
sha3=$("$AIRLOCK" policy check "$P/good3.yaml" 2>&1 | sed -n 's/^sha256: //p')
[ "$sha3" != "$sha" ] && ok "a different policy has a different hash" || fail "a different policy has a different hash"
out=$("$AIRLOCK" policy default 2>&1)
like "the default policy has no network" "$out" '"network":"none"'

# bad NAME LINE:COL REGEX  (YAML text on stdin)
bad() {
  local name=$1 pos=$2 re=$3
  cat >"$P/$name.yaml"
  local out; out=$("$AIRLOCK" policy check "$P/$name.yaml" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$name.yaml:$pos: .*$re" <<<"$out"; then ok "rejected: $name ($out)"
  else fail "rejected: $name at $pos with /$re/"; diag "rc=$rc $out"; fi
}
bad unknown-top 2:1 'unknown key' <<'Y'
version: 1
netwrk: {}
Y
bad unknown-nested 3:3 'network.alow: unknown key' <<'Y'
version: 1
network:
  alow: []
Y
bad bad-version 1:10 'only version 1' <<'Y'
version: 2
Y
bad port-zero 4:36 'between 1 and 65535' <<'Y'
version: 1
network:
  allow:
    - {host: api.github.com, port: 0}
Y
bad port-leading-zero 3:40 'no leading zero' <<'Y'
version: 1
network:
  allow: [{host: api.github.com, port: 0443}]
Y
bad port-missing 3:12 'network.allow\[0\].port: required \(an allow entry needs `port`' <<'Y'
version: 1
network:
  allow: [{host: api.github.com}]
Y
bad wildcard-tld 3:19 'at least two labels' <<'Y'
version: 1
network:
  allow: [{host: "*.com", port: 443}]
Y
bad star 3:19 'wildcard is written' <<'Y'
version: 1
network:
  allow: [{host: "*", port: 443}]
Y
bad host-userinfo 3:19 'not a valid host' <<'Y'
version: 1
network:
  allow: [{host: "evil.example@github.com", port: 443}]
Y
bad size-unit 3:19 'unknown size unit' <<'Y'
version: 1
filesystem:
  workspace_size: 2GB0
Y
bad size-lowercase 3:19 'unknown size unit .*K, M, G, T for powers of 1024.*case matters' <<'Y'
version: 1
filesystem:
  workspace_size: 2g
Y
bad size-fraction 3:19 'a size is a whole number: no fraction' <<'Y'
version: 1
filesystem:
  workspace_size: 1.5GiB
Y
bad duration-unit 4:11 'needs a unit' <<'Y'
version: 1
process:
  limits:
    wall: 60
Y
bad user-root 3:9 'between 1 and 65533' <<'Y'
version: 1
process:
  user: 0
Y
bad env-name 3:14 'not a variable name' <<'Y'
version: 1
process:
  env_pass: [BAD-NAME]
Y
bad env-reserved 3:14 'set by airlock' <<'Y'
version: 1
process:
  env_pass: [HTTPS_PROXY]
Y
bad never-admin 4:31 'never granted' <<'Y'
version: 1
credentials:
  git:
    {repo: o/r, permissions: {administration: write}}
Y
bad perm-level 3:44 'must be `read` or `write`' <<'Y'
version: 1
credentials:
  git: {repo: o/r, permissions: {contents: admin}}
Y
bad repo-shape 3:16 'must be OWNER/REPO' <<'Y'
version: 1
credentials:
  git: {repo: "o/r/x", permissions: {contents: read}}
Y
bad relative-root 3:9 'absolute path' <<'Y'
version: 1
filesystem:
  root: rootfs
Y
bad ro-dotdot 3:14 'normalized' <<'Y'
version: 1
filesystem:
  ro_paths: [/usr/../etc]
Y
bad alias 2:1 'anchors and aliases' <<'Y'
version: 1
filesystem: &a {}
process: *a
Y
bad anchor-only 2:11 'anchors and aliases' <<'Y'
version: 1
process: {env_pass: &e [LANG]}
Y
bad quoted-port 3:33 'not a quoted string' <<'Y'
version: 1
network:
  allow: [{host: a.test, port: "443"}]
Y
bad loopback-literal 3:18 'loopback address, which the proxy never dials' <<'Y'
version: 1
network:
  allow: [{host: 127.0.0.1, port: 80}]
Y
bad network-off 2:10 'must be `none` or a mapping' <<'Y'
version: 1
network: off
Y
bad ttl-range 4:8 'between 1m and 1h' <<'Y'
version: 1
credentials:
  broker: /run/b.sock
  ttl: 5h
Y
bad cred-mode 4:9 'must be `sealed` \(the tokens stay outside the sandbox\) or `env`' <<'Y'
version: 1
credentials:
  broker: /run/b.sock
  mode: tunnel
Y
bad agent-comments 4:19 'between 0 and 100' <<'Y'
version: 1
credentials:
  broker: /run/b.sock
  agent_comments: 101
Y
bad agent-comments-sign 4:19 'whole number in decimal' <<'Y'
version: 1
credentials:
  broker: /run/b.sock
  agent_comments: -1
Y
out=$(printf 'version: 1\ncredentials:\n  mode: env\n  agent_comments: 2\n' >"$P/envc.yaml"; "$AIRLOCK" policy check "$P/envc.yaml" 2>&1); rc=$?
like "agent_comments with mode: env is refused (the gateway would count nothing)" "$rc $out" '^1 .*credentials.agent_comments: only with `mode: sealed`'
out=$(printf 'version: 1\ncredentials:\n  mode: sealed\n  agent_comments: 2\n' >"$P/sc.yaml"; "$AIRLOCK" policy check "$P/sc.yaml" 2>&1)
like "credentials.mode and agent_comments are in the canonical form" "$out" '"agent_comments":2,.*"mode":"sealed"'
out=$(printf 'version: 1\ncredentials:\n  mode: env\n' >"$P/e.yaml"; "$AIRLOCK" policy check "$P/e.yaml" 2>&1)
like "mode: env is accepted and canonical" "$out" '"agent_comments":0,.*"mode":"env"'
bad bool 3:41 'true or false' <<'Y'
version: 1
network:
  allow: [{host: a.test, port: 80, tls: yes}]
Y
bad resolver 3:13 'numeric ADDR:PORT' <<'Y'
version: 1
network:
  resolver: dns.google:53
Y
bad branch-prefix 3:18 'ending in `/`' <<'Y'
version: 1
review:
  branch_prefix: main
Y
bad not-yaml 1:10 'not valid YAML' <<'Y'
version: 1
 - : [
Y
bad duplicate-key 2:1 'duplicate key' <<'Y'
version: 1
version: 1
Y
printf 'version: 1\n---\nversion: 1\nnetwork: {allow: [{host: evil.example, port: 443}]}\n' >"$P/multi.yaml"
out=$("$AIRLOCK" policy check "$P/multi.yaml" 2>&1)
like "a second YAML document is refused, not ignored" "$out" 'more than one YAML document'
out=$("$AIRLOCK" policy init OWNER/REPO 2>&1); rc=$?
like "policy init OWNER/REPO (the docs' placeholder, typed as is): a usage error naming it" "$rc/$out" '^2/.*`OWNER/REPO` is the docs. placeholder: give the repository'
check "control: policy init with a real repository passes" "$AIRLOCK" policy init acme/tally
printf 'version: 1\nnetwork: none\n' >"$P/none.yaml"
check "network: none is accepted" "$AIRLOCK" policy check "$P/none.yaml"
: >"$P/empty.yaml"
out=$("$AIRLOCK" policy check "$P/empty.yaml" 2>&1)
like "empty file rejected" "$out" 'empty policy'
out=$("$AIRLOCK" policy check "$P/missing.yaml" 2>&1)
like "missing file named with errno" "$out" 'missing.yaml.*No such file'
out=$("$AIRLOCK" run -p "$P/port-zero.yaml" -- true 2>&1); rc=$?
is "airlock run refuses an invalid policy with status 2" "$rc" 2
# relay.key: broker (the model key from the broker lease) xor relay.key_file
cat >"$P/rkey-broker.yaml" <<'Y'
version: 1
relay:
  upstream: https://api.anthropic.com
  key: broker
Y
out=$("$AIRLOCK" policy check "$P/rkey-broker.yaml" 2>&1); rc=$?
is "relay.key: broker accepted" "$rc" 0
like "relay.key: broker in the canonical form" "$out" '"key":"broker"'
cat >"$P/rkey-both.yaml" <<'Y'
version: 1
relay:
  upstream: https://api.anthropic.com
  key: broker
  key_file: /etc/airlock/model.key
Y
out=$("$AIRLOCK" policy check "$P/rkey-both.yaml" 2>&1); rc=$?
is "relay.key: broker with relay.key_file: rejected" "$rc" 1
like "both keys: the message says they are exclusive" "$out" 'rkey-both.yaml:2: relay: `key_file` and `key: broker` are exclusive'
printf 'version: 1\nrelay:\n  upstream: https://api.anthropic.com\n' >"$P/rkey-none.yaml"
out=$("$AIRLOCK" policy check "$P/rkey-none.yaml" 2>&1)
like "relay without a key source: rejected" "$out" 'rkey-none.yaml:2: relay.key_file: required .*, or `key: broker`'
printf 'version: 1\nrelay:\n  upstream: https://api.anthropic.com\n  key: file\n' >"$P/rkey-file.yaml"
out=$("$AIRLOCK" policy check "$P/rkey-file.yaml" 2>&1)
like "relay.key other than broker: rejected at its position" "$out" 'rkey-file.yaml:4:[0-9]+: relay.key: must be `broker`'
out=$("$AIRLOCK" run -p "$P/rkey-broker.yaml" -- true 2>&1); rc=$?
is "airlock run refuses relay.key: broker (setup failure)" "$rc" 125
like "airlock run says only airlock ticket leases the key" "$out" 'relay.key: broker.*only `airlock ticket`'
# --- issue #18, row 4: `policy check` and `ticket` agree; every error has a line ---
cat >"$P/nogit.yaml" <<'Y'
version: 1
network:
  allow:
    - {host: api.github.com, port: 443}
credentials:
  git: {repo: acme/tally, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: acme/tally, permissions: {issues: write}}
Y
out=$("$AIRLOCK" policy check "$P/nogit.yaml" 2>&1); rc=$?
is "control: without --for the schema-valid policy passes" "$rc" 0
out=$("$AIRLOCK" policy check --for ticket "$P/nogit.yaml" 2>&1); rc=$?
is "policy check --for ticket fails a policy that ticket refuses" "$rc" 1
like "… with ticket's words: forge.git_url's host:port is not in network.allow" "$out" "forge.git_url's host:port is not in network.allow"
like "… and says how to fix it" "$out" 'add `\{host: github.com, port: 443\}`'
like "… and what a ticket needs" "$out" 'ticket needs a network section'
tout=$("$AIRLOCK" ticket acme/tally#1 -p "$P/nogit.yaml" --agent /usr/bin/true --record "$P/nogit-rec.json" 2>&1)
like "airlock ticket refuses it with the same words" "$tout" "forge.git_url's host:port is not in network.allow \(with tls\): add"
sed 's/api.github.com, port: 443}/api.github.com, port: 443}\n    - {host: github.com, port: 443}/' "$P/nogit.yaml" >"$P/withgit.yaml"
check "control: with github.com allowed, --for ticket passes" "$AIRLOCK" policy check --for ticket "$P/withgit.yaml"
out=$("$AIRLOCK" policy check --for ticket --repo acme/other "$P/withgit.yaml" 2>&1); rc=$?
like "--for ticket --repo: credentials naming another repository fail" "$rc/$out" '^1/.*credentials.git.repo \(acme/tally\) is not the ticket.s repository \(acme/other\)'
printf 'version: 1\nnetwork:\n  allow:\n    - {host: a.test, port: 443}\n  pin:\n    - {host: b.test, address: 127.0.0.1}\n' >"$P/pin-unused.yaml"
out=$("$AIRLOCK" policy check "$P/pin-unused.yaml" 2>&1)
like "pinned but not in network.allow has a line number" "$out" 'pin-unused.yaml:6: network.pin: `b.test` is pinned but not in network.allow'
printf '\n\nversion: 1\nfoo: \xff\n' >"$P/badutf8.yaml"
like "invalid UTF-8 has a line number" "$("$AIRLOCK" policy check "$P/badutf8.yaml" 2>&1)" 'badutf8.yaml:4: not valid UTF-8'
printf 'network: {}\n' >"$P/nover.yaml"
like "a missing version has a line number" "$("$AIRLOCK" policy check "$P/nover.yaml" 2>&1)" 'nover.yaml:1:1: version: required'
# ambiguous IPv4 spellings: refused with the canonical form
for spec in '011.1.1.1|9.1.1.1|11.1.1.1' '010.8.8.8|8.8.8.8|' '0x8.8.8.8|8.8.8.8|' '8.526344|8.8.8.8|' '134744072|8.8.8.8|'; do
  IFS='|' read -r ip canon alt <<<"$spec"
  printf 'version: 1\nnetwork:\n  allow:\n    - {host: "%s", port: 443}\n' "$ip" >"$P/amb.yaml"
  out=$("$AIRLOCK" policy check "$P/amb.yaml" 2>&1); rc=$?
  like "ambiguous IPv4 \`$ip\` refused at its line, canonical \`$canon\` suggested" "$rc/$out" "^1/.*amb.yaml:4:[0-9]+: .*ambiguous IPv4 spelling.*write the dotted quad \`$canon\`"
  [ -n "$alt" ] && like "… and the decimal reading \`$alt\` too" "$out" "or \`$alt\` if that is what you meant"
done
printf 'version: 1\nnetwork:\n  allow:\n    - {host: "0300.0250.1.1", port: 443}\n' >"$P/amb-private.yaml"
like "an ambiguous spelling of a private address: refused with the advice that works (a name and a pin)" "$("$AIRLOCK" policy check "$P/amb-private.yaml" 2>&1)" 'amb-private.yaml:4:[0-9]+: .*private address.*network.pin'
like "an ambiguous spelling of loopback (127.1) too" "$(printf 'version: 1\nnetwork:\n  allow:\n    - {host: "127.1", port: 443}\n' | "$AIRLOCK" policy check - 2>&1)" 'loopback address'
# the advice leads where it says: the suggested spelling is accepted
sugg=$(grep -oE 'write the dotted quad `[0-9.]+`' <<<"$out" | grep -oE '[0-9.]+')
printf 'version: 1\nnetwork:\n  allow:\n    - {host: "%s", port: 443}\n' "$sugg" >"$P/amb-fixed.yaml"
check "the suggested dotted quad ($sugg) is accepted" "$AIRLOCK" policy check "$P/amb-fixed.yaml"
printf 'version: 1\nfilesystem: {}\nforge:\n  api_url: https://0x7f.1\n' >"$P/amb-url.yaml"
like "an ambiguous IPv4 in forge.api_url is refused too" "$("$AIRLOCK" policy check "$P/amb-url.yaml" 2>&1)" 'amb-url.yaml:4:[0-9]+: forge.api_url: .*ambiguous'
printf 'version: 1\nnetwork:\n  allow:\n    - {host: 9.9.9.9, port: 443}\n' >"$P/plainip.yaml"
out=$("$AIRLOCK" policy check "$P/plainip.yaml" 2>&1); rc=$?
is "control: a plain dotted quad is accepted" "$rc" 0
like "… with a warning: a public IP literal" "$out" 'warning: .*plainip.yaml:4:[0-9]+: .*public IP literal'
printf 'version: 1\nnetwork:\n  allow:\n    - {host: a.test, port: 443, tls: false}\n    - {host: b.test, port: 8080, tls: false}\n' >"$P/tls443.yaml"
out=$("$AIRLOCK" policy check "$P/tls443.yaml" 2>&1); rc=$?
is "tls: false on 443 is accepted" "$rc" 0
like "… with a warning at its line" "$out" 'warning: .*tls443.yaml:4:[0-9]+: .*`tls: false` on port 443'
if grep -q 'tls443.yaml:5' <<<"$out"; then fail "control: tls: false on 8080 gives no warning"; else ok "control: tls: false on 8080 gives no warning"; fi

# --- row 5: scriptable ---
out=$("$AIRLOCK" policy check --json "$P/tls443.yaml"); rc=$?
is "--json exits 0 for a valid policy" "$rc" 0
like "--json prints one JSON document (sha256, policy, warnings inside)" "$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["ok"], len(d["sha256"]), d["policy"]["version"], len(d["warnings"]))' <<<"$out" 2>&1)" '^True 64 1 1$'
out=$("$AIRLOCK" policy check --json --for ticket "$P/nogit.yaml"); rc=$?
like "--json --for ticket: ok false, the error and what a ticket needs" "$rc/$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["ok"], d["purpose"], "not in network.allow" in d["error"], bool(d["needs"]))' <<<"$out" 2>&1)" '^1/False ticket True True$'
out=$("$AIRLOCK" policy check --help 2>&1); rc=$?
like "policy check --help prints help (exit 0), not `cannot open --help`" "$rc/$out" '^0/usage: airlock policy check'
out=$("$AIRLOCK" policy check - <"$P/good.yaml" 2>&1); rc=$?
like "- means standard input" "$rc/$(sed -n 's/^sha256: //p' <<<"$out")" "^0/$sha$"
like "… named <stdin> in messages" "$(printf 'version: 2\n' | "$AIRLOCK" policy check - 2>&1)" '^airlock policy: <stdin>:1:10: '
# raw ESC bytes in a policy are shown escaped in the error
printf 'version: 1\nnetwork:\n  allow:\n    - {host: "evil\033]0;pwned\007", port: 443}\n' >"$P/esc.yaml"
out=$("$AIRLOCK" policy check "$P/esc.yaml" 2>&1)
if printf '%s' "$out" | grep -q $'\033\|\007'; then fail "no raw ESC/BEL byte of a policy reaches the terminal"; else ok "no raw ESC/BEL byte of a policy reaches the terminal"; fi
like "… it is shown escaped" "$out" 'evil\\x1b\]0;pwned\\x07'
printf 'version: 1\nreview:\n  branch_prefix: "a\xe2\x80\xaeb/"\n' >"$P/bidi.yaml"
out=$("$AIRLOCK" policy check "$P/bidi.yaml" 2>&1)
if printf '%s' "$out" | grep -q $'\xe2\x80\xae'; then fail "no raw U+202E from a policy reaches the terminal"; else ok "no raw U+202E from a policy reaches the terminal"; fi

# --- policy init and examples/airlock.yaml ---
out=$("$AIRLOCK" policy init octo/widgets); rc=$?
is "policy init OWNER/REPO exits 0" "$rc" 0
printf '%s\n' "$out" >"$P/init.yaml"
check "… and its output passes policy check --for ticket --repo" "$AIRLOCK" policy check --for ticket --repo octo/widgets "$P/init.yaml"
like "… names the repository in both roles" "$(grep -c 'repo: octo/widgets' "$P/init.yaml")" '^2$'
# --for render says what `airlock render` would refuse: a sealed policy
# (render cannot keep the gateway) unless it is env mode
out=$("$AIRLOCK" policy check --for render "$P/init.yaml" 2>&1); rc=$?
like "policy check --for render refuses a sealed policy, as render does" "$rc/$out" '^1/.*credentials.mode is sealed .* `airlock render` cannot keep'
out=$("$AIRLOCK" render compose -p "$P/init.yaml" 2>&1); rc=$?
like "control: airlock render compose refuses the same policy" "$rc/$out" 'credentials.mode is sealed'
sed 's/^\(  *\)mode: sealed/\1mode: env/' "$P/init.yaml" >"$P/init-env.yaml"
check "control: the same policy in env mode passes --for render" "$AIRLOCK" policy check --for render "$P/init-env.yaml"
sed 's|OWNER/REPO|acme/tally|g' "$AIRLOCK_SRC/examples/airlock.yaml" >"$P/example.yaml"
check "examples/airlock.yaml with OWNER/REPO filled in passes policy check --for ticket" "$AIRLOCK" policy check --for ticket --repo acme/tally "$P/example.yaml"
printf 'version: 1\nnetwork:\n  allow: []\nnetwork:\n  allow: []\n' >"$P/dupkey.yaml"
out=$("$AIRLOCK" policy check --for ticket "$P/dupkey.yaml" 2>&1); rc=$?
like "a file that does not parse: the parse error, with its line" "$rc/$out" '^1/.*dupkey.yaml:[0-9]+:[0-9]+: .*duplicate'
is "  and not what a ticket needs (the file never got that far)" "$(grep -c 'ticket needs' <<<"$out")" 0
out=$("$AIRLOCK" policy check --for ticket "$AIRLOCK_SRC/examples/airlock.yaml" 2>&1); rc=$?
is "examples/airlock.yaml as shipped (OWNER/REPO) fails policy check --for ticket" "$rc" 1
like "  it names the placeholder and the fix" "$out" 'credentials.git.repo is still the placeholder OWNER/REPO: write the repository'
check_not "control: examples/airlock.yaml is checked against the repo (another repo fails)" "$AIRLOCK" policy check --for ticket --repo acme/other "$P/example.yaml"
check_not "policy init refuses a malformed repository" "$AIRLOCK" policy init 'not a repo'
out=$("$AIRLOCK" policy init a/b extra 2>&1); rc=$?
like "policy init refuses extra operands (exit 2)" "$rc/$out" '^2/airlock policy: unexpected argument `extra`'
# --forge gitlab (issue #30): examples/airlock-gitlab.yaml for GROUP/PROJECT
out=$("$AIRLOCK" policy init --forge gitlab acme/tally); rc=$?
is "policy init --forge gitlab GROUP/PROJECT exits 0" "$rc" 0
printf '%s\n' "$out" >"$P/init-gl.yaml"
check "… and its output is a valid policy" "$AIRLOCK" policy check "$P/init-gl.yaml"
# check --for ticket says what `airlock ticket` would refuse: a GitLab
# ticket runs now (issue #30), so the starter passes it for its project
check "… and policy check --for ticket passes it for its project" "$AIRLOCK" policy check --for ticket --repo acme/tally "$P/init-gl.yaml"
gout=$("$AIRLOCK" policy check --for ticket --repo acme/other "$P/init-gl.yaml" 2>&1); rc=$?
like "control: … another project fails" "$rc/$gout" '^1/.*credentials.git.repo \(acme/tally\) is not the ticket'"'"'s repository \(acme/other\)'
{ cat "$P/init-gl.yaml"; printf 'ticket: {kind: jira, url: "https://acme.atlassian.net", project: PROJ, user: bot@acme.example, token_file: /nonexistent}\n'; } >"$P/init-gl-jira.yaml"
gout=$("$AIRLOCK" policy check --for ticket --repo acme/tally "$P/init-gl-jira.yaml" 2>&1); rc=$?
like "… a Jira ticket on a GitLab project is refused as not built" "$rc/$gout" '^1/.*forge.kind gitlab with a Jira or Linear .ticket:.: not built yet'
is "… forge.kind gitlab, api_url /api/v4" "$("$AIRLOCK" policy check "$P/init-gl.yaml" 2>/dev/null | head -1 | jq -r '.forge | "\(.kind) \(.api_url)"')" "gitlab https://gitlab.com/api/v4"
like "… names the project in both roles" "$(grep -c 'repo: acme/tally' "$P/init-gl.yaml")" '^2$'
check_not "… and no longer says a GitLab ticket does not run" grep -q 'NOT RUNNABLE YET' "$P/init-gl.yaml"
is "control: policy init without --forge is GitHub's" "$("$AIRLOCK" policy init acme/tally | "$AIRLOCK" policy check - 2>/dev/null | head -1 | jq -r .forge.kind)" github
out=$("$AIRLOCK" policy init --forge gitlab GROUP/PROJECT 2>&1); rc=$?
like "policy init --forge gitlab refuses the docs' placeholder (exit 2)" "$rc/$out" "^2/.*GROUP/PROJECT. is the docs' placeholder"
out=$("$AIRLOCK" policy init --forge bitbucket a/b 2>&1); rc=$?
like "policy init --forge refuses an unknown forge (exit 2)" "$rc/$out" '^2/airlock policy: --forge: github or gitlab'
done_testing
