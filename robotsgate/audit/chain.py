"""The audit log's chain: evidence that no line was changed, removed or inserted.

Every record a proxy writes carries `proxy` (this proxy's id, the same for all its records),
`seq` (1, 2, 3, ... in the order it wrote them) and `prev`: the SHA-256, in hex, of the line it
wrote just before, as bytes, without its newline ("" for its first). Change a byte of a line,
and the next line of that proxy no longer names it; remove one, and a number is missing; insert
one, and nothing names it. Several proxies writing one file each keep a chain of their own. The
chain goes on across files: the first record a proxy writes after the log was rotated names
the last line it wrote to the old file. And across runs: a proxy that starts again goes on with
the chain a previous run left (its standing kept beside the log: robotsgate.audit.chain_state), and
the first line of each run says how it begins (`start`: Start), so that a whole run cannot be
taken out without the next one naming it.

A hash chain alone stops only an editor who does not recompute the hashes after the edit. With a
signing key (robots_signing_key), every `robots_audit_checkpoint` records, when the log is
rotated or reopened, and when the proxy stops, it also writes a checkpoint: a line in the chain
like any other, whose Ed25519 signature covers its place in it (proxy, seq, prev, time). No one
without the key can then change anything up to the last checkpoint without the signature
showing it (`robotsgate verify`, robotsgate.audit.verify).

A checkpoint line: {"ts", "event": "checkpoint", "proxy", "seq", "prev", "keyid", "sig"}, `sig`
base64url over `signed_text(...)`.
"""

import hashlib
import json
import secrets
import socket
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

from robotsgate.signing.keys import SigningKey, b64url

if TYPE_CHECKING:
    from robotsgate.audit.records import AuditRecord

GENESIS = ""  # the `prev` of a proxy's first record
CHECKPOINT = "checkpoint"  # the `event` of a checkpoint line
# `start`, on the first line of each run of a proxy (the only lines that have it): "new", a new
# chain (seq 1); "same-file", the chain goes on from a line the proxy found, at start-up, in this
# same file, before this one; "other-file", the chain goes on from a line that is not in this
# file (rotated away, or the file was replaced, cut or deleted since).
Start = Literal["new", "same-file", "other-file"]
STARTS: tuple[Start, ...] = ("new", "same-file", "other-file")
_CONTEXT = b"robotsgate audit checkpoint 1\n"  # what a signature is for, and the format's version
_UNLINKED = b',"proxy":null,"seq":null,"prev":null}\n'  # how an unlinked record's line ends


def digest(line: bytes) -> str:
    """The hash the next line of its chain names: of the line as written, without "\\n"."""
    return hashlib.sha256(line.rstrip(b"\n")).hexdigest()


def signed_text(proxy: str, seq: int, prev: str, ts: str, keyid: str) -> bytes:
    """What a checkpoint's signature covers: its place in its chain, its time and its key
    (any string encodes: a surrogate read from a hostile line included)."""
    return _CONTEXT + "\n".join((proxy, str(seq), prev, ts, keyid)).encode("utf-8",
                                                                          "surrogatepass")


def checkpoint_line(ts: str, proxy: str, seq: int, prev: str, keyid: str, sig: str) -> bytes:
    """A checkpoint's line, exactly as written: nothing else is ever in one."""
    return (json.dumps({"ts": ts, "event": CHECKPOINT, "proxy": proxy, "seq": seq,
                        "prev": prev, "keyid": keyid, "sig": sig},
                       ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8", "backslashreplace")


def proxy_id() -> str:
    """A new chain's id in the logs it is written to: the machine's name and a random part (a
    proxy that starts again goes on with a chain it finds beside its log: audit_state)."""
    return f"{socket.gethostname()}-{secrets.token_hex(4)}"


# Where a line is written: the file's (st_dev, st_ino); None for standard output.
Where = tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class Linked:
    """A line ready to be written, and where the chain stands once it is."""

    line: bytes
    seq: int
    digest: str
    where: Where = None  # the file it was made for (its `start`, for a run's first line)


class Keeper(Protocol):
    """Where a chain's standing is kept between runs (robotsgate.audit.chain_state.ChainState)."""

    def save(self, proxy: str, seq: int, prev: str, at: tuple[int, int, int]) -> None: ...

    def release(self) -> None: ...


class Chain:
    """Where one proxy's chain stands. It outlives the audit log it is written to (rotation, a
    new path): advanced only once a line is written, since a record that could not be written
    is missing from the file, and the chain must say so.

    `resumable`: the proxy's own chain, which goes on from the one a previous run left beside
    the log (resume(), robotsgate.audit.chain_state); otherwise (tests, tools) a new chain."""

    def __init__(self, proxy: str, *, resumable: bool = False) -> None:
        self.resumable = resumable
        self.keeper: Keeper | None = None  # once resumed: where its standing is kept
        self._set_proxy(proxy)
        self.seq = 0  # of the last line written
        self.prev = GENESIS  # its digest
        self.since = 0  # records since the last checkpoint
        self.begun = False  # whether this run has written a line of it
        self._found_in: Where = None  # the file the line it goes on from was found in

    def _set_proxy(self, proxy: str) -> None:
        self.proxy = proxy
        self._fields = (',"proxy":' + json.dumps(proxy, ensure_ascii=False)).encode(
            "utf-8", "backslashreplace")

    @property
    def claimed(self) -> bool:
        return self.keeper is not None

    def resume(self, keeper: Keeper, proxy: str, seq: int, prev: str, found_in: Where) -> None:
        """Go on with the chain `keeper` keeps: its id, and its last line (seq, prev), found at
        start-up in the file `found_in` (None: not found where it was written)."""
        assert not self.begun, "a chain is resumed before its run writes anything"
        self.keeper = keeper
        self._set_proxy(proxy)
        self.seq, self.prev, self._found_in = seq, prev, found_in

    def release(self) -> None:
        """This run writes no more: another may take the chain."""
        if self.keeper is not None:
            self.keeper.release()
            self.keeper = None

    def start(self, where: Where) -> Start:
        """What the first line of this run, written to the file `where`, says of it."""
        if self.seq == 0:
            return "new"
        return "same-file" if where is not None and where == self._found_in else "other-file"

    def record(self, record: "AuditRecord", where: Where = None) -> Linked:
        seq = self.seq + 1
        line = record.to_line()
        if line.endswith(_UNLINKED):
            # The chain's fields are the record's last: written in place of their nulls, the
            # record is serialized once (a copy of it, serialized again, costs twice that).
            line = line[:-len(_UNLINKED)] + self._fields + \
                f',"seq":{seq},"prev":"{self.prev}"}}\n'.encode("ascii")
        else:  # a record that fills them itself
            line = replace(record, proxy=self.proxy, seq=seq, prev=self.prev).to_line()
        if not self.begun:  # the run's first line says how it begins (after the chain's own)
            line = line[:-2] + f',"start":"{self.start(where)}"}}\n'.encode("ascii")
        return Linked(line, seq, digest(line), where)

    def checkpoint(self, ts: str, key: SigningKey, where: Where = None) -> Linked | None:
        """The checkpoint line for now; None with nothing new to cover."""
        if self.since == 0:
            return None
        seq = self.seq + 1
        keyid = key.public.keyid
        sig = key.sign(signed_text(self.proxy, seq, self.prev, ts, keyid))
        line = checkpoint_line(ts, self.proxy, seq, self.prev, keyid, b64url(sig))
        return Linked(line, seq, digest(line), where)

    def written(self, link: Linked, *, checkpoint: bool = False, end: int | None = None) -> None:
        """`link` is in its file, ending at offset `end` (None: not known, standard output)."""
        self.seq, self.prev = link.seq, link.digest
        self.since = 0 if checkpoint else self.since + 1
        self.begun = True
        if self.keeper is not None and link.where is not None and end is not None:
            self.keeper.save(self.proxy, link.seq, link.digest, (*link.where, end))
