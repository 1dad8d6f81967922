"""`robotsgate report`: what were our bots blocked from, and on what grounds? And what did they
spend? (robotsgate.report.summary, robotsgate.report.text, robotsgate.report.html)"""

import argparse
import gzip
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, cast

from robotsgate.audit.records import timestamp
from robotsgate.cli.common import OK, CliError, Commands
from robotsgate.report.html import render_html
from robotsgate.report.summary import (
    MAX_KEY_CHARS,
    Bounds,
    Only,
    Summary,
    parse_when,
    read,
)
from robotsgate.report.text import render_text

# Shown on a terminal for logs at least this big (bytes) when --progress is auto.
PROGRESS_FROM = 8 << 20


class _Progress:
    """A one-line progress bar on stderr, redrawn when the percentage changes."""

    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.shown = -1

    def __call__(self, done: int) -> None:
        percent = min(100, done * 100 // self.total)
        if percent == self.shown:
            return
        self.shown = percent
        filled = percent * 30 // 100
        self.stream.write(f"\rreading {'#' * filled}{'.' * (30 - filled)} {percent:3d}% "
                          f"({done / 1e6:,.1f} of {self.total / 1e6:,.1f} MB)")
        if percent == 100:
            self.stream.write("\n")
        self.stream.flush()


def _open_logs(stack: ExitStack, paths: Sequence[str]) -> Iterator[tuple[str, IO[bytes]]]:
    for path in paths:
        if path == "-":
            yield "<stdin>", sys.stdin.buffer
            continue
        try:
            # Rotated logs compressed by logrotate are read as they are.
            # (GzipFile reads like any binary file; typeshed does not call it IO[bytes].)
            opened = cast(IO[bytes], gzip.open(path, "rb")) if path.endswith(".gz") \
                else open(path, "rb")  # noqa: SIM115 -- closed by stack
            stream = stack.enter_context(opened)
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
        yield path, stream


def _progress(args: argparse.Namespace, paths: Sequence[str]) -> Callable[[int], None] | None:
    if args.progress == "never" or "-" in paths or any(p.endswith(".gz") for p in paths):
        return None  # a compressed file's size says little of how much there is to read
    try:
        total = sum(Path(p).stat().st_size for p in paths)
    except OSError as exc:
        raise CliError(f"cannot read {exc.filename}: {exc.strerror}") from None
    if args.progress == "auto" and not (sys.stderr.isatty() and total >= PROGRESS_FROM):
        return None
    return _Progress(total, sys.stderr)


def _breakdown(text: str) -> tuple[int, int]:
    """--breakdown N or NxM: the N most blocked agents and hosts, M rows each (M = N if not
    given); 0 for none."""
    found = re.fullmatch(r"\s*(\d+)\s*(?:[x×*]\s*(\d+)\s*)?", text)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not N or NxM (5x10: the 5 most blocked agents and hosts, 10 paths "
            "and URLs each; 0: none)")
    many = int(found[1])
    each = int(found[2]) if found[2] is not None else many
    if many and not each:
        raise argparse.ArgumentTypeError(f"{text!r}: M, the rows for each, must be at least 1")
    return many, each


def run_report(args: argparse.Namespace) -> int:
    now = time.time()
    try:
        since = parse_when(args.since, now) if args.since else None
        until = parse_when(args.until, now) if args.until else None
        only = Only(agent=args.agent, host=args.host, user_agent=args.user_agent) \
            if (args.agent, args.host, args.user_agent) != (None, None, None) else None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    broken_down, each = args.breakdown
    shown = {"top": args.top, "broken_down": broken_down, "each": each}
    progress = _progress(args, args.logs)
    with ExitStack() as stack:
        try:
            summary: Summary = read(_open_logs(stack, args.logs), since=since, until=until,
                                    progress=progress, only=only,
                                    bounds=Bounds.to_show(**shown))
        except (EOFError, gzip.BadGzipFile) as exc:  # a .gz cut short, or not gzip at all
            raise CliError(f"cannot read a compressed log: {exc}") from None
    if summary.records == 0:
        # Nothing to sum up: a wrong file, a filter that matches nothing, or a new log.
        what = f" matching {only.text()}" if only is not None else ""
        skipped = f" ({summary.skipped:,} lines that are not)" if summary.skipped else ""
        hint = (f"; agents in the log: {', '.join(sorted(_agents_in(args.logs))) or 'none'} "
                f"(bots named by their User-Agent alone are *: --user-agent tells them apart)"
                if only is not None and only.agent is not None else "")
        raise CliError(f"no audit records{what} in {', '.join(summary.sources)}{skipped}"
                       f"{hint}")
    sys.stdout.write(render_text(summary, **shown))
    if args.html:
        page = render_html(summary, **shown, generated=timestamp(now))
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.html}: {exc.strerror or exc}") from None
        print(f"html report: {args.html}")
    return OK


def _agents_in(logs: list[str]) -> set[str]:
    """The agents a report without --agent would show (a second, short pass: at most 20)."""
    with ExitStack() as stack:
        try:
            summary = read(_open_logs(stack, logs), bounds=Bounds.to_show(20, 0, 0))
        except (CliError, EOFError, gzip.BadGzipFile):
            return set()
    return {str(row.key) for row in summary.agents.top(20)}


# Arguments declared as every command's are (argparse): alike in shape, not in meaning.
def add_parser(commands: Commands) -> None:
    """`robotsgate report`: its arguments."""
    p = commands.add_parser(
        "report", help="what were the bots blocked from, and why?",
        description="Sum up audit logs: top blocked hosts, agents, paths, URLs, rules and "
                    "reasons, the top paths and URLs of the most blocked agents, the top paths "
                    "of the most blocked hosts, "
                    "blocks over time, and the money spent on 402 payments (per bot, site and "
                    "UTC day, in each currency, as the budgets counted it) with the sites that "
                    "overcharged; --html writes the same as one self-contained page with "
                    "charts. Paths are without their query; URLs are as the bot sent them, "
                    f"query included, cut at {MAX_KEY_CHARS} characters.",
        epilog=f"Memory stays bounded whatever the logs (Space-Saving): each table keeps "
               f"{Bounds().keys:,} keys, and {Bounds().each} paths (and URLs) for each of the "
               f"{Bounds().broken_down} most blocked hosts (and agents); ten times the rows "
               "asked for when that is more. A table that saw more distinct keys says so and "
               "how often a key it dropped was blocked at most, lists only the rows surely "
               "above that, and marks with ~ the counts that are estimates (upper bounds, "
               "at most the error it states too high). A key with more than 1/N of a "
               "table's blocks, N the keys it keeps, is never dropped.")
    p.add_argument("logs", nargs="*", metavar="AUDIT.jsonl", default=["robots-audit.jsonl"],
                   help="audit logs (rotated ones too; '-': standard input; default: "
                        "robots-audit.jsonl, the proxy's default robots_audit_log)")
    p.add_argument("--since", metavar="WHEN",
                   help="only records from then on: 2026-01-31, 2026-01-31T12:00 (UTC unless "
                        "a zone is given) or an age: 90m, 24h, 7d, 2w")
    p.add_argument("--until", metavar="WHEN", help="only records before then (same forms)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="rows per table (default: %(default)s)")
    p.add_argument("--breakdown", type=_breakdown, default=(5, 5), metavar="N[xM]",
                   help="the top paths and URLs of each of the N most blocked agents, and the "
                        "top paths of each of the N most blocked hosts, M rows each (M = N if "
                        "left out; 0: none; default: 5x5)")
    p.add_argument("--agent", metavar="TOKEN",
                   help="only the records of this agent: its product token as the audit log "
                        "has it, any case (* for requests no named group applied to), or the "
                        "bot a payment record names")
    p.add_argument("--user-agent", metavar="TEXT",
                   help="only the records whose User-Agent holds TEXT, any case: bots named by "
                        "nothing but their User-Agent are all agent *, and this tells them apart")
    p.add_argument("--host", metavar="HOST",
                   help="only the records of this host: a.example (any port) or "
                        "b.example:8080 (that port only)")
    p.add_argument("--html", metavar="OUT.html", help="also write an HTML page with charts")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress bar on stderr; auto: on a terminal, for logs over "
                        f"{PROGRESS_FROM >> 20} MiB (default: %(default)s)")
    p.set_defaults(run=run_report)
