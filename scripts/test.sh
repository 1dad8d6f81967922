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
exec .venv/bin/python -m pytest "$@"
