#!/usr/bin/env bash
# Installs robotsgate with its test extra into .venv and runs every test.
# Extra arguments go to pytest, e.g.: scripts/test.sh tests/protocol -x
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
if ! command -v curl >/dev/null 2>&1; then
    # The end-to-end tests drive curl as one of the real clients.
    apt-get update -qq && apt-get install -y -qq curl >/dev/null
fi
if ! command -v chromium >/dev/null 2>&1; then
    # The HTML report is checked in a real browser: Debian's headless Chromium.
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
if ! command -v redis-server >/dev/null 2>&1; then
    # Fleet tests use a real Redis, and start private redis-servers they can stop.
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
fi
if ! .venv/bin/python -c 'import redis; redis.Redis(port=6379, socket_connect_timeout=2).ping()' \
        >/dev/null 2>&1; then
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
exec .venv/bin/python -m pytest "$@"
