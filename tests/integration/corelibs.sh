#!/bin/bash
# The core binary's start-up cost (issue #19, bench/README.md "The levers"):
# `airlock` (run, the sandbox, the proxy) must not load libcrypto (reached
# through dlopen on first use: common/lazycrypto.c), libseccomp (its filter
# is compiled at build time: sandbox/seccomp_gen.c), nor libcurl/libssl
# (airlock-net). Read from the ELF's DT_NEEDED entries, not timed.
. "$(dirname "$0")/lib.sh"
if ! command -v readelf >/dev/null 2>&1; then
  skip "readelf is not installed (binutils)"; done_testing; exit $?
fi
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
core=$(needed "$AIRLOCK")
net=$(needed "$(dirname "$AIRLOCK")/airlock-net")
# control: the reading sees what a binary links (libc everywhere; libcrypto
# and libcurl in airlock-net)
like "control: airlock links libc" "$core" "libc\.so"
for lib in libcrypto libcurl; do
  check "control: the same check sees $lib in airlock-net" grep -q "^$lib\.so" <<<"$net"
done
for lib in libcrypto libssl libseccomp libcurl; do
  check_not "airlock does not link $lib" grep -q "^$lib\.so" <<<"$core"
done
# and the lazily loaded SHA-256 works: the policy hash of a known text
printf 'version: 1\n' >"$T_TMP/p.yaml"
out=$("$AIRLOCK" policy check "$T_TMP/p.yaml" 2>&1)
canon=$(head -1 <<<"$out")
want=$(printf '%s' "$canon" | sha256sum | cut -d' ' -f1)
like "SHA-256 through the lazily loaded libcrypto matches sha256sum" "$out" "sha256: $want"
done_testing
