"""`robotsgate lint`: is this robots.txt well written? (robotsgate.protocol.lint)"""

import argparse
import asyncio
import json
import sys

# The helpers check.py imports too: both read robots.txt from a file, or fetch it as the proxy
# does (cli/common.py holds what they share).
from robotsgate.cli.common import (
    FOUND,
    OK,
    CliError,
    Commands,
    fetch_options,
    origin_and_path,
    read_input,
    reading_options,
    tls,
)
from robotsgate.escape import escaped
from robotsgate.protocol.lint import Finding, lint
from robotsgate.retrieval.fetch import Fetcher, FetchResult


async def _fetch_for_lint(url: str, args: argparse.Namespace) -> FetchResult:
    origin, path = origin_and_path(url)
    target = origin.robots_url if path == "/" else f"{origin.key}{path}"
    fetcher = Fetcher(timeout=args.timeout, verify=tls(args))
    try:
        return await fetcher.fetch(target, args.user_agent)
    finally:
        await fetcher.aclose()


def run_lint(args: argparse.Namespace) -> int:
    source: str = args.source
    declared = None
    if source.lower().startswith(("http://", "https://")):
        result = asyncio.run(_fetch_for_lint(source, args))
        source = result.robots_url
        if result.outcome != "ok":
            meaning = "no robots.txt: no restrictions" if result.outcome == "missing" else \
                "unreachable: complete disallow"
            raise CliError(f"{source}: {result.error or result.status} ({meaning}); "
                           "nothing to lint")
        body = result.body
        length = dict((k.lower(), v) for k, v in result.headers).get("content-length", "")
        declared = int(length) if length.isdigit() else None
    else:
        body = read_input(source)
    findings = lint(body, semantics=args.semantics, case_sensitive=args.path_case == "sensitive",
                    declared_size=declared)
    if args.json:
        print(json.dumps({"source": source, "findings": [
            {"line": f.line, "kind": f.kind, "message": f.message} for f in findings]},
            indent=2, ensure_ascii=False))
    else:
        sys.stdout.write("".join(_finding_text(source, f) for f in findings))
        count = len(findings)
        print(f"{source}: {count} finding{'s' if count != 1 else ''}" if count else
              f"{source}: no findings")
    return FOUND if findings else OK


def _finding_text(source: str, finding: Finding) -> str:
    where = f"{source}:{finding.line}" if finding.line else source
    # A message may quote the file: what the site wrote is shown with its controls escaped.
    return escaped(f"{where}: {finding.kind}: {finding.message}") + "\n"


# Arguments declared as every command's are (argparse): alike in shape, not in meaning.
def add_parser(commands: Commands) -> None:
    """`robotsgate lint`: its arguments."""
    p = commands.add_parser(
        "lint", help="is this robots.txt well written?",
        description="Warnings with line numbers: unknown directives, rules outside any group, "
                    "misspellings that were accepted, rules shadowed by others, patterns that "
                    "can never match, a body over 500 KiB, a byte order mark, bytes that are "
                    "not UTF-8, Sitemap and License lines that are not URLs, License lines "
                    "past the 16 licence documents read.",
        epilog="Exit status: 0 no findings, 1 findings, 2 error (including a URL with no "
               "robots.txt).")
    p.add_argument("source", metavar="FILE|URL",
                   help="a file ('-': standard input), or a URL: a site (http://example.com/ "
                        "means its /robots.txt) or the file's own URL")
    p.add_argument("--user-agent", default=None, help="User-Agent to fetch with")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    reading_options(p)
    fetch_options(p)
    p.set_defaults(run=run_lint)
