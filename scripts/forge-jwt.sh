#!/bin/sh
# forge-jwt.sh KEY.pem ISS [IAT_OFFSET] [EXP_OFFSET]: print a GitHub App JWT
# (RS256) signed with KEY.pem, iat = now + IAT_OFFSET (default -60),
# exp = now + EXP_OFFSET (default 540). NOW may be overridden by $JWT_NOW
# (for a forge clock moved forward). TEST helper for airlock-forge.
set -eu
key=$1; iss=$2; iato=${3:--60}; expo=${4:-540}
now=${JWT_NOW:-$(date +%s)}
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
case $iss in *[!0-9]*) issj="\"$iss\"" ;; *) issj=$iss ;; esac
h=$(printf '{"alg":"RS256","typ":"JWT"}' | b64url)
p=$(printf '{"iat":%d,"exp":%d,"iss":%s}' $((now + iato)) $((now + expo)) "$issj" | b64url)
s=$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -sign "$key" -binary | b64url)
printf '%s.%s.%s\n' "$h" "$p" "$s"
