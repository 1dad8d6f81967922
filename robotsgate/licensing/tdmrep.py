"""TDMRep's file in the proxy: each origin's `/.well-known/tdmrep.json`, fetched and kept, and
the rule it has for one request (robotsgate.protocol.tdmrep reads it).

TDMRep (W3C TDM Reservation Protocol, Final Community Group Report, 2024-05-10) has a TDM agent
check the origin's tdmrep.json before it mines the origin's content. The proxy does so for a
bot that declared purposes (only such a bot can be refused for a use), at the request, after
robots.txt allows it: the rule for the URL goes into the Verdict (Verdict.tdm), and is joined at
the response with the answer's own tdm-reservation header and META, in TDMRep's order
(robotsgate.decision.stated): the answer's own statements supersede the file's, so a request is
never refused on the file alone before the origin has answered.

Fetched like robots.txt and RSL licences, by the same fetcher: the egress policy on every
address dialled (redirects included), its timeouts and turns, as the proxy itself ("robotsgate
(+contact)"), never with a bot's User-Agent; at most MAX_BYTES read. Kept once per origin, for
robots_cache_ttl (a shorter Cache-Control max-age wins), and the answer "no file" is kept as
long as a file: most origins have none, and each is asked once a day, not once a request. One
fetch in flight per origin, however many requests wait for it.

What a fetch means:

- 200, a JSON array of rules: its rules apply;
- 4xx, more than five redirects, or a 200 that is not JSON and not sent as JSON (a site's page
  for any path it does not know): no file, nothing stated;
- 5xx, 429, a network error, a timeout, an address the egress policy refuses, or a body sent as
  JSON (or starting like it) that cannot be read: unavailable, for robots_error_ttl. What the
  file reserves is not known, so it is read as reserving every path (tdm-reservation 1): as
  for robots.txt (RFC 9309 §2.3.1.4) and licences, what cannot be known is not taken as
  permission. The answer's own tdm-reservation header or META still supersede it.
"""

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import cachetools

from robotsgate.licensing.licenses import LicenseFetcher
from robotsgate.origin import Origin
from robotsgate.protocol.tdmrep import MAX_BYTES, PATH, TdmRep, read_tdmrep
from robotsgate.protocol.usage import Label, Source, Statement
from robotsgate.retrieval.fetch import FetchResult, fetch_user_agent

logger = logging.getLogger(__name__)

ACCEPT = "application/json, */*;q=0.5"
ORIGINS = 10_000  # origins whose answer is kept (a few hundred bytes each; most say "no file")

FileKind = Literal["ok", "missing", "unavailable"]


@dataclass(frozen=True, slots=True)
class TdmFile:
    """One origin's tdmrep.json as last fetched."""

    url: str
    kind: FileKind  # ok: rules; missing: no file; unavailable: not known (read as reserved)
    tdmrep: TdmRep | None  # kind ok
    status: int | None  # the last HTTP status; None when no answer came
    sha256: str | None
    fetched_at: float
    expires_at: float
    error: str | None = None  # why it is missing or unavailable, in words

    def statement(self, url: str) -> Statement | None:
        """What the file says of a request URL; None: nothing."""
        if self.kind == "unavailable":
            return unavailable(self.error or "not read")
        return None if self.tdmrep is None else self.tdmrep.statement(url)


def unavailable(error: str) -> Statement:
    """A file that could not be had, read as reserving every path: "1", with why."""
    return Statement(Source.TDM_FILE, "1", (Label("tdm-reservation", "train-ai", False, "1"),
                                            Label("tdm-reservation", "ai-input", False, "1")),
                     None, None, (f"{PATH} could not be read ({error}): read as reserved",))


def _looks_json(result: FetchResult) -> bool:
    """Sent as JSON, or starting like JSON: a file meant to be read as one."""
    kind = next((value for name, value in result.headers if name.lower() == "content-type"), "")
    head = result.body[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return "json" in kind.lower() or head.startswith((b"[", b"{"))


class TdmRepFiles:
    """Each origin's tdmrep.json, fetched once (however many requests wait for it) and kept."""

    def __init__(self, fetcher: LicenseFetcher, clock: Callable[[], float], *,
                 cache_ttl: int = 86_400, error_ttl: int = 60, contact: str = "",
                 size: int = ORIGINS) -> None:
        self._fetcher = fetcher
        self._clock = clock
        self._cache_ttl = cache_ttl
        self._error_ttl = error_ttl
        self._contact = contact
        self._kept: cachetools.LRUCache[str, TdmFile] = cachetools.LRUCache(size)
        self._inflight: dict[str, asyncio.Task[TdmFile]] = {}
        self.fetches = 0  # files fetched, for tests

    async def statement(self, origin: Origin, paths: tuple[str, ...]) -> Statement | None:
        """The file's statement for a request (its path, and the path the server would really
        serve when it differs: a reservation at either counts)."""
        held = await self.file(origin)
        if held.kind == "missing":
            return None
        found = [held.statement(path) for path in paths]
        return next((said for said in found if said is not None and said.preference == "1"),
                    next((said for said in found if said is not None), None))

    async def file(self, origin: Origin) -> TdmFile:
        key = origin.key
        kept = self._kept.get(key)
        if kept is not None and kept.expires_at > self._clock():
            return kept
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(self._fetch(key + PATH))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        # shield: a client that goes away must not cancel the fetch the others wait for.
        held = await asyncio.shield(task)
        self._kept[key] = held
        return held

    async def _fetch(self, url: str) -> TdmFile:
        self.fetches += 1
        # One byte past the cap, so that read_tdmrep sees a longer file as too long.
        result = await self._fetcher.fetch(url, fetch_user_agent(None, self._contact),
                                           limit=MAX_BYTES + 1, accept=ACCEPT)
        held = self._read(url, result)
        if held.kind == "unavailable":
            logger.warning("robotsgate: %s could not be read (%s): read as reserving text and "
                           "data mining for the next %d s", url, held.error, self._error_ttl)
        return held

    def _read(self, url: str, result: FetchResult) -> TdmFile:
        now = self._clock()
        ttl = self._cache_ttl if result.max_age is None else min(self._cache_ttl,
                                                                 result.max_age)
        if result.outcome == "missing":
            return TdmFile(url, "missing", None, result.status, None, now, now + ttl,
                           result.error)
        if result.outcome == "unreachable":
            return TdmFile(url, "unavailable", None, result.status, None, now,
                           now + self._error_ttl, result.error)
        sha256 = hashlib.sha256(result.body).hexdigest()
        if not _looks_json(result):
            return TdmFile(url, "missing", None, result.status, sha256, now, now + ttl,
                           "not JSON, and not sent as JSON")
        tdmrep = read_tdmrep(result.body)
        if tdmrep.unreadable:
            return TdmFile(url, "unavailable", None, result.status, sha256, now,
                           now + self._error_ttl, "; ".join(tdmrep.problems))
        return TdmFile(url, "ok", tdmrep, result.status, sha256, now, now + ttl)
