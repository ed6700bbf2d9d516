#!/bin/bash
# The core binary's start-up cost (issue #19, bench/README.md "The levers"):
# `airlock` (run, the sandbox, the proxy) must not load libcrypto, c-ares,
# libfyaml nor jansson at exec (each is opened on first use: common/lazycrypto.c,
# common/lazylib.h), libseccomp (its filter is compiled at build time:
# sandbox/seccomp_gen.c), libcap (sandbox/confine.c calls capset(2)), nor
# libcurl/libssl (airlock-net). Read from the ELF's DT_NEEDED entries and
# the loader's own log (LD_DEBUG=files, ld.so(8)), not timed.
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
for lib in libcrypto libssl libseccomp libcurl libcap libcares libfyaml libjansson; do
  check_not "airlock does not link $lib" grep -q "^$lib\.so" <<<"$core"
done
# `airlock run -- true` under the built-in default policy opens none of the
# lazily loaded libraries; the same run with a policy file and a network
# policy opens libfyaml (the file) and c-ares (the proxy's resolver): the
# control that the loader's log shows a library opened on first use.
if is_asan_build; then
  skip "LD_DEBUG output of an ASan build is not comparable"
else
  LD_DEBUG=files "$AIRLOCK" run -q -- true 2>"$T_TMP/ld.default" || true
  like "control: the loader's log names what it opens" "$(cat "$T_TMP/ld.default")" "file=libc\.so\.6"
  for lib in libfyaml libcares libcrypto libjansson; do
    check_not "airlock run -- true (default policy) does not open $lib" \
      grep -q "file=$lib\.so" "$T_TMP/ld.default"
  done
  printf 'version: 1\nnetwork:\n  allow:\n    - {host: a.test, port: 8443}\n  pin:\n    - {host: a.test, address: 127.0.0.1}\n' >"$T_TMP/net.yaml"
  LD_DEBUG=files "$AIRLOCK" run -q -p "$T_TMP/net.yaml" -- true 2>"$T_TMP/ld.net" || true
  for lib in libfyaml libcares; do
    check "control: with a policy file and a network policy, $lib is opened on first use" \
      grep -q "file=$lib\.so" "$T_TMP/ld.net"
  done
  # and the canonical form (JSON) of `airlock policy check` opens jansson
  printf 'version: 1\n' >"$T_TMP/v1.yaml"
  LD_DEBUG=files "$AIRLOCK" policy check "$T_TMP/v1.yaml" >/dev/null 2>"$T_TMP/ld.check" || true
  check "control: airlock policy check opens libjansson on first use" \
    grep -q "file=libjansson\.so" "$T_TMP/ld.check"
fi
# and the lazily loaded SHA-256 works: the policy hash of a known text
printf 'version: 1\n' >"$T_TMP/p.yaml"
out=$("$AIRLOCK" policy check "$T_TMP/p.yaml" 2>&1)
canon=$(head -1 <<<"$out")
want=$(printf '%s' "$canon" | sha256sum | cut -d' ' -f1)
like "SHA-256 through the lazily loaded libcrypto matches sha256sum" "$out" "sha256: $want"
done_testing
