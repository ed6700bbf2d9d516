#!/bin/bash
# Build the Docker images of the docker backend locally, without a registry
# and without any network pull: each image is a root filesystem tarball
# assembled from this host's files and loaded with `docker import`.
#
#   scripts/docker-images.sh [BUILD_DIR]      (default: ./build)
#
#   airlock-proxy:local  the airlock and airlock-net binaries, their shared
#                        libraries and the dynamic loader; entrypoint
#                        `airlock` (proxy, relay). Runs as 65534.
#   airlock-agent:local  a small Debian userland taken from the host's /usr:
#                        sh/bash, coreutils, git (with git-core helpers), curl,
#                        getent, make, python3, plus the airlock binaries (probe
#                        inner side) and the bundled agents in
#                        /usr/share/airlock/agents (`ticket --backend docker`).
#   airlock-forge:local  TEST ONLY, when the build has the test forge: the
#                        airlock-forge binary with git; tests run it in a
#                        container on an internal network (docker_ticket.sh).
#
# Env: PROXY_IMAGE, AGENT_IMAGE, FORGE_IMAGE override the tags; DOCKER the
# client binary.
set -Eeuo pipefail
# a step that fails says which (set -e alone exits without a word)
trap 'echo "docker-images: failed (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
BUILD=${1:-build}
DOCKER=${DOCKER:-docker}
PROXY_IMAGE=${PROXY_IMAGE:-airlock-proxy:local}
AGENT_IMAGE=${AGENT_IMAGE:-airlock-agent:local}
FORGE_IMAGE=${FORGE_IMAGE:-airlock-forge:local}
SRC=$(cd "$(dirname "$0")/.." && pwd)
AIRLOCK_BIN=$BUILD/src/cli/airlock
[ -x "$AIRLOCK_BIN" ] || { echo "docker-images: no $AIRLOCK_BIN (build first)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-images.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# copy FILE into ROOT at the same path, following symlinks for the content
# but recreating the link itself too (the loader looks names up by path).
copy_path() {
  local root=$1 f=$2
  [ -e "$f" ] || return 0
  mkdir -p "$root$(dirname "$f")"
  if [ -L "$f" ]; then
    cp -a "$f" "$root$f" 2>/dev/null || true
    local t; t=$(readlink -f "$f")
    [ -e "$root$t" ] || copy_path "$root" "$t"
  else
    [ -e "$root$f" ] || cp -a "$f" "$root$f"
  fi
}

# copy a binary and every shared library ldd names for it
copy_with_libs() {
  local root=$1 bin=$2 lib
  copy_path "$root" "$bin"
  while read -r lib; do copy_path "$root" "$lib"; done < <(
    ldd "$bin" 2>/dev/null | awk '/=> \//{print $3} /^[ \t]*\//{print $1}')
}

# the libraries airlock opens on first use with dlopen(3) (common/lazylib.h):
# ldd does not list them, so they are named by their sonames in the source
# and found through the loader's cache, with their own dependencies
copy_lazy_libs() {
  local root=$1 so path cache
  # the loader's cache read once, whole: `ldconfig -p | awk '... exit'` under
  # pipefail fails now and then (awk's early exit gives ldconfig SIGPIPE:
  # status 141, and set -e ended the script without a word)
  cache=$(ldconfig -p)
  for so in $(grep -rhoE '(SONAME|dlopen\() *"lib[^"]*\.so\.[0-9]+"' "$SRC/src/lib" |
    grep -oE 'lib[^"]*' | sort -u); do
    path=$(awk -v s="$so" '$1 == s && /x86-64|x86_64|AArch64|aarch64/ {print $NF; exit}' <<<"$cache")
    [ -n "$path" ] || path=$(awk -v s="$so" '$1 == s {print $NF; exit}' <<<"$cache")
    [ -n "$path" ] || { echo "docker-images: $so (opened by airlock on first use) not found" >&2; exit 1; }
    copy_with_libs "$root" "$(readlink -f "$path")"
    copy_path "$root" "$path"
  done
}

base_files() {
  local root=$1 uid=$2 name=$3
  mkdir -p "$root"/{etc,tmp,workspace,proc,sys,dev} "$root"/usr/{bin,lib,lib64,sbin}
  # usrmerge: /lib, /lib64, /bin are links into /usr on Debian 12
  for d in bin lib lib64 sbin; do [ -L "/$d" ] && cp -a "/$d" "$root/$d"; done
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%s:%s:%s:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
    "$name" "$uid" "$uid" "$name" >"$root/etc/passwd"
  printf 'root:x:0:\n%s:x:%s:\nnogroup:x:65534:\n' "$name" "$uid" >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  chmod 1777 "$root/tmp"
}

# ---- proxy ----
P=$WORK/proxy
base_files "$P" 65534 nobody
copy_with_libs "$P" "$(readlink -f "$AIRLOCK_BIN")"
copy_lazy_libs "$P"
mkdir -p "$P/usr/bin"
cp "$AIRLOCK_BIN" "$P/usr/bin/airlock"
# airlock-net: the `relay` verb (the Compose rendering's relay service)
if [ -x "$BUILD/src/cli/airlock-net" ]; then
  copy_with_libs "$P" "$(readlink -f "$BUILD/src/cli/airlock-net")"
  cp "$BUILD/src/cli/airlock-net" "$P/usr/bin/airlock-net"
fi
[ -d /etc/ssl/certs ] && { mkdir -p "$P/etc/ssl"; cp -aL /etc/ssl/certs "$P/etc/ssl/" 2>/dev/null || true; }
tar -C "$P" --numeric-owner -cf "$WORK/proxy.tar" .
"$DOCKER" import \
  --change 'ENTRYPOINT ["/usr/bin/airlock"]' \
  --change 'USER 65534:65534' \
  --change 'WORKDIR /' \
  "$WORK/proxy.tar" "$PROXY_IMAGE" >/dev/null
echo "built $PROXY_IMAGE ($(du -sh "$WORK/proxy.tar" | cut -f1))"

# ---- agent ----
A=$WORK/agent
base_files "$A" 1000 agent
for b in sh dash bash cat ls env echo id true false mkdir rm cp mv sed grep awk mawk head tail \
  wc sort tr cut sleep test stat readlink touch chmod git curl getent timeout find xargs diff \
  setarch nc make patch python3 printf kill pwd uname basename dirname date tee ln \
  whoami; do
  p=$(PATH=/usr/bin:/bin type -P "$b" 2>/dev/null || true)
  [ -n "$p" ] && copy_with_libs "$A" "$(readlink -f "$p")" && copy_path "$A" "$p"
done
[ -d /usr/lib/git-core ] && for f in /usr/lib/git-core/*; do copy_with_libs "$A" "$f"; done
[ -d /usr/share/git-core ] && { mkdir -p "$A/usr/share"; cp -a /usr/share/git-core "$A/usr/share/"; }
[ -d /etc/ssl/certs ] && { mkdir -p "$A/etc/ssl"; cp -aL /etc/ssl/certs "$A/etc/ssl/" 2>/dev/null || true; }
# libnss for getent/glibc name lookups (files + dns)
for l in /usr/lib/x86_64-linux-gnu/libnss_files.so.2 /usr/lib/x86_64-linux-gnu/libnss_dns.so.2 \
  /usr/lib/x86_64-linux-gnu/libresolv.so.2; do copy_path "$A" "$l"; done
# python3's standard library (the bundled agents are Python), without its
# test suite; its extension modules with their libraries
PY=$(readlink -f "$(PATH=/usr/bin:/bin type -P python3 2>/dev/null || true)" 2>/dev/null || true)
if [ -n "$PY" ]; then
  PYLIB=/usr/lib/$(basename "$PY")
  if [ -d "$PYLIB" ]; then
    mkdir -p "$A/usr/lib"
    tar -C /usr/lib --exclude="$(basename "$PY")/test" --exclude='*/__pycache__' \
      --exclude='*/site-packages/*' --exclude='*/dist-packages/*' \
      -cf - "$(basename "$PY")" | tar -C "$A/usr/lib" -xf -
    for so in "$PYLIB"/lib-dynload/*.so; do copy_with_libs "$A" "$so"; done
  fi
fi
mkdir -p "$A/usr/share/airlock/agents"
cp -a "$SRC/examples/agents/." "$A/usr/share/airlock/agents/"
for b in "$AIRLOCK_BIN" "$BUILD/src/cli/airlock-net"; do
  [ -x "$b" ] && copy_with_libs "$A" "$(readlink -f "$b")" && cp "$b" "$A/usr/bin/$(basename "$b")"
done
copy_lazy_libs "$A"
tar -C "$A" --numeric-owner -cf "$WORK/agent.tar" .
"$DOCKER" import \
  --change 'USER 1000:1000' \
  --change 'WORKDIR /workspace' \
  --change 'ENV PATH=/usr/bin:/bin HOME=/workspace' \
  "$WORK/agent.tar" "$AGENT_IMAGE" >/dev/null
echo "built $AGENT_IMAGE ($(du -sh "$WORK/agent.tar" | cut -f1))"

# ---- the test forge (TEST ONLY) ----
FORGE_BIN=$BUILD/tests/forge-emulator/airlock-forge
if [ -x "$FORGE_BIN" ]; then
  F=$WORK/forge
  base_files "$F" 0 root
  copy_with_libs "$F" "$(readlink -f "$FORGE_BIN")"
  cp "$FORGE_BIN" "$F/usr/bin/airlock-forge"
  for b in sh git; do
    p=$(PATH=/usr/bin:/bin type -P "$b")
    copy_with_libs "$F" "$(readlink -f "$p")" && copy_path "$F" "$p"
  done
  [ -d /usr/lib/git-core ] && for f in /usr/lib/git-core/*; do copy_with_libs "$F" "$f"; done
  [ -d /usr/share/git-core ] && { mkdir -p "$F/usr/share"; cp -a /usr/share/git-core "$F/usr/share/"; }
  mkdir -p "$F/data"
  tar -C "$F" --numeric-owner -cf "$WORK/forge.tar" .
  "$DOCKER" import \
    --change 'ENTRYPOINT ["/usr/bin/airlock-forge"]' \
    --change 'WORKDIR /' \
    --change 'ENV PATH=/usr/bin:/bin' \
    "$WORK/forge.tar" "$FORGE_IMAGE" >/dev/null
  echo "built $FORGE_IMAGE ($(du -sh "$WORK/forge.tar" | cut -f1))"
fi
