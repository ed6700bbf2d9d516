#!/usr/bin/env bash
# The GitLab driver's review reads (forge.h pr_for_review .. pr_comment,
# forge/gitlab_review.c) against the GitLab test forge, which answers from
# the real bare repository it serves. Every expected value is git's own
# answer on that repository (the test computes it, not the driver); a cut
# list (max reached) is -1 with what was read; an answer of the wrong shape
# is EPROTO; a forge that pages two items at a time gives the same lists
# (the Link header followed); fields of the wrong type are null.
. "$(dirname "$0")/lib.sh"
FORGE=${GITLAB_FORGE:?GITLAB_FORGE is set by meson}
RV=${GITLAB_REVIEW:?GITLAB_REVIEW is set by meson}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for p in curl jq git; do command -v $p >/dev/null || { skip "$p is not installed"; done_testing; exit 0; }; done

D=$T_TMP/glr
mkdir -p "$D"
umask 077
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"
export GIT_CONFIG_NOSYSTEM=1 HOME=$D GIT_TERMINAL_PROMPT=0
G="$D/repos/acme/tools/tally.git"
git init -q --bare -b main "$G"
W=$D/seed
git init -q -b main "$W"
gc() { git -C "$W" -c user.name="Ann Base" -c user.email=ann@test commit -qm "$@"; }
mkdir -p "$W/dir" "$W/docs"
printf 'one\ntwo\nthree\n' >"$W/a.txt"
printf 'bee\n' >"$W/dir/b.txt"
seq 1 40 >"$W/c.txt"
printf '#!/bin/sh\necho hi\n' >"$W/run.sh"
printf 'plain\n' >"$W/becomes-link"
for i in 1 2 3 4 5; do printf 'doc %s\n' $i >"$W/docs/d$i.md"; done
git -C "$W" add -A && gc "base: the files"
git -C "$W" push -q "$G" main
BR=airlock/7-ab12
git -C "$W" checkout -q -b "$BR"
printf 'one\nTWO\nthree\nfour\n' >"$W/a.txt"
git -C "$W" rm -q dir/b.txt
git -C "$W" mv c.txt d.txt
printf 'new\n' >"$W/new.txt"
chmod 755 "$W/run.sh"
rm "$W/becomes-link" && ln -s a.txt "$W/becomes-link"
printf '\0\1\2binary\0' >"$W/bin.dat"
git -C "$W" add -A
git -C "$W" -c user.name="Bot One" -c user.email=bot@test commit -qm "tally: count empty lines"
printf 'again\n' >>"$W/new.txt"
git -C "$W" update-index --add --cacheinfo "160000,$(git -C "$W" rev-parse HEAD~1),vendor/sub"
git -C "$W" add new.txt
git -C "$W" -c user.name="Bot Two" -c user.email=bot2@test commit -qm "second commit"
printf 'third\n' >>"$W/new.txt"
git -C "$W" add new.txt && gc "third commit"
git -C "$W" push -q "$G" "$BR"
HEAD_SHA=$(git -C "$G" rev-parse "$BR")
BASE_SHA=$(git -C "$G" merge-base main "$BR")

"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token" \
  --ports-file "$D/ports.json" --repos "$D/repos" >"$D/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID"
for _ in $(seq 1 100); do [ -s "$D/ports.json" ] && break; kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
PORT=$(jq -r .http "$D/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the forge started"; sed 's/^/# /' "$D/forge.log"; done_testing; exit 1; }
API=http://127.0.0.1:$PORT/api/v4
# curl with a header file (no token on a command line): req TOKENFILE METHOD PATH [JSON]
req() {
  printf 'PRIVATE-TOKEN: %s\n' "$(cat "$1")" >"$D/h"
  if [ -n "${4:-}" ]; then
    curl -s -o "$D/out" -w '%{http_code}' -X "$2" -H @"$D/h" -H 'Content-Type: application/json' \
      --data-binary "$4" "$API$3"
  else
    curl -s -o "$D/out" -w '%{http_code}' -X "$2" -H @"$D/h" "$API$3"
  fi
}
TOM=$(date -u -d tomorrow +%Y-%m-%d)
# the review lease's git token: a Developer project token (api: the note)
req "$D/token" POST /projects/42/access_tokens \
  "{\"name\":\"airlock-git\",\"scopes\":[\"api\",\"read_repository\"],\"access_level\":30,\"expires_at\":\"$TOM\"}" >/dev/null
jq -r .token "$D/out" >"$D/run"
export AL_GIT_TOKEN
AL_GIT_TOKEN=$(cat "$D/run")
P=acme/tools/tally
rv() { "$RV" "$API" "$P" "$@" 2>"$D/rv.err"; }
faults() { is "test faults set: $1" "$(req "$D/token" POST /projects/42/test_faults "$1")" 200; }

is "the run's MR opened" "$(req "$D/run" POST /projects/42/merge_requests \
  "{\"source_branch\":\"$BR\",\"target_branch\":\"main\",\"title\":\"Draft: tally: count empty lines\",\"description\":\"by airlock\",\"remove_source_branch\":true}")" 201
IID=$(jq -r .iid "$D/out")
is "a conversation note" "$(req "$D/run" POST "/projects/42/merge_requests/$IID/notes" '{"body":"a human says hi"}')" 201
POS="\"position\":{\"position_type\":\"text\",\"base_sha\":\"$BASE_SHA\",\"start_sha\":\"$BASE_SHA\",\"head_sha\":\"$HEAD_SHA\""
is "a diff note on a.txt" "$(req "$D/run" POST "/projects/42/merge_requests/$IID/discussions" \
  "{\"body\":\"line comment\",$POS,\"new_path\":\"a.txt\",\"old_path\":\"a.txt\",\"new_line\":2}}")" 201
is "a diff note on a removed file (old_path only)" "$(req "$D/run" POST "/projects/42/merge_requests/$IID/discussions" \
  "{\"body\":\"gone?\",$POS,\"old_path\":\"dir/b.txt\",\"old_line\":1}}")" 201
is "a thread that is not on the diff" "$(req "$D/run" POST "/projects/42/merge_requests/$IID/discussions" '{"body":"a thread"}')" 201
is "control: GitLab's notes list holds the system note and the DiffNotes too" \
  "$(req "$D/run" GET "/projects/42/merge_requests/$IID/notes?per_page=100" >/dev/null; jq -r '[.[] | (.system|tostring) + ":" + (.type // "null")] | sort | join(" ")' "$D/out")" \
  "false:DiffNote false:DiffNote false:DiscussionNote false:null true:null"

# ---- pr_for_review
R=$(rv pr "$BR")
is "pr_for_review: the MR from the branch" "$(jq -r '"\(.rc) \(.out.number) \(.out.base) \(.out.title) \(.out.body)"' <<<"$R")" \
  "0 $IID main Draft: tally: count empty lines by airlock"
is "... its url" "$(jq -r .out.url <<<"$R")" "http://gitlab.test/acme/tools/tally/-/merge_requests/$IID"
is "... head_sha is the branch's head (git rev-parse)" "$(jq -r .out.head_sha <<<"$R")" "$HEAD_SHA"
is "... base_sha the merge base (git merge-base)" "$(jq -r .out.base_sha <<<"$R")" "$BASE_SHA"
NFILES=$(git -C "$G" diff --name-only -M "$BASE_SHA" "$HEAD_SHA" | wc -l)
is "... changed_files as git counts them ($NFILES)" "$(jq -r .out.changed_files <<<"$R")" "$NFILES"
is "a branch without an MR: none, not an error" "$(rv pr airlock/7-none | jq -c '[.rc, .out]')" '[0,null]'

# ---- pr_files
R=$(rv files "$IID" 100)
is "pr_files: whole (rc 0)" "$(jq -r .rc <<<"$R")" 0
WANT=$(git -C "$G" diff --name-status -M "$BASE_SHA" "$HEAD_SHA" | awk -F'\t' '
  { s=substr($1,1,1); n=(s=="R")?$3:$2;
    st=(s=="A")?"added":(s=="D")?"removed":(s=="R")?"renamed":(s=="T")?"changed":"modified"; print n" "st }' | sort)
is "... every file git names, with its status" "$(jq -r '.out[] | "\(.filename) \(.status)"' <<<"$R" | sort)" "$WANT"
is "... the rename's previous name" "$(jq -r '.out[] | select(.status=="renamed") | .previous_filename' <<<"$R")" c.txt
read -r ADD DEL _ < <(git -C "$G" diff --numstat "$BASE_SHA" "$HEAD_SHA" -- a.txt)
is "... a.txt: its additions and deletions (git --numstat)" "$(jq -r '.out[] | select(.filename=="a.txt") | "\(.additions) \(.deletions)"' <<<"$R")" "$ADD $DEL"
is "... and its patch, GitLab's hunks only" "$(jq -r '.out[] | select(.filename=="a.txt") | (.patch | startswith("@@ ")), (.patch | contains("\n+TWO\n"))' <<<"$R" | tr '\n' ' ')" "true true "
is "... the binary file has no patch, no counts" "$(jq -c '.out[] | select(.filename=="bin.dat") | [has("patch"), .additions]' <<<"$R")" '[false,null]'
is "... no blob id (the head tree has it)" "$(jq -r '[.out[].sha] | unique | .[]' <<<"$R")" null
R=$(rv files "$IID" 3)
is "a cut file list (max 3 of $NFILES): -1 with the 3 read" "$(jq -r '"\(.rc) \(.out | length)"' <<<"$R")" "-1 3"
like "... the error says it stopped at the cap" "$(jq -r .err <<<"$R")" 'cap of 3'

# ---- tree
R=$(rv tree "$HEAD_SHA")
is "tree: read whole, not truncated" "$(jq -r '"\(.rc) \(.truncated)"' <<<"$R")" "0 false"
is "... as many entries as git ls-tree -r -t" "$(jq -r '.out | length' <<<"$R")" "$(git -C "$G" ls-tree -r -t "$HEAD_SHA" | wc -l)"
is "... modes and types: symlink, executable, gitlink, tree, file" \
  "$(jq -r '.out | [."becomes-link", ."run.sh", ."vendor/sub", .docs, ."a.txt"] | map("\(.mode)/\(.type)") | join(" ")' <<<"$R")" \
  "120000/blob 100755/blob 160000/commit 040000/tree 100644/blob"
A_BLOB=$(git -C "$G" rev-parse "$HEAD_SHA:a.txt")
is "... a.txt's blob id as git says" "$(jq -r '.out."a.txt".sha' <<<"$R")" "$A_BLOB"
is "... the base tree has the file and no symlink yet" "$(rv tree "$BASE_SHA" | jq -r '.out."becomes-link".mode + " " + (.out."new.txt"|tostring)')" "100644 null"
is "a tree of a commit id that is not hex: EINVAL, no request" "$(rv tree main | jq -r '"\(.rc) \(.errno)"')" "-1 EINVAL"

# ---- blob
R=$(rv blob "$A_BLOB" 1000)
is "blob: the bytes of a.txt" "$(jq -r '"\(.rc) \(.out)"' <<<"$R")" "0 $(git -C "$G" cat-file blob "$A_BLOB" | od -An -tx1 | tr -d ' \n')"
BIN=$(git -C "$G" rev-parse "$HEAD_SHA:bin.dat")
is "... a binary blob, NULs included" "$(rv blob "$BIN" 1000 | jq -r '"\(.len) \(.out)"')" "10 00010262696e61727900"
is "... larger than max: EFBIG" "$(rv blob "$A_BLOB" 4 | jq -r '"\(.rc) \(.errno)"')" "-1 EFBIG"
is "... an id that is no blob: EPROTO (404)" "$(rv blob "$HEAD_SHA" 1000 | jq -r '"\(.rc) \(.errno)"')" "-1 EPROTO"
is "... not hex: EINVAL" "$(rv blob xyz 1000 | jq -r '"\(.rc) \(.errno)"')" "-1 EINVAL"

# ---- commits
R=$(rv commits "$IID" 100)
is "pr_commits: every commit of the MR" "$(jq -r '"\(.rc) \(.out | length)"' <<<"$R")" "0 $(git -C "$G" rev-list --count "$BASE_SHA..$HEAD_SHA")"
is "... oldest first (git rev-list --reverse)" "$(jq -r '.out[].sha' <<<"$R")" "$(git -C "$G" rev-list --reverse "$BASE_SHA..$HEAD_SHA")"
is "... messages, authors and committers" "$(jq -r '.out[] | "\(.message)|\(.author)|\(.committer)"' <<<"$R")" \
  "tally: count empty lines|Bot One <bot@test>|Bot One <bot@test>
second commit|Bot Two <bot2@test>|Bot Two <bot2@test>
third commit|Ann Base <ann@test>|Ann Base <ann@test>"
R=$(rv commits "$IID" 2)
is "a cut commit list (max 2 of 3): -1 with 2" "$(jq -r '"\(.rc) \(.out | length)"' <<<"$R")" "-1 2"

# ---- texts
R=$(rv texts "$IID" comments 100)
is "pr_texts comments: the conversation, no system note, no diff note" \
  "$(jq -r '"\(.rc) " + ([.out[].body] | join(","))' <<<"$R")" "0 a human says hi,a thread"
R=$(rv texts "$IID" review_comments 100)
is "pr_texts review_comments: the diff notes with their paths" \
  "$(jq -r '"\(.rc) " + ([.out[] | "\(.path)=\(.body)"] | join(","))' <<<"$R")" "0 a.txt=line comment,dir/b.txt=gone?"
is "pr_texts reviews: GitLab's approvals have no body, an empty list" "$(rv texts "$IID" reviews 100 | jq -c '[.rc, .out]')" '[0,[]]'
# max counts what GitLab lists: its system note (skipped) is the first of them
is "a cut comment list (max 2): -1 with the 1 comment among them" "$(rv texts "$IID" comments 2 | jq -r '"\(.rc) \(.out | length) \(.out[0].body)"')" "-1 1 a human says hi"
R=$(rv texts "$IID" review_comments 3)
is "a cut review comment list (max 3 discussions: the system note's, the comment's, a.txt's): -1 with a.txt's diff note" "$(jq -r '"\(.rc) \(.out | length) \(.errno) \(.out[0].path)"' <<<"$R")" "-1 1 EPROTO a.txt"

# ---- pr_comment
R=$(rv comment "$IID" "airlock: review notes")
is "pr_comment: a note, its id and its anchor on the MR's page" "$(jq -r '"\(.rc) \(.out.id | type) \(.out.url)"' <<<"$R")" \
  "0 number http://gitlab.test/acme/tools/tally/-/merge_requests/$IID#note_$(jq -r .out.id <<<"$R")"
is "... read back in the conversation" "$(rv texts "$IID" comments 100 | jq -r '.out[-1].body')" "airlock: review notes"
is "... on the forge, as the token's bot" "$(req "$D/token" GET "/projects/42/merge_requests/$IID/notes?sort=asc" >/dev/null; jq -r '.[-1] | "\(.body) \(.author.username)"' "$D/out")" "airlock: review notes project_bot"
is "a comment on MR 0: EINVAL" "$(rv comment 0 x | jq -r '"\(.rc) \(.errno)"')" "-1 EINVAL"
is "a comment on an MR that does not exist: EPROTO (404)" "$(rv comment 99 x | jq -r '"\(.rc) \(.errno)"')" "-1 EPROTO"

# ---- pagination: the forge pages two items at a time; the lists are the same
FILES1=$(rv files "$IID" 100 | jq -c '.out')
TREE1=$(rv tree "$HEAD_SHA" | jq -c '.out')
COMMITS1=$(rv commits "$IID" 100 | jq -c '.out')
NOTES1=$(rv texts "$IID" comments 100 | jq -c '.out')
DIFFN1=$(rv texts "$IID" review_comments 100 | jq -c '.out')
faults '{"per_page_max":2}'
is "control: the forge now answers 2 per page, with a Link to the next" \
  "$(req "$D/run" GET "/projects/42/merge_requests/$IID/diffs?per_page=100" >/dev/null; jq -r length "$D/out")" 2
R=$(rv files "$IID" 100)
is "pr_files across pages: the same $NFILES files" "$(jq -c '[.rc, .out]' <<<"$R")" "[0,$FILES1]"
curl -s -D "$D/hdr" -o "$D/out" -H @"$D/h" "$API/projects/42/repository/tree?recursive=true&ref=$HEAD_SHA&pagination=keyset"
like "control: the tree's keyset pages link by page_token" "$(grep -i '^link:' "$D/hdr")" 'page_token=[0-9a-f]+>; rel="next"'
curl -s -D "$D/hdr" -o "$D/out" -H @"$D/h" "$API/projects/42/repository/tree?recursive=true&ref=$HEAD_SHA"
like "control: ... its offset pages by page number" "$(grep -i '^link:' "$D/hdr")" '[?&]page=2>; rel="next"'
R=$(rv tree "$HEAD_SHA")
is "tree across keyset pages: the same tree" "$(jq -c '[.rc, .truncated, .out]' <<<"$R")" "[0,false,$TREE1]"
is "pr_commits across pages: the same, oldest first" "$(rv commits "$IID" 100 | jq -c '[.rc, .out]')" "[0,$COMMITS1]"
is "pr_texts comments across pages" "$(rv texts "$IID" comments 100 | jq -c '[.rc, .out]')" "[0,$NOTES1]"
is "pr_texts review_comments across pages" "$(rv texts "$IID" review_comments 100 | jq -c '[.rc, .out]')" "[0,$DIFFN1]"
R=$(rv files "$IID" 3)
is "a cut list across pages (max 3): -1 with 3, the first three" "$(jq -c '[.rc, .out]' <<<"$R")" "[-1,$(jq -c '.[0:3]' <<<"$FILES1")]"
faults '{}'

# ---- answers of the wrong shape: EPROTO
for route in "mr:pr $BR" "diffs:files $IID 100" "tree:tree $HEAD_SHA" "blob:blob $A_BLOB 1000" \
  "commits:commits $IID 100" "notes:texts $IID comments 100" "discussions:texts $IID review_comments 100" \
  "note_create:comment $IID hello"; do
  name=${route%%:*}
  # shellcheck disable=SC2086
  is "control: the $name answer as it is" "$(rv ${route#*:} | jq -r .rc)" 0
  faults "{\"shape\":{\"$name\":1}}"
  # shellcheck disable=SC2086
  R=$(rv ${route#*:})
  is "the $name answer of the wrong shape: -1 EPROTO" "$(jq -r '"\(.rc) \(.errno)"' <<<"$R")" "-1 EPROTO"
  faults '{}'
done
faults '{"shape":{"mr":1}}'
is "... pr_for_review then holds what the list gave (no base_sha)" "$(rv pr "$BR" | jq -r '"\(.out.number) \(.out.base_sha)"')" "$IID null"
faults '{}'

# ---- fields of the wrong type: null (or skipped), never passed on
faults '{"override":{"mr":{"title":5,"description":["x"],"diff_refs":{"head_sha":"nothex","base_sha":7},"sha":"","changes_count":"1000+","web_url":{}}}}'
is "an MR with wrong-typed fields: each null" \
  "$(rv pr "$BR" | jq -c '[.rc, .out.title, .out.body, .out.head_sha, .out.base_sha, .out.changed_files, .out.url]')" '[0,null,null,null,null,null,null]'
faults '{"override":{"mr":{"iid":99}}}'
is "an MR answer that is another MR: -1 EPROTO" "$(rv pr "$BR" | jq -r '"\(.rc) \(.errno)"')" "-1 EPROTO"
faults '{"override":{"diffs":{"new_path":7}}}'
is "diff entries without a string new_path are skipped" "$(rv files "$IID" 100 | jq -r '"\(.rc) \(.out | length)"')" "0 0"
faults '{"override":{"diffs":{"diff":5,"renamed_file":"yes"}}}'
is "a diff that is no string: no patch, no counts; renamed_file not true: not a rename" \
  "$(rv files "$IID" 100 | jq -r '[.out[] | select(has("patch") or .additions != null or .status == "renamed")] | length')" 0
faults '{"override":{"diffs":{"too_large":true}}}'
is "a diff GitLab cut (too_large): no patch" "$(rv files "$IID" 100 | jq -r '[.out[] | select(has("patch"))] | length')" 0
faults '{"override":{"tree":{"id":"zz","mode":100644}}}'
is "tree entries with a bad id and a numeric mode: sha and mode null" \
  "$(rv tree "$HEAD_SHA" | jq -r '[.out[] | "\(.sha) \(.mode)"] | unique | .[]')" "null null"
faults "{\"override\":{\"blob\":{\"size\":3}}}"
like "a blob whose size is not its bytes: EPROTO" "$(rv blob "$A_BLOB" 1000 | jq -r '"\(.rc) \(.errno) \(.err)"')" '^-1 EPROTO .*bytes decoded'
faults "{\"override\":{\"blob\":{\"encoding\":\"text\"}}}"
is "a blob not in base64: EPROTO" "$(rv blob "$A_BLOB" 1000 | jq -r '"\(.rc) \(.errno)"')" "-1 EPROTO"
faults "{\"override\":{\"blob\":{\"sha\":\"$HEAD_SHA\"}}}"
like "a blob answered for another id: EPROTO" "$(rv blob "$A_BLOB" 1000 | jq -r '"\(.rc) \(.errno) \(.err)"')" '^-1 EPROTO .*another blob'
faults '{"override":{"commits":{"id":5,"message":true,"author_name":1}}}'
is "commits with wrong-typed fields: sha and message null, no name" \
  "$(rv commits "$IID" 100 | jq -r '[.out[] | "\(.sha) \(.message) \(.author)"] | unique | .[]')" "null null  <ann@test>
null null  <bot2@test>
null null  <bot@test>"
faults '{"override":{"notes":{"body":5}}}'
is "notes whose body is no string: body null" "$(rv texts "$IID" comments 100 | jq -r '[.out[].body] | unique | .[]')" null
faults '{"override":{"notes":{"system":true}}}'
is "notes that are all system notes: none" "$(rv texts "$IID" comments 100 | jq -c '[.rc, .out]')" '[0,[]]'
faults '{"override":{"note_create":{"id":"x"}}}'
is "a created note whose id is no integer: id null, no url" "$(rv comment "$IID" again | jq -c '[.rc, .out.id, .out.url]')" '[0,null,null]'
faults '{"override":{"mr":{"web_url":5}}}'
is "a note on an MR whose web_url is no string: posted, url null" "$(rv comment "$IID" again | jq -c '[.rc, (.out.id | type), .out.url]')" '[0,"number",null]'
faults '{}'
is "test faults need the Maintainer's token" "$(req "$D/run" POST /projects/42/test_faults '{}')" 403

if grep -qF "$(cat "$D/token")" "$D/forge.log" "$D/rv.err"; then fail "no log holds a token"; else ok "no log holds a token"; fi
done_testing
