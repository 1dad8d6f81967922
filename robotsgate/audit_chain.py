"""The audit log's chain: evidence that no line was changed, removed or inserted.

Every record a proxy writes carries `proxy` (this proxy's id, the same for all its records),
`seq` (1, 2, 3, ... in the order it wrote them) and `prev`: the SHA-256, in hex, of the line it
wrote just before, as bytes, without its newline ("" for its first). Change a byte of a line,
and the next line of that proxy no longer names it; remove one, and a number is missing; insert
one, and nothing names it. Several proxies writing one file each keep a chain of their own. The
chain goes on across files: the first record a proxy writes after the log was rotated names
the last line it wrote to the old file.

A hash chain alone stops only an editor who does not recompute the hashes after the edit. With a
signing key (robots_signing_key), every `robots_audit_checkpoint` records, when the log is
rotated or reopened, and when the proxy stops, it also writes a checkpoint: a line in the chain
like any other, whose Ed25519 signature covers its place in it (proxy, seq, prev, time). No one
without the key can then change anything up to the last checkpoint without the signature
showing it (`robotsgate verify`, robotsgate.audit_verify).

A checkpoint line: {"ts", "event": "checkpoint", "proxy", "seq", "prev", "keyid", "sig"}, `sig`
base64url over `signed_text(...)`.
"""

import hashlib
import json
import secrets
import socket
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from robotsgate.signing import SigningKey, b64url

if TYPE_CHECKING:
    from robotsgate.audit import AuditRecord

GENESIS = ""  # the `prev` of a proxy's first record
CHECKPOINT = "checkpoint"  # the `event` of a checkpoint line
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
    """This process's id in the logs it writes: the machine's name and a random part (a proxy
    that starts again begins a new chain)."""
    return f"{socket.gethostname()}-{secrets.token_hex(4)}"


@dataclass(frozen=True, slots=True)
class Linked:
    """A line ready to be written, and where the chain stands once it is."""

    line: bytes
    seq: int
    digest: str


class Chain:
    """Where one proxy's chain stands. It outlives the audit log it is written to (rotation, a
    new path): advanced only once a line is written, since a record that could not be written
    is missing from the file, and the chain must say so."""

    def __init__(self, proxy: str) -> None:
        self.proxy = proxy
        self._fields = (',"proxy":' + json.dumps(proxy, ensure_ascii=False)).encode(
            "utf-8", "backslashreplace")
        self.seq = 0  # of the last line written
        self.prev = GENESIS  # its digest
        self.since = 0  # records since the last checkpoint

    def record(self, record: "AuditRecord") -> Linked:
        seq = self.seq + 1
        line = record.to_line()
        if line.endswith(_UNLINKED):
            # The chain's fields are the record's last: written in place of their nulls, the
            # record is serialized once (a copy of it, serialized again, costs twice that).
            line = line[:-len(_UNLINKED)] + self._fields + \
                f',"seq":{seq},"prev":"{self.prev}"}}\n'.encode("ascii")
        else:  # a record that fills them itself
            line = replace(record, proxy=self.proxy, seq=seq, prev=self.prev).to_line()
        return Linked(line, seq, digest(line))

    def checkpoint(self, ts: str, key: SigningKey) -> Linked | None:
        """The checkpoint line for now; None with nothing new to cover."""
        if self.since == 0:
            return None
        seq = self.seq + 1
        keyid = key.public.keyid
        sig = key.sign(signed_text(self.proxy, seq, self.prev, ts, keyid))
        line = checkpoint_line(ts, self.proxy, seq, self.prev, keyid, b64url(sig))
        return Linked(line, seq, digest(line))

    def written(self, link: Linked, *, checkpoint: bool = False) -> None:
        self.seq, self.prev = link.seq, link.digest
        self.since = 0 if checkpoint else self.since + 1
