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
import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import MISSING, asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from robotsgate import audit_state
from robotsgate.audit_chain import Chain, Linked, Where
from robotsgate.outcomes import Reason
from robotsgate.signing import SigningKey

logger = logging.getLogger(__name__)

# block: the proxy answered itself (403, 429, 503) and nothing of the request left;
# would-block: it would have, in monitor mode;
# withheld: the request reached the origin, and the proxy answered the bot itself instead of
#   passing the origin's answer on (usage preferences the answer stated, a page that could not
#   be read in strip mode);
# delay: forwarded after a politeness wait, or with a Crawl-delay cut down to the maximum;
# tunnel: a CONNECT the proxy lets through without seeing inside (mitmproxy ignore_hosts);
# cut: a forwarded request whose answer the proxy stopped (a 101 to a protocol it cannot read);
# signature: a forwarded request not signed as the proxy signs (Web Bot Auth): the bot's own
#   signature left in place, or a request sent again, signed, because the origin asked;
# license: a request sent again with a new licence, because the origin refused the one it had;
# payment: a request sent again with crawler-exact-price, paying an origin's 402.
# dns: a captured bot's DNS query, answered by the proxy's resolver (robotsgate run --capture).
Event = Literal["block", "would-block", "withheld", "delay", "tunnel", "cut", "signature",
                "license", "payment", "dns"]


def _doc(text: str, default: Any = MISSING) -> Any:
    """A field of the audit record, with what it means (the documentation's table)."""
    return field(default=default, metadata={"doc": text})


@dataclass(frozen=True, slots=True)
class AuditRecord:
    ts: str = _doc("when, ISO 8601 UTC, to the millisecond")
    event: Event = _doc(
        "block (only ever for a request that did not reach the origin); would-block in monitor "
        "mode; withheld for a request that reached the origin and whose answer the proxy "
        "replaced with its own (usage preferences the answer stated, a page it could not read "
        "in strip mode); delay for a request forwarded after a wait; tunnel for a CONNECT let "
        "through unseen; cut for a forwarded request whose answer the proxy stopped (a 101 to "
        "a protocol it cannot read); signature for a request forwarded with the bot's own Web "
        "Bot Auth signature, or sent again signed because the origin asked; license for a request "
        "sent again with a new licence because the origin refused the one it carried; payment "
        "for a request sent again to pay an origin's 402 price; dns for a captured bot's DNS "
        "query the proxy's resolver answered (robotsgate run --capture)")
    reason: Reason = _doc("why (see Reasons)")
    status: int | None = _doc(
        "what the proxy answered (or would have); null when it forwarded")
    agent: str = _doc("the product token the decision was made for (* when no named group "
                      "applied)")
    user_agent: str | None = _doc("the request's User-Agent, as sent")
    client: str | None = _doc("the client's address and port")
    method: str = _doc("the request's method (TCP, UDP, DNS, QUIC for a connection)")
    url: str = _doc("the target decided (not what a Host header claims)")
    robots_url: str | None = _doc("the robots.txt that decided (always the original "
                                  "origin's, wherever it redirected)")
    robots_status: int | None = _doc("that robots.txt's HTTP status")
    robots_fetched_at: str | None = _doc("when that robots.txt was fetched")
    robots_sha256: str | None = _doc("sha256 of the exact body whose rules decided")
    group: str | None = _doc("the deciding group's User-agent values, e.g. FooBot, BarBot")
    rule: str | None = _doc(
        "the deciding rule as written (Disallow: /private); for usage-preference the statement "
        "that disallowed a purpose (Content-Usage: train-ai=n, tdm-reservation: 1); for "
        "license-prohibited and license-required the licence's element that decided "
        "(<content url=\"/\"> #1 (line 2), <license> #1 (line 3): <prohibits type=\"usage\"> "
        "ai-all)")
    line: int | None = _doc("the rule's line in robots.txt (null for a statement of the "
                            "response; for the license reasons, the License: line that names "
                            "the licence)")
    delay_ms: int = _doc("the politeness wait applied, in milliseconds")
    mode: str = _doc("enforce or monitor")
    asked_delay_ms: int | None = _doc("the site's Crawl-delay when it was clamped or refused",
                                      None)
    agent_source: str | None = _doc(
        "where the agent came from: map-user, map-address, proxyauth, option or user-agent",
        None)
    user_agent_mismatch: bool | None = _doc(
        "whether a configured token is missing from the User-Agent (a bot claiming to be "
        "something else); null when no token is configured", None)
    page: str | None = _doc("for nofollow: the Referer page whose signals forbid the link",
                            None)
    error: str | None = _doc(
        "for a refusal that is not a rule's, what went wrong: for destination the address and "
        "why (127.0.0.1:8080 (the proxy's own port)); for robots-unavailable the fetch's "
        "trouble (HTTP 503, timed out after 10 s waiting for an answer, TLS certificate of "
        "example.com not trusted: ..., DNS lookup of example.com failed: ..., a body cut short "
        "or corrupt); for redis-unavailable which Redis and what the last attempt met "
        "(password left out); for internal-error the exception", None)
    purposes: str | None = _doc("what the bot declared it crawls for (search, train-ai), when "
                                "it declared anything", None)
    origin_status: int | None = _doc("for an answer withheld, or a request sent again signed: "
                                     "the status of the origin's answer", None)
    tdm_policy: str | None = _doc("for a refusal a TDM reservation decided: the rights "
                                  "holder's terms, as its tdm-policy (header or META) gave them",
                                  None)
    license: str | None = _doc("for license-prohibited, license-required and "
                               "license-unavailable: the RSL licence's URL, as robots.txt's "
                               "License: line wrote it", None)
    license_sha256: str | None = _doc("sha256 of the licence document's body that decided (in "
                                      "robots_archive_dir with the robots.txt bodies)", None)
    price: str | None = _doc("for a payment: what the budgets counted as charged (USD 0.01): "
                             "crawler-charged, in full, when it is a price in the currency "
                             "agreed, else the price agreed; null when the origin said it "
                             "charged nothing; for price-refused, budget-exhausted and "
                             "overcharged: what it asked (crawler-price)", None)
    charged_as_written: str | None = _doc(
        "for a payment: crawler-charged exactly as the origin wrote it (its first 200 "
        "characters), whatever its currency or syntax; null when it sent none", None)
    bot: str | None = _doc(
        "for a payment, budget-exhausted and overcharged: the bot whose budgets count it, as "
        "the proxy names it (robots_agents, proxy-auth, robots_agent; else the product token "
        "of its User-Agent that a budget names, else its first)", None)
    x402: str | None = _doc("for x402-unsupported: what PAYMENT-REQUIRED asked, decoded "
                            "(version; scheme, network, amount, asset, payTo)", None)
    signature: str | None = _doc("for a signature event: the Signature-Input the request left "
                                 "with (the bot's own, or the proxy's on the request sent "
                                 "again)", None)
    address: str | None = _doc("for a dns event: the address the proxy's resolver answered "
                               "with (the one it dials for that name)", None)
    proxy: str | None = _doc("the id of the chain it is in: one per proxy, kept across the "
                             "proxy's restarts (several proxies may write one file); the first "
                             "line of each run also has start (new, same-file, other-file)",
                             None)
    seq: int | None = _doc("its number in that chain: 1, 2, 3, ...", None)
    prev: str | None = _doc("SHA-256 (hex) of the chain's line before it, without its "
                            "newline; empty for its first", None)

    def to_json(self) -> str:
        """One JSON object; it may hold lone surrogates, see to_line()."""
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    def to_line(self) -> bytes:
        r"""The record as one line of UTF-8, whatever its strings hold.

        mitmproxy decodes header values with "surrogateescape", so a User-Agent (or URL, or
        anything taken from a request) with a byte that is not UTF-8 reaches us as a lone
        surrogate ('\udcff'), which UTF-8 cannot encode: a strict encode() would raise and the
        record, and then the internal-error record about it, would be lost. json.dumps leaves
        such a character raw only inside a string literal, where "backslashreplace" writes it as
        the six characters \udcff: a valid JSON escape for that same code point. The line stays
        valid UTF-8 and valid JSON, every other character stays readable as itself, and a JSON
        reader gets back the string the proxy saw (surrogateescape makes low surrogates only;
        a high one followed by a low one would be read back as the pair they spell).
        """
        return (self.to_json() + "\n").encode("utf-8", "backslashreplace")


def timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


# Bytes a checkpoint line takes but for its proxy id: JSON names, time, seq, two hashes, a
# signature (robotsgate.audit_chain).
_CHECKPOINT_ROOM = 320


class AuditLog:
    """Appends records to a file, or to standard output for path "-"; with a `chain`, each
    record linked to the one before and checkpoints signed (robotsgate.audit_chain)."""

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
        """Take up the chain a previous run left beside this log (robotsgate.audit_state), for
        the proxy's own chain (`resumable`), once: at start-up, or before its first line.
        Raises OSError when its state cannot be kept."""
        chain = self.chain
        if chain is None or not chain.resumable or chain.claimed or self._where is None:
            self._unclaimed = False
            return
        with self._locked() if self._lock != -1 else contextlib.nullcontext():
            state, said = audit_state.claim(self.path, chain.proxy)
            for problem in said:
                logger.warning("robotsgate: audit log %s: %s", self.path, problem)
            if audit_state.ends_torn(self.path, self._where):
                # A line cut short (a full disk, a machine that stopped): the next record must
                # not be glued to it (verify names it as cut).
                self._write(b"\n")
                logger.warning("robotsgate: the audit log %s ended inside a line: ended it, so "
                               "that the next record is a line of its own", self.path)
            stand = state.stand
            found = stand.seq > 0 and (stand.dev, stand.ino) == self._where and \
                audit_state.holds(self.path, stand)
            if stand.seq and not found:
                rotated = audit_state.identity(f"{self.path}.1") == (stand.dev, stand.ino)
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
