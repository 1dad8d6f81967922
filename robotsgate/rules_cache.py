"""The bounded parse cache: robots.txt bodies to rules, each distinct body parsed once.

Hosting platforms serve one file to thousands of sites, and parsed rules cost several times their
body: keyed by the body's sha256, the cache keeps one parsed copy (and one copy of the body and
of its hash) for every origin that serves it, and at most `size` of them. A store that keeps only
bodies gets its rules back through here.

Built first, from the reading the proxy is configured with, and handed to everything that parses:
the stores and the retrieval service.
"""

import hashlib
from dataclasses import dataclass

from cachetools import LRUCache

from robotsgate.protocol import RobotsTxt


@dataclass(frozen=True, slots=True)
class Parsed:
    """One body and its rules: the same three objects for every origin serving the body."""

    sha256: str
    body: bytes
    robots: RobotsTxt


class RulesCache:
    def __init__(self, size: int, *, semantics: str = "rfc9309",
                 case_sensitive: bool = True) -> None:
        self._semantics = semantics
        self._case_sensitive = case_sensitive
        self._parsed: LRUCache[str, Parsed] = LRUCache(maxsize=size)
        # What a missing robots.txt (4xx) means: no restrictions, in the configured reading.
        self.allow_all = RobotsTxt.parse(b"", semantics=semantics)

    def parse(self, sha256: str, body: bytes) -> RobotsTxt:
        """The rules of `body`, whose sha256 the caller already knows (a store reading back)."""
        return self._get(sha256, body).robots

    def share(self, body: bytes) -> Parsed:
        """`body` hashed and parsed, or the copy already kept for an identical body."""
        return self._get(hashlib.sha256(body).hexdigest(), body)

    def _get(self, sha256: str, body: bytes) -> Parsed:
        parsed = self._parsed.get(sha256)
        if parsed is None:
            robots = RobotsTxt.parse(body, semantics=self._semantics,
                                     case_sensitive=self._case_sensitive)
            parsed = Parsed(sha256, body, robots)
            self._parsed[sha256] = parsed
        return parsed

    def __len__(self) -> int:
        return len(self._parsed)
