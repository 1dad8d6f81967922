"""An audit record: what each JSON line of the audit log holds, field by field, and the
events a record can be about. The log that writes them is robotsgate.audit.log; the chain each
line is linked into, robotsgate.audit.chain.

Each field carries what it means (`_doc`): the documentation's table of fields is written from
them (robotsgate.config.reference).
"""

import json
from dataclasses import MISSING, asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from robotsgate.outcomes import Reason

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


# One field a line, each declared alike (_doc): fields alike in shape, different facts; a table,
# not code said twice.
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

