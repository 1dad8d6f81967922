#!/usr/bin/env bash
# Installs robotsgate with its test extra into .venv and runs every test.
# Extra arguments go to pytest, e.g.: scripts/test.sh tests/protocol -x
#
# What it changes on the machine, before any test runs (docs/development.md):
# - .venv: robotsgate and its test extra (pytest, hypothesis, linters, MkDocs, the reference
#   parsers, the client libraries the tests drive);
# - Debian packages, only those missing, with one apt-get call it announces first: curl, wget,
#   nodejs, golang-go, chromium and libnss3-tools (the client recipes), npm (the tests install
#   Cloudflare's web-bot-auth verifier with npm ci), redis-server (the fleet tests start private
#   servers), systemd (systemd-analyze), logrotate and haproxy (deploy/), iproute2 (ip netns:
#   the origins of the sealing tests), util-linux's unshare and setpriv and passwd's useradd
#   (sealing as an ordinary user), a Java runtime (a bot of robotsgate run's tests);
# - a Redis on 127.0.0.1:6379 when none answers there, stopped again when the tests end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# Real tools the tests drive, from Debian's packages, installed only when missing:
#   curl, wget, nodejs, golang-go, chromium (+ libnss3-tools' certutil): the client recipes
#   (tests/e2e/test_clients.py) and the HTML report in a browser; npm: tests/e2e/test_signing.py
#   runs `npm ci` from tests/e2e/webbotauth's lock, into a directory of the session's, once per
#   session (web-bot-auth, which verifies what the proxy signs); redis-server: fleet tests
#   start private servers they can stop; systemd (systemd-analyze) and logrotate: deploy/.
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need curl curl
need wget wget
need node nodejs
need npm npm
need go golang-go
need chromium chromium
need certutil libnss3-tools
need redis-server redis-server
need systemd-analyze systemd
need logrotate logrotate
need haproxy haproxy
need ip iproute2
need unshare util-linux
need setpriv util-linux
need useradd passwd
need java default-jre-headless
if [ -n "$missing" ]; then
    echo "scripts/test.sh: installing the Debian packages the tests drive:$missing" >&2
    apt-get update -qq && apt-get install -y -qq $missing >/dev/null
fi
started_redis=""  # the pid file of a Redis this script started, to stop that one only
ping_redis() {
    .venv/bin/python -c 'import redis; redis.Redis(port=6379, socket_connect_timeout=2).ping()' \
        >/dev/null 2>&1
}
if ! ping_redis; then
    echo "scripts/test.sh: starting a Redis on 127.0.0.1:6379 for the tests (stopped after)" >&2
    mkdir -p /var/lib/redis /var/log/redis
    pidfile=$(mktemp -u /tmp/robotsgate-test-redis.XXXXXX.pid)
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log --pidfile "$pidfile"
    for _ in 1 2 3 4 5 6 7 8 9 10; do ping_redis && break; sleep 0.2; done
    started_redis="$pidfile"
fi
status=0
.venv/bin/python -m pytest "$@" || status=$?
if [ -n "$started_redis" ] && [ -f "$started_redis" ]; then
    kill "$(cat "$started_redis")" 2>/dev/null || true
fi
exit "$status"
