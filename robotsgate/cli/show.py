"""`robotsgate show`: the archived robots.txt behind an audit record."""

import argparse
import json
import re
import sys
from pathlib import Path

from robotsgate.cli.common import (
    OK,
    CliError,
    Commands,
)


def run_show(args: argparse.Namespace) -> int:
    """The archived robots.txt behind an audit record's robots_sha256."""
    archive = Path(args.archive)
    if not archive.is_dir():
        raise CliError(f"no such folder: {archive} (the robots_archive_dir the proxy keeps "
                       f"robots.txt files in)")
    sha = _archived(archive, args.sha256.lower())
    body = archive / sha
    try:
        meta = json.loads((archive / f"{sha}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"the sidecar of {sha} cannot be read: {exc}") from None
    print(f"# {meta.get('url')} (HTTP {meta.get('status')}), fetched {meta.get('fetched_at')}")
    sys.stdout.flush()
    sys.stdout.buffer.write(body.read_bytes())
    return OK


def _archived(archive: Path, wanted: str) -> str:
    """The one archived sha256 that starts with `wanted` (at least 6 hex digits, like git)."""
    if not re.fullmatch(r"[0-9a-f]{6,64}", wanted):
        raise CliError(f"{wanted!r} is not a sha256 or a prefix of one (6 to 64 hex digits)")
    try:
        found = sorted(p.name for p in archive.glob(f"{wanted}*")
                       if re.fullmatch(r"[0-9a-f]{64}", p.name) and p.is_file())
    except OSError as exc:
        raise CliError(f"cannot read the archive {archive}: {exc}") from None
    if not found:
        raise CliError(f"no robots.txt with sha256 {wanted} in {archive}")
    if len(found) > 1:
        raise CliError(f"{wanted} is the start of {len(found)} archived sha256s "
                       f"({', '.join(sha[:12] for sha in found[:5])}): give more digits")
    return found[0]


# Arguments declared as every command's are (argparse): alike in shape, not in meaning.
def add_parser(commands: Commands) -> None:
    """`robotsgate show`: its arguments."""
    p = commands.add_parser(
        "show", help="print an archived robots.txt by its sha256",
        description="Print the robots.txt an audit record's robots_sha256 names, from the "
                    "robots_archive_dir, after a comment line saying where and when it was "
                    "fetched.")
    p.add_argument("sha256", help="the record's robots_sha256, or its first 6 or more digits")
    p.add_argument("--archive", required=True, metavar="DIR", help="the robots_archive_dir")
    p.set_defaults(run=run_show)
