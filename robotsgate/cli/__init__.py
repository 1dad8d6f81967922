"""`robotsgate serve | check | lint | report | show`: the operator's commands, one module each.

- serve: start the proxy (mitmdump with robotsgate's addons)
- check: would this URL be allowed for this bot, and why?
- lint: is this robots.txt well written?
- report: what were our bots blocked from, and on what grounds?
- show: the archived robots.txt behind an audit record

Exit status: 0 allowed / clean / done, 1 disallowed / findings, 2 error (including bad usage).
"""

import argparse
import sys
from collections.abc import Sequence

from robotsgate.cli import check, lint, report, serve, show
from robotsgate.cli.common import ERROR, CliError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robotsgate", description="Tools for the people who run the robotsgate proxy.",
        epilog="Exit status: 0 allowed / no findings, 1 disallowed / findings, 2 error.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (serve, check, lint, report, show):  # in the order --help lists them
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        # Everything after "serve" is mitmdump's: argparse would take its options for ours.
        return serve.serve(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "top", 1) < 1:
        parser.error("--top must be at least 1")
    try:
        status: int = args.run(args)
    except CliError as exc:
        print(f"robotsgate {args.command}: {exc}", file=sys.stderr)
        return ERROR
    except KeyboardInterrupt:
        return 130
    return status
