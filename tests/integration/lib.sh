# Shared helpers for TAP integration tests. Source it from a test script:
#   . "$(dirname "$0")/lib.sh"
# then call plan/ok/fail/skip/check and finish with `done_testing`.
# AIRLOCK (the binary under test) and AIRLOCK_BUILD are set by meson.
set -u
_t_n=0
_t_failed=0
_t_skipped=0
AIRLOCK=${AIRLOCK:-airlock}
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/airlock-test.XXXXXX")
chmod 755 "$T_TMP"
_t_cleanup_cmds=()
# on_exit CMD: run CMD when the test ends. A plain `kill [-SIG] PID...` is
# kept with each PID's start time and signals only that same process: by
# the end, a PID whose process has ended may be another test's (pid_max is
# 32768 on the CI machine and the suite starts thousands of processes; a
# sandbox test's canary once vanished mid-test).
_t_pid_start() { # PID -> its start time (clock ticks since boot), "" when gone
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  printf '%s' "${20:-}"
}
_t_kill_same() { # SIG PID:START... (SIG may be "")
  local sig=$1 a p st
  shift
  for a; do
    p=${a%%:*} st=${a#*:}
    [ -n "$st" ] && [ "$(_t_pid_start "$p")" = "$st" ] || continue
    if [ -n "$sig" ]; then kill "$sig" "$p"; else kill "$p"; fi
  done
}
on_exit() {
  local c="$*" re='^kill( -[A-Za-z0-9]+)?(( [0-9]+)+)$' p out
  if [[ $c =~ $re ]]; then
    out="_t_kill_same '${BASH_REMATCH[1]# }'"
    for p in ${BASH_REMATCH[2]}; do out+=" $p:$(_t_pid_start "$p")"; done
    c=$out
  fi
  _t_cleanup_cmds+=("$c")
}
_t_exit() {
  local c
  for c in "${_t_cleanup_cmds[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
  rm -rf "$T_TMP"
}
trap _t_exit EXIT

_t_line() { local d="$*"; d=${d//$'\n'/ | }; printf '%s' "$d"; }
ok() { _t_n=$((_t_n + 1)); echo "ok $_t_n - $(_t_line "$@")"; }
fail() { _t_n=$((_t_n + 1)); _t_failed=$((_t_failed + 1)); echo "not ok $_t_n - $(_t_line "$@")"; }
skip() { _t_n=$((_t_n + 1)); _t_skipped=$((_t_skipped + 1)); echo "ok $_t_n - # SKIP $*"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# check DESCRIPTION CMD... : ok when CMD exits 0
check() { local d=$1; shift; if "$@" >"$T_TMP/check.out" 2>&1; then ok "$d"; else fail "$d"; sed 's/^/#   /' "$T_TMP/check.out" | head -20; fi; }
# check_not DESCRIPTION CMD... : ok when CMD exits non-zero
check_not() { local d=$1; shift; if "$@" >"$T_TMP/check.out" 2>&1; then fail "$d"; sed 's/^/#   /' "$T_TMP/check.out" | head -20; else ok "$d"; fi; }
# is DESCRIPTION GOT WANT
is() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1"; diag "got:  $2" "want: $3"; fi; }
# like DESCRIPTION GOT REGEX
like() { if printf '%s' "$2" | grep -qE -- "$3"; then ok "$1"; else fail "$1"; diag "got: $(printf '%s' "$2" | head -c 600)" "want match: $3"; fi; }

done_testing() {
  echo "1..$_t_n"
  [ "$_t_failed" -eq 0 ]
}

# Run something as an unprivileged user (created on demand) when we are root.
T_USER=airlock-test
ensure_test_user() {
  [ "$(id -u)" = 0 ] || return 0
  id "$T_USER" >/dev/null 2>&1 || useradd -M -d /nonexistent -s /usr/sbin/nologin "$T_USER" 2>/dev/null || true
}
# A checkout under a 0700 directory (root's home) is out of the test
# user's reach: then as_user runs copies, under T_TMP (0755), of whatever
# argument lies in the build or source tree, with airlock-net beside
# airlock and AIRLOCK_DATA_DIR / AIRLOCK_LIBEXEC_DIR pointing at copies of
# the demo's files and the test forge (issue 27). A reachable tree is used
# as it is.
_t_user_can() { ensure_test_user; setpriv --reuid="$T_USER" --regid="$T_USER" --init-groups -- test -e "$1" 2>/dev/null; }
_t_mirror_dir=
_t_mirror() { # PATH -> the copy's path on stdout
  local src=$1 dst=$T_TMP/mirror$1
  if [ ! -e "$dst" ]; then
    mkdir -p "$(dirname "$dst")"
    cp -a "$src" "$dst"
    local sib
    case $src in "$AIRLOCK" | */airlock)
      for sib in airlock-net airlock-shim; do
        [ -e "$(dirname "$src")/$sib" ] && cp -a "$(dirname "$src")/$sib" "$(dirname "$dst")/"
      done ;;
    esac
    chmod -R a+rX "$T_TMP/mirror"
  fi
  printf '%s' "$dst"
}
_t_mirror_data() { # the demo's files and the test forge, once
  [ -n "$_t_mirror_dir" ] && return 0
  _t_mirror_dir=$T_TMP/mirror-data
  mkdir -p "$_t_mirror_dir/libexec"
  cp -a "$AIRLOCK_SRC/scripts" "$AIRLOCK_SRC/examples/demo" "$AIRLOCK_SRC/examples/agents" "$_t_mirror_dir/"
  [ -x "${AIRLOCK_FORGE:-}" ] && cp -a "$AIRLOCK_FORGE" "$_t_mirror_dir/libexec/"
  chmod -R a+rX "$_t_mirror_dir"
}
# t_reachable PATH: PATH itself when the test user can reach it, else its
# copy (for paths a test binds with ro_paths and runs as root and as the user)
t_reachable() {
  if [ "$(id -u)" != 0 ] || _t_user_can "$1"; then printf '%s' "$1"; else _t_mirror "$1"; fi
}
as_user() {
  if [ "$(id -u)" != 0 ]; then
    "$@"
    return
  fi
  # the user is made here too: a test that runs first on a new machine
  # (faults did, in CI) must not depend on another having made it
  ensure_test_user
  local args=() a env=(PATH=/usr/bin:/bin)
  if [ -n "${AIRLOCK_BUILD:-}" ] && ! _t_user_can "$AIRLOCK"; then
    _t_mirror_data
    env+=(AIRLOCK_DATA_DIR="$_t_mirror_dir" AIRLOCK_LIBEXEC_DIR="$_t_mirror_dir/libexec")
    for a in "$@"; do
      case $a in
        "$AIRLOCK_BUILD"/* | "$AIRLOCK_SRC"/*) [ -e "$a" ] && ! _t_user_can "$a" && a=$(_t_mirror "$a") ;;
      esac
      args+=("$a")
    done
  else
    args=("$@")
  fi
  setpriv --reuid="$T_USER" --regid="$T_USER" --init-groups --reset-env -- env "${env[@]}" "${args[@]}"
}

# True when the binary under test is built with AddressSanitizer.
is_asan_build() { ldd "$AIRLOCK" 2>/dev/null | grep -q libasan; }
