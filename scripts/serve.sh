#!/usr/bin/env bash
# Installs robotsgate into .venv and starts the proxy on 127.0.0.1:8080.
# Extra arguments go to mitmdump, e.g.: scripts/serve.sh --set robots_agent=MyBot
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/mitmdump --listen-host "${ROBOTSGATE_HOST:-127.0.0.1}" --listen-port "${ROBOTSGATE_PORT:-8080}" -s addon.py "$@"
