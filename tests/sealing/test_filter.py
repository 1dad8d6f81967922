"""The sealed bot's system-call filter (robotsgate.sealing.filter), applied for real in a child
process: what it refuses, with which errno, and what it leaves alone. No network, no namespace:
the filter alone."""

import ctypes
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from robotsgate.sealing import filter as syscalls

REPO = Path(__file__).resolve().parents[2]

# Each attempt's errno's name, or "done"; run in a child that applied the filter first.
ATTEMPTS = """\
import ctypes, errno, json, os, socket, sys
from robotsgate.sealing import filter as syscalls
syscalls.apply(syscalls.prepare())
libc = ctypes.CDLL(None, use_errno=True)
said = {}
def attempt(name, action):
    try:
        action()
        said[name] = "done"
    except OSError as exc:
        said[name] = errno.errorcode[exc.errno]
def raw(number, *args):
    def call():
        if libc.syscall(number, *args) < 0:
            raise OSError(ctypes.get_errno(), "")
    return call
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("unix-datagram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("inet6-datagram", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("pair-stream", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("pair-seqpacket", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
attempt("pair-datagram", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("pair-datagram-flags", lambda: socket.socketpair(
    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK))
attempt("pair-raw", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW))
import fcntl, termios
controller, terminal = os.openpty()
attempt("tiocsti", lambda: fcntl.ioctl(terminal, termios.TIOCSTI, b"x"))
# The same request with high bits set, which the kernel ignores (it reads 32 bits).
attempt("tiocsti-high-bits", raw(16 if sys.argv[1] == "x86_64" else 29, terminal,
                                 ctypes.c_ulong(0x1_0000_0000 | termios.TIOCSTI),
                                 ctypes.c_char_p(b"x")))
attempt("tioclinux", raw(16 if sys.argv[1] == "x86_64" else 29, terminal,
                         ctypes.c_ulong(0x541C), ctypes.c_char_p(b"\\x06")))
attempt("tiocgwinsz", lambda: fcntl.ioctl(terminal, termios.TIOCGWINSZ, b"\\0" * 8))
params = ctypes.create_string_buffer(120)
attempt("io_uring", raw(425, 8, params))
if sys.argv[1] == "x86_64":
    # socket(AF_UNIX, SOCK_STREAM) by x32's number for it: the same call, another table.
    attempt("x32-socket", raw(0x40000000 | 41, 1, 1, 0))
attempt("pipe", lambda: os.pipe())
print(json.dumps(said))
"""


def attempts() -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", ATTEMPTS, platform.machine()],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    said: dict[str, str] = json.loads(done.stdout)
    return said


def test_unix_sockets_and_io_uring_are_refused_and_the_rest_is_not() -> None:
    said = attempts()
    assert said.pop("unix") == said.pop("unix-datagram") == "EPERM"
    # A datagram pair sends to any path named in sendto(): refused, flags or not.
    assert said.pop("pair-datagram") == said.pop("pair-datagram-flags") == "EPERM"
    assert said.pop("pair-raw") == "EPERM"  # the kernel makes it a datagram pair
    # Characters pushed into the run's terminal, read by its shell once the run ends.
    assert said.pop("tiocsti") == said.pop("tiocsti-high-bits") == "EPERM"
    assert said.pop("tioclinux") == "EPERM"
    assert said.pop("io_uring") == "ENOSYS"
    if platform.machine() == "x86_64":
        assert said.pop("x32-socket") == "ENOSYS"
    # The network the namespace gives, and pipes to the bot's own children, are untouched.
    assert said == {"inet": "done", "inet6-datagram": "done", "pair-stream": "done",
                    "pair-seqpacket": "done", "pipe": "done", "tiocgwinsz": "done"}


def test_a_system_call_of_another_architecture_s_table_kills_the_bot() -> None:
    """The first instruction compares the architecture: a program for another one (i386's
    socketcall() hides the address family from any filter) is killed, not let through."""
    program = syscalls.program("x86_64")
    assert program[0] == (0x20, 0, 0, 4)  # load seccomp_data.arch
    code, true, false, k = program[1]
    assert (code, true, k) == (0x15, 0, 0xC000003E)
    assert program[2 + false] == (0x06, 0, 0, 0x80000000)  # SECCOMP_RET_KILL_PROCESS


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_every_jump_lands_inside_the_program(machine: str) -> None:
    program = syscalls.program(machine)
    for at, (code, true, false, _) in enumerate(program):
        if code & 0x07 == 0x05:  # BPF_JMP
            assert at + 1 + true < len(program) and at + 1 + false < len(program)
    assert program[-1][0] == 0x06  # every path ends in a return


def test_a_machine_without_a_table_is_refused_before_anything_runs() -> None:
    with pytest.raises(syscalls.FilterUnavailable, match=r"no system-call filter for this "
                                                          r"machine \(riscv64\)"):
        syscalls.prepare("riscv64")


def test_the_filter_is_the_kernel_s_layout() -> None:
    buffer, fprog = syscalls.prepare("x86_64")
    assert fprog.len == len(syscalls.program("x86_64")) == len(buffer.raw) // 8
    assert fprog.filter == ctypes.addressof(buffer)

