#!/usr/bin/env bash
# A GitLab run's forge, end to end below the sandbox (issue #30): the
# broker with `gitlab.token_file` (the Maintainer's credential, which only
# it reads) mints the lease's two project access tokens (Developer, expiring
# tomorrow), and the policy's `forge.kind: gitlab` picks the GitLab driver
# of the forge seam, which opens the one Draft MR with the leased git token.
# The lease's end revokes both with DELETE /projects/:id/access_tokens/:id
# and confirms the 401. Controls: the same tokens answer 200 before the
# release; the GitHub driver (forge.kind default) opens no MR on GitLab; a
# config or policy that breaks GitLab's rules is refused with its reason.
. "$(dirname "$0")/lib.sh"
FORGE=${GITLAB_FORGE:?GITLAB_FORGE is set by meson}
SEAM=${GITLAB_SEAM:?GITLAB_SEAM is set by meson}
EXEC=${BROKER_LEASE_EXEC:?}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for p in curl jq; do command -v $p >/dev/null || { skip "$p is not installed"; done_testing; exit 0; }; done

D=$T_TMP/glb
mkdir -p "$D"
umask 077
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"
"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token" \
  --ports-file "$D/ports.json" >"$D/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID"
for _ in $(seq 1 100); do [ -s "$D/ports.json" ] && break; kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
PORT=$(jq -r .http "$D/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the forge started"; sed 's/^/# /' "$D/forge.log"; done_testing; exit 1; }
API=http://127.0.0.1:$PORT/api/v4
maint() { printf 'PRIVATE-TOKEN: %s\n' "$(cat "$D/token")" >"$D/h"; curl -s -H @"$D/h" "$API$1"; }

# ---- the config's rules (each refused before the broker starts)
cat >"$D/both.yaml" <<EOF
app: {id: 1, private_key: $D/none.pem}
gitlab: {token_file: $D/token}
api: {url: "$API"}
repositories: [acme/other]
EOF
OUT=$("$AIRLOCK" broker -c "$D/both.yaml" --socket "$D/x.sock" 2>&1) && fail "app and gitlab together are refused" ||
  like "app and gitlab together are refused" "$OUT" "exactly one of \`app\`.*and \`gitlab\`"
cat >"$D/v3.yaml" <<EOF
gitlab: {token_file: $D/token}
api: {url: "http://127.0.0.1:$PORT/api/v3"}
repositories: [acme/other]
EOF
OUT=$("$AIRLOCK" broker -c "$D/v3.yaml" --socket "$D/x.sock" 2>&1) && fail "a GitLab api.url not ending in /api/v4 is refused" ||
  like "a GitLab api.url not ending in /api/v4 is refused" "$OUT" "must end in /api/v4"
cat >"$D/ghsub.yaml" <<EOF
app: {id: 1, private_key: $D/none.pem}
api: {url: "https://127.0.0.1:1"}
repositories: [acme/tools/tally]
EOF
OUT=$("$AIRLOCK" broker -c "$D/ghsub.yaml" --socket "$D/x.sock" 2>&1) && fail "a GitHub broker refuses a GitLab subgroup path" ||
  like "a GitHub broker refuses a GitLab subgroup path" "$OUT" "repositories: .acme/tools/tally.*only with .gitlab."
chmod 644 "$D/token"
cat >"$D/broker.yaml" <<EOF
gitlab: {token_file: $D/token}
api: {url: "$API", retries: 1, timeout: 5s}
repositories: [acme/other, acme/tools/tally]
state_dir: $D/state
EOF
OUT=$("$AIRLOCK" broker -c "$D/broker.yaml" --socket "$D/x.sock" 2>&1) && fail "a token file others can read is refused" ||
  like "a token file others can read is refused" "$OUT" "gitlab.token_file.*chmod 600"
chmod 600 "$D/token"

SOCK=$D/broker.sock
"$AIRLOCK" broker -c "$D/broker.yaml" --socket "$SOCK" >"$D/broker.log" 2>&1 &
BPID=$!
on_exit "kill $BPID"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; kill -0 $BPID 2>/dev/null || break; sleep 0.1; done
[ -S "$SOCK" ] || { fail "the GitLab broker starts"; sed 's/^/#   /' "$D/broker.log"; done_testing; exit 1; }
ok "the GitLab broker starts (control: the config above with the file at 0600)"

cat >"$D/gitlab.yaml" <<EOF
version: 1
forge: {kind: gitlab, api_url: "https://gitlab.test/api/v4", git_url: "https://gitlab.test"}
EOF
cat >"$D/github.yaml" <<EOF
version: 1
EOF

# ---- the run: lease, the seam's calls with the leased tokens, release
BR=airlock/1-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
OUT=$("$EXEC" "$SOCK" acme/other release "$SEAM" "$D/gitlab.yaml" "$API" acme/other 1 "$BR" 2>&1)
diag "$OUT"
like "forge.kind gitlab picks the GitLab driver" "$OUT" '^driver gitlab'
like "the leased git token is alive during the run (control for the 401 below)" "$OUT" 'alive 200'
like "the driver reads the project's default branch" "$OUT" 'default main'
like "... the issue, with the ticket token" "$OUT" "issue not this run's \(open\)"
like "... posts a note on it" "$OUT" 'comment [0-9]+'
like "... and reads the notes back" "$OUT" 'comments 1'
like "the driver opens the one merge request" "$OUT" 'mr 1 '
like "... found again from its branch, open" "$OUT" 'from-branch 1 open'
like "... the only open MR" "$OUT" 'open 1'
like "the lease's end: both tokens revoked, each confirmed" "$OUT" 'confirmed yes'
MRS=$(maint "/projects/43/merge_requests?source_branch=${BR//\//%2F}")
is "the forge holds one MR from the run's branch" "$(jq -r length <<<"$MRS")" 1
is "... a Draft that removes its branch, into main" \
  "$(jq -r '.[0] | "\(.draft) \(.force_remove_source_branch) \(.target_branch) \(.title)"' <<<"$MRS")" \
  "true true main Draft: tally: count empty lines"
TOKS=$(maint /projects/43/access_tokens)
is "the broker minted two project access tokens" "$(jq -r length <<<"$TOKS")" 2
is "... Developer, expiring tomorrow" "$(jq -r '[.[] | "\(.access_level) \(.expires_at)"] | unique | .[]' <<<"$TOKS")" \
  "30 $(date -u -d tomorrow +%Y-%m-%d)"
is "... git: read_repository write_repository api; ticket: api" \
  "$(jq -r '[.[] | "\(.name)=\(.scopes | join(","))"] | sort | join(" ")' <<<"$TOKS")" \
  "airlock-git=read_repository,write_repository,api airlock-ticket=api"
is "... both revoked on the forge" "$(jq -r '[.[] | .revoked] | unique | .[]' <<<"$TOKS")" true
like "the broker logged the 401 for each" "$(cat "$D/broker.log")" "token sha256:[0-9a-f]+ revoked, 401 confirmed"
is "... twice" "$(grep -c 'revoked, 401 confirmed' "$D/broker.log")" 2

# ---- the supervisor's own revocation (when the broker cannot confirm)
BR2=airlock/1-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
OUT=$(AL_TEST_DIRECT=1 "$EXEC" "$SOCK" acme/other release "$SEAM" "$D/gitlab.yaml" "$API" acme/other 1 "$BR2" 2>&1)
like "the driver's token_revoke: the ticket token revoked with itself, the 401 confirmed" "$OUT" 'direct revoked=1 confirmed=1'
like "... the broker still confirms both at the lease's end" "$OUT" 'confirmed yes'

# ---- control: the GitHub driver against the same forge opens nothing
BR3=airlock/1-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
OUT=$("$EXEC" "$SOCK" acme/other release "$SEAM" "$D/github.yaml" "$API" acme/other 1 "$BR3" 2>&1)
like "control: forge.kind's default picks the GitHub driver" "$OUT" '^driver github'
like "... whose pull request is no GitLab MR (404: GitHub's path)" "$OUT" 'mr-error open the pull request from .*HTTP 404'
is "... and the forge holds no MR from that branch" \
  "$(maint "/projects/43/merge_requests?source_branch=${BR3//\//%2F}" | jq -r length)" 0

# ---- the policy's rules for forge.kind gitlab
printf 'version: 1\nforge: {kind: gitlab}\n' >"$D/p1.yaml"
printf 'version: 1\nforge: {kind: gitlab, api_url: "https://gitlab.test/api/v3", git_url: "https://gitlab.test"}\n' >"$D/p2.yaml"
OUT1=$(AL_GIT_TOKEN=x AL_TICKET_TOKEN=x "$SEAM" "$D/p1.yaml" "$API" acme/other 1 x 2>&1)
OUT2=$(AL_GIT_TOKEN=x AL_TICKET_TOKEN=x "$SEAM" "$D/p2.yaml" "$API" acme/other 1 x 2>&1)
like "a gitlab policy without api_url and git_url is refused" "$OUT1" 'policy-error .*kind gitlab needs api_url'
like "a gitlab policy whose api_url is not /api/v4 is refused" "$OUT2" 'policy-error .*must end in /api/v4'

# airlock ticket on GitLab: the audit (through this broker's read token)
# cannot prove acme/other protected (the fixture gives it no branch), so the
# run is refused at the audit phase (exit 4), never a pass, before any
# lease (demo-gitlab is the audit that holds); a GitLab project's path under a GitHub policy is
# refused naming forge.kind gitlab
cat >"$D/glrun.yaml" <<EOF
version: 1
network: {allow: [{host: gitlab.test, port: 443, tls: true}]}
credentials:
  broker: $SOCK
  git: {repo: acme/other, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: acme/other, permissions: {issues: write}}
forge: {kind: gitlab, api_url: "https://gitlab.test/api/v4", git_url: "https://gitlab.test"}
EOF
OUT=$("$AIRLOCK" ticket acme/other#1 -p "$D/glrun.yaml" --agent true --record "$D/rec.json" 2>&1); rc=$?
is "airlock ticket on an unprotected GitLab project: refused as a security refusal (exit 4)" "$rc" 4
like "... the GitLab audit says why" "$OUT" 'audit +failed .*cannot prove the escape budget: branch .main. not found in acme/other'
is "... before any lease (the record has none)" "$(jq -r 'has("lease")' "$D/rec.json")" false
is "... the record's audit: an error, never a pass" "$(jq -r '"\(.audit.status) \(.audit.holds)"' "$D/rec.json")" "error null"
TOKS=$(maint /projects/43/access_tokens)
is "... the audit's read token (read_api, Maintainer) was revoked" \
  "$(jq -r '[.[] | select(.name == "airlock-audit") | "\(.scopes | join(",")) \(.access_level) \(.revoked)"] | unique | .[]' <<<"$TOKS")" "read_api 40 true"
sed -e 's/kind: gitlab, //' -e 's|/api/v4||' "$D/glrun.yaml" >"$D/ghrun.yaml"
OUT=$("$AIRLOCK" ticket acme/tools/tally#1 -p "$D/ghrun.yaml" --agent true --record "$D/rec2.json" 2>&1) &&
  fail "a GitLab project's path under a GitHub policy is refused" ||
  like "a GitLab project's path under a GitHub policy is refused" "$OUT" "acme/tools/tally. is a GitLab project's path .*forge.kind: gitlab"

if grep -qF "$(cat "$D/token")" "$D/broker.log" "$D/forge.log"; then fail "no log holds the Maintainer's token"; else ok "no log holds the Maintainer's token"; fi
done_testing
