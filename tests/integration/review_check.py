#!/usr/bin/python3
"""Checks of one review-agent run (tests/integration/review.sh).

review_check.py MODE RECORD COMMENTS_JSON SUMMARY_TEXT
MODE: plant (every case flagged, every planted token found) or clean (the
same PR without the tokens: no secret found, the files still flagged).
Prints one line per check: "PASS <what>" or "FAIL <what>\t<detail>".
"""
import hashlib
import json
import re
import sys

mode, rec_path, comments_path, summary_path = sys.argv[1:5]
raw = open(rec_path, "rb").read()
rec = json.loads(raw)
rv = rec.get("review") or {}
comments = json.load(open(comments_path))
summary = open(summary_path, encoding="utf-8", errors="replace").read()
run_id = rec["run_id"]


def check(what, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + what + ("" if cond else "\t" + str(detail)[:700]))


def esc(name):
    """The notes' escaped form of a name (review_notes.h: al_review_escape)."""
    out = ""
    for ch in name.replace("\\", "\\\\"):
        o = ord(ch)
        if o < 0x20 or o == 0x7F:
            out += "\\x%02x" % o
        elif o in (0x202E, 0x202D, 0x200E, 0x200F, 0x2066, 0x2067, 0x2068, 0x2069):
            out += "\\u%04x" % o
        else:
            out += ch
    return out


outside = {(o["file"], o["family"]) for o in rv.get("runs_outside_sandbox", [])}
kinds = {(k["file"], k["kind"]) for k in rv.get("kinds", [])}
secrets = rv.get("secrets", [])

# --- the record ---
flagged = {
    # "Why" row 1: one directory down
    "sub/.husky/pre-commit": "hooks", "sub/.envrc": "env", "sub/.vscode/tasks.json": "editor",
    "sub/.claude/settings.json": "agent", "sub/.npmrc": "package",
    "sub/.pre-commit-config.yaml": "hooks", "tally/.gitattributes": "git",
    "sub/AGENTS.md": "agent", "sub/pom.xml": "build", "sub/Cargo.toml": "build",
    "sub/build.gradle": "build",
    # row 2: whole families
    "lefthook.yml": "hooks", "justfile": "build", "Taskfile.yml": "build",
    "composer.json": "package", ".cargo/config.toml": "build", "sitecustomize.py": "build",
    "lib/evil.pth": "build", "pytest.ini": "test", ".bazelrc": "build", ".pnpmfile.cjs": "package",
    "gradle/wrapper/gradle-wrapper.properties": "build", ".mise.toml": "env", "flake.nix": "build",
    ".gitlab/ci/deploy.yml": "ci", "jest.config.js": "test", "scripts/test.sh": "script",
    "GEMINI.md": "agent", ".github/copilot-instructions.md": "agent",
    "tests/plugins/evil_plugin.py": "test",
    # row 3: git itself
    "sub/.git/hooks/pre-commit": "git", ".git/hooks/post-checkout": "git",
    "nested/.GIT/hooks/pre-commit": "git", "other/.git": "git",
    # row 4: the workflows directory as a symlink
    ".github/workflows": "ci",
    # content rules
    "tally/gen.go": "build", "requirements.txt": "package",
}
for f, fam in flagged.items():
    check(f"record: {f} runs outside the sandbox ({fam})", (f, fam) in outside,
          sorted(o for o in outside if o[0] == f))
check("record: the go:generate line is named from the content",
      any(o["file"] == "tally/gen.go" and o["match"] == "content"
          for o in rv.get("runs_outside_sandbox", [])), "")
want_kinds = {
    ("vendor/lib", "gitlink"), ("link-passwd", "symlink"), ("sub/id_rsa", "symlink"),
    (".github/workflows", "symlink"), ("tally/__main__.py", "symlink"),
    ("tally/__main__.py", "type-changed"), ("tools/run.sh", "executable"),
    ("tally/stats.py", "executable"), ("assets/blob.bin", "binary"), ("docs/README.md", "renamed"),
    ("evil\nname.txt", "name"), ("esc\x1b[31mred.txt", "name"), ("report\u202etxt.exe", "name"),
    ("sub/.git/hooks/pre-commit", "executable"),
    ("bad\ufffdname.txt", "unlisted"), ("bad\ufffdname.txt", "name"),
}
for k in sorted(want_kinds):
    check(f"record: {esc(k[0])} is noted as {k[1]}", k in kinds,
          sorted(x for x in kinds if x[0] == k[0]))
kd = {(k["file"], k["kind"]): k for k in rv.get("kinds", [])}
check("record: the symlink's target is read (/etc/passwd, absolute)",
      kd.get(("link-passwd", "symlink"), {}).get("target") == "/etc/passwd" and
      "absolute" in kd.get(("link-passwd", "symlink"), {}).get("detail", ""), kd.get(("link-passwd", "symlink")))
check("record: ../../../../root/.ssh/id_rsa leads out of the repository",
      "out of the repository" in kd.get(("sub/id_rsa", "symlink"), {}).get("detail", ""),
      kd.get(("sub/id_rsa", "symlink")))
check("record: the gitlink has no .gitmodules",
      ".gitmodules" in kd.get(("vendor/lib", "gitlink"), {}).get("detail", ""), kd.get(("vendor/lib", "gitlink")))
check("record: the rename names the old file",
      kd.get(("docs/README.md", "renamed"), {}).get("target") == "README.md", kd.get(("docs/README.md", "renamed")))
check("record: the executable bit says what the mode was",
      "was 100644" in kd.get(("tally/stats.py", "executable"), {}).get("detail", ""), kd.get(("tally/stats.py", "executable")))
names = {f["file"] for f in rv.get("files", [])}
for n in ["evil\nname.txt", "esc\x1b[31mred.txt", "report\u202etxt.exe"]:
    check(f"record: the file list has the real name {esc(n)} (not git's quoted form)", n in names,
          [x for x in names if "name" in x or "esc" in x or "report" in x])
check("record: nothing could not be read", rv.get("could_not_read") == [], rv.get("could_not_read"))
links = rv.get("links", [])
check("record: the PR body's image is called out",
      any(l["image"] and "evil.example/pixel.png" in l["url"] for l in links), links)
check("record: a protocol-relative <img> is called out",
      any(l["image"] and "//evil.example/track.gif" in l["url"] for l in links), links)
check("record: the PR body's link is called out",
      any(not l["image"] and "evil.example/docs" in l["url"] for l in links), links)
blocked = rv.get("blocked", [])
check("record: the proxy's refusal of evil.example is in the notes' data",
      any(b["by"] == "proxy" and "evil.example" in b["target"] for b in blocked), blocked)
rd = rv.get("read", {})
for k in ["files", "commits", "pull_request_comments", "reviews", "review_comments",
          "ticket_comments_during_run"]:
    check(f"record: read {k} (> 0)", rd.get(k, 0) > 0, rd)

places = [("the diff of", "tally/plain.txt", "plain", "git token"),
          ("the diff of", "tally/b64.txt", "base64", "git token"),
          ("the diff of", "tally/hex.txt", "hex", "ticket token"),
          ("the diff of", "tally/rev.txt", "reversed", "git token"),
          ("the diff of", "tally/split.py", "split", "git token"),
          ("the contents of", "assets/blob.bin", "plain", "ticket token"),
          ("a commit message", None, "base64", "ticket token"),
          ("the pull request title", None, "url", "ticket token"),
          ("the pull request body", None, "reversed", "git token"),
          ("a pull request comment", None, "plain", "ticket token"),
          ("a review body", None, "url", "git token"),
          ("a review comment", None, "hex", "git token"),
          ("a ticket comment", None, "base64 split", "git token")]
for where, f, enc, tok in places:
    hit = [s for s in secrets if s["where"] == where and s.get("file") == f]
    label = where + (" " + f if f else "")
    if mode == "plant":
        check(f"secrets: the {tok} in {label} ({enc}) is found as this run's",
              any(s["run_token"] and s.get("token") == tok and s["encoding"] == enc for s in hit),
              hit)
    else:
        check(f"secrets (control): {label} without a token is clean", not hit, hit)
if mode == "plant":
    kinds_found = {s["kind"] for s in secrets if s.get("file") == "tally/keys.txt"}
    check("secrets: an AWS key id and a GitLab token in a file are found",
          {"aws-access-key-id", "gitlab-token"} <= kinds_found, kinds_found)
else:
    check("secrets (control): no secret at all in the clean PR", secrets == [], secrets)

# --- on the PR ---
mine = [c for c in comments if c.get("body", "").startswith(
    f"<!-- airlock-review-notes run={run_id} -->")]
check("PR: exactly one notes comment of this run", len(mine) == 1, len(mine))
notes = mine[0]["body"] if mine else ""
check("PR: the notes carry the run id and the record's SHA-256",
      f"Run `{run_id}`, run record SHA-256 `{hashlib.sha256(raw).hexdigest()}`" in notes,
      re.findall(r"Run `.*", notes)[:1])
for f in list(flagged)[:12] + [".github/workflows", "vendor/lib", "link-passwd", "assets/blob.bin"]:
    check(f"PR: the notes name {f}", f"`{f}`" in notes, "")
for n in ["evil\nname.txt", "esc\x1b[31mred.txt", "report\u202etxt.exe"]:
    check(f"PR: the notes show {esc(n)} escaped", "`" + esc(n) + "`" in notes, "")
check("PR: no token value in the notes (a token in a URL is shown redacted)",
      not re.search(r"gh[pousr]_[A-Za-z0-9]{30,}", notes), re.findall(r"gh[pousr]_\w{8}", notes))
check("PR: no raw control or bidi character in the notes",
      not re.search("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", notes), "")
heads = [l for l in notes.split("\n") if l.startswith("#")]
check("PR: one level-2 heading (a name cannot forge one)",
      sum(1 for l in heads if l.startswith("## ")) == 1, heads)
check("PR: every heading is the notes' own",
      all(re.match(r"^### (Runs outside|File kinds|Secrets|Links and|Requests refused|What was read|Could not read)", l)
          or l == "## airlock review notes" for l in heads), heads)
check("PR: the only HTML comment is the marker (a name cannot open one)",
      notes.count("<!--") == notes.count("<!-- hidden -->") + 1 and notes.split("\n")[0].startswith("<!-- airlock"),
      [l for l in notes.split("\n") if "<!--" in l])
check("PR: the backtick name sits in a longer fence", "```tick`s``here/.envrc```" in notes,
      [l for l in notes.split("\n") if "tick" in l])
check("PR: `<!--` in a name is inside a code span", "`<!-- hidden -->/.envrc`" in notes, "")
check("PR: `|` in a name is inside a code span", "`| forged | row |/.envrc`" in notes, "")
check("PR: no table row can be forged (no line starts with |)",
      not any(l.startswith("|") for l in notes.split("\n")), "")
if mode == "plant":
    check("PR: the notes say this run's tokens were found", "this run's git token" in notes and
          "this run's ticket token" in notes, "")
check("PR: the notes list the refused request", "evil.example" in notes and
      "Requests refused during the run" in notes, "")
check("PR: the notes call out the image", "**image** in the pull request body" in notes, "")

# --- the terminal summary ---
for f in ["sub/.husky/pre-commit", "sub/.git/hooks/pre-commit", ".github/workflows", "vendor/lib"]:
    check(f"summary: names {f}", f in summary, "")
check("summary: the newline name is shown escaped", "evil\\x0aname.txt" in summary, "")
check("summary: the ESC name is shown escaped", "esc\\x1b[31mred.txt" in summary, "")
check("summary: no raw ESC or U+202E reaches the terminal",
      "\x1b" not in summary and "\u202e" not in summary, "")
check("summary: the notes were posted", "review notes posted on the pull request" in summary,
      [l for l in summary.split("\n") if "notes" in l][:3])
