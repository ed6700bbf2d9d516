#!/bin/sh
# make-test-ca.sh DIR [HOST...]: a throwaway test CA and a server certificate
# for airlock-forge (TEST ONLY). Writes DIR/ca.crt, DIR/ca.key, DIR/server.crt,
# DIR/server.key. The server certificate's SANs: the given host names
# (default api.forge.test forge.test), localhost and 127.0.0.1; a HOST written
# IP:ADDR adds an IP address SAN instead (the forge in a test container).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [HOST...]" >&2; exit 2; }
dir=$1; shift
[ $# -gt 0 ] || set -- api.forge.test forge.test
mkdir -p "$dir"
umask 077
san="DNS:localhost,IP:127.0.0.1"
for h in "$@"; do
  case $h in IP:*) san="$h,$san" ;; *) san="DNS:$h,$san" ;; esac
done
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=airlock-forge test CA" \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=${1#IP:}" -keyout "$dir/server.key" \
  -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' \
  "$san" >"$dir/server.ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
  -CAcreateserial -days 30 -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null
rm -f "$dir/server.csr" "$dir/server.ext" "$dir/ca.srl"
chmod 644 "$dir/ca.crt" "$dir/server.crt"
echo "$dir/ca.crt"
