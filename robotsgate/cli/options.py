"""`robotsgate options`: robotsgate's own options with their help, from their declarations
(robotsgate.config.options, written by robotsgate.config.reference as the site's Options page
is)."""

import argparse

from robotsgate.cli.common import OK, CliError, Commands
from robotsgate.config.options import NAMES, PREFIX
from robotsgate.config.reference import options_text

INTRO = """\
robotsgate's options, each set with --set NAME=VALUE (robotsgate serve, mitmdump -s addon.py;
a sequence option once per entry) or as NAME: VALUE in ~/.mitmproxy/config.yaml. mitmproxy's
own options: robotsgate serve --options lists them after these.
"""


def run(args: argparse.Namespace) -> int:
    names = None
    if args.words:
        words = [word.lower().removeprefix(PREFIX) for word in args.words]
        names = sorted(name for name in NAMES if any(word in name for word in words))
        if not names:
            raise CliError(f"no option's name has {' or '.join(map(repr, args.words))}: "
                           f"robotsgate options lists them all")
    else:
        print(INTRO)
    print(options_text(names), end="")
    return OK


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "options", help="robotsgate's options (robots_*), with what each does",
        description="Print robotsgate's options: name, default, and what each does, takes and "
                    "rebuilds when changed. With WORDs, only the options whose name has one.")
    p.add_argument("words", nargs="*", metavar="WORD",
                   help="part of an option's name, such as audit or robots_redis")
    p.set_defaults(run=run)
