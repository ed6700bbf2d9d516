#!/bin/sh
# make-app-key.sh DIR [NAME]: an RSA key pair for a test GitHub App (TEST ONLY).
# Writes DIR/NAME.pem (private, 0600) and DIR/NAME.pub.pem (public, the one
# airlock-forge loads via the fixture's public_key or --key APPID=PATH).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [NAME]" >&2; exit 2; }
dir=$1; name=${2:-app}
mkdir -p "$dir"
umask 077
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/$name.pem" 2>/dev/null
openssl pkey -in "$dir/$name.pem" -pubout -out "$dir/$name.pub.pem"
chmod 644 "$dir/$name.pub.pem"
echo "$dir/$name.pem"
