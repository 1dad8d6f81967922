"""`robotsgate check`'s look at a site's RSL licences: each document its robots.txt names, as the
proxy holds it (robotsgate.licensing.licenses: fetched under the proxy's own name, kept), and what
it says of the URL, per purpose. The proxy's answer, above it, is what enforcing them decided.
"""

from typing import Any
from urllib.parse import urlsplit

from robotsgate.licensing.licenses import Licensing, fetchable
from robotsgate.protocol.rsl import License, Unread
from robotsgate.protocol.rsl_rulings import evaluate
from robotsgate.protocol.usage import CATEGORIES


async def read_licences(licensing: Licensing, licenses: tuple[License, ...], url: str,
                        purposes: frozenset[str]) -> list[dict[str, Any]]:
    """Per License line: its document, and what it says of `url` for each of `purposes` (the
    categories train-ai, search and ai-input when none is declared)."""
    asked = sorted(purposes) or list(CATEGORIES)
    found: list[dict[str, Any]] = []
    for license in licenses:
        facts: dict[str, Any] = {"url": license.url, "line": license.line, "error": None,
                                 "problems": [], "applies": None, "purposes": {}}
        found.append(facts)
        if not fetchable(license.url):
            facts["error"] = "not a full URL: nothing to fetch"
            continue
        held = await licensing.document(license.url, _site(url))
        facts["error"] = held.error
        if held.document is None:
            continue
        facts["problems"] = list(held.document.problems)
        terms = held.document.terms(url)
        if terms is None:
            continue
        content = terms.content
        facts["applies"] = {"content": content.url, "line": content.line,
                            "servers": list(terms.servers)}
        facts["purposes"] = {finding.purpose: {"answer": str(finding.answer),
                                               "evidence": finding.evidence.cite()}
                             for finding in evaluate(terms, asked)}
    return found


def _site(url: str) -> str:
    """The origin whose fetch budget the licences spend (one URL checked: never reached)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def unread_entry(unread: Unread) -> dict[str, Any]:
    """The documents robots.txt names past the cap, as one entry of the list (never fetched)."""
    return {"url": unread.first.url, "line": unread.first.line,
            "error": f"not read: {unread.named:,} licence documents named, only the first "
                     f"{unread.cap} are read; this one and {unread.count - 1:,} more are not, "
                     f"and the proxy refuses bots with declared purposes (license-unavailable)",
            "problems": [], "applies": None, "purposes": {}}
