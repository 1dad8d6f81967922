#!/usr/bin/env bash
# Prints the environment a bot needs to go through robotsgate, https included:
#   eval "$(scripts/proxy-env.sh)"                   # proxy on 127.0.0.1:8080, CA in ~/.mitmproxy
#   eval "$(scripts/proxy-env.sh proxy.internal:3128 /etc/robotsgate)"
# The CA file is written by mitmproxy the first time it starts (in its confdir). Use it in the
# bot's shell only: everything run there then goes through the proxy, and most clients there
# trust robotsgate's CA alone.
# Each client's recipe (README, HTTPS) is run end to end by tests/e2e/test_clients.py.
set -euo pipefail
address="${1:-127.0.0.1:8080}"
confdir="${2:-$HOME/.mitmproxy}"
ca="$confdir/mitmproxy-ca-cert.pem"
if [ ! -f "$ca" ]; then
    echo "no CA at $ca: start the proxy once (scripts/serve.sh) so mitmproxy creates it" >&2
    exit 1
fi
# wget reads no CA variable: it gets a wgetrc of its own, beside the CA.
wgetrc="$confdir/robotsgate-wgetrc"
printf 'ca_certificate = %s\n' "$ca" > "$wgetrc"
cat <<ENV
export HTTP_PROXY=http://$address HTTPS_PROXY=http://$address
export http_proxy=http://$address https_proxy=http://$address
unset NO_PROXY no_proxy
export CURL_CA_BUNDLE=$ca           # curl
export REQUESTS_CA_BUNDLE=$ca       # Python requests
export SSL_CERT_FILE=$ca            # httpx, urllib, aiohttp, Scrapy (verifying), Go, OpenSSL's defaults
export NODE_EXTRA_CA_CERTS=$ca      # Node.js
export WGETRC=$wgetrc               # wget (ca_certificate = the CA; read instead of ~/.wgetrc)
ENV
