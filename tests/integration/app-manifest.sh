#!/bin/bash
# `airlock broker app-manifest` (issue 27, item 8): the GitHub App manifest
# of the run's App and of the audit App is valid JSON with exactly the
# permissions the broker mints: compared with the tokens a real lease from
# the broker gets on the test forge (and with the roles of a config), never
# a permission the broker refuses to grant; bad URLs and names are usage
# errors; the --html page carries the manifest escaped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
NET=$(dirname "$AIRLOCK")/airlock-net
[ -x "$NET" ] || { skip "airlock-net was not built"; done_testing; exit 0; }
cd "$T_TMP" || exit 1

"$AIRLOCK" broker app-manifest >run.json 2>err; rc=$?
is "app-manifest: exit 0" "$rc" 0
check "it is one JSON object with GitHub's manifest keys" python3 -c '
import json, sys
m = json.load(open("run.json"))
assert set(m) == {"name", "url", "description", "public", "default_permissions"}, sorted(m)
assert m["public"] is False and m["url"].startswith("https://") and 1 <= len(m["name"]) <= 34'
perms() { python3 -c 'import json,sys; print(",".join("%s:%s" % kv for kv in sorted(json.load(open(sys.argv[1]))["default_permissions"].items())))' "$1"; }
is "the run App's permissions: the broker's default roles and metadata read" "$(perms run.json)" "contents:write,issues:write,metadata:read,pull_requests:write"
NEVER='administration|workflows|actions|secrets|environments|repository_hooks|members|organization_'
if grep -qE "\"($NEVER)" run.json; then fail "no permission the broker never grants"; else ok "no permission the broker never grants"; fi
"$AIRLOCK" broker app-manifest --audit >audit.json 2>&1
is "the audit App's permissions: administration, contents and metadata read" "$(perms audit.json)" "administration:read,contents:read,metadata:read"
check "control: the never-granted check sees administration in the audit App's manifest" grep -qE "\"($NEVER)" audit.json
check "the audit App has no webhook and no events" python3 -c 'import json; m=json.load(open("audit.json")); assert "hook_attributes" not in m and "default_events" not in m, m'

"$AIRLOCK" broker app-manifest --name acme-airlock --webhook-url https://airlock.example.com/webhook --redirect-url http://localhost:8000/ >hook.json 2>&1
check "with --webhook-url: serve's events, the hook active, the redirect URL" python3 -c '
import json
m = json.load(open("hook.json"))
assert m["default_events"] == ["issues", "issue_comment"], m
assert m["hook_attributes"] == {"url": "https://airlock.example.com/webhook", "active": True}, m
assert m["redirect_url"] == "http://localhost:8000/" and m["name"] == "acme-airlock", m'

# bad input: COMMAND-LINE | what the message names
while IFS='|' read -r line want; do
  [ -n "$line" ] || continue
  eval "set -- $line"
  out=$("$AIRLOCK" broker app-manifest "$@" 2>&1 </dev/null); rc=$?
  like "app-manifest $line: exit 2, $want" "$rc/$(head -1 <<<"$out")" "^2/airlock broker: .*$want"
done <<'T'
--webhook-url http://hooks.example.com/|must be an https:// URL
--url 'https://a.example/"><script>'|no spaces, controls, quotes
--url ftp://x|must be an https:// URL
--name 'a-name-far-longer-than-thirty-four-chars'|1 to 34 printable ASCII
--audit --webhook-url https://h.example/|the audit App takes no webhooks
--html --org 'bad/org'|a GitHub login is
--org acme|--org goes with --html
T

"$AIRLOCK" broker app-manifest --html --org acme --name 'R&D <bot>' >page.html 2>&1
is "--html <name with < >: refused (no < or > in a name)" "$?" 2
"$AIRLOCK" broker app-manifest --html --org acme --name 'R&D bot' >page.html 2>&1
is "--html: exit 0" "$?" 0
like "the page posts to the organization's new-App form" "$(cat page.html)" '<form action="https://github.com/organizations/acme/settings/apps/new" method="post">'
like "the manifest's & is HTML-escaped" "$(cat page.html)" 'R&amp;D bot'
check "the textarea holds the manifest (HTML-unescaped, the same JSON)" python3 -c '
import html, json, re, subprocess, sys
page = open("page.html").read()
body = re.search(r"<textarea name=\"manifest\"[^>]*>(.*)</textarea>", page, re.S).group(1)
assert "<" not in body
m = json.loads(html.unescape(body))
want = json.loads(subprocess.run([sys.argv[1], "broker", "app-manifest", "--name", "R&D bot"], capture_output=True, check=True).stdout)
assert m == want, (m, want)' "$AIRLOCK"

# what a real lease gets from the broker on the test forge
if [ "$(id -u)" != 0 ]; then
  skip "the forge environment needs root"
elif [ ! -x "${AIRLOCK_FORGE:-}" ]; then
  skip "airlock-forge was not built"
elif ! forge_env_start; then
  fail "forge + broker environment"
else
  out=$("$AIRLOCK" token lease --repo acme/tally --socket "$FE_SOCK" </dev/null 2>&1); rc=$?
  is "a lease from the broker: exit 0" "$rc" 0
  leased=$(grep -oE '\{[a-z_:,]+\}' <<<"$out" | tr -d '{}' | tr ',' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')
  like "control: the lease names its tokens' permissions" "$leased" 'contents:write'
  is "the manifest asks for exactly what a lease's tokens hold" "$leased" "$(perms run.json)"
  "$AIRLOCK" broker app-manifest -c "$FE_DIR/secret/broker.yaml" >cfg.json 2>&1
  is "with -c: the config's roles" "$(perms cfg.json)" "$(perms run.json)"
  sed 's/git: {contents: write, pull_requests: write}/git: {contents: write}/' "$FE_DIR/secret/broker.yaml" >narrow.yaml
  "$AIRLOCK" broker app-manifest -c narrow.yaml >narrow.json 2>&1
  is "with -c and narrower roles: only those" "$(perms narrow.json)" "contents:write,issues:write,metadata:read"
fi
done_testing
