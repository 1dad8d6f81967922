#!/usr/bin/env bash
# Starts the proxy (`robotsgate serve`) on 127.0.0.1:8080; ROBOTSGATE_HOST / ROBOTSGATE_PORT
# change that. Extra arguments go to mitmdump, e.g.: scripts/serve.sh --set robots_agent=MyBot
# robotsgate is installed into .venv first only when pyproject.toml changed since the last
# install (the install is editable: code changes need none). The working directory is kept, so
# relative paths in the arguments (robots_audit_log=audit.jsonl) are the caller's.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
stamp="$repo/.venv/.robotsgate-installed"
stale() { [ ! -x "$repo/.venv/bin/robotsgate" ] || [ ! -f "$stamp" ] || [ "$repo/pyproject.toml" -nt "$stamp" ]; }
if stale; then
    # Said first: the first install takes a minute or so, and the proxy says nothing until then.
    echo "serve.sh: setting up .venv and installing robotsgate into it (a minute or so the" \
         "first time; later starts skip this)" >&2
    # Several proxies started at once (docs/operating/fleet.md) install one at a time: the
    # first installs, the others find it done.
    (flock 9 && if stale; then "$repo/scripts/setup.sh" >&2; fi) 9<"$repo/scripts/setup.sh"
    echo "serve.sh: installed; starting the proxy" >&2
fi
exec "$repo/.venv/bin/robotsgate" serve "$@"
