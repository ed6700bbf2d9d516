#!/bin/bash
# Issue #33's benchmarks (items 2–5), one command each, on the test forge
# (loopback only; never a real API). Not a test: it prints each measured
# value beside its target (and bwrap, the anchor, where there is one).
#   bench/issue33.sh 2 [RUNS]        airlock's own time per ticket: the demo
#                                    ticket (acme/tally#1, the bundled
#                                    patch-agent) RUNS times one after the
#                                    other; p50 of every phase but the agent
#   bench/issue33.sh 3 [RUNS]        CPU per sandbox start vs bwrap, and the
#                                    network policy's wall vs bwrap
#                                    (bench/sandbox.py --targets, interleaved)
#   bench/issue33.sh 4 [N,N,...]     N concurrent tickets with the bundled
#                                    agent (default 1,16,64): all must end in
#                                    their PR; airlock's own CPU per ticket
#                                    and per-run PSS (bench/issue33_drive.py)
#   bench/issue33.sh 5 [N] [CAP]     serve under a backlog: N rows queued
#                                    before the daemon starts, drained at CAP
#                                    (bench/serve.sh 0 N with SERVE_CAP)
# BUILD=DIR picks the build (default build-rel: a -Dbuildtype=release tree).
# Needs root (the sandbox, the PSS of other uids' processes). Exits non-zero
# with a message when a run fails, a PR is missing or a row is lost.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build-rel}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
export AIRLOCK=$BUILD/src/cli/airlock AIRLOCK_SRC=$top AIRLOCK_FORGE=$BUILD/tests/forge-emulator/airlock-forge
[ -x "$AIRLOCK" ] || { echo "issue33: no airlock at $AIRLOCK (BUILD=DIR)" >&2; exit 2; }
item=${1:-}; shift || :
echo "# issue #33 item $item, $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $BUILD ($(git -C "$top" rev-parse --short HEAD))"

case $item in
3)
  exec python3 "$top/bench/sandbox.py" --airlock "$AIRLOCK" --runs "${1:-200}" --net-runs "${1:-200}" \
    --docker-runs 0 --markdown --targets ;;
5)
  SERVE_CAP=${2:-4} BUILD=$BUILD exec bash "$top/bench/serve.sh" 0 "${1:-1000}" ;;
2|4) ;;
*) echo "usage: bench/issue33.sh 2 [RUNS] | 3 [RUNS] | 4 [N,N,...] | 5 [N] [CAP]" >&2; exit 2 ;;
esac

. "$top/tests/integration/lib.sh"
. "$top/tests/integration/forgeenv.sh"
levels=${1:-$([ "$item" = 2 ] && echo 10 || echo 1,16,64)}
max=$(echo "$levels" | tr ',' '\n' | sort -n | tail -1)
# the demo fixture with MAX copies of its ticket (acme/tally#1..#MAX), so
# each concurrent ticket has its own issue; the project beside it
mkdir -p "$T_TMP/fx"
cp -r "$top/examples/demo/project" "$T_TMP/fx/project"
python3 - "$top/examples/demo/fixture.json" "$T_TMP/fx/fixture.json" "$max" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
t = next(r for r in f["repositories"] if r["full_name"] == "acme/tally")
tmpl = t["issues"][0]
t["issues"] = [dict(tmpl, number=n) for n in range(1, int(sys.argv[3]) + 1)]
json.dump(f, open(sys.argv[2], "w"), indent=1)
PY
FE_FIXTURE=$T_TMP/fx/fixture.json forge_env_start || { echo "issue33: the test forge or broker did not start" >&2; exit 1; }
# the agent: the bundled patch-agent, then the shell's `times` on stderr
# (its children's user and system CPU: the agent's own, subtracted from the
# ticket's tree to leave airlock's)
# (the agent's directory is what the sandbox sees: the agent beside it)
mkdir -p "$T_TMP/agent"; chmod 755 "$T_TMP/agent"
cp "$top/examples/agents/patch-agent" "$top/examples/agents/agentlib.py" "$T_TMP/agent/"
cat >"$T_TMP/agent/agent" <<'SH2'
#!/bin/sh
"$(dirname "$0")/patch-agent" "$@"
rc=$?
# (times itself, not in $(...): a subshell has no children to report)
echo "ISSUE33-AGENT-TIMES" >&2
times >&2
exit $rc
SH2
chmod 755 "$T_TMP/agent/agent"
python3 "$top/bench/issue33_drive.py" --item "$item" --levels "$levels" --airlock "$AIRLOCK" \
  --policy "$FE_POLICY" --agent "$T_TMP/agent/agent" --dir "$T_TMP" --broker-pid "$FE_BROKER_PID"
