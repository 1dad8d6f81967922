"""--sealed: the bot in a network namespace of its own, whose only way out is the gate.

The child enters it as it starts, between fork and exec (`Seal.enter`, a Popen preexec_fn), so
that nothing of the bot ever runs outside it:

1. a user namespace, a network namespace and an IPC namespace (unshare): the user namespace is
   what lets an ordinary user make the others, and it takes any privilege over the machine's
   own namespaces away from the bot, root's included (it cannot setns() back out); the IPC one
   keeps it from the machine's System V message queues and shared memory; a session keyring
   of its own keeps it from the keys of the session that started the run;
2. its user is mapped to the caller's (root in the namespace, the caller outside);
3. the namespace's loopback is brought up: the only interface it has;
4. a listener on the namespace's 127.0.0.1:PORT is handed to the run, outside, over a Unix
   socket pair (SCM_RIGHTS): the run bridges each connection to it to the proxy
   (robotsgate.sealing.relay). The bot's proxy variables name that address;
5. the system-call filter (robotsgate.sealing.filter) closes what the namespace leaves open:
   Unix sockets on the filesystem, and io_uring.

Run by root, the child first becomes the unprivileged user the run names (`RunAs`), before
the user namespace is made: mapped to root, it would be root over the machine's files (a
namespace's root holds every capability over the files its mapped ids own).

Any other address is "network unreachable" in there, names do not resolve (the resolvers of
/etc/resolv.conf are not reachable), and UDP goes nowhere. Where the kernel refuses a step, the
child sends why over the socket pair and does not run the bot (`SealRefusal`): never an unsealed
run.
"""

import ctypes
import errno
import fcntl
import os
import platform
import socket
import struct
from dataclasses import dataclass

from robotsgate.sealing import filter as syscalls

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_PR_SET_DUMPABLE = 4
_UNSHARE = "unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC)"
_KEYCTL = {"x86_64": 250, "aarch64": 219}  # the system call's number (the filter's machines)
_KEYCTL_JOIN_SESSION_KEYRING = 1
_IFREQ = struct.Struct("16sH14x")  # struct ifreq: the name, then ifr_flags (a short)

# What the kernel's refusal of each step means, and where it is refused.
_WHY = {
    errno.EPERM: "this kernel refuses user namespaces to this user (Debian before 11 with "
                 "kernel.unprivileged_userns_clone=0, an AppArmor or SELinux policy such as "
                 "Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1, or a container's "
                 "seccomp profile)",
    errno.ENOSPC: "user.max_user_namespaces is 0 (RHEL 7's default) or its limit is reached",
    errno.EUSERS: "user.max_user_namespaces is 0 or its limit is reached",
    errno.EINVAL: "this kernel has no user or network namespaces",
    errno.ENOSYS: "this kernel has no unshare system call (or a seccomp filter hides it)",
}


@dataclass(frozen=True, slots=True)
class RunAs:
    """The unprivileged user a root run gives the bot (robotsgate run --user)."""

    name: str
    uid: int
    gid: int
    home: str


@dataclass(frozen=True, slots=True)
class SealRefusal:
    """Why the bot could not be sealed; it was not run."""

    step: str
    error: str

    def said(self) -> str:
        return f"cannot seal the bot: {self.step}: {self.error}"


class Seal:
    """One sealed child: made before the fork, entered in the child (`enter`), and read back
    in the parent (`listener`)."""

    def __init__(self, port: int, netns: str | None = None, user: RunAs | None = None) -> None:
        self.port = port  # the namespace's 127.0.0.1:PORT, which the bot's proxy variables name
        # --capture: a network namespace the run made and routed (robotsgate.sealing.capture),
        # joined instead of a new one; the bot holds no privilege over it.
        self.netns = netns
        self.user = user
        # Made here, raising FilterUnavailable before anything runs; applied in the child.
        self._filter = syscalls.prepare()
        self._parent, self._child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # The maps are written from the bot's ids, read before unsharing (after it they read
        # as the overflow id until mapped).
        self._uid, self._gid = (user.uid, user.gid) if user else (os.geteuid(), os.getegid())

    @property
    def child_fd(self) -> int:
        """Pass it to Popen (pass_fds): the child's end of the socket pair."""
        return self._child.fileno()

    def enter(self) -> None:
        """In the child, after fork: seal it, hand the listener over, and close the child's
        end of the pair (the bot never holds it). Raises on any refusal, after sending why:
        Popen then runs nothing."""
        step = _UNSHARE
        try:
            if self.netns is not None:
                step = f"joining the network namespace {self.netns}"
                fd = os.open(self.netns, os.O_RDONLY)
                try:
                    os.setns(fd, os.CLONE_NEWNET)
                finally:
                    os.close(fd)
            if self.user is not None:
                step = f"becoming the user {self.user.name}"
                _become(self.user)
            step = "a session keyring of its own (keyctl)"
            _own_keyring()
            if self.netns is not None:
                step = "unshare(CLONE_NEWUSER | CLONE_NEWIPC)"
                os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWIPC)
            else:
                step = _UNSHARE
                os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET | os.CLONE_NEWIPC)
            step = "mapping the user (/proc/self/uid_map)"
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"0 {self._uid} 1")
            _write("/proc/self/gid_map", f"0 {self._gid} 1")
            if self.netns is None:
                step = "bringing up the namespace's loopback"
                _up("lo")
            step = f"listening on the namespace's 127.0.0.1:{self.port}"
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(socket.SOMAXCONN)
            step = "filtering the bot's system calls (seccomp)"
            syscalls.apply(self._filter)
            step = "handing the listener to the run"
            socket.send_fds(self._child, [b"ok"], [listener.fileno()])
            listener.close()
        except OSError as exc:
            why = _WHY.get(exc.errno or 0, "") if step.startswith("unshare") else ""
            message = f"{step}: {exc.strerror or exc}" + (f": {why}" if why else "")
            try:
                self._child.sendall(b"no" + message.encode("utf-8", "replace"))
            finally:
                self._child.close()
            raise
        self._child.close()

    def listener(self) -> socket.socket | SealRefusal:
        """In the parent, once Popen has returned or failed: the namespace's listener, or why
        there is none."""
        self._child.close()
        try:
            message, fds, _, _ = socket.recv_fds(self._parent, 4096, 1)
        except OSError as exc:
            return SealRefusal("reading the child's answer", str(exc))
        finally:
            self._parent.close()
        if message == b"ok" and len(fds) == 1:
            return socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        if message.startswith(b"no"):
            step, _, error = message[2:].decode("utf-8", "replace").partition(": ")
            return SealRefusal(step, error)
        return SealRefusal("starting the child", "it ended before it was sealed")

    def close(self) -> None:
        self._child.close()
        self._parent.close()


def _become(user: RunAs) -> None:
    """Root gives the child up for `user`: no supplementary group, its group, its id. Dumpable
    again afterwards: the kernel makes a process that changed ids undumpable, and the
    /proc/self files of an undumpable one are root's, so the maps could not be written."""
    os.setgroups([])
    os.setresgid(user.gid, user.gid, user.gid)
    os.setresuid(user.uid, user.uid, user.uid)
    _dumpable()


def _own_keyring() -> None:
    """A new, empty session keyring: the keys of the session that started the run (root's,
    when root runs it) are not the bot's. A kernel without keys has none to keep."""
    libc = ctypes.CDLL(None, use_errno=True)
    number = _KEYCTL[platform.machine()]
    if libc.syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        code = ctypes.get_errno()
        if code != errno.ENOSYS:
            raise OSError(code, os.strerror(code))


def _dumpable() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _up(interface: str) -> None:
    """`ip link set INTERFACE up`, without needing the ip program in the bot's image."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        name = interface.encode()
        flags = _IFREQ.unpack(fcntl.ioctl(probe, _SIOCGIFFLAGS, _IFREQ.pack(name, 0)))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, _IFREQ.pack(name, flags | _IFF_UP))
