#!/usr/bin/env bash
# The GitLab audit (issue #30 item 4) through `airlock audit --forge
# gitlab` against the GitLab test forge: one strong project where every
# criterion PASSes (the control), and beside it one project per weakened
# setting, the strong one with that one setting changed, which FAILs (or is
# UNKNOWN where GitLab's tier or the token's role hides it) on that
# criterion, naming the GitLab setting to change. The read token sits in
# the environment, never on a command line; a CI/CD variable's value never
# reaches the report.
. "$(dirname "$0")/lib.sh"
FORGE=${GITLAB_FORGE:?GITLAB_FORGE is set by meson}
for p in curl jq; do
  command -v $p >/dev/null || { skip "$p missing"; done_testing; exit 0; }
done
if [ ! -x "$(dirname "$AIRLOCK")/airlock-net" ]; then
  skip "airlock-net not built beside $AIRLOCK"
  done_testing
  exit 0
fi
unset GITHUB_TOKEN AIRLOCK_AUDIT_TOKEN
umask 077
D=$T_TMP/gla
mkdir -p "$D"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"

# ---- the fixture: the strong project, then each case = strong + one change ----
cat >"$D/ci-strong.yml" <<'EOF'
stages: [test, deploy]
test:
  stage: test
  script: [make test]
deploy:
  stage: deploy
  id_tokens:
    VAULT_ID_TOKEN:
      aud: https://vault.example.com
  script: [./deploy.sh]
  rules:
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH
EOF
# the weakened file: the deploy job (with its OIDC token) runs for MR pipelines too
sed 's/    - if: \$CI_COMMIT_BRANCH == \$CI_DEFAULT_BRANCH/    - if: $CI_PIPELINE_SOURCE == "merge_request_event"\n    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH/' \
  "$D/ci-strong.yml" >"$D/ci-oidc.yml"
printf 'include:\n  - local: ci/jobs.yml\ntest:\n  script: [make]\n' >"$D/ci-include.yml"
# no job runs for a run branch: the control of an unprotected variable's FAIL
printf 'test:\n  script: [make]\n  rules:\n    - if: $CI_COMMIT_REF_NAME =~ /^airlock\\//\n      when: never\n    - when: on_success\n' >"$D/ci-quiet.yml"
STRONG=$(jq -n --rawfile ci "$D/ci-strong.yml" '{
  id: 100, name: "strong", path: "strong", path_with_namespace: "acme/strong",
  default_branch: "main", visibility: "private", builds_access_level: "enabled",
  ci_config_path: null, auto_devops_enabled: false,
  namespace: {id: 900, name: "acme", path: "acme", kind: "group", full_path: "acme", parent_id: null},
  branches: [{name: "main", protected: true, default: true,
              commit: {id: "1111111111111111111111111111111111111111"}}],
  protected_branches: [{id: 1, name: "main",
    push_access_levels: [{id: 1, access_level: 0, access_level_description: "No one",
                          user_id: null, group_id: null, deploy_key_id: null}],
    merge_access_levels: [{id: 2, access_level: 40, access_level_description: "Maintainers",
                           user_id: null, group_id: null}],
    unprotect_access_levels: [], allow_force_push: false, code_owner_approval_required: true}],
  approval_rules: [{id: 1, name: "Reviewers", rule_type: "regular", approvals_required: 1,
    eligible_approvers: [{id: 7, username: "alice"}], users: [{id: 7, username: "alice"}],
    groups: [], protected_branches: [], applies_to_all_protected_branches: false,
    contains_hidden_groups: false}],
  push_rule: {id: 1, project_id: 100, branch_name_regex: "^(main|airlock/.*)$",
              deny_delete_tag: true, commit_committer_check: false},
  audit: {
    approvals: {approvals_before_merge: 0, reset_approvals_on_push: true,
                disable_overriding_approvers_per_merge_request: true,
                merge_requests_author_approval: false,
                merge_requests_disable_committers_approval: true,
                require_password_to_approve: false},
    variables: [{variable_type: "env_var", key: "DEPLOY_KEY", value: "s3cr3t-VALUE-of-the-var",
                 protected: true, masked: true, raw: false, environment_scope: "*"}],
    deploy_tokens: [{id: 1, name: "registry-reader", username: "gitlab+deploy-token-1",
                     expires_at: null, scopes: ["read_registry"], revoked: false, expired: false}],
    members: [{id: 555, username: "airlock-bot", name: "airlock bot", state: "active",
               access_level: 30}],
    files: {"CODEOWNERS": "* @alice\n", ".gitlab-ci.yml": $ci}}}')
ID=100
mk() { # NAME JQ-EDIT: the strong project, renamed, with one edit
  ID=$((ID + 1))
  jq --arg n "$1" --argjson id "$ID" --rawfile oidc "$D/ci-oidc.yml" --rawfile inc "$D/ci-include.yml" \
    --rawfile quiet "$D/ci-quiet.yml" "$2 | .id = \$id | .name = \$n | .path = \$n
    | .path_with_namespace = (\"acme/\" + \$n) | .push_rule.project_id = \$id" <<<"$STRONG"
}
PB='.protected_branches[0]'
AU='.audit'
{
  echo "$STRONG"
  mk unprotected '.protected_branches = []'
  mk push-dev "$PB.push_access_levels = [{id: 1, access_level: 30, access_level_description: \"Developers + Maintainers\"}]"
  mk push-bot "$PB.push_access_levels = [{id: 1, access_level: 40, access_level_description: \"Maintainers\"}, {id: 3, access_level: 40, user_id: 555, access_level_description: \"airlock bot\"}]"
  mk merge-dev "$PB.merge_access_levels = [{id: 2, access_level: 30, access_level_description: \"Developers + Maintainers\"}]"
  mk force "$PB.allow_force_push = true"
  mk wildcard-force '.protected_branches += [{id: 9, name: "ma*", push_access_levels: [{access_level: 0}], merge_access_levels: [{access_level: 40}], allow_force_push: true, code_owner_approval_required: true}]'
  mk co-off "$PB.code_owner_approval_required = false"
  mk co-bot "$AU.files.CODEOWNERS = \"* @alice\\n/deploy/ @airlock-bot\\n\""
  mk co-tier "$PB |= del(.code_owner_approval_required)"
  mk co-none "$PB.code_owner_approval_required = false | $AU.files |= del(.CODEOWNERS)"
  mk co-docs "$PB.code_owner_approval_required = false | $AU.files |= (del(.CODEOWNERS) | .[\"docs/CODEOWNERS\"] = \"* @alice\n\")"
  mk no-rules '.approval_rules = []'
  mk zero-rule '.approval_rules[0].approvals_required = 0'
  mk other-branch '.approval_rules[0].protected_branches = [{id: 5, name: "release"}]'
  mk group-approvers '.approval_rules[0] |= (.eligible_approvers = [] | .users = [] | .groups = [{id: 31, name: "reviewers", full_path: "acme/reviewers"}] | .contains_hidden_groups = true)'
  mk group-approvers-zero '.approval_rules[0] |= (.eligible_approvers = [] | .users = [] | .groups = [{id: 31, name: "reviewers", full_path: "acme/reviewers"}] | .approvals_required = 0)'
  mk bot-approver '.approval_rules[0].eligible_approvers += [{id: 555, username: "airlock-bot"}]'
  mk rules-hidden "$AU.hidden = {approval_rules: 403}"
  mk author "$AU.approvals.merge_requests_author_approval = true"
  mk reset "$AU.approvals.reset_approvals_on_push = false"
  mk override "$AU.approvals.disable_overriding_approvers_per_merge_request = false"
  mk approvals-hidden "$AU.hidden = {approvals: 403}"
  mk no-push-rule "$AU.no_push_rule = true"
  mk push-rule-any '.push_rule.branch_name_regex = ".*"'
  mk push-rule-hidden "$AU.hidden = {push_rule: 404}"
  mk bot-maintainer "$AU.members[0].access_level = 40"
  mk var-open "$AU.variables[0].protected = false"
  mk var-open-quiet "$AU.variables[0].protected = false | $AU.files[\".gitlab-ci.yml\"] = \$quiet"
  mk vars-99 "$AU.variables = [range(99) | {variable_type: \"env_var\", key: \"V\\(.)\", value: \"x\", protected: true, masked: false, raw: false, environment_scope: \"*\"}]"
  mk vars-100 "$AU.variables = [range(100) | {variable_type: \"env_var\", key: \"V\\(.)\", value: \"x\", protected: true, masked: false, raw: false, environment_scope: \"*\"}]"
  mk vars-hidden "$AU.hidden = {variables: 403}"
  mk run-protected '.protected_branches += [{id: 8, name: "airlock/*", push_access_levels: [{access_level: 30}], merge_access_levels: [{access_level: 40}], allow_force_push: false}]'
  mk oidc "$AU.files[\".gitlab-ci.yml\"] = \$oidc"
  mk ci-include "$AU.files[\".gitlab-ci.yml\"] = \$inc"
  mk deploy-token "$AU.deploy_tokens[0].name = \"gitlab-deploy-token\" | $AU.deploy_tokens[0].scopes = [\"read_repository\", \"write_registry\"]"
  mk deploy-revoked "$AU.deploy_tokens[0].name = \"gitlab-deploy-token\" | $AU.deploy_tokens[0].revoked = true"
  mk deploy-hidden "$AU.hidden = {deploy_tokens: 403}"
  mk ci-off '.builds_access_level = "disabled" | .audit.variables[0].protected = false'
  mk group-var-open '.namespace = {id: 910, kind: "group", full_path: "acme/open", parent_id: 900}'
  mk group-hidden '.namespace = {id: 920, kind: "group", full_path: "acme/hidden", parent_id: 900}'
} >"$D/projects.ndjson" 2>"$D/jq.err" || true
# the groups above the projects: acme (a protected variable), acme/open (an
# unprotected one, inherited), acme/hidden (its variables hidden from the token)
jq -s '{projects: ., groups: [
  {id: 900, full_path: "acme", parent_id: null,
   variables: [{variable_type: "env_var", key: "ORG_TOKEN", value: "s3cr3t-VALUE-of-the-var",
                protected: true, masked: true, raw: false, environment_scope: "*"}]},
  {id: 910, full_path: "acme/open", parent_id: 900,
   variables: [{variable_type: "env_var", key: "GROUP_DEPLOY", value: "s3cr3t-VALUE-of-the-var",
                protected: false, masked: false, raw: false, environment_scope: "*"}]},
  {id: 920, full_path: "acme/hidden", parent_id: 900, hidden: {variables: 403}}]}' \
  "$D/projects.ndjson" >"$D/fixture.json" 2>>"$D/jq.err"
N=$(jq '.projects | length' "$D/fixture.json" 2>/dev/null)
is "the fixture: the strong project and 40 cases" "$N" 41
[ "$N" = 41 ] || { sed 's/^/# /' "$D/jq.err"; done_testing; exit 1; }

"$FORGE" --fixture "$D/fixture.json" --token-file "$D/token" --ports-file "$D/ports.json" \
  >"$D/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID"
for _ in $(seq 1 100); do [ -s "$D/ports.json" ] && break; kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
PORT=$(jq -r .http "$D/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the forge started"; sed 's/^/# /' "$D/forge.log"; done_testing; exit 1; }
API=http://127.0.0.1:$PORT/api/v4

# audit NAME [ARGS]: the JSON report in $D/NAME.json, the exit code in $D/NAME.rc
audit() {
  local n=$1
  shift
  AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --forge gitlab "acme/$n" --api "$API" \
    --bot airlock-bot --bot-id 555 --json "$@" >"$D/$n.json" 2>"$D/$n.err"
  echo $? >"$D/$n.rc"
}
st() { jq -r --arg c "$2" '.criteria[] | select(.id == $c) | .status' "$D/$1.json" 2>/dev/null; }
fix() { jq -r --arg c "$2" '.criteria[] | select(.id == $c) | .fix // ""' "$D/$1.json" 2>/dev/null; }
ev() { jq -r --arg c "$2" '.criteria[] | select(.id == $c) | .evidence' "$D/$1.json" 2>/dev/null; }

for n in $(jq -r '.projects[].path' "$D/fixture.json"); do audit "$n"; done

# ---- the control: every criterion passes --------------------------------------
is "strong: exit 0 (the escape budget holds)" "$(cat "$D/strong.rc")" 0
is "strong: the report says gitlab" "$(jq -r '.forge + " " + .repo + " " + .branch' "$D/strong.json")" \
  "gitlab acme/strong main"
is "strong: 14 criteria, all PASS" \
  "$(jq -r '[.criteria[] | .status] | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$D/strong.json")" \
  "PASS=14"
is "strong: holds, no FAIL/UNKNOWN/WARN" "$(jq -c '[.holds, .counts]' "$D/strong.json")" \
  '[true,{"fail":0,"unknown":0,"warn":0}]'
like "strong: the deploy job (id_tokens) is judged quiet for the run branch" \
  "$(ev strong ci.no_oidc)" "no job that runs"
like "strong: the evidence names the read (protected_branches)" \
  "$(jq -r '.criteria[0].evidence_from[0]' "$D/strong.json")" "protected_branches"
REPORTS=$(jq -r '.projects[].path | "'"$D"'/" + . + ".json"' "$D/fixture.json")
# shellcheck disable=SC2086
if grep -q 's3cr3t-VALUE-of-the-var' $REPORTS "$D"/*.err; then
  fail "no report holds the CI/CD variable's value"
else ok "no report holds the CI/CD variable's value"; fi
if grep -rqF "$(cat "$D/token")" "$D"/*.json "$D"/*.err; then
  fail "no report or error holds the read token"
else ok "no report or error holds the read token"; fi

# ---- each weakened setting beside the control ----------------------------------
# case CRITERION STATUS REMEDY-WORDS DESCRIPTION
case_is() {
  local n=$1 c=$2 want=$3 words=$4 what=$5
  is "$n: $c $want ($what; control strong: $(st strong "$c"))" "$(st "$n" "$c")" "$want"
  if [ -n "$words" ]; then like "$n: the fix names the setting" "$(fix "$n" "$c")" "$words"; fi
}
case_is unprotected branch.protected FAIL "Protected branches" "no protected branch rule"
case_is unprotected gitlab.push_access FAIL "Allowed to push" "an unprotected branch takes any Developer's push"
case_is push-dev gitlab.push_access FAIL "No one" "push Developers + Maintainers"
case_is push-bot gitlab.push_access FAIL "no user entry for the bot" "the bot user allowed to push"
case_is merge-dev gitlab.merge_access FAIL "Allowed to merge" "merge Developers + Maintainers"
case_is force push.no_force_push FAIL "Allowed to force push" "allow_force_push true"
case_is wildcard-force push.no_force_push FAIL "every rule" "a wildcard rule ma* allows force push"
case_is co-off reviews.code_owners FAIL "Code owner approval" "CODEOWNERS exists, approval not required"
case_is co-docs reviews.code_owners FAIL "code_owner_approval_required" "docs/CODEOWNERS counts too"
case_is co-bot reviews.code_owners FAIL "remove the bot from CODEOWNERS" "the bot owns /deploy/"
case_is co-tier reviews.code_owners UNKNOWN "Premium" "the tier hides code_owner_approval_required"
case_is co-none reviews.code_owners PASS "" "no CODEOWNERS: nothing to require (control of co-off)"
case_is no-rules reviews.approvals FAIL "Approvals required" "no approval rule"
case_is zero-rule reviews.approvals FAIL "Approvals required" "a rule requiring 0 approvals"
case_is other-branch reviews.approvals FAIL "Approvals required" "the rule covers another branch"
case_is group-approvers reviews.approvals PASS "" "an approver group (its members hidden) counts as people"
case_is group-approvers-zero reviews.approvals FAIL "Approvals required" "the same group rule requiring 0 (control)"
case_is bot-approver reviews.approvals FAIL "eligible approvers" "the bot can approve"
case_is rules-hidden reviews.approvals UNKNOWN "Premium" "approval rules hidden (403)"
case_is author gitlab.no_author_approval FAIL "Prevent approval by merge request creator" "author approval on"
case_is reset reviews.dismiss_stale FAIL "Remove all approvals" "reset_approvals_on_push off"
case_is override gitlab.no_mr_override FAIL "Prevent editing approval rules" "rules editable per MR"
case_is approvals-hidden gitlab.no_author_approval UNKNOWN "Premium" "approval settings hidden (403)"
case_is approvals-hidden reviews.dismiss_stale UNKNOWN "Premium" "approval settings hidden (403)"
case_is no-push-rule gitlab.push_rule WARN "Push rules" "no push rule (advisory)"
case_is push-rule-any gitlab.push_rule WARN "Branch name" "branch_name_regex .* admits every name"
case_is push-rule-hidden gitlab.push_rule UNKNOWN "Premium" "push rules hidden by the tier (404)"
case_is bot-maintainer bot.not_maintainer FAIL "Developer role" "the bot is a Maintainer"
case_is var-open ci.no_secrets FAIL "Protect variable" "an unprotected variable, jobs run on the run branch"
case_is var-open-quiet ci.no_secrets WARN "Protect variable" "unprotected, but no job runs for a run branch"
case_is vars-99 ci.no_secrets PASS "" "99 protected variables: one page read whole (control)"
case_is vars-100 ci.no_secrets UNKNOWN "Maintainer" "a full page of 100: the rest unread"
case_is vars-hidden ci.no_secrets UNKNOWN "Maintainer" "variables hidden (403)"
case_is run-protected ci.no_secrets FAIL "must not be protected" "airlock/* protected: protected variables reach it"
case_is oidc ci.no_oidc FAIL "CI_COMMIT_REF_PROTECTED" "the deploy job with id_tokens runs for MR pipelines"
case_is ci-include ci.no_oidc UNKNOWN "include" "include: is not followed"
case_is ci-include ci.no_secrets UNKNOWN "include" "include: is not followed"
case_is deploy-token gitlab.ci_deploy_token FAIL "revoke gitlab-deploy-token" "gitlab-deploy-token exists"
case_is deploy-revoked gitlab.ci_deploy_token PASS "" "a revoked one does not reach jobs (control)"
case_is deploy-hidden gitlab.ci_deploy_token UNKNOWN "Maintainer" "deploy tokens hidden (403)"
case_is ci-off ci.no_secrets PASS "" "CI disabled: an unprotected variable reaches no job (control)"
case_is group-var-open ci.no_secrets FAIL "Protect variable" "the group's unprotected variable is inherited"
case_is group-hidden ci.no_secrets WARN "group Maintainer" "the group's variables hidden from the token"
like "group-var-open: the evidence names the group and its variable" "$(ev group-var-open ci.no_secrets)" \
  "acme/open's variable GROUP_DEPLOY: NOT protected"
like "... and reads the parent group too" "$(ev group-var-open ci.no_secrets)" "acme: 1 CI/CD variable"
like "strong: the group's protected variable is read (control)" "$(ev strong ci.no_secrets)" \
  "acme: 1 CI/CD variable\\(s\\), none reaching"
like "oidc: the evidence names the job and the MR pipeline" "$(ev oidc ci.no_oidc)" 'job `deploy`.*MR pipeline'
like "var-open: the evidence names the variable, not its value" "$(ev var-open ci.no_secrets)" \
  "variable DEPLOY_KEY: NOT protected, masked"
like "push-bot: the evidence names the bot's user entry" "$(ev push-bot gitlab.push_access)" "user 555"

# every weakened case fails the audit (exit 1) except the advisory and control ones
for n in unprotected push-dev push-bot merge-dev force co-off co-bot co-tier no-rules bot-approver author \
  reset override approvals-hidden bot-maintainer var-open vars-hidden run-protected oidc ci-include \
  deploy-token deploy-hidden group-var-open; do
  is "$n: exit 1 (does not hold)" "$(cat "$D/$n.rc")" 1
done
for n in co-none no-push-rule push-rule-any push-rule-hidden var-open-quiet deploy-revoked ci-off \
  group-hidden; do
  is "$n: exit 0 (advisory or control: holds)" "$(cat "$D/$n.rc")" 0
done
# only the one criterion changes between a case and the control
is "force: the other 13 criteria as the control's" \
  "$(jq -c '[.criteria[] | select(.id != "push.no_force_push") | .status] | unique' "$D/force.json")" '["PASS"]'

# ---- the bot's membership, without --bot-id: the per-run bot ---------------------
AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --forge gitlab acme/bot-maintainer \
  --api "$API" --json >"$D/nobot.json" 2>"$D/nobot.err"
is "bot-maintainer without --bot-id: the standing user is not checked" "$(st nobot bot.not_maintainer)" PASS
like "... and the evidence says the run's bot is minted as Developer" "$(ev nobot bot.not_maintainer)" \
  "Developer"

# ---- the text report and the CLI's rules ----------------------------------------
AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --forge gitlab acme/force --api "$API" \
  --bot airlock-bot --bot-id 555 >"$D/text.out" 2>&1
like "the text report names the bot" "$(cat "$D/text.out")" "the bot: airlock-bot \\(user id 555"
like "... and the failing criterion with its fix" "$(cat "$D/text.out")" "FAIL +push.no_force_push"
"$AIRLOCK" audit --forge gitlab acme/strong >"$D/u1" 2>&1
is "--forge gitlab without --api is a usage error" "$?" 2
like "... naming --api" "$(cat "$D/u1")" "needs --api"
"$AIRLOCK" audit --forge gitlab acme/strong --api "$API" --token x >"$D/u2" 2>&1
is "a token on the command line is refused" "$?" 2
"$AIRLOCK" audit --forge gitlab acme/strong --api "$API" >"$D/u3" 2>&1
is "without AIRLOCK_AUDIT_TOKEN: an error (2)" "$?" 2
like "... naming AIRLOCK_AUDIT_TOKEN" "$(cat "$D/u3")" "AIRLOCK_AUDIT_TOKEN"
GITHUB_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --forge gitlab acme/strong --api "$API" >"$D/u4" 2>&1
is "GITHUB_TOKEN is not taken for GitLab" "$?" 2
"$AIRLOCK" audit --forge gitlab 'acme/../x' --api "$API" >"$D/u5" 2>&1
is "a bad project path is a usage error" "$?" 2
"$AIRLOCK" audit --forge gitlab acme/strong --api "$API" --app x >"$D/u6" 2>&1
is "--app with --forge gitlab is refused" "$?" 2
AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --forge gitlab acme/nope --api "$API" >"$D/u7" 2>&1
is "an unknown project: an error (2)" "$?" 2
like "... saying the project is not found" "$(cat "$D/u7")" "does not exist or the token cannot see it"
AIRLOCK_AUDIT_TOKEN=bad-token "$AIRLOCK" audit --forge gitlab acme/strong --api "$API" >"$D/u8" 2>&1
is "a bad token: an error (2)" "$?" 2
like "... HTTP 401" "$(cat "$D/u8")" "401"
AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --forge gitlab acme/strong --api "$API" \
  --branch nope >"$D/u9" 2>&1
is "an unknown branch: an error (2)" "$?" 2
# ---- --policy: the run's policy names the forge, its API, its CA and the run branches ----
SRC=${AIRLOCK_SRC:?}
sh "$SRC/scripts/make-test-ca.sh" "$D/tls" >/dev/null 2>&1
"$FORGE" --fixture "$D/fixture.json" --token-file "$D/token" --ports-file "$D/tports.json" \
  --tls-dir "$D/tls" >"$D/tforge.log" 2>&1 &
TPID=$!
on_exit "kill $TPID"
for _ in $(seq 1 100); do [ -s "$D/tports.json" ] && break; kill -0 $TPID 2>/dev/null || break; sleep 0.1; done
TP=$(jq -r .https "$D/tports.json" 2>/dev/null)
pol() { # FILE PREFIX-LINE
  printf 'version: 1\nforge: {kind: gitlab, api_url: "https://127.0.0.1:%s/api/v4", git_url: "https://127.0.0.1:%s", ca_file: "%s"}\n%s' \
    "$TP" "$TP" "$D/tls/ca.crt" "$2" >"$1"
}
pol "$D/p1.yaml" ""
pol "$D/p2.yaml" 'review: {branch_prefix: "bots/"}
'
AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --policy "$D/p1.yaml" acme/strong --json \
  >"$D/pol1.json" 2>"$D/pol1.err"
is "--policy: the policy's forge (gitlab, its https API and CA): exit 0" "$?" 0
is "... the report is GitLab's, read over https" "$(jq -r '.forge + " " + .api' "$D/pol1.json")" \
  "gitlab https://127.0.0.1:$TP/api/v4"
is "... the push rule admits the default run prefix (control)" "$(st pol1 gitlab.push_rule)" PASS
AIRLOCK_AUDIT_TOKEN=$(cat "$D/token") "$AIRLOCK" audit --policy "$D/p2.yaml" acme/strong --json \
  >"$D/pol2.json" 2>"$D/pol2.err"
is "--policy with review.branch_prefix bots/: the run branches judged" "$(jq -r .run_prefix "$D/pol2.json")" bots/
is "... the push rule ^(main|airlock/.*)\$ refuses them: WARN" "$(st pol2 gitlab.push_rule)" WARN
like "... the fix says so" "$(fix pol2 gitlab.push_rule)" "refuses the run branches"
"$AIRLOCK" audit --policy "$D/p1.yaml" --forge github acme/strong >"$D/u10" 2>&1
is "--forge github with a gitlab policy: a usage error" "$?" 2
like "... naming both" "$(cat "$D/u10")" "forge.kind is gitlab"
done_testing
