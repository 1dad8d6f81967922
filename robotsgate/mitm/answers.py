"""robotsgate's own answers, and the audit record of every one of them."""

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from mitmproxy import http

from robotsgate import outcomes
from robotsgate.audit.log import AuditLog
from robotsgate.audit.records import AuditRecord, Event, timestamp
from robotsgate.decision.identity import AgentMap
from robotsgate.decision.purposes import UsageRefusal, usage_answer
from robotsgate.decision.verdict import Verdict
from robotsgate.licensing.judging import LicenseRefusal
from robotsgate.metrics.prometheus import Metrics
from robotsgate.mitm.flow import state
from robotsgate.outcomes import Reason
from robotsgate.protocol import Rule
from robotsgate.protocol.usage import Statement

logger = logging.getLogger(__name__)


class AuditUnwritable(Exception):
    """The audit log cannot be written and robots_audit_failure is "closed"."""


def answer(flow: http.HTTPFlow, reason: Reason, body: str, extra: dict[str, str] | None = None,
           verdict: Verdict | None = None) -> None:
    """Answer the request in the proxy's name: the body, and headers that say why."""
    headers = {"Content-Type": "text/plain; charset=utf-8", "X-Robotsgate-Reason": reason}
    outcome = outcomes.OUTCOMES[reason]
    if outcome.close:
        headers["Connection"] = "close"
    if extra:
        headers.update(extra)
    if verdict is not None:
        headers["X-Robotsgate-Robots-Url"] = verdict.robots_url
        headers["X-Robotsgate-Agent"] = verdict.agent
    if "close" in flow.request.headers.get("connection", "").lower():
        headers["Connection"] = "close"
    flow.response = http.Response.make(outcome.status, body.encode("utf-8"), headers)
    state(flow).answered = True


def answer_usage(flow: http.HTTPFlow, refusal: UsageRefusal, *, agent: str,
                 robots_url: str | None, verdict: Verdict | None = None,
                 withheld: int | None = None) -> None:
    """403 for a request (or, `withheld`, a response with that status) whose every purpose the
    site's usage preferences disallow."""
    text, headers = usage_answer(refusal, agent=agent, robots_url=robots_url, withheld=withheld)
    answer(flow, Reason.USAGE_PREFERENCE, text, headers, verdict)


def fail_closed(flow: http.HTTPFlow, recorder: "Recorder | None", reason: Reason,
                error: str | None = None) -> None:
    """Whatever went wrong, the request is not forwarded: the proxy's answer for `reason`, and
    its record when the audit log can take one."""
    outcome = outcomes.OUTCOMES[reason]
    answer(flow, reason, outcome.message, retry_after(outcome.retry_after))
    if recorder is not None:  # None: it failed before robotsgate had a configuration
        with contextlib.suppress(AuditUnwritable):  # already failing closed
            recorder.flow(flow, "block", reason, outcome.status, None, error=error)


def retry_after(seconds: int | None) -> dict[str, str]:
    return {"Retry-After": str(seconds)} if seconds else {}


class AuditSink:
    """Where audit records go: the audit log of the moment (reopened by SIGHUP, replaced when
    robots_audit_log changes), and how often writing it failed. One per proxy: a flow decided
    under an older configuration writes to the log of now."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit
        self.failures = 0

    def replace(self, audit: AuditLog) -> None:
        old, self.audit = self.audit, audit
        old.close()


class Recorder:
    """Audit records (and the metrics that count them) from flows and connections, written as
    one configuration says (its mode, and what a write that fails does)."""

    __slots__ = ("_clock", "_fail_closed", "_mode", "metrics", "sink")

    def __init__(self, sink: AuditSink, metrics: Metrics, clock: Callable[[], float], *,
                 fail_closed: bool, monitor: bool) -> None:
        self.sink = sink
        self.metrics = metrics
        self._clock = clock
        self._fail_closed = fail_closed  # robots_audit_failure == "closed"
        self._mode = "monitor" if monitor else "enforce"

    @property
    def audit(self) -> AuditLog:
        return self.sink.audit

    def flow(self, flow: http.HTTPFlow, event: Event, reason: Reason, status: int | None,
             verdict: Verdict | None, *, page: str | None = None, error: str | None = None,
             refusal: UsageRefusal | None = None, origin_status: int | None = None,
             signature: str | None = None, tdm_policy: str | None = None,
             licensed: LicenseRefusal | None = None, price: str | None = None,
             x402: str | None = None, charged_as_written: str | None = None,
             bot: str | None = None) -> None:
        """The record of one request. Raises AuditUnwritable when it cannot be written and
        robots_audit_failure is closed. A usage refusal (`refusal`, or the verdict's) names the
        statement that disallowed a purpose as its rule and line; a licence refusal (`licensed`,
        or the verdict's), the licence's element and its License: line."""
        self.metrics.recorded(event, reason)
        req = flow.request
        entry = verdict.entry if verdict else None
        decision = verdict.decision if verdict else None
        refusal = refusal or (verdict.usage_refusal if verdict else None)
        licensed = licensed or (verdict.license_refusal if verdict else None)
        rule: Rule | Statement | None = decision.rule if decision else None
        group = decision.group if decision else None
        rule_text, line = (rule.text, rule.line) if rule else (None, None)
        if refusal is not None:
            rule = refusal.statement
            rule_text, line = (rule.text, rule.line) if rule else (None, None)
            if rule is None or rule.line is None:
                group = None  # said by the response, or by nothing (robots_usage_unknown)
        elif licensed is not None:
            # The licence's element; the line is the robots.txt line that names the licence.
            group = None
            rule_text, line = licensed.cite or None, licensed.line
        known = state(flow)
        purposes, identity = known.purposes, known.identity
        user_agent = req.headers.get("user-agent")
        self._write(AuditRecord(
            ts=timestamp(self._clock()), event=event, reason=reason, status=status,
            agent=verdict.agent if verdict else (identity.token if identity else None) or "*",
            user_agent=user_agent, client=peer(flow.client_conn.peername), method=req.method,
            url=req.url,  # the target decided, not whatever a Host header claims
            robots_url=verdict.robots_url if verdict else None,
            robots_status=entry.status if entry else None,
            robots_fetched_at=timestamp(entry.fetched_at) if entry else None,
            robots_sha256=entry.sha256 if entry else None,
            group=", ".join(group.agents) if group else None,
            rule=rule_text, line=line,
            delay_ms=round(verdict.wait * 1000) if verdict else 0, mode=self._mode,
            asked_delay_ms=_ms(verdict.asked_delay) if verdict else None,
            agent_source=identity.source if identity else None,
            user_agent_mismatch=identity.mismatch(user_agent) if identity else None, page=page,
            error=error or (entry.trouble if entry and entry.robots is None else None) or
            (licensed.error if licensed else None),
            purposes=", ".join(sorted(purposes)) if purposes else None,
            origin_status=origin_status, tdm_policy=tdm_policy, signature=signature,
            license=licensed.url if licensed else None,
            license_sha256=licensed.sha256 if licensed else None, price=price,
            charged_as_written=charged_as_written, bot=bot, x402=x402))

    def connection(self, agents: AgentMap, agent_option: str | None, client: Any, event: Event,
                   url: str, method: str) -> None:
        """The record of a connection refused as a whole (reason protocol)."""
        identity = agents.resolve(user=None, address=client[0] if client else None,
                                  agent_option=agent_option)
        self.metrics.recorded(event, Reason.PROTOCOL)
        self._write(AuditRecord(
            ts=timestamp(self._clock()), event=event, reason=Reason.PROTOCOL, status=None,
            agent=identity.token or "*", user_agent=None, client=peer(client), method=method,
            url=url, robots_url=None, robots_status=None, robots_fetched_at=None,
            robots_sha256=None, group=None, rule=None, line=None, delay_ms=0,
            mode=self._mode, agent_source=identity.source))

    def query(self, agents: AgentMap, agent_option: str | None, client: Any, event: Event,
              url: str, reason: Reason, *, error: str | None = None,
              answered: str | None = None) -> None:
        """The record of a captured bot's DNS query (robotsgate.mitm.capture)."""
        identity = agents.resolve(user=None, address=client[0] if client else None,
                                  agent_option=agent_option)
        self.metrics.recorded(event, reason)
        self._write(AuditRecord(
            ts=timestamp(self._clock()), event=event, reason=reason, status=None,
            agent=identity.token or "*", user_agent=None, client=peer(client), method="DNS",
            url=url, robots_url=None, robots_status=None, robots_fetched_at=None,
            robots_sha256=None, group=None, rule=None, line=None, delay_ms=0,
            mode=self._mode, agent_source=identity.source, error=error, address=answered))

    def _write(self, record: AuditRecord) -> None:
        sink = self.sink
        try:
            sink.audit.write(record)
        except OSError as exc:
            sink.failures += 1
            if sink.failures == 1 or sink.failures % 1000 == 0:
                logger.error("robotsgate: cannot write the audit log %s (%d failures so far): "
                             "%s", sink.audit.path, sink.failures, exc)
            if self._fail_closed:
                raise AuditUnwritable(str(exc)) from exc




def peer(peername: Any) -> str | None:
    return f"{peername[0]}:{peername[1]}" if peername else None


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def explain_proxy_auth(flow: http.HTTPFlow, proxyauth: str) -> None:
    """mitmproxy's bare 407 page (its proxyauth addon: a bot that sent no user name, or one the
    proxy does not take), given a body its bot's operator can act on; `proxyauth` is the
    option's value, never shown (it may hold a password)."""
    response = flow.response
    if response is None or response.status_code != 407 or "proxyauth" in flow.metadata or \
            "X-Robotsgate-Reason" in response.headers:
        return
    given = "Proxy-Authorization" in flow.request.headers  # kept by mitmproxy when refused
    said = ["This proxy (robotsgate: it makes bots obey robots.txt) needs a user name and "
            "password from every bot: give the bot the proxy's address with them, as "
            "http://NAME:PASSWORD@PROXY-HOST:PORT (in HTTP_PROXY and HTTPS_PROXY, or your "
            "client's proxy setting)."]
    if given:
        said.append("The user name and password this request sent were not taken.")
    if proxyauth == "any":
        said.append("Any password is taken: the user name names the bot, and robots.txt is "
                    "obeyed as that bot (its product token, such as MyBot).")
    else:
        said.append("Ask this proxy's operator for a user name and password.")
    response.content = f"{response.status_code} {response.reason}\n\n".encode() + \
        "\n".join(said).encode() + b"\n"
    response.headers["Content-Type"] = "text/plain; charset=utf-8"
