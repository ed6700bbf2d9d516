#!/bin/bash
# Static checks of airlock's C code (the code-quality gate of CI):
#   cppcheck   src/ tests/forge-emulator/ tests/gitlab-forge/ tests/fuzz/
#   clang-tidy every .c of src/ and tests/forge-emulator/, tests/gitlab-forge/ (.clang-tidy)
#   clang-format --dry-run --Werror over src/ and tests/ (.clang-format)
#   no merge conflict markers in any tracked file
#   layering   scripts/layering.py: the README's May call lines, no loop
# Usage: scripts/lint.sh [BUILD_DIR]   (a meson build dir with
# compile_commands.json; default build-lint, set up when missing).
# Exit 0 clean, 1 on findings, 77 (meson's "skipped") when a tool is missing.
# Suppressions: inline `// cppcheck-suppress ID ; reason` and
# `// NOLINTNEXTLINE(check): reason`, plus scripts/lint/cppcheck-suppressions.txt.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${1:-build-lint}
case $build in /*) ;; *) build=$top/$build ;; esac

for tool in cppcheck clang-tidy clang-format python3; do
  command -v "$tool" >/dev/null || { echo "lint: SKIP: $tool is not installed"; exit 77; }
done
if [ ! -f "$build/compile_commands.json" ]; then
  CC=clang meson setup "$build" >/dev/null || { echo "lint: meson setup $build failed"; exit 1; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
rc=0

echo "== cppcheck"
# cppcheck.cfg teaches cppcheck json_array_foreach/json_object_foreach, so
# the files that use them are analysed rather than skipped (unknownMacro).
if ! cppcheck --enable=warning,portability,performance --inline-suppr --error-exitcode=1 -q \
  -j"$jobs" --std=c11 -I src/lib -D_GNU_SOURCE -D__linux__ -D__x86_64__ \
  --library=posix --library=scripts/lint/cppcheck.cfg \
  --suppressions-list=scripts/lint/cppcheck-suppressions.txt \
  src tests/forge-emulator tests/gitlab-forge tests/fuzz; then
  echo "lint: cppcheck found problems"
  rc=1
fi

echo "== clang-tidy"
# clang-tidy gets the build's compile commands with clang as the compiler
# (a gcc-configured build's flags otherwise trip clang's diagnostics).
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
python3 - "$build/compile_commands.json" "$db" "$top" >"$db/files" <<'PY'
import json, os, shlex, sys
src, out, top = sys.argv[1:4]
entries, files = [], []
for e in json.load(open(src)):
    path = os.path.normpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(path, top)
    if not (rel.startswith("src/") or rel.startswith("tests/forge-emulator/") or rel.startswith("tests/gitlab-forge/")) or rel in files:
        continue
    args = shlex.split(e["command"])
    # meson puts a compiler launcher it finds (ccache, sccache) first
    while len(args) > 1 and os.path.basename(args[0]) in ("ccache", "sccache"):
        args = args[1:]
    args[0] = "clang"
    e["command"] = shlex.join(args + ["-Wno-unknown-warning-option"])
    entries.append(e)
    files.append(rel)
json.dump(entries, open(os.path.join(out, "compile_commands.json"), "w"))
print("\n".join(files))
PY
if [ ! -s "$db/files" ]; then
  echo "lint: no source files in $build/compile_commands.json"
  rc=1
elif ! xargs -P"$jobs" -n1 clang-tidy -p "$db" --quiet <"$db/files" >"$db/tidy.log" 2>&1 ||
  grep -qE "(warning|error):" "$db/tidy.log"; then
  grep -vE "^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing" "$db/tidy.log"
  echo "lint: clang-tidy found problems"
  rc=1
fi

echo "== clang-format"
fmt_files=$(find src tests -path tests/forge-emulator/fixtures -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort)
# shellcheck disable=SC2086
if ! clang-format --dry-run --Werror $fmt_files; then
  echo "lint: run clang-format -i on the files above"
  rc=1
fi

echo "== layering"
# each folder's README "May call:" line, and no loop between folders
python3 "$top/scripts/layering.py" "$top/src/lib" || rc=1

echo "== merge conflict markers"
# A merge resolved in a hurry can leave `<<<<<<< ` / `>>>>>>> ` lines in a
# file no compiler reads (docs, scripts, test data): look in every tracked
# file. Outside a git checkout there is nothing to list, and this says so.
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  if git -C "$top" grep -nE '^(<<<<<<<|>>>>>>>) ' -- .; then
    echo "lint: merge conflict markers in the files above"
    rc=1
  fi
else
  echo "lint: not a git checkout: conflict markers not looked for"
fi

[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
