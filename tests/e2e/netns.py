"""Origins in network namespaces of their own, and ordinary users, for the sealing tests.

An origin on 127.0.0.x would sit on every bot's loopback, a sealed bot's included; these sit at
their own addresses (10.X.Y.2) in a namespace the test makes (`ip netns add`), reached from the
machine's own namespace through a veth pair (10.X.Y.1 on this side). Nothing is routed further:
the /30 is the link itself, so nothing leaves the machine.

The origin's server is an ordinary `Origin` whose socket is made by a thread that entered the
namespace first (setns changes the calling thread's network namespace only): the test process
keeps its own, and the origin answers from the other.

`ordinary_user` makes a user with no privilege at all (useradd), and `as_user` the command line
that runs a program as that user; where this interpreter lives under a directory ordinary users
cannot enter (pyenv under /root), the program runs in a mount namespace of its own in which
that directory is an empty tmpfs holding only the interpreter and the checkout, so the user
runs this very robotsgate without any privilege being handed over.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import ssl
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .machine import REPO, require_tool
from .origins import Origin


def _ip(*args: str) -> None:
    ip = require_tool("ip", package="iproute2")
    done = subprocess.run([ip, *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _used_networks() -> list[ipaddress.IPv4Network]:
    out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True,
                         text=True, timeout=30).stdout
    used = []
    for line in out.splitlines():
        first = line.split()[0] if line.split() else ""
        if first in ("local", "broadcast", "unicast"):
            first = line.split()[1]
        with contextlib.suppress(ValueError):
            used.append(ipaddress.ip_network(first, strict=False))
    return used


@dataclass
class Namespace:
    """A network namespace joined to this one by a veth pair: `host` on this side, `address`
    inside."""

    name: str
    outside: str  # the veth end in the machine's namespace
    host: str  # this side's address
    address: str  # the namespace's address, where its origins listen

    def enter_thread(self) -> None:
        """Move the calling thread into the namespace."""
        fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            os.setns(fd, os.CLONE_NEWNET)
        finally:
            os.close(fd)

    def origin(self, robots: str | bytes | None = None,
               tls: ssl.SSLContext | None = None) -> Origin:
        """An origin listening on this namespace's address."""
        made: list[Origin | BaseException] = []

        def build() -> None:
            try:
                self.enter_thread()
                made.append(Origin(self.address, tls=tls))
            except BaseException as exc:  # reported in the test's thread
                made.append(exc)

        thread = threading.Thread(target=build, name=f"origin-in-{self.name}")
        thread.start()
        thread.join(timeout=30)
        [result] = made
        if isinstance(result, BaseException):
            raise result
        if robots is not None:
            result.set_robots(robots)
        return result


@contextlib.contextmanager
def namespace(index: int = 0) -> Iterator[Namespace]:
    """A namespace for origins, at a /30 of 10.0.0.0/8 that no route of this machine uses."""
    used = _used_networks()
    for _ in range(50):
        second, third, fourth = (200 + secrets.randbelow(54), secrets.randbelow(256),
                                 4 * secrets.randbelow(64))
        network = ipaddress.ip_network(f"10.{second}.{third}.{fourth}/30")
        if not any(network.overlaps(other) for other in used):
            break
    else:
        raise RuntimeError("no free /30 in 10.200.0.0/13 for a test namespace")
    tag = f"{os.getpid() % 100000}{index}{secrets.token_hex(1)}"
    name, outside, inside = f"rgo{tag}", f"rgh{tag}", f"rgi{tag}"
    host, address = (str(a) for a in list(network.hosts()))
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("addr", "add", f"{host}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", name, "addr", "add", f"{address}/30", "dev", inside)
        _ip("-n", name, "link", "set", inside, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        yield Namespace(name, outside, host, address)
    finally:
        with contextlib.suppress(RuntimeError):
            _ip("link", "del", outside)
        _ip("netns", "del", name)


# --- an ordinary user ------------------------------------------------------------------------


@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: Path


@contextlib.contextmanager
def ordinary_user() -> Iterator[User]:
    """A user made for the test (useradd: no groups, no privilege), removed after it."""
    useradd = require_tool("useradd", package="passwd")
    name = f"rgseal{secrets.token_hex(3)}"
    subprocess.run([useradd, "--create-home", "--shell", "/bin/sh", "--user-group", name],
                   check=True, capture_output=True, timeout=60)
    try:
        import pwd

        entry = pwd.getpwnam(name)
        yield User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))
    finally:
        subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)


def _closed_ancestor(path: Path) -> Path | None:
    """The first directory above `path` that others cannot enter, if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


def as_user(user: User, command: list[str]) -> list[str]:
    """`command` run as `user` (its ids only, no capability, the environment the test gives),
    able to reach this interpreter and the checkout."""
    setpriv = require_tool("setpriv", package="util-linux")
    return reachable([setpriv, f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups",
                      "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
                      *command])


def reachable(drop: list[str]) -> list[str]:
    """`drop` run where any user can reach this interpreter and the checkout (a directory
    above them that others cannot enter, such as root's home, is opened in a mount namespace
    of its own); `drop` itself when nothing is closed."""
    needed = [Path(os.path.realpath(sys.base_prefix)), REPO]
    closed = {}
    for path in needed:
        ancestor = _closed_ancestor(path)
        if ancestor is not None:
            closed.setdefault(ancestor, []).append(path)
    if not closed:
        return drop
    script = ["set -e", 'keep=$(mktemp -d)']
    for i, (ancestor, paths) in enumerate(closed.items()):
        for j, path in enumerate(paths):
            script += [f'mkdir -p "$keep/{i}-{j}"', f"mount --bind '{path}' \"$keep/{i}-{j}\""]
        script.append(f"mount -t tmpfs -o mode=0755 tmpfs '{ancestor}'")
        for j, path in enumerate(paths):
            script += [f"mkdir -p '{path}'", f"mount --move \"$keep/{i}-{j}\" '{path}'"]
    script.append('exec "$@"')
    unshare = require_tool("unshare", package="util-linux")
    return [unshare, "--mount", "--propagation", "private", "sh", "-c", "\n".join(script),
            "sh", *drop]
