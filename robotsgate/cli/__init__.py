"""`robotsgate serve | run | options | check | lint | report | show | keygen | directory | verify`:
the operator's commands.

- serve: start the proxy (mitmdump with robotsgate's addons)
- run: one bot behind the gate (a proxy of its own, or a running one; --sealed: no other way out)
- options: robotsgate's options, with their help
- check: would this URL be allowed for this bot, and why?
- lint: is this robots.txt well written?
- report: what were our bots blocked from, and on what grounds?
- show: the archived robots.txt behind an audit record
- keygen, directory, verify: the proxy's signing key; its key directory for sites (Web Bot
  Auth); the check that an audit log is the proxy's own

Exit status: 0 allowed / clean / done, 1 disallowed / findings, 2 error (including bad usage);
run exits with its bot's status (its own failures: 125, 126, 127).
"""

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from robotsgate.cli import check, keys, lint, options, report, run, serve, show
from robotsgate.cli.common import ERROR, CliError, Parser

_COMMANDS = ("serve", "run", "options", "check", "lint", "report", "show", "keygen",
             "directory", "verify")


def _version() -> str:
    try:
        return version("robotsgate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="robotsgate", description="Tools for the people who run the robotsgate proxy.",
        epilog="Exit status: 0 allowed / no findings, 1 disallowed / findings, 2 error "
               "(a usage mistake included). `robotsgate help COMMAND` (or COMMAND --help) "
               "says more of one.")
    parser.add_argument("--version", action="version", version=f"robotsgate {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (serve, run, options, check, lint, report, show):  # in the order --help lists
        command.add_parser(commands)
    keys.add_parsers(commands)
    commands.add_parser("help", help="this help, or a command's: robotsgate help COMMAND",
                        add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        # Everything after "serve" is mitmdump's: argparse would take its options for ours.
        return serve.serve(argv[1:])
    if argv[:1] == ["run"]:
        # Everything after "--" is the bot's, and options before it may be serve's.
        return run.run(argv[1:])
    parser = build_parser()
    if not argv:  # a usage mistake: say what there is, on the error stream
        parser.print_help(sys.stderr)
        return ERROR
    if argv[0] == "help":
        if argv[1:] == ["serve"]:
            return serve.serve(["--help"])
        if argv[1:] == ["run"]:
            return run.run(["--help"])
        if len(argv) > 2 or (argv[1:] and argv[1] not in _COMMANDS):
            parser.error(f"help takes one of {', '.join(_COMMANDS)}")
        # help options: the options themselves, which is the help asked for.
        argv = ["options"] if argv[1:] == ["options"] else \
            [*argv[1:], "--help"] if argv[1:] else ["--help"]
    args, extra = parser.parse_known_args(argv)
    if extra:
        # Said by the command's own parser: its usage, and the flag it has that was meant.
        commands = next(action for action in parser._actions  # argparse: no public way
                        if isinstance(action, argparse._SubParsersAction))
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
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
