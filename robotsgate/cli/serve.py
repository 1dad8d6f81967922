"""`robotsgate serve`: mitmdump with robotsgate's addons, from this installation."""

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from robotsgate.cli.common import ERROR, Commands

SERVE_HELP = """\
usage: robotsgate serve [mitmdump options]

Start the proxy: mitmdump with robotsgate's addons, from this installation. Every argument goes
to mitmdump, so any mitmproxy option works alongside robotsgate's robots_* options:

  robotsgate serve --set robots_agent=MyBot --set robots_audit_log=/var/log/robots.jsonl

Defaults, each overridden by giving it: --listen-host 127.0.0.1 (or $ROBOTSGATE_HOST),
--listen-port 8080 (or $ROBOTSGATE_PORT), and --set flow_detail=0 (no line per request: the
audit log is the record; --set flow_detail=1 lists them). At start-up one line says what is in
force; a misspelled option or a bad value stops it with one line and exit status 2.
robotsgate's options: `mitmdump -s <robotsgate>/addon.py --options`, or the README.
"""


def serve(args: Sequence[str]) -> int:
    """Replace this process with mitmdump running robotsgate (never returns, but on error)."""
    if any(arg in ("-h", "--help") for arg in args):
        print(SERVE_HELP, end="")
        return 0
    here = Path(sys.executable).parent  # the mitmdump installed beside this robotsgate
    mitmdump = shutil.which("mitmdump", path=str(here)) or shutil.which("mitmdump")
    if mitmdump is None:
        print("robotsgate serve: mitmdump not found; install mitmproxy (pip install "
              "'mitmproxy>=12,<13')", file=sys.stderr)
        return ERROR
    given = " ".join(args)
    command = [mitmdump]
    if "--listen-host" not in given and "listen_host=" not in given:
        command += ["--listen-host", os.environ.get("ROBOTSGATE_HOST", "127.0.0.1")]
    if "--listen-port" not in given and "listen_port=" not in given and \
            not any(arg == "-p" or (arg.startswith("-p") and arg[2:].isdigit()) for arg in args):
        command += ["--listen-port", os.environ.get("ROBOTSGATE_PORT", "8080")]
    if "flow_detail" not in given and "--flow-detail" not in given:
        command += ["--set", "flow_detail=0"]
    # robotsgate/addon.py, beside this package: imported by mitmdump, not here (it loads
    # mitmproxy).
    command += ["-s", str(Path(__file__).resolve().parent.parent / "addon.py"), *args]
    sys.stdout.flush()
    os.execv(mitmdump, command)


def add_parser(commands: Commands) -> None:
    """`robotsgate serve`: listed in --help; its arguments are mitmdump's."""
    commands.add_parser(
        "serve", help="start the proxy (mitmdump with robotsgate), on 127.0.0.1:8080",
        description=SERVE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False)
