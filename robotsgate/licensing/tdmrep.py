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

import logging
from collections.abc import Callable
from dataclasses import dataclass

from robotsgate.licensing.kept import Documents, Kind, LicenseFetcher, once, sent_as
from robotsgate.origin import Origin
from robotsgate.protocol.tdmrep import MAX_BYTES, PATH, TdmRep, read_tdmrep
from robotsgate.protocol.usage import Label, Source, Statement
from robotsgate.retrieval.fetch import FetchResult

logger = logging.getLogger(__name__)

ACCEPT = "application/json, */*;q=0.5"
ORIGINS = 10_000  # origins whose answer is kept (a few hundred bytes each; most say "no file")

@dataclass(frozen=True, slots=True)
class TdmFile:
    """One origin's tdmrep.json as last fetched."""

    url: str
    kind: Kind  # ok: rules; missing: no file; unavailable: not known (read as reserved)
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


class TdmRepFiles(Documents[TdmRep, TdmFile]):
    """Each origin's tdmrep.json, fetched once (however many requests wait for it) and kept."""

    def __init__(self, fetcher: LicenseFetcher, clock: Callable[[], float], *,
                 cache_ttl: int = 86_400, error_ttl: int = 60, contact: str = "",
                 size: int = ORIGINS) -> None:
        super().__init__(fetcher, clock, TdmFile, cache_ttl=cache_ttl, error_ttl=error_ttl,
                         contact=contact, size=size, limit=MAX_BYTES, accept=ACCEPT)

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
        held = await once(self._inflight, key, lambda: self._fetch(key + PATH))
        self._kept[key] = held
        return held

    async def _fetch(self, url: str) -> TdmFile:
        held = self._read(url, await self._get(url))
        if held.kind == "unavailable":
            logger.warning("robotsgate: %s could not be read (%s): read as reserving text and "
                           "data mining for the next %d s", url, held.error, self._error_ttl)
        return held

    def body(self, url: str, result: FetchResult) -> tuple[Kind, TdmRep | None, str | None]:
        # Not JSON and not sent as JSON: a site's page for any path it does not know.
        if not sent_as(result, "json", (b"[", b"{"), 64):
            return "missing", None, "not JSON, and not sent as JSON"
        tdmrep = read_tdmrep(result.body)
        if tdmrep.unreadable:
            return "unavailable", None, "; ".join(tdmrep.problems)
        return "ok", tdmrep, None
