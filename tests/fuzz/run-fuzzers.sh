#!/bin/bash
# Run libFuzzer targets for a bounded time from their seed corpora.
#   run-fuzzers.sh FUZZER SEED_DIR     one target (what the meson tests call)
#   run-fuzzers.sh [BUILD_DIR]         every fuzz_* target of BUILD_DIR
#                                      (default build-fuzz)
# FUZZ_SECONDS (default 30) bounds each target. New corpus entries go to a
# scratch directory under the build tree, never into tests/fuzz/corpus.
# Exit status: 0 when no target crashed, leaked, timed out or tripped a
# sanitizer; 1 otherwise (the reproducer is left in the scratch directory
# and named in the output).
set -u
secs=${FUZZ_SECONDS:-30}

run_one() { # FUZZER SEED_DIR
  local exe=$1 seeds=$2 name work rc
  name=$(basename "$exe")
  work="$(dirname "$exe")/fuzz-work/$name"
  rm -rf "$work/new"
  mkdir -p "$work/new" "$work/artifacts"
  [ -d "$seeds" ] || { echo "$name: no seed corpus at $seeds" >&2; return 1; }
  echo "$name: fuzzing for ${secs}s from $seeds"
  # -rss_limit_mb/-timeout: a hang or a blow-up is a finding too.
  LSAN_OPTIONS=suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=1 \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1 \
    "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$work/new" "$seeds" >"$work/log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -60 "$work/log"
    echo "$name: FAILED (status $rc); reproducer(s):" $(ls "$work/artifacts") >&2
    return 1
  fi
  grep -E "^stat::number_of_executed_runs|^stat::new_units_added" "$work/log" | sed "s/^/$name: /"
  return 0
}

if [ $# -eq 2 ] && [ -x "$1" ]; then
  run_one "$1" "$2"
  exit $?
fi
build=${1:-build-fuzz}
src=$(cd "$(dirname "$0")" && pwd)
rc=0 n=0
for exe in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$exe" ] && [ -f "$exe" ] || continue
  n=$((n + 1))
  run_one "$exe" "$src/corpus/$(basename "$exe")" || rc=1
done
[ $n -gt 0 ] || { echo "no fuzz targets in $build/tests/fuzz (configure with CC=clang -Dfuzz=true)" >&2; exit 1; }
exit $rc
