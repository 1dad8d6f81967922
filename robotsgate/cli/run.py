"""`robotsgate run [OPTIONS] -- CMD [ARGS...]`: one bot behind the gate: the proxy started (or
the one named), the bot run with its environment pointing at it (sealed, if asked), and one
summary when it ends. Its command line is run_options.py's."""

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from robotsgate.cli.common import Commands
from robotsgate.cli.run_options import (
    NOT_EXECUTABLE,
    NOT_FOUND,
    RUN_ERROR,
    RUN_HELP,
    RunError,
    RunOptions,
    bot_user,
    serve_setting,
)
from robotsgate.sealing import summary
from robotsgate.sealing.capture import CaptureError, CaptureNet
from robotsgate.sealing.environment import ProxyAddress, child_environment
from robotsgate.sealing.filter import FilterUnavailable
from robotsgate.sealing.namespace import RunAs, Seal, SealRefusal
from robotsgate.sealing.relay import Relay

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)
_LISTENING = re.compile(r"HTTP\(S\) proxy listening at \[?([^\]\s]+?)\]?:(\d+)\.?\s*$")
# The proxy's lines that say nothing to a person running one bot.
_QUIET = ("Loading script", "SIGHUP reopens the audit log")
START_TIMEOUT = 60.0  # seconds for the proxy a run starts to listen
STOP_TIMEOUT = 10.0  # seconds for it to stop (and write its counts) before it is killed
_PR_SET_PDEATHSIG = 1



def _die_with_parent() -> None:
    """In the proxy's child process: stopped when the run ends, however it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class _NotRun:
    """CMD never ran: the run's status instead of its."""

    status: int


@dataclass
class _Proxy:
    """The proxy a run started: its process, address, CA, audit log and counts."""

    process: subprocess.Popen[bytes]
    port: int
    ca: Path
    audit_log: str | None  # an absolute path; None when it is standard output
    tally: Path
    output: asyncio.Task[None] | None = None


class _Run:
    def __init__(self, options: RunOptions, out: IO[str]) -> None:
        self.options = options
        self.out = out  # where the run speaks: the summary, its errors, the proxy's lines

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    async def main(self) -> int:
        with tempfile.TemporaryDirectory(prefix="robotsgate-run-") as scratch:
            proxy: _Proxy | None = None
            capture: CaptureNet | None = None
            try:
                if self.options.capture and os.geteuid() != 0:
                    raise RunError("--capture needs root (a TUN interface and a network "
                                   "namespace's routes); --sealed needs no privilege")
                user = bot_user(self.options, os.geteuid(), os.environ)
                if self.options.capture:
                    capture = CaptureNet.new()
                if self.options.proxy is None:
                    proxy = await self._start_proxy(Path(scratch), capture)
                    if capture is not None:
                        capture.make()
                    address = ProxyAddress("127.0.0.1", proxy.port)
                    ca = proxy.ca
                else:
                    address = self.options.proxy
                    ca = self.options.ca or Path("~/.mitmproxy/mitmproxy-ca-cert.pem")
                    ca = ca.expanduser()
                    if not ca.is_file():
                        raise RunError(f"--ca {ca}: no such file (the CA of the proxy at "
                                         f"{address.shown()}: its confdir's "
                                         f"mitmproxy-ca-cert.pem)")
                audit_start = _size(proxy.audit_log) if proxy and proxy.audit_log else 0
                ended = await self._run_bot(address, ca, Path(scratch),
                                            capture.path if capture else None, user)
            except (RunError, CaptureError, FilterUnavailable) as exc:
                self.say(f"robotsgate run: {exc}")
                return RUN_ERROR
            finally:
                if proxy is not None:
                    await self._stop_proxy(proxy)
                if capture is not None:
                    capture.remove()
            if isinstance(ended, _NotRun):
                return ended.status
            self.say(self._summary(ended, proxy, audit_start))
            return summary.exit_status(ended)

    # --- the proxy -----------------------------------------------------------------------------

    async def _start_proxy(self, scratch: Path, capture: CaptureNet | None) -> _Proxy:
        args = self.options.serve_args
        agent = ("--set", f"robots_agent={self.options.agent}") if self.options.agent else ()
        addon = Path(__file__).resolve().parent.parent / "run_addon.py"
        tally = scratch / "tally.json"
        command = [sys.executable, "-m", "robotsgate", "serve", "--listen-host", "127.0.0.1",
                   "--listen-port", "0", *(capture.proxy_args() if capture else ()), *args,
                   *agent, "-s", str(addon)]
        env = dict(os.environ, ROBOTSGATE_RUN_TALLY=str(tally))
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                   preexec_fn=_die_with_parent)
        assert process.stdout is not None
        reader = await _line_reader(process.stdout)
        said: list[str] = []
        port = None
        deadline = time.monotonic() + START_TIMEOUT
        # Ready once it listens and has said what is in force (as it starts running, after
        # its configuration was accepted): that line is shown before the bot's first word.
        while port is None or "robotsgate: obeying robots.txt" not in said[-1]:
            try:
                line = await asyncio.wait_for(reader.readline(), deadline - time.monotonic())
            except TimeoutError:
                line = b""
            if not line:
                process.kill()
                process.wait()
                for text in said:
                    self.say(text)
                raise RunError(f"the proxy did not start (robotsgate serve "
                               f"{' '.join(args)}): see above")
            text = line.decode("utf-8", "replace").rstrip("\n")
            said.append(text)
            found = _LISTENING.search(text)
            if found is not None:
                port = int(found.group(2))
        self.say(said[-1])
        confdir = Path(serve_setting(args, "confdir") or "~/.mitmproxy").expanduser()
        audit = serve_setting(args, "robots_audit_log") or "robots-audit.jsonl"
        proxy = _Proxy(process, port, confdir / "mitmproxy-ca-cert.pem",
                       None if audit == "-" else str(Path(audit).expanduser().absolute()),
                       tally)
        proxy.output = asyncio.create_task(self._pass_on(reader))
        # mitmproxy writes a new confdir's CA as it starts, not always before it says it
        # listens: the bot's environment (and Java's trust store) are made from that file.
        while not proxy.ca.is_file() and process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return proxy

    async def _pass_on(self, reader: asyncio.StreamReader) -> None:
        """The proxy's own lines (what is in force, warnings, errors), as it says them."""
        while line := await reader.readline():
            text = line.decode("utf-8", "replace").rstrip("\n")
            if not any(quiet in text for quiet in _QUIET):
                self.say(text)

    async def _stop_proxy(self, proxy: _Proxy) -> None:
        """SIGTERM, so that it stops as mitmproxy does (its counts written); killed if it has
        not within STOP_TIMEOUT."""
        process = proxy.process
        if process.poll() is None:
            process.terminate()
            deadline = time.monotonic() + STOP_TIMEOUT
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if process.poll() is None:
                process.kill()
                process.wait()
        if proxy.output is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proxy.output, 2.0)

    # --- the bot -------------------------------------------------------------------------------

    async def _run_bot(self, address: ProxyAddress, ca: Path, scratch: Path,
                       netns: str | None, user: RunAs | None) -> "int | _NotRun":
        """Run CMD to its end: its returncode (minus a signal), or why it never ran."""
        options = self.options
        seal = Seal(address.port, netns, user) if options.sealed else None
        seen = address.at("127.0.0.1", seal.port) if seal is not None else address
        truststore = _truststore(ca, scratch)
        given = dict(os.environ)
        if user is not None:
            # What the bot must read, where it can: the run's scratch directory is root's.
            os.chmod(scratch, 0o711)
            ca = Path(shutil.copyfile(ca, scratch / "proxy-ca.pem"))
            for path in (ca, truststore):
                if path is not None:
                    os.chmod(path, 0o644)
            given.update(HOME=user.home, USER=user.name, LOGNAME=user.name)
        env = child_environment(given, seen, ca, truststore)
        terminal = _terminal()
        try:
            child = subprocess.Popen(
                options.command, env=env, process_group=0,
                pass_fds=(seal.child_fd,) if seal is not None else (),
                preexec_fn=_child_setup(seal, terminal))
        except (FileNotFoundError, PermissionError, subprocess.SubprocessError) as exc:
            refusal = seal.listener() if seal is not None else None
            if isinstance(refusal, SealRefusal):
                self.say(f"robotsgate run: {refusal.said()}. Nothing was run: see "
                         f"docs/operating/sealing.md")
                return _NotRun(RUN_ERROR)
            if refusal is not None:
                refusal.close()
            name = options.command[0]
            if isinstance(exc, FileNotFoundError):
                self.say(f"robotsgate run: {name}: command not found")
                return _NotRun(NOT_FOUND)
            self.say(f"robotsgate run: {name}: {getattr(exc, 'strerror', None) or exc}")
            return _NotRun(NOT_EXECUTABLE)
        relay = None
        if seal is not None:
            listener = seal.listener()
            if isinstance(listener, SealRefusal):  # cannot be: the child ran only once sealed
                child.kill()
                child.wait()
                self.say(f"robotsgate run: {listener.said()}")
                return _NotRun(RUN_ERROR)
            relay = Relay(listener, (address.host, address.port))
            await relay.start()
        loop = asyncio.get_running_loop()
        for signum in _FORWARDED:
            loop.add_signal_handler(signum, _forward, child, signum)
        try:
            await _exited(child)
        finally:
            for signum in _FORWARDED:
                loop.remove_signal_handler(signum)
            _take_terminal_back(terminal)
            if relay is not None:
                await relay.stop()
        return child.returncode

    # --- the summary ---------------------------------------------------------------------------

    def _summary(self, returncode: int, proxy: _Proxy | None, audit_start: int) -> str:
        tally = None
        connections: dict[str, int] = {}
        audit_log = None
        if proxy is not None:
            audit_log = proxy.audit_log or "the proxy's standard output (robots_audit_log=-)"
            try:
                tally = summary.Tally.parse(proxy.tally.read_text())
            except (OSError, ValueError):
                tally = summary.Tally({})  # it wrote none: it was killed, having counted nothing
            if proxy.audit_log is not None:
                connections = dict(summary.connections_refused(
                    _records(proxy.audit_log, audit_start)))
        return summary.render(
            tally, command=Path(self.options.command[0]).name,
            status=summary.status_said(returncode), agent=self.options.agent,
            audit_log=audit_log, connections=connections,
            proxy=self.options.proxy.shown() if self.options.proxy else None)


def _forward(child: subprocess.Popen[bytes], signum: int) -> None:
    """A signal sent to the run goes to the bot's process group, as a terminal's would."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


async def _exited(child: subprocess.Popen[bytes]) -> None:
    """Wait for the child without a thread: its pidfd becomes readable when it ends."""
    loop = asyncio.get_running_loop()
    pidfd = os.pidfd_open(child.pid)
    ended: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        await ended
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    child.wait()


def _terminal() -> int | None:
    """The terminal the run is the foreground of, whose foreground the bot will be (so that
    Ctrl-C reaches the bot alone, once); None when there is none."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return fd
    return None


def _take_terminal_back(terminal: int | None) -> None:
    if terminal is None:
        return
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(terminal, os.getpgrp())
    finally:
        signal.signal(signal.SIGTTOU, previous)


def _child_setup(seal: Seal | None, terminal: int | None) -> Callable[[], None] | None:
    """What the bot's process does between fork and exec: take the terminal's foreground (its
    own process group, which Popen made), and enter the sealed namespace."""
    if seal is None and terminal is None:
        return None

    def setup() -> None:
        if terminal is not None:
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            with contextlib.suppress(OSError):
                os.tcsetpgrp(terminal, os.getpgrp())
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        if seal is not None:
            seal.enter()

    return setup


def _truststore(ca: Path, scratch: Path) -> Path | None:
    """The CA as a PKCS#12 trust store for Java (cryptography >= 45 writes one); None when it
    cannot be made."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import NoEncryption, pkcs12

        certificate = x509.load_pem_x509_certificate(ca.read_bytes())
        store = scratch / "truststore.p12"
        store.write_bytes(pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(certificate, b"robotsgate")], NoEncryption()))
    except (AttributeError, ImportError, OSError, ValueError):
        return None
    return store


async def _line_reader(pipe: IO[bytes]) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _records(path: str, start: int) -> Iterator[dict[str, Any]]:
    """The audit records written after `start` (the log's size when the run began)."""
    try:
        with open(path, "rb") as log:
            if os.fstat(log.fileno()).st_size < start:
                start = 0  # rotated meanwhile: its records are all the run's
            log.seek(start)
            for line in log:
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict):
                        yield record
    except OSError:
        return


def run(argv: Sequence[str], out: IO[str] | None = None) -> int:
    """`robotsgate run ARGS`: CMD's exit status, or the run's own (125, 126, 127)."""
    own = list(argv[:list(argv).index("--")]) if "--" in argv else list(argv)
    if any(arg in ("-h", "--help") for arg in own):
        print(RUN_HELP, end="")
        return 0
    out = out or sys.stderr
    try:
        options = RunOptions.parse(argv)
    except RunError as exc:
        print(f"robotsgate run: {exc}", file=out)
        return RUN_ERROR
    return asyncio.run(_Run(options, out).main())


def add_parser(commands: Commands) -> None:
    """`robotsgate run`: listed in --help; its arguments are read by run() itself."""
    commands.add_parser(
        "run", help="run one bot behind the gate: robotsgate run --agent MyBot -- CMD",
        description=RUN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False)
