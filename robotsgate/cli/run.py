"""`robotsgate run [OPTIONS] -- CMD [ARGS...]`: one bot behind the gate."""

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from robotsgate.cli.common import Commands
from robotsgate.protocol import is_product_token
from robotsgate.sealing import summary
from robotsgate.sealing.capture import CaptureError, CaptureNet
from robotsgate.sealing.environment import ProxyAddress, child_environment
from robotsgate.sealing.filter import FilterUnavailable
from robotsgate.sealing.namespace import RunAs, Seal, SealRefusal
from robotsgate.sealing.relay import Relay

# The run's own failures: statuses no bot's exit is mistaken for (as env, timeout and docker
# run have them): 125 the run itself (a usage mistake, a proxy that did not start, a bot that
# could not be sealed), 126 CMD cannot be executed, 127 CMD not found.
RUN_ERROR, NOT_EXECUTABLE, NOT_FOUND = 125, 126, 127

RUN_HELP = """\
usage: robotsgate run [--agent TOKEN] [--sealed | --capture] [--user NAME] [serve options]
                      -- CMD [ARGS...]
       robotsgate run --proxy URL [--ca FILE] [--agent TOKEN] [--sealed] [--user NAME]
                      -- CMD [ARGS...]

Run one bot behind the gate: start a proxy (robotsgate serve, on a free port of 127.0.0.1) or
use a running one (--proxy), run CMD with its environment pointing at it, and when CMD ends,
stop the proxy, print one summary (requests, forwarded, refused by reason, delayed, per host,
the audit log) and exit with CMD's status.

  robotsgate run --agent MyBot -- python mybot.py

CMD's environment: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (each in both cases) name the proxy;
NO_PROXY and no_proxy are removed; the proxy's CA is in SSL_CERT_FILE (OpenSSL, Python, Go),
REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO; NODE_USE_ENV_PROXY=1
(Node >= 22.21 / 24); JAVA_TOOL_OPTIONS gets the proxy's system properties and a trust store
holding the CA. A program that reads none of these goes around the proxy: --sealed stops it.

options:
  --agent TOKEN   the bot's product token, which robots.txt is obeyed as: the proxy a run
                  starts has robots_agent=TOKEN; a running proxy (--proxy) is given it as the
                  proxy-auth user name (http://TOKEN@host:port: see robots_agents and
                  proxyauth). Without it, each request's User-Agent names the bot.
  --proxy URL     use the proxy running at http://[USER[:PASSWORD]@]HOST:PORT instead of
                  starting one; its counts are its own, so the summary says less
  --ca FILE       with --proxy: that proxy's CA certificate (default:
                  ~/.mitmproxy/mitmproxy-ca-cert.pem)
  --sealed        run CMD in a network namespace of its own whose only way out is the proxy:
                  loopback only, the proxy on its 127.0.0.1; anything else is "network
                  unreachable". Made through a user namespace, so no privilege is needed where
                  the kernel allows them; where it refuses, nothing is run (status 125). A
                  system-call filter refuses Unix sockets (EPERM: a socket on the filesystem,
                  such as D-Bus's or Docker's, would be a way out), io_uring and pushing
                  characters into the terminal (TIOCSTI).
  --capture       (root) sealed, and everything CMD sends reaches the proxy all the same
                  (mitmproxy's TUN mode): a bot that ignores every proxy setting is gated, not
                  cut off. Its requests are decided for the host their Host (or TLS server
                  name) names, which must be at the address it connected to; DNS is answered
                  by the proxy's resolver; QUIC and any other UDP are refused; all audited.
  --user NAME     (root, with --sealed or --capture) the unprivileged user CMD runs as.
                  Sealed by root, CMD is never root: without --user it runs as the user who
                  called sudo (SUDO_UID), and with neither the run refuses (status 125).
  -h, --help      this help

Any other option before -- goes to the proxy's command line (robotsgate serve, mitmdump's
options), e.g. --set robots_mode=monitor --set robots_audit_log=run.jsonl.

Exit status: CMD's own; 128+N when a signal N ended it (SIGINT, SIGTERM, SIGHUP, SIGQUIT and
SIGUSR1/2 sent to the run are passed on to CMD; Ctrl-C reaches CMD, which has the terminal);
125 when the run itself fails (a usage mistake, a proxy that does not start, a bot that cannot
be sealed), 126 when CMD cannot be executed, 127 when it is not found.
"""

_OWN_FLAGS = ("--agent", "--proxy", "--ca", "--user")  # take a value
_OWN_SWITCHES = ("--sealed", "--capture")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)
_LISTENING = re.compile(r"HTTP\(S\) proxy listening at \[?([^\]\s]+?)\]?:(\d+)\.?\s*$")
# The proxy's lines that say nothing to a person running one bot.
_QUIET = ("Loading script", "SIGHUP reopens the audit log")
START_TIMEOUT = 60.0  # seconds for the proxy a run starts to listen
STOP_TIMEOUT = 10.0  # seconds for it to stop (and write its counts) before it is killed
_PR_SET_PDEATHSIG = 1


class RunError(Exception):
    """The run cannot go on (a usage mistake, a proxy that did not start): said in one line,
    status 125."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    command: tuple[str, ...]
    agent: str | None = None
    proxy: ProxyAddress | None = None  # a running proxy; None: the run starts one
    ca: Path | None = None
    sealed: bool = False
    serve_args: tuple[str, ...] = ()
    capture: bool = False  # sealed, its traffic brought to the proxy (TUN mode)
    user: str | None = None  # --user: the unprivileged user a root run gives a sealed bot

    @classmethod
    def parse(cls, argv: Sequence[str]) -> "RunOptions":
        if "--" not in argv:
            raise RunError("put -- before the bot's command: robotsgate run [OPTIONS] -- "
                             "CMD [ARGS...]")
        split = list(argv).index("--")
        before, command = list(argv[:split]), tuple(argv[split + 1:])
        if not command:
            raise RunError("no command after --: robotsgate run [OPTIONS] -- CMD [ARGS...]")
        own: dict[str, str] = {}
        switches: set[str] = set()
        serve_args: list[str] = []
        tokens = iter(before)
        for token in tokens:
            name, has_value, value = token.partition("=")
            if name in _OWN_FLAGS:
                if not has_value:
                    value = next(tokens, "")
                    if not value:
                        raise RunError(f"{name} needs a value")
                own[name] = value
            elif token in _OWN_SWITCHES:
                switches.add(token)
            else:
                serve_args.append(token)
        agent = own.get("--agent")
        if agent is not None and not is_product_token(agent):
            raise RunError(f"--agent {agent!r}: must be a product token (letters, '-' and "
                             f"'_'), as robots.txt names bots")
        proxy = None
        if "--proxy" in own:
            try:
                proxy = ProxyAddress.parse(own["--proxy"])
            except ValueError as exc:
                raise RunError(f"--proxy: {exc}") from None
            if serve_args:
                raise RunError(f"{serve_args[0]}: with --proxy the run starts no proxy, so "
                                 f"it takes no serve options (give them to that proxy)")
            if agent is not None:
                if proxy.user is not None and proxy.user != agent:
                    raise RunError(f"--agent {agent} and --proxy's user name "
                                     f"{proxy.user!r} name two bots: give one")
                # A password as well: some clients (requests) send no user name without one.
                proxy = ProxyAddress(proxy.host, proxy.port, agent,
                                     "run" if proxy.password is None else proxy.password)
        elif "--ca" in own:
            raise RunError("--ca names a running proxy's CA: give it with --proxy (the proxy "
                             "a run starts uses its confdir's)")
        elif agent is not None and any(arg.startswith(("robots_agent=", "robots_agents="))
                                       for arg in serve_args):
            raise RunError("--agent and --set robots_agent(s) both name the bot: give one")
        ca = Path(own["--ca"]).expanduser() if "--ca" in own else None
        capture = "--capture" in switches
        if capture and proxy is not None:
            raise RunError("--capture brings the bot's traffic to the proxy the run starts: "
                           "it takes no --proxy")
        sealed = "--sealed" in switches or capture
        user = own.get("--user")
        if user is not None and not sealed:
            raise RunError(f"--user {user}: only a sealed bot (--sealed or --capture) is run as "
                           f"another user")
        return cls(command, agent, proxy, ca, sealed, tuple(serve_args), capture, user)


def _setting(args: Sequence[str], name: str) -> str | None:
    """The last `--set NAME=VALUE` (or `--set=NAME=VALUE`) of a serve command line."""
    found = None
    for i, arg in enumerate(args):
        given = args[i + 1] if arg == "--set" and i + 1 < len(args) else \
            arg.removeprefix("--set=") if arg.startswith("--set=") else None
        if given is not None and given.startswith(name + "="):
            found = given[len(name) + 1:]
    return found


def bot_user(options: RunOptions, euid: int, environ: Mapping[str, str]) -> RunAs | None:
    """Who a sealed bot runs as when root runs it: --user, else the user who called sudo; None
    when the run is not root's or the bot is not sealed (it runs as the caller)."""
    if not options.sealed:
        return None
    if euid != 0:
        if options.user is not None and _account(options.user).uid != euid:
            raise RunError(f"--user {options.user}: only root runs a bot as another user")
        return None
    if options.user is not None:
        user = _account(options.user)
    elif environ.get("SUDO_UID", "0").isdigit() and int(environ.get("SUDO_UID", "0")) != 0:
        user = _account(environ["SUDO_UID"])
    else:
        raise RunError("run by root, the sealed bot would be root over this machine's files "
                       "(its Unix sockets, its configuration): name an unprivileged user for "
                       "it with --user NAME (a user of its own: useradd --system crawler)")
    if user.uid == 0:
        raise RunError(f"--user {options.user}: the bot's user must not be root")
    return user


def _account(name: str) -> RunAs:
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError):
        raise RunError(f"--user {name}: no such user") from None
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


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
        confdir = Path(_setting(args, "confdir") or "~/.mitmproxy").expanduser()
        audit = _setting(args, "robots_audit_log") or "robots-audit.jsonl"
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
