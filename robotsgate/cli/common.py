"""What the commands share: exit statuses, the one-line error, reading input, and the options
that fetch and read robots.txt as the proxy does."""

import argparse
import ssl
import sys
from pathlib import Path
from urllib.parse import urlsplit

import certifi

from robotsgate.origin import Origin
from robotsgate.protocol import SEMANTICS

OK, FOUND, ERROR = 0, 1, 2
# What each command module's add_parser() adds its subcommand to.
type Commands = argparse._SubParsersAction[argparse.ArgumentParser]


class CliError(Exception):
    """A problem to report in one line, exit status 2."""


def read_input(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


def origin_and_path(url: str) -> tuple[Origin, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise CliError(f"{url!r} is not a URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise CliError(f"{url!r} is not an http or https URL")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Origin.of(parts.scheme, parts.hostname, port), path


def tls(args: argparse.Namespace) -> ssl.SSLContext | bool:
    """Like the proxy: certifi's roots unless told otherwise."""
    if args.insecure:
        return False
    return ssl.create_default_context(cafile=args.cacert or certifi.where())


def fetch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=10, metavar="SECONDS",
                        help="seconds to wait for robots.txt, like robots_fetch_timeout "
                             "(default: %(default)s)")
    parser.add_argument("--cacert", metavar="FILE",
                        help="trust this CA bundle for https instead of certifi's")
    parser.add_argument("--insecure", action="store_true",
                        help="do not verify https certificates (like ssl_insecure)")


def reading_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--semantics", choices=SEMANTICS, default="rfc9309",
                        help="how robots.txt is read, like robots_semantics (default: "
                             "%(default)s)")
    parser.add_argument("--path-case", choices=("sensitive", "insensitive"),
                        default="sensitive", help="like robots_path_case (default: %(default)s)")
