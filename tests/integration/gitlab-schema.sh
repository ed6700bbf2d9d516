#!/usr/bin/env bash
# The GitLab test forge and fixtures checked against GitLab's own published
# descriptions (issue #30 item 6), as forge-schema.sh checks the GitHub
# forge against GitHub's:
# - the GitLab webhook payloads airlock's tests send (tests/unit/gitlab-webhooks/)
#   against GitLab's documented Issue Hook and Note Hook examples
#   (tests/gitlab-forge/webhook_examples.py, reading the verbatim excerpt
#   tests/gitlab-forge/fixtures/webhook_events.excerpt.md): every field
#   airlock reads is in GitLab's example with the same type, no invented
#   fields, no field typed otherwise.
# Positive controls show each kind of check fails on a broken payload.
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { skip "python3 not installed"; done_testing; exit 0; }
command -v jq >/dev/null || { skip "jq not installed"; done_testing; exit 0; }
W=$T_TMP

# --- webhooks: the fixtures against GitLab's examples ---
WH=$SRC/tests/gitlab-forge/webhook_examples.py
MD=$SRC/tests/gitlab-forge/fixtures/webhook_events.excerpt.md
WC=$SRC/src/lib/serve/webhook_gitlab.c
# wh EVENT FIXTURE [LABEL]: the checker's lines as TAP
wh() {
  python3 "$WH" "$MD" "$WC" "$1" "$2" >"$W/wh.out" 2>&1
  while IFS= read -r line; do
    case $line in
    "ok "*) ok "GitLab's webhook example: ${line#ok }" ;;
    "not ok "*) fail "GitLab's webhook example: ${line#not ok }" ;;
    *) diag "$line" ;;
    esac
  done <"$W/wh.out"
  grep -q '^ok \|^not ok ' "$W/wh.out" || { fail "the webhook checker ran on $2"; sed 's/^/#   /' "$W/wh.out"; }
}
wh "Issue Hook" "$SRC/tests/unit/gitlab-webhooks/issue-label-added.json"
wh "Note Hook" "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json"

# positive controls: a field airlock reads typed otherwise, an invented
# field, a read field missing, and a parser reading an unlisted field
jq '.project.id = "42"' "$SRC/tests/unit/gitlab-webhooks/issue-label-added.json" >"$W/bad-type.json"
out=$(python3 "$WH" "$MD" "$WC" "Issue Hook" "$W/bad-type.json" 2>&1)
like "control: project.id as a string is refused" "$out" 'not ok .*`project\.id` \(airlock reads it\): string in the fixture, integer in GitLab'
jq '.object_attributes.is_trigger = true' "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" >"$W/bad-extra.json"
out=$(python3 "$WH" "$MD" "$WC" "Note Hook" "$W/bad-extra.json" 2>&1)
like "control: a field GitLab does not send is refused" "$out" "not ok .*not in GitLab's example: object_attributes\.is_trigger"
jq 'del(.issue.iid)' "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" >"$W/bad-missing.json"
out=$(python3 "$WH" "$MD" "$WC" "Note Hook" "$W/bad-missing.json" 2>&1)
like "control: a read field missing from the fixture is refused" "$out" 'not ok .*`issue\.iid` \(airlock reads it\): not in the fixture'
sed 's/"iid": 17,/"number": 17,/' "$MD" >"$W/bad.md"
out=$(python3 "$WH" "$W/bad.md" "$WC" "Note Hook" "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" 2>&1)
like "control: a read field GitLab's example lacks is refused" "$out" "not ok .*\`issue\.iid\` \(airlock reads it\): not in GitLab's Note Hook example"
sed 's/"object_attributes.note"/"object_attributes.body"/' "$WC" >"$W/bad.c"
out=$(python3 "$WH" "$MD" "$W/bad.c" "Note Hook" "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" 2>&1)
like "control: a field the parser reads but READS does not list is refused" "$out" 'not ok webhook_gitlab.c reads only fields listed in READS: not listed: object_attributes.body'

done_testing
