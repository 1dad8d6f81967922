"""What the commands share: exit statuses, the one-line error, reading input, and the options
that fetch and read robots.txt as the proxy does."""

import argparse
import difflib
import ssl
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

import certifi

from robotsgate.origin import Origin
from robotsgate.protocol import SEMANTICS

OK, FOUND, ERROR = 0, 1, 2


class CliError(Exception):
    """A problem to report in one line, exit status 2."""


def hint(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """What a mistaken command line probably meant: for the first flag of `words` that
    `parser` does not know, the one most like it ("; did you mean --agent?"), and for a word
    where a command is expected, the command most like it; "" when nothing is near."""
    actions = parser._actions  # argparse has no public list of a parser's arguments
    flags = [flag for action in actions for flag in action.option_strings]
    commands = [name for action in actions if isinstance(action, argparse._SubParsersAction)
                for name in action.choices]
    for word in words:
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1:
            flag = word.partition("=")[0]
            if flag in flags or (flag.startswith("--") and any(
                    known.startswith(flag) for known in flags)):  # an abbreviation argparse takes
                continue
            close = difflib.get_close_matches(flag, flags, n=1, cutoff=0.75)
            return f"; did you mean {close[0]}?" if close else ""
        if commands:
            if word in commands:
                return ""
            close = difflib.get_close_matches(word, commands, n=1, cutoff=0.75)
            return f"; did you mean {close[0]}?" if close else ""
    return ""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage mistakes say what was probably meant (`check --agnet`:
    did you mean --agent?), as `hint` finds it; each subcommand's parser is one too."""

    _words: Sequence[str] = ()

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        super().error(message + hint(self, self._words))


# What each command module's add_parser() adds its subcommand to.
type Commands = argparse._SubParsersAction[Parser]


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
