"""deploy/: the systemd unit as systemd reads it and as it runs, the logrotate snippet against a
running proxy, and the browsers' PAC file.

No systemd runs here, so the unit's ExecStart is run the way systemd would run it: its
specifiers pointing at temporary directories made as StateDirectory= and LogsDirectory= make
them, its environment from Environment= and an environment file, working directory /, and the
unit's system call filter, address families and MemoryDenyWriteExecute= applied with seccomp and
prctl before the command starts (``enter_sandbox``, run as ``python test_deploy.py --sandbox``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import gzip
import json
import os
import re
import shlex
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import pytest
from e2e.machine import REPO, clean_env, free_port, require_tool, stop_process
from e2e.origins import Origin, serving
from e2e.tls import make_test_ca

DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "robotsgate.service"
LOGROTATE = DEPLOY / "logrotate" / "robotsgate"
PAC = DEPLOY / "proxy.pac"
README = DEPLOY / "README.md"
INSTALLED = "/opt/robotsgate/bin/robotsgate"  # where the unit expects the venv
CHECKOUT = REPO / ".venv" / "bin" / "robotsgate"
AUDIT_LOG = "/var/log/robotsgate/robots-audit.jsonl"  # the unit's audit log, specifiers resolved

# `systemd-analyze security --offline=true` on the unit, measured: 1.1 ("OK") with systemd 252.
# Exposure that is accepted, each for its reason (deploy/README.md): a proxy needs the network
# and sockets; MemoryDenyWriteExecute would break https (the sandbox applies it when set);
# ProtectClock's read access to the RTC; no RootDirectory for a venv in /opt.
MAX_EXPOSURE = 1.1
ACCEPTED_EXPOSURE = frozenset({
    "RootDirectoryOrRootImage",
    "MemoryDenyWriteExecute",
    "RestrictAddressFamilies_AF_UNIX",
    "RestrictAddressFamilies_AF_INET_INET6",
    "PrivateNetwork",
    "DeviceAllow",
    "IPAddressDeny",
})

ROBOTS = "User-agent: *\nDisallow: /private\n"
UA = "DeployBot/1.0"
START_TIMEOUT = 30.0
CLIENT_TIMEOUT = 30.0


# -- the unit as systemd reads it ---------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A unit file's assignments, in order: (section, key, value)."""

    entries: tuple[tuple[str, str, str], ...]

    def values(self, key: str, section: str = "Service") -> list[str]:
        return [v for s, k, v in self.entries if (s, k) == (section, key)]

    def value(self, key: str, section: str = "Service") -> str:
        found = self.values(key, section)
        assert found, f"{UNIT.name} has no {key}= in [{section}]"
        return found[-1]

    def keys(self, section: str = "Service") -> set[str]:
        return {k for s, k, _ in self.entries if s == section}


def read_unit(text: str) -> Unit:
    entries: list[tuple[str, str, str]] = []
    section = ""
    # A backslash at the end of a line continues it on the next, as in systemd.
    for raw in re.sub(r"\\\n", " ", text).splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not an assignment in {UNIT.name}: {line!r}"
        entries.append((section, key.strip(), value.strip()))
    return Unit(tuple(entries))


def specifiers(text: str, values: Mapping[str, str]) -> str:
    """``%S``, ``%L`` ... replaced as systemd does (only those given; ``%%`` is ``%``)."""
    def one(match: re.Match[str]) -> str:
        letter = match[1]
        if letter == "%":
            return "%"
        if letter not in values:
            raise ValueError(f"specifier %{letter} is not mapped by this test")
        return values[letter]
    return re.sub(r"%(.)", one, text)


def command_line(line: str, spec: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    """An Exec*= line as systemd turns it into argv: words, specifiers, then ``$VAR`` as a word
    of its own split at white space, ``${VAR}`` inside a word, unset variables empty."""
    if line[:1] in "@-:+!|":
        raise ValueError(f"Exec prefix {line[0]!r} is not handled by this test")
    argv: list[str] = []
    for word in shlex.split(line):
        word = specifiers(word, spec)
        whole = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if whole:
            argv += env.get(whole[1], "").split()
            continue
        argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m[1], ""), word))
    return argv


def environment(unit: Unit) -> dict[str, str]:
    """The unit's Environment= assignments."""
    env: dict[str, str] = {}
    for line in unit.values("Environment"):
        for word in shlex.split(line):
            name, _, value = word.partition("=")
            env[name] = value
    return env


# -- the sandbox: the unit's seccomp and prctl settings, applied to a process -------------------


@dataclass(frozen=True)
class Sandbox:
    """What the unit restricts that a process can apply to itself before exec."""

    syscalls: tuple[str, ...]  # allowed; any other fails with errno_name
    errno_name: str
    families: tuple[str, ...]  # socket() address families allowed
    deny_write_execute: bool


def syscall_groups() -> dict[str, list[str]]:
    """systemd's named system call sets (``@system-service`` ...), as this systemd defines them."""
    tool = require_tool("systemd-analyze", package="systemd")
    out = subprocess.run([tool, "syscall-filter"], capture_output=True, text=True, check=True)
    groups: dict[str, list[str]] = {}
    current: list[str] = []
    for line in out.stdout.splitlines():
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        if not line.startswith(" "):
            current = groups.setdefault(word, [])
        else:
            current.append(word)
    return groups


def expand(names: list[str], groups: Mapping[str, list[str]]) -> set[str]:
    out: set[str] = set()
    for name in names:
        if name.startswith("@"):
            if name not in groups:
                raise ValueError(f"unknown system call set {name}")
            out |= expand(groups[name], groups)
        else:
            out.add(name)
    return out


def sandbox_of(unit: Unit) -> Sandbox:
    groups = syscall_groups()
    allowed: set[str] | None = None
    for line in unit.values("SystemCallFilter"):
        deny = line.startswith("~")
        names = expand(line.removeprefix("~").split(), groups)
        if allowed is None:
            # The first assignment decides: an allow list, or everything but a deny list.
            assert not deny, "this test handles a SystemCallFilter= that starts as an allow list"
            allowed = names
        elif deny:
            allowed -= names
        else:
            allowed |= names
    assert allowed, f"{UNIT.name} has no SystemCallFilter= allow list"
    families = " ".join(unit.values("RestrictAddressFamilies")).split()
    assert families and not families[0].startswith("~"), "RestrictAddressFamilies= allow list"
    return Sandbox(
        syscalls=tuple(sorted(allowed)),
        errno_name=unit.value("SystemCallErrorNumber"),
        families=tuple(families),
        deny_write_execute=(unit.values("MemoryDenyWriteExecute") or ["no"])[-1]
        in ("yes", "true", "on", "1"),
    )


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_LT, SCMP_CMP_EQ, SCMP_CMP_GT = 2, 4, 6
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1


def scmp_errno(number: int) -> int:
    return 0x00050000 | (number & 0xFFFF)


def find_libseccomp() -> str:
    found = ctypes.util.find_library("seccomp")
    if found is None:
        pytest.fail("needs libseccomp: install it (apt-get install libseccomp2)", pytrace=False)
    return found


def libseccomp() -> ctypes.CDLL:
    lib = ctypes.CDLL(find_libseccomp(), use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def _load(lib: ctypes.CDLL, default: int, rules: list[tuple[int, str, list[_ArgCmp]]]) -> None:
    ctx = lib.seccomp_init(default)
    assert ctx, "seccomp_init failed"
    for action, name, compare in rules:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:
            continue  # not a system call of this architecture
        array = (_ArgCmp * len(compare))(*compare) if compare else None
        result = lib.seccomp_rule_add_array(ctx, action, number, len(compare), array)
        assert result == 0, f"seccomp rule for {name}: {os.strerror(-result)}"
    result = lib.seccomp_load(ctx)
    assert result == 0, f"seccomp_load: {os.strerror(-result)}"
    lib.seccomp_release(ctx)


def enter_sandbox(sandbox: Sandbox) -> None:
    """Restrict this process as systemd restricts the unit's (two filters, as systemd installs:
    the kernel applies the strictest answer of all)."""
    lib = libseccomp()
    if sandbox.deny_write_execute:
        # The kernel's own MemoryDenyWriteExecute: no page both writable and executable.
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_MDWE) needs Linux >= 6.3")
    # RestrictAddressFamilies=: socket() of any other family fails with EAFNOSUPPORT.
    numbers = sorted(int(getattr(socket, name)) for name in sandbox.families)
    refuse = scmp_errno(errno.EAFNOSUPPORT)
    rules = [(refuse, "socket", [_ArgCmp(0, SCMP_CMP_LT, numbers[0], 0)]),
             (refuse, "socket", [_ArgCmp(0, SCMP_CMP_GT, numbers[-1], 0)])]
    rules += [(refuse, "socket", [_ArgCmp(0, SCMP_CMP_EQ, gap, 0)])
              for gap in range(numbers[0], numbers[-1]) if gap not in numbers]
    _load(lib, SCMP_ACT_ALLOW, rules)
    # SystemCallFilter= with SystemCallErrorNumber=: last, since it denies seccomp() itself.
    _load(lib, scmp_errno(getattr(errno, sandbox.errno_name)),
          [(SCMP_ACT_ALLOW, name, []) for name in sandbox.syscalls])


def sandboxed(sandbox: Sandbox, argv: list[str]) -> list[str]:
    """``argv`` run under ``sandbox``: this file as a script applies it, then execs argv."""
    find_libseccomp()  # missing, the test fails here rather than in the child
    return [sys.executable, str(Path(__file__).resolve()), "--sandbox",
            json.dumps(asdict(sandbox)), "--", *argv]


# -- the unit's command, run as the service ----------------------------------------------------


@dataclass(frozen=True)
class Service:
    """The unit's ExecStart running; its pid is what systemd calls $MAINPID."""

    process: subprocess.Popen[bytes]
    port: int
    state: Path  # the StateDirectory
    logs: Path  # the LogsDirectory
    output_path: Path

    @property
    def ca(self) -> Path:
        return self.state / "mitmproxy-ca-cert.pem"

    @property
    def audit_path(self) -> Path:
        return self.logs / Path(AUDIT_LOG).name

    def output(self) -> str:
        return self.output_path.read_text(errors="replace") if self.output_path.exists() else ""

    def wait_output(self, text: str, count: int = 1) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while self.output().count(text) < count:
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{text!r} (x{count}) not in the output "
                            f"(exit {self.process.poll()}):\n{self.output()}")
            time.sleep(0.05)

    def get(self, url: str) -> int:
        context = ssl.create_default_context(cafile=str(self.ca))
        with httpx.Client(proxy=f"http://127.0.0.1:{self.port}", verify=context,
                          trust_env=False, timeout=CLIENT_TIMEOUT) as client:
            return client.get(url, headers={"User-Agent": UA}).status_code

    def audit_urls(self, path: Path | None = None) -> list[str]:
        target = path or self.audit_path
        opener: Callable[[Path], str] = (
            (lambda p: gzip.decompress(p.read_bytes()).decode()) if target.suffix == ".gz"
            else (lambda p: p.read_text()))
        return [json.loads(line)["url"] for line in opener(target).splitlines()]

    def stop(self) -> None:
        stop_process(self.process)


def service_argv(unit: Unit, state_root: Path, logs_root: Path,
                 env: Mapping[str, str]) -> list[str]:
    """The unit's ExecStart for these roots of %S and %L, with this checkout's robotsgate."""
    argv = command_line(unit.value("ExecStart"), {"S": str(state_root), "L": str(logs_root)}, env)
    assert argv[0] == INSTALLED, f"ExecStart runs {argv[0]}, the README says {INSTALLED}"
    if not CHECKOUT.exists():
        pytest.fail(f"no {CHECKOUT}: run scripts/setup.sh test", pytrace=False)
    return [str(CHECKOUT), *argv[1:]]


def run_unit(workdir: Path, env_file: Mapping[str, str]) -> Service:
    """Start the unit's ExecStart as systemd would; ``env_file`` as /etc/default/robotsgate."""
    unit = read_unit(UNIT.read_text())
    state_root, logs_root = workdir / "lib", workdir / "log"
    # systemd makes these before ExecStart, with these modes; nothing else exists.
    state = state_root / unit.value("StateDirectory")
    logs = logs_root / unit.value("LogsDirectory")
    state.mkdir(parents=True, mode=int(unit.value("StateDirectoryMode"), 8))
    logs.mkdir(parents=True, mode=int(unit.value("LogsDirectoryMode"), 8))
    env = clean_env({**environment(unit), **env_file})
    argv = sandboxed(sandbox_of(unit), service_argv(unit, state_root, logs_root, env))
    journal = workdir / "journal"
    with journal.open("wb") as sink:
        process = subprocess.Popen(argv, cwd="/", env=env, stdin=subprocess.DEVNULL,
                                   stdout=sink, stderr=subprocess.STDOUT,
                                   umask=int(unit.value("UMask"), 8))
    return Service(process, int(env["ROBOTSGATE_PORT"]), state, logs, journal)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Callable[..., Service]]:
    """Factory: the unit's proxy, listening (``args``: ROBOTSGATE_ARGS of the environment file)."""
    started: list[Service] = []

    def start(args: str = "") -> Service:
        for attempt in range(3):
            workdir = tmp_path / f"service{len(started)}-{attempt}"
            workdir.mkdir()
            # The test's sites are on loopback, which the proxy refuses unless told.
            allowed = f"--set robots_egress_allow=127.0.0.0/8 {args}".strip()
            svc = run_unit(workdir, {"ROBOTSGATE_PORT": str(free_port()),
                                     "ROBOTSGATE_ARGS": allowed})
            started.append(svc)
            deadline = time.monotonic() + START_TIMEOUT
            while svc.process.poll() is None and time.monotonic() < deadline:
                if "SIGHUP reopens the audit log" in svc.output() and svc.ca.exists():
                    return svc
                time.sleep(0.05)
            svc.stop()
            if "address already in use" not in svc.output().lower():
                pytest.fail(f"the unit's command did not start (exit {svc.process.poll()}):\n"
                            f"{svc.output()}")
        pytest.fail("the unit's command could not bind a port")

    yield start
    for svc in started:
        svc.stop()


@pytest.fixture
def site() -> Iterator[Origin]:
    with serving(ROBOTS) as origin:
        yield origin


# -- systemd's own checks -----------------------------------------------------------------------


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze", package="systemd")
    text = UNIT.read_text()
    # verify wants ExecStart's program to exist: the venv's robotsgate stands in, nothing else.
    checked = tmp_path / UNIT.name
    checked.write_text(text.replace(f"ExecStart={INSTALLED} ", f"ExecStart={CHECKOUT} ", 1))
    original, copy = text.splitlines(), checked.read_text().splitlines()
    changed = [(a, b) for a, b in zip(original, copy, strict=True) if a != b]
    assert len(changed) == 1 and changed[0][1] == changed[0][0].replace(INSTALLED, str(CHECKOUT))

    result = subprocess.run([tool, "verify", str(checked)], capture_output=True, text=True,
                            timeout=60)
    # verify exits 0 even for an unknown key or a value it ignores: it only says so.
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_the_unit_keeps_its_measured_exposure() -> None:
    tool = require_tool("systemd-analyze", package="systemd")

    def analyze(*args: str) -> str:
        result = subprocess.run([tool, "security", "--offline=true", *args, str(UNIT)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    [overall] = re.findall(r"Overall exposure level for \S+: (\d+\.\d+)", analyze())
    assert float(overall) <= MAX_EXPOSURE
    exposed = {check["json_field"] for check in json.loads(analyze("--json=short"))
               if check["set"] is False}
    # Settings DynamicUser= implies (NoNewPrivileges, PrivateTmp, ...) and light ones
    # (ProtectHostname, ...) do not move the rounded figure: each check is held in place too.
    assert exposed <= ACCEPTED_EXPOSURE, sorted(exposed - ACCEPTED_EXPOSURE)


def test_every_line_of_the_unit_is_explained_in_the_readme() -> None:
    unit = read_unit(UNIT.read_text())
    explained = set(re.findall(r"^\| `([A-Za-z]+)=", README.read_text(), re.MULTILINE))
    service_keys = unit.keys("Service")
    assert service_keys - explained == set(), "not explained in deploy/README.md"
    assert explained - service_keys == set(), "explained in deploy/README.md, not in the unit"


# -- the unit's command, run -------------------------------------------------------------------


def test_the_unit_starts_the_proxy_in_its_sandbox(
        service: Callable[..., Service], site: Origin, tmp_path: Path) -> None:
    ca = make_test_ca(tmp_path / "test-ca")
    secure = Origin("127.0.0.2", tls=ca.server_context())
    try:
        secure.set_robots(ROBOTS)
        # Options reach mitmdump from the environment file's ROBOTSGATE_ARGS.
        svc = service(f"--set ssl_verify_upstream_trusted_ca={ca.ca_pem}")
        [summary] = [line for line in svc.output().splitlines() if "obeying robots.txt" in line]
        assert f"audit log {svc.audit_path} (chained as proxy " in summary
        assert svc.audit_path == svc.logs / "robots-audit.jsonl"
        # The CA clients must trust is in the StateDirectory (mitmproxy's confdir).
        assert svc.ca.parent == svc.state
        assert svc.audit_path.exists()

        assert svc.get(site.url("/private/a")) == 403
        assert svc.get(site.url("/public/a")) == 200
        # https through the proxy: its TLS needs what MemoryDenyWriteExecute= would take away.
        assert svc.get(secure.url("/private/b")) == 403
        assert svc.get(secure.url("/public/b")) == 200
        assert site.paths() == ["/robots.txt", "/public/a"]
        assert secure.paths() == ["/robots.txt", "/public/b"]
        assert svc.audit_urls() == [site.url("/private/a"), secure.url("/private/b")]
        # UMask=0077: the CA's key and what the bots asked for are nobody else's to read.
        for private in (svc.state / "mitmproxy-ca.pem", svc.audit_path):
            assert private.stat().st_mode & 0o077 == 0, private
        # $MAINPID: `robotsgate serve` runs the proxy in its own process, so ExecReload's
        # signal reaches it.
        assert "robotsgate\x00serve\x00" in \
            Path(f"/proc/{svc.process.pid}/cmdline").read_bytes().decode()
    finally:
        secure.stop()


def test_the_sandbox_refuses_what_the_unit_forbids(tmp_path: Path) -> None:
    """The sandbox the other tests run under is real: what the unit forbids fails."""
    sandbox = sandbox_of(read_unit(UNIT.read_text()))
    probe = (
        "import socket, os\n"
        "try:\n    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW); print('netlink')\n"
        "except OSError as e:\n    print(e.errno)\n"
        "socket.socket(socket.AF_INET6).close(); print('inet6')\n"
        "try:\n    os.setpriority(os.PRIO_PROCESS, 0, 5); print('nice')\n"
        "except OSError as e:\n    print(e.errno)\n")
    result = subprocess.run(sandboxed(sandbox, [sys.executable, "-c", probe]),
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(errno.EAFNOSUPPORT), "inet6", str(errno.EPERM)]


def test_a_configuration_mistake_is_not_restarted(tmp_path: Path) -> None:
    unit = read_unit(UNIT.read_text())
    svc = run_unit(tmp_path, {"ROBOTSGATE_PORT": str(free_port()),
                              "ROBOTSGATE_ARGS": "--set robots_agnet=DeployBot"})
    try:
        code = svc.process.wait(timeout=60)
    finally:
        svc.stop()
    assert "did you mean robots_agent?" in svc.output()
    assert str(code) in unit.value("RestartPreventExitStatus").split(), svc.output()
    assert unit.value("Restart") == "on-failure"


# -- logrotate ----------------------------------------------------------------------------------


def logrotate_config(logs: Path, postrotate: str | None = None) -> str:
    """The snippet with the audit log in ``logs``; ``postrotate`` replaces its script."""
    text = LOGROTATE.read_text()
    assert f"{AUDIT_LOG} {{" in text, f"the snippet does not rotate {AUDIT_LOG}"
    text = text.replace(AUDIT_LOG, str(logs / Path(AUDIT_LOG).name))
    if postrotate is not None:
        script = re.search(r"postrotate\n(.*?)\n\s*endscript", text, re.DOTALL)
        assert script is not None and "systemctl reload robotsgate.service" in script[1]
        text = text.replace(script[1], f"        {postrotate}")
    return text


def test_the_snippet_rotates_the_units_audit_log() -> None:
    unit = read_unit(UNIT.read_text())
    argv = command_line(unit.value("ExecStart"), {"S": "/var/lib", "L": "/var/log"}, {})
    assert f"robots_audit_log={AUDIT_LOG}" in argv
    assert f"confdir=/var/lib/{unit.value('StateDirectory')}" in argv
    assert Path(AUDIT_LOG).parent.name == unit.value("LogsDirectory")


def test_logrotate_debug_run_of_the_snippet(tmp_path: Path) -> None:
    tool = require_tool("logrotate")
    logs = tmp_path / "log"
    logs.mkdir()
    (logs / "robots-audit.jsonl").write_text('{"url": "http://a.test/"}\n')
    config = tmp_path / "robotsgate"
    config.write_text(logrotate_config(logs))
    result = subprocess.run([tool, "-d", "-f", "-s", str(tmp_path / "status"), str(config)],
                            capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "error" not in output.lower(), output
    assert f"renaming {logs}/robots-audit.jsonl to {logs}/robots-audit.jsonl.1" in output
    assert "running postrotate script" in output
    assert (logs / "robots-audit.jsonl").exists()  # -d: nothing done


def test_logrotate_rotates_under_a_running_proxy(
        service: Callable[..., Service], site: Origin, tmp_path: Path) -> None:
    tool = require_tool("logrotate")
    svc = service()
    config = tmp_path / "robotsgate.logrotate"
    # The unit's reload is `kill -HUP $MAINPID`: the same signal, without systemd.
    config.write_text(logrotate_config(svc.logs, f"kill -HUP {svc.process.pid}"))

    def rotate() -> None:
        result = subprocess.run([tool, "-f", "-s", str(tmp_path / "status"), str(config)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr

    urls = [site.url(f"/private/{n}") for n in range(3)]
    assert svc.get(urls[0]) == 403
    rotate()
    svc.wait_output("reopened", 1)
    assert svc.get(urls[1]) == 403
    rotate()
    svc.wait_output("reopened", 2)
    assert svc.get(urls[2]) == 403

    assert svc.process.poll() is None
    # Each file holds the records of its day; the older one compressed once nothing wrote to it.
    assert svc.audit_urls(svc.logs / "robots-audit.jsonl.2.gz") == [urls[0]]
    assert svc.audit_urls(svc.logs / "robots-audit.jsonl.1") == [urls[1]]
    assert svc.audit_urls() == [urls[2]]
    # Beside them, the state of the proxy's chain (hidden, never rotated:
    # robotsgate.audit.chain_state).
    names = sorted(p.name for p in svc.logs.iterdir())
    assert names[1:] == ["robots-audit.jsonl", "robots-audit.jsonl.1", "robots-audit.jsonl.2.gz"]
    assert names[0].startswith(".robots-audit.jsonl.") and names[0].endswith(".chain")


# -- the PAC file -------------------------------------------------------------------------------

PAC_URLS = [
    ("http://example.com/page", "example.com"),
    ("https://example.com/private/x?y=1", "example.com"),
    ("http://127.0.0.1:8000/", "127.0.0.1"),
    ("http://localhost:3000/admin", "localhost"),
    ("https://[::1]/", "::1"),
    ("http://93.184.215.14/robots.txt", "93.184.215.14"),
    ("http://10.1.2.3/", "10.1.2.3"),
    ("http://intranet/wiki", "intranet"),
    ("wss://example.com/socket", "example.com"),
]

PAC_RUNNER = """
const fs = require("fs"), vm = require("vm");
const called = [];
const helpers = ["isPlainHostName", "dnsDomainIs", "localHostOrDomainIs", "isResolvable",
  "isInNet", "dnsResolve", "myIpAddress", "dnsDomainLevels", "shExpMatch", "weekdayRange",
  "dateRange", "timeRange", "convert_addr", "alert"];
const context = {};
for (const name of helpers) context[name] = (...args) => { called.push(name); return false; };
const [pacFile, urlsJson] = process.argv.slice(-2);
vm.runInNewContext(fs.readFileSync(pacFile, "utf8"), context);
const urls = JSON.parse(urlsJson);
const answers = urls.map(([url, host]) => context.FindProxyForURL(url, host));
console.log(JSON.stringify({answers, called}));
"""


def test_the_pac_file_sends_every_request_through_the_proxy() -> None:
    node = require_tool("node", "nodejs", package="nodejs")
    result = subprocess.run([node, "-e", PAC_RUNNER, str(PAC), json.dumps(PAC_URLS)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    env = environment(read_unit(UNIT.read_text()))
    proxy = f"PROXY {env['ROBOTSGATE_HOST']}:{env['ROBOTSGATE_PORT']}"
    # Loopback, addresses and plain names too, and no DIRECT fallback for when it is down.
    assert out["answers"] == [proxy] * len(PAC_URLS)
    assert out["called"] == []  # no DNS lookup of the browser's own


# -- run as a script: the sandbox ---------------------------------------------------------------


def main(argv: list[str]) -> int:
    """``--sandbox JSON -- PROGRAM ARGS...``: apply the sandbox, then exec the program."""
    if len(argv) < 4 or argv[0] != "--sandbox" or argv[2] != "--":
        print("usage: test_deploy.py --sandbox JSON -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    spec = json.loads(argv[1])
    enter_sandbox(Sandbox(syscalls=tuple(spec["syscalls"]), errno_name=spec["errno_name"],
                          families=tuple(spec["families"]),
                          deny_write_execute=bool(spec["deny_write_execute"])))
    os.execv(argv[3], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# -- several workers on one machine (robotsgate@.service, haproxy/) ---------------------------

TEMPLATE = DEPLOY / "robotsgate@.service"


def test_the_worker_template_is_the_unit_but_for_its_port_and_shared_user() -> None:
    unit = UNIT.read_text().split("[Unit]", 1)[1].splitlines()
    template = TEMPLATE.read_text().split("[Unit]", 1)[1].splitlines()
    added = [line for line in template if line not in unit]
    removed = [line for line in unit if line not in template]
    assert [line.split("=", 1)[0] for line in removed] == ["Description", "ExecStart"]
    assert added[0].startswith("Description=robotsgate worker on 127.0.0.1:%i")
    assert added[1] == removed[1].replace(
        " serve ", " serve --listen-host 127.0.0.1 --listen-port %i ", 1)
    assert added[2:] == ["# One dynamic user for every worker (by name): they share the CA "
                         "and the audit log.", "User=robotsgate"]


def test_a_worker_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze", package="systemd")
    checked = tmp_path / "robotsgate@8081.service"
    checked.write_text(TEMPLATE.read_text().replace(f"ExecStart={INSTALLED} ",
                                                    f"ExecStart={CHECKOUT} ", 1))
    result = subprocess.run([tool, "verify", str(checked)], capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")
    security = subprocess.run([tool, "security", "--offline=true", str(TEMPLATE)],
                              capture_output=True, text=True, timeout=60)
    [overall] = re.findall(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
    assert float(overall) <= MAX_EXPOSURE


# -- a sealed bot's unit ---------------------------------------------------------------------

SEALED_BOT = DEPLOY / "sealed-bot.service"


def test_the_sealed_bot_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze", package="systemd")
    checked = tmp_path / SEALED_BOT.name
    # verify wants ExecStart's program to exist: true stands in for the bot.
    checked.write_text(SEALED_BOT.read_text().replace("ExecStart=/opt/mybot/bin/mybot",
                                                      "ExecStart=/bin/true", 1))
    result = subprocess.run([tool, "verify", str(checked)], capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_the_sealed_bot_unit_denies_every_address_but_the_gate_s() -> None:
    unit = read_unit(SEALED_BOT.read_text())
    assert unit.values("IPAddressDeny") == ["any"]
    assert unit.values("IPAddressAllow") == ["127.0.0.1"]  # robotsgate.service's address
    proxies = " ".join(unit.values("Environment"))
    assert "HTTPS_PROXY=http://127.0.0.1:8080" in proxies and "NO_PROXY" not in proxies
    assert unit.value("UnsetEnvironment") == "NO_PROXY no_proxy"
    assert unit.value("RestrictAddressFamilies").split() == ["AF_INET", "AF_INET6", "AF_UNIX"]
    assert unit.value("CapabilityBoundingSet") == ""
