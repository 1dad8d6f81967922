"""The audit log: one JSON object per line, each written with a single write() call.

A record is written with os.write on a descriptor opened with O_APPEND, so a killed proxy never
leaves half a line, and several proxies may append to one file.

Rotation: reopen() opens the path again (logrotate renames the file, then sends SIGHUP), and with
`max_bytes` the log rotates itself by size: path -> path.1 -> ... -> path.<keep>, oldest dropped.
Several proxies may share one file and rotate it by size: each record is then written under an
exclusive lock on `path.lock` (flock), so that one proxy's rotation never renames a file over
another's fresh one, and no record is lost between the size check and the write.
"""

import contextlib
import fcntl
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator

from robotsgate.audit import chain_state
from robotsgate.audit.chain import Chain, Linked, Where
from robotsgate.audit.records import AuditRecord, timestamp
from robotsgate.signing.keys import SigningKey

logger = logging.getLogger(__name__)


# Bytes a checkpoint line takes but for its proxy id: JSON names, time, seq, two hashes, a
# signature (robotsgate.audit.chain).
_CHECKPOINT_ROOM = 320


class AuditLog:
    """Appends records to a file, or to standard output for path "-"; with a `chain`, each
    record linked to the one before and checkpoints signed (robotsgate.audit.chain)."""

    def __init__(self, path: str, *, max_bytes: int = 0, keep: int = 5,
                 chain: Chain | None = None, key: SigningKey | None = None,
                 checkpoint_every: int = 1000, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.chain = chain
        self.key = key  # signs the chain's checkpoints
        self.checkpoint_every = checkpoint_every  # records between checkpoints
        self._clock = clock
        self.max_bytes = max_bytes  # 0: never rotate by size
        self.keep = keep  # rotated files kept: path.1 (newest) ... path.<keep>
        self._fd = 1 if path == "-" else self._open()
        self._where: Where = self._identity(self._fd)  # the file written to
        # The chain a previous run left beside this log is still to be taken up (claim): asked
        # once per record, so one flag rather than the conditions it stands for.
        self._unclaimed = chain is not None and chain.resumable and not chain.claimed and \
            self._where is not None
        # Rotation by size is shared by every proxy writing this path: one lock file beside it,
        # never rotated itself.
        self._lock = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT, 0o644) \
            if max_bytes and path != "-" else -1

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _identity(self, fd: int) -> Where:
        """The file written to; None for standard output, or anything but a regular file (a
        device such as /dev/null, a pipe): no chain state is kept beside those."""
        if self.path == "-":
            return None
        status = os.fstat(fd)
        return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None

    def claim(self) -> None:
        """Take up the chain a previous run left beside this log (robotsgate.audit.chain_state), for
        the proxy's own chain (`resumable`), once: at start-up, or before its first line.
        Raises OSError when its state cannot be kept."""
        chain = self.chain
        if chain is None or not chain.resumable or chain.claimed or self._where is None:
            self._unclaimed = False
            return
        with self._locked() if self._lock != -1 else contextlib.nullcontext():
            state, said = chain_state.claim(self.path, chain.proxy)
            for problem in said:
                logger.warning("robotsgate: audit log %s: %s", self.path, problem)
            if chain_state.ends_torn(self.path, self._where):
                # A line cut short (a full disk, a machine that stopped): the next record must
                # not be glued to it (verify names it as cut).
                self._write(b"\n")
                logger.warning("robotsgate: the audit log %s ended inside a line: ended it, so "
                               "that the next record is a line of its own", self.path)
            stand = state.stand
            found = stand.seq > 0 and (stand.dev, stand.ino) == self._where and \
                chain_state.holds(self.path, stand)
            if stand.seq and not found:
                rotated = chain_state.identity(f"{self.path}.1") == (stand.dev, stand.ino)
                logger.log(logging.INFO if rotated else logging.WARNING,
                           "robotsgate: the last line of audit chain %s (record %d) is not in "
                           "%s%s; the chain goes on from record %d, and robotsgate verify "
                           "names whatever is missing before it", stand.proxy, stand.seq,
                           self.path, f" (rotated to {self.path}.1)" if rotated else
                           " (rotated away, replaced, cut or deleted since it was written)",
                           stand.seq + 1)
            chain.resume(state, stand.proxy, stand.seq, stand.prev,
                         self._where if found else None)
        self._unclaimed = False  # not before: a claim that failed is tried again

    def write(self, record: AuditRecord) -> None:
        chain = self.chain
        if self._unclaimed:
            self.claim()
        if chain is None:
            data = record.to_line()  # never raises, whatever the request carried
            if self._lock == -1:
                self._write(data)
                return
            with self._locked():
                self._rotate_if_full(len(data))
                self._write(data)
            return
        if self._lock == -1:
            self._write_linked(chain, record)
            return
        with self._locked():
            link = chain.record(record, self._where)
            # Room for the checkpoint that closes a file, when one is signed.
            room = _CHECKPOINT_ROOM + len(chain.proxy.encode()) if self.key else 0
            self._rotate_if_full(len(link.line) + room)
            self._write_linked(chain, record, link)

    def _write_linked(self, chain: Chain, record: AuditRecord,
                      link: Linked | None = None) -> None:
        if link is None or link.seq != chain.seq + 1 or link.where != self._where:
            link = chain.record(record, self._where)  # a checkpoint went first, or a new file
        chain.written(link, end=self._write(link.line))
        if chain.since >= self.checkpoint_every:
            # The record is written: a checkpoint that cannot be is tried again with the next
            # record, and is no failure of this one's.
            with contextlib.suppress(OSError):
                self.checkpoint()

    def checkpoint(self) -> None:
        """A signed checkpoint of this proxy's chain, now (nothing without a key, or when the
        last line is one)."""
        chain, key = self.chain, self.key
        if chain is None or key is None or self._fd == -1:
            return
        link = chain.checkpoint(timestamp(self._clock()), key, self._where)
        if link is not None:
            chain.written(link, checkpoint=True, end=self._write(link.line))

    def _write(self, data: bytes) -> int | None:
        """Append `data` whole; where it ends in the file (None for standard output)."""
        written = os.write(self._fd, data)
        while written < len(data):  # only on a full disk or similar
            try:
                more = os.write(self._fd, data[written:])
            except OSError:
                more = 0
            if more <= 0:
                # Never leave a torn line for the next record to be glued to.
                with contextlib.suppress(OSError):
                    os.write(self._fd, b"\n")
                raise OSError(f"audit log {self.path}: short write ({written} of {len(data)} "
                              f"bytes)")
            written += more
        # With O_APPEND, the offset is where this write ended, whoever else appends.
        return None if self._where is None else os.lseek(self._fd, 0, os.SEEK_CUR)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def reopen(self) -> None:
        """Open the path again: after logrotate (or anyone) renamed the file, write a new one."""
        if self._fd in (1, -1):
            return  # standard output, or closed
        fd = self._open()  # first: when this fails, records keep going to the old file
        with contextlib.suppress(OSError):  # the old file's last word, when it can take it
            self.checkpoint()
        os.close(self._fd)
        self._fd = fd
        self._where = self._identity(fd)

    def _rotate_if_full(self, incoming: int) -> None:
        # The file itself is the truth, not a count of our own writes: another proxy may append
        # to it too, or have rotated it already (two stat calls, on blocks only).
        if not self._is_current_file():
            self.reopen()
        size = os.fstat(self._fd).st_size
        if size == 0 or size + incoming <= self.max_bytes:
            return  # a record larger than max_bytes still goes to a fresh file of its own
        for n in range(self.keep - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}.{n}", f"{self.path}.{n + 1}")
        with contextlib.suppress(FileNotFoundError):  # another proxy renamed it just now
            os.replace(self.path, f"{self.path}.1")
        self.reopen()

    def _is_current_file(self) -> bool:
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(self._fd)
        return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)

    def close(self, *, checkpoint: bool = True) -> None:
        """`checkpoint`: cover what was written last (not for a log that was never in use)."""
        if self._fd != -1 and checkpoint:
            with contextlib.suppress(OSError):
                self.checkpoint()
        if self._fd not in (1, -1):
            os.close(self._fd)
            self._fd = -1
        if self._lock != -1:
            os.close(self._lock)
            self._lock = -1
