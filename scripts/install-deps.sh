#!/bin/sh
# Install what airlock needs to build, test and benchmark on Debian 12.
# Idempotent; needs root (or sudo). Only Debian packages.
set -eu
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
PKGS="gcc make meson ninja-build pkg-config git curl openssl python3 ca-certificates
  iproute2 util-linux procps passwd
  libseccomp-dev libfyaml-dev libjansson-dev libcurl4-openssl-dev
  libc-ares-dev libmicrohttpd-dev libcmocka-dev libjwt-dev libssl-dev libsqlite3-dev
  clang libclang-rt-14-dev bubblewrap python3-jsonschema libkeyutils-dev keyutils
  man-db groff-base jq
  gh"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "airlock: installing:$missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
  echo "airlock: installed:$missing" >&2
else
  echo "airlock: every package airlock needs is already installed" >&2
fi
