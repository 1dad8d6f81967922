"""`robotsgate check`'s look at a site's RSL licences: each document its robots.txt names, as the
proxy holds it (robotsgate.licensing: fetched under the proxy's own name, kept), and what it
says of the URL, per purpose. The proxy's answer, above it, is what enforcing them decided.
"""

from typing import Any

from robotsgate.licensing import Licensing, fetchable
from robotsgate.protocol.rsl import License, evaluate
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
        held = await licensing.document(license.url)
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
