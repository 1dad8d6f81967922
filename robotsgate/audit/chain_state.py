"""Where a proxy's chain stands, kept beside its audit log, so that the next run goes on with it.

Without it, each start began a new chain with an empty `prev`, and a whole run could be taken
out of a log without trace. With it, a proxy that starts again continues the chain the last run
left off, from the line after its last one; `robotsgate verify` then names a run that is gone
(robotsgate.audit.verify).

One small file per chain, beside the log: `.FILE.PROXY.chain` (hidden, and not matched by
`FILE*`: logrotate, `report FILE*` and `verify FILE*` never take it for a log). It says, as one
JSON object padded to a fixed size: `proxy` (the chain's id), `seq` and `prev` of the last line
the chain wrote, and where that line ends (`dev`, `ino`: the file; `end`: the offset after its
newline). It is rewritten in place after every line the chain writes (one pwrite; its size
never changes), so a proxy killed at any moment leaves it naming its last line.

A running proxy holds an exclusive lock (flock) on its chain's file for as long as it runs; the
kernel drops it when the process ends, however it ends. So:

- a proxy that starts takes a chain that no running proxy holds: one of this host's first, the
  most recently written first; when all are held (or there is none), it begins a new one;
- two proxies writing one file hold a chain each (each has its own id), and when they restart
  they take one each again; which one each takes does not matter, since each chain goes on;
- rotation (logrotate and SIGHUP, or by size) changes nothing here: the file is not rotated,
  and the chain goes on in the new log file as it always did;
- the line a chain's state names is looked for at start-up, where it was written (claim()): if
  the log is the file it was written to and the line is there, the run's first line says
  `"start": "same-file"`, and `verify` will expect that line before it; if not (the file was
  rotated away, replaced, cut or deleted by the operator, or a last line was cut short), the
  proxy says so in its log, and the run's first line says `"start": "other-file"`: verify names
  the records missing between what is there and the line's `seq`, as for any gap;
- a log whose last line was cut short (a full disk, a crash of the machine) gets a newline
  first, so that the next record is not glued to it (verify names the cut line).
"""

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass

from robotsgate.audit.chain import GENESIS, digest

_SIZE = 512  # bytes the state is padded to: rewritten in place, never longer or shorter
_SUFFIX = ".chain"
_LOOK_BACK = 1 << 20  # the most read back from a line's end to find where it starts


@dataclass(frozen=True, slots=True)
class Stand:
    """Where a chain stands: its last line, and where that line ends (dev, ino, end)."""

    proxy: str
    seq: int = 0
    prev: str = GENESIS
    dev: int | None = None
    ino: int | None = None
    end: int | None = None

    def encoded(self) -> bytes:
        data = json.dumps({"proxy": self.proxy, "seq": self.seq, "prev": self.prev,
                           "dev": self.dev, "ino": self.ino, "end": self.end},
                          separators=(",", ":")).encode("utf-8", "backslashreplace")
        return data.ljust(_SIZE - 1) + b"\n"


def _stand(data: bytes) -> Stand | None:
    """The state read back; None when it is not one (changed, or cut)."""
    try:
        found = json.loads(data)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    proxy, seq, prev = found.get("proxy"), found.get("seq"), found.get("prev")
    dev, ino, end = found.get("dev"), found.get("ino"), found.get("end")
    if not (isinstance(proxy, str) and proxy and type(seq) is int and seq >= 0 and
            isinstance(prev, str) and all(v is None or type(v) is int for v in (dev, ino, end))):
        return None
    return Stand(proxy, seq, prev, dev, ino, end)


class ChainState:
    """A chain's state file, locked by this process while it writes the chain."""

    def __init__(self, path: str, fd: int, stand: Stand) -> None:
        self.path = path
        self._fd = fd
        self.stand = stand

    def save(self, proxy: str, seq: int, prev: str, at: tuple[int, int, int]) -> None:
        """The chain's last line, and where it ends: (dev, ino, end)."""
        self._save(Stand(proxy, seq, prev, *at))

    def _save(self, stand: Stand) -> None:
        data = stand.encoded()
        if len(data) > _SIZE:  # a proxy id longer than any host name: the file grows once
            os.ftruncate(self._fd, len(data))
        os.pwrite(self._fd, data, 0)
        self.stand = stand

    def release(self) -> None:
        """Let another run take the chain (closing drops the lock)."""
        if self._fd != -1:
            os.close(self._fd)
            self._fd = -1


def state_path(log: str, proxy: str) -> str:
    directory, name = os.path.split(os.path.abspath(log))
    return os.path.join(directory, f".{name}.{proxy}{_SUFFIX}")


def _candidates(log: str) -> Iterator[str]:
    """This log's chain states: this host's first, then the most recently written first."""
    directory, name = os.path.split(os.path.abspath(log))
    prefix, host = f".{name}.", f"{socket.gethostname()}-"
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(_SUFFIX):
                with contextlib.suppress(OSError):  # gone meanwhile
                    mine = entry.name[len(prefix):].startswith(host)
                    found.append((not mine, -entry.stat().st_mtime_ns, entry.path))
    for _, _, path in sorted(found):
        yield path


def claim(log: str, proxy: str) -> tuple[ChainState, list[str]]:
    """A chain no running proxy holds, locked, and what is worth saying about the states that
    could not be read; a new chain named `proxy` when there is none to take. Raises OSError
    when the state cannot be kept."""
    said: list[str] = []
    for path in _candidates(log):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a running proxy's
        stand = _stand(os.pread(fd, _SIZE * 4, 0))
        if stand is None:
            os.close(fd)
            said.append(f"{path} is not a chain's state (changed?): left as it is")
            continue
        return ChainState(path, fd, stand), said
    path = state_path(log, proxy)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        state = ChainState(path, fd, Stand(proxy))
        state._save(state.stand)
    except BaseException:
        os.close(fd)
        raise
    return state, said


def line_ending_at(path: str, identity: tuple[int, int], end: int) -> bytes | None:
    """The line of the file at `path` (when it is still the file `identity` names) that ends
    at offset `end`, without its newline; None when that file is not there, or is shorter, or
    has no line ending there."""
    with _reading(path, identity) as opened:
        if opened is None or opened[1] < end or end < 1:
            return None
        fd, _ = opened
        start = max(0, end - _LOOK_BACK)
        chunk = os.pread(fd, end - start, start)
    if not chunk.endswith(b"\n"):
        return None
    _, newline, line = chunk[:-1].rpartition(b"\n")
    if not newline and start > 0:
        return None  # longer than looked back: not known
    return line


def holds(path: str, stand: Stand) -> bool:
    """Whether the log at `path` holds the chain's last line where it was written."""
    if stand.seq == 0 or stand.dev is None or stand.ino is None or stand.end is None:
        return False
    line = line_ending_at(path, (stand.dev, stand.ino), stand.end)
    return line is not None and digest(line) == stand.prev


def ends_torn(path: str, identity: tuple[int, int]) -> bool:
    """Whether the file at `path` (still the one `identity` names) ends inside a line."""
    with _reading(path, identity) as opened:
        if opened is None or opened[1] == 0:
            return False
        fd, size = opened
        return os.pread(fd, 1, size - 1) != b"\n"


@contextlib.contextmanager
def _reading(path: str, identity: tuple[int, int]) -> Iterator[tuple[int, int] | None]:
    """(fd, size) of the file at `path` open for reading, while it is the file `identity` (dev,
    ino) names; None when no file is there, or another one."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield None
        return
    try:
        status = os.fstat(fd)
        yield (fd, status.st_size) if (status.st_dev, status.st_ino) == identity else None
    finally:
        os.close(fd)


def identity(path: str) -> tuple[int, int] | None:
    """(dev, ino) of the file at `path`, if there is one."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino
