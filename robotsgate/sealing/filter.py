"""The sealed bot's system-call filter (seccomp): the doors a network namespace leaves open.

A network namespace takes the bot's network away, but not the machine's filesystem, and a Unix
socket on the filesystem is a way out: a bot that connects to the user's D-Bus
(`/run/user/UID/bus`) asks systemd to start a program outside the namespace; one that reaches
`/var/run/docker.sock` starts a container on the host's network; a Redis or database socket is a
dependency the gate never sees. The filter closes the whole class where it is made, at the
socket's creation:

- `socket(AF_UNIX, ...)` fails with EPERM, whatever address the bot meant to reach;
- `socketpair(AF_UNIX, ...)` of any type but SOCK_STREAM and SOCK_SEQPACKET fails with EPERM:
  a datagram socket sends to any path given in sendto(), connected or not, and the kernel makes
  a SOCK_RAW pair a datagram one. Stream and seqpacket pairs (pipes to the bot's own children,
  as libuv, asyncio and Chromium make them) are allowed: they ignore any address given;
- io_uring fails with ENOSYS: it makes sockets and connects them without these system calls
  (IORING_OP_SOCKET), as container runtimes' default filters also refuse it;
- ioctl TIOCSTI and TIOCLINUX fail with EPERM: the bot has the run's terminal, and a character
  pushed into its input is read by the shell once the run ends, outside any namespace. The
  request's low 32 bits are compared, as the kernel reads them (a filter comparing all 64 was
  passed by setting the high ones: CVE-2019-10063);
- a system call of another architecture's table (i386 or x32 on x86_64) kills the bot: their
  numbers differ, and i386's socketcall() hides the address family from any filter.

Abstract Unix sockets need no filter: they belong to the network namespace. Nor do ptrace,
/proc/PID/mem, process_vm_writev or pidfd_getfd, through which the bot could act as a process of
its user outside the namespace (the run itself, which holds the bridge to the proxy): the
kernel refuses them all to a process of a child user namespace, which holds no capability in
the namespace outside (cap_ptrace_access_check). The filter is the
last step before the bot is executed, and it holds for everything the bot starts (filters are
inherited and cannot be removed); no_new_privs goes with it, so that no set-user-ID program
the bot runs gains a privilege the filter would not see.
"""

import ctypes
import errno
import platform
import socket
import struct
from dataclasses import dataclass

# <linux/filter.h>, <linux/seccomp.h>, <linux/prctl.h>
_LD_W_ABS, _JEQ_K, _JGE_K, _AND_K, _RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (the low
# 32 bits of each argument first, on the little-endian machines below).
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24
_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK and SOCK_CLOEXEC are flags above it
_X32_BIT = 0x40000000


@dataclass(frozen=True, slots=True)
class _Table:
    """One architecture's audit number and the system calls the filter names."""

    arch: int
    socket: int
    socketpair: int
    ioctl: int
    x32_aliases: bool  # x86_64 also answers x32's numbers, with this bit set


# The numbers from each architecture's unistd.h; io_uring's (425-427) are the same on every
# architecture.
_TABLES = {
    "x86_64": _Table(0xC000003E, 41, 53, 16, x32_aliases=True),
    "aarch64": _Table(0xC00000B7, 198, 199, 29, x32_aliases=False),
}
_IO_URING = (425, 426, 427)
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C  # the same on both


class FilterUnavailable(Exception):
    """The filter cannot be made here (an architecture it has no table for): the bot is not
    run sealed without it."""


def program(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as classic BPF instructions (code, jump if true, jump if false, k)."""
    name = machine or platform.machine()
    table = _TABLES.get(name)
    if table is None:
        raise FilterUnavailable(f"no system-call filter for this machine ({name}); "
                                f"sealing is made for {' and '.join(_TABLES)}")
    allow = (_RET_K, 0, 0, _RET_ALLOW)
    eperm = (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)
    enosys = (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS)
    # Laid out as labelled blocks, then jumps resolved: a jump's offset is counted from the
    # instruction after it.
    blocks: list[tuple[str, list[tuple[int, int | str, int | str, int]]]] = [
        ("start", [(_LD_W_ABS, 0, 0, _ARCH),
                   (_JEQ_K, 0, "kill", table.arch),
                   (_LD_W_ABS, 0, 0, _NR),
                   *([(_JGE_K, "enosys", 0, _X32_BIT)] if table.x32_aliases else []),
                   (_JEQ_K, "socket", 0, table.socket),
                   (_JEQ_K, "socketpair", 0, table.socketpair),
                   (_JEQ_K, "ioctl", 0, table.ioctl),
                   *[(_JEQ_K, "enosys", 0, number) for number in _IO_URING],
                   allow]),
        ("socket", [(_LD_W_ABS, 0, 0, _ARG0),
                    (_JEQ_K, "eperm", "allow", socket.AF_UNIX)]),
        ("socketpair", [(_LD_W_ABS, 0, 0, _ARG0),
                        (_JEQ_K, 0, "allow", socket.AF_UNIX),
                        (_LD_W_ABS, 0, 0, _ARG1),
                        (_AND_K, 0, 0, _SOCK_TYPE_MASK),
                        (_JEQ_K, "allow", 0, socket.SOCK_STREAM),
                        (_JEQ_K, "allow", "eperm", socket.SOCK_SEQPACKET)]),
        ("ioctl", [(_LD_W_ABS, 0, 0, _ARG1),  # the request's low 32 bits
                   (_JEQ_K, "eperm", 0, _TIOCSTI),
                   (_JEQ_K, "eperm", "allow", _TIOCLINUX)]),
        ("allow", [allow]),
        ("eperm", [eperm]),
        ("enosys", [enosys]),
        ("kill", [(_RET_K, 0, 0, _RET_KILL_PROCESS)]),
    ]
    at: dict[str, int] = {}
    count = 0
    for label, block in blocks:
        at[label] = count
        count += len(block)
    out: list[tuple[int, int, int, int]] = []
    for _, block in blocks:
        for code, true, false, k in block:
            here = len(out) + 1
            out.append((code, at[true] - here if isinstance(true, str) else true,
                        at[false] - here if isinstance(false, str) else false, k))
    return out


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def prepare(machine: str | None = None) -> tuple[ctypes.Array[ctypes.c_char], _SockFprog]:
    """The filter in the kernel's layout, made before the fork (the child between fork and exec
    should do as little as it can)."""
    instructions = program(machine)
    code = b"".join(struct.pack("=HBBI", *instruction) for instruction in instructions)
    buffer = ctypes.create_string_buffer(code, len(code))
    return buffer, _SockFprog(len(instructions), ctypes.addressof(buffer))


def apply(prepared: tuple[ctypes.Array[ctypes.c_char], _SockFprog]) -> None:
    """In the child, last before exec: no_new_privs, then the filter. Raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"prctl(PR_SET_NO_NEW_PRIVS): {errno.errorcode.get(number)}")
    _, fprog = prepared
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, "prctl(PR_SET_SECCOMP): this kernel has no seccomp filters "
                              f"({errno.errorcode.get(number)})")
