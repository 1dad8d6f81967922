#!/usr/bin/env bash
# Creates .venv with Python >= 3.12 and installs robotsgate into it.
#   scripts/setup.sh          runtime only
#   scripts/setup.sh test     with the test extra (pytest, hypothesis, linters, references)
# Re-running is cheap: pip only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
    local c
    for c in "${PYTHON:-}" python3 python3.14 python3.13 python3.12; do
        [ -n "$c" ] || continue
        command -v "$c" >/dev/null 2>&1 || continue
        if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
            echo "$c"; return 0
        fi
    done
    return 1
}

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'; then
    py=$(find_python) || { echo "robotsgate needs Python >= 3.12 (set PYTHON=/path/to/python3.12)" >&2; exit 1; }
    rm -rf .venv
    echo "setup.sh: creating .venv with $("$py" -c 'import sys; print(sys.executable)')" >&2
    "$py" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
fi

extra=""
[ "${1:-}" = "test" ] && extra="[test]"
echo "setup.sh: installing robotsgate${extra} and what it needs into .venv (pip)" >&2
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extra}"
# scripts/serve.sh installs again only when pyproject.toml is newer than this stamp.
touch .venv/.robotsgate-installed
