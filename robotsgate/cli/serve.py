"""`robotsgate serve`: mitmdump with robotsgate's addons, from this installation."""

import argparse
import errno
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from robotsgate.cli.common import ERROR, CliError, Commands, hint

SERVE_HELP = """\
usage: robotsgate serve [mitmdump options]

Start the proxy: mitmdump with robotsgate's addons, from this installation. Every argument goes
to mitmdump, so any mitmproxy option works alongside robotsgate's robots_* options:

  robotsgate serve --set robots_agent=MyBot --set robots_audit_log=/var/log/robots.jsonl

Defaults, each overridden by giving it: --listen-host 127.0.0.1 (or $ROBOTSGATE_HOST),
--listen-port 8080 (or $ROBOTSGATE_PORT), and --set flow_detail=0 (no line per request: the
audit log is the record; --set flow_detail=1 lists them). At start-up one line says what is in
force; a misspelled option (robotsgate's or mitmproxy's), a bad value, an argument mitmdump
does not take or a port in use stops it with one line and exit status 2.
Of mitmdump's own addons it runs those a forward proxy needs and those whose options are given
at start-up (mitmproxy looks every addon up for every event of every request, so each unused one
costs every request): setting such an option later is refused, never ignored.
robotsgate's options, with what each does: `robotsgate options` (or `robotsgate options WORD`
for those whose name has WORD). `robotsgate serve --options` lists them first, then mitmproxy's
own, as a config.yaml with each option's help.
"""


def _port(value: object, where: str) -> int:
    """A port number from 0 to 65535 (mitmproxy would listen on 99999 modulo 65536), or a
    CliError naming `where` it was given."""
    text = str(value).strip()
    if not text.isascii() or not text.isdigit() or int(text) > 65_535:
        raise CliError(f"{where} must be a port number from 0 to 65535; got {value!r}")
    return int(text)


def _env_port() -> str:
    """$ROBOTSGATE_PORT, checked (8080 when unset)."""
    return str(_port(os.environ.get("ROBOTSGATE_PORT", "8080"), "ROBOTSGATE_PORT"))


def _listen_address(args: Sequence[str]) -> tuple[str, int] | None:
    """Where mitmdump will listen, read as mitmdump reads its arguments; a usage mistake exits
    here with status 2 (mitmdump itself would say 1), naming it; a port that is no port is a
    CliError."""
    from robotsgate.mitm import master as lean  # only serve loads mitmproxy here

    parser = lean.mitmdump_parser(lean.mitmdump_options(), prog="robotsgate serve")

    def mistake(message: str) -> NoReturn:  # one line, as every start-up error
        raise CliError(message + hint(parser, args))

    parser.error = mistake  # type: ignore[method-assign]
    parsed = parser.parse_args(list(args))
    host, port = parsed.listen_host, parsed.listen_port
    if port is not None:
        port = _port(port, "--listen-port")
    for option in parsed.setoptions or ():
        name, _, value = option.partition("=")
        if name == "listen_host":
            host = value
        elif name == "listen_port":
            port = _port(value, "listen_port")
    if port is None:
        port = int(_env_port())
    if parsed.mode:
        return None  # modes name their own addresses (regular@8082, ...): mitmdump says
    return (host if host is not None else os.environ.get("ROBOTSGATE_HOST", "127.0.0.1"), port)


def _in_use(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as mitmdump binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def serve(args: Sequence[str]) -> int:
    """Run the proxy in this process until it is stopped: mitmdump's main, robotsgate's addon
    loaded as a script, and of mitmdump's own addons those a forward proxy needs and those
    whose options are given (robotsgate.mitm.master.LeanDumpMaster)."""
    if any(arg in ("-h", "--help") for arg in args):
        print(SERVE_HELP, end="")
        return 0
    if "--options" in args:
        from robotsgate.mitm import startup  # only serve loads mitmproxy here

        startup.dump_options(sys.stdout)
        return 0
    try:
        address = _listen_address(args)
        if address is not None and address[1] and _in_use(*address):
            raise CliError(f"{address[0] or '*'}:{address[1]} is in use (another proxy?): "
                           f"--listen-port N (or ROBOTSGATE_PORT) picks another port")
        given = " ".join(args)
        command: list[str] = []
        if "--listen-host" not in given and "listen_host=" not in given:
            command += ["--listen-host", os.environ.get("ROBOTSGATE_HOST", "127.0.0.1")]
        if "--listen-port" not in given and "listen_port=" not in given and not any(
                arg == "-p" or (arg.startswith("-p") and arg[2:].isdigit()) for arg in args):
            command += ["--listen-port", _env_port()]
    except CliError as exc:
        print(f"robotsgate serve: {exc}", file=sys.stderr)
        return ERROR
    if "flow_detail" not in given and "--flow-detail" not in given:
        command += ["--set", "flow_detail=0"]
    # robotsgate/addon.py, beside this package, loaded as `mitmdump -s` loads a script.
    command += ["-s", str(Path(__file__).resolve().parent.parent / "addon.py"), *args]
    sys.stdout.flush()
    from robotsgate.mitm import master as lean  # only serve loads mitmproxy here

    try:
        lean.serve(command)
    except SystemExit as exc:
        if exc.code == 1:
            # mitmdump's status for a start-up error (robotsgate's said in one line already):
            # a usage mistake here, as every other one.
            return ERROR
        raise
    return 0


def add_parser(commands: Commands) -> None:
    """`robotsgate serve`: listed in --help; its arguments are mitmdump's."""
    commands.add_parser(
        "serve", help="start the proxy (mitmdump with robotsgate), on 127.0.0.1:8080",
        description=SERVE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False)
